//! debugfs `sched/debug`: the run queues as Linux's `sched_debug_show` prints them
//! (`kernel/sched/debug.c`, the EEVDF layout of Linux 6.6: `.sysctl_sched_base_slice` in
//! place of CFS's latency tunables), so a user's scripts that read it find the same names:
//! a header (`ktime`, `sched_clk`, `cpu_clk`, `jiffies`), `sysctl_sched`, then per CPU its
//! counters, `cfs_rq[N]:/path` for the root queue and each group queue on it, `rt_rq[N]`,
//! `dl_rq[N]` and the `runnable tasks:` table (every task whose CPU it is; `>R` marks the
//! running one).
//!
//! Values Cadence does not keep print as Linux prints them when zero (PELT averages, spread
//! counters, `nr_uninterruptible`); `sum-sleep` and `sum-block` are 0. Made from each CPU's
//! queue under its lock (taken one CPU at a time, never with another lock held); the task
//! table is gathered after, so a task that moved meanwhile may be listed under either CPU.

use super::task::{Task, TaskState};
use super::{rq_of, rt_limits};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;

/// Linux's `INITIAL_JIFFIES` at HZ 250: jiffies start 300 s before wrapping 32 bits.
const INITIAL_JIFFIES: u64 = (1u64 << 32) - 300 * 250;

/// `%Ld.%06ld` of a nanosecond count (Linux's `SPLIT_NS`: milliseconds and the rest).
fn split_ns(ns: i64) -> String {
    let ms = ns / 1_000_000;
    let rest = (ns % 1_000_000).abs();
    if ns < 0 && ms == 0 {
        format!("-0.{:06}", rest)
    } else {
        format!("{}.{:06}", ms, rest)
    }
}

fn jiffies() -> u64 {
    INITIAL_JIFFIES + crate::time::uptime_ns() / (1_000_000_000 / u64::from(crate::arch::apic::tick_hz().max(1)))
}

/// One fair queue's numbers, copied under the run-queue lock.
struct CfsRow {
    path: String,
    min_vruntime: u64,
    leftmost: Option<u64>,
    rightmost: Option<u64>,
    nr_running: usize,
    load: u64,
    throttled: bool,
}

/// A CPU's queue, copied under its lock.
struct CpuRow {
    curr_pid: u32,
    cfs: Vec<CfsRow>,
    h_nr_running: usize,
    rt_nr_running: usize,
    rt_throttled: bool,
    rt_time: u64,
    dl_nr_running: usize,
    /// The root fair queue's PELT averages (`RqInner::cpu_avg`) and its pending removals.
    root_avg: cadence_sched::pelt::SchedAvg,
    root_removed: cadence_sched::pelt::Removed,
}

fn cfs_row(q: &cadence_sched::FairRq<super::SeKey>, throttled: bool) -> CfsRow {
    let mut vr = q.queued().filter_map(|k| q.entity(k)).map(|e| e.vruntime());
    let first = vr.next();
    let (leftmost, rightmost) = vr.fold((first, first), |(lo, hi), v| (lo.map(|l| l.min(v)), hi.map(|h| h.max(v))));
    CfsRow { path: String::new(), min_vruntime: q.min_vruntime(), leftmost, rightmost, nr_running: q.len(), load: q.load(), throttled }
}

fn cpu_row(cpu: u32) -> CpuRow {
    let g = rq_of(cpu).lock.lock();
    let curr_pid = g.curr.as_ref().filter(|t| !t.is_idle).map_or(0, |t| t.tid);
    let mut cfs = alloc::vec![(super::group::ROOT_GROUP, cfs_row(&g.fair, false))];
    for (gid, grq) in g.group_rqs.iter() {
        cfs.push((*gid, cfs_row(&grq.rq, grq.bw.throttled_since.is_some())));
    }
    let row = CpuRow {
        curr_pid,
        cfs: Vec::new(),
        h_nr_running: g.nr_fair_tasks,
        rt_nr_running: g.rt.nr_running(),
        rt_throttled: g.rt_bw.throttled,
        rt_time: g.rt_bw.rt_time,
        dl_nr_running: g.dl.nr_running(),
        root_avg: g.cpu_avg,
        root_removed: *rq_of(cpu).pelt_removed.lock(),
    };
    drop(g);
    // Group paths are looked up with the queue's lock released (the group table has its own).
    let cfs = cfs
        .into_iter()
        .filter_map(|(gid, mut q)| {
            q.path = match super::group::lookup(gid) {
                _ if gid == super::group::ROOT_GROUP => String::from("/"),
                Some(tg) if tg.kind == super::group::GroupKind::Auto => format!("/autogroup-{}", gid),
                Some(tg) => tg.path(),
                None => return None,
            };
            Some(q)
        })
        .collect();
    CpuRow { cfs, ..row }
}

/// Linux's `task_state_to_char` of what Cadence keeps.
fn state_char(t: &Task) -> char {
    match t.state() {
        TaskState::Running => 'R',
        TaskState::Sleeping => 'S',
        TaskState::Stopped => 'T',
        TaskState::Dead => 'Z',
    }
}

/// The text of `sched/debug`.
pub fn text() -> String {
    let mut s = String::new();
    let now = crate::time::uptime_ns() as i64;
    s.push_str("Sched Debug Version: v0.11, 6.1.0-cadence #1\n");
    for name in ["ktime", "sched_clk", "cpu_clk"] {
        let _ = writeln!(s, "{:<40}: {}", name, split_ns(now));
    }
    let _ = writeln!(s, "{:<40}: {}", "jiffies", jiffies());
    let _ = writeln!(s, "{:<40}: {}", "sched_clock_stable()", 1);
    s.push_str("sysctl_sched\n");
    let t = super::fair_tunables();
    let _ = writeln!(s, "  .{:<40}: {}", "sysctl_sched_base_slice", split_ns(t.base_slice_ns as i64));
    let _ = writeln!(s, "  .{:<40}: {}", "sysctl_sched_features", super::features::bits());
    let _ = writeln!(s, "  .{:<40}: 1 (logarithmic)", "sysctl_sched_tunable_scaling");
    let mhz = crate::arch::tsc::hz() / 1000;
    let root0 = cpu_row(0).cfs.first().map_or(0, |c| c.min_vruntime);
    let tasks = super::task::all();
    for cpu in crate::percpu::online_cpus().map(|c| c.cpu_id) {
        let r = cpu_row(cpu);
        let rq = rq_of(cpu);
        let _ = writeln!(s, "cpu#{}, {}.{:03} MHz", cpu, mhz / 1000, mhz % 1000);
        let int = |s: &mut String, name: &str, v: i64| {
            let _ = writeln!(s, "  .{:<30}: {}", name, v);
        };
        let time = |s: &mut String, name: &str, ns: i64| {
            let _ = writeln!(s, "  .{:<30}: {}", name, split_ns(ns));
        };
        int(&mut s, "nr_running", i64::from(rq.nr_running.load(Ordering::Relaxed)) + r.dl_nr_running as i64);
        int(&mut s, "nr_switches", rq.nr_switches.load(Ordering::Relaxed) as i64);
        int(&mut s, "nr_uninterruptible", 0);
        time(&mut s, "next_balance", (jiffies() + 1) as i64);
        int(&mut s, "curr->pid", i64::from(r.curr_pid));
        time(&mut s, "clock", now);
        time(&mut s, "clock_task", now);
        int(&mut s, "avg_idle", 1_000_000);
        int(&mut s, "max_idle_balance_cost", 500_000);
        for (i, q) in r.cfs.iter().enumerate() {
            let _ = writeln!(s, "cfs_rq[{}]:{}", cpu, q.path);
            time(&mut s, "exec_clock", 0);
            // Linux prints an empty tree's bounds as -1 ns.
            time(&mut s, "MIN_vruntime", q.leftmost.map_or(1, |v| v as i64));
            time(&mut s, "min_vruntime", q.min_vruntime as i64);
            time(&mut s, "max_vruntime", q.rightmost.map_or(1, |v| v as i64));
            let spread = q.rightmost.zip(q.leftmost).map_or(0, |(hi, lo)| hi.saturating_sub(lo));
            time(&mut s, "spread", spread as i64);
            time(&mut s, "spread0", q.min_vruntime as i64 - root0 as i64);
            int(&mut s, "nr_spread_over", 0);
            int(&mut s, "nr_running", q.nr_running as i64);
            int(&mut s, "h_nr_running", if i == 0 { r.h_nr_running as i64 } else { q.nr_running as i64 });
            int(&mut s, "idle_nr_running", 0);
            int(&mut s, "idle_h_nr_running", 0);
            int(&mut s, "load", (q.load << 10) as i64);
            // The root queue's PELT signal is kept (`sched::pelt`); group queues' signals,
            // util_est and the task-group load sums are not, and print 0.
            let (avg, removed) = if i == 0 { (r.root_avg, r.root_removed) } else { Default::default() };
            int(&mut s, "load_avg", avg.load_avg as i64);
            int(&mut s, "runnable_avg", avg.runnable_avg as i64);
            int(&mut s, "util_avg", avg.util_avg as i64);
            int(&mut s, "util_est_enqueued", 0);
            int(&mut s, "removed.load_avg", removed.load_avg as i64);
            int(&mut s, "removed.util_avg", removed.util_avg as i64);
            int(&mut s, "removed.runnable_avg", removed.runnable_avg as i64);
            for name in ["tg_load_avg_contrib", "tg_load_avg"] {
                int(&mut s, name, 0);
            }
            int(&mut s, "throttled", i64::from(q.throttled));
            int(&mut s, "throttle_count", 0);
        }
        let _ = writeln!(s, "rt_rq[{}]:", cpu);
        int(&mut s, "rt_nr_running", r.rt_nr_running as i64);
        int(&mut s, "rt_nr_migratory", r.rt_nr_running as i64);
        int(&mut s, "rt_throttled", i64::from(r.rt_throttled));
        time(&mut s, "rt_time", r.rt_time as i64);
        let runtime = rt_limits::rt_runtime_us();
        time(&mut s, "rt_runtime", if runtime < 0 { -1 } else { runtime * 1000 });
        let _ = writeln!(s, "dl_rq[{}]:", cpu);
        int(&mut s, "dl_nr_running", r.dl_nr_running as i64);
        int(&mut s, "dl_nr_migratory", 0);
        let (limit, total) = super::class::deadline::bandwidth();
        int(&mut s, "dl_bw->bw", limit.map_or(-1, |b| b as i64));
        int(&mut s, "dl_bw->total_bw", total as i64);
        s.push_str("runnable tasks:\n");
        s.push_str(" S            task   PID         tree-key  switches  prio     wait-time             sum-exec        sum-sleep\n");
        s.push_str("-------------------------------------------------------------------------------------------------------------\n");
        for t in tasks.iter().filter(|t| !t.is_idle && t.cpu() == cpu) {
            let st = &t.stats;
            let switches = st.nr_voluntary_switches.load(Ordering::Relaxed) + st.nr_involuntary_switches.load(Ordering::Relaxed);
            let vruntime = super::fair_snapshot(t).map_or(0, |f| f.0);
            let mark = if t.tid == r.curr_pid { String::from(">R") } else { format!(" {}", state_char(t)) };
            let comm = t.comm_string();
            let _ = writeln!(
                s,
                "{} {:>15} {:>5} {:>16} {:>9} {:>5} {:>16} {:>16} {:>16} {:>16} 0 0 {}",
                mark,
                comm,
                t.tid,
                split_ns(vruntime as i64),
                switches,
                super::class::of(t).prio(t),
                split_ns(st.wait_sum.load(Ordering::Relaxed) as i64),
                split_ns(st.sum_exec_runtime.load(Ordering::Relaxed) as i64),
                split_ns(0),
                split_ns(0),
                super::group::cgroup_path(t)
            );
        }
    }
    s
}

/// `/proc/schedstat`, version 15 as Linux 6.1 (the kernel `uname` names) prints it
/// (kernel/sched/stats.c; 6.12's version 16 reorders the idle types of the counters, which are
/// all 0 here, and has the same line shapes): per CPU a
/// `cpuN` line — six yield/schedule counters Linux fills only with `kernel.sched_schedstats`
/// on (0, as Linux's default), then `rq_cpu_time` (ns this CPU ran tasks), `run_delay` (ns
/// tasks waited on its queue), `pcount` (times a task began running there) — and one
/// `domainM <span>` line per scheduling domain (`super::topology`), its 36 load-balancing
/// counters 0 (schedstats off).
pub fn schedstat(cpumask_hex: impl Fn(cadence_sched::CpuMask) -> String) -> String {
    let mut s = format!("version 15\ntimestamp {}\n", jiffies());
    let now = crate::time::uptime_ns();
    let domains = super::topology::domains();
    for c in crate::percpu::online_cpus() {
        let rq = rq_of(c.cpu_id);
        let busy = now.saturating_sub(super::idle_ns(c.cpu_id));
        let _ = writeln!(
            s,
            "cpu{} 0 0 0 0 0 0 {} {} {}",
            c.cpu_id,
            busy,
            rq.run_delay_ns.load(Ordering::Relaxed),
            rq.pcount.load(Ordering::Relaxed)
        );
        // Version 15's 36 fields: lb_* per idle type (8 × 3), alb_* (3), then sbe_*, sbf_* and
        // ttwu_* (9), which Cadence does not count yet.
        let stats = super::load_balance::sd_stats(c.cpu_id);
        for (level, sd) in domains.as_ref().map(|d| d.domains(c.cpu_id as usize)).unwrap_or(&[]).iter().enumerate() {
            let _ = write!(s, "domain{} {}", level, cpumask_hex(sd.span));
            let st = stats.get(level).copied().unwrap_or_default();
            for v in st.lb.iter().flatten().chain(st.alb.iter()) {
                let _ = write!(s, " {v}");
            }
            for _ in 0..9 {
                s.push_str(" 0");
            }
            s.push('\n');
        }
    }
    s
}
