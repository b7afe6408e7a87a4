//! A timer queue's ordering, pure (the kernel's per-CPU timer queues wrap it under a lock and
//! program the LAPIC for [`TimerQueue::earliest`]).
//!
//! Invariants: timers fire in expiry order; timers with the same expiry fire in the order they
//! were armed (a per-queue sequence number breaks ties); a cancelled timer never fires; keys
//! are never reused within a queue, so a stale key cannot cancel a newer timer.

use crate::arena::ArenaMap;

/// Identifies an armed timer (to cancel it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerKey {
    /// Expiry, ns since boot.
    pub expires_ns: u64,
    seq: u64,
}

/// Pending timers carrying a `T` each, ordered by expiry.
///
/// Storage: an [`ArenaMap`] by key (an AVL tree in an arena), so arming, cancelling and
/// expiring are O(log n) at any number of pending timers (thousands of sleepers each have
/// one). Nothing is allocated while the queue stays within the capacity given to
/// [`reserve`](Self::reserve): the kernel reserves at boot, because timers are re-armed from
/// interrupt handlers, where the heap must not be taken (the arena never frees a node, unlike a
/// pointer tree).
#[derive(Debug)]
pub struct TimerQueue<T> {
    timers: ArenaMap<TimerKey, T>,
    seq: u64,
}

impl<T> Default for TimerQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> TimerQueue<T> {
    /// An empty queue (no storage yet; see [`reserve`](Self::reserve)).
    pub const fn new() -> Self {
        TimerQueue { timers: ArenaMap::new(), seq: 0 }
    }

    /// Makes room for `additional` more timers without allocating later.
    pub fn reserve(&mut self, additional: usize) {
        self.timers.reserve(additional);
    }

    /// Timers that fit without allocating.
    pub fn capacity(&self) -> usize {
        self.timers.capacity()
    }

    /// Arms a timer for `expires_ns`.
    pub fn arm(&mut self, expires_ns: u64, what: T) -> TimerKey {
        let key = TimerKey { expires_ns, seq: self.seq };
        self.seq = self.seq.wrapping_add(1);
        self.timers.insert(key, what);
        key
    }

    /// Cancels a timer; `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        self.timers.remove(&key)
    }

    /// The earliest expiry, if any timer is pending.
    pub fn earliest(&self) -> Option<u64> {
        self.timers.first().map(|(k, _)| k.expires_ns)
    }

    /// Removes and returns the earliest timer if it has expired at `now_ns`.
    pub fn pop_expired(&mut self, now_ns: u64) -> Option<(TimerKey, T)> {
        self.timers.first().filter(|(k, _)| k.expires_ns <= now_ns)?;
        self.timers.pop_first()
    }

    /// Pending timers.
    pub fn len(&self) -> usize {
        self.timers.len()
    }

    /// No timer pending?
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fires_in_expiry_order_fifo_among_equals() {
        let mut q = TimerQueue::new();
        q.arm(30, "c");
        q.arm(10, "a1");
        q.arm(20, "b");
        q.arm(10, "a2");
        assert_eq!(q.earliest(), Some(10));
        assert_eq!(q.pop_expired(9), None, "nothing expired yet");
        let fired: Vec<_> = core::iter::from_fn(|| q.pop_expired(25)).map(|(_, w)| w).collect();
        assert_eq!(fired, ["a1", "a2", "b"]);
        assert_eq!(q.earliest(), Some(30));
    }

    #[test]
    fn reserved_capacity_is_kept() {
        let mut q = TimerQueue::new();
        q.reserve(8);
        let cap = q.capacity();
        for round in 0..100u64 {
            let k = q.arm(round, 0);
            q.arm(round + 5, 1);
            q.cancel(k);
            while q.pop_expired(u64::MAX).is_some() {}
        }
        assert_eq!(q.capacity(), cap, "no reallocation within the reserve");
    }

    #[test]
    fn cancelled_timers_never_fire_and_keys_are_not_reused() {
        let mut q = TimerQueue::new();
        let k = q.arm(5, 1);
        assert_eq!(q.cancel(k), Some(1));
        assert_eq!(q.cancel(k), None);
        let k2 = q.arm(5, 2);
        assert_ne!(k, k2);
        assert_eq!(q.cancel(k), None, "a stale key does not cancel the new timer");
        assert_eq!(q.pop_expired(100).map(|(_, w)| w), Some(2));
        assert!(q.is_empty());
    }

    proptest! {
        #[test]
        fn pops_are_sorted_and_complete(ts in proptest::collection::vec(0u64..1000, 0..200), cancel in proptest::collection::vec(any::<bool>(), 200)) {
            let mut q = TimerQueue::new();
            let keys: Vec<_> = ts.iter().enumerate().map(|(i, &t)| q.arm(t, i)).collect();
            let mut live: Vec<(u64, usize)> = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                if cancel[i] {
                    prop_assert_eq!(q.cancel(*k), Some(i));
                } else {
                    live.push((ts[i], i));
                }
            }
            live.sort();
            let mut out = Vec::new();
            while let Some((k, i)) = q.pop_expired(u64::MAX) {
                out.push((k.expires_ns, i));
            }
            prop_assert_eq!(out, live);
        }
    }
}
