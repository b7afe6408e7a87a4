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
    /// Charges `delta_ns` of execution to the running `task` (Linux `update_curr`), at every
    /// tick, switch and attribute change; returns true to reschedule. Default: nothing.
    fn update_curr(&self, _rq: &mut RqInner, _task: &Arc<Task>, _delta_ns: u64, _now: u64) -> bool {
        false
    }
    /// Periodic tick while `task` runs; returns true to reschedule.
    fn task_tick(&self, rq: &mut RqInner, task: &Arc<Task>) -> bool;
    /// `waking`, of this class, was just queued on `rq` while `curr`, of this class too, runs:
    /// should it preempt (Linux `wakeup_preempt`)? Across classes the core decides by class
    /// order ([`preempts_by_class`]). Default: no.
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
    of_class(task.class())
}

/// The class object of a class id.
pub fn of_class(id: ClassId) -> &'static dyn SchedClass {
    match id {
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

/// Parks a fair task's entity (off every queue and not running: between the dequeue and the
/// enqueue of a save/restore requeue) in `task.parked_se`, with its saved lag, so that what
/// the requeue changes (its group, its weight) applies to the entity that goes back: a running
/// task's entity otherwise stays in its old group's queue (it was `curr`), and the enqueue
/// would attach a fresh one elsewhere (Linux's `detach_task_cfs_rq` / `attach_task_cfs_rq`).
pub fn park_entity(rq: &mut RqInner, task: &Arc<Task>) {
    if task.class() != ClassId::Fair {
        return;
    }
    let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
    if let Some(frq) = fair_rq_mut(rq, gid) {
        if let Ok(se) = frq.detach(task.key()) {
            *task.parked_se.lock() = Some(se);
        }
    }
}

/// A fair task's new weight and slice (Linux `reweight_task`), wherever its entity is: in its
/// group's queue (queued or running: `FairRq::reweight`, which keeps `w · vlag`) or parked
/// (`FairEntity::reweight`, the same rule). Called between the dequeue and the enqueue of a
/// save/restore requeue (`sched::requeue_locked`), with `task`'s run queue locked.
pub fn reweight_task(rq: &mut RqInner, task: &Arc<Task>, attr: &ValidAttr) {
    let key = task.key();
    let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
    if let Some(frq) = fair_rq_mut(rq, gid).filter(|f| f.entity(key).is_some()) {
        let reweighted = frq.reweight(key, attr.weight());
        let sliced = frq.set_custom_slice(key, attr.custom_slice_ns);
        debug_assert!(reweighted.is_ok() && sliced.is_ok(), "reweight of a queued entity: {:?} {:?}", reweighted, sliced);
        return;
    }
    let mut parked = task.parked_se.lock();
    let e = match parked.take() {
        Some(mut e) => {
            // Parked, and the weight valid (`ValidAttr`): cannot fail.
            let reweighted = e.reweight(attr.weight());
            debug_assert!(reweighted.is_ok(), "reweight of a parked entity: {:?}", reweighted);
            if reweighted.is_err() {
                e = new_entity(attr);
            }
            e.with_custom_slice(attr.custom_slice_ns)
        }
        None => new_entity(attr),
    };
    *parked = Some(e);
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
        if rq.rt_bw.throttled {
            return None; // RT bandwidth used up for this period: fair tasks run
        }
        rq.rt.pick_highest().and_then(|tid| lookup(rq, tid))
    }

    fn put_prev(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    fn set_next(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    /// The RLIMIT_RTTIME watchdog and RT throttling (`rt_limits::account`), then the
    /// SCHED_RR quantum: charged by the exact running time (`cadence_sched::rt::rr_tick`
    /// with this delta, where Linux's `task_tick_rt` takes one tick), refilled on expiry and
    /// the task moved behind its peers at the same priority.
    fn update_curr(&self, rq: &mut RqInner, task: &Arc<Task>, delta_ns: u64, now: u64) -> bool {
        let mut resched = super::rt_limits::account(rq, task, delta_ns, now);
        if task.policy() == cadence_sched::Policy::RR {
            let left = task.rr_remaining_ns.load(core::sync::atomic::Ordering::Relaxed);
            let (left, expired) = cadence_sched::rt::rr_tick(left, delta_ns, super::rr_timeslice_ns());
            task.rr_remaining_ns.store(left, core::sync::atomic::Ordering::Relaxed);
            if expired && rq.rt.nr_at_prio(task.rt_priority()) > 1 {
                // ESRCH if it was dequeued before this charge (a sleep): nothing to rotate.
                resched |= rq.rt.requeue(task.tid, false).is_ok();
            }
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
        if task.policy() == cadence_sched::Policy::RR && rq.rt.nr_at_prio(task.rt_priority()) > 1 {
            HrtickSlice::Left(task.rr_remaining_ns.load(core::sync::atomic::Ordering::Relaxed))
        } else {
            HrtickSlice::None
        }
    }

    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let _ = rq.rt.requeue(task.tid, false);
    }
}

// ----- the fair class, hierarchical -----------------------------------------------------------
//
// A fair task's entity sits in the queue of its group on this CPU (`se_group`); each non-root
// group on the path to the root has one entity in its parent's queue. Levels are walked with
// [`for_each_level`] ([`task_level`], then [`level_above`]): (queue owner, key) pairs from the
// task's own level up to the root's.

use super::group::{GroupId, GroupRq, ROOT_GROUP};
use super::SeKey;
use cadence_sched::FairRq;

/// The fair queue of group `gid` on this CPU (root: the run queue's own).
pub fn fair_rq(rq: &RqInner, gid: GroupId) -> Option<&FairRq<SeKey>> {
    if gid == ROOT_GROUP {
        Some(&rq.fair)
    } else {
        rq.group_rqs.get(&gid).map(|g| &g.rq)
    }
}

pub fn fair_rq_mut(rq: &mut RqInner, gid: GroupId) -> Option<&mut FairRq<SeKey>> {
    if gid == ROOT_GROUP {
        Some(&mut rq.fair)
    } else {
        rq.group_rqs.get_mut(&gid).map(|g| &mut g.rq)
    }
}

/// The parent of `gid` as recorded in this CPU's group queue.
fn parent_of(rq: &RqInner, gid: GroupId) -> GroupId {
    rq.group_rqs.get(&gid).map(|g| g.tg.parent).unwrap_or(ROOT_GROUP)
}

/// Creates this CPU's queues for `gid` and its ancestors if missing. False if the group no
/// longer exists (the caller then uses the root group).
fn ensure_group_rq(rq: &mut RqInner, gid: GroupId) -> bool {
    let mut id = gid;
    while id != ROOT_GROUP {
        if let Some(grq) = rq.group_rqs.get(&id) {
            id = grq.tg.parent;
            continue;
        }
        let Some(tg) = super::group::lookup(id) else { return false };
        let parent = tg.parent;
        let mut t = super::fair_tunables();
        t.base_slice_ns = rq.fair.tunables().base_slice_ns;
        let mut grq = GroupRq::new(tg, t);
        if let Some(mut storage) = rq.spare_groups.pop() {
            grq.rq.adopt_storage(&mut storage); // `storage` is left with empty buffers
        }
        rq.group_rqs.insert(id, grq);
        super::reserve::note_insert(rq, None);
        id = parent;
    }
    true
}

/// The group whose queue a fair task should join now: its manual group, or with autogroup on
/// and the task in the root group, its autogroup.
pub fn effective_group(task: &Task) -> GroupId {
    let manual = task.group.load(core::sync::atomic::Ordering::Acquire);
    if manual != ROOT_GROUP {
        return manual;
    }
    if super::autogroup::enabled() {
        let ag = task.autogroup.load(core::sync::atomic::Ordering::Acquire);
        if ag != 0 {
            return ag;
        }
    }
    ROOT_GROUP
}

/// A level of a task's path: the queue owner (group id) and the entity's key in that queue.
type Level = (GroupId, SeKey);

/// The task's own level: its entity in its group's queue.
fn task_level(task: &Task) -> Level {
    (task.se_group.load(core::sync::atomic::Ordering::Relaxed), task.key())
}

/// The level above `level` (its group's entity in the parent queue), `None` at the root.
/// Walking with this instead of collecting the path keeps the hot paths (`update_curr`,
/// `put_prev`, `set_next`, wakeup preemption) free of allocation.
fn level_above(rq: &RqInner, (gid, _): Level) -> Option<Level> {
    (gid != ROOT_GROUP).then(|| (parent_of(rq, gid), SeKey::Group(gid)))
}

/// Calls `f(rq, level, own)` for every level of the task's path, from its own (`own` = true)
/// up to the root's entity. The next level is looked up before `f` runs, so `f` may change
/// the queues.
fn for_each_level(rq: &mut RqInner, task: &Task, mut f: impl FnMut(&mut RqInner, Level, bool)) {
    let mut next = Some(task_level(task));
    let mut own = true;
    while let Some(level) = next {
        next = level_above(rq, level);
        f(rq, level, core::mem::replace(&mut own, false));
    }
}

/// Number of levels above the task's own (0 for a task of the root group).
fn depth(rq: &RqInner, task: &Task) -> usize {
    let mut level = task_level(task);
    let mut d = 0;
    while let Some(up) = level_above(rq, level) {
        level = up;
        d += 1;
    }
    d
}

/// Re-weights the group entities from `gid` up to the root after `gid`'s queue changed, and
/// queues/dequeues them as their queues become non-empty/empty. As in Linux's
/// `enqueue_task_fair` / `dequeue_task_fair`, a group entity is queued as a wakeup
/// (`ENQUEUE_WAKEUP`, whatever the task's flags: never `ENQUEUE_INITIAL`, which is a new
/// task's half-slice placement) and dequeued as a sleep (`DEQUEUE_SLEEP`).
fn propagate(rq: &mut RqInner, mut gid: GroupId, enqueue: bool) {
    while gid != ROOT_GROUP {
        let Some(grq) = rq.group_rqs.get_mut(&gid) else { return };
        grq.sync_load();
        let weight = grq.entity_weight();
        let empty = grq.rq.nr_queued() == 0;
        let parent = grq.tg.parent;
        if fair_rq(rq, parent).is_none() && !ensure_group_rq(rq, parent) {
            return;
        }
        let Some(prq) = fair_rq_mut(rq, parent) else { return };
        let key = SeKey::Group(gid);
        if prq.entity(key).is_none() {
            let _ = prq.attach(key, cadence_sched::FairEntity::new(weight).unwrap_or_else(|_| new_entity(&ValidAttr::default())));
        }
        let on_rq = prq.entity(key).is_some_and(|e| e.on_rq());
        let _ = prq.reweight(key, weight);
        if enqueue && !on_rq && !empty {
            let queued = prq.enqueue(key, cadence_sched::eevdf::ENQUEUE_WAKEUP);
            debug_assert!(queued.is_ok(), "group entity enqueue: {:?}", queued);
        } else if !enqueue && on_rq && empty {
            let dequeued = prq.dequeue(key, cadence_sched::eevdf::DEQUEUE_SLEEP);
            debug_assert!(dequeued.is_ok(), "group entity dequeue: {:?}", dequeued);
        }
        gid = parent;
    }
}

/// Charges `delta` ns to the running fair task at every level of its path. Returns true if
/// some level's slice ended with others waiting (reschedule).
pub fn update_curr_fair(rq: &mut RqInner, task: &Task, delta: u64) -> bool {
    let mut resched = false;
    for_each_level(rq, task, |rq, (gid, key), own| {
        let Some(frq) = fair_rq_mut(rq, gid) else { return };
        if frq.curr() != Some(key) {
            return;
        }
        let old_deadline = frq.entity(key).map(|e| e.deadline());
        resched |= frq.update_curr(delta);
        if own && super::hrtick::stats_on() {
            if let (Some(d0), Some(se)) = (old_deadline, frq.entity(key)) {
                if se.deadline() != d0 {
                    // The slice ended at virtual time d0; it ran (vruntime − d0) past it.
                    let over = se.vruntime().wrapping_sub(d0) as i64;
                    super::hrtick::record_overshoot(super::hrtick::virtual_to_real(over.max(0) as u64, se.weight()));
                }
            }
        }
    });
    resched
}

/// Wakeup preemption between two fair tasks: decided at the first level where their paths
/// differ (Linux `find_matching_se`), by that queue's EEVDF rule.
pub fn check_preempt_fair(rq: &mut RqInner, curr: &Task, waking: &Task) -> bool {
    // Bring both paths to the same depth, then walk up together until both entities sit in
    // the same queue.
    let (mut da, mut db) = (depth(rq, curr), depth(rq, waking));
    let (mut a, mut b) = (task_level(curr), task_level(waking));
    while da > db {
        let Some(up) = level_above(rq, a) else { return false };
        (a, da) = (up, da - 1);
    }
    while db > da {
        let Some(up) = level_above(rq, b) else { return false };
        (b, db) = (up, db - 1);
    }
    while a.0 != b.0 {
        let (Some(ua), Some(ub)) = (level_above(rq, a), level_above(rq, b)) else { return false };
        (a, b) = (ua, ub);
    }
    let ((queue, ka), (_, kb)) = (a, b);
    ka != kb && fair_rq(rq, queue).is_some_and(|frq| frq.check_preempt_wakeup(kb, curr.policy(), waking.policy()))
}

/// The running task's own entity (for hrtick): (entity, fair tasks queued on this CPU).
pub fn task_entity<'a>(rq: &'a RqInner, task: &Task) -> Option<&'a cadence_sched::FairEntity> {
    fair_rq(rq, task.se_group.load(core::sync::atomic::Ordering::Relaxed))?.entity(task.key())
}

/// Re-weights group `gid`'s entities on this CPU (after its shares changed).
pub fn refresh_group_weights(rq: &mut RqInner, gid: GroupId) {
    if rq.group_rqs.contains_key(&gid) {
        propagate(rq, gid, true);
    }
}

/// Drops this CPU's queue of a destroyed (empty) group and its entity in the parent queue.
pub fn forget_group(rq: &mut RqInner, gid: GroupId) {
    let Some(grq) = rq.group_rqs.get(&gid) else { return };
    if grq.rq.nr_queued() > 0 || grq.rq.curr().is_some() {
        return; // cannot happen for a group without members; keep it rather than corrupt
    }
    let parent = grq.tg.parent;
    if let Some(prq) = fair_rq_mut(rq, parent) {
        let _ = prq.detach(SeKey::Group(gid));
    }
    if let Some(mut grq) = rq.group_rqs.remove(&gid) {
        // Its storage serves the next group queue here (no free under the lock, no allocation
        // for the next one); dropped only if the pool is full.
        if let Some(storage) = grq.rq.take_storage().filter(|s| s.capacity() >= cadence_sched::vecmap::MIN_HEADROOM) {
            let _ = rq.spare_groups.try_push(storage);
        }
    }
}

impl SchedClass for FairClass {
    fn name(&self) -> &'static str {
        "fair"
    }

    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let mut gid = effective_group(task);
        if !ensure_group_rq(rq, gid) {
            gid = ROOT_GROUP;
        }
        task.se_group.store(gid, core::sync::atomic::Ordering::Relaxed);
        let key = task.key();
        let Some(frq) = fair_rq_mut(rq, gid) else { return };
        if frq.entity(key).is_none() {
            let se = task.parked_se.lock().take().unwrap_or_else(|| new_entity(&task.params_snapshot()));
            let _ = frq.attach(key, se);
        }
        let _ = frq.enqueue(key, flags);
        rq.nr_fair_tasks += 1;
        propagate(rq, gid, true);
    }

    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        let key = task.key();
        let Some(frq) = fair_rq_mut(rq, gid) else { return };
        if frq.dequeue(key, flags).is_ok() {
            rq.nr_fair_tasks = rq.nr_fair_tasks.saturating_sub(1);
        }
        let Some(frq) = fair_rq_mut(rq, gid) else { return };
        if frq.curr() != Some(key) {
            if let Ok(se) = frq.detach(key) {
                *task.parked_se.lock() = Some(se);
            }
        }
        propagate(rq, gid, false);
    }

    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        let mut gid = ROOT_GROUP;
        for _ in 0..64 {
            match fair_rq(rq, gid)?.pick_next()? {
                SeKey::Task(tid) => return lookup(rq, tid),
                SeKey::Group(child) => gid = child,
            }
        }
        None
    }

    fn put_prev(&self, rq: &mut RqInner, task: &Arc<Task>) {
        for_each_level(rq, task, |rq, (gid, key), _| {
            if let Some(frq) = fair_rq_mut(rq, gid) {
                if frq.curr() == Some(key) {
                    let _ = frq.put_prev(key);
                }
            }
        });
        // A task dequeued while running (sleep, exit, migration) parks its entity now.
        if !task.is_on_rq() {
            let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
            if let Some(frq) = fair_rq_mut(rq, gid) {
                if let Ok(se) = frq.detach(task.key()) {
                    *task.parked_se.lock() = Some(se);
                }
            }
        }
    }

    fn set_next(&self, rq: &mut RqInner, task: &Arc<Task>) {
        for_each_level(rq, task, |rq, (gid, key), _| {
            if let Some(frq) = fair_rq_mut(rq, gid) {
                let _ = frq.set_next(key);
            }
        });
    }

    fn update_curr(&self, rq: &mut RqInner, task: &Arc<Task>, delta_ns: u64, _now: u64) -> bool {
        update_curr_fair(rq, task, delta_ns)
    }

    /// `curr`'s slice ran out (charged now), or EEVDF's wakeup rule on the two paths.
    fn wakeup_preempt(&self, rq: &mut RqInner, curr: &Arc<Task>, waking: &Arc<Task>) -> bool {
        if super::update_curr(rq, crate::time::uptime_ns()) {
            return true;
        }
        check_preempt_fair(rq, curr, waking)
    }

    /// With other fair tasks here: what is left of the running entity's slice.
    fn hrtick_slice(&self, rq: &mut RqInner, task: &Task) -> HrtickSlice {
        if rq.nr_fair_tasks <= 1 {
            return HrtickSlice::None;
        }
        match task_entity(rq, task).map(cadence_sched::eevdf::slice_remaining_ns) {
            None => HrtickSlice::None,
            Some(Some(ns)) => HrtickSlice::Left(ns),
            Some(None) => HrtickSlice::Expired,
        }
    }

    fn task_tick(&self, rq: &mut RqInner, task: &Arc<Task>) -> bool {
        // `update_curr` (called by the tick before this) already asked for a reschedule when
        // a slice ran out; keep the group weights on the path fresh.
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        if gid != ROOT_GROUP {
            propagate(rq, gid, true);
        }
        false
    }

    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        if let Some(frq) = fair_rq_mut(rq, gid) {
            frq.yield_curr();
        }
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
        rq.rt.nr_running() + rq.nr_fair_tasks > 0
    }
    fn yield_task(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}
}
