//! Lockup and hung-task detectors, as Linux has them (`kernel/watchdog.c`, `kernel/hung_task.c`);
//! the verdicts are `cadence_sched::lockup` (pure, host-tested), this module gathers the state.
//!
//! * **Soft lockup** (checked by each CPU's own tick): a reschedule pending on the CPU for more
//!   than `2 × kernel.watchdog_thresh` s without `__schedule` running, i.e. preemption stuck
//!   (interrupts on, preemption off). Report: `watchdog: BUG: soft lockup - CPU#<n> stuck for
//!   <s>s! [<comm>:<pid>]`.
//! * **Hard lockup** (checked once a second by the tick of the CPU with the timekeeping duty,
//!   `nohz`): another CPU's tick count has not moved for that long (interrupts off). A CPU whose
//!   tick is stopped (tickless idle) is not stuck: it is skipped, and its watch restarts when
//!   its tick does. Report: `watchdog: Watchdog detected hard LOCKUP on cpu <n>`.
//! * **Hung task** (`khungtaskd`, a kernel task scanning every few seconds): a task woken or
//!   preempted and not run since, or asleep although its sleep timer expired, for
//!   `kernel.hung_task_timeout_secs` s. Report: `INFO: task <comm>:<pid> blocked for more than
//!   <s> seconds (<reason>, cpu <n>[, asleep at <file>:<line>])`, the place being where the
//!   task went to sleep (`Task::wait_site`, recorded through the waits' `#[track_caller]`).
//!   SCHED_IDLE tasks are not reported as starved (their weight
//!   makes long waits normal), nor a fair task whose share of its CPU's runnable weight
//!   explains the wait (`cadence_sched::lockup::fair_share_wait_ns`: a nice 19 task beside
//!   nice -20 ones waits tens of seconds under EEVDF, on Linux too); an RT task starving lower tasks with RT throttling off is
//!   reported, unlike Linux (which checks only uninterruptible sleepers).
//!
//! Host descheduling of vCPUs: see `cadence_sched::lockup` (a stuck CPU must have executed
//! half the ticks of the threshold; hung tasks use a timeout far beyond a host timeslice).
//! Under `cargo test` a report fails the run (it panics, so the harness names the test).

use super::task::{ClassId, TaskState};
use crate::percpu::{self, NR_CPUS};
use cadence_sched::lockup::{self as verdict, Hung, TaskTimes};
use cadence_sched::Policy;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static WATCHDOG_THRESH_S: AtomicU64 = AtomicU64::new(verdict::DEFAULT_WATCHDOG_THRESH_S);
static HUNG_TASK_TIMEOUT_S: AtomicU64 = AtomicU64::new(verdict::DEFAULT_HUNG_TASK_TIMEOUT_S);
/// Reports so far (soft + hard lockups, hung tasks).
pub static REPORTS: AtomicU64 = AtomicU64::new(0);
/// `kernel.softlockup_panic` / `kernel.hung_task_panic` (Linux's names): a report panics.
/// On by default under `cargo test`, so a lockup fails the test that caused it.
static LOCKUP_PANIC: AtomicBool = AtomicBool::new(cfg!(test));
static HUNG_PANIC: AtomicBool = AtomicBool::new(cfg!(test));

pub fn lockup_panic() -> bool {
    LOCKUP_PANIC.load(Ordering::Relaxed)
}

pub fn set_lockup_panic(on: bool) {
    LOCKUP_PANIC.store(on, Ordering::Relaxed);
}

pub fn hung_panic() -> bool {
    HUNG_PANIC.load(Ordering::Relaxed)
}

pub fn set_hung_panic(on: bool) {
    HUNG_PANIC.store(on, Ordering::Relaxed);
}

pub fn watchdog_thresh_s() -> u64 {
    WATCHDOG_THRESH_S.load(Ordering::Relaxed)
}

/// `kernel.watchdog_thresh` (0 turns the lockup detectors off).
pub fn set_watchdog_thresh_s(s: u64) {
    WATCHDOG_THRESH_S.store(s.min(verdict::MAX_WATCHDOG_THRESH_S), Ordering::Relaxed);
}

pub fn hung_task_timeout_s() -> u64 {
    HUNG_TASK_TIMEOUT_S.load(Ordering::Relaxed)
}

/// `kernel.hung_task_timeout_secs` (0 turns the hung-task detector off).
pub fn set_hung_task_timeout_s(s: u64) {
    HUNG_TASK_TIMEOUT_S.store(s, Ordering::Relaxed);
}

/// Per-CPU lockup state (owned by this module; written by the CPU's own tick and by
/// `__schedule` on that CPU, read by the hard-lockup check).
pub struct CpuLockup {
    /// When a pending reschedule was first seen by the tick (0 = none pending).
    resched_since: AtomicU64,
    /// The CPU's tick count then.
    resched_since_tick: AtomicU64,
    reported: AtomicBool,
    /// Hard-lockup check: this CPU's tick count last seen, when it last moved, and the
    /// timekeeping duty's tick count then (`nohz`).
    seen_ticks: AtomicU64,
    seen_at: AtomicU64,
    seen_at_tick: AtomicU64,
    hard_reported: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const IDLE: CpuLockup = CpuLockup {
    resched_since: AtomicU64::new(0),
    resched_since_tick: AtomicU64::new(0),
    reported: AtomicBool::new(false),
    seen_ticks: AtomicU64::new(0),
    seen_at: AtomicU64::new(0),
    seen_at_tick: AtomicU64::new(0),
    hard_reported: AtomicBool::new(false),
};
static CPUS: [CpuLockup; NR_CPUS] = [IDLE; NR_CPUS];

fn report(panic: bool, args: core::fmt::Arguments) {
    REPORTS.fetch_add(1, Ordering::Relaxed);
    if panic {
        panic!("{}", args);
    }
    crate::kprintln!("{}", args);
}

/// The scheduler ran on `cpu` (from `__schedule`): nothing is pending any more.
pub(super) fn scheduled(cpu: u32) {
    if let Some(s) = CPUS.get(cpu as usize) {
        s.resched_since.store(0, Ordering::Relaxed);
        s.reported.store(false, Ordering::Relaxed);
    }
}

/// From every CPU's tick (interrupt context): the soft-lockup check of this CPU.
pub(super) fn tick(cpu: &percpu::PerCpu) {
    let thresh = watchdog_thresh_s();
    if thresh == 0 {
        return;
    }
    let Some(me) = CPUS.get(cpu.cpu_id as usize) else { return };
    let now = crate::time::uptime_ns();
    let ticks = super::rq_of(cpu.cpu_id).ticks.load(Ordering::Relaxed);
    let tick_ns = crate::timer::tick_period_ns();
    if super::rq_of(cpu.cpu_id).need_resched.load(Ordering::Relaxed) {
        let since = me.resched_since.load(Ordering::Relaxed);
        if since == 0 {
            me.resched_since_tick.store(ticks, Ordering::Relaxed);
            me.resched_since.store(now, Ordering::Relaxed);
        } else {
            let ran = ticks.saturating_sub(me.resched_since_tick.load(Ordering::Relaxed));
            if let Some(stuck) = verdict::lockup(since, now, thresh, ran, tick_ns) {
                if !me.reported.swap(true, Ordering::Relaxed) {
                    let curr = super::current();
                    report(
                        lockup_panic(),
                        format_args!("watchdog: BUG: soft lockup - CPU#{} stuck for {}s! [{}:{}]", cpu.cpu_id, stuck, curr.name, curr.tid),
                    );
                }
            }
        }
    }
}

/// The hard-lockup check of every CPU but `checker` (from the tick of `checker`, which has the
/// timekeeping duty, once a second; `duty_ticks`: the ticks run with the duty so far). A CPU
/// whose tick is stopped (tickless idle) is skipped and watched afresh.
pub(super) fn check_others(checker: u32, duty_ticks: u64, now: u64) {
    let thresh = watchdog_thresh_s();
    if thresh == 0 {
        return;
    }
    let tick_ns = crate::timer::tick_period_ns();
    for other in percpu::online_cpus().filter(|c| c.cpu_id != checker) {
        let Some(s) = CPUS.get(other.cpu_id as usize) else { continue };
        let t = super::rq_of(other.cpu_id).ticks.load(Ordering::Relaxed);
        if t != s.seen_ticks.load(Ordering::Relaxed) || s.seen_at.load(Ordering::Relaxed) == 0 || crate::timer::tick_stopped(other.cpu_id) {
            s.seen_ticks.store(t, Ordering::Relaxed);
            s.seen_at.store(now, Ordering::Relaxed);
            s.seen_at_tick.store(duty_ticks, Ordering::Relaxed);
            s.hard_reported.store(false, Ordering::Relaxed);
            continue;
        }
        // The duty kept ticking meanwhile (so the VM as a whole was running).
        let ran = duty_ticks.saturating_sub(s.seen_at_tick.load(Ordering::Relaxed));
        if verdict::lockup(s.seen_at.load(Ordering::Relaxed), now, thresh, ran, tick_ns).is_some()
            && !s.hard_reported.swap(true, Ordering::Relaxed)
        {
            report(lockup_panic(), format_args!("watchdog: Watchdog detected hard LOCKUP on cpu {}", other.cpu_id));
        }
    }
}

/// How often `khungtaskd` scans (s), at most: Linux scans every timeout; a shorter period
/// reports closer to the timeout.
const SCAN_PERIOD_S: u64 = 5;

/// Starts `khungtaskd` (call once, from a task).
pub fn start() {
    let opts = super::task::SpawnOptions::new("khungtaskd").kthread();
    if let Err(e) = super::spawn(opts, khungtaskd) {
        crate::kprintln!("cadence: warning: no hung-task detector: {:?}", e);
    }
}

fn khungtaskd() -> i32 {
    loop {
        let timeout = hung_task_timeout_s();
        let period = if timeout == 0 { SCAN_PERIOD_S } else { timeout.clamp(1, SCAN_PERIOD_S) };
        super::sleep_ns(period * 1_000_000_000);
        if timeout != 0 {
            scan(timeout);
        }
    }
}

/// One hung-task scan over every task.
pub fn scan(timeout_s: u64) -> usize {
    let now = crate::time::uptime_ns();
    let mut found = 0;
    let tasks = super::task::all();
    // The weight of the runnable fair tasks on each CPU (task weights, groups flattened: an
    // estimate, for the fair-share exemption below).
    let mut cpu_weight = [0u64; NR_CPUS];
    for t in tasks.iter().filter(|t| !t.is_idle && t.state() == TaskState::Running && t.class() == ClassId::Fair) {
        if let Some(w) = cpu_weight.get_mut(t.cpu() as usize) {
            *w = w.saturating_add(t.attr_weight_cached());
        }
    }
    let base_slice = super::tunables::fair_tunables().base_slice_ns;
    for t in tasks {
        if t.is_idle || t.state() == TaskState::Dead {
            continue;
        }
        // SCHED_IDLE tasks may legitimately wait long beside busier ones, and so may a fair
        // task whose weight's share explains the wait (`verdict::fair_share_wait_ns`).
        let fair = t.class() == ClassId::Fair;
        let starved_by_weight = fair
            && verdict::fair_share_wait_ns(cpu_weight.get(t.cpu() as usize).copied().unwrap_or(0), t.attr_weight_cached(), base_slice)
                > timeout_s.saturating_mul(1_000_000_000);
        let exempt = (fair && t.policy() == Policy::Idle) || starved_by_weight;
        let times = TaskTimes {
            woken_at: if exempt { 0 } else { t.stats.woken_at.load(Ordering::Relaxed) },
            waiting_since: if exempt { 0 } else { t.stats.wait_start.load(Ordering::Relaxed) },
            sleep_deadline: t.stats.sleep_deadline.load(Ordering::Relaxed),
            sleeping: t.state() == TaskState::Sleeping,
        };
        let Some(why) = verdict::hung(times, now, timeout_s) else {
            t.stats.hung_reported.store(false, Ordering::Relaxed);
            continue;
        };
        found += 1;
        if t.stats.hung_reported.swap(true, Ordering::Relaxed) {
            continue;
        }
        let (s, reason) = match why {
            Hung::WokenNotRun(s) => (s, "woken, not run since"),
            Hung::RunnableNotRun(s) => (s, "runnable, not run"),
            Hung::TimerExpiredStillAsleep(s) => (s, "its sleep timer expired, still asleep"),
        };
        // Where it sleeps, for a sleeper: what Linux's stack dump under the report shows.
        let site = match (why, t.wait_site()) {
            (Hung::TimerExpiredStillAsleep(_), Some(l)) => alloc::format!(", asleep at {}:{}", l.file(), l.line()),
            _ => alloc::string::String::new(),
        };
        report(
            hung_panic(),
            format_args!("INFO: task {}:{} blocked for more than {} seconds ({}, cpu {}{})", t.name, t.tid, s, reason, t.cpu(), site),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::task::SpawnOptions;
    use crate::sched::{spawn, wait};
    use alloc::sync::Arc;
    use cadence_sched::CpuMask;

    const MS: u64 = 1_000_000;

    /// A task that keeps preemption off while a reschedule is pending on its CPU is reported
    /// as a soft lockup (threshold 1 s: reported after 2 s).
    #[test_case]
    fn soft_lockup_is_reported() {
        let (thresh, panic) = (watchdog_thresh_s(), lockup_panic());
        set_watchdog_thresh_s(1);
        set_lockup_panic(false);
        let before = REPORTS.load(Ordering::SeqCst);
        let stuck = spawn(SpawnOptions::new("stuck").affinity(CpuMask::from_u64(1 << 2)), move || {
            let _no_preempt = crate::sched::preempt_disable();
            // Someone else wants this CPU: a task woken here sets need_resched.
            let other = spawn(SpawnOptions::new("wants-cpu").affinity(CpuMask::from_u64(1 << 2)), || 0).expect("spawn");
            // Until reported (after 2 s of this CPU's own ticks: longer in emulated time when
            // the host runs this vCPU less), at most 15 s.
            let until = crate::time::uptime_ns() + 15_000 * MS;
            while REPORTS.load(Ordering::SeqCst) == before && crate::time::uptime_ns() < until {
                core::hint::spin_loop();
            }
            drop(_no_preempt);
            let _ = wait(other.tid);
            0
        })
        .expect("spawn");
        wait(stuck.tid).expect("stuck task");
        let reports = REPORTS.load(Ordering::SeqCst) - before;
        set_watchdog_thresh_s(thresh);
        set_lockup_panic(panic);
        assert!(reports >= 1, "no soft lockup reported in 15 s with preemption off (threshold 2 s)");
    }

    /// An RT task starved by a higher one on its CPU is reported by a hung-task scan.
    #[test_case]
    fn starved_task_is_reported_as_hung() {
        let panic = hung_panic();
        set_hung_panic(false);
        let stop = Arc::new(AtomicBool::new(false));
        let hog = {
            let stop = stop.clone();
            spawn(SpawnOptions::new("hog").affinity(CpuMask::from_u64(1 << 3)).policy(Policy::Fifo, 90, 0), move || {
                while !stop.load(Ordering::Relaxed) {
                    core::hint::spin_loop();
                }
                0
            })
            .expect("hog")
        };
        let victim =
            spawn(SpawnOptions::new("victim").affinity(CpuMask::from_u64(1 << 3)).policy(Policy::Fifo, 10, 0), || 0).expect("victim");
        crate::sched::sleep_ns(1_500 * MS);
        scan(1);
        let reported = victim.stats.hung_reported.load(Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
        wait(hog.tid).expect("hog");
        wait(victim.tid).expect("victim");
        set_hung_panic(panic);
        assert!(reported, "a task runnable but not run for 1.5 s was not reported with a 1 s timeout");
    }
}
