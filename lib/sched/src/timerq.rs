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

/// Moves a periodic timer's expiry past `now` (Linux's `hrtimer_forward`): the new expiry, the
/// first `expires + k * interval` after `now`, and `k`, the periods added (0 when `expires` is
/// still ahead or the timer is one-shot, `interval` 0). A timer that fired at `expires` and is
/// forwarded when its owner gets to it has missed `k - 1` periods: its overrun.
pub fn forward(expires: u64, interval: u64, now: u64) -> (u64, u64) {
    if interval == 0 || expires > now {
        return (expires, 0);
    }
    let k = (now - expires) / interval + 1;
    (expires.saturating_add(k.saturating_mul(interval)), k)
}

/// The first point of the grid `grid + k * period` (k ≥ 0) at or after `at`: where a stopped
/// periodic tick that must fire once by `at` is armed, so it stays on its period's phase
/// (`grid` when `at` is not after it; saturates; `period` 0 counts as 1).
pub fn align_up(grid: u64, period: u64, at: u64) -> u64 {
    if at <= grid {
        return grid;
    }
    let period = period.max(1);
    let k = (at - grid).div_ceil(period);
    grid.saturating_add(k.saturating_mul(period))
}

/// Passes a timer interrupt makes over its expired timers before it gives up on catching up
/// (Linux's `hrtimer_interrupt`: three tries).
pub const INTERRUPT_PASSES: u32 = 3;

/// Longest delay a timer interrupt that could not catch up puts before the next one (Linux's
/// 100 ms).
pub const MAX_HANG_DELAY_NS: u64 = 100_000_000;

/// A timer interrupt ran its passes from `entry_ns` to `now_ns` and timers were still due: how
/// long the next timer interrupt waits (Linux's hang protection in `hrtimer_interrupt`): as
/// long as this one took, so the CPU spends at least half its time outside timer interrupts,
/// at most [`MAX_HANG_DELAY_NS`].
pub fn hang_delay_ns(entry_ns: u64, now_ns: u64) -> u64 {
    now_ns.saturating_sub(entry_ns).min(MAX_HANG_DELAY_NS)
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

    #[test]
    fn forward_moves_past_now_and_counts_the_periods() {
        assert_eq!(forward(100, 10, 50), (100, 0), "not yet due");
        assert_eq!(forward(100, 0, 500), (100, 0), "one-shot");
        assert_eq!(forward(100, 10, 100), (110, 1), "due now: one period");
        assert_eq!(forward(100, 10, 135), (140, 4));
        assert_eq!(forward(100, 1, u64::MAX), (u64::MAX, u64::MAX - 99), "saturates");
    }

    #[test]
    fn align_up_keeps_the_phase() {
        assert_eq!(align_up(100, 10, 50), 100, "before the grid point");
        assert_eq!(align_up(100, 10, 100), 100);
        assert_eq!(align_up(100, 10, 101), 110);
        assert_eq!(align_up(100, 10, 130), 130);
        assert_eq!(align_up(100, 0, 105), 105, "period 0 counts as 1");
        assert_eq!(align_up(u64::MAX - 5, 10, u64::MAX), u64::MAX, "saturates");
    }

    #[test]
    fn hang_delay_is_the_time_taken_up_to_100_ms() {
        assert_eq!(hang_delay_ns(1_000, 5_000), 4_000);
        assert_eq!(hang_delay_ns(0, 10_000_000_000), MAX_HANG_DELAY_NS);
        assert_eq!(hang_delay_ns(5, 1), 0);
    }

    proptest! {
        #[test]
        fn forward_lands_in_the_first_period_after_now(expires in 0u64..1 << 40, interval in 1u64..1 << 20, now in 0u64..1 << 41) {
            let (next, k) = forward(expires, interval, now);
            prop_assert!(next > now || (expires > now && next == expires));
            prop_assert_eq!(next, expires + k * interval);
            if k > 0 {
                prop_assert!(next - interval <= now, "not a period too far");
            }
        }

        #[test]
        fn align_up_is_the_first_grid_point_at_or_after(grid in 0u64..1 << 40, period in 1u64..1 << 20, at in 0u64..1 << 41) {
            let p = align_up(grid, period, at);
            prop_assert!(p >= at && p >= grid);
            prop_assert_eq!((p - grid) % period, 0);
            prop_assert!(p == grid || p - period < at, "not a period too far");
        }

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
