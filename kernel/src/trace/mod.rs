//! The scheduler tracer: Linux-tracepoint-shaped hooks recording into per-CPU ring buffers,
//! reports in the kernel, and export in ftrace's text format over COM2.
//!
//! # Hooks
//! The scheduler calls [`sched_switch`], [`sched_wakeup`] (also `sched_wakeup_new`),
//! [`sched_migrate_task`], [`sched_process_exit`], [`timer_expire`], [`ipi_send`]; the hrtick
//! calls [`hrtick_start`] and [`hrtick_fire`], core scheduling [`sched_core_force_idle`]. Contract: they may be called
//! with interrupts off, from interrupt context and with a run-queue lock held, so they take no
//! lock, never allocate and never block. Each starts with one relaxed load of [`ACTIVE`] (the
//! enable mask, 0 while tracing is stopped) and a branch; the recording path is out of line.
//!
//! # Buffers
//! The per-CPU rings, the enable mask and the reader's handshake with the writers are the
//! framework's (`framework::trace`, whose module docs state the invariants); this module
//! records the scheduler's events into them and adds the affinity side table.
//!
//! # Commands (`trace ...`)
//! * `start [-b ENTRIES]`: clear the rings (allocating ENTRIES records per CPU, default
//!   [`DEFAULT_ENTRIES`]) and start recording the enabled events;
//! * `stop`: stop, then stream the trace to COM2 (merged across CPUs in timestamp order);
//! * `dump`: stream the trace to COM2 without stopping; `clear`: empty the rings;
//! * `report`: print the wakeup-latency summary (all, rt, fair), the histogram and the per-task
//!   table (see `cadence_trace::report`);
//! * `check coresched`: the core-scheduling checker (`cadence_trace::coresched`);
//! * `check rt [-b US]`: the RT-guarantee checker (`cadence_trace::rtcheck`): every interval
//!   longer than US µs (default 100) in which an RT task waited while a CPU it may use ran
//!   something less important; affinities come from the side table below;
//! * `check wc [-b US]`: the work-conservation checker (`cadence_trace::wccheck`): every
//!   interval longer than US µs (default 4000) in which a CPU stayed idle while a task that may
//!   use it waited; the same affinities;
//! * `events [NAME|all on|off]`: list or switch events (ftrace names, e.g. `sched_switch`).
//!
//! # Affinity side table
//! Scheduling events carry no CPU affinity, which the RT checker needs. [`task_affinity`]
//! records, per tid, the mask a task had when `trace start` ran (seeded then with every live
//! task's mask) or when it was created (`sched::spawn`); every later change is a
//! `sched_set_affinity` event (`sched::api::sched_setaffinity`), and every priority change a
//! `sched_pi_setprio` event, so the checker replays both in order.
//! The table is a `BTreeMap` behind an [`IrqLock`](crate::sync::IrqLock), capped at
//! [`MAX_AFFINITY_TASKS`] entries (more are counted, and treated as "all CPUs"). It allocates,
//! so it is updated only in task context: both callers are (spawn allocates a stack, and
//! `sched_setaffinity` is a syscall-like API); the hooks never touch it. Recording is on from
//! `trace start` to `trace stop` (otherwise a call costs a fence and a load); the table is kept
//! until the next start so exports and checks after the stop see it.
//!
//! # Export
//! COM2 (16550 at 0x2f8) receives the `nop`-tracer header, one `# cadence-affinity: pid=<n>
//! mask=0x<hex>` comment line per task of the side table, and one line per event in ftrace text
//! format (`cadence_trace::ftrace`); `make run TRACE=file` captures it. If no UART answers at
//! 0x2f8 (its scratch register does not hold a value), nothing is streamed.

use crate::sched::task::{Task, TaskState};
use crate::sync::IrqLock;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use cadence_sched::CpuMask;
use cadence_trace::{ftrace, report, rtcheck, wccheck, Comm, Event, EventKind, EventType, TaskInfo};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
pub use framework::trace::{
    clear, event_mask, hrtick_fire, hrtick_start, ipi_send, irqsoff, on, record, sched_core_force_idle, sched_core_switch, set_event_mask,
    timer_expire,
};

#[cfg(test)]
mod tests;

/// Records per CPU unless `trace start -b` says otherwise.
pub const DEFAULT_ENTRIES: usize = 131072;
/// Largest `-b` accepted.
pub const MAX_ENTRIES: usize = 1 << 22;

// ----- hooks ---------------------------------------------------------------------------------

/// `sched_switch`: `prev` (which leaves in `prev_state`) → `next` on this CPU.
#[inline]
pub fn sched_switch(prev: &Task, prev_state: TaskState, next: &Task, now_ns: u64) {
    if on(EventType::SchedSwitch) {
        record_switch(prev, prev_state, next, now_ns);
    }
}

/// `sched_wakeup` (`new == false`) or `sched_wakeup_new`: `task` made runnable on `target_cpu`.
#[inline]
pub fn sched_wakeup(task: &Task, target_cpu: u32, new: bool, now_ns: u64) {
    let ty = if new { EventType::SchedWakeupNew } else { EventType::SchedWakeup };
    if on(ty) {
        record_task(ty, now_ns, EventKind::Wakeup { task: info(task), target_cpu, new });
    }
}

/// `sched_migrate_task`: `task` moves from `orig_cpu` to `dest_cpu`.
#[inline]
pub fn sched_migrate_task(task: &Task, orig_cpu: u32, dest_cpu: u32, now_ns: u64) {
    if on(EventType::SchedMigrateTask) {
        record_task(EventType::SchedMigrateTask, now_ns, EventKind::Migrate { task: info(task), orig_cpu, dest_cpu });
    }
}

/// The Linux prio events show for `task` now (for [`sched_pi_setprio`]'s `old_prio`).
pub fn task_prio(task: &Task) -> i32 {
    info(task).prio
}

/// `sched_pi_setprio`: `task`'s priority changed from `old_prio` (no event if it did not).
/// Linux emits it for priority inheritance only; Cadence for every change (`sched_setattr`,
/// nice, RLIMIT_RTTIME demotion), so that the RT checker knows a waiting task's priority.
pub fn sched_pi_setprio(task: &Task, old_prio: i32, now_ns: u64) {
    if on(EventType::PiSetprio) {
        let now = info(task);
        if now.prio != old_prio {
            record_task(EventType::PiSetprio, now_ns, EventKind::Prio { task: now, old_prio });
        }
    }
}

/// `sched_set_affinity` (Cadence): `task` may now run on `mask`.
pub fn sched_set_affinity(task: &Task, mask: CpuMask, now_ns: u64) {
    if on(EventType::SetAffinity) {
        let wide = !mask.andnot(CpuMask::all(64)).is_empty();
        record_task(EventType::SetAffinity, now_ns, EventKind::Affinity { task: info(task), mask: mask.low_u64(), wide });
    }
}

/// `tracing_mark_write` (tracefs `trace_marker`): a user program's text, cut to
/// `cadence_trace::event::MARKER_LEN` bytes. False if the tracer is off or the event
/// disabled (Linux answers such a write EBADF: its ring buffer is disabled).
pub fn print(text: &str) -> bool {
    if !on(EventType::Print) {
        return false;
    }
    record_task(EventType::Print, crate::time::uptime_ns(), EventKind::Print { text: cadence_trace::event::Marker::new(text) });
    true
}

/// `sched_process_exit`: `task` exited.
#[inline]
pub fn sched_process_exit(task: &Task, now_ns: u64) {
    if on(EventType::SchedProcessExit) {
        record_task(EventType::SchedProcessExit, now_ns, EventKind::Exit { task: info(task) });
    }
}

/// `sched_dl_throttle`: deadline task `task` used up its runtime (`runtime_ns` left, ≤ 0) and
/// waits for the period after `deadline_ns`.
pub fn dl_throttle(task: &Task, runtime_ns: i64, deadline_ns: u64) {
    if on(EventType::DlThrottle) {
        let kind = EventKind::Dl { task: info(task), runtime_ns, deadline_ns, replenish: false };
        record_task(EventType::DlThrottle, crate::time::uptime_ns(), kind);
    }
}

/// `sched_dl_replenish`: deadline task `task` got `runtime_ns` for its period ending at
/// `deadline_ns`.
pub fn dl_replenish(task: &Task, runtime_ns: i64, deadline_ns: u64) {
    if on(EventType::DlReplenish) {
        let kind = EventKind::Dl { task: info(task), runtime_ns, deadline_ns, replenish: true };
        record_task(EventType::DlReplenish, crate::time::uptime_ns(), kind);
    }
}

/// `sched_cfs_throttle` / `sched_cfs_unthrottle`: task group `group`'s queue on this CPU ran
/// out of its `cpu.max` quota (`throttled`) or got runtime again (recorded on the CPU whose
/// queue it is, except when a new limit lets every CPU's queue go at once).
pub fn cfs_throttle(group: u32, throttled: bool) {
    let ty = if throttled { EventType::CfsThrottle } else { EventType::CfsUnthrottle };
    if on(ty) {
        record_task(ty, crate::time::uptime_ns(), EventKind::CfsBandwidth { group, throttled });
    }
}

// ----- affinity side table ------------------------------------------------------------------

/// Most tasks the affinity table holds (a mask, 128 bytes at 1,024 CPUs, and the tree's
/// overhead each).
pub const MAX_AFFINITY_TASKS: usize = 65536;

/// Is [`task_affinity`] recording (from `trace start` to `trace stop`)?
static AFFINITY_ON: AtomicBool = AtomicBool::new(false);
/// tid → its mask when recording started or when it was created (see the module docs).
static AFFINITY: IrqLock<BTreeMap<u32, CpuMask>> = IrqLock::new(BTreeMap::new());
/// Tasks not recorded because the table was full (since the last start).
static AFFINITY_FULL: AtomicU64 = AtomicU64::new(0);

/// Records that task `tid` may run on the CPUs of `mask`, if the table has no mask for it yet
/// (its mask when tracing started or when it was created; later changes are
/// `sched_set_affinity` events). Task context only (it may allocate).
pub fn task_affinity(tid: u32, mask: CpuMask) {
    // Orders the caller's store of the task or its new mask before the load of AFFINITY_ON,
    // against `affinity_start`'s store of AFFINITY_ON before its scan (store-buffer pattern:
    // a fence on each side, so at least one of the two sees the other's store).
    core::sync::atomic::fence(Ordering::SeqCst);
    if !AFFINITY_ON.load(Ordering::Relaxed) {
        return;
    }
    let mut table = AFFINITY.lock();
    if table.contains_key(&tid) {
        // Known: a change is an event.
    } else if table.len() < MAX_AFFINITY_TASKS {
        table.insert(tid, mask);
    } else {
        AFFINITY_FULL.fetch_add(1, Ordering::Relaxed);
    }
}

/// Starts a fresh table: empty it, turn recording on, then add every live task's mask. (A task
/// created or changed meanwhile either records itself, having seen recording on, or is seen by
/// the scan, which comes after.)
fn affinity_start() {
    AFFINITY.lock().clear();
    AFFINITY_FULL.store(0, Ordering::Relaxed);
    AFFINITY_ON.store(true, Ordering::Relaxed);
    core::sync::atomic::fence(Ordering::SeqCst);
    for t in crate::sched::task::all() {
        if !t.is_idle {
            task_affinity(t.tid, t.affinity());
        }
    }
}

/// Stops recording affinities and frees the table (the chaos stress, before it measures the
/// heap: the table grows with every task a traced run creates). The next `trace start`
/// rebuilds it.
pub fn affinity_release() {
    AFFINITY_ON.store(false, Ordering::SeqCst);
    let table = core::mem::take(&mut *AFFINITY.lock());
    drop(table); // freed with the lock released (interrupts on)
}

/// A copy of the table (tid order).
fn affinity_table() -> Vec<(u32, CpuMask)> {
    AFFINITY.lock().iter().map(|(&t, &m)| (t, m)).collect()
}

// ----- recording -----------------------------------------------------------------------------

/// A task as events record it: idle is pid 0 `swapper/<cpu>` prio 120; the others' prio is
/// their class's `prio` hook: RT `99 - rt_priority`, fair `120 + nice` (Linux's `p->prio`).
fn info(t: &Task) -> TaskInfo {
    if t.is_idle {
        return TaskInfo { comm: Comm::with_number("swapper/", t.cpu()), pid: 0, prio: 120 };
    }
    let prio = crate::sched::class::of(t).prio(t);
    TaskInfo { comm: t.with_comm(Comm::new), pid: t.tid, prio }
}

fn state_letter(s: TaskState) -> u8 {
    match s {
        TaskState::Running => b'R',
        TaskState::Sleeping => b'S',
        TaskState::Stopped => b'T',
        TaskState::Dead => b'Z',
    }
}

/// The task column: the task running on this CPU (`<idle>`/0 for idle). Interrupts are off.
pub fn current_ctx() -> (Comm, u32) {
    crate::sched::signal::with_current(|t| if t.is_idle { (Comm::new(ftrace::IDLE_COMM), 0) } else { (t.with_comm(Comm::new), t.tid) })
        .unwrap_or((Comm::new(ftrace::IDLE_COMM), 0))
}

#[cold]
#[inline(never)]
fn record_switch(prev: &Task, prev_state: TaskState, next: &Task, now_ns: u64) {
    let p = info(prev);
    let ctx = if prev.is_idle { Comm::new(ftrace::IDLE_COMM) } else { p.comm };
    let kind = EventKind::Switch { prev: p, prev_state: state_letter(prev_state), next: info(next) };
    record(EventType::SchedSwitch, now_ns, Some((ctx, p.pid)), kind);
}

#[cold]
#[inline(never)]
fn record_task(ty: EventType, now_ns: u64, kind: EventKind) {
    record(ty, now_ns, None, kind);
}

/// Starts a fresh trace with `entries` records per CPU (and a fresh affinity table).
pub fn start(entries: usize) -> Result<(), String> {
    framework::trace::start(entries, affinity_start)
}

/// Records again without emptying the rings (tracefs `tracing_on`; rings of
/// [`DEFAULT_ENTRIES`] are made if there are none). The affinity table keeps what it holds and
/// gains the tasks it lacks.
pub fn resume() -> Result<(), String> {
    framework::trace::resume(DEFAULT_ENTRIES, || {
        AFFINITY_ON.store(true, Ordering::Relaxed);
        core::sync::atomic::fence(Ordering::SeqCst);
        for t in crate::sched::task::all() {
            if !t.is_idle {
                task_affinity(t.tid, t.affinity());
            }
        }
    })
}

/// Is the tracer recording?
pub fn running() -> bool {
    framework::trace::running()
}

/// Bytes one record takes in a ring (tracefs `buffer_size_kb` counts records in these).
pub const RECORD_BYTES: usize = core::mem::size_of::<Event>();

/// Records per CPU of the rings (0 before the first start).
pub fn entries() -> usize {
    framework::trace::entries()
}

/// New empty rings of `entries` records per CPU, recording on if it was.
pub fn resize(entries: usize) -> Result<(), String> {
    framework::trace::resize(entries)
}

/// Takes (consumes) the oldest events not yet taken, as ftrace text lines, whole lines of at
/// most `max` bytes in all (at least one line if any event is waiting and `max` allows it):
/// tracefs `trace_pipe`. Empty if nothing waits.
pub fn take_text(max: usize) -> Result<String, String> {
    let peeked = framework::trace::peek(256)?;
    let mut out = String::new();
    let mut next: Vec<(u32, u64)> = Vec::new();
    let mut line = String::new();
    for (n, e) in &peeked.events {
        line.clear();
        let _ = ftrace::write_event(&mut line, e);
        if out.len() + line.len() > max {
            if !out.is_empty() {
                break;
            }
            // A reader with room for less than one line gets its head (as a short read of
            // Linux's trace_pipe): never nothing while events wait.
            let mut cut = max.min(line.len());
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        out.push_str(&line);
        match next.iter_mut().find(|(c, _)| *c == e.cpu) {
            Some(slot) => slot.1 = n + 1,
            None => next.push((e.cpu, n + 1)),
        }
    }
    framework::trace::advance(peeked.generation, &next);
    Ok(out)
}

/// Stops recording (keeps the rings and the affinity table). Returns false if it was not
/// running.
pub fn stop() -> bool {
    framework::trace::stop(|| AFFINITY_ON.store(false, Ordering::SeqCst))
}

/// A copy of the trace: every CPU's events merged in timestamp order.
pub struct Snapshot {
    pub events: Vec<Event>,
    /// Events that occurred since the last clear (held + overwritten + dropped).
    pub written: u64,
    /// Per CPU: (written to the ring, held, dropped while paused).
    pub per_cpu: Vec<(u64, u64, u64)>,
    /// The affinity side table: (tid, its first mask while tracing), tid order.
    pub affinity: Vec<(u32, CpuMask)>,
}

impl Snapshot {
    pub fn lost(&self) -> u64 {
        self.written.saturating_sub(self.events.len() as u64)
    }
}

/// The SMT sibling groups of the online CPUs (one mask per core).
pub fn smt_groups() -> Vec<cadence_sched::CpuMask> {
    let mut groups: Vec<cadence_sched::CpuMask> = Vec::new();
    for cpu in crate::percpu::online_cpus() {
        let m = crate::sched::coresched::siblings(cpu.cpu_id);
        if !groups.contains(&m) {
            groups.push(m);
        }
    }
    groups
}

/// `trace check coresched`: every interval in which two siblings ran tasks with different
/// cookies, over the trace's `sched_core_switch` events. Errors if events were lost (the
/// check would not be sound).
pub fn check_coresched() -> Result<cadence_sched::core_sched::CheckReport, String> {
    let s = snapshot()?;
    if s.lost() > 0 {
        crate::kprintln!("trace: {} events were lost: checking the window where every CPU's trace is complete", s.lost());
    }
    let end = s.events.last().map(|e| e.ts_ns).unwrap_or(0);
    cadence_trace::coresched::check(&s.events, &smt_groups(), Some(end)).map_err(|e| alloc::format!("cannot check: {}", e.strerror()))
}

/// `trace check rt`: every interval longer than `bound_ns` in which an RT task waited while a
/// CPU it may use (per the affinity table; unknown tasks: all CPUs) ran something less
/// important, over the live rings (the window where every CPU's trace is complete).
pub fn check_rt(bound_ns: u64) -> Result<rtcheck::RtReport, String> {
    let (s, affinity) = replay_input()?;
    let opts = rtcheck::Options { bound_ns, end_ns: s.events.last().map(|e| e.ts_ns), ..rtcheck::Options::new(crate::percpu::nr_cpus()) }
        .with_smt(&smt_groups());
    Ok(rtcheck::check(&s.events, &opts, |pid| affinity.get(&pid).copied()))
}

/// `trace check wc`: every interval longer than `bound_ns` in which a CPU stayed idle while a
/// task that may use it (per the affinity table; unknown tasks: all CPUs) waited, over the
/// live rings (the window where every CPU's trace is complete).
pub fn check_wc(bound_ns: u64) -> Result<wccheck::WcReport, String> {
    let (s, affinity) = replay_input()?;
    let opts = wccheck::Options { bound_ns, end_ns: s.events.last().map(|e| e.ts_ns), ..wccheck::Options::new(crate::percpu::nr_cpus()) };
    Ok(wccheck::check(&s.events, &opts, |pid| affinity.get(&pid).copied()))
}

/// What the replaying checkers take: the live rings and the affinity table (saying so when
/// events were lost or affinities not recorded).
fn replay_input() -> Result<(Snapshot, BTreeMap<u32, CpuMask>), String> {
    let s = snapshot()?;
    if s.lost() > 0 {
        crate::kprintln!("trace: {} events were lost: checking the window where every CPU's trace is complete", s.lost());
    }
    let full = AFFINITY_FULL.load(Ordering::Relaxed);
    if full > 0 {
        crate::kprintln!("trace: affinity of {} tasks not recorded (table full): taken as all CPUs", full);
    }
    let affinity: BTreeMap<u32, CpuMask> = s.affinity.iter().copied().collect();
    Ok((s, affinity))
}

/// Prints (ftrace text, on the console) the events of `cpus` between `from_ns` and `to_ns`:
/// what a failing scenario test shows around the moment it points at.
pub fn print_window(cpus: &[u32], from_ns: u64, to_ns: u64) {
    let Ok(s) = snapshot() else { return };
    for e in s.events.iter().filter(|e| cpus.contains(&e.cpu) && e.ts_ns >= from_ns && e.ts_ns <= to_ns) {
        let mut line = String::new();
        if ftrace::write_event(&mut line, e).is_ok() {
            crate::kprintln!("{}", line.trim_end());
        }
    }
}

/// Copies the rings (pausing writers meanwhile), merged by timestamp (ties: CPU order, then
/// ring order), with the affinity table.
pub fn snapshot() -> Result<Snapshot, String> {
    let rings = framework::trace::copy()?;
    Ok(Snapshot { events: rings.events, written: rings.written, per_cpu: rings.per_cpu, affinity: affinity_table() })
}

/// The report of the current trace, as text.
pub fn report_text() -> Result<String, String> {
    let s = snapshot()?;
    let rep = report::analyze(&s.events, s.lost());
    let mut out = String::new();
    let _ = rep.write(&mut out);
    Ok(out)
}

// ----- export (COM2) ------------------------------------------------------------------------

/// The head of an export of `s`: the `nop`-tracer header, then one affinity line per task of
/// the side table.
fn header_text(s: &Snapshot) -> String {
    let mut header = String::new();
    let _ = ftrace::write_header(&mut header, s.events.len() as u64, s.written, crate::percpu::nr_cpus());
    for &(tid, mask) in &s.affinity {
        let _ = ftrace::write_affinity(&mut header, tid, mask);
    }
    header
}

/// Streams `s` to COM2 in ftrace text: [`header_text`], then the events. Returns false if
/// there is no COM2.
fn stream(s: &Snapshot) -> bool {
    framework::trace::stream_com2(&header_text(s), &s.events)
}

/// Longest event line (`sched_switch` with two 15-byte comms and large numbers is about 190
/// bytes): what a text export reserves per event.
const LINE_BYTES: usize = 256;

/// The trace as tracefs's `trace` shows it (the export's text: [`header_text`], then the
/// events), or only CPU `cpu`'s events (`per_cpu/cpuN/trace`, whose header counts that CPU's).
/// Errors if the text does not fit in memory.
pub fn text(cpu: Option<u32>) -> Result<String, String> {
    let mut s = snapshot()?;
    if let Some(c) = cpu {
        s.events.retain(|e| e.cpu == c);
        let (written, _, dropped) = s.per_cpu.get(c as usize).copied().unwrap_or_default();
        s.written = written + dropped;
        s.affinity.clear();
    }
    let header = header_text(&s);
    let mut out = String::new();
    out.try_reserve_exact(header.len() + s.events.len().saturating_mul(LINE_BYTES))
        .map_err(|_| alloc::format!("cannot allocate the text of {} events", s.events.len()))?;
    out.push_str(&header);
    for e in &s.events {
        let _ = ftrace::write_event(&mut out, e);
    }
    Ok(out)
}

/// Per-CPU ring statistics of CPU `cpu`, as tracefs `per_cpu/cpuN/stats` (Linux's fields:
/// entries held, overrun (overwritten), dropped (here: while a reader had the rings paused),
/// read (consumed by `trace_pipe`)).
pub fn cpu_stats(cpu: u32) -> Result<String, String> {
    let s = snapshot()?;
    let (written, held, dropped) = s.per_cpu.get(cpu as usize).copied().unwrap_or_default();
    let oldest = s.events.iter().find(|e| e.cpu == cpu).map(|e| e.ts_ns).unwrap_or(0);
    let now = crate::time::uptime_ns();
    let secs = |ns: u64| alloc::format!("{:>5}.{:06}", ns / 1_000_000_000, ns / 1000 % 1_000_000);
    Ok(alloc::format!(
        "entries: {}\noverrun: {}\ncommit overrun: 0\nbytes: {}\noldest event ts: {}\nnow ts: {}\ndropped events: {}\nread events: {}\n",
        held,
        written.saturating_sub(held),
        held as usize * RECORD_BYTES,
        secs(oldest),
        secs(now),
        dropped,
        0
    ))
}

fn dump(s: &Snapshot) {
    let t0 = crate::time::uptime_ns();
    if stream(s) {
        let ms = (crate::time::uptime_ns() - t0) / 1_000_000;
        crate::kprintln!("trace: {} events ({} lost) streamed to COM2 in {} ms", s.events.len(), s.lost(), ms);
    } else {
        crate::kprintln!("trace: {} events ({} lost); no COM2 to stream to", s.events.len(), s.lost());
    }
}

// ----- the command ----------------------------------------------------------------------------

fn parse_on_off(w: &str) -> Option<bool> {
    match w {
        "on" | "1" | "enable" => Some(true),
        "off" | "0" | "disable" => Some(false),
        _ => None,
    }
}

/// Largest `trace check rt -b` and `trace check wc -b` (µs): a minute.
pub const MAX_BOUND_US: u64 = 60_000_000;

/// The `[-b US]` of `trace check rt` and `trace check wc`, in ns (`default_ns` without it).
fn parse_bound(args: &[&str], default_ns: u64) -> Result<u64, String> {
    match args {
        [] => Ok(default_ns),
        ["-b", us] => match us.parse::<u64>() {
            Ok(n) if n <= MAX_BOUND_US => Ok(n * 1000),
            _ => Err(alloc::format!("-b needs a bound in microseconds in 0..={}, got '{}'", MAX_BOUND_US, us)),
        },
        _ => Err(String::from("usage")),
    }
}

/// `trace start [-b ENTRIES] | stop | clear | report | check coresched | check rt [-b US] | check wc [-b US] |
/// irqsoff [start|stop|report] | atomic-alloc [report|reset] | dump | events [NAME|all on|off]`.
pub fn cmd_trace(args: &[&str]) -> Result<(), String> {
    match args {
        ["start"] => start(DEFAULT_ENTRIES),
        ["start", "-b", n] => match n.parse::<usize>() {
            Ok(n) if (16..=MAX_ENTRIES).contains(&n) => start(n),
            _ => Err(alloc::format!("-b needs a number of records in 16..={}, got '{}'", MAX_ENTRIES, n)),
        },
        ["stop"] => {
            if !stop() {
                return Err(String::from("not running"));
            }
            dump(&snapshot()?);
            Ok(())
        }
        ["dump"] => {
            dump(&snapshot()?);
            Ok(())
        }
        ["clear"] => {
            clear();
            Ok(())
        }
        ["report"] => {
            let text = report_text()?;
            crate::kprint!("{}", text);
            Ok(())
        }
        ["check", "coresched"] => {
            let r = check_coresched()?;
            for v in r.violations.iter().take(10) {
                crate::kprintln!(
                    "violation: {}..{} ns cpus {} and {} cookies {:#x} and {:#x}",
                    v.start_ns,
                    v.end_ns,
                    v.cpu_a,
                    v.cpu_b,
                    v.cookie_a.0,
                    v.cookie_b.0
                );
            }
            crate::kprintln!("{}", r);
            Ok(())
        }
        ["check", "rt", rest @ ..] => {
            let r = check_rt(parse_bound(rest, rtcheck::DEFAULT_BOUND_NS)?)?;
            let mut out = String::new();
            let _ = r.write(&mut out);
            crate::kprint!("{}", out);
            Ok(())
        }
        ["check", "wc", rest @ ..] => {
            let r = check_wc(parse_bound(rest, wccheck::DEFAULT_BOUND_NS)?)?;
            let mut out = String::new();
            let _ = r.write(&mut out);
            crate::kprint!("{}", out);
            Ok(())
        }
        ["irqsoff"] | ["irqsoff", "report"] => {
            let mut out = String::new();
            let _ = irqsoff::report(&mut out, crate::sched::resched_ipis_sent());
            crate::kprint!("{}", out);
            Ok(())
        }
        ["atomic-alloc"] | ["atomic-alloc", "report"] => {
            let mut out = String::new();
            let _ = crate::mm::atomic_alloc::report(&mut out, crate::sched::reserve::stats());
            crate::kprint!("{}", out);
            Ok(())
        }
        ["atomic-alloc", "reset"] => {
            crate::mm::atomic_alloc::reset();
            Ok(())
        }
        ["irqsoff", "start"] => {
            irqsoff::start(crate::sched::resched_ipis_sent());
            Ok(())
        }
        ["irqsoff", "stop"] => {
            irqsoff::stop();
            Ok(())
        }
        ["events"] => {
            let mask = event_mask();
            for e in EventType::ALL {
                crate::kprintln!("  {:<22} {}", e.name(), if mask & e.bit() != 0 { "on" } else { "off" });
            }
            Ok(())
        }
        ["events", name, state] => {
            let on = parse_on_off(state).ok_or_else(|| String::from("usage"))?;
            let bits = if *name == "all" {
                EventType::ALL_MASK
            } else {
                EventType::from_name(name).ok_or_else(|| alloc::format!("unknown event '{}'", name))?.bit()
            };
            let mask = event_mask();
            set_event_mask(if on { mask | bits } else { mask & !bits });
            Ok(())
        }
        _ => Err(String::from("usage")),
    }
}

/// Usage line of `trace` (for the shell's command table).
pub const USAGE: &str =
    "trace start [-b ENTRIES] | stop | clear | report | check coresched | check rt [-b US] | check wc [-b US] | irqsoff [start|stop|report] | atomic-alloc [report|reset] | dump | events [NAME|all on|off]";
