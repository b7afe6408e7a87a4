//! rt-app workloads inside Cadence: `ls /workloads` and `rtapp <name> [-d SECONDS] [-q]`.
//!
//! Workloads arrive as fw_cfg files `opt/cadence/workload/<name>` (`make run WORKLOAD=x.json`).
//! The file is loaded with `cadence_rtapp::load` (grammar: rt-app 1.0's `tutorial.txt`, see
//! `lib/rtapp`); any error — bad JSON, unknown key or event, wrong type, undefined resource,
//! priority out of range, a CPU that is not online — is reported as
//! `rtapp: <name>: line N: <key>: <reason>` and nothing starts.
//!
//! Running: each thread (every instance of every task, named `<task>-<index>` as rt-app's log
//! files are) is a Cadence task with the task's policy, priority (nice for fair policies) and
//! CPU affinity; phases may change affinity and policy. Events:
//! * `run N`: N µs worth of calibrated busy loops (`perf` counts loops; `global.calibration`
//!   gives ns per loop or the CPU to measure it on, under SCHED_FIFO 99); `runtime N`: busy
//!   loops until N µs of wall-clock time have passed;
//! * `sleep N`: `sched::sleep_until(now + N)`; `timer {ref, period}`: absolute periodic wakeup,
//!   the timer shared by every thread naming `ref` (private per thread if `ref` starts with
//!   `unique`), `relative` mode re-arming from now after an overrun, `absolute` mode never;
//! * `lock`/`unlock`, `wait`/`signal`/`broad`/`sync`, `suspend`/`resume` (a condition and mutex
//!   named after the target, `resume` broadcasts), `barrier` (all thread instances naming it),
//!   `yield`; `mem N` writes N bytes of a per-thread buffer; `iorun N` writes N bytes to a null
//!   device (Cadence has no block devices).
//!
//! The workload ends when `global.duration` (or `-d`) has passed or every thread has finished
//! its loops; at the end every thread stops at its next event boundary or wait, an unfinished
//! phase execution is not logged. Then, per thread, rt-app's log (`# Policy ...`, the column
//! header, one row per phase execution; `-q` leaves the rows out) and finally one summary line
//! per thread (`cadence_rtapp::log::Summary`).
//!
//! Cadence extensions (for autogroup experiments): `session: true` makes each instance the
//! leader of a new session (`setsid`: in session autogroup mode, its own autogroup); `tty: N`
//! makes each instance a session on ttyN (opened if needed; in tty mode, the tty's autogroup);
//! `group: "NAME"` puts each instance in manual group NAME (created if needed).

mod sync;

use crate::sched::task::SpawnOptions;
use crate::sched::{self, api};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_rtapp::log::{self as rlog, Row, Summary};
use cadence_rtapp::model::{Calibration, EventKind, Policy, ResKind, Workload};
use cadence_sched::{CpuMask, Policy as KPolicy};
use core::hint::black_box;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use sync::{EvBarrier, EvCond, EvMutex};

const PREFIX: &str = "opt/cadence/workload/";
/// Largest workload file read.
const MAX_FILE: usize = 1 << 20;
/// Rows kept for printing, over all threads (summaries always count every row).
const MAX_ROWS_TOTAL: usize = 200_000;
const MAX_ROWS_THREAD: usize = 5_000;
/// Per-thread `mem` buffer cap.
const MAX_MEM_BUF: usize = 1 << 20;

/// `ls /workloads`: the workload files QEMU passed.
pub fn cmd_ls(args: &[&str]) -> Result<(), String> {
    match args {
        [] | ["/workloads"] | ["/workloads/"] => {}
        _ => return Err(String::from("usage")),
    }
    let files: Vec<_> = crate::arch::fwcfg::files().into_iter().filter(|f| f.name.starts_with(PREFIX)).collect();
    if files.is_empty() {
        crate::kprintln!("(no workloads: boot with make run WORKLOAD=file.json)");
    }
    for f in files {
        crate::kprintln!("{:>8}  {}", f.size, &f.name[PREFIX.len()..]);
    }
    Ok(())
}

fn kpolicy(p: Policy) -> KPolicy {
    match p {
        Policy::Other => KPolicy::Normal,
        Policy::Fifo => KPolicy::Fifo,
        Policy::Rr => KPolicy::RR,
        Policy::Batch => KPolicy::Batch,
        Policy::Idle => KPolicy::Idle,
        Policy::Deadline => KPolicy::Deadline,
    }
}

fn mask_of(cpus: &[u32]) -> CpuMask {
    cpus.iter().map(|&c| c as usize).collect()
}

/// Busy work: `loops` iterations the compiler cannot remove.
#[inline(never)]
fn waste(loops: u64) {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..loops {
        for _ in 0..16 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        }
    }
    black_box(x);
}

/// Picoseconds per `waste` loop on `cpu`, measured by a SCHED_FIFO 99 task pinned there
/// (minimum of several rounds, as noise only ever adds time).
fn calibrate(cpu: u32) -> Result<u64, String> {
    let out = Arc::new(AtomicU32::new(0));
    let o2 = out.clone();
    let opts = SpawnOptions::new("rtapp-calib").policy(KPolicy::Fifo, 99, 0).pin(cpu);
    let t = sched::spawn(opts, move || {
        let mut best = u64::MAX;
        let loops = 20_000u64;
        for _ in 0..7 {
            let t0 = crate::time::uptime_ns();
            waste(loops);
            let dt = crate::time::uptime_ns().saturating_sub(t0);
            best = best.min(dt);
            sched::yield_now();
        }
        let ps = (best.saturating_mul(1000) / loops).clamp(1, u32::MAX as u64);
        o2.store(ps as u32, Ordering::Release);
        0
    })
    .map_err(|e| format!("cannot start the calibration task: {:?}", e))?;
    let _ = sched::wait(t.tid);
    Ok(u64::from(out.load(Ordering::Acquire)).max(1))
}

enum Res {
    Mutex(EvMutex),
    Cond(EvCond),
    Barrier(EvBarrier),
    /// Shared timer: next expiry (ns), 0 = not started.
    Timer(crate::sync::IrqLock<u64>),
}

struct Shared {
    w: Workload,
    res: Vec<Res>,
    stop: AtomicBool,
    start_ns: u64,
    end_ns: u64,
    ps_per_loop: u64,
    mem_buf: usize,
    rows_cap: usize,
    online: CpuMask,
    done: AtomicU32,
    results: spin::Mutex<Vec<Option<ThreadResult>>>,
}

struct ThreadResult {
    rows: Vec<Row>,
    dropped: u64,
    summary: Summary,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire) || crate::time::uptime_ns() >= self.end_ns
    }
    fn mutex(&self, id: usize) -> Option<&EvMutex> {
        match self.res.get(id) {
            Some(Res::Mutex(m)) => Some(m),
            _ => None,
        }
    }
    fn cond(&self, id: usize) -> Option<&EvCond> {
        match self.res.get(id) {
            Some(Res::Cond(c)) => Some(c),
            _ => None,
        }
    }
    fn wake_everyone(&self) {
        for r in &self.res {
            match r {
                Res::Mutex(m) => m.wake_all(),
                Res::Cond(c) => c.wake_all(),
                Res::Barrier(b) => b.wake_all(),
                Res::Timer(_) => {}
            }
        }
    }
}

/// Per phase execution measurements (rt-app's `log_data`).
#[derive(Default)]
struct LoopData {
    perf: u64,
    run_ns: u64,
    slack_us: i64,
    c_duration: u64,
    c_period: u64,
    wu_lat_ns: u64,
    /// Start of this phase execution: a timer's reference when first used (as rt-app).
    t_start: u64,
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

fn signed_us(a: u64, b: u64) -> i64 {
    // a - b in µs, signed.
    if a >= b {
        (us(a - b)).min(i64::MAX as u64) as i64
    } else {
        -((us(b - a)).min(i64::MAX as u64) as i64)
    }
}

struct Thread {
    sh: Arc<Shared>,
    /// Private timers (`unique...` refs): next expiry, 0 = not started.
    timers: BTreeMap<usize, u64>,
    mem: Vec<u8>,
}

impl Thread {
    fn loops_for(&self, us: u64) -> u64 {
        us.saturating_mul(1_000_000) / self.sh.ps_per_loop
    }

    /// Runs one event; `false` if the workload is stopping.
    fn event(&mut self, ev: &EventKind, ld: &mut LoopData) -> bool {
        let sh = self.sh.clone();
        let stop = &sh.stop;
        match *ev {
            EventKind::Run { us } => {
                ld.c_duration += us;
                let t0 = crate::time::uptime_ns();
                let n = self.loops_for(us);
                waste(n);
                ld.perf += n;
                ld.run_ns += crate::time::uptime_ns().saturating_sub(t0);
            }
            EventKind::Runtime { us } => {
                ld.c_duration += us;
                let t0 = crate::time::uptime_ns();
                let until = t0.saturating_add(us * 1000);
                let chunk = self.loops_for(10).max(1);
                while crate::time::uptime_ns() < until {
                    waste(chunk);
                    ld.perf += chunk;
                }
                ld.run_ns += crate::time::uptime_ns().saturating_sub(t0);
            }
            EventKind::Sleep { us } => {
                let t = crate::time::uptime_ns().saturating_add(us * 1000);
                sched::sleep_until(t.min(sh.end_ns));
            }
            EventKind::Mem { bytes } => {
                let n = (bytes as usize).min(self.mem.len());
                for b in self.mem[..n].iter_mut() {
                    *b = black_box(b.wrapping_add(1));
                }
            }
            EventKind::IoRun { bytes } => {
                // A null device: the bytes go nowhere.
                black_box(bytes);
            }
            EventKind::Timer { timer, period_us, absolute } => {
                ld.c_period += period_us;
                let period = period_us * 1000;
                let unique = sh.w.resources.get(timer).is_some_and(|r| r.unique);
                let now = crate::time::uptime_ns();
                // Advance the (shared or private) timer by one period.
                let next = if unique {
                    let t = self.timers.entry(timer).or_insert(0);
                    if *t == 0 {
                        *t = ld.t_start;
                    }
                    *t = t.saturating_add(period);
                    *t
                } else if let Some(Res::Timer(l)) = sh.res.get(timer) {
                    let mut t = l.lock();
                    if *t == 0 {
                        *t = ld.t_start;
                    }
                    *t = t.saturating_add(period);
                    *t
                } else {
                    now
                };
                let now = crate::time::uptime_ns();
                let slack = signed_us(next, now);
                if sh.w.global.cumulative_slack {
                    ld.slack_us += slack;
                } else {
                    ld.slack_us = slack;
                }
                if now < next {
                    if next > sh.end_ns {
                        sched::sleep_until(sh.end_ns);
                        return false;
                    }
                    sched::sleep_until(next);
                    ld.wu_lat_ns += crate::time::uptime_ns().saturating_sub(next);
                } else if !absolute {
                    // Overrun in relative mode: the reference restarts from now.
                    if unique {
                        self.timers.insert(timer, now);
                    } else if let Some(Res::Timer(l)) = sh.res.get(timer) {
                        *l.lock() = now;
                    }
                }
            }
            EventKind::Lock { mutex } => {
                if let Some(m) = sh.mutex(mutex) {
                    return m.lock(stop);
                }
            }
            EventKind::Unlock { mutex } => {
                if let Some(m) = sh.mutex(mutex) {
                    m.unlock();
                }
            }
            EventKind::Wait { cond, mutex } => {
                if let (Some(c), Some(m)) = (sh.cond(cond), sh.mutex(mutex)) {
                    return c.wait(m, stop);
                }
            }
            EventKind::Signal { cond } => {
                if let Some(c) = sh.cond(cond) {
                    c.signal();
                }
            }
            EventKind::Broad { cond } => {
                if let Some(c) = sh.cond(cond) {
                    c.broadcast();
                }
            }
            EventKind::Sync { cond, mutex } => {
                if let (Some(c), Some(m)) = (sh.cond(cond), sh.mutex(mutex)) {
                    c.signal();
                    return c.wait(m, stop);
                }
            }
            EventKind::Suspend { cond, mutex } => {
                if let (Some(c), Some(m)) = (sh.cond(cond), sh.mutex(mutex)) {
                    if !m.lock(stop) || !c.wait(m, stop) {
                        return false;
                    }
                    m.unlock();
                }
            }
            EventKind::Resume { cond, mutex } => {
                if let (Some(c), Some(m)) = (sh.cond(cond), sh.mutex(mutex)) {
                    if !m.lock(stop) {
                        return false;
                    }
                    c.broadcast();
                    m.unlock();
                }
            }
            EventKind::Barrier { barrier } => {
                if let Some(Res::Barrier(b)) = sh.res.get(barrier) {
                    return b.arrive(stop);
                }
            }
            EventKind::Yield => sched::yield_now(),
        }
        !sh.stopped()
    }
}

fn apply_sched(policy: Policy, prio: i32) {
    let p = kpolicy(policy);
    if policy.is_rt() {
        let _ = api::sched_setscheduler(0, p.raw(), prio);
    } else {
        let _ = api::sched_setscheduler(0, p.raw(), 0);
        let _ = api::setpriority(0, i64::from(prio));
    }
}

fn thread_body(sh: Arc<Shared>, idx: usize, ti: usize) -> i32 {
    let Some(task) = sh.w.tasks.get(ti) else { return 1 };
    if task.session || task.tty.is_some() {
        let _ = crate::tty::setsid();
    }
    if let Some(n) = task.tty {
        let _ = crate::tty::open(n).and_then(|_| crate::tty::acquire(n));
    }
    if let Some(name) = &task.group {
        use crate::sched::group::{self, GroupKind, ROOT_GROUP};
        let gid = group::by_name(name)
            .map(|g| g.id)
            .or_else(|| group::create(name, ROOT_GROUP, group::DEFAULT_WEIGHT, GroupKind::Manual).ok().map(|g| g.id));
        if let Some(gid) = gid {
            let _ = group::move_task(sched::current_tid(), gid);
        }
    }
    let mut th = Thread { sh: sh.clone(), timers: BTreeMap::new(), mem: Vec::new() };
    if task.phases.iter().any(|p| p.events.iter().any(|e| matches!(e.kind, EventKind::Mem { .. }))) {
        th.mem = alloc::vec![0u8; sh.mem_buf];
    }
    let mut res = ThreadResult { rows: Vec::new(), dropped: 0, summary: Summary::default() };
    if task.delay_us > 0 {
        sched::sleep_until(sh.start_ns.saturating_add(task.delay_us * 1000).min(sh.end_ns));
    }
    let task_mask = task.cpus.as_deref().map(mask_of).unwrap_or(sh.online);
    let mut cur_mask = task_mask;
    let mut i: i64 = 0;
    'outer: while !sh.stopped() && (task.loops < 0 || i < task.loops) {
        for phase in &task.phases {
            let mask = phase.cpus.as_deref().map(mask_of).unwrap_or(task_mask);
            if mask != cur_mask {
                let _ = api::sched_setaffinity(0, mask);
                cur_mask = mask;
            }
            if phase.policy.is_some() || phase.priority.is_some() {
                let p = phase.policy.unwrap_or(task.policy);
                apply_sched(p, phase.priority.unwrap_or(p.default_prio()));
            }
            let mut l: i64 = 0;
            while phase.loops < 0 || l < phase.loops {
                if sh.stopped() {
                    break 'outer;
                }
                let t_start = crate::time::uptime_ns();
                let mut ld = LoopData { t_start, ..LoopData::default() };
                for ev in &phase.events {
                    if !th.event(&ev.kind, &mut ld) {
                        break 'outer;
                    }
                }
                let t_end = crate::time::uptime_ns();
                let row = Row {
                    idx: idx as u32,
                    perf: ld.perf,
                    run: us(ld.run_ns),
                    period: us(t_end.saturating_sub(t_start)),
                    start: us(t_start),
                    end: us(t_end),
                    rel_st: us(t_start.saturating_sub(sh.start_ns)),
                    slack: ld.slack_us,
                    c_duration: ld.c_duration,
                    c_period: ld.c_period,
                    wu_lat: us(ld.wu_lat_ns),
                };
                res.summary.add(&row);
                if res.rows.len() < sh.rows_cap {
                    res.rows.push(row);
                } else {
                    res.dropped += 1;
                }
                l += 1;
            }
        }
        i += 1;
    }
    if let Some(slot) = sh.results.lock().get_mut(idx) {
        *slot = Some(res);
    }
    sh.done.fetch_add(1, Ordering::AcqRel);
    0
}

fn find_workload(name: &str) -> Option<(String, Vec<u8>)> {
    let files = crate::arch::fwcfg::files();
    let want = [format!("{}{}", PREFIX, name), format!("{}{}.json", PREFIX, name)];
    let f = files.into_iter().find(|f| want.contains(&f.name))?;
    let short = String::from(&f.name[PREFIX.len()..]);
    Some((short, crate::arch::fwcfg::read_file(&f, MAX_FILE)))
}

/// Checks what the loader cannot: CPUs that are not online.
fn check_cpus(w: &Workload, online: CpuMask) -> Result<(), String> {
    for t in &w.tasks {
        let lists = core::iter::once((t.cpus.as_ref(), t.line, format!("tasks.{}.cpus", t.name)))
            .chain(t.phases.iter().map(|p| (p.cpus.as_ref(), p.line, format!("tasks.{}.phases.{}.cpus", t.name, p.name))));
        for (cpus, line, key) in lists {
            if let Some(c) = cpus.and_then(|c| c.iter().find(|&&c| !online.contains(c as usize))) {
                return Err(format!("line {}: {}: cpu {} is not online", line, key, c));
            }
        }
    }
    Ok(())
}

/// `rtapp <name> [-d SECONDS] [-q]`.
pub fn cmd_rtapp(args: &[&str]) -> Result<(), String> {
    let mut name = None;
    let mut duration: Option<i64> = None;
    let mut quiet = false;
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        match a {
            "-d" => {
                let v = it.next().ok_or_else(|| String::from("usage"))?;
                duration = Some(
                    v.parse::<i64>()
                        .ok()
                        .filter(|d| (1..=86_400).contains(d))
                        .ok_or_else(|| format!("-d needs seconds in 1..=86400, got '{}'", v))?,
                );
            }
            "-q" => quiet = true,
            a if a.starts_with('-') => return Err(format!("unknown option '{}'", a)),
            a if name.is_none() => name = Some(a),
            _ => return Err(String::from("usage")),
        }
    }
    let name = name.ok_or_else(|| String::from("usage"))?;
    let (file, bytes) = find_workload(name).ok_or_else(|| format!("no workload '{}' (see 'ls /workloads')", name))?;
    let w = cadence_rtapp::load(&bytes).map_err(|e| format!("{}: {}", file, e))?;
    let online = sched::online_mask();
    check_cpus(&w, online).map_err(|e| format!("{}: {}", file, e))?;
    run(&file, w, duration, quiet)
}

fn run(file: &str, w: Workload, duration: Option<i64>, quiet: bool) -> Result<(), String> {
    let online = sched::online_mask();
    let threads = w.threads();
    let dur = duration.unwrap_or(w.global.duration);
    if dur <= 0 && w.has_endless_thread() {
        crate::kprintln!("rtapp: note: no duration and endless threads: runs until stopped (use -d SECONDS)");
    }
    let ps_per_loop = match w.global.calibration {
        Calibration::NsPerLoop(ns) => ns.saturating_mul(1000),
        Calibration::Cpu(c) => {
            let cpu = if online.contains(c as usize) { c } else { 0 };
            let ps = calibrate(cpu)?;
            crate::kprintln!("rtapp: calibration: {}.{:03} ns per loop on cpu {}", ps / 1000, ps % 1000, cpu);
            ps
        }
    };
    let res = w
        .resources
        .iter()
        .map(|r| match r.kind {
            ResKind::Mutex => Res::Mutex(EvMutex::new()),
            ResKind::Cond => Res::Cond(EvCond::new()),
            ResKind::Barrier => Res::Barrier(EvBarrier::new(r.users.max(1))),
            ResKind::Timer => Res::Timer(crate::sync::IrqLock::new(0)),
        })
        .collect();
    let n = threads.len();
    let rows_cap = (MAX_ROWS_TOTAL / n.max(1)).min(MAX_ROWS_THREAD);
    let start_ns = crate::time::uptime_ns();
    let end_ns = if dur > 0 { start_ns.saturating_add(dur as u64 * 1_000_000_000) } else { u64::MAX };
    crate::kprintln!("rtapp: {}: {} threads, duration {} s, {} ns per loop", file, n, if dur > 0 { dur } else { -1 }, ps_per_loop / 1000);
    let mut results = Vec::with_capacity(n);
    results.resize_with(n, || None);
    let sh = Arc::new(Shared {
        mem_buf: (w.global.mem_buffer_size as usize).min(MAX_MEM_BUF),
        w,
        res,
        stop: AtomicBool::new(false),
        start_ns,
        end_ns,
        ps_per_loop,
        rows_cap,
        online,
        done: AtomicU32::new(0),
        results: spin::Mutex::new(results),
    });
    let mut tids = Vec::new();
    for (idx, (tname, ti)) in threads.iter().enumerate() {
        let Some(t) = sh.w.tasks.get(*ti) else { continue };
        let mask = t.cpus.as_deref().map(mask_of).unwrap_or(online);
        let (rtp, nice) = if t.policy.is_rt() { (t.priority as u8, 0) } else { (0, t.priority) };
        let mut opts = SpawnOptions::new(tname).policy(kpolicy(t.policy), rtp, nice).affinity(mask).stack_size(64 * 1024);
        if let Some(dl) = t.dl {
            // rt-app's µs; the kernel's checks and admission decide (EINVAL, EBUSY, EPERM for a
            // `cpus` narrower than every CPU).
            let attr = cadence_sched::SchedAttr {
                policy: cadence_sched::consts::SCHED_DEADLINE,
                slice_ns: dl.runtime * 1000,
                deadline_ns: dl.deadline * 1000,
                period_ns: dl.period * 1000,
                ..Default::default()
            };
            match attr.validate() {
                Ok(a) => opts = opts.attr(a),
                Err(e) => {
                    crate::kprintln!(
                        "rtapp: cannot start {}: SCHED_DEADLINE {}/{}/{} us: {}",
                        tname,
                        dl.runtime,
                        dl.deadline,
                        dl.period,
                        e.strerror()
                    );
                    sh.stop.store(true, Ordering::Release);
                    break;
                }
            }
        }
        let s2 = sh.clone();
        let ti = *ti;
        match sched::spawn(opts, move || thread_body(s2, idx, ti)) {
            Ok(task) => tids.push(task.tid),
            Err(e) => {
                crate::kprintln!("rtapp: cannot start {}: {:?}", tname, e);
                sh.stop.store(true, Ordering::Release);
                break;
            }
        }
    }
    // Wait for the end of the duration or of every thread.
    while sh.done.load(Ordering::Acquire) < tids.len() as u32 && !sh.stopped() {
        let now = crate::time::uptime_ns();
        sched::sleep_until(now.saturating_add(10_000_000).min(sh.end_ns));
    }
    sh.stop.store(true, Ordering::Release);
    // Threads may be just about to block: wake until all are gone.
    while sh.done.load(Ordering::Acquire) < tids.len() as u32 {
        sh.wake_everyone();
        sched::sleep_ns(1_000_000);
    }
    for tid in tids {
        let _ = sched::wait(tid);
    }
    let elapsed = crate::time::uptime_ns().saturating_sub(start_ns);
    // Logs, then summaries.
    let results = core::mem::take(&mut *sh.results.lock());
    let mut summaries = Vec::new();
    for ((tname, ti), r) in threads.iter().zip(results) {
        let Some(r) = r else { continue };
        let Some(t) = sh.w.tasks.get(*ti) else { continue };
        if !quiet {
            crate::kprintln!("rtapp: log {}/{}-{}.log", sh.w.global.logdir.trim_end_matches('/'), sh.w.global.log_basename, tname);
            crate::kprintln!("{}", rlog::policy_header(t.policy.name(), t.priority));
            crate::kprintln!("{}", rlog::HEADER);
            for row in &r.rows {
                crate::kprintln!("{}", row.format());
            }
            if r.dropped > 0 {
                crate::kprintln!("# {} more rows not kept (counted in the summary)", r.dropped);
            }
        }
        summaries.push(r.summary.line(tname));
    }
    crate::kprintln!("rtapp: {}: done in {} ms", file, elapsed / 1_000_000);
    for s in summaries {
        crate::kprintln!("{}", s);
    }
    Ok(())
}
