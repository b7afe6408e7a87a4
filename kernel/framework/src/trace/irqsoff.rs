//! The irqsoff tracer (Linux's `irqsoff` latency tracer): the longest interrupts-off sections
//! of each CPU, with where they began and ended.
//!
//! `trace irqsoff start` clears the records and starts; `stop` stops; `report` prints the
//! reschedule and call-function IPIs received since `start` (all CPUs) and the reschedule IPIs
//! sent by reason, then per CPU: its timer counters (interrupts, those with nothing due, LAPIC
//! programmings), the timer interrupts' lateness split into interrupts-off and delivery (see
//! [`timer_entry`]), the sites with the most interrupts-off time, the share of the traced time
//! it spent with interrupts off, a histogram of section lengths (per power-of-two class: how
//! many sections, and how many ms they summed to: a timer interrupt arriving at a random moment
//! waits out the section it lands in, so the classes with the most ms are the ones that delay
//! wakeups most), and its [`TOP`] longest sections as
//! `<us> us  off at <file:line:col>  on at <file:line:col>`; it ends with
//! `irqsoff: max_us=<n> cpu=<c> sections=<n>`.
//!
//! Mechanism: [`off`] (interrupts on → off, or an interrupt handler entered) records the time
//! and site in this CPU's slot; [`on`] (off → on, or a handler returning) measures the section
//! and, if it is among this CPU's longest, stores it. Only the owning CPU writes its slot, with
//! interrupts off; readers on other CPUs use the slot's sequence count (odd while a write is in
//! progress) to get a consistent copy. Sections that began before `start` are ignored.
//! No locks, no allocation: the hooks run inside lock and interrupt paths.

use core::fmt::Write;
use core::panic::Location;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Sections kept per CPU.
pub const TOP: usize = 4;

/// Length classes of the histogram: class 0 is under 1 µs, class `k` is `[2^(k-1), 2^k)` µs,
/// the last one everything from 2^(HIST-2) µs (8.2 ms) up.
pub const HIST: usize = 15;

/// The histogram class of a section of `ns`.
pub fn hist_class(ns: u64) -> usize {
    let us = ns / 1000;
    if us == 0 {
        0
    } else {
        ((64 - us.leading_zeros()) as usize).min(HIST - 1)
    }
}

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
    /// Their summed length.
    total_ns: AtomicU64,
    /// Per length class ([`HIST`]): sections, and their summed length.
    hist_count: [AtomicU64; HIST],
    hist_ns: [AtomicU64; HIST],
    seq: AtomicU32,
    top: [Record; TOP],
    /// The last [`RECENT`] closed sections as (began, ended) ns, `recent_next` the next slot.
    recent: [(AtomicU64, AtomicU64); RECENT],
    recent_next: AtomicUsize,
    /// Timer interrupts seen since `start` (see [`timer_entry`]): how many, their summed
    /// lateness, its *held* part, the interrupts-off time in their windows (and how many
    /// windows held more sections than remembered), and the largest.
    timer_count: AtomicU64,
    timer_late_ns: AtomicU64,
    timer_off_ns: AtomicU64,
    timer_window_off_ns: AtomicU64,
    timer_truncated: AtomicU64,
    timer_max_late_ns: AtomicU64,
    timer_max_off_ns: AtomicU64,
    /// The CPU's timer counters (`timer::counters`) when tracing started.
    timer_counters_at_start: [AtomicU64; 3],
    /// Interrupts-off time by the site where the section began (open addressing on the site's
    /// address; a full table drops new sites, counted in `by_site_dropped`).
    by_site: [SiteTotal; SITES],
    by_site_dropped: AtomicU64,
}

struct SiteTotal {
    site: AtomicUsize,
    count: AtomicU64,
    ns: AtomicU64,
}

/// Distinct section-start sites each CPU totals.
const SITES: usize = 128;

/// Sites `report` lists per CPU.
const SITES_SHOWN: usize = 8;

/// Closed sections each CPU remembers for [`timer_entry`].
const RECENT: usize = 64;

#[allow(clippy::declare_interior_mutable_const)]
const RECORD: Record = Record { ns: AtomicU64::new(0), start: AtomicUsize::new(0), end: AtomicUsize::new(0) };
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const PAIR: (AtomicU64, AtomicU64) = (AtomicU64::new(0), AtomicU64::new(0));
#[allow(clippy::declare_interior_mutable_const)]
const SITE_TOTAL: SiteTotal = SiteTotal { site: AtomicUsize::new(0), count: AtomicU64::new(0), ns: AtomicU64::new(0) };
#[allow(clippy::declare_interior_mutable_const)]
const SLOT: CpuSlot = CpuSlot {
    since_ns: AtomicU64::new(0),
    since_site: AtomicUsize::new(0),
    off_site: AtomicUsize::new(0),
    count: AtomicU64::new(0),
    total_ns: AtomicU64::new(0),
    hist_count: [ZERO; HIST],
    hist_ns: [ZERO; HIST],
    seq: AtomicU32::new(0),
    top: [RECORD; TOP],
    recent: [PAIR; RECENT],
    recent_next: AtomicUsize::new(0),
    timer_count: AtomicU64::new(0),
    timer_late_ns: AtomicU64::new(0),
    timer_off_ns: AtomicU64::new(0),
    timer_window_off_ns: AtomicU64::new(0),
    timer_truncated: AtomicU64::new(0),
    timer_max_late_ns: AtomicU64::new(0),
    timer_max_off_ns: AtomicU64::new(0),
    timer_counters_at_start: [ZERO; 3],
    by_site: [SITE_TOTAL; SITES],
    by_site_dropped: AtomicU64::new(0),
};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static STARTED_NS: AtomicU64 = AtomicU64::new(0);
/// When tracing stopped (0: still tracing).
static STOPPED_NS: AtomicU64 = AtomicU64::new(0);
/// `interrupts::counters()` (reschedule and call-function IPIs) when tracing started.
static IPIS_AT_START: [AtomicU64; 2] = [ZERO; 2];
/// The scheduler's reschedule IPIs sent, by reason, as [`start`] was given them.
static SENT_AT_START: [AtomicU64; 3] = [ZERO; 3];
/// Each CPU's records (4.5 KiB), made at its bring-up ([`init_cpu`]).
static SLOTS: crate::percpu::PerCpuVar<CpuSlot> = crate::percpu::PerCpuVar::new();

/// Creates CPU `cpu`'s records (bring-up, `smp::init_cpu_data`).
pub(crate) fn init_cpu(cpu: u32) {
    SLOTS.init(cpu, SLOT);
}

/// Stores counters' values at `start` (see [`since_start`]).
fn snapshot<const N: usize>(at: &[AtomicU64; N], now: [u64; N]) {
    for (a, v) in at.iter().zip(now) {
        a.store(v, Ordering::Relaxed);
    }
}

/// How far counters moved since [`snapshot`] stored them in `at`.
fn since_start<const N: usize>(at: &[AtomicU64; N], now: [u64; N]) -> [u64; N] {
    core::array::from_fn(|k| now[k].saturating_sub(at[k].load(Ordering::Relaxed)))
}

/// `interrupts::counters()`' reschedule and call-function IPIs.
fn ipis_received() -> [u64; 2] {
    let (_, resched, call) = crate::interrupts::counters();
    [resched, call]
}

fn slot() -> Option<&'static CpuSlot> {
    if !crate::percpu::gs_ready() {
        return None;
    }
    SLOTS.get(crate::percpu::cpu_id())
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
    let now = crate::time::uptime_ns();
    let ns = now.saturating_sub(since);
    let r = s.recent_next.load(Ordering::Relaxed);
    s.recent[r].0.store(since, Ordering::Relaxed);
    s.recent[r].1.store(now, Ordering::Relaxed);
    s.recent_next.store((r + 1) % RECENT, Ordering::Relaxed);
    s.count.fetch_add(1, Ordering::Relaxed);
    s.total_ns.fetch_add(ns, Ordering::Relaxed);
    let class = hist_class(ns);
    s.hist_count[class].fetch_add(1, Ordering::Relaxed);
    s.hist_ns[class].fetch_add(ns, Ordering::Relaxed);
    let start = s.since_site.load(Ordering::Relaxed);
    add_to_site(s, start, ns);
    if ns <= s.top[TOP - 1].ns.load(Ordering::Relaxed) {
        return;
    }
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

fn add_to_site(s: &CpuSlot, site: usize, ns: u64) {
    let mut i = (site >> 3) % SITES;
    for _ in 0..SITES {
        let t = &s.by_site[i];
        let cur = t.site.load(Ordering::Relaxed);
        if cur == site || cur == 0 {
            if cur == 0 {
                t.site.store(site, Ordering::Relaxed);
            }
            t.count.fetch_add(1, Ordering::Relaxed);
            t.ns.fetch_add(ns, Ordering::Relaxed);
            return;
        }
        i = (i + 1) % SITES;
    }
    s.by_site_dropped.fetch_add(1, Ordering::Relaxed);
}

/// Where this CPU's current interrupts-off section began (`None` if interrupts are on or the
/// section began before the per-CPU area was set up). Call with interrupts off.
pub fn off_site() -> Option<&'static Location<'static>> {
    location(slot()?.off_site.load(Ordering::Relaxed))
}

/// The LAPIC timer interrupt began on this CPU for a timer programmed to fire at `deadline_ns`
/// (call first thing in the handler, interrupts off). Divides its lateness (entry − deadline):
///
/// * *held*: the part of the last interrupts-off section (the one whose end let the interrupt
///   in) after the deadline: time the interrupt may have waited for this CPU;
/// * *off in the window*: every interrupts-off section after the deadline, from the recent
///   ones this CPU remembers (the last 64; a window holding more is counted as *truncated*).
///   Between those sections interrupts were on, if only briefly: an interrupt already raised
///   would have been taken there, unless the gap was a lone `sti; cli` (x86 delivers nothing
///   in the instruction after `sti`). So the time before the last section is mostly the
///   machine not having raised the interrupt yet: *delivery* = lateness − held.
pub fn timer_entry(deadline_ns: u64) {
    let Some(s) = slot() else { return };
    if !ACTIVE.load(Ordering::Relaxed) || deadline_ns == u64::MAX {
        return;
    }
    let entry = s.since_ns.load(Ordering::Relaxed);
    if entry == 0 || entry <= deadline_ns {
        return;
    }
    let late = entry - deadline_ns;
    let (mut held, mut window_off, mut truncated) = (0u64, 0u64, true);
    let newest = s.recent_next.load(Ordering::Relaxed);
    for k in 1..=RECENT {
        let (since, end) = &s.recent[(newest + RECENT - k) % RECENT];
        let (since, end) = (since.load(Ordering::Relaxed), end.load(Ordering::Relaxed));
        if end <= deadline_ns || end == 0 {
            truncated = false;
            break;
        }
        let part = end - since.max(deadline_ns);
        if k == 1 {
            held = part;
        }
        window_off += part;
    }
    s.timer_count.fetch_add(1, Ordering::Relaxed);
    s.timer_late_ns.fetch_add(late, Ordering::Relaxed);
    s.timer_off_ns.fetch_add(held, Ordering::Relaxed);
    s.timer_window_off_ns.fetch_add(window_off, Ordering::Relaxed);
    s.timer_truncated.fetch_add(truncated as u64, Ordering::Relaxed);
    s.timer_max_late_ns.fetch_max(late, Ordering::Relaxed);
    s.timer_max_off_ns.fetch_max(held, Ordering::Relaxed);
}

/// Clears every CPU's records and starts tracing. `resched_sent` is the scheduler's count of
/// reschedule IPIs sent so far, by reason (the report shows the difference).
pub fn start(resched_sent: [u64; 3]) {
    ACTIVE.store(false, Ordering::SeqCst);
    for (cpu, s) in SLOTS.iter() {
        s.seq.fetch_add(2, Ordering::AcqRel);
        for r in &s.top {
            r.ns.store(0, Ordering::Relaxed);
            r.start.store(0, Ordering::Relaxed);
            r.end.store(0, Ordering::Relaxed);
        }
        s.count.store(0, Ordering::Relaxed);
        s.total_ns.store(0, Ordering::Relaxed);
        for r in &s.recent {
            r.0.store(0, Ordering::Relaxed);
            r.1.store(0, Ordering::Relaxed);
        }
        for t in &s.by_site {
            t.site.store(0, Ordering::Relaxed);
            t.count.store(0, Ordering::Relaxed);
            t.ns.store(0, Ordering::Relaxed);
        }
        s.by_site_dropped.store(0, Ordering::Relaxed);
        snapshot(&s.timer_counters_at_start, crate::timer::counters(cpu as u32));
        for t in [
            &s.timer_count, &s.timer_late_ns, &s.timer_off_ns, &s.timer_window_off_ns, &s.timer_truncated, &s.timer_max_late_ns,
            &s.timer_max_off_ns,
        ] {
            t.store(0, Ordering::Relaxed);
        }
        for (c, n) in s.hist_count.iter().zip(&s.hist_ns) {
            c.store(0, Ordering::Relaxed);
            n.store(0, Ordering::Relaxed);
        }
    }
    STOPPED_NS.store(0, Ordering::SeqCst);
    snapshot(&IPIS_AT_START, ipis_received());
    snapshot(&SENT_AT_START, resched_sent);
    STARTED_NS.store(crate::time::uptime_ns(), Ordering::SeqCst);
    ACTIVE.store(true, Ordering::SeqCst);
}

/// Stops tracing (the records stay for `report`).
pub fn stop() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        STOPPED_NS.store(crate::time::uptime_ns(), Ordering::SeqCst);
    }
}

/// Whether the tracer is recording (between [`start`] and [`stop`]). Any context.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// One recorded section.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    /// Its length in ns.
    pub ns: u64,
    /// Where interrupts went off (or the handler was entered); `None` if unknown.
    pub start: Option<&'static Location<'static>>,
    /// Where they came back on (or the handler returned); `None` if unknown.
    pub end: Option<&'static Location<'static>>,
}

fn location(addr: usize) -> Option<&'static Location<'static>> {
    // SAFETY: non-zero values are only ever stored from `&'static Location<'static>`
    // references (in `off`/`on`), which live for the whole run.
    (addr != 0).then(|| unsafe { &*(addr as *const Location<'static>) })
}

/// A consistent copy of `cpu`'s longest sections (longest first) and its section count.
pub fn sections(cpu: usize) -> ([Option<Section>; TOP], u64) {
    let Some(s) = SLOTS.get(cpu as u32) else { return ([None; TOP], 0) };
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

/// Displays a section's site as `file:line:col` (without a leading `src/`), or `?` if unknown.
pub struct Site(pub Option<&'static Location<'static>>);

impl core::fmt::Display for Site {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(l) => write!(f, "{}:{}:{}", l.file().trim_start_matches("src/"), l.line(), l.column()),
            None => f.write_str("?"),
        }
    }
}

/// Writes the report (see the module doc) for the online CPUs. `resched_sent`: the scheduler's
/// reschedule IPIs sent so far, by reason [to preempt, to wake an idle CPU, for a wake list].
pub fn report(out: &mut impl Write, resched_sent: [u64; 3]) -> core::fmt::Result {
    let (mut max_ns, mut max_cpu, mut total) = (0u64, 0usize, 0u64);
    writeln!(out, "irqsoff: longest interrupts-off sections per CPU ({})", if active() { "tracing" } else { "stopped" })?;
    let [resched, call] = since_start(&IPIS_AT_START, ipis_received());
    writeln!(out, "IPIs received, all CPUs: {} reschedule, {} call-function", resched, call)?;
    let [preempt, idle, list] = since_start(&SENT_AT_START, resched_sent);
    writeln!(out, "reschedule IPIs sent: {} to preempt a task, {} to wake an idle CPU, {} for a wake list", preempt, idle, list)?;
    for cpu in crate::percpu::online_cpus().map(|c| c.cpu_id as usize) {
        let (top, count) = sections(cpu);
        total += count;
        let Some(slot) = SLOTS.get(cpu as u32) else { continue };
        let off_ns = slot.total_ns.load(Ordering::Relaxed);
        let stopped = STOPPED_NS.load(Ordering::Relaxed);
        let end = if stopped == 0 { crate::time::uptime_ns() } else { stopped };
        let span = end.saturating_sub(STARTED_NS.load(Ordering::Relaxed)).max(1);
        let permille = (off_ns as u128 * 1000 / span as u128) as u64;
        writeln!(out, "cpu {}: {} sections, off {}.{}% of {} ms", cpu, count, permille / 10, permille % 10, span / 1_000_000)?;
        write!(out, "  by length (µs: sections/ms off):")?;
        for class in 0..HIST {
            let (n, ns) = (slot.hist_count[class].load(Ordering::Relaxed), slot.hist_ns[class].load(Ordering::Relaxed));
            if n == 0 {
                continue;
            }
            let lo = if class == 0 { 0 } else { 1u64 << (class - 1) };
            write!(out, " {}{}:{}/{}", if class == HIST - 1 { ">=" } else { "" }, lo, n, ns / 1_000_000)?;
        }
        writeln!(out)?;
        let [ints, idle, programs] = since_start(&slot.timer_counters_at_start, crate::timer::counters(cpu as u32));
        writeln!(out, "  timer: {} interrupts ({} with nothing due), {} LAPIC programmings", ints, idle, programs)?;
        let timers = slot.timer_count.load(Ordering::Relaxed);
        if timers > 0 {
            let (late, off) = (slot.timer_late_ns.load(Ordering::Relaxed), slot.timer_off_ns.load(Ordering::Relaxed));
            let (window, truncated) = (slot.timer_window_off_ns.load(Ordering::Relaxed), slot.timer_truncated.load(Ordering::Relaxed));
            writeln!(
                out,
                "  timer irqs: {} late, avg {} us (held by the last interrupts-off section {} us, delivery {} us; interrupts off {} us of the window in all, {} windows truncated), max {} us (held {} us)",
                timers,
                late / timers / 1000,
                off / timers / 1000,
                late.saturating_sub(off) / timers / 1000,
                window / timers / 1000,
                truncated,
                slot.timer_max_late_ns.load(Ordering::Relaxed) / 1000,
                slot.timer_max_off_ns.load(Ordering::Relaxed) / 1000
            )?;
        }
        // The sites with the most interrupts-off time, most first.
        let mut best = [(0u64, 0u64, 0usize); SITES_SHOWN];
        for t in &slot.by_site {
            let (site, n, ns) = (t.site.load(Ordering::Relaxed), t.count.load(Ordering::Relaxed), t.ns.load(Ordering::Relaxed));
            if site == 0 || ns <= best[SITES_SHOWN - 1].0 {
                continue;
            }
            let mut i = SITES_SHOWN - 1;
            while i > 0 && best[i - 1].0 < ns {
                best[i] = best[i - 1];
                i -= 1;
            }
            best[i] = (ns, n, site);
        }
        for (ns, n, site) in best.iter().filter(|b| b.2 != 0) {
            writeln!(out, "  {:>6} ms in {:>8} sections ({} ns avg) from {}", ns / 1_000_000, n, ns / (*n).max(1), Site(location(*site)))?;
        }
        let dropped = slot.by_site_dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            writeln!(out, "  ({} sections from sites beyond the {}-site table are in no line above)", dropped, SITES)?;
        }
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
