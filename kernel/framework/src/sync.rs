//! Locks.
//!
//! Contract: any lock that an interrupt handler may take must be an [`IrqLock`]: taking it
//! disables interrupts on this CPU for as long as the guard lives (restoring the previous
//! interrupt flag on drop), so a handler can never spin on a lock its own CPU holds.
//! Data never touched from interrupt context takes a [`SpinLock`] (Linux's `spin_lock`:
//! preemption off while held, interrupts left as they are), so that a CPU holding it still
//! takes its timer and IPIs: the irqsoff tracer found the pipe's lock, an `IrqLock` then, to
//! be a quarter of the interrupts-off time under `bench hackbench`.

use crate::irqflags;
use core::ops::{Deref, DerefMut};
use core::panic::Location;

/// A spin lock that keeps interrupts disabled on the holding CPU.
pub struct IrqLock<T> {
    inner: spin::Mutex<T>,
}

/// Guard of an [`IrqLock`]; restores the interrupt flag when dropped.
pub struct IrqLockGuard<'a, T> {
    guard: Option<spin::MutexGuard<'a, T>>,
    were_enabled: bool,
    /// Where the lock was taken (the irqsoff tracer's site for this section).
    site: &'static Location<'static>,
}

impl<T> IrqLock<T> {
    /// An unlocked lock holding `value` (`const`, so it can initialise a `static`).
    pub const fn new(value: T) -> Self {
        Self { inner: spin::Mutex::new(value) }
    }

    /// Takes the lock with interrupts disabled. While the lock is busy, a caller that had
    /// interrupts enabled waits with them enabled (Linux's old `_raw_spin_lock_flags`): a CPU
    /// spinning on a contended lock (the heap's, under load) still takes its timer and IPIs,
    /// so an RT wakeup due on it is not delayed by someone else's critical section. A caller
    /// that already has interrupts disabled (it may hold another `IrqLock`) spins with them
    /// disabled, so no handler can run into a lock it holds.
    #[track_caller]
    pub fn lock(&self) -> IrqLockGuard<'_, T> {
        let site = Location::caller();
        let were_enabled = irqflags::are_enabled();
        loop {
            irqflags::save_at(site);
            if let Some(g) = self.inner.try_lock() {
                return IrqLockGuard { guard: Some(g), were_enabled, site };
            }
            irqflags::restore_at(were_enabled, site);
            while self.inner.is_locked() {
                core::hint::spin_loop();
            }
        }
    }

    /// Is the lock held (by anyone)? For assertions of a caller's locking contract.
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// Takes the lock only if it is free (used by the panic and exception paths, which must
    /// not deadlock on a lock the faulting code held).
    #[track_caller]
    pub fn try_lock(&self) -> Option<IrqLockGuard<'_, T>> {
        let site = Location::caller();
        let were_enabled = irqflags::save_at(site);
        match self.inner.try_lock() {
            Some(g) => Some(IrqLockGuard { guard: Some(g), were_enabled, site }),
            None => {
                irqflags::restore_at(were_enabled, site);
                None
            }
        }
    }
}

impl<T: Default> Default for IrqLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> Deref for IrqLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl<T> DerefMut for IrqLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard present until drop")
    }
}

impl<T> Drop for IrqLockGuard<'_, T> {
    fn drop(&mut self) {
        // Release the lock before re-enabling interrupts.
        self.guard.take();
        if self.were_enabled {
            irqflags::restore_at(true, self.site);
            // Interrupts back on: a reschedule requested meanwhile happens now.
            crate::preempt::preempt_point_if_work();
        }
    }
}

/// A spin lock for data no interrupt handler touches: preemption is disabled while it is held
/// (a holder preempted by a task that then spins on the lock would never get its CPU back),
/// interrupts are not.
pub struct SpinLock<T> {
    inner: spin::Mutex<T>,
}

/// Guard of a [`SpinLock`]. Fields drop in order: the lock is released before preemption is
/// enabled again (which may switch tasks at once).
pub struct SpinLockGuard<'a, T> {
    guard: spin::MutexGuard<'a, T>,
    _preempt: crate::preempt::PreemptGuard,
}

impl<T> SpinLock<T> {
    /// An unlocked lock holding `value` (`const`, so it can initialise a `static`).
    pub const fn new(value: T) -> Self {
        Self { inner: spin::Mutex::new(value) }
    }

    /// Takes the lock (Linux's `spin_lock`): preemption is off until the guard drops, interrupts
    /// stay as they are. Never from an interrupt handler: it could spin forever on the task it
    /// interrupted (take an [`IrqLock`] for such data). Not recursive.
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        let preempt = crate::preempt::preempt_disable();
        SpinLockGuard { guard: self.inner.lock(), _preempt: preempt }
    }
}

impl<T> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// A container whose memory can be replaced by a larger buffer allocated outside a lock (see
/// [`lock_with_room`]).
pub trait Grow: Sized {
    /// Number of elements held.
    fn len(&self) -> usize;
    /// Whether it holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of elements it can hold without allocating.
    fn capacity(&self) -> usize;
    /// An empty container with room for at least `n` elements (allocates).
    fn with_capacity(n: usize) -> Self;
    /// Moves every element into `bigger` (empty, with room for them all) and swaps buffers,
    /// leaving `bigger` empty with the old buffer. Allocates nothing.
    fn adopt(&mut self, bigger: &mut Self);
}

impl<T> Grow for alloc::vec::Vec<T> {
    fn len(&self) -> usize {
        alloc::vec::Vec::len(self)
    }
    fn capacity(&self) -> usize {
        alloc::vec::Vec::capacity(self)
    }
    fn with_capacity(n: usize) -> Self {
        alloc::vec::Vec::with_capacity(n)
    }
    fn adopt(&mut self, bigger: &mut Self) {
        bigger.append(self);
        core::mem::swap(self, bigger);
    }
}

impl<T> Grow for alloc::collections::VecDeque<T> {
    fn len(&self) -> usize {
        alloc::collections::VecDeque::len(self)
    }
    fn capacity(&self) -> usize {
        alloc::collections::VecDeque::capacity(self)
    }
    fn with_capacity(n: usize) -> Self {
        alloc::collections::VecDeque::with_capacity(n)
    }
    fn adopt(&mut self, bigger: &mut Self) {
        bigger.append(self);
        core::mem::swap(self, bigger);
    }
}

impl<K: Ord, V> Grow for cadence_sched::arena::ArenaMap<K, V> {
    fn len(&self) -> usize {
        cadence_sched::arena::ArenaMap::len(self)
    }
    fn capacity(&self) -> usize {
        cadence_sched::arena::ArenaMap::capacity(self)
    }
    fn with_capacity(n: usize) -> Self {
        cadence_sched::arena::ArenaMap::with_capacity(n)
    }
    fn adopt(&mut self, bigger: &mut Self) {
        self.adopt_storage(bigger);
    }
}

/// Locks `lock` with room for `extra` more elements in the container `field` selects, so the
/// caller can insert them without allocating while interrupts are off. When there is no
/// room, the lock is released, a buffer of twice the size is allocated, and the elements are
/// moved into it under the lock (a copy, no allocation); the old buffer is freed after the
/// lock is released. Call with interrupts enabled (else the allocation is one in atomic
/// context anyway, see `mm::atomic_alloc`).
#[track_caller]
pub fn lock_with_room<'a, T, C: Grow>(lock: &'a IrqLock<T>, extra: usize, field: impl Fn(&mut T) -> &mut C) -> IrqLockGuard<'a, T> {
    loop {
        let mut g = lock.lock();
        let c = field(&mut g);
        if c.capacity() - c.len() >= extra {
            return g;
        }
        let want = c.len().saturating_mul(2).saturating_add(extra).saturating_add(4);
        drop(g);
        let mut bigger = C::with_capacity(want);
        let mut g = lock.lock();
        let c = field(&mut g);
        if c.capacity() - c.len() < extra && bigger.capacity() >= c.len() + extra {
            c.adopt(&mut bigger);
        }
        drop(g);
        drop(bigger); // the old buffer (or the unused new one), freed with the lock released
    }
}

/// A copy of `len(&guarded)` items that `fill` pushes out of what `lock` guards, made without
/// allocating under the lock (interrupts are off there): the vector is allocated with the lock
/// released (`slack` items more than counted) and the copy retried if the count outgrew it.
pub fn collect_unlocked<T, U>(
    lock: &IrqLock<T>,
    slack: usize,
    len: impl Fn(&T) -> usize,
    fill: impl Fn(&T, &mut alloc::vec::Vec<U>),
) -> alloc::vec::Vec<U> {
    let mut out = alloc::vec::Vec::new();
    loop {
        let g = lock.lock();
        let n = len(&g);
        if n <= out.capacity() {
            fill(&g, &mut out);
            return out;
        }
        drop(g);
        out = alloc::vec::Vec::with_capacity(n + slack);
    }
}

/// A `&'static Location` (a `#[track_caller]` site) read and written atomically, for
/// diagnostics that a lock would make costlier than the site is worth: a task's wait site is
/// written at every wait, and an `IrqLock`'s `sti` ends QEMU's translation block.
pub struct AtomicLocation {
    addr: core::sync::atomic::AtomicUsize,
}

impl AtomicLocation {
    /// None stored.
    pub const fn new() -> Self {
        Self { addr: core::sync::atomic::AtomicUsize::new(0) }
    }

    /// Stores `site` (or none).
    pub fn store(&self, site: Option<&'static Location<'static>>) {
        let addr = site.map_or(0, |l| l as *const Location<'static> as usize);
        self.addr.store(addr, core::sync::atomic::Ordering::Release);
    }

    /// The site last stored, if any.
    pub fn load(&self) -> Option<&'static Location<'static>> {
        let addr = self.addr.load(core::sync::atomic::Ordering::Acquire);
        // SAFETY: `addr` is 0 or was stored by `store` from a `&'static Location<'static>`,
        // which lives for the whole run; `Location` is immutable.
        (addr != 0).then(|| unsafe { &*(addr as *const Location<'static>) })
    }
}

impl Default for AtomicLocation {
    fn default() -> Self {
        Self::new()
    }
}
