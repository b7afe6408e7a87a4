//! The real-time run queue: Linux rt.c's priority array plus SCHED_RR timeslices.
//!
//! `RtPrioArray<K>` keeps one FIFO list per priority level and a 100-bit bitmap of
//! non-empty levels (`struct rt_prio_array`). Index `idx = 99 - rt_priority` (Linux
//! `prio`), so the lowest set bit is the most important level and
//! [`RtPrioArray::pick_highest`] is a find-first-set plus a list head: O(1).
//!
//! Contracts:
//! * `rt_priority` is the user-visible 0..=99 (higher = more important; 0 is accepted so
//!   priority-inheritance boosting can use Linux prio 99). Larger values give `EINVAL`.
//! * A key is queued at most once (`EBUSY` otherwise). The running RT task stays queued
//!   (Linux keeps `curr` on the rt list), so SCHED_FIFO runs the head until it blocks.
//! * Within a level order is FIFO; `head = true` inserts at the front (Linux
//!   `ENQUEUE_HEAD`, used when a running task is preempted so it resumes first).
//! * SCHED_RR: on each tick [`rr_tick`] consumes the timeslice; on expiry the task is
//!   refilled and, if it has peers at its level, moved to the tail with
//!   [`RtPrioArray::requeue`] (`requeue_task_rt(rq, p, 0)`) and the CPU rescheduled.
//!   `sched_yield` is the same rotation.
//! * Invariant: bit `idx` is set iff `queues[idx]` is non-empty; `index` maps every
//!   queued key to its priority; `nr_running` equals the number of queued keys.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

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

/// Per-priority FIFO lists with a bitmap of non-empty levels.
#[derive(Clone, Debug)]
pub struct RtPrioArray<K: Copy + Ord> {
    bitmap: [u64; 2],
    queues: Vec<VecDeque<K>>,
    index: BTreeMap<K, u8>,
}

impl<K: Copy + Ord> Default for RtPrioArray<K> {
    fn default() -> Self {
        Self::new()
    }
}

fn level(rt_priority: u8) -> Result<usize, Errno> {
    if (rt_priority as usize) < LEVELS {
        Ok(LEVELS - 1 - rt_priority as usize)
    } else {
        Err(Errno::EINVAL)
    }
}

impl<K: Copy + Ord> RtPrioArray<K> {
    /// An empty array.
    pub fn new() -> Self {
        RtPrioArray { bitmap: [0; 2], queues: (0..LEVELS).map(|_| VecDeque::new()).collect(), index: BTreeMap::new() }
    }

    fn set_bit(&mut self, idx: usize, on: bool) {
        let (word, bit) = (idx / 64, 1u64 << (idx % 64));
        if on {
            self.bitmap[word] |= bit;
        } else {
            self.bitmap[word] &= !bit;
        }
    }

    /// Index of the most important non-empty level (Linux `sched_find_first_bit`).
    fn first_level(&self) -> Option<usize> {
        if self.bitmap[0] != 0 {
            Some(self.bitmap[0].trailing_zeros() as usize)
        } else if self.bitmap[1] != 0 {
            Some(64 + self.bitmap[1].trailing_zeros() as usize)
        } else {
            None
        }
    }

    /// Queues `key` at `rt_priority`, at the head of its level if `head`.
    /// `EINVAL` priority > 99, `EBUSY` already queued.
    pub fn enqueue(&mut self, key: K, rt_priority: u8, head: bool) -> Result<(), Errno> {
        let idx = level(rt_priority)?;
        if self.index.contains_key(&key) {
            return Err(Errno::EBUSY);
        }
        let q = &mut self.queues[idx];
        if head {
            q.push_front(key);
        } else {
            q.push_back(key);
        }
        self.index.insert(key, rt_priority);
        self.set_bit(idx, true);
        Ok(())
    }

    /// Removes `key`, returning its priority. `ESRCH` if not queued.
    pub fn dequeue(&mut self, key: K) -> Result<u8, Errno> {
        let prio = self.index.remove(&key).ok_or(Errno::ESRCH)?;
        let idx = level(prio)?;
        let q = &mut self.queues[idx];
        if let Some(pos) = q.iter().position(|&k| k == key) {
            q.remove(pos);
        }
        if q.is_empty() {
            self.set_bit(idx, false);
        }
        Ok(prio)
    }

    /// Moves `key` to the head (`head = true`) or tail of its level: RR rotation and
    /// `sched_yield` (Linux `requeue_task_rt`). `ESRCH` if not queued.
    pub fn requeue(&mut self, key: K, head: bool) -> Result<(), Errno> {
        let prio = self.dequeue(key)?;
        self.enqueue(key, prio, head)
    }

    /// Changes `key`'s priority as `sched_setscheduler` does: a task whose priority is
    /// lowered goes to the head of its new level, otherwise to the tail (Linux
    /// `__sched_setscheduler` sets `ENQUEUE_HEAD` when `oldprio < newprio`).
    /// `ESRCH` not queued, `EINVAL` priority > 99.
    pub fn change_prio(&mut self, key: K, rt_priority: u8) -> Result<(), Errno> {
        level(rt_priority)?;
        let old = *self.index.get(&key).ok_or(Errno::ESRCH)?;
        if old == rt_priority {
            return Ok(());
        }
        self.dequeue(key)?;
        self.enqueue(key, rt_priority, rt_priority < old)
    }

    /// The task to run: head of the most important non-empty level.
    pub fn pick_highest(&self) -> Option<K> {
        self.first_level().and_then(|idx| self.queues[idx].front().copied())
    }

    /// `rt_priority` of the most important queued task.
    pub fn highest_prio(&self) -> Option<u8> {
        self.first_level().map(|idx| (LEVELS - 1 - idx) as u8)
    }

    /// Priority `key` is queued at.
    pub fn prio_of(&self, key: K) -> Option<u8> {
        self.index.get(&key).copied()
    }

    /// Number of queued tasks at `rt_priority` (RR only rotates when > 1).
    pub fn nr_at_prio(&self, rt_priority: u8) -> usize {
        level(rt_priority).map_or(0, |idx| self.queues[idx].len())
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
        self.queues
            .iter()
            .enumerate()
            .flat_map(|(idx, q)| q.iter().map(move |&k| (k, (LEVELS - 1 - idx) as u8)))
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
            let (r, expired) = rr_tick(remaining, tick, slice.ns());
            remaining = r;
            if expired && rq.nr_at_prio(rq.prio_of(curr).unwrap()) > 1 {
                rq.requeue(curr, false).unwrap();
            }
        }
        // 100 ticks each, round robin, lower level never runs.
        assert!(ran[..100].iter().all(|&k| k == 1));
        assert!(ran[100..200].iter().all(|&k| k == 2));
        assert!(ran[200..300].iter().all(|&k| k == 3));
        assert!(ran[300..400].iter().all(|&k| k == 1));
        assert!(!ran.contains(&9));
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
