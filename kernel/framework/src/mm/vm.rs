//! User address spaces: [`VmSpace`], one level-4 page table per process whose upper half is
//! the kernel's (shared level-3 tables, see [`super::paging::share_kernel_half`]) and whose
//! lower half maps [`PageRef`]s with user permissions; and the copies between kernel buffers
//! and user memory ([`VmSpace::read_bytes`], [`VmSpace::write_bytes`]).
//!
//! **What the kernel decides, what this module guarantees.** Which page goes where (VMAs,
//! demand paging, copy-on-write) is the kernel's policy: it calls [`VmSpace::map`],
//! [`VmSpace::unmap`], [`VmSpace::protect`] page by page. This module guarantees that a user
//! mapping always holds a reference to its frame (so the frame is not freed or reused while
//! mapped), that no user mapping ever reaches the kernel half (addresses from
//! [`USER_END`] up are refused, and the copied kernel entries have no user bit), and that
//! every change is flushed from the TLB of every CPU that has the space loaded before the
//! call returns.
//!
//! **Copies never crash the kernel.** A copy into or out of the space loaded on this CPU (a task's
//! own system call) goes through the user addresses themselves, preemption off a page at a time,
//! with `arch::uaccess`'s routine: the hardware checks each access, and a fault on it resumes at
//! the routine's fixup, which reports how far it got. A copy into another space (a new program's
//! stack at `execve`, another process's memory) walks the page table under the space's lock and
//! copies through the physical-memory mapping. Either way a missing page or permission comes back
//! as a [`UserFault`] naming the first address that failed. The kernel then resolves it like a page
//! fault (a demand-zero page, a copy-on-write break) and retries, or answers EFAULT. So a bad
//! pointer can never crash the kernel; a page unmapped in the middle of a copy (by another thread)
//! faults it, after the unmap's TLB shootdown and before its frame is freed.
//!
//! **Entries.** A present leaf entry is PRESENT | USER, plus WRITABLE and NO_EXECUTE as its
//! [`Prot`] says, plus the software bit `HELD` (it holds a reference). A `PROT_NONE` page
//! keeps its frame in a non-present entry with `HELD` set, so `mprotect` back restores it.
//! Intermediate tables are PRESENT | WRITABLE | USER (the leaf decides); they are freed with
//! the space.
//!
//! **TLB.** Each CPU records the root it has loaded ([`loaded_root`]); a change flushes the
//! page here if this CPU has the space loaded and shoots down every other CPU's TLB if one
//! does (threads of one process on several CPUs). The context switch loads the space of the
//! task it switches to, and the kernel's own root for a kernel task, so a space nobody runs
//! is loaded nowhere.

use super::page::PageRef;
use crate::percpu::NR_CPUS;
use crate::sync::SpinLock;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

/// The first address above user space (the lower half of the 48-bit address space).
pub const USER_END: u64 = 0x0000_8000_0000_0000;
/// The highest address user mappings may end at (Linux's `TASK_SIZE_MAX`: one guard page
/// below [`USER_END`], so `syscall`'s return address is never non-canonical).
pub const TASK_SIZE: u64 = USER_END - 4096;
const PAGE: u64 = 4096;
/// Pages [`VmSpace::mapped`] gathers per lock hold.
const BATCH: usize = 32;
/// The most a direct user copy moves with preemption off (`VmSpace::copy_loaded`): a page,
/// as the walk copies one page per lock section.
const COPY_CHUNK: usize = 4096;

const PRESENT: u64 = 1;
const WRITABLE: u64 = 1 << 1;
const USER: u64 = 1 << 2;
const HUGE: u64 = 1 << 7;
/// Software bit: the entry holds a `PageRef` (present or `PROT_NONE`).
const HELD: u64 = 1 << 9;
const NO_EXECUTE: u64 = 1 << 63;
const ADDR: u64 = 0x000f_ffff_ffff_f000;

/// A user page's permissions (`PROT_READ`, `PROT_WRITE`, `PROT_EXEC`; x86 cannot map a page
/// writable or executable without making it readable, as on Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot {
    /// `PROT_READ`.
    pub read: bool,
    /// `PROT_WRITE`.
    pub write: bool,
    /// `PROT_EXEC`.
    pub exec: bool,
}

impl Prot {
    /// `PROT_NONE`: the page is kept but any access faults.
    pub const NONE: Prot = Prot { read: false, write: false, exec: false };
    /// `PROT_READ`.
    pub const READ: Prot = Prot { read: true, write: false, exec: false };
    /// `PROT_READ | PROT_WRITE`.
    pub const RW: Prot = Prot { read: true, write: true, exec: false };
    /// `PROT_READ | PROT_EXEC`.
    pub const RX: Prot = Prot { read: true, write: false, exec: true };

    fn is_none(self) -> bool {
        !(self.read || self.write || self.exec)
    }

    fn entry_bits(self) -> u64 {
        if self.is_none() {
            return HELD;
        }
        let mut bits = PRESENT | USER | HELD;
        if self.write {
            bits |= WRITABLE;
        }
        if !self.exec {
            bits |= NO_EXECUTE;
        }
        bits
    }

    fn of_entry(e: u64) -> Prot {
        if e & PRESENT == 0 {
            return Prot::NONE;
        }
        Prot { read: true, write: e & WRITABLE != 0, exec: e & NO_EXECUTE == 0 }
    }
}

/// A copy between the kernel and user memory stopped at `addr`: the page there is missing,
/// or does not allow the access (`write`: the copy was writing to user memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserFault {
    /// The first address the copy could not reach.
    pub addr: u64,
    /// Was the copy writing to user memory?
    pub write: bool,
}

/// Why a mapping could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmError {
    /// The address is not a page-aligned user address below [`TASK_SIZE`].
    BadAddress,
    /// No frame for a page table (the caller's ENOMEM).
    OutOfFrames,
}

/// Per CPU: the level-4 table it has loaded (kept by the context switch).
static LOADED: [AtomicU64; NR_CPUS] = [const { AtomicU64::new(0) }; NR_CPUS];

/// The root CPU `cpu` has loaded (0 before its first switch).
pub fn loaded_root(cpu: u32) -> u64 {
    LOADED.get(cpu as usize).map_or(0, |r| r.load(Ordering::Acquire))
}

/// Loads `root` into CR3 on this CPU unless it is loaded already. Interrupts off.
pub(crate) fn load_root(root: u64) {
    let cpu = crate::percpu::cpu_id() as usize;
    let (frame, flags) = x86_64::registers::control::Cr3::read_raw();
    if frame.start_address().as_u64() != root {
        // Record first: a change made after this store sees this CPU and shoots it down; one
        // made before it is in the tables the CR3 load below starts from.
        LOADED[cpu].store(root, Ordering::SeqCst);
        let frame = x86_64::structures::paging::PhysFrame::containing_address(x86_64::PhysAddr::new(root));
        // SAFETY: `root` is the kernel's root or a live `VmSpace`'s (the caller holds it), and
        // every root maps the kernel half identically, so the code and data running now stay
        // mapped.
        unsafe { x86_64::registers::control::Cr3::write_raw(frame, flags) };
    } else {
        LOADED[cpu].store(root, Ordering::SeqCst);
    }
}

/// A user address space (module doc).
pub struct VmSpace {
    root: u64,
    /// The tables' lock. A `SpinLock`: no interrupt handler walks a user space (a TLB
    /// shootdown's handler flushes without it), and every user copy that walks the tables
    /// takes it (a copy through the loaded space's own addresses needs none: `copy_loaded`).
    lock: SpinLock<()>,
    /// Pages mapped (the process's resident set: `VmRSS`, `stat`'s rss).
    resident: core::sync::atomic::AtomicU64,
    /// The most pages it has had mapped (Linux's `hiwater_rss`: `VmHWM`, `ru_maxrss`).
    hiwater: core::sync::atomic::AtomicU64,
}

fn table(phys: u64) -> *mut [u64; 512] {
    super::phys_to_virt(phys) as *mut [u64; 512]
}

fn index(va: u64, level: u32) -> usize {
    ((va >> (12 + 9 * (level - 1))) & 511) as usize
}

impl VmSpace {
    /// An empty user space sharing the kernel half; `None` if no frame is left.
    pub fn new() -> Option<Arc<VmSpace>> {
        let root = super::frame::alloc()?;
        let kernel = super::paging::kernel_root();
        // SAFETY: `root` is a fresh zeroed frame, ours alone; the kernel root's upper half is
        // only ever read here (its entries are fixed after `share_kernel_half`).
        unsafe {
            let (new, k) = (&mut *table(root), &*table(kernel));
            for i in 256..512 {
                new[i] = k[i] & !USER;
            }
        }
        Some(Arc::new(VmSpace {
            root,
            lock: SpinLock::new(()),
            resident: core::sync::atomic::AtomicU64::new(0),
            hiwater: core::sync::atomic::AtomicU64::new(0),
        }))
    }

    /// The level-4 table's physical address (what CR3 holds while a task of this space runs).
    pub fn root(&self) -> u64 {
        self.root
    }

    /// Pages mapped now.
    pub fn resident_pages(&self) -> u64 {
        self.resident.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// The most pages mapped at once so far.
    pub fn hiwater_pages(&self) -> u64 {
        self.hiwater.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// The leaf entry for `va` (lock held), making the tables on the way if `make`.
    fn leaf(&self, va: u64, make: bool) -> Result<Option<*mut u64>, VmError> {
        let mut t = self.root;
        for level in (2..=4).rev() {
            // SAFETY: `t` is this space's table (the root, or an entry's target below), reached
            // through the physical-memory mapping; the lock is held by the caller.
            let entry = unsafe { &mut (*table(t))[index(va, level)] };
            if *entry & PRESENT == 0 {
                if !make {
                    return Ok(None);
                }
                // Under the space's `SpinLock`: no direct reclaim here.
                let frame = super::frame::alloc_nonblocking().ok_or(VmError::OutOfFrames)?;
                *entry = frame | PRESENT | WRITABLE | USER;
            }
            debug_assert!(*entry & HUGE == 0, "no huge pages in user space");
            t = *entry & ADDR;
        }
        // SAFETY: as above, the level-1 table.
        Ok(Some(unsafe { &mut (*table(t))[index(va, 1)] as *mut u64 }))
    }

    fn check(va: u64) -> Result<(), VmError> {
        if !va.is_multiple_of(PAGE) || va >= TASK_SIZE {
            return Err(VmError::BadAddress);
        }
        Ok(())
    }

    /// Maps `page` at `va` with `prot`, replacing (and returning) what was mapped there.
    pub fn map(&self, va: u64, page: PageRef, prot: Prot) -> Result<Option<PageRef>, VmError> {
        Self::check(va)?;
        let old = {
            let _g = self.lock.lock();
            let entry = self.leaf(va, true)?.expect("made");
            // SAFETY: the entry is this space's, under the lock.
            let old = unsafe { *entry };
            // SAFETY: as above; the entry takes over `page`'s reference.
            unsafe { *entry = page.into_phys() | prot.entry_bits() };
            // SAFETY: a `HELD` entry holds a reference from `into_phys`, given back once here.
            (old & HELD != 0).then(|| unsafe { PageRef::from_phys(old & ADDR) })
        };
        if old.is_some() {
            self.flush(va);
        } else {
            let now = self.resident.fetch_add(1, core::sync::atomic::Ordering::Relaxed) + 1;
            self.hiwater.fetch_max(now, core::sync::atomic::Ordering::Relaxed);
        }
        Ok(old)
    }

    /// Unmaps the page at `va`, returning it (`None` if nothing was mapped there).
    pub fn unmap(&self, va: u64) -> Option<PageRef> {
        Self::check(va).ok()?;
        let old = {
            let _g = self.lock.lock();
            let entry = self.leaf(va, false).ok()??;
            // SAFETY: the entry is this space's, under the lock.
            let old = unsafe { core::ptr::replace(entry, 0) };
            // SAFETY: as in `map`.
            (old & HELD != 0).then(|| unsafe { PageRef::from_phys(old & ADDR) })
        };
        if old.is_some() {
            self.flush(va);
            self.resident.fetch_sub(1, core::sync::atomic::Ordering::Relaxed);
        }
        old
    }

    /// Changes the permissions of the page at `va`; false if nothing is mapped there.
    pub fn protect(&self, va: u64, prot: Prot) -> bool {
        if Self::check(va).is_err() {
            return false;
        }
        let changed = {
            let _g = self.lock.lock();
            let Ok(Some(entry)) = self.leaf(va, false) else { return false };
            // SAFETY: the entry is this space's, under the lock.
            let old = unsafe { *entry };
            if old & HELD == 0 {
                return false;
            }
            let new = (old & ADDR) | prot.entry_bits();
            // SAFETY: as above; the reference stays in the entry.
            unsafe { *entry = new };
            new != old
        };
        if changed {
            self.flush(va);
        }
        true
    }

    /// The page mapped at `va` (another reference to it) and its permissions.
    pub fn query(&self, va: u64) -> Option<(PageRef, Prot)> {
        let va = va & !(PAGE - 1);
        Self::check(va).ok()?;
        let _g = self.lock.lock();
        let entry = self.leaf(va, false).ok()??;
        // SAFETY: the entry is this space's, under the lock.
        let e = unsafe { *entry };
        // SAFETY: a `HELD` entry holds its reference while the lock is held.
        (e & HELD != 0).then(|| (unsafe { PageRef::clone_phys(e & ADDR) }, Prot::of_entry(e)))
    }

    /// Every page held in `[start, end)` (another reference to each) with its permissions,
    /// in address order; tables that are absent are skipped whole (a fork walks a 128 MiB
    /// reservation in a few steps). The walk takes the lock for batches of `BATCH` pages and
    /// grows the result outside it (no allocation with the lock held).
    pub fn mapped(&self, start: u64, end: u64) -> alloc::vec::Vec<(u64, PageRef, Prot)> {
        let mut out = alloc::vec::Vec::new();
        let end = end.min(USER_END);
        let mut va = start & !(PAGE - 1);
        while va < end {
            let mut batch: [Option<(u64, PageRef, Prot)>; BATCH] = [const { None }; BATCH];
            let mut n = 0;
            {
                let _g = self.lock.lock();
                while va < end && n < BATCH {
                    // Descend; at the first absent table skip what it would cover.
                    let mut t = self.root;
                    let mut skipped = false;
                    for level in (2..=4).rev() {
                        // SAFETY: `t` is this space's table (the root or an entry's target),
                        // under the lock.
                        let e = unsafe { (*table(t))[index(va, level)] };
                        if e & PRESENT == 0 {
                            let span = 1u64 << (12 + 9 * (level - 1));
                            va = (va & !(span - 1)) + span;
                            skipped = true;
                            break;
                        }
                        t = e & ADDR;
                    }
                    if skipped {
                        continue;
                    }
                    // SAFETY: as above, the level-1 table.
                    let e = unsafe { (*table(t))[index(va, 1)] };
                    if e & HELD != 0 {
                        // SAFETY: a held entry keeps its reference while the lock is held.
                        batch[n] = Some((va, unsafe { PageRef::clone_phys(e & ADDR) }, Prot::of_entry(e)));
                        n += 1;
                    }
                    va += PAGE;
                }
            }
            out.extend(batch.into_iter().flatten());
        }
        out
    }

    /// The first page at or after `from` and below `end` that holds a frame (present or
    /// `PROT_NONE`), if any. Absent tables are skipped whole, so walking a range costs the
    /// tables that exist in it, not its length: the kernel's per-page loops over a VMA
    /// (munmap, mprotect, MADV_DONTNEED) go from held page to held page with it, and a
    /// 64 TiB `PROT_NONE` reservation is as cheap to unmap as its few pages.
    pub fn next_held(&self, from: u64, end: u64) -> Option<u64> {
        let end = end.min(USER_END);
        let mut va = from.checked_add(PAGE - 1)? & !(PAGE - 1);
        let _g = self.lock.lock();
        'walk: while va < end {
            let mut t = self.root;
            for level in (2..=4).rev() {
                // SAFETY: `t` is this space's table (the root or an entry's target), under
                // the lock.
                let e = unsafe { (*table(t))[index(va, level)] };
                if e & PRESENT == 0 {
                    let span = 1u64 << (12 + 9 * (level - 1));
                    va = (va & !(span - 1)).checked_add(span)?;
                    continue 'walk;
                }
                t = e & ADDR;
            }
            // The level-1 table: scan its entries from `va`'s to the table's (or the range's) end.
            let table_end = (va & !((PAGE << 9) - 1)) + (PAGE << 9);
            while va < end && va < table_end {
                // SAFETY: as above, the level-1 table.
                if unsafe { (*table(t))[index(va, 1)] } & HELD != 0 {
                    return Some(va);
                }
                va += PAGE;
            }
        }
        None
    }

    /// Runs `f` on each page-sized piece of `[va, va + len)` that the entries allow (`write`:
    /// writable), with the piece's kernel address and its offset into the range.
    fn each_piece(&self, va: u64, len: usize, write: bool, mut f: impl FnMut(*mut u8, usize, usize)) -> Result<(), UserFault> {
        let end = va.checked_add(len as u64).filter(|&e| e <= USER_END).ok_or(UserFault { addr: va, write })?;
        let mut at = va;
        while at < end {
            let page = at & !(PAGE - 1);
            let n = ((page + PAGE).min(end) - at) as usize;
            let _g = self.lock.lock();
            let fault = UserFault { addr: at, write };
            let entry = self.leaf(page, false).map_err(|_| fault)?.ok_or(fault)?;
            // SAFETY: the entry is this space's, under the lock.
            let e = unsafe { *entry };
            if e & (PRESENT | USER) != PRESENT | USER || (write && e & WRITABLE == 0) {
                return Err(fault);
            }
            let kaddr = super::phys_to_virt((e & ADDR) + (at - page)) as *mut u8;
            f(kaddr, (at - va) as usize, n);
            at += n as u64;
        }
        Ok(())
    }

    /// Copies through the user addresses themselves (`arch::uaccess`) while this space is the
    /// one loaded on this CPU, as it is for a task's own system calls: no page walk in
    /// software, no lock, and under TCG no soft-TLB refill of the tables' and the frame's pages
    /// in the physical mapping. Returns how many bytes it copied: all of them, or fewer (none,
    /// in practice) if the space is not loaded here, for the caller to walk the tables for the
    /// rest; or the fault that stopped it. Preemption is off for one chunk of at most
    /// [`COPY_CHUNK`] bytes at a time, so a long copy is no long non-preemptible section.
    fn copy_loaded(&self, va: u64, len: usize, write: bool, kernel: *mut u8) -> Result<usize, UserFault> {
        if va.checked_add(len as u64).is_none_or(|end| end > USER_END) {
            return Ok(0); // the walk reports it
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(COPY_CHUNK);
            let at = va + done as u64;
            let _stay = crate::preempt::preempt_disable();
            if loaded_root(crate::percpu::cpu_id()) != self.root {
                break;
            }
            // SAFETY: `kernel..+len` is the caller's slice, so `kernel + done..+n` is inside
            // it; `at..+n` ends below USER_END (checked above); the space is loaded here and
            // stays so, preemption being off until the chunk ends (only a switch changes CR3).
            let left = unsafe {
                let k = kernel.add(done);
                let (dst, src) = if write { (at as *mut u8, k as *const u8) } else { (k, at as *const u8) };
                crate::arch::uaccess::copy_user(dst, src, n)
            };
            if left != 0 {
                return Err(UserFault { addr: at + (n - left) as u64, write });
            }
            done += n;
        }
        Ok(done)
    }

    /// Copies user memory at `va` into `buf`; stops at the first page it cannot read.
    pub fn read_bytes(&self, va: u64, buf: &mut [u8]) -> Result<(), UserFault> {
        let done = self.copy_loaded(va, buf.len(), false, buf.as_mut_ptr())?;
        if done > 0 && done == buf.len() {
            return Ok(());
        }
        // The walk also answers an empty copy: a fault if `va` is out of range, as before.
        let (va, buf) = (va + done as u64, &mut buf[done..]);
        let dst = buf.as_mut_ptr();
        self.each_piece(va, buf.len(), false, |src, off, n| {
            // SAFETY: `src..src+n` is inside a mapped user frame (the lock held by `each_piece`
            // keeps it mapped, so it is not freed); `dst+off..+n` is inside `buf`. The frame
            // holds user data only; a concurrent user write makes the bytes mixed, no more.
            unsafe { core::ptr::copy_nonoverlapping(src as *const u8, dst.add(off), n) }
        })
    }

    /// Copies `buf` into user memory at `va`; stops at the first page it cannot write.
    pub fn write_bytes(&self, va: u64, buf: &[u8]) -> Result<(), UserFault> {
        let done = self.copy_loaded(va, buf.len(), true, buf.as_ptr().cast_mut())?;
        if done > 0 && done == buf.len() {
            return Ok(());
        }
        // As in `read_bytes`.
        let (va, buf) = (va + done as u64, &buf[done..]);
        let src = buf.as_ptr();
        self.each_piece(va, buf.len(), true, |dst, off, n| {
            // SAFETY: as in `read_bytes`, with the entry writable (checked).
            unsafe { core::ptr::copy_nonoverlapping(src.add(off), dst, n) }
        })
    }

    /// Runs `f` on the user word at `va` as an atomic (futexes: compare-and-exchange and the
    /// read-modify-write operations of `FUTEX_WAKE_OP`, atomic against the program's own
    /// threads on other CPUs). `va` must be 4-byte aligned (else a fault is reported, which
    /// callers check first to answer EINVAL) and the page mapped writable (a copy-on-write
    /// page reports a write fault, which the caller resolves and retries). `f` runs under the
    /// space's lock (preemption off): keep it to the atomic operation.
    pub fn atomic_u32<R>(&self, va: u64, f: impl FnOnce(&core::sync::atomic::AtomicU32) -> R) -> Result<R, UserFault> {
        if !va.is_multiple_of(4) {
            return Err(UserFault { addr: va, write: true });
        }
        let mut f = Some(f);
        let mut out = None;
        self.each_piece(va, 4, true, |dst, _, _| {
            if let Some(f) = f.take() {
                // The word is 4-byte aligned (`va` is, frames are page-aligned); every other
                // access to it (user code, other kernel paths) is an aligned plain or atomic one.
                // SAFETY: `dst` lies in a writable user frame that `each_piece`'s lock keeps
                // mapped, aligned as above; `AtomicU32` has the layout of a `u32`.
                let word = unsafe { &*(dst as *const core::sync::atomic::AtomicU32) };
                out = Some(f(word));
            }
        })?;
        Ok(out.expect("a 4-byte aligned word is one piece"))
    }

    /// Zeroes `len` bytes of user memory at `va` (Linux's `clear_user`).
    pub fn zero_bytes(&self, va: u64, len: usize) -> Result<(), UserFault> {
        self.each_piece(va, len, true, |dst, _, n| {
            // SAFETY: as in `write_bytes`.
            unsafe { core::ptr::write_bytes(dst, 0, n) }
        })
    }

    /// Makes a change at `va` visible to every CPU with this space loaded.
    fn flush(&self, va: u64) {
        let me = crate::percpu::cpu_id();
        if loaded_root(me) == self.root {
            x86_64::instructions::tlb::flush(x86_64::VirtAddr::new(va));
        }
        core::sync::atomic::fence(Ordering::SeqCst);
        let remote = crate::percpu::online_cpus().any(|c| c.cpu_id != me && loaded_root(c.cpu_id) == self.root);
        if remote {
            assert!(crate::mm::tlb::shootdown_all(), "TLB shootdown for a user mapping did not complete");
        }
    }
}

impl Drop for VmSpace {
    fn drop(&mut self) {
        // No CPU has the space loaded: a task holds its space while it runs (the switch loads
        // the next task's root before the last reference can go).
        fn free_level(t: u64, level: u32) {
            for i in 0..512 {
                // SAFETY: `t` is one of this space's tables, which nobody else reaches any more
                // (the space is being dropped, and loaded on no CPU).
                let e = unsafe { (*table(t))[i] };
                if level == 1 {
                    if e & HELD != 0 {
                        // SAFETY: a held entry's reference, taken back once (the table goes).
                        drop(unsafe { PageRef::from_phys(e & ADDR) });
                    }
                } else if e & PRESENT != 0 {
                    free_level(e & ADDR, level - 1);
                    super::frame::free(e & ADDR);
                }
            }
        }
        for i in 0..256 {
            // SAFETY: the root is ours (as above).
            let e = unsafe { (*table(self.root))[i] };
            if e & PRESENT != 0 {
                free_level(e & ADDR, 3);
                super::frame::free(e & ADDR);
            }
        }
        super::frame::free(self.root);
    }
}
