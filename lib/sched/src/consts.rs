//! Scheduler constants with Linux's names and values (include/uapi/linux/sched.h,
//! include/linux/sched/prio.h, kernel/sched/sched.h).
//!
//! Priority numbering (Linux `prio`, lower = more important):
//! `0..=99` real-time (`prio = MAX_RT_PRIO - 1 - rt_priority`), `100..=139` fair
//! (`prio = DEFAULT_PRIO + nice`). User-visible `rt_priority` is `1..=99`, higher = more important.

/// Policy numbers as passed to `sched_setscheduler(2)` / `sched_setattr(2)`.
pub const SCHED_NORMAL: i32 = 0;
/// Real-time first-in first-out.
pub const SCHED_FIFO: i32 = 1;
/// Real-time round-robin.
pub const SCHED_RR: i32 = 2;
/// CPU-bound batch work: fair, but never wakeup-preempts.
pub const SCHED_BATCH: i32 = 3;
// 4 was SCHED_ISO, reserved and never implemented by Linux.
/// Lowest-importance background work (weight [`crate::weight::WEIGHT_IDLEPRIO`]).
pub const SCHED_IDLE: i32 = 5;
/// Linux's deadline class. Cadence does not implement it; setting it fails with EINVAL.
pub const SCHED_DEADLINE: i32 = 6;

/// Number of real-time priority levels (`prio` 0..=99).
pub const MAX_RT_PRIO: i32 = 100;
/// Linux `MAX_DL_PRIO`: deadline tasks have `prio` −1, above every RT priority.
pub const MAX_DL_PRIO: i32 = 0;
/// Highest user-visible `rt_priority` (`sched_get_priority_max(SCHED_FIFO)`).
pub const MAX_USER_RT_PRIO: i32 = MAX_RT_PRIO - 1;
/// Most favourable nice value.
pub const MIN_NICE: i32 = -20;
/// Least favourable nice value.
pub const MAX_NICE: i32 = 19;
/// Number of nice levels (40).
pub const NICE_WIDTH: i32 = MAX_NICE - MIN_NICE + 1;
/// One past the last valid `prio` (140).
pub const MAX_PRIO: i32 = MAX_RT_PRIO + NICE_WIDTH;
/// `prio` of a nice-0 task (120).
pub const DEFAULT_PRIO: i32 = MAX_RT_PRIO + NICE_WIDTH / 2;

/// `sched_attr.sched_flags`: children revert to SCHED_NORMAL / nice 0 on fork.
pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
/// Deadline-class flag (accepted and ignored, as Linux does for non-DL policies).
pub const SCHED_FLAG_RECLAIM: u64 = 0x02;
/// Deadline-class flag (accepted and ignored for non-DL policies).
pub const SCHED_FLAG_DL_OVERRUN: u64 = 0x04;
/// Keep the current policy (sched_setattr).
pub const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
/// Keep the current parameters (sched_setattr).
pub const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
/// Request a minimum utilisation clamp (unsupported in Cadence: EOPNOTSUPP).
pub const SCHED_FLAG_UTIL_CLAMP_MIN: u64 = 0x20;
/// Request a maximum utilisation clamp (unsupported in Cadence: EOPNOTSUPP).
pub const SCHED_FLAG_UTIL_CLAMP_MAX: u64 = 0x40;
/// Both util-clamp bits.
pub const SCHED_FLAG_UTIL_CLAMP: u64 = SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
/// Every flag Linux accepts from user space; anything else is EINVAL.
pub const SCHED_FLAG_ALL: u64 = SCHED_FLAG_RESET_ON_FORK
    | SCHED_FLAG_RECLAIM
    | SCHED_FLAG_DL_OVERRUN
    | SCHED_FLAG_KEEP_POLICY
    | SCHED_FLAG_KEEP_PARAMS
    | SCHED_FLAG_UTIL_CLAMP;

/// Nanoseconds per millisecond.
pub const NSEC_PER_MSEC: u64 = 1_000_000;
/// Nanoseconds per second.
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// Linux `NICE_TO_PRIO`: 120 + nice.
pub const fn nice_to_prio(nice: i32) -> i32 {
    nice + DEFAULT_PRIO
}

/// Linux `PRIO_TO_NICE`: prio - 120.
pub const fn prio_to_nice(prio: i32) -> i32 {
    prio - DEFAULT_PRIO
}

/// Linux `nice_to_rlimit`: maps nice `19..=-20` to the RLIMIT_NICE scale `1..=40`.
pub const fn nice_to_rlimit(nice: i32) -> i64 {
    (MAX_NICE - nice + 1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_values() {
        assert_eq!(MAX_PRIO, 140);
        assert_eq!(DEFAULT_PRIO, 120);
        assert_eq!(NICE_WIDTH, 40);
        assert_eq!(nice_to_prio(-20), 100);
        assert_eq!(nice_to_prio(19), 139);
        assert_eq!(prio_to_nice(120), 0);
        assert_eq!(nice_to_rlimit(19), 1);
        assert_eq!(nice_to_rlimit(-20), 40);
        assert_eq!(SCHED_FLAG_ALL, 0x7f);
    }
}
