//! Writeback of the page cache ([`super::pagecache`]): the flusher thread, `sync`, and the
//! dirty throttle (`mm/page-writeback.c` and `fs/fs-writeback.c` in Linux).
//!
//! # The flusher (`flush-254:0`, one per disk; Linux's per-device writeback work)
//! Sleeps until woken or until `vm.dirty_writeback_centisecs` passes, then writes:
//! * **background**: while dirty + writeback pages exceed the background threshold, batches of
//!   up to 16 contiguous dirty pages (64 KiB, the driver's request size) in index order from
//!   where the last pass stopped (Linux's `writeback_index` cycling);
//! * **expiry** (kupdate): once the cache's `dirtied_when` (when it last went from clean to
//!   dirty; the disk is a single inode, so this is Linux's inode-level timestamp) is older
//!   than `vm.dirty_expire_centisecs`, every page dirty at that moment; if pages stay dirty,
//!   `dirtied_when` restarts at now (Linux's `redirty_tail`).
//!
//! # The throttle ([`balance_dirty_pages`]), every few pages a writer newly dirties
//! `cadence_vm::dirty::throttle` decides (its module doc has the formulas): with `nr` the dirty
//! plus writeback pages and `dirtyable = free frames + cache pages − high watermark` (Linux's
//! `global_dirtyable_memory` with its reserve), above the background threshold the flusher is
//! woken; between `(bg + limit) / 2` and the limit each writer is held to its share of the
//! measured bandwidth (`bw / N × pos_ratio`, `N` the writers being limited), pausing for what
//! its pages are worth at that rate; at the limit it sleeps `max_pause` (an eighth of the time
//! the device needs for `nr` pages, 1 to 200 ms) and checks again. The time
//! asleep is added to the task's `throttled_ns` (`ps`'s `THR(ms)`) and to
//! [`throttled_ns_total`]. `vm.rt_dirty_throttle` selects the RT rule
//! (`exempt`: the seed, accounted and flusher woken but never paused; `boost`: Linux's +25%;
//! `off`). A fatal signal ends the pause (a killed `dd` dies without waiting for the disk).
//!
//! # sync ([`sync`])
//! Walks the cache in index order, 256 pages a pass (no allocation under the cache's lock),
//! writing every page it finds dirty and waiting for every page under writeback (the
//! flusher's, taken before the sync began), then flushes the device's write cache. Pages
//! dirtied after it passed are left for later, as Linux's sync tags pages first. It returns
//! EIO once if a write-back failed since the last sync.

use super::pagecache::{self, CACHE, PAGE, PAGE_WAIT};
use crate::drivers::virtio_blk::{self, BlkError};
use crate::sched::wait::WaitQueue;
use crate::sync::IrqLock;
use alloc::vec;
use cadence_vm::dirty::{self, Bandwidth, DirtyConfig, RtDirty};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// Pages per writeback request (64 KiB: the driver's bounce buffer).
pub const BATCH_PAGES: usize = virtio_blk::BOUNCE_PAGES;

static CONFIG: IrqLock<DirtyConfig> = IrqLock::new(DirtyConfig {
    ratio: 20,
    bytes: 0,
    background_ratio: 10,
    background_bytes: 0,
    expire_centisecs: 3000,
    writeback_centisecs: 500,
});
/// `vm.rt_dirty_throttle` (0 exempt, 1 boost, 2 off).
static RT_MODE: AtomicU8 = AtomicU8::new(0);
static BANDWIDTH: IrqLock<Option<Bandwidth>> = IrqLock::new(None);
static FLUSHER_WAIT: WaitQueue = WaitQueue::new();
static FLUSHER_KICK: AtomicBool = AtomicBool::new(false);
static THROTTLED_NS: AtomicU64 = AtomicU64::new(0);
/// The flusher's name (Linux 2.6.32's `flush-MAJOR:MINOR`; 254 is virtio-blk's usual major).
pub const FLUSHER_NAME: &str = "flush-254:0";

/// Reads one dirty sysctl (`name` without `vm.`).
pub fn get(name: &str) -> Option<u64> {
    CONFIG.lock().get(name)
}

/// Sets one dirty sysctl (`name` without `vm.`); wakes the flusher, whose thresholds moved.
pub fn set(name: &str, value: u64) -> Result<(), cadence_vm::Invalid> {
    CONFIG.lock().set(name, value)?;
    kick_flusher();
    Ok(())
}

/// All dirty sysctls (a benchmark saves and restores them).
pub fn config() -> DirtyConfig {
    *CONFIG.lock()
}

/// Restores what [`config`] returned.
pub fn set_config(cfg: DirtyConfig) {
    *CONFIG.lock() = cfg;
    kick_flusher();
}

/// The current `vm.rt_dirty_throttle`.
pub fn rt_mode() -> RtDirty {
    match RT_MODE.load(Ordering::Relaxed) {
        0 => RtDirty::Exempt,
        1 => RtDirty::Boost,
        _ => RtDirty::Off,
    }
}

/// Sets `vm.rt_dirty_throttle`.
pub fn set_rt_mode(m: RtDirty) {
    RT_MODE.store(
        match m {
            RtDirty::Exempt => 0,
            RtDirty::Boost => 1,
            RtDirty::Off => 2,
        },
        Ordering::Relaxed,
    );
}

/// Time all tasks spent paused by the throttle since boot.
pub fn throttled_ns_total() -> u64 {
    THROTTLED_NS.load(Ordering::Relaxed)
}

/// The writeback bandwidth estimate, bytes per second.
pub fn bandwidth() -> u64 {
    BANDWIDTH.lock().map_or(dirty::INIT_BW, |b| b.bytes_per_s)
}

/// Pages that can hold dirty data: free frames plus cache pages, less the high watermark.
fn dirtyable(cache_pages: u64) -> u64 {
    let high = crate::mm::frame::watermarks().0.high;
    (crate::mm::frame::free_frames() + cache_pages).saturating_sub(high).max(1)
}

/// The thresholds (pages) a writer of this kind sees now: (background, limit).
pub fn thresholds(rt: bool) -> dirty::Thresholds {
    let cfg = *CONFIG.lock();
    dirty::thresholds(&cfg, dirtyable(pagecache::counts().pages), rt, rt_mode())
}

/// Wakes the flusher.
pub fn kick_flusher() {
    FLUSHER_KICK.store(true, Ordering::Release);
    FLUSHER_WAIT.wake_all();
}

pub use crate::sched::process::WriterState;

/// The rate-limited writers (`cadence_vm::dirty::Dirtiers`).
static DIRTIERS: IrqLock<dirty::Dirtiers> = IrqLock::new(dirty::Dirtiers::new());

/// The dirty throttle after the caller newly dirtied a page (module doc): a check every
/// `nr_dirtied_pause` pages (Linux `balance_dirty_pages_ratelimited`), then, over the limit,
/// again after each pause until under it.
pub fn balance_dirty_pages() {
    // The per-page part reads the counters through `current` without taking a reference.
    let due = crate::sched::signal::with_current(|t| {
        let pages = t.dirty.nr_dirtied.fetch_add(1, Ordering::Relaxed) + 1;
        (pages >= t.dirty.nr_dirtied_pause.load(Ordering::Relaxed)).then(|| {
            t.dirty.nr_dirtied.store(0, Ordering::Relaxed);
            pages
        })
    });
    let Some(Some(mut pages)) = due else { return };
    let task = crate::sched::current();
    let st = &task.dirty;
    let rt = crate::sched::current_is_rt();
    let mode = rt_mode();
    loop {
        let counts = pagecache::counts();
        let cfg = *CONFIG.lock();
        let now = crate::time::uptime_ns();
        let dirtiers = DIRTIERS.lock().count(now);
        let dom =
            dirty::Domain { dirtyable: dirtyable(counts.pages), nr_dirty: counts.dirty + counts.writeback, bw: bandwidth(), dirtiers };
        let since = now.saturating_sub(st.paused_when.load(Ordering::Relaxed));
        let t = dirty::throttle(&cfg, &dom, dirty::Writer { rt, pages, elapsed_ns: since }, mode);
        if t.limited {
            let mut seen = st.seen.load(Ordering::Relaxed);
            DIRTIERS.lock().note(now, &mut seen);
            st.seen.store(seen, Ordering::Relaxed);
        }
        if t.wake_flusher && !FLUSHER_KICK.load(Ordering::Relaxed) {
            kick_flusher();
        }
        st.nr_dirtied_pause.store(t.next_check, Ordering::Relaxed);
        if t.pause_ns > 0 && !crate::sched::signal::current_fatal_pending() {
            // A fatal signal ends the task in here (nothing of the cache is held).
            crate::sched::sleep_ns(t.pause_ns);
            let slept = crate::time::uptime_ns() - now;
            task.dirty.throttled_ns.fetch_add(slept, Ordering::Relaxed);
            THROTTLED_NS.fetch_add(slept, Ordering::Relaxed);
        }
        st.paused_when.store(crate::time::uptime_ns(), Ordering::Relaxed);
        if !t.exceeded || crate::sched::signal::current_fatal_pending() {
            return;
        }
        pages = 0; // over the limit: check again before dirtying more
    }
}

/// Writes `data` at `pos` through the cache, throttled as the module doc says; `sync`
/// (`oflag=sync`) writes the pages back and flushes the device before returning.
pub fn write(pos: u64, data: &[u8], sync: bool) -> Result<(), BlkError> {
    pagecache::write(pos, data, balance_dirty_pages)?;
    if sync && !data.is_empty() {
        let first = pos / PAGE;
        let last = (pos + data.len() as u64 - 1) / PAGE;
        sync_range(first, last)?;
        virtio_blk::flush()?;
    }
    Ok(())
}

/// Writes back one batch from `first` with `staging`; `Ok(pages)` (0: `first` was not
/// writable now: clean, locked or under writeback).
fn write_batch(first: u64, staging: &mut [u8]) -> Result<usize, BlkError> {
    // From `take_batch` to `finish_batch`: a kill in between would leave the pages under
    // writeback for good (every sync would wait for them).
    let _defer = crate::sched::signal::DeferFatal::new();
    let Some(b) = pagecache::take_batch(first, BATCH_PAGES, staging) else { return Ok(0) };
    let bytes = b.count * PAGE as usize;
    let r = virtio_blk::write(b.first * (PAGE / 512), &staging[..bytes]);
    pagecache::finish_batch(&b, r.is_ok());
    if r.is_ok() {
        let now = crate::time::uptime_ns();
        if let Some(bw) = BANDWIDTH.lock().as_mut() {
            bw.completed(bytes as u64, now);
        }
    }
    r.map(|_| b.count)
}

/// Writes back pages `first..=last` (those dirty), and waits until none of them is dirty from
/// before or under writeback (`sync_file_range` with `WAIT_BEFORE | WRITE | WAIT_AFTER`).
pub fn sync_range(first: u64, last: u64) -> Result<(), BlkError> {
    let mut staging = vec![0u8; BATCH_PAGES * PAGE as usize];
    let mut result = Ok(());
    let mut list = [0u64; LIST];
    let mut from = first;
    while from <= last {
        let n = pagecache::dirty_or_writeback_from(from, &mut list);
        let mut upto = n;
        while upto > 0 && list[upto - 1] > last {
            upto -= 1;
        }
        if upto == 0 {
            break;
        }
        keep_first_error(&mut result, sync_indices(&list[..upto], &mut staging));
        from = list[upto - 1] + 1;
    }
    result
}

/// Indices listed per pass of a sync (a stack array: nothing is allocated under the cache's
/// lock).
const LIST: usize = 256;

fn keep_first_error(result: &mut Result<(), BlkError>, r: Result<(), BlkError>) {
    if result.is_ok() {
        *result = r;
    }
}

/// Writes back each listed page that is dirty (in batches of contiguous pages), waiting for
/// pages locked or under writeback first; returns once none of them is under writeback.
/// The first error is returned, after the rest was written.
fn sync_indices(indices: &[u64], staging: &mut [u8]) -> Result<(), BlkError> {
    let mut result = Ok(());
    let mut covered_to = 0u64; // indices below this were written by an earlier batch
    for &i in indices {
        if i < covered_to {
            continue;
        }
        loop {
            match write_batch(i, staging) {
                Ok(0) => {}
                Ok(n) => {
                    covered_to = i + n as u64;
                    break;
                }
                Err(e) => {
                    keep_first_error(&mut result, Err(e));
                    covered_to = i + 1;
                    break;
                }
            }
            // Not writable now. Clean: nothing to do (its writeback is waited for below).
            // Dirty but locked (a writer copying in) or under writeback: wait, then retry.
            match pagecache::state(i) {
                Some(s) if s.dirty => {
                    PAGE_WAIT.wait_until_uninterruptible(|| pagecache::state(i).is_none_or(|s| !s.locked && !s.writeback))
                }
                _ => break,
            }
        }
    }
    for &i in indices {
        PAGE_WAIT.wait_until_uninterruptible(|| pagecache::state(i).is_none_or(|s| !s.writeback));
    }
    result
}

/// `sync`: writes back every page dirty or under writeback when it reaches it (those of a
/// write that returned before the sync began among them), waits for their writeback, then
/// flushes the device (module doc). Errors: no disk ENODEV, a failed write-back EIO (reported
/// once).
pub fn sync() -> Result<(), BlkError> {
    virtio_blk::info().ok_or(BlkError::NoDevice)?;
    let written = sync_range(0, u64::MAX);
    let flushed = virtio_blk::flush();
    let earlier_error = core::mem::replace(&mut CACHE.lock().wb_error, false);
    written?;
    flushed?;
    if earlier_error {
        return Err(BlkError::Io);
    }
    Ok(())
}

/// Starts the flusher (at boot, when a disk was found).
pub fn start() {
    if virtio_blk::info().is_none() {
        return;
    }
    *BANDWIDTH.lock() = Some(Bandwidth::new(crate::time::uptime_ns()));
    let opts = crate::sched::task::SpawnOptions::new(FLUSHER_NAME).kthread();
    if let Err(e) = crate::sched::spawn(opts, flusher) {
        crate::kprintln!("cadence: warning: no flusher for {}: {:?}", virtio_blk::NAME, e);
    }
}

/// How long the flusher waits for a busy page (locked, or under an earlier writeback) before
/// it looks again.
const BUSY_WAIT_NS: u64 = 10_000_000;

fn flusher() -> i32 {
    let mut staging = vec![0u8; BATCH_PAGES * PAGE as usize];
    let mut cursor = 0u64;
    let mut next = [0u64; 1];
    loop {
        let period_ns = CONFIG.lock().writeback_centisecs.saturating_mul(10_000_000);
        let deadline = if period_ns == 0 { u64::MAX } else { crate::time::uptime_ns().saturating_add(period_ns) };
        FLUSHER_WAIT.wait_until_uninterruptible_deadline(|| FLUSHER_KICK.swap(false, Ordering::AcqRel), deadline);
        let mut started = false;
        // Background writeback.
        while over_background() {
            if !started {
                started = true;
                if let Some(bw) = BANDWIDTH.lock().as_mut() {
                    bw.start(crate::time::uptime_ns());
                }
            }
            if pagecache::dirty_from(cursor, &mut next) == 0 {
                break;
            }
            let i = next[0];
            match write_batch(i, &mut staging) {
                Ok(0) => {
                    // Busy (locked, or under an earlier writeback): wait for it a little
                    // instead of spinning, then go on after it.
                    let until = crate::time::uptime_ns().saturating_add(BUSY_WAIT_NS);
                    PAGE_WAIT.wait_until_uninterruptible_deadline(|| pagecache::state(i).is_none_or(|s| !s.locked && !s.writeback), until);
                    cursor = i + 1;
                }
                Ok(n) => cursor = i + n as u64,
                Err(_) => cursor = i + 1,
            }
        }
        // Expiry (kupdate): the whole disk-inode once its oldest dirty data is old enough.
        let (when, cfg) = (CACHE.lock().dirtied_when, *CONFIG.lock());
        if when != 0 && dirty::expired(&cfg, when, crate::time::uptime_ns()) {
            let _ = sync_range(0, u64::MAX);
            let mut c = CACHE.lock();
            if !c.dirty.is_empty() {
                c.dirtied_when = crate::time::uptime_ns().max(1);
            }
        }
    }
}

/// Dirty plus writeback pages above the background threshold of a non-RT writer.
fn over_background() -> bool {
    let counts = pagecache::counts();
    counts.dirty > 0 && counts.dirty + counts.writeback > thresholds(false).background
}
