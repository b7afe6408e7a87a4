//! Physical frame allocator: a bitmap over all of physical memory (1 bit per 4 KiB frame,
//! set = in use), built from the bootloader's memory map.
//!
//! Invariants: only `Usable` regions are ever handed out; frame 0 and everything below 1 MiB are
//! kept back (real-mode memory: the SMP trampoline page is chosen there explicitly with
//! [`take_low_page`]); the bitmap's own frames are marked used. `free_frames()` is exact, so
//! tests can check that memory returns to its baseline.
//!
//! [`Frame`] is an owned frame (freed when dropped) for code that reads and writes the frame's
//! bytes: its safe views rest on its ownership. [`alloc()`] / [`free`] hand out bare addresses,
//! for page tables, stacks and DMA buffers, which are reached otherwise.
//!
//! Every frame [`alloc()`] (or [`Frame::alloc`]) hands out is zeroed (a whole-frame write), and
//! not only for hygiene:
//! memory the memory map calls usable may have held code that ran before the kernel (the BIOS
//! bootloader's stage 4 sits at 1.2 MiB; under UEFI, the firmware's boot-services code).
//! QEMU's TCG keeps the translations of that code until every byte of it is overwritten, and
//! until then *every* write to the page takes its slow self-modifying-code path
//! (`notdirty_write` → `tb_invalidate_phys_range`). A stack that
//! landed on such a page ran about ten times slower: `bench wakeup-latency` pinned to the CPU
//! whose idle stack held stage 4's old page averaged 780 µs instead of 100 µs. Writing the
//! whole frame once drops those translations. [`alloc_contiguous`] (DMA buffers, which their
//! users fill or zero) does not zero.

//!
//! # Nodes
//! Once the kernel has read the SRAT it gives the allocator each node's memory
//! ([`set_nodes`]): every frame then belongs to one node (`cadence_vm::numa::spans`), each
//! node keeps its own cursor and free count, and [`alloc()`] takes from the node of the CPU it
//! runs on (`PerCpu::numa_node`, Linux's local policy: a task's memory lands on the node where
//! it first touches it), falling back to the other nodes nearest first when that node has no
//! free frame (Linux's zonelist). The watermarks stay machine-wide: Linux keeps them per zone
//! and falls back before reclaiming (`zone_reclaim_mode` 0), which is what a machine-wide
//! check does too as long as any node has frames. Before [`set_nodes`] (and without an SRAT)
//! the machine is one node.
//!
//! # Watermarks
//! [`alloc()`] follows Linux's watermarks (`cadence_vm::watermark`, whose module doc has the
//! formulas and the table of what each context may use): the fast path checks `low`, the slow
//! path `min`, minus the reserve of the caller's context — interrupts off counts as atomic, a
//! task in the RT class as an RT task under `vm.rt_alloc_reserve` (`seed`, the default: half
//! of each watermark; `linux`; `off`). Taking a frame that leaves fewer than `low` free
//! wakes the reclaim thread (`kswapd0`, the kernel's `block::reclaim`, by upcall); a task failing the slow path
//! reclaims clean page-cache pages directly and retries once, then fails (the caller's
//! ENOMEM).
//! `vm.min_free_kbytes` (default Linux's `int_sqrt(kbytes × 16)` of the frames managed here)
//! and `vm.watermark_scale_factor` recompute the watermarks. [`alloc_contiguous`] (boot) and
//! [`take_low_page`] do not check them.

use crate::sync::IrqLock;
use alloc::vec::Vec;
use bootloader_api::info::{MemoryRegionKind, MemoryRegions};
use cadence_vm::numa::{self, Span};
use cadence_vm::watermark::{self, AllocContext, Decision, RtReserve, Watermarks};
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Size of a physical frame, and of a page, in bytes (4 KiB; Linux's `PAGE_SIZE`).
pub const FRAME_SIZE: u64 = 4096;
const LOW_MEMORY_END: u64 = 0x10_0000;

struct Bitmap {
    bits: &'static mut [u64],
    frames: u64,
    free: u64,
    next: u64,
    /// Frames this allocator managed once boot was done (the watermarks' base).
    managed: u64,
    /// Usable frames above 1 MiB in the memory map (`free`'s total).
    total: u64,
    min_free_kbytes: u64,
    watermark_scale_factor: u64,
    wm: Watermarks,
    /// Which node owns each frame (sorted, covering `[0, frames)`); empty: one node.
    spans: Vec<Span>,
    /// Per node (index = node number): its spans, cursor and counts. Empty: one node.
    nodes: Vec<NodeFrames>,
}

/// One node's share of the allocator.
struct NodeFrames {
    /// Its frame runs `[start, end)`, ascending.
    runs: Vec<(u64, u64)>,
    /// Where its next search starts (the frame after the last one taken).
    next: u64,
    /// Its free frames.
    free: u64,
    /// Its usable frames above 1 MiB (its `MemTotal`).
    total: u64,
    /// The nodes an allocation on this one tries, itself first.
    fallback: Vec<u16>,
}

impl Bitmap {
    fn is_used(&self, f: u64) -> bool {
        self.bits[(f / 64) as usize] & (1 << (f % 64)) != 0
    }
    fn set_used(&mut self, f: u64) {
        if !self.is_used(f) {
            self.bits[(f / 64) as usize] |= 1 << (f % 64);
            self.free -= 1;
            if let Some(n) = self.node_of(f) {
                n.free -= 1;
            }
        }
    }
    fn set_free(&mut self, f: u64) {
        if self.is_used(f) {
            self.bits[(f / 64) as usize] &= !(1 << (f % 64));
            self.free += 1;
            if let Some(n) = self.node_of(f) {
                n.free += 1;
            }
        }
    }
    /// Frame `f`'s node (a binary search over the spans), once nodes are set.
    fn node_of(&mut self, f: u64) -> Option<&mut NodeFrames> {
        let node = numa::node_of_frame(&self.spans, f)?;
        self.nodes.get_mut(usize::from(node))
    }
    /// The first free frame in `[from, end)`, a word at a time.
    fn first_free_in(&self, from: u64, end: u64) -> Option<u64> {
        let mut f = from;
        while f < end {
            let w = self.bits[(f / 64) as usize] | ((1u64 << (f % 64)) - 1);
            if w != u64::MAX {
                let hit = f / 64 * 64 + u64::from((!w).trailing_zeros());
                return (hit < end).then_some(hit);
            }
            f = (f / 64 + 1) * 64;
        }
        None
    }
}

static FRAMES: IrqLock<Option<Bitmap>> = IrqLock::new(None);
/// The usable regions of the memory map above 1 MiB, `[start, end)` frame numbers (what
/// [`set_nodes`] counts each node's usable memory from); at most 64, the rest counted in the last.
static USABLE: IrqLock<arrayvec::ArrayVec<(u64, u64), 64>> = IrqLock::new(arrayvec::ArrayVec::new_const());
/// Usable low (< 1 MiB) pages, remembered for `take_low_page`.
static LOW_PAGES: IrqLock<[u64; 8]> = IrqLock::new([0; 8]);

/// Builds the allocator from the memory map. Returns (usable bytes, total frames).
pub fn init(regions: &MemoryRegions, phys_offset: u64) -> (u64, u64) {
    let max_phys = regions.iter().filter(|r| r.kind == MemoryRegionKind::Usable).map(|r| r.end).max().unwrap_or(0);
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
    // No watermarks until `init_watermarks` (boot allocates freely).
    let wm = Watermarks { min: 0, low: 0, high: 0 };
    let mut map = Bitmap {
        bits,
        frames,
        free: 0,
        next: LOW_MEMORY_END / FRAME_SIZE,
        managed: 0,
        total: 0,
        min_free_kbytes: 0,
        watermark_scale_factor: 0,
        wm,
        spans: Vec::new(),
        nodes: Vec::new(),
    };
    let mut usable = 0;
    let mut low = [0u64; 8];
    let mut nlow = 0;
    let mut usable_regions = arrayvec::ArrayVec::<(u64, u64), 64>::new();
    for r in regions.iter().filter(|r| r.kind == MemoryRegionKind::Usable) {
        let (s, e) = (r.start.max(LOW_MEMORY_END).div_ceil(FRAME_SIZE), r.end / FRAME_SIZE);
        if e > s {
            let full = usable_regions.is_full();
            match usable_regions.last_mut() {
                Some(last) if last.1 == s || full => last.1 = last.1.max(e),
                _ => usable_regions.push((s, e)),
            }
        }
        let start = r.start.next_multiple_of(FRAME_SIZE);
        let mut f = start / FRAME_SIZE;
        while (f + 1) * FRAME_SIZE <= r.end {
            let addr = f * FRAME_SIZE;
            usable += FRAME_SIZE;
            if addr >= LOW_MEMORY_END {
                map.set_free(f);
                map.total += 1;
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
    *USABLE.lock() = usable_regions;
    *FRAMES.lock() = Some(map);
    (usable, frames)
}

/// Set by [`init_watermarks`]: until then (boot) every allocation passes and the caller's
/// context is not looked up (this CPU's run queue may not exist yet).
static WATERMARKS_ON: AtomicBool = AtomicBool::new(false);

/// Sets the watermarks' base to the frames free now (called by init, once boot has taken its
/// memory): Linux's `managed_pages`, and the default `vm.min_free_kbytes` from it.
pub fn init_watermarks() {
    WATERMARKS_ON.store(true, Ordering::Release);
    if let Some(map) = FRAMES.lock().as_mut() {
        map.managed = map.free;
        map.min_free_kbytes = watermark::default_min_free_kbytes(map.managed);
        map.watermark_scale_factor = watermark::DEFAULT_WATERMARK_SCALE_FACTOR;
        if let Ok(wm) = Watermarks::new(map.managed, map.min_free_kbytes, map.watermark_scale_factor) {
            map.wm = wm;
        }
    }
}

/// `vm.rt_alloc_reserve` (0 seed, 1 linux, 2 off).
static RT_RESERVE: AtomicU8 = AtomicU8::new(0);

/// The current `vm.rt_alloc_reserve`.
pub fn rt_reserve() -> RtReserve {
    match RT_RESERVE.load(Ordering::Relaxed) {
        0 => RtReserve::Seed,
        1 => RtReserve::Linux,
        _ => RtReserve::Off,
    }
}

/// Sets `vm.rt_alloc_reserve`.
pub fn set_rt_reserve(mode: RtReserve) {
    RT_RESERVE.store(
        match mode {
            RtReserve::Seed => 0,
            RtReserve::Linux => 1,
            RtReserve::Off => 2,
        },
        Ordering::Relaxed,
    );
}

/// The watermarks (pages), `vm.min_free_kbytes` and `vm.watermark_scale_factor`.
pub fn watermarks() -> (Watermarks, u64, u64) {
    FRAMES.lock().as_ref().map_or((Watermarks { min: 0, low: 0, high: 0 }, 0, 0), |m| (m.wm, m.min_free_kbytes, m.watermark_scale_factor))
}

/// Sets `vm.min_free_kbytes` and/or `vm.watermark_scale_factor` and recomputes the
/// watermarks (Linux `setup_per_zone_wmarks`). A scale factor outside 1..=3000 is refused.
pub fn set_watermarks(min_free_kbytes: Option<u64>, scale_factor: Option<u64>) -> Result<(), cadence_vm::Invalid> {
    let mut guard = FRAMES.lock();
    let Some(map) = guard.as_mut() else { return Err(cadence_vm::Invalid("no frame allocator")) };
    let kb = min_free_kbytes.unwrap_or(map.min_free_kbytes);
    let sf = scale_factor.unwrap_or(map.watermark_scale_factor);
    map.wm = Watermarks::new(map.managed, kb, sf)?;
    map.min_free_kbytes = kb;
    map.watermark_scale_factor = sf;
    Ok(())
}

/// The caller's allocation context: interrupts off is atomic, an RT-class task is an RT task
/// (a task before [`init_watermarks`], when nothing is looked up).
pub(super) fn caller_context() -> AllocContext {
    if !WATERMARKS_ON.load(Ordering::Acquire) {
        AllocContext::Task
    } else if !crate::irqflags::are_enabled() {
        AllocContext::Atomic
    } else if crate::upcalls::current_is_rt() {
        AllocContext::RtTask
    } else {
        AllocContext::Task
    }
}

/// Allocates one zeroed frame, within the watermarks of the caller's context (module doc);
/// returns its physical address, or `None` (the caller's ENOMEM).
pub fn alloc() -> Option<u64> {
    alloc_as(caller_context())
}

/// [`alloc()`] for a caller holding a `SpinLock`: preemption is off but interrupts may be on,
/// which [`alloc()`] would take for a context that may block. It may not (no direct reclaim),
/// so it allocates as `Atomic` once the watermarks are on (Linux's `GFP_ATOMIC` under a spin
/// lock).
pub fn alloc_nonblocking() -> Option<u64> {
    let ctx = if WATERMARKS_ON.load(Ordering::Acquire) { AllocContext::Atomic } else { AllocContext::Task };
    alloc_as(ctx)
}

/// [`alloc()`] for an explicit context.
pub fn alloc_as(ctx: AllocContext) -> Option<u64> {
    let phys = alloc_dirty(ctx)?;
    // SAFETY: just allocated, ours alone (done outside the allocator's lock).
    unsafe { zero(phys, 1) };
    Some(phys)
}

/// One frame, as it was left (see [`alloc()`]).
fn alloc_dirty(ctx: AllocContext) -> Option<u64> {
    let mode = rt_reserve();
    let mut after_reclaim = false;
    loop {
        let decision = {
            let mut guard = FRAMES.lock();
            let map = guard.as_mut()?;
            let d = watermark::decide(&map.wm, map.free, 1, ctx, mode, after_reclaim);
            if let Decision::Take { wake_reclaim } = d {
                let frame = map.take_one(local_node(map));
                drop(guard);
                if wake_reclaim {
                    crate::upcalls::wake_kswapd();
                }
                return frame;
            }
            d
        };
        match decision {
            // Direct reclaim (clean page-cache pages), then the slow path once more.
            Decision::Reclaim(n) => {
                crate::upcalls::wake_kswapd();
                crate::upcalls::direct_reclaim(n);
                after_reclaim = true;
            }
            _ => return None,
        }
    }
}

/// One zeroed frame for the kernel heap's growth (`heap`), within the watermarks of `ctx` but
/// never reclaiming directly: the heap grows inside the global allocator, whose caller may hold
/// any lock (a page-cache lock that reclaim takes), so below `low` it wakes `kswapd` and takes
/// the frame if the slow path (`min`, less `ctx`'s reserve) allows it. Linux's
/// `GFP_NOWAIT`-style slab growth.
pub(super) fn alloc_no_reclaim(ctx: AllocContext) -> Option<u64> {
    let mode = rt_reserve();
    let (phys, wake) = {
        let mut guard = FRAMES.lock();
        let map = guard.as_mut()?;
        let mut d = watermark::decide(&map.wm, map.free, 1, ctx, mode, false);
        if let Decision::Reclaim(_) = d {
            d = watermark::decide(&map.wm, map.free, 1, ctx, mode, true);
        }
        match d {
            Decision::Take { wake_reclaim } => (map.take_one(local_node(map))?, wake_reclaim),
            _ => (0, true),
        }
    };
    if wake {
        crate::upcalls::wake_kswapd();
    }
    if phys == 0 {
        return None;
    }
    // SAFETY: just allocated, ours alone (done outside the allocator's lock).
    unsafe { zero(phys, 1) };
    Some(phys)
}

impl Bitmap {
    /// Takes a free frame: from `node`'s memory, or the nearest node with one (module doc).
    fn take_one(&mut self, node: u16) -> Option<u64> {
        if self.free == 0 {
            return None;
        }
        if self.nodes.is_empty() {
            let f = self.first_free_in(self.next, self.frames).or_else(|| self.first_free_in(0, self.next))?;
            self.set_used(f);
            self.next = f + 1;
            return Some(f * FRAME_SIZE);
        }
        let local = usize::from(node).min(self.nodes.len() - 1);
        for i in 0..self.nodes[local].fallback.len() {
            let n = usize::from(self.nodes[local].fallback[i]);
            if self.nodes[n].free == 0 {
                continue;
            }
            if let Some(f) = self.first_free_of_node(n) {
                self.set_used(f);
                self.nodes[n].next = f + 1;
                return Some(f * FRAME_SIZE);
            }
        }
        None
    }

    /// Node `n`'s first free frame at or after its cursor, wrapping around its runs.
    fn first_free_of_node(&self, n: usize) -> Option<u64> {
        let node = &self.nodes[n];
        let from = node.next;
        let after = node.runs.iter().filter(|r| r.1 > from).map(|&(s, e)| (s.max(from), e));
        let before = node.runs.iter().filter(|r| r.0 < from).map(|&(s, e)| (s, e.min(from)));
        after.chain(before).find_map(|(s, e)| self.first_free_in(s, e))
    }
}

/// Moves the one-node cursor to the `i`-th of `n` equal steps through physical memory (above
/// 1 MiB), or back to its start for `i == n`: the heap's initial frames are taken in chunks
/// spread over all of memory ([`super::heap::init`]), as Linux spreads its big boot-time
/// tables over the nodes (`hashdist`), so no node starts with the whole heap in it. Boot only,
/// before [`set_nodes`].
pub(super) fn spread_cursor(i: u64, n: u64) {
    if let Some(map) = FRAMES.lock().as_mut() {
        let low = LOW_MEMORY_END / FRAME_SIZE;
        let step = map.frames.saturating_sub(low) / n.max(1);
        map.next = if i >= n { low } else { low + i * step };
    }
}

/// The node the caller's CPU is on, once nodes are set (0 before: never read then).
fn local_node(map: &Bitmap) -> u16 {
    if map.nodes.is_empty() {
        0
    } else {
        // Nodes are set once every CPU has installed its per-CPU area.
        crate::percpu::current().numa_node.load(Ordering::Relaxed)
    }
}

/// Gives the allocator the machine's nodes (boot, once the kernel has read the SRAT and every
/// CPU is up): `ranges` are the SRAT's memory ranges (physical `[start, end)`, node),
/// `distance(a, b)` the SLIT's. Each frame's node is then known and allocations prefer the
/// caller's node (module doc). Fewer than two nodes changes nothing. Allocates (the spans and
/// lists) before taking the allocator's lock.
pub fn set_nodes(ranges: &[(u64, u64, u16)], nr_nodes: u16, distance: impl Fn(u16, u16) -> u32) {
    if nr_nodes < 2 {
        return;
    }
    let Some(frames) = FRAMES.lock().as_ref().map(|m| m.frames) else { return };
    // A node numbered beyond `nr_nodes` (not with Cadence's dense numbering) counts as node 0.
    let mut spans = numa::spans(frames, ranges, FRAME_SIZE);
    for sp in &mut spans {
        if sp.node >= nr_nodes {
            sp.node = 0;
        }
    }
    let usable: Vec<(u64, u64)> = USABLE.lock().iter().copied().collect();
    let mut nodes: Vec<NodeFrames> = (0..nr_nodes)
        .map(|n| NodeFrames { runs: Vec::new(), next: 0, free: 0, total: 0, fallback: numa::fallback_order(n, nr_nodes, &distance) })
        .collect();
    for sp in &spans {
        let node = usize::from(sp.node);
        nodes[node].runs.push((sp.start, sp.end));
        nodes[node].total += usable.iter().map(|&(a, b)| b.min(sp.end).saturating_sub(a.max(sp.start))).sum::<u64>();
    }
    for n in &mut nodes {
        n.next = n.runs.first().map_or(0, |r| r.0);
    }
    let mut guard = FRAMES.lock();
    let Some(map) = guard.as_mut() else { return };
    for n in &mut nodes {
        n.free = n.runs.iter().map(|&(s, e)| count_free(map, s, e)).sum();
    }
    map.spans = spans;
    map.nodes = nodes;
}

/// Free frames of `map` in `[s, e)`, a word at a time where whole words fit.
fn count_free(map: &Bitmap, s: u64, e: u64) -> u64 {
    let e = e.min(map.frames);
    let mut free = 0;
    let mut f = s;
    while f < e {
        if f.is_multiple_of(64) && f + 64 <= e {
            free += u64::from((!map.bits[(f / 64) as usize]).count_ones());
            f += 64;
        } else {
            free += u64::from(!map.is_used(f));
            f += 1;
        }
    }
    free
}

/// Node `node`'s (usable frames above 1 MiB, free frames): its `MemTotal` and `MemFree`.
/// Without nodes set, node 0 is the machine. `None` for a node that does not exist.
pub fn node_frames(node: u16) -> Option<(u64, u64)> {
    let g = FRAMES.lock();
    let m = g.as_ref()?;
    if m.nodes.is_empty() {
        return (node == 0).then_some((m.total, m.free));
    }
    m.nodes.get(usize::from(node)).map(|n| (n.total, n.free))
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

/// One physical frame (4 KiB) owned by this object: the typed form of [`alloc()`] / [`free`].
///
/// **Guarantee**: while a `Frame` lives, its memory is this object's alone. It is created only
/// by the allocator ([`Frame::alloc`], [`Frame::alloc_as`]: the frame was free, is marked used,
/// and is zeroed, as [`alloc()`]'s are), it is neither `Clone` nor `Copy`, and it goes back to
/// the allocator only when it is dropped (or given to [`Frame::free`]). So [`Frame::bytes`] and
/// [`Frame::bytes_mut`] borrow the object as they borrow the bytes: a shared view while no one
/// writes, an exclusive one while no one else looks, checked by the compiler.
///
/// This rests on the raw API's own contract, which the type cannot check: [`free`] is only
/// given addresses that its caller got from [`alloc()`] / [`alloc_as`] / [`alloc_contiguous`]
/// (never a `Frame`'s [`phys`](Frame::phys)), and nothing maps or hands a `Frame`'s address
/// to a device without owning the `Frame` for as long.
///
/// Dropping a `Frame` takes the allocator's lock (an `IrqLock`) and never allocates, so it may
/// happen with interrupts off; allocating one follows [`alloc()`]'s watermarks and context.
#[derive(Debug)]
pub struct Frame {
    phys: u64,
}

impl Frame {
    /// A zeroed frame in the caller's allocation context ([`alloc()`]); `None` when the
    /// watermarks refuse (the caller's ENOMEM).
    pub fn alloc() -> Option<Frame> {
        alloc().map(|phys| Frame { phys })
    }

    /// [`Frame::alloc`] for an explicit context ([`alloc_as`]).
    pub fn alloc_as(ctx: AllocContext) -> Option<Frame> {
        alloc_as(ctx).map(|phys| Frame { phys })
    }

    /// The frame's physical address (4 KiB aligned). For reference only: it confers no
    /// access, and must never be given to [`free`].
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// The frame's 4 KiB, to read.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the frame is this object's alone while it lives (the type's guarantee), so
        // nothing writes it while `&self` is borrowed; all of physical memory is mapped at
        // `phys_to_virt`, and the frame is a whole, aligned 4 KiB page of it.
        unsafe { core::slice::from_raw_parts(super::phys_to_virt(self.phys) as *const u8, FRAME_SIZE as usize) }
    }

    /// The frame's 4 KiB, to read and write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes this the only view of the frame while
        // it is borrowed; the mapping is writable.
        unsafe { core::slice::from_raw_parts_mut(super::phys_to_virt(self.phys) as *mut u8, FRAME_SIZE as usize) }
    }

    /// Returns the frame to the allocator now (what dropping it does).
    pub fn free(self) {
        drop(self);
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        free(self.phys);
    }
}

/// Usable frames above 1 MiB (what `free` calls total memory).
pub fn total_frames() -> u64 {
    FRAMES.lock().as_ref().map(|m| m.total).unwrap_or(0)
}

/// Frames the allocator manages once boot is done (set by [`init_watermarks`]; 0 before):
/// Linux's `totalram_pages`, without what boot took (the heap's reservation).
pub fn managed_frames() -> u64 {
    FRAMES.lock().as_ref().map(|m| m.managed).unwrap_or(0)
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

/// Adapter so the `x86_64` crate's mapper can take page-table frames from us, in the
/// allocation context of the code that maps (taken before the page-table lock disables
/// interrupts: [`PageTableFrames::for_caller`]).
pub struct PageTableFrames {
    ctx: AllocContext,
}

impl PageTableFrames {
    /// The caller's context (what [`alloc()`] would use here).
    pub fn for_caller() -> PageTableFrames {
        PageTableFrames { ctx: caller_context() }
    }
}

/// Frames ever given out as page tables. Page tables are kept when their pages are unmapped
/// (the stack region reuses them), so leak checks compare `free_frames() + page_table_frames()`.
static PAGE_TABLE_FRAMES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Counts a frame taken as a kernel page table by other means than the mapper
/// (`paging::share_kernel_half`).
pub(super) fn count_page_table() {
    PAGE_TABLE_FRAMES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
}

/// Number of frames handed out as kernel page tables since boot (they are never freed; user
/// address spaces' tables are freed with them and not counted). Any context.
pub fn page_table_frames() -> u64 {
    PAGE_TABLE_FRAMES.load(core::sync::atomic::Ordering::Relaxed)
}

// SAFETY: `alloc` only returns frames that are unused and marked used before being returned.
unsafe impl x86_64::structures::paging::FrameAllocator<x86_64::structures::paging::Size4KiB> for PageTableFrames {
    fn allocate_frame(&mut self) -> Option<x86_64::structures::paging::PhysFrame> {
        // Page tables must start zeroed: `alloc` zeroes.
        let phys = alloc_as(self.ctx)?;
        PAGE_TABLE_FRAMES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        Some(x86_64::structures::paging::PhysFrame::containing_address(x86_64::PhysAddr::new(phys)))
    }
}
