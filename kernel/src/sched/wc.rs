//! The work-conservation monitor, always on: the "Decade of Wasted Cores" invariant (Lozi et
//! al., EuroSys 2016) — no CPU stays idle while a task that may run on it waits elsewhere —
//! checked by every busy CPU at its tick.
//!
//! A CPU with tasks waiting in its queues (queued, not running, not held back by bandwidth
//! throttling) looks at the idle CPUs (`balance::IDLE_CPUS`) its waiting tasks may run on
//! (the union of their affinities, at most [`SCAN`] tasks examined). While some exist, the CPU
//! is in an **episode**; it ends at the first tick that finds none. An episode longer than
//! [`BOUND_NS`] is a **violation**; its length times the idle CPUs seen at its start is its
//! **wasted** CPU time. Counted per CPU (`RqInner::wc`), shown in debugfs
//! `sched/work_conservation` ([`text`]), and each violation is logged when it ends
//! (`sched: work conservation: ...`, rate-limited to one a second).
//!
//! The tick makes it coarse (an episode is seen to within a tick at each end: shorter ones may
//! be missed, all are rounded to ticks) and cheap (a few loads per busy tick; nothing at all on
//! idle or single-task CPUs). The exact measure is `trace check wc` over a trace
//! (`cadence_trace::wccheck`), which works on Linux's traces too.

use super::{balance, rq_of, RqInner};
use alloc::string::String;
use cadence_sched::CpuMask;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

/// Episodes longer than this are violations (issue 61's target: none longer than 4 ms).
pub const BOUND_NS: u64 = 4_000_000;
/// Waiting tasks examined per tick for their affinities.
const SCAN: usize = 16;

/// One CPU's monitor state and counters (under its run-queue lock).
#[derive(Clone, Copy, Debug, Default)]
pub struct WcState {
    /// When the current episode began (0: none).
    since: u64,
    /// Idle allowed CPUs at the episode's start.
    idle_at_start: u32,
    /// Idle CPU seen at the start (one, for the log).
    idle_cpu: u32,
    /// Tid of a waiting task at the start (for the log).
    waiting: u32,
    pub episodes: u64,
    pub violations: u64,
    pub longest_ns: u64,
    pub wasted_ns: u64,
}

/// Time of the last violation logged (rate limit).
static LAST_LOG: AtomicU64 = AtomicU64::new(0);

/// The tick's check on `g`'s CPU (run-queue lock held).
pub(super) fn tick(g: &mut RqInner, now: u64) {
    let (idle, waiting) = idle_allowed(g);
    let n = idle.count();
    let w = &mut g.wc;
    if n > 0 {
        if w.since == 0 {
            *w = WcState { since: now, idle_at_start: n, idle_cpu: idle.first().unwrap_or(0) as u32, waiting, ..*w };
        }
        return;
    }
    if w.since == 0 {
        return;
    }
    let len = now.saturating_sub(w.since);
    w.since = 0;
    w.episodes += 1;
    if len <= BOUND_NS {
        return;
    }
    w.violations += 1;
    w.longest_ns = w.longest_ns.max(len);
    w.wasted_ns += len * u64::from(w.idle_at_start);
    let last = LAST_LOG.load(Ordering::Relaxed);
    if now.saturating_sub(last) >= 1_000_000_000 && LAST_LOG.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
        crate::klog!(
            "sched: work conservation: cpu {} idle {} us while task {} waited on cpu {} ({} idle cpus allowed)",
            w.idle_cpu,
            len / 1000,
            w.waiting,
            g.cpu,
            w.idle_at_start
        );
    }
}

/// The idle CPUs (other than this one) some task waiting here may run on, and one such task.
fn idle_allowed(g: &RqInner) -> (CpuMask, u32) {
    if g.nr_queued() < 2 {
        return (CpuMask::EMPTY, 0);
    }
    let idle = balance::idle_cpus().without(g.cpu as usize);
    if idle.is_empty() {
        return (CpuMask::EMPTY, 0);
    }
    let mut allowed = CpuMask::EMPTY;
    let mut waiting = 0;
    for (_, t) in g.tasks.iter().take(SCAN) {
        if g.curr.as_ref().is_some_and(|c| alloc::sync::Arc::ptr_eq(c, t)) || !balance::waits_runnable(g, t) {
            continue;
        }
        let mask = t.affinity() & idle;
        if !mask.is_empty() && waiting == 0 {
            waiting = t.tid;
        }
        allowed = allowed | mask;
        if allowed == idle {
            break;
        }
    }
    (allowed, waiting)
}

/// debugfs `sched/work_conservation`: the bound, the totals, then one line per CPU.
pub fn text() -> String {
    let mut s = String::new();
    let mut total = WcState::default();
    let mut rows = String::new();
    for c in crate::percpu::online_cpus() {
        let w = rq_of(c.cpu_id).lock.lock().wc;
        let _ = writeln!(rows, "cpu{} {} {} {} {}", c.cpu_id, w.episodes, w.violations, w.longest_ns / 1000, w.wasted_ns / 1000);
        total.episodes += w.episodes;
        total.violations += w.violations;
        total.longest_ns = total.longest_ns.max(w.longest_ns);
        total.wasted_ns += w.wasted_ns;
    }
    let _ = writeln!(s, "bound_us {}", BOUND_NS / 1000);
    // Idle CPUs asked to pull a waiting task (`WC_PULL`, `load_balance::note_waiting`).
    let _ = writeln!(s, "wc_pull_kicks {}", super::load_balance::wc_kicks());
    let _ = writeln!(s, "# cpu episodes violations longest_us wasted_us");
    let _ = writeln!(s, "all {} {} {} {}", total.episodes, total.violations, total.longest_ns / 1000, total.wasted_ns / 1000);
    s.push_str(&rows);
    s
}
