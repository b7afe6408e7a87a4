//! The kernel heap: `linked_list_allocator` over one physically contiguous run of frames,
//! addressed through the physical-memory mapping (no page-table work needed). The allocator is
//! behind an [`IrqLock`] so interrupt handlers may allocate.

use crate::sync::IrqLock;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use linked_list_allocator::Heap;

pub struct KernelHeap(IrqLock<Heap>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(IrqLock::new(Heap::empty()));

// SAFETY: allocation and deallocation are serialised by the lock and delegate to
// linked_list_allocator, which returns blocks satisfying `layout` or null.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0.lock().allocate_first_fit(layout).map(|p| p.as_ptr()).unwrap_or(core::ptr::null_mut())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with this `layout`.
            unsafe { self.0.lock().deallocate(p, layout) }
        }
    }
}

/// Gives the heap `size` bytes of contiguous physical memory. Returns the heap's size.
pub fn init(size: u64) -> u64 {
    let frames = size / super::frame::FRAME_SIZE;
    let phys = super::frame::alloc_contiguous(frames).expect("no contiguous memory for the kernel heap");
    let start = super::phys_to_virt(phys);
    // SAFETY: the frames were just allocated for the heap alone and are mapped writable through
    // the physical-memory mapping; the heap is initialised exactly once, at boot.
    unsafe { HEAP.0.lock().init(start as *mut u8, (frames * super::frame::FRAME_SIZE) as usize) };
    frames * super::frame::FRAME_SIZE
}

/// Bytes currently allocated from the heap.
pub fn used() -> usize {
    HEAP.0.lock().used()
}

/// Total heap size in bytes.
pub fn size() -> usize {
    HEAP.0.lock().size()
}

#[cfg(test)]
mod tests {
    use alloc::boxed::Box;
    use alloc::vec::Vec;

    #[test_case]
    fn heap_alloc_and_free_returns_to_baseline() {
        let before = super::used();
        {
            let v: Vec<u64> = (0..10_000).collect();
            assert_eq!(v.iter().sum::<u64>(), 49_995_000);
            let b = Box::new([7u8; 4096]);
            assert_eq!(b[4095], 7);
        }
        assert_eq!(super::used(), before);
    }

    #[test_case]
    fn many_small_allocations() {
        let mut v = Vec::new();
        for i in 0..1000 {
            v.push(Box::new(i));
        }
        assert_eq!(*v[999], 999);
    }
}
