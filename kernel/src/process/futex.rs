//! Futexes (Linux `kernel/futex/`): a waiter sleeps on a user word's *key* until another
//! thread wakes that key; the user word itself is only compared and changed by user code
//! (and by [`wake_op`] and the robust-list walk, atomically).
//!
//! **Keys.** A private futex (FUTEX_PRIVATE_FLAG, or any word in a private mapping) is the
//! pair (address space, address); a word in a shared mapping is its physical address, so
//! processes that map the same page meet on it (Linux's `get_futex_key`).
//!
//! **No lost wakeup.** The table is split in buckets by key, each behind a sleeping mutex. A
//! waiter compares the word with the value it expects and queues itself under its bucket's
//! lock; a waker finds waiters under the same lock. So a waker that changed the word before a
//! waiter's comparison makes that waiter return EAGAIN, and one that changed it after finds the
//! waiter queued. A woken waiter is taken off the bucket by its waker (`woken` set under the
//! lock), so a waiter that times out or is interrupted at the same moment still reports the
//! wakeup it consumed (Linux's `futex_unqueue` check).
//!
//! **Priority inheritance** (FUTEX_LOCK_PI / TRYLOCK_PI / UNLOCK_PI, Linux
//! `kernel/futex/pi.c`, `Documentation/locking/pi-futex.rst`): the word holds the owner's
//! tid, FUTEX_WAITERS once someone waits in the kernel (so the owner's unlock comes to the
//! kernel), and FUTEX_OWNER_DIED after a robust owner's death. A waiter joins the
//! scheduler's PI chain (`sched::pi`), which boosts the owner; an unlock hands the lock
//! straight to the top waiter (the word becomes its tid | FUTEX_WAITERS, as Linux), so the
//! best waiter gets it, not whoever runs first. All of it under one sleeping lock ([`PI`]).
//!
//! Lock order: two buckets in index order → the process's `Mm` mutex (a copy that faults,
//! [`MmRef`]) → the `VmSpace` lock;
//! [`PI`] → the `Mm` mutex, and [`PI`] → the PI chains' lock (`sched::pi`).

use super::MmRef;
use super::Thread;
use crate::sched::wait::{Mutex, MutexGuard, WaitQueue};
use crate::sync::IrqLock;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// A bitset matching every waiter (FUTEX_WAIT / FUTEX_WAKE's).
pub const BITSET_ANY: u32 = u32::MAX;
/// The owner's tid in a PI or robust futex word.
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
/// A robust futex's owner died.
pub const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
/// Someone waits on a PI or robust futex.
pub const FUTEX_WAITERS: u32 = 0x8000_0000;
/// Entries a robust list walk follows at most (Linux's `ROBUST_LIST_LIMIT`).
const ROBUST_LIST_LIMIT: usize = 2048;

/// What a futex word is, for matching waiters and wakers (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    /// A word of one address space: the space's identity and the address.
    Private {
        /// The `Mm`'s address (stable while any thread of the space lives).
        mm: usize,
        /// The word's address.
        addr: u64,
    },
    /// A word of a shared page: its physical address.
    Shared {
        /// Physical address of the word.
        phys: u64,
    },
}

/// One sleeping waiter.
struct Waiter {
    /// Its key (changed by a requeue, under both buckets' locks).
    key: IrqLock<Key>,
    /// FUTEX_WAIT_BITSET's bitset.
    bitset: u32,
    /// Set by the waker that took it off its bucket.
    woken: AtomicBool,
    /// FUTEX_WAIT_REQUEUE_PI's PI futex: only a CMP_REQUEUE_PI to it may move this waiter.
    pi_target: Option<Key>,
    /// Taken off by CMP_REQUEUE_PI (set before `woken`): it goes on to take `pi_target`.
    requeued: AtomicBool,
    /// Where it sleeps.
    queue: WaitQueue,
}

impl Waiter {
    fn new(key: Key, bitset: u32, pi_target: Option<Key>) -> Arc<Waiter> {
        Arc::new(Waiter {
            key: IrqLock::new(key),
            bitset,
            woken: AtomicBool::new(false),
            pi_target,
            requeued: AtomicBool::new(false),
            queue: WaitQueue::new(),
        })
    }
}

const BUCKETS: usize = 64;

type Bucket = Mutex<Vec<Arc<Waiter>>>;

/// A locked bucket.
type Locked = MutexGuard<'static, Vec<Arc<Waiter>>>;

static TABLE: [Bucket; BUCKETS] = [const { Mutex::new(Vec::new()) }; BUCKETS];

fn bucket_of(key: &Key) -> usize {
    let h = match *key {
        Key::Private { mm, addr } => (mm as u64).rotate_left(17) ^ addr,
        Key::Shared { phys } => phys ^ 0x9e37_79b9_7f4a_7c15,
    };
    ((h ^ (h >> 7) ^ (h >> 13)) as usize) % BUCKETS
}

/// Locks the buckets of `a` and `b` in index order (one lock if they share a bucket).
fn lock_two(a: usize, b: usize) -> (Locked, Option<Locked>) {
    if a == b {
        (TABLE[a].lock_uninterruptible(), None)
    } else if a < b {
        let ga = TABLE[a].lock_uninterruptible();
        (ga, Some(TABLE[b].lock_uninterruptible()))
    } else {
        let gb = TABLE[b].lock_uninterruptible();
        (TABLE[a].lock_uninterruptible(), Some(gb))
    }
}

/// The key of the word at `addr` of `mm` (EINVAL if misaligned; EFAULT if not a user address,
/// or if a shared key is asked for an address with no mapping).
pub fn key_of(mm: &MmRef, addr: u64, private: bool) -> Result<Key, Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    // Linux's access_ok: a word that is not below TASK_SIZE is EFAULT, even for a private
    // key that never touches it (FUTEX_WAKE).
    if addr.checked_add(4).is_none_or(|end| end > crate::mm::vm::TASK_SIZE) {
        return Err(Errno::EFAULT);
    }
    let private_key = Key::Private { mm: Arc::as_ptr(mm.mm()) as usize, addr };
    if private {
        return Ok(private_key);
    }
    let mut m = mm.mm().lock_uninterruptible();
    let v = m.find(addr).ok_or(Errno::EFAULT)?;
    if !v.shared {
        return Ok(private_key);
    }
    let page = addr & !4095;
    if m.space.query(page).is_none() {
        m.fault(addr, false)?;
    }
    let (frame, _) = m.space.query(page).ok_or(Errno::EFAULT)?;
    Ok(Key::Shared { phys: frame.phys() + (addr - page) })
}

fn read_word(mm: &MmRef, addr: u64) -> Result<u32, Errno> {
    let mut b = [0u8; 4];
    mm.read(addr, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// How a wait ended without a wakeup.
fn unqueue(w: &Arc<Waiter>) -> bool {
    loop {
        let k = *w.key.lock();
        let mut b = TABLE[bucket_of(&k)].lock_uninterruptible();
        if *w.key.lock() != k {
            continue;
        }
        if w.woken.load(Ordering::Acquire) {
            return true;
        }
        b.retain(|x| !Arc::ptr_eq(x, w));
        return false;
    }
}

/// FUTEX_WAIT(_BITSET): sleeps while the word at `addr` holds `val`, until a wake that
/// matches `bitset`, `deadline_ns` on the monotonic clock (ETIMEDOUT), or a signal
/// (ERESTARTSYS without a deadline, ERESTARTNOHAND with one: a handler sees EINTR). EAGAIN if
/// the word differs, EINVAL for a zero bitset.
pub fn wait(mm: &MmRef, addr: u64, private: bool, val: u32, bitset: u32, deadline_ns: Option<u64>) -> Result<(), Errno> {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    let w = Waiter::new(key_of(mm, addr, private)?, bitset, None);
    match queue_and_sleep(mm, addr, val, &w, deadline_ns)? {
        Slept::Woken => Ok(()),
        Slept::TimedOut => Err(Errno::ETIMEDOUT),
        Slept::Interrupted if deadline_ns.is_some() => Err(Errno::ERESTARTNOHAND),
        Slept::Interrupted => Err(Errno::ERESTARTSYS),
    }
}

/// How a queued waiter's sleep ended.
enum Slept {
    /// A waker took it off its bucket.
    Woken,
    /// Its deadline passed first.
    TimedOut,
    /// A signal came first.
    Interrupted,
}

/// Queues `w` if the word at `addr` still holds `val` (else EAGAIN: the check and the enqueue
/// under the bucket's lock, so no wakeup is lost) and sleeps until a waker takes it,
/// `deadline_ns` (monotonic) or a signal. A wake that races with the timeout or the signal
/// wins: the waiter is off its bucket either way.
fn queue_and_sleep(mm: &MmRef, addr: u64, val: u32, w: &Arc<Waiter>, deadline_ns: Option<u64>) -> Result<Slept, Errno> {
    {
        let key = *w.key.lock();
        let mut b = TABLE[bucket_of(&key)].lock_uninterruptible();
        if read_word(mm, addr)? != val {
            return Err(Errno::EAGAIN);
        }
        b.push(w.clone());
    }
    let r = match deadline_ns {
        None => w.queue.wait_until_interruptible(|| w.woken.load(Ordering::Acquire)).map(|_| true),
        Some(d) => w.queue.wait_until_interruptible_deadline(|| w.woken.load(Ordering::Acquire), d),
    };
    Ok(if w.woken.load(Ordering::Acquire) || unqueue(w) {
        Slept::Woken
    } else if r.is_ok() {
        Slept::TimedOut
    } else {
        Slept::Interrupted
    })
}

/// FUTEX_WAIT_REQUEUE_PI: waits on the word at `addr` (EAGAIN unless it holds `val`) for a
/// FUTEX_CMP_REQUEUE_PI to the PI futex at `addr2`, then takes that futex as LOCK_PI does,
/// returning with it held. Linux's errors: EINVAL if `addr2` is `addr`, EAGAIN when woken by a
/// plain wake (or by a signal once requeued: Linux returns EWOULDBLOCK rather than restart a
/// call whose word has moved on), ETIMEDOUT at `deadline_ns` (monotonic), ERESTARTNOINTR on a
/// signal before the requeue.
///
/// The requeue hands the waiter over by waking it, and the woken waiter takes the PI futex in
/// its own context (Linux moves it onto the futex's `rt_mutex` instead and may take the lock
/// for the first one): the outcome a program sees is the same, the waiters run once more.
pub fn wait_requeue_pi(mm: &MmRef, addr: u64, addr2: u64, private: bool, val: u32, deadline_ns: Option<u64>) -> Result<(), Errno> {
    if addr == addr2 {
        return Err(Errno::EINVAL);
    }
    let (key, key2) = (key_of(mm, addr, private)?, key_of(mm, addr2, private)?);
    let w = Waiter::new(key, BITSET_ANY, Some(key2));
    match queue_and_sleep(mm, addr, val, &w, deadline_ns)? {
        Slept::Woken if !w.requeued.load(Ordering::Acquire) => Err(Errno::EAGAIN),
        Slept::Woken => match lock_pi(mm, addr2, private, deadline_ns, false) {
            Err(Errno::ERESTARTNOINTR) => Err(Errno::EAGAIN),
            r => r,
        },
        Slept::TimedOut => Err(Errno::ETIMEDOUT),
        Slept::Interrupted => Err(Errno::ERESTARTNOINTR),
    }
}

/// FUTEX_CMP_REQUEUE_PI: if the word at `addr` holds `cmp` (else EAGAIN), hands the PI futex
/// at `addr2` to one waiter of `addr` and queues up to `n_requeue` more on it (see
/// [`wait_requeue_pi`]); returns how many. EINVAL unless `n_wake` is 1, if `addr2` is `addr`,
/// or if a waiter of `addr` waits for another PI futex or for none (a plain FUTEX_WAIT).
pub fn cmp_requeue_pi(mm: &MmRef, addr: u64, addr2: u64, private: bool, n_wake: i32, n_requeue: i32, cmp: u32) -> Result<usize, Errno> {
    if n_wake != 1 || n_requeue < 0 || addr == addr2 {
        return Err(Errno::EINVAL);
    }
    let (k1, k2) = (key_of(mm, addr, private)?, key_of(mm, addr2, private)?);
    let mut taken = Vec::new();
    {
        let mut b = TABLE[bucket_of(&k1)].lock_uninterruptible();
        if read_word(mm, addr)? != cmp {
            return Err(Errno::EAGAIN);
        }
        let n = 1 + n_requeue as usize;
        let mine = |w: &Arc<Waiter>| *w.key.lock() == k1;
        if b.iter().filter(|w| mine(w)).take(n).any(|w| w.pi_target != Some(k2)) {
            return Err(Errno::EINVAL);
        }
        let mut i = 0;
        while i < b.len() && taken.len() < n {
            if mine(&b[i]) {
                let w = b.remove(i);
                w.requeued.store(true, Ordering::Release);
                w.woken.store(true, Ordering::Release);
                taken.push(w);
            } else {
                i += 1;
            }
        }
    }
    let n = taken.len();
    wake_all(taken);
    Ok(n)
}

/// Takes up to `n` waiters of `key` matching `bitset` off `bucket`, marked woken. EINVAL,
/// taking none, if one of them waits in FUTEX_WAIT_REQUEUE_PI (only CMP_REQUEUE_PI may wake
/// those, as Linux's `futex_wake` answers).
fn take_waiters(bucket: &mut Vec<Arc<Waiter>>, key: Key, bitset: u32, n: usize, out: &mut Vec<Arc<Waiter>>) -> Result<(), Errno> {
    let matching = |w: &&Arc<Waiter>| *w.key.lock() == key && w.bitset & bitset != 0;
    if bucket.iter().filter(matching).take(n).any(|w| w.pi_target.is_some()) {
        return Err(Errno::EINVAL);
    }
    let mut i = 0;
    while i < bucket.len() && out.len() < n {
        let w = &bucket[i];
        if *w.key.lock() == key && w.bitset & bitset != 0 {
            let w = bucket.remove(i);
            w.woken.store(true, Ordering::Release);
            out.push(w);
        } else {
            i += 1;
        }
    }
    Ok(())
}

fn wake_all(ws: Vec<Arc<Waiter>>) {
    for w in ws {
        w.queue.wake_all();
    }
}

/// How many a wake count asks for: Linux wakes at least one (`++ret >= nr_wake`).
fn count(n: i32) -> usize {
    n.max(1) as usize
}

/// FUTEX_WAKE(_BITSET): wakes up to `n` waiters on `addr` matching `bitset`; returns how
/// many.
pub fn wake(mm: &MmRef, addr: u64, private: bool, n: i32, bitset: u32) -> Result<usize, Errno> {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    let key = key_of(mm, addr, private)?;
    let mut out = Vec::new();
    {
        let mut b = TABLE[bucket_of(&key)].lock_uninterruptible();
        take_waiters(&mut b, key, bitset, count(n), &mut out)?;
    }
    let woken = out.len();
    wake_all(out);
    Ok(woken)
}

/// FUTEX_REQUEUE / FUTEX_CMP_REQUEUE: wakes up to `n_wake` waiters of `addr` and moves up to
/// `n_requeue` of the rest to `addr2`; with `cmp`, EAGAIN unless the word at `addr` holds it.
/// Returns how many were woken or moved.
pub fn requeue(mm: &MmRef, addr: u64, addr2: u64, private: bool, n_wake: i32, n_requeue: i32, cmp: Option<u32>) -> Result<usize, Errno> {
    if n_wake < 0 || n_requeue < 0 {
        return Err(Errno::EINVAL);
    }
    let (k1, k2) = (key_of(mm, addr, private)?, key_of(mm, addr2, private)?);
    let (b1, b2) = (bucket_of(&k1), bucket_of(&k2));
    let mut woken = Vec::new();
    let moved;
    {
        let (mut g1, mut g2) = lock_two(b1, b2);
        if let Some(v) = cmp {
            if read_word(mm, addr)? != v {
                return Err(Errno::EAGAIN);
            }
        }
        take_waiters(&mut g1, k1, BITSET_ANY, count(n_wake), &mut woken)?;
        let mut to_move = Vec::new();
        let mut i = 0;
        while i < g1.len() && to_move.len() < n_requeue as usize {
            if *g1[i].key.lock() == k1 && g1[i].pi_target.is_none() {
                let w = g1.remove(i);
                *w.key.lock() = k2;
                to_move.push(w);
            } else {
                i += 1;
            }
        }
        moved = to_move.len();
        match g2.as_mut() {
            Some(g2) => g2.extend(to_move),
            None => g1.extend(to_move),
        }
    }
    let n = woken.len() + moved;
    wake_all(woken);
    Ok(n)
}

/// Runs the atomic `f` on the word at `addr`, resolving a fault (a page not yet there, or
/// copy-on-write) and retrying; EFAULT where the program could not write.
pub fn atomic_word<R>(mm: &MmRef, addr: u64, f: impl FnMut(&AtomicU32) -> R) -> Result<R, Errno> {
    mm.atomic_u32(addr, f)
}

/// FUTEX_WAKE_OP: atomically applies `op` to the word at `addr2`, wakes up to `n1` waiters of
/// `addr` and, if the old value of `addr2` passes `op`'s comparison, up to `n2` of `addr2`.
/// Returns how many it woke. ENOSYS for an unknown operation or comparison (as Linux).
pub fn wake_op(mm: &MmRef, addr: u64, addr2: u64, private: bool, n1: i32, n2: i32, op: u32) -> Result<usize, Errno> {
    let (k1, k2) = (key_of(mm, addr, private)?, key_of(mm, addr2, private)?);
    let kind = (op >> 28) & 7;
    let shift = op & (8 << 28) != 0;
    let cmp = (op >> 24) & 15;
    let mut oparg = (((op >> 12) & 0xfff) as i32) << 20 >> 20;
    let cmparg = ((op & 0xfff) as i32) << 20 >> 20;
    if shift {
        oparg = 1i32.wrapping_shl((oparg & 31) as u32);
    }
    if kind > 4 || cmp > 5 {
        return Err(Errno::ENOSYS);
    }
    let mut woken = Vec::new();
    {
        let (mut g1, mut g2) = lock_two(bucket_of(&k1), bucket_of(&k2));
        let old = atomic_word(mm, addr2, |w| {
            w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                let a = oparg as u32;
                Some(match kind {
                    0 => a,
                    1 => v.wrapping_add(a),
                    2 => v | a,
                    3 => v & !a,
                    _ => v ^ a,
                })
            })
            .expect("the update always succeeds")
        })? as i32;
        take_waiters(&mut g1, k1, BITSET_ANY, count(n1), &mut woken)?;
        let pass = match cmp {
            0 => old == cmparg,
            1 => old != cmparg,
            2 => old < cmparg,
            3 => old <= cmparg,
            4 => old > cmparg,
            _ => old >= cmparg,
        };
        if pass {
            let mut more = Vec::new();
            match g2.as_mut() {
                Some(g2) => take_waiters(g2, k2, BITSET_ANY, count(n2), &mut more)?,
                None => take_waiters(&mut g1, k2, BITSET_ANY, count(n2), &mut more)?,
            }
            woken.extend(more);
        }
    }
    let n = woken.len();
    wake_all(woken);
    Ok(n)
}

/// A robust futex of the dying thread `tid` at `addr`: if it holds it, the word is marked
/// FUTEX_OWNER_DIED (keeping FUTEX_WAITERS) and a waiter woken (Linux `handle_futex_death`).
fn futex_death(mm: &MmRef, addr: u64, tid: u32) {
    let mut waiters = false;
    let owned = atomic_word(mm, addr, |w| {
        let v = w.load(Ordering::Acquire);
        if v & FUTEX_TID_MASK != tid {
            return false;
        }
        waiters = v & FUTEX_WAITERS != 0;
        w.compare_exchange(v, (v & FUTEX_WAITERS) | FUTEX_OWNER_DIED, Ordering::AcqRel, Ordering::Acquire).is_ok()
    });
    if owned == Ok(true) && waiters {
        let _ = wake(mm, addr, false, 1, BITSET_ANY);
    }
}

/// Walks the ending thread's robust list (`set_robust_list`): each futex it still holds gets
/// FUTEX_OWNER_DIED and a waiter woken, so the next locker learns (EOWNERDEAD). The list is
/// user memory: a bad pointer ends the walk, and at most [`ROBUST_LIST_LIMIT`] entries are
/// followed (a cycle cannot hold the exit).
pub fn exit_robust_list(t: &Thread) {
    let head = t.robust_list.swap(0, Ordering::AcqRel);
    if head == 0 {
        return;
    }
    let Some(mm) = t.mm_ref_if_live() else { return };
    let tid = crate::sched::current().tid;
    let read64 = |addr: u64| -> Option<u64> {
        let mut b = [0u8; 8];
        mm.read(addr, &mut b).ok()?;
        Some(u64::from_le_bytes(b))
    };
    let (Some(first), Some(offset), Some(pending)) = (read64(head), read64(head + 8), read64(head + 16)) else { return };
    let offset = offset as i64;
    let mut entry = first & !1;
    let pending = pending & !1;
    for _ in 0..ROBUST_LIST_LIMIT {
        if entry == head || entry == 0 {
            break;
        }
        let Some(next) = read64(entry) else { break };
        if entry != pending {
            futex_death(&mm, entry.wrapping_add(offset as u64), tid);
        }
        entry = next & !1;
    }
    if pending != 0 {
        futex_death(&mm, pending.wrapping_add(offset as u64), tid);
    }
}

/// One waiter of a PI futex.
struct PiWaiter {
    tid: u32,
    /// Handed the lock (by an unlock, or its owner's death).
    granted: AtomicBool,
    /// Handed the lock because its owner died: the new owner writes the word itself.
    owner_died: AtomicBool,
    queue: WaitQueue,
}

/// Waiters of each PI futex with waiters (their order is the PI chains'; this only finds
/// them to wake).
static PI: Mutex<BTreeMap<Key, Vec<Arc<PiWaiter>>>> = Mutex::new(BTreeMap::new());

/// The PI chains' name for a futex.
fn lock_id(key: &Key) -> crate::sched::pi::PiLockId {
    match *key {
        Key::Private { mm, addr } => (mm as u64, addr),
        Key::Shared { phys } => (0, phys),
    }
}

/// What the word said to a locker.
enum Attempt {
    Acquired,
    Owner(u32),
}

/// The locker's atomic step on the word (Linux `futex_lock_pi_atomic`): a word without an
/// owner becomes ours (keeping FUTEX_OWNER_DIED; FUTEX_WAITERS if others wait); our own tid
/// is EDEADLK; another owner gets FUTEX_WAITERS set, so its unlock comes to the kernel.
fn lock_pi_atomic(mm: &MmRef, addr: u64, tid: u32, others_wait: bool) -> Result<Attempt, Errno> {
    atomic_word(mm, addr, |w| loop {
        let v = w.load(Ordering::Acquire);
        let owner = v & FUTEX_TID_MASK;
        if owner == 0 {
            let new = tid | (v & FUTEX_OWNER_DIED) | if others_wait { FUTEX_WAITERS } else { 0 };
            if w.compare_exchange(v, new, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Ok(Attempt::Acquired);
            }
        } else if owner == tid {
            return Err(Errno::EDEADLK);
        } else if v & FUTEX_WAITERS != 0 || w.compare_exchange(v, v | FUTEX_WAITERS, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return Ok(Attempt::Owner(owner));
        }
    })?
}

/// FUTEX_LOCK_PI / LOCK_PI2 / TRYLOCK_PI: takes the PI futex at `addr`, sleeping (unless
/// `trylock`) until its owner hands it over, boosting the owner's chain meanwhile. Errors as
/// Linux: EDEADLK if the caller owns it or waits in a cycle, ESRCH if the word names no
/// thread, EAGAIN for a trylock that would block, ETIMEDOUT at `deadline_ns` (monotonic),
/// ERESTARTNOINTR on a signal (the call is restarted after the handler), EFAULT.
pub fn lock_pi(mm: &MmRef, addr: u64, private: bool, deadline_ns: Option<u64>, trylock: bool) -> Result<(), Errno> {
    let tid = crate::sched::current_tid();
    let key = key_of(mm, addr, private)?;
    let id = lock_id(&key);
    let mut g = PI.lock_uninterruptible();
    let others_wait = g.get(&key).is_some_and(|v| !v.is_empty());
    let owner = match lock_pi_atomic(mm, addr, tid, others_wait)? {
        Attempt::Acquired => return Ok(()),
        Attempt::Owner(o) => o,
    };
    // The owner must be a thread that has not handed on its PI futexes at its end (Linux's
    // `attach_to_pi_owner`: ESRCH once its futex state is dead, which a `pthread_join` of it
    // already implies), and the one the chains know if they know the lock.
    let owner_task = crate::sched::task::find(owner)
        .filter(|t| t.state() != crate::sched::task::TaskState::Dead && !t.kthread)
        .filter(|t| super::thread_of(t).is_some_and(|th| !th.futex_exited.load(Ordering::Acquire)))
        .ok_or(Errno::ESRCH)?;
    if crate::sched::pi::owner(id).is_some_and(|o| o != owner) {
        return Err(Errno::EINVAL);
    }
    if trylock {
        return Err(Errno::EAGAIN);
    }
    crate::sched::pi::block(id, &owner_task)?;
    let w = Arc::new(PiWaiter { tid, granted: AtomicBool::new(false), owner_died: AtomicBool::new(false), queue: WaitQueue::new() });
    g.entry(key).or_default().push(w.clone());
    drop(g);
    let granted = || w.granted.load(Ordering::Acquire);
    let r = match deadline_ns {
        None => w.queue.wait_until_interruptible(granted).map(|_| true),
        Some(d) => w.queue.wait_until_interruptible_deadline(granted, d),
    };
    // Granted is final (set under `PI` by the hand-over, which took us off the lists): a new
    // owner does not wait for `PI`, which its deboosted predecessor may still hold. Not
    // granted yet, the wait ended by time or signal: checked again under `PI`, as a hand-over
    // may have come meanwhile.
    if !w.granted.load(Ordering::Acquire) {
        let mut g = PI.lock_uninterruptible();
        if !w.granted.load(Ordering::Acquire) {
            if let Some(v) = g.get_mut(&key) {
                v.retain(|x| !Arc::ptr_eq(x, &w));
                if v.is_empty() {
                    g.remove(&key);
                }
            }
            crate::sched::pi::unblock();
            return Err(if r.is_ok() { Errno::ETIMEDOUT } else { Errno::ERESTARTNOINTR });
        }
    }
    if w.owner_died.load(Ordering::Acquire) {
        // Its owner died holding it: the word names us now, marked for the robust protocol
        // (Linux's `fixup_pi_state_owner`).
        atomic_word(mm, addr, |x| x.store(tid | FUTEX_WAITERS | FUTEX_OWNER_DIED, Ordering::Release))?;
    }
    Ok(())
}

/// Hands `key`'s lock to its top waiter (under [`PI`]): `set_word` gets the new owner's tid
/// before it is woken (it may run, and unlock, at once). Returns the new owner and the old
/// owner's deboost, which the caller applies after letting go of [`PI`] (deboosted, it may be
/// preempted at once: holding `PI` then, it would stall every PI futex).
fn hand_over(
    g: &mut BTreeMap<Key, Vec<Arc<PiWaiter>>>,
    key: Key,
    owner_died: bool,
    set_word: impl FnOnce(u32),
) -> (Option<u32>, crate::sched::pi::Deferred) {
    let (next, deboost) = crate::sched::pi::release(lock_id(&key));
    let next = next.and_then(|next| {
        set_word(next);
        let ws = g.get_mut(&key)?;
        let i = ws.iter().position(|w| w.tid == next)?;
        let w = ws.remove(i);
        if ws.is_empty() {
            g.remove(&key);
        }
        w.owner_died.store(owner_died, Ordering::Release);
        w.granted.store(true, Ordering::Release);
        w.queue.wake_all();
        Some(next)
    });
    (next, deboost)
}

/// FUTEX_UNLOCK_PI: the caller releases the PI futex at `addr`: to its top waiter if one
/// waits in the kernel (the word becomes that thread's tid | FUTEX_WAITERS), else the word
/// becomes 0. EPERM unless the word names the caller.
pub fn unlock_pi(mm: &MmRef, addr: u64, private: bool) -> Result<(), Errno> {
    let tid = crate::sched::current_tid();
    let key = key_of(mm, addr, private)?;
    let mut g = PI.lock_uninterruptible();
    if read_word(mm, addr)? & FUTEX_TID_MASK != tid {
        return Err(Errno::EPERM);
    }
    if g.get(&key).is_some_and(|v| !v.is_empty()) {
        let mut fault = Ok(());
        let set = |next: u32| fault = atomic_word(mm, addr, |w| w.store(next | FUTEX_WAITERS, Ordering::Release));
        let (next, deboost) = hand_over(&mut g, key, false, set);
        // The new owner is woken; now the deboost (`sched::pi`'s module doc), without `PI`.
        drop(g);
        deboost.apply();
        if next.is_some() {
            return fault;
        }
        g = PI.lock_uninterruptible();
    }
    // Under `PI`: no locker sets FUTEX_WAITERS between our read and our write.
    let r = atomic_word(mm, addr, |w| loop {
        let v = w.load(Ordering::Acquire);
        if v & FUTEX_TID_MASK != tid {
            return Err(Errno::EPERM);
        }
        if w.compare_exchange(v, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return Ok(());
        }
    })?;
    drop(g);
    r
}

/// The ending thread `tid`'s PI futexes that others wait on go to their top waiters, who
/// find FUTEX_OWNER_DIED in the word (Linux `exit_pi_state_list`). Runs after the robust
/// list walk, as Linux's `futex_cleanup`.
pub fn exit_pi(t: &Thread, tid: u32) {
    let mut g = PI.lock_uninterruptible();
    // Under `PI`, before the owned locks are listed: no locker can attach to this thread
    // after it (it answers ESRCH), so no waiter is left on a lock nobody will hand on.
    t.futex_exited.store(true, Ordering::Release);
    let mut deboosts = Vec::new();
    for id in crate::sched::pi::exit(tid) {
        let key = g.keys().copied().find(|k| lock_id(k) == id);
        deboosts.push(match key {
            Some(key) => hand_over(&mut g, key, true, |_| {}).1,
            None => crate::sched::pi::release(id).1,
        });
    }
    drop(g);
    for d in deboosts {
        d.apply();
    }
}
