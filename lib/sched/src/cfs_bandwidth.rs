//! CFS bandwidth control of a task group (Linux `struct cfs_bandwidth` and the per-CPU
//! `cfs_rq->runtime_remaining` of `kernel/sched/fair.c`): `cpu.max` / `cpu.cfs_quota_us`.
//!
//! **Contract.** A group with a quota may run at most `quota` ns of CPU time (summed over
//! CPUs) per `period`, plus what `burst` lets it save from earlier periods. The group's
//! [`Pool`] holds the runtime of the current period; each CPU's queue of the group holds a
//! [`Local`] part, taken from the pool in slices (`kernel.sched_cfs_bandwidth_slice_us`,
//! 5 ms). The kernel charges every ns the group's tasks run to the `Local` of every group on
//! the path with a quota ([`Local::account`]); a `Local` that has run out and can get nothing
//! more from the pool is *throttled*: its queue leaves the parent queue until a later period
//! refills the pool ([`Pool::advance`]) and [`Local::try_unthrottle`] gets it runtime.
//!
//! **Formulas** (Linux 6.1):
//! * refill at each period boundary crossed: `runtime = min(runtime + quota, quota + burst)`
//!   (`__refill_cfs_bandwidth_runtime`; without burst, `runtime = quota`); runtime used
//!   beyond the pool's (`runtime_snap − runtime` > 0 after the refill) counts as a burst;
//! * a `Local` asks for `slice − remaining` (`__assign_cfs_rq_runtime`): an overrun (charge
//!   past zero, at most one accounting interval) is repaid from the next grant, so over many
//!   periods the group gets `quota` per period, not `quota` plus the overruns;
//! * `nr_periods` counts the periods in which the pool was in use (Linux's period timer stops
//!   after a period without a grant and without a throttled queue); `nr_throttled` those of
//!   them that ended with a throttled queue; `throttled_ns` sums, over CPUs, the time each
//!   queue spent throttled.
//!
//! All times are ns, passed in: the crate has no clock.

use crate::errno::Errno;

/// `cpu.max`'s default period (100 ms).
pub const DEFAULT_PERIOD_NS: u64 = 100_000_000;
/// The shortest period and the smallest quota (1 ms, Linux's `min_cfs_quota_period`).
pub const MIN_PERIOD_NS: u64 = 1_000_000;
/// The longest period (1 s, `max_cfs_quota_period`).
pub const MAX_PERIOD_NS: u64 = 1_000_000_000;
/// The largest quota + burst (`max_cfs_runtime`: 2^44 µs).
pub const MAX_RUNTIME_NS: u64 = (1u64 << 44) * 1_000;
/// `kernel.sched_cfs_bandwidth_slice_us`'s default (5 ms).
pub const DEFAULT_SLICE_NS: u64 = 5_000_000;

/// A group's limit: `quota` ns per `period` ns (`None`: unlimited), `burst` ns saved at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Runtime per period (`None`: no limit, `max`).
    pub quota_ns: Option<u64>,
    /// The period.
    pub period_ns: u64,
    /// Unused runtime a period may carry to the next, at most.
    pub burst_ns: u64,
}

impl Default for Limit {
    fn default() -> Self {
        Limit { quota_ns: None, period_ns: DEFAULT_PERIOD_NS, burst_ns: 0 }
    }
}

impl Limit {
    /// Linux's checks (`tg_set_cfs_bandwidth`): EINVAL for a period outside 1 ms..=1 s, a
    /// quota under 1 ms or over `MAX_RUNTIME_NS`, a burst over the quota, or quota + burst
    /// over `MAX_RUNTIME_NS`.
    pub fn new(quota_ns: Option<u64>, period_ns: u64, burst_ns: u64) -> Result<Limit, Errno> {
        if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&period_ns) {
            return Err(Errno::EINVAL);
        }
        if let Some(q) = quota_ns {
            if !(MIN_PERIOD_NS..=MAX_RUNTIME_NS).contains(&q) || burst_ns > q || q + burst_ns > MAX_RUNTIME_NS {
                return Err(Errno::EINVAL);
            }
        } else if burst_ns > MAX_RUNTIME_NS {
            return Err(Errno::EINVAL);
        }
        Ok(Limit { quota_ns, period_ns, burst_ns })
    }

    /// The quota as a fraction of the period, 20-bit fixed point (Linux's `to_ratio`);
    /// `None` without a quota.
    pub fn ratio(&self) -> Option<u64> {
        self.quota_ns.map(|q| ((u128::from(q) << 20) / u128::from(self.period_ns.max(1))) as u64)
    }
}

/// cgroup v1's hierarchical check (Linux's `tg_cfs_schedulable_down`): a group's quota ratio
/// (`own`, [`Limit::ratio`]) may not exceed the ratio in force above it (`above`: its nearest
/// limited ancestor's, `None` if none), EINVAL otherwise. Returns the ratio in force for its
/// children: its own, or, unlimited, the one above. (cgroup v2 has no such check: a child's
/// `cpu.max` over its parent's is allowed, and the parent's throttling bounds it.)
pub fn v1_ratio_below(above: Option<u64>, own: Option<u64>) -> Result<Option<u64>, Errno> {
    match (above, own) {
        (Some(a), Some(o)) if o > a => Err(Errno::EINVAL),
        (a, None) => Ok(a),
        (_, o) => Ok(o),
    }
}

/// A group's runtime for the current period and its statistics (`cpu.stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pool {
    /// The group's limit.
    pub limit: Limit,
    /// Runtime left to hand out this period.
    pub runtime_ns: u64,
    /// `runtime_ns` right after the last refill (Linux's `runtime_snap`).
    snap_ns: u64,
    /// Start of the current period; `None` while inactive (no grant for a whole period).
    period_start: Option<u64>,
    /// A grant was made since the last boundary (Linux's `!cfs_b->idle`).
    used: bool,
    /// Queues of the group throttled now (over CPUs).
    pub nr_throttled_now: u32,
    /// Periods in which the pool was in use (`cpu.stat` `nr_periods`).
    pub nr_periods: u64,
    /// Those of them that ended with a throttled queue.
    pub nr_throttled: u64,
    /// Time queues spent throttled, summed over CPUs.
    pub throttled_ns: u64,
    /// Periods that used more than one quota (saved by burst).
    pub nr_bursts: u64,
    /// Runtime used beyond the quota in those periods.
    pub burst_ns: u64,
}

impl Pool {
    /// A group's pool with `limit`, starting full.
    pub fn new(limit: Limit) -> Pool {
        let full = limit.quota_ns.unwrap_or(0);
        Pool { limit, runtime_ns: full, snap_ns: full, ..Pool::default() }
    }

    /// A new limit (`cpu.max` written): the pool starts full and a new period begins at the
    /// next grant; the statistics stay.
    pub fn set_limit(&mut self, limit: Limit) {
        self.limit = limit;
        self.runtime_ns = limit.quota_ns.unwrap_or(0);
        self.snap_ns = self.runtime_ns;
        self.period_start = None;
        self.used = false;
    }

    /// Has the group a quota?
    pub fn limited(&self) -> bool {
        self.limit.quota_ns.is_some()
    }

    /// Moves to the period holding `now`: one count per boundary crossed while active, one
    /// refill. Returns true if a refill happened (throttled queues may get runtime now).
    pub fn advance(&mut self, now: u64) -> bool {
        let Some(quota) = self.limit.quota_ns else { return false };
        let period = self.limit.period_ns.max(1);
        let Some(start) = self.period_start else { return false };
        let elapsed = now.saturating_sub(start);
        if elapsed < period {
            return false;
        }
        let periods = elapsed / period;
        self.period_start = Some(start + periods * period);
        self.nr_periods += periods;
        if self.nr_throttled_now > 0 {
            self.nr_throttled += periods;
        }
        // One refill per boundary check, however many periods it crossed (Linux's period
        // timer refills once per expiry, overruns or not).
        let before = self.runtime_ns;
        let used = self.snap_ns.saturating_sub(before);
        if used > quota {
            self.nr_bursts += 1;
            self.burst_ns += used - quota;
        }
        self.runtime_ns = before.saturating_add(quota).min(quota.saturating_add(self.limit.burst_ns));
        self.snap_ns = self.runtime_ns;
        // Linux's timer stops after a period with no grant and no throttled queue.
        if !self.used && self.nr_throttled_now == 0 {
            self.period_start = None;
        }
        self.used = false;
        true
    }

    /// Hands out up to `want` ns at `now` (starting the period if inactive). Unlimited: all.
    pub fn grant(&mut self, want: u64, now: u64) -> u64 {
        if !self.limited() {
            return want;
        }
        if self.period_start.is_none() {
            self.period_start = Some(now);
        }
        self.advance(now);
        let got = want.min(self.runtime_ns);
        self.runtime_ns -= got;
        self.used = true;
        got
    }
}

/// One CPU's part of a group's runtime (Linux's `cfs_rq->runtime_remaining`, `throttled`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Local {
    /// Runtime left here; negative after an overrun (repaid from the next grant).
    pub remaining: i64,
    /// Since when this queue is throttled (`None`: it is not).
    pub throttled_since: Option<u64>,
}

impl Local {
    /// Tops `remaining` up to `slice` from the pool (`__assign_cfs_rq_runtime`). True if it
    /// is positive after.
    fn refill(&mut self, pool: &mut Pool, slice: u64, now: u64) -> bool {
        let want = (slice as i64).saturating_sub(self.remaining).max(0) as u64;
        let got = pool.grant(want, now);
        self.remaining = self.remaining.saturating_add(got as i64);
        self.remaining > 0
    }

    /// Charges `delta` ns run here at `now`; takes more from the pool when out. True if this
    /// queue still has runtime (false: it must be throttled, [`Local::throttle`]).
    pub fn account(&mut self, pool: &mut Pool, delta: u64, slice: u64, now: u64) -> bool {
        if !pool.limited() {
            return true;
        }
        self.remaining = self.remaining.saturating_sub(delta.min(i64::MAX as u64) as i64);
        if self.remaining > 0 || self.throttled_since.is_some() {
            return self.remaining > 0;
        }
        self.refill(pool, slice, now)
    }

    /// Whether this queue may run now: runtime left, or more from the pool.
    pub fn has_runtime(&mut self, pool: &mut Pool, slice: u64, now: u64) -> bool {
        !pool.limited() || self.remaining > 0 || self.refill(pool, slice, now)
    }

    /// Throttles this queue at `now` (no-op if it is).
    pub fn throttle(&mut self, pool: &mut Pool, now: u64) {
        if self.throttled_since.is_none() {
            self.throttled_since = Some(now);
            pool.nr_throttled_now += 1;
        }
    }

    /// A throttled queue at `now`: moves the pool to `now`'s period and takes runtime if it
    /// has some. True if the queue is unthrottled (the caller puts it back in its parent).
    pub fn try_unthrottle(&mut self, pool: &mut Pool, slice: u64, now: u64) -> bool {
        let Some(since) = self.throttled_since else { return false };
        if pool.limited() {
            pool.advance(now);
            if !self.refill(pool, slice, now) {
                return false;
            }
        }
        self.throttled_since = None;
        pool.nr_throttled_now = pool.nr_throttled_now.saturating_sub(1);
        pool.throttled_ns += now.saturating_sub(since);
        true
    }

    /// The limit changed (`tg_set_cfs_bandwidth` zeroes every queue's runtime): nothing left
    /// here; a throttled queue is let go at once (the caller puts it back).
    pub fn reset(&mut self, pool: &mut Pool, now: u64) -> bool {
        self.remaining = 0;
        let Some(since) = self.throttled_since.take() else { return false };
        pool.nr_throttled_now = pool.nr_throttled_now.saturating_sub(1);
        pool.throttled_ns += now.saturating_sub(since);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn v1_children_may_not_exceed_the_ratio_above() {
        let half = Limit::new(Some(50 * MS), 100 * MS, 0).unwrap().ratio();
        let quarter = Limit::new(Some(25 * MS), 100 * MS, 0).unwrap().ratio();
        assert_eq!(half, Some(1 << 19));
        // The same ratio at another period is equal, not more.
        assert_eq!(Limit::new(Some(100 * MS), 200 * MS, 0).unwrap().ratio(), half);
        assert_eq!(v1_ratio_below(half, quarter), Ok(quarter));
        assert_eq!(v1_ratio_below(quarter, half), Err(Errno::EINVAL));
        assert_eq!(v1_ratio_below(half, None), Ok(half), "unlimited inherits the ratio above");
        assert_eq!(v1_ratio_below(None, half), Ok(half));
        assert_eq!(v1_ratio_below(half, half), Ok(half));
    }

    #[test]
    fn limits_are_checked_as_linux() {
        assert!(Limit::new(Some(50 * MS), 100 * MS, 0).is_ok());
        assert_eq!(Limit::new(Some(MS / 2), 100 * MS, 0), Err(Errno::EINVAL));
        assert_eq!(Limit::new(Some(50 * MS), MS / 2, 0), Err(Errno::EINVAL));
        assert_eq!(Limit::new(Some(50 * MS), 2_000 * MS, 0), Err(Errno::EINVAL));
        assert_eq!(Limit::new(Some(50 * MS), 100 * MS, 51 * MS), Err(Errno::EINVAL));
        assert!(Limit::new(None, 100 * MS, 0).is_ok());
    }

    /// `cpus` CPUs each running the group's tasks when not throttled, charged every `tick` ns,
    /// for `periods` periods. Returns the runtime each period received (by period index) and
    /// the pool.
    fn simulate(quota: u64, period: u64, burst: u64, cpus: usize, tick: u64, slice: u64, periods: u64) -> (Vec<u64>, Pool) {
        let mut pool = Pool::new(Limit::new(Some(quota), period, burst).unwrap());
        let mut locals = vec![Local::default(); cpus];
        let mut per_period = vec![0u64; periods as usize + 1];
        let mut now = 0;
        while now < periods * period {
            now += tick;
            for l in locals.iter_mut() {
                if l.throttled_since.is_some() {
                    l.try_unthrottle(&mut pool, slice, now);
                    continue;
                }
                // It ran the last tick.
                per_period[((now - 1) / period) as usize] += tick;
                if !l.account(&mut pool, tick, slice, now) {
                    l.throttle(&mut pool, now);
                }
            }
        }
        (per_period, pool)
    }

    proptest! {
        /// Over any run of whole periods, the group gets no more than its quota per period
        /// plus one accounting interval per CPU (the overrun before a throttle, repaid later),
        /// and, when it wants more than its quota, no less than the quota minus that.
        #[test]
        fn no_group_exceeds_its_quota(quota_ms in 1u64..200, period_ms in 1u64..300, cpus in 1usize..8, tick_us in prop::sample::select(vec![250u64, 1000, 4000])) {
            let (period, tick) = (period_ms * MS, tick_us * 1000);
            let quota = (quota_ms * MS).min(period * cpus as u64);
            prop_assume!(Limit::new(Some(quota), period, 0).is_ok() && tick <= period);
            let periods = 20;
            let (per_period, pool) = simulate(quota, period, 0, cpus, tick, DEFAULT_SLICE_NS, periods);
            let total: u64 = per_period.iter().sum();
            let slack = cpus as u64 * (tick + DEFAULT_SLICE_NS);
            prop_assert!(total <= quota * periods + slack, "total {} quota {} x {}", total, quota, periods);
            // It always wants more than it has (every CPU busy), unless quota covers all CPUs.
            if quota + slack < period * cpus as u64 {
                prop_assert!(total + slack + quota >= quota * periods, "total {} quota {} x {}", total, quota, periods);
                prop_assert!(pool.nr_throttled > 0);
            }
        }

        /// A throttled queue is unthrottled at the next period boundary, not before.
        #[test]
        fn throttled_queue_runs_next_period(quota_ms in 1u64..50, cpus in 1usize..5) {
            let period = 100 * MS;
            let quota = quota_ms * MS;
            let mut pool = Pool::new(Limit::new(Some(quota), period, 0).unwrap());
            let mut l = Local::default();
            let mut now = 0;
            let tick = MS;
            // Run until throttled.
            loop {
                now += tick;
                if !l.account(&mut pool, tick * cpus as u64, DEFAULT_SLICE_NS, now) {
                    l.throttle(&mut pool, now);
                    break;
                }
                prop_assert!(now < period, "never throttled");
            }
            // The period started at the first grant (the first tick), as Linux's timer starts
            // at the group's first activity.
            let boundary = tick + ((now - tick) / period + 1) * period;
            prop_assert!(!l.try_unthrottle(&mut pool, DEFAULT_SLICE_NS, boundary - 1));
            // The overrun may need more than one period's quota to repay only if it exceeds
            // the quota; with one charge of at most cpus ms over, the first refill covers it.
            if (tick * cpus as u64) < quota {
                prop_assert!(l.try_unthrottle(&mut pool, DEFAULT_SLICE_NS, boundary));
                prop_assert!(l.throttled_since.is_none() && l.remaining > 0);
                prop_assert!(pool.throttled_ns > 0 && pool.nr_periods >= 1);
            }
        }
    }

    #[test]
    fn fifty_percent_of_one_cpu_with_four_spinners() {
        let (per_period, pool) = simulate(50 * MS, 100 * MS, 0, 4, MS, DEFAULT_SLICE_NS, 100);
        let total: u64 = per_period.iter().sum();
        let share = total as f64 / (100.0 * 100.0 * MS as f64);
        assert!((share - 0.5).abs() < 0.01, "share {}", share);
        assert!(pool.nr_throttled >= 99 && pool.nr_periods >= 99, "{:?}", pool);
    }

    #[test]
    fn burst_saves_unused_quota() {
        let mut pool = Pool::new(Limit::new(Some(10 * MS), 100 * MS, 10 * MS).unwrap());
        assert_eq!(pool.grant(MS, 0), MS);
        pool.advance(100 * MS);
        assert_eq!(pool.runtime_ns, 19 * MS); // 9 left + 10, capped at 20
        pool.advance(200 * MS);
        assert_eq!(pool.runtime_ns, 20 * MS);
    }
}
