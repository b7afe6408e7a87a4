//! The trace rings: one overwrite-oldest ring of fixed-size [`Event`] records per CPU, the
//! enable mask every hook tests first, and the reader's handshake with the writers. The
//! kernel's tracer (`kernel/src/trace`) builds the scheduler's events on top (it knows tasks);
//! the framework records the events that need no task: timers, IPIs, the hrtick, core
//! scheduling's switches and forced idle.
//!
//! # Hooks
//! Contract: [`record`] and every hook here may be called with interrupts off, from interrupt
//! context and with a run-queue lock held, so they take no lock, never allocate and never
//! block. Each hook starts with one relaxed load of the enable mask ([`on`]) and a branch; the
//! recording path is out of line.
//!
//! # Buffers
//! Rings (`cadence_trace::ring` arithmetic) are allocated from the heap by [`start`] and kept
//! until the next start with a different size. Invariants:
//! * only CPU c writes ring c, with interrupts disabled (so never re-entered);
//! * a writer sets its CPU's `busy` flag, then re-reads `ACTIVE` (both SeqCst) before touching
//!   the ring; a reader sets `PAUSED` in `ACTIVE` (or clears it, to stop) and then waits until
//!   every `busy` flag has been seen clear (`pause`, `halt`): from then on no writer touches
//!   any ring until `PAUSED` is cleared, so the reader may copy, reset or free rings
//!   (Dekker-style handshake). Writers that find `PAUSED` count a drop instead;
//! * `written` counts events since the last clear; the ring holds the newest `min(written, cap)`;
//!   overwritten plus dropped events are reported as lost (Linux's
//!   `entries-in-buffer/entries-written` header: held / held + lost).
//!
//! Timestamps are the hooks' `now_ns` (`time::uptime_ns()`: TSC converted to ns).
//!
//! # Export
//! [`stream_com2`] writes a header and the events in ftrace text format to COM2 (16550 at
//! 0x2f8; `make run TRACE=file` captures it). If no UART answers at 0x2f8 (its scratch register
//! does not hold a value), nothing is streamed.

use crate::percpu::NR_CPUS;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use cadence_trace::{ftrace, ring, Comm, Event, EventKind, EventType};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

pub mod irqsoff;

const _: () = assert!(ftrace::RESCHEDULE_VECTOR == crate::arch::apic::RESCHEDULE_VECTOR);
const _: () = assert!(ftrace::CALL_FUNCTION_VECTOR == crate::arch::apic::CALL_FUNCTION_VECTOR);

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
static SLOTS: [CpuSlot; NR_CPUS] = [EMPTY_SLOT; NR_CPUS];

/// Tracer state changed by commands (never by hooks).
struct Control {
    running: bool,
    entries: usize,
    /// Per CPU: the sequence number (count of events written before it) of the first event a
    /// consuming reader (tracefs `trace_pipe`) has not taken; copies start there too.
    consumed: [u64; NR_CPUS],
    /// Bumped by every clear and resize: a consuming reader's [`advance`] for rings it peeked
    /// before then is ignored.
    generation: u64,
}

static CONTROL: spin::Mutex<Control> = spin::Mutex::new(Control { running: false, entries: 0, consumed: [0; NR_CPUS], generation: 0 });

// ----- hooks ---------------------------------------------------------------------------------

/// Is event type `ty` being recorded? (One relaxed load: the hooks' fast path.)
#[inline(always)]
pub fn on(ty: EventType) -> bool {
    ACTIVE.load(Ordering::Relaxed) & ty.bit() != 0
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

/// `sched_core_force_idle`: `cpu` was forced idle for `ns`.
#[inline]
pub fn sched_core_force_idle(cpu: u32, ns: u64) {
    if on(EventType::CoreForceIdle) {
        record(EventType::CoreForceIdle, crate::time::uptime_ns(), None, EventKind::CoreForceIdle { cpu, duration_ns: ns });
    }
}

/// Appends one event to this CPU's ring (see the module invariants). `ctx` is the task column
/// (comm, pid); `None`: the running task, as the kernel names it ([`crate::upcalls::Upcalls::trace_context`]).
#[cold]
#[inline(never)]
pub fn record(ty: EventType, ts_ns: u64, ctx: Option<(Comm, u32)>, kind: EventKind) {
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
                let (comm, pid) = ctx.or_else(crate::upcalls::trace_context).unwrap_or((Comm::new(ftrace::IDLE_COMM), 0));
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
    // The heap grows from the page allocator: what it may still hold is its free part plus the
    // free frames.
    let heap = crate::mm::heap::size() + (crate::mm::frame::free_frames() * crate::mm::frame::FRAME_SIZE) as usize;
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
    reset_counts(ctl);
    Ok(())
}

/// Empties every ring and zeroes the loss counters. Writers held off.
fn reset_counts(ctl: &mut Control) {
    ctl.consumed = [0; NR_CPUS];
    ctl.generation += 1;
    for (cpu, slot) in SLOTS.iter().enumerate() {
        if let Some(b) = cpu_buffer(cpu) {
            b.written.store(0, Ordering::Release);
        }
        slot.dropped.store(0, Ordering::Relaxed);
    }
    NO_BUFFER.store(0, Ordering::Relaxed);
}

/// Starts a fresh trace with `entries` records per CPU. `seed` runs once the rings are
/// installed and before any event is recorded (the kernel seeds its affinity table there).
pub fn start(entries: usize, seed: impl FnOnce()) -> Result<(), String> {
    let ctl = CONTROL.lock();
    if ctl.running {
        return Err(String::from("already running (trace stop first)"));
    }
    begin(ctl, Some(entries), seed)
}

/// Installs empty rings of `entries` records per CPU if asked, then records: `seed` runs
/// before the first event. Caller holds CONTROL (given up on return), not running.
fn begin(mut ctl: spin::MutexGuard<'_, Control>, entries: Option<usize>, seed: impl FnOnce()) -> Result<(), String> {
    if let Some(n) = entries {
        halt();
        install_buffers(&mut ctl, n)?;
    }
    ctl.running = true;
    seed();
    ACTIVE.store(EVENT_MASK.load(Ordering::SeqCst), Ordering::SeqCst);
    Ok(())
}

/// Stops recording (keeps the rings). `then` runs with recording stopped, before a new start
/// can begin (the kernel stops its affinity table there). Returns false if it was not running.
pub fn stop(then: impl FnOnce()) -> bool {
    let mut ctl = CONTROL.lock();
    halt();
    then();
    core::mem::replace(&mut ctl.running, false)
}

/// Empties the rings.
pub fn clear() {
    let mut ctl = CONTROL.lock();
    pause();
    reset_counts(&mut ctl);
    unpause();
}

/// Records again without emptying the rings (tracefs `tracing_on`): rings of `entries` records
/// are installed first if there are none. `seed` runs as in [`start`]. Ok if already running.
pub fn resume(entries: usize, seed: impl FnOnce()) -> Result<(), String> {
    let ctl = CONTROL.lock();
    if ctl.running {
        return Ok(());
    }
    let fresh = (ctl.entries == 0).then_some(entries);
    begin(ctl, fresh, seed)
}

/// Is the tracer recording?
pub fn running() -> bool {
    CONTROL.lock().running
}

/// Records per CPU of the installed rings (0 before the first start).
pub fn entries() -> usize {
    CONTROL.lock().entries
}

/// Installs empty rings of `entries` records per CPU (tracefs `buffer_size_kb`), keeping the
/// tracer running if it was. A resize to the current size changes nothing.
pub fn resize(entries: usize) -> Result<(), String> {
    let mut ctl = CONTROL.lock();
    if ctl.entries == entries {
        return Ok(());
    }
    halt();
    let result = install_buffers(&mut ctl, entries);
    if ctl.running {
        ACTIVE.store(EVENT_MASK.load(Ordering::SeqCst), Ordering::SeqCst);
    }
    result
}

/// What [`peek`] saw: events not yet consumed, each with its CPU's sequence number, merged in
/// timestamp order (ties: CPU, then sequence).
pub struct Peeked {
    /// The rings' generation when peeked (for [`advance`]).
    pub generation: u64,
    /// (sequence number on its CPU, event), oldest first.
    pub events: Vec<(u64, Event)>,
}

/// Copies up to `max_per_cpu` of each CPU's oldest events not yet consumed (a consuming
/// reader's look: [`advance`] then marks what it took).
pub fn peek(max_per_cpu: usize) -> Result<Peeked, String> {
    let ctl = CONTROL.lock();
    let mut events = Vec::new();
    events
        .try_reserve(max_per_cpu.saturating_mul(crate::percpu::nr_cpus() as usize).min(1 << 16))
        .map_err(|_| String::from("out of memory"))?;
    pause();
    for cpu in 0..crate::percpu::nr_cpus() as usize {
        let Some(b) = cpu_buffer(cpu) else { continue };
        let r = ring::live(b.written.load(Ordering::Acquire), b.slots.len());
        let from = r.start.max(ctl.consumed[cpu]);
        for n in (from..r.end).take(max_per_cpu) {
            if let Some(cell) = b.slots.get(ring::slot(n, b.slots.len())) {
                if events.len() == events.capacity() {
                    break; // never allocate with writers paused
                }
                // SAFETY: writers are paused (module invariants), so nobody writes the slot.
                events.push((n, unsafe { *cell.get() }));
            }
        }
    }
    unpause();
    let generation = ctl.generation;
    drop(ctl);
    events.sort_unstable_by_key(|(n, e)| (e.ts_ns, e.cpu, *n));
    Ok(Peeked { generation, events })
}

/// Marks, per CPU, every event before sequence number `next` consumed (of a [`peek`] of
/// generation `generation`; ignored if the rings were cleared or resized since).
pub fn advance(generation: u64, next: &[(u32, u64)]) {
    let mut ctl = CONTROL.lock();
    if ctl.generation != generation {
        return;
    }
    for &(cpu, n) in next {
        if let Some(c) = ctl.consumed.get_mut(cpu as usize) {
            *c = (*c).max(n);
        }
    }
}

/// Sets the enabled-event mask (takes effect at once if tracing).
pub fn set_event_mask(mask: u32) {
    let ctl = CONTROL.lock();
    EVENT_MASK.store(mask & EventType::ALL_MASK, Ordering::SeqCst);
    if ctl.running {
        ACTIVE.store(mask & EventType::ALL_MASK, Ordering::SeqCst);
    }
}

/// The enabled-event mask (`trace events`).
pub fn event_mask() -> u32 {
    EVENT_MASK.load(Ordering::SeqCst)
}

/// A copy of the rings: every CPU's events merged in timestamp order.
pub struct Rings {
    /// The events, oldest first.
    pub events: Vec<Event>,
    /// Events that occurred since the last clear (held + overwritten + dropped).
    pub written: u64,
    /// Per CPU: (written to the ring, held, dropped while paused).
    pub per_cpu: Vec<(u64, u64, u64)>,
}

/// Copies the rings (pausing writers meanwhile) and merges them by timestamp (ties: CPU order,
/// then ring order).
pub fn copy() -> Result<Rings, String> {
    let ctl = CONTROL.lock();
    pause();
    let result = copy_rings(&ctl.consumed);
    unpause();
    let mut s = result?;
    // In place (a stable sort would allocate half the trace again): CPU breaks ties, and each
    // CPU's ring is already in order.
    s.events.sort_unstable_by_key(|e| (e.ts_ns, e.cpu));
    Ok(s)
}

/// The events of ring `b` (of `cpu`) a copy holds: the live ones not yet consumed.
fn unconsumed(b: &CpuBuffer, consumed: &[u64; NR_CPUS], cpu: usize) -> core::ops::Range<u64> {
    let r = ring::live(b.written.load(Ordering::Acquire), b.slots.len());
    r.start.max(consumed[cpu]).min(r.end)..r.end
}

fn copy_rings(consumed: &[u64; NR_CPUS]) -> Result<Rings, String> {
    let ncpus = crate::percpu::nr_cpus() as usize;
    let mut total = 0usize;
    for cpu in 0..ncpus {
        if let Some(b) = cpu_buffer(cpu) {
            let r = unconsumed(b, consumed, cpu);
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
        let r = unconsumed(b, consumed, cpu);
        // Events a consuming reader took are neither held nor lost (Linux's header counts
        // them in neither column).
        let taken = r.start - ring::live(w, b.slots.len()).start;
        per_cpu.push((w - taken, r.end - r.start, dropped));
        written += w - taken;
        for n in r {
            if let Some(cell) = b.slots.get(ring::slot(n, b.slots.len())) {
                // SAFETY: writers are paused (module invariants), so nobody writes the slot.
                events.push(unsafe { *cell.get() });
            }
        }
    }
    Ok(Rings { events, written, per_cpu })
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

/// Streams `header` (text lines) and then `events` to COM2 in ftrace text. Returns false if
/// there is no COM2.
pub fn stream_com2(header: &str, events: &[Event]) -> bool {
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
    for chunk in header.as_bytes().chunks(line.buf.len()) {
        line.buf[..chunk.len()].copy_from_slice(chunk);
        line.len = chunk.len();
        send(&line);
    }
    for e in events {
        line.len = 0;
        let _ = ftrace::write_event(&mut line, e);
        if line.len == line.buf.len() {
            line.buf[line.len - 1] = b'\n';
        }
        send(&line);
    }
    true
}
