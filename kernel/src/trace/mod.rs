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
//! One overwrite-oldest ring of fixed-size [`Event`] records per CPU (`cadence_trace::ring`
//! arithmetic), allocated from the heap by `trace start` and kept until the next start with a
//! different size. Invariants:
//! * only CPU c writes ring c, with interrupts disabled (so never re-entered);
//! * a writer sets its CPU's `busy` flag, then re-reads [`ACTIVE`] (both SeqCst) before touching
//!   the ring; a reader sets [`PAUSED`] in [`ACTIVE`] (or clears it, to stop) and then waits until
//!   every `busy` flag has been seen clear ([`pause`], [`halt`]): from then on no writer touches
//!   any ring until [`PAUSED`] is cleared, so the reader may copy, reset or free rings
//!   (Dekker-style handshake). Writers that find [`PAUSED`] count a drop instead;
//! * `written` counts events since the last clear; the ring holds the newest `min(written, cap)`;
//!   overwritten plus dropped events are reported as lost (Linux's
//!   `entries-in-buffer/entries-written` header: held / held + lost).
//!
//! Timestamps are the hooks' `now_ns` (`time::uptime_ns()`: TSC converted to ns).
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

use crate::percpu::MAX_CPUS;
use crate::sched::task::{Task, TaskState};
use crate::sync::IrqLock;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use cadence_trace::{ftrace, report, ring, rtcheck, Comm, Event, EventKind, EventType, TaskInfo};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

pub mod irqsoff;

#[cfg(test)]
mod tests;

const _: () = assert!(ftrace::RESCHEDULE_VECTOR == crate::arch::apic::RESCHEDULE_VECTOR);
const _: () = assert!(ftrace::CALL_FUNCTION_VECTOR == crate::arch::apic::CALL_FUNCTION_VECTOR);

/// Records per CPU unless `trace start -b` says otherwise.
pub const DEFAULT_ENTRIES: usize = 131072;
/// Largest `-b` accepted.
pub const MAX_ENTRIES: usize = 1 << 22;

/// Events recorded right now: [`EVENT_MASK`] while tracing, 0 while stopped; [`PAUSED`] is
/// or-ed in while a reader copies the rings (writers then count a drop instead of writing).
static ACTIVE: AtomicU32 = AtomicU32::new(0);
/// [`ACTIVE`] bit: a reader holds the rings (no event type uses this bit).
const PAUSED: u32 = 1 << 31;
/// Events switched on (`trace events`); all by default.
static EVENT_MASK: AtomicU32 = AtomicU32::new(EventType::ALL_MASK);
/// Events that found no ring on their CPU (a CPU that came up after `trace start`).
static NO_BUFFER: AtomicU64 = AtomicU64::new(0);

/// One CPU's ring.
struct CpuBuffer {
    written: AtomicU64,
    slots: Box<[UnsafeCell<Event>]>,
}

// SAFETY: slots are written only by the owning CPU under the busy/ACTIVE protocol and read only
// while all writers are paused (see the module invariants); `written` is atomic.
unsafe impl Sync for CpuBuffer {}
// SAFETY: as above (the box is plain memory).
unsafe impl Send for CpuBuffer {}

/// Per-CPU writer state, one cache line each (writers never share a line).
#[repr(align(64))]
struct CpuSlot {
    busy: AtomicBool,
    buf: AtomicPtr<CpuBuffer>,
    /// Events dropped because a reader had paused the rings (written by the owning CPU only).
    dropped: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: CpuSlot =
    CpuSlot { busy: AtomicBool::new(false), buf: AtomicPtr::new(core::ptr::null_mut()), dropped: AtomicU64::new(0) };
static SLOTS: [CpuSlot; MAX_CPUS] = [EMPTY_SLOT; MAX_CPUS];

/// Tracer state changed by commands (never by hooks).
struct Control {
    running: bool,
    entries: usize,
}

static CONTROL: spin::Mutex<Control> = spin::Mutex::new(Control { running: false, entries: 0 });

// ----- hooks ---------------------------------------------------------------------------------

#[inline(always)]
fn on(ty: EventType) -> bool {
    ACTIVE.load(Ordering::Relaxed) & ty.bit() != 0
}

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
pub fn sched_set_affinity(task: &Task, mask: u64, now_ns: u64) {
    if on(EventType::SetAffinity) {
        record_task(EventType::SetAffinity, now_ns, EventKind::Affinity { task: info(task), mask });
    }
}

/// `sched_process_exit`: `task` exited.
#[inline]
pub fn sched_process_exit(task: &Task, now_ns: u64) {
    if on(EventType::SchedProcessExit) {
        record_task(EventType::SchedProcessExit, now_ns, EventKind::Exit { task: info(task) });
    }
}

/// `timer_expire` (ftrace `hrtimer_expire_entry`): a timer of this CPU fired (`what` names the
/// handler); `expires_ns` is the time the timer queue compared against.
#[inline]
pub fn timer_expire(what: &'static str, expires_ns: u64, now_ns: u64) {
    if on(EventType::TimerExpire) {
        record(EventType::TimerExpire, now_ns, None, EventKind::TimerExpire { function: Comm::new(what), now_ns: expires_ns });
    }
}

/// `ipi_send` (ftrace `ipi_raise`): this CPU sends `vector` to `target_cpu`.
#[inline]
pub fn ipi_send(target_cpu: u32, vector: u8, now_ns: u64) {
    if on(EventType::Ipi) {
        record(EventType::Ipi, now_ns, None, EventKind::Ipi { target_cpu, vector });
    }
}

/// `sched_hrtick_start`: the high-resolution tick is armed `delay_ns` from now on this CPU.
#[inline]
pub fn hrtick_start(delay_ns: u64) {
    if on(EventType::HrtickStart) {
        record(EventType::HrtickStart, crate::time::uptime_ns(), None, EventKind::HrtickStart { delay_ns });
    }
}

/// `sched_hrtick_fire`: the high-resolution tick fired on this CPU.
#[inline]
pub fn hrtick_fire() {
    if on(EventType::HrtickFire) {
        record(EventType::HrtickFire, crate::time::uptime_ns(), None, EventKind::HrtickFire);
    }
}

/// `sched_core_force_idle`: core scheduling kept `cpu` idle for `ns`.
#[inline]
pub fn sched_core_switch(pid: u32, cookie: u64, forced: bool) {
    if on(EventType::CoreSwitch) {
        record(EventType::CoreSwitch, crate::time::uptime_ns(), None, EventKind::CoreSwitch { pid, cookie, forced });
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

/// `sched_core_force_idle`: `cpu` was forced idle for `ns`.
#[inline]
pub fn sched_core_force_idle(cpu: u32, ns: u64) {
    if on(EventType::CoreForceIdle) {
        record(EventType::CoreForceIdle, crate::time::uptime_ns(), None, EventKind::CoreForceIdle { cpu, duration_ns: ns });
    }
}

// ----- affinity side table ------------------------------------------------------------------

/// Most tasks the affinity table holds (about 40 bytes each with the tree's overhead).
pub const MAX_AFFINITY_TASKS: usize = 65536;

/// Is [`task_affinity`] recording (from `trace start` to `trace stop`)?
static AFFINITY_ON: AtomicBool = AtomicBool::new(false);
/// tid → its mask when recording started or when it was created (see the module docs).
static AFFINITY: IrqLock<BTreeMap<u32, u64>> = IrqLock::new(BTreeMap::new());
/// Tasks not recorded because the table was full (since the last start).
static AFFINITY_FULL: AtomicU64 = AtomicU64::new(0);

/// Records that task `tid` may run on the CPUs of `mask`, if the table has no mask for it yet
/// (its mask when tracing started or when it was created; later changes are
/// `sched_set_affinity` events). Task context only (it may allocate).
pub fn task_affinity(tid: u32, mask: u64) {
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
            task_affinity(t.tid, t.affinity().0);
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
fn affinity_table() -> Vec<(u32, u64)> {
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
    TaskInfo { comm: Comm::new(&t.name), pid: t.tid, prio }
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
fn current_ctx() -> (Comm, u32) {
    let ptr = crate::sched::this_rq().current.load(Ordering::Acquire);
    if ptr.is_null() {
        return (Comm::new(ftrace::IDLE_COMM), 0);
    }
    // SAFETY: `rq.current` is this CPU's running task, kept alive by the run queue's `curr`
    // Arc; with interrupts off on this CPU it cannot be switched away (and freed) meanwhile.
    let t = unsafe { &*ptr };
    if t.is_idle {
        (Comm::new(ftrace::IDLE_COMM), 0)
    } else {
        (Comm::new(&t.name), t.tid)
    }
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

/// Appends one event to this CPU's ring (see the module invariants).
#[cold]
#[inline(never)]
fn record(ty: EventType, ts_ns: u64, ctx: Option<(Comm, u32)>, kind: EventKind) {
    let were_enabled = crate::irqflags::save();
    let cpu = crate::percpu::cpu_id();
    if let Some(slot) = SLOTS.get(cpu as usize) {
        slot.busy.store(true, Ordering::SeqCst);
        let active = ACTIVE.load(Ordering::SeqCst);
        if active & ty.bit() != 0 && active & PAUSED != 0 {
            slot.dropped.fetch_add(1, Ordering::Relaxed);
        } else if active & ty.bit() != 0 {
            let buf = slot.buf.load(Ordering::Acquire);
            if buf.is_null() {
                NO_BUFFER.fetch_add(1, Ordering::Relaxed);
            } else {
                // SAFETY: a non-null ring is freed only while writers are held off, and we hold
                // `busy` having seen ACTIVE set and not paused, so no reader is past its
                // wait (module invariants).
                let buf = unsafe { &*buf };
                let (comm, pid) = ctx.unwrap_or_else(current_ctx);
                let n = buf.written.load(Ordering::Relaxed);
                if let Some(cell) = buf.slots.get(ring::slot(n, buf.slots.len())) {
                    // SAFETY: only this CPU writes this ring, with interrupts off (no
                    // re-entry), and no reader reads it while we hold `busy` (as above).
                    unsafe { *cell.get() = Event { ts_ns, cpu, comm, pid, kind } };
                    buf.written.store(n + 1, Ordering::Release);
                }
            }
        }
        slot.busy.store(false, Ordering::Release);
    }
    crate::irqflags::restore(were_enabled);
}

// ----- control -------------------------------------------------------------------------------

/// Waits until every CPU that may have seen the old [`ACTIVE`] has left [`record`]; a writer
/// entering later sees the new value (SeqCst busy-store / ACTIVE-load against our
/// ACTIVE-store / busy-load).
fn wait_writers() {
    for slot in SLOTS.iter() {
        while slot.busy.load(Ordering::SeqCst) {
            core::hint::spin_loop();
        }
    }
}

/// Holds writers off the rings (they count drops meanwhile). Caller holds CONTROL.
fn pause() {
    ACTIVE.fetch_or(PAUSED, Ordering::SeqCst);
    wait_writers();
}

/// Ends [`pause`].
fn unpause() {
    ACTIVE.fetch_and(!PAUSED, Ordering::SeqCst);
}

/// Stops recording altogether (hooks back to one load and a branch). Caller holds CONTROL.
fn halt() {
    ACTIVE.store(0, Ordering::SeqCst);
    wait_writers();
}

fn cpu_buffer(cpu: usize) -> Option<&'static CpuBuffer> {
    let p = SLOTS.get(cpu)?.buf.load(Ordering::Acquire);
    // SAFETY: rings are freed only by `install_buffers` under CONTROL while paused; callers hold
    // CONTROL (or run with writers paused) for as long as they use the reference.
    (!p.is_null()).then(|| unsafe { &*p })
}

fn new_buffer(entries: usize) -> Result<*mut CpuBuffer, String> {
    let mut v: Vec<UnsafeCell<Event>> = Vec::new();
    // A failure-injection site, failing as a real shortage would.
    if crate::mm::fail_alloc::should_fail("trace_buffer") || v.try_reserve_exact(entries).is_err() {
        return Err(alloc::format!("cannot allocate {} trace records", entries));
    }
    v.resize_with(entries, || UnsafeCell::new(Event::EMPTY));
    Ok(Box::into_raw(Box::new(CpuBuffer { written: AtomicU64::new(0), slots: v.into_boxed_slice() })))
}

/// Gives every online CPU an empty ring of `entries` records (reusing rings of that size).
/// Caller holds CONTROL, writers paused.
fn install_buffers(ctl: &mut Control, entries: usize) -> Result<(), String> {
    // Rings that would leave the heap nearly full make every later allocation fail (an
    // infallible one panics): keep an eighth of it, at least 16 MiB, for the kernel.
    let ring_bytes = entries.saturating_mul(core::mem::size_of::<UnsafeCell<Event>>());
    let needed = ring_bytes.saturating_mul(crate::percpu::nr_cpus() as usize);
    let held =
        if ctl.entries == 0 { 0 } else { ctl.entries * core::mem::size_of::<UnsafeCell<Event>>() * crate::percpu::nr_cpus() as usize };
    let heap = crate::mm::heap::size();
    let free_after = (heap + held).saturating_sub(crate::mm::heap::used()).saturating_sub(needed);
    if ctl.entries != entries && free_after < (heap / 8).max(16 << 20) {
        return Err(alloc::format!(
            "{} records per CPU need {} MiB of the {} MiB heap and would leave too little free (boot with more memory)",
            entries,
            needed >> 20,
            heap >> 20
        ));
    }
    for cpu in crate::percpu::online_cpus() {
        let slot = &SLOTS[cpu.cpu_id as usize];
        let old = slot.buf.load(Ordering::Acquire);
        if !old.is_null() && ctl.entries == entries {
            // SAFETY: non-null ring, writers paused (we may reset it).
            unsafe { (*old).written.store(0, Ordering::Release) };
            continue;
        }
        let new = match new_buffer(entries) {
            Ok(b) => b,
            Err(e) => {
                ctl.entries = 0; // rings of mixed sizes now: the next start reallocates all
                return Err(e);
            }
        };
        slot.buf.store(new, Ordering::Release);
        if !old.is_null() {
            // SAFETY: `old` came from `Box::into_raw` in `new_buffer`; writers are paused and
            // the slot no longer points at it, so nothing else references it.
            drop(unsafe { Box::from_raw(old) });
        }
    }
    ctl.entries = entries;
    reset_counts();
    Ok(())
}

/// Empties every ring and zeroes the loss counters. Writers held off.
fn reset_counts() {
    for (cpu, slot) in SLOTS.iter().enumerate() {
        if let Some(b) = cpu_buffer(cpu) {
            b.written.store(0, Ordering::Release);
        }
        slot.dropped.store(0, Ordering::Relaxed);
    }
    NO_BUFFER.store(0, Ordering::Relaxed);
}

/// Starts a fresh trace with `entries` records per CPU.
pub fn start(entries: usize) -> Result<(), String> {
    let mut ctl = CONTROL.lock();
    if ctl.running {
        return Err(String::from("already running (trace stop first)"));
    }
    halt();
    install_buffers(&mut ctl, entries)?;
    ctl.running = true;
    affinity_start();
    ACTIVE.store(EVENT_MASK.load(Ordering::SeqCst), Ordering::SeqCst);
    Ok(())
}

/// Stops recording (keeps the rings and the affinity table). Returns false if it was not
/// running.
pub fn stop() -> bool {
    let mut ctl = CONTROL.lock();
    halt();
    AFFINITY_ON.store(false, Ordering::SeqCst);
    core::mem::replace(&mut ctl.running, false)
}

/// Empties the rings.
pub fn clear() {
    let _ctl = CONTROL.lock();
    pause();
    reset_counts();
    unpause();
}

/// Sets the enabled-event mask (takes effect at once if tracing).
pub fn set_event_mask(mask: u32) {
    let ctl = CONTROL.lock();
    EVENT_MASK.store(mask & EventType::ALL_MASK, Ordering::SeqCst);
    if ctl.running {
        ACTIVE.store(mask & EventType::ALL_MASK, Ordering::SeqCst);
    }
}

pub fn event_mask() -> u32 {
    EVENT_MASK.load(Ordering::SeqCst)
}

/// A copy of the trace: every CPU's events merged in timestamp order.
pub struct Snapshot {
    pub events: Vec<Event>,
    /// Events that occurred since the last clear (held + overwritten + dropped).
    pub written: u64,
    /// Per CPU: (written to the ring, held, dropped while paused).
    pub per_cpu: Vec<(u64, u64, u64)>,
    /// The affinity side table: (tid, its first mask while tracing), tid order.
    pub affinity: Vec<(u32, u64)>,
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
    let s = snapshot()?;
    if s.lost() > 0 {
        crate::kprintln!("trace: {} events were lost: checking the window where every CPU's trace is complete", s.lost());
    }
    let full = AFFINITY_FULL.load(Ordering::Relaxed);
    if full > 0 {
        crate::kprintln!("trace: affinity of {} tasks not recorded (table full): taken as all CPUs", full);
    }
    let affinity: BTreeMap<u32, u64> = s.affinity.iter().copied().collect();
    let opts = rtcheck::Options { bound_ns, end_ns: s.events.last().map(|e| e.ts_ns), ..rtcheck::Options::new(crate::percpu::nr_cpus()) }
        .with_smt(&smt_groups());
    Ok(rtcheck::check(&s.events, &opts, |pid| affinity.get(&pid).map(|&m| cadence_sched::CpuMask(m))))
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

/// Copies the rings (pausing writers meanwhile) and merges them by timestamp (stable: ties keep
/// CPU order, then ring order).
pub fn snapshot() -> Result<Snapshot, String> {
    let _ctl = CONTROL.lock();
    pause();
    let result = copy_rings();
    unpause();
    let mut s = result?;
    s.affinity = affinity_table();
    // In place (a stable sort would allocate half the trace again): CPU breaks ties, and each
    // CPU's ring is already in order.
    s.events.sort_unstable_by_key(|e| (e.ts_ns, e.cpu));
    Ok(s)
}

fn copy_rings() -> Result<Snapshot, String> {
    let ncpus = crate::percpu::nr_cpus() as usize;
    let mut total = 0usize;
    for cpu in 0..ncpus {
        if let Some(b) = cpu_buffer(cpu) {
            let r = ring::live(b.written.load(Ordering::Acquire), b.slots.len());
            total += (r.end - r.start) as usize;
        }
    }
    let mut events = Vec::new();
    events.try_reserve_exact(total).map_err(|_| alloc::format!("cannot allocate a copy of {} events", total))?;
    let mut per_cpu = Vec::new();
    let mut written = NO_BUFFER.load(Ordering::Relaxed);
    for (cpu, slot) in SLOTS.iter().enumerate().take(ncpus) {
        let dropped = slot.dropped.load(Ordering::Relaxed);
        written += dropped;
        let Some(b) = cpu_buffer(cpu) else {
            per_cpu.push((0, 0, dropped));
            continue;
        };
        let w = b.written.load(Ordering::Acquire);
        let r = ring::live(w, b.slots.len());
        per_cpu.push((w, r.end - r.start, dropped));
        written += w;
        for n in r {
            if let Some(cell) = b.slots.get(ring::slot(n, b.slots.len())) {
                // SAFETY: writers are paused (module invariants), so nobody writes the slot.
                events.push(unsafe { *cell.get() });
            }
        }
    }
    Ok(Snapshot { events, written, per_cpu, affinity: Vec::new() })
}

/// The report of the current trace, as text.
pub fn report_text() -> Result<String, String> {
    let s = snapshot()?;
    let rep = report::analyze(s.events.iter(), s.lost());
    let mut out = String::new();
    let _ = rep.write(&mut out);
    Ok(out)
}

// ----- export (COM2) ------------------------------------------------------------------------

const COM2: u16 = 0x2f8;

static COM2_PORT: spin::Mutex<Option<uart_16550::SerialPort>> = spin::Mutex::new(None);

/// Is a UART decoded at `base`? (Its scratch register keeps what we write.)
fn uart_present(base: u16) -> bool {
    let mut scratch = x86_64::instructions::port::Port::<u8>::new(base + 7);
    // SAFETY: the scratch register of a 16550 has no side effects; if nothing decodes the port,
    // writes vanish and reads return 0xff.
    unsafe {
        scratch.write(0x5a);
        let a = scratch.read();
        scratch.write(0xa5);
        a == 0x5a && scratch.read() == 0xa5
    }
}

/// A line buffer on the stack (formatting must not allocate per event); overlong lines are cut.
struct LineBuf {
    buf: [u8; 512],
    len: usize,
}

impl core::fmt::Write for LineBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Streams `s` to COM2 in ftrace text. Returns false if there is no COM2.
fn stream(s: &Snapshot) -> bool {
    let mut guard = COM2_PORT.lock();
    if guard.is_none() {
        if !uart_present(COM2) {
            return false;
        }
        // SAFETY: 0x2f8 is the standard COM2 base; this module is the only user of those ports.
        let mut port = unsafe { uart_16550::SerialPort::new(COM2) };
        port.init();
        *guard = Some(port);
    }
    let Some(port) = guard.as_mut() else { return false };
    let mut send = |l: &LineBuf| {
        for &b in &l.buf[..l.len] {
            port.send_raw(b);
        }
    };
    let mut line = LineBuf { buf: [0; 512], len: 0 };
    let mut header = String::new();
    let _ = ftrace::write_header(&mut header, s.events.len() as u64, s.written, crate::percpu::nr_cpus());
    for &(tid, mask) in &s.affinity {
        let _ = ftrace::write_affinity(&mut header, tid, cadence_sched::CpuMask(mask));
    }
    for chunk in header.as_bytes().chunks(line.buf.len()) {
        line.buf[..chunk.len()].copy_from_slice(chunk);
        line.len = chunk.len();
        send(&line);
    }
    for e in &s.events {
        line.len = 0;
        let _ = ftrace::write_event(&mut line, e);
        if line.len == line.buf.len() {
            line.buf[line.len - 1] = b'\n';
        }
        send(&line);
    }
    true
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

/// Largest `trace check rt -b` (µs): a minute.
pub const MAX_BOUND_US: u64 = 60_000_000;

/// The `-b US` of `trace check rt`, in ns.
fn parse_bound_us(us: &str) -> Result<u64, String> {
    match us.parse::<u64>() {
        Ok(n) if n <= MAX_BOUND_US => Ok(n * 1000),
        _ => Err(alloc::format!("-b needs a bound in microseconds in 0..={}, got '{}'", MAX_BOUND_US, us)),
    }
}

/// `trace start [-b ENTRIES] | stop | clear | report | check coresched | check rt [-b US] |
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
            let bound_ns = match rest {
                [] => rtcheck::DEFAULT_BOUND_NS,
                ["-b", us] => parse_bound_us(us)?,
                _ => return Err(String::from("usage")),
            };
            let r = check_rt(bound_ns)?;
            let mut out = String::new();
            let _ = r.write(&mut out);
            crate::kprint!("{}", out);
            Ok(())
        }
        ["irqsoff"] | ["irqsoff", "report"] => {
            let mut out = String::new();
            let _ = irqsoff::report(&mut out);
            crate::kprint!("{}", out);
            Ok(())
        }
        ["atomic-alloc"] | ["atomic-alloc", "report"] => {
            let mut out = String::new();
            let _ = crate::mm::atomic_alloc::report(&mut out);
            crate::kprint!("{}", out);
            Ok(())
        }
        ["atomic-alloc", "reset"] => {
            crate::mm::atomic_alloc::reset();
            Ok(())
        }
        ["irqsoff", "start"] => {
            irqsoff::start();
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
    "trace start [-b ENTRIES] | stop | clear | report | check coresched | check rt [-b US] | irqsoff [start|stop|report] | atomic-alloc [report|reset] | dump | events [NAME|all on|off]";
