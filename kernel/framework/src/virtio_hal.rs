//! The `virtio-drivers` crate's [`Hal`] for Cadence: DMA memory from the frame allocator
//! (physically contiguous frames, reached through the physical-memory mapping), buffer
//! addresses through the page tables, and BAR MMIO through the physical-memory mapping when the
//! bootloader's mapping covers it (the first 4 GiB at least, where SeaBIOS puts QEMU's BARs),
//! else through fresh uncached mappings in [`MMIO_WINDOW`] (OVMF places 64-bit BARs high).
//!
//! No IOMMU. `share` hands the device a buffer's own physical address when the buffer lies in
//! the physical-memory mapping (heap memory, the drivers' DMA pages); anything else (a buffer
//! on a kernel stack, which `mm::stack` maps from separately allocated frames, or any other
//! mapping) is copied into a bounce page, and `unshare` copies it back (device-to-driver) and
//! frees the page. The crate's blocking requests (`flush`) keep their request header and
//! status byte on the caller's stack, so without bouncing a header that straddled a page
//! boundary between two unrelated frames would be handed to the device as one range. Bounce
//! pages for buffers of at most a page come from a small pool filled at probe time
//! ([`reserve_bounce`]), so no request allocates; larger ones are allocated (and the kernel
//! panics if no frames are left: the `Hal` contract has no error path for `share`).

use crate::mm::{self, frame, paging};
use crate::sync::IrqLock;
use arrayvec::ArrayVec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use virtio_drivers::{BufferDirection, Hal, PhysAddr};
use x86_64::structures::paging::PageTableFlags;

const PAGE: u64 = frame::FRAME_SIZE;

/// Start of the virtual region for BARs outside the physical-memory mapping: a level-4 entry
/// of its own, above the stack region (`mm::stack`, `0xffff_c000_0000_0000`).
pub const MMIO_WINDOW: u64 = 0xffff_e000_0000_0000;
/// Size of that region (never reused: devices are probed once).
const MMIO_WINDOW_SIZE: u64 = 1 << 30;
static MMIO_NEXT: AtomicU64 = AtomicU64::new(MMIO_WINDOW);

/// BARs mapped in the window: (physical start, length, virtual start).
static WINDOW_MAPS: IrqLock<ArrayVec<(u64, u64, u64), 12>> = IrqLock::new(ArrayVec::new_const());

/// The kernel's [`Hal`] (a unit type: all its state is the kernel's allocators).
pub struct KernelHal;

/// The physical address of `len` bytes at `virt` if they all lie in the physical-memory
/// mapping (then they are physically contiguous too); `None` otherwise (a kernel stack, the
/// MMIO window, anything unmapped).
fn direct_phys(virt: u64, len: usize) -> Option<PhysAddr> {
    let phys = virt.checked_sub(mm::phys_offset())?;
    let end = virt.checked_add(len.max(1) as u64)?;
    let mut page = virt & !(PAGE - 1);
    while page < end {
        if paging::translate(page) != Some(page - mm::phys_offset()) {
            return None;
        }
        page += PAGE;
    }
    Some(phys)
}

/// Single bounce pages for small buffers (see the module doc), taken by `share` and given back
/// by `unshare`.
const BOUNCE_POOL: usize = 4;
static BOUNCE: IrqLock<ArrayVec<u64, BOUNCE_POOL>> = IrqLock::new(ArrayVec::new_const());
/// Buffers `share` had to bounce (`blk info` does not show it; for tests).
static BOUNCED: AtomicU64 = AtomicU64::new(0);

/// Fills the bounce pool (task context, at probe time). Returns whether it is full.
pub fn reserve_bounce() -> bool {
    loop {
        if BOUNCE.lock().is_full() {
            return true;
        }
        let Some(frame) = frame::alloc() else { return false };
        if let Err(e) = BOUNCE.lock().try_push(frame) {
            frame::free(e.element());
            return true;
        }
    }
}

/// How many buffers `share` has copied into bounce pages since boot.
pub fn bounced() -> u64 {
    BOUNCED.load(Ordering::Relaxed)
}

/// Physically contiguous frames for a bounce copy of `len` bytes.
fn bounce_alloc(len: usize) -> PhysAddr {
    let pages = (len.max(1) as u64).div_ceil(PAGE);
    let pooled = if pages == 1 { BOUNCE.lock().pop() } else { None };
    pooled.or_else(|| frame::alloc_contiguous(pages)).expect("virtio: no frames for a DMA bounce buffer")
}

fn bounce_free(phys: PhysAddr, len: usize) {
    let pages = (len.max(1) as u64).div_ceil(PAGE);
    if pages == 1 {
        if let Err(e) = BOUNCE.lock().try_push(phys) {
            frame::free(e.element());
        }
        return;
    }
    for i in 0..pages {
        frame::free(phys + i * PAGE);
    }
}

/// Is every page of `[paddr, paddr + size)` mapped at `phys_to_virt` by the physical mapping?
fn in_physical_mapping(paddr: u64, size: u64) -> bool {
    let mut page = paddr & !(PAGE - 1);
    while page < paddr + size.max(1) {
        if paging::translate(mm::phys_to_virt(page)) != Some(page) {
            return false;
        }
        page += PAGE;
    }
    true
}

/// Where `[paddr, paddr + size)` is mapped, if it is: in the physical mapping or in a BAR that
/// [`map_bar`] put in the window.
fn mmio_virt(paddr: u64, size: u64) -> Option<u64> {
    let in_window = WINDOW_MAPS.lock().iter().find(|&&(p, l, _)| paddr >= p && paddr + size <= p + l).map(|&(p, _, v)| v + (paddr - p));
    in_window.or_else(|| in_physical_mapping(paddr, size).then(|| mm::phys_to_virt(paddr)))
}

/// How many BARs were mapped in [`MMIO_WINDOW`] (outside the physical mapping).
pub fn window_mapped() -> usize {
    WINDOW_MAPS.lock().len()
}

/// Makes the memory BAR `[paddr, paddr + size)` reachable: nothing to do inside the physical
/// mapping, else an uncached mapping in [`MMIO_WINDOW`]. Call from task context (page tables
/// may need frames). `None`: the window is full or taken, or no frames for page tables.
pub fn map_bar(paddr: u64, size: u64) -> Option<u64> {
    if let Some(v) = mmio_virt(paddr, size) {
        return Some(v);
    }
    let first = paddr & !(PAGE - 1);
    let pages = (paddr + size.max(1) - first).div_ceil(PAGE);
    if MMIO_NEXT.load(Ordering::Relaxed) == MMIO_WINDOW && !paging::l4_entry_unused(MMIO_WINDOW) {
        return None;
    }
    let base = MMIO_NEXT.fetch_add(pages * PAGE, Ordering::Relaxed);
    if base + pages * PAGE > MMIO_WINDOW + MMIO_WINDOW_SIZE {
        return None;
    }
    let flags = PageTableFlags::WRITABLE | PageTableFlags::NO_CACHE | PageTableFlags::WRITE_THROUGH;
    for i in 0..pages {
        paging::map_page(base + i * PAGE, first + i * PAGE, flags).ok()?;
    }
    let virt = base + (paddr - first);
    WINDOW_MAPS.lock().try_push((paddr, size, virt)).ok()?;
    Some(virt)
}

// SAFETY: `dma_alloc` hands out frames that the frame allocator marked used for this caller
// alone, zeroed, page-aligned and mapped at `phys_to_virt`; `mmio_phys_to_virt` returns a
// mapping of exactly the requested device region; `share` returns the physical address the
// buffer is mapped at (no IOMMU, so the device sees that address) when that is one contiguous
// range of the physical mapping, else that of a bounce copy the device alone uses until
// `unshare` copies it back and frees it.
unsafe impl Hal for KernelHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let Some(phys) = frame::alloc_contiguous(pages as u64) else {
            // paddr 0 is how the crate's `Dma::new` recognises a failure (`Error::DmaError`).
            return (0, NonNull::dangling());
        };
        let virt = mm::phys_to_virt(phys) as *mut u8;
        // SAFETY: the frames were just allocated for us alone and are mapped writable through
        // the physical-memory mapping; `alloc_contiguous` does not zero, the contract wants it.
        unsafe { core::ptr::write_bytes(virt, 0, pages * PAGE as usize) };
        (phys, NonNull::new(virt).expect("the physical mapping is not at address 0"))
    }

    /// # Safety
    /// As the trait says: `paddr` and `pages` come from one `dma_alloc` not yet deallocated.
    unsafe fn dma_dealloc(paddr: PhysAddr, _vaddr: NonNull<u8>, pages: usize) -> i32 {
        for i in 0..pages as u64 {
            frame::free(paddr + i * PAGE);
        }
        0
    }

    /// # Safety
    /// As the trait says: `paddr` and `size` describe a device's MMIO region (a BAR's part).
    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, size: usize) -> NonNull<u8> {
        // The probe maps every memory BAR first (`map_bar`), so this only looks up.
        let virt = mmio_virt(paddr, size as u64).expect("virtio: a BAR region the probe did not map");
        NonNull::new(virt as *mut u8).expect("MMIO mappings are not at address 0")
    }

    /// # Safety
    /// As the trait says: `buffer` is valid and not accessed by others during the call.
    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        let (virt, len) = (buffer.as_ptr() as *mut u8 as u64, buffer.len());
        if let Some(phys) = direct_phys(virt, len) {
            return phys;
        }
        let phys = bounce_alloc(len);
        BOUNCED.fetch_add(1, Ordering::Relaxed);
        let copy = mm::phys_to_virt(phys) as *mut u8;
        // SAFETY: `copy` is `len` bytes (or more) of frames just taken for this buffer alone,
        // mapped writable at `phys_to_virt`; `buffer` is valid for `len` bytes (the caller's
        // contract) and cannot overlap frames that were free.
        unsafe {
            if direction == BufferDirection::DeviceToDriver {
                core::ptr::write_bytes(copy, 0, len);
            } else {
                core::ptr::copy_nonoverlapping(virt as *const u8, copy, len);
            }
        }
        phys
    }

    /// # Safety
    /// As the trait says: `paddr` is what `share` returned for this `buffer`.
    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, direction: BufferDirection) {
        let (virt, len) = (buffer.as_ptr() as *mut u8 as u64, buffer.len());
        if direct_phys(virt, len) == Some(paddr) {
            return;
        }
        // A bounce copy (a direct share returns the buffer's own address, which no bounce
        // frame can have while the buffer's frame is in use).
        if direction != BufferDirection::DriverToDevice {
            // SAFETY: `paddr` is the bounce copy `share` made of `len` bytes, no longer used by
            // the device (the crate unshares after popping the used entry); `buffer` is valid
            // for `len` bytes and not otherwise accessed during the call (the contract).
            unsafe { core::ptr::copy_nonoverlapping(mm::phys_to_virt(paddr) as *const u8, virt as *mut u8, len) };
        }
        bounce_free(paddr, len);
    }
}

/// Physically contiguous DMA pages owned by a driver (the crate's own `Dma` is private):
/// allocated zeroed with [`KernelHal::dma_alloc`], returned to the frame allocator on drop.
pub struct DmaPages {
    phys: PhysAddr,
    virt: NonNull<u8>,
    pages: usize,
}

// SAFETY: the pages are plain memory owned by this value; any access through `ptr` is the
// owner's, under whatever lock the owner holds.
unsafe impl Send for DmaPages {}

impl DmaPages {
    /// `pages` zeroed pages; `None` without contiguous memory.
    pub fn new(pages: usize) -> Option<Self> {
        let (phys, virt) = KernelHal::dma_alloc(pages, BufferDirection::Both);
        (phys != 0).then_some(DmaPages { phys, virt, pages })
    }

    /// Pointer to byte `offset`.
    pub fn ptr(&self, offset: usize) -> *mut u8 {
        assert!(offset < self.pages * PAGE as usize);
        // SAFETY: `offset` is inside the allocation (checked above).
        unsafe { self.virt.as_ptr().add(offset) }
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.pages * PAGE as usize
    }

    /// Whether it holds no page.
    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }
}

impl Drop for DmaPages {
    fn drop(&mut self) {
        // SAFETY: `phys`, `virt` and `pages` are what `dma_alloc` returned, deallocated once.
        unsafe { KernelHal::dma_dealloc(self.phys, self.virt, self.pages) };
    }
}
