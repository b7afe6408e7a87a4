//! Per-entity load tracking (Linux `kernel/sched/pelt.c`, 6.1–6.12): the geometric series
//! behind `load_avg`, `runnable_avg` and `util_avg`.
//!
//! Time is cut into periods of 1024 µs (a "µs" here is 1024 ns: Linux shifts ns right by 10).
//! A signal's sum is `u_0 + u_1·y + u_2·y² + …`, where `u_i` is what the period `i` periods ago
//! contributed (up to 1024 µs times the weight) and `y^32 = 1/2`: a period's contribution halves
//! every 32 ms. The sum of an always-on signal converges to [`LOAD_AVG_MAX`]; an average is its
//! sum divided by that maximum (less the current period's missing part:
//! [`SchedAvg::divider`]), times the weight.
//!
//! [`SchedAvg::update_load_sum`] is Linux's `___update_load_sum` with `accumulate_sum`'s three
//! segments (the rest of the period the last update was in, whole periods, the start of the
//! current one); [`SchedAvg::update_load_avg`] is `___update_load_avg`. What the kernel feeds
//! them, per entity and per run queue, is Linux's:
//!
//! | signal | `load` | `runnable` | `running` | average's weight |
//! |---|---|---|---|---|
//! | a task's entity | on the run queue (0/1) | on the run queue (0/1) | is `curr` | its weight (`scale_load_down`) |
//! | a group's entity | on the run queue (0/1) | its group's `h_nr_running` | is `curr` | its weight |
//! | a fair run queue | its `load.weight` | `h_nr_running` | has a `curr` | 1 |
//! | RT / DEADLINE on a CPU | running (0/1) | running | running | 1 |
//!
//! Pure integer arithmetic, as Linux does it (the same truncations), so the kernel's numbers
//! equal Linux's for the same inputs.

/// Periods in a half-life: `y^LOAD_AVG_PERIOD = 1/2`.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// The sum of an always-on signal of weight 1 (`1024 · Σ y^n`, as integer decays reach it).
pub const LOAD_AVG_MAX: u64 = 47742;
/// The divider when the current period has just begun.
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// Linux's `SCHED_CAPACITY_SHIFT`: utilization and runnable sums are in units of 1/1024.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// A CPU's full capacity (`SCHED_CAPACITY_SCALE`): the `util_avg` of an always-running task.
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;

/// `y^n · 2^32` for `n` in `0..32` (Linux's `runnable_avg_yN_inv`, `(2^32 − 1) · y^n`
/// truncated; the test recomputes every entry from `y = 0.5^(1/32)`).
pub const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14,
    0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302,
    0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// `val · y^n` (Linux's `decay_load`): whole half-lives by shifting, the rest from the table;
/// 0 beyond 63 half-lives (every `u64` has decayed away by then).
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let (mut val, mut n) = (val, n);
    if n >= LOAD_AVG_PERIOD {
        val >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    ((u128::from(val) * u128::from(RUNNABLE_AVG_YN_INV[n as usize])) >> 32) as u64
}

/// What `periods` boundaries crossed contribute (Linux's `__accumulate_pelt_segments`):
/// `d1` µs that finished the old period, decayed `periods` times; `periods − 1` whole periods
/// (`1024 · Σ_{n=1}^{p−1} y^n`, from the converged sum); `d3` µs of the new period, undecayed.
fn accumulate_pelt_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// One signal's state (Linux's `struct sched_avg`, without `util_est`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// The time (ns) up to which the sums are accounted, a multiple of 1024 ns after the first
    /// update.
    pub last_update_time: u64,
    /// `Σ load·contrib·y^n`.
    pub load_sum: u64,
    /// `Σ runnable·contrib·y^n`, in 1/1024 units.
    pub runnable_sum: u64,
    /// `Σ running·contrib·y^n`, in 1/1024 units (Linux keeps a `u32`: at most
    /// `LOAD_AVG_MAX << 10`).
    pub util_sum: u64,
    /// µs of the current period already accounted (0..1024).
    pub period_contrib: u64,
    /// The averages, as `/proc/PID/sched` prints them (`se.avg.load_avg`, ...).
    pub load_avg: u64,
    /// Average number of runnable entities, in 1/1024 units.
    pub runnable_avg: u64,
    /// Average fraction of time running, in 1/1024 of a CPU.
    pub util_avg: u64,
}

impl SchedAvg {
    /// A new entity's signal as Linux starts a task's (`init_entity_runnable_average`): the
    /// load average at its weight, as if it had always run (`util_avg` then comes from
    /// `post_init_entity_util_avg`, which the caller decides).
    pub fn new_task(weight: u64) -> SchedAvg {
        SchedAvg { load_avg: weight, ..SchedAvg::default() }
    }

    /// Linux's `get_pelt_divider`: `LOAD_AVG_MAX` less the part of the current period not yet
    /// lived.
    pub fn divider(&self) -> u64 {
        PELT_MIN_DIVIDER + self.period_contrib
    }

    /// Accounts the time from `last_update_time` to `now` (ns) with the signal's state over
    /// it (Linux's `___update_load_sum`): `load` (a weight, or 0/1), `runnable` (a count),
    /// `running`. Returns true when a period boundary was crossed (the averages then need
    /// [`update_load_avg`](Self::update_load_avg)). Time going backwards resets the stamp and
    /// accounts nothing; less than 1024 ns accounts nothing yet.
    pub fn update_load_sum(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        let Some(delta) = now.checked_sub(self.last_update_time) else {
            self.last_update_time = now;
            return false;
        };
        let delta = delta >> 10;
        if delta == 0 {
            return false;
        }
        self.last_update_time += delta << 10;
        // Not on the run queue: neither runnable nor running (`___update_load_sum`).
        let (runnable, running) = if load == 0 { (0, false) } else { (runnable, running) };
        self.accumulate_sum(delta, load, runnable, running) != 0
    }

    /// Linux's `accumulate_sum`: decays the sums if period boundaries were crossed, then adds
    /// this update's contribution. Returns the periods crossed.
    fn accumulate_sum(&mut self, delta: u64, load: u64, runnable: u64, running: bool) -> u64 {
        let mut contrib = delta; // no boundary crossed: delta < 1024
        let delta = delta + self.period_contrib;
        let periods = delta / 1024;
        let mut rest = delta;
        if periods != 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            rest = delta % 1024;
            // Only used when load != 0 (then runnable and running may be too).
            if load != 0 {
                contrib = accumulate_pelt_segments(periods, 1024 - self.period_contrib, rest);
            }
        }
        self.period_contrib = rest;
        if load != 0 {
            self.load_sum += load * contrib;
        }
        if runnable != 0 {
            self.runnable_sum += (runnable * contrib) << SCHED_CAPACITY_SHIFT;
        }
        if running {
            self.util_sum += contrib << SCHED_CAPACITY_SHIFT;
        }
        periods
    }

    /// The averages from the sums (Linux's `___update_load_avg`): `load` is the weight the
    /// load average is scaled by (an entity's weight; 1 for a run queue, whose sum already
    /// holds weights).
    pub fn update_load_avg(&mut self, load: u64) {
        let divider = self.divider();
        self.load_avg = load * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
    }

    /// Both steps, as Linux's `__update_load_avg_se` and `__update_load_avg_cfs_rq` do:
    /// returns true if the averages changed.
    pub fn update(&mut self, now: u64, load: u64, runnable: u64, running: bool, avg_weight: u64) -> bool {
        if self.update_load_sum(now, load, runnable, running) {
            self.update_load_avg(avg_weight);
            true
        } else {
            false
        }
    }
}

/// What migrated or dead entities took from a run queue's signal, not yet subtracted (Linux's
/// `cfs_rq->removed`): added by a CPU that does not hold the run queue's lock
/// ([`SchedAvg::removal`]), taken by the queue's next update ([`SchedAvg::apply_removed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Sum of the leavers' `load_avg`.
    pub load_avg: u64,
    /// Sum of their `util_avg`.
    pub util_avg: u64,
    /// Sum of their `runnable_avg`.
    pub runnable_avg: u64,
}

/// `*a = a.saturating_sub(b)`: Linux's `sub_positive` (an average never goes below 0 when
/// the truncations of what is subtracted and what it was part of differ).
fn sub_positive(a: &mut u64, b: u64) {
    *a = a.saturating_sub(b);
}

impl SchedAvg {
    /// Brings a blocked entity (off every queue) to `now` (Linux's `__update_load_avg_blocked_se`):
    /// its sums decay, nothing is added.
    pub fn update_blocked(&mut self, now: u64, weight: u64) -> bool {
        self.update(now, 0, 0, false, weight)
    }

    /// Linux's `post_init_entity_util_avg` for a new fair task placed on a queue whose signal is
    /// `cfs` (at that queue's CPU capacity `cpu_scale`, 1024 here): its utilization starts at
    /// its weight's share of the queue's, at most half the capacity the queue leaves, or that
    /// half on an idle queue; its runnable average equals it.
    pub fn post_init_util(&mut self, cfs: &SchedAvg, weight: u64, cpu_scale: u64) {
        let cap = cpu_scale.saturating_sub(cfs.util_avg) / 2;
        if cap > 0 {
            self.util_avg = if cfs.util_avg != 0 { (cfs.util_avg * weight / (cfs.load_avg + 1)).min(cap) } else { cap };
        }
        self.runnable_avg = self.util_avg;
    }

    /// Attaches an entity's signal to this run queue's (Linux's `attach_entity_load_avg`, 6.12):
    /// the entity's decay window is aligned to the queue's (same `last_update_time` and
    /// `period_contrib`), its sums recomputed from its averages, and both added to the queue's.
    /// The queue must be up to date (updated at the same `now` first).
    pub fn attach(&mut self, se: &mut SchedAvg, se_weight: u64) {
        let divider = self.divider();
        se.last_update_time = self.last_update_time;
        se.period_contrib = self.period_contrib;
        se.util_sum = se.util_avg * divider;
        se.runnable_sum = se.runnable_avg * divider;
        se.load_sum = se.load_avg * divider;
        se.load_sum = if se_weight < se.load_sum { se.load_sum / se_weight } else { 1 };
        // `enqueue_load_avg`
        self.load_avg += se.load_avg;
        self.load_sum += se_weight * se.load_sum;
        self.util_avg += se.util_avg;
        self.util_sum += se.util_sum;
        self.runnable_avg += se.runnable_avg;
        self.runnable_sum += se.runnable_sum;
    }

    /// Detaches an entity's signal from this run queue's (Linux's `detach_entity_load_avg`):
    /// the entity must be up to date at the queue's `last_update_time`. Sums stay at least
    /// their averages times [`PELT_MIN_DIVIDER`], so no sum reaches 0 under a non-zero average.
    pub fn detach(&mut self, se: &SchedAvg, se_weight: u64) {
        // `dequeue_load_avg`
        sub_positive(&mut self.load_avg, se.load_avg);
        sub_positive(&mut self.load_sum, se_weight * se.load_sum);
        self.load_sum = self.load_sum.max(self.load_avg * PELT_MIN_DIVIDER);
        sub_positive(&mut self.util_avg, se.util_avg);
        sub_positive(&mut self.util_sum, se.util_sum);
        self.util_sum = self.util_sum.max(self.util_avg * PELT_MIN_DIVIDER);
        sub_positive(&mut self.runnable_avg, se.runnable_avg);
        sub_positive(&mut self.runnable_sum, se.runnable_sum);
        self.runnable_sum = self.runnable_sum.max(self.runnable_avg * PELT_MIN_DIVIDER);
    }

    /// What an entity leaving a run queue without its lock hands it (Linux's
    /// `remove_entity_load_avg`): first brought, blocked, to the queue's `queue_last_update`
    /// (`sync_entity_load_avg`), then its averages.
    pub fn removal(&mut self, queue_last_update: u64, weight: u64) -> Removed {
        if queue_last_update > self.last_update_time {
            self.update_blocked(queue_last_update, weight);
        }
        Removed { load_avg: self.load_avg, util_avg: self.util_avg, runnable_avg: self.runnable_avg }
    }

    /// Subtracts what left (Linux's `update_cfs_rq_load_avg`, its `removed` part, 6.12): the
    /// averages directly, the sums by the averages times the current divider, never below the
    /// averages times [`PELT_MIN_DIVIDER`].
    pub fn apply_removed(&mut self, r: Removed) {
        let divider = self.divider();
        sub_positive(&mut self.load_avg, r.load_avg);
        sub_positive(&mut self.load_sum, r.load_avg * divider);
        self.load_sum = self.load_sum.max(self.load_avg * PELT_MIN_DIVIDER);
        sub_positive(&mut self.util_avg, r.util_avg);
        sub_positive(&mut self.util_sum, r.util_avg * divider);
        self.util_sum = self.util_sum.max(self.util_avg * PELT_MIN_DIVIDER);
        sub_positive(&mut self.runnable_avg, r.runnable_avg);
        sub_positive(&mut self.runnable_sum, r.runnable_avg * divider);
        self.runnable_sum = self.runnable_sum.max(self.runnable_avg * PELT_MIN_DIVIDER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PERIOD_NS: u64 = 1024 * 1024;

    #[test]
    fn the_table_is_y_to_the_n() {
        let y = 0.5f64.powf(1.0 / 32.0);
        for (n, &v) in RUNNABLE_AVG_YN_INV.iter().enumerate() {
            let want = (4294967295.0 * y.powi(n as i32)) as u32;
            assert_eq!(v, want, "entry {n}");
        }
    }

    #[test]
    fn load_avg_max_is_where_integer_decay_converges() {
        // Linux's sched-pelt.c: max = max·y + 1024 until it stops changing.
        let mut max = 0;
        loop {
            let next = decay_load(max, 1) + 1024;
            if next == max {
                break;
            }
            max = next;
        }
        assert_eq!(max, LOAD_AVG_MAX);
    }

    #[test]
    fn half_life_is_32_periods() {
        // A whole half-life shifts; the table's y^0 entry is (2^32 − 1)/2^32, so one unit goes
        // (Linux's arithmetic, kept).
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_eq!(decay_load(1 << 20, 64), (1 << 18) - 1);
        assert_eq!(decay_load(1 << 20, 16), 741455, "y^16 = 1/√2");
        assert_eq!(decay_load(u64::MAX, 32 * 64), 0);
        assert_eq!(decay_load(1000, 0), 999, "y^0 is (2^32 − 1)/2^32, as in Linux");
    }

    /// An always-running task of weight 1024 reaches util_avg and load_avg near 1024 (Linux's
    /// figures: a spinner's `se.avg.util_avg` reads 1023 or 1024 after a second), and half of
    /// it 32 ms after it stops.
    #[test]
    fn a_spinner_saturates_then_halves() {
        let mut a = SchedAvg::new_task(1024);
        let mut t = 0;
        for _ in 0..1000 {
            t += PERIOD_NS;
            a.update(t, 1, 1, true, 1024);
        }
        assert!(a.util_avg >= 1020 && a.util_avg <= 1024, "{a:?}");
        assert!(a.load_avg >= 1020 && a.load_avg <= 1024, "{a:?}");
        assert!(a.runnable_avg >= 1020 && a.runnable_avg <= 1024, "{a:?}");
        // Blocked for 32 periods: the sums decay (Linux's blocked-load decay, no contribution).
        t += 32 * PERIOD_NS;
        a.update(t, 0, 0, false, 1024);
        assert!((a.util_avg as i64 - 512).abs() <= 4, "{a:?}");
    }

    // LOAD_AVG_MAX (47742) is where integer decays converge; the exact series 1024/(1 − y) is
    // 47788. A closed-form step over many periods (`accumulate_pelt_segments`) carries up to that
    // deficit of 46 units (per unit of weight), short steps carry about one unit of truncation
    // each: the tolerances below are these two, not fitted.
    const DEFICIT: u64 = 46;

    proptest! {
        /// Splitting an interval into many updates gives what one update gives, up to the
        /// truncations of each step (Linux has the same: a signal's value depends a little on
        /// how often it is updated).
        #[test]
        fn split_updates_agree_with_one(
            start in 0u64..(1 << 30),
            steps in proptest::collection::vec(1u64..(50 * PERIOD_NS), 1..40),
            load in 1u64..4096,
            running in any::<bool>(),
        ) {
            let mut split = SchedAvg { last_update_time: start & !1023, ..SchedAvg::default() };
            let mut one = split;
            let mut t = split.last_update_time;
            for s in &steps {
                t += s;
                split.update_load_sum(t, load, 1, running);
            }
            one.update_load_sum(t, load, 1, running);
            prop_assert_eq!(split.last_update_time, one.last_update_time);
            prop_assert_eq!(split.period_contrib, one.period_contrib);
            let units = 2 * DEFICIT + 3 * steps.len() as u64;
            prop_assert!(split.load_sum.abs_diff(one.load_sum) <= load * units, "load {} vs {}", split.load_sum, one.load_sum);
            prop_assert!(split.util_sum.abs_diff(one.util_sum) <= units << 10, "util {} vs {}", split.util_sum, one.util_sum);
        }

        /// Against a reference model in floating point, µs by µs at period granularity:
        /// `sum = Σ contrib_i · y^(periods since i)`, exactly the series PELT approximates.
        #[test]
        fn sums_follow_the_geometric_series(
            steps in proptest::collection::vec((1u64..(20 * PERIOD_NS), any::<bool>()), 1..30),
        ) {
            let y = 0.5f64.powf(1.0 / 32.0);
            let mut a = SchedAvg::default();
            let mut model = 0.0f64; // the load sum of a weight-1 signal
            let mut in_period = 0u64; // µs already in the current period
            let mut t = 0;
            for &(d, on) in &steps {
                t += d;
                let before = a.last_update_time;
                a.update_load_sum(t, u64::from(on), u64::from(on), on);
                // Replay the same µs in the model.
                let mut us = (a.last_update_time - before) >> 10;
                while us > 0 {
                    let take = us.min(1024 - in_period);
                    if on {
                        model += take as f64;
                    }
                    in_period += take;
                    us -= take;
                    if in_period == 1024 {
                        model *= y;
                        in_period = 0;
                    }
                }
            }
            // LOAD_AVG_MAX's deficit (scaled by how full the sum is) and a few units per update.
            let err = (a.load_sum as f64 - model).abs();
            let tol = 2.0 + 3.0 * steps.len() as f64 + DEFICIT as f64 * (model / LOAD_AVG_MAX as f64 + 0.05);
            prop_assert!(err <= tol, "pelt {} model {:.1} (tolerance {:.1})", a.load_sum, model, tol);
        }
    }

    /// A run queue and the tasks attached to it, as the kernel drives them: the queue's own
    /// signal (weights of queued tasks, their count, one running) and each task's, with
    /// migrations by attach and removal.
    #[derive(Clone, Debug)]
    struct Model {
        cfs: [SchedAvg; 2],
        tasks: Vec<(SchedAvg, usize, bool)>, // (signal, queue, runnable)
    }

    const W: u64 = 1024;

    impl Model {
        fn step(&mut self, now: u64) {
            for q in 0..2 {
                let nr = self.tasks.iter().filter(|t| t.1 == q && t.2).count() as u64;
                self.cfs[q].update(now, nr * W, nr, nr > 0, 1);
            }
            for t in &mut self.tasks {
                let running = t.2; // one task per queue runs in the test's schedules
                t.0.update(now, u64::from(t.2), u64::from(t.2), running, W);
            }
        }
    }

    proptest! {
        /// A task's utilization moves with it: after it migrates, the old queue's `util_avg`
        /// falls by the task's and the new one's rises by it (up to the truncations Linux has
        /// too), and nothing goes negative or out of step with its sum.
        #[test]
        fn attach_and_removal_move_a_task_signal(
            run_periods in 1u64..200, idle_periods in 0u64..100, later in 1u64..100,
        ) {
            let mut m = Model { cfs: [SchedAvg::default(); 2], tasks: vec![(SchedAvg::new_task(W), 0, true)] };
            m.cfs[0].attach(&mut m.tasks[0].0, W);
            let mut t = 0;
            t += run_periods * PERIOD_NS;
            m.step(t);
            m.tasks[0].2 = false; // sleeps
            t += idle_periods * PERIOD_NS;
            m.step(t);
            let before = (m.cfs[0].util_avg, m.tasks[0].0.util_avg);
            // Wakes on queue 1: removal from 0 at 0's last update, attach to 1.
            let r = m.tasks[0].0.removal(m.cfs[0].last_update_time, W);
            m.cfs[0].apply_removed(r);
            m.cfs[1].update(t, 0, 0, false, 1);
            let mut se = m.tasks[0].0;
            m.cfs[1].attach(&mut se, W);
            m.tasks[0] = (se, 1, true);
            prop_assert!(m.cfs[0].util_avg <= before.0.saturating_sub(before.1) + 2, "{:?}", m.cfs[0]);
            prop_assert_eq!(m.cfs[1].util_avg, before.1);
            t += later * PERIOD_NS;
            m.step(t);
            for a in m.cfs.iter().chain(m.tasks.iter().map(|t| &t.0)) {
                prop_assert!(a.util_avg <= SCHED_CAPACITY_SCALE, "{:?}", a);
                prop_assert!(a.util_sum >= a.util_avg * PELT_MIN_DIVIDER || a.util_avg == 0, "{:?}", a);
            }
            // The queue the task runs on tracks it: within a few units once attached.
            prop_assert!(m.cfs[1].util_avg.abs_diff(m.tasks[0].0.util_avg) <= 4, "{:?} vs {:?}", m.cfs[1], m.tasks[0].0);
        }

        /// Attach then detach at the same moment leaves a queue's averages as they were.
        #[test]
        fn attach_then_detach_is_identity(util in 0u64..1024, load in 0u64..1024, q_util in 0u64..1024, contrib in 0u64..1024) {
            let mut q = SchedAvg { period_contrib: contrib, util_avg: q_util, load_avg: q_util, runnable_avg: q_util, ..SchedAvg::default() };
            q.util_sum = q.util_avg * q.divider();
            q.load_sum = q.load_avg * q.divider();
            q.runnable_sum = q.runnable_avg * q.divider();
            let before = q;
            let mut se = SchedAvg { util_avg: util, load_avg: load, runnable_avg: util, ..SchedAvg::default() };
            q.attach(&mut se, W);
            q.detach(&se, W);
            prop_assert_eq!((q.util_avg, q.load_avg, q.runnable_avg), (before.util_avg, before.load_avg, before.runnable_avg));
            prop_assert!(q.util_sum >= q.util_avg * PELT_MIN_DIVIDER);
        }
    }

    #[test]
    fn post_init_util_follows_linux() {
        let idle = SchedAvg::default();
        let mut se = SchedAvg::new_task(1024);
        se.post_init_util(&idle, 1024, 1024);
        assert_eq!((se.util_avg, se.runnable_avg), (512, 512), "half the capacity of an idle CPU");
        let busy = SchedAvg { util_avg: 800, load_avg: 2047, ..SchedAvg::default() };
        let mut se = SchedAvg::new_task(1024);
        se.post_init_util(&busy, 1024, 1024);
        assert_eq!(se.util_avg, 112, "800·1024/2048 = 400, capped at (1024 − 800)/2");
        let full = SchedAvg { util_avg: 1024, load_avg: 1024, ..SchedAvg::default() };
        let mut se = SchedAvg::new_task(1024);
        se.post_init_util(&full, 1024, 1024);
        assert_eq!(se.util_avg, 0);
    }
}
