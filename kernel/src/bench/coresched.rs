//! `bench coresched [-d S] [-n N]`: what core scheduling costs (the seed's style of table).
//!
//! Workloads (all tasks fair, nice 0; `N` = tasks per group, default the online CPUs):
//! * `cpu`: two groups of `N` CPU-bound tasks with different cookies; throughput = loop
//!   iterations per second of all of them;
//! * `pipe+cpu`: a pipe ping-pong pair with one cookie beside a group of `N` CPU-bound tasks
//!   with another; throughput = round trips per second of the pair.
//!
//! Modes, in a boot with SMT siblings online: `off` (the tasks without cookies: siblings run
//! anything — what a kernel without core scheduling does; no cookie means nothing to violate,
//! so a trace of the whole bench still checks clean), `on` (the groups get different cookies:
//! core scheduling keeps them off sibling threads), `pinned` (no cookies, every task confined
//! to thread 0 of each core while the siblings stay online and idle — *not* a `nosmt` boot: the
//! idle siblings still take their ticks and IPIs). In a boot with `nosmt` (siblings offline)
//! the one mode is `nosmt`: the same tasks on the CPUs left online, the real thing; its
//! `normalized` is `n/a` (no `off` run in that boot: `tools/bench-coresched.sh`, i.e.
//! `make bench-coresched`, boots both ways with the same `-n` and divides by the SMT boot's
//! `off`). One line per run, exactly:
//!
//!     coresched: mode=<off|on|pinned|nosmt> workload=<name> throughput=<n> normalized=<x.xx|n/a> forced_idle_pct=<pct>
//!
//! (`normalized` = throughput / the `off` run's; `forced_idle_pct` = forced-idle time / CPU time).

use super::{opt, Args, Opt};
use crate::sched::coresched::{self, prctl};
use crate::sched::pipe::pipe;
use crate::sched::task::{SpawnOptions, Task};
use crate::sched::{self, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::core_sched::{PIDTYPE_PID, PR_SCHED_CORE_CREATE, PR_SCHED_CORE_SHARE_FROM, PR_SCHED_CORE_SHARE_TO};
use cadence_sched::CpuMask;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    On,
    /// Thread 0 of each core only, siblings online (same boot).
    Pinned,
    /// A `nosmt` boot: siblings offline.
    NoSmt,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::On => "on",
            Mode::Pinned => "pinned",
            Mode::NoSmt => "nosmt",
        }
    }
}

/// One thread per core: the CPUs whose SMT thread id is 0.
fn first_threads() -> CpuMask {
    crate::percpu::online_cpus().filter(|c| c.topology.thread == 0).map(|c| c.cpu_id as usize).collect()
}

/// Gives every task in `group` one new cookie (the caller passes through it and drops it
/// again by sharing from `plain`, a task without a cookie).
fn cookie_group(group: &[Arc<Task>], plain: &Task) -> Result<(), String> {
    let err = |e: cadence_sched::Errno| alloc::format!("prctl: {}", e.strerror());
    let Some(first) = group.first() else { return Ok(()) };
    prctl(PR_SCHED_CORE_CREATE as u64, first.tid as u64, PIDTYPE_PID as u64, 0).map_err(err)?;
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, first.tid as u64, PIDTYPE_PID as u64, 0).map_err(err)?;
    for t in &group[1..] {
        prctl(PR_SCHED_CORE_SHARE_TO as u64, t.tid as u64, PIDTYPE_PID as u64, 0).map_err(err)?;
    }
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).map_err(err)?;
    Ok(())
}

fn hogs(n: usize, affinity: CpuMask, stop: &Arc<AtomicBool>, loops: &Arc<AtomicU64>) -> Result<Vec<Arc<Task>>, String> {
    (0..n)
        .map(|_| {
            let (stop, loops) = (stop.clone(), loops.clone());
            spawn(SpawnOptions::new("cs-hog").affinity(affinity), move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    if n.is_multiple_of(4096) {
                        loops.fetch_add(4096, Ordering::Relaxed);
                    }
                }
                0
            })
            .map_err(|e| alloc::format!("cannot start a task: {:?}", e))
        })
        .collect()
}

/// Runs one workload in one mode; returns (throughput, forced-idle percent).
fn run(workload: &str, mode: Mode, secs: u64, per_group: usize, plain: &Task) -> Result<(f64, f64), String> {
    let all = sched::online_mask();
    let affinity = if mode == Mode::Pinned { first_threads() } else { all };
    let cookies = mode == Mode::On;
    let ncpu = all.count() as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let work = Arc::new(AtomicU64::new(0));
    let mut tasks: Vec<Arc<Task>> = Vec::new();
    let result = (|| {
        match workload {
            "cpu" => {
                let a = hogs(per_group, affinity, &stop, &work)?;
                let b = hogs(per_group, affinity, &stop, &work)?;
                if cookies {
                    cookie_group(&a, plain)?;
                    cookie_group(&b, plain)?;
                }
                tasks.extend(a);
                tasks.extend(b);
            }
            _ => {
                let (r1, w1) = pipe();
                let (r2, w2) = pipe();
                let (stop2, work2) = (stop.clone(), work.clone());
                let stop3 = stop.clone();
                let pong = spawn(SpawnOptions::new("cs-pong").affinity(affinity), move || {
                    let mut b = [0u8; 1];
                    while !stop3.load(Ordering::Relaxed) {
                        if r1.read(&mut b) != 1 || w2.write(&b).is_err() {
                            break;
                        }
                    }
                    0
                })
                .map_err(|e| alloc::format!("cannot start pong: {:?}", e))?;
                let ping = spawn(SpawnOptions::new("cs-ping").affinity(affinity), move || {
                    let mut b = [0u8; 1];
                    while !stop2.load(Ordering::Relaxed) {
                        if w1.write(&b).is_err() || r2.read(&mut b) != 1 {
                            break;
                        }
                        work2.fetch_add(1, Ordering::Relaxed);
                    }
                    0
                })
                .map_err(|e| alloc::format!("cannot start ping: {:?}", e))?;
                let pair = alloc::vec![ping, pong];
                let cpu_group = hogs(per_group, affinity, &stop, &Arc::new(AtomicU64::new(0)))?;
                if cookies {
                    cookie_group(&pair, plain)?;
                    cookie_group(&cpu_group, plain)?;
                }
                tasks.extend(pair);
                tasks.extend(cpu_group);
            }
        }
        sched::sleep_ns(100_000_000);
        let fi0: u64 = crate::percpu::online_cpus().map(|c| crate::sched::rq_of(c.cpu_id).forced_idle_ns.load(Ordering::Relaxed)).sum();
        let (w0, t0) = (work.load(Ordering::Relaxed), crate::time::uptime_ns());
        sched::sleep_ns(secs * 1_000_000_000);
        let dt = (crate::time::uptime_ns() - t0) as f64;
        let done = work.load(Ordering::Relaxed) - w0;
        let fi: u64 =
            crate::percpu::online_cpus().map(|c| crate::sched::rq_of(c.cpu_id).forced_idle_ns.load(Ordering::Relaxed)).sum::<u64>() - fi0;
        Ok((done as f64 * 1e9 / dt, 100.0 * fi as f64 / (dt * ncpu as f64)))
    })();
    stop.store(true, Ordering::SeqCst);
    // A pipe end blocked in read: kill the pair's tasks rather than wait forever.
    for t in &tasks {
        if t.name.starts_with("cs-p") {
            let _ = crate::sched::signal::kill(t.tid, crate::sched::signal::SIGKILL);
        }
    }
    for t in &tasks {
        let _ = wait(t.tid);
    }
    result
}

/// `bench coresched`'s options.
const OPTS: [Opt; 2] =
    [opt("-d", "S", "seconds per configuration (default 2)"), opt("-n", "N", "tasks per cookie group (default: the number of CPUs)")];

pub fn cmd_coresched(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("coresched", args, &OPTS)? else { return Ok(()) };
    let secs = a.num("-d", 2, 1, 600)?;
    let per_group = a.num("-n", sched::online_mask().count() as u64, 1, 64)? as usize;
    let modes: &[Mode] = if coresched::smt_present() {
        if !coresched::enabled() {
            return Err(String::from("core scheduling is off (sysctl kernel.sched_core=1)"));
        }
        &[Mode::Off, Mode::On, Mode::Pinned]
    } else if crate::smp::siblings_left_offline() {
        &[Mode::NoSmt]
    } else {
        return Err(String::from("no SMT siblings (boot with threads=2; with nosmt for the nosmt row)"));
    };
    // A task without a cookie, made before the bench takes any.
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let plain = spawn(SpawnOptions::new("cs-plain"), move || {
        while !s.load(Ordering::Relaxed) {
            sched::sleep_ns(10_000_000);
        }
        0
    })
    .map_err(|e| alloc::format!("cannot start a task: {:?}", e))?;
    let mut result = Ok(());
    'w: for workload in ["cpu", "pipe+cpu"] {
        let mut base = 0.0;
        for &mode in modes {
            match run(workload, mode, secs, per_group, &plain) {
                Ok((tp, fi)) => {
                    if mode == Mode::Off {
                        base = tp;
                    }
                    let normalized = if base > 0.0 { alloc::format!("{:.2}", tp / base) } else { String::from("n/a") };
                    crate::kprintln!(
                        "coresched: mode={} workload={} throughput={:.0} normalized={} forced_idle_pct={:.1}",
                        mode.name(),
                        workload,
                        tp,
                        normalized,
                        fi
                    );
                }
                Err(e) => {
                    result = Err(e);
                    break 'w;
                }
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    let _ = wait(plain.tid);
    result
}
