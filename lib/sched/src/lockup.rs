//! Lockup detectors' verdicts (Linux `kernel/watchdog.c` soft lockup, `kernel/hung_task.c`),
//! pure: the kernel gathers timestamps and counts, these functions decide.
//!
//! * **Soft lockup**: a CPU on which a reschedule has been pending (`need_resched`) for more
//!   than `2 × watchdog_thresh` seconds without the scheduler running: preemption is stuck
//!   (Linux reports it when its per-CPU watchdog thread, woken by a timer, cannot run for that
//!   long). A CPU running one task with nothing else to run, or an RT task starving lower
//!   ones, is not a lockup: nothing asked for a reschedule.
//! * **Hard lockup**: a CPU whose periodic tick stopped (interrupts off) for that long while
//!   the others kept ticking (Linux's NMI watchdog, here checked from another CPU's tick).
//! * **Hung task**: a task that was woken (or preempted) and has not run since, or whose sleep
//!   timer expired and that is still asleep, for `hung_task_timeout_secs`.
//!
//! Host descheduling of vCPUs: emulated time goes on while the host runs other threads, so a
//! descheduled vCPU looks stuck. A soft or hard lockup is reported only if the stuck CPU itself
//! executed at least half the ticks the threshold spans ([`MIN_RUN_FRACTION`]): a vCPU the host
//! did not run ticks far less (its timer interrupts are delivered late, not more often). Hung
//! tasks use a timeout (default 120 s) far beyond any host timeslice.

/// Linux's default `kernel.watchdog_thresh` (s); a soft lockup is reported after twice this.
pub const DEFAULT_WATCHDOG_THRESH_S: u64 = 10;
/// Linux's largest `kernel.watchdog_thresh`.
pub const MAX_WATCHDOG_THRESH_S: u64 = 60;
/// Linux's default `kernel.hung_task_timeout_secs`.
pub const DEFAULT_HUNG_TASK_TIMEOUT_S: u64 = 120;
/// A stuck CPU must have executed at least this fraction (1/n) of the ticks the threshold spans.
pub const MIN_RUN_FRACTION: u64 = 2;

const NSEC_PER_SEC: u64 = 1_000_000_000;

/// Soft- and hard-lockup verdict: `Some(stuck_s)` if a CPU stuck since `since_ns` (a pending
/// reschedule, or its last tick seen by another CPU) is a lockup at `now_ns`: longer than
/// `2 × thresh_s` (0 = detector off) and, while stuck, it executed `ticks_run` ticks of
/// `tick_ns`, at least `1/MIN_RUN_FRACTION` of those the period spans (for a hard lockup pass
/// the ticks the *other* CPUs ran: the stuck one runs none).
pub fn lockup(since_ns: u64, now_ns: u64, thresh_s: u64, ticks_run: u64, tick_ns: u64) -> Option<u64> {
    if thresh_s == 0 || since_ns == 0 || tick_ns == 0 {
        return None;
    }
    let stuck = now_ns.saturating_sub(since_ns);
    let limit = thresh_s.saturating_mul(2).saturating_mul(NSEC_PER_SEC);
    let expected_ticks = limit / tick_ns;
    (stuck > limit && ticks_run.saturating_mul(MIN_RUN_FRACTION) >= expected_ticks).then_some(stuck / NSEC_PER_SEC)
}

/// What a hung-task scan knows about one task (timestamps in ns since boot, 0 = not set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskTimes {
    /// Woken (made runnable) and not switched in since.
    pub woken_at: u64,
    /// Queued, runnable and waiting (preempted, or woken) since.
    pub waiting_since: u64,
    /// Asleep with a timer due at this time.
    pub sleep_deadline: u64,
    /// The task is asleep now.
    pub sleeping: bool,
}

/// Why a task is reported as hung.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hung {
    /// Woken, never run since, for this many seconds (a lost or stuck wakeup).
    WokenNotRun(u64),
    /// Runnable and waiting for this many seconds (starved).
    RunnableNotRun(u64),
    /// Its sleep timer expired this many seconds ago and it is still asleep (a lost timer).
    TimerExpiredStillAsleep(u64),
}

/// How long a runnable fair task of `weight` may wait for its next slice when the fair tasks
/// runnable on its CPU weigh `cpu_weight` in all (itself included): its share of the CPU is
/// `weight / cpu_weight`, so a slice of `base_slice_ns` comes about every
/// `cpu_weight / weight` slices. A wait within this is what the weights give (a nice 19 task,
/// weight 15, beside two nice -20 ones, 88761 each, waits ~11,800 slices: 35 s at 3 ms), not
/// a lost wakeup; the hung-task scan does not report it, as it does not report SCHED_IDLE
/// tasks.
pub fn fair_share_wait_ns(cpu_weight: u64, weight: u64, base_slice_ns: u64) -> u64 {
    (cpu_weight / weight.max(1)).saturating_mul(base_slice_ns)
}

/// Hung-task verdict at `now_ns` with `timeout_s` (0 = detector off).
pub fn hung(t: TaskTimes, now_ns: u64, timeout_s: u64) -> Option<Hung> {
    if timeout_s == 0 {
        return None;
    }
    let limit = timeout_s.saturating_mul(NSEC_PER_SEC);
    let over = |since: u64| (since != 0 && now_ns.saturating_sub(since) > limit).then(|| (now_ns - since) / NSEC_PER_SEC);
    if let Some(s) = over(t.woken_at) {
        return Some(Hung::WokenNotRun(s));
    }
    if let Some(s) = over(t.waiting_since) {
        return Some(Hung::RunnableNotRun(s));
    }
    if t.sleeping {
        if let Some(s) = over(t.sleep_deadline) {
            return Some(Hung::TimerExpiredStillAsleep(s));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: u64 = NSEC_PER_SEC;
    const TICK: u64 = 4_000_000; // hz 250

    #[test]
    fn fair_share_waits_follow_the_weights() {
        let slice = 3_000_000;
        // nice 19 beside two nice -20 tasks: about 35 s between its slices.
        let w = fair_share_wait_ns(15 + 2 * 88761, 15, slice);
        assert!(w > 30 * S && w < 40 * S, "{w}");
        // nice 0 among 100 nice 0 tasks: a third of a second, far below any timeout.
        assert_eq!(fair_share_wait_ns(100 * 1024, 1024, slice), 100 * slice);
        assert_eq!(fair_share_wait_ns(1024, 0, slice), 1024 * slice, "a zero weight counts as 1");
    }

    #[test]
    fn soft_lockup_after_twice_the_threshold_when_the_cpu_ran() {
        let ticks_20s = 20 * S / TICK;
        assert_eq!(lockup(1, 19 * S, 10, ticks_20s, TICK), None, "not yet 20 s");
        assert_eq!(lockup(1, 21 * S, 10, ticks_20s, TICK), Some(20));
        assert_eq!(lockup(0, 100 * S, 10, ticks_20s, TICK), None, "nothing pending");
        assert_eq!(lockup(1, 100 * S, 0, ticks_20s, TICK), None, "detector off");
    }

    #[test]
    fn a_descheduled_vcpu_is_not_a_lockup() {
        let expected = 20 * S / TICK;
        assert_eq!(lockup(1, 30 * S, 10, expected / MIN_RUN_FRACTION - 1, TICK), None);
        assert_eq!(lockup(1, 30 * S, 10, expected / MIN_RUN_FRACTION, TICK), Some(29));
    }

    #[test]
    fn hung_task_reasons_in_order() {
        let t = |woken_at, waiting_since, sleep_deadline, sleeping| TaskTimes { woken_at, waiting_since, sleep_deadline, sleeping };
        let now = 200 * S;
        assert_eq!(hung(t(0, 0, 0, false), now, 120), None);
        assert_eq!(hung(t(10 * S, 10 * S, 0, false), now, 120), Some(Hung::WokenNotRun(190)));
        assert_eq!(hung(t(0, 50 * S, 0, false), now, 120), Some(Hung::RunnableNotRun(150)));
        assert_eq!(hung(t(0, 0, 70 * S, true), now, 120), Some(Hung::TimerExpiredStillAsleep(130)));
        assert_eq!(hung(t(0, 0, 70 * S, false), now, 120), None, "awake: the deadline is stale");
        assert_eq!(hung(t(0, 100 * S, 0, false), now, 120), None, "within the timeout");
        assert_eq!(hung(t(1, 1, 1, true), now, 0), None, "detector off");
    }
}
