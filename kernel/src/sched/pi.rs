//! Priority inheritance, the mechanism (Linux's rt_mutex, `kernel/locking/rtmutex.c`): the
//! chains themselves are the policy crate's [`PiChains`] (`cadence_sched::pi`, host
//! proptested); this module keeps one instance for the whole kernel and applies each step's
//! changes to the tasks, as Linux's `rt_mutex_setprio`.
//!
//! **Boosts.** A task whose top PI waiter beats it runs with that waiter's priority: an RT
//! donor lends its RT priority (the owner keeps SCHED_RR if it had it, else runs as FIFO),
//! a deadline donor its deadline parameters (the owner joins the deadline class without
//! being admitted, and is replenished instead of throttled when its runtime runs out, as
//! Linux's `is_dl_boosted`). A fair donor lends nothing (Linux's fair class ignores `prio`).
//! The boost is [`SchedParams::boost`](super::task::SchedParams::boost); `sched_getattr`
//! keeps reporting the task's own attributes; `ps` and the tracer (`sched_pi_setprio`)
//! show the boosted priority.
//!
//! **Users.** PI futexes (`process::futex`): a waiter calls [`block`] before it sleeps and
//! [`unblock`] if it stops waiting without the lock; an unlock calls [`release`], which
//! names the new owner; an exiting task's locks are handed on ([`exit`]). The kernel's own
//! PI mutex, [`RtMutex`], is built the same way (the chaos stress takes chains of them).
//!
//! Lock order: the chains' lock → `params` → run-queue locks. A task's own priority changes
//! (`sched_setattr`) reach the chains after `params` is let go ([`own_changed`]).

use super::task::{self, Task, Tid};
use super::wait::WaitQueue;
use crate::sync::IrqLock;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::pi::{Change, PiChains, PiError, PiPrio};
use cadence_sched::{Errno, Policy, ValidAttr};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A PI lock's identity: two words chosen by its user (a futex: its key).
pub type PiLockId = (u64, u64);

static CHAINS: IrqLock<PiChains<Tid, PiLockId>> = IrqLock::new(PiChains::new());

/// `t`'s own priority as the chains compare it (a deadline task's with its current
/// absolute deadline).
fn own_prio(t: &Task) -> PiPrio {
    let attr = t.attr();
    match attr.dl {
        Some(dl) => {
            let deadline = super::class::deadline::server_of(t)
                .map(|(d, _)| d)
                .filter(|&d| d != 0)
                .unwrap_or_else(|| crate::time::uptime_ns().wrapping_add(dl.deadline));
            PiPrio::deadline(deadline)
        }
        None => PiPrio::linux(attr.prio()),
    }
}

/// The attributes a boost to `prio` from `donor` lends `own`.
fn boost_attr(own: &ValidAttr, prio: PiPrio, donor: Option<Tid>) -> Option<ValidAttr> {
    let donor = donor?;
    if !prio.is_rt_or_deadline() {
        return None;
    }
    if prio.prio < 0 {
        let dl = task::find(donor)?.attr().dl?;
        return Some(ValidAttr { policy: Policy::Deadline, rt_priority: 0, dl: Some(dl), ..*own });
    }
    let policy = if own.policy == Policy::RR { Policy::RR } else { Policy::Fifo };
    Some(ValidAttr { policy, rt_priority: (99 - prio.prio) as u8, dl: None, ..*own })
}

/// Applies a step's changes (under the chains' lock, so they land in chain order). Each
/// task's boost is read from the chains now, not from the step: a change whose application
/// was deferred ([`Deferred`]) cannot apply a stale priority.
fn apply(c: &PiChains<Tid, PiLockId>, changes: impl IntoIterator<Item = Tid>) {
    for tid in changes {
        let Some(t) = task::find(tid) else { continue };
        let own = t.attr();
        let boost = match c.effective(tid) {
            Some((prio, donor)) => boost_attr(&own, prio, donor),
            None => None,
        };
        let p = t.params.lock();
        if p.boost == boost || t.left_group.load(Ordering::Acquire) {
            continue;
        }
        super::api::apply_params(&t, p, |p| p.boost = boost);
    }
}

fn tasks(changes: Vec<Change<Tid>>) -> impl Iterator<Item = Tid> {
    changes.into_iter().map(|c| c.task)
}

/// Priority changes a release made in the chains but has not applied yet: the unlocker wakes
/// the new owner first, then applies them (Linux's `rt_mutex_postunlock`: the old owner's
/// deboost must not let a lower task preempt it before the top waiter is woken).
#[must_use = "the old owner stays boosted until applied"]
pub struct Deferred(Vec<Tid>);

impl Deferred {
    /// Applies them.
    pub fn apply(self) {
        let c = CHAINS.lock();
        apply(&c, self.0);
    }
}

/// The calling task blocks on `lock`, owned by `owner` (the chains' owner wins if they know
/// the lock). Boosts the chain. EDEADLK on a cycle (the owner waits, directly or down its
/// chain, for the caller) or a chain deeper than Linux's `max_lock_depth`.
pub fn block(lock: PiLockId, owner: &Arc<Task>) -> Result<(), Errno> {
    let me = super::current();
    let mut c = CHAINS.lock();
    let changes = c.block(me.tid, own_prio(&me), lock, owner.tid, own_prio(owner)).map_err(|e| match e {
        PiError::Deadlock | PiError::AlreadyBlocked => Errno::EDEADLK,
    })?;
    apply(&c, tasks(changes));
    Ok(())
}

/// The calling task stops waiting without the lock (timeout, signal).
pub fn unblock() {
    let me = super::current_tid();
    let mut c = CHAINS.lock();
    let changes = c.unblock(me);
    apply(&c, tasks(changes));
}

/// `lock` is released by its owner: returns its top waiter, now its owner (no longer
/// waiting), or `None` if nobody waits, and the priority changes (the old owner loses what
/// the lock's waiters lent it) to apply once the new owner is woken.
pub fn release(lock: PiLockId) -> (Option<Tid>, Deferred) {
    let mut c = CHAINS.lock();
    let (owner, changes) = c.release(lock);
    (owner, Deferred(tasks(changes).collect()))
}

/// The owner the chains know for `lock` (known while it has waiters).
pub fn owner(lock: PiLockId) -> Option<Tid> {
    CHAINS.lock().owner(lock)
}

/// `t`'s own attributes changed: its place in its chain follows.
pub fn own_changed(t: &Task) {
    let mut c = CHAINS.lock();
    if c.effective(t.tid).is_some() {
        let changes = c.set_own(t.tid, own_prio(t));
        apply(&c, tasks(changes));
    }
}

/// `tid` exits: it stops waiting; returns the locks it owns that have waiters (the caller
/// hands each to its top waiter with [`release`]).
pub fn exit(tid: Tid) -> Vec<PiLockId> {
    let mut c = CHAINS.lock();
    let (owned, changes) = c.owned_at_exit(tid);
    apply(&c, tasks(changes));
    owned
}

/// Nobody waits on a PI lock (a quiesced system's state: the chaos stress checks it).
pub fn chains_empty() -> bool {
    CHAINS.lock().is_empty()
}

/// The chains' first word for kernel mutexes (futex keys use an address space's address or 0).
const KERNEL_LOCKS: u64 = u64::MAX;
static NEXT_RT_MUTEX: AtomicU64 = AtomicU64::new(1);

/// A kernel mutex with priority inheritance (Linux's `rt_mutex`): a task that waits for it
/// boosts its owner down the chain; an unlock hands it straight to the top waiter. Taken from
/// task context only; not reentrant (EDEADLK, as a cycle through other mutexes).
pub struct RtMutex {
    id: u64,
    /// The owner's tid, 0 when free.
    owner: AtomicU32,
    /// Serializes the slow paths (a waiter joining the chain against an unlock).
    slow: IrqLock<()>,
    waiters: WaitQueue,
}

impl Default for RtMutex {
    fn default() -> Self {
        Self::new()
    }
}

impl RtMutex {
    /// A free mutex.
    pub fn new() -> Self {
        Self {
            id: NEXT_RT_MUTEX.fetch_add(1, Ordering::Relaxed),
            owner: AtomicU32::new(0),
            slow: IrqLock::new(()),
            waiters: WaitQueue::new(),
        }
    }

    /// The owner's tid (0: free).
    pub fn owner(&self) -> Tid {
        self.owner.load(Ordering::Acquire)
    }

    /// Takes the mutex, sleeping (uninterruptibly) until its owner hands it over. EDEADLK if
    /// the caller owns it, or waiting would close a cycle of owners (or a chain deeper than
    /// Linux's `max_lock_depth`); the caller holds nothing new then.
    pub fn lock(&self) -> Result<(), Errno> {
        let me = super::current();
        loop {
            if self.owner.compare_exchange(0, me.tid, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Ok(());
            }
            let g = self.slow.lock();
            let o = self.owner.load(Ordering::Acquire);
            if o == 0 {
                continue; // released meanwhile
            }
            if o == me.tid {
                return Err(Errno::EDEADLK);
            }
            // Kernel code unlocks what it locks before it ends: the owner lives.
            let Some(owner) = task::find(o) else { continue };
            block((KERNEL_LOCKS, self.id), &owner)?;
            drop(g);
            self.waiters.wait_until_uninterruptible(|| self.owner.load(Ordering::Acquire) == me.tid);
            return Ok(());
        }
    }

    /// Releases the mutex (the caller must own it: EPERM otherwise): to the top waiter, who is
    /// woken before the caller loses what the waiters lent it.
    pub fn unlock(&self) -> Result<(), Errno> {
        let me = super::current_tid();
        let g = self.slow.lock();
        if self.owner.load(Ordering::Acquire) != me {
            return Err(Errno::EPERM);
        }
        let (next, deboost) = release((KERNEL_LOCKS, self.id));
        self.owner.store(next.unwrap_or(0), Ordering::Release);
        drop(g);
        if next.is_some() {
            self.waiters.wake_all();
        }
        deboost.apply();
        Ok(())
    }
}
