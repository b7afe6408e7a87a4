//! A process's memory: its [`VmSpace`] (the framework's page table) and the VMAs that say what
//! each range of addresses is (Linux's `mm_struct` and `vm_area_struct`). Pages come in on
//! demand: a fault in a VMA maps a zeroed page (anonymous memory) or a copy of the file's bytes
//! (a private file mapping), through the page allocator's watermarks, so RT tasks' reserve
//! applies to their faults. Copies between the kernel and user memory go through the page
//! table ([`Mm::read`], [`Mm::write`]), resolving faults the same way, and fail with EFAULT
//! where the process could not have made the access itself.

use crate::fs::vfs::Inode;
use crate::mm::page::PageRef;
use crate::mm::vm::{Prot, UserFault, VmSpace, TASK_SIZE};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// RLIMIT_STACK's resource number.
pub const RLIMIT_STACK: usize = 3;
/// RLIMIT_MEMLOCK's resource number.
pub const RLIMIT_MEMLOCK: usize = 8;
/// RLIMIT_AS's resource number.
pub const RLIMIT_AS: usize = 9;

/// Bytes in a page.
pub const PAGE: u64 = 4096;
/// The initial stack's top (Linux's non-randomized `STACK_TOP`, just below `TASK_SIZE`).
pub const STACK_TOP: u64 = TASK_SIZE;
/// The stack's reservation (RLIMIT_STACK's default, 8 MiB), backed on demand.
pub const STACK_SIZE: u64 = 8 << 20;
/// Linux's `stack_expand`: what `execve` maps below the arguments' pages for the stack to use
/// before it must grow (Linux's `setup_arg_pages`).
pub const STACK_EXPAND: u64 = 128 << 10;
/// Linux's `stack_guard_gap` (256 pages): the stack does not grow closer than this to an
/// accessible mapping below it.
pub const STACK_GUARD_GAP: u64 = 256 * PAGE;
/// Linux's `mmap_min_addr` on x86 (`vm.mmap_min_addr`, 64 KiB): nothing is mapped below it.
pub const MMAP_MIN_ADDR: u64 = 0x10000;
/// Where `mmap` without a hint starts searching downward (Linux's non-randomized
/// `mmap_base`: `TASK_SIZE` minus a 128 MiB gap for the stack).
pub const MMAP_BASE: u64 = TASK_SIZE - (128 << 20);

/// What backs a VMA.
#[derive(Clone)]
pub enum Backing {
    /// Zero-filled on first touch.
    Anonymous,
    /// A file's bytes from `offset`, up to file offset `limit` (past it, and past the file's
    /// end, pages read zero: an ELF segment's .bss start).
    File {
        /// The file.
        inode: Arc<Inode>,
        /// The file offset of the VMA's start.
        offset: u64,
        /// The file offset where the mapped bytes end.
        limit: u64,
        /// Was the file open for writing when it was mapped? (Linux's `VM_MAYWRITE` for a
        /// shared mapping: without it `mprotect` may not make the mapping writable, so a
        /// program cannot write a file it could only read.)
        may_write: bool,
    },
}

/// A VMA's mlock state (Linux's VM_LOCKED and VM_LOCKONFAULT). Pages are never swapped, so
/// what it changes is the accounting (RLIMIT_MEMLOCK, `VmLck`) and when pages come in: at once
/// for `Locked`, at first touch for `OnFault`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Lock {
    /// Not locked.
    #[default]
    Unlocked,
    /// VM_LOCKED: `mlock`, `mlockall(MCL_CURRENT)`, MAP_LOCKED, MCL_FUTURE's later mappings.
    Locked,
    /// VM_LOCKED | VM_LOCKONFAULT: locked, but populated by faults (MCL_ONFAULT).
    OnFault,
}

/// One mapped range `[start, end)`.
#[derive(Clone)]
pub struct Vma {
    /// First address (page-aligned).
    pub start: u64,
    /// End address (page-aligned, exclusive).
    pub end: u64,
    /// `PROT_*`.
    pub prot: Prot,
    /// What fills its pages.
    pub backing: Backing,
    /// MAP_SHARED: a fork shares its pages writable (no copy-on-write).
    pub shared: bool,
    /// mlock state (counted in [`Mm::locked_pages`]).
    pub lock: Lock,
    /// VM_GROWSDOWN: the stack, which a fault below it extends ([`Mm::fault`]).
    pub grows_down: bool,
}

impl Vma {
    /// A VMA, unlocked and not growing.
    pub fn new(start: u64, end: u64, prot: Prot, backing: Backing, shared: bool) -> Vma {
        Vma { start, end, prot, backing, shared, lock: Lock::Unlocked, grows_down: false }
    }

    /// Pages in the VMA.
    pub fn pages(&self) -> u64 {
        (self.end - self.start) / PAGE
    }

    /// Can the process access it at all (Linux's `vma_is_accessible`)?
    pub fn accessible(&self) -> bool {
        self.prot.read || self.prot.write || self.prot.exec
    }

    /// The VMA's part from `addr` (a split: the file offset follows).
    fn tail_from(&self, addr: u64) -> Vma {
        let backing = match &self.backing {
            Backing::Anonymous => Backing::Anonymous,
            Backing::File { inode, offset, limit, may_write } => {
                Backing::File { inode: inode.clone(), offset: offset + (addr - self.start), limit: *limit, may_write: *may_write }
            }
        };
        Vma { start: addr, end: self.end, backing, ..self.clone() }
    }
}

/// A process's address space (module doc).
pub struct Mm {
    /// The page table.
    pub space: Arc<VmSpace>,
    /// VMAs by start address, never overlapping.
    vmas: BTreeMap<u64, Vma>,
    /// The program break's start (just past the loaded image) and its current value.
    pub brk_start: u64,
    /// The current program break.
    pub brk: u64,
    /// `mlockall(MCL_FUTURE)` (Linux's `def_flags`): what new mappings and the break's growth
    /// are (`Locked`: they come in at once).
    pub def_lock: Lock,
    /// The arguments `execve` gave, each NUL-terminated (`/proc/PID/cmdline`).
    pub cmdline: Vec<u8>,
    /// The program's absolute path (`/proc/PID/exe`).
    pub exe: String,
    /// The program's file, denied to writers while this space runs it (Linux 6.1 denies
    /// write access to every mm's `exe_file`).
    pub exe_file: Option<ExeFile>,
}

/// A program's file held by an address space: write access denied while held (ETXTBSY for
/// `open` to write and `truncate`), so the pages a fault reads later are the pages exec saw.
pub struct ExeFile(Arc<Inode>);

impl ExeFile {
    /// Denies writers `inode`; ETXTBSY if it is open for writing.
    pub fn deny(inode: &Arc<Inode>) -> Result<ExeFile, Errno> {
        inode.deny_write_access()?;
        Ok(ExeFile(inode.clone()))
    }
}

impl Clone for ExeFile {
    fn clone(&self) -> ExeFile {
        // Already denied: one more denial always succeeds.
        let _ = self.0.deny_write_access();
        ExeFile(self.0.clone())
    }
}

impl Drop for ExeFile {
    fn drop(&mut self) {
        self.0.allow_write_access();
    }
}

/// Rounds up to a page.
pub fn page_up(x: u64) -> Option<u64> {
    x.checked_add(PAGE - 1).map(|v| v & !(PAGE - 1))
}

impl Mm {
    /// An empty address space; ENOMEM if no frame is left for its page table.
    pub fn new() -> Result<Mm, Errno> {
        Ok(Mm {
            space: VmSpace::new().ok_or(Errno::ENOMEM)?,
            vmas: BTreeMap::new(),
            brk_start: 0,
            brk: 0,
            def_lock: Lock::Unlocked,
            cmdline: Vec::new(),
            exe: String::new(),
            exe_file: None,
        })
    }

    /// The VMAs in address order.
    pub fn vmas(&self) -> impl Iterator<Item = &Vma> {
        self.vmas.values()
    }

    /// Pages of all VMAs (Linux's `total_vm`).
    pub fn total_pages(&self) -> u64 {
        self.vmas.values().map(Vma::pages).sum()
    }

    /// Pages of locked VMAs (Linux's `locked_vm`, `VmLck`).
    pub fn locked_pages(&self) -> u64 {
        self.vmas.values().filter(|v| v.lock != Lock::Unlocked).map(Vma::pages).sum()
    }

    /// Pages of `[start, end)` in locked VMAs (Linux's `count_mm_mlocked_page_nr`).
    pub fn locked_pages_in(&self, start: u64, end: u64) -> u64 {
        self.vmas
            .range(..end)
            .map(|(_, v)| v)
            .filter(|v| v.end > start && v.lock != Lock::Unlocked)
            .map(|v| (v.end.min(end) - v.start.max(start)) / PAGE)
            .sum()
    }

    /// Pages mapped now (the resident set).
    pub fn resident_pages(&self) -> u64 {
        self.space.resident_pages()
    }

    /// The VMA containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Vma> {
        self.vmas.range(..=addr).next_back().map(|(_, v)| v).filter(|v| addr < v.end)
    }

    /// Removes every VMA part in `[start, end)` and unmaps its pages (munmap's core; the
    /// range is page-aligned).
    pub fn unmap_range(&mut self, start: u64, end: u64) {
        let overlapping: Vec<u64> = self.vmas.range(..end).filter(|(_, v)| v.end > start).map(|(&s, _)| s).collect();
        for s in overlapping {
            let v = self.vmas.remove(&s).expect("listed");
            if v.start < start {
                let mut head = v.clone();
                head.end = start;
                self.vmas.insert(head.start, head);
            }
            if v.end > end {
                let tail = v.tail_from(end);
                self.vmas.insert(tail.start, tail);
            }
            self.drop_pages(v.start.max(start), v.end.min(end));
        }
    }

    /// Unmaps every page held in `[start, end)`, going from held page to held page
    /// ([`VmSpace::next_held`]): a VMA may span terabytes of which few pages were touched.
    /// The VMAs stay (MADV_DONTNEED; munmap's core removes them first).
    pub fn drop_pages(&self, start: u64, end: u64) {
        let mut at = start;
        while let Some(page) = self.space.next_held(at, end) {
            drop(self.space.unmap(page));
            at = page + PAGE;
        }
    }

    /// Maps `[start, start + len)` (page-aligned) as a new VMA, replacing what was there
    /// (MAP_FIXED semantics).
    pub fn insert(&mut self, vma: Vma) {
        self.unmap_range(vma.start, vma.end);
        self.vmas.insert(vma.start, vma);
    }

    /// Is `[start, end)` free of mappings?
    pub fn range_free(&self, start: u64, end: u64) -> bool {
        self.vmas.range(..end).next_back().is_none_or(|(_, v)| v.end <= start)
    }

    /// Changes the permissions of `[start, end)` (page-aligned; every page must be mapped,
    /// else ENOMEM as Linux's mprotect; a shared mapping of a file that was not open for
    /// writing cannot become writable: EACCES, nothing changed).
    pub fn protect(&mut self, start: u64, end: u64, prot: Prot) -> Result<(), Errno> {
        let mut at = start;
        while at < end {
            let v = self.find(at).ok_or(Errno::ENOMEM)?;
            if prot.write && v.shared && matches!(v.backing, Backing::File { may_write: false, .. }) {
                return Err(Errno::EACCES);
            }
            at = v.end;
        }
        // Split at both ends, then change the middle.
        self.split_at(start);
        self.split_at(end);
        for (_, v) in self.vmas.range_mut(start..end) {
            v.prot = prot;
            let mut at = v.start;
            while let Some(page) = self.space.next_held(at, v.end) {
                self.space.protect(page, prot);
                at = page + PAGE;
            }
        }
        Ok(())
    }

    /// Splits the VMA containing `cut` (if any, and if `cut` is not its start) in two there.
    fn split_at(&mut self, cut: u64) {
        if let Some(v) = self.find(cut).cloned() {
            if v.start < cut {
                let tail = v.tail_from(cut);
                self.vmas.get_mut(&v.start).expect("found").end = cut;
                self.vmas.insert(cut, tail);
            }
        }
    }

    /// Sets the mlock state of `[start, end)` (page-aligned), VMA by VMA from `start`, splitting
    /// the VMAs at both ends (Linux's `apply_vma_lock_flags`): ENOMEM at the first page not
    /// mapped, what came before it changed (as Linux).
    pub fn set_lock(&mut self, start: u64, end: u64, lock: Lock) -> Result<(), Errno> {
        if end == start {
            return Ok(());
        }
        let mut at = start;
        while at < end {
            let v = self.find(at).ok_or(Errno::ENOMEM)?;
            let (vstart, vend) = (v.start, v.end);
            if v.lock != lock {
                self.split_at(at);
                self.split_at(vend.min(end));
                self.vmas.get_mut(&at.max(vstart)).expect("split").lock = lock;
            }
            at = vend;
        }
        Ok(())
    }

    /// Sets every VMA's mlock state (`mlockall(MCL_CURRENT)`, `munlockall`).
    pub fn set_lock_all(&mut self, lock: Lock) {
        for v in self.vmas.values_mut() {
            v.lock = lock;
        }
    }

    /// Extends the stack VMA above `addr` down to `addr`'s page, with Linux's checks
    /// (`expand_downwards`, `acct_stack_growth`): the VMA must grow down, stay
    /// [`STACK_GUARD_GAP`] above an accessible mapping below it and above [`MMAP_MIN_ADDR`],
    /// and the growth keep the address space within RLIMIT_AS, the stack within RLIMIT_STACK
    /// and, for a locked stack, the locked pages within RLIMIT_MEMLOCK (unless the caller has
    /// CAP_IPC_LOCK). The limits are the calling thread's, as Linux's `current`. ENOMEM when
    /// refused (the fault's SIGSEGV).
    fn expand_stack(&mut self, addr: u64) -> Result<(), Errno> {
        let page = addr & !(PAGE - 1);
        let (&vstart, v) = self.vmas.range(addr..).next().ok_or(Errno::ENOMEM)?;
        if !v.grows_down || page < MMAP_MIN_ADDR {
            return Err(Errno::ENOMEM);
        }
        if let Some((_, prev)) = self.vmas.range(..vstart).next_back() {
            if !prev.grows_down && prev.accessible() && page - prev.end < STACK_GUARD_GAP {
                return Err(Errno::ENOMEM);
            }
        }
        let (size, grow, locked) = (v.end - page, (vstart - page) / PAGE, v.lock != Lock::Unlocked);
        let t = super::thread_of(&crate::sched::current()).ok_or(Errno::ENOMEM)?;
        let limits = *t.process.rlimits.lock_uninterruptible();
        let (as_limit, stack_limit, memlock_limit) = (limits[RLIMIT_AS].0, limits[RLIMIT_STACK].0, limits[RLIMIT_MEMLOCK].0);
        if self.total_pages() + grow > as_limit / PAGE || size > stack_limit {
            return Err(Errno::ENOMEM);
        }
        if locked && self.locked_pages() + grow > memlock_limit / PAGE && !super::capable_ipc_lock(&t) {
            return Err(Errno::ENOMEM);
        }
        let mut v = self.vmas.remove(&vstart).expect("listed");
        v.start = page;
        self.vmas.insert(page, v);
        Ok(())
    }

    /// A free range of `len` bytes (page-aligned) below [`MMAP_BASE`], searching downward
    /// (Linux's top-down allocator); ENOMEM if none.
    pub fn free_range(&self, len: u64) -> Result<u64, Errno> {
        let mut top = MMAP_BASE;
        for (_, v) in self.vmas.range(..MMAP_BASE).rev() {
            if v.end <= top && top - v.end >= len {
                return Ok(top - len);
            }
            top = top.min(v.start);
        }
        top.checked_sub(len).filter(|&a| a >= 0x10000).ok_or(Errno::ENOMEM)
    }

    /// Resolves a fault at `addr` (`write`: a write access): below the stack, grows it first
    /// ([`Mm::expand_stack`]); maps the page its VMA says, or
    /// gives a copy-on-write page its own copy (or takes it over, if no one else maps it).
    /// EFAULT if no VMA covers it or its permissions refuse the access (the process's
    /// SIGSEGV); ENOMEM if no frame is left.
    pub fn fault(&mut self, addr: u64, write: bool) -> Result<(), Errno> {
        if self.find(addr).is_none() {
            self.expand_stack(addr).map_err(|_| Errno::EFAULT)?;
        }
        let v = self.find(addr).ok_or(Errno::EFAULT)?;
        if (write && !v.prot.write) || !(v.prot.read || v.prot.write || v.prot.exec) {
            return Err(Errno::EFAULT);
        }
        let page = addr & !(PAGE - 1);
        if let Some((frame, prot)) = self.space.query(page) {
            if write && !prot.write {
                // Copy-on-write: `frame` is one reference, the entry another; more means the
                // page is shared with another space (a fork). A shared mapping's page is
                // never copied.
                if frame.count() <= 2 || v.shared {
                    self.space.protect(page, v.prot);
                } else {
                    if crate::mm::fail_alloc::should_fail("fault_cow") {
                        return Err(Errno::ENOMEM);
                    }
                    let copy = frame.duplicate().ok_or(Errno::ENOMEM)?;
                    self.space.map(page, copy, v.prot).map_err(|_| Errno::ENOMEM)?;
                }
            } else if prot != v.prot && !(v.prot.write && !prot.write) {
                // Mapped already (another fault won, or a stale TLB entry): only the
                // permissions may lag the VMA's.
                self.space.protect(page, v.prot);
            }
            return Ok(());
        }
        if let (true, Backing::File { inode, offset, .. }) = (v.shared, &v.backing) {
            // A shared file mapping maps the file's own frame: writes are the file's. Past the
            // file's end there is none: EIO, the thread's SIGBUS.
            let index = (offset + (page - v.start)) / PAGE;
            if crate::mm::fail_alloc::should_fail("fault_file") {
                return Err(Errno::ENOMEM);
            }
            let frame = inode.shared_page(index)?.ok_or(Errno::EIO)?;
            self.space.map(page, frame, v.prot).map_err(|_| Errno::ENOMEM)?;
            return Ok(());
        }
        let site = if matches!(v.backing, Backing::File { .. }) { "fault_file" } else { "fault_anon" };
        if crate::mm::fail_alloc::should_fail(site) {
            return Err(Errno::ENOMEM);
        }
        let frame = PageRef::alloc().ok_or(Errno::ENOMEM)?;
        if let Backing::File { inode, offset, limit, .. } = &v.backing {
            let at = offset + (page - v.start);
            if at < *limit {
                let n = (limit - at).min(PAGE) as usize;
                let mut buf = alloc::vec![0u8; n];
                let got = inode.read_at(at, &mut buf)?;
                frame.write_at(0, &buf[..got]);
            }
        }
        self.space.map(page, frame, v.prot).map_err(|_| Errno::ENOMEM)?;
        Ok(())
    }

    /// Heap bytes [`Mm::fork`]'s copy takes, about (its VMA tree: a B-tree node holds up to 11
    /// entries and two thirds of them on average; its page tables are frames, counted apart).
    pub fn fork_heap_bytes(&self) -> usize {
        self.vmas.len() * (core::mem::size_of::<u64>() + core::mem::size_of::<Vma>()) * 3 / 2 + 1024
    }

    /// A copy for a child (`fork`): the same VMAs; every mapped page shared, and a writable one
    /// made read-only in both, so the first write to it copies it (copy-on-write).
    pub fn fork(&self) -> Result<Mm, Errno> {
        if crate::mm::fail_alloc::should_fail("fork_mm") {
            return Err(Errno::ENOMEM);
        }
        // mlockall's MCL_FUTURE and the VMAs' locks are not inherited (Linux's `dup_mmap`
        // clears VM_LOCKED in the child and `mm_init` its `def_flags`).
        let child = Mm {
            space: VmSpace::new().ok_or(Errno::ENOMEM)?,
            vmas: self.vmas.iter().map(|(&s, v)| (s, Vma { lock: Lock::Unlocked, ..v.clone() })).collect(),
            brk_start: self.brk_start,
            brk: self.brk,
            def_lock: Lock::Unlocked,
            cmdline: self.cmdline.clone(),
            exe: self.exe.clone(),
            exe_file: self.exe_file.clone(),
        };
        for v in self.vmas.values() {
            for (page, frame, prot) in self.space.mapped(v.start, v.end) {
                if v.shared {
                    child.space.map(page, frame, prot).map_err(|_| Errno::ENOMEM)?;
                    continue;
                }
                let cow = Prot { write: false, ..prot };
                if prot.write {
                    self.space.protect(page, cow);
                }
                child.space.map(page, frame, cow).map_err(|_| Errno::ENOMEM)?;
            }
        }
        Ok(child)
    }

    /// Resolves faults until `op` succeeds or a fault cannot be resolved: EFAULT, whatever
    /// the fault's reason (no VMA, its permissions, no memory, a shared file page past the
    /// file's end), as Linux's `copy_to_user` / `copy_from_user` (a kernel-mode fault the page
    /// fault handler cannot resolve takes the exception fixup, never the OOM kill or SIGBUS).
    fn with_faults(&mut self, mut op: impl FnMut(&VmSpace) -> Result<(), UserFault>) -> Result<(), Errno> {
        loop {
            match op(&self.space) {
                Ok(()) => return Ok(()),
                Err(f) => self.fault(f.addr, f.write).map_err(|_| Errno::EFAULT)?,
            }
        }
    }

    /// Copies user memory at `addr` into `buf` (EFAULT where the process could not read).
    pub fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.with_faults(|s| s.read_bytes(addr, buf))
    }

    /// Copies `buf` into user memory at `addr` (EFAULT where the process could not write).
    pub fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), Errno> {
        self.with_faults(|s| s.write_bytes(addr, buf))
    }

    /// Reads a NUL-terminated string of at most `max` bytes (ENAMETOOLONG past it).
    pub fn read_cstr(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
        read_cstr(|at, chunk| self.read(at, chunk), addr, max)
    }

    /// Faults every page of `[start, end)` in now (for the ELF image and mlockall), but for
    /// VMAs locked on fault (MCL_ONFAULT) and inaccessible ones.
    pub fn populate(&mut self, start: u64, end: u64) -> Result<(), Errno> {
        let start = start & !(PAGE - 1);
        // The VMAs in the range (not every page of it: `mlockall` asks for all of user space).
        let ranges: Vec<(u64, u64)> = self
            .vmas
            .range(..end)
            .map(|(_, v)| v)
            .filter(|v| v.end > start && v.accessible() && v.lock != Lock::OnFault)
            .map(|v| (v.start.max(start), v.end.min(end)))
            .collect();
        for (from, to) in ranges {
            let mut page = from;
            while page < to {
                self.fault(page, false)?;
                page += PAGE;
            }
        }
        Ok(())
    }
}

/// Pages [`populate_after_map`] faults in under one taking of the lock (256 KiB).
pub const POPULATE_BATCH_PAGES: u64 = 64;

/// How long [`populate_after_map`] leaves the lock to a task it woke (a woken vCPU under TCG
/// runs within tens of microseconds unless the host has descheduled it).
pub const POPULATE_YIELD_NS: u64 = 200_000;

/// Linux's `mm_populate` after `mmap`, `brk` or `mlockall` made locked or MAP_POPULATE
/// memory: faults `[start, end)` in as [`Mm::populate`] does (inaccessible VMAs and those
/// locked on fault skipped), taking `mm`'s lock for [`POPULATE_BATCH_PAGES`] pages at a time,
/// so a fault, `mmap` or `futex` of another thread of the process waits for one batch and not
/// for the whole range (Linux populates under the read lock). Each batch looks its VMA up
/// again: what was unmapped meanwhile is skipped, what was mapped there since is populated as
/// its own. The caller holds no lock of `mm`. A page that cannot be had ends it: it comes at
/// first touch (the error is not the call's, as in Linux).
///
/// The mutex does not hand itself over, so after a batch that woke a waiter this yields, then
/// waits (up to [`POPULATE_YIELD_NS`], preemptible) for the woken task to take the lock before
/// taking it again; taken back at once, a waiter on another CPU woke to a held lock every time
/// and slept until the whole range was in.
pub fn populate_after_map(mm: &crate::sched::wait::Mutex<Mm>, start: u64, end: u64) {
    // Errors end it quietly: the page comes at first touch.
    let _ = populate_batched(mm, start, end, false);
}

/// `mlock`'s populating of `[start, end)` after its `apply_lock` (Linux's `__mm_populate`
/// with `__mlock_posix_error_return`), batched and with the lock left between batches as
/// [`populate_after_map`]: VMAs locked on fault are skipped, an inaccessible one stops it with
/// ENOMEM (Linux's EFAULT), no memory is EAGAIN. What was unmapped meanwhile is skipped, as in
/// Linux, which populates after dropping `mmap_lock` too.
pub fn populate_mlocked(mm: &crate::sched::wait::Mutex<Mm>, start: u64, end: u64) -> Result<(), Errno> {
    populate_batched(mm, start, end, true)
}

/// The loop of [`populate_after_map`] (`mlock`: false) and [`populate_mlocked`] (true).
fn populate_batched(mm: &crate::sched::wait::Mutex<Mm>, start: u64, end: u64, mlock: bool) -> Result<(), Errno> {
    let mut at = start & !(PAGE - 1);
    while at < end {
        let mut g = mm.lock_uninterruptible();
        // The VMA holding `at`, or the first one after it.
        let first = g.vmas.range(..=at).next_back().map_or(at, |(&s, _)| s);
        let next = g
            .vmas
            .range(first..end)
            .map(|(_, v)| v)
            .find(|v| v.end > at && (mlock || v.accessible()) && v.lock != Lock::OnFault)
            .map(|v| (v.start.max(at), v.end.min(end), v.accessible()));
        let Some((from, to, accessible)) = next else { return Ok(()) };
        if !accessible {
            return Err(Errno::ENOMEM);
        }
        let stop = to.min(from.saturating_add(POPULATE_BATCH_PAGES * PAGE));
        g.populate(from, stop).map_err(|e| if e == Errno::ENOMEM { Errno::EAGAIN } else { Errno::ENOMEM })?;
        at = stop;
        if crate::sched::wait::Mutex::unlock_woke(g) {
            // A woken task of this CPU that did not preempt us runs now (an RT one already
            // has); one of another CPU gets the spin.
            crate::sched::yield_now();
            let until = crate::time::uptime_ns() + POPULATE_YIELD_NS;
            while !mm.is_locked() && crate::time::uptime_ns() < until {
                core::hint::spin_loop();
            }
        }
    }
    Ok(())
}

/// A NUL-terminated string of at most `max` bytes at `addr` (ENAMETOOLONG past it), read
/// through `read` in pieces that never cross a page (a string that ends before an unmapped
/// page is read whole).
pub fn read_cstr(mut read: impl FnMut(u64, &mut [u8]) -> Result<(), Errno>, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut at = addr;
    loop {
        let mut chunk = [0u8; 64];
        let n = (PAGE - at % PAGE).min(64) as usize;
        read(at, &mut chunk[..n])?;
        if let Some(z) = chunk[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..z]);
            return Ok(out);
        }
        out.extend_from_slice(&chunk[..n]);
        if out.len() > max {
            return Err(Errno::ENAMETOOLONG);
        }
        at += n as u64;
    }
}
