//! Blocking primitives: wait queues, a sleeping mutex and a counting semaphore.
//!
//! No lost wakeups: a waiter marks itself `Sleeping` and joins the queue *before* it checks
//! its condition, and only then calls `schedule()`; a waker changes the condition first and
//! then wakes. If the wakeup lands between the check and `schedule()`, the task is already
//! `Running` again and `schedule()` keeps it on the CPU (see `sched::try_to_wake_up`).
//! Spurious wakeups are harmless: every wait re-checks its condition.
//!
//! A waker with no one to wake takes no lock (Linux's `wq_has_sleeper`): `queued` mirrors the
//! list's length, written under its lock. A full fence after the waiter's enqueue, and one
//! before the waker reads `queued`, order each side's write before its read, so either the
//! waiter's check sees the new condition or the waker sees the waiter. (The list's lock is an
//! `IrqLock`, as interrupt handlers wake; each `sti` at its release ends QEMU's translation
//! block, and a pipe wakes two empty queues per write or read.)

use super::task::{Task, TaskState};
use crate::sync::IrqLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{fence, AtomicI64, AtomicUsize, Ordering};

/// Tasks waiting for something.
pub struct WaitQueue {
    waiters: IrqLock<VecDeque<Arc<Task>>>,
    /// `waiters.len()`, stored under its lock (module doc).
    queued: AtomicUsize,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub const fn new() -> Self {
        Self { waiters: IrqLock::new(VecDeque::new()), queued: AtomicUsize::new(0) }
    }

    /// One step of every wait: `me` is marked sleeping, then queued (once), so that a wakeup
    /// after the caller's next `cond()` check finds it.
    #[track_caller]
    fn enqueue_sleeping(&self, me: &Arc<Task>) {
        me.set_wait_site(core::panic::Location::caller());
        me.set_state(TaskState::Sleeping);
        // Room reserved outside the lock: no allocation with interrupts off.
        let mut w = crate::sync::lock_with_room(&self.waiters, 1, |w| w);
        if !w.iter().any(|t| Arc::ptr_eq(t, me)) {
            w.push_back(me.clone());
            self.queued.store(w.len(), Ordering::Relaxed);
        }
        drop(w);
        // Before the caller's condition check (module doc).
        fence(Ordering::SeqCst);
    }

    /// Whether anyone waits, for a waker that has just changed a condition (module doc).
    fn has_waiters(&self) -> bool {
        fence(Ordering::SeqCst);
        self.queued.load(Ordering::Relaxed) != 0
    }

    /// Pops the first waiter, keeping `queued` in step.
    fn pop(&self) -> Option<Arc<Task>> {
        let mut w = self.waiters.lock();
        let t = w.pop_front();
        self.queued.store(w.len(), Ordering::Relaxed);
        t
    }

    /// The end of every wait: `me` runs on and is off the queue.
    fn leave(&self, me: &Arc<Task>) {
        me.set_state(TaskState::Running);
        // Only `me` queues itself, so an empty queue (as `queued` last stored it, under the
        // lock, after our own store) does not hold it: a waker popped it.
        if self.queued.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut w = self.waiters.lock();
        w.retain(|t| !Arc::ptr_eq(t, me));
        self.queued.store(w.len(), Ordering::Relaxed);
    }

    /// Blocks until `cond()` is true.
    #[track_caller]
    pub fn wait_until(&self, mut cond: impl FnMut() -> bool) {
        if cond() {
            return;
        }
        // Holds `me` and a queue entry: a fatal signal is acted on at the check below.
        let _defer = super::signal::DeferFatal::new();
        let me = super::current();
        loop {
            self.enqueue_sleeping(&me);
            if cond() {
                break;
            }
            if super::signal::fatal_pending(&me) {
                self.leave(&me);
                drop(me);
                super::signal::handle_pending();
                unreachable!("a fatal signal ends the task");
            }
            super::schedule();
            // Woken: usually the condition holds now, and `leave` then finds us off the queue
            // without its lock. Else queue again before the next check, as above.
            if cond() {
                break;
            }
        }
        self.leave(&me);
    }

    /// Blocks until `cond()` is true, or a fatal signal comes ([`Interrupted`](super::Interrupted)):
    /// a user process's system call, which then unwinds and lets the process die of the signal
    /// with its memory freed (where [`wait_until`](Self::wait_until) ends the task in place).
    #[track_caller]
    pub fn wait_until_interruptible(&self, mut cond: impl FnMut() -> bool) -> Result<(), super::Interrupted> {
        if cond() {
            return Ok(());
        }
        let _defer = super::signal::DeferFatal::new();
        let me = super::current();
        let result = loop {
            self.enqueue_sleeping(&me);
            if cond() {
                break Ok(());
            }
            if super::signal::interrupted(&me) {
                break Err(super::Interrupted);
            }
            super::schedule();
            // As in `wait_until`: check before queueing again.
            if cond() {
                break Ok(());
            }
        };
        self.leave(&me);
        result
    }

    /// [`wait_until_interruptible`](Self::wait_until_interruptible) with a deadline: `Ok(true)`
    /// once `cond()` is true, `Ok(false)` when `uptime_ns()` reaches `deadline_ns` first.
    #[track_caller]
    pub fn wait_until_interruptible_deadline(&self, mut cond: impl FnMut() -> bool, deadline_ns: u64) -> Result<bool, super::Interrupted> {
        if cond() {
            return Ok(true);
        }
        let _defer = super::signal::DeferFatal::new();
        let me = super::current();
        let cpu = crate::percpu::cpu_id();
        let Some(timer) = framework::task::timer::arm(cpu, deadline_ns, me.clone()) else {
            return Ok(cond());
        };
        let result = loop {
            self.enqueue_sleeping(&me);
            if cond() {
                break Ok(true);
            }
            if super::signal::interrupted(&me) {
                break Err(super::Interrupted);
            }
            if crate::time::uptime_ns() >= deadline_ns {
                break Ok(false);
            }
            super::schedule();
        };
        self.leave(&me);
        timer.cancel();
        result
    }

    /// Blocks until `cond()` is true, like [`wait_until`](Self::wait_until), but a fatal
    /// signal does not end the wait (Linux's `TASK_UNINTERRUPTIBLE`, the `D` state): for waits
    /// that must see their end, such as a device request whose buffers the device still
    /// writes. The signal is acted on after the wait, at the caller's next preemption point
    /// outside its `DeferFatal` sections. `cond` must become true without the caller's help.
    #[track_caller]
    pub fn wait_until_uninterruptible(&self, mut cond: impl FnMut() -> bool) {
        if cond() {
            return;
        }
        let _defer = super::signal::DeferFatal::new();
        let me = super::current();
        loop {
            self.enqueue_sleeping(&me);
            if cond() {
                break;
            }
            super::schedule();
            // As in `wait_until`: check before queueing again.
            if cond() {
                break;
            }
        }
        self.leave(&me);
    }

    /// [`wait_until_uninterruptible`](Self::wait_until_uninterruptible) with a deadline: returns
    /// `true` once `cond()` is true, `false` when `uptime_ns()` reaches `deadline_ns` first (a
    /// timer wakes the task; after that wakeup `cond` is not re-checked, so a caller can tell a
    /// condition that came true without a wakeup, e.g. a device completion whose interrupt was
    /// lost, from one that was signalled). Also `false`, at once, if no timer can be armed.
    #[track_caller]
    pub fn wait_until_uninterruptible_deadline(&self, mut cond: impl FnMut() -> bool, deadline_ns: u64) -> bool {
        if cond() {
            return true;
        }
        // Holds `me`, a queue entry and a timer's reference: a fatal signal waits for the end.
        let _defer = super::signal::DeferFatal::new();
        let me = super::current();
        let cpu = crate::percpu::cpu_id();
        // The timer holds a reference to the task until it fires or is cancelled.
        let Some(timer) = framework::task::timer::arm(cpu, deadline_ns, me.clone()) else {
            return false;
        };
        let done = loop {
            self.enqueue_sleeping(&me);
            if cond() {
                break true;
            }
            if crate::time::uptime_ns() >= deadline_ns {
                break false;
            }
            super::schedule();
            if crate::time::uptime_ns() >= deadline_ns {
                break false;
            }
        };
        self.leave(&me);
        timer.cancel();
        done
    }

    /// Wakes one waiter. Returns whether there was one.
    ///
    /// Preemption stays disabled from the pop to the wakeup (as for `wake_all`): releasing the
    /// list lock is a preemption point, and a waker preempted there would strand the popped
    /// waiter (off the queue, still asleep) until the waker ran again.
    pub fn wake_one(&self) -> bool {
        if !self.has_waiters() {
            return false;
        }
        let _no_preempt = super::preempt_disable();
        let t = self.pop();
        match t {
            Some(t) => {
                super::wake_up(&t);
                true
            }
            None => false,
        }
    }

    /// Wakes every waiter; returns how many.
    ///
    /// The waiters are popped one at a time (the list keeps its storage, so a later waiter
    /// does not allocate under the lock), at most as many as were waiting at the start: a
    /// woken task that waits again at once is not woken twice. Preemption is disabled from
    /// each pop to its wakeup, not across the loop: an RT task woken on this CPU meanwhile
    /// runs before the rest (measured: 10 to 16 pipe wakeups, ~300 µs under TCG, in front of
    /// a cyclictest wakeup), and no popped waiter is stranded.
    pub fn wake_all(&self) -> usize {
        if !self.has_waiters() {
            return 0;
        }
        let n = self.queued.load(Ordering::Relaxed);
        let mut woken = 0;
        for _ in 0..n {
            let _no_preempt = super::preempt_disable();
            let Some(t) = self.pop() else { break };
            super::wake_up(&t);
            woken += 1;
        }
        woken
    }

    pub fn len(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A sleeping mutual-exclusion lock (tasks block instead of spinning): the framework's
/// [`SleepMutex`](framework::task::SleepMutex), its waiters asleep on a [`WaitQueue`].
pub type Mutex<T> = framework::task::SleepMutex<T, WaitQueue>;

/// Where `poll` and `select` sleep: woken by every change one may wait for (a pipe's data or
/// ends, console input), each poller then checks its own files.
pub static POLL: WaitQueue = WaitQueue::new();

/// Proof of holding a [`Mutex`].
pub type MutexGuard<'a, T> = framework::task::SleepMutexGuard<'a, T, WaitQueue>;

impl framework::task::WaitStrategy for WaitQueue {
    const NEW: Self = WaitQueue::new();

    #[track_caller]
    fn wait_until(&self, cond: impl FnMut() -> bool) {
        WaitQueue::wait_until(self, cond)
    }

    #[track_caller]
    fn wait_until_uninterruptible(&self, cond: impl FnMut() -> bool) {
        WaitQueue::wait_until_uninterruptible(self, cond)
    }

    fn wake_one(&self) -> bool {
        WaitQueue::wake_one(self)
    }
}

/// A counting semaphore.
pub struct Semaphore {
    count: AtomicI64,
    wq: WaitQueue,
}

impl Semaphore {
    pub const fn new(count: i64) -> Self {
        Self { count: AtomicI64::new(count), wq: WaitQueue::new() }
    }

    fn try_down(&self) -> bool {
        let mut c = self.count.load(Ordering::Acquire);
        while c > 0 {
            match self.count.compare_exchange_weak(c, c - 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(now) => c = now,
            }
        }
        false
    }

    /// P: waits until the count is positive, then decrements it.
    pub fn down(&self) {
        if !self.try_down() {
            self.wq.wait_until(|| self.try_down());
        }
    }

    /// V: increments the count and wakes a waiter.
    pub fn up(&self) {
        self.count.fetch_add(1, Ordering::AcqRel);
        self.wq.wake_one();
    }

    pub fn count(&self) -> i64 {
        self.count.load(Ordering::Acquire)
    }
}
