//! The page cache of the disk (`/dev/vda`; Linux's block-device page cache, `mm/filemap.c`):
//! 4 KiB pages indexed by their offset on the disk, read on a miss, written back later.
//!
//! # Page states (Linux's page flags)
//! * `uptodate`: the frame holds the disk's data (read from it, or written whole);
//! * `dirty`: newer than the disk; listed in [`Cache::dirty`] (index order);
//! * `writeback`: a copy is on its way to the disk; such a page is not picked for another
//!   writeback (two writes of one page in flight could land in the wrong order) and is not
//!   reclaimed (a reader missing it would read the disk's older data);
//! * `locked` (`PG_locked`): one task copies data in or out, or reads it from the disk; others
//!   wait on [`PAGE_WAIT`]. Locking a page takes its [`Frame`] out of the entry (a locked page
//!   is one without its frame): the locking task owns it (in its `Locked`, or in writeback's
//!   batch) and puts it back when it unlocks, so page data is touched only by its owner,
//!   outside the cache's lock, and interrupts stay on while 4 KiB are copied. A page is
//!   locked only inside a `DeferFatal` section, and `writeback` is set and cleared inside one
//!   ([`super::writeback`]): a task killed meanwhile dies after it, never leaving a page
//!   locked or under writeback for good.
//!
//! # Locks
//! [`CACHE`] (a `SpinLock`: preemption off, interrupts on, as no interrupt handler touches the
//! cache, so the map's node allocations are not atomic-context allocations) covers the map and
//! every flag; it is held only for lookups and state changes. Order: `CACHE` → the frame allocator's lock (never the other way: frames for
//! new pages are allocated *before* `CACHE` is taken, since an allocation may reclaim, and
//! reclaim takes `CACHE`), and frames leaving the cache are freed (dropped) after it is
//! released. [`PAGE_WAIT`] is woken only after `CACHE` is released.
//!
//! # Reclaim ([`shrink`])
//! A clock over the pages: a clean, unlocked page not under writeback is freed unless it was
//! used since the hand last passed (`referenced`, cleared as the hand passes: a second
//! chance). Dirty pages are not reclaimed: the flusher ([`super::writeback`]) cleans them.
//!
//! # Errors
//! Linux's errnos through [`BlkError`]: no disk ENODEV, past the end ENOSPC (write) or EINVAL
//! (read), no memory for a page ENOMEM, a device error EIO. A read error leaves no page
//! behind; a write-back error is remembered and reported by the next [`super::writeback::sync`]
//! (Linux's `mapping_set_error` / `errseq`), the page stays in the cache, clean.

use crate::drivers::virtio_blk::{self, BlkError};
use crate::mm::frame::Frame;
use crate::sched::signal::DeferFatal;
use crate::sched::wait::WaitQueue;
use crate::sync::SpinLock;
use alloc::collections::{BTreeMap, BTreeSet};
use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes in a cache page.
pub const PAGE: u64 = 4096;
const SECTORS_PER_PAGE: u64 = PAGE / 512;

#[derive(Debug)]
struct Page {
    /// The page's frame; `None` while the page is locked (the task that locked it holds it).
    frame: Option<Frame>,
    uptodate: bool,
    dirty: bool,
    writeback: bool,
    referenced: bool,
}

impl Page {
    /// Locked (`PG_locked`): a task took the frame out.
    fn locked(&self) -> bool {
        self.frame.is_none()
    }
}

/// The cache's state under [`CACHE`].
pub(super) struct Cache {
    pages: BTreeMap<u64, Page>,
    /// Indices of the dirty pages.
    pub(super) dirty: BTreeSet<u64>,
    pub(super) nr_writeback: u64,
    /// When the cache last went from clean to dirty (Linux's inode `dirtied_when`: the disk
    /// is one inode), ns since boot; 0 when clean.
    pub(super) dirtied_when: u64,
    /// Reclaim's clock hand (a page index).
    hand: u64,
    /// A write-back failed since the last [`super::writeback::sync`] looked.
    pub(super) wb_error: bool,
}

pub(super) static CACHE: SpinLock<Cache> =
    SpinLock::new(Cache { pages: BTreeMap::new(), dirty: BTreeSet::new(), nr_writeback: 0, dirtied_when: 0, hand: 0, wb_error: false });

/// Tasks waiting for a page to be unlocked or to finish writeback.
pub(super) static PAGE_WAIT: WaitQueue = WaitQueue::new();

/// Pages read from the disk, pages written to it, pages freed by reclaim (since boot).
static PAGES_IN: AtomicU64 = AtomicU64::new(0);
pub(super) static PAGES_OUT: AtomicU64 = AtomicU64::new(0);
static RECLAIMED: AtomicU64 = AtomicU64::new(0);

/// The cache's page counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pages in the cache (`buff/cache`).
    pub pages: u64,
    /// Dirty pages (`Dirty:` in `/proc/meminfo`).
    pub dirty: u64,
    /// Pages under writeback (`Writeback:`).
    pub writeback: u64,
}

/// The page counts now.
pub fn counts() -> Counts {
    let c = CACHE.lock();
    Counts { pages: c.pages.len() as u64, dirty: c.dirty.len() as u64, writeback: c.nr_writeback }
}

/// Pages read from and written to the disk, and reclaimed, since boot.
pub fn io_counters() -> (u64, u64, u64) {
    (PAGES_IN.load(Ordering::Relaxed), PAGES_OUT.load(Ordering::Relaxed), RECLAIMED.load(Ordering::Relaxed))
}

/// The disk's size in bytes (ENODEV without one).
pub fn disk_bytes() -> Result<u64, BlkError> {
    let info = virtio_blk::info().ok_or(BlkError::NoDevice)?;
    Ok(info.sectors * 512)
}

/// A page this task has locked: its index, its frame (out of the cache until
/// [`unlock_page`] puts it back), and whether it was up to date.
struct Locked {
    index: u64,
    frame: Frame,
    uptodate: bool,
}

/// Locks page `index`, creating it (not up to date) if it is not cached. Sleeps while another
/// task holds it locked. ENOMEM when no frame can be had.
fn lock_page(index: u64) -> Result<Locked, BlkError> {
    let mut spare: Option<Frame> = None;
    let result = loop {
        let busy = {
            let mut c = CACHE.lock();
            match c.pages.get_mut(&index) {
                Some(p) => match p.frame.take() {
                    Some(frame) => {
                        p.referenced = true;
                        break Ok(Locked { index, frame, uptodate: p.uptodate });
                    }
                    None => true,
                },
                None => {
                    if let Some(frame) = spare.take() {
                        // Inserted locked: its frame is the caller's.
                        let page = Page { frame: None, uptodate: false, dirty: false, writeback: false, referenced: true };
                        c.pages.insert(index, page);
                        break Ok(Locked { index, frame, uptodate: false });
                    }
                    false
                }
            }
        };
        if busy {
            PAGE_WAIT.wait_until_uninterruptible(|| CACHE.lock().pages.get(&index).is_none_or(|p| !p.locked()));
        } else {
            // Outside the cache's lock: the allocation may reclaim (which takes it).
            match Frame::alloc() {
                Some(f) => spare = Some(f),
                None => break Err(BlkError::NoMemory),
            }
        }
    };
    // An unused spare is freed here, outside the cache's lock.
    drop(spare);
    result
}

/// Unlocks a page: `dirtied` marks it dirty (and up to date), `uptodate` records a completed
/// read; `drop_it` removes it (a failed read) and frees its frame. Returns whether the page
/// went from clean to dirty.
fn unlock_page(l: Locked, uptodate: bool, dirtied: bool, drop_it: bool) -> bool {
    let now = crate::time::uptime_ns();
    let mut newly = false;
    // `Some` until the frame goes back into its entry; one that does not (the page dropped) is
    // freed below, outside the cache's lock.
    let mut frame = Some(l.frame);
    {
        let mut c = CACHE.lock();
        if drop_it {
            c.pages.remove(&l.index);
        } else if let Some(p) = c.pages.get_mut(&l.index) {
            p.frame = frame.take();
            p.uptodate |= uptodate || dirtied;
            let newly_dirty = dirtied && !p.dirty;
            if newly_dirty {
                p.dirty = true;
            }
            newly = newly_dirty;
            if newly_dirty {
                if c.dirty.is_empty() && c.dirtied_when == 0 {
                    c.dirtied_when = now.max(1);
                }
                c.dirty.insert(l.index);
            }
        }
    }
    drop(frame);
    PAGE_WAIT.wake_all();
    newly
}

/// Reads page `l` from the disk into its frame.
fn fill_from_disk(l: &mut Locked) -> Result<(), BlkError> {
    virtio_blk::read(l.index * SECTORS_PER_PAGE, l.frame.bytes_mut())?;
    PAGES_IN.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Checks `len` bytes at `pos` against the disk: ENOSPC for a write past the end, EINVAL for
/// a read.
fn check(pos: u64, len: u64, write: bool) -> Result<(), BlkError> {
    let size = disk_bytes()?;
    match pos.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ if write => Err(BlkError::NoSpace),
        _ => Err(BlkError::Invalid),
    }
}

/// The pieces of `len` bytes at byte offset `pos`, one per page: (page index, offset in the
/// page, bytes, offset in the caller's buffer).
fn pieces(pos: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let mut done = 0usize;
    core::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let at = pos + done as u64;
        let (index, offset) = (at / PAGE, (at % PAGE) as usize);
        let n = (PAGE as usize - offset).min(len - done);
        let piece = (index, offset, n, done);
        done += n;
        Some(piece)
    })
}

/// Locks page `index` (inside the caller's `DeferFatal` section), reading it from the disk
/// first unless it is up to date or `whole` (the caller overwrites all of it). A failed read
/// drops the page.
fn lock_filled(index: u64, whole: bool) -> Result<Locked, BlkError> {
    let mut l = lock_page(index)?;
    if !l.uptodate && !whole {
        if let Err(e) = fill_from_disk(&mut l) {
            let _ = unlock_page(l, false, false, true);
            return Err(e);
        }
    }
    Ok(l)
}

/// Reads `buf.len()` bytes at byte offset `pos` through the cache.
pub fn read(pos: u64, buf: &mut [u8]) -> Result<(), BlkError> {
    check(pos, buf.len() as u64, false)?;
    for (index, offset, n, done) in pieces(pos, buf.len()) {
        // A task killed with the page locked would leave it locked for good.
        let _defer = DeferFatal::new();
        let l = lock_filled(index, false)?;
        buf[done..done + n].copy_from_slice(&l.frame.bytes()[offset..offset + n]);
        let _ = unlock_page(l, true, false, false);
    }
    Ok(())
}

/// Writes `data` at byte offset `pos` into the cache (dirty pages; a partly written page that
/// is not cached is read first), calling `after_page` after each page it newly dirtied (the
/// dirty throttle; as Linux's ratelimit counts `nr_dirtied`, rewriting a dirty page is free).
/// Nothing is written if the range goes past the disk's end (ENOSPC).
pub fn write(pos: u64, data: &[u8], mut after_page: impl FnMut()) -> Result<(), BlkError> {
    check(pos, data.len() as u64, true)?;
    if virtio_blk::info().is_some_and(|i| i.readonly) {
        return Err(BlkError::ReadOnly);
    }
    for (index, offset, n, done) in pieces(pos, data.len()) {
        let newly_dirty = {
            // A task killed with the page locked would leave it locked for good.
            let _defer = DeferFatal::new();
            let mut l = lock_filled(index, n == PAGE as usize)?;
            l.frame.bytes_mut()[offset..offset + n].copy_from_slice(&data[done..done + n]);
            unlock_page(l, true, true, false)
        };
        // Outside the section: the throttle's sleep may end a killed task.
        if newly_dirty {
            after_page();
        }
    }
    Ok(())
}

/// A run of contiguous pages taken for writeback: their indices start at `first`.
pub(super) struct Batch {
    pub first: u64,
    pub count: usize,
}

/// Takes up to `max` contiguous dirty pages from `first` on for writeback (each clean and
/// `writeback` from now) and copies their data into `staging`. `None` if `first` is not
/// dirty, or locked, or already under writeback.
pub(super) fn take_batch(first: u64, max: usize, staging: &mut [u8]) -> Option<Batch> {
    // The batch's frames, taken out of their entries (the pages locked) for the copy.
    let mut frames: [Option<Frame>; 16] = [const { None }; 16];
    let max = max.min(frames.len()).min(staging.len() / PAGE as usize);
    let count = {
        let mut c = CACHE.lock();
        let mut count = 0;
        while count < max {
            let index = first + count as u64;
            match c.pages.get_mut(&index) {
                Some(p) if p.dirty && !p.locked() && !p.writeback => {
                    // Locked for the copy below (its frame taken); `writeback` keeps a second
                    // writeback away.
                    frames[count] = p.frame.take();
                    p.dirty = false;
                    p.writeback = true;
                    count += 1;
                }
                _ => break,
            }
        }
        if count == 0 {
            return None;
        }
        for i in 0..count {
            c.dirty.remove(&(first + i as u64));
        }
        c.nr_writeback += count as u64;
        if c.dirty.is_empty() {
            c.dirtied_when = 0;
        }
        count
    };
    // Every one of `frames[..count]` is there (an unlocked page has its frame).
    for (i, f) in frames[..count].iter().flatten().enumerate() {
        let at = i * PAGE as usize;
        staging[at..at + PAGE as usize].copy_from_slice(f.bytes());
    }
    {
        let mut c = CACHE.lock();
        for (i, f) in frames[..count].iter_mut().enumerate() {
            if let Some(p) = c.pages.get_mut(&(first + i as u64)) {
                p.frame = f.take();
            }
        }
    }
    PAGE_WAIT.wake_all();
    // `frames` is empty now (a locked page stays in the cache); a frame left in it would be
    // freed on return, outside the cache's lock.
    Some(Batch { first, count })
}

/// Ends the writeback of `b` (its write to the disk returned `ok`).
pub(super) fn finish_batch(b: &Batch, ok: bool) {
    {
        let mut c = CACHE.lock();
        for i in 0..b.count {
            if let Some(p) = c.pages.get_mut(&(b.first + i as u64)) {
                p.writeback = false;
            }
        }
        c.nr_writeback -= b.count as u64;
        if !ok {
            c.wb_error = true;
        }
    }
    if ok {
        PAGES_OUT.fetch_add(b.count as u64, Ordering::Relaxed);
    }
    PAGE_WAIT.wake_all();
}

/// Up to `out.len()` indices from `from` on of pages that are dirty or under writeback (what a
/// sync must see written), in order; how many were stored. No allocation under the lock.
pub(super) fn dirty_or_writeback_from(from: u64, out: &mut [u64]) -> usize {
    let c = CACHE.lock();
    let mut n = 0;
    for (&i, _) in c.pages.range(from..).filter(|(_, p)| p.dirty || p.writeback).take(out.len()) {
        out[n] = i;
        n += 1;
    }
    n
}

/// Up to `out.len()` dirty page indices from `from` on (wrapping to the start once), in order.
pub(super) fn dirty_from(from: u64, out: &mut [u64]) -> usize {
    let c = CACHE.lock();
    let mut n = 0;
    for &i in c.dirty.range(from..).chain(c.dirty.range(..from)).take(out.len()) {
        out[n] = i;
        n += 1;
    }
    n
}

/// A page's flags, as writeback waits on them.
#[derive(Clone, Copy, Debug)]
pub(super) struct State {
    pub dirty: bool,
    pub writeback: bool,
    pub locked: bool,
}

/// Page `index`'s flags (`None`: not cached).
pub(super) fn state(index: u64) -> Option<State> {
    CACHE.lock().pages.get(&index).map(|p| State { dirty: p.dirty, writeback: p.writeback, locked: p.locked() })
}

/// Frees up to `want` clean pages (the clock in the module doc); returns how many it freed.
/// Never sleeps; takes only the cache's and the frame allocator's locks.
pub fn shrink(want: u64) -> u64 {
    const CHUNK: usize = 32;
    let mut freed = 0u64;
    // Two sweeps at most: the first may only clear `referenced` bits.
    let mut budget = 2 * CACHE.lock().pages.len() as u64 + 1;
    while freed < want && budget > 0 {
        // The victims' frames, freed once the cache's lock is released.
        let mut victims: [Option<Frame>; CHUNK] = [const { None }; CHUNK];
        let mut n = 0;
        {
            let mut c = CACHE.lock();
            if c.pages.is_empty() {
                break;
            }
            let hand = c.hand;
            let mut keys = [0u64; CHUNK];
            let mut k = 0;
            // The next CHUNK pages from the hand, wrapping.
            for (&i, _) in c.pages.range(hand..).chain(c.pages.range(..hand)).take(CHUNK) {
                keys[k] = i;
                k += 1;
            }
            for &i in &keys[..k] {
                budget = budget.saturating_sub(1);
                c.hand = i + 1;
                let Some(p) = c.pages.get_mut(&i) else { continue };
                if p.dirty || p.writeback || p.locked() {
                    continue;
                }
                if p.referenced {
                    p.referenced = false;
                    continue;
                }
                if (freed + n as u64) < want {
                    victims[n] = c.pages.remove(&i).and_then(|p| p.frame);
                    n += 1;
                }
            }
        }
        victims.into_iter().flatten().for_each(Frame::free);
        freed += n as u64;
    }
    RECLAIMED.fetch_add(freed, Ordering::Relaxed);
    freed
}

/// Drops every clean page (`vm.drop_caches`; dirty pages and pages in use stay). Returns how
/// many were dropped.
pub fn drop_clean() -> u64 {
    let mut dropped = 0;
    loop {
        // The victims' frames, freed once the cache's lock is released.
        let mut victims: [Option<Frame>; 32] = [const { None }; 32];
        let mut n = 0;
        {
            let mut c = CACHE.lock();
            let mut keys = [0u64; 32];
            let mut k = 0;
            for (&i, _) in c.pages.iter().filter(|(_, p)| !p.dirty && !p.writeback && !p.locked()).take(keys.len()) {
                keys[k] = i;
                k += 1;
            }
            for &i in &keys[..k] {
                if let Some(p) = c.pages.remove(&i) {
                    victims[n] = p.frame;
                    n += 1;
                }
            }
        }
        if n == 0 {
            return dropped;
        }
        victims.into_iter().flatten().for_each(Frame::free);
        dropped += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::writeback;
    use crate::mm::frame;
    use crate::sched::task::SpawnOptions;
    use cadence_sched::Policy;
    use cadence_vm::dirty::RtDirty;

    /// Tests write from 32 MiB on (the blk tests use the first 16 MiB and the last 64 KiB).
    const BASE: u64 = 32 << 20;

    fn disk() -> bool {
        let ok = virtio_blk::info().is_some_and(|i| !i.readonly && i.sectors * 512 >= BASE + (8 << 20));
        if !ok {
            crate::testing::skip("no writable disk of 40 MiB or more");
        }
        ok
    }

    /// Leaves the cache empty (the next test's frame counts see no cache pages).
    fn empty_cache() {
        writeback::sync().expect("sync");
        drop_clean();
        assert_eq!(counts(), Counts::default(), "pages left in the cache");
    }

    fn pattern(seed: u8, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(seed).wrapping_add((i >> 12) as u8);
        }
    }

    #[test_case]
    fn written_pages_are_dirty_until_synced_then_on_disk_and_reclaimable() {
        if !disk() {
            return;
        }
        empty_cache();
        let free0 = frame::free_frames();
        let mut data = alloc::vec![0u8; 64 * PAGE as usize + 100];
        pattern(3, &mut data);
        // Unaligned start and end: the partial pages are read first.
        let pos = BASE + 1000;
        writeback::write(pos, &data, false).expect("write");
        let c = counts();
        assert!(c.pages >= 65 && c.dirty + c.writeback >= 1, "{:?}", c);
        let mut back = alloc::vec![0u8; data.len()];
        read(pos, &mut back).expect("read");
        assert!(back == data, "cached read differs");
        writeback::sync().expect("sync");
        assert_eq!((counts().dirty, counts().writeback), (0, 0));
        // On the disk itself (whole sectors around the range).
        let first = pos / 512;
        let mut disk_bytes = alloc::vec![0u8; ((pos + data.len() as u64).div_ceil(512) - first) as usize * 512];
        virtio_blk::read(first, &mut disk_bytes).expect("device read");
        let off = (pos - first * 512) as usize;
        assert!(disk_bytes[off..off + data.len()] == data[..], "the disk differs after sync");
        // Reclaim frees clean pages: all of them after two passes of the clock.
        let before = counts().pages;
        let freed = shrink(u64::MAX);
        assert_eq!(freed, before, "shrink freed {} of {} clean pages", freed, before);
        assert_eq!(frame::free_frames(), free0, "frames not back after reclaim");
        // Errors: past the end, without touching anything.
        let size = disk_bytes_len();
        assert_eq!(writeback::write(size - 10, &[0u8; 20], false), Err(BlkError::NoSpace));
        assert_eq!(read(size - 10, &mut [0u8; 20]), Err(BlkError::Invalid));
        assert_eq!(counts(), Counts::default());
    }

    fn disk_bytes_len() -> u64 {
        super::disk_bytes().expect("disk")
    }

    /// With a tiny dirty limit a normal writer is paused; an RT writer under `exempt` never
    /// is (its pages still count and the flusher still runs), under `off` it is.
    #[test_case]
    fn the_throttle_pauses_normal_writers_and_exempts_rt_ones() {
        if !disk() {
            return;
        }
        empty_cache();
        let (cfg0, mode0) = (writeback::config(), writeback::rt_mode());
        let mut cfg = cfg0;
        cfg.set("dirty_bytes", 64 << 10).expect("dirty_bytes");
        cfg.set("dirty_background_bytes", 32 << 10).expect("dirty_background_bytes");
        writeback::set_config(cfg);
        let run = |policy: Policy, mode: RtDirty| -> u64 {
            writeback::set_rt_mode(mode);
            let prio = if policy == Policy::Fifo { 10 } else { 0 };
            let t = crate::sched::spawn(SpawnOptions::new("dirtier").policy(policy, prio, 0), || {
                let buf = alloc::vec![7u8; 1 << 20];
                if writeback::write(BASE, &buf, false).is_err() {
                    return -1;
                }
                (crate::sched::current().dirty.throttled_ns.load(Ordering::Relaxed) / 1000).min(i32::MAX as u64) as i32
            })
            .expect("spawn");
            let us = crate::sched::wait(t.tid).expect("wait");
            writeback::sync().expect("sync");
            assert!(us >= 0, "the write failed");
            us as u64
        };
        let normal = run(Policy::Normal, RtDirty::Exempt);
        let rt_exempt = run(Policy::Fifo, RtDirty::Exempt);
        let rt_off = run(Policy::Fifo, RtDirty::Off);
        writeback::set_config(cfg0);
        writeback::set_rt_mode(mode0);
        empty_cache();
        assert!(normal > 0, "a normal writer 1 MiB over a 64 KiB limit was never paused");
        assert_eq!(rt_exempt, 0, "an RT writer was paused under exempt");
        assert!(rt_off > 0, "an RT writer was not paused under off");
        crate::kprint!("(throttled: normal {} us, rt off {} us) ", normal, rt_off);
    }

    /// Writers killed while throttled or copying (and a sync killed mid-way) leave no page
    /// locked or under writeback: a sync afterwards completes and the cache empties.
    #[test_case]
    fn killed_writers_and_syncs_leave_the_cache_usable() {
        use crate::sched::signal;
        if !disk() {
            return;
        }
        empty_cache();
        let cfg0 = writeback::config();
        let mut cfg = cfg0;
        cfg.set("dirty_bytes", 256 << 10).expect("dirty_bytes");
        cfg.set("dirty_background_bytes", 128 << 10).expect("dirty_background_bytes");
        writeback::set_config(cfg);
        let mut tids = alloc::vec::Vec::new();
        for k in 0..3u64 {
            let t = crate::sched::spawn(SpawnOptions::new("killed-writer"), move || {
                let buf = alloc::vec![k as u8; 1 << 20];
                for i in 0..8u64 {
                    let _ = writeback::write(BASE + ((k * 8 + i) << 20) + 512, &buf, false);
                }
                let _ = writeback::sync();
                0
            })
            .expect("spawn");
            tids.push(t.tid);
        }
        for (j, &tid) in tids.iter().enumerate() {
            crate::sched::sleep_ns(20_000_000 * (j as u64 + 1));
            let _ = signal::kill(tid, signal::SIGKILL);
        }
        for tid in tids {
            let code = crate::sched::wait(tid).expect("reap");
            assert!(code == 128 + 9 || code == 0, "writer exit {}", code);
        }
        writeback::set_config(cfg0);
        empty_cache();
    }

    #[test_case]
    fn dd_sync_free_vmstat_answer_as_the_linux_tools() {
        let run = |cmd: &str| crate::shell::capture(|| crate::shell::execute(cmd));
        let (c, out) = run("dd if=/dev/zero");
        assert_eq!(c, 2, "{}", out);
        let (c, out) = run("dd if=/dev/zero of=/tmp/x");
        assert_eq!(c, 1);
        assert!(out.contains("dd: failed to open '/tmp/x': No such file or directory"), "{}", out);
        let (c, out) = run("dd if=/dev/zero of=/dev/null bs=1Q");
        assert_eq!(c, 1);
        assert!(out.contains("dd: invalid number: '1Q'"), "{}", out);
        let (c, out) = run("dd if=/dev/zero of=/dev/null bs=4k count=3");
        assert_eq!(c, 0, "{}", out);
        assert!(out.contains("3+0 records in\n3+0 records out\n12288 bytes (12 kB, 12 KiB) copied, "), "{}", out);
        for cmd in ["free", "free -m", "vmstat", "sync"] {
            let (c, out) = run(cmd);
            assert_eq!(c, 0, "{}: {}", cmd, out);
        }
        assert_eq!(run("free -x").0, 2);
        assert_eq!(run("vmstat 0").0, 2);
        if virtio_blk::info().is_none() {
            let (c, out) = run("dd if=/dev/zero of=/dev/vda count=1");
            assert_eq!(c, 1);
            assert!(out.contains("dd: /dev/vda: No such device"), "{}", out);
            return;
        }
        if !disk() {
            return;
        }
        empty_cache();
        let seek = BASE / 4096;
        let (c, out) = run(&alloc::format!("dd if=/dev/zero of=/dev/vda bs=4k count=4 seek={} oflag=sync", seek));
        assert_eq!(c, 0, "{}", out);
        assert!(out.contains("4+0 records out\n16384 bytes (16 kB, 16 KiB) copied"), "{}", out);
        assert_eq!(counts().dirty, 0, "oflag=sync left dirty pages");
        let (c, out) = run(&alloc::format!("dd if=/dev/vda of=/dev/null bs=4k count=4 skip={}", seek));
        assert_eq!(c, 0, "{}", out);
        // Past the end: what fits is written, then ENOSPC.
        let blocks = disk_bytes_len() / 4096;
        let (c, out) = run(&alloc::format!("dd if=/dev/zero of=/dev/vda bs=4k count=3 seek={}", blocks - 1));
        assert_eq!(c, 1, "{}", out);
        assert!(out.contains("dd: /dev/vda: No space left on device\n2+0 records in\n1+0 records out\n4096 bytes"), "{}", out);
        empty_cache();
    }
}
