//! `bench deadline [-d S] [-n N] [-v]`: SCHED_DEADLINE task sets (issue #16).
//!
//! The admission limit is `kernel.sched_rt_runtime_us / sched_rt_period_us × CPUs` (the
//! number of CPUs with −1). For each of 50%, 80% and 95% of it, `2 × CPUs` periodic tasks
//! (`-n N`: N tasks; periods 10, 20, 40, 25 ms in turn, implicit deadlines) share that
//! bandwidth equally (`cadence_sched::edf_model::bench_set`), released together.
//!
//! **A job** is 90% of its task's runtime of CPU time as the scheduler charges it
//! (`sched::current_cputime_ns`: time preempted by another guest task does not count, time
//! the host took the vCPU away does, as it does for the runtime). It is counted from the end
//! of the task's previous job, so the wakeup path and the interrupts the task absorbs are
//! part of the 90%, as they are part of what its runtime pays for; the job then sleeps until
//! its next release. A job **misses** if it completes after its release plus its relative
//! deadline; `lateness` is by how much. One line per set, exactly:
//! `deadline: util_pct=<n> tasks=<n> jobs=<n> missed=<n> max_lateness_us=<n> throttled=<n>`
//! (`throttled`: replenishments after a task used up its runtime).
//!
//! Then the overrun run: the 50% set plus one task (10 ms period, 1 ms runtime) whose jobs
//! try to run 3 ms: it is throttled every period, and the others miss nothing:
//! `deadline-overrun: runtime_us=<n> job_us=<n> jobs=<n> throttled=<n> others_missed=<n>`.
//! S (default 3) is each run's length in seconds.
//!
//! # Why a job missed
//! After each set (and the overrun run) one line classifies the missed jobs, first matching
//! cause first ([`Cause`]):
//! `deadline-steal: <set> stolen_ms=<n> late_timer_irqs=<n> missed_with_steal=<n>
//! missed_after_late_job=<n> missed_server_short=<n> missed_with_host_delay_elsewhere=<n>
//! missed_other=<n>`.
//! *Steal*: a burn step charged more than 200 µs beyond what it spun, the vCPU was not
//! running (the host took it away; a guest under TCG has no steal clock). *Late timer
//! interrupts*: taken 200 µs or more after their expiry ([`crate::timer::LATE_NS`]).
//! Runtime is charged in wall time while a task is current, as on Linux in a VM without
//! steal-time accounting: a vCPU descheduled by the host, or an hrtick delivered late, uses
//! up a task's runtime without running its job, and CBS then postpones the task's deadline a
//! period at each replenishment, so one overrun makes several of its next jobs late.
//!
//! Then what the ideal global-EDF schedule of the same set does
//! (`cadence_sched::edf_model`: no overhead, no host): `deadline-model: <set> jobs=<n>
//! missed=<n> max_lateness_us=<n>`; for these sets it misses nothing, so every miss measured
//! comes from the implementation or the machine. `-v` prints each miss of no known cause
//! (at most 5 per set) with the trace around it when the tracer runs (`trace start -b N`).

use super::{flag, opt, Args, Opt};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn, wait};
use crate::sync::IrqLock;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::deadline::BW_SHIFT;
use cadence_sched::edf_model::{self, PeriodicTask};
use cadence_sched::SchedAttr;
use core::sync::atomic::{AtomicU64, Ordering};

/// Wall time between two reads of the task's CPU time while burning.
const POLL_NS: u64 = 20_000;
/// A burn step charged this much more than it spun was stolen by the host.
const STEAL_NS: u64 = 200_000;

/// Every stolen burn step of the running set, any task, any CPU: (from, to) ns. A job waiting
/// behind a task whose vCPU the host took away is delayed by that steal too, on any CPU.
static STEAL_LOG: IrqLock<Vec<(u64, u64)>> = IrqLock::new(Vec::new());
/// Room reserved in [`STEAL_LOG`] per set (later steps are counted, not logged).
const STEAL_LOG_LEN: usize = 4096;

/// One missed job (ns), for the classification and `-v`.
#[derive(Clone, Copy, Default)]
struct Miss {
    task: usize,
    release: u64,
    /// When the job started (woken, or right after the previous job if that one ended late),
    /// and on which CPU.
    start: u64,
    start_cpu: u32,
    done: u64,
    done_cpu: u32,
    stolen: u64,
    late_start: bool,
    /// The task's CBS deadline and runtime when the job started (see [`Cause::ServerShort`]).
    server_deadline: u64,
    server_runtime: i64,
    /// CPU time the job still needed when it started (its wakeup path counts: module doc).
    need_ns: u64,
}

/// Missed jobs kept per task for the classification (later ones are counted only).
const MISSES_KEPT: usize = 512;

/// What one task reports.
#[derive(Default)]
struct Report {
    jobs: AtomicU64,
    missed: AtomicU64,
    max_lateness_ns: AtomicU64,
    throttled: AtomicU64,
    /// Time stolen from its jobs by the host (see [`burn_until`]).
    stolen_ns: AtomicU64,
    /// Its first [`MISSES_KEPT`] missed jobs.
    misses: IrqLock<Vec<Miss>>,
}

/// Runs until the task's CPU time reaches `until` ns (module doc); returns the time charged
/// to it in steps longer than [`STEAL_NS`] (a step is a [`POLL_NS`] spin: the vCPU did not
/// run meanwhile, the host took it away — steal time a guest cannot see otherwise).
fn burn_until(until: u64) -> u64 {
    let mut cpu = sched::current_cputime_ns();
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
            let to = crate::time::uptime_ns();
            let mut log = STEAL_LOG.lock();
            if log.len() < log.capacity() {
                log.push((to - (now - cpu), to));
            }
        }
        cpu = now;
    }
}

/// One periodic deadline task `index` (`dl-<index>`, or `dl-overrun` past the set): (runtime,
/// period) ns, each job burning `job_ns`, released from `start` until `end`.
fn spawn_periodic(
    index: usize,
    overrun: bool,
    (runtime, period, job_ns): (u64, u64, u64),
    (start, end): (u64, u64),
    report: Arc<Report>,
) -> Result<u32, String> {
    let name = if overrun { String::from("dl-overrun") } else { format!("dl-{}", index) };
    let attr = SchedAttr {
        policy: cadence_sched::consts::SCHED_DEADLINE,
        slice_ns: runtime,
        deadline_ns: period,
        period_ns: period,
        ..Default::default()
    }
    .validate()
    .map_err(|e| format!("{}: invalid parameters {}/{} ns: {}", name, runtime, period, e.strerror()))?;
    let t = spawn(SpawnOptions::new(&name).attr(attr), move || {
        let mut release = start;
        // Where the next job's CPU time counts from: the end of the last one (module doc).
        let mut job_from = sched::current_cputime_ns();
        sched::sleep_until(release);
        let mut late_start = false;
        while release < end {
            let (start, start_cpu) = (crate::time::uptime_ns(), crate::percpu::cpu_id());
            let (server_deadline, server_runtime) = crate::sched::class::deadline::server_of(&sched::current()).unwrap_or((0, 0));
            let need_ns = (job_from + job_ns).saturating_sub(sched::current_cputime_ns());
            let stolen = burn_until(job_from + job_ns);
            let done = crate::time::uptime_ns();
            report.jobs.fetch_add(1, Ordering::Relaxed);
            report.stolen_ns.fetch_add(stolen, Ordering::Relaxed);
            let deadline = release + period;
            if done > deadline {
                report.missed.fetch_add(1, Ordering::Relaxed);
                report.max_lateness_ns.fetch_max(done - deadline, Ordering::Relaxed);
                let mut misses = report.misses.lock();
                if misses.len() < misses.capacity() {
                    let done_cpu = crate::percpu::cpu_id();
                    misses.push(Miss {
                        task: index,
                        release,
                        start,
                        start_cpu,
                        done,
                        done_cpu,
                        stolen,
                        late_start,
                        server_deadline,
                        server_runtime,
                        need_ns,
                    });
                }
            }
            release += period;
            late_start = crate::time::uptime_ns() >= release;
            job_from = sched::current_cputime_ns();
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

/// Why a job missed, first matching cause first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cause {
    /// The host took its vCPU away while the job ran (its own burn saw the steal).
    Steal,
    /// It started late: its task's previous job ended after this one's release.
    AfterLateJob,
    /// Its task's CBS server could not cover it when it started: its deadline more than half
    /// a period past the job's (CBS postpones it a period at each replenishment), or less
    /// runtime left than the job needs (a deficit carried into the replenishment). Either
    /// way an earlier job overran its runtime, and a job of 90% of its runtime, wakeup path
    /// included, overruns only if its task is charged for time it could not use: its vCPU
    /// stopped by the host outside the burn loop, where no step measures it (a trace showed
    /// one stopped 1.3 ms in the sleep path, its hrtick due meanwhile and not delivered).
    ServerShort,
    /// The host held up the guest between the job's release and its completion: a burn step
    /// of another task lost time (a job it waited behind), or a timer interrupt on a CPU the
    /// job ran on came [`crate::timer::LATE_NS`] or more late (its wakeup, or the hrtick of a
    /// task ahead of it).
    HostElsewhere,
    /// None of these.
    Other,
}

/// A window of host delay: (CPU, from, to) ns; no CPU for steal, which delays whoever waits
/// behind the task that lost the time, on any CPU.
type HostDelay = (Option<u32>, u64, u64);

/// When the host held up the guest: stolen burn steps, and late timer interrupts (from their
/// expiry to their entry, on their CPU).
fn host_delays(steal_log: &[(u64, u64)]) -> Vec<HostDelay> {
    let mut v: Vec<HostDelay> = steal_log.iter().map(|&(from, to)| (None, from, to)).collect();
    for cpu in 0..crate::percpu::nr_cpus() {
        v.extend(crate::timer::late_interrupts(cpu).iter().map(|&(entry, late)| (Some(cpu), entry - late, entry)));
    }
    v
}

fn cause(m: &Miss, period: u64, host: &[HostDelay]) -> Cause {
    let on_its_cpus = |cpu: Option<u32>| cpu.is_none_or(|c| c == m.start_cpu || c == m.done_cpu);
    if m.stolen > 0 {
        Cause::Steal
    } else if m.late_start {
        Cause::AfterLateJob
    } else if m.server_deadline > m.release + period + period / 2 || m.server_runtime < m.need_ns as i64 {
        Cause::ServerShort
    } else if host.iter().any(|&(cpu, f, t)| on_its_cpus(cpu) && f < m.done && t > m.release) {
        Cause::HostElsewhere
    } else {
        Cause::Other
    }
}

/// Late timer interrupts so far, every CPU.
fn late_count() -> u64 {
    (0..crate::percpu::nr_cpus()).map(crate::timer::late_count).sum()
}

/// One set's results.
#[derive(Default)]
struct SetResult {
    tasks: usize,
    jobs: u64,
    missed: u64,
    max_lateness_ns: u64,
    throttled: u64,
    stolen_ns: u64,
    /// Missed jobs by [`Cause`], in its order.
    causes: [u64; 5],
    /// Missed jobs not recorded (past [`MISSES_KEPT`] per task), so not classified.
    unclassified: u64,
    /// Steal steps not logged (past [`STEAL_LOG_LEN`]).
    steal_log_full: bool,
    /// Late timer interrupts during the set, every CPU ([`crate::timer::LATE_NS`]).
    late_timers: u64,
    /// The ideal global-EDF schedule of the same set (`edf_model`).
    model: edf_model::ModelResult,
    /// The overrunner's jobs and throttles (overrun run only).
    over_jobs: u64,
    over_throttled: u64,
}

/// A set at `util_pct` of the limit, plus (if `overrun`) the overrunning task. With
/// `verbose`, prints each missed job of cause [`Cause::Other`] (at most 5), with the trace
/// around it if the tracer holds it.
fn run_set(util_pct: u64, secs: u64, overrun: bool, n: usize, verbose: bool) -> Result<SetResult, String> {
    let mut bw_total = limit_bw() * util_pct / 100;
    let over_rt = 1_000_000;
    let over_period = 10_000_000;
    if overrun {
        // The overrunner's admitted share comes out of the set's.
        bw_total = bw_total.saturating_sub(cadence_sched::deadline::to_ratio(over_period, over_rt));
    }
    let set = edf_model::bench_set(bw_total, n);
    {
        let mut log = STEAL_LOG.lock();
        log.clear();
        log.reserve(STEAL_LOG_LEN);
    }
    let late_before = late_count();
    let start = crate::time::uptime_ns() + 50_000_000;
    let end = start + secs * 1_000_000_000;
    let mut tids = Vec::new();
    let mut reports = Vec::new();
    let mut result = Ok(());
    for (i, &(runtime, t)) in set.iter().enumerate() {
        let r = Arc::new(Report::default());
        r.misses.lock().reserve(MISSES_KEPT);
        match spawn_periodic(i, false, (runtime, t.period, t.exec), (start, end), r.clone()) {
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
        match spawn_periodic(n, true, (over_rt, over_period, 3 * over_rt), (start, end), r.clone()) {
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
    let steal_log = core::mem::take(&mut *STEAL_LOG.lock());
    let host = host_delays(&steal_log);
    let late_timers = late_count() - late_before;
    let mut out = SetResult { tasks: n, steal_log_full: steal_log.len() >= STEAL_LOG_LEN, late_timers, ..Default::default() };
    let mut shown = 0;
    for r in &reports {
        out.jobs += r.jobs.load(Ordering::Relaxed);
        let missed = r.missed.load(Ordering::Relaxed);
        out.missed += missed;
        out.max_lateness_ns = out.max_lateness_ns.max(r.max_lateness_ns.load(Ordering::Relaxed));
        out.throttled += r.throttled.load(Ordering::Relaxed);
        out.stolen_ns += r.stolen_ns.load(Ordering::Relaxed);
        let misses = r.misses.lock().clone();
        out.unclassified += missed - misses.len() as u64;
        for m in &misses {
            let period = set.get(m.task).map_or(0, |&(_, t)| t.period);
            let c = cause(m, period, &host);
            out.causes[c as usize] += 1;
            if verbose && c == Cause::Other && shown < 5 {
                shown += 1;
                print_miss(m, &set);
            }
        }
    }
    let mut model_set: Vec<PeriodicTask> = set.iter().map(|&(_, t)| t).collect();
    if overrun {
        // Throttled to its runtime every period, the overrunner is a task of that size.
        model_set.push(PeriodicTask { exec: over_rt, period: over_period, deadline: over_period });
    }
    out.model = edf_model::simulate_global_edf(&model_set, sched::online_mask().count(), secs * 1_000_000_000);
    if let Some(o) = over {
        out.over_jobs = o.jobs.load(Ordering::Relaxed);
        out.over_throttled = o.throttled.load(Ordering::Relaxed);
    }
    Ok(out)
}

/// `-v`: one missed job, and the trace from two periods before its release to its completion.
fn print_miss(m: &Miss, set: &[(u64, PeriodicTask)]) {
    let period = set.get(m.task).map_or(0, |&(_, t)| t.period);
    crate::kprintln!(
        "deadline-miss: task=dl-{} period_ms={} release_ns={} start_delay_us={} server_postponed_us={} server_runtime_us={} need_us={} cpu={}->{} lateness_us={}",
        m.task,
        period / 1_000_000,
        m.release,
        m.start.saturating_sub(m.release) / 1000,
        m.server_deadline.saturating_sub(m.release + period) / 1000,
        m.server_runtime / 1000,
        m.need_ns / 1000,
        m.start_cpu,
        m.done_cpu,
        m.done.saturating_sub(m.release + period) / 1000
    );
    let cpus: Vec<u32> = (0..crate::percpu::nr_cpus()).collect();
    crate::trace::print_window(&cpus, m.release.saturating_sub(2 * period), m.done);
}

/// `bench deadline`'s options.
const OPTS: [Opt; 3] = [
    opt("-d", "S", "seconds per task set (default 3)"),
    opt("-n", "N", "tasks per set (default 2 x CPUs)"),
    flag("-v", "print missed jobs of no known cause, with the trace around them"),
];

/// `bench deadline`.
pub fn cmd_deadline(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("deadline", args, &OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 3, 1, 3600)?;
    let n = a.num("-n", 2 * sched::online_mask().count() as u64, 1, 32)? as usize;
    let verbose = a.has("-v");
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
        let r = run_set(util, secs, false, n, verbose)?;
        crate::kprintln!(
            "deadline: util_pct={} tasks={} jobs={} missed={} max_lateness_us={} throttled={}",
            util,
            r.tasks,
            r.jobs,
            r.missed,
            r.max_lateness_ns / 1000,
            r.throttled
        );
        print_causes(&format!("util_pct={}", util), &r);
    }
    let r = run_set(50, secs, true, n, verbose)?;
    crate::kprintln!(
        "deadline-overrun: runtime_us=1000 job_us=3000 jobs={} throttled={} others_missed={}",
        r.over_jobs,
        r.over_throttled,
        r.missed
    );
    print_causes("overrun", &r);
    Ok(())
}

/// The lines after a set: its steal and causes of misses, and the ideal schedule's misses.
fn print_causes(set: &str, r: &SetResult) {
    crate::kprintln!(
        "deadline-steal: {} stolen_ms={} late_timer_irqs={} missed_with_steal={} missed_after_late_job={} missed_server_short={} missed_with_host_delay_elsewhere={} missed_other={}{}{}",
        set,
        r.stolen_ns / 1_000_000,
        r.late_timers,
        r.causes[Cause::Steal as usize],
        r.causes[Cause::AfterLateJob as usize],
        r.causes[Cause::ServerShort as usize],
        r.causes[Cause::HostElsewhere as usize],
        r.causes[Cause::Other as usize],
        if r.unclassified > 0 { format!(" unclassified={}", r.unclassified) } else { String::new() },
        if r.steal_log_full { " (steal log full: later steal not seen elsewhere)" } else { "" }
    );
    crate::kprintln!(
        "deadline-model: {} jobs={} missed={} max_lateness_us={} (ideal global EDF, same set)",
        set,
        r.model.jobs,
        r.model.missed,
        r.model.max_lateness / 1000
    );
}
