//! Latency benchmarks, in the output formats of the Linux tools they mirror.
//!
//! * `bench cyclic [-t [N]] [-p PRIO] [-i INTERVAL_US] [-d DISTANCE_US] [-l LOOPS | -D SECONDS] [-a] [-m] [-q] [-h US] [--split]`:
//!   cyclictest (rt-tests). N threads (default 1; `-t` alone = one per CPU), thread i wakes every
//!   INTERVAL + i × DISTANCE µs (defaults 1000 and 500, as cyclictest) at absolute deadlines
//!   (`sleep_until`, cyclictest's `clock_nanosleep(TIMER_ABSTIME)`) and measures how late it
//!   woke, in whole µs. PRIO > 0: SCHED_FIFO at PRIO, 0: SCHED_OTHER. `-a` pins thread i to CPU
//!   i (mod the number of CPUs). The run ends when any thread has done LOOPS cycles (default
//!   1000; cyclictest's rule) or after SECONDS. `-m`/`-q` are accepted (always quiet). Output,
//!   one line per thread, cyclictest's `-q` format (printf `T:%2d (%5d) P:%2d I:%ld C:%7lu
//!   Min:%7ld Act:%5ld Avg:%5ld Max:%8ld`):
//!   `T: 0 (   17) P:90 I:1000 C:   1000 Min:      5 Act:   12 Avg:    9 Max:      57`.
//!   `--split` (Cadence's own, in the spirit of Linux's `timerlat` tracer, which reports IRQ and
//!   thread latency apart) adds one line per thread dividing the latency into timer expiry →
//!   interrupt, interrupt → wakeup, wakeup → switch and switch → running, average/max in µs:
//!   `split T: 0 cycles=998 irq=95/2400 irq>wake=6/40 wake>switch=20/900 switch>run=4/30`.
//! * `bench wakeup-latency [-d SECONDS] [-i INTERVAL_US] [-p PRIO]`: one periodic task (policy
//!   inherited, or SCHED_FIFO at PRIO) measuring its own lateness at each absolute deadline
//!   (defaults 5 s, 1000 µs); periods that passed entirely before it woke are *missed*:
//!   `maximum latency: <us> µs` / `average latency: <us> µs` / `missed timer events: <n>`
//!   (µs with one decimal).
//! * `bench pert [-d SECONDS] [-c CPU] [-t THRESHOLD_US] [-T BIG_US]`: the seed's hog-overhead
//!   measurement. A task pinned to CPU (default: the last online CPU) spins reading the clock;
//!   every gap between two reads longer than THRESHOLD (default 2 µs) is a *perturbation*: time
//!   the CPU gave to someone else (interrupts, other tasks). Once a second it prints
//!   `pert/s: <n> ><BIG>us: <n> min: <us> max:<us> avg:<us> sum/s:<us>us overhead:<pct>%`:
//!   perturbations that second, how many exceeded BIG (default 10 × THRESHOLD), the smallest /
//!   largest / mean perturbation, their total and its share of the second. [`pert`] is the
//!   reusable core (runs in the calling task, so a caller can place it in any group / CPU).
//!
//! Long runs (> 5 s) print a progress line every 5 s (lines start with the benchmark's name).

use super::{flag, opt, opt_maybe, Args, Opt};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::Policy;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

fn online_cpus() -> Vec<u32> {
    sched::online_mask().iter().map(|c| c as u32).collect()
}

// ----- cyclic ----------------------------------------------------------------------------------

#[derive(Default)]
struct CycStat {
    tid: AtomicU32,
    cycles: AtomicU64,
    min: AtomicU64,
    act: AtomicU64,
    max: AtomicU64,
    sum: AtomicU64,
    done: AtomicBool,
    /// cyclictest `-h`: one count per µs of latency (empty: no histogram), and the samples
    /// beyond it.
    hist: Vec<AtomicU64>,
    overflows: AtomicU64,
    /// `--split`: per part of the latency ([`SPLIT_PARTS`]), the summed and largest ns over the
    /// cycles that could be split.
    split_sum: [AtomicU64; SPLIT_PARTS],
    split_max: [AtomicU64; SPLIT_PARTS],
    split_n: AtomicU64,
}

/// The parts `bench cyclic --split` divides each latency into (in this order): timer expiry →
/// timer interrupt entry (the machine delivering it, or this CPU having interrupts off: see
/// `trace irqsoff` for which), interrupt entry → wakeup, wakeup → switch to the thread,
/// switch → the thread reading the clock.
pub const SPLIT_PARTS: usize = 4;
pub const SPLIT_NAMES: [&str; SPLIT_PARTS] = ["irq", "irq>wake", "wake>switch", "switch>run"];

/// One cyclictest thread's result.
#[derive(Clone, Copy, Debug)]
pub struct CyclicResult {
    pub tid: u32,
    pub prio: u32,
    pub interval_us: u64,
    pub cycles: u64,
    pub min_us: u64,
    pub act_us: u64,
    pub avg_us: u64,
    pub max_us: u64,
    /// `--split` (see [`SPLIT_PARTS`]): average and largest ns of each part, over
    /// `split_cycles` cycles (those whose wakeup came from this CPU's timer interrupt with no
    /// other timer interrupt before the thread ran: pinned threads, `-a`).
    pub split_avg_ns: [u64; SPLIT_PARTS],
    pub split_max_ns: [u64; SPLIT_PARTS],
    pub split_cycles: u64,
}

impl CyclicResult {
    /// cyclictest's quiet-mode line for thread `index`.
    pub fn line(&self, index: usize) -> String {
        alloc::format!(
            "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            index,
            self.tid,
            self.prio,
            self.interval_us,
            self.cycles,
            self.min_us,
            self.act_us,
            self.avg_us,
            self.max_us
        )
    }
}

impl CyclicResult {
    /// `bench cyclic --split`'s line for thread `index`: `split T: 0 cycles=<n>` then, per part,
    /// `<name>=<avg>/<max>` in µs.
    pub fn split_line(&self, index: usize) -> String {
        let mut s = alloc::format!("split T:{:2} cycles={}", index, self.split_cycles);
        for (k, name) in SPLIT_NAMES.iter().enumerate().take(SPLIT_PARTS) {
            s.push_str(&alloc::format!(" {}={}/{}", name, self.split_avg_ns[k] / 1000, self.split_max_ns[k] / 1000));
        }
        s
    }
}

/// Parameters of a cyclictest run.
#[derive(Clone, Copy, Debug)]
pub struct CyclicConfig {
    pub threads: usize,
    pub prio: u8,
    pub interval_us: u64,
    pub distance_us: u64,
    pub loops: u64,
    pub duration_s: u64,
    pub affine: bool,
    /// cyclictest `-h US`: histogram buckets of 1 µs (0 = none).
    pub histogram_us: u64,
}

/// One thread's histogram: counts per µs and the samples beyond the last bucket.
#[derive(Clone, Debug, Default)]
pub struct CyclicHistogram {
    pub counts: Vec<u64>,
    pub overflows: u64,
}

/// cyclictest's `-h` output for `results` and their `hists` (same order): `# Histogram`, one
/// line per µs bucket (`%06d` then each thread's count `%06lu`, tab-separated), then the
/// `# Total:`, `# Min/Avg/Max Latencies:`, `# Histogram Overflows:` lines and the overflow
/// section. Rows where every thread counted 0 are left out, as newer rt-tests do (the console
/// is slow under TCG); readers take a missing row as zeros.
pub fn histogram_text(results: &[CyclicResult], hists: &[CyclicHistogram]) -> String {
    use core::fmt::Write;
    let mut s = String::from("# Histogram\n");
    let buckets = hists.iter().map(|h| h.counts.len()).max().unwrap_or(0);
    for i in 0..buckets {
        let row: Vec<u64> = hists.iter().map(|h| h.counts.get(i).copied().unwrap_or(0)).collect();
        if row.iter().all(|&n| n == 0) {
            continue;
        }
        let _ = write!(s, "{:06} ", i);
        let cells: Vec<String> = row.iter().map(|n| alloc::format!("{:06}", n)).collect();
        let _ = writeln!(s, "{}", cells.join("\t"));
    }
    let line = |s: &mut String, name: &str, vals: &mut dyn Iterator<Item = u64>, width: usize| {
        let _ = write!(s, "# {}:", name);
        for v in vals {
            let _ = write!(s, " {:0w$}", v, w = width);
        }
        s.push('\n');
    };
    line(&mut s, "Total", &mut hists.iter().map(|h| h.counts.iter().sum::<u64>()), 9);
    line(&mut s, "Min Latencies", &mut results.iter().map(|r| r.min_us), 5);
    line(&mut s, "Avg Latencies", &mut results.iter().map(|r| r.avg_us), 5);
    line(&mut s, "Max Latencies", &mut results.iter().map(|r| r.max_us), 5);
    line(&mut s, "Histogram Overflows", &mut hists.iter().map(|h| h.overflows), 5);
    s.push_str("# Histogram Overflow at cycle number:\n");
    for (i, h) in hists.iter().enumerate() {
        // Cadence does not record which cycles overflowed: all are "others".
        if h.overflows > 0 {
            let _ = writeln!(s, "# Thread {}: # {:05} others", i, h.overflows);
        } else {
            let _ = writeln!(s, "# Thread {}:", i);
        }
    }
    s
}

/// Divides one cycle's latency (`next` → `now`) into its [`SPLIT_PARTS`] and adds them to
/// `st`, if this CPU's last timer interrupt began between the expiry and the wakeup.
fn split_cycle(st: &CycStat, next: u64, now: u64) {
    let entry = crate::timer::last_irq_entry_ns(crate::percpu::cpu_id());
    let Some((woken, lat)) = sched::signal::with_current(|t| {
        (t.stats.last_woken_at.load(Ordering::Relaxed), t.stats.last_wakeup_latency.load(Ordering::Relaxed))
    }) else {
        return;
    };
    let switched = woken + lat;
    if !(next <= entry && entry <= woken && switched <= now) {
        return;
    }
    for (i, part) in [entry - next, woken - entry, lat, now - switched].into_iter().enumerate() {
        st.split_sum[i].fetch_add(part, Ordering::Relaxed);
        st.split_max[i].fetch_max(part, Ordering::Relaxed);
    }
    st.split_n.fetch_add(1, Ordering::Relaxed);
}

/// Runs cyclictest's measurement; one result per thread.
pub fn cyclic(cfg: CyclicConfig) -> Result<Vec<CyclicResult>, String> {
    cyclic_with_histograms(cfg).map(|(r, _)| r)
}

/// [`cyclic`], with each thread's histogram (empty unless `cfg.histogram_us > 0`).
pub fn cyclic_with_histograms(cfg: CyclicConfig) -> Result<(Vec<CyclicResult>, Vec<CyclicHistogram>), String> {
    let cpus = online_cpus();
    let stop = Arc::new(AtomicBool::new(false));
    let stats: Arc<Vec<CycStat>> = Arc::new(
        (0..cfg.threads)
            .map(|_| CycStat {
                min: AtomicU64::new(u64::MAX),
                hist: (0..cfg.histogram_us).map(|_| AtomicU64::new(0)).collect(),
                ..Default::default()
            })
            .collect(),
    );
    let mut tids = Vec::new();
    for i in 0..cfg.threads {
        let interval_ns = (cfg.interval_us + i as u64 * cfg.distance_us) * 1000;
        let mut opts = SpawnOptions::new("cyclictest").stack_size(16 * 1024);
        if cfg.prio > 0 {
            opts = opts.policy(Policy::Fifo, cfg.prio, 0);
        }
        if cfg.affine {
            opts = opts.pin(cpus[i % cpus.len()]);
        }
        let (stop_t, stats_t, loops) = (stop.clone(), stats.clone(), cfg.loops);
        let t = spawn(opts, move || {
            let (stop, stats) = (stop_t, stats_t);
            let st = &stats[i];
            let mut next = crate::time::uptime_ns() + interval_ns;
            while !stop.load(Ordering::Relaxed) {
                sched::sleep_until(next);
                let now = crate::time::uptime_ns();
                split_cycle(st, next, now);
                let diff = now.saturating_sub(next) / 1000;
                st.act.store(diff, Ordering::Relaxed);
                st.min.fetch_min(diff, Ordering::Relaxed);
                st.max.fetch_max(diff, Ordering::Relaxed);
                st.sum.fetch_add(diff, Ordering::Relaxed);
                match st.hist.get(diff as usize) {
                    Some(bucket) => {
                        bucket.fetch_add(1, Ordering::Relaxed);
                    }
                    None if !st.hist.is_empty() => {
                        st.overflows.fetch_add(1, Ordering::Relaxed);
                    }
                    None => {}
                }
                let c = st.cycles.fetch_add(1, Ordering::Relaxed) + 1;
                next += interval_ns;
                while next < now {
                    next += interval_ns;
                }
                if loops > 0 && c >= loops {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            st.done.store(true, Ordering::Release);
            0
        });
        match t {
            Ok(t) => {
                stats[i].tid.store(t.tid, Ordering::Relaxed);
                tids.push(t.tid);
            }
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                for t in tids {
                    let _ = wait(t);
                }
                return Err(alloc::format!("cannot start thread {}: {:?}", i, e));
            }
        }
    }
    let t0 = crate::time::uptime_ns();
    let mut last_progress = t0;
    let expected_s = if cfg.duration_s > 0 { cfg.duration_s } else { cfg.loops * cfg.interval_us / 1_000_000 };
    while !stats.iter().all(|s| s.done.load(Ordering::Acquire)) {
        sched::sleep_ns(200_000_000);
        let now = crate::time::uptime_ns();
        if cfg.duration_s > 0 && now - t0 >= cfg.duration_s * 1_000_000_000 {
            stop.store(true, Ordering::SeqCst);
        }
        if expected_s > 5 && now - last_progress >= 5_000_000_000 {
            last_progress = now;
            crate::kprintln!(
                "cyclic: {} s, T: 0 C: {} Max: {}",
                (now - t0) / 1_000_000_000,
                stats[0].cycles.load(Ordering::Relaxed),
                stats.iter().map(|s| s.max.load(Ordering::Relaxed)).max().unwrap_or(0)
            );
        }
    }
    for t in tids {
        let _ = wait(t);
    }
    let hists = stats
        .iter()
        .map(|s| CyclicHistogram {
            counts: s.hist.iter().map(|b| b.load(Ordering::Relaxed)).collect(),
            overflows: s.overflows.load(Ordering::Relaxed),
        })
        .collect();
    let results = stats
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = s.cycles.load(Ordering::Relaxed);
            CyclicResult {
                tid: s.tid.load(Ordering::Relaxed),
                prio: cfg.prio as u32,
                interval_us: cfg.interval_us + i as u64 * cfg.distance_us,
                cycles: c,
                min_us: if c == 0 { 0 } else { s.min.load(Ordering::Relaxed) },
                act_us: s.act.load(Ordering::Relaxed),
                avg_us: s.sum.load(Ordering::Relaxed).checked_div(c).unwrap_or(0),
                max_us: s.max.load(Ordering::Relaxed),
                split_avg_ns: core::array::from_fn(|k| s.split_sum[k].load(Ordering::Relaxed) / s.split_n.load(Ordering::Relaxed).max(1)),
                split_max_ns: core::array::from_fn(|k| s.split_max[k].load(Ordering::Relaxed)),
                split_cycles: s.split_n.load(Ordering::Relaxed),
            }
        })
        .collect();
    Ok((results, hists))
}

/// `bench cyclic`'s options.
const CYCLIC_OPTS: [Opt; 11] = [
    opt_maybe("-t", "N", "threads (default 1; -t alone: one per CPU)"),
    opt("-p", "PRIO", "SCHED_FIFO priority (0: SCHED_OTHER, the default)"),
    opt("-i", "US", "interval of thread 0 in us (default 1000)"),
    opt("-d", "US", "interval distance between threads in us (default 500; 0 with -h, as cyclictest)"),
    opt("-l", "LOOPS", "cycles (default 1000, or none with -D)"),
    opt("-D", "S", "duration in seconds"),
    flag("-a", "pin thread i to CPU i"),
    flag("-m", "accepted (cyclictest's mlockall)"),
    flag("-q", "accepted (always quiet)"),
    opt("-h", "US", "histogram up to US"),
    flag("--split", "split each latency into its stages (needs -a)"),
];

pub fn cmd_cyclic(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("cyclic", args, &CYCLIC_OPTS)? else { return Ok(()) };
    let ncpus = online_cpus().len() as u64;
    let threads = match a.value("-t") {
        Some(v) if !v.starts_with('-') => a.num("-t", 1, 1, 64)?,
        _ if a.has("-t") => ncpus,
        _ => 1,
    };
    let histogram_us = a.num("-h", 0, 1, 100_000)?;
    // cyclictest's rule: with a histogram every thread runs at the first interval (its
    // `process_options` warns when -d was given too).
    let distance_us = if histogram_us > 0 {
        if a.value("-d").is_some() {
            crate::kprintln!("WARN: distance is ignored and set to 0, if histogram enabled");
        }
        0
    } else {
        a.num("-d", 500, 0, 10_000_000)?
    };
    let cfg = CyclicConfig {
        threads: threads as usize,
        prio: a.num("-p", 0, 0, 99)? as u8,
        interval_us: a.num("-i", 1000, 10, 10_000_000)?,
        distance_us,
        loops: a.num("-l", if a.value("-D").is_some() { 0 } else { 1000 }, 0, 100_000_000)?,
        duration_s: a.num("-D", 0, 0, 86_400)?,
        affine: a.has("-a"),
        histogram_us,
    };
    if a.has("--split") && !cfg.affine {
        // The split reads the timer interrupt of the CPU the thread runs on: a thread that may
        // migrate would be matched with another CPU's interrupt.
        return Err(String::from("--split needs pinned threads (-a)"));
    }
    if cfg.loops == 0 && cfg.duration_s == 0 {
        return Err(String::from("give a loop count (-l) or a duration (-D)"));
    }
    let (results, hists) = cyclic_with_histograms(cfg)?;
    if cfg.histogram_us > 0 {
        crate::kprint!("{}", histogram_text(&results, &hists));
    }
    for (i, r) in results.iter().enumerate() {
        crate::kprintln!("{}", r.line(i));
    }
    if a.has("--split") {
        for (i, r) in results.iter().enumerate() {
            crate::kprintln!("{}", r.split_line(i));
        }
    }
    Ok(())
}

// ----- wakeup-latency ---------------------------------------------------------------------------

/// Summary of a periodic-timer run.
#[derive(Clone, Copy, Debug, Default)]
pub struct WakeupLatency {
    pub samples: u64,
    pub max_ns: u64,
    pub sum_ns: u64,
    pub missed: u64,
}

/// Runs a periodic task for `secs` at `interval_us`; returns its lateness summary.
pub fn wakeup_latency(secs: u64, interval_us: u64, prio: u8) -> Result<WakeupLatency, String> {
    let out = Arc::new(crate::sync::IrqLock::new(WakeupLatency::default()));
    let o = out.clone();
    let mut opts = SpawnOptions::new("wakeup-latency").stack_size(16 * 1024);
    if prio > 0 {
        opts = opts.policy(Policy::Fifo, prio, 0);
    }
    let t = spawn(opts, move || {
        let interval = interval_us * 1000;
        let t0 = crate::time::uptime_ns();
        let end = t0 + secs * 1_000_000_000;
        let mut next = t0 + interval;
        let mut r = WakeupLatency::default();
        let mut last_progress = t0;
        while next <= end {
            sched::sleep_until(next);
            let now = crate::time::uptime_ns();
            let late = now.saturating_sub(next);
            r.samples += 1;
            r.sum_ns += late;
            r.max_ns = r.max_ns.max(late);
            next += interval;
            while next <= now {
                next += interval;
                r.missed += 1;
            }
            if secs > 5 && now - last_progress >= 5_000_000_000 {
                last_progress = now;
                crate::kprintln!(
                    "wakeup-latency: {}/{} s, max so far {:.1} µs",
                    (now - t0) / 1_000_000_000,
                    secs,
                    r.max_ns as f64 / 1000.0
                );
            }
        }
        *o.lock() = r;
        0
    })
    .map_err(|e| alloc::format!("cannot start the timer task: {:?}", e))?;
    let _ = wait(t.tid);
    let r = *out.lock();
    Ok(r)
}

/// `bench wakeup-latency`'s options.
const WAKEUP_OPTS: [Opt; 3] = [
    opt("-d", "S", "duration in seconds (default 5)"),
    opt("-i", "US", "period in us (default 1000)"),
    opt("-p", "PRIO", "SCHED_FIFO priority (default: inherited policy)"),
];

pub fn cmd_wakeup_latency(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("wakeup-latency", args, &WAKEUP_OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 5, 1, 86_400)?;
    let interval = a.num("-i", 1000, 10, 10_000_000)?;
    let prio = a.num("-p", 0, 0, 99)? as u8;
    let r = wakeup_latency(secs, interval, prio)?;
    let avg = if r.samples == 0 { 0.0 } else { r.sum_ns as f64 / r.samples as f64 / 1000.0 };
    crate::kprintln!("maximum latency: {:.1} µs", r.max_ns as f64 / 1000.0);
    crate::kprintln!("average latency: {:.1} µs", avg);
    crate::kprintln!("missed timer events: {}", r.missed);
    Ok(())
}

// ----- pert ------------------------------------------------------------------------------------

/// One second of `pert`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PertSecond {
    pub count: u64,
    pub big: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub sum_ns: u64,
    /// Length of the measured interval (about 1 s).
    pub span_ns: u64,
}

impl PertSecond {
    /// The seed's line.
    pub fn line(&self, big_ns: u64) -> String {
        let us = |ns: u64| ns as f64 / 1000.0;
        let span = self.span_ns.max(1) as f64;
        let per_s = |n: u64| (n as f64 * 1e9 / span) as u64;
        alloc::format!(
            "pert/s: {:>8} >{:.2}us: {:>8} min: {:.2} max:{:>8.2} avg:{:>8.2} sum/s:{:>7}us overhead:{:.2}%",
            per_s(self.count),
            us(big_ns),
            per_s(self.big),
            if self.count == 0 { 0.0 } else { us(self.min_ns) },
            us(self.max_ns),
            if self.count == 0 { 0.0 } else { us(self.sum_ns) / self.count as f64 },
            (self.sum_ns as f64 / span * 1e6) as u64,
            self.sum_ns as f64 / span * 100.0
        )
    }
}

/// Spins in the calling task for `secs` seconds, calling `each` with every second's figures.
/// Gaps longer than `threshold_ns` between consecutive clock reads count as perturbations,
/// those longer than `big_ns` also as big ones.
pub fn pert(secs: u64, threshold_ns: u64, big_ns: u64, mut each: impl FnMut(&PertSecond)) {
    let mut prev = crate::time::uptime_ns();
    for _ in 0..secs {
        let start = prev;
        let mut s = PertSecond { min_ns: u64::MAX, ..Default::default() };
        prev = spin_gaps(start, start + 1_000_000_000, threshold_ns, |gap| {
            s.count += 1;
            s.sum_ns += gap;
            s.min_ns = s.min_ns.min(gap);
            s.max_ns = s.max_ns.max(gap);
            if gap > big_ns {
                s.big += 1;
            }
        });
        s.span_ns = prev - start;
        each(&s);
    }
}

/// Reads the clock back to back from `from_ns` (the last read) until `until_ns`, calling
/// `gap` with every interval between two reads longer than `threshold_ns`; returns the last
/// read. The loop of `pert` (interrupts on) and `bench hwlat` (interrupts off).
pub fn spin_gaps(from_ns: u64, until_ns: u64, threshold_ns: u64, mut gap: impl FnMut(u64)) -> u64 {
    let mut prev = from_ns;
    while prev < until_ns {
        let now = crate::time::uptime_ns();
        let g = now.saturating_sub(prev);
        if g > threshold_ns {
            gap(g);
        }
        prev = now;
    }
    prev
}

/// `bench pert`'s options.
const PERT_OPTS: [Opt; 4] = [
    opt("-d", "S", "duration in seconds (default 5)"),
    opt("-c", "CPU", "CPU to measure (default the last online)"),
    opt("-t", "US", "perturbation threshold in us (default 2)"),
    opt("-T", "US", "big perturbation threshold in us (default 10 x threshold)"),
];

pub fn cmd_pert(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("pert", args, &PERT_OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 5, 1, 86_400)?;
    let cpus = online_cpus();
    let cpu = a.num("-c", *cpus.last().unwrap_or(&0) as u64, 0, 63)? as u32;
    if !cpus.contains(&(cpu)) {
        return Err(alloc::format!("cpu {} is not online", cpu));
    }
    let threshold_us = a.num("-t", 2, 1, 1_000_000)?;
    let threshold = threshold_us * 1000;
    let big = a.num("-T", threshold_us * 10, 1, 10_000_000)? * 1000;
    let t = spawn(SpawnOptions::new("pert").pin(cpu).stack_size(16 * 1024), move || {
        pert(secs, threshold, big, |s| crate::kprintln!("{}", s.line(big)));
        0
    })
    .map_err(|e| alloc::format!("cannot start pert: {:?}", e))?;
    let _ = wait(t.tid);
    Ok(())
}
