//! The core-scheduling checker over a trace: every interval in which two SMT siblings ran
//! tasks with different cookies (`cadence_sched::core_sched::check_trace`, strict model: a
//! cookie-0 task beside a cookied one counts too; the idle task matches everything).
//!
//! Input: the `sched_core_switch` events (what each CPU runs after each switch: pid, cookie,
//! forced idle), in time order. Output: the report whose `Display` is the exact last line
//! `coresched check: violations=<n> checked_ns=<n> forced_idle_ns=<n>`.

use crate::event::{Event, EventKind};
use alloc::vec::Vec;
use cadence_sched::core_sched::{check_trace, CheckReport, CookieId, CpuState, TraceEvent};
use cadence_sched::{CpuMask, Errno};

/// Checks `events` (any events; only `sched_core_switch` ones are used) for SMT sibling groups
/// `smt` (one mask per core), up to `end_ns` (the last event's time if `None`).
///
/// Rings overwrite their oldest events, so each CPU's events are complete only from its first
/// retained event on: the check covers the window from the latest of those (each CPU's state
/// at the window's start is its last `sched_core_switch` before it), which is the whole trace
/// when nothing was lost.
pub fn check(events: &[Event], smt: &[CpuMask], end_ns: Option<u64>) -> Result<CheckReport, Errno> {
    let mut first: alloc::collections::BTreeMap<u32, u64> = alloc::collections::BTreeMap::new();
    for e in events {
        first.entry(e.cpu).and_modify(|t| *t = (*t).min(e.ts_ns)).or_insert(e.ts_ns);
    }
    let start = first.values().copied().max().unwrap_or(0);
    // Converted as they are read (a `TraceEvent` is a third of an `Event`): the kernel checks
    // millions of events on a heap that also holds the rings and their sorted copy (copies of
    // whole `Event`s here once needed 176 MiB at once and failed).
    let mut at_start: alloc::collections::BTreeMap<u32, TraceEvent> = alloc::collections::BTreeMap::new();
    let mut v: Vec<TraceEvent> = Vec::new();
    let n = events.iter().filter(|e| matches!(e.kind, EventKind::CoreSwitch { .. })).count();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    for e in events {
        let Some(te) = trace_event(e) else { continue };
        if e.ts_ns < start {
            at_start.insert(e.cpu, TraceEvent { time_ns: start, ..te });
        } else {
            v.push(te);
        }
    }
    let checked = v.len() as u64;
    // The states synthesised at the window's start come first (they are states, not switches;
    // at most one per CPU, from events the reservation counted).
    v.splice(0..0, at_start.into_values());
    if !v.is_sorted_by_key(|e| e.time_ns) {
        v.sort_by_key(|e| e.time_ns);
    }
    let end = end_ns.or_else(|| v.last().map(|e| e.time_ns)).unwrap_or(0);
    check_trace(&v, smt, end).map(|r| CheckReport { switches: checked, ..r })
}

/// A `sched_core_switch` event as the policy crate's checker takes it.
fn trace_event(e: &Event) -> Option<TraceEvent> {
    match e.kind {
        EventKind::CoreSwitch { pid, cookie, forced } => Some(TraceEvent {
            time_ns: e.ts_ns,
            cpu: e.cpu as usize,
            state: match (pid, forced) {
                (0, true) => CpuState::ForcedIdle,
                (0, false) => CpuState::Idle,
                _ => CpuState::Task(CookieId(cookie)),
            },
        }),
        _ => None,
    }
}

/// SMT groups as "pairs": CPUs 0-1, 2-3, … (QEMU's `threads=2` numbering, and Cadence's).
pub fn pairs(ncpus: usize) -> Vec<CpuMask> {
    (0..ncpus.div_ceil(2))
        .map(|c| CpuMask::from_u64((0b11u64 << (2 * c)) & if ncpus >= 64 { u64::MAX } else { (1u64 << ncpus) - 1 }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Comm;

    fn ev(ts: u64, cpu: u32, pid: u32, cookie: u64) -> Event {
        Event { ts_ns: ts, cpu, comm: Comm::new("x"), pid, kind: EventKind::CoreSwitch { pid, cookie, forced: false } }
    }

    #[test]
    fn overlap_of_different_cookies_is_a_violation() {
        let e = [ev(0, 0, 5, 1), ev(10, 1, 6, 2), ev(30, 1, 0, 0)];
        let r = check(&e, &pairs(2), Some(50)).unwrap();
        assert_eq!(r.violations.len(), 1);
        let e = [ev(0, 0, 5, 1), ev(10, 1, 6, 1), ev(30, 2, 7, 2)];
        let r = check(&e, &pairs(4), Some(50)).unwrap();
        assert!(r.violations.is_empty());
        assert!(alloc::format!("{}", r).starts_with("coresched check: violations=0 checked_ns="));
    }
}
