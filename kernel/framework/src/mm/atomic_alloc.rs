//! Heap allocations in atomic context: a detector (in the spirit of Linux's
//! `CONFIG_DEBUG_ATOMIC_SLEEP`, which reports a `GFP_KERNEL` allocation under a spin lock).
//!
//! Cadence's contract (issue #11): no heap allocation with interrupts disabled once the
//! scheduler runs — that is, none under a run-queue, wait-queue, timer or pipe lock (all of
//! them disable interrupts) and none in an interrupt handler. Such an allocation may take the
//! global heap lock (a per-CPU cache refill), and a CPU spinning there with interrupts off
//! while the host has descheduled the holder's vCPU keeps its own timer out for a host
//! timeslice. Structures used in those sections reserve their capacity beforehand, outside
//! (`cadence_sched::slotvec`, the kernel's `Rq::reserve`).
//!
//! The heap calls [`note`] on every allocation; with interrupts on it returns at once. With
//! them off it counts the allocation against the site where this CPU's interrupts-off section
//! began (the irqsoff hooks keep that site, [`crate::trace::irqsoff::off_site`]) in a fixed
//! table of [`SITES`] entries (lock-free, no allocation: it runs inside the allocator).
//! Boot (before [`arm`]) is not counted.
//!
//! `trace atomic-alloc [report|reset]` prints `<count>  <site>  (last: <n> bytes)` per site
//! (the size of the latest one hints at what allocated) and ends with,
//! exactly, `atomic-alloc: total=<n> sites=<n>`.

use core::fmt::Write;
use core::panic::Location;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Distinct sites remembered; more are counted in `total` only.
pub const SITES: usize = 32;

struct SiteCount {
    /// `&'static Location` as an address; 0 = free slot, 1 = unknown site.
    site: AtomicUsize,
    count: AtomicU64,
    /// Size of the latest allocation counted here (a hint at what allocated).
    last_size: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: SiteCount = SiteCount { site: AtomicUsize::new(0), count: AtomicU64::new(0), last_size: AtomicUsize::new(0) };
static TABLE: [SiteCount; SITES] = [FREE; SITES];
static TOTAL: AtomicU64 = AtomicU64::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

/// Starts counting (called once the scheduler runs on every CPU).
pub fn arm() {
    ARMED.store(true, Ordering::SeqCst);
}

/// Called by the heap for every allocation, before it touches its own state.
#[inline]
pub fn note(size: usize) {
    if !ARMED.load(Ordering::Relaxed) || crate::irqflags::are_enabled() {
        return;
    }
    record(crate::trace::irqsoff::off_site(), size);
}

#[cold]
fn record(site: Option<&'static Location<'static>>, size: usize) {
    TOTAL.fetch_add(1, Ordering::Relaxed);
    let key = site.map_or(1, |l| l as *const Location<'static> as usize);
    for slot in TABLE.iter() {
        let cur = slot.site.load(Ordering::Acquire);
        let owned = cur == key
            || (cur == 0
                && match slot.site.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => true,
                    Err(other) => other == key,
                });
        if owned {
            slot.count.fetch_add(1, Ordering::Relaxed);
            slot.last_size.store(size, Ordering::Relaxed);
            return;
        }
    }
}

/// Allocations counted since boot (or the last [`reset`]).
pub fn total() -> u64 {
    TOTAL.load(Ordering::Relaxed)
}

/// Forgets the counts (sites stay, counted from zero).
pub fn reset() {
    for slot in TABLE.iter() {
        slot.count.store(0, Ordering::Relaxed);
    }
    TOTAL.store(0, Ordering::Relaxed);
}

/// Sites with a non-zero count, most frequent first.
pub fn sites() -> alloc::vec::Vec<(Option<&'static Location<'static>>, u64, usize)> {
    let mut v: alloc::vec::Vec<_> = TABLE
        .iter()
        .filter_map(|s| {
            let (site, n) = (s.site.load(Ordering::Acquire), s.count.load(Ordering::Relaxed));
            let size = s.last_size.load(Ordering::Relaxed);
            // SAFETY: values > 1 are only ever stored from `&'static Location<'static>`
            // references (in `record`), which live for the whole run.
            let location = (site > 1).then(|| unsafe { &*(site as *const Location<'static>) });
            (site != 0 && n > 0).then_some((location, n, size))
        })
        .collect();
    v.sort_by_key(|s| core::cmp::Reverse(s.1));
    v
}

/// Writes the report (see the module doc). `reserve` is the run-queue reserve's counters
/// (refill passes, structures grown, wakeup drains deferred), printed with it.
pub fn report(out: &mut impl Write, reserve: (u64, u64, u64)) -> core::fmt::Result {
    let sites = sites();
    for (site, n, size) in &sites {
        writeln!(out, "{:>10}  {}  (last: {} bytes)", n, crate::trace::irqsoff::Site(*site), size)?;
    }
    let (passes, grown, deferred) = reserve;
    writeln!(out, "reserve: refill passes={} structures grown={} wakeup drains deferred={}", passes, grown, deferred)?;
    writeln!(out, "atomic-alloc: total={} sites={}", total(), sites.len())
}
