//! The blocking resources of an rt-app workload, built on [`WaitQueue`]: a mutex that is
//! locked and unlocked by separate events, a condition variable (wait/signal/broad, also used by
//! suspend/resume) and a barrier. Every wait also ends when the workload's `stop` flag is set
//! (the runner sets it and then calls `wake_all` on every resource), so stopping never leaves a
//! thread blocked.
//!
//! Condition-variable contract (pthread-like): `signal` releases the oldest thread waiting when
//! it is called, `broad` all of them, never a thread that starts waiting afterwards; a signal
//! with no waiter is lost (as with pthreads, which is why rt-app's `resume` before `suspend` is
//! lost too).

use crate::sched::wait::WaitQueue;
use crate::sync::IrqLock;
use alloc::collections::{BTreeSet, VecDeque};
use core::sync::atomic::{AtomicBool, Ordering};

/// A sleeping mutex without a guard: `lock` and `unlock` are separate workload events.
pub struct EvMutex {
    locked: AtomicBool,
    wq: WaitQueue,
}

impl EvMutex {
    pub const fn new() -> Self {
        EvMutex { locked: AtomicBool::new(false), wq: WaitQueue::new() }
    }

    fn try_acquire(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Takes the mutex; `false` if `stop` was set first (the mutex is then not held).
    pub fn lock(&self, stop: &AtomicBool) -> bool {
        let mut got = false;
        self.wq.wait_until(|| {
            got = self.try_acquire();
            got || stop.load(Ordering::Acquire)
        });
        got
    }

    /// Releases the mutex (a no-op if it is not locked).
    pub fn unlock(&self) {
        if self.locked.swap(false, Ordering::Release) {
            self.wq.wake_one();
        }
    }

    pub fn wake_all(&self) {
        self.wq.wake_all();
    }
}

struct CondState {
    next_ticket: u64,
    /// Tickets of the threads inside `wait`, oldest first.
    waiting: VecDeque<u64>,
    /// Tickets released by signal/broad and not yet seen by their waiter.
    released: BTreeSet<u64>,
}

/// A condition variable used with an [`EvMutex`]. Each waiter holds a ticket, so a signal
/// releases exactly the oldest thread already waiting — never one that starts waiting later.
pub struct EvCond {
    st: IrqLock<CondState>,
    wq: WaitQueue,
}

impl EvCond {
    pub const fn new() -> Self {
        EvCond { st: IrqLock::new(CondState { next_ticket: 0, waiting: VecDeque::new(), released: BTreeSet::new() }), wq: WaitQueue::new() }
    }

    /// `pthread_cond_wait`: releases `m`, waits for a signal, takes `m` again. Returns `false`
    /// if `stop` ended the wait (then `m` is not held).
    pub fn wait(&self, m: &EvMutex, stop: &AtomicBool) -> bool {
        let ticket = {
            let mut s = self.st.lock();
            let t = s.next_ticket;
            s.next_ticket = s.next_ticket.wrapping_add(1);
            s.waiting.push_back(t);
            t
        };
        m.unlock();
        let mut got = false;
        self.wq.wait_until(|| {
            got = self.st.lock().released.remove(&ticket);
            got || stop.load(Ordering::Acquire)
        });
        if !got {
            return false;
        }
        m.lock(stop)
    }

    /// Releases the oldest waiter, if any.
    pub fn signal(&self) {
        {
            let mut s = self.st.lock();
            let Some(t) = s.waiting.pop_front() else { return };
            s.released.insert(t);
        }
        self.wq.wake_all();
    }

    /// Releases every waiter.
    pub fn broadcast(&self) {
        {
            let mut s = self.st.lock();
            if s.waiting.is_empty() {
                return;
            }
            while let Some(t) = s.waiting.pop_front() {
                s.released.insert(t);
            }
        }
        self.wq.wake_all();
    }

    pub fn wake_all(&self) {
        self.wq.wake_all();
    }
}

/// A reusable barrier for `users` threads.
pub struct EvBarrier {
    users: u32,
    st: IrqLock<(u32, u64)>,
    wq: WaitQueue,
}

impl EvBarrier {
    pub const fn new(users: u32) -> Self {
        EvBarrier { users, st: IrqLock::new((0, 0)), wq: WaitQueue::new() }
    }

    /// Waits until `users` threads have arrived (the last one releases the others).
    /// `false` if `stop` ended the wait.
    pub fn arrive(&self, stop: &AtomicBool) -> bool {
        let gen = {
            let mut s = self.st.lock();
            s.0 += 1;
            if s.0 >= self.users {
                s.0 = 0;
                s.1 = s.1.wrapping_add(1);
                drop(s);
                self.wq.wake_all();
                return true;
            }
            s.1
        };
        let mut passed = false;
        self.wq.wait_until(|| {
            passed = self.st.lock().1 != gen;
            passed || stop.load(Ordering::Acquire)
        });
        passed
    }

    pub fn wake_all(&self) {
        self.wq.wake_all();
    }
}
