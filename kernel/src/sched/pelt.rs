//! Per-entity load tracking as Linux 6.12 drives it (`kernel/sched/fair.c`'s
//! `update_load_avg`, `attach_entity_load_avg`, `remove_entity_load_avg`; `pelt.c`'s RT and
//! DEADLINE signals), over the arithmetic of `cadence_sched::pelt`.
//!
//! # Signals
//! * Each fair task's `se.avg` ([`TaskPelt`], in `Task::pelt`): load and runnable while it is
//!   queued (running included), running while it is its CPU's `curr`, weighted by its weight.
//! * Each CPU's root fair queue (`RqInner::cpu_avg`, Linux's `rq->cfs.avg`): load = the root
//!   queue's `load.weight`, runnable = fair tasks queued at any level (`h_nr_running`),
//!   running = a fair `curr`. The tasks attached to a CPU are part of its signal: a task's
//!   signal is **attached** (added) to a CPU's when it is queued there first (a new task, one
//!   that migrated, one back from another class) and **removed** when it leaves (migration,
//!   exit, another class), so a task's utilization moves with it, and a sleeping task's stays
//!   on its CPU as blocked load, decaying.
//! * Each CPU's RT and DEADLINE signals (`avg_rt`, `avg_dl`: running 0/1), the time those
//!   classes take from fair tasks (Linux's `scale_rt_capacity` input).
//!
//! # When they are updated
//! A signal only needs an update when its inputs change; the hooks are where they do:
//! `enqueue_task`/`dequeue_task` (the CPU's signal first, with the queue as it was; then the
//! task's), the switch (`prev`'s running stretch, `next`'s waiting one), and the tick (the
//! running task's, so `/proc/PID/sched` reads a fresh value, as Linux's `entity_tick`).
//!
//! # Removal without the old CPU's lock
//! A task woken on another CPU leaves its old CPU without that CPU's lock (Linux's
//! `migrate_task_rq_fair`): its signal is first brought, as blocked, to the old CPU's last
//! update (`Rq::pelt_stamp`), then added to that CPU's `Rq::pelt_removed`, which its next
//! update subtracts (`update_cfs_rq_load_avg`). The task's own signal then decays to the
//! wakeup (Linux 6.2+'s `migrate_se_pelt_lag` estimates that sleep; here it is known) and is
//! attached to the new CPU's.
//!
//! # Not modelled
//! Group entities and group queues' signals (`propagate_entity_load_avg`, `tg_load_avg`): a
//! task in a task group is attached to its CPU's root signal directly. Utilization comes out as
//! Linux's (a group entity's is its queue's, the sum of its tasks'), load does not (Linux's
//! root `load_avg` counts a group by its shares, here each task by its weight).
//! `util_est` and frequency/capacity invariance (QEMU's CPUs all have capacity 1024 and no
//! frequency scaling), and IRQ time (not accounted apart from the task it interrupts).
//!
//! Lock order: a run-queue lock, then `Task::pelt` (a leaf).

use super::task::{ClassId, Task};
use super::{rq_of, RqInner};
use cadence_sched::pelt::{Removed, SchedAvg, SCHED_CAPACITY_SCALE};
use core::sync::atomic::Ordering;

/// A task's PELT state (Linux's `se.avg`, plus where it is attached).
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskPelt {
    /// The signal.
    pub avg: SchedAvg,
    /// The CPU whose root signal holds this one (Linux: the `cfs_rq` the entity is attached
    /// to; `None` between a removal and the next attach, as Linux's `last_update_time == 0`).
    pub attached: Option<u32>,
    /// Set once the signal was initialized (Linux's `init_entity_runnable_average` and
    /// `post_init_entity_util_avg` at the first fair enqueue).
    pub initialized: bool,
}

/// Brings `g`'s CPU signals (fair, RT, DEADLINE) up to `now`, after subtracting what left
/// (Linux's `update_cfs_rq_load_avg` + `update_rt_rq_load_avg` + `update_dl_rq_load_avg`):
/// the stretch since the last update had the queue as it is now (every change updates first).
/// Publishes the utilization at each period boundary crossed, and the update time always.
pub(super) fn update_cpu(g: &mut RqInner, now: u64) {
    let rq = rq_of(g.cpu);
    if rq.pelt_removed_nr.load(Ordering::Acquire) != 0 {
        let r = {
            let mut removed = rq.pelt_removed.lock();
            rq.pelt_removed_nr.store(0, Ordering::Relaxed);
            core::mem::take(&mut *removed)
        };
        g.cpu_avg.apply_removed(r);
    }
    let class = g.curr.as_ref().filter(|c| !c.is_idle).map(|c| c.class());
    let running = class == Some(ClassId::Fair);
    let nr = g.nr_fair_tasks as u64;
    // A fair `curr` counts as queued for its own stretch even once dequeued (Linux charges
    // before the dequeue; a path that dequeues first must not drop the stretch it ran).
    let load = g.fair.load().max(u64::from(running));
    let before = g.cpu_avg.last_update_time;
    if g.cpu_avg.update(now, load, nr.max(u64::from(running)), running, 1) {
        rq.util_avg.store(g.cpu_avg.util_avg, Ordering::Relaxed);
        rq.runnable_avg.store(g.cpu_avg.runnable_avg, Ordering::Relaxed);
        rq.util_stamp.store(g.cpu_avg.last_update_time, Ordering::Release);
    }
    if g.cpu_avg.last_update_time != before {
        rq.pelt_stamp.store(g.cpu_avg.last_update_time, Ordering::Release);
    }
    let rt = u64::from(class == Some(ClassId::Rt));
    let dl = u64::from(class == Some(ClassId::Dl));
    let mut changed = g.avg_rt.update(now, rt, rt, rt != 0, 1);
    changed |= g.avg_dl.update(now, dl, dl, dl != 0, 1);
    if changed {
        // Linux's `scale_rt_capacity` (no IRQ time or thermal pressure here).
        let used = g.avg_rt.util_avg + g.avg_dl.util_avg;
        rq.capacity.store(SCHED_CAPACITY_SCALE.saturating_sub(used).max(1), Ordering::Relaxed);
    }
}

/// Brings a fair task's signal attached to `g`'s CPU up to `now`, with what it was doing
/// since its last update: `queued` (on the run queue, running included) and `running` (its
/// CPU's `curr`). Linux's `__update_load_avg_se`. Nothing for other classes' tasks.
pub(super) fn update_task(g: &RqInner, task: &Task, now: u64, queued: bool, running: bool) {
    if task.is_idle || task.class() != ClassId::Fair {
        return;
    }
    let weight = task.attr_weight_cached();
    let mut p = task.pelt.lock();
    if p.attached == Some(g.cpu) {
        p.avg.update(now, u64::from(queued), u64::from(queued), running, weight);
    }
}

/// A task is queued on `g`'s CPU at `now` (`enqueue_task`, before its class's enqueue; the
/// CPU's signal already brought to `now`). `was_queued`: it stayed queued through the matching
/// dequeue (a requeue or a balancer's move), so the stretch before counts as runnable.
///
/// A fair task's signal is brought to `now` and, if not attached here, removed from where it
/// was and attached here (a new task's first initialized); another class's task's signal is
/// removed from its CPU (Linux's `switched_from_fair` detaches it; it stays frozen until the
/// task is fair again, then decays for the time away and is attached: `ATTACH_AGE_LOAD`).
pub(super) fn enqueue(g: &mut RqInner, task: &Task, now: u64, was_queued: bool) {
    if task.is_idle {
        return;
    }
    let weight = task.attr_weight_cached();
    let mut p = task.pelt.lock();
    if task.class() != ClassId::Fair {
        if let Some(cpu) = p.attached.take() {
            remove_from(cpu, &mut p.avg, weight);
        }
        return;
    }
    let running = g.curr.as_ref().is_some_and(|c| core::ptr::eq(&**c, task));
    match p.attached {
        Some(cpu) if cpu == g.cpu => {
            p.avg.update(now, u64::from(was_queued), u64::from(was_queued), running && was_queued, weight);
            return;
        }
        Some(cpu) => remove_from(cpu, &mut p.avg, weight),
        None => {}
    }
    if !p.initialized {
        // `init_entity_runnable_average` + `post_init_entity_util_avg` (a fork's first
        // enqueue, on the CPU chosen for it).
        p.avg = SchedAvg::new_task(weight);
        p.avg.post_init_util(&g.cpu_avg, weight, SCHED_CAPACITY_SCALE);
        p.initialized = true;
    } else if p.avg.last_update_time != 0 && now > p.avg.last_update_time {
        // The time since it left: blocked (asleep, in another class), or runnable for the
        // instant of a balancer's move.
        p.avg.update(now, u64::from(was_queued), u64::from(was_queued), false, weight);
    }
    g.cpu_avg.attach(&mut p.avg, weight);
    p.attached = Some(g.cpu);
}

/// Hands a task's signal to `cpu`'s pending removals, brought to that CPU's last update first
/// (Linux's `remove_entity_load_avg`; no run-queue lock needed).
fn remove_from(cpu: u32, avg: &mut SchedAvg, weight: u64) {
    let rq = rq_of(cpu);
    let r = avg.removal(rq.pelt_stamp.load(Ordering::Acquire), weight);
    let mut removed = rq.pelt_removed.lock();
    *removed = Removed {
        load_avg: removed.load_avg + r.load_avg,
        util_avg: removed.util_avg + r.util_avg,
        runnable_avg: removed.runnable_avg + r.runnable_avg,
    };
    rq.pelt_removed_nr.fetch_add(1, Ordering::Release);
}

/// A task is gone for good (Linux's `task_dead_fair`): its signal leaves its CPU's.
pub(super) fn task_dead(task: &Task) {
    let weight = task.attr_weight_cached();
    let mut p = task.pelt.lock();
    if let Some(cpu) = p.attached.take() {
        remove_from(cpu, &mut p.avg, weight);
    }
}

/// A task's signal as `/proc/PID/sched` prints it (the value of its last update, as Linux's).
pub fn task_avg(task: &Task) -> SchedAvg {
    task.pelt.lock().avg
}
