//! `bench autogroup`: the seed's experiment (Galbraith, "automated per tty task groups").
//!
//! On one CPU (the last one, like `taskset -c 3`), a build-like load of `-j` tasks (default 10,
//! a `make -j10` stand-in: each runs CPU bursts of `-b` ms with 1 ms sleeps) runs in a session on
//! tty1, and the seed's `pert` runs in a session on tty2, in three modes:
//!
//! * `on`: autogroup on (each tty's session is one group entity: tty1 and tty2 get half each);
//! * `off`: autogroup off (pert is one task among eleven);
//! * `manual`: autogroup off, one manual group per tty made by hand (the userspace way).
//!
//! It prints pert's `pert/s` lines, then one summary line per mode, exactly:
//!
//!     autogroup: mode=<on|off|manual> share=<pct>% avg_latency=<us>us max_latency=<us>us
//!
//! (`share` = pert's share of the CPU, latencies = pert's service latencies: the gaps it saw),
//! then the same three runs with `bench wakeup-latency`'s periodic task instead of pert:
//!
//!     autogroup-wakeup: mode=<on|off|manual> avg=<us>us max=<us>us missed=<n>

use super::latency::{pert, wakeup_latency, PertSecond};
use super::{opt, Args, Opt};
use crate::sched::group::{self, GroupKind, ROOT_GROUP};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, autogroup, wait};
use crate::sync::IrqLock;
use crate::tty;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    On,
    Off,
    Manual,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::On => "on",
            Mode::Off => "off",
            Mode::Manual => "manual",
        }
    }
}

const BUILD_TTY: u32 = 1;
const PROBE_TTY: u32 = 2;

/// Puts the calling task in manual group `name` (creating it) when `manual`.
fn join_manual(manual: bool, name: &str) {
    if manual {
        let gid = group::by_name(name)
            .map(|g| g.id)
            .or_else(|| group::create(name, ROOT_GROUP, group::DEFAULT_WEIGHT, GroupKind::Manual).ok().map(|g| g.id));
        if let Some(gid) = gid {
            let _ = group::move_task(sched::current_tid(), gid);
        }
    }
}

/// Starts the build load on tty1; returns its session leader.
fn start_build(cpu: u32, jobs: u64, burst_ms: u64, mode: Mode, stop: &Arc<AtomicBool>) -> Result<Arc<crate::sched::task::Task>, String> {
    let stop = stop.clone();
    tty::spawn_on_tty(BUILD_TTY, SpawnOptions::new("make").pin(cpu), move || {
        join_manual(mode == Mode::Manual, "tty1-manual");
        let workers: Vec<_> = (0..jobs)
            .filter_map(|_| {
                let stop = stop.clone();
                sched::spawn(SpawnOptions::new("cc1").stack_size(16 * 1024), move || {
                    while !stop.load(Ordering::Relaxed) {
                        let until = crate::time::uptime_ns() + burst_ms * 1_000_000;
                        while crate::time::uptime_ns() < until && !stop.load(Ordering::Relaxed) {
                            core::hint::spin_loop();
                        }
                        sched::sleep_ns(1_000_000);
                    }
                    0
                })
                .ok()
            })
            .collect();
        for w in workers {
            let _ = wait(w.tid);
        }
        0
    })
    .map_err(|e| alloc::format!("cannot start the build on tty1: {}", e.strerror()))
}

fn cleanup(mode: Mode) {
    let _ = tty::close(BUILD_TTY);
    let _ = tty::close(PROBE_TTY);
    if mode == Mode::Manual {
        for name in ["tty1-manual", "tty2-manual"] {
            if let Some(g) = group::by_name(name) {
                let _ = group::destroy(g.id);
            }
        }
    }
    crate::mm::stack::reclaim();
}

/// Runs `probe` in a session on tty2 beside the build, in `mode`.
fn run_mode<R: Send + 'static>(
    cpu: u32,
    jobs: u64,
    burst_ms: u64,
    mode: Mode,
    probe: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    let saved = autogroup::enabled();
    autogroup::set_enabled(mode == Mode::On);
    let stop = Arc::new(AtomicBool::new(false));
    let build = start_build(cpu, jobs, burst_ms, mode, &stop)?;
    sched::sleep_ns(200_000_000);
    let result: Arc<IrqLock<Option<R>>> = Arc::new(IrqLock::new(None));
    let r2 = result.clone();
    let probe_task = tty::spawn_on_tty(PROBE_TTY, SpawnOptions::new("pert").pin(cpu), move || {
        join_manual(mode == Mode::Manual, "tty2-manual");
        let r = probe();
        *r2.lock() = Some(r);
        0
    })
    .map_err(|e| alloc::format!("cannot start the probe on tty2: {}", e.strerror()));
    if let Ok(t) = &probe_task {
        let _ = wait(t.tid);
    }
    stop.store(true, Ordering::SeqCst);
    let _ = wait(build.tid);
    cleanup(mode);
    autogroup::set_enabled(saved);
    probe_task?;
    let r = result.lock().take();
    r.ok_or_else(|| String::from("the probe did not report"))
}

/// `bench autogroup`'s options.
const OPTS: [Opt; 3] = [
    opt("-d", "S", "seconds per phase (default 5)"),
    opt("-j", "JOBS", "hogs of the build tty (default 10)"),
    opt("-b", "MS", "the interactive task's burst in ms (default 10)"),
];

pub fn cmd_autogroup(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("autogroup", args, &OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 5, 1, 3600)?;
    let jobs = a.num("-j", 10, 1, 200)?;
    let burst = a.num("-b", 10, 1, 1000)?;
    let cpu = sched::online_mask().iter().last().unwrap_or(0) as u32;
    let modes = [Mode::On, Mode::Off, Mode::Manual];
    let mut summaries = Vec::new();
    for mode in modes {
        crate::kprintln!("bench autogroup: mode={} (make -j{} on tty1, pert on tty2, cpu {})", mode.name(), jobs, cpu);
        let seconds: Vec<PertSecond> = run_mode(cpu, jobs, burst, mode, move || {
            let mut v = Vec::new();
            pert(secs, 2_000, 20_000, |s| {
                crate::kprintln!("{}", s.line(20_000));
                v.push(*s);
            });
            v
        })?;
        let span: u64 = seconds.iter().map(|s| s.span_ns).sum();
        let gaps: u64 = seconds.iter().map(|s| s.sum_ns).sum();
        let count: u64 = seconds.iter().map(|s| s.count).sum();
        let max = seconds.iter().map(|s| s.max_ns).max().unwrap_or(0);
        let share = if span == 0 { 0.0 } else { 100.0 * (span.saturating_sub(gaps)) as f64 / span as f64 };
        let avg = gaps.checked_div(count).unwrap_or(0);
        summaries.push(alloc::format!(
            "autogroup: mode={} share={:.1}% avg_latency={}us max_latency={}us",
            mode.name(),
            share,
            avg / 1000,
            max / 1000
        ));
    }
    for s in &summaries {
        crate::kprintln!("{}", s);
    }
    for mode in modes {
        let r = run_mode(cpu, jobs, burst, mode, move || wakeup_latency(secs, 1000, 0))??;
        let avg = r.sum_ns.checked_div(r.samples).unwrap_or(0);
        crate::kprintln!("autogroup-wakeup: mode={} avg={}us max={}us missed={}", mode.name(), avg / 1000, r.max_ns / 1000, r.missed);
    }
    Ok(())
}
