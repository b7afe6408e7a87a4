//! The fair class (SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE): EEVDF (`cadence_sched::eevdf`)
//! over a hierarchy of task groups.
//!
//! A fair task's entity sits in the queue of its group on this CPU (`se_group`); each
//! non-root group on the path to the root has one entity in its parent's queue. The walks
//! over these levels (the pick's descent, the switch's put/set of the differing levels, the
//! matching level of a wakeup, charging, group entities following their queues) are policy:
//! they live in `cadence_sched::fair_group`, host-tested against a model tree, and run here
//! over this CPU's queues through its `GroupQueues` trait, implemented below for `RqInner`.
//! This file keeps what touches tasks, locks and per-CPU data. Outside a queue (asleep, or
//! between the dequeue and enqueue of a requeue) a task's entity is parked in
//! `Task::parked_se` with its lag.
//!
//! **Charging** (Linux's `update_curr` per level): the running task's own entity is charged
//! at every `update_curr`; the group entities above it are charged lazily. The time not yet
//! charged to them is `RqInner::fair_pending_ns`, and [`flush_group_charge`] charges it to
//! every level of the running task's path before anything reads or changes a queue above the
//! task's own in a way that depends on it: the tick; a put (the full switch path); a pick
//! whose upper levels hold other entities (`fair_group::contended_above`: only then does the
//! pick compare the upper running entities); a switch to a task of another group (the
//! pending time is `prev`'s path's); a group entity's queueing or weight change
//! (`fair_group::propagate`); and a wakeup preemption decided above the task's own level.
//! Between two tasks of one group whose upper levels hold nothing else (a ping-pong inside a
//! nested group), the upper levels are therefore charged at the tick, in one amount, instead
//! of at every switch: nothing compares them meanwhile, and the time charged is the same.
//! Linux charges each level at every pick; this is the one place Cadence does less than
//! Linux on the group path (see docs/design/groups.md, *Group scheduling overhead*).

use super::{lookup, BalancePoint, HrtickSlice, SchedClass};
use crate::sched::group::{GroupId, GroupRq, ROOT_GROUP};
use crate::sched::task::{ClassId, Task};
use crate::sched::{RqInner, SeKey};
use alloc::sync::Arc;
use cadence_sched::fair_group::{self, EntityState, GroupQueues, GroupState, Propagate};
use cadence_sched::{CpuMask, FairEntity, FairRq, ValidAttr};

pub struct FairClass;
pub static FAIR: FairClass = FairClass;

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

/// The fair queue of group `gid` on this CPU (root: the run queue's own).
pub fn fair_rq(rq: &RqInner, gid: GroupId) -> Option<&FairRq<SeKey>> {
    rq.queue(gid).map(|(frq, _)| frq)
}

pub fn fair_rq_mut(rq: &mut RqInner, gid: GroupId) -> Option<&mut FairRq<SeKey>> {
    rq.queue_mut(gid).map(|(frq, _)| frq)
}

/// Creates this CPU's queues for `gid` and its ancestors if missing. False if the group no
/// longer exists (the caller then uses the root group). A group's queue here implies its
/// ancestors' (they are created together, and a group is destroyed, `forget_group`, only
/// without child groups), so the walk stops at the first queue that exists.
fn ensure_group_rq(rq: &mut RqInner, gid: GroupId) -> bool {
    let mut id = gid;
    while id != ROOT_GROUP {
        if rq.group_rqs.contains_key(&id) {
            return true;
        }
        let Some(tg) = crate::sched::group::lookup(id) else { return false };
        let parent = tg.parent;
        let mut t = crate::sched::fair_tunables();
        t.base_slice_ns = rq.fair.tunables().base_slice_ns;
        let mut grq = GroupRq::new(tg, t);
        if let Some(mut storage) = rq.spare_groups.pop() {
            grq.rq.adopt_storage(&mut storage); // `storage` is left with empty buffers
        }
        rq.group_rqs.insert(id, grq);
        crate::sched::reserve::note_insert(rq, None);
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
    if crate::sched::autogroup::enabled() {
        let ag = task.autogroup.load(core::sync::atomic::Ordering::Acquire);
        if ag != 0 {
            return ag;
        }
    }
    ROOT_GROUP
}

/// A level of a task's path (`cadence_sched::fair_group`): its queue's group and its key.
type Level = fair_group::Level<GroupId, SeKey>;

/// The task's own level: its entity in its group's queue.
fn task_level(task: &Task) -> Level {
    Level { group: task.se_group.load(core::sync::atomic::Ordering::Relaxed), key: task.key() }
}

/// One CPU's fair queues as the group walks of `cadence_sched::fair_group` see them: the run
/// queue's own for the root group, `group_rqs` for the others (each knows its parent and
/// depth), the pending charge in `fair_pending_ns`.
impl GroupQueues for RqInner {
    type Key = SeKey;
    type Gid = GroupId;

    fn root(&self) -> GroupId {
        ROOT_GROUP
    }

    fn group_key(gid: GroupId) -> SeKey {
        SeKey::Group(gid)
    }

    fn key_group(key: SeKey) -> Option<GroupId> {
        match key {
            SeKey::Group(gid) => Some(gid),
            SeKey::Task(_) => None,
        }
    }

    fn queue(&self, gid: GroupId) -> Option<(&FairRq<SeKey>, Option<GroupId>)> {
        if gid == ROOT_GROUP {
            Some((&self.fair, None))
        } else {
            self.group_rqs.get(&gid).map(|g| (&g.rq, Some(g.parent)))
        }
    }

    fn queue_mut(&mut self, gid: GroupId) -> Option<(&mut FairRq<SeKey>, Option<GroupId>)> {
        if gid == ROOT_GROUP {
            Some((&mut self.fair, None))
        } else {
            self.group_rqs.get_mut(&gid).map(|g| (&mut g.rq, Some(g.parent)))
        }
    }

    fn depth(&self, gid: GroupId) -> usize {
        if gid == ROOT_GROUP {
            return 0;
        }
        self.group_rqs.get(&gid).map_or(0, |g| g.depth as usize)
    }

    fn ensure_queue(&mut self, gid: GroupId) -> bool {
        ensure_group_rq(self, gid)
    }

    /// Publishes the group's load here (rate-limited, `GroupRq::sync_load`) and gives its
    /// entity's weight (`GroupRq::entity_weight`).
    fn refresh_group(&mut self, gid: GroupId) -> Option<GroupState<GroupId>> {
        let now = self.exec_start;
        let grq = self.group_rqs.get_mut(&gid)?;
        grq.sync_load(now);
        // A throttled queue (bandwidth) is out of the parent queue as an empty one is.
        let empty = grq.rq.nr_queued() == 0 || grq.bw.throttled_since.is_some();
        Some(GroupState { weight: grq.entity_weight(), empty, parent: grq.parent, entity: grq.entity })
    }

    fn record_entity(&mut self, gid: GroupId, state: EntityState) {
        if let Some(grq) = self.group_rqs.get_mut(&gid) {
            grq.entity = Some(state);
        }
    }

    /// `fair_pending_ns`, for the running task's path if it is a fair task.
    fn take_pending(&mut self) -> Option<(GroupId, u64)> {
        let pending = core::mem::take(&mut self.fair_pending_ns);
        if pending == 0 {
            return None;
        }
        let curr = self.curr.as_ref().filter(|c| c.class() == ClassId::Fair)?;
        Some((curr.se_group.load(core::sync::atomic::Ordering::Relaxed), pending))
    }
}

/// Charges `delta` ns to the running fair task's own entity, and leaves it pending for the
/// group entities above (see the module doc). Returns true if its slice ended with others
/// waiting (reschedule).
pub fn update_curr_fair(rq: &mut RqInner, task: &Task, delta: u64) -> bool {
    let Level { group: gid, key } = task_level(task);
    let stats = crate::sched::hrtick::stats_on();
    let Some(frq) = fair_rq_mut(rq, gid) else { return false };
    if frq.curr() != Some(key) {
        return false;
    }
    let old_deadline = if stats { frq.entity(key).map(|e| e.deadline()) } else { None };
    let resched = frq.update_curr(delta);
    if let (Some(d0), Some(se)) = (old_deadline, frq.entity(key)) {
        if se.deadline() != d0 {
            // The slice ended at virtual time d0; it ran (vruntime − d0) past it.
            let over = se.vruntime().wrapping_sub(d0) as i64;
            crate::sched::hrtick::record_overshoot(crate::sched::hrtick::virtual_to_real(over.max(0) as u64, se.weight()));
        }
    }
    let mut resched = resched;
    if gid != ROOT_GROUP {
        rq.fair_pending_ns = rq.fair_pending_ns.saturating_add(delta);
        if let Some(grq) = rq.group_rqs.get_mut(&gid) {
            grq.usage_ns += delta;
        }
        resched |= crate::sched::bandwidth::account(rq, gid, delta, rq.exec_start);
    }
    resched
}

/// Charges the time pending for the running task's group entities (`fair_pending_ns`) to
/// every level above its own. True if some level's slice ended with others waiting there.
pub fn flush_group_charge(rq: &mut RqInner) -> bool {
    fair_group::flush_pending(rq)
}

/// Wakeup preemption between two fair tasks: decided at the first level where their paths
/// differ (`fair_group::find_matching`, Linux `find_matching_se`), by that queue's EEVDF rule.
pub fn check_preempt_fair(rq: &mut RqInner, curr: &Task, waking: &Task) -> bool {
    let own = task_level(curr);
    let Some((queue, ka, kb)) = fair_group::find_matching(rq, own, task_level(waking)) else { return false };
    if queue != own.group {
        flush_group_charge(rq); // decided above `curr`'s own level
    }
    ka != kb && fair_rq(rq, queue).is_some_and(|frq| frq.check_preempt_wakeup(kb, curr.policy(), waking.policy()))
}

/// The running task's own entity (for hrtick): (entity, fair tasks queued on this CPU).
pub fn task_entity<'a>(rq: &'a RqInner, task: &Task) -> Option<&'a cadence_sched::FairEntity> {
    fair_rq(rq, task.se_group.load(core::sync::atomic::Ordering::Relaxed))?.entity(task.key())
}

/// Re-weights group `gid`'s entities on this CPU (after its shares changed).
pub fn refresh_group_weights(rq: &mut RqInner, gid: GroupId) {
    if rq.group_rqs.contains_key(&gid) {
        fair_group::propagate(rq, gid, true, Propagate::All);
    }
}

/// Drops this CPU's queue of a destroyed (empty) group and its entity in the parent queue.
pub fn forget_group(rq: &mut RqInner, gid: GroupId) {
    let Some(grq) = rq.group_rqs.get(&gid) else { return };
    if grq.rq.nr_queued() > 0 || grq.rq.curr().is_some() {
        return; // cannot happen for a group without members; keep it rather than corrupt
    }
    let parent = grq.parent;
    crate::sched::bandwidth::forget(rq, gid, rq.exec_start);
    if let Some(prq) = fair_rq_mut(rq, parent) {
        // ESRCH: the group's entity was never attached here (its queue never had a task).
        let _ = prq.detach(SeKey::Group(gid));
    }
    if let Some(mut grq) = rq.group_rqs.remove(&gid) {
        // Its storage serves the next group queue here (no free under the lock, no allocation
        // for the next one); dropped only if the pool is full.
        if let Some(storage) = grq.rq.take_storage().filter(|s| s.capacity() >= cadence_sched::arena::MIN_HEADROOM) {
            let _ = rq.spare_groups.try_push(storage);
        }
    }
}

/// A task dequeued while running (sleep, exit, migration) parks its entity once it is put.
fn park_if_dequeued(rq: &mut RqInner, task: &Task) {
    if !task.is_on_rq() {
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        if let Some(frq) = fair_rq_mut(rq, gid) {
            if let Ok(se) = frq.detach(task.key()) {
                *task.parked_se.lock() = Some(se);
            }
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
            let attached = frq.attach(key, se);
            debug_assert!(attached.is_ok(), "attach of an absent entity: {:?}", attached);
        }
        // EBUSY (already queued) is a bug the core counts.
        if frq.enqueue(key, flags).is_err() {
            crate::sched::note_bad_enqueue();
            return;
        }
        rq.nr_fair_tasks += 1;
        fair_group::propagate(rq, gid, true, Propagate::Changes);
    }

    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        let key = task.key();
        let Some(frq) = fair_rq_mut(rq, gid) else { return };
        let dequeued = frq.dequeue(key, flags).is_ok();
        if frq.curr() != Some(key) {
            if let Ok(se) = frq.detach(key) {
                *task.parked_se.lock() = Some(se);
            }
        }
        if dequeued {
            rq.nr_fair_tasks = rq.nr_fair_tasks.saturating_sub(1);
        }
        fair_group::propagate(rq, gid, false, Propagate::Changes);
    }

    /// Descends from the root queue through group entities to a task. A queue's running
    /// entity (held by the switch fast path, [`FairClass::pick_next_task`]) competes as if it
    /// had been put back (`pick_next_as_put_back`): the pick is the same whether or not the
    /// levels were put first.
    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        match fair_group::pick_task(rq)? {
            SeKey::Task(tid) => lookup(rq, tid),
            SeKey::Group(_) => None,
        }
    }

    /// Linux's `pick_next_task_fair` with `prev`: only when every queued task here is fair.
    /// The pick descends with `prev`'s entities still `curr` at every level and chooses what
    /// the full put-pick-set chooses ([`FairClass::pick_next`]: each running entity competes
    /// as if put back; Linux's `pick_eevdf` would keep a protected `curr` here, a change of
    /// decisions this path does not make). Then `fair_group::switch_levels` puts and sets only the
    /// levels below the common ancestor: running entities above it, and all of `prev`'s when
    /// it is picked again, keep their slice protection as it was (Linux's; the full path
    /// renewed it at every switch).
    fn pick_next_task(&self, rq: &mut RqInner, prev: &Arc<Task>) -> Option<Arc<Task>> {
        // A throttle due or in force here: the full path (put_prev throttles; the pick starts
        // at the root, above any throttled queue).
        if rq.nr_fair_tasks == 0 || rq.nr_queued() != rq.nr_fair_tasks || rq.bw_check || rq.bw_nr_throttled > 0 {
            return None;
        }
        let own = task_level(prev).group;
        let next = if fair_group::contended_above(rq, own) {
            flush_group_charge(rq); // the pick compares the upper levels' running entities
            self.pick_next(rq)?
        } else {
            // Nothing else above: the pick starts at `prev`'s own queue.
            match fair_group::pick_task_uncontended(rq, own)? {
                SeKey::Task(tid) => lookup(rq, tid)?,
                SeKey::Group(_) => return None,
            }
        };
        if !Arc::ptr_eq(&next, prev) {
            // The pending time is `prev`'s path's: it may stay pending only if `next` runs
            // under the same group entities (its own entity in the same queue).
            if task_level(&next).group != own {
                flush_group_charge(rq);
            }
            fair_group::switch_levels(rq, task_level(prev), task_level(&next));
            park_if_dequeued(rq, prev);
        }
        Some(next)
    }

    fn put_prev(&self, rq: &mut RqInner, task: &Arc<Task>) {
        flush_group_charge(rq);
        let now = rq.exec_start;
        crate::sched::bandwidth::throttle_due(rq, task_level(task).group, now);
        fair_group::for_each_level(rq, task_level(task), |frq, key, _| fair_group::put_entity(frq, key));
        park_if_dequeued(rq, task);
    }

    fn set_next(&self, rq: &mut RqInner, task: &Arc<Task>) {
        fair_group::for_each_level(rq, task_level(task), |frq, key, _| fair_group::set_entity(frq, key));
    }

    fn update_curr(&self, rq: &mut RqInner, task: &Arc<Task>, delta_ns: u64, _now: u64) -> bool {
        update_curr_fair(rq, task, delta_ns)
    }

    /// EEVDF's wakeup rule on the two paths (`curr` is charged up to now by the core).
    fn wakeup_preempt(&self, rq: &mut RqInner, curr: &Arc<Task>, waking: &Arc<Task>) -> bool {
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
        // `update_curr` (called by the tick before this) charged the task's own entity and
        // asked for a reschedule if its slice ran out; charge the levels above (a group's
        // slice may have ended) and keep the group weights on the path fresh.
        let resched = flush_group_charge(rq);
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        if gid != ROOT_GROUP {
            fair_group::propagate(rq, gid, true, Propagate::All);
        }
        resched
    }

    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let gid = task.se_group.load(core::sync::atomic::Ordering::Relaxed);
        if let Some(frq) = fair_rq_mut(rq, gid) {
            frq.yield_curr();
        }
    }

    /// An idle CPU near `prev` or the waker (`cadence_sched::balance::select_task_rq_fair`).
    fn select_cpu(&self, task: &Task, prev: u32, waker_cpu: u32, allowed: CpuMask) -> u32 {
        crate::sched::balance::select_cpu_fair(task, prev, waker_cpu, allowed)
    }

    /// Load balancing: a pull from the busiest CPU on the tick and when going idle.
    fn balance(&self, cpu: u32, at: BalancePoint) -> bool {
        match at {
            // The hierarchical balancer once the domains are built (`sched::load_balance`),
            // the flat one before (and on a machine without domains).
            BalancePoint::Tick { idle } if crate::sched::load_balance::active() => crate::sched::load_balance::periodic(cpu, idle) > 0,
            BalancePoint::NewIdle if crate::sched::load_balance::active() => {
                crate::sched::load_balance::newidle(cpu, crate::sched::nohz::overloaded()) > 0
            }
            BalancePoint::Tick { idle } => crate::sched::balance::pull_fair(cpu, crate::sched::balance::PullKind::Periodic { idle }) > 0,
            BalancePoint::NewIdle => crate::sched::balance::pull_fair(cpu, crate::sched::balance::PullKind::NewIdle) > 0,
            BalancePoint::Decision { .. } | BalancePoint::Woken => false,
        }
    }

    /// A new weight or slice keeps the entity's lag (Linux `reweight_task`: the lag in real
    /// time and the relative deadline survive, so toggling nice neither sheds negative lag
    /// nor gains positive lag).
    fn prio_changed(&self, rq: &mut RqInner, task: &Arc<Task>, old: &ValidAttr, new: &ValidAttr) {
        if old.weight() != new.weight() || old.custom_slice_ns != new.custom_slice_ns {
            reweight_task(rq, task, new);
        }
    }

    /// The entity goes: a task coming back gets a fresh one (Linux `switched_from_fair`
    /// detaches it).
    fn switched_from(&self, _rq: &mut RqInner, task: &Arc<Task>) {
        *task.parked_se.lock() = None;
    }

    fn switched_to(&self, _rq: &mut RqInner, task: &Arc<Task>, attr: &ValidAttr) {
        *task.parked_se.lock() = Some(new_entity(attr));
    }

    fn task_new(&self, task: &Task, attr: &ValidAttr) {
        *task.parked_se.lock() = Some(new_entity(attr));
    }

    fn cpupri_level(&self, _task: &Task) -> u8 {
        1
    }

    fn prio(&self, task: &Task) -> i32 {
        cadence_trace::event::fair_prio(task.nice())
    }

    /// Room in the root queue and in the queue of the task's group and every ancestor here.
    fn fits(&self, rq: &RqInner, task: &Task) -> bool {
        crate::sched::reserve::fair_fits(rq, task)
    }
}
