//! Page-allocator watermarks and the reserve each allocation context may use.
//!
//! # Watermarks (Linux `__setup_per_zone_wmarks`, one zone)
//! * `vm.min_free_kbytes` defaults to `int_sqrt(managed_kbytes × 16)`, clamped to
//!   `[128, 262144]` ([`default_min_free_kbytes`], Linux `calculate_min_free_kbytes`).
//! * `min = min_free_kbytes / 4` pages (4 KiB pages);
//!   `gap = max(min / 4, managed × watermark_scale_factor / 10000)`;
//!   `low = min + gap`, `high = min + 2 × gap` ([`Watermarks::new`]). `vm.watermark_scale_factor`
//!   defaults to 10 (0.1% of memory), range 1..=3000 as in Linux.
//!
//! # Allocation (Linux `__alloc_pages`, `__zone_watermark_ok`)
//! An allocation of `n` pages first tries the **fast path** against `low`; failing that the
//! allocator wakes the reclaim thread (kswapd's role) and tries the **slow path** against
//! `min`; failing that, a context that may block reclaims directly and retries the slow path;
//! then it fails (ENOMEM, never a panic). A check passes when
//! `free − (n − 1) > mark` (Linux: `free_pages -= (1 << order) - 1; if (free_pages <= min)
//! return false`). The mark each context checks ([`mark`]):
//!
//! | context | fast path | slow path |
//! |---|---|---|
//! | task | `low` | `min` |
//! | atomic (interrupt, no blocking) | `low` | `min − min/2 − (min − min/2)/4` (Linux's `GFP_ATOMIC`: `ALLOC_MIN_RESERVE` then `ALLOC_NON_BLOCK`) |
//! | RT task, `vm.rt_alloc_reserve = seed` | `low / 2` | `min / 2` |
//! | RT task, `linux` | `low` | `min − min/2` (`ALLOC_MIN_RESERVE`, Linux 6.3+; 6.1's `ALLOC_HARDER` took a quarter) |
//! | RT task, `off` | as a task | as a task |
//!
//! The seed is 2.6.0's `__alloc_pages`: "We let real-time tasks dip their real-time paws a
//! little deeper into reserves": `local_low >>= 1` in the first pass and `local_min >>= 1` in
//! the second for `rt_task(p)`. The atomic rule is Linux's in every mode (the switch concerns
//! RT tasks only).
//!
//! # Reclaim
//! The reclaim thread runs while `free < high` after being woken below `low`
//! ([`Watermarks::reclaim_target`]); direct reclaim frees what the failing allocation needs
//! plus a batch (Linux `SWAP_CLUSTER_MAX` = 32 pages).

use crate::Invalid;

/// Linux's lower clamp of the default `min_free_kbytes`.
pub const MIN_FREE_KBYTES_FLOOR: u64 = 128;
/// Linux's upper clamp of the default `min_free_kbytes` (6.1: 256 MiB).
pub const MIN_FREE_KBYTES_CEILING: u64 = 262_144;
/// `vm.watermark_scale_factor`'s default (in 1/10000 of memory).
pub const DEFAULT_WATERMARK_SCALE_FACTOR: u64 = 10;
/// Pages direct reclaim frees beyond the allocation's need (Linux `SWAP_CLUSTER_MAX`).
pub const RECLAIM_BATCH: u64 = 32;

/// Integer square root (floor), Linux `int_sqrt`.
pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    // Newton's method from an over-estimate; converges monotonically down to the floor.
    let mut r = 1u64 << (64 - x.leading_zeros()).div_ceil(2);
    loop {
        let next = (r + x / r) / 2;
        if next >= r {
            return r;
        }
        r = next;
    }
}

/// Linux's default `min_free_kbytes` for `managed_pages` of memory:
/// `int_sqrt(managed_kbytes × 16)` clamped to `[128, 262144]`.
pub fn default_min_free_kbytes(managed_pages: u64) -> u64 {
    let kbytes = managed_pages.saturating_mul(crate::PAGE_SIZE / 1024);
    int_sqrt(kbytes.saturating_mul(16)).clamp(MIN_FREE_KBYTES_FLOOR, MIN_FREE_KBYTES_CEILING)
}

/// The three watermarks, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    /// Below it only reserve-using contexts allocate.
    pub min: u64,
    /// Below it the reclaim thread is woken; the fast path's mark.
    pub low: u64,
    /// The reclaim thread stops when free pages reach it.
    pub high: u64,
}

impl Watermarks {
    /// Linux's `__setup_per_zone_wmarks` for one zone of `managed_pages`. Error: a
    /// `watermark_scale_factor` outside `1..=3000`. Like Linux, any `min_free_kbytes` is
    /// taken, even one above memory (every task allocation then fails: a way to study
    /// pressure, not a mistake to refuse).
    pub fn new(managed_pages: u64, min_free_kbytes: u64, watermark_scale_factor: u64) -> Result<Watermarks, Invalid> {
        if !(1..=3000).contains(&watermark_scale_factor) {
            return Err(Invalid("vm.watermark_scale_factor must be 1..3000"));
        }
        let min = min_free_kbytes / (crate::PAGE_SIZE / 1024);
        let gap = (min / 4).max(managed_pages.saturating_mul(watermark_scale_factor) / 10_000);
        Ok(Watermarks { min, low: min.saturating_add(gap), high: min.saturating_add(gap.saturating_mul(2)) })
    }

    /// Pages the reclaim thread should free now: up to `high`, if it was woken (free fell
    /// below `low`) or is already running.
    pub fn reclaim_target(&self, free: u64) -> u64 {
        self.high.saturating_sub(free)
    }

    /// Whether an allocation leaving `free` pages should wake the reclaim thread.
    pub fn wakes_reclaim(&self, free: u64) -> bool {
        free < self.low
    }
}

/// Who allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocContext {
    /// A task that may block (sleep in direct reclaim).
    Task,
    /// A SCHED_FIFO / SCHED_RR task (task context, may block).
    RtTask,
    /// Interrupt context or with interrupts off: may not block.
    Atomic,
}

impl AllocContext {
    /// Whether this context may reclaim directly (block).
    pub fn may_block(self) -> bool {
        !matches!(self, AllocContext::Atomic)
    }
}

/// `vm.rt_alloc_reserve`: how far RT tasks may dip into the reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtReserve {
    /// The 2003 seed: half of `low` in the fast path, half of `min` in the slow path.
    Seed,
    /// Linux 6.3+: `ALLOC_MIN_RESERVE`, half of `min` in the slow path only.
    Linux,
    /// No special treatment.
    Off,
}

impl RtReserve {
    /// The sysctl's spelling.
    pub fn name(self) -> &'static str {
        match self {
            RtReserve::Seed => "seed",
            RtReserve::Linux => "linux",
            RtReserve::Off => "off",
        }
    }

    /// Parses the sysctl's value.
    pub fn parse(s: &str) -> Result<RtReserve, Invalid> {
        match s {
            "seed" => Ok(RtReserve::Seed),
            "linux" => Ok(RtReserve::Linux),
            "off" => Ok(RtReserve::Off),
            _ => Err(Invalid("vm.rt_alloc_reserve must be seed, linux or off")),
        }
    }
}

/// Which check of an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Against `low`, before anything is woken.
    Fast,
    /// Against `min`, after waking the reclaim thread (and after direct reclaim).
    Slow,
}

/// The mark `ctx` checks at `stage` (the table in the module doc).
pub fn mark(wm: &Watermarks, ctx: AllocContext, mode: RtReserve, stage: Stage) -> u64 {
    match (ctx, mode, stage) {
        (AllocContext::RtTask, RtReserve::Seed, Stage::Fast) => wm.low / 2,
        (AllocContext::RtTask, RtReserve::Seed, Stage::Slow) => wm.min / 2,
        (AllocContext::RtTask, RtReserve::Linux, Stage::Slow) => wm.min - wm.min / 2,
        (AllocContext::Atomic, _, Stage::Slow) => {
            let m = wm.min - wm.min / 2;
            m - m / 4
        }
        (_, _, Stage::Fast) => wm.low,
        (_, _, Stage::Slow) => wm.min,
    }
}

/// Whether `n` pages may be taken from `free` at this mark (`free − (n − 1) > mark`).
pub fn passes(free: u64, n: u64, mark: u64) -> bool {
    n > 0 && free >= n && free - (n - 1) > mark
}

/// What the allocator does next for an allocation of `n` pages with `free` pages free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Take the pages (`wake_reclaim`: free falls below `low`, wake the reclaim thread).
    Take {
        /// Whether to wake the reclaim thread.
        wake_reclaim: bool,
    },
    /// Reclaim directly (this many pages), then ask again with `after_reclaim` set.
    Reclaim(u64),
    /// Fail: ENOMEM.
    Fail,
}

/// The allocation decision: fast path, slow path, direct reclaim (once, for a context that
/// may block), failure. `after_reclaim`: this is the retry after direct reclaim.
pub fn decide(wm: &Watermarks, free: u64, n: u64, ctx: AllocContext, mode: RtReserve, after_reclaim: bool) -> Decision {
    let wake = |left: u64| wm.wakes_reclaim(left);
    if !after_reclaim && passes(free, n, mark(wm, ctx, mode, Stage::Fast)) {
        return Decision::Take { wake_reclaim: wake(free - n) };
    }
    if passes(free, n, mark(wm, ctx, mode, Stage::Slow)) {
        return Decision::Take { wake_reclaim: true };
    }
    if ctx.may_block() && !after_reclaim {
        // A pass needs `free - (n - 1) > mark`, that is `free >= mark + n`.
        let need = (mark(wm, ctx, mode, Stage::Slow) + n).saturating_sub(free);
        return Decision::Reclaim(need + RECLAIM_BATCH);
    }
    Decision::Fail
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn int_sqrt_is_the_floor() {
        for x in [0u64, 1, 2, 3, 4, 15, 16, 17, 1 << 40, u64::MAX] {
            let r = int_sqrt(x);
            assert!(r.checked_mul(r).is_some_and(|v| v <= x), "{}", x);
            assert!((r + 1).checked_mul(r + 1).is_none_or(|v| v > x), "{}", x);
        }
    }

    /// Linux's values: 512 MiB → 2896 kB, 1 GiB → 4096 kB, 16 MiB → 512 kB; tiny → 128.
    #[test]
    fn default_min_free_kbytes_matches_linux() {
        let pages = |mib: u64| mib * 256;
        assert_eq!(default_min_free_kbytes(pages(512)), 2896);
        assert_eq!(default_min_free_kbytes(pages(1024)), 4096);
        assert_eq!(default_min_free_kbytes(pages(16)), 512);
        assert_eq!(default_min_free_kbytes(1), 128);
        assert_eq!(default_min_free_kbytes(pages(1 << 30)), 262_144);
    }

    /// 512 MiB, the default: min 724 pages, gap max(181, 131072 × 10 / 10000 = 131) = 181.
    #[test]
    fn watermarks_follow_setup_per_zone_wmarks() {
        let managed = 512 * 256;
        let wm = Watermarks::new(managed, default_min_free_kbytes(managed), 10).unwrap();
        assert_eq!(wm, Watermarks { min: 724, low: 905, high: 1086 });
        // A scale factor of 100 (1%) widens the gap past min/4.
        let wm = Watermarks::new(managed, 2896, 100).unwrap();
        assert_eq!((wm.min, wm.low, wm.high), (724, 724 + 1310, 724 + 2620));
        assert!(Watermarks::new(managed, 2896, 0).is_err());
        assert!(Watermarks::new(managed, 2896, 3001).is_err());
        let all = Watermarks::new(managed, 512 * 1024, 10).unwrap();
        assert_eq!(all.min, managed, "min_free_kbytes = all memory is taken, as in Linux");
    }

    #[test]
    fn rt_modes_dip_as_documented() {
        let wm = Watermarks { min: 800, low: 1000, high: 1200 };
        use AllocContext::*;
        assert_eq!(mark(&wm, Task, RtReserve::Seed, Stage::Fast), 1000);
        assert_eq!(mark(&wm, Task, RtReserve::Seed, Stage::Slow), 800);
        assert_eq!(mark(&wm, RtTask, RtReserve::Seed, Stage::Fast), 500);
        assert_eq!(mark(&wm, RtTask, RtReserve::Seed, Stage::Slow), 400);
        assert_eq!(mark(&wm, RtTask, RtReserve::Linux, Stage::Fast), 1000);
        assert_eq!(mark(&wm, RtTask, RtReserve::Linux, Stage::Slow), 400);
        assert_eq!(mark(&wm, RtTask, RtReserve::Off, Stage::Slow), 800);
        assert_eq!(mark(&wm, Atomic, RtReserve::Off, Stage::Slow), 300);
        assert_eq!(mark(&wm, Atomic, RtReserve::Seed, Stage::Fast), 1000);
    }

    #[test]
    fn passes_follows_zone_watermark_ok() {
        assert!(passes(101, 1, 100));
        assert!(!passes(100, 1, 100), "free == mark fails (free_pages <= min)");
        assert!(passes(104, 4, 100));
        assert!(!passes(103, 4, 100));
        assert!(!passes(3, 4, 0), "more than is free");
        assert!(!passes(10, 0, 0), "nothing to allocate");
    }

    #[test]
    fn decide_walks_fast_slow_reclaim_fail() {
        let wm = Watermarks { min: 800, low: 1000, high: 1200 };
        use AllocContext::*;
        assert_eq!(decide(&wm, 2000, 1, Task, RtReserve::Off, false), Decision::Take { wake_reclaim: false });
        assert_eq!(decide(&wm, 1001, 1, Task, RtReserve::Off, false), Decision::Take { wake_reclaim: false });
        assert_eq!(decide(&wm, 1000, 1, Task, RtReserve::Off, false), Decision::Take { wake_reclaim: true }, "fast path fails at low");
        assert_eq!(decide(&wm, 900, 1, Task, RtReserve::Off, false), Decision::Take { wake_reclaim: true });
        assert_eq!(decide(&wm, 800, 1, Task, RtReserve::Off, false), Decision::Reclaim(1 + RECLAIM_BATCH));
        assert_eq!(decide(&wm, 800, 1, Task, RtReserve::Off, true), Decision::Fail);
        assert_eq!(decide(&wm, 800, 1, Atomic, RtReserve::Off, false), Decision::Take { wake_reclaim: true });
        assert_eq!(decide(&wm, 300, 1, Atomic, RtReserve::Off, false), Decision::Fail, "atomic never reclaims");
        assert_eq!(decide(&wm, 600, 1, RtTask, RtReserve::Seed, false), Decision::Take { wake_reclaim: true });
        assert_eq!(decide(&wm, 600, 1, RtTask, RtReserve::Linux, false), Decision::Take { wake_reclaim: true });
        assert_eq!(decide(&wm, 600, 1, RtTask, RtReserve::Off, false), Decision::Reclaim(201 + RECLAIM_BATCH));
    }

    #[test]
    fn modes_parse_and_print() {
        for m in [RtReserve::Seed, RtReserve::Linux, RtReserve::Off] {
            assert_eq!(RtReserve::parse(m.name()), Ok(m));
        }
        assert!(RtReserve::parse("SEED").is_err());
    }

    proptest! {
        /// Watermarks are ordered, and every reserve-using context's mark is at most a task's
        /// at the same stage; a pass at a mark implies a pass at every lower mark.
        #[test]
        fn marks_are_ordered(managed in 4096u64..(1 << 26), kb in 128u64..65536, scale in 1u64..3000,
                             free in 0u64..(1 << 20), n in 1u64..64) {
            if let Ok(wm) = Watermarks::new(managed, kb, scale) {
                prop_assert!(wm.min <= wm.low && wm.low <= wm.high);
                for mode in [RtReserve::Seed, RtReserve::Linux, RtReserve::Off] {
                    for stage in [Stage::Fast, Stage::Slow] {
                        let task = mark(&wm, AllocContext::Task, mode, stage);
                        for ctx in [AllocContext::RtTask, AllocContext::Atomic] {
                            let m = mark(&wm, ctx, mode, stage);
                            prop_assert!(m <= task);
                            if passes(free, n, task) { prop_assert!(passes(free, n, m)); }
                        }
                    }
                }
                // An RT task never fails where a task succeeds, in any mode.
                for mode in [RtReserve::Seed, RtReserve::Linux, RtReserve::Off] {
                    for after in [false, true] {
                        let t = decide(&wm, free, n, AllocContext::Task, mode, after);
                        let r = decide(&wm, free, n, AllocContext::RtTask, mode, after);
                        let (t_takes, r_takes) = (matches!(t, Decision::Take { .. }), matches!(r, Decision::Take { .. }));
                        prop_assert!(!t_takes || r_takes, "task {:?}, rt {:?}", t, r);
                    }
                }
            }
        }
    }
}
