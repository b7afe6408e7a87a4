//! The real-time run queue: Linux rt.c's priority array plus SCHED_RR timeslices.
//!
//! `RtPrioArray<K>` holds what Linux's `struct rt_prio_array` holds (one FIFO list per
//! priority level) as one ordered set of `(idx, seq, key)` in an [`crate::arena`] tree: level
//! `idx = 99 - rt_priority` (Linux `prio`, most important first), then a sequence number giving
//! FIFO order within the level (tail inserts count up from 0, head inserts count down from -1).
//! So [`RtPrioArray::pick_highest`] is the set's first element and enqueue, dequeue and requeue
//! are O(log n) at any number of queued tasks; per-level counts make
//! [`RtPrioArray::nr_at_prio`] O(1). Beside it, the same order restricted to the tasks marked
//! migratory ([`RtPrioArray::set_migratory`]: allowed on more than one CPU) is Linux's
//! `pushable_tasks` list: [`RtPrioArray::migratory`] finds the best push candidate without
//! walking past the pinned tasks queued ahead of it. The memory is reserved ahead: no enqueue
//! allocates under the run-queue lock while the owner keeps headroom
//! ([`RtPrioArray::grow_target`], [`RtPrioArray::adopt_storage`]).
//!
//! Contracts:
//! * `rt_priority` is the user-visible 0..=99 (higher = more important; 0 is accepted so
//!   priority-inheritance boosting can use Linux prio 99). Larger values give `EINVAL`.
//! * A key is queued at most once (`EBUSY` otherwise). The running RT task stays queued
//!   (Linux keeps `curr` on the rt list), so SCHED_FIFO runs the head until it blocks.
//! * Within a level order is FIFO; `head = true` inserts at the front (Linux
//!   `ENQUEUE_HEAD`, used when a running task is preempted so it resumes first).
//! * SCHED_RR: [`RtPrioArray::charge_rr`] consumes the timeslice ([`rr_tick`]); on expiry the task is
//!   refilled and, if it has peers at its level, moved to the tail with
//!   [`RtPrioArray::requeue`] (`requeue_task_rt(rq, p, 0)`) and the CPU rescheduled.
//!   `sched_yield` is the same rotation.
//! * Invariants: `order` and `index` hold the same keys, each once; `index` maps every queued
//!   key to its priority, sequence number and migratory mark; `migratory` holds exactly the
//!   `order` elements of the marked keys; `per_level[idx]` counts the keys at level `idx`.
//!   A requeue or priority change keeps the mark; a dequeue drops it.

use crate::arena::{grow_target, ArenaMap, ArenaSet};

use crate::consts::{MAX_RT_PRIO, NSEC_PER_MSEC};
use crate::errno::Errno;

/// Default SCHED_RR quantum in ms (Linux `RR_TIMESLICE` = 100 ms).
pub const RR_TIMESLICE_MS: u64 = 100;
const LEVELS: usize = MAX_RT_PRIO as usize;

/// `sched_rr_timeslice_ms` sysctl: the SCHED_RR quantum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RrTimeslice {
    ms: u64,
}

impl Default for RrTimeslice {
    fn default() -> Self {
        RrTimeslice { ms: RR_TIMESLICE_MS }
    }
}

impl RrTimeslice {
    /// Writes the sysctl: values `<= 0` reset to the default 100 ms, as Linux does.
    pub fn set_ms(&mut self, ms: i64) {
        self.ms = if ms <= 0 { RR_TIMESLICE_MS } else { ms as u64 };
    }
    /// Current value in ms (what reading the sysctl returns).
    pub fn ms(&self) -> u64 {
        self.ms
    }
    /// Current value in ns (saturating).
    pub fn ns(&self) -> u64 {
        self.ms.saturating_mul(NSEC_PER_MSEC)
    }
}

/// One SCHED_RR tick: consumes `tick_ns` of the remaining quantum. Returns
/// `(remaining, expired)`; on expiry the quantum is refilled with `timeslice_ns` (Linux
/// `task_tick_rt`) and the caller requeues the task at the tail if it has peers.
pub const fn rr_tick(remaining_ns: u64, tick_ns: u64, timeslice_ns: u64) -> (u64, bool) {
    if remaining_ns > tick_ns {
        (remaining_ns - tick_ns, false)
    } else {
        (timeslice_ns, true)
    }
}

/// Per-priority FIFO lists, kept as one ordered set (see the module doc).
#[derive(Clone, Debug)]
pub struct RtPrioArray<K: Copy + Ord> {
    /// `(level, seq, key)`: level `99 - rt_priority` (most important first), then FIFO order.
    order: ArenaSet<(u8, i64, K)>,
    /// Every queued key's place.
    index: ArenaMap<K, Place>,
    /// The `order` elements of the keys marked migratory (Linux `pushable_tasks`).
    migratory: ArenaSet<(u8, i64, K)>,
    /// Queued keys per level.
    per_level: [u32; LEVELS],
    /// Next sequence number for a tail insert (counts up) and for a head insert (counts down).
    tail_seq: i64,
    head_seq: i64,
}

/// Where a queued key sits: its priority, its sequence number in its level, and its mark.
#[derive(Clone, Copy, Debug)]
struct Place {
    rt_priority: u8,
    seq: i64,
    migratory: bool,
}

/// Memory for an [`RtPrioArray`] of up to `n` tasks, allocated outside the run-queue lock and
/// installed with [`RtPrioArray::adopt_storage`].
#[derive(Debug)]
pub struct RtStorage<K> {
    order: ArenaSet<(u8, i64, K)>,
    index: ArenaMap<K, Place>,
    migratory: ArenaSet<(u8, i64, K)>,
}

impl<K: Copy + Ord> RtStorage<K> {
    /// Room for `n` tasks.
    pub fn with_capacity(n: usize) -> Self {
        RtStorage { order: ArenaSet::with_capacity(n), index: ArenaMap::with_capacity(n), migratory: ArenaSet::with_capacity(n) }
    }

    /// Tasks it has room for.
    pub fn capacity(&self) -> usize {
        self.index.capacity().min(self.order.capacity()).min(self.migratory.capacity())
    }
}

impl<K: Copy + Ord> Default for RtPrioArray<K> {
    fn default() -> Self {
        Self::new()
    }
}

fn level(rt_priority: u8) -> Result<u8, Errno> {
    if (rt_priority as usize) < LEVELS {
        Ok((LEVELS - 1 - rt_priority as usize) as u8)
    } else {
        Err(Errno::EINVAL)
    }
}

impl<K: Copy + Ord> RtPrioArray<K> {
    /// An empty array (no memory).
    pub const fn new() -> Self {
        RtPrioArray {
            order: ArenaSet::new(),
            index: ArenaMap::new(),
            migratory: ArenaSet::new(),
            per_level: [0; LEVELS],
            tail_seq: 0,
            head_seq: -1,
        }
    }

    /// The capacity to grow to before more tasks are queued, or `None` if there is headroom
    /// ([`grow_target`]).
    pub fn grow_target(&self) -> Option<usize> {
        self.grow_target_for(0)
    }

    /// [`RtPrioArray::grow_target`] with `incoming` more tasks counted as queued already.
    pub fn grow_target_for(&self, incoming: usize) -> Option<usize> {
        grow_target(self.index.len().saturating_add(incoming), self.capacity())
    }

    /// Bytes of memory its storage reserves.
    pub fn storage_bytes(&self) -> usize {
        self.index.storage_bytes() + self.order.storage_bytes() + self.migratory.storage_bytes()
    }

    /// Tasks it can hold without allocating.
    pub fn capacity(&self) -> usize {
        self.index.capacity().min(self.order.capacity()).min(self.migratory.capacity())
    }

    /// Moves the queued tasks into `spare`'s memory (no allocation); `spare` is left holding
    /// the old buffers, for the caller to drop outside its lock. False (nothing changed) if
    /// `spare` is not empty or too small.
    pub fn adopt_storage(&mut self, spare: &mut RtStorage<K>) -> bool {
        let n = self.index.len();
        if !spare.order.is_empty() || !spare.index.is_empty() || !spare.migratory.is_empty() || spare.capacity() < n {
            return false;
        }
        self.order.adopt_storage(&mut spare.order)
            && self.index.adopt_storage(&mut spare.index)
            && self.migratory.adopt_storage(&mut spare.migratory)
    }

    /// Queues `key` at `rt_priority`, at the head of its level if `head`, not migratory.
    /// `EINVAL` priority > 99, `EBUSY` already queued.
    pub fn enqueue(&mut self, key: K, rt_priority: u8, head: bool) -> Result<(), Errno> {
        self.enqueue_marked(key, rt_priority, head, false)
    }

    /// [`enqueue`](Self::enqueue) with the migratory mark set at once (see
    /// [`set_migratory`](Self::set_migratory)): the enqueue path's one lookup.
    pub fn enqueue_marked(&mut self, key: K, rt_priority: u8, head: bool, migratory: bool) -> Result<(), Errno> {
        let idx = level(rt_priority)?;
        if self.index.contains_key(&key) {
            return Err(Errno::EBUSY);
        }
        let seq = self.next_seq(head);
        self.order.insert((idx, seq, key));
        if migratory {
            self.migratory.insert((idx, seq, key));
        }
        self.index.insert(key, Place { rt_priority, seq, migratory });
        self.per_level[idx as usize] += 1;
        Ok(())
    }

    /// Marks queued `key` migratory (allowed on another CPU: a push candidate, Linux's
    /// `pushable_tasks`) or not. `ESRCH` if not queued.
    pub fn set_migratory(&mut self, key: K, migratory: bool) -> Result<(), Errno> {
        let place = self.index.get_mut(&key).ok_or(Errno::ESRCH)?;
        if place.migratory != migratory {
            place.migratory = migratory;
            let elem = (level(place.rt_priority)?, place.seq, key);
            if migratory {
                self.migratory.insert(elem);
            } else {
                self.migratory.remove(&elem);
            }
        }
        Ok(())
    }

    /// Removes `key`, returning its priority. `ESRCH` if not queued.
    pub fn dequeue(&mut self, key: K) -> Result<u8, Errno> {
        self.take(key).map(|p| p.rt_priority)
    }

    fn take(&mut self, key: K) -> Result<Place, Errno> {
        let place = self.index.remove(&key).ok_or(Errno::ESRCH)?;
        let idx = level(place.rt_priority)?;
        self.order.remove(&(idx, place.seq, key));
        if place.migratory {
            self.migratory.remove(&(idx, place.seq, key));
        }
        self.per_level[idx as usize] -= 1;
        Ok(place)
    }

    /// Moves `key` to the head (`head = true`) or tail of its level: RR rotation and
    /// `sched_yield` (Linux `requeue_task_rt`). `ESRCH` if not queued.
    pub fn requeue(&mut self, key: K, head: bool) -> Result<(), Errno> {
        let seq = self.next_seq(head);
        let place = self.index.get_mut(&key).ok_or(Errno::ESRCH)?;
        // The index entry stays (its sequence number changes in place): the yield and RR
        // path touches the order trees only.
        let idx = level(place.rt_priority)?;
        let (old, new) = ((idx, place.seq, key), (idx, seq, key));
        place.seq = seq;
        let migratory = place.migratory;
        self.order.remove(&old);
        self.order.insert(new);
        if migratory {
            self.migratory.remove(&old);
            self.migratory.insert(new);
        }
        Ok(())
    }

    fn next_seq(&mut self, head: bool) -> i64 {
        if head {
            self.head_seq -= 1;
            self.head_seq + 1
        } else {
            self.tail_seq += 1;
            self.tail_seq - 1
        }
    }

    /// Changes `key`'s priority as `sched_setscheduler` does: a task whose priority is
    /// lowered goes to the head of its new level, otherwise to the tail (Linux
    /// `__sched_setscheduler` sets `ENQUEUE_HEAD` when `oldprio < newprio`).
    /// `ESRCH` not queued, `EINVAL` priority > 99.
    pub fn change_prio(&mut self, key: K, rt_priority: u8) -> Result<(), Errno> {
        level(rt_priority)?;
        let old = self.index.get(&key).ok_or(Errno::ESRCH)?.rt_priority;
        if old == rt_priority {
            return Ok(());
        }
        let place = self.take(key)?;
        self.enqueue_marked(key, rt_priority, rt_priority < old, place.migratory)
    }

    /// The task to run: head of the most important non-empty level.
    pub fn pick_highest(&self) -> Option<K> {
        self.order.first().map(|&(_, _, k)| k)
    }

    /// `rt_priority` of the most important queued task.
    pub fn highest_prio(&self) -> Option<u8> {
        self.order.first().map(|&(idx, _, _)| (LEVELS - 1 - idx as usize) as u8)
    }

    /// Priority `key` is queued at.
    pub fn prio_of(&self, key: K) -> Option<u8> {
        self.index.get(&key).map(|p| p.rt_priority)
    }

    /// Number of queued tasks at `rt_priority` (RR only rotates when > 1).
    pub fn nr_at_prio(&self, rt_priority: u8) -> usize {
        level(rt_priority).map_or(0, |idx| self.per_level[idx as usize] as usize)
    }

    /// Charges `delta_ns` of running time to SCHED_RR task `key`'s quantum `remaining_ns`
    /// (Linux `task_tick_rt`, by the exact running time instead of one tick): on expiry the
    /// quantum is refilled with `timeslice_ns` and, if `key` shares its level with peers, it
    /// moves behind them (`requeue_task_rt(rq, p, 0)`). Returns the new quantum and whether
    /// `key` rotated (the CPU must then reschedule). A task no longer queued (dequeued before
    /// this charge, on its way to sleep) is refilled on expiry but has nothing to rotate.
    pub fn charge_rr(&mut self, key: K, remaining_ns: u64, delta_ns: u64, timeslice_ns: u64) -> (u64, bool) {
        let (left, expired) = rr_tick(remaining_ns, delta_ns, timeslice_ns);
        let peers = self.prio_of(key).is_some_and(|p| self.nr_at_prio(p) > 1);
        (left, expired && peers && self.requeue(key, false).is_ok())
    }

    /// The rest of SCHED_RR task `key`'s quantum, when its end matters (it shares its level
    /// with peers, so expiry rotates): what a one-shot timer (hrtick) should end. `None` when
    /// it runs alone at its level or is not queued.
    pub fn rr_slice_left(&self, key: K, remaining_ns: u64) -> Option<u64> {
        self.prio_of(key).is_some_and(|p| self.nr_at_prio(p) > 1).then_some(remaining_ns)
    }

    /// Number of queued RT tasks (`rt_nr_running`).
    pub fn nr_running(&self) -> usize {
        self.index.len()
    }

    /// Nothing queued.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// All queued tasks in run order (most important level first, FIFO within a level),
    /// as `(key, rt_priority)`; used to find pushable tasks for SMP.
    pub fn iter(&self) -> impl Iterator<Item = (K, u8)> + '_ {
        self.order.iter().map(|&(idx, _, k)| (k, (LEVELS - 1 - idx as usize) as u8))
    }

    /// The queued tasks marked migratory, in run order, as `(key, rt_priority)`: push
    /// candidates (the running one among them is the caller's to skip).
    pub fn migratory(&self) -> impl Iterator<Item = (K, u8)> + '_ {
        self.migratory.iter().map(|&(idx, _, k)| (k, (LEVELS - 1 - idx as usize) as u8))
    }

    /// Checks the invariants (module docs); for tests. Panics with what is wrong.
    pub fn check(&self) {
        self.order.check();
        self.index.check();
        self.migratory.check();
        assert_eq!(self.order.len(), self.index.len(), "order and index disagree");
        let mut per_level = [0u32; LEVELS];
        let mut marked = 0;
        for (&key, place) in self.index.iter() {
            let idx = LEVELS - 1 - place.rt_priority as usize;
            per_level[idx] += 1;
            assert!(self.order.contains(&(idx as u8, place.seq, key)), "indexed key not in order");
            assert_eq!(self.migratory.contains(&(idx as u8, place.seq, key)), place.migratory, "migratory set stale");
            marked += usize::from(place.migratory);
        }
        assert_eq!(marked, self.migratory.len(), "migratory set holds unqueued keys");
        assert_eq!(per_level, self.per_level, "per-level counts stale");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_order_and_fifo() {
        let mut rq = RtPrioArray::new();
        rq.enqueue(1u32, 10, false).unwrap();
        rq.enqueue(2, 50, false).unwrap();
        rq.enqueue(3, 50, false).unwrap();
        rq.enqueue(4, 99, false).unwrap();
        rq.enqueue(5, 1, false).unwrap();
        assert_eq!(rq.nr_running(), 5);
        assert_eq!(rq.highest_prio(), Some(99));
        let order: Vec<_> = rq.iter().map(|(k, _)| k).collect();
        assert_eq!(order, [4, 2, 3, 1, 5]);
        let mut popped = Vec::new();
        while let Some(k) = rq.pick_highest() {
            popped.push(k);
            rq.dequeue(k).unwrap();
        }
        assert_eq!(popped, [4, 2, 3, 1, 5]);
        assert!(rq.is_empty() && rq.highest_prio().is_none());
    }

    #[test]
    fn bitmap_spans_both_words() {
        let mut rq = RtPrioArray::new();
        rq.enqueue('a', 0, false).unwrap(); // idx 99 (second word)
        assert_eq!(rq.highest_prio(), Some(0));
        rq.enqueue('b', 36, false).unwrap(); // idx 63 (first word, top bit)
        assert_eq!(rq.pick_highest(), Some('b'));
        rq.dequeue('b').unwrap();
        assert_eq!(rq.pick_highest(), Some('a'));
    }

    #[test]
    fn head_and_tail_requeue() {
        let mut rq = RtPrioArray::new();
        for k in 1..=3u8 {
            rq.enqueue(k, 20, false).unwrap();
        }
        rq.enqueue(4, 20, true).unwrap();
        assert_eq!(rq.pick_highest(), Some(4));
        rq.requeue(4, false).unwrap();
        assert_eq!(rq.iter().map(|(k, _)| k).collect::<Vec<_>>(), [1, 2, 3, 4]);
        rq.requeue(3, true).unwrap();
        assert_eq!(rq.iter().map(|(k, _)| k).collect::<Vec<_>>(), [3, 1, 2, 4]);
        assert_eq!(rq.nr_at_prio(20), 4);
    }

    #[test]
    fn rr_rotation() {
        let mut rq = RtPrioArray::new();
        for k in 1..=3u8 {
            rq.enqueue(k, 5, false).unwrap();
        }
        rq.enqueue(9, 4, false).unwrap();
        let slice = RrTimeslice::default();
        let tick = NSEC_PER_MSEC;
        let mut remaining = slice.ns();
        let mut ran = Vec::new();
        for _ in 0..600 {
            let curr = rq.pick_highest().unwrap();
            ran.push(curr);
            let (r, rotated) = rq.charge_rr(curr, remaining, tick, slice.ns());
            assert_eq!(rotated, r == slice.ns());
            remaining = r;
        }
        // 100 ticks each, round robin, lower level never runs.
        assert!(ran[..100].iter().all(|&k| k == 1));
        assert!(ran[100..200].iter().all(|&k| k == 2));
        assert!(ran[200..300].iter().all(|&k| k == 3));
        assert!(ran[300..400].iter().all(|&k| k == 1));
        assert!(!ran.contains(&9));
    }

    #[test]
    fn rr_quantum_of_a_task_alone_or_asleep_refills_without_rotating() {
        let mut rq = RtPrioArray::new();
        rq.enqueue(1u32, 5, false).unwrap();
        rq.enqueue(2, 6, false).unwrap(); // another level: not a peer
        assert_eq!(rq.charge_rr(1, 3, 5, 100), (100, false), "alone at its level: refilled, not rotated");
        assert_eq!(rq.rr_slice_left(1, 42), None, "alone: no timer needed for its quantum");
        rq.enqueue(3, 5, false).unwrap();
        assert_eq!(rq.rr_slice_left(1, 42), Some(42));
        assert_eq!(rq.charge_rr(1, 30, 10, 100), (20, false), "not expired");
        assert_eq!(rq.charge_rr(1, 20, 20, 100), (100, true), "expired with a peer: rotated");
        assert_eq!(rq.iter().map(|(k, _)| k).collect::<Vec<_>>(), [2, 3, 1]);
        rq.dequeue(3).unwrap(); // asleep before its charge
        assert_eq!(rq.charge_rr(3, 1, 5, 100), (100, false));
        assert_eq!(rq.rr_slice_left(3, 7), None);
    }

    #[test]
    fn rr_timeslice_sysctl() {
        let mut s = RrTimeslice::default();
        assert_eq!(s.ms(), 100);
        s.set_ms(10);
        assert_eq!((s.ms(), s.ns()), (10, 10 * NSEC_PER_MSEC));
        s.set_ms(0);
        assert_eq!(s.ms(), 100);
        s.set_ms(-5);
        assert_eq!(s.ms(), 100);
        assert_eq!(rr_tick(5, 10, 77), (77, true));
        assert_eq!(rr_tick(10, 10, 77), (77, true));
        assert_eq!(rr_tick(11, 10, 77), (1, false));
    }

    #[test]
    fn storage_is_adopted_and_order_survives() {
        let mut rq = RtPrioArray::new();
        assert_eq!(rq.grow_target(), Some(crate::arena::MIN_HEADROOM));
        for (k, p) in [(1u32, 10u8), (2, 50), (3, 10), (4, 99), (5, 0)] {
            rq.enqueue(k, p, false).unwrap();
        }
        rq.enqueue(6, 10, true).unwrap();
        let before: Vec<_> = rq.iter().collect();
        assert_eq!(before, [(4, 99), (2, 50), (6, 10), (1, 10), (3, 10), (5, 0)]);
        assert_eq!((rq.nr_at_prio(10), rq.nr_at_prio(99), rq.nr_at_prio(0), rq.nr_at_prio(7)), (3, 1, 1, 0));
        let mut small = RtStorage::with_capacity(2);
        assert!(!rq.adopt_storage(&mut small));
        let target = rq.grow_target().unwrap();
        let mut spare = RtStorage::with_capacity(target);
        assert!(rq.adopt_storage(&mut spare));
        assert_eq!(rq.grow_target(), None);
        assert_eq!(rq.iter().collect::<Vec<_>>(), before);
        assert_eq!(rq.pick_highest(), Some(4));
    }

    #[test]
    fn errors_and_prio_change() {
        let mut rq = RtPrioArray::new();
        assert_eq!(rq.enqueue(1u8, 100, false), Err(Errno::EINVAL));
        rq.enqueue(1, 10, false).unwrap();
        assert_eq!(rq.enqueue(1, 11, false), Err(Errno::EBUSY));
        assert_eq!(rq.dequeue(2), Err(Errno::ESRCH));
        assert_eq!(rq.requeue(2, false), Err(Errno::ESRCH));
        assert_eq!(rq.change_prio(1, 200), Err(Errno::EINVAL));
        rq.enqueue(2, 5, false).unwrap();
        rq.enqueue(3, 5, false).unwrap();
        // Lowered priority: head of the new level.
        rq.change_prio(1, 5).unwrap();
        assert_eq!(rq.iter().map(|(k, _)| k).collect::<Vec<_>>(), [1, 2, 3]);
        // Raised priority: tail of the new level.
        rq.enqueue(4, 50, false).unwrap();
        rq.change_prio(2, 50).unwrap();
        assert_eq!(rq.iter().map(|(k, _)| k).collect::<Vec<_>>(), [4, 2, 1, 3]);
        assert_eq!(rq.prio_of(2), Some(50));
    }
}
