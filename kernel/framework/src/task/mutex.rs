//! A mutex whose waiters sleep ([`SleepMutex`]) on a wait queue of the kernel's
//! ([`WaitStrategy`]): the framework owns the data cell and its exclusion, the kernel the
//! sleeping.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

/// How a [`SleepMutex`]'s waiters sleep and are woken (the kernel's wait queue).
pub trait WaitStrategy: Sized {
    /// An empty queue (for `const` mutexes).
    const NEW: Self;
    /// Sleeps until `cond()` is true; a fatal signal may end the waiting task meanwhile.
    #[track_caller]
    fn wait_until(&self, cond: impl FnMut() -> bool);
    /// Sleeps until `cond()` is true; a fatal signal does not end the wait.
    #[track_caller]
    fn wait_until_uninterruptible(&self, cond: impl FnMut() -> bool);
    /// Wakes one waiter; whether there was one.
    fn wake_one(&self) -> bool;
}

/// A sleeping mutual-exclusion lock (tasks block instead of spinning): one guard at a time
/// reaches the data.
pub struct SleepMutex<T, Q> {
    locked: AtomicBool,
    wq: Q,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reachable through a guard, and `locked` admits one guard at a time.
unsafe impl<T: Send, Q: Sync> Sync for SleepMutex<T, Q> {}
// SAFETY: as above.
unsafe impl<T: Send, Q: Send> Send for SleepMutex<T, Q> {}

/// Proof of holding a [`SleepMutex`]; dropping it releases the lock and wakes one waiter.
pub struct SleepMutexGuard<'a, T, Q: WaitStrategy> {
    m: &'a SleepMutex<T, Q>,
}

impl<T, Q: WaitStrategy> SleepMutex<T, Q> {
    /// An unlocked mutex over `v`.
    pub const fn new(v: T) -> Self {
        Self { locked: AtomicBool::new(false), wq: Q::NEW, data: UnsafeCell::new(v) }
    }

    fn try_acquire(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Locks, sleeping while another task holds it (a fatal signal may end the wait: the
    /// caller's task then ends without the lock).
    #[track_caller]
    pub fn lock(&self) -> SleepMutexGuard<'_, T, Q> {
        if !self.try_acquire() {
            self.wq.wait_until(|| self.try_acquire());
        }
        SleepMutexGuard { m: self }
    }

    /// [`lock`](Self::lock) whose wait a fatal signal does not end (Linux's `mutex_lock`
    /// against `mutex_lock_killable`): for callers that must not die before they undo what
    /// they hold.
    #[track_caller]
    pub fn lock_uninterruptible(&self) -> SleepMutexGuard<'_, T, Q> {
        if !self.try_acquire() {
            self.wq.wait_until_uninterruptible(|| self.try_acquire());
        }
        SleepMutexGuard { m: self }
    }

    /// Locks if free right now.
    pub fn try_lock(&self) -> Option<SleepMutexGuard<'_, T, Q>> {
        self.try_acquire().then_some(SleepMutexGuard { m: self })
    }

    /// Is the lock held now (by anyone)?
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Acquire)
    }

    /// Releases `guard`'s lock, as dropping it does; true if a waiter was woken. The lock is
    /// not handed over: the woken task takes it when it runs, if it is free then. A holder
    /// that takes the lock again at once (a long job in pieces) can wait for
    /// [`is_locked`](Self::is_locked) first, to let the woken task have it.
    pub fn unlock_woke(guard: SleepMutexGuard<'_, T, Q>) -> bool {
        let m = guard.m;
        core::mem::forget(guard);
        m.release()
    }

    /// Frees the lock and wakes one waiter (true if one was woken).
    fn release(&self) -> bool {
        self.locked.store(false, Ordering::Release);
        self.wq.wake_one()
    }
}

impl<T, Q: WaitStrategy> Deref for SleepMutexGuard<'_, T, Q> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.m.data.get() }
    }
}

impl<T, Q: WaitStrategy> DerefMut for SleepMutexGuard<'_, T, Q> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock exclusively.
        unsafe { &mut *self.m.data.get() }
    }
}

impl<T, Q: WaitStrategy> Drop for SleepMutexGuard<'_, T, Q> {
    fn drop(&mut self) {
        self.m.release();
    }
}
