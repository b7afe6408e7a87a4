//! Memory system calls: `brk`, `mmap`, `munmap`, `mprotect`, `madvise` (Linux `mm/mmap.c`,
//! `mm/mprotect.c`, `mm/madvise.c`), over the process's VMAs (`process::mm`).

use super::{ok, Outcome};
use crate::fs::file::Kind;
use crate::fs::vfs::{Device, S_IFREG};
use crate::mm::vm::{Prot, TASK_SIZE};
use crate::process::mm::{page_up, Backing, Lock, Mm, Vma, PAGE, RLIMIT_AS, RLIMIT_MEMLOCK};
use crate::process::Thread;
use cadence_abi::errno::Errno;
use framework::user::UserContext;

const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;
const PROT_GROWSDOWN: u64 = 0x0100_0000;
const PROT_GROWSUP: u64 = 0x0200_0000;
const MAP_SHARED: u64 = 0x01;
const MAP_PRIVATE: u64 = 0x02;
const MAP_SHARED_VALIDATE: u64 = 0x03;
const MAP_TYPE: u64 = 0x0f;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
const MAP_POPULATE: u64 = 0x8000;
const MAP_LOCKED: u64 = 0x2000;
const MADV_DONTNEED: u64 = 4;

/// `mprotect`'s check: unknown bits are EINVAL (`mmap` ignores them, as Linux's does).
fn checked_prot(bits: u64) -> Result<Prot, Errno> {
    if bits & !(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_GROWSDOWN | PROT_GROWSUP) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(prot(bits))
}

fn prot(bits: u64) -> Prot {
    // x86: write and exec imply read (Linux maps them readable too).
    let (w, x) = (bits & PROT_WRITE != 0, bits & PROT_EXEC != 0);
    Prot { read: bits & PROT_READ != 0 || w || x, write: w, exec: x }
}

/// Linux's `may_expand_vm` for RLIMIT_AS: whether mapping `[start, start + len)` keeps the
/// address space within the limit (pages already mapped there are replaced, not added).
pub(super) fn may_expand_vm(proc: &Thread, mm: &Mm, start: u64, len: u64) -> bool {
    let limit = proc.process.rlimits.lock_uninterruptible()[RLIMIT_AS].0;
    if limit == u64::MAX {
        return true;
    }
    let end = start.saturating_add(len);
    let (total, overlap) =
        mm.vmas().fold((0u64, 0u64), |(t, o), v| (t + (v.end - v.start), o + v.end.min(end).saturating_sub(v.start.max(start))));
    (total - overlap + len) / PAGE <= limit / PAGE
}

/// RLIMIT_MEMLOCK's soft limit in pages.
fn memlock_pages(proc: &Thread) -> u64 {
    proc.process.rlimits.lock_uninterruptible()[RLIMIT_MEMLOCK].0 / PAGE
}

/// Linux's `can_do_mlock`: EPERM when RLIMIT_MEMLOCK is 0 and the caller lacks CAP_IPC_LOCK.
fn can_do_mlock(proc: &Thread) -> Result<(), Errno> {
    if proc.process.rlimits.lock_uninterruptible()[RLIMIT_MEMLOCK].0 == 0 && !crate::process::capable_ipc_lock(proc) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Linux's `mlock_future_ok`: may `pages` more locked pages be had (a locked new mapping, the
/// break's growth under MCL_FUTURE)?
fn mlock_future_ok(proc: &Thread, mm: &Mm, lock: Lock, pages: u64) -> bool {
    lock == Lock::Unlocked || mm.locked_pages() + pages <= memlock_pages(proc) || crate::process::capable_ipc_lock(proc)
}

/// `brk(addr)`: moves the break within [its start, the next mapping) and RLIMIT_AS; returns
/// the break (the old one if the move is refused, as Linux does).
pub fn brk(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mm_arc = proc.mm();
    let mut mm = mm_arc.lock_uninterruptible();
    let want = a[0];
    if want < mm.brk_start {
        return ok(mm.brk);
    }
    let (old_end, new_end) = (page_up(mm.brk).unwrap_or(u64::MAX), page_up(want).unwrap_or(u64::MAX));
    if new_end > old_end {
        let clash = new_end > TASK_SIZE || !mm.range_free(old_end, new_end);
        let lock = mm.def_lock;
        if clash || !mlock_future_ok(proc, &mm, lock, (new_end - old_end) / PAGE) || !may_expand_vm(proc, &mm, old_end, new_end - old_end) {
            return ok(mm.brk);
        }
        mm.insert(Vma { lock, ..Vma::new(old_end, new_end, Prot::RW, Backing::Anonymous, false) });
        mm.brk = want;
        drop(mm);
        if lock == Lock::Locked {
            // Linux's mm_populate, after the lock (a page that cannot be had comes at first touch).
            crate::process::mm::populate_after_map(&mm_arc, old_end, new_end);
        }
        return ok(want);
    } else if new_end < old_end {
        mm.unmap_range(new_end, old_end);
    }
    mm.brk = want;
    ok(want)
}

/// `mmap(addr, length, prot, flags, fd, offset)`: ENOMEM past RLIMIT_AS (`may_expand_vm`).
pub fn mmap(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (addr, len, prot_bits, flags, fd, offset) = (a[0], a[1], a[2], a[3], a[4], a[5]);
    let kind = flags & MAP_TYPE;
    if kind != MAP_PRIVATE && kind != MAP_SHARED && kind != MAP_SHARED_VALIDATE {
        return Err(Errno::EINVAL);
    }
    if len == 0 || !offset.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    let len = page_up(len).filter(|&l| l <= TASK_SIZE).ok_or(Errno::ENOMEM)?;
    let prot = prot(prot_bits);
    let shared = kind != MAP_PRIVATE;
    let backing = if flags & MAP_ANONYMOUS != 0 {
        Backing::Anonymous
    } else {
        // A file: its fd must be open for reading, and for writing too for a shared writable
        // mapping; only regular files map (a pipe, a directory or a tty is ENODEV, /dev/zero
        // anonymous memory, as Linux).
        let f = proc.files().lock_uninterruptible().get(fd)?;
        if !f.readable() {
            return Err(Errno::EACCES);
        }
        if shared && prot.write && !f.writable() {
            return Err(Errno::EACCES);
        }
        match &f.kind {
            Kind::Inode(i) if i.kind() == S_IFREG => Backing::File { inode: i.clone(), offset, limit: u64::MAX, may_write: f.writable() },
            Kind::Device(Device::Zero, _) => Backing::Anonymous,
            _ => return Err(Errno::ENODEV),
        }
    };
    let mm_arc = proc.mm();
    let mut mm = mm_arc.lock_uninterruptible();
    let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
    let start = if fixed {
        if !addr.is_multiple_of(PAGE) {
            return Err(Errno::EINVAL);
        }
        if addr.checked_add(len).is_none_or(|e| e > TASK_SIZE) {
            return Err(Errno::ENOMEM);
        }
        if flags & MAP_FIXED == 0 && !mm.range_free(addr, addr + len) {
            return Err(Errno::EEXIST);
        }
        addr
    } else {
        // A free hint is taken as is; otherwise the top-down search.
        let hint = addr & !(PAGE - 1);
        let hint_free = hint != 0 && hint.checked_add(len).is_some_and(|e| e <= TASK_SIZE) && mm.range_free(hint, hint + len);
        if hint_free {
            hint
        } else {
            mm.free_range(len)?
        }
    };
    // MAP_LOCKED needs can_do_mlock (EPERM), a locked mapping RLIMIT_MEMLOCK's room (EAGAIN:
    // Linux's mlock_future_ok, in do_mmap); then RLIMIT_AS (Linux's may_expand_vm), then
    // Linux's vm_area_alloc failing: ENOMEM, nothing changed, in mmap_region's order.
    let lock = match (mm.def_lock, flags & MAP_LOCKED != 0) {
        (Lock::Unlocked, true) => Lock::Locked,
        (def, _) => def,
    };
    if flags & MAP_LOCKED != 0 {
        can_do_mlock(proc)?;
    }
    if !mlock_future_ok(proc, &mm, lock, len / PAGE) {
        return Err(Errno::EAGAIN);
    }
    if !may_expand_vm(proc, &mm, start, len) {
        return Err(Errno::ENOMEM);
    }
    let shared_anon = shared && flags & MAP_ANONYMOUS != 0;
    if crate::mm::fail_alloc::should_fail("mmap_vma") {
        return Err(Errno::ENOMEM);
    }
    mm.insert(Vma { lock, ..Vma::new(start, start + len, prot, backing, shared) });
    if shared_anon {
        // A shared anonymous mapping is backed at once, so a fork shares its pages: without
        // them there is no mapping (ENOMEM, nothing left mapped; a MAP_FIXED mapping's old
        // pages are gone, as after Linux's failed MAP_FIXED mmap).
        let populated =
            if crate::mm::fail_alloc::should_fail("mmap_populate") { Err(Errno::ENOMEM) } else { mm.populate(start, start + len) };
        if let Err(e) = populated {
            mm.unmap_range(start, start + len);
            return Err(e);
        }
    } else if flags & MAP_POPULATE != 0 || lock == Lock::Locked {
        // Linux's mm_populate, after the lock (a page that cannot be had now is faulted in at
        // first touch: the error is not the call's).
        drop(mm);
        crate::process::mm::populate_after_map(&mm_arc, start, start + len);
    }
    ok(start)
}

fn range(addr: u64, len: u64) -> Result<(u64, u64), Errno> {
    if !addr.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    let end = page_up(addr.checked_add(len).ok_or(Errno::EINVAL)?).ok_or(Errno::EINVAL)?;
    if end > TASK_SIZE {
        return Err(Errno::EINVAL);
    }
    Ok((addr, end))
}

/// `munmap(addr, length)`.
pub fn munmap(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] == 0 {
        return Err(Errno::EINVAL);
    }
    let (start, end) = range(a[0], a[1])?;
    proc.mm().lock_uninterruptible().unmap_range(start, end);
    ok(0)
}

/// `mprotect(addr, len, prot)`.
pub fn mprotect(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let prot = checked_prot(a[2])?;
    // Linux's do_mprotect_pkey: an unaligned start is EINVAL; a range that wraps, or reaches
    // past user space (where nothing is mapped), ENOMEM.
    let (start, len) = (a[0], a[1]);
    if !start.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return ok(0);
    }
    let end = page_up(len).and_then(|l| start.checked_add(l)).ok_or(Errno::ENOMEM)?;
    if end > TASK_SIZE {
        return Err(Errno::ENOMEM);
    }
    proc.mm().lock_uninterruptible().protect(start, end, prot)?;
    ok(0)
}

/// `madvise(addr, length, advice)`: MADV_DONTNEED drops the pages (anonymous memory reads
/// back as zero, as glibc's `free` expects); other advice changes nothing.
pub fn madvise(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    // Linux's do_madvise: an unaligned start, or a range that wraps, is EINVAL; an empty one
    // succeeds; a hole in the range (and so anything past user space) is ENOMEM, after the
    // advice is applied to the mapped part.
    let (start, len) = (a[0], a[1]);
    if !start.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    let end = page_up(len).and_then(|l| start.checked_add(l)).ok_or(Errno::EINVAL)?;
    if end == start {
        return ok(0);
    }
    let mm_arc = proc.mm();
    let mm = mm_arc.lock_uninterruptible();
    if a[2] == MADV_DONTNEED {
        // Only the pages held, VMA by VMA (a random length may cover all of user space).
        for v in mm.vmas().filter(|v| v.end > start && v.start < end) {
            mm.drop_pages(v.start.max(start), v.end.min(end));
        }
    }
    if !covered(&mm, start, end) {
        return Err(Errno::ENOMEM);
    }
    ok(0)
}

const MCL_CURRENT: u64 = 1;
const MCL_FUTURE: u64 = 2;
const MCL_ONFAULT: u64 = 4;

/// `mlockall(flags)` (Linux's, `mm/mlock.c`): EINVAL for no or unknown flags or MCL_ONFAULT
/// alone; EPERM without `can_do_mlock`; with MCL_CURRENT, ENOMEM when the address space's pages
/// exceed RLIMIT_MEMLOCK (without CAP_IPC_LOCK). MCL_CURRENT locks every VMA and faults every
/// accessible page in (but with MCL_ONFAULT; a page that cannot be had is left to its fault);
/// MCL_FUTURE makes later mappings and the break's growth locked, so they come in at once
/// (cyclictest's `-m`, rt-app's `lock_pages`); without it, later mappings are not locked.
/// Pages are never swapped: the lock is accounting (`VmLck`) and presence.
pub fn mlockall(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let flags = a[0];
    if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT {
        return Err(Errno::EINVAL);
    }
    can_do_mlock(proc)?;
    let limit = memlock_pages(proc);
    let mm_arc = proc.mm();
    let mut mm = mm_arc.lock_uninterruptible();
    if flags & MCL_CURRENT != 0 && mm.total_pages() > limit && !crate::process::capable_ipc_lock(proc) {
        return Err(Errno::ENOMEM);
    }
    let lock = if flags & MCL_ONFAULT != 0 { Lock::OnFault } else { Lock::Locked };
    mm.def_lock = if flags & MCL_FUTURE != 0 { lock } else { Lock::Unlocked };
    if flags & MCL_CURRENT != 0 {
        mm.set_lock_all(lock);
        // Linux's mm_populate, after the lock: errors are ignored (the pages come at first
        // touch).
        drop(mm);
        crate::process::mm::populate_after_map(&mm_arc, 0, TASK_SIZE);
    }
    ok(0)
}

/// `munlockall()`: every VMA unlocked, MCL_FUTURE off.
pub fn munlockall(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    let mm_arc = proc.mm();
    let mut mm = mm_arc.lock_uninterruptible();
    mm.def_lock = Lock::Unlocked;
    mm.set_lock_all(Lock::Unlocked);
    ok(0)
}

/// `mlock`'s and `munlock`'s range: the start's page and the length rounded up with its
/// offset, wrapping as Linux's `PAGE_ALIGN` does (a length that wraps to 0 locks nothing).
fn lock_range(addr: u64, len: u64) -> (u64, u64) {
    (addr & !(PAGE - 1), len.wrapping_add(addr & (PAGE - 1)).wrapping_add(PAGE - 1) & !(PAGE - 1))
}

/// Linux's `apply_vma_lock_flags`: EINVAL for a range that wraps, nothing for an empty one,
/// else [`Mm::set_lock`] (ENOMEM at a hole, the part before it changed).
fn apply_lock(mm: &mut Mm, start: u64, len: u64, lock: Lock) -> Result<(), Errno> {
    let end = start.wrapping_add(len);
    if end < start {
        return Err(Errno::EINVAL);
    }
    mm.set_lock(start, end, lock)
}

/// `mlock(addr, len)` (Linux's `do_mlock`): EPERM without `can_do_mlock`; ENOMEM when the
/// locked pages plus the range's pages not locked yet would exceed RLIMIT_MEMLOCK (without
/// CAP_IPC_LOCK), or at a page of the range not mapped (the VMAs before it locked, as Linux);
/// then the range's pages are faulted in (a PROT_NONE part: ENOMEM, still locked; no memory:
/// EAGAIN).
pub fn mlock(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    do_mlock(proc, a[0], a[1], Lock::Locked)
}

/// `mlock2(addr, len, flags)`: [`mlock`], or with MLOCK_ONFAULT locked but faulted in at first
/// touch (VM_LOCKONFAULT); EINVAL for any other flag.
pub fn mlock2(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const MLOCK_ONFAULT: u32 = 1;
    let flags = a[2] as u32; // an int
    if flags & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    do_mlock(proc, a[0], a[1], if flags & MLOCK_ONFAULT != 0 { Lock::OnFault } else { Lock::Locked })
}

fn do_mlock(proc: &Thread, addr: u64, len: u64, lock: Lock) -> Result<Outcome, Errno> {
    can_do_mlock(proc)?;
    let (start, len) = lock_range(addr, len);
    let limit = memlock_pages(proc);
    let mm_arc = proc.mm();
    let mut mm = mm_arc.lock_uninterruptible();
    let mut locked = mm.locked_pages() + len / PAGE;
    if locked > limit && !crate::process::capable_ipc_lock(proc) {
        locked -= mm.locked_pages_in(start, start.saturating_add(len));
        if locked > limit {
            return Err(Errno::ENOMEM);
        }
    }
    apply_lock(&mut mm, start, len, lock)?;
    // Faulted in after the lock, a batch at a time (another thread's fault or futex waits for
    // one batch, not for the whole range), as Linux populates after dropping `mmap_lock`.
    drop(mm);
    crate::process::mm::populate_mlocked(&mm_arc, start, start + len)?;
    ok(0)
}

/// `munlock(addr, len)`: unlocks the range (a wrap EINVAL, a hole ENOMEM with the part before
/// it unlocked, as Linux).
pub fn munlock(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (start, len) = lock_range(a[0], a[1]);
    apply_lock(&mut proc.mm().lock_uninterruptible(), start, len, Lock::Unlocked)?;
    ok(0)
}

/// Is every page of `[start, end)` in a VMA? (Nothing from `TASK_SIZE` up ever is.)
fn covered(mm: &Mm, start: u64, end: u64) -> bool {
    let mut at = start;
    while at < end {
        match mm.find(at) {
            Some(v) => at = v.end,
            None => return false,
        }
    }
    true
}

// ----- NUMA memory policy: Cadence's machine is one node (node 0) --------------------------

const MPOL_MAX: u64 = 6; // MPOL_DEFAULT..=MPOL_PREFERRED_MANY
const MPOL_MODE_FLAGS: u64 = (1 << 15) | (1 << 14) | (1 << 13); // STATIC_NODES, RELATIVE_NODES, NUMA_BALANCING
const MPOL_F_NODE: u64 = 1;
const MPOL_F_ADDR: u64 = 2;
const MPOL_F_MEMS_ALLOWED: u64 = 4;
/// Linux's `nr_node_ids` here.
const NR_NODES: u64 = 1;

/// Writes a node mask with node 0 set (or none) into `maxnode` bits at `addr` (0: no mask).
fn put_nodemask(proc: &Thread, addr: u64, maxnode: u64, node0: bool) -> Result<(), Errno> {
    if addr == 0 {
        return Ok(());
    }
    let words = maxnode.div_ceil(64).min(1024) as usize;
    let mut buf = alloc::vec![0u8; words * 8];
    if node0 && !buf.is_empty() {
        buf[0] = 1;
    }
    proc.write_user(addr, &buf)
}

/// Checks a mode and its node mask as Linux's `set_mempolicy` does: EINVAL for an unknown
/// mode or flag, or a mask naming no node that exists (only node 0 does); MPOL_DEFAULT and
/// MPOL_LOCAL take no nodes.
fn check_policy(proc: &Thread, mode: u64, nodemask: u64, maxnode: u64) -> Result<(), Errno> {
    let base = mode & !MPOL_MODE_FLAGS;
    if base >= MPOL_MAX || mode & MPOL_MODE_FLAGS == MPOL_MODE_FLAGS {
        return Err(Errno::EINVAL);
    }
    let nodes = if nodemask == 0 || maxnode < 2 {
        0
    } else {
        let mut b = [0u8; 8];
        proc.read_user(nodemask, &mut b)?;
        let bits = (maxnode - 1).min(64);
        u64::from_le_bytes(b) & if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
    };
    match base {
        0 | 4 if nodes != 0 => Err(Errno::EINVAL), // DEFAULT, LOCAL
        0 | 4 => Ok(()),
        1 if nodes == 0 => Ok(()), // PREFERRED with no nodes: local allocation
        _ if nodes & 1 == 0 => Err(Errno::EINVAL),
        _ => Ok(()),
    }
}

/// `set_mempolicy(mode, nodemask, maxnode)`: checked as Linux checks it; with one node every
/// policy places memory on node 0, so nothing else changes.
pub fn set_mempolicy(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    check_policy(proc, a[0], a[1], a[2])?;
    ok(0)
}

/// `mbind(addr, len, mode, nodemask, maxnode, flags)`: EINVAL for an unaligned address or
/// unknown flags, then as [`set_mempolicy`]; EFAULT for a range that is not mapped.
pub fn mbind(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const MPOL_MF_VALID: u64 = 0b111; // STRICT, MOVE, MOVE_ALL
    let (addr, len) = (a[0], a[1]);
    if !addr.is_multiple_of(PAGE) || a[5] & !MPOL_MF_VALID != 0 {
        return Err(Errno::EINVAL);
    }
    check_policy(proc, a[2], a[3], a[4])?;
    let end = page_up(len).and_then(|l| addr.checked_add(l)).ok_or(Errno::EINVAL)?;
    if len != 0 && proc.mm().lock_uninterruptible().range_free(addr, end) {
        return Err(Errno::EFAULT);
    }
    ok(0)
}

/// `get_mempolicy(mode, nodemask, maxnode, addr, flags)`: MPOL_DEFAULT with an empty mask;
/// MPOL_F_MEMS_ALLOWED: node 0; MPOL_F_NODE (with MPOL_F_ADDR or not): node 0. EINVAL for
/// unknown flags, MPOL_F_ADDR without an address's mapping (EFAULT), or a mask shorter than
/// the node count.
pub fn get_mempolicy(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (mode, nodemask, maxnode, addr, flags) = (a[0], a[1], a[2], a[3], a[4]);
    if flags & !(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED) != 0 {
        return Err(Errno::EINVAL);
    }
    if nodemask != 0 && maxnode < NR_NODES {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_F_MEMS_ALLOWED != 0 {
        if flags & (MPOL_F_NODE | MPOL_F_ADDR) != 0 {
            return Err(Errno::EINVAL);
        }
        put_nodemask(proc, nodemask, maxnode, true)?;
        return ok(0);
    }
    if flags & MPOL_F_ADDR != 0 && proc.mm().lock_uninterruptible().find(addr).is_none() {
        return Err(Errno::EFAULT);
    }
    if flags & MPOL_F_ADDR == 0 && addr != 0 {
        return Err(Errno::EINVAL);
    }
    if mode != 0 {
        // MPOL_F_NODE: the node (0); else the policy, MPOL_DEFAULT.
        proc.write_user(mode, &0u32.to_le_bytes())?;
    }
    put_nodemask(proc, nodemask, maxnode, false)?;
    ok(0)
}
