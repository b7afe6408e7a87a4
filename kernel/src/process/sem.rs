//! System V semaphores (Linux `ipc/sem.c`): the sets, their ids and permissions, the sleeping
//! of `semop`, and SEM_UNDO at a process's end.
//!
//! A set's state machine (atomic arrays, pending operations, undo adjustments) is
//! `cadence_ipc::sem`'s; the ids are `cadence_ipc::ids`' (`seq * 32768 + index`, as Linux). All
//! sets sit behind one sleeping mutex ([`SETS`]). A `semop` that must wait queues a
//! [`Waiter`] on its set and sleeps on it; whoever changes the set afterwards completes the
//! pending operations that can now proceed *on their waiters' behalf* (Linux's `update_queue`),
//! marks them done with their result and wakes them. So a waiter whose timeout or signal races
//! with its completion still returns 0: it looks at `done` under the mutex before giving up.
//! Removing the set wakes every waiter with EIDRM.
//!
//! SEM_UNDO adjustments belong to the process (its tgid is the owner: threads share them, as
//! glibc's threads do through CLONE_SYSVSEM; a forked child starts without any) and are applied
//! when its last thread has ended ([`exit_process`]).
//!
//! Permissions are Linux's `ipcperms` (owner, group, other bits; euid 0 passes), IPC_SET and
//! IPC_RMID need the owner, the creator or euid 0 (EPERM).

use super::Creds;
use crate::sched::wait::{Mutex, WaitQueue};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_ipc::ids::Ids;
use cadence_ipc::sem::{alters, SemBuf, Set, SEMMNI, SEMMNS, SEMMSL, SEMVMX};
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// `IPC_CREAT`.
pub const IPC_CREAT: i32 = 0o1000;
/// `IPC_EXCL`.
pub const IPC_EXCL: i32 = 0o2000;

/// A sleeping `semop`.
pub struct Waiter {
    /// Its operation was completed, or failed, by another (under [`SETS`]).
    done: AtomicBool,
    /// 0, or the errno it failed with.
    result: AtomicI32,
    queue: WaitQueue,
}

impl Waiter {
    fn finish(&self, r: Result<(), Errno>) {
        self.result.store(r.err().map_or(0, Errno::code), Ordering::Relaxed);
        self.done.store(true, Ordering::Release);
        self.queue.wake_all();
    }

    fn outcome(&self) -> Result<(), Errno> {
        match self.result.load(Ordering::Relaxed) {
            0 => Ok(()),
            e => Err(Errno::from_code(e).unwrap_or(Errno::EINVAL)),
        }
    }
}

/// `struct ipc64_perm`'s contents.
#[derive(Clone, Copy, Debug)]
pub struct Perm {
    /// `key`.
    pub key: i32,
    /// Owner.
    pub uid: u32,
    /// Owner's group.
    pub gid: u32,
    /// Creator.
    pub cuid: u32,
    /// Creator's group.
    pub cgid: u32,
    /// The low 9 bits are the permissions.
    pub mode: u32,
}

struct SemArray {
    set: Set<Arc<Waiter>>,
    perm: Perm,
    /// Last semop, last change (seconds since the epoch).
    otime: u64,
    ctime: u64,
}

struct Registry {
    ids: Ids<SemArray>,
    /// Semaphores in all sets (`used_sems`).
    used: usize,
}

static SETS: Mutex<Registry> = Mutex::new(Registry { ids: Ids::new(), used: 0 });

fn now_s() -> u64 {
    crate::time::realtime_ns() / 1_000_000_000
}

/// Linux's `ipcperms`: may `c` have the access in `flag`'s rwx bits?
fn permitted(p: &Perm, c: &Creds, flag: i32) -> bool {
    let requested = ((flag >> 6) | (flag >> 3) | flag) as u32 & 0o7;
    let euid = c.uid[1];
    let mut granted = p.mode;
    if euid == p.cuid || euid == p.uid {
        granted >>= 6;
    } else if [p.cgid, p.gid].iter().any(|g| *g == c.gid[3] || c.groups.contains(g)) {
        granted >>= 3;
    }
    requested & !granted & 0o7 == 0 || euid == 0
}

/// What the caller is: its credentials and process.
pub struct Caller {
    /// Its credentials.
    pub creds: Creds,
    /// Its process id (`sempid`, the undo owner).
    pub tgid: u32,
}

/// `semget(key, nsems, semflg)` (Linux `ksys_semget` / `ipcget`).
pub fn semget(key: i32, nsems: i32, flg: i32, who: &Caller) -> Result<i32, Errno> {
    if !(0..=SEMMSL).contains(&nsems) {
        return Err(Errno::EINVAL);
    }
    let mut r = SETS.lock_uninterruptible();
    if let Some((id, a)) = r.ids.find_key(key) {
        if flg & IPC_CREAT != 0 && flg & IPC_EXCL != 0 {
            return Err(Errno::EEXIST);
        }
        if nsems as usize > a.set.len() {
            return Err(Errno::EINVAL);
        }
        if !permitted(&a.perm, &who.creds, flg) {
            return Err(Errno::EACCES);
        }
        return Ok(id);
    }
    if key != cadence_ipc::ids::IPC_PRIVATE && flg & IPC_CREAT == 0 {
        return Err(Errno::ENOENT);
    }
    // newary
    if nsems == 0 {
        return Err(Errno::EINVAL);
    }
    if r.used + nsems as usize > SEMMNS as usize {
        return Err(Errno::ENOSPC);
    }
    let (uid, gid) = (who.creds.uid[1], who.creds.gid[1]);
    let perm = Perm { key, uid, gid, cuid: uid, cgid: gid, mode: (flg & 0o777) as u32 };
    let a = SemArray { set: Set::new(nsems as usize), perm, otime: 0, ctime: now_s() };
    let id = r.ids.add(key, a, SEMMNI as usize)?;
    r.used += nsems as usize;
    Ok(id)
}

/// Wakes what an update completed or failed (after [`SETS`] is unlocked: each waiter's own
/// `Arc` keeps it).
fn finish_all(woken: Vec<(Arc<Waiter>, Result<(), Errno>)>) {
    for (w, r) in woken {
        w.finish(r);
    }
}

/// `semtimedop(semid, sops, nsops, timeout)` after the arguments are read (Linux's
/// `do_semtimedop`): EINVAL for a bad id, EFBIG for a `sem_num` past the set, EACCES, then the
/// operation: done, EAGAIN (IPC_NOWAIT, or the timeout `deadline_ns` on the monotonic clock),
/// ERANGE, EIDRM (the set removed while waiting), EINTR (a signal: never restarted).
pub fn semop(id: i32, ops: Vec<SemBuf>, deadline_ns: Option<u64>, who: &Caller) -> Result<(), Errno> {
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let max = ops.iter().map(|o| o.num).max().unwrap_or(0);
    let alter = alters(&ops);
    let w;
    {
        let mut r = SETS.lock_uninterruptible();
        let a = r.ids.get_mut(id).ok_or(Errno::EINVAL)?;
        if usize::from(max) >= a.set.len() {
            return Err(Errno::EFBIG);
        }
        if !permitted(&a.perm, &who.creds, if alter { 0o222 } else { 0o444 }) {
            return Err(Errno::EACCES);
        }
        match a.set.semop(&ops, who.tgid as i32, u64::from(who.tgid))? {
            None => {
                a.otime = now_s();
                let woken = if alter { a.set.update() } else { Vec::new() };
                drop(r);
                finish_all(woken);
                return Ok(());
            }
            Some(blocking) => {
                w = Arc::new(Waiter { done: AtomicBool::new(false), result: AtomicI32::new(0), queue: WaitQueue::new() });
                a.set.wait(ops, who.tgid as i32, u64::from(who.tgid), blocking, w.clone());
            }
        }
    }
    let slept = match deadline_ns {
        None => w.queue.wait_until_interruptible(|| w.done.load(Ordering::Acquire)).map(|_| true),
        Some(d) => w.queue.wait_until_interruptible_deadline(|| w.done.load(Ordering::Acquire), d),
    };
    if !w.done.load(Ordering::Acquire) {
        let mut r = SETS.lock_uninterruptible();
        if !w.done.load(Ordering::Acquire) {
            if let Some(a) = r.ids.get_mut(id) {
                a.set.cancel(|x| Arc::ptr_eq(x, &w));
            }
            return Err(match slept {
                Ok(_) => Errno::EAGAIN,
                Err(_) => Errno::EINTR,
            });
        }
    }
    w.outcome()
}

/// The set `id` (EINVAL if none), checked for `flag`'s access (EACCES).
fn checked<'a>(r: &'a mut Registry, id: i32, who: &Caller, flag: i32) -> Result<&'a mut SemArray, Errno> {
    let a = r.ids.get_mut(id).ok_or(Errno::EINVAL)?;
    if !permitted(&a.perm, &who.creds, flag) {
        return Err(Errno::EACCES);
    }
    Ok(a)
}

/// What `semctl`'s single-semaphore reads ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Get {
    /// GETVAL.
    Val,
    /// GETPID.
    Pid,
    /// GETNCNT.
    Ncnt,
    /// GETZCNT.
    Zcnt,
}

/// GETVAL, GETPID, GETNCNT, GETZCNT of semaphore `num` (EINVAL out of range).
pub fn get(id: i32, num: i32, what: Get, who: &Caller) -> Result<i32, Errno> {
    let mut r = SETS.lock_uninterruptible();
    let a = checked(&mut r, id, who, 0o444)?;
    let n = usize::try_from(num).ok().filter(|&n| n < a.set.len()).ok_or(Errno::EINVAL)?;
    Ok(match what {
        Get::Val => a.set.val(n),
        Get::Pid => a.set.pid(n),
        Get::Ncnt => a.set.waiting(n, false) as i32,
        Get::Zcnt => a.set.waiting(n, true) as i32,
    })
}

/// GETALL: every value.
pub fn get_all(id: i32, who: &Caller) -> Result<Vec<u16>, Errno> {
    let mut r = SETS.lock_uninterruptible();
    let a = checked(&mut r, id, who, 0o444)?;
    Ok(a.set.vals().iter().map(|&v| v as u16).collect())
}

/// The set's size, for SETALL to read its array (EINVAL, EACCES).
pub fn nsems(id: i32, who: &Caller) -> Result<usize, Errno> {
    let mut r = SETS.lock_uninterruptible();
    Ok(checked(&mut r, id, who, 0o222)?.set.len())
}

/// SETVAL (Linux's `semctl_setval`): ERANGE for a value outside [0, SEMVMX] (checked first),
/// EINVAL for a bad id or `num`.
pub fn set_val(id: i32, num: i32, val: i32, who: &Caller) -> Result<(), Errno> {
    if !(0..=SEMVMX).contains(&val) {
        return Err(Errno::ERANGE);
    }
    let mut r = SETS.lock_uninterruptible();
    let a = r.ids.get_mut(id).ok_or(Errno::EINVAL)?;
    let n = usize::try_from(num).ok().filter(|&n| n < a.set.len()).ok_or(Errno::EINVAL)?;
    if !permitted(&a.perm, &who.creds, 0o222) {
        return Err(Errno::EACCES);
    }
    a.set.set_val(n, val, who.tgid as i32);
    a.ctime = now_s();
    let woken = a.set.update();
    drop(r);
    finish_all(woken);
    Ok(())
}

/// SETALL with `vals` read for a set of their length: ERANGE above SEMVMX, EIDRM if the set
/// went (or changed size) since [`nsems`].
pub fn set_all(id: i32, vals: &[u16], who: &Caller) -> Result<(), Errno> {
    if vals.iter().any(|&v| i32::from(v) > SEMVMX) {
        return Err(Errno::ERANGE);
    }
    let mut r = SETS.lock_uninterruptible();
    let a = r.ids.get_mut(id).filter(|a| a.set.len() == vals.len()).ok_or(Errno::EIDRM)?;
    let v: Vec<i32> = vals.iter().map(|&v| i32::from(v)).collect();
    a.set.set_all(&v, who.tgid as i32);
    a.ctime = now_s();
    let woken = a.set.update();
    drop(r);
    finish_all(woken);
    Ok(())
}

/// What IPC_STAT / SEM_STAT report.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    /// The full id.
    pub id: i32,
    /// Its permissions.
    pub perm: Perm,
    /// The id's sequence number.
    pub seq: u16,
    /// Last semop (0: none yet).
    pub otime: u64,
    /// Last change.
    pub ctime: u64,
    /// Semaphores.
    pub nsems: usize,
}

/// IPC_STAT of `id`, or with `by_index` SEM_STAT (`any`: SEM_STAT_ANY, no permission check)
/// of slot `id`.
pub fn stat(id: i32, by_index: bool, any: bool, who: &Caller) -> Result<Stat, Errno> {
    let r = SETS.lock_uninterruptible();
    let (id, a) = if by_index {
        r.ids.by_index(id % cadence_ipc::ids::IPCMNI).ok_or(Errno::EINVAL)?
    } else {
        (id, r.ids.get(id).ok_or(Errno::EINVAL)?)
    };
    if !any && !permitted(&a.perm, &who.creds, 0o444) {
        return Err(Errno::EACCES);
    }
    let seq = (id / cadence_ipc::ids::IPCMNI) as u16;
    Ok(Stat { id, perm: a.perm, seq, otime: a.otime, ctime: a.ctime, nsems: a.set.len() })
}

/// May the caller change or remove the set (`ipcctl_obtain_check`)?
fn may_control(p: &Perm, c: &Creds) -> bool {
    let euid = c.uid[1];
    euid == 0 || euid == p.uid || euid == p.cuid
}

/// IPC_SET: the owner and the permission bits (EINVAL, EPERM).
pub fn set_perm(id: i32, uid: u32, gid: u32, mode: u32, who: &Caller) -> Result<(), Errno> {
    let mut r = SETS.lock_uninterruptible();
    let a = r.ids.get_mut(id).ok_or(Errno::EINVAL)?;
    if !may_control(&a.perm, &who.creds) {
        return Err(Errno::EPERM);
    }
    // `make_kuid` of -1 is invalid.
    if uid == u32::MAX || gid == u32::MAX {
        return Err(Errno::EINVAL);
    }
    a.perm.uid = uid;
    a.perm.gid = gid;
    a.perm.mode = (a.perm.mode & !0o777) | (mode & 0o777);
    a.ctime = now_s();
    Ok(())
}

/// IPC_RMID: the set goes, its waiters wake with EIDRM, its id is stale (EINVAL, EPERM).
pub fn remove(id: i32, who: &Caller) -> Result<(), Errno> {
    let mut r = SETS.lock_uninterruptible();
    let a = r.ids.get(id).ok_or(Errno::EINVAL)?;
    if !may_control(&a.perm, &who.creds) {
        return Err(Errno::EPERM);
    }
    let a = r.ids.remove(id).ok_or(Errno::EINVAL)?;
    r.used -= a.set.len();
    drop(r);
    for w in a.set.remove() {
        w.finish(Err(Errno::EIDRM));
    }
    Ok(())
}

/// IPC_INFO / SEM_INFO (`sem_info`): `struct seminfo`'s ten fields and the highest index in
/// use (-1 if none).
pub fn info(sem_info: bool) -> ([i32; 10], i32) {
    let r = SETS.lock_uninterruptible();
    let (usz, aem) = if sem_info { (r.ids.in_use() as i32, r.used as i32) } else { (20, cadence_ipc::sem::SEMAEM) };
    let opm = cadence_ipc::sem::SEMOPM;
    // semmap, semmni, semmns, semmnu, semmsl, semopm, semume, semusz, semvmx, semaem
    ([SEMMNS, SEMMNI, SEMMNS, SEMMNS, SEMMSL, opm, opm, usz, SEMVMX, aem], r.ids.max_idx())
}

/// Process `tgid`'s last thread has ended: its SEM_UNDO adjustments are applied (Linux's
/// `exit_sem`), and what that lets through proceeds.
pub fn exit_process(tgid: u32) {
    let mut woken = Vec::new();
    {
        let mut r = SETS.lock_uninterruptible();
        for (_, a) in r.ids.iter_mut() {
            if a.set.exit(u64::from(tgid), tgid as i32) {
                a.otime = now_s();
                woken.extend(a.set.update());
            }
        }
    }
    finish_all(woken);
}

/// Sets alive (for leak checks in tests).
pub fn count() -> usize {
    SETS.lock_uninterruptible().ids.in_use()
}
