//! The scheduler tick, preemption points and preemption control, `sched_yield` and sleeping.

use super::task::TaskState;
use super::{__schedule, balance, class, current, lockup, reserve, rq_of, rt_limits, schedule, signal, this_cpu, this_rq, update_curr};
use crate::percpu;
use core::sync::atomic::Ordering;

/// The scheduler tick (from the periodic timer, interrupts off). A tickless idle CPU runs it
/// only at its RT period's end (`nohz`).
pub fn scheduler_tick() {
    let cpu = this_cpu();
    if !rq_of(cpu.cpu_id).ready.load(Ordering::Acquire) {
        return;
    }
    let ticks = rq_of(cpu.cpu_id).ticks.fetch_add(1, Ordering::Relaxed);
    let (resched, curr) = {
        let mut g = rq_of(cpu.cpu_id).lock.lock();
        let now = crate::time::uptime_ns();
        let mut resched = update_curr(&mut g, now);
        resched |= rt_limits::check_throttle(&mut g, now);
        super::wc::tick(&mut g, now);
        resched |= super::bandwidth::tick(&mut g, now);
        let curr = g.curr.clone();
        if let Some(curr) = &curr {
            // Linux's `entity_tick`: the running task's signal, fresh for readers.
            super::pelt::update_task(&g, curr, now, curr.is_on_rq(), true);
            resched |= class::of(curr).task_tick(&mut g, curr);
        }
        (resched, curr)
    };
    if let Some(curr) = curr {
        let from_user = crate::interrupts::timer_from_user();
        super::cputimer::account_tick(&curr, from_user);
        if from_user && !curr.is_idle {
            rq_of(cpu.cpu_id).user_ns.fetch_add(crate::timer::tick_period_ns(), Ordering::Relaxed);
        }
    }
    if resched {
        super::flag_need_resched(cpu.cpu_id);
    }
    lockup::tick(cpu);
    // The hierarchical balancer keeps each domain's interval itself (`next_balance`); the flat
    // one runs every BALANCE_INTERVAL_TICKS, staggered.
    if super::load_balance::active() || ticks % balance::BALANCE_INTERVAL_TICKS == (cpu.cpu_id as u64 % balance::BALANCE_INTERVAL_TICKS) {
        rq_of(cpu.cpu_id).balance_due.store(true, Ordering::Relaxed);
    }
    // Not while a reschedule is pending: whatever woke here (an RT task, typically, from the
    // timer that fired with this tick) runs first; a later tick balances.
    if rq_of(cpu.cpu_id).balance_due.load(Ordering::Relaxed) && !rq_of(cpu.cpu_id).need_resched.load(Ordering::Acquire) {
        rq_of(cpu.cpu_id).balance_due.store(false, Ordering::Relaxed);
        balance::periodic_balance(cpu.cpu_id);
    }
    // The timekeeping duty (load averages, the hard-lockup check) and the kick of a tickless
    // idle CPU when tasks wait here.
    super::nohz::tick(cpu.cpu_id, crate::time::uptime_ns(), rq_of(cpu.cpu_id).nr_running.load(Ordering::Acquire));
}

/// At the end of an interrupt: preempt the interrupted task if a reschedule is due.
pub fn irq_exit() {
    if preemptible_with_resched() {
        // Loop (Linux `preempt_schedule_irq`): the switch may request another reschedule.
        // The CPU is re-read each time: a resumed task may be on another CPU.
        while preemptible_with_resched() {
            __schedule(true);
        }
        // Back in the interrupted task: act on its signals before returning to it.
        signal::handle_pending_at_irq_exit();
    }
    let rq = this_rq();
    // Only where preemption is allowed: the action may end the task, and a task ended inside
    // a preemption-disabled section would leave this CPU's count raised for good.
    if rq.ready.load(Ordering::Acquire) && framework::preempt::preempt_count() == 0 {
        rt_limits::act_on_current();
    }
}

/// A preemption point in task context (called when interrupts are re-enabled and when
/// preemption is re-enabled).
///
/// Like Linux's `preemptible()`, it schedules only with interrupts enabled: a `PreemptGuard`
/// dropped with interrupts off (in `finish_task_switch`, for instance, which wakes a dead
/// task's waiters) must not switch from there, or every task resumed in that nested switch
/// could nest another one on its stack. The pending reschedule happens at the next interrupt
/// exit or preemption point instead.
///
/// The flags first, the interrupt flag last: reading it (`pushf`) is a helper call under TCG,
/// and this runs at every lock release, where usually nothing is pending.
pub fn preempt_point() {
    if !percpu::gs_ready() {
        return;
    }
    reserve::refill_pending(); // its own flag first, then the same interrupt check
    if !preemptible_with_resched() || !crate::irqflags::are_enabled() {
        return;
    }
    while preemptible_with_resched() {
        __schedule(true);
    }
}

/// A reschedule is pending on this CPU and may happen now (preemption enabled, scheduler
/// running). The count first: it is one GS load away, and usually decides.
fn preemptible_with_resched() -> bool {
    if framework::preempt::preempt_count() != 0 {
        return false;
    }
    let rq = this_rq();
    rq.ready.load(Ordering::Acquire) && rq.need_resched.load(Ordering::Acquire)
}

/// The preemption count is the framework's (`framework::preempt`): a guard's drop that brings
/// it to zero runs [`preempt_point`] through the `preempt_point` upcall.
pub use framework::preempt::{preempt_count_dec, preempt_count_inc, preempt_disable, PreemptGuard};

/// `sched_yield()`: gives up the CPU to tasks of equal priority.
pub fn yield_now() {
    {
        let cpu = this_cpu();
        let mut g = rq_of(cpu.cpu_id).lock.lock();
        let now = crate::time::uptime_ns();
        update_curr(&mut g, now);
        if let Some(curr) = g.curr.clone() {
            class::of(&curr).yield_task(&mut g, &curr);
        }
    }
    schedule();
}

/// Sleeps until `uptime_ns() >= deadline_ns`; a fatal signal ends the task (a kernel task's
/// sleep: see `signal`).
#[track_caller]
pub fn sleep_until(deadline_ns: u64) {
    if sleep_until_interruptible(deadline_ns).is_err() {
        signal::handle_pending();
        unreachable!("a fatal signal ends the task");
    }
}

/// A sleep ended early by a fatal signal (the caller, a system call, answers EINTR and the
/// process acts on the signal on its way back to user mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted;

/// [`sleep_until`] for a user process's system call: a fatal signal ends the sleep (returns
/// [`Interrupted`]) instead of ending the task, so the process unwinds what it holds.
#[track_caller]
pub fn sleep_until_interruptible(deadline_ns: u64) -> Result<(), Interrupted> {
    // Holds `me` and a timer's reference: a fatal signal is acted on at the loop's check.
    let _defer = signal::DeferFatal::new();
    let me = current();
    me.set_wait_site(core::panic::Location::caller());
    while crate::time::uptime_ns() < deadline_ns {
        me.set_state(TaskState::Sleeping);
        if signal::interrupted(&me) {
            me.set_state(TaskState::Running);
            return Err(Interrupted);
        }
        let cpu = percpu::cpu_id();
        me.stats.sleep_deadline.store(deadline_ns, Ordering::Relaxed);
        // The timer holds a reference to the task until it fires or is cancelled.
        let Some(timer) = framework::task::timer::arm(cpu, deadline_ns, me.clone()) else {
            me.set_state(TaskState::Running);
            return Ok(());
        };
        schedule();
        // Woken early (a signal, a spurious wakeup)? Cancel the timer so it neither wakes us
        // later for nothing nor keeps our task alive in its queue.
        timer.cancel();
    }
    me.set_state(TaskState::Running);
    me.stats.sleep_deadline.store(0, Ordering::Relaxed);
    Ok(())
}

/// Sleeps for `ns` nanoseconds.
#[track_caller]
pub fn sleep_ns(ns: u64) {
    sleep_until(crate::time::uptime_ns().saturating_add(ns));
}
