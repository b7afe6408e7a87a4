//! Priority inheritance: the chains of Linux's rt_mutex (`kernel/locking/rtmutex.c`,
//! `Documentation/locking/rt-mutex-design.rst`), as a pure graph of tasks and locks.
//!
//! A lock has at most one owner and a set of waiters ordered by their *effective* priority
//! (then by arrival, FIFO among equals). A task blocks on at most one lock. Each task's
//! effective priority is the best of its own and of the top waiter of every lock it owns:
//!
//! ```text
//! eff(t) = min(own(t), min { eff(top_waiter(l)) : l owned by t })      (lower = better)
//! ```
//!
//! so a boost travels down a chain `waiter → lock → owner → lock → owner …`, and a task
//! unboosts exactly when the last waiter that boosted it leaves (woken as the new owner of
//! a lock it released, timed out, interrupted, or lowered its own priority). Each step
//! returns the tasks whose effective priority changed ([`Change`]), in chain order; the
//! kernel applies them to its run queues (`sched::pi`).
//!
//! Priorities are Linux's `prio` ([`PiPrio`]): −1 for SCHED_DEADLINE (ties broken by the
//! earlier absolute deadline, Linux's `rt_mutex_waiter_less`), 0..=98 for RT (99 −
//! rt_priority), 100..=139 for fair tasks (the kernel applies only RT and deadline boosts,
//! as Linux, whose fair class ignores `prio`).
//!
//! **Deadlocks.** Blocking walks the chain from the lock's owner first: reaching the
//! blocking task again, or going deeper than [`MAX_LOCK_DEPTH`] (Linux's `max_lock_depth`),
//! is refused with [`PiError::Deadlock`] and changes nothing (Linux's EDEADLK).
//!
//! The graph is generic over the kernel's task and lock identities.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

/// Linux's `max_lock_depth`: the longest chain a block may walk.
pub const MAX_LOCK_DEPTH: usize = 1024;

/// A task's priority as the chains compare it (lower = more important).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PiPrio {
    /// Linux `prio`: −1 deadline, 0..=98 RT, 100..=139 fair.
    pub prio: i32,
    /// A deadline task's absolute deadline (ns); 0 for the other classes.
    pub deadline: u64,
}

impl PiPrio {
    /// A deadline task's priority with its current absolute deadline.
    pub const fn deadline(deadline: u64) -> Self {
        Self { prio: -1, deadline }
    }

    /// A task of Linux priority `prio` (RT or fair).
    pub const fn linux(prio: i32) -> Self {
        Self { prio, deadline: 0 }
    }

    /// Does this priority, as a boost, change a task's class (RT or deadline)? Linux's fair
    /// class ignores `prio`, so a fair donor changes nothing there.
    pub const fn is_rt_or_deadline(&self) -> bool {
        self.prio < 100
    }
}

/// Why a block was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiError {
    /// The chain leads back to the blocking task, or is longer than [`MAX_LOCK_DEPTH`].
    Deadlock,
    /// The task is already blocked on a lock.
    AlreadyBlocked,
}

/// One task's effective priority after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change<T> {
    /// The task.
    pub task: T,
    /// Its effective priority now.
    pub prio: PiPrio,
    /// The task whose own priority that is, when not its own (the donor at the chain's
    /// start: a deadline boost takes the donor's parameters); `None` when unboosted.
    pub donor: Option<T>,
}

#[derive(Clone, Debug)]
struct TaskNode<T, L> {
    own: PiPrio,
    eff: PiPrio,
    donor: Option<T>,
    /// The lock it waits on, and its key in that lock's waiter set.
    blocked_on: Option<(L, (PiPrio, u64))>,
    owns: BTreeSet<L>,
}

#[derive(Clone, Debug)]
struct LockNode<T> {
    owner: Option<T>,
    waiters: BTreeSet<((PiPrio, u64), T)>,
}

/// The tasks and locks taking part in priority inheritance (module doc). Tasks that neither
/// own a lock with waiters nor wait are forgotten, so the graph holds only live chains.
#[derive(Clone, Debug)]
pub struct PiChains<T: Ord + Copy, L: Ord + Copy> {
    tasks: BTreeMap<T, TaskNode<T, L>>,
    locks: BTreeMap<L, LockNode<T>>,
    seq: u64,
}

impl<T: Ord + Copy, L: Ord + Copy> Default for PiChains<T, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Copy, L: Ord + Copy> PiChains<T, L> {
    /// No tasks, no locks.
    pub const fn new() -> Self {
        Self { tasks: BTreeMap::new(), locks: BTreeMap::new(), seq: 0 }
    }

    fn node(&mut self, t: T, own: PiPrio) -> &mut TaskNode<T, L> {
        self.tasks.entry(t).or_insert(TaskNode { own, eff: own, donor: None, blocked_on: None, owns: BTreeSet::new() })
    }

    /// No task waits and no lock is known.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.locks.is_empty()
    }

    /// `t`'s effective priority and donor, if the chains hold it.
    pub fn effective(&self, t: T) -> Option<(PiPrio, Option<T>)> {
        self.tasks.get(&t).map(|n| (n.eff, n.donor))
    }

    /// The lock `t` waits on.
    pub fn blocked_on(&self, t: T) -> Option<L> {
        self.tasks.get(&t).and_then(|n| n.blocked_on.map(|(l, _)| l))
    }

    /// The owner the chains know for `l` (a lock is known while it has waiters).
    pub fn owner(&self, l: L) -> Option<T> {
        self.locks.get(&l).and_then(|n| n.owner)
    }

    /// The locks `t` owns that have waiters.
    pub fn owned(&self, t: T) -> Vec<L> {
        self.tasks.get(&t).map(|n| n.owns.iter().copied().collect()).unwrap_or_default()
    }

    /// `t`'s priority from its own and its locks' top waiters, with the donor.
    fn compute(&self, t: T) -> (PiPrio, Option<T>) {
        let n = &self.tasks[&t];
        let mut best = (n.own, None);
        for l in &n.owns {
            if let Some(&((_, _), w)) = self.locks[l].waiters.first() {
                let wn = &self.tasks[&w];
                if wn.eff < best.0 {
                    best = (wn.eff, Some(wn.donor.unwrap_or(w)));
                }
            }
        }
        best
    }

    /// Recomputes `start`'s effective priority and carries a change down the chain.
    fn propagate(&mut self, start: T, out: &mut Vec<Change<T>>) {
        let mut t = start;
        for _ in 0..=MAX_LOCK_DEPTH {
            let (eff, donor) = self.compute(t);
            let n = self.tasks.get_mut(&t).expect("a task in a chain is known");
            if n.eff == eff && n.donor == donor {
                return;
            }
            let changed_prio = n.eff != eff;
            n.eff = eff;
            n.donor = donor;
            out.retain(|c| c.task != t);
            out.push(Change { task: t, prio: eff, donor });
            // Requeue in the lock it waits on, by its new priority (only the donor changed:
            // same place); go on to that owner, whose donor may be this one's.
            let Some((l, key)) = n.blocked_on else { return };
            let ln = self.locks.get_mut(&l).expect("a lock with waiters is known");
            if changed_prio {
                let new_key = (eff, key.1);
                ln.waiters.remove(&(key, t));
                ln.waiters.insert((new_key, t));
                self.tasks.get_mut(&t).expect("known").blocked_on = Some((l, new_key));
            }
            let ln = &self.locks[&l];
            match ln.owner {
                Some(o) => t = o,
                None => return,
            }
        }
    }

    /// Forgets `t` if it takes part in nothing.
    fn gc_task(&mut self, t: T) {
        if self.tasks.get(&t).is_some_and(|n| n.blocked_on.is_none() && n.owns.is_empty()) {
            self.tasks.remove(&t);
        }
    }

    /// `waiter` (own priority `waiter_own`) blocks on `lock`, owned by `owner` (own priority
    /// `owner_own`; ignored if the chains already know the owner). Boosts the chain.
    /// Refused, changing nothing, on a cycle or a chain deeper than [`MAX_LOCK_DEPTH`].
    pub fn block(&mut self, waiter: T, waiter_own: PiPrio, lock: L, owner: T, owner_own: PiPrio) -> Result<Vec<Change<T>>, PiError> {
        if self.blocked_on(waiter).is_some() {
            return Err(PiError::AlreadyBlocked);
        }
        let owner = self.owner(lock).unwrap_or(owner);
        // The deadlock walk: owner → its lock → that lock's owner …
        let mut t = owner;
        let mut depth = 0;
        loop {
            if t == waiter {
                return Err(PiError::Deadlock);
            }
            depth += 1;
            if depth > MAX_LOCK_DEPTH {
                return Err(PiError::Deadlock);
            }
            match self.blocked_on(t).and_then(|l| self.owner(l)) {
                Some(o) => t = o,
                None => break,
            }
        }
        self.node(owner, owner_own);
        let w = self.node(waiter, waiter_own);
        let key = (w.eff, 0);
        self.seq += 1;
        let key = (key.0, self.seq);
        self.tasks.get_mut(&waiter).expect("just added").blocked_on = Some((lock, key));
        let ln = self.locks.entry(lock).or_insert(LockNode { owner: Some(owner), waiters: BTreeSet::new() });
        ln.waiters.insert((key, waiter));
        self.tasks.get_mut(&owner).expect("just added").owns.insert(lock);
        let mut out = Vec::new();
        self.propagate(owner, &mut out);
        Ok(out)
    }

    /// `waiter` stops waiting (timeout, signal) without the lock. The owner's chain loses
    /// its boost if it was the one boosting.
    pub fn unblock(&mut self, waiter: T) -> Vec<Change<T>> {
        let mut out = Vec::new();
        let Some(n) = self.tasks.get_mut(&waiter) else { return out };
        let Some((l, key)) = n.blocked_on.take() else { return out };
        let ln = self.locks.get_mut(&l).expect("a lock with waiters is known");
        ln.waiters.remove(&(key, waiter));
        let owner = ln.owner;
        if ln.waiters.is_empty() {
            self.locks.remove(&l);
            if let Some(o) = owner {
                self.tasks.get_mut(&o).expect("an owner is known").owns.remove(&l);
            }
        }
        if let Some(o) = owner {
            self.propagate(o, &mut out);
            self.gc_task(o);
        }
        self.gc_task(waiter);
        out
    }

    /// `l`'s owner releases it: the top waiter, if any, becomes the owner (and stops
    /// waiting; the lock stays known while others wait), the old owner loses what its
    /// waiters gave it. Returns the new owner and the changes.
    pub fn release(&mut self, l: L) -> (Option<T>, Vec<Change<T>>) {
        let mut out = Vec::new();
        let Some(ln) = self.locks.get_mut(&l) else { return (None, out) };
        let old = ln.owner.take();
        let top = ln.waiters.pop_first();
        let empty = ln.waiters.is_empty();
        if let Some(o) = old {
            self.tasks.get_mut(&o).expect("an owner is known").owns.remove(&l);
        }
        let new_owner = top.map(|(_, t)| t);
        if let Some(t) = new_owner {
            self.tasks.get_mut(&t).expect("a waiter is known").blocked_on = None;
            if empty {
                self.locks.remove(&l);
            } else {
                self.locks.get_mut(&l).expect("still has waiters").owner = Some(t);
                self.tasks.get_mut(&t).expect("a waiter is known").owns.insert(l);
            }
            self.propagate(t, &mut out);
        } else {
            self.locks.remove(&l);
        }
        if let Some(o) = old {
            self.propagate(o, &mut out);
            self.gc_task(o);
        }
        if let Some(t) = new_owner {
            self.gc_task(t);
        }
        (new_owner, out)
    }

    /// `t`'s own priority changed (sched_setattr, or a deadline task's new period): its
    /// place among its lock's waiters and the chain below follow.
    pub fn set_own(&mut self, t: T, own: PiPrio) -> Vec<Change<T>> {
        let mut out = Vec::new();
        if let Some(n) = self.tasks.get_mut(&t) {
            n.own = own;
            self.propagate(t, &mut out);
        }
        out
    }

    /// `t` exits: it stops waiting, and every lock it owns loses its owner (its top waiter
    /// is handed the lock by [`release`](Self::release), which the caller does for each lock
    /// returned).
    pub fn owned_at_exit(&mut self, t: T) -> (Vec<L>, Vec<Change<T>>) {
        let out = self.unblock(t);
        (self.owned(t), out)
    }

    /// Checks the invariants (tests): each task's effective priority is the best of its own
    /// and its locks' top waiters; each waiter is keyed by its effective priority; owners
    /// and waiters agree with the task nodes; no task is kept that takes part in nothing.
    pub fn check(&self) -> Result<(), &'static str> {
        for (&t, n) in &self.tasks {
            if n.blocked_on.is_none() && n.owns.is_empty() {
                return Err("an idle task is kept");
            }
            if self.compute(t) != (n.eff, n.donor) {
                return Err("effective priority is not the best of own and top waiters");
            }
            if let Some((l, key)) = n.blocked_on {
                let ln = self.locks.get(&l).ok_or("blocked on an unknown lock")?;
                if !ln.waiters.contains(&(key, t)) || key.0 != n.eff {
                    return Err("waiter not keyed by its effective priority");
                }
            }
            for l in &n.owns {
                if self.locks.get(l).and_then(|x| x.owner) != Some(t) {
                    return Err("owned lock names another owner");
                }
            }
        }
        for (l, ln) in &self.locks {
            if ln.waiters.is_empty() {
                return Err("a lock without waiters is kept");
            }
            for &(_, w) in &ln.waiters {
                if self.blocked_on(w) != Some(*l) {
                    return Err("waiter not blocked on the lock");
                }
            }
            if let Some(o) = ln.owner {
                if !self.tasks.get(&o).is_some_and(|n| n.owns.contains(l)) {
                    return Err("owner does not list the lock");
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rt(p: u8) -> PiPrio {
        PiPrio::linux(99 - p as i32)
    }

    #[test]
    fn classic_inversion_boosts_then_unboosts() {
        let mut c: PiChains<u32, u32> = PiChains::new();
        // FIFO 10 (task 1) owns lock 7; FIFO 90 (task 2) blocks on it.
        let ch = c.block(2, rt(90), 7, 1, rt(10)).unwrap();
        assert_eq!(ch, vec![Change { task: 1, prio: rt(90), donor: Some(2) }]);
        c.check().unwrap();
        let (owner, ch) = c.release(7);
        assert_eq!(owner, Some(2));
        assert_eq!(ch, vec![Change { task: 1, prio: rt(10), donor: None }]);
        assert!(c.effective(1).is_none() && c.effective(2).is_none());
    }

    #[test]
    fn chain_carries_the_boost_and_the_donor() {
        let mut c: PiChains<u32, u32> = PiChains::new();
        c.block(2, rt(20), 100, 1, rt(10)).unwrap(); // 2 waits on 1's lock 100
        let ch = c.block(3, PiPrio::deadline(5_000), 200, 2, rt(20)).unwrap(); // 3 waits on 2's 200
        assert_eq!(
            ch,
            vec![
                Change { task: 2, prio: PiPrio::deadline(5_000), donor: Some(3) },
                Change { task: 1, prio: PiPrio::deadline(5_000), donor: Some(3) }
            ]
        );
        c.check().unwrap();
        // 3 times out: both unboost to what remains.
        let ch = c.unblock(3);
        assert_eq!(ch, vec![Change { task: 2, prio: rt(20), donor: None }, Change { task: 1, prio: rt(20), donor: Some(2) }]);
        c.check().unwrap();
    }

    #[test]
    fn cycles_and_self_deadlocks_are_refused() {
        let mut c: PiChains<u32, u32> = PiChains::new();
        c.block(2, rt(1), 100, 1, rt(1)).unwrap(); // 2 waits for 1
        assert_eq!(c.block(1, rt(1), 200, 2, rt(1)), Err(PiError::Deadlock)); // 1 waits for 2
        assert_eq!(c.block(3, rt(1), 300, 3, rt(1)), Err(PiError::Deadlock));
        c.check().unwrap();
    }

    #[test]
    fn deep_chains_are_refused_past_the_limit() {
        let mut c: PiChains<u32, u32> = PiChains::new();
        for t in 1..=(MAX_LOCK_DEPTH as u32) {
            c.block(t + 1, rt(1), t, t, rt(1)).unwrap(); // t+1 waits on t's lock t
        }
        let top = MAX_LOCK_DEPTH as u32 + 1;
        assert_eq!(c.block(top + 1, rt(2), top, top, rt(1)), Err(PiError::Deadlock));
        c.check().unwrap();
    }

    #[derive(Clone, Debug)]
    enum Op {
        Block { waiter: u8, lock: u8, owner: u8 },
        Unblock { waiter: u8 },
        Release { lock: u8 },
        SetOwn { task: u8, prio: u8 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..8, 0u8..6, 0u8..8).prop_map(|(waiter, lock, owner)| Op::Block { waiter, lock, owner }),
            (0u8..8).prop_map(|waiter| Op::Unblock { waiter }),
            (0u8..6).prop_map(|lock| Op::Release { lock }),
            (0u8..8, 0u8..4).prop_map(|(task, prio)| Op::SetOwn { task, prio }),
        ]
    }

    /// Own priorities: a few RT levels, a fair one and two deadlines.
    fn own_of(p: u8) -> PiPrio {
        match p {
            0 => PiPrio::linux(120),
            1 => rt(10),
            2 => rt(90),
            _ => PiPrio::deadline(1_000 + p as u64),
        }
    }

    proptest! {
        /// After every step each task runs at the best of its own and its waiters' effective
        /// priorities; it unboosts exactly when the last boosting waiter leaves; each
        /// reported change is the task's state after the step; a refused block changes nothing.
        #[test]
        fn effective_priority_is_the_best_of_own_and_waiters(ops in proptest::collection::vec(op(), 1..80)) {
            let mut c: PiChains<u8, u8> = PiChains::new();
            let mut own = [own_of(0); 8];
            for o in ops {
                let before = c.clone();
                let changes = match o {
                    Op::Block { waiter, lock, owner } => {
                        match c.block(waiter, own[waiter as usize], lock, owner, own[owner as usize]) {
                            Ok(ch) => ch,
                            Err(_) => {
                                prop_assert_eq!(format!("{:?}", c.tasks), format!("{:?}", before.tasks));
                                continue;
                            }
                        }
                    }
                    Op::Unblock { waiter } => c.unblock(waiter),
                    Op::Release { lock } => c.release(lock).1,
                    Op::SetOwn { task, prio } => {
                        own[task as usize] = own_of(prio);
                        c.set_own(task, own[task as usize])
                    }
                };
                prop_assert_eq!(c.check(), Ok(()));
                for ch in &changes {
                    let (eff, donor) = c.effective(ch.task).unwrap_or((own[ch.task as usize], None));
                    prop_assert_eq!((ch.prio, ch.donor), (eff, donor));
                }
                // Boosted iff some waiter (transitively) beats the task's own priority.
                for t in 0u8..8 {
                    if let Some((eff, donor)) = c.effective(t) {
                        prop_assert_eq!(donor.is_some(), eff < own[t as usize]);
                        if let Some(d) = donor {
                            prop_assert_eq!(own[d as usize], eff);
                        }
                    }
                }
            }
        }
    }
}
