//! In-kernel tests of the tracer: ring wrap and loss counts, concurrent writers on 4 CPUs with a
//! concurrent reader, and the report of a real workload (and its ftrace-text round trip).
//!
//! Tests tag their events as `sched_core_force_idle` with an impossible `cpu` field
//! ([`MAGIC`]) so they can tell them from the scheduler's, and leave the tracer stopped with
//! every event enabled.

use super::*;
use crate::sched::task::SpawnOptions;
use crate::sched::{spawn, wait};
use alloc::sync::Arc;
use core::sync::atomic::AtomicBool;

const MAGIC: u32 = 0xdead_0000;

fn tagged(s: &Snapshot, cpu: u32) -> Vec<(u64, u64)> {
    s.events
        .iter()
        .filter(|e| e.cpu == cpu)
        .filter_map(|e| match e.kind {
            EventKind::CoreForceIdle { cpu: MAGIC, duration_ns } => Some((duration_ns, e.ts_ns)),
            _ => None,
        })
        .collect()
}

fn restore() {
    stop();
    set_event_mask(EventType::ALL_MASK);
    clear();
}

#[test_case]
fn ring_wraps_and_counts_lost_events() {
    set_event_mask(EventType::CoreForceIdle.bit());
    start(8).expect("start");
    let t = spawn(SpawnOptions::new("trace-w").pin(1), || {
        for i in 0..20 {
            sched_core_force_idle(MAGIC, i);
        }
        0
    })
    .expect("spawn");
    assert_eq!(wait(t.tid), Ok(0));
    assert!(stop());
    let s = snapshot().expect("snapshot");
    assert_eq!(s.per_cpu[1], (20, 8, 0));
    let seqs: Vec<u64> = tagged(&s, 1).iter().map(|&(seq, _)| seq).collect();
    assert_eq!(seqs, (12..20).collect::<Vec<u64>>(), "the newest 8 survive, oldest first");
    assert_eq!(s.lost(), s.written - s.events.len() as u64);
    assert!(s.lost() >= 12);
    // Stopped: hooks record nothing.
    sched_core_force_idle(MAGIC, 99);
    assert_eq!(snapshot().expect("snapshot").written, s.written);
    restore();
}

#[test_case]
fn concurrent_writers_on_four_cpus() {
    const N: u64 = 20_000;
    const CAP: usize = 4096;
    let ncpus = crate::percpu::online_cpus().count().min(4) as u32;
    set_event_mask(EventType::CoreForceIdle.bit());
    start(CAP).expect("start");
    let go = Arc::new(AtomicBool::new(false));
    let mut tids = Vec::new();
    for cpu in 0..ncpus {
        let go = go.clone();
        let t = spawn(SpawnOptions::new("trace-w").pin(cpu), move || {
            while !go.load(Ordering::Acquire) {
                crate::sched::yield_now();
            }
            for i in 0..N {
                sched_core_force_idle(MAGIC, ((cpu as u64) << 32) | i);
                if i % 256 == 0 {
                    crate::sched::yield_now(); // let the reader (which may share this CPU) run
                }
            }
            0
        })
        .expect("spawn");
        tids.push(t);
    }
    go.store(true, Ordering::Release);
    // A concurrent reader: every snapshot sees, per CPU, increasing sequence numbers and times.
    let mut snapshots = 0;
    while tids.iter().any(|t| t.state() != crate::sched::task::TaskState::Dead) {
        let s = snapshot().expect("snapshot");
        for cpu in 0..ncpus {
            let evs = tagged(&s, cpu);
            assert!(evs.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "cpu {} out of order", cpu);
            assert!(evs.iter().all(|&(seq, _)| seq >> 32 == cpu as u64), "event on the wrong CPU's ring");
        }
        snapshots += 1;
        crate::sched::yield_now();
    }
    for t in &tids {
        assert_eq!(wait(t.tid), Ok(0));
    }
    assert!(stop());
    let s = snapshot().expect("snapshot");
    for cpu in 0..ncpus {
        let (written, held, dropped) = s.per_cpu[cpu as usize];
        assert_eq!(written + dropped, N, "cpu {}: every event written or counted as dropped", cpu);
        assert_eq!(held, written.min(CAP as u64));
        let evs = tagged(&s, cpu);
        assert_eq!(evs.len() as u64, held);
        // The newest written event survives; only events dropped during a reader's pause
        // can be newer.
        let last = evs.last().map_or(0, |e| e.0 & 0xffff_ffff);
        assert!(last < N && last + dropped >= N - 1, "cpu {}: last {} dropped {}", cpu, last, dropped);
    }
    let dropped: u64 = s.per_cpu.iter().map(|c| c.2).sum();
    crate::kprint!("({} concurrent snapshots, {} events dropped during them) ", snapshots, dropped);
    restore();
}

#[test_case]
fn report_of_pipe_ping_pong() {
    const LOOPS: u64 = 300;
    set_event_mask(EventType::SchedSwitch.bit() | EventType::SchedWakeup.bit() | EventType::SchedWakeupNew.bit());
    start(DEFAULT_ENTRIES).expect("start");
    crate::bench::pipe_round_trips(LOOPS, 0, 2).expect("pipe");
    crate::bench::pipe_round_trips(LOOPS, 1, 1).expect("pipe");
    assert!(stop());
    let s = snapshot().expect("snapshot");
    assert_eq!(s.lost(), 0);
    assert!(s.events.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "merged in time order");
    let rep = cadence_trace::report::analyze(&s.events, s.lost());
    // Each round trip wakes the other side at least once per direction.
    assert!(rep.all.count >= 2 * LOOPS, "{} wakeups", rep.all.count);
    assert_eq!(rep.all.count, rep.rt.count + rep.fair.count);
    assert!(rep.all.min_ns <= rep.all.avg_ns() && rep.all.avg_ns() <= rep.all.max_ns);
    assert_eq!(rep.all.avg_ns(), rep.all.sum_ns / rep.all.count);
    assert_eq!(rep.hist.buckets.iter().sum::<u64>(), rep.all.count);
    // On one CPU the pinger must switch in every round trip (across CPUs it may be woken
    // before it has switched out, so that run may show few switches).
    let ping = rep.tasks.iter().filter(|t| t.comm.as_str() == "pipe-ping").map(|t| t.switches).max();
    assert!(ping >= Some(LOOPS), "pipe-ping switches {:?}", ping);
    // The exported text reports the same.
    let mut text = String::new();
    let _ = ftrace::write_header(&mut text, s.events.len() as u64, s.written, crate::percpu::nr_cpus());
    for e in &s.events {
        let _ = ftrace::write_event(&mut text, e);
    }
    let parsed = ftrace::parse_text(&text);
    assert!(parsed.errors.is_empty());
    assert_eq!(cadence_trace::report::analyze(&parsed.events, parsed.lost()), rep);
    restore();
}

/// `trace check rt` over a real workload: the affinity table holds each task's first mask (at
/// `trace start` or spawn), a `sched_setaffinity` is a `sched_set_affinity` event, the export
/// carries both, and the host's check of the exported text is the kernel's. The violation count is printed, not asserted (TCG timing).
#[test_case]
fn rt_check_with_affinity_table() {
    use cadence_sched::Policy;
    let ncpus = crate::percpu::online_cpus().count() as u32;
    start(DEFAULT_ENTRIES).expect("start");
    let pinned = spawn(SpawnOptions::new("rtck-pin").pin(0), || {
        crate::sched::sleep_ns(20_000_000);
        0
    })
    .expect("spawn");
    if ncpus > 1 {
        crate::sched::api::sched_setaffinity(pinned.tid, cadence_sched::CpuMask::from_u64(0b10)).expect("setaffinity");
    }
    let mut tids = Vec::new();
    for i in 0..ncpus.min(4) {
        let opts = SpawnOptions::new("rtck-rt").policy(Policy::Fifo, 50 + i as u8, 0);
        tids.push(
            spawn(opts, || {
                for _ in 0..20 {
                    crate::sched::sleep_ns(300_000);
                }
                0
            })
            .expect("spawn"),
        );
    }
    for t in tids.iter().chain(core::iter::once(&pinned)) {
        assert_eq!(wait(t.tid), Ok(0));
    }
    assert!(stop());
    let s = snapshot().expect("snapshot");
    assert_eq!(s.affinity.iter().find(|a| a.0 == pinned.tid).map(|a| a.1), Some(cadence_sched::CpuMask::single(0)), "the first mask");
    if ncpus > 1 {
        let changed = s
            .events
            .iter()
            .any(|e| matches!(e.kind, cadence_trace::event::EventKind::Affinity { task, mask, wide: false } if task.pid == pinned.tid && mask == 0b10));
        assert!(changed, "a sched_set_affinity event for the change");
    }
    assert!(s.affinity.iter().any(|a| a.0 == tids[0].tid), "spawned tasks are recorded");
    let r = check_rt(rtcheck::DEFAULT_BOUND_NS).expect("check");
    assert!(r.checked_ns > 0);
    assert!(alloc::format!("{}", r).starts_with("rt check: violations="));
    // The exported text (header, affinity lines, events) checks the same on the host.
    let parsed = exported_and_parsed(&s);
    let opts = rtcheck::Options { end_ns: s.events.last().map(|e| e.ts_ns), ..rtcheck::Options::new(crate::percpu::nr_cpus()) }
        .with_smt(&super::smt_groups());
    assert_eq!(rtcheck::check(&parsed.events, &opts, |pid| parsed.affinity.get(&pid).copied()), r);
    // Stopped: changes are no longer recorded.
    task_affinity(pinned.tid, cadence_sched::CpuMask::all(cadence_sched::NR_CPUS));
    assert_eq!(snapshot().expect("snapshot").affinity, s.affinity);
    crate::kprint!("({}) ", r);
    restore();
}

/// The snapshot as the host gets it (header, affinity lines, events), parsed back: no errors.
fn exported_and_parsed(s: &Snapshot) -> ftrace::Parsed {
    let mut text = String::new();
    let _ = ftrace::write_header(&mut text, s.events.len() as u64, s.written, crate::percpu::nr_cpus());
    for &(tid, mask) in &s.affinity {
        let _ = ftrace::write_affinity(&mut text, tid, mask);
    }
    for e in &s.events {
        let _ = ftrace::write_event(&mut text, e);
    }
    let parsed = ftrace::parse_text(&text);
    assert!(parsed.errors.is_empty());
    parsed
}

/// `trace check wc` over a real workload (more fair spinners than CPUs, ending one by one,
/// then idle CPUs): the host's check of the exported text (header, affinity lines, events) is
/// the kernel's. The violation count is printed, not asserted (TCG timing).
#[test_case]
fn wc_check_of_the_rings_is_the_host_s() {
    let ncpus = crate::percpu::online_cpus().count() as u32;
    start(DEFAULT_ENTRIES).expect("start");
    let mut tids = Vec::new();
    for i in 0..ncpus + 2 {
        let spin_ns = 2_000_000 * (1 + i as u64);
        let t = spawn(SpawnOptions::new("wcck-spin"), move || {
            let end = crate::time::uptime_ns() + spin_ns;
            while crate::time::uptime_ns() < end {
                core::hint::spin_loop();
            }
            crate::sched::sleep_ns(1_000_000);
            0
        });
        tids.push(t.expect("spawn"));
    }
    for t in &tids {
        assert_eq!(wait(t.tid), Ok(0));
    }
    assert!(stop());
    let s = snapshot().expect("snapshot");
    let r = check_wc(wccheck::DEFAULT_BOUND_NS).expect("check");
    assert!(r.checked_ns > 0 && r.ncpus == crate::percpu::nr_cpus());
    assert!(alloc::format!("{}", r).starts_with("wc check: violations="));
    let parsed = exported_and_parsed(&s);
    let opts = wccheck::Options { end_ns: s.events.last().map(|e| e.ts_ns), ..wccheck::Options::new(crate::percpu::nr_cpus()) };
    assert_eq!(wccheck::check(&parsed.events, &opts, |pid| parsed.affinity.get(&pid).copied()), r);
    crate::kprint!("({}) ", r);
    restore();
}

#[test_case]
fn command_arguments() {
    assert_eq!(cmd_trace(&[]), Err(String::from("usage")));
    assert_eq!(cmd_trace(&["bogus"]), Err(String::from("usage")));
    assert_eq!(cmd_trace(&["events", "sched_switch", "maybe"]), Err(String::from("usage")));
    assert!(cmd_trace(&["events", "nope", "on"]).is_err());
    assert!(cmd_trace(&["start", "-b", "x"]).is_err());
    assert!(cmd_trace(&["start", "-b", "1"]).is_err());
    assert_eq!(cmd_trace(&["stop"]), Err(String::from("not running")));
    assert_eq!(cmd_trace(&["events", "sched_switch", "off"]), Ok(()));
    assert_eq!(event_mask() & EventType::SchedSwitch.bit(), 0);
    assert_eq!(cmd_trace(&["events", "all", "on"]), Ok(()));
    assert_eq!(event_mask(), EventType::ALL_MASK);
    assert_eq!(cmd_trace(&["start", "-b", "64"]), Ok(()));
    assert!(cmd_trace(&["start"]).is_err(), "already running");
    assert_eq!(cmd_trace(&["clear"]), Ok(()));
    assert_eq!(cmd_trace(&["report"]), Ok(()));
    assert_eq!(cmd_trace(&["check", "rt"]), Ok(()));
    assert_eq!(cmd_trace(&["check", "rt", "-b", "50"]), Ok(()));
    assert!(cmd_trace(&["check", "rt", "-b", "x"]).is_err_and(|e| e.contains("-b needs a bound")));
    assert!(cmd_trace(&["check", "rt", "-b", "-1"]).is_err());
    assert_eq!(cmd_trace(&["check", "rt", "-b"]), Err(String::from("usage")));
    assert_eq!(cmd_trace(&["check", "rt", "50"]), Err(String::from("usage")));
    assert_eq!(cmd_trace(&["check", "wc"]), Ok(()));
    assert_eq!(cmd_trace(&["check", "wc", "-b", "1000"]), Ok(()));
    assert!(cmd_trace(&["check", "wc", "-b", "60000001"]).is_err_and(|e| e.contains("-b needs a bound")));
    assert_eq!(cmd_trace(&["check", "wc", "--cpus", "4"]), Err(String::from("usage")));
    restore();
}

/// Not a pass/fail test: prints what one hook costs, stopped and recording (TCG time).
#[test_case]
fn hook_cost() {
    const N: u64 = 200_000;
    let time = |n: u64| {
        let _irq = crate::sched::preempt_disable();
        let t0 = crate::arch::tsc::rdtsc();
        for i in 0..n {
            sched_core_force_idle(MAGIC, core::hint::black_box(i));
        }
        crate::arch::tsc::ticks_to_ns(crate::arch::tsc::rdtsc() - t0) / n
    };
    set_event_mask(EventType::CoreForceIdle.bit());
    let off = time(N);
    start(4096).expect("start");
    let on = time(N);
    set_event_mask(EventType::SchedSwitch.bit());
    let other = time(N);
    restore();
    crate::kprint!("(per hook: stopped {} ns, recording {} ns, event off {} ns) ", off, on, other);
    assert!(off <= on);
}

/// tracefs's consuming reader: `take_text` takes the oldest events first and copies no longer
/// hold them (the header does not count them as lost); `resume` records again without emptying
/// the rings; a clear forgets what was taken.
#[test_case]
fn pipe_takes_events_and_resume_keeps_them() {
    set_event_mask(EventType::CoreForceIdle.bit());
    start(64).expect("start");
    let fire = |from: u64, n: u64| {
        let t = spawn(SpawnOptions::new("trace-p").pin(1), move || {
            for i in from..from + n {
                sched_core_force_idle(MAGIC, i);
            }
            0
        })
        .expect("spawn");
        assert_eq!(wait(t.tid), Ok(0));
    };
    fire(0, 10);
    assert!(stop());
    // A reader with room for about three lines takes exactly the three oldest.
    let mut line = String::new();
    let s = snapshot().expect("snapshot");
    let first = s.events.iter().find(|e| e.cpu == 1).expect("an event");
    let _ = ftrace::write_event(&mut line, first);
    let text = take_text(line.len() * 3 + 5).expect("take");
    assert_eq!(text.lines().count(), 3, "{}", text);
    assert!(text.starts_with(line.as_str()));
    let s = snapshot().expect("snapshot");
    assert_eq!(tagged(&s, 1).iter().map(|&(seq, _)| seq).collect::<Vec<_>>(), (3..10).collect::<Vec<u64>>());
    assert_eq!(s.lost(), 0, "taken events are not lost");
    // Resume keeps the rest and adds to it.
    resume().expect("resume");
    fire(10, 2);
    assert!(stop());
    assert_eq!(tagged(&snapshot().expect("snapshot"), 1).len(), 9);
    // Take everything; then nothing is left, and a clear starts afresh.
    let rest = take_text(1 << 20).expect("take");
    assert_eq!(rest.lines().filter(|l| l.contains("sched_core_force_idle")).count(), 9);
    assert_eq!(take_text(1 << 20).expect("take"), "");
    assert!(tagged(&snapshot().expect("snapshot"), 1).is_empty());
    clear();
    resume().expect("resume");
    fire(20, 1);
    assert!(stop());
    assert_eq!(tagged(&snapshot().expect("snapshot"), 1).len(), 1);
    restore();
}
