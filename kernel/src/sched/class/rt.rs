//! The real-time class (SCHED_FIFO, SCHED_RR): a priority array per CPU, highest first,
//! FIFO within a priority (`cadence_sched::rt`); RT throttling and the RLIMIT_RTTIME watchdog
//! are charged from `update_curr` (`sched::rt_limits`).

use super::{lookup, BalancePoint, HrtickSlice, SchedClass};
use crate::sched::task::Task;
use crate::sched::{balance, rq_of, RqInner, RT_OVERLOAD};
use alloc::sync::Arc;
use cadence_sched::CpuMask;
use core::sync::atomic::Ordering;

pub struct RtClass;
pub static RT: RtClass = RtClass;

impl SchedClass for RtClass {
    fn name(&self) -> &'static str {
        "rt"
    }

    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let head = flags & cadence_sched::eevdf::ENQUEUE_HEAD != 0;
        // EBUSY (already queued) is a bug the core counts; EINVAL cannot happen (the
        // priority was validated).
        // Marked migratory when allowed on another CPU: a push candidate (Linux
        // `enqueue_pushable_task` for `nr_cpus_allowed > 1`). Affinity changes requeue the
        // task, so the mark stays true.
        let migratory = task.affinity().count() > 1;
        if rq.rt.enqueue_marked(task.tid, task.rt_priority(), head, migratory).is_err() {
            crate::sched::note_bad_enqueue();
        }
    }

    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, _flags: u32) {
        let dequeued = rq.rt.dequeue(task.tid);
        debug_assert!(dequeued.is_ok(), "RT dequeue of task {}: {:?}", task.tid, dequeued);
    }

    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        if rq.rt_bw.throttled {
            return None; // RT bandwidth used up for this period: fair tasks run
        }
        rq.rt.pick_highest().and_then(|tid| lookup(rq, tid))
    }

    fn put_prev(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    fn set_next(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    /// The RLIMIT_RTTIME watchdog and RT throttling (`rt_limits::account`), then the
    /// SCHED_RR quantum (`RtPrioArray::charge_rr`): charged by the exact running time, where
    /// Linux's `task_tick_rt` takes one tick, refilled on expiry and the task moved behind its
    /// peers at the same priority.
    fn update_curr(&self, rq: &mut RqInner, task: &Arc<Task>, delta_ns: u64, now: u64) -> bool {
        let mut resched = crate::sched::rt_limits::account(rq, task, delta_ns, now);
        if task.policy() == cadence_sched::Policy::RR {
            let left = task.rr_remaining_ns.load(core::sync::atomic::Ordering::Relaxed);
            let (left, rotated) = rq.rt.charge_rr(task.tid, left, delta_ns, crate::sched::rr_timeslice_ns());
            task.rr_remaining_ns.store(left, core::sync::atomic::Ordering::Relaxed);
            resched |= rotated;
        }
        resched
    }

    fn task_tick(&self, _rq: &mut RqInner, _task: &Arc<Task>) -> bool {
        // Everything time-based is charged in `update_curr`, which the tick calls first.
        false
    }

    /// A higher RT priority preempts (equal priorities queue behind, FIFO).
    fn wakeup_preempt(&self, _rq: &mut RqInner, curr: &Arc<Task>, waking: &Arc<Task>) -> bool {
        waking.rt_priority() > curr.rt_priority()
    }

    /// A SCHED_RR task sharing its priority: the rest of its quantum.
    fn hrtick_slice(&self, rq: &mut RqInner, task: &Task) -> HrtickSlice {
        let left = task.rr_remaining_ns.load(core::sync::atomic::Ordering::Relaxed);
        match rq.rt.rr_slice_left(task.tid, left) {
            Some(ns) if task.policy() == cadence_sched::Policy::RR => HrtickSlice::Left(ns),
            _ => HrtickSlice::None,
        }
    }

    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>) {
        // ESRCH: the yielding task is not queued (it was dequeued on its way to sleep).
        let _ = rq.rt.requeue(task.tid, false);
    }

    /// The lowest-level allowed CPU (cpupri), preferring `prev` among equals.
    fn select_cpu(&self, task: &Task, prev: u32, _waker_cpu: u32, allowed: CpuMask) -> u32 {
        balance::select_cpu_rt(task, prev, allowed)
    }

    /// Push and pull (`sched::balance`'s module doc): waiting tasks that may run elsewhere are
    /// pushed after every decision and non-preempting wakeup; a CPU pulls when its level
    /// dropped and when it goes idle. Nothing on the tick (Linux neither).
    fn balance(&self, cpu: u32, at: BalancePoint) -> bool {
        let others_overloaded = || RT_OVERLOAD.any_except(cpu as usize, Ordering::SeqCst);
        let rq = rq_of(cpu);
        match at {
            BalancePoint::Tick { .. } => false,
            BalancePoint::NewIdle => !RT_OVERLOAD.is_empty(Ordering::Acquire) && balance::pull_rt(cpu),
            BalancePoint::Woken => {
                if rq.rt_pushable.load(Ordering::SeqCst) != 0 {
                    balance::push_rt(cpu);
                }
                false
            }
            BalancePoint::Decision { level_before } => {
                if rq.rt_pushable.load(Ordering::SeqCst) != 0 {
                    balance::push_rt(cpu);
                }
                let level = rq.rt_level.load(Ordering::SeqCst);
                level < level_before && others_overloaded() && balance::pull_rt(cpu)
            }
        }
    }

    fn cpupri_level(&self, task: &Task) -> u8 {
        2 + task.rt_priority()
    }

    fn prio(&self, task: &Task) -> i32 {
        cadence_trace::event::rt_prio(task.rt_priority())
    }

    fn fits(&self, rq: &RqInner, _task: &Task) -> bool {
        rq.rt.capacity() > rq.rt.nr_running()
    }
}

// ----- the fair class, hierarchical -----------------------------------------------------------
//
// A fair task's entity sits in the queue of its group on this CPU (`se_group`); each non-root
