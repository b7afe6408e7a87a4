//! Guarded kernel stacks.
//!
//! The stack region starts at [`STACK_REGION`]; it is carved into [`SLOT_SIZE`] slots. A stack
//! of `size` bytes occupies the top of its slot; the rest of the slot below it stays unmapped,
//! so running off the bottom faults on a guard page (reported by the double-fault handler on its
//! IST stack) instead of corrupting a neighbour.
//!
//! Freeing is deferred, because other CPUs may still cache translations of a dead task's stack
//! (it may have run anywhere): a dropped stack goes to a cache of still-mapped stacks that
//! [`KernelStack::allocate`] reuses as is (same mapping: no TLB hazard). [`reclaim`] empties the
//! cache: it unmaps the pages and frees their frames, then flushes every CPU's TLB
//! (`mm::tlb::shootdown_all`) and only then lets the slots be reused.
//! [`reclaim_if_needed`] does that when more than [`CACHE_LIMIT`] stacks are cached.

use crate::sync::IrqLock;
use alloc::vec::Vec;
use x86_64::structures::paging::PageTableFlags;

/// Virtual start of the stack region (level-4 entry 384, which [`init`] checks is unused).
pub const STACK_REGION: u64 = 0xffff_c000_0000_0000;
/// Virtual size of one stack slot in bytes (256 KiB): the stack at its top, unmapped guard below.
pub const SLOT_SIZE: u64 = 256 * 1024;
const PAGE: u64 = 4096;

struct Slots {
    next: u64,
    free: Vec<u64>,
    /// Dropped stacks, still mapped: (base, size). Its spare capacity is kept at least `live`
    /// (reserved by `allocate`), because a stack is dropped where interrupts are off (a dead
    /// task's, in `finish_task_switch`) and must not allocate there.
    cached: Vec<(u64, u64)>,
    /// Stacks handed out and not dropped yet.
    live: usize,
}

static SLOTS: IrqLock<Slots> = IrqLock::new(Slots { next: STACK_REGION, free: Vec::new(), cached: Vec::new(), live: 0 });

/// Cached stacks kept mapped before `reclaim_if_needed` unmaps them.
pub const CACHE_LIMIT: usize = 64;

/// A mapped kernel stack with an unmapped guard below it; on drop it joins the cache of mapped
/// stacks (any context, allocates nothing), unmapped later by [`reclaim`].
#[derive(Debug)]
pub struct KernelStack {
    base: u64,
    size: u64,
}

/// Why a stack could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackError {
    /// The size is 0 or larger than a slot minus its guard page ([`SLOT_SIZE`] − 4 KiB).
    TooLarge,
    /// No frame or page table was left, or failure injection (site `kernel_stack`) refused.
    OutOfMemory,
}

/// Checks that the stack region is ours (its level-4 entry is unused at boot).
pub fn init() -> bool {
    super::paging::l4_entry_unused(STACK_REGION)
}

impl KernelStack {
    /// Maps a stack of `size` bytes (rounded up to pages; at most one slot minus a guard page).
    pub fn allocate(size: usize) -> Result<Self, StackError> {
        let size = (size as u64).next_multiple_of(PAGE);
        if size == 0 || size > SLOT_SIZE - PAGE {
            return Err(StackError::TooLarge);
        }
        if super::fail_alloc::should_fail("kernel_stack") {
            return Err(StackError::OutOfMemory);
        }
        let slot = {
            // Room in `cached` for every live stack, this one included (see `Slots::cached`).
            let live = SLOTS.lock().live + 1;
            let mut slots = crate::sync::lock_with_room(&SLOTS, live, |s| &mut s.cached);
            if let Some(i) = slots.cached.iter().position(|&(_, s)| s == size) {
                let (base, size) = slots.cached.swap_remove(i);
                slots.live += 1;
                return Ok(KernelStack { base, size });
            }
            slots.live += 1;
            match slots.free.pop() {
                Some(s) => s,
                None => {
                    let s = slots.next;
                    slots.next += SLOT_SIZE;
                    s
                }
            }
        };
        let base = slot + SLOT_SIZE - size;
        let stack = KernelStack { base, size: 0 };
        let mut stack = stack;
        for page in (base..base + size).step_by(PAGE as usize) {
            let Some(frame) = super::frame::alloc() else {
                return Err(StackError::OutOfMemory); // drop unmaps what was mapped so far
            };
            if super::paging::map_page(page, frame, PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE).is_err() {
                super::frame::free(frame);
                return Err(StackError::OutOfMemory);
            }
            stack.size += PAGE;
        }
        Ok(stack)
    }

    /// Highest address (exclusive): the initial stack pointer.
    pub fn top(&self) -> u64 {
        self.base + self.size
    }

    /// Lowest mapped address.
    pub fn bottom(&self) -> u64 {
        self.base
    }

    /// Mapped size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        let mut slots = SLOTS.lock();
        slots.live = slots.live.saturating_sub(1);
        slots.cached.push((self.base, self.size)); // within the room `allocate` reserved
    }
}

fn unmap(base: u64, size: u64) {
    for page in (base..base + size).step_by(PAGE as usize) {
        if let Ok(frame) = super::paging::unmap_page(page) {
            super::frame::free(frame);
        }
    }
}

/// Unmaps every cached stack, frees its frames and, after a TLB shootdown on all CPUs, makes
/// its slot reusable. Returns how many stacks were reclaimed.
pub fn reclaim() -> usize {
    // Swap in an empty list as large as the old one (allocated unlocked), so the room
    // reserved for live stacks stays (see `Slots::cached`).
    let cached = loop {
        let cap = SLOTS.lock().cached.capacity();
        let mut list = Vec::with_capacity(cap);
        let mut slots = SLOTS.lock();
        if list.capacity() >= slots.cached.capacity() {
            core::mem::swap(&mut slots.cached, &mut list);
            break list;
        }
    };
    for &(base, size) in &cached {
        unmap(base, size);
    }
    let smp = crate::percpu::online_cpus().count() > 1;
    if smp && !crate::mm::tlb::shootdown_all() {
        // Some CPU may still see the old pages: never hand these slots out again.
        return cached.len();
    }
    let mut slots = crate::sync::lock_with_room(&SLOTS, cached.len(), |s| &mut s.free);
    for &(base, _) in &cached {
        slots.free.push(base - (base - STACK_REGION) % SLOT_SIZE);
    }
    cached.len()
}

/// Reclaims when the cache is over its limit and this context may wait for other CPUs.
pub fn reclaim_if_needed() {
    if SLOTS.lock().cached.len() > CACHE_LIMIT && x86_64::instructions::interrupts::are_enabled() {
        reclaim();
    }
}

/// Heap bytes the slot lists reserve (they keep their peak capacity).
pub fn list_bytes() -> usize {
    let s = SLOTS.lock();
    s.free.capacity() * core::mem::size_of::<u64>() + s.cached.capacity() * core::mem::size_of::<(u64, u64)>()
}

/// Slots the region has handed out at its peak (its extent). The region's page tables stay
/// once made, as Linux's vmalloc page tables do: one frame per 8 slots (a level-1 table, 2
/// MiB) and one per 4096 (a level-2 table, 1 GiB). Tests that compare free memory before and
/// after a burst of tasks discount their growth.
pub fn region_slots() -> u64 {
    (SLOTS.lock().next - STACK_REGION) / SLOT_SIZE
}

/// Stacks currently cached (dropped but still mapped).
pub fn cached() -> usize {
    SLOTS.lock().cached.len()
}
