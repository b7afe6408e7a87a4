//! A timer queue's ordering, pure (the kernel's per-CPU timer queues wrap it under a lock and
//! program the LAPIC for [`TimerQueue::earliest`]).
//!
//! Invariants: timers fire in expiry order; timers with the same expiry fire in the order they
//! were armed (a per-queue sequence number breaks ties); a cancelled timer never fires; keys
//! are never reused within a queue, so a stale key cannot cancel a newer timer.

use alloc::vec::Vec;

/// Identifies an armed timer (to cancel it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerKey {
    /// Expiry, ns since boot.
    pub expires_ns: u64,
    seq: u64,
}

/// Pending timers carrying a `T` each, ordered by expiry.
///
/// Storage: one `Vec` sorted by key, latest first, so the earliest timer is the last element
/// (expiry is a `pop`) and arming or cancelling is a binary search plus a shift. Nothing is
/// allocated while the queue stays within the capacity given to [`reserve`](Self::reserve):
/// the kernel reserves at boot, because timers are re-armed from interrupt handlers, where the
/// heap must not be taken (a tree would allocate and free nodes as it grows and shrinks).
#[derive(Debug)]
pub struct TimerQueue<T> {
    timers: Vec<(TimerKey, T)>,
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
        TimerQueue { timers: Vec::new(), seq: 0 }
    }

    /// Makes room for `additional` more timers without allocating later.
    pub fn reserve(&mut self, additional: usize) {
        self.timers.reserve(additional);
    }

    /// Timers that fit without allocating.
    pub fn capacity(&self) -> usize {
        self.timers.capacity()
    }

    /// Position of `key` (or where it would go) in the latest-first order.
    fn position(&self, key: &TimerKey) -> Result<usize, usize> {
        self.timers.binary_search_by(|(k, _)| key.cmp(k))
    }

    /// Arms a timer for `expires_ns`.
    pub fn arm(&mut self, expires_ns: u64, what: T) -> TimerKey {
        let key = TimerKey { expires_ns, seq: self.seq };
        self.seq = self.seq.wrapping_add(1);
        let at = self.position(&key).unwrap_or_else(|at| at);
        self.timers.insert(at, (key, what));
        key
    }

    /// Cancels a timer; `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let at = self.position(&key).ok()?;
        Some(self.timers.remove(at).1)
    }

    /// The earliest expiry, if any timer is pending.
    pub fn earliest(&self) -> Option<u64> {
        self.timers.last().map(|(k, _)| k.expires_ns)
    }

    /// Removes and returns the earliest timer if it has expired at `now_ns`.
    pub fn pop_expired(&mut self, now_ns: u64) -> Option<(TimerKey, T)> {
        match self.timers.last() {
            Some((k, _)) if k.expires_ns <= now_ns => self.timers.pop(),
            _ => None,
        }
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
