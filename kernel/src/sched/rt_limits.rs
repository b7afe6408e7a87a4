//! RT safety nets: the RLIMIT_RTTIME watchdog and RT throttling.
//!
//! **Watchdog** (Zijlstra's "SCHED_FIFO watchdog timer", today's RLIMIT_RTTIME): each task has
//! `RLIMIT_RTTIME` (soft, hard) in µs of CPU an RT task may use without blocking; a wakeup
//! resets the count (`rt_timeout_ns`). At the soft limit the action is
//! `kernel.sched_rt_watchdog_action`: `demote` (default, the seed patch) makes the task
//! SCHED_NORMAL nice 0; `signal` sends SIGXCPU, then again every second of further RT time
//! (Linux). At the hard limit the task is killed (SIGKILL). Detection happens where runtime is
//! accounted (`update_curr`, under the run-queue lock); the action runs at the end of the
//! interrupt (`act_on_current`), where no spin lock is held. Each action is logged and traced.
//!
//! **Throttling** (`kernel.sched_rt_period_us` = 1,000,000, `kernel.sched_rt_runtime_us` =
//! 950,000, −1 = off): per CPU, RT tasks may run at most `runtime` per `period`. When a CPU's
//! `rt_time` exceeds `runtime` its RT class is throttled (picks nothing, so fair tasks run);
//! at each period boundary `rt_time -= runtime` (not below 0) and the class is unthrottled
//! once `rt_time < runtime` (Linux `do_sched_rt_period_timer`). The period goes idle on a
//! CPU with no RT task and nothing charged, and restarts at the next RT activity (Linux's
//! period timer). The arithmetic is `cadence_sched::rt_bandwidth` (host-tested); it is
//! checked at every accounting point and tick, so the error is at most one tick per period.

use super::task::{Task, TaskState, Tid};
use super::{rq_of, RqInner};
use alloc::sync::Arc;
use cadence_sched::Errno;
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};

/// `RLIM_INFINITY`.
pub const RLIM_INFINITY: u64 = u64::MAX;
/// Linux resource number of RLIMIT_RTTIME.
pub const RLIMIT_RTTIME: u32 = 15;

static RT_PERIOD_US: AtomicU64 = AtomicU64::new(1_000_000);
static RT_RUNTIME_US: AtomicI64 = AtomicI64::new(950_000);
/// false = demote (default), true = signal.
static ACTION_SIGNAL: AtomicBool = AtomicBool::new(false);

pub fn rt_period_us() -> u64 {
    RT_PERIOD_US.load(Ordering::Relaxed)
}

pub fn rt_runtime_us() -> i64 {
    RT_RUNTIME_US.load(Ordering::Relaxed)
}

/// `kernel.sched_rt_period_us`: 1..=i32::MAX µs, and not below the runtime (EINVAL).
pub fn set_rt_period_us(us: i64) -> Result<(), Errno> {
    let rt = rt_runtime_us();
    if us <= 0 || us > i32::MAX as i64 || (rt >= 0 && rt > us) {
        return Err(Errno::EINVAL);
    }
    RT_PERIOD_US.store(us as u64, Ordering::Relaxed);
    Ok(())
}

/// `kernel.sched_rt_runtime_us`: −1 (no throttling) or 0..=period (EINVAL otherwise).
pub fn set_rt_runtime_us(us: i64) -> Result<(), Errno> {
    if us < -1 || (us >= 0 && us as u64 > rt_period_us()) {
        return Err(Errno::EINVAL);
    }
    RT_RUNTIME_US.store(us, Ordering::Relaxed);
    Ok(())
}

pub fn watchdog_action_name() -> &'static str {
    if ACTION_SIGNAL.load(Ordering::Relaxed) {
        "signal"
    } else {
        "demote"
    }
}

/// `kernel.sched_rt_watchdog_action=demote|signal`.
pub fn set_watchdog_action(v: &str) -> Result<(), Errno> {
    match v.trim() {
        "demote" => ACTION_SIGNAL.store(false, Ordering::Relaxed),
        "signal" => ACTION_SIGNAL.store(true, Ordering::Relaxed),
        _ => return Err(Errno::EINVAL),
    }
    Ok(())
}

/// Per-task watchdog state (in `Task`).
#[derive(Default)]
pub struct RtWatchdog {
    pub soft_us: AtomicU64,
    pub hard_us: AtomicU64,
    /// RT CPU time since the task last woke (ns).
    pub timeout_ns: AtomicU64,
    /// Next soft threshold in ns (soft, then +1 s after each SIGXCPU).
    next_soft_ns: AtomicU64,
    /// Pending action: bit 0 soft, bit 1 hard.
    pending: AtomicU8,
    /// How many times the watchdog demoted the task.
    pub demotions: AtomicU64,
    /// The soft limit's last crossing (demotion or SIGXCPU) and the hard limit's (the kill).
    pub soft: LimitCrossing,
    pub hard: LimitCrossing,
}

/// When the watchdog saw a limit crossed and when it acted, in the task's RT time (ns).
/// The contract (Linux's, checked at the tick) is that the first accounting step reaching the
/// limit decides, and the action follows before the task runs on. How long that step is
/// depends on when the tick comes: a host that stalls the vCPU makes it longer (the guest's
/// clock runs on while the task's vCPU does not), so tests check which step acted.
#[derive(Default)]
pub struct LimitCrossing {
    /// `timeout_ns` before and after the step that reached the limit.
    pub from_ns: AtomicU64,
    pub to_ns: AtomicU64,
    /// `timeout_ns` when the action was carried out (a task observing its own demotion adds
    /// the time until it looks, which under TCG includes any host stall of its vCPU).
    pub acted_ns: AtomicU64,
}

impl LimitCrossing {
    fn crossed(&self, from: u64, to: u64) {
        self.from_ns.store(from, Ordering::Relaxed);
        self.to_ns.store(to, Ordering::Relaxed);
    }
}

impl RtWatchdog {
    pub fn new() -> Self {
        let w = RtWatchdog::default();
        w.soft_us.store(RLIM_INFINITY, Ordering::Relaxed);
        w.hard_us.store(RLIM_INFINITY, Ordering::Relaxed);
        w.next_soft_ns.store(u64::MAX, Ordering::Relaxed);
        w
    }

    fn limit_ns(us: u64) -> u64 {
        if us == RLIM_INFINITY {
            u64::MAX
        } else {
            us.saturating_mul(1000)
        }
    }

    /// A wakeup: the task blocked, so its count starts over.
    pub(super) fn reset(&self) {
        self.timeout_ns.store(0, Ordering::Relaxed);
        self.next_soft_ns.store(Self::limit_ns(self.soft_us.load(Ordering::Relaxed)), Ordering::Relaxed);
    }
}

/// `prlimit(pid, RLIMIT_RTTIME, new)`: returns the old (soft, hard); sets `new` if given.
/// EINVAL for another resource or soft > hard; ESRCH for no such task.
pub fn prlimit(tid: Tid, resource: u32, new: Option<(u64, u64)>) -> Result<(u64, u64), Errno> {
    let _defer = super::signal::DeferFatal::new();
    if resource != RLIMIT_RTTIME {
        return Err(Errno::EINVAL);
    }
    if let Some((soft, hard)) = new {
        if soft > hard {
            return Err(Errno::EINVAL);
        }
    }
    let t = if tid == 0 { Some(super::current()) } else { super::task::find(tid) };
    let t = t.filter(|t| !t.is_idle && t.state() != TaskState::Dead).ok_or(Errno::ESRCH)?;
    let w = &t.watchdog;
    let old = (w.soft_us.load(Ordering::Relaxed), w.hard_us.load(Ordering::Relaxed));
    if let Some((soft, hard)) = new {
        w.soft_us.store(soft, Ordering::Relaxed);
        w.hard_us.store(hard, Ordering::Relaxed);
        let used = w.timeout_ns.load(Ordering::Relaxed);
        w.next_soft_ns.store(RtWatchdog::limit_ns(soft).max(used), Ordering::Relaxed);
    }
    Ok(old)
}

/// Accounts `delta` ns of RT execution by `curr` on `g` (under the run-queue lock): the
/// watchdog and throttling (the RT class's `update_curr` adds the SCHED_RR quantum). Returns
/// true if the CPU should reschedule.
pub(super) fn account(g: &mut RqInner, curr: &Arc<Task>, delta: u64, now: u64) -> bool {
    let mut resched = false;
    // Watchdog.
    let w = &curr.watchdog;
    let used = w.timeout_ns.fetch_add(delta, Ordering::Relaxed) + delta;
    let hard = RtWatchdog::limit_ns(w.hard_us.load(Ordering::Relaxed));
    if used >= hard {
        if used - delta < hard {
            w.hard.crossed(used - delta, used);
        }
        w.pending.fetch_or(2, Ordering::Relaxed);
        resched = true;
    } else if used >= w.next_soft_ns.load(Ordering::Relaxed) {
        w.soft.crossed(used - delta, used);
        w.pending.fetch_or(1, Ordering::Relaxed);
        // Next SIGXCPU one second of RT time later (Linux).
        w.next_soft_ns.store(used.saturating_add(1_000_000_000), Ordering::Relaxed);
        resched = true;
    }
    // Throttling.
    g.rt_bw.account(delta);
    resched |= check_throttle(g, now);
    resched
}

/// Advances the throttling period and (un)throttles this run queue's RT class. Returns true
/// if what may run here changed.
pub(super) fn check_throttle(g: &mut RqInner, now: u64) -> bool {
    let runtime = rt_runtime_us();
    let runtime = (runtime >= 0).then(|| runtime as u64 * 1000);
    let rt_queued = !g.rt.is_empty();
    let changed = g.rt_bw.update(now, runtime, rt_period_us() * 1000, rt_queued);
    if changed {
        rq_of(g.cpu).rt_throttled.store(g.rt_bw.throttled, Ordering::Relaxed);
        if g.rt_bw.throttled {
            crate::kprintln!("cadence: sched: RT throttling activated on cpu {}", g.cpu);
        }
    }
    changed
}

/// At the end of an interrupt: carry out a watchdog action the accounting flagged for the
/// task now running on this CPU.
pub fn act_on_current() {
    let cpu = crate::percpu::current();
    if !super::rq_of(cpu.cpu_id).ready.load(Ordering::Acquire) {
        return;
    }
    let pending = super::with_current(|t| t.map_or(0, |t| t.watchdog.pending.load(Ordering::Relaxed)));
    if pending == 0 {
        return;
    }
    // The action (a message, a demotion, a kill) runs with interrupts on, as Linux runs task
    // work on the way back to user mode: it may allocate, which must not happen with
    // interrupts off (`mm::atomic_alloc`). Called from an interrupt's exit with preemption
    // enabled; interrupts are off again on return.
    crate::irqflags::enable();
    act_on_current_irqs_on();
    crate::irqflags::disable();
}

fn act_on_current_irqs_on() {
    // Interrupts are on while this holds `me` (and prints, demotes, signals): an interrupt's
    // exit must not end the task from inside this frame, which would never drop `me` (a leaked
    // `Task`: the chaos stress found one in about one run in six, a killed task that had a
    // watchdog action pending). Fatal signals wait until `me` is gone.
    let killed = {
        let _defer = super::signal::DeferFatal::new();
        let me = super::current();
        act_on(&me)
    };
    if killed {
        super::signal::handle_pending_at_irq_exit();
    }
}

/// Carries out `me`'s pending watchdog action; true if it was the kill.
fn act_on(me: &Arc<Task>) -> bool {
    let pending = me.watchdog.pending.swap(0, Ordering::AcqRel);
    let used_ns = me.watchdog.timeout_ns.load(Ordering::Relaxed);
    let used_us = used_ns / 1000;
    if pending & 2 != 0 {
        me.watchdog.hard.acted_ns.store(used_ns, Ordering::Relaxed);
        crate::kprintln!(
            "cadence: watchdog: {} [{}] used {} us of RT time without sleeping: hard RLIMIT_RTTIME, killed",
            me.name,
            me.tid,
            used_us
        );
        super::signal::send(me, super::signal::SIGKILL);
        return true;
    }
    if pending & 1 != 0 && me.class() == super::task::ClassId::Rt {
        me.watchdog.soft.acted_ns.store(used_ns, Ordering::Relaxed);
        if ACTION_SIGNAL.load(Ordering::Relaxed) {
            crate::kprintln!("cadence: watchdog: {} [{}] used {} us of RT time: SIGXCPU", me.name, me.tid, used_us);
            super::signal::send(me, super::signal::SIGXCPU);
        } else {
            crate::kprintln!("cadence: watchdog: {} [{}] used {} us of RT time: demoted to SCHED_OTHER", me.name, me.tid, used_us);
            me.watchdog.demotions.fetch_add(1, Ordering::Relaxed);
            super::api::demote_to_normal(me);
        }
    }
    false
}

fn fmt_limit(v: u64) -> alloc::string::String {
    if v == RLIM_INFINITY {
        "unlimited".into()
    } else {
        alloc::format!("{}", v)
    }
}

fn parse_limit(s: &str) -> Result<u64, alloc::string::String> {
    if s == "unlimited" || s == "-1" {
        return Ok(RLIM_INFINITY);
    }
    s.parse::<u64>().map_err(|_| alloc::format!("invalid limit '{}'", s))
}

/// The shell's `prlimit` (util-linux syntax, RLIMIT_RTTIME only):
/// `prlimit --pid PID [--rttime=SOFT[:HARD]]` (µs; `unlimited` allowed; `SOFT:` or `:HARD`
/// keep the other value), printing util-linux's table.
pub fn cmd_prlimit(args: &[&str]) -> Result<(), alloc::string::String> {
    let mut pid: Option<Tid> = None;
    let mut new: Option<(Option<u64>, Option<u64>)> = None;
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        if a == "--pid" || a == "-p" {
            let v = it.next().ok_or("--pid needs a value")?;
            pid = Some(v.parse().map_err(|_| alloc::format!("invalid pid '{}'", v))?);
        } else if let Some(v) = a.strip_prefix("--pid=") {
            pid = Some(v.parse().map_err(|_| alloc::format!("invalid pid '{}'", v))?);
        } else if let Some(v) = a.strip_prefix("--rttime=") {
            new = Some(match v.split_once(':') {
                Some((s, h)) => {
                    (if s.is_empty() { None } else { Some(parse_limit(s)?) }, if h.is_empty() { None } else { Some(parse_limit(h)?) })
                }
                None => {
                    let l = parse_limit(v)?;
                    (Some(l), Some(l))
                }
            });
        } else {
            return Err("usage".into());
        }
    }
    let pid = pid.ok_or("usage")?;
    let errno = |e: Errno| alloc::format!("failed to get the RTTIME resource limit of pid {}: {}", pid, e.strerror());
    let (soft, hard) = prlimit(pid, RLIMIT_RTTIME, None).map_err(errno)?;
    if let Some((s, h)) = new {
        let want = (s.unwrap_or(soft), h.unwrap_or(hard));
        prlimit(pid, RLIMIT_RTTIME, Some(want)).map_err(|e| alloc::format!("failed to set the RTTIME resource limit: {}", e.strerror()))?;
        return Ok(());
    }
    crate::kprintln!("RESOURCE DESCRIPTION                    SOFT      HARD UNITS");
    crate::kprintln!("RTTIME   timeout for real-time tasks {:>9} {:>9} microsecs", fmt_limit(soft), fmt_limit(hard));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test_case]
    fn rt_bandwidth_sysctls_validate() {
        assert_eq!(set_rt_runtime_us(2_000_000), Err(Errno::EINVAL), "runtime > period");
        assert_eq!(set_rt_runtime_us(-2), Err(Errno::EINVAL));
        assert_eq!(set_rt_period_us(0), Err(Errno::EINVAL));
        assert_eq!(set_rt_period_us(-5), Err(Errno::EINVAL));
        assert_eq!(set_rt_period_us(900_000), Err(Errno::EINVAL), "period below runtime");
        assert_eq!(set_watchdog_action("bogus"), Err(Errno::EINVAL));
        assert_eq!(prlimit(0, 7, None), Err(Errno::EINVAL), "only RLIMIT_RTTIME");
        assert_eq!(prlimit(0, RLIMIT_RTTIME, Some((10, 5))), Err(Errno::EINVAL), "soft > hard");
        assert_eq!(prlimit(999_999, RLIMIT_RTTIME, None), Err(Errno::ESRCH));
        assert_eq!(prlimit(0, RLIMIT_RTTIME, None), Ok((RLIM_INFINITY, RLIM_INFINITY)));
    }
}
