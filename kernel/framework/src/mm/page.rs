//! Reference-counted frames for user memory ([`PageRef`]): one frame may be mapped by several
//! address spaces (after `fork`, shared anonymous mappings) and held by the kernel meanwhile,
//! and goes back to the allocator when the last reference goes (Linux's `struct page`
//! `_refcount`). The counts live in one array indexed by frame number, made once all frames
//! are known ([`init`]).
//!
//! A page table entry of a [`VmSpace`](super::vm::VmSpace) holds one reference: mapping a
//! `PageRef` moves it into the entry, unmapping moves it out again, so no frame is freed while
//! a user mapping still reaches it.

use super::frame::{self, Frame, FRAME_SIZE};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

static REFS: spin::Once<Box<[AtomicU32]>> = spin::Once::new();

/// Makes the reference counts for the frames below `max_phys` (once, at boot, after the heap).
pub fn init(max_phys: u64) {
    REFS.call_once(|| {
        let n = max_phys.div_ceil(FRAME_SIZE) as usize;
        let mut v = Vec::with_capacity(n);
        v.resize_with(n, || AtomicU32::new(0));
        v.into_boxed_slice()
    });
}

fn count_of(phys: u64) -> &'static AtomicU32 {
    let refs = REFS.get().expect("mm::page::init before the first PageRef");
    &refs[(phys / FRAME_SIZE) as usize]
}

/// One reference to a user-memory frame (module doc). Cloning takes another reference;
/// dropping the last frees the frame.
#[derive(Debug)]
pub struct PageRef {
    phys: u64,
}

impl PageRef {
    /// A zeroed frame in the caller's allocation context (the page allocator's watermarks and
    /// reserves apply: an RT task dips into its reserve); `None` is the caller's ENOMEM.
    pub fn alloc() -> Option<PageRef> {
        Frame::alloc().map(PageRef::from_frame)
    }

    /// The only reference to `frame`.
    pub fn from_frame(frame: Frame) -> PageRef {
        let phys = frame.phys();
        core::mem::forget(frame);
        let was = count_of(phys).swap(1, Ordering::AcqRel);
        debug_assert_eq!(was, 0, "a fresh frame already had references");
        PageRef { phys }
    }

    /// The frame's physical address (for reference only: it confers no access).
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// References to this frame now (1: this one alone, so a write fault may reuse it instead of
    /// copying: copy-on-write's test).
    pub fn count(&self) -> u32 {
        count_of(self.phys).load(Ordering::Acquire)
    }

    /// A new frame holding a copy of this one's bytes (copy-on-write's copy).
    pub fn duplicate(&self) -> Option<PageRef> {
        let copy = PageRef::alloc()?;
        // SAFETY: both frames are live (references held); the copy is new and ours alone. The
        // source may be written meanwhile by a user thread: the copy is then some mix of its
        // bytes, as on Linux, and no kernel data is involved.
        unsafe {
            core::ptr::copy_nonoverlapping(
                super::phys_to_virt(self.phys) as *const u8,
                super::phys_to_virt(copy.phys) as *mut u8,
                FRAME_SIZE as usize,
            )
        };
        Some(copy)
    }

    /// Copies `src` into the frame at `offset` (panics past the frame's end).
    pub fn write_at(&self, offset: usize, src: &[u8]) {
        assert!(offset.checked_add(src.len()).is_some_and(|end| end <= FRAME_SIZE as usize), "PageRef::write_at past the frame");
        // SAFETY: in bounds (checked) of a live frame that holds only user data (this type's
        // frames are never kernel objects): a concurrent user access makes its bytes mixed,
        // never unsafe for the kernel.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), (super::phys_to_virt(self.phys) as *mut u8).add(offset), src.len()) };
    }

    /// Copies the frame's bytes at `offset` into `dst` (panics past the frame's end).
    pub fn read_at(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset.checked_add(dst.len()).is_some_and(|end| end <= FRAME_SIZE as usize), "PageRef::read_at past the frame");
        // SAFETY: in bounds (checked) of a live frame holding user data only: a concurrent user
        // write makes the copied bytes mixed, never unsafe for the kernel.
        unsafe { core::ptr::copy_nonoverlapping((super::phys_to_virt(self.phys) as *const u8).add(offset), dst.as_mut_ptr(), dst.len()) };
    }

    /// Gives the reference up to a page table entry (which keeps the address).
    pub(super) fn into_phys(self) -> u64 {
        let phys = self.phys;
        core::mem::forget(self);
        phys
    }

    /// Takes back the reference a page table entry held.
    ///
    /// # Safety
    /// `phys` must come from [`PageRef::into_phys`], and each such reference be taken back once.
    pub(super) unsafe fn from_phys(phys: u64) -> PageRef {
        PageRef { phys }
    }

    /// Another reference to the frame a page table entry holds (the entry keeps its own).
    ///
    /// # Safety
    /// `phys` must be held by a live entry (from [`PageRef::into_phys`]) for the duration.
    pub(super) unsafe fn clone_phys(phys: u64) -> PageRef {
        count_of(phys).fetch_add(1, Ordering::AcqRel);
        PageRef { phys }
    }
}

impl Clone for PageRef {
    fn clone(&self) -> PageRef {
        count_of(self.phys).fetch_add(1, Ordering::AcqRel);
        PageRef { phys: self.phys }
    }
}

impl Drop for PageRef {
    fn drop(&mut self) {
        if count_of(self.phys).fetch_sub(1, Ordering::AcqRel) == 1 {
            frame::free(self.phys);
        }
    }
}
