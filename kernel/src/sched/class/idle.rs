//! The idle class: each CPU's idle task, picked when no other class has work.

use super::SchedClass;
use crate::sched::task::Task;
use crate::sched::RqInner;
use alloc::sync::Arc;

pub struct IdleClass;
pub static IDLE: IdleClass = IdleClass;

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
        rq.nr_queued() > 0
    }
    fn yield_task(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}
    fn cpupri_level(&self, _task: &Task) -> u8 {
        0
    }
    fn prio(&self, _task: &Task) -> i32 {
        120
    }
}
