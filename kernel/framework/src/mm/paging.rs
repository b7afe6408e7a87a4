//! Page-table helpers over the bootloader's page tables (the kernel's address space, shared
//! by all CPUs), using the `x86_64` crate's `OffsetPageTable` on the physical-memory mapping.
//!
//! The kernel half (level-4 entries 256–511) is shared by every user address space
//! ([`super::vm::VmSpace`] copies those entries): [`share_kernel_half`] gives each of them a
//! level-3 table at boot, so a kernel mapping made later lands in a table every address space
//! already points at. All modifications go through `PAGE_TABLES` (an [`IrqLock`]), so two CPUs never edit the
//! tables at once. Unmapping flushes the local TLB entry; the caller is responsible for remote
//! CPUs (see `stack`, whose slots are only touched by their owner).

use crate::sync::IrqLock;
use core::sync::atomic::{AtomicU64, Ordering};
use x86_64::registers::control::Cr3;
use x86_64::structures::paging::mapper::{MapToError, UnmapError};
use x86_64::structures::paging::{Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame, Size4KiB, Translate};
use x86_64::{PhysAddr, VirtAddr};

static PAGE_TABLES: IrqLock<()> = IrqLock::new(());
/// The kernel's level-4 table (the bootloader's), recorded by [`share_kernel_half`].
static KERNEL_ROOT: AtomicU64 = AtomicU64::new(0);
/// Level-4 entries the bootloader had used (bit per entry 256–511), before
/// [`share_kernel_half`] filled the rest.
static BOOT_USED: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// The kernel's level-4 table's physical address (what CR3 holds for kernel tasks).
pub fn kernel_root() -> u64 {
    match KERNEL_ROOT.load(Ordering::Relaxed) {
        0 => Cr3::read().0.start_address().as_u64(),
        root => root,
    }
}

/// Gives every kernel-half level-4 entry a level-3 table (module doc) and records the kernel's
/// root. Once, at boot, after the regions that check for unused entries (`stack::init`) and
/// before the first address space. Returns the frames it took; `None` if out of frames.
pub fn share_kernel_half() -> Option<u64> {
    let _guard = PAGE_TABLES.lock();
    let root = Cr3::read().0.start_address().as_u64();
    // SAFETY: CR3's table is mapped through the physical-memory mapping; the lock makes this
    // the only editor.
    let l4 = unsafe { &mut *(super::phys_to_virt(root) as *mut PageTable) };
    let mut taken = 0;
    for i in 256..512 {
        if !l4[i].is_unused() {
            BOOT_USED[(i - 256) / 64].fetch_or(1 << ((i - 256) % 64), Ordering::Relaxed);
            continue;
        }
        let frame = super::frame::alloc()?;
        super::frame::count_page_table();
        l4[i].set_addr(PhysAddr::new(frame), PageTableFlags::PRESENT | PageTableFlags::WRITABLE);
        taken += 1;
    }
    KERNEL_ROOT.store(root, Ordering::Relaxed);
    Some(taken)
}

/// Errors from the mapping helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    /// No frame for a page table the mapping needs (the caller's watermark refused it).
    OutOfFrames,
    /// The page is already mapped.
    AlreadyMapped,
    /// The page is not mapped.
    NotMapped,
    /// A huge page already covers the address: no 4 KiB page can go there.
    HugePage,
}

fn with_mapper<R>(f: impl FnOnce(&mut OffsetPageTable<'static>) -> R) -> R {
    let _guard = PAGE_TABLES.lock();
    let l4_virt = super::phys_to_virt(kernel_root());
    // SAFETY: the kernel's level-4 table is mapped at `phys_offset + phys` by the bootloader's
    // physical-memory mapping; the PAGE_TABLES lock gives us exclusive access for the duration.
    let table = unsafe { &mut *(l4_virt as *mut PageTable) };
    // SAFETY: the whole of physical memory is mapped at `phys_offset`.
    let mut mapper = unsafe { OffsetPageTable::new(table, VirtAddr::new(super::phys_offset())) };
    f(&mut mapper)
}

/// Maps the 4 KiB page at `virt` to the frame at `phys` with `flags` (PRESENT is implied).
pub fn map_page(virt: u64, phys: u64, flags: PageTableFlags) -> Result<(), MapError> {
    // The caller's allocation context, read before the lock turns interrupts off (a task's
    // page tables must not dip into the atomic reserve).
    let mut tables = super::frame::PageTableFrames::for_caller();
    with_mapper(|m| {
        let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt));
        let frame = PhysFrame::containing_address(PhysAddr::new(phys));
        // SAFETY: callers map frames they own (fresh frames, or device/trampoline pages they
        // reserved) at addresses in regions they own; nothing aliases them unsafely.
        let res = unsafe { m.map_to(page, frame, flags | PageTableFlags::PRESENT, &mut tables) };
        match res {
            Ok(flush) => {
                flush.flush();
                Ok(())
            }
            Err(MapToError::FrameAllocationFailed) => Err(MapError::OutOfFrames),
            Err(MapToError::PageAlreadyMapped(_)) => Err(MapError::AlreadyMapped),
            Err(MapToError::ParentEntryHugePage) => Err(MapError::HugePage),
        }
    })
}

/// Unmaps the page at `virt`; returns the physical frame it mapped.
pub fn unmap_page(virt: u64) -> Result<u64, MapError> {
    with_mapper(|m| {
        let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt));
        match m.unmap(page) {
            Ok((frame, flush)) => {
                flush.flush();
                Ok(frame.start_address().as_u64())
            }
            Err(UnmapError::ParentEntryHugePage) => Err(MapError::HugePage),
            Err(_) => Err(MapError::NotMapped),
        }
    })
}

/// Physical address `virt` maps to, if any.
pub fn translate(virt: u64) -> Option<u64> {
    with_mapper(|m| m.translate_addr(VirtAddr::new(virt)).map(|p| p.as_u64()))
}

/// Was the level-4 entry covering `virt` unused by the bootloader? (Checks that a region we
/// claim is free; after [`share_kernel_half`] every kernel-half entry has a table, so this
/// answers for the boot-time tables.)
pub fn l4_entry_unused(virt: u64) -> bool {
    let i = usize::from(VirtAddr::new(virt).p4_index());
    if KERNEL_ROOT.load(Ordering::Relaxed) != 0 && i >= 256 {
        return BOOT_USED[(i - 256) / 64].load(Ordering::Relaxed) & (1 << ((i - 256) % 64)) == 0;
    }
    with_mapper(|m| m.level_4_table()[VirtAddr::new(virt).p4_index()].is_unused())
}

/// Identity-maps the page at `phys` (used for the SMP trampoline, which runs with paging on at
/// its physical address).
pub fn identity_map(phys: u64) -> Result<(), MapError> {
    match map_page(phys, phys, PageTableFlags::WRITABLE) {
        Err(MapError::AlreadyMapped) if translate(phys) == Some(phys) => Ok(()),
        other => other,
    }
}
