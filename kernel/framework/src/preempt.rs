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
/// [`preempt_count_dec`]). Finding this CPU and counting on it is one instruction, a GS-relative
/// add (Linux's `raw_cpu_add_4(__preempt_count)`): an interrupt, and so a preemption that could
/// move the task to another CPU, comes before it or after it, never between the two. Once
/// counted the task stays here, so lowering needs no such care. (Before, interrupts were turned
/// off around a load of the area and an add; turning them back on is a trip through QEMU's main
/// loop under TCG, and every lock takes this path.)
#[inline]
pub fn preempt_count_inc() {
    crate::percpu::preempt_count_inc_this_cpu();
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
