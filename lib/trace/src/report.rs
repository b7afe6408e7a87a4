//! Reports computed from a stream of events in timestamp order.
//!
//! **Wakeup latency**: from a `sched_wakeup`/`sched_wakeup_new` of task T to the next
//! `sched_switch` that switches T in. A wakeup of a task that is running at that moment (it was
//! woken before it got to switch out) starts no latency; a second wakeup before T runs keeps the
//! first. Latencies are split by the woken task's class, read from its Linux prio (`< 100`:
//! rt, else fair). Summary lines (exact format):
//!
//! ```text
//! wakeup latency (all):
//! total_wakeups: <n>
//! avg_wakeup_latency (ns): <n>      (integer mean, 0 when there is none)
//! min_wakeup_latency (ns): <n>
//! max_wakeup_latency (ns): <n>
//! ```
//!
//! **Histogram**: log2 buckets of the wakeup latencies in ns (bucket i holds `[2^i, 2^(i+1))`,
//! bucket 0 also holds 0), printed from the first to the last non-empty bucket with ASCII bars.
//!
//! **Per-task table** (`perf sched latency`): runtime (switch-in to switch-out on a CPU),
//! switches (times switched in), and delay = time runnable before being switched in, measured
//! from a wakeup or from being preempted (switched out in state `R`); average and maximum, with
//! the time the maximum ended. Idle (pid 0) is left out.
//!
//! All timestamps are first truncated to whole microseconds ([`quantize`]), the precision of the
//! ftrace text, so the kernel's report of its buffers and the host's report of the exported text
//! are identical. Arithmetic saturates; no input panics.

use crate::event::{Comm, Event, EventKind, TaskInfo};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// Truncates a timestamp to whole microseconds (the ftrace text's precision).
pub fn quantize(ts_ns: u64) -> u64 {
    ts_ns - ts_ns % 1000
}

/// Count, sum, min and max of latencies in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyStats {
    pub count: u64,
    pub sum_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl LatencyStats {
    pub fn add(&mut self, ns: u64) {
        self.min_ns = if self.count == 0 { ns } else { self.min_ns.min(ns) };
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count += 1;
    }

    /// Integer mean (0 when empty).
    pub fn avg_ns(&self) -> u64 {
        self.sum_ns.checked_div(self.count).unwrap_or(0)
    }

    /// The summary block: a `wakeup latency (<title>):` header and the four lines.
    pub fn write_summary(&self, out: &mut impl Write, title: &str) -> fmt::Result {
        writeln!(out, "wakeup latency ({}):", title)?;
        writeln!(out, "total_wakeups: {}", self.count)?;
        writeln!(out, "avg_wakeup_latency (ns): {}", self.avg_ns())?;
        writeln!(out, "min_wakeup_latency (ns): {}", if self.count == 0 { 0 } else { self.min_ns })?;
        writeln!(out, "max_wakeup_latency (ns): {}", self.max_ns)
    }
}

/// Log2 histogram of latencies in ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    pub buckets: [u64; 64],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: [0; 64] }
    }
}

impl Histogram {
    /// Bucket of `ns`: i with `2^i <= ns < 2^(i+1)` (0 for 0 and 1).
    pub fn bucket(ns: u64) -> usize {
        if ns == 0 {
            0
        } else {
            63 - ns.leading_zeros() as usize
        }
    }

    pub fn add(&mut self, ns: u64) {
        self.buckets[Self::bucket(ns)] += 1;
    }

    /// Non-empty range of buckets (first..=last), if any.
    pub fn span(&self) -> Option<(usize, usize)> {
        let first = self.buckets.iter().position(|&c| c != 0)?;
        let last = self.buckets.iter().rposition(|&c| c != 0)?;
        Some((first, last))
    }

    /// Lower bound of bucket `i` in ns (0 for bucket 0).
    pub fn lower(i: usize) -> u64 {
        if i == 0 {
            0
        } else {
            1u64 << i.min(63)
        }
    }

    /// Upper bound (exclusive) of bucket `i`, saturated at `u64::MAX`.
    pub fn upper(i: usize) -> u64 {
        1u64.checked_shl(i as u32 + 1).unwrap_or(u64::MAX)
    }

    /// `[lo, hi) count |@@@@   |` lines, bars scaled to the fullest bucket (50 columns).
    pub fn write(&self, out: &mut impl Write, title: &str) -> fmt::Result {
        writeln!(out, "{}:", title)?;
        let Some((first, last)) = self.span() else {
            return writeln!(out, "  (no samples)");
        };
        let peak = self.buckets[first..=last].iter().copied().max().unwrap_or(1).max(1);
        for i in first..=last {
            let c = self.buckets[i];
            let bar = (c.saturating_mul(50) / peak) as usize + usize::from(c > 0 && c * 50 < peak);
            let bar = bar.min(50);
            write!(out, "[{:>11}, {:>11}) {:>9} |", Self::lower(i), Self::upper(i), c)?;
            for _ in 0..bar {
                out.write_char('@')?;
            }
            for _ in bar..50 {
                out.write_char(' ')?;
            }
            out.write_str("|\n")?;
        }
        Ok(())
    }
}

/// One row of the per-task table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskLatency {
    pub comm: Comm,
    pub pid: u32,
    pub runtime_ns: u64,
    pub switches: u64,
    pub delay: LatencyStats,
    /// When the maximum delay ended (the switch-in), ns.
    pub max_delay_at_ns: u64,
}

/// Everything a report prints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub events: u64,
    pub lost: u64,
    pub all: LatencyStats,
    pub rt: LatencyStats,
    pub fair: LatencyStats,
    pub hist: Histogram,
    /// Every rt / fair wakeup latency (ns), sorted ascending by [`Analyzer::finish`], for
    /// the percentiles.
    pub rt_samples: Vec<u64>,
    pub fair_samples: Vec<u64>,
    /// `sched_switch` events, and the first and last event timestamps (ns).
    pub switches: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Sorted by average delay, then maximum delay (both descending), then pid.
    pub tasks: Vec<TaskLatency>,
}

#[derive(Clone, Copy)]
struct Pending {
    since: u64,
    wakeup: bool,
    rt: bool,
}

/// Consumes events in timestamp order ([`Analyzer::feed`]) and produces a [`Report`].
#[derive(Default)]
pub struct Analyzer {
    /// CPU → (pid running, since). Unknown until the CPU's first switch.
    running_on: BTreeMap<u32, (u32, u64)>,
    /// pid → CPU it runs on.
    running: BTreeMap<u32, u32>,
    pending: BTreeMap<u32, Pending>,
    tasks: BTreeMap<u32, TaskLatency>,
    report: Report,
    /// Delays that began before this time are not counted (see [`window_start`]).
    window_start_ns: u64,
}

impl Analyzer {
    pub fn new() -> Self {
        Self::default()
    }

    /// An analyzer that counts only delays beginning at or after `ns` ([`window_start`]).
    pub fn from_window_start(ns: u64) -> Self {
        Analyzer { window_start_ns: quantize(ns), ..Self::default() }
    }

    fn task(&mut self, t: &TaskInfo) -> &mut TaskLatency {
        let row = self.tasks.entry(t.pid).or_insert_with(|| TaskLatency { pid: t.pid, ..Default::default() });
        row.comm = t.comm;
        row
    }

    pub fn feed(&mut self, e: &Event) {
        self.report.events += 1;
        let ts = quantize(e.ts_ns);
        if self.report.events == 1 {
            self.report.first_ns = ts;
        }
        self.report.last_ns = self.report.last_ns.max(ts);
        match &e.kind {
            EventKind::Switch { prev, prev_state, next } => {
                self.report.switches += 1;
                if let Some((pid, since)) = self.running_on.remove(&e.cpu) {
                    self.running.remove(&pid);
                    if pid != 0 && pid == prev.pid {
                        let d = ts.saturating_sub(since);
                        let row = self.task(prev);
                        row.runtime_ns = row.runtime_ns.saturating_add(d);
                    }
                }
                if prev.pid != 0 {
                    if *prev_state == b'R' {
                        self.pending.insert(prev.pid, Pending { since: ts, wakeup: false, rt: prev.is_rt() });
                    } else {
                        self.pending.remove(&prev.pid);
                    }
                }
                self.running_on.insert(e.cpu, (next.pid, ts));
                if next.pid != 0 {
                    self.running.insert(next.pid, e.cpu);
                    let start = self.window_start_ns;
                    let p = self.pending.remove(&next.pid).filter(|p| p.since >= start);
                    let row = self.task(next);
                    row.switches += 1;
                    if let Some(p) = p {
                        let d = ts.saturating_sub(p.since);
                        if d >= row.delay.max_ns || row.delay.count == 0 {
                            row.max_delay_at_ns = ts;
                        }
                        row.delay.add(d);
                        if p.wakeup {
                            self.report.all.add(d);
                            if p.rt {
                                self.report.rt.add(d);
                                self.report.rt_samples.push(d);
                            } else {
                                self.report.fair.add(d);
                                self.report.fair_samples.push(d);
                            }
                            self.report.hist.add(d);
                        }
                    }
                }
            }
            EventKind::Wakeup { task, .. } => {
                if task.pid == 0 || self.running.contains_key(&task.pid) {
                    return;
                }
                match self.pending.get(&task.pid) {
                    Some(p) if p.wakeup => {}
                    _ => {
                        self.pending.insert(task.pid, Pending { since: ts, wakeup: true, rt: task.is_rt() });
                    }
                }
            }
            EventKind::Exit { task } => {
                self.pending.remove(&task.pid);
            }
            _ => {}
        }
    }

    /// The report; `lost` is the number of events the ring buffers overwrote.
    pub fn finish(mut self, lost: u64) -> Report {
        // A task still running at the end: count its runtime up to its CPU's last event? No:
        // like perf, only completed run intervals count.
        let mut tasks: Vec<TaskLatency> = self.tasks.into_values().filter(|t| t.pid != 0).collect();
        tasks.sort_by(|a, b| b.delay.avg_ns().cmp(&a.delay.avg_ns()).then(b.delay.max_ns.cmp(&a.delay.max_ns)).then(a.pid.cmp(&b.pid)));
        self.report.tasks = tasks;
        self.report.lost = lost;
        self.report.rt_samples.sort_unstable();
        self.report.fair_samples.sort_unstable();
        self.report
    }
}

/// The `p`-th percentile (0..=100) of ascending `sorted` by nearest rank (the smallest value
/// with at least p% of the samples at or below it); 0 when empty.
pub fn percentile(sorted: &[u64], p: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (sorted.len() as u64 * p.min(100) as u64).div_ceil(100).max(1);
    sorted[(rank - 1) as usize]
}

/// Where a trace whose per-CPU rings overwrote their oldest events (`lost` > 0) becomes
/// complete: the latest of the CPUs' first events. Before it, one CPU's events are there and
/// another's are gone, so a wakeup sent from a CPU whose ring reaches further back would pair
/// with a switch-in far later than the lost one, a delay that never happened (the traced
/// `make compare` row once reported a 210 ms RT wakeup this way: CPU 0's ring started 0.25 s
/// before CPU 1's). Linux's trace output marks the same place with `##### CPU N buffer
/// started ####`. 0 when nothing was lost.
pub fn window_start(events: &[Event], lost: u64) -> u64 {
    if lost == 0 {
        return 0;
    }
    let mut first: BTreeMap<u32, u64> = BTreeMap::new();
    for e in events {
        first.entry(e.cpu).or_insert(e.ts_ns);
    }
    first.values().copied().max().unwrap_or(0)
}

/// Analyzes events already in timestamp order, counting only delays that begin inside the
/// complete window ([`window_start`]).
pub fn analyze(events: &[Event], lost: u64) -> Report {
    let mut a = Analyzer::from_window_start(window_start(events, lost));
    for e in events {
        a.feed(e);
    }
    a.finish(lost)
}

/// `ns` as milliseconds with three decimals (e.g. `12.345`).
fn ms(ns: u64) -> String {
    let us = ns / 1000;
    alloc::format!("{}.{:03}", us / 1000, us % 1000)
}

impl Report {
    /// The whole report: event counts, the three summaries (all, rt, fair), the histogram, the
    /// per-task table.
    pub fn write(&self, out: &mut impl Write) -> fmt::Result {
        writeln!(out, "trace: {} events, {} lost", self.events, self.lost)?;
        self.all.write_summary(out, "all")?;
        self.rt.write_summary(out, "rt")?;
        self.fair.write_summary(out, "fair")?;
        for (title, samples) in [("rt", &self.rt_samples), ("fair", &self.fair_samples)] {
            writeln!(
                out,
                "wakeup latency percentiles ({}): p50_ns={} p99_ns={} max_ns={}",
                title,
                percentile(samples, 50),
                percentile(samples, 99),
                samples.last().copied().unwrap_or(0)
            )?;
        }
        let span_ns = self.last_ns.saturating_sub(self.first_ns);
        let per_s = (self.switches as u128 * 1_000_000_000).checked_div(span_ns as u128).unwrap_or(0);
        writeln!(out, "switches: {} in {} ms ({} per second)", self.switches, ms(span_ns), per_s)?;
        self.hist.write(out, "wakeup latency histogram (ns)")?;
        self.write_tasks(out)
    }

    /// The `perf sched latency` table.
    pub fn write_tasks(&self, out: &mut impl Write) -> fmt::Result {
        const RULE: &str =
            " -----------------------------------------------------------------------------------------------------------------";
        writeln!(out, "{}", RULE)?;
        writeln!(
            out,
            "  Task                  |   Runtime ms  | Switches | Average delay ms | Maximum delay ms | Maximum delay at       |"
        )?;
        writeln!(out, "{}", RULE)?;
        let (mut runtime, mut switches) = (0u64, 0u64);
        for t in &self.tasks {
            let name = alloc::format!("  {}:{} ", t.comm, t.pid);
            let at_us = t.max_delay_at_ns / 1000;
            writeln!(
                out,
                "{:<24}|{:>11} ms |{:>9} | avg:{:>9} ms | max:{:>9} ms | max at: {:>6}.{:06} s",
                name,
                ms(t.runtime_ns),
                t.switches,
                ms(t.delay.avg_ns()),
                ms(t.delay.max_ns),
                at_us / 1_000_000,
                at_us % 1_000_000
            )?;
            runtime = runtime.saturating_add(t.runtime_ns);
            switches = switches.saturating_add(t.switches);
        }
        writeln!(out, "{}", RULE)?;
        writeln!(out, "  TOTAL:                |{:>11} ms |{:>9} |", ms(runtime), switches)?;
        writeln!(out, " ---------------------------------------------------")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftrace;

    fn t(comm: &str, pid: u32, prio: i32) -> TaskInfo {
        TaskInfo { comm: Comm::new(comm), pid, prio }
    }
    fn idle(cpu: u32) -> TaskInfo {
        t("swapper", 0, 120).with_comm(Comm::with_number("swapper/", cpu))
    }
    impl TaskInfo {
        fn with_comm(mut self, c: Comm) -> Self {
            self.comm = c;
            self
        }
    }
    fn ev(ts_ns: u64, cpu: u32, kind: EventKind) -> Event {
        Event { ts_ns, cpu, comm: Comm::new("x"), pid: 1, kind }
    }
    fn wake(ts: u64, cpu: u32, task: TaskInfo) -> Event {
        ev(ts, cpu, EventKind::Wakeup { task, target_cpu: cpu, new: false })
    }
    fn sw(ts: u64, cpu: u32, prev: TaskInfo, st: u8, next: TaskInfo) -> Event {
        ev(ts, cpu, EventKind::Switch { prev, prev_state: st, next })
    }

    #[test]
    fn stats_arithmetic() {
        let mut s = LatencyStats::default();
        assert_eq!((s.avg_ns(), s.min_ns, s.max_ns), (0, 0, 0));
        for v in [5000, 1000, 3000] {
            s.add(v);
        }
        assert_eq!(s, LatencyStats { count: 3, sum_ns: 9000, min_ns: 1000, max_ns: 5000 });
        assert_eq!(s.avg_ns(), 3000);
        let mut out = String::new();
        s.write_summary(&mut out, "all").unwrap();
        assert_eq!(
            out,
            "wakeup latency (all):\ntotal_wakeups: 3\navg_wakeup_latency (ns): 3000\n\
             min_wakeup_latency (ns): 1000\nmax_wakeup_latency (ns): 5000\n"
        );
        s.add(u64::MAX);
        assert_eq!(s.sum_ns, u64::MAX);
    }

    #[test]
    fn histogram_buckets() {
        assert_eq!(Histogram::bucket(0), 0);
        assert_eq!(Histogram::bucket(1), 0);
        assert_eq!(Histogram::bucket(2), 1);
        assert_eq!(Histogram::bucket(1023), 9);
        assert_eq!(Histogram::bucket(1024), 10);
        assert_eq!(Histogram::bucket(u64::MAX), 63);
        assert_eq!(Histogram::upper(63), u64::MAX);
        let mut h = Histogram::default();
        h.add(1500);
        h.add(1500);
        h.add(5000);
        assert_eq!(h.span(), Some((10, 12)));
        let mut out = String::new();
        h.write(&mut out, "h").unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[1].starts_with("[       1024,        2048)         2 |@@@@@"));
        assert!(lines[2].contains("        0 |     "));
        assert!(lines[3].contains("        1 |@@@@@@@@@@@@@@@@@@@@@@@@@ "));
    }

    #[test]
    fn delays_begun_before_every_ring_had_started_are_not_counted() {
        // CPU 0's ring reaches back to 1 ms, CPU 1's only to 100 ms (its older events were
        // overwritten): the wakeup at 2 ms sent to CPU 1 pairs with a switch-in whose
        // predecessor events are gone, so the 98 ms are no delay that was seen.
        let r = t("rt", 5, 9);
        let evs = [
            sw(1_000_000, 0, idle(0), b'R', t("x", 6, 120)),
            wake(2_000_000, 0, r),
            sw(100_000_000, 1, idle(1), b'R', r),
            sw(101_000_000, 1, r, b'S', idle(1)),
            wake(102_000_000, 0, r),
            sw(102_050_000, 1, idle(1), b'R', r),
        ];
        assert_eq!(window_start(&evs, 3), 100_000_000);
        let rep = analyze(&evs, 3);
        assert_eq!(rep.rt, LatencyStats { count: 1, sum_ns: 50_000, min_ns: 50_000, max_ns: 50_000 });
        // Nothing lost: every ring is whole, the first wakeup counts.
        assert_eq!(window_start(&evs, 0), 0);
        assert_eq!(analyze(&evs, 0).rt.count, 2);
    }

    #[test]
    fn wakeup_latency_per_class_and_perf_table() {
        let a = t("fair-a", 10, 120);
        let r = t("rt-b", 11, 9);
        let evs = [
            sw(1_000_000, 0, idle(0), b'R', a), // a runs on cpu0
            wake(1_500_000, 0, a),              // running: ignored
            sw(2_000_000, 0, a, b'S', idle(0)), // a sleeps after 1 ms
            wake(3_000_100, 1, a),              // a woken (quantized to 3_000_000)
            wake(3_500_000, 1, a),              // second wakeup keeps the first
            wake(4_000_000, 0, r),              // rt woken
            sw(4_010_999, 0, idle(0), b'R', r), // rt in: 10 us
            sw(4_020_000, 0, r, b'R', a),       // rt preempted; a in: 1.02 ms
            sw(5_020_000, 0, a, b'S', r),       // rt back: 1 ms delay (not a wakeup)
            ev(5_030_000, 0, EventKind::Exit { task: r }),
            sw(5_030_000, 0, r, b'Z', idle(0)),
        ];
        let rep = analyze(&evs, 7);
        assert_eq!(rep.events, evs.len() as u64);
        assert_eq!(rep.lost, 7);
        assert_eq!(rep.all, LatencyStats { count: 2, sum_ns: 1_030_000, min_ns: 10_000, max_ns: 1_020_000 });
        assert_eq!(rep.rt, LatencyStats { count: 1, sum_ns: 10_000, min_ns: 10_000, max_ns: 10_000 });
        assert_eq!(rep.fair.count, 1);
        assert_eq!(rep.fair.max_ns, 1_020_000);
        assert_eq!(rep.hist.buckets.iter().sum::<u64>(), 2);
        // Sorted by average delay: a (1.02 ms) before r (avg of 10 us and 1 ms = 505 us).
        let ta = rep.tasks[0];
        assert_eq!((ta.pid, ta.switches, ta.runtime_ns), (10, 2, 2_000_000));
        let tr = rep.tasks[1];
        assert_eq!((tr.pid, tr.switches, tr.runtime_ns), (11, 2, 20_000));
        assert_eq!(tr.delay, LatencyStats { count: 2, sum_ns: 1_010_000, min_ns: 10_000, max_ns: 1_000_000 });
        assert_eq!(tr.max_delay_at_ns, 5_020_000);
        let mut out = String::new();
        rep.write(&mut out).unwrap();
        assert!(
            out.contains(
                "  fair-a:10             |      2.000 ms |        2 | avg:    1.020 ms | max:    1.020 ms | max at:      0.004020 s\n"
            ),
            "{}",
            out
        );
        assert!(out.contains("  TOTAL:                |      2.020 ms |        4 |\n"));
    }

    /// The report of events equals the report of their ftrace text parsed back.
    #[test]
    fn report_survives_text_round_trip() {
        let a = t("a", 2, 120);
        let b = t("b", 3, 90);
        let mut evs = Vec::new();
        let mut ts = 1_000_123;
        for i in 0..200u64 {
            let (x, y) = if i % 2 == 0 { (a, b) } else { (b, a) };
            evs.push(wake(ts, 0, y));
            ts += 3_456 + i * 17;
            evs.push(sw(ts, 0, x, b'S', y));
            ts += 10_001;
        }
        let mut text = String::new();
        ftrace::write_header(&mut text, evs.len() as u64, evs.len() as u64 + 5, 1).unwrap();
        for e in &evs {
            ftrace::write_event(&mut text, e).unwrap();
        }
        let parsed = ftrace::parse_text(&text);
        assert!(parsed.errors.is_empty());
        assert_eq!(analyze(&parsed.events, parsed.lost()), analyze(&evs, 5));
    }

    #[test]
    fn garbage_does_not_panic() {
        let x = t("x", 5, 120);
        let evs = [
            sw(10, 0, x, b'R', x),
            sw(5, 0, x, b'R', x), // time going backwards saturates
            wake(0, 9, x),
            sw(u64::MAX, 63, idle(63), b'?', x),
        ];
        let rep = analyze(&evs, 0);
        assert_eq!(rep.events, 4);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 50);
        assert_eq!(percentile(&v, 99), 99);
        assert_eq!(percentile(&v, 100), 100);
        assert_eq!(percentile(&v, 0), 1);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[1, 2, 3], 50), 2);
    }
}
