//! Memory management: physical frames ([`frame`]), the kernel heap ([`heap`]), page-table
//! helpers over the bootloader's physical-memory mapping ([`paging`]), reference-counted user
//! frames ([`page`]) and user address spaces with their copies ([`vm`]), guarded kernel stacks
//! ([`stack`]) and their TLB shootdown ([`tlb`]), the atomic-allocation detector
//! ([`atomic_alloc`]) and failure injection ([`fail_alloc`]). The disk's page cache, writeback
//! and reclaim are the kernel's block layer (`kernel/src/block`), built on these.
//!
//! Address-space layout (48-bit canonical):
//! - lower half: in the kernel's own table, empty except the identity-mapped SMP trampoline
//!   page (< 1 MiB); in each process's table ([`vm::VmSpace`]), its user mappings;
//! - `0xffff_8000_0000_0000..0xffff_a000_0000_0000`: bootloader's dynamic range (kernel image,
//!   boot info, the physical-memory mapping at `phys_offset`);
//! - `0xffff_c000_0000_0000..`: kernel stacks, one slot each with an unmapped guard below.

pub mod atomic_alloc;
pub mod fail_alloc;
pub mod frame;
pub mod heap;
pub mod page;
pub mod paging;
pub mod stack;
pub mod tlb;
pub mod vm;

use core::sync::atomic::{AtomicU64, Ordering};

static PHYS_OFFSET: AtomicU64 = AtomicU64::new(0);

/// Virtual address at which physical address 0 is mapped.
pub fn phys_offset() -> u64 {
    PHYS_OFFSET.load(Ordering::Relaxed)
}

/// Kernel virtual address of a physical address (through the physical-memory mapping).
pub fn phys_to_virt(phys: u64) -> u64 {
    phys_offset() + phys
}

/// Records where the bootloader mapped physical memory (once, first thing at boot).
pub fn set_phys_offset(offset: u64) {
    PHYS_OFFSET.store(offset, Ordering::Relaxed);
}

/// Prepares user memory once the heap and the kernel's own regions exist: the frames'
/// reference counts ([`page::init`], for frames below `max_phys`) and the shared kernel half
/// ([`paging::share_kernel_half`]). Returns false if out of memory.
pub fn init_user_memory(max_phys: u64) -> bool {
    page::init(max_phys);
    paging::share_kernel_half().is_some()
}
