//! Scheduling classes behind one trait, in fixed order: [`CLASSES`] = dl > rt > fair > idle,
//! one file per class.
//!
//! The core (`sched`) calls a class only through [`SchedClass`], Linux's `sched_class`:
//! queueing (enqueue, dequeue), picking (pick_next, put_prev, set_next, and the switch's
//! fast path pick_next_task), charging time
//! (update_curr, task_tick, hrtick_slice), wakeup preemption within the class
//! (wakeup_preempt; across classes [`CLASSES`] order decides, [`preempts_by_class`]),
//! placement and balancing (select_cpu, balance), attribute changes (prio_changed,
//! switched_from, switched_to), a task's birth and death (task_new, task_dead), what a CPU
//! running the class looks like to RT placement
//! (cpupri_level), the Linux priority tracepoints print (prio), and whether a task fits the
//! run queue's preallocated room (fits).
//!
//! # Adding a class
//! One new file here implementing [`SchedClass`], and one line in [`CLASSES`] at its rank.
//! The task side then needs its policy mapped to the class: a [`ClassId`] variant, and
//! `Task::cache_params` / [`of_class`] choosing it.
//!
//! # Locking
//! Every hook taking `&mut RqInner` runs with that run queue's lock held (interrupts off): it
//! must not sleep or allocate beyond the queue's reserved room (`sched::reserve`). `balance`
//! and `select_cpu` run without run-queue locks and take what they need in CPU order
//! (`sched::rqlock::lock_two`).

use super::task::{ClassId, Task};
use super::RqInner;
use alloc::sync::Arc;
use cadence_sched::{CpuMask, ValidAttr};

pub trait SchedClass: Sync {
    fn name(&self) -> &'static str;
    /// Queue a runnable task (`flags`: `ENQUEUE_*`).
    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32);
    /// Take a task off the queue (`flags`: `DEQUEUE_*`).
    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32);
    /// The best task of this class, if any (no state change).
    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>>;
    /// The class's fast path of a switch (Linux's `pick_next_task_fair(rq, prev)`): when
    /// `prev`, of this class, stops running and only this class has queued tasks, picks with
    /// `prev` still current and does the `put_prev`/`set_next` work itself, only where `prev`
    /// and the pick differ (nothing if `prev` is picked again). `None`: not applicable here;
    /// the core then does the full `put_prev`, `pick_next` over [`CLASSES`], `set_next`.
    /// Default: `None`.
    fn pick_next_task(&self, _rq: &mut RqInner, _prev: &Arc<Task>) -> Option<Arc<Task>> {
        None
    }
    /// `task` (the running one) stops running.
    fn put_prev(&self, rq: &mut RqInner, task: &Arc<Task>);
    /// `task` starts running.
    fn set_next(&self, rq: &mut RqInner, task: &Arc<Task>);
    /// Charges `delta_ns` of execution to the running `task` (Linux `update_curr`), at every
    /// tick, switch and attribute change; returns true to reschedule. Default: nothing.
    fn update_curr(&self, _rq: &mut RqInner, _task: &Arc<Task>, _delta_ns: u64, _now: u64) -> bool {
        false
    }
    /// Periodic tick while `task` runs; returns true to reschedule.
    fn task_tick(&self, rq: &mut RqInner, task: &Arc<Task>) -> bool;
    /// `waking`, of this class, was just queued on `rq` while `curr`, of this class too, runs:
    /// should it preempt (Linux `wakeup_preempt`)? `curr` has been charged up to now
    /// (`update_curr`, whose own request to reschedule the core has acted on). Across classes
    /// the core decides by class order ([`preempts_by_class`]). Default: no.
    fn wakeup_preempt(&self, _rq: &mut RqInner, _curr: &Arc<Task>, _waking: &Arc<Task>) -> bool {
        false
    }
    /// How long the running `task` may run before its class wants the CPU back (the hrtick,
    /// Linux `hrtick_start_fair` / the RR quantum). Default: no limit.
    fn hrtick_slice(&self, _rq: &mut RqInner, _task: &Task) -> HrtickSlice {
        HrtickSlice::None
    }
    /// `sched_yield` by the running task.
    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>);
    /// The CPU a waking or new `task` of this class should be queued on (Linux
    /// `select_task_rq`). `allowed` (its affinity and the online CPUs) is not empty; `prev` is
    /// where it last ran, `waker_cpu` where the wakeup happens. Default: `prev` if allowed.
    fn select_cpu(&self, _task: &Task, prev: u32, _waker_cpu: u32, allowed: CpuMask) -> u32 {
        stay_or_first(prev, allowed)
    }
    /// Moves this class's work between CPUs at a balance point (Linux's `balance`, the push
    /// and pull balance callbacks, `sched_balance_trigger`); true if a task came to `cpu`.
    /// Called with no run-queue lock held. Default: nothing.
    fn balance(&self, _cpu: u32, _at: BalancePoint) -> bool {
        false
    }
    /// `task`, of this class before and after, changed attributes from `old` to `new` (Linux
    /// `prio_changed` and `reweight_task`). Its run queue is locked and it is off the queues
    /// (between the dequeue and the enqueue of `sched::requeue_locked`). Default: nothing.
    fn prio_changed(&self, _rq: &mut RqInner, _task: &Arc<Task>, _old: &ValidAttr, _new: &ValidAttr) {}
    /// `task` leaves this class (Linux `switched_from`); as for `prio_changed`.
    fn switched_from(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}
    /// `task` joins this class with `attr` (Linux `switched_to`); as for `prio_changed`.
    fn switched_to(&self, _rq: &mut RqInner, _task: &Arc<Task>, _attr: &ValidAttr) {}
    /// A new task of this class with `attr`, before its first enqueue (Linux `task_fork`).
    /// Default: nothing.
    fn task_new(&self, _task: &Task, _attr: &ValidAttr) {}
    /// `task`, of this class, exited and will not run again (Linux `task_dead`); `own` are
    /// its own attributes (its class may be a priority-inheritance boost's). Default:
    /// nothing.
    fn task_dead(&self, _task: &Task, _own: &ValidAttr) {}
    /// What a CPU running `task` (or with it as its best queued task) looks like to RT
    /// placement (`cadence_sched::cpupri` levels: 0 idle, 1 fair, 2 + RT priority; Linux
    /// `convert_prio`).
    fn cpupri_level(&self, task: &Task) -> u8;
    /// Linux's `task->prio`, as the scheduler tracepoints print it (0..99 RT, 100..139 fair).
    fn prio(&self, task: &Task) -> i32;
    /// Whether `task` can be queued on `rq` without any of this class's queues allocating
    /// (the wake-list drain runs with interrupts off; `sched::reserve`). Default: yes.
    fn fits(&self, _rq: &RqInner, _task: &Task) -> bool {
        true
    }
}

/// Where [`SchedClass::balance`] is called from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalancePoint {
    /// The periodic tick on `cpu` (every `balance::BALANCE_INTERVAL_TICKS`); `idle`: it has
    /// nothing to run.
    Tick { idle: bool },
    /// `cpu` just ran out of work (Linux `CPU_NEWLY_IDLE`); classes are asked in
    /// [`CLASSES`] order until one brings a task.
    NewIdle,
    /// After a scheduling decision or an attribute change on `cpu`, its lock released;
    /// `level_before`: its cpupri level before (Linux's queued balance callbacks).
    Decision { level_before: u8 },
    /// A task was woken onto `cpu` and did not preempt what runs there (Linux
    /// `task_woken_rt`).
    Woken,
}

/// `prev` if `allowed` holds it, else the first allowed CPU.
pub fn stay_or_first(prev: u32, allowed: CpuMask) -> u32 {
    if allowed.contains(prev as usize) {
        prev
    } else {
        allowed.first().unwrap_or(0) as u32
    }
}

/// Every class's balance hook at `at`, in [`CLASSES`] order; true if a task came to `cpu`.
/// At [`BalancePoint::NewIdle`], stops at the first class that brought one.
pub fn balance(cpu: u32, at: BalancePoint) -> bool {
    // An offline CPU (`hotplug`) takes nothing (`balance::movable` refuses it as a target too).
    if !crate::sched::online_mask().contains(cpu as usize) {
        return false;
    }
    let mut moved = false;
    for c in CLASSES {
        moved |= c.balance(cpu, at);
        if moved && at == BalancePoint::NewIdle {
            break;
        }
    }
    moved
}

/// A change of `task`'s attributes from `old` to `new` (already cached in the task), told to
/// its classes: `prio_changed` within a class, else `switched_from` then `switched_to`.
pub fn attr_changed(rq: &mut RqInner, task: &Arc<Task>, old_class: ClassId, old: &ValidAttr, new: &ValidAttr) {
    let now = task.class();
    if now == old_class {
        of_class(now).prio_changed(rq, task, old, new);
    } else {
        of_class(old_class).switched_from(rq, task);
        of_class(now).switched_to(rq, task, new);
    }
}

/// What [`SchedClass::hrtick_slice`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HrtickSlice {
    /// No timer needed (nothing to share the CPU with, or no slice).
    None,
    /// Preempt after this many ns.
    Left(u64),
    /// The slice is already over: reschedule now.
    Expired,
}

/// Across classes: does a task of `waking`'s class preempt one of `curr`'s? Iff it comes
/// earlier in [`CLASSES`] (Linux: `sched_class_above`).
pub fn preempts_by_class(waking: ClassId, curr: ClassId) -> bool {
    // By name: the class objects are zero-sized statics, whose addresses may coincide.
    let rank = |c: ClassId| {
        let name = of_class(c).name();
        CLASSES.iter().position(|k| k.name() == name).unwrap_or(CLASSES.len())
    };
    rank(waking) < rank(curr)
}

pub mod deadline;
mod fair;
mod idle;
mod rt;

pub use deadline::DL;
pub use fair::{effective_group, fair_rq, fair_rq_mut, forget_group, new_entity, park_entity, refresh_group_weights, reweight_task, FAIR};
pub use idle::IDLE;
pub use rt::RT;

/// Class order, highest first.
pub static CLASSES: [&dyn SchedClass; 4] = [&DL, &RT, &FAIR, &IDLE];

/// The class a task belongs to.
pub fn of(task: &Task) -> &'static dyn SchedClass {
    of_class(task.class())
}

/// The class object of a class id.
pub fn of_class(id: ClassId) -> &'static dyn SchedClass {
    match id {
        ClassId::Rt => &RT,
        ClassId::Fair => &FAIR,
        ClassId::Idle => &IDLE,
        ClassId::Dl => &DL,
    }
}

/// A task of this run queue by id.
pub(super) fn lookup(rq: &RqInner, tid: crate::sched::Tid) -> Option<Arc<Task>> {
    rq.tasks.get(&tid).cloned()
}
