//! The work-conservation checker (`cadence_trace::wccheck`) against a direct model, on random
//! small traces: 3 CPUs, tasks 1..=4, switches (consistent or not), wakeups, exits,
//! migrations and affinity changes, timestamps with ties.
//!
//! The model re-evaluates everything after each event: what each CPU runs, which tasks wait,
//! each CPU's "idle while a task that may use it waits" state, and keeps per-CPU intervals;
//! the checker does the same incrementally (counts per CPU, intervals refreshed once per
//! event). Both must give the same report. And, with fixed affinities, no violation is ever
//! reported on a CPU outside its waiting task's affinity.

use cadence_sched::CpuMask;
use cadence_trace::wccheck::{check, Options, MAX_WORST};
use cadence_trace::{Comm, Event, EventKind, TaskInfo};
use proptest::prelude::*;
use std::collections::BTreeMap;

const NCPUS: u32 = 3;
const US: u64 = 1000;

fn task(pid: u32) -> TaskInfo {
    let comm = if pid == 0 { Comm::new("swapper") } else { Comm::with_number("t", pid) };
    TaskInfo { comm, pid, prio: if pid == 2 { 10 } else { 120 } }
}

/// One generated event (before timestamps): what, on which CPU, in which context.
#[derive(Clone, Debug)]
enum Gen {
    Switch { cpu: u32, prev: u32, running: bool, next: u32 },
    Wake { cpu: u32, pid: u32, new: bool, target: u32 },
    Exit { cpu: u32, pid: u32 },
    Migrate { cpu: u32, pid: u32 },
    Affinity { cpu: u32, pid: u32, mask: u64 },
}

fn gen_event(with_affinity_events: bool) -> impl Strategy<Value = Gen> {
    let cpu = 0..NCPUS;
    let pid = 1u32..=4;
    prop_oneof![
        4 => (cpu.clone(), 0u32..=4, any::<bool>(), 0u32..=4).prop_map(|(cpu, prev, running, next)| Gen::Switch { cpu, prev, running, next }),
        3 => (cpu.clone(), pid.clone(), any::<bool>(), cpu.clone()).prop_map(|(cpu, pid, new, target)| Gen::Wake { cpu, pid, new, target }),
        1 => (cpu.clone(), pid.clone()).prop_map(|(cpu, pid)| Gen::Exit { cpu, pid }),
        1 => (cpu.clone(), pid.clone()).prop_map(|(cpu, pid)| Gen::Migrate { cpu, pid }),
        if with_affinity_events { 1 } else { 0 } => (cpu, pid, 1u64..8).prop_map(|(cpu, pid, mask)| Gen::Affinity { cpu, pid, mask }),
    ]
}

/// A trace: each CPU's first event is a switch at 0 (the window is the whole trace), then the
/// generated events at non-decreasing times (steps of 0 to 5 ms: ties happen).
fn trace(with_affinity_events: bool) -> impl Strategy<Value = Vec<Event>> {
    let first = proptest::collection::vec(0u32..=4, NCPUS as usize);
    let rest = proptest::collection::vec(
        (gen_event(with_affinity_events), prop_oneof![Just(0u64), Just(500), Just(1000), Just(3000), Just(5000)]),
        0..40,
    );
    (first, rest).prop_map(|(first, rest)| {
        let mut out: Vec<Event> = first
            .iter()
            .enumerate()
            .map(|(cpu, &next)| {
                let prev = task(100 + cpu as u32);
                let kind = EventKind::Switch { prev, prev_state: b'S', next: task(next) };
                Event { ts_ns: 0, cpu: cpu as u32, comm: prev.comm, pid: prev.pid, kind }
            })
            .collect();
        let mut t = 0;
        for (g, step_us) in rest {
            t += step_us * US;
            let (cpu, ctx, kind) = match g {
                Gen::Switch { cpu, prev, running, next } => {
                    (cpu, prev, EventKind::Switch { prev: task(prev), prev_state: if running { b'R' } else { b'S' }, next: task(next) })
                }
                Gen::Wake { cpu, pid, new, target } => (cpu, 0, EventKind::Wakeup { task: task(pid), target_cpu: target, new }),
                Gen::Exit { cpu, pid } => (cpu, pid, EventKind::Exit { task: task(pid) }),
                Gen::Migrate { cpu, pid } => (cpu, 0, EventKind::Migrate { task: task(pid), orig_cpu: 0, dest_cpu: cpu }),
                Gen::Affinity { cpu, pid, mask } => (cpu, 0, EventKind::Affinity { task: task(pid), mask, wide: false }),
            };
            out.push(Event { ts_ns: t, cpu, comm: task(ctx).comm, pid: ctx, kind });
        }
        out
    })
}

/// Per-pid fixed affinities (`None`: unknown, every CPU).
fn affinities() -> impl Strategy<Value = BTreeMap<u32, u64>> {
    proptest::collection::btree_map(1u32..=4, 1u64..8, 0..=4)
}

/// (cpu, start, duration, first waiting pid, most waiting) of each violation, longest first
/// (ties earliest first), and (violations, longest, wasted, idle-waiting) ns.
type Summary = (Vec<(u32, u64, u64, u32, u32)>, (u64, u64, u64, u64));

/// The model: every state re-evaluated after each event.
fn model(events: &[Event], aff: &BTreeMap<u32, u64>, bound_ns: u64) -> Summary {
    let mut cpus: BTreeMap<u32, u32> = BTreeMap::new();
    let mut waiting: BTreeMap<u32, u64> = BTreeMap::new(); // pid -> since
    let mut set: BTreeMap<u32, u64> = BTreeMap::new();
    let mut queued: BTreeMap<u32, u32> = BTreeMap::new(); // pid -> the CPU it was queued on
    let mut open: BTreeMap<u32, (u64, u32, u32)> = BTreeMap::new(); // cpu -> (since, first, most)
    let (mut all, mut totals) = (Vec::new(), (0u64, 0u64, 0u64, 0u64));
    let mut close = |o: (u64, u32, u32), cpu: u32, t: u64, all: &mut Vec<_>| {
        let d = t - o.0;
        totals.3 += d;
        if d > bound_ns {
            totals.0 += 1;
            totals.1 = totals.1.max(d);
            totals.2 += d;
            all.push((cpu, o.0, d, o.1, o.2));
        }
    };
    let end = events.iter().map(|e| e.ts_ns).max().unwrap_or(0);
    for e in events {
        let t = e.ts_ns;
        let mut becomes: Vec<(u32, bool)> = Vec::new();
        match e.kind {
            EventKind::Switch { prev, prev_state, next } => {
                cpus.insert(e.cpu, next.pid);
                if prev_state == b'R' {
                    queued.insert(prev.pid, e.cpu);
                }
                becomes.push((prev.pid, prev_state == b'R'));
                becomes.push((next.pid, false));
            }
            EventKind::Wakeup { task, target_cpu, .. } => {
                queued.insert(task.pid, target_cpu);
                becomes.push((task.pid, !cpus.values().any(|&p| p == task.pid)));
            }
            EventKind::Migrate { task, dest_cpu, .. } => {
                queued.insert(task.pid, dest_cpu);
            }
            EventKind::Exit { task } => {
                queued.remove(&task.pid);
                becomes.push((task.pid, false));
            }
            EventKind::Affinity { task, mask, .. } => {
                set.insert(task.pid, mask);
            }
            _ => {}
        }
        for (pid, w) in becomes {
            if pid == 0 {
                continue;
            }
            if !w {
                waiting.remove(&pid);
            } else {
                waiting.entry(pid).or_insert(t);
            }
        }
        let allowed = |pid: u32, cpu: u32| set.get(&pid).or(aff.get(&pid)).is_none_or(|m| m & (1 << cpu) != 0);
        // A waiting task queued on an idle CPU is that CPU's next task: the CPU is not free,
        // and the task waits nowhere else.
        let idle = |cpu: u32| cpus.get(&cpu) == Some(&0);
        let starting = |pid: u32| queued.get(&pid).is_some_and(|&c| idle(c));
        for cpu in 0..NCPUS {
            let mut those: Vec<(u64, u32)> =
                waiting.iter().filter(|(&p, _)| allowed(p, cpu) && !starting(p)).map(|(&p, &s)| (s, p)).collect();
            those.sort();
            let free = idle(cpu) && !waiting.keys().any(|&p| queued.get(&p) == Some(&cpu));
            let wasted = free && !those.is_empty();
            match (open.get_mut(&cpu), wasted) {
                (Some(o), true) => o.2 = o.2.max(those.len() as u32),
                (Some(_), false) => {
                    let o = open.remove(&cpu).unwrap();
                    close(o, cpu, t, &mut all);
                }
                (None, true) => {
                    open.insert(cpu, (t, those[0].1, those.len() as u32));
                }
                (None, false) => {}
            }
        }
    }
    for (cpu, o) in std::mem::take(&mut open) {
        close(o, cpu, end, &mut all);
    }
    all.sort_by_key(|v| (std::cmp::Reverse(v.2), v.1));
    all.truncate(MAX_WORST);
    (all, totals)
}

fn summary(events: &[Event], aff: &BTreeMap<u32, u64>, bound_ns: u64) -> Summary {
    let opts = Options { bound_ns, ..Options::new(NCPUS) };
    let r = check(events, &opts, |pid| aff.get(&pid).map(|&m| CpuMask::from_u64(m)));
    let worst = r.worst.iter().map(|v| (v.cpu, v.start_ns, v.duration_ns, v.waiting.pid, v.most_waiting)).collect();
    (worst, (r.violations, r.longest_ns, r.wasted_ns, r.idle_waiting_ns))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_checker_is_the_model(events in trace(true), aff in affinities(), bound in prop_oneof![Just(0u64), Just(1_000_000), Just(4_000_000)]) {
        let got = summary(&events, &aff, bound);
        prop_assert_eq!(&got, &model(&events, &aff, bound));
        let (v, (n, longest, wasted, idle_waiting)) = got;
        prop_assert!(wasted <= idle_waiting && idle_waiting <= NCPUS as u64 * events.iter().map(|e| e.ts_ns).max().unwrap_or(0));
        prop_assert_eq!(v.len() as u64, n.min(MAX_WORST as u64));
        prop_assert_eq!(v.first().map_or(0, |v| v.2), longest);
    }

    #[test]
    fn violations_stay_within_the_waiting_task_s_affinity(events in trace(false), aff in affinities()) {
        let (worst, _) = summary(&events, &aff, 0);
        for (cpu, _, _, pid, _) in worst {
            prop_assert!(aff.get(&pid).is_none_or(|m| m & (1 << cpu) != 0), "cpu {} pid {} mask {:?}", cpu, pid, aff.get(&pid));
        }
    }
}
