//! The run-queue lock: a spin lock that disables interrupts and can stay held across a
//! context switch.
//!
//! `schedule()` takes this CPU's run-queue lock and switches to the next task with the lock
//! still held ([`RqGuard::switch_to`], which consumes the guard); the *next* task takes the
//! lock over and releases it in `finish_task_switch` ([`RqLock::finish_switch`], Linux's
//! scheme). The lock carries the previous task across the switch (its `handoff`), so the next
//! side gets it and marks its context saved: the switch is the only way to run a context.
//!
//! A waiter that had interrupts enabled spins with them enabled (and preemption disabled, so
//! it stays on its CPU), like Linux's old `_raw_spin_lock_flags`: under virtualization the
//! holder's vCPU may be descheduled by the host for a whole host timeslice, and a waiter with
//! interrupts off would keep its own timer and IPIs out all that time. A waiter that already
//! holds an interrupt-disabling lock (interrupts off on entry) spins with them off.
//!
//! Lock order (see the kernel's `sched` module docs): a task's `params` lock (Linux
//! `pi_lock`) before any run-queue lock; two run-queue locks in ascending CPU order
//! ([`lock_two`]).

use super::context::Switchable;
use crate::irqflags;
use alloc::sync::Arc;
use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::panic::Location;
use core::sync::atomic::{AtomicBool, Ordering};

/// A CPU's run-queue lock over its run-queue data `T`; `P` is the task type it switches
/// between (see [`RqGuard::switch_to`]).
pub struct RqLock<T, P = ()> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
    /// The task a switch under this lock left, and the CPU it switched on: set by
    /// [`RqGuard::switch_to`], taken by [`RqLock::finish_switch`], both with the lock held.
    handoff: UnsafeCell<Option<(Arc<P>, u32)>>,
}

// SAFETY: access to `data` and `handoff` is serialised by `locked` (a guard, or the hand-over
// of a held lock across a switch, which `handoff` itself records).
unsafe impl<T: Send, P: Send + Sync> Sync for RqLock<T, P> {}
// SAFETY: as above.
unsafe impl<T: Send, P: Send + Sync> Send for RqLock<T, P> {}

/// Proof that this CPU holds an [`RqLock`], with interrupts off; dropping it releases the lock
/// and restores the interrupt flag (a preemption point if that enables interrupts).
pub struct RqGuard<'a, T, P = ()> {
    lock: &'a RqLock<T, P>,
    irq_was_enabled: bool,
    /// Where the lock was taken (the irqsoff tracer's site for this section).
    site: &'static Location<'static>,
}

impl<T, P> RqLock<T, P> {
    /// An unlocked lock over `data`.
    pub const fn new(data: T) -> Self {
        Self { locked: AtomicBool::new(false), data: UnsafeCell::new(data), handoff: UnsafeCell::new(None) }
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
    pub fn lock(&self) -> RqGuard<'_, T, P> {
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
    pub fn try_lock(&self) -> Option<RqGuard<'_, T, P>> {
        let site = Location::caller();
        let irq_was_enabled = irqflags::save_at(site);
        if self.try_acquire() {
            Some(RqGuard { lock: self, irq_was_enabled, site })
        } else {
            irqflags::restore_at(irq_was_enabled, site);
            None
        }
    }

    /// Is the lock held (by anyone)? For assertions of a caller's locking contract.
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

impl<T, P: Switchable> RqLock<T, P> {
    /// The first thing a task does once switched to, on the CPU it now runs on, interrupts
    /// off: takes over this lock, which the switching side kept held ([`RqGuard::switch_to`]),
    /// and returns its guard with the task that switched away. That task's registers are saved
    /// by now, so its context becomes ready (it may run again, here or elsewhere). The guard
    /// leaves interrupts off when dropped. Panics if no switch on this CPU handed this lock
    /// over.
    #[track_caller]
    pub fn finish_switch(&self) -> (RqGuard<'_, T, P>, Arc<P>) {
        let cpu = crate::percpu::cpu_id();
        assert!(!irqflags::are_enabled() && self.is_locked(), "finish_switch outside a switch");
        // SAFETY: the lock is held (checked) and a pending hand-over is ours alone: only the
        // task switched to on the CPU that switched (checked next) takes it, once.
        let handoff = unsafe { (*self.handoff.get()).take() };
        let Some((prev, on)) = handoff else { panic!("finish_switch without a switch handing this lock over") };
        assert_eq!(on, cpu, "finish_switch on another CPU's run-queue lock");
        prev.task_context().saved();
        (RqGuard { lock: self, irq_was_enabled: false, site: Location::caller() }, prev)
    }
}

impl<T, P: Switchable> RqGuard<'_, T, P> {
    /// Switches this CPU from `prev`, the task running here, to the task `next` finds in the
    /// locked data (the run queue's new current task, which the data keeps alive), keeping
    /// the lock held (and interrupts off) across: that task's first act is
    /// [`RqLock::finish_switch`] on the same lock, which gets `prev` back. Returns when some
    /// later switch resumes `prev` (on this CPU or another); a task that never runs again
    /// never returns from here. Panics if `prev`'s context is not running on this CPU or the
    /// next one's is not ready (running elsewhere, never started, or retired).
    pub fn switch_to(self, prev: Arc<P>, next: impl FnOnce(&T) -> &P) {
        let cpu = crate::percpu::cpu_id();
        // SAFETY: this guard holds the lock; the shared borrow ends before the switch (only
        // the context's registers slot, owned by the task the data keeps alive, is used after).
        let data = unsafe { &*self.lock.data.get() };
        let next = next(data);
        let (prev_ctx, next_ctx) = (prev.task_context(), next.task_context());
        prev_ctx.check_running_on(cpu);
        next_ctx.claim(cpu);
        let (prev_regs, next_regs) = (prev_ctx.regs(), next_ctx.regs());
        // SAFETY: `prev_ctx` runs here (checked) and `next_ctx` is claimed by this CPU, and
        // interrupts are off: nothing else touches their user state.
        unsafe { crate::user::switch_user_state(prev_ctx, next_ctx) };
        // SAFETY: we hold the lock (this guard), so nobody else touches `handoff`.
        unsafe { *self.lock.handoff.get() = Some((prev, cpu)) };
        // The lock stays held: the next side's `finish_switch` takes it over.
        core::mem::forget(self);
        // Both contexts stay alive across the switch: `prev` is in `handoff` until the next
        // side takes it, and the locked data (nobody else touches it before the next side
        // takes the lock over) holds `next`.
        // SAFETY: interrupts are off (the guard disabled them); `prev_regs` is the running
        // context's (checked) and `next_regs` a ready one we alone now run (claimed).
        unsafe { crate::arch::context::switch_to(prev_regs, next_regs) };
    }
}

impl<T, P> Deref for RqGuard<'_, T, P> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T, P> DerefMut for RqGuard<'_, T, P> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T, P> Drop for RqGuard<'_, T, P> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
        if self.irq_was_enabled {
            irqflags::restore_at(true, self.site);
            crate::preempt::preempt_point_if_work();
        }
    }
}

/// Two run-queue locks taken in ascending CPU order (`a` and `b` distinct); released in
/// reverse order when dropped.
pub struct TwoGuards<'a, T, P = ()> {
    // Field order matters: `second` drops first.
    /// The lock of the higher CPU (released first).
    pub second_guard: Option<RqGuard<'a, T, P>>,
    /// The lock of the lower CPU.
    pub first_guard: Option<RqGuard<'a, T, P>>,
    swapped: bool,
}

impl<'a, T, P> TwoGuards<'a, T, P> {
    /// (guard of `a`, guard of `b`) as passed to [`lock_two`].
    pub fn pair(&mut self) -> (&mut RqGuard<'a, T, P>, &mut RqGuard<'a, T, P>) {
        let first = self.first_guard.as_mut().expect("held until drop");
        let second = self.second_guard.as_mut().expect("held until drop");
        if self.swapped {
            (second, first)
        } else {
            (first, second)
        }
    }
}

impl<T, P> Drop for TwoGuards<'_, T, P> {
    fn drop(&mut self) {
        self.second_guard.take();
        self.first_guard.take();
    }
}

/// [`lock_two`] without spinning: `None` if either lock is held right now.
#[track_caller]
pub fn try_lock_two<'a, T, P>(a: &'a RqLock<T, P>, a_cpu: u32, b: &'a RqLock<T, P>, b_cpu: u32) -> Option<TwoGuards<'a, T, P>> {
    let (first, second, swapped) = if a_cpu < b_cpu { (a, b, false) } else { (b, a, true) };
    let first = first.try_lock()?;
    // On failure `first` drops here, releasing the first lock.
    let second = second.try_lock()?;
    Some(TwoGuards { first_guard: Some(first), second_guard: Some(second), swapped })
}

/// Locks the run queues of CPUs `a_cpu` and `b_cpu` (distinct) in ascending CPU order.
#[track_caller]
pub fn lock_two<'a, T, P>(a: &'a RqLock<T, P>, a_cpu: u32, b: &'a RqLock<T, P>, b_cpu: u32) -> TwoGuards<'a, T, P> {
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
