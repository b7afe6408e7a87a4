//! Each CPU's running task ([`Current`]), readable without touching its reference count.

use crate::percpu::NR_CPUS;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// One CPU's slot, a cache line of its own (written by its CPU at every switch).
#[repr(align(64))]
struct Slot<T> {
    /// The running task: a reference of the slot's own (`Arc::into_raw`), or null.
    task: AtomicPtr<T>,
    /// How many [`Current::with`] borrows are live on this CPU (nested calls nest).
    borrows: AtomicU32,
}

/// Every CPU's current task (Linux `current`, the `pcpu_hot.current_task` pointer).
///
/// Each CPU's slot holds a reference to its task, replaced only by that CPU with interrupts
/// off ([`set`](Self::set), at a task switch). So with interrupts off a CPU may read its own
/// slot's task without taking a reference ([`with`](Self::with)): nothing can replace it
/// meanwhile. A slot is never read from another CPU.
pub struct Current<T> {
    slots: [Slot<T>; NR_CPUS],
}

impl<T: Send + Sync> Default for Current<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + Sync> Current<T> {
    /// No CPU has a current task yet.
    pub const fn new() -> Self {
        Self { slots: [const { Slot { task: AtomicPtr::new(core::ptr::null_mut()), borrows: AtomicU32::new(0) } }; NR_CPUS] }
    }

    fn this_slot(&self) -> &Slot<T> {
        &self.slots[crate::percpu::cpu_id() as usize & (NR_CPUS - 1)]
    }

    /// Makes `next` the calling CPU's current task and returns the previous one. Interrupts
    /// must be off (a task switch, or the CPU's bring-up); panics if they are on or if a
    /// [`with`](Self::with) borrow of this CPU's task is live.
    pub fn set(&self, next: &Arc<T>) -> Option<Arc<T>> {
        assert!(!crate::irqflags::are_enabled(), "Current::set with interrupts on");
        let slot = self.this_slot();
        assert_eq!(slot.borrows.load(Ordering::Relaxed), 0, "Current::set while the current task is borrowed");
        let old = slot.task.swap(Arc::into_raw(next.clone()) as *mut T, Ordering::AcqRel);
        // SAFETY: a non-null slot value is a reference the slot owned (`into_raw` above, by an
        // earlier `set`); swapping it out makes it ours.
        (!old.is_null()).then(|| unsafe { Arc::from_raw(old) })
    }

    /// Runs `f` on the calling CPU's current task (`None` before the CPU has one), interrupts
    /// off meanwhile: keep it short.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        let irqs = crate::irqflags::save();
        // SAFETY: interrupts are off until `borrow` returns, so no switch can happen on this CPU.
        let r = unsafe { self.borrow(f) };
        crate::irqflags::restore(irqs);
        r
    }

    /// Runs `f` on this CPU's slot's task, the borrow counted (`set` checks it).
    ///
    /// The count needs no atomic read-modify-write: only this CPU touches its slot's count,
    /// and an interrupt handler's own borrow puts back the count it found before we resume.
    ///
    /// # Safety
    /// The caller keeps this CPU from switching tasks until this returns (interrupts or
    /// preemption off): only a switch on this CPU replaces the slot.
    #[inline]
    unsafe fn borrow<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        let slot = self.this_slot();
        let depth = slot.borrows.load(Ordering::Relaxed);
        slot.borrows.store(depth + 1, Ordering::Relaxed);
        let ptr = slot.task.load(Ordering::Acquire);
        // SAFETY: the slot owns a reference to the task, and only a switch on this CPU replaces
        // it (`set`, which checks that no borrow is live); the caller rules switches out and the
        // borrow count stays raised until `f` returns, so the task outlives the borrow.
        let r = f(unsafe { ptr.as_ref() });
        slot.borrows.store(depth, Ordering::Relaxed);
        r
    }

    /// [`with`](Self::with) with preemption, not interrupts, off (`None` also before this CPU's
    /// per-CPU area is installed): for `f`s that need only the task to stay, on paths taken
    /// several times per system call (turning interrupts back on is a trip through QEMU's
    /// main loop under TCG). The slot is replaced only by a switch on this CPU, which cannot
    /// happen before the guard drops.
    #[inline]
    pub fn with_preemption_off<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        if !crate::percpu::gs_ready() {
            return f(None);
        }
        let _preempt = crate::preempt::preempt_disable();
        // SAFETY: preemption is off until `borrow` returns, so no switch can happen on this CPU.
        unsafe { self.borrow(f) }
    }

    /// A reference to the calling CPU's current task (`None` before the CPU has one).
    ///
    /// Preemption, not interrupts, is off meanwhile: the slot is replaced only by a task switch
    /// on this CPU, which cannot happen before the guard drops, and an interrupt handler only
    /// reads it. (Turning interrupts back on costs a trip through QEMU's main loop under TCG,
    /// and this runs several times per system call.)
    pub fn get(&self) -> Option<Arc<T>> {
        // Before this CPU's per-CPU area is installed there is no preemption count to raise,
        // and no CPU has a task yet.
        if !crate::percpu::gs_ready() {
            return None;
        }
        let _preempt = crate::preempt::preempt_disable();
        let ptr = self.this_slot().task.load(Ordering::Acquire);
        (!ptr.is_null()).then(|| {
            // SAFETY: the slot's reference keeps the task alive until this CPU switches tasks,
            // which it cannot do before `_preempt` drops; we add one for the returned Arc.
            unsafe {
                Arc::increment_strong_count(ptr);
                Arc::from_raw(ptr)
            }
        })
    }
}
