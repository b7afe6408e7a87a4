//! The irqsoff tracer (Linux's `irqsoff` latency tracer): the longest interrupts-off sections
//! of each CPU, with where they began and ended.
//!
//! `trace irqsoff start` clears the records and starts; `stop` stops; `report` prints, per
//! CPU, its [`TOP`] longest sections as `<us> us  off at <file:line:col>  on at <file:line:col>`
//! and ends with `irqsoff: max_us=<n> cpu=<c> sections=<n>`.
//!
//! Mechanism: [`off`] (interrupts on → off, or an interrupt handler entered) records the time
//! and site in this CPU's slot; [`on`] (off → on, or a handler returning) measures the section
//! and, if it is among this CPU's longest, stores it. Only the owning CPU writes its slot, with
//! interrupts off; readers on other CPUs use the slot's sequence count (odd while a write is in
//! progress) to get a consistent copy. Sections that began before `start` are ignored.
//! No locks, no allocation: the hooks run inside lock and interrupt paths.

use crate::percpu::MAX_CPUS;
use core::fmt::Write;
use core::panic::Location;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Sections kept per CPU.
pub const TOP: usize = 4;

struct Record {
    ns: AtomicU64,
    start: AtomicUsize,
    end: AtomicUsize,
}

struct CpuSlot {
    /// When the open section began (0: none open).
    since_ns: AtomicU64,
    since_site: AtomicUsize,
    /// Where the current interrupts-off section began, kept whether or not the tracer runs
    /// (0: interrupts are on, or the site is unknown). Read by [`off_site`].
    off_site: AtomicUsize,
    /// Sections measured since `start`.
    count: AtomicU64,
    seq: AtomicU32,
    top: [Record; TOP],
}

#[allow(clippy::declare_interior_mutable_const)]
const RECORD: Record = Record { ns: AtomicU64::new(0), start: AtomicUsize::new(0), end: AtomicUsize::new(0) };
#[allow(clippy::declare_interior_mutable_const)]
const SLOT: CpuSlot = CpuSlot {
    since_ns: AtomicU64::new(0),
    since_site: AtomicUsize::new(0),
    off_site: AtomicUsize::new(0),
    count: AtomicU64::new(0),
    seq: AtomicU32::new(0),
    top: [RECORD; TOP],
};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static STARTED_NS: AtomicU64 = AtomicU64::new(0);
static SLOTS: [CpuSlot; MAX_CPUS] = [SLOT; MAX_CPUS];

fn slot() -> Option<&'static CpuSlot> {
    if !crate::percpu::gs_ready() {
        return None;
    }
    SLOTS.get(crate::percpu::cpu_id() as usize)
}

/// Interrupts went off at `site` (called with interrupts off).
#[inline]
pub fn off(site: &'static Location<'static>) {
    let Some(s) = slot() else { return };
    s.off_site.store(site as *const Location<'static> as usize, Ordering::Relaxed);
    if !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    if s.since_ns.load(Ordering::Relaxed) == 0 {
        s.since_site.store(site as *const Location<'static> as usize, Ordering::Relaxed);
        s.since_ns.store(crate::time::uptime_ns().max(1), Ordering::Relaxed);
    }
}

/// Interrupts are about to go on at `site` (called with interrupts still off).
#[inline]
pub fn on(site: &'static Location<'static>) {
    let Some(s) = slot() else { return };
    s.off_site.store(0, Ordering::Relaxed);
    if !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    let since = s.since_ns.swap(0, Ordering::Relaxed);
    if since == 0 || since < STARTED_NS.load(Ordering::Relaxed) {
        return;
    }
    let ns = crate::time::uptime_ns().saturating_sub(since);
    s.count.fetch_add(1, Ordering::Relaxed);
    if ns <= s.top[TOP - 1].ns.load(Ordering::Relaxed) {
        return;
    }
    let start = s.since_site.load(Ordering::Relaxed);
    let end = site as *const Location<'static> as usize;
    s.seq.fetch_add(1, Ordering::AcqRel); // odd: writing
    let mut i = TOP - 1;
    while i > 0 && s.top[i - 1].ns.load(Ordering::Relaxed) < ns {
        let (a, b) = (&s.top[i - 1], &s.top[i]);
        b.ns.store(a.ns.load(Ordering::Relaxed), Ordering::Relaxed);
        b.start.store(a.start.load(Ordering::Relaxed), Ordering::Relaxed);
        b.end.store(a.end.load(Ordering::Relaxed), Ordering::Relaxed);
        i -= 1;
    }
    s.top[i].ns.store(ns, Ordering::Relaxed);
    s.top[i].start.store(start, Ordering::Relaxed);
    s.top[i].end.store(end, Ordering::Relaxed);
    s.seq.fetch_add(1, Ordering::AcqRel); // even: done
}

/// Where this CPU's current interrupts-off section began (`None` if interrupts are on or the
/// section began before the per-CPU area was set up). Call with interrupts off.
pub fn off_site() -> Option<&'static Location<'static>> {
    location(slot()?.off_site.load(Ordering::Relaxed))
}

/// Clears every CPU's records and starts tracing.
pub fn start() {
    ACTIVE.store(false, Ordering::SeqCst);
    for s in SLOTS.iter() {
        s.seq.fetch_add(2, Ordering::AcqRel);
        for r in &s.top {
            r.ns.store(0, Ordering::Relaxed);
            r.start.store(0, Ordering::Relaxed);
            r.end.store(0, Ordering::Relaxed);
        }
        s.count.store(0, Ordering::Relaxed);
    }
    STARTED_NS.store(crate::time::uptime_ns(), Ordering::SeqCst);
    ACTIVE.store(true, Ordering::SeqCst);
}

/// Stops tracing (the records stay for `report`).
pub fn stop() {
    ACTIVE.store(false, Ordering::SeqCst);
}

pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// One recorded section.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    pub ns: u64,
    pub start: Option<&'static Location<'static>>,
    pub end: Option<&'static Location<'static>>,
}

fn location(addr: usize) -> Option<&'static Location<'static>> {
    // SAFETY: non-zero values are only ever stored from `&'static Location<'static>`
    // references (in `off`/`on`), which live for the whole run.
    (addr != 0).then(|| unsafe { &*(addr as *const Location<'static>) })
}

/// A consistent copy of `cpu`'s longest sections (longest first) and its section count.
pub fn sections(cpu: usize) -> ([Option<Section>; TOP], u64) {
    let Some(s) = SLOTS.get(cpu) else { return ([None; TOP], 0) };
    loop {
        let before = s.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            core::hint::spin_loop();
            continue;
        }
        let mut out = [None; TOP];
        for (o, r) in out.iter_mut().zip(&s.top) {
            let ns = r.ns.load(Ordering::Relaxed);
            if ns > 0 {
                let (start, end) = (r.start.load(Ordering::Relaxed), r.end.load(Ordering::Relaxed));
                *o = Some(Section { ns, start: location(start), end: location(end) });
            }
        }
        let count = s.count.load(Ordering::Relaxed);
        // The data loads above must not move past the re-check (Linux `read_seqcount_retry`).
        core::sync::atomic::fence(Ordering::Acquire);
        if s.seq.load(Ordering::Acquire) == before {
            return (out, count);
        }
    }
}

pub struct Site(pub Option<&'static Location<'static>>);

impl core::fmt::Display for Site {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(l) => write!(f, "{}:{}:{}", l.file().trim_start_matches("src/"), l.line(), l.column()),
            None => f.write_str("?"),
        }
    }
}

/// Writes the report (see the module doc) for the online CPUs.
pub fn report(out: &mut impl Write) -> core::fmt::Result {
    let (mut max_ns, mut max_cpu, mut total) = (0u64, 0usize, 0u64);
    writeln!(out, "irqsoff: longest interrupts-off sections per CPU ({})", if active() { "tracing" } else { "stopped" })?;
    for cpu in crate::percpu::online_cpus().map(|c| c.cpu_id as usize) {
        let (top, count) = sections(cpu);
        total += count;
        writeln!(out, "cpu {}: {} sections", cpu, count)?;
        for sec in top.iter().flatten() {
            writeln!(out, "  {:>8} us  off at {}  on at {}", sec.ns / 1000, Site(sec.start), Site(sec.end))?;
            if sec.ns > max_ns {
                max_ns = sec.ns;
                max_cpu = cpu;
            }
        }
    }
    writeln!(out, "irqsoff: max_us={} cpu={} sections={}", max_ns / 1000, max_cpu, total)
}
