//! RT throttling bandwidth of one run queue (Linux `struct rt_rq`'s `rt_time` /
//! `rt_throttled` and the `rt_period_timer` of `kernel/sched/rt.c`).
//!
//! **Contract**: RT tasks of a run queue may run at most `runtime` ns per `period` ns
//! (`kernel.sched_rt_runtime_us` / `kernel.sched_rt_period_us`; no runtime = no throttling).
//! The kernel calls [`RtBandwidth::account`] with every slice of RT execution and
//! [`RtBandwidth::update`] at every accounting point and tick; `update` says when the
//! throttled state changed (the caller reschedules).
//!
//! **Formulas** (`do_sched_rt_period_timer`, `sched_rt_runtime_exceeded`):
//! * at each period boundary crossed, `rt_time -= min(rt_time, runtime)` per period;
//! * throttled  ⇔ `rt_time >= runtime` (and `runtime < period`: a full budget never throttles);
//! * unthrottled once a boundary brings `rt_time` below `runtime`.
//!
//! **Period phase**: like Linux's period timer, the period is *inactive* while the queue has
//! no RT task and no `rt_time` left (the timer returns "idle" and stops), and restarts at the
//! first RT activity after that (`start_rt_bandwidth` forwards the timer to now). So an RT
//! task that starts on a quiet CPU gets its throttled window `runtime` after it started, not
//! at whatever phase an earlier RT task left behind.

/// Per-run-queue RT bandwidth state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtBandwidth {
    /// RT execution charged in the current period (carried over, minus `runtime` per period).
    pub rt_time: u64,
    /// Start of the current period; `None` while the period is inactive.
    pub period_start: Option<u64>,
    /// RT tasks of this queue may not run.
    pub throttled: bool,
}

impl RtBandwidth {
    /// A quiet queue: nothing charged, period inactive.
    pub const fn new() -> Self {
        Self { rt_time: 0, period_start: None, throttled: false }
    }

    /// Charges `delta_ns` of RT execution.
    pub fn account(&mut self, delta_ns: u64) {
        self.rt_time = self.rt_time.saturating_add(delta_ns);
    }

    /// Advances the period to `now_ns` and (un)throttles. `runtime_ns = None` turns
    /// throttling off (and forgets the charge); `rt_queued` says whether the queue has RT
    /// tasks. Returns true if `throttled` changed.
    pub fn update(&mut self, now_ns: u64, runtime_ns: Option<u64>, period_ns: u64, rt_queued: bool) -> bool {
        let was = self.throttled;
        let Some(runtime) = runtime_ns else {
            *self = Self::new();
            return was;
        };
        let period = period_ns.max(1);
        match self.period_start {
            None if self.rt_time == 0 && !rt_queued => return false,
            None => self.period_start = Some(now_ns),
            Some(start) => {
                let elapsed = now_ns.saturating_sub(start);
                if elapsed >= period {
                    let periods = elapsed / period;
                    self.period_start = Some(start + periods * period);
                    self.rt_time = self.rt_time.saturating_sub(runtime.saturating_mul(periods));
                }
            }
        }
        self.throttled = self.rt_time >= runtime && runtime < period;
        if !self.throttled && self.rt_time == 0 && !rt_queued {
            // Nothing left to time: the period timer goes idle.
            self.period_start = None;
        }
        self.throttled != was
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const PERIOD: u64 = 1000 * MS;
    const RUNTIME: u64 = 950 * MS;

    /// Runs an RT hog (always queued) beside a fair task for `ms` from `start`, in 1 ms
    /// ticks; returns the ms the fair task got.
    fn fair_ms_beside_hog(bw: &mut RtBandwidth, start: u64, ms: u64) -> u64 {
        let mut fair = 0;
        for i in 0..ms {
            let now = start + i * MS;
            bw.update(now, Some(RUNTIME), PERIOD, true);
            if bw.throttled {
                fair += 1;
            } else {
                bw.account(MS);
            }
        }
        fair
    }

    #[test]
    fn hog_gets_runtime_per_period_and_fair_the_rest() {
        let mut bw = RtBandwidth::new();
        let fair = fair_ms_beside_hog(&mut bw, 5 * MS, 10_000);
        assert!((495..=505).contains(&fair), "fair got {} ms of 10 s", fair);
    }

    #[test]
    fn period_restarts_when_rt_activity_resumes() {
        let mut bw = RtBandwidth::new();
        // An earlier RT task ran 300 ms from t = 0 and left.
        fair_ms_beside_hog(&mut bw, 0, 300);
        // Quiet: the charge decays at the next boundary and the period goes idle.
        assert!(!bw.update(1500 * MS, Some(RUNTIME), PERIOD, false));
        assert_eq!((bw.rt_time, bw.period_start), (0, None));
        // A hog starting at t = 5.5 s is throttled 950 ms later, whole windows each period:
        // 2 s of it give the fair task exactly two windows.
        let start = 5500 * MS;
        let fair = fair_ms_beside_hog(&mut bw, start, 2000);
        assert_eq!(fair, 100);
        assert_eq!(bw.period_start, Some(start + PERIOD), "the period is phased to the hog");
    }

    #[test]
    fn carry_over_is_charged_against_the_next_period() {
        let mut bw = RtBandwidth::new();
        bw.account(1);
        bw.update(0, Some(RUNTIME), PERIOD, true);
        bw.account(RUNTIME + 30 * MS);
        assert!(bw.update(10 * MS, Some(RUNTIME), PERIOD, true));
        assert!(bw.throttled);
        // Boundary: 980 ms - 950 ms = 30 ms left, below the runtime: unthrottled.
        assert!(bw.update(PERIOD, Some(RUNTIME), PERIOD, true));
        assert_eq!(bw.rt_time, 30 * MS + 1);
    }

    #[test]
    fn full_budget_or_no_runtime_never_throttles() {
        let mut bw = RtBandwidth::new();
        bw.account(5 * PERIOD);
        assert!(!bw.update(1, Some(PERIOD), PERIOD, true));
        bw.account(5 * PERIOD);
        bw.update(2, Some(RUNTIME), PERIOD, true);
        assert!(bw.throttled);
        // sched_rt_runtime_us = -1: unthrottled at once, the charge forgotten.
        assert!(bw.update(3, None, PERIOD, true));
        assert_eq!(bw, RtBandwidth::new());
    }
}
