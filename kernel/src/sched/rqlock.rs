//! The run-queue lock: a spin lock that disables interrupts and can stay held across a
//! context switch.
//!
//! `schedule()` takes this CPU's run-queue lock, switches to the next task with the lock still
//! held, and the *next* task releases it in `finish_task_switch` (Linux's scheme): the guard is
//! turned into a raw held lock with [`RqGuard::keep_locked`] before the switch and released
//! with [`RqLock::unlock_after_switch`] after it.
//!
//! Lock order (see `sched` module docs): a task's `params` lock (Linux `pi_lock`) before any
//! run-queue lock; two run-queue locks in ascending CPU order ([`lock_two`]).

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};
use x86_64::instructions::interrupts;

pub struct RqLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: access to `data` is serialised by `locked`.
unsafe impl<T: Send> Sync for RqLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for RqLock<T> {}

pub struct RqGuard<'a, T> {
    lock: &'a RqLock<T>,
    irq_was_enabled: bool,
}

impl<T> RqLock<T> {
    pub const fn new(data: T) -> Self {
        Self { locked: AtomicBool::new(false), data: UnsafeCell::new(data) }
    }

    fn acquire(&self) {
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    /// Locks, disabling interrupts until the guard drops.
    pub fn lock(&self) -> RqGuard<'_, T> {
        let irq_was_enabled = interrupts::are_enabled();
        interrupts::disable();
        self.acquire();
        RqGuard { lock: self, irq_was_enabled }
    }

    /// Releases a lock kept held across a context switch by [`RqGuard::keep_locked`].
    /// Interrupts stay disabled.
    ///
    /// # Safety
    /// The lock must be held by this CPU through `keep_locked`, and no guard may exist for it.
    pub unsafe fn unlock_after_switch(&self) {
        self.locked.store(false, Ordering::Release);
    }

    /// Access to the data while the lock is held without a guard (between `keep_locked`
    /// and `unlock_after_switch`).
    ///
    /// # Safety
    /// This CPU must hold the lock, and no other reference to the data may be live.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn data_while_held(&self) -> &mut T {
        // SAFETY: forwarded contract.
        unsafe { &mut *self.data.get() }
    }

    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

impl<T> RqGuard<'_, T> {
    /// Keeps the lock held (and interrupts disabled) past the guard's end; the next task
    /// releases it. Returns whether interrupts were enabled before locking.
    pub fn keep_locked(self) -> bool {
        let was = self.irq_was_enabled;
        core::mem::forget(self);
        was
    }
}

impl<T> Deref for RqGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for RqGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for RqGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
        if self.irq_was_enabled {
            interrupts::enable();
            crate::sched::preempt_point();
        }
    }
}

/// Two run-queue locks taken in ascending CPU order (`a` and `b` distinct); released in
/// reverse order when dropped.
pub struct TwoGuards<'a, T> {
    // Field order matters: `second` drops first.
    pub second_guard: Option<RqGuard<'a, T>>,
    pub first_guard: Option<RqGuard<'a, T>>,
    swapped: bool,
}

impl<'a, T> TwoGuards<'a, T> {
    /// (guard of `a`, guard of `b`) as passed to [`lock_two`].
    pub fn pair(&mut self) -> (&mut RqGuard<'a, T>, &mut RqGuard<'a, T>) {
        let first = self.first_guard.as_mut().expect("held until drop");
        let second = self.second_guard.as_mut().expect("held until drop");
        if self.swapped {
            (second, first)
        } else {
            (first, second)
        }
    }
}

impl<T> Drop for TwoGuards<'_, T> {
    fn drop(&mut self) {
        self.second_guard.take();
        self.first_guard.take();
    }
}

/// Locks the run queues of CPUs `a_cpu` and `b_cpu` (distinct) in ascending CPU order.
pub fn lock_two<'a, T>(a: &'a RqLock<T>, a_cpu: u32, b: &'a RqLock<T>, b_cpu: u32) -> TwoGuards<'a, T> {
    if a_cpu < b_cpu {
        let first = a.lock();
        let second = b.lock();
        TwoGuards { first_guard: Some(first), second_guard: Some(second), swapped: false }
    } else {
        let first = b.lock();
        let second = a.lock();
        TwoGuards { first_guard: Some(first), second_guard: Some(second), swapped: true }
    }
}
