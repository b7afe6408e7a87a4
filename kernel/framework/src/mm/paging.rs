//! Page-table helpers over the bootloader's page tables (one address space, shared by all
//! CPUs), using the `x86_64` crate's `OffsetPageTable` on the physical-memory mapping.
//!
//! All modifications go through `PAGE_TABLES` (an [`IrqLock`]), so two CPUs never edit the
//! tables at once. Unmapping flushes the local TLB entry; the caller is responsible for remote
//! CPUs (see `stack`, whose slots are only touched by their owner).

use crate::sync::IrqLock;
use x86_64::registers::control::Cr3;
use x86_64::structures::paging::mapper::{MapToError, UnmapError};
use x86_64::structures::paging::{Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame, Size4KiB, Translate};
use x86_64::{PhysAddr, VirtAddr};

static PAGE_TABLES: IrqLock<()> = IrqLock::new(());

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
    let (l4, _) = Cr3::read();
    let l4_virt = super::phys_to_virt(l4.start_address().as_u64());
    // SAFETY: CR3's level-4 table is mapped at `phys_offset + phys` by the bootloader's
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

/// Is the level-4 entry covering `virt` unused? (Checks that a region we claim is free.)
pub fn l4_entry_unused(virt: u64) -> bool {
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
