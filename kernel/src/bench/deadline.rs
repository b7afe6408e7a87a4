//! `bench deadline [-d S]`: SCHED_DEADLINE task sets (issue #16).
//!
//! The admission limit is `kernel.sched_rt_runtime_us / sched_rt_period_us × CPUs` (the
//! number of CPUs with −1). For each of 50%, 80% and 95% of it, `2 × CPUs` periodic tasks
//! (periods 10, 20, 40, 25 ms in turn, implicit deadlines) share that bandwidth equally;
//! every job runs 90% of its task's runtime (CPU time as the scheduler charges it,
//! `sched::current_cputime_ns`: time preempted by another guest task does not count, time the
//! host took the vCPU away does, as it does for the runtime) and then sleeps until its next
//! release.
//! A job **misses** if it completes after its release plus its relative deadline; `lateness`
//! is by how much. One line per set, exactly:
//! `deadline: util_pct=<n> tasks=<n> jobs=<n> missed=<n> max_lateness_us=<n> throttled=<n>`
//! (`-n N`: N tasks instead of `2 × CPUs`).
//! (`throttled`: replenishments after a task used up its runtime).
//!
//! Then the overrun run: the 50% set plus one task (10 ms period, 1 ms runtime) whose jobs
//! try to run 3 ms: it is throttled every period, and the others miss nothing:
//! `deadline-overrun: runtime_us=<n> job_us=<n> jobs=<n> throttled=<n> others_missed=<n>
//! others_missed_with_steal=<n> others_missed_after_late_job=<n>`.
//! S (default 3) is each run's length in seconds.
//!
//! After each set, the time the host took the vCPUs away from running jobs (steps of the burn
//! loop charged more than 200 µs beyond what they spun) and how many missed jobs lost some:
//! `deadline-steal: util_pct=<n> stolen_ms=<n> missed_with_steal=<n> missed_after_late_job=<n>`
//! (the last: missed jobs without steal that started late because the previous job of their
//! task ended after their release). Runtime is charged in
//! wall time while a task is current, as on Linux in a VM without steal-time accounting, so a
//! vCPU descheduled by the host uses up its tasks' runtime without running them.

use super::{opt, Args, Opt};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn, wait};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::deadline::BW_SHIFT;
use cadence_sched::SchedAttr;
use core::sync::atomic::{AtomicU64, Ordering};

const PERIODS_MS: [u64; 4] = [10, 20, 40, 25];
/// Wall time between two reads of the task's CPU time while burning.
const POLL_NS: u64 = 20_000;
/// A burn step charged this much more than it spun was stolen by the host.
const STEAL_NS: u64 = 200_000;

/// What one task reports.
#[derive(Default)]
struct Report {
    jobs: AtomicU64,
    missed: AtomicU64,
    max_lateness_ns: AtomicU64,
    throttled: AtomicU64,
    /// Time stolen from its jobs by the host (see [`burn`]), and missed jobs that had some.
    stolen_ns: AtomicU64,
    missed_stolen: AtomicU64,
    /// Missed jobs that lost no time to the host but started late because the job before
    /// them ended after their release (a late job delays the next ones).
    missed_after_late: AtomicU64,
}

/// Runs for `ns` of CPU time (module doc); returns the time charged to it in steps longer
/// than [`STEAL_NS`] (a step is a [`POLL_NS`] spin: the vCPU did not run meanwhile, the host
/// took it away — steal time a guest cannot see otherwise).
fn burn(ns: u64) -> u64 {
    let mut cpu = sched::current_cputime_ns();
    let until = cpu + ns;
    let mut stolen = 0;
    loop {
        let left = until.saturating_sub(cpu);
        if left == 0 {
            return stolen;
        }
        let step = left.min(POLL_NS);
        let spin_until = crate::time::uptime_ns() + step;
        while crate::time::uptime_ns() < spin_until {
            core::hint::spin_loop();
        }
        let now = sched::current_cputime_ns();
        if now - cpu > step + STEAL_NS {
            stolen += now - cpu - step;
        }
        cpu = now;
    }
}

/// One periodic deadline task: (runtime, period) ns, each job burning `job_ns`, released from
/// `start` until `end`.
fn spawn_periodic(name: &str, runtime: u64, period: u64, job_ns: u64, start: u64, end: u64, report: Arc<Report>) -> Result<u32, String> {
    let attr = SchedAttr {
        policy: cadence_sched::consts::SCHED_DEADLINE,
        slice_ns: runtime,
        deadline_ns: period,
        period_ns: period,
        ..Default::default()
    }
    .validate()
    .map_err(|e| format!("{}: invalid parameters {}/{} ns: {}", name, runtime, period, e.strerror()))?;
    let t = spawn(SpawnOptions::new(name).attr(attr), move || {
        let mut release = start;
        sched::sleep_until(release);
        let mut late_start = false;
        while release < end {
            let stolen = burn(job_ns);
            let done = crate::time::uptime_ns();
            report.jobs.fetch_add(1, Ordering::Relaxed);
            report.stolen_ns.fetch_add(stolen, Ordering::Relaxed);
            let deadline = release + period;
            if done > deadline {
                report.missed.fetch_add(1, Ordering::Relaxed);
                report.max_lateness_ns.fetch_max(done - deadline, Ordering::Relaxed);
                if stolen > 0 {
                    report.missed_stolen.fetch_add(1, Ordering::Relaxed);
                } else if late_start {
                    report.missed_after_late.fetch_add(1, Ordering::Relaxed);
                }
            }
            release += period;
            late_start = crate::time::uptime_ns() >= release;
            if !late_start {
                sched::sleep_until(release);
            }
        }
        report.throttled.store(crate::sched::class::deadline::nr_throttled(&sched::current()), Ordering::Relaxed);
        0
    })
    .map_err(|e| format!("{}: cannot start ({:?}; admitted bandwidth {:?})", name, e, crate::sched::class::deadline::admitted()))?;
    Ok(t.tid)
}

/// The admission limit in `BW_SHIFT` units.
fn limit_bw() -> u64 {
    let cpus = sched::online_mask().count();
    let limits =
        cadence_sched::deadline::DlAdmission::new(crate::sched::rt_limits::rt_runtime_us(), crate::sched::rt_limits::rt_period_us(), cpus);
    // No limit (`sched_rt_runtime_us` −1): the sets are sized against every CPU, full.
    limits.bw.unwrap_or(1 << BW_SHIFT) * u64::from(cpus)
}

/// A set at `util_pct` of the limit, plus (if `overrun`) the overrunning task; returns the
/// set's summed report and the overrunner's.
fn run_set(util_pct: u64, secs: u64, overrun: bool, n: usize) -> Result<(usize, Report, Option<Report>), String> {
    let mut bw_total = limit_bw() * util_pct / 100;
    let over_rt = 1_000_000;
    let over_period = 10_000_000;
    if overrun {
        // The overrunner's admitted share comes out of the set's.
        bw_total = bw_total.saturating_sub(cadence_sched::deadline::to_ratio(over_period, over_rt));
    }
    let start = crate::time::uptime_ns() + 50_000_000;
    let end = start + secs * 1_000_000_000;
    let mut tids = Vec::new();
    let mut reports = Vec::new();
    let mut result = Ok(());
    for i in 0..n {
        let period = PERIODS_MS[i % PERIODS_MS.len()] * 1_000_000;
        let runtime = ((u128::from(bw_total) * u128::from(period) / n as u128) >> BW_SHIFT) as u64;
        let r = Arc::new(Report::default());
        match spawn_periodic(&format!("dl-{}", i), runtime, period, runtime * 9 / 10, start, end, r.clone()) {
            Ok(tid) => {
                tids.push(tid);
                reports.push(r);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let mut over = None;
    if overrun && result.is_ok() {
        let r = Arc::new(Report::default());
        match spawn_periodic("dl-overrun", over_rt, over_period, 3 * over_rt, start, end, r.clone()) {
            Ok(tid) => {
                tids.push(tid);
                over = Some(r);
            }
            Err(e) => result = Err(e),
        }
    }
    for tid in tids {
        let _ = wait(tid);
    }
    result?;
    let sum = Report::default();
    for r in &reports {
        sum.jobs.fetch_add(r.jobs.load(Ordering::Relaxed), Ordering::Relaxed);
        sum.missed.fetch_add(r.missed.load(Ordering::Relaxed), Ordering::Relaxed);
        sum.max_lateness_ns.fetch_max(r.max_lateness_ns.load(Ordering::Relaxed), Ordering::Relaxed);
        sum.throttled.fetch_add(r.throttled.load(Ordering::Relaxed), Ordering::Relaxed);
        sum.stolen_ns.fetch_add(r.stolen_ns.load(Ordering::Relaxed), Ordering::Relaxed);
        sum.missed_stolen.fetch_add(r.missed_stolen.load(Ordering::Relaxed), Ordering::Relaxed);
        sum.missed_after_late.fetch_add(r.missed_after_late.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    let over = over.map(|r| Arc::try_unwrap(r).unwrap_or_default());
    Ok((n, sum, over))
}

/// `bench deadline`'s options.
const OPTS: [Opt; 2] = [opt("-d", "S", "seconds per task set (default 3)"), opt("-n", "N", "tasks per set (default 2 x CPUs)")];

/// `bench deadline`.
pub fn cmd_deadline(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("deadline", args, &OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 3, 1, 3600)?;
    let n = a.num("-n", 2 * sched::online_mask().count() as u64, 1, 32)? as usize;
    let me = sched::current();
    if me.attr().policy.is_deadline() {
        return Err(String::from("run it from a task that is not SCHED_DEADLINE"));
    }
    crate::kprintln!(
        "deadline: cpus={} limit_pct={} periods_ms=10,20,40,25 job=90%_of_runtime secs={}",
        sched::online_mask().count(),
        (limit_bw() * 100) >> BW_SHIFT,
        secs
    );
    for util in [50, 80, 95] {
        let (n, r, _) = run_set(util, secs, false, n)?;
        crate::kprintln!(
            "deadline: util_pct={} tasks={} jobs={} missed={} max_lateness_us={} throttled={}",
            util,
            n,
            r.jobs.load(Ordering::Relaxed),
            r.missed.load(Ordering::Relaxed),
            r.max_lateness_ns.load(Ordering::Relaxed) / 1000,
            r.throttled.load(Ordering::Relaxed)
        );
        crate::kprintln!(
            "deadline-steal: util_pct={} stolen_ms={} missed_with_steal={} missed_after_late_job={}",
            util,
            r.stolen_ns.load(Ordering::Relaxed) / 1_000_000,
            r.missed_stolen.load(Ordering::Relaxed),
            r.missed_after_late.load(Ordering::Relaxed)
        );
    }
    let (_, others, over) = run_set(50, secs, true, n)?;
    let over = over.unwrap_or_default();
    crate::kprintln!(
        "deadline-overrun: runtime_us=1000 job_us=3000 jobs={} throttled={} others_missed={} others_missed_with_steal={} others_missed_after_late_job={}",
        over.jobs.load(Ordering::Relaxed),
        over.throttled.load(Ordering::Relaxed),
        others.missed.load(Ordering::Relaxed),
        others.missed_stolen.load(Ordering::Relaxed),
        others.missed_after_late.load(Ordering::Relaxed)
    );
    Ok(())
}
