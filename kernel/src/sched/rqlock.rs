//! The run-queue lock: a spin lock that disables interrupts and can stay held across a
//! context switch.
//!
//! `schedule()` takes this CPU's run-queue lock, switches to the next task with the lock still
//! held, and the *next* task releases it in `finish_task_switch` (Linux's scheme): the guard is
//! turned into a raw held lock with [`RqGuard::keep_locked`] before the switch and released
//! with [`RqLock::unlock_after_switch`] after it.
//!
//! A waiter that had interrupts enabled spins with them enabled (and preemption disabled, so
//! it stays on its CPU), like Linux's old `_raw_spin_lock_flags`: under virtualization the
//! holder's vCPU may be descheduled by the host for a whole host timeslice, and a waiter with
//! interrupts off would keep its own timer and IPIs out all that time. A waiter that already
//! holds an interrupt-disabling lock (interrupts off on entry) spins with them off.
//!
//! Lock order (see `sched` module docs): a task's `params` lock (Linux `pi_lock`) before any
//! run-queue lock; two run-queue locks in ascending CPU order ([`lock_two`]).

use crate::irqflags;
use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::panic::Location;
use core::sync::atomic::{AtomicBool, Ordering};

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
    /// Where the lock was taken (the irqsoff tracer's site for this section).
    site: &'static Location<'static>,
}

impl<T> RqLock<T> {
    pub const fn new(data: T) -> Self {
        Self { locked: AtomicBool::new(false), data: UnsafeCell::new(data) }
    }

    fn try_acquire(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    fn acquire(&self) {
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    /// Spins with interrupts enabled and preemption disabled; returns with the lock held and
    /// interrupts disabled. Called with interrupts disabled, by a caller that had them enabled.
    fn acquire_interruptible(&self, site: &'static Location<'static>) {
        if !crate::percpu::gs_ready() {
            return self.acquire();
        }
        // Preemption off: an interrupt's exit path must not switch us away (and maybe to
        // another CPU) while the caller believes it is locking its own CPU's queue.
        let preempt = &crate::percpu::current().preempt_count;
        preempt.fetch_add(1, Ordering::AcqRel);
        loop {
            irqflags::restore_at(true, site);
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
            irqflags::save_at(site);
            if self.try_acquire() {
                break;
            }
        }
        // No preemption point here: a pending reschedule is acted on when the guard drops.
        preempt.fetch_sub(1, Ordering::AcqRel);
    }

    /// Locks, disabling interrupts until the guard drops.
    #[track_caller]
    pub fn lock(&self) -> RqGuard<'_, T> {
        let site = Location::caller();
        let irq_was_enabled = irqflags::save_at(site);
        if !self.try_acquire() {
            if irq_was_enabled {
                self.acquire_interruptible(site);
            } else {
                self.acquire();
            }
        }
        RqGuard { lock: self, irq_was_enabled, site }
    }

    /// Locks if the lock is free right now, without spinning (interrupts disabled until the
    /// guard drops). For work that may be skipped and retried, such as load balancing: a
    /// holder whose vCPU the host descheduled would otherwise keep the caller spinning for a
    /// host timeslice.
    #[track_caller]
    pub fn try_lock(&self) -> Option<RqGuard<'_, T>> {
        let site = Location::caller();
        let irq_was_enabled = irqflags::save_at(site);
        if self.try_acquire() {
            Some(RqGuard { lock: self, irq_was_enabled, site })
        } else {
            irqflags::restore_at(irq_was_enabled, site);
            None
        }
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
            irqflags::restore_at(true, self.site);
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

/// [`lock_two`] without spinning: `None` if either lock is held right now.
#[track_caller]
pub fn try_lock_two<'a, T>(a: &'a RqLock<T>, a_cpu: u32, b: &'a RqLock<T>, b_cpu: u32) -> Option<TwoGuards<'a, T>> {
    let (first, second, swapped) = if a_cpu < b_cpu { (a, b, false) } else { (b, a, true) };
    let first = first.try_lock()?;
    // On failure `first` drops here, releasing the first lock.
    let second = second.try_lock()?;
    Some(TwoGuards { first_guard: Some(first), second_guard: Some(second), swapped })
}

/// Locks the run queues of CPUs `a_cpu` and `b_cpu` (distinct) in ascending CPU order.
#[track_caller]
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
