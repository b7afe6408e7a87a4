//! The fair class's walks over a hierarchy of task groups (Linux `CONFIG_FAIR_GROUP_SCHED`
//! in `kernel/sched/fair.c`), over one CPU's queues.
//!
//! **Model.** Each group with queued work on a CPU has a [`FairRq`] there; the root group's
//! queue is the CPU's own. A task's entity sits in its group's queue; each non-root group has
//! one entity (its [`GroupQueues::group_key`]) in its parent's queue. A [`Level`] names one
//! step of a task's path: the queue (a group id) and the entity's key in it. A path runs from
//! the task's own level up to the root queue's level; its length is the group's depth + 1.
//!
//! **Invariants the walks keep** (host-tested below, with a model tree):
//! * *Running path*: when a task runs, its entity is `curr` of its own queue and each of its
//!   group entities is `curr` of its parent's queue; no other queue of its path has another
//!   `curr`. [`switch_levels`] moves this from `prev`'s path to `next`'s touching only the
//!   levels below their lowest common queue (Linux `pick_next_task_fair`'s `is_same_group`
//!   walk); it ends in the same state as putting every level of `prev` and setting every level
//!   of `next` (proptest `switch_levels_equals_put_all_set_all`).
//! * *Matching level*: [`find_matching`] returns the lowest queue holding an entity of both
//!   paths, and the two entities there (Linux `find_matching_se`); wakeup preemption is decided
//!   by that queue's EEVDF rule.
//! * *Queued groups*: a group's entity is queued in its parent's queue exactly when the group's
//!   queue holds a queued entity; its weight is the group's share on this CPU
//!   ([`GroupQueues::refresh_group`]). [`propagate`] restores this after a change at one level,
//!   stopping at the first level that did not change when asked to ([`Propagate::Changes`]).
//! * *Lazy charging*: the running task's own entity is charged at once; the time not yet
//!   charged to its group entities above ([`GroupQueues::take_pending`]) is charged by
//!   [`flush_pending`] before anything reads or changes an upper queue ([`propagate`] does it
//!   before it changes a parent queue; a pick does it when [`contended_above`] says it
//!   compares the upper levels' running entities).
//!
//! The walks allocate nothing (levels are followed one at a time, never collected), so the
//! kernel runs them under its run-queue lock.

use crate::eevdf::{FairEntity, FairRq, DEQUEUE_SLEEP, ENQUEUE_WAKEUP};
use crate::weight::NICE_0_LOAD;
use crate::Errno;
use core::fmt::Debug;

/// Deepest group below the root: a group is created at most this many levels down (Linux's
/// `cgroup.max.depth` is unlimited by default; a bound keeps every walk here bounded, and the
/// candidates' descent, [`for_each_candidate`], recursive on a small kernel stack).
pub const MAX_GROUP_DEPTH: usize = 16;

/// Queues a descent visits at most: the root's plus one per group level. Deeper levels
/// (a corrupted tree) are not descended.
pub const MAX_DEPTH: usize = MAX_GROUP_DEPTH + 1;

/// One level of a task's path: the queue (owned by group `group`) and the entity's key in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level<G, K> {
    /// The group whose queue this level is.
    pub group: G,
    /// The entity's key in that queue.
    pub key: K,
}

/// What a group looks like from its queue on this CPU, for [`propagate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupState<G> {
    /// The weight its entity should have in the parent queue (its share on this CPU).
    pub weight: u64,
    /// Its queue has no queued entity (its entity should leave the parent queue).
    pub empty: bool,
    /// Its parent group.
    pub parent: G,
    /// Its entity in the parent queue as [`propagate`] last left it (`None`: not attached,
    /// or unknown), recorded with [`GroupQueues::record_entity`]: lets a level that did not
    /// change stop without visiting the parent queue.
    pub entity: Option<EntityState>,
}

/// A group entity's state in its parent queue that [`propagate`] maintains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityState {
    /// Queued there.
    pub on_rq: bool,
    /// Its weight there.
    pub weight: u64,
}

/// A group's queue and its parent (`None` for the root), as [`GroupQueues::queue`] gives it.
pub type QueueAndParent<'a, K, G> = (&'a FairRq<K>, Option<G>);
/// As [`QueueAndParent`], mutable.
pub type QueueAndParentMut<'a, K, G> = (&'a mut FairRq<K>, Option<G>);

/// One CPU's fair queues of a group hierarchy, as the walks see them.
pub trait GroupQueues {
    /// An entity's key in a queue (a task's or a group's).
    type Key: Copy + Ord + Debug;
    /// A group's id.
    type Gid: Copy + Eq + Debug;

    /// The root group's id.
    fn root(&self) -> Self::Gid;
    /// The key of group `gid`'s entity in its parent's queue.
    fn group_key(gid: Self::Gid) -> Self::Key;
    /// The group a key names (`None`: a task).
    fn key_group(key: Self::Key) -> Option<Self::Gid>;
    /// Group `gid`'s queue here and its parent (`None` for the root); `None` if it has no
    /// queue on this CPU.
    fn queue(&self, gid: Self::Gid) -> Option<QueueAndParent<'_, Self::Key, Self::Gid>>;
    /// As [`GroupQueues::queue`], mutable.
    fn queue_mut(&mut self, gid: Self::Gid) -> Option<QueueAndParentMut<'_, Self::Key, Self::Gid>>;
    /// Levels between group `gid`'s queue and the root's (0 for the root).
    fn depth(&self, gid: Self::Gid) -> usize;
    /// Creates group `gid`'s queue here, and its ancestors', if missing. False if the group
    /// no longer exists.
    fn ensure_queue(&mut self, gid: Self::Gid) -> bool;
    /// Brings group `gid`'s load on this CPU up to date and says what its entity should be;
    /// `None` if it has no queue here.
    fn refresh_group(&mut self, gid: Self::Gid) -> Option<GroupState<Self::Gid>>;
    /// Records group `gid`'s entity's state in its parent queue, as [`propagate`] just left it
    /// (returned by the next [`GroupQueues::refresh_group`] as `GroupState::entity`). The
    /// owner must forget it (`None`) whenever anything else attaches, detaches, queues,
    /// dequeues or reweights that entity.
    fn record_entity(&mut self, gid: Self::Gid, state: EntityState);
    /// Takes the running task's execution time not yet charged above its own level, with the
    /// group whose queue holds its own entity (`None`: nothing pending).
    fn take_pending(&mut self) -> Option<(Self::Gid, u64)>;
}

/// The level above `level`: its group's entity in the parent queue. `None` at the root, and
/// for a group without a queue here (whose parent this CPU does not know).
pub fn level_above<Q: GroupQueues>(q: &Q, level: Level<Q::Gid, Q::Key>) -> Option<Level<Q::Gid, Q::Key>> {
    let parent = q.queue(level.group)?.1?;
    Some(Level { group: parent, key: Q::group_key(level.group) })
}

/// Calls `f(queue, key, own)` for every level from `level` (`own` = true) up to the root's:
/// one queue lookup per level.
pub fn for_each_level<Q: GroupQueues>(q: &mut Q, level: Level<Q::Gid, Q::Key>, mut f: impl FnMut(&mut FairRq<Q::Key>, Q::Key, bool)) {
    let (mut gid, mut key, mut own) = (level.group, level.key, true);
    loop {
        let Some((frq, parent)) = q.queue_mut(gid) else { return };
        f(frq, key, core::mem::replace(&mut own, false));
        let Some(parent) = parent else { return };
        (gid, key) = (parent, Q::group_key(gid));
    }
}

/// The lowest queue holding an entity of both paths, and the two entities in it (Linux
/// `find_matching_se`): `(queue, a's entity, b's entity)`. The entities are equal when one
/// path contains the other's level (a task of a group against that group's entity). `None`
/// if a path breaks (a group without a queue here).
#[allow(clippy::type_complexity)]
pub fn find_matching<Q: GroupQueues>(q: &Q, a: Level<Q::Gid, Q::Key>, b: Level<Q::Gid, Q::Key>) -> Option<(Q::Gid, Q::Key, Q::Key)> {
    if a.group == b.group {
        return Some((a.group, a.key, b.key)); // one queue already (the common case)
    }
    let (mut da, mut db) = (q.depth(a.group), q.depth(b.group));
    let (mut a, mut b) = (a, b);
    while da > db {
        (a, da) = (level_above(q, a)?, da - 1);
    }
    while db > da {
        (b, db) = (level_above(q, b)?, db - 1);
    }
    while a.group != b.group {
        (a, b) = (level_above(q, a)?, level_above(q, b)?);
    }
    Some((a.group, a.key, b.key))
}

/// `key`, if it runs in `frq`, stops running there (Linux `put_prev_entity`).
pub fn put_entity<K: Copy + Ord + Debug>(frq: &mut FairRq<K>, key: K) {
    if frq.curr() == Some(key) {
        let put = frq.put_prev(key);
        debug_assert!(put.is_ok(), "put_prev of curr: {:?}", put);
    }
}

/// `key` starts running in `frq` (Linux `set_next_entity`). EINVAL: not queued (a running
/// task already dequeued, on its way to sleep): nothing to start. Anything else is a bug.
pub fn set_entity<K: Copy + Ord + Debug>(frq: &mut FairRq<K>, key: K) {
    let r = frq.set_next(key);
    debug_assert!(matches!(r, Ok(()) | Err(Errno::EINVAL)), "set_next: {:?}", r);
}

fn put_level<Q: GroupQueues>(q: &mut Q, level: Level<Q::Gid, Q::Key>) {
    if let Some((frq, _)) = q.queue_mut(level.group) {
        put_entity(frq, level.key);
    }
}

fn set_level<Q: GroupQueues>(q: &mut Q, level: Level<Q::Gid, Q::Key>) {
    if let Some((frq, _)) = q.queue_mut(level.group) {
        set_entity(frq, level.key);
    }
}

/// From `prev`'s path running to `next`'s: up from both own levels, deeper side first,
/// putting `prev`'s entities and setting `next`'s, until both sit in one queue, where the last
/// put and set happen. Above that queue both paths are the same entities and stay `curr`: for
/// two tasks of one group, one put and one set instead of one per level.
pub fn switch_levels<Q: GroupQueues>(q: &mut Q, prev: Level<Q::Gid, Q::Key>, next: Level<Q::Gid, Q::Key>) {
    if prev.group == next.group {
        // Two entities of one queue (the common case): one lookup.
        if let Some((frq, _)) = q.queue_mut(prev.group) {
            put_entity(frq, prev.key);
            set_entity(frq, next.key);
        }
        return;
    }
    let (mut pd, mut nd) = (q.depth(prev.group), q.depth(next.group));
    let (mut p, mut n) = (prev, next);
    while p.group != n.group {
        let (pd0, nd0) = (pd, nd);
        if nd0 <= pd0 {
            put_level(q, p);
            let Some(up) = level_above(q, p) else { break };
            (p, pd) = (up, pd.saturating_sub(1));
        }
        if nd0 >= pd0 {
            set_level(q, n);
            let Some(up) = level_above(q, n) else { break };
            (n, nd) = (up, nd.saturating_sub(1));
        }
    }
    put_level(q, p);
    set_level(q, n);
}

/// The task to run: descends from the root queue through group entities. A queue's running
/// entity competes as if it had been put back ([`FairRq::pick_next_as_put_back`]), so the
/// pick is the same whether or not the running path was put first.
pub fn pick_task<Q: GroupQueues>(q: &Q) -> Option<Q::Key> {
    pick_task_from(q, q.root())
}

/// [`pick_task`] for a running task of group `own` whose upper levels hold nothing else
/// (`!contended_above(own)`): each upper queue then holds only the path's own entity, queued
/// while `own`'s queue holds work (the *queued groups* invariant), so the descent from the
/// root would arrive at `own`'s queue; it starts there. Falls back to the full descent when
/// `own`'s queue has nothing queued (its entity left the parent queue). Proptested equal to
/// [`pick_task`] (`pick_below_an_uncontended_path_equals_the_full_pick`).
pub fn pick_task_uncontended<Q: GroupQueues>(q: &Q, own: Q::Gid) -> Option<Q::Key> {
    if q.queue(own).is_some_and(|(frq, _)| frq.nr_queued() > 0) {
        pick_task_from(q, own)
    } else {
        pick_task(q)
    }
}

/// The descent of [`pick_task`] from group `gid`'s queue.
fn pick_task_from<Q: GroupQueues>(q: &Q, mut gid: Q::Gid) -> Option<Q::Key> {
    for _ in 0..MAX_DEPTH {
        let key = q.queue(gid)?.0.pick_next_as_put_back()?;
        match Q::key_group(key) {
            Some(child) => gid = child,
            None => return Some(key),
        }
    }
    None
}

/// The tasks queued on this CPU in the order it would run them (the first is
/// [`pick_task`]'s), for the core-wide pick: a descent in pick order
/// ([`FairRq::for_each_in_pick_order`] at every level). Each comes with a key comparable
/// across SMT siblings (`core_sched::Rank::Fair`, smaller is more important): its root-level
/// entity's virtual deadline relative to the root queue's `V` (Linux's `cfs_prio_less`
/// compares tasks of different top-level groups at the root level), raised where needed so
/// that keys never decrease along the order: a CPU's own order is its rank order, and across
/// siblings only each one's first key counts (the core-wide `max`). Calls `f(task, key)`
/// until it returns false. Levels past [`MAX_DEPTH`] are not descended.
pub fn for_each_candidate<Q: GroupQueues>(q: &Q, f: impl FnMut(Q::Key, i64) -> bool) {
    for_each_candidate_at(q, None, f)
}

/// The root queue's `V` ([`FairRq::avg_vruntime`]), the base of [`for_each_candidate`]'s keys;
/// `None` without a root queue.
pub fn root_avg_vruntime<Q: GroupQueues>(q: &Q) -> Option<u64> {
    q.queue(q.root()).map(|(root, _)| root.avg_vruntime())
}

/// [`for_each_candidate`] with keys relative to `base` instead of the root queue's `V` now
/// (`None`: `V` now). Core scheduling passes `V` as it was when the core went forced idle
/// (Linux's `min_vruntime_fi` snapshot, `se_fi_update`): relative to a fixed base, the keys of
/// the sibling that keeps running grow as it runs, so a task waiting on the forced-idle
/// sibling (whose `V` does not move) wins the core within about a slice. Relative to each
/// queue's moving `V`, a running task's key stays below one slice while a lone waiter's stays
/// at its whole slice: the waiter lost every core-wide pick (190 ms in one traced run).
pub fn for_each_candidate_at<Q: GroupQueues>(q: &Q, base: Option<u64>, mut f: impl FnMut(Q::Key, i64) -> bool) {
    let Some((root, _)) = q.queue(q.root()) else { return };
    let v = base.unwrap_or_else(|| root.avg_vruntime());
    let mut last = i64::MIN;
    root.for_each_in_pick_order(|k| {
        let raw = root.entity(k).map_or(0, |se| se.deadline().wrapping_sub(v) as i64);
        let key = raw.max(last);
        last = key;
        let mut emit = |task: Q::Key| f(task, key);
        match Q::key_group(k) {
            None => emit(k),
            Some(child) => descend_candidates(q, child, 1, &mut emit),
        }
    });
}

/// [`for_each_candidate`] below the root: group `gid`'s queue, `depth` queues down.
fn descend_candidates<Q: GroupQueues>(q: &Q, gid: Q::Gid, depth: usize, f: &mut dyn FnMut(Q::Key) -> bool) -> bool {
    if depth >= MAX_DEPTH {
        return true;
    }
    let Some((frq, _)) = q.queue(gid) else { return true };
    frq.for_each_in_pick_order(|k| match Q::key_group(k) {
        None => f(k),
        Some(child) => descend_candidates(q, child, depth + 1, f),
    })
}

/// Charges `delta_ns` to the running entities above group `own`'s queue (the group entities
/// of a task whose own entity sits in `own`). True if some level's slice ended with others
/// waiting there.
pub fn charge_above<Q: GroupQueues>(q: &mut Q, own: Q::Gid, delta_ns: u64) -> bool {
    let mut resched = false;
    if let Some(first) = level_above(q, Level { group: own, key: Q::group_key(own) }) {
        for_each_level(q, first, |frq, key, _| {
            if frq.curr() == Some(key) {
                resched |= frq.update_curr(delta_ns);
            }
        });
    }
    resched
}

/// Charges what is pending for the running task's group entities ([`GroupQueues::take_pending`])
/// to every level above its own. True if some level's slice ended with others waiting.
pub fn flush_pending<Q: GroupQueues>(q: &mut Q) -> bool {
    match q.take_pending() {
        Some((own, ns)) if ns > 0 => charge_above(q, own, ns),
        _ => false,
    }
}

/// Whether some queue above group `own`'s (on the path to the root) holds another queued
/// entity besides the one of this path: only then does a pick compare the upper levels'
/// running entities, and so need their pending charge ([`flush_pending`]) first. A level
/// whose queue holds only the path's own entity decides nothing: its entity's pending time
/// can wait for the next flush point (the tick, a change of that queue in [`propagate`], a
/// wakeup decided there, or a switch to another group) without any pick seeing a difference.
pub fn contended_above<Q: GroupQueues>(q: &Q, own: Q::Gid) -> bool {
    // One lookup per level: each queue names its parent.
    let mut parent = q.queue(own).and_then(|(_, p)| p);
    while let Some(gid) = parent {
        let Some((frq, up)) = q.queue(gid) else { return false };
        if frq.nr_queued() > 1 {
            return true;
        }
        parent = up;
    }
    false
}

/// What [`propagate`] does above a level that did not change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagate {
    /// Stop there: a level whose entity kept its weight and its place leaves its parent
    /// queue's load, and so everything above, as it was (enqueue and dequeue, with the load
    /// taken as the queued weight).
    Changes,
    /// Every level up to the root (the tick and a shares change: other CPUs' loads, or the
    /// shares themselves, move the weights at every level).
    All,
}

/// Re-weights the group entities from `gid` up to the root after `gid`'s queue changed, and
/// queues or dequeues them as their queues fill or empty. As Linux's `enqueue_task_fair` /
/// `dequeue_task_fair`, a group entity is queued as a wakeup (`ENQUEUE_WAKEUP`, never
/// `ENQUEUE_INITIAL`, a new task's placement) and dequeued as a sleep (`DEQUEUE_SLEEP`).
/// `enqueue` says which way the change went (a group entity is only queued going up after an
/// enqueue, only dequeued after a dequeue). The pending charge is flushed before the first
/// parent queue is changed.
pub fn propagate<Q: GroupQueues>(q: &mut Q, mut gid: Q::Gid, enqueue: bool, how: Propagate) {
    let root = q.root();
    while gid != root {
        let Some(state) = q.refresh_group(gid) else { return };
        let parent = state.parent;
        // The recorded state says nothing changes here: stop without visiting the parent.
        if let (Propagate::Changes, Some(e)) = (how, state.entity) {
            let requeue = if enqueue { !e.on_rq && !state.empty } else { e.on_rq && state.empty };
            if e.weight == state.weight && !requeue {
                debug_assert_eq!(
                    q.queue(parent)
                        .and_then(|(prq, _)| prq.entity(Q::group_key(gid)))
                        .map(|se| EntityState { on_rq: se.on_rq(), weight: se.weight() }),
                    Some(e),
                    "a group entity's recorded state went stale"
                );
                return;
            }
        }
        let key = Q::group_key(gid);
        let entity_in =
            |q: &Q| q.queue(parent).map(|(prq, _)| prq.entity(key).map_or((false, false, 0), |e| (true, e.on_rq(), e.weight())));
        let found = match entity_in(q) {
            Some(found) => Some(found),
            None if q.ensure_queue(parent) => entity_in(q),
            None => None,
        };
        let Some((attached, on_rq, old_weight)) = found else { return };
        let reweight = !attached || old_weight != state.weight;
        let requeue = if enqueue { !on_rq && !state.empty } else { on_rq && state.empty };
        if how == Propagate::Changes && !reweight && !requeue {
            return;
        }
        // The parent queue changes: its running entity is charged up to now first.
        flush_pending(q);
        let Some((prq, _)) = q.queue_mut(parent) else { return };
        if !attached {
            let se = FairEntity::new(state.weight).or_else(|_| FairEntity::new(NICE_0_LOAD));
            let attached = se.and_then(|se| prq.attach(key, se));
            debug_assert!(attached.is_ok(), "attach of an absent group entity: {:?}", attached);
        }
        if reweight {
            let reweighted = prq.reweight(key, state.weight);
            debug_assert!(reweighted.is_ok(), "group entity reweight: {:?}", reweighted);
        }
        if requeue && enqueue {
            let queued = prq.enqueue(key, ENQUEUE_WAKEUP);
            debug_assert!(queued.is_ok(), "group entity enqueue: {:?}", queued);
        } else if requeue {
            let dequeued = prq.dequeue(key, DEQUEUE_SLEEP);
            debug_assert!(dequeued.is_ok(), "group entity dequeue: {:?}", dequeued);
        }
        if let Some(se) = prq.entity(key) {
            let recorded = EntityState { on_rq: se.on_rq(), weight: se.weight() };
            q.record_entity(gid, recorded);
        }
        gid = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eevdf::{FairTunables, ENQUEUE_INITIAL};
    use alloc::collections::BTreeMap;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum K {
        Task(u32),
        Group(u32),
    }

    /// A model CPU: the root queue (group 0) and group queues with their parent and depth.
    /// Shares are the plain sum of queued weights, capped at 1024 (enough to see weights
    /// move); `pending` is the lazily charged time.
    struct Tree {
        queues: BTreeMap<u32, (FairRq<K>, Option<u32>, usize)>,
        /// Every group that exists: parent (created on demand by `ensure_queue`).
        groups: BTreeMap<u32, u32>,
        pending: Option<(u32, u64)>,
        flushes: usize,
        recorded: BTreeMap<u32, EntityState>,
    }

    impl Tree {
        /// Groups 1..=n, group i's parent is `parents[i - 1]` (< i, 0 = root).
        fn new(parents: &[u32]) -> Tree {
            let mut t = Tree { queues: BTreeMap::new(), groups: BTreeMap::new(), pending: None, flushes: 0, recorded: BTreeMap::new() };
            t.queues.insert(0, (FairRq::new(FairTunables::default()), None, 0));
            for (i, &p) in parents.iter().enumerate() {
                t.groups.insert(i as u32 + 1, p);
            }
            t
        }

        fn path(&self, gid: u32) -> Vec<u32> {
            let mut v = alloc::vec![gid];
            let mut g = gid;
            while g != 0 {
                g = self.groups[&g];
                v.push(g);
            }
            v
        }

        /// Queues task `tid` in group `gid` (with its ancestors), as the kernel's enqueue.
        fn enqueue_task(&mut self, tid: u32, gid: u32) {
            assert!(self.ensure_queue(gid));
            let frq = &mut self.queues.get_mut(&gid).unwrap().0;
            frq.attach_new(K::Task(tid), NICE_0_LOAD).unwrap();
            frq.enqueue(K::Task(tid), ENQUEUE_INITIAL).unwrap();
            propagate(self, gid, true, Propagate::Changes);
        }

        fn curr_everywhere(&self) -> Vec<(u32, K)> {
            self.queues.iter().filter_map(|(&g, (frq, _, _))| frq.curr().map(|c| (g, c))).collect()
        }

        fn set_path(&mut self, gid: u32, tid: u32) {
            for_each_level(self, Level { group: gid, key: K::Task(tid) }, |frq, key, _| set_entity(frq, key));
        }

        fn put_path(&mut self, gid: u32, tid: u32) {
            for_each_level(self, Level { group: gid, key: K::Task(tid) }, |frq, key, _| put_entity(frq, key));
        }
    }

    impl GroupQueues for Tree {
        type Key = K;
        type Gid = u32;
        fn root(&self) -> u32 {
            0
        }
        fn group_key(gid: u32) -> K {
            K::Group(gid)
        }
        fn key_group(key: K) -> Option<u32> {
            match key {
                K::Group(g) => Some(g),
                K::Task(_) => None,
            }
        }
        fn queue(&self, gid: u32) -> Option<(&FairRq<K>, Option<u32>)> {
            self.queues.get(&gid).map(|(q, p, _)| (q, *p))
        }
        fn queue_mut(&mut self, gid: u32) -> Option<(&mut FairRq<K>, Option<u32>)> {
            self.queues.get_mut(&gid).map(|(q, p, _)| (q, *p))
        }
        fn depth(&self, gid: u32) -> usize {
            self.queues.get(&gid).map_or(0, |q| q.2)
        }
        fn ensure_queue(&mut self, gid: u32) -> bool {
            if self.queues.contains_key(&gid) {
                return true;
            }
            let Some(&parent) = self.groups.get(&gid) else { return false };
            if !self.ensure_queue(parent) {
                return false;
            }
            let depth = self.queues[&parent].2 + 1;
            self.queues.insert(gid, (FairRq::new(FairTunables::default()), Some(parent), depth));
            true
        }
        fn refresh_group(&mut self, gid: u32) -> Option<GroupState<u32>> {
            let (frq, parent, _) = self.queues.get(&gid)?;
            let entity = self.recorded.get(&gid).copied();
            Some(GroupState { weight: frq.load().clamp(2, NICE_0_LOAD), empty: frq.nr_queued() == 0, parent: (*parent)?, entity })
        }
        fn record_entity(&mut self, gid: u32, state: EntityState) {
            self.recorded.insert(gid, state);
        }
        fn take_pending(&mut self) -> Option<(u32, u64)> {
            self.flushes += 1;
            self.pending.take()
        }
    }

    /// A random tree of up to 8 groups (group i's parent is below i) and tasks spread over
    /// its groups.
    fn tree_and_tasks() -> impl Strategy<Value = (Vec<u32>, Vec<u32>)> {
        (0usize..8)
            .prop_flat_map(|n| {
                let parents: Vec<_> = (0..n).map(|i| 0..=i as u32).collect();
                (parents, proptest::collection::vec(0..=n as u32, 2..10))
            })
            .prop_map(|(p, t)| (p, t))
    }

    proptest! {
        /// The fast switch ends in the state of a full put of `prev`'s path and a full set of
        /// `next`'s: exactly `next`'s path is running, at every level.
        #[test]
        fn switch_levels_equals_put_all_set_all((parents, tasks) in tree_and_tasks(), a in 0usize..10, b in 0usize..10) {
            let (a, b) = (a % tasks.len(), b % tasks.len());
            let mut fast = Tree::new(&parents);
            let mut full = Tree::new(&parents);
            for (tid, &g) in tasks.iter().enumerate() {
                fast.enqueue_task(tid as u32, g);
                full.enqueue_task(tid as u32, g);
            }
            let (ga, gb) = (tasks[a], tasks[b]);
            fast.set_path(ga, a as u32);
            full.set_path(ga, a as u32);
            switch_levels(&mut fast, Level { group: ga, key: K::Task(a as u32) }, Level { group: gb, key: K::Task(b as u32) });
            full.put_path(ga, a as u32);
            full.set_path(gb, b as u32);
            prop_assert_eq!(fast.curr_everywhere(), full.curr_everywhere());
            // And that state is `next`'s path, nothing else.
            let mut want: Vec<(u32, K)> = Vec::new();
            let path = fast.path(gb);
            want.push((gb, K::Task(b as u32)));
            for w in path.windows(2) {
                want.push((w[1], K::Group(w[0])));
            }
            want.sort();
            prop_assert_eq!(fast.curr_everywhere(), want);
        }

        /// The matching level is the lowest common queue of the two paths, found naively.
        #[test]
        fn find_matching_is_the_lowest_common_queue((parents, tasks) in tree_and_tasks(), a in 0usize..10, b in 0usize..10) {
            let (a, b) = (a % tasks.len(), b % tasks.len());
            let mut t = Tree::new(&parents);
            for (tid, &g) in tasks.iter().enumerate() {
                t.enqueue_task(tid as u32, g);
            }
            let (pa, pb) = (t.path(tasks[a]), t.path(tasks[b]));
            let common = *pa.iter().find(|g| pb.contains(g)).unwrap();
            let entity = |path: &[u32], tid: usize| {
                let i = path.iter().position(|&g| g == common).unwrap();
                if i == 0 { K::Task(tid as u32) } else { K::Group(path[i - 1]) }
            };
            let got = find_matching(&t, Level { group: tasks[a], key: K::Task(a as u32) }, Level { group: tasks[b], key: K::Task(b as u32) });
            prop_assert_eq!(got, Some((common, entity(&pa, a), entity(&pb, b))));
        }

        /// Every queued task's group entities are queued up to the root, and a group's entity
        /// leaves its parent queue when its last task is dequeued; the pick is a queued task.
        #[test]
        fn propagate_keeps_groups_queued_exactly_when_they_hold_work((parents, tasks) in tree_and_tasks(), gone in proptest::collection::vec(any::<bool>(), 10)) {
            let mut t = Tree::new(&parents);
            for (tid, &g) in tasks.iter().enumerate() {
                t.enqueue_task(tid as u32, g);
            }
            for (tid, &g) in tasks.iter().enumerate() {
                if gone[tid] {
                    t.queues.get_mut(&g).unwrap().0.dequeue(K::Task(tid as u32), DEQUEUE_SLEEP).unwrap();
                    propagate(&mut t, g, false, Propagate::Changes);
                }
            }
            for (&g, (frq, parent, _)) in &t.queues {
                let Some(parent) = parent else { continue };
                let se = t.queues[parent].0.entity(K::Group(g));
                let on = se.is_some_and(|e| e.on_rq());
                prop_assert_eq!(on, frq.nr_queued() > 0, "group {}", g);
                // The recorded state is the entity's.
                let actual = se.map(|e| EntityState { on_rq: e.on_rq(), weight: e.weight() });
                prop_assert_eq!(t.recorded.get(&g).copied(), actual, "group {}'s record", g);
            }
            let left: Vec<u32> = (0..tasks.len() as u32).filter(|&i| !gone[i as usize]).collect();
            match pick_task(&t) {
                Some(K::Task(tid)) => prop_assert!(left.contains(&tid)),
                other => prop_assert!(left.is_empty(), "picked {:?} with {:?} queued", other, left),
            }
        }
    }

    proptest! {
        /// The candidates are every queued task once, the first is what the CPU picks, and the
        /// keys never decrease (the CPU's own order is its rank order).
        #[test]
        fn candidates_start_with_the_pick_and_cover_every_task((parents, tasks) in tree_and_tasks(), runs in proptest::collection::vec((0usize..10, 1u64..5_000_000), 0..12)) {
            let mut t = Tree::new(&parents);
            for (tid, &g) in tasks.iter().enumerate() {
                t.enqueue_task(tid as u32, g);
            }
            // Let picked tasks run a while, so vruntimes, deadlines and eligibility spread.
            for (_, ns) in runs {
                let Some(K::Task(tid)) = pick_task(&t) else { break };
                let g = tasks[tid as usize];
                t.set_path(g, tid);
                for_each_level(&mut t, Level { group: g, key: K::Task(tid) }, |frq, _, _| { frq.update_curr(ns); });
                t.put_path(g, tid);
            }
            // And one runs now: its path's entities are `curr`, out of the timelines.
            if let Some(K::Task(tid)) = pick_task(&t) {
                t.set_path(tasks[tid as usize], tid);
            }
            let mut seen = Vec::new();
            let mut keys = Vec::new();
            for_each_candidate(&t, |k, key| { seen.push(k); keys.push(key); true });
            prop_assert_eq!(seen.first().copied(), pick_task(&t));
            prop_assert!(keys.windows(2).all(|w| w[0] <= w[1]), "keys {:?}", keys);
            let mut sorted = seen.clone();
            sorted.sort();
            let all: Vec<K> = (0..tasks.len() as u32).map(K::Task).collect();
            prop_assert_eq!(sorted, all);
        }
    }

    proptest! {
        /// Starting the pick at the running task's own queue when nothing else is queued
        /// above it chooses what the descent from the root chooses.
        #[test]
        fn pick_below_an_uncontended_path_equals_the_full_pick((parents, tasks) in tree_and_tasks(), runs in proptest::collection::vec(1u64..5_000_000, 0..8), gone in proptest::collection::vec(any::<bool>(), 10)) {
            let mut t = Tree::new(&parents);
            for (tid, &g) in tasks.iter().enumerate() {
                t.enqueue_task(tid as u32, g);
            }
            for ns in runs {
                let Some(K::Task(tid)) = pick_task(&t) else { break };
                let g = tasks[tid as usize];
                t.set_path(g, tid);
                for_each_level(&mut t, Level { group: g, key: K::Task(tid) }, |frq, _, _| { frq.update_curr(ns); });
                t.put_path(g, tid);
            }
            // One runs now; some others sleep (dequeued, the running one too, as on its way
            // to sleep).
            let Some(K::Task(run)) = pick_task(&t) else { return Ok(()) };
            let own = tasks[run as usize];
            t.set_path(own, run);
            for (tid, &g) in tasks.iter().enumerate() {
                if gone[tid] {
                    t.queues.get_mut(&g).unwrap().0.dequeue(K::Task(tid as u32), DEQUEUE_SLEEP).unwrap();
                    propagate(&mut t, g, false, Propagate::Changes);
                }
            }
            if !contended_above(&t, own) {
                prop_assert_eq!(pick_task_uncontended(&t, own), pick_task(&t));
            }
        }
    }

    #[test]
    fn candidate_keys_from_a_fixed_base_grow_as_the_queue_runs() {
        let mut t = Tree::new(&[]);
        t.enqueue_task(0, 0);
        t.enqueue_task(1, 0);
        let keys = |t: &Tree, base: Option<u64>| {
            let mut k = Vec::new();
            for_each_candidate_at(t, base, |_, key| {
                k.push(key);
                true
            });
            k
        };
        let base = root_avg_vruntime(&t);
        assert_eq!(keys(&t, base), keys(&t, None), "the base is V now");
        let first = keys(&t, None)[0];
        // Both tasks run 10 ms each: V moves, the keys relative to it stay, from the base grow.
        for _ in 0..2 {
            let Some(K::Task(tid)) = pick_task(&t) else { panic!("a task") };
            t.set_path(0, tid);
            for_each_level(&mut t, Level { group: 0, key: K::Task(tid) }, |frq, _, _| {
                frq.update_curr(10_000_000);
            });
            t.put_path(0, tid);
        }
        assert!(keys(&t, None)[0] < first + 10_000_000, "relative to V now the key stays near a slice");
        assert!(keys(&t, base)[0] >= first + 10_000_000, "from the snapshot it grows by what ran");
    }

    #[test]
    fn candidates_stop_when_asked() {
        let mut t = Tree::new(&[0]);
        for tid in 0..4 {
            t.enqueue_task(tid, tid % 2);
        }
        let mut n = 0;
        for_each_candidate(&t, |_, _| {
            n += 1;
            n < 3
        });
        assert_eq!(n, 3);
    }

    #[test]
    fn charge_above_charges_only_the_running_group_entities() {
        // root ← 1 ← 2; task 0 in group 2 runs, task 1 in group 1 waits.
        let mut t = Tree::new(&[0, 1]);
        t.enqueue_task(0, 2);
        t.enqueue_task(1, 1);
        t.set_path(2, 0);
        let v = |t: &Tree, g: u32, k: K| t.queues[&g].0.entity(k).unwrap().vruntime();
        let (own0, g2, g1, task1) = (v(&t, 2, K::Task(0)), v(&t, 1, K::Group(2)), v(&t, 0, K::Group(1)), v(&t, 1, K::Task(1)));
        t.pending = Some((2, 1_000_000));
        flush_pending(&mut t);
        assert_eq!(v(&t, 2, K::Task(0)), own0, "the own level is charged at once, not here");
        assert!(v(&t, 1, K::Group(2)) > g2, "group 2's entity runs in group 1's queue");
        assert!(v(&t, 0, K::Group(1)) > g1, "group 1's entity runs in the root queue");
        assert_eq!(v(&t, 1, K::Task(1)), task1, "a waiting entity is not charged");
        assert_eq!(t.pending, None);
    }

    #[test]
    fn propagate_flushes_the_pending_charge_before_changing_a_parent_queue() {
        // Groups 1 and 2 under the root; task 0 of group 1 runs.
        let mut t = Tree::new(&[0, 0]);
        t.enqueue_task(0, 1);
        t.set_path(1, 0);
        let before = t.queues[&0].0.entity(K::Group(1)).unwrap().vruntime();
        // A second task in group 1 leaves its entity's weight (capped) and place: the root
        // queue does not change, and the charge stays pending.
        t.pending = Some((1, 3_000_000));
        t.enqueue_task(1, 1);
        assert_eq!(t.pending, Some((1, 3_000_000)));
        // Group 2's first task queues group 2's entity in the root queue: charged first.
        t.enqueue_task(2, 2);
        assert_eq!(t.pending, None);
        assert!(t.queues[&0].0.entity(K::Group(1)).unwrap().vruntime() > before);
    }

    #[test]
    fn contention_above_is_another_entity_in_an_upper_queue() {
        // root ← 1 ← 2: a task in group 2; alone at every upper level.
        let mut t = Tree::new(&[0, 1, 0]);
        t.enqueue_task(0, 2);
        t.enqueue_task(1, 2);
        assert!(!contended_above(&t, 2), "two tasks in group 2: its own queue, not above");
        t.enqueue_task(2, 1);
        assert!(contended_above(&t, 2), "a task beside group 2's entity in group 1's queue");
        let mut u = Tree::new(&[0, 1, 0]);
        u.enqueue_task(0, 2);
        u.enqueue_task(1, 3);
        assert!(contended_above(&u, 2), "group 3 beside group 1 in the root queue");
        assert!(!contended_above(&u, 0), "nothing above the root");
    }

    #[test]
    fn a_broken_path_ends_the_walks_without_a_panic() {
        let mut t = Tree::new(&[0, 1]);
        t.enqueue_task(0, 2);
        t.enqueue_task(9, 0);
        t.queues.remove(&1); // group 1's queue gone (cannot happen in the kernel)
        assert_eq!(level_above(&t, Level { group: 1, key: K::Group(1) }), None);
        assert_eq!(find_matching(&t, Level { group: 2, key: K::Task(0) }, Level { group: 0, key: K::Task(9) }), None);
        switch_levels(&mut t, Level { group: 2, key: K::Task(0) }, Level { group: 0, key: K::Task(9) });
        assert_eq!(t.queues[&0].0.curr(), Some(K::Task(9)));
        t.queues.get_mut(&0).unwrap().0.put_prev(K::Task(9)).unwrap();
        t.queues.get_mut(&0).unwrap().0.dequeue(K::Task(9), DEQUEUE_SLEEP).unwrap();
        assert_eq!(pick_task(&t), None, "the root's pick leads into a missing queue");
    }
}
