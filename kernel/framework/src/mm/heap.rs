//! The kernel heap: `linked_list_allocator` over a region of kernel virtual memory
//! ([`HEAP_REGION`]) that grows from the page allocator, behind an [`IrqLock`] so interrupt
//! handlers may allocate.
//!
//! # Growth
//! Boot maps [`init`]'s initial size; when an allocation does not fit, the heap maps more frames
//! at its top ([`GROW_STEP`] at least, any frames: the region is virtually contiguous) and
//! extends the allocator over them, as Linux's slab caches take pages from the page allocator.
//! So kernel objects come out of the same pool as user pages: what the heap holds is missing
//! from `MemFree`, and a program that fills the kernel with objects sees memory run low as it
//! would on Linux. Growth takes frames within the watermarks of the allocating context but never
//! reclaims directly (the allocator's caller may hold any lock; `frame::alloc_no_reclaim`).
//!
//! **Out of memory.** Rust's infallible allocations (a `Box`, a `BTreeMap` node) cannot return
//! an error, so the paths a user program drives check first: before it makes kernel objects on
//! a program's behalf (a fork's copies, a new fd), the kernel asks [`ensure_free`] for room,
//! which grows the heap within the caller's watermarks and says no when the page allocator
//! refuses: the caller's ENOMEM, or the OOM killer (the kernel's `process::oom`), as Linux's
//! `fork` and `open` fail or kill when their `GFP_KERNEL` allocations do. The allocations
//! behind a check that passed may then take the page allocator's reserve: a growth the
//! caller's watermarks refuse is retried as an atomic allocation (Linux's `__GFP_NOFAIL`
//! dipping below `min`), since failing there could only panic. Fallible callers
//! (`try_reserve`) get null, hence their ENOMEM, when even that is refused.
//! The heap does not shrink: frames it took stay in it, free for later kernel objects (Linux
//! frees empty slabs; a first-fit heap has no empty pages to give back).
//!
//! # Per-CPU caches of small blocks
//! Small allocations (at most [`MAX_CACHED_SIZE`] bytes, alignment at most 64) are served from
//! per-CPU free lists, one per size class (16, 32, …, 512 bytes), like Linux's per-CPU slab
//! freelists: without them every small allocation would take the global heap lock, and one
//! made with interrupts off would spin there while a vCPU holding it is descheduled by the
//! host. (The scheduler itself no longer allocates with interrupts off: see the kernel's `sched::reserve`
//! and the detector in [`super::atomic_alloc`].) A list is refilled from, and trimmed back to,
//! the global heap [`BATCH`] blocks per global-lock acquisition, so the global lock is taken
//! about once per `BATCH` small allocations.
//!
//! Invariants: a CPU's lists are touched only by that CPU with interrupts disabled (so an
//! interrupt handler cannot interleave with it); a cached block is a free block of exactly its
//! class's size and alignment, allocated from the global heap with that layout and returned
//! to it with the same layout. A block may be freed on another CPU than the one that allocated
//! it: it joins that CPU's list (classes are per layout, not per CPU). [`used`] counts cached
//! blocks as free, so it returns to its value when everything allocated is freed.

use crate::percpu::NR_CPUS;
use crate::sync::IrqLock;
use cadence_vm::watermark::AllocContext;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicIsize, Ordering};
use linked_list_allocator::Heap;
use x86_64::structures::paging::PageTableFlags;

/// Virtual start of the heap region (level-4 entry 385, next to the stack region; [`init`]
/// checks it is unused).
pub const HEAP_REGION: u64 = 0xffff_c080_0000_0000;
/// The region's virtual size (one level-4 entry, 512 GiB).
const HEAP_REGION_SIZE: u64 = 1 << 39;
/// The initial heap's frames come in runs of this size, spread over memory ([`init`]).
const SPREAD_CHUNK: usize = 2 << 20;
/// Smallest growth, in bytes (64 frames: a growth maps them with interrupts off).
pub const GROW_STEP: usize = 256 * 1024;
const PAGE: usize = 4096;
/// Serialises growth: the mapped top of the region (bytes mapped from [`HEAP_REGION`]).
static GROW: IrqLock<u64> = IrqLock::new(0);
/// Growths that found no frame (the page allocator refused): the heap was out of memory.
static GROW_FAILURES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Live allocations by size, per CPU (a block freed on another CPU than the one that allocated
/// it makes one count negative and the other positive: only sums mean something). Bucket `b`
/// counts sizes in `(2^(b-1), 2^b]` (bucket 0: sizes 0 and 1). Like `/proc/slabinfo`'s active
/// objects: what the chaos stress prints when the heap did not return to its baseline.
static LIVE_BY_SIZE: [[AtomicIsize; SIZE_BUCKETS]; NR_CPUS] = [const { [const { AtomicIsize::new(0) }; SIZE_BUCKETS] }; NR_CPUS];
/// Number of size buckets [`live_by_size`] reports: up to 2^31 bytes (the last bucket also counts
/// anything larger).
pub const SIZE_BUCKETS: usize = 32;

fn size_bucket(size: usize) -> usize {
    (usize::BITS - size.saturating_sub(1).leading_zeros()).min(SIZE_BUCKETS as u32 - 1) as usize
}

fn count_live(size: usize, delta: isize) {
    let cpu = crate::percpu::cpu_id() as usize % NR_CPUS;
    LIVE_BY_SIZE[cpu][size_bucket(size)].fetch_add(delta, Ordering::Relaxed);
}

/// Live heap allocations by size bucket (bucket `b`: sizes in `(2^(b-1), 2^b]`), summed over
/// CPUs.
pub fn live_by_size() -> [isize; SIZE_BUCKETS] {
    let mut out = [0isize; SIZE_BUCKETS];
    for cpu in LIVE_BY_SIZE.iter() {
        for (o, c) in out.iter_mut().zip(cpu.iter()) {
            *o += c.load(Ordering::Relaxed);
        }
    }
    out
}

/// Size classes of the per-CPU caches (bytes).
const CLASSES: [usize; 6] = [16, 32, 64, 128, 256, 512];
/// Largest allocation served from the per-CPU caches.
pub const MAX_CACHED_SIZE: usize = 512;
/// Blocks moved between a per-CPU list and the global heap per global-lock acquisition.
pub const BATCH: usize = 16;
/// A list longer than this is trimmed by `BATCH` blocks.
const MAX_LIST: usize = 4 * BATCH;

/// A free block in a per-CPU list (the link lives in the free block itself).
struct FreeBlock {
    next: *mut FreeBlock,
}

#[derive(Clone, Copy)]
struct FreeList {
    head: *mut FreeBlock,
    len: usize,
}

struct CpuCache {
    lists: UnsafeCell<[FreeList; CLASSES.len()]>,
    /// Bytes held in this CPU's lists (read by `used` from any CPU).
    cached: AtomicIsize,
}

// SAFETY: each `CpuCache` is only touched by its own CPU with interrupts disabled (module
// invariants), so there is never concurrent access to `lists`; `cached` is atomic.
unsafe impl Sync for CpuCache {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_CACHE: CpuCache =
    CpuCache { lists: UnsafeCell::new([FreeList { head: core::ptr::null_mut(), len: 0 }; CLASSES.len()]), cached: AtomicIsize::new(0) };
static CACHES: [CpuCache; NR_CPUS] = [EMPTY_CACHE; NR_CPUS];

/// The size class serving `layout`, if it is small enough.
fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > 64 {
        return None;
    }
    let need = layout.size().max(layout.align());
    CLASSES.iter().position(|&c| c >= need)
}

/// The layout of a block of class `ci`: its size, aligned to itself up to 64 bytes (so it
/// satisfies every layout `class_of` maps to it).
fn class_layout(ci: usize) -> Layout {
    let size = CLASSES[ci];
    // A power of two of at most 512 with a power-of-two alignment: always valid.
    Layout::from_size_align(size, size.min(64)).unwrap_or(Layout::new::<FreeBlock>())
}

/// The kernel's `#[global_allocator]`: per-CPU caches of small blocks over one global heap behind
/// an [`IrqLock`] (module doc). Any context once [`init`] has run; an allocation it cannot
/// satisfy returns null.
pub struct KernelHeap(IrqLock<Heap>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(IrqLock::new(Heap::empty()));

impl KernelHeap {
    fn global_alloc(&self, layout: Layout) -> *mut u8 {
        self.0.lock().allocate_first_fit(layout).map(|p| p.as_ptr()).unwrap_or(core::ptr::null_mut())
    }

    /// Runs `f` on this CPU's lists with interrupts disabled.
    fn with_cache<R>(&self, f: impl FnOnce(&mut [FreeList; CLASSES.len()], &AtomicIsize) -> R) -> R {
        let was = crate::irqflags::save();
        let cache = &CACHES[crate::percpu::cpu_id() as usize % NR_CPUS];
        // SAFETY: interrupts are off and this is our own CPU's cache, which no other CPU
        // touches (module invariants): the reference is exclusive while `f` runs.
        let lists = unsafe { &mut *cache.lists.get() };
        let r = f(lists, &cache.cached);
        crate::irqflags::restore(was);
        r
    }

    fn cached_alloc(&self, ci: usize) -> *mut u8 {
        let layout = class_layout(ci);
        self.with_cache(|lists, cached| {
            let list = &mut lists[ci];
            if list.len == 0 {
                // Refill: BATCH blocks for one global-lock acquisition.
                let mut heap = self.0.lock();
                for _ in 0..BATCH {
                    let Ok(p) = heap.allocate_first_fit(layout) else { break };
                    let b = p.as_ptr() as *mut FreeBlock;
                    // SAFETY: `b` is a fresh free block of at least 16 bytes, aligned for
                    // `FreeBlock`; we own it.
                    unsafe { b.write(FreeBlock { next: list.head }) };
                    list.head = b;
                    list.len += 1;
                    cached.fetch_add(layout.size() as isize, Ordering::Relaxed);
                }
            }
            let b = list.head;
            if b.is_null() {
                return core::ptr::null_mut(); // the global heap is exhausted
            }
            // SAFETY: `b` heads our list: a free block we own, holding a valid link.
            list.head = unsafe { (*b).next };
            list.len -= 1;
            cached.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            b as *mut u8
        })
    }

    /// # Safety
    /// `ptr` was returned by `cached_alloc(ci)` and is not used any more.
    unsafe fn cached_free(&self, ptr: *mut u8, ci: usize) {
        let layout = class_layout(ci);
        self.with_cache(|lists, cached| {
            let list = &mut lists[ci];
            let b = ptr as *mut FreeBlock;
            // SAFETY: the caller gives the block back to us; it is large and aligned enough.
            unsafe { b.write(FreeBlock { next: list.head }) };
            list.head = b;
            list.len += 1;
            cached.fetch_add(layout.size() as isize, Ordering::Relaxed);
            if list.len > MAX_LIST {
                // Trim: BATCH blocks back to the global heap for one lock acquisition.
                let mut heap = self.0.lock();
                for _ in 0..BATCH {
                    let b = list.head;
                    let Some(p) = NonNull::new(b as *mut u8) else { break };
                    // SAFETY: `b` heads our list (a free block we own) and came from the
                    // global heap with `layout` (module invariants).
                    unsafe {
                        list.head = (*b).next;
                        heap.deallocate(p, layout);
                    }
                    list.len -= 1;
                    cached.fetch_sub(layout.size() as isize, Ordering::Relaxed);
                }
            }
        })
    }
}

// SAFETY: small layouts are served from per-CPU lists of blocks that were allocated from the
// global heap with a layout at least as large and as aligned (module invariants); everything
// else is serialised by the lock and delegated to linked_list_allocator, which returns blocks
// satisfying `layout` or null.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        super::atomic_alloc::note(layout.size());
        // The context the caller allocates in, read before any lock turns interrupts off.
        let ctx = super::frame::caller_context();
        let mut grown = false;
        let p = loop {
            let (p, need) = match class_of(layout) {
                Some(ci) => (self.cached_alloc(ci), CLASSES[ci] * BATCH),
                None => (self.global_alloc(layout), layout.size() + layout.align()),
            };
            // The caller's watermarks first, then the atomic reserve (module doc).
            if !p.is_null() || grown || !(grow(need, ctx) || grow(need, AllocContext::Atomic)) {
                break p;
            }
            grown = true;
        };
        if !p.is_null() {
            count_live(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !ptr.is_null() {
            count_live(layout.size(), -1);
        }
        match (NonNull::new(ptr), class_of(layout)) {
            (None, _) => {}
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with this `layout`,
            // which maps to the same class.
            (Some(_), Some(ci)) => unsafe { self.cached_free(ptr, ci) },
            // SAFETY: as above, from the global heap.
            (Some(p), None) => unsafe { self.0.lock().deallocate(p, layout) },
        }
    }
}

/// Maps the heap's first `size` bytes (rounded up to pages) at [`HEAP_REGION`] and hands them to
/// the allocator. Once, at boot, before anything allocates and before
/// `paging::share_kernel_half`. Returns the heap's size, 0 if the region is taken or no frames
/// are left.
pub fn init(size: u64) -> u64 {
    if !super::paging::l4_entry_unused(HEAP_REGION) {
        return 0;
    }
    let mut top = GROW.lock();
    // In chunks spread over physical memory (`frame::spread_cursor`): on a NUMA machine every
    // node gives its share, instead of the first node giving all (an eighth of memory: the
    // whole of node 0 on eight nodes of 128 MiB, whose tasks then got memory from node 1).
    let ctx = crate::mm::frame::caller_context();
    let chunks = (size as usize).div_ceil(SPREAD_CHUNK) as u64;
    let mut mapped = 0;
    for i in 0..chunks {
        super::frame::spread_cursor(i, chunks);
        let want = (size as usize - mapped).min(SPREAD_CHUNK);
        let got = map_more(mapped as u64, want, ctx);
        mapped += got;
        if got < want {
            break;
        }
    }
    super::frame::spread_cursor(chunks, chunks);
    if mapped == 0 {
        return 0;
    }
    // SAFETY: `mapped` bytes from HEAP_REGION were just mapped writable for the heap alone; the
    // heap is initialised exactly once, at boot (the GROW lock is held, top was 0).
    unsafe { HEAP.0.lock().init(HEAP_REGION as *mut u8, mapped) };
    *top = mapped as u64;
    mapped as u64
}

/// Maps up to `bytes` (whole pages) of fresh frames from `HEAP_REGION + top`; returns the bytes
/// mapped (stops at the first frame or page table the page allocator refuses). GROW held.
fn map_more(top: u64, bytes: usize, ctx: AllocContext) -> usize {
    let bytes = bytes.next_multiple_of(PAGE).min((HEAP_REGION_SIZE - top) as usize);
    let mut mapped = 0;
    while mapped < bytes {
        let Some(frame) = super::frame::alloc_no_reclaim(ctx) else { break };
        let virt = HEAP_REGION + top + mapped as u64;
        if super::paging::map_page(virt, frame, PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE).is_err() {
            super::frame::free(frame);
            break;
        }
        mapped += PAGE;
    }
    mapped
}

/// Grows the heap by at least `need` bytes ([`GROW_STEP`] at least) from the page allocator,
/// in context `ctx` (module doc). Returns false if nothing could be added.
fn grow(need: usize, ctx: AllocContext) -> bool {
    let mut top = GROW.lock();
    if *top == 0 {
        return false; // before init
    }
    // Room for the hole's header and alignment at the end of what is there.
    let mapped = map_more(*top, (need + 2 * PAGE).max(GROW_STEP), ctx);
    if mapped == 0 {
        GROW_FAILURES.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    // SAFETY: the `mapped` bytes just mapped start at the heap's top (HEAP_REGION + *top: the
    // GROW lock serialises every extension) and belong to the heap for good.
    unsafe { HEAP.0.lock().extend(mapped) };
    *top += mapped as u64;
    true
}

/// Headroom [`ensure_free`] keeps above what its caller asked for: the small allocations
/// around the objects (their lists, a lock's queue) that nobody counted.
pub const HEADROOM: usize = GROW_STEP;

/// Makes sure the heap has `bytes` free, plus [`HEADROOM`], growing it from the page allocator
/// within the caller's watermarks (its context: a task's `min` after the slow path; never
/// direct reclaim). For the kernel before it makes objects on a user program's behalf (module
/// doc): false when the page allocator refuses, the caller's ENOMEM or OOM kill. Any context.
pub fn ensure_free(bytes: usize) -> bool {
    let want = bytes.saturating_add(HEADROOM);
    let ctx = super::frame::caller_context();
    for _ in 0..2 {
        let free = HEAP.0.lock().free();
        if free >= want {
            return true;
        }
        if !grow(want - free, ctx) {
            return false;
        }
    }
    HEAP.0.lock().free() >= want
}

/// Growths of the heap that found no frame since boot (the heap ran out of memory).
pub fn grow_failures() -> u64 {
    GROW_FAILURES.load(Ordering::Relaxed)
}

/// Bytes currently allocated from the heap (blocks held in the per-CPU caches count as free).
pub fn used() -> usize {
    // Both sums under the heap lock: refills and trims change them together under it.
    let heap = HEAP.0.lock();
    let cached: isize = CACHES.iter().map(|c| c.cached.load(Ordering::Relaxed)).sum();
    (heap.used() as isize).saturating_sub(cached).max(0) as usize
}

/// The heap's size in bytes: what it has mapped so far (frames the page allocator gave it).
pub fn size() -> usize {
    HEAP.0.lock().size()
}
