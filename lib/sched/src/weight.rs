//! Load weights: Linux's nice-to-weight tables and the virtual-time conversion.
//!
//! Each nice step changes CPU share by ~10% relative to a competitor, so consecutive
//! weights differ by a factor of ~1.25 (`sched_prio_to_weight`, kernel/sched/core.c).
//! `sched_prio_to_wmult[i] ≈ 2^32 / sched_prio_to_weight[i]` (within 1) are the precomputed
//! inverses Linux uses to avoid divisions; they are provided for completeness.
//!
//! Virtual time: an entity of weight `w` that runs `delta` ns advances its vruntime by
//! `calc_delta_fair(delta, w) = delta * NICE_0_LOAD / w` (exact integer division through
//! a `u128` intermediate, saturating at `u64::MAX`; no overflow for any input).

use crate::consts::{MAX_NICE, MIN_NICE};

/// Weight of a nice-0 task; the unit of virtual time.
pub const NICE_0_LOAD: u64 = 1024;
/// Weight of a SCHED_IDLE task (Linux `WEIGHT_IDLEPRIO`), below nice 19's 15.
pub const WEIGHT_IDLEPRIO: u64 = 3;
/// Smallest group weight (Linux `MIN_SHARES`).
pub const MIN_SHARES: u64 = 2;
/// Largest group weight (Linux `MAX_SHARES`, unscaled).
pub const MAX_SHARES: u64 = 1 << 18;

/// Linux `sched_prio_to_weight`, indexed by `nice + 20`.
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    /* -20 */ 88761, 71755, 56483, 46273, 36291, /* -15 */ 29154, 23254, 18705, 14949, 11916, /* -10 */ 9548, 7620, 6100,
    4904, 3906, /*  -5 */ 3121, 2501, 1991, 1586, 1277, /*   0 */ 1024, 820, 655, 526, 423, /*   5 */ 335, 272, 215, 172,
    137, /*  10 */ 110, 87, 70, 56, 45, /*  15 */ 36, 29, 23, 18, 15,
];

/// Linux `sched_prio_to_wmult` (`≈ 2^32 / weight`), indexed by `nice + 20`.
pub const SCHED_PRIO_TO_WMULT: [u32; 40] = [
    /* -20 */ 48388, 59856, 76040, 92818, 118348, /* -15 */ 147320, 184698, 229616, 287308, 360437, /* -10 */ 449829,
    563644, 704093, 875809, 1099582, /*  -5 */ 1376151, 1717300, 2157191, 2708050, 3363326, /*   0 */ 4194304, 5237765, 6557202,
    8165337, 10153587, /*   5 */ 12820798, 15790321, 19976592, 24970740, 31350126, /*  10 */ 39045157, 49367440, 61356676,
    76695844, 95443717, /*  15 */ 119304647, 148102320, 186737708, 238609294, 286331153,
];

/// Weight of a fair task with the given nice value. Out-of-range nice values are
/// clamped to `[MIN_NICE, MAX_NICE]` (callers validate first; this never panics).
pub const fn nice_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[nice_index(nice)] as u64
}

/// Inverse weight (`2^32 / weight`) for the given nice value, clamped like [`nice_to_weight`].
pub const fn nice_to_wmult(nice: i32) -> u64 {
    SCHED_PRIO_TO_WMULT[nice_index(nice)] as u64
}

const fn nice_index(nice: i32) -> usize {
    let n = if nice < MIN_NICE {
        MIN_NICE
    } else if nice > MAX_NICE {
        MAX_NICE
    } else {
        nice
    };
    (n - MIN_NICE) as usize
}

/// Virtual runtime for `delta` ns of real execution at `weight`:
/// `delta * NICE_0_LOAD / weight`. A weight of 0 is treated as 1 (never divides by zero).
pub const fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        return delta;
    }
    let w = if weight == 0 { 1 } else { weight };
    let v = (delta as u128) * (NICE_0_LOAD as u128) / (w as u128);
    if v > u64::MAX as u128 {
        u64::MAX
    } else {
        v as u64
    }
}

/// Weight a task group's entity gets in one CPU's parent queue (Linux `calc_group_shares`
/// without the PELT terms): `tg_shares * cfs_rq_load / tg_load`, clamped to
/// `[MIN_SHARES, tg_shares]`. `tg_load` is the group's load summed over all CPUs,
/// `cfs_rq_load` the part of it on this CPU. Like Linux, `tg_load` is first raised to at
/// least `cfs_rq_load` (the global sum may lag the local value); an idle group
/// (`tg_load == 0`) computes 0 and is clamped up to `MIN_SHARES`, as in Linux.
pub const fn calc_group_shares(tg_shares: u64, tg_load: u64, cfs_rq_load: u64) -> u64 {
    let tg_load = if tg_load < cfs_rq_load { cfs_rq_load } else { tg_load };
    // All of the group's load on this CPU (the common case of a group on one CPU): the whole
    // shares, without the 128-bit division (which costs a library call).
    let shares = if tg_load == 0 {
        0
    } else if tg_load == cfs_rq_load {
        tg_shares as u128
    } else {
        (tg_shares as u128) * (cfs_rq_load as u128) / (tg_load as u128)
    };
    let shares = if shares > tg_shares as u128 { tg_shares } else { shares as u64 };
    if shares < MIN_SHARES {
        MIN_SHARES
    } else {
        shares
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_endpoints() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        assert_eq!(nice_to_weight(5), 335);
        assert_eq!(nice_to_weight(-100), 88761);
        assert_eq!(nice_to_weight(100), 15);
        assert_eq!(nice_to_wmult(0), 1 << 22);
    }

    #[test]
    fn wmult_is_inverse_weight() {
        for i in 0..40 {
            let w = SCHED_PRIO_TO_WEIGHT[i] as u64;
            // Linux's table is 2^32 / weight rounded either way (historical), never off by 1+.
            let exact = (1u64 << 32) as f64 / w as f64;
            assert!((SCHED_PRIO_TO_WMULT[i] as f64 - exact).abs() < 1.0, "index {i}");
        }
    }

    #[test]
    fn weights_step_about_ten_percent() {
        for i in 1..40 {
            let ratio = SCHED_PRIO_TO_WEIGHT[i - 1] as f64 / SCHED_PRIO_TO_WEIGHT[i] as f64;
            assert!((1.15..1.35).contains(&ratio), "index {i}: {ratio}");
        }
    }

    #[test]
    fn delta_fair() {
        assert_eq!(calc_delta_fair(1000, 1024), 1000);
        assert_eq!(calc_delta_fair(1000, 2048), 500);
        assert_eq!(calc_delta_fair(1000, 0), 1_024_000);
        assert_eq!(calc_delta_fair(u64::MAX, 1), u64::MAX);
        assert_eq!(calc_delta_fair(u64::MAX, 88761), ((u64::MAX as u128) * 1024 / 88761) as u64);
    }

    #[test]
    fn group_shares() {
        // Whole group on this CPU: full shares.
        assert_eq!(calc_group_shares(1024, 2048, 2048), 1024);
        // Half of the group's load here: half the shares.
        assert_eq!(calc_group_shares(1024, 2048, 1024), 512);
        // Tiny local load: clamped up to MIN_SHARES.
        assert_eq!(calc_group_shares(1024, 1 << 30, 1), MIN_SHARES);
        // Stale global sum smaller than local load: treated as equal.
        assert_eq!(calc_group_shares(1024, 10, 3000), 1024);
        // Idle group: Linux computes 0 and clamps to MIN_SHARES.
        assert_eq!(calc_group_shares(1024, 0, 0), MIN_SHARES);
        // Overflow-free for extreme inputs.
        assert_eq!(calc_group_shares(u64::MAX, u64::MAX, u64::MAX), u64::MAX);
    }
}
