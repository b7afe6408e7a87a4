//! The preemption count (Linux `preempt_disable` / `preempt_enable`).
//!
//! Each CPU's count lives in its [`PerCpu`](crate::percpu::PerCpu) area, one GS load away
//! (every lock touches it). While it is above zero the scheduler does not switch away from the
//! running task at a preemption point or at interrupt exit. When a [`PreemptGuard`] brings it
//! back to zero, the kernel's preemption point runs ([`crate::upcalls::Upcalls::preempt_point`]),
//! so a reschedule requested meanwhile happens at once.

use core::sync::atomic::Ordering;

/// Disables preemption on this CPU until dropped.
pub struct PreemptGuard(());

/// Disables preemption on this CPU; the returned guard enables it again.
pub fn preempt_disable() -> PreemptGuard {
    preempt_count_inc();
    PreemptGuard(())
}

/// Raises this CPU's preemption count, with no guard (the caller lowers it with
/// [`preempt_count_dec`]). Interrupts are off from finding this CPU to counting on it: a
/// preemption in between could move the task, which would then count on the CPU it left (and
/// uncount on the new one). Once counted the task stays here, so lowering needs no such care.
pub fn preempt_count_inc() {
    let irqs = crate::irqflags::save();
    crate::percpu::current().preempt_count.fetch_add(1, Ordering::AcqRel);
    crate::irqflags::restore(irqs);
}

/// Lowers this CPU's preemption count; true if it reached zero (the caller then owes a
/// preemption point). Pairs with [`preempt_count_inc`].
pub fn preempt_count_dec() -> bool {
    crate::percpu::current().preempt_count.fetch_sub(1, Ordering::AcqRel) == 1
}

/// This CPU's preemption count (0: preemptible).
#[inline]
pub fn preempt_count() -> u32 {
    crate::percpu::current().preempt_count.load(Ordering::Relaxed)
}

impl Drop for PreemptGuard {
    fn drop(&mut self) {
        if preempt_count_dec() {
            crate::upcalls::preempt_point();
        }
    }
}
