//! Adaptive poll-before-halt for idle CPUs: Linux's cpuidle `haltpoll` governor
//! (`drivers/cpuidle/governors/haltpoll.c`).
//!
//! Under virtualization a halted vCPU is slow to wake (the host must deliver the IPI and
//! schedule the vCPU thread), so an idle CPU first polls `need_resched` for up to its *poll
//! limit*, then halts. The limit adapts to how long the CPU actually stayed idle (`block_ns`:
//! from entering the idle loop to the wakeup, polling and halting included):
//!
//! * `limit < block_ns <= ceiling`: the wakeup came after the poll but soon enough that a
//!   longer poll would have caught it: grow, `limit = clamp(limit × GROW, GROW_START, ceiling)`;
//! * `block_ns > ceiling`: a long idle period; polling it would only burn (host) CPU: shrink,
//!   `limit = limit / SHRINK`;
//! * otherwise (woken while polling): keep.
//!
//! The ceiling is `kernel.sched_idle_poll_ns` (Linux's `guest_halt_poll_ns`); 0 turns polling
//! off. Invariant: `0 <= limit <= ceiling` after every [`adjust`].

/// Linux `guest_halt_poll_grow`.
pub const GROW: u64 = 2;
/// Linux `guest_halt_poll_shrink`.
pub const SHRINK: u64 = 2;
/// Linux `guest_halt_poll_grow_start` (ns): the first non-zero limit.
pub const GROW_START_NS: u64 = 50_000;
/// Linux's default ceiling `guest_halt_poll_ns` (ns).
pub const DEFAULT_CEILING_NS: u64 = 200_000;

/// The new poll limit after an idle period of `block_ns` (see the module doc).
pub fn adjust(limit_ns: u64, block_ns: u64, ceiling_ns: u64) -> u64 {
    let limit = limit_ns.min(ceiling_ns);
    if limit < block_ns && block_ns <= ceiling_ns {
        limit.saturating_mul(GROW).max(GROW_START_NS).min(ceiling_ns)
    } else if block_ns > ceiling_ns {
        limit / SHRINK
    } else {
        limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_from_start_to_the_ceiling() {
        let mut l = 0;
        l = adjust(l, 60_000, DEFAULT_CEILING_NS);
        assert_eq!(l, GROW_START_NS);
        l = adjust(l, 150_000, DEFAULT_CEILING_NS);
        assert_eq!(l, 100_000);
        l = adjust(l, 150_000, DEFAULT_CEILING_NS);
        assert_eq!(l, 200_000);
        l = adjust(l, 199_000, DEFAULT_CEILING_NS);
        assert_eq!(l, 200_000, "never above the ceiling");
    }

    #[test]
    fn long_idle_shrinks_and_a_caught_wakeup_keeps() {
        assert_eq!(adjust(200_000, 5_000_000, DEFAULT_CEILING_NS), 100_000);
        assert_eq!(adjust(1, 5_000_000, DEFAULT_CEILING_NS), 0);
        assert_eq!(adjust(100_000, 30_000, DEFAULT_CEILING_NS), 100_000, "woken while polling");
    }

    #[test]
    fn ceiling_zero_means_never_poll() {
        for (l, b) in [(0, 0), (0, 10), (50_000, 10), (200_000, 1_000_000)] {
            assert_eq!(adjust(l, b, 0), 0);
        }
    }

    #[test]
    fn limit_stays_within_the_ceiling() {
        let mut l = 0u64;
        let mut x = 12345u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ceiling = x % 400_000;
            l = adjust(l, (x >> 20) % 1_000_000, ceiling);
            assert!(l <= ceiling);
        }
    }
}
