//! `bench slice`: how precisely slices end, with and without hrtick.
//!
//! N CPU-bound fair tasks with different nice levels share one CPU. Every time one's slice
//! ends, the scheduler records how far it ran past the end (`sched::hrtick` statistics): with
//! only the periodic tick that is up to a tick; with hrtick, the timer latency. For each
//! configuration (hrtick on/off × hz 100/1000) one line, exactly:
//!
//!     slice: hrtick=<on|off> hz=<hz> p50_us=<n> p99_us=<n> max_us=<n> switches_per_s=<n> hog_loops_per_s=<n>
//!
//! `--wakers K` adds K tasks on the same CPU that wake every millisecond and run briefly, and
//! compares the wakeup-preemption restriction (`kernel.sched_wakeup_granularity_ns`) on and off:
//!
//!     slice-wakers: restriction=<on|off> granularity_ns=<n> wakers=<k> switches_per_s=<n> hog_loops_per_s=<n>

use super::{opt, Args, Opt};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, hrtick, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::Policy;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const NICES: [i32; 4] = [0, 2, 5, -3];

struct Run {
    switches_per_s: u64,
    loops_per_s: u64,
    overshoot_ns: Vec<u32>,
}

fn percentile(sorted: &[u32], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((sorted.len() - 1) * p).div_ceil(100);
    sorted[idx.min(sorted.len() - 1)] as u64
}

fn run_hogs(cpu: u32, hogs: usize, wakers: usize, ms: u64) -> Result<Run, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let loops = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let spawn_err = |e| alloc::format!("cannot start a task: {:?}", e);
    for i in 0..hogs {
        let (stop, loops) = (stop.clone(), loops.clone());
        let opts = SpawnOptions::new("slice-hog").policy(Policy::Normal, 0, NICES[i % NICES.len()]).pin(cpu);
        tasks.push(
            spawn(opts, move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    if n.is_multiple_of(1024) {
                        loops.fetch_add(1024, Ordering::Relaxed);
                    }
                }
                0
            })
            .map_err(spawn_err)?,
        );
    }
    for _ in 0..wakers {
        let stop = stop.clone();
        tasks.push(
            spawn(SpawnOptions::new("slice-waker").policy(Policy::Normal, 0, 0).pin(cpu), move || {
                while !stop.load(Ordering::Relaxed) {
                    sched::sleep_ns(1_000_000);
                    let until = crate::time::uptime_ns() + 50_000;
                    while crate::time::uptime_ns() < until {
                        core::hint::spin_loop();
                    }
                }
                0
            })
            .map_err(spawn_err)?,
        );
    }
    let rq = crate::percpu::get(cpu).map(|c| crate::sched::rq_of(c.cpu_id)).ok_or("bench cpu vanished")?;
    sched::sleep_ns(30_000_000);
    hrtick::stats_start();
    let (s0, l0, t0) = (rq.nr_switches.load(Ordering::Relaxed), loops.load(Ordering::Relaxed), crate::time::uptime_ns());
    sched::sleep_ns(ms * 1_000_000);
    let secs = (crate::time::uptime_ns() - t0) as f64 / 1e9;
    let switches = rq.nr_switches.load(Ordering::Relaxed) - s0;
    let done = loops.load(Ordering::Relaxed) - l0;
    let overshoot_ns = hrtick::stats_take();
    stop.store(true, Ordering::SeqCst);
    for t in &tasks {
        let _ = wait(t.tid);
    }
    Ok(Run { switches_per_s: (switches as f64 / secs) as u64, loops_per_s: (done as f64 / secs) as u64, overshoot_ns })
}

/// `bench slice`'s options.
const OPTS: [Opt; 3] = [
    opt("-d", "MS", "duration of each run in ms (default 1000)"),
    opt("-n", "N", "hogs (default 4)"),
    opt("--wakers", "N", "tasks that wake and sleep beside the hogs (default 0)"),
];

pub fn cmd_slice(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("slice", args, &OPTS)? else { return Ok(()) };
    let ms = a.num("-d", 1000, 50, 600_000)?;
    let hogs = a.num("-n", 4, 2, 64)? as usize;
    let wakers = a.num("--wakers", 0, 0, 64)? as usize;
    let cpu = sched::online_mask().iter().last().unwrap_or(0) as u32;
    let saved_hz = crate::arch::apic::tick_hz();
    let saved_hrtick = hrtick::enabled();
    let saved_gran = sched::fair_tunables().wakeup_granularity_ns;
    let mut result = Ok(());
    'outer: for hz in [100u32, 1000] {
        for on in [false, true] {
            crate::arch::apic::set_tick_hz(hz);
            hrtick::set_enabled(on);
            match run_hogs(cpu, hogs, 0, ms) {
                Ok(mut r) => {
                    r.overshoot_ns.sort_unstable();
                    let s = &r.overshoot_ns;
                    crate::kprintln!(
                        "slice: hrtick={} hz={} p50_us={} p99_us={} max_us={} switches_per_s={} hog_loops_per_s={}",
                        if on { "on" } else { "off" },
                        hz,
                        percentile(s, 50) / 1000,
                        percentile(s, 99) / 1000,
                        s.last().copied().unwrap_or(0) as u64 / 1000,
                        r.switches_per_s,
                        r.loops_per_s
                    );
                }
                Err(e) => {
                    result = Err(e);
                    break 'outer;
                }
            }
        }
    }
    if result.is_ok() && wakers > 0 {
        crate::arch::apic::set_tick_hz(saved_hz);
        hrtick::set_enabled(true);
        for gran in [saved_gran.max(1_000_000), 0] {
            sched::set_wakeup_granularity_ns(gran);
            match run_hogs(cpu, hogs, wakers, ms) {
                Ok(r) => crate::kprintln!(
                    "slice-wakers: restriction={} granularity_ns={} wakers={} switches_per_s={} hog_loops_per_s={}",
                    if gran > 0 { "on" } else { "off" },
                    gran,
                    wakers,
                    r.switches_per_s,
                    r.loops_per_s
                ),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
    }
    crate::arch::apic::set_tick_hz(saved_hz);
    hrtick::set_enabled(saved_hrtick);
    sched::set_wakeup_granularity_ns(saved_gran);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hrtick (off by default, as in Linux) ends fair slices at their end, not at the next
    /// tick: with it, the median overshoot is tens of µs under TCG; without it, about ¾ of a
    /// tick (3 ms at 250 Hz). The bound, a quarter tick, sits far from both, and a median does
    /// not move with the host's occasional vCPU stalls.
    #[test_case]
    fn hrtick_ends_fair_slices_before_the_next_tick() {
        let cpu = sched::online_mask().iter().last().unwrap_or(0) as u32;
        let saved = hrtick::enabled();
        hrtick::set_enabled(true);
        let run = run_hogs(cpu, 2, 0, 300);
        hrtick::set_enabled(saved);
        let mut over = run.expect("hogs ran").overshoot_ns;
        over.sort_unstable();
        let quarter_tick_ns = crate::timer::tick_period_ns() / 4;
        assert!(over.len() >= 20, "only {} slices ended in 300 ms", over.len());
        let p50 = percentile(&over, 50);
        assert!(p50 < quarter_tick_ns, "median slice overshoot {} ns with hrtick (bound {} ns)", p50, quarter_tick_ns);
    }
}
