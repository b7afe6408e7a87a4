//! Physical frame allocator: a bitmap over all of physical memory (1 bit per 4 KiB frame,
//! set = in use), built from the bootloader's memory map.
//!
//! Invariants: only `Usable` regions are ever handed out; frame 0 and everything below 1 MiB are
//! kept back (real-mode memory: the SMP trampoline page is chosen there explicitly with
//! [`take_low_page`]); the bitmap's own frames are marked used. `free_frames()` is exact, so
//! tests can check that memory returns to its baseline.
//!
//! Every frame [`alloc`] hands out is zeroed (a whole-frame write), and not only for hygiene:
//! memory the memory map calls usable may have held code that ran before the kernel (the BIOS
//! bootloader's stage 4 sits at 1.2 MiB; under UEFI, the firmware's boot-services code).
//! QEMU's TCG keeps the translations of that code until every byte of it is overwritten, and
//! until then *every* write to the page takes its slow self-modifying-code path
//! (`notdirty_write` → `tb_invalidate_phys_range`). A stack that
//! landed on such a page ran about ten times slower: `bench wakeup-latency` pinned to the CPU
//! whose idle stack held stage 4's old page averaged 780 µs instead of 100 µs. Writing the
//! whole frame once drops those translations. [`alloc_contiguous`] (the heap's one big
//! allocation at boot) does not zero: 254 MiB take 0.7 s under TCG (1.9 s under UEFI), and no
//! slow writes were seen in the heap (QEMU's `page_collection_lock`, counted with a perf
//! uprobe, during `bench wakeup-latency` and `hackbench` + `cyclic`, BIOS and UEFI boots).

use crate::sync::IrqLock;
use bootloader_api::info::{MemoryRegionKind, MemoryRegions};

pub const FRAME_SIZE: u64 = 4096;
const LOW_MEMORY_END: u64 = 0x10_0000;

struct Bitmap {
    bits: &'static mut [u64],
    frames: u64,
    free: u64,
    next: u64,
}

impl Bitmap {
    fn is_used(&self, f: u64) -> bool {
        self.bits[(f / 64) as usize] & (1 << (f % 64)) != 0
    }
    fn set_used(&mut self, f: u64) {
        if !self.is_used(f) {
            self.bits[(f / 64) as usize] |= 1 << (f % 64);
            self.free -= 1;
        }
    }
    fn set_free(&mut self, f: u64) {
        if self.is_used(f) {
            self.bits[(f / 64) as usize] &= !(1 << (f % 64));
            self.free += 1;
        }
    }
}

static FRAMES: IrqLock<Option<Bitmap>> = IrqLock::new(None);
/// Usable low (< 1 MiB) pages, remembered for `take_low_page`.
static LOW_PAGES: IrqLock<[u64; 8]> = IrqLock::new([0; 8]);

/// Builds the allocator from the memory map. Returns (usable bytes, total frames).
pub fn init(regions: &MemoryRegions, phys_offset: u64) -> (u64, u64) {
    let max_phys = regions
        .iter()
        .filter(|r| r.kind == MemoryRegionKind::Usable)
        .map(|r| r.end)
        .max()
        .unwrap_or(0);
    let frames = max_phys / FRAME_SIZE;
    let words = frames.div_ceil(64);
    let bitmap_bytes = (words * 8).div_ceil(FRAME_SIZE) * FRAME_SIZE;
    // Put the bitmap in the first usable region above 1 MiB that can hold it.
    let home = regions
        .iter()
        .filter(|r| r.kind == MemoryRegionKind::Usable)
        .map(|r| (r.start.max(LOW_MEMORY_END).next_multiple_of(FRAME_SIZE), r.end))
        .find(|&(s, e)| e > s && e - s >= bitmap_bytes)
        .map(|(s, _)| s)
        .expect("no usable memory region can hold the frame bitmap");
    // SAFETY: `home..home+bitmap_bytes` is usable RAM (from the memory map) that nothing else
    // owns yet; it is reachable through the physical-memory mapping, and becomes the bitmap's
    // exclusively (marked used below).
    let bits = unsafe { core::slice::from_raw_parts_mut((phys_offset + home) as *mut u64, words as usize) };
    bits.fill(u64::MAX);
    // Every bit starts set (used); usable frames are freed below.
    let mut map = Bitmap { bits, frames, free: 0, next: LOW_MEMORY_END / FRAME_SIZE };
    let mut usable = 0;
    let mut low = [0u64; 8];
    let mut nlow = 0;
    for r in regions.iter().filter(|r| r.kind == MemoryRegionKind::Usable) {
        let start = r.start.next_multiple_of(FRAME_SIZE);
        let mut f = start / FRAME_SIZE;
        while (f + 1) * FRAME_SIZE <= r.end {
            let addr = f * FRAME_SIZE;
            usable += FRAME_SIZE;
            if addr >= LOW_MEMORY_END {
                map.set_free(f);
            } else if addr != 0 && nlow < low.len() {
                low[nlow] = addr;
                nlow += 1;
            }
            f += 1;
        }
    }
    for f in home / FRAME_SIZE..(home + bitmap_bytes) / FRAME_SIZE {
        map.set_used(f);
    }
    *LOW_PAGES.lock() = low;
    *FRAMES.lock() = Some(map);
    (usable, frames)
}

/// Allocates one zeroed frame; returns its physical address.
pub fn alloc() -> Option<u64> {
    let phys = alloc_dirty()?;
    // SAFETY: just allocated, ours alone (done outside the allocator's lock).
    unsafe { zero(phys, 1) };
    Some(phys)
}

/// One frame, as it was left (see [`alloc`]).
fn alloc_dirty() -> Option<u64> {
    let mut guard = FRAMES.lock();
    let map = guard.as_mut()?;
    if map.free == 0 {
        return None;
    }
    for i in 0..map.frames {
        let f = (map.next + i) % map.frames;
        if !map.is_used(f) {
            map.set_used(f);
            map.next = f + 1;
            return Some(f * FRAME_SIZE);
        }
    }
    None
}

/// Zeroes `n` frames from `phys`.
///
/// # Safety
/// The frames must be the caller's alone (just allocated, nothing referring to their contents).
unsafe fn zero(phys: u64, n: u64) {
    // SAFETY: the frames are the caller's (the contract above); all of physical memory is
    // mapped writable at `phys_to_virt`.
    unsafe { core::ptr::write_bytes(super::phys_to_virt(phys) as *mut u8, 0, (n * FRAME_SIZE) as usize) };
}

/// Allocates `n` physically contiguous frames, *not* zeroed; returns the first one's address.
pub fn alloc_contiguous(n: u64) -> Option<u64> {
    let mut guard = FRAMES.lock();
    let map = guard.as_mut()?;
    let mut run = 0;
    for f in LOW_MEMORY_END / FRAME_SIZE..map.frames {
        if map.is_used(f) {
            run = 0;
            continue;
        }
        run += 1;
        if run == n {
            let first = f + 1 - n;
            for g in first..=f {
                map.set_used(g);
            }
            return Some(first * FRAME_SIZE);
        }
    }
    None
}

/// Returns a frame to the allocator.
pub fn free(phys: u64) {
    if let Some(map) = FRAMES.lock().as_mut() {
        let f = phys / FRAME_SIZE;
        if f < map.frames && phys >= LOW_MEMORY_END {
            map.set_free(f);
        }
    }
}

/// Number of free frames.
pub fn free_frames() -> u64 {
    FRAMES.lock().as_ref().map(|m| m.free).unwrap_or(0)
}

/// Takes the highest usable page below 1 MiB (for the real-mode SMP trampoline).
pub fn take_low_page() -> Option<u64> {
    let mut low = LOW_PAGES.lock();
    let (i, addr) = low.iter().enumerate().filter(|(_, &a)| a != 0 && a < 0xa_0000).max_by_key(|(_, &a)| a)?;
    let addr = *addr;
    low[i] = 0;
    Some(addr)
}

/// Adapter so the `x86_64` crate's mapper can take page-table frames from us.
pub struct PageTableFrames;

/// Frames ever given out as page tables. Page tables are kept when their pages are unmapped
/// (the stack region reuses them), so leak checks compare `free_frames() + page_table_frames()`.
static PAGE_TABLE_FRAMES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

pub fn page_table_frames() -> u64 {
    PAGE_TABLE_FRAMES.load(core::sync::atomic::Ordering::Relaxed)
}

// SAFETY: `alloc` only returns frames that are unused and marked used before being returned.
unsafe impl x86_64::structures::paging::FrameAllocator<x86_64::structures::paging::Size4KiB> for PageTableFrames {
    fn allocate_frame(&mut self) -> Option<x86_64::structures::paging::PhysFrame> {
        // Page tables must start zeroed: `alloc` zeroes.
        let phys = alloc()?;
        PAGE_TABLE_FRAMES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        Some(x86_64::structures::paging::PhysFrame::containing_address(x86_64::PhysAddr::new(phys)))
    }
}

#[cfg(test)]
mod tests {
    #[test_case]
    fn alloc_returns_zeroed_frames() {
        // Dirty a frame, give it back, and check that every frame handed out after it is zero
        // (the allocator moves on, so take frames until the dirtied one comes back or 64 went).
        let dirty = super::alloc().expect("frame");
        let view = |f: u64| crate::mm::phys_to_virt(f) as *mut u64;
        // SAFETY: `dirty` is ours until freed; it is mapped writable at `phys_to_virt`.
        unsafe { core::ptr::write_bytes(view(dirty) as *mut u8, 0xa5, super::FRAME_SIZE as usize) };
        super::free(dirty);
        let mut taken = alloc::vec::Vec::new();
        for _ in 0..64 {
            let f = super::alloc().expect("frame");
            // SAFETY: `f` was just allocated to us; 512 words fill the frame.
            let words = unsafe { core::slice::from_raw_parts(view(f), 512) };
            assert!(words.iter().all(|&w| w == 0), "frame {:#x} handed out dirty", f);
            taken.push(f);
            if f == dirty {
                break;
            }
        }
        taken.into_iter().for_each(super::free);
    }

    #[test_case]
    fn alloc_free_restores_count() {
        let before = super::free_frames();
        let a = super::alloc().expect("frame");
        let b = super::alloc().expect("frame");
        assert_ne!(a, b);
        assert_eq!(a % super::FRAME_SIZE, 0);
        assert_eq!(super::free_frames(), before - 2);
        super::free(a);
        super::free(b);
        super::free(b); // double free is ignored, not corrupting the count
        assert_eq!(super::free_frames(), before);
    }

    #[test_case]
    fn contiguous_allocation() {
        let before = super::free_frames();
        let p = super::alloc_contiguous(16).expect("16 contiguous frames");
        assert_eq!(super::free_frames(), before - 16);
        for i in 0..16 {
            super::free(p + i * super::FRAME_SIZE);
        }
        assert_eq!(super::free_frames(), before);
    }
}
