//! Benchmarks: commands that print numbers in the formats of the Linux tools they mirror, so a
//! Cadence figure can sit next to the Linux peer's (`../shared/peer`). Never timed tests.
//!
//! * `bench pipe [-l LOOPS]`: pipe ping-pong between two tasks, first on one CPU, then on two
//!   CPUs of different cores; the peer's `pipetest` line:
//!   `pipetest: <n> round trips in <s> s: <r> round trips/s, <u> us per switch`.
//! * `bench scale [-d MS] [-n N,N,...] [-c fair|fifo] [-g DEPTH]`: context-switch rate with N
//!   runnable tasks yielding on one CPU (default 2, 100, 1000, 10000), fair tasks in the root
//!   group unless `-c fifo` (SCHED_FIFO, all at priority 10) or `-g DEPTH` (fair tasks in a
//!   chain of DEPTH nested groups, 1..=8): `scale: tasks=<n> switches_per_s=<r>
//!   us_per_switch=<u>`, with ` class=fifo` or ` depth=<d>` appended when asked.
//! * `bench cyclic`, `bench wakeup-latency`, `bench pert`: timer and service latency
//!   ([`latency`]: cyclictest's `-q` lines, the seed's wakeup-latency summary and `pert` lines).
//! * `bench hackbench`: rt-tests hackbench in pipe mode ([`hackbench`]).
//! * `bench hwlat`: how long the vCPUs stop under the kernel (Linux's hwlat tracer, [`hwlat`]).
//! * `bench dirty`, `bench alloc`: the RT-VM seed's experiments (dirty throttle, reserves; [`vm`]).

pub mod deadline;
pub mod hackbench;
pub mod hwlat;
pub mod latency;
pub mod vm;

pub mod autogroup;
pub mod coresched;
pub mod slice;

use crate::sched::pipe::pipe;
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

/// One option of a benchmark, for [`Args::parse`].
pub struct Opt {
    /// As typed: `-l`, `--split`.
    pub flag: &'static str,
    /// Its value's name in help (`None`: a bare flag).
    pub value: Option<&'static str>,
    /// The value may be left out (cyclictest's `-t [N]`).
    pub optional: bool,
    pub help: &'static str,
}

/// An option taking a value (`-l LOOPS`; also glued, `-l20000`, for one-letter flags).
pub const fn opt(flag: &'static str, value: &'static str, help: &'static str) -> Opt {
    Opt { flag, value: Some(value), optional: false, help }
}

/// An option whose value may be left out (`-t [N]`).
pub const fn opt_maybe(flag: &'static str, value: &'static str, help: &'static str) -> Opt {
    Opt { flag, value: Some(value), optional: true, help }
}

/// A bare flag (`-v`).
pub const fn flag(flag: &'static str, help: &'static str) -> Opt {
    Opt { flag, value: None, optional: false, help }
}

/// A benchmark's options, parsed by the one parser every `bench` command uses: against the
/// benchmark's table of [`Opt`]s, with an error naming any word it does not know, and
/// `--help` printing the table.
pub struct Args<'a> {
    found: Vec<(&'static str, Option<&'a str>)>,
}

impl<'a> Args<'a> {
    /// Parses `words` (what follows `bench NAME`) against `spec`. `Ok(None)`: `--help` was
    /// given and the options were printed. Errors: an unknown option or stray word, a missing
    /// value. A value is the next word unless it looks like an option (a negative number is a
    /// value).
    pub fn parse(bench: &str, words: &[&'a str], spec: &[Opt]) -> Result<Option<Self>, String> {
        let mut found = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            if w == "--help" {
                crate::kprintln!("bench {}{}", bench, if spec.is_empty() { " (no options)" } else { " options:" });
                for o in spec {
                    let usage = match (o.value, o.optional) {
                        (None, _) => o.flag.into(),
                        (Some(v), false) => alloc::format!("{} {}", o.flag, v),
                        (Some(v), true) => alloc::format!("{} [{}]", o.flag, v),
                    };
                    crate::kprintln!("  {:<16} {}", usage, o.help);
                }
                return Ok(None);
            }
            if let Some(o) = spec.iter().find(|o| o.flag == w) {
                let next = words.get(i + 1).filter(|v| !v.starts_with('-') || v.parse::<i64>().is_ok());
                match (o.value, next) {
                    (None, _) => found.push((o.flag, None)),
                    (Some(_), Some(v)) => {
                        found.push((o.flag, Some(*v)));
                        i += 1;
                    }
                    (Some(_), None) if o.optional => found.push((o.flag, None)),
                    (Some(_), None) => return Err(alloc::format!("option {} needs a value", w)),
                }
            } else if let Some(o) = spec.iter().find(|o| o.value.is_some() && o.flag.len() == 2 && w.len() > 2 && w.starts_with(o.flag)) {
                found.push((o.flag, Some(&w[2..])));
            } else {
                return Err(alloc::format!("unexpected argument '{}' (bench {} --help lists the options)", w, bench));
            }
            i += 1;
        }
        Ok(Some(Args { found }))
    }

    /// Value of option `flag` (the last one given).
    pub fn value(&self, flag: &str) -> Option<&'a str> {
        self.found.iter().rev().find(|(f, _)| *f == flag).and_then(|(_, v)| *v)
    }

    /// Was option `flag` given?
    pub fn has(&self, flag: &str) -> bool {
        self.found.iter().any(|(f, _)| *f == flag)
    }

    /// Numeric option in `min..=max`, `default` when absent.
    pub fn num(&self, flag: &str, default: u64, min: u64, max: u64) -> Result<u64, String> {
        match self.value(flag) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(alloc::format!("{} needs a number in {}..={}, got '{}'", flag, min, max, v)),
            },
        }
    }
}

/// One pipe ping-pong run between tasks pinned to `cpu_a` and `cpu_b`; returns seconds.
pub fn pipe_round_trips(loops: u64, cpu_a: u32, cpu_b: u32) -> Result<f64, String> {
    let (r1, w1) = pipe();
    let (r2, w2) = pipe();
    let ponger = spawn(SpawnOptions::new("pipe-pong").pin(cpu_b), move || {
        let mut b = [0u8; 1];
        for _ in 0..loops {
            if r1.read(&mut b) != 1 || w2.write(&b).is_err() {
                return 1;
            }
        }
        0
    })
    .map_err(|e| alloc::format!("cannot start pong: {:?}", e))?;
    let pinger = sched::spawn_result(SpawnOptions::new("pipe-ping").pin(cpu_a), move || {
        let mut b = [0u8; 1];
        let t0 = crate::time::uptime_ns();
        for _ in 0..loops {
            if w1.write(&b).is_err() || r2.read(&mut b) != 1 {
                return None;
            }
        }
        Some(crate::time::uptime_ns() - t0)
    })
    .map_err(|e| alloc::format!("cannot start ping: {:?}", e))?;
    let ns = pinger.join().ok().flatten();
    let b = wait(ponger.tid).unwrap_or(-1);
    match ns {
        Some(ns) if b == 0 => Ok(ns as f64 / 1e9),
        _ => Err(String::from("ping-pong failed (a pipe closed early)")),
    }
}

/// Prints the peer's pipetest line.
pub fn print_pipetest(loops: u64, secs: f64) {
    let secs = if secs > 0.0 { secs } else { 1e-9 };
    crate::kprintln!(
        "pipetest: {} round trips in {:.3} s: {:.0} round trips/s, {:.2} us per switch",
        loops,
        secs,
        loops as f64 / secs,
        secs / loops as f64 / 2.0 * 1e6
    );
}

/// Two CPUs on different cores (or 0 and 1 on a 2-CPU machine), and one CPU for same-CPU runs.
fn bench_cpus() -> (u32, u32, u32) {
    let online: Vec<u32> = sched::online_mask().iter().map(|c| c as u32).collect();
    let same = *online.get(1).or(online.first()).unwrap_or(&0);
    let a = same;
    let b = online
        .iter()
        .copied()
        .find(|&c| {
            c != a
                && crate::percpu::get(c)
                    .zip(crate::percpu::get(a))
                    .is_some_and(|(x, y)| x.topology.core != y.topology.core || x.topology.package != y.topology.package)
        })
        .or_else(|| online.iter().copied().find(|&c| c != a))
        .unwrap_or(a);
    (same, a, b)
}

/// `bench pipe`'s options.
const PIPE_OPTS: [Opt; 2] = [
    opt("-l", "LOOPS", "round trips per run (default 100000)"),
    flag("-g", "also in the root group vs a two-level nested group: the pipe-group line"),
];

pub fn cmd_pipe(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("pipe", args, &PIPE_OPTS)? else { return Ok(()) };
    let loops = a.num("-l", 100_000, 1, 100_000_000)?;
    let (same, x, y) = bench_cpus();
    if a.has("-g") {
        return pipe_group_overhead(loops, same);
    }
    crate::kprintln!("bench pipe: 2 tasks on cpu {}", same);
    let s = pipe_round_trips(loops, same, same)?;
    print_pipetest(loops, s);
    if x != y {
        crate::kprintln!("bench pipe: 2 tasks on cpus {} and {}", x, y);
        let s = pipe_round_trips(loops, x, y)?;
        print_pipetest(loops, s);
    }
    Ok(())
}

/// Rounds of `bench pipe -g` (the median is reported).
const PIPE_GROUP_ROUNDS: usize = 5;

/// `bench pipe -g`: group-scheduling overhead (the seed measured ~5%): the same-CPU ping-pong
/// with both tasks in the root group, then both inside a nested group (`/pipe-outer/…`
/// two levels deep), alternating [`PIPE_GROUP_ROUNDS`] times; prints each pipetest line, then
/// the medians per switch and the overhead, exactly:
/// `pipe-group: root_us=<n> nested_us=<n> overhead_pct=<n>` (µs with two decimals, % with one).
fn pipe_group_overhead(loops: u64, cpu: u32) -> Result<(), String> {
    use crate::sched::group::{self, GroupKind, ROOT_GROUP};
    let me = sched::current_tid();
    let home = sched::find(me).map(|t| t.group.load(Ordering::Relaxed)).unwrap_or(ROOT_GROUP);
    let outer =
        group::create("pipe-outer", ROOT_GROUP, 100, GroupKind::Manual).map_err(|e| alloc::format!("pipe-outer: {}", e.strerror()))?;
    let inner = match group::create("pipe-inner", outer.id, 100, GroupKind::Manual) {
        Ok(g) => g,
        Err(e) => {
            let _ = group::destroy(outer.id);
            return Err(alloc::format!("pipe-inner: {}", e.strerror()));
        }
    };
    let (mut root_us, mut nested_us) = (Vec::new(), Vec::new());
    let per_switch_us = |s: f64| s / loops as f64 / 2.0 * 1e6;
    let mut result = Ok(());
    for _ in 0..PIPE_GROUP_ROUNDS {
        let _ = group::move_task(me, ROOT_GROUP);
        crate::kprintln!("bench pipe: 2 tasks on cpu {}, root group", cpu);
        match pipe_round_trips(loops, cpu, cpu) {
            Ok(s) => {
                print_pipetest(loops, s);
                root_us.push(per_switch_us(s));
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
        // Children inherit the spawner's group: both ping and pong land in /pipe-outer/pipe-inner.
        let _ = group::move_task(me, inner.id);
        crate::kprintln!("bench pipe: 2 tasks on cpu {}, nested group /pipe-outer/pipe-inner", cpu);
        match pipe_round_trips(loops, cpu, cpu) {
            Ok(s) => {
                print_pipetest(loops, s);
                nested_us.push(per_switch_us(s));
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let _ = group::move_task(me, home);
    let _ = group::destroy(inner.id);
    let _ = group::destroy(outer.id);
    result?;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let (root, nested) = (median(&mut root_us), median(&mut nested_us));
    crate::kprintln!("pipe-group: root_us={:.2} nested_us={:.2} overhead_pct={:.1}", root, nested, (nested / root.max(1e-9) - 1.0) * 100.0);
    Ok(())
}

/// `bench scale`'s options.
const SCALE_OPTS: [Opt; 4] = [
    opt("-d", "MS", "duration of each run in ms (default 1000)"),
    opt("-n", "N,N,...", "runnable task counts (default 2,100,1000,10000)"),
    opt("-c", "fair|fifo", "the yielders' class: fair (default) or SCHED_FIFO at priority 10"),
    opt("-g", "DEPTH", "fair yielders in a chain of DEPTH nested groups (1..=8)"),
];

/// `bench scale -g`: a chain of `depth` nested groups under the root (`/scale-1/scale-2/...`);
/// the innermost first in the returned list. On an error the groups made so far are destroyed.
fn scale_groups(depth: u64) -> Result<Vec<crate::sched::group::GroupId>, String> {
    use crate::sched::group::{self, GroupKind, ROOT_GROUP};
    let mut chain: Vec<crate::sched::group::GroupId> = Vec::new();
    for level in 1..=depth {
        let parent = chain.last().copied().unwrap_or(ROOT_GROUP);
        match group::create(&alloc::format!("scale-{}", level), parent, group::DEFAULT_WEIGHT, GroupKind::Manual) {
            Ok(g) => chain.push(g.id),
            Err(e) => {
                for &g in chain.iter().rev() {
                    let _ = group::destroy(g);
                }
                return Err(alloc::format!("cannot create group scale-{}: {}", level, e.strerror()));
            }
        }
    }
    chain.reverse();
    Ok(chain)
}

pub fn cmd_scale(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("scale", args, &SCALE_OPTS)? else { return Ok(()) };
    let ms = a.num("-d", 1000, 10, 600_000)?;
    let counts: Vec<u64> = match a.value("-n") {
        None => alloc::vec![2, 100, 1000, 10000],
        Some(list) => list
            .split(',')
            .map(|n| n.parse::<u64>().ok().filter(|&n| (1..=20_000).contains(&n)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| alloc::format!("-n needs task counts in 1..=20000 separated by commas, got '{}'", list))?,
    };
    let fifo = match a.value("-c") {
        None | Some("fair") => false,
        Some("fifo") => true,
        Some(other) => return Err(alloc::format!("-c needs fair or fifo, got '{}'", other)),
    };
    let depth = if a.value("-g").is_some() { a.num("-g", 1, 1, 8)? } else { 0 };
    if fifo && depth > 0 {
        return Err(String::from("-c fifo and -g go apart (groups schedule fair tasks)"));
    }
    let (cpu, _, _) = bench_cpus();
    let me = sched::current_tid();
    let home = sched::find(me).map(|t| t.group.load(Ordering::Relaxed)).unwrap_or(crate::sched::group::ROOT_GROUP);
    let chain = scale_groups(depth)?;
    let suffix = if fifo {
        String::from(" class=fifo")
    } else if depth > 0 {
        alloc::format!(" depth={}", depth)
    } else {
        String::new()
    };
    let result = scale_runs(&counts, ms, cpu, fifo, chain.first().map(|&g| (g, me, home)), &suffix);
    for &g in &chain {
        let _ = crate::sched::group::destroy(g);
    }
    result
}

/// (where the yielders go, the spawner, the spawner's own group), for [`scale_runs`].
type ScaleGroup = (crate::sched::group::GroupId, sched::task::Tid, crate::sched::group::GroupId);

/// One `scale:` line per task count (see [`cmd_scale`]). With `group`, the spawner moves into
/// it while it starts the yielders (children inherit its group) and back home before measuring.
fn scale_runs(counts: &[u64], ms: u64, cpu: u32, fifo: bool, group: Option<ScaleGroup>, suffix: &str) -> Result<(), String> {
    let go_home = || {
        if let Some((_, me, home)) = group {
            let _ = crate::sched::group::move_task(me, home);
        }
    };
    for &n in counts {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::with_capacity(n as usize);
        if let Some((g, me, _)) = group {
            crate::sched::group::move_task(me, g).map_err(|e| alloc::format!("cannot join the bench group: {}", e.strerror()))?;
        }
        for _ in 0..n {
            let flag = stop.clone();
            let mut opts = SpawnOptions::new("yielder").pin(cpu).stack_size(8 * 1024);
            if fifo {
                opts = opts.policy(cadence_sched::Policy::Fifo, 10, 0);
            }
            match spawn(opts, move || {
                while !flag.load(Ordering::Relaxed) {
                    sched::yield_now();
                }
                0
            }) {
                Ok(t) => tasks.push(t),
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    for t in &tasks {
                        let _ = wait(t.tid);
                    }
                    go_home();
                    return Err(alloc::format!("could only start {} of {} tasks: {:?}", tasks.len(), n, e));
                }
            }
        }
        // Back home while measuring: the spawner sleeps, and its group should hold only yielders.
        go_home();
        let rq = crate::percpu::get(cpu).map(|c| crate::sched::rq_of(c.cpu_id)).ok_or("bench cpu vanished")?;
        sched::sleep_ns(20_000_000);
        let s0 = rq.nr_switches.load(Ordering::Relaxed);
        let t0 = crate::time::uptime_ns();
        sched::sleep_ns(ms * 1_000_000);
        let switches = rq.nr_switches.load(Ordering::Relaxed) - s0;
        let secs = (crate::time::uptime_ns() - t0) as f64 / 1e9;
        stop.store(true, Ordering::SeqCst);
        for t in &tasks {
            let _ = wait(t.tid);
        }
        crate::mm::stack::reclaim();
        let rate = switches as f64 / secs;
        crate::kprintln!(
            "scale: tasks={} switches_per_s={:.0} us_per_switch={:.2}{}",
            n,
            rate,
            if rate > 0.0 { 1e6 / rate } else { 0.0 },
            suffix
        );
    }
    Ok(())
}
