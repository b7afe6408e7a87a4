//! The framework's only way up into the kernel: a table of functions the kernel registers once,
//! at the start of boot ([`register`]), in one place (the kernel's `upcalls` module). Like
//! Asterinas's `inject_scheduler` or Tock's `set_alarm_client`, it keeps the framework free of
//! any import of the kernel: the scheduler, the tracer's view of tasks and the test harness are
//! reached only through these entries.
//!
//! Before registration every entry acts as a no-op (or answers `false`), which is what the
//! early boot code needs: no scheduler runs yet.

use cadence_trace::Comm;
use spin::Once;

/// What the framework calls in the kernel. Each entry says the context it is called in.
pub struct Upcalls {
    /// A preemption point in task context: interrupts were just enabled again (an
    /// [`IrqLock`](crate::sync::IrqLock) released) or the preemption count fell to zero. The
    /// scheduler switches tasks here if a reschedule is due.
    pub preempt_point: fn(),
    /// The end of an interrupt handler, interrupts off: preempt the interrupted task if a
    /// reschedule is due (Linux `irqentry_exit` → `preempt_schedule_irq`).
    pub irq_exit: fn(),
    /// A reschedule IPI arrived (interrupt context): queue the wakeups other CPUs left for this
    /// one (Linux `sched_ttwu_pending`). [`Upcalls::irq_exit`] follows.
    pub reschedule_ipi: fn(),
    /// Another CPU asked this one (by the call-function IPI) to push its waiting RT tasks;
    /// the argument is this CPU's id. Interrupt context.
    pub rt_push_requested: fn(u32),
    /// CPU bring-up, before the CPU is listed: create the kernel's per-CPU data for CPU `cpu`
    /// (its run queue), so whoever finds the CPU listed finds it.
    pub init_cpu: fn(u32),
    /// An application processor has its GS base, descriptor tables and LAPIC: the kernel
    /// starts its scheduler and tick, announces it ([`crate::smp::announce_online`]) and runs
    /// its idle loop. Never returns.
    pub ap_start: fn(&'static crate::percpu::PerCpu) -> !,
    /// Is the running task real-time (its effective class)? The page allocator's RT reserve
    /// asks; any context.
    pub current_is_rt: fn() -> bool,
    /// The running task as the tracer names it (comm, pid), interrupts off.
    pub trace_context: fn() -> (Comm, u32),
    /// The page allocator fell below its low watermark: wake the reclaim thread (`kswapd0`).
    /// Any context (interrupts may be off).
    pub wake_kswapd: fn(),
    /// Direct reclaim by the allocating task, interrupts on: free about this many pages
    /// (clean page-cache pages); returns how many were freed.
    pub direct_reclaim: fn(u64) -> u64,
    /// Bytes arrived on the console (interrupt context): wake the readers.
    pub console_input: fn(),
    /// A panic, before its message is printed (the test harness reports the failing test).
    pub panic: fn(),
    /// An interrupt arrived while the running task was in user mode and its handler is done
    /// (interrupts off): should the task come back to the kernel (`user::execute` returns
    /// [`ReturnReason::Interrupted`](crate::user::ReturnReason::Interrupted)) rather than
    /// resume user mode? True when it has a signal to take.
    pub user_event_pending: fn() -> bool,
}

static UPCALLS: Once<&'static Upcalls> = Once::new();

/// Registers the kernel's upcalls. Once, first thing at boot; a second call is ignored.
pub fn register(upcalls: &'static Upcalls) {
    UPCALLS.call_once(|| upcalls);
}

#[inline]
fn get() -> Option<&'static Upcalls> {
    UPCALLS.get().copied()
}

#[inline]
pub(crate) fn preempt_point() {
    if let Some(u) = get() {
        (u.preempt_point)()
    }
}

pub(crate) fn irq_exit() {
    if let Some(u) = get() {
        (u.irq_exit)()
    }
}

pub(crate) fn reschedule_ipi() {
    if let Some(u) = get() {
        (u.reschedule_ipi)()
    }
}

pub(crate) fn rt_push_requested(cpu: u32) {
    if let Some(u) = get() {
        (u.rt_push_requested)(cpu)
    }
}

pub(crate) fn init_cpu(cpu: u32) {
    if let Some(u) = get() {
        (u.init_cpu)(cpu)
    }
}

pub(crate) fn ap_start(cpu: &'static crate::percpu::PerCpu) -> ! {
    match get() {
        Some(u) => (u.ap_start)(cpu),
        None => crate::arch::halt_forever(),
    }
}

pub(crate) fn current_is_rt() -> bool {
    get().is_some_and(|u| (u.current_is_rt)())
}

pub(crate) fn trace_context() -> Option<(Comm, u32)> {
    get().map(|u| (u.trace_context)())
}

pub(crate) fn wake_kswapd() {
    if let Some(u) = get() {
        (u.wake_kswapd)()
    }
}

pub(crate) fn direct_reclaim(pages: u64) -> u64 {
    get().map_or(0, |u| (u.direct_reclaim)(pages))
}

pub(crate) fn console_input() {
    if let Some(u) = get() {
        (u.console_input)()
    }
}

pub(crate) fn panic() {
    if let Some(u) = get() {
        (u.panic)()
    }
}

pub(crate) fn user_event_pending() -> bool {
    get().is_some_and(|u| (u.user_event_pending)())
}
