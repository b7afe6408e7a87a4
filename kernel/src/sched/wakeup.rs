//! Wakeups (Linux `try_to_wake_up`): enqueueing a woken task where it fits, remote wake
//! lists drained by the target CPU, and reschedule requests and their IPIs.

use super::task::{Task, TaskState};
use super::{
    balance, class, enqueue_task, hrtick, online_mask, reserve, rq_of, rqlock, this_cpu, update_counts, update_curr, wakeup_preempt,
    RqInner,
};
use crate::percpu;
use alloc::sync::Arc;
use cadence_sched::eevdf::{ENQUEUE_INITIAL, ENQUEUE_WAKEUP};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Sets `cpu`'s `need_resched` and, if it was clear, asks the CPU's preemption points to act
/// on it (`framework::preempt::request_preempt_point`; a flag already set was asked for by
/// whoever set it). No IPI: for this CPU, or where the next tick is soon enough. Returns
/// whether it was already set.
pub(super) fn flag_need_resched(cpu: u32) -> bool {
    let was_set = rq_of(cpu).need_resched.swap(true, Ordering::SeqCst);
    if !was_set {
        framework::preempt::request_preempt_point(cpu);
    }
    was_set
}

pub(super) fn set_need_resched(cpu: u32) {
    let rq = rq_of(cpu);
    // Already pending: the CPU acts on it at its next preemption point (it is cleared only by
    // `__schedule` under the run-queue lock, after which any new work is visible), so no IPI.
    if flag_need_resched(cpu) {
        return;
    }
    // A CPU polling in its idle loop sees the flag without an IPI (Linux's TIF_POLLING_NRFLAG).
    if cpu != percpu::cpu_id() && !rq.polling.load(Ordering::SeqCst) {
        let to_idle = rq.curr_prio.load(Ordering::Relaxed) == 0; // `cpu_prio` of the idle task
        RESCHED_IPIS_SENT[if to_idle { 1 } else { 0 }].fetch_add(1, Ordering::Relaxed);
        send_reschedule_ipi(cpu);
    }
}

/// Reschedule IPIs sent, by reason: [a running task is to be preempted, an idle CPU is to
/// wake, a wakeup was handed to the CPU's wake list] (`trace irqsoff` reports them).
static RESCHED_IPIS_SENT: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// [`RESCHED_IPIS_SENT`]: [to preempt, to wake an idle CPU, for the wake list].
pub fn resched_ipis_sent() -> [u64; 3] {
    RESCHED_IPIS_SENT.each_ref().map(|c| c.load(Ordering::Relaxed))
}

/// Sends `cpu` a reschedule IPI (traced as `ipi_raise`).
pub(super) fn send_reschedule_ipi(cpu: u32) {
    if let Some(c) = percpu::get(cpu) {
        crate::trace::ipi_send(cpu, crate::arch::apic::RESCHEDULE_VECTOR, crate::time::uptime_ns());
        crate::arch::apic::send_ipi(c.apic_id, crate::arch::apic::RESCHEDULE_VECTOR);
    }
}

/// Queues a runnable (not queued) task on `cpu` and preempts if it should. Caller holds
/// `task.params`.
pub(super) fn activate_on(task: &Arc<Task>, cpu: u32, flags: u32) {
    activate_on_if(task, cpu, flags, |_| true);
}

/// [`activate_on`] if `admit` approves of `cpu`'s run queue (looked at under its lock, the
/// one the enqueue then holds); false, nothing done, if not.
pub(super) fn activate_on_if(task: &Arc<Task>, cpu: u32, flags: u32, admit: impl FnOnce(&RqInner) -> bool) -> bool {
    // Wait until the task's context is off every CPU (it may still be switching out).
    while task.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    let g = rq_of(cpu).lock.lock();
    if !admit(&g) {
        return false;
    }
    activate_locked(task, cpu, flags, g);
    true
}

/// [`activate_on`] with `cpu`'s run queue locked by the caller (`g`, released here) and
/// `task` off every CPU.
fn activate_locked(task: &Arc<Task>, cpu: u32, flags: u32, mut g: rqlock::RqGuard<'_, RqInner>) {
    let rq = rq_of(cpu);
    let now = crate::time::uptime_ns();
    let orig = task.cpu();
    if orig != cpu {
        task.stats.nr_migrations.fetch_add(1, Ordering::Relaxed);
        if flags & ENQUEUE_INITIAL == 0 {
            crate::trace::sched_migrate_task(task, orig, cpu, now);
        }
    }
    // The running task is charged up to now once, here: its class may want the CPU back
    // already (a slice ended with others waiting), and the wakeup preemption check below
    // relies on the charge (Linux's `check_preempt_wakeup_fair` calls `update_curr` first).
    let curr_done = update_curr(&mut g, now);
    enqueue_task(&mut g, task, flags, now);
    if flags & (ENQUEUE_WAKEUP | ENQUEUE_INITIAL) != 0 {
        crate::trace::sched_wakeup(task, cpu, flags & ENQUEUE_INITIAL != 0, now);
    }
    let preempt = curr_done || wakeup_preempt(&mut g, task);
    if !preempt {
        // The running task may now share its CPU: end its slice on time.
        if let Some(curr) = g.curr.clone() {
            hrtick::update(&mut g, &curr, now);
        }
    }
    update_counts(rq, &g);
    drop(g);
    if preempt {
        set_need_resched(cpu);
    }
    // A woken RT task that waits (or that waits elsewhere after the snapshot went stale)
    // moves to a CPU running something less important now; one that preempts is pushed, if
    // still waiting, by the switch it causes.
    if !preempt {
        class::balance(cpu, class::BalancePoint::Woken);
    }
}

/// Linux `try_to_wake_up`: makes a sleeping task runnable. Returns false if it already was.
pub fn try_to_wake_up(task: &Arc<Task>) -> bool {
    let _params = task.params.lock();
    if task.state() != TaskState::Sleeping {
        return false;
    }
    // Still queued (it set itself Sleeping but has not switched out yet)? Then just mark it
    // running, under its run queue's lock, which `schedule()` holds when it decides to dequeue.
    // Only a Sleeping task is woken: it may have woken itself meanwhile (a wait whose condition
    // came true) and even exited, and `Dead` must never turn back into `Running`.
    //
    // `on_rq` is read first without the lock (Linux `READ_ONCE(p->on_rq)`): it is cleared
    // only when a task really leaves the queues, and then set again only under `params` (by
    // wakers, or the migration in `finish_task_switch`), so `false` here stays `false`, and a
    // dequeued task's run queue (often another CPU's) need not be locked at all. Requeues and
    // migrations, some made without `params`, keep it set throughout (see `dequeue_task`).
    while task.is_on_rq() {
        let cpu = task.cpu();
        let rq = rq_of(cpu);
        let g = rq.lock.lock();
        if task.cpu() != cpu {
            continue;
        }
        if task.is_on_rq() {
            if !task.transition(TaskState::Sleeping, TaskState::Running) {
                return false;
            }
            crate::trace::sched_wakeup(task, cpu, false, crate::time::uptime_ns());
            drop(g);
            task.stats.nr_wakeups.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        break;
    }
    // Off every run queue: only wakers (serialized by `params`) change its state now.
    if !task.transition(TaskState::Sleeping, TaskState::Running) {
        return false;
    }
    task.watchdog.reset();
    task.stats.nr_wakeups.fetch_add(1, Ordering::Relaxed);
    task.stats.woken_at.store(crate::time::uptime_ns().max(1), Ordering::Relaxed);
    let this = percpu::cpu_id();
    if ttwu_queue_enabled() {
        // Still switching out over there: hand the wakeup to that CPU rather than spin here
        // (interrupts off, `params` held) until it is done.
        let prev_cpu = task.cpu();
        if task.on_cpu.load(Ordering::Acquire) && prev_cpu != this {
            queue_wakeup(task, prev_cpu);
            return true;
        }
        // A remote run queue is locked only if it is free right now: a busy one may be held
        // by a CPU whose vCPU the host descheduled, and the wakeup goes to its wake list.
        // Linux queues only across caches; queueing every remote wakeup made the target's
        // drain (10 to 16 wakeups, ~300 µs under TCG) a delay in front of its RT wakeups.
        let target = select_cpu(task, this);
        if target != this {
            match rq_of(target).lock.try_lock() {
                Some(g) if reserve::fits(&g, task) => activate_locked(task, target, ENQUEUE_WAKEUP, g),
                busy_or_full => {
                    drop(busy_or_full);
                    queue_wakeup(task, target);
                }
            }
            return true;
        }
        // This CPU: chosen once (a second `select_cpu` would scan for an idle CPU again).
        activate_wakeup(task, target);
        return true;
    }
    let target = select_cpu(task, this);
    activate_wakeup(task, target);
    true
}

/// Queues the woken `task` on `cpu` if it fits that CPU's queues without allocating
/// ([`reserve::fits`], checked under the lock the enqueue then holds); otherwise hands it to
/// that CPU's wake list, whose drain waits for the refill ([`ttwu_pending`]). An enqueue into a
/// full queue would grow it here, with interrupts off (`params` is held): a burst of wakeups
/// onto one CPU (hackbench's 320 tasks at -smp 4 SMT) outran the headroom before any
/// preemption point could refill it, in 2 of 40 runs of `tests/bench.rs`'s workload.
fn activate_wakeup(task: &Arc<Task>, cpu: u32) {
    if !activate_on_if(task, cpu, ENQUEUE_WAKEUP, |g| reserve::fits(g, task)) {
        queue_wakeup(task, cpu);
    }
}

/// Remote wakeups whose target run queue is busy go through the target CPU's wake list
/// (`TTWU_QUEUE` in `kernel.sched_features`; default on, by measurement: docs/design/wakeups.md,
/// *Remote wakeups*).
static TTWU_QUEUE: AtomicBool = AtomicBool::new(true);

/// A CPU whose RT level dropped asks overloaded CPUs to push instead of pulling from them
/// (`RT_PUSH_IPI` in `kernel.sched_features`; default by measurement: docs/design/wakeups.md,
/// *RT_PUSH_IPI*).
static RT_PUSH_IPI: AtomicBool = AtomicBool::new(false);

pub fn rt_push_ipi_enabled() -> bool {
    RT_PUSH_IPI.load(Ordering::Relaxed)
}

pub fn set_rt_push_ipi(on: bool) {
    RT_PUSH_IPI.store(on, Ordering::Relaxed);
}

pub fn ttwu_queue_enabled() -> bool {
    TTWU_QUEUE.load(Ordering::Relaxed)
}

pub fn set_ttwu_queue(on: bool) {
    TTWU_QUEUE.store(on, Ordering::Relaxed);
}

/// Hands the wakeup of `task` (now `Running`, on no run queue) to `cpu` (Linux
/// `ttwu_queue_wakelist`): pushes it on that CPU's wake list and sends a reschedule IPI, whose
/// handler queues it there ([`ttwu_pending`]) and decides on preemption locally. The waker
/// never locks the remote run queue, so it never spins, preemption off, behind a holder whose
/// vCPU the host descheduled (measured under TCG at -smp 4: up to 2.7 ms in a pipe wakeup,
/// holding up an RT task woken on the waker's CPU meanwhile).
///
/// A task is on at most one wake list, once: only the waker that moved it from `Sleeping` to
/// `Running` queues it, no other path queues it while `wake_queued` is set (the migration in
/// `finish_task_switch` checks it), so it cannot run, sleep and be woken onto a second list
/// before the first one is drained. (The coresched stress found this: a task that changed its
/// own affinity and was preempted while going to sleep was queued by that migration while on a
/// wake list, ran, slept, and was pushed on another list, cross-linking the two.)
fn queue_wakeup(task: &Arc<Task>, cpu: u32) {
    debug_assert!(!task.wake_queued.load(Ordering::Relaxed), "a task on two wake lists");
    task.wake_queued.store(true, Ordering::Release);
    push_wakeup(task, cpu);
}

/// Pushes `task` (its wakeup taken, `wake_queued` set, off every wake list) on `cpu`'s wake
/// list with a reference of its own, counts it in `wake_pending` there and tells the CPU.
fn push_wakeup(task: &Arc<Task>, cpu: u32) {
    let rq = rq_of(cpu);
    let pending = rq.wake_pending.fetch_add(1, Ordering::SeqCst) + 1;
    super::balance::refresh_idle(cpu);
    reserve::note_wakeup_queued(cpu, pending);
    let was_empty = rq.wake_list.push(task.clone());
    // Only the wakeup that found the list empty tells the CPU (Linux's `llist_add` in
    // `__smp_call_single_queue`): the later ones join a list whose drain is already asked for
    // and takes them all (a drain detaches the whole list, so a push after it finds it empty).
    // Under `bench hackbench` this was an IPI per remote wakeup, ~6000 a second per CPU.
    if !was_empty {
        return;
    }
    // A polling idle CPU sees `need_resched` (its `__schedule` drains the list first); any
    // other gets the IPI. `__schedule` re-checks the list after clearing `need_resched`, so
    // an entry pushed while it runs is not left behind.
    if rq.polling.load(Ordering::SeqCst) {
        set_need_resched(cpu);
    } else {
        RESCHED_IPIS_SENT[2].fetch_add(1, Ordering::Relaxed);
        send_reschedule_ipi(cpu);
    }
}

/// Queues the tasks whose wakeups other CPUs handed to this one (Linux `sched_ttwu_pending`),
/// oldest first. Called with no lock held and interrupts off: from the reschedule IPI, at the
/// start of `__schedule` and after a switch.
///
/// Only wakeups that fit the target's queues without allocating ([`reserve::fits`]): at the
/// first that does not fit here, it and the rest go back on the wake list (still counted in
/// `wake_pending`, still `wake_queued`) and the CPU is marked for a refill, after which
/// [`reserve`] makes it drain again (a reschedule of its own, or an IPI); one whose target is
/// another CPU with full queues moves to that CPU's wake list. A burst of wakeups larger than
/// the headroom (hackbench's 320 tasks) therefore waits for one refill instead of allocating
/// with interrupts off. Every wakeup path ends here or in a checked enqueue
/// ([`activate_wakeup`]), so no wakeup allocates.
pub fn ttwu_pending() {
    if !percpu::gs_ready() {
        return;
    }
    let cpu = this_cpu();
    if rq_of(cpu.cpu_id).wake_list.is_empty(Ordering::Relaxed) {
        return;
    }
    // Oldest first, so that wakeups are queued in the order they came.
    let mut drain = rq_of(cpu.cpu_id).wake_list.take_all();
    while let Some(task) = drain.next() {
        let _p = task.params.lock();
        // Another path may have queued it meanwhile (a migration after an affinity change,
        // which also holds `params`); a signal may have changed its state.
        let mut queued = true;
        if !task.is_on_rq() && task.state() == TaskState::Running {
            let here = cpu.cpu_id;
            let target = if task.affinity().contains(here as usize) && online_mask().contains(here as usize) {
                here
            } else {
                select_cpu(&task, here)
            };
            // Only if it fits the queues without allocating (checked under the lock the enqueue
            // then uses).
            queued = activate_on_if(&task, target, ENQUEUE_WAKEUP, |g| reserve::fits(g, &task));
            if !queued && target != here {
                // Another CPU's queues are full: the wakeup moves to its wake list (still
                // `wake_queued`), whose drain waits for that CPU's refill.
                rq_of(here).wake_pending.fetch_sub(1, Ordering::SeqCst);
                super::balance::refresh_idle(here);
                push_wakeup(&task, target);
                drop(_p);
                continue;
            }
        }
        if !queued {
            // It and the rest wait for the refill: back on the list, still `wake_queued` (so no
            // other path queues it) and still counted in `wake_pending`.
            drop(_p);
            drain.requeue(task);
            reserve::note_wakeup_deferred(cpu.cpu_id);
            return;
        }
        // Unlinked: from here other paths may queue it again (under `params`, as here).
        task.wake_queued.store(false, Ordering::Release);
        drop(_p);
        rq_of(cpu.cpu_id).wake_pending.fetch_sub(1, Ordering::SeqCst);
        super::balance::refresh_idle(cpu.cpu_id);
    }
}

/// Makes `task`'s CPU reschedule if it is running there, so it reaches a preemption point
/// (where pending signals are acted upon).
pub fn kick_task(task: &Arc<Task>) {
    if task.on_cpu.load(Ordering::Acquire) {
        set_need_resched(task.cpu());
    }
}

/// Wakes a task (no-op if it is runnable).
pub fn wake_up(task: &Arc<Task>) {
    try_to_wake_up(task);
}

/// Picks the CPU a waking or new task should run on (affinity first).
pub(super) fn select_cpu(task: &Task, waker_cpu: u32) -> u32 {
    balance::select_cpu(task, waker_cpu)
}
