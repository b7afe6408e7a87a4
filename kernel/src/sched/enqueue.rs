//! Putting tasks on and off a run queue's class queues ([`enqueue_task`], [`dequeue_task`],
//! [`requeue_locked`]), charging the running task ([`update_curr`]) and wakeup preemption.

use super::pelt;
use super::task::Task;
use super::{
    balance_callbacks, class, cpu_prio, reserve, rq_of, rqlock, set_need_resched, start_wait, update_counts, RqInner, BAD_ENQUEUES,
};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// Accounts the running task's time up to `now`. Returns true if the fair class wants a
/// reschedule (slice used up with others waiting).
pub(super) fn update_curr(g: &mut RqInner, now: u64) -> bool {
    let delta = now.saturating_sub(g.exec_start);
    g.exec_start = now;
    super::pelt::update_cpu(g, now);
    let Some(curr) = g.curr.clone() else { return false };
    if curr.is_idle {
        rq_of(g.cpu).idle_ns.fetch_add(delta, Ordering::Relaxed);
        return false;
    }
    curr.stats.sum_exec_runtime.fetch_add(delta, Ordering::Relaxed);
    class::of(&curr).update_curr(g, &curr, delta, now)
}

/// The enqueue halves of a requeue (`ENQUEUE_RESTORE`) or migration (`ENQUEUE_MIGRATING`): the
/// task kept `on_rq` through its dequeue.
const ENQUEUE_KEEPS_ON_RQ: u32 = cadence_sched::eevdf::ENQUEUE_RESTORE | cadence_sched::eevdf::ENQUEUE_MIGRATING;
/// The dequeue halves of the same (`DEQUEUE_SAVE`, `DEQUEUE_MIGRATING`).
const DEQUEUE_KEEPS_ON_RQ: u32 = cadence_sched::eevdf::DEQUEUE_SAVE | cadence_sched::eevdf::DEQUEUE_MIGRATING;

/// Puts a runnable task on `g`'s queues (Linux `activate_task` → class `enqueue`).
pub(super) fn enqueue_task(g: &mut RqInner, task: &Arc<Task>, flags: u32, now: u64) {
    task.cpu.store(g.cpu, Ordering::Release);
    // PELT first, with the queue as it was (Linux's `update_load_avg` in `enqueue_entity`).
    pelt::update_cpu(g, now);
    pelt::enqueue(g, task, now, flags & ENQUEUE_KEEPS_ON_RQ != 0);
    class::of(task).enqueue(g, task, flags);
    let was_queued = task.on_rq.swap(true, Ordering::AcqRel);
    if was_queued != (flags & ENQUEUE_KEEPS_ON_RQ != 0) {
        BAD_ENQUEUES.fetch_add(1, Ordering::Relaxed);
    }
    if task.core_cookie.load(Ordering::Relaxed) != 0 {
        rq_of(g.cpu).nr_cookied.fetch_add(1, Ordering::SeqCst);
    }
    g.tasks.insert(task.tid, task.clone());
    reserve::note_insert(g, Some(task));
    if !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, task)) {
        start_wait(task, now);
        // Another task is queued (or runs) here: it waits behind it. (A sleeping `curr` on its
        // way out is no longer queued: the task runs next and waits for nothing.)
        if g.nr_queued() >= 2 {
            super::load_balance::note_waiting(g, task);
        }
    }
}

/// Takes a task off `g`'s queues (Linux `deactivate_task`).
///
/// `on_rq` is cleared only when the task really leaves the queues (it sleeps, exits, or leaves
/// a CPU its affinity forbids, to be queued again under its `params` lock). A requeue around an
/// attribute change (`DEQUEUE_SAVE` … `ENQUEUE_RESTORE`) and a migration between two run
/// queues (`DEQUEUE_MIGRATING` … `ENQUEUE_MIGRATING`) keep it set, as Linux keeps `p->on_rq`
/// non-zero there (`TASK_ON_RQ_MIGRATING`): [`try_to_wake_up`] reads `on_rq` without a
/// run-queue lock and, finding it clear, takes the task for one on no queue and enqueues it
/// itself. The balancer's move and autogroup's toggle requeue tasks without their `params`
/// lock, and a task that set itself Sleeping and was preempted before switching out is still
/// queued: cleared for the move, a waker that read it then queued the task a second time, on
/// another CPU. It ran on both, and once it had exited on one, the other switched back into it
/// ("a dead task was scheduled again": the chaos stress at -smp 8, 300,000 operations). Kept
/// set, the waker locks the task's run queue, which the mover holds, and follows the task.
pub(super) fn dequeue_task(g: &mut RqInner, task: &Arc<Task>, flags: u32) {
    // PELT first, with the task still queued (Linux's `update_load_avg` in `dequeue_entity`).
    let now = crate::time::uptime_ns();
    pelt::update_cpu(g, now);
    let running = g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, task));
    pelt::update_task(g, task, now, true, running);
    class::of(task).dequeue(g, task, flags);
    if flags & DEQUEUE_KEEPS_ON_RQ == 0 {
        task.on_rq.store(false, Ordering::Release);
    }
    if task.core_cookie.load(Ordering::Relaxed) != 0 {
        rq_of(g.cpu).nr_cookied.fetch_sub(1, Ordering::SeqCst);
    }
    g.tasks.remove(&task.tid);
}

/// Takes `t` (on `g`'s CPU) off its queue — and off the CPU's "current" bookkeeping if it is
/// running — lets `change` alter it, and puts it back: Linux's DEQUEUE_SAVE / ENQUEUE_RESTORE
/// dance (`__sched_setscheduler`, `sched_move_task`), which keeps a fair task's lag, so it
/// keeps its place fairly wherever it lands (another class, group or weight).
pub(crate) fn requeue_locked(g: &mut RqInner, t: &Arc<Task>, now: u64, change: impl FnOnce(&mut RqInner)) {
    let queued = t.is_on_rq();
    let running = g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, t));
    // Siblings read the queued-cookie count without our lock (`coresched::active`): it must
    // not dip to 0 while the task is briefly off the queue, or a sibling could pick alone and
    // start a cookie-0 task beside a cookied one that keeps running here.
    let hold = queued && t.core_cookie.load(Ordering::Acquire) != 0;
    if hold {
        rq_of(g.cpu).nr_cookied.fetch_add(1, Ordering::SeqCst);
    }
    if queued {
        dequeue_task(g, t, cadence_sched::eevdf::DEQUEUE_SAVE | cadence_sched::eevdf::DEQUEUE_MOVE);
    }
    if running {
        class::of(t).put_prev(g, t);
    }
    if queued || running {
        class::park_entity(g, t);
    }
    change(g);
    if queued {
        enqueue_task(g, t, cadence_sched::eevdf::ENQUEUE_RESTORE | cadence_sched::eevdf::ENQUEUE_MOVE, now);
    }
    if running {
        class::of(t).set_next(g, t);
        rq_of(g.cpu).curr_cookie.store(t.core_cookie.load(Ordering::Relaxed), Ordering::Release);
        rq_of(g.cpu).curr_prio.store(cpu_prio(t), Ordering::Release);
    }
    if hold {
        rq_of(g.cpu).nr_cookied.fetch_sub(1, Ordering::SeqCst);
    }
    update_counts(rq_of(g.cpu), g);
}

/// Runs `f` with `t`'s run queue locked (retrying if the task moves meanwhile) and its runtime
/// accounted up to now, then reschedules that CPU.
///
/// The caller holds `t.params` (Linux's `task_rq_lock` takes `pi_lock` first): a sleeping
/// task's CPU changes only in a wakeup, which holds `params` from the state check to the
/// enqueue. Without it a wakeup could queue the task on another CPU while `f` runs here, and
/// `f` would see it queued on a run queue that is not the one it holds.
pub(crate) fn with_task_rq<R>(t: &Arc<Task>, f: impl FnOnce(&mut RqInner, u64) -> R) -> R {
    debug_assert!(t.params.is_locked(), "with_task_rq without the task's params lock");
    let (cpu, mut g) = lock_task_rq(t);
    let rq = rq_of(cpu);
    let now = crate::time::uptime_ns();
    let level_before = rq.rt_level.load(Ordering::SeqCst);
    update_curr(&mut g, now);
    let r = f(&mut g, now);
    drop(g);
    set_need_resched(cpu);
    // A priority, policy or affinity change may have lowered that CPU's level (pull) or
    // made a waiting task pushable (Linux `prio_changed_rt` / `switched_from_rt`).
    balance_callbacks(cpu, level_before);
    r
}

/// Locks the run queue `t` is on, retrying if it moves meanwhile (a wakeup stores the task's
/// new CPU before queueing it there): its CPU and the guard. Without `t.params` held (see
/// [`with_task_rq`]) the task may move as soon as the guard drops.
pub(crate) fn lock_task_rq(t: &Task) -> (u32, rqlock::RqGuard<'static, RqInner>) {
    loop {
        let cpu = t.cpu();
        let g = rq_of(cpu).lock.lock();
        if t.cpu() == cpu {
            return (cpu, g);
        }
    }
}

/// Should `task`, just queued on `g`, preempt what runs there?
pub(super) fn wakeup_preempt(g: &mut RqInner, task: &Arc<Task>) -> bool {
    let Some(curr) = g.curr.clone() else { return false };
    if Arc::ptr_eq(&curr, task) {
        return false;
    }
    // Linux's `wakeup_preempt`: the class decides within itself, class order across.
    if task.class() == curr.class() {
        class::of(task).wakeup_preempt(g, &curr, task)
    } else {
        class::preempts_by_class(task.class(), curr.class())
    }
}
