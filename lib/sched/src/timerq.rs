//! A timer queue's ordering, pure (the kernel's per-CPU timer queues wrap it under a lock and
//! program the LAPIC for [`TimerQueue::earliest`]).
//!
//! Invariants: timers fire in expiry order; timers with the same expiry fire in the order they
//! were armed (a per-queue sequence number breaks ties); a cancelled timer never fires; keys
//! are never reused within a queue, so a stale key cannot cancel a newer timer.

use alloc::collections::BTreeMap;

/// Identifies an armed timer (to cancel it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerKey {
    /// Expiry, ns since boot.
    pub expires_ns: u64,
    seq: u64,
}

/// Pending timers carrying a `T` each, ordered by expiry.
#[derive(Debug)]
pub struct TimerQueue<T> {
    timers: BTreeMap<TimerKey, T>,
    seq: u64,
}

impl<T> Default for TimerQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> TimerQueue<T> {
    /// An empty queue.
    pub const fn new() -> Self {
        TimerQueue { timers: BTreeMap::new(), seq: 0 }
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
        self.timers.keys().next().map(|k| k.expires_ns)
    }

    /// Removes and returns the earliest timer if it has expired at `now_ns`.
    pub fn pop_expired(&mut self, now_ns: u64) -> Option<(TimerKey, T)> {
        match self.timers.first_key_value() {
            Some((k, _)) if k.expires_ns <= now_ns => self.timers.pop_first(),
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
