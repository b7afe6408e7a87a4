//! `bench hwlat`: how long the (virtual) CPUs stop under the kernel's feet, like Linux's
//! hwlat tracer (`Documentation/trace/hwlat_detector.rst`).
//!
//! One SCHED_FIFO 99 task pinned to each online CPU spins with interrupts disabled for `width`
//! out of every `window`, reading the clock back to back. Nothing in the guest can run on that
//! CPU meanwhile (no interrupt, no other task), so any gap between two consecutive reads longer
//! than the threshold is time the CPU did not execute guest code: under QEMU, the host
//! descheduling the vCPU thread, or the emulator holding it (TCG's big lock, translation).
//! Linux's tracer calls these "hardware latencies" and runs one CPU at a time; this one runs
//! every CPU at once by default, so that all vCPU threads compete for the host as under a
//! benchmark load, or one CPU (`-c CPU`) while a workload runs on the others.
//!
//! Output, one line per CPU:
//! `hwlat: cpu=<n> sampled_ms=<n> gaps=<n> gaps_per_s=<r> over_100us=<n> over_1ms=<n> max_us=<n>`
//! (`gaps`: gaps over the threshold `-t`, default 10 µs as Linux's `tracing_thresh`;
//! `gaps_per_s` per second *sampled*). A scheduler cannot act during such a gap, so a
//! latency checker's violations that coincide with them are the host's, not the scheduler's.

use super::{opt, Args, Opt};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::Policy;
use core::sync::atomic::{AtomicU64, Ordering};

/// One CPU's findings.
#[derive(Default)]
struct Stats {
    sampled_ns: AtomicU64,
    gaps: AtomicU64,
    over_100us: AtomicU64,
    over_1ms: AtomicU64,
    max_ns: AtomicU64,
}

/// `bench hwlat`'s options.
const OPTS: [Opt; 5] = [
    opt("-d", "S", "duration in seconds (default 5)"),
    opt("-W", "MS", "window in ms (default 1000)"),
    opt("-w", "MS", "sampling width per window in ms (default half the window)"),
    opt("-t", "US", "threshold in us (default 10)"),
    opt("-c", "CPU", "sample only this CPU (default all)"),
];

/// `bench hwlat [-d S] [-w WIDTH_MS] [-W WINDOW_MS] [-t THRESH_US] [-c CPU]`.
pub fn cmd_hwlat(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("hwlat", args, &OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 5, 1, 3600)?;
    let window_ms = a.num("-W", 1000, 10, 60_000)?;
    // Linux's default width is half the window; a width equal to the window would leave the
    // CPU no time to take its tick and the shell none to run.
    let width_ms = a.num("-w", window_ms / 2, 1, window_ms.saturating_sub(1).max(1))?;
    if width_ms >= window_ms {
        return Err(alloc::format!("-w ({} ms) must be shorter than -W ({} ms)", width_ms, window_ms));
    }
    let thresh_ns = a.num("-t", 10, 1, 1_000_000)? * 1000;
    let online = sched::online_mask();
    let cpus: Vec<u32> = match a.value("-c") {
        None => online.iter().map(|c| c as u32).collect(),
        Some(v) => match v.parse::<u32>() {
            Ok(c) if online.contains(c as usize) => alloc::vec![c],
            _ => return Err(alloc::format!("-c needs an online CPU, got '{}'", v)),
        },
    };
    let mut tasks = Vec::with_capacity(cpus.len());
    let mut stats = Vec::with_capacity(cpus.len());
    let start = crate::time::uptime_ns() + 20_000_000;
    let end = start + secs * 1_000_000_000;
    for &cpu in &cpus {
        let s = Arc::new(Stats::default());
        let mine = s.clone();
        let opts = SpawnOptions::new("hwlatd").pin(cpu).policy(Policy::Fifo, 99, 0).stack_size(16 * 1024);
        let body = move || {
            let mut window = start;
            while window < end {
                sched::sleep_until(window);
                sample(&mine, width_ms * 1_000_000, thresh_ns);
                window += window_ms * 1_000_000;
            }
            0
        };
        match spawn(opts, body) {
            Ok(t) => {
                tasks.push(t);
                stats.push((cpu, s));
            }
            Err(e) => {
                for t in &tasks {
                    let _ = sched::signal::kill(t.tid, sched::signal::SIGKILL);
                    let _ = wait(t.tid);
                }
                return Err(alloc::format!("could not start the sampler on cpu {}: {:?}", cpu, e));
            }
        }
    }
    for t in &tasks {
        let _ = wait(t.tid);
    }
    for (cpu, s) in &stats {
        let sampled = s.sampled_ns.load(Ordering::Relaxed);
        let gaps = s.gaps.load(Ordering::Relaxed);
        crate::kprintln!(
            "hwlat: cpu={} sampled_ms={} gaps={} gaps_per_s={:.1} over_100us={} over_1ms={} max_us={}",
            cpu,
            sampled / 1_000_000,
            gaps,
            if sampled > 0 { gaps as f64 * 1e9 / sampled as f64 } else { 0.0 },
            s.over_100us.load(Ordering::Relaxed),
            s.over_1ms.load(Ordering::Relaxed),
            s.max_ns.load(Ordering::Relaxed) / 1000
        );
    }
    Ok(())
}

/// Spins `width_ns` with interrupts off, recording every gap over `thresh_ns` between two
/// consecutive clock reads.
fn sample(s: &Stats, width_ns: u64, thresh_ns: u64) {
    let was = crate::irqflags::save();
    let t0 = crate::time::uptime_ns();
    let (mut gaps, mut over_100us, mut over_1ms, mut max) = (0u64, 0u64, 0u64, 0u64);
    let last = super::latency::spin_gaps(t0, t0 + width_ns, thresh_ns, |gap| {
        gaps += 1;
        over_100us += (gap > 100_000) as u64;
        over_1ms += (gap > 1_000_000) as u64;
        max = max.max(gap);
    });
    crate::irqflags::restore(was);
    s.sampled_ns.fetch_add(last - t0, Ordering::Relaxed);
    s.gaps.fetch_add(gaps, Ordering::Relaxed);
    s.over_100us.fetch_add(over_100us, Ordering::Relaxed);
    s.over_1ms.fetch_add(over_1ms, Ordering::Relaxed);
    s.max_ns.fetch_max(max, Ordering::Relaxed);
}
