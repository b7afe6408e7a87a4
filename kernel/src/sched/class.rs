//! Scheduling classes behind one trait, in fixed order: [`CLASSES`] = rt > fair > idle.
//!
//! Each class implements Linux's hooks over the run queue's locked part (`RqInner`): enqueue,
//! dequeue, pick_next, put_prev, set_next, task_tick, yield_task. Wakeup preemption between
//! classes and CPU selection are in `sched` (`wakeup_preempt`) and `sched::balance`.
//!
//! Adding a class: implement [`SchedClass`], give it a [`ClassId`], insert it in [`CLASSES`]
//! at its priority and map tasks to it in [`of`].

use super::task::{ClassId, Task};
use super::RqInner;
use alloc::sync::Arc;
use cadence_sched::{FairEntity, ValidAttr};

pub trait SchedClass: Sync {
    fn name(&self) -> &'static str;
    /// Queue a runnable task (`flags`: `ENQUEUE_*`).
    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32);
    /// Take a task off the queue (`flags`: `DEQUEUE_*`).
    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32);
    /// The best task of this class, if any (no state change).
    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>>;
    /// `task` (the running one) stops running.
    fn put_prev(&self, rq: &mut RqInner, task: &Arc<Task>);
    /// `task` starts running.
    fn set_next(&self, rq: &mut RqInner, task: &Arc<Task>);
    /// Periodic tick while `task` runs; returns true to reschedule.
    fn task_tick(&self, rq: &mut RqInner, task: &Arc<Task>) -> bool;
    /// `sched_yield` by the running task.
    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>);
}

pub struct RtClass;
pub struct FairClass;
pub struct IdleClass;

pub static RT: RtClass = RtClass;
pub static FAIR: FairClass = FairClass;
pub static IDLE: IdleClass = IdleClass;

/// Class order, highest first.
pub static CLASSES: [&dyn SchedClass; 3] = [&RT, &FAIR, &IDLE];

/// The class a task belongs to.
pub fn of(task: &Task) -> &'static dyn SchedClass {
    match task.class() {
        ClassId::Rt => &RT,
        ClassId::Fair => &FAIR,
        ClassId::Idle => &IDLE,
    }
}

/// A fresh fair entity for these attributes.
pub fn new_entity(attr: &ValidAttr) -> FairEntity {
    FairEntity::new(attr.weight())
        .unwrap_or_else(|_| FairEntity::new(1024).expect("nice-0 weight is valid"))
        .with_custom_slice(attr.custom_slice_ns)
}

fn lookup(rq: &RqInner, tid: super::Tid) -> Option<Arc<Task>> {
    rq.tasks.get(&tid).cloned()
}

impl SchedClass for RtClass {
    fn name(&self) -> &'static str {
        "rt"
    }

    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let head = flags & cadence_sched::eevdf::ENQUEUE_HEAD != 0;
        let _ = rq.rt.enqueue(task.tid, task.rt_priority(), head);
    }

    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, _flags: u32) {
        let _ = rq.rt.dequeue(task.tid);
    }

    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        if rq.rt_throttled {
            return None; // RT bandwidth used up for this period: fair tasks run
        }
        rq.rt.pick_highest().and_then(|tid| lookup(rq, tid))
    }

    fn put_prev(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    fn set_next(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    fn task_tick(&self, _rq: &mut RqInner, _task: &Arc<Task>) -> bool {
        // The RR quantum, the watchdog and throttling are accounted in `update_curr`
        // (`rt_limits::account`), which the tick calls first.
        false
    }

    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let _ = rq.rt.requeue(task.tid, false);
    }
}

impl SchedClass for FairClass {
    fn name(&self) -> &'static str {
        "fair"
    }

    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let key = task.key();
        if rq.fair.entity(key).is_none() {
            let se = task.parked_se.lock().take().unwrap_or_else(|| new_entity(&task.params_snapshot()));
            let _ = rq.fair.attach(key, se);
        }
        let _ = rq.fair.enqueue(key, flags);
    }

    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let key = task.key();
        let _ = rq.fair.dequeue(key, flags);
        if rq.fair.curr() != Some(key) {
            if let Ok(se) = rq.fair.detach(key) {
                *task.parked_se.lock() = Some(se);
            }
        }
    }

    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        match rq.fair.pick_next()? {
            super::SeKey::Task(tid) => lookup(rq, tid),
        }
    }

    fn put_prev(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let key = task.key();
        if rq.fair.curr() == Some(key) {
            let _ = rq.fair.put_prev(key);
        }
        // A task dequeued while running (sleep, exit, migration) parks its entity now.
        if !task.is_on_rq() {
            if let Ok(se) = rq.fair.detach(key) {
                *task.parked_se.lock() = Some(se);
            }
        }
    }

    fn set_next(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let _ = rq.fair.set_next(task.key());
    }

    fn task_tick(&self, _rq: &mut RqInner, _task: &Arc<Task>) -> bool {
        // `update_curr` (called by the tick before this) already asked for a reschedule when
        // the slice ran out.
        false
    }

    fn yield_task(&self, rq: &mut RqInner, _task: &Arc<Task>) {
        rq.fair.yield_curr();
    }
}

impl SchedClass for IdleClass {
    fn name(&self) -> &'static str {
        "idle"
    }
    fn enqueue(&self, _rq: &mut RqInner, _task: &Arc<Task>, _flags: u32) {}
    fn dequeue(&self, _rq: &mut RqInner, _task: &Arc<Task>, _flags: u32) {}
    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        rq.idle.clone()
    }
    fn put_prev(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}
    fn set_next(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}
    fn task_tick(&self, rq: &mut RqInner, _task: &Arc<Task>) -> bool {
        // Something became runnable without a wakeup preemption (e.g. pulled): run it.
        rq.rt.nr_running() + rq.fair.nr_queued() > 0
    }
    fn yield_task(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}
}
