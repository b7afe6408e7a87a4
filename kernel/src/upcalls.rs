//! Everything the framework calls up into the kernel, registered in one place at boot
//! ([`register`], the first thing `kernel_main` does). See `framework::upcalls` for what each
//! entry's context is.

use framework::upcalls::Upcalls;

static UPCALLS: Upcalls = Upcalls {
    preempt_point: crate::sched::preempt_point,
    irq_exit: crate::sched::irq_exit,
    reschedule_ipi: crate::sched::ttwu_pending,
    rt_push_requested: crate::sched::balance::push_requested,
    init_cpu: crate::sched::init_cpu,
    ap_start,
    current_is_rt: crate::sched::current_is_rt,
    trace_context: crate::trace::current_ctx,
    wake_kswapd: crate::block::reclaim::wake_kswapd,
    direct_reclaim: crate::block::reclaim::direct,
    console_input: crate::console::input_arrived,
    panic,
    user_event_pending: crate::process::user_event_pending,
};

/// Registers the kernel's upcalls with the framework.
pub fn register() {
    framework::upcalls::register(&UPCALLS);
}

/// An AP is up: its run queue, its tick, its boot-report line, then its idle task.
fn ap_start(cpu: &'static crate::percpu::PerCpu) -> ! {
    crate::sched::init_this_cpu();
    crate::timer::start_tick(crate::sched::scheduler_tick);
    crate::smp::announce_online(cpu);
    crate::ap_main()
}

/// A panic: under `cargo test`, the harness reports the failing test first.
fn panic() {
    #[cfg(test)]
    crate::testing::report_panic();
}
