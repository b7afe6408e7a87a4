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
            preempt_point_if_work();
        }
    }
}

/// Asks CPU `cpu`'s preemption points to call up to the kernel's `preempt_point` (until that
/// CPU calls [`clear_preempt_work`]): it has work there, a reschedule or a refill. The kernel
/// records the work first, then asks (an IPI, if one is due, after both). Linux folds the same
/// request into the preemption count (`PREEMPT_NEED_RESCHED`), so that `preempt_enable` is a
/// decrement and a test.
///
/// Without it every release of a lock that brought the count to 0 called up, to find nothing
/// to do about 25 times in 26: an indirect call and return each, which under TCG end
/// translation blocks (a pipe ping-pong between two processes: 27 calls per switch).
///
/// The contract: whenever a reason for the upcall exists on `cpu`, its flag is set, except
/// between the recording and this call, a window the IPI that follows covers (a CPU's own
/// requests have no such window). The flag may be set with nothing to do: the upcall then
/// returns at once.
pub fn request_preempt_point(cpu: u32) {
    if let Some(p) = crate::percpu::get(cpu) {
        p.preempt_work.store(true, Ordering::SeqCst);
    }
}

/// Clears this CPU's [`request_preempt_point`] flag. The kernel's `schedule()` calls it
/// *before* it takes the work (clears its reschedule flag), and asks again for what it leaves
/// pending, so that no request made meanwhile is lost.
pub fn clear_preempt_work() {
    if crate::percpu::gs_ready() {
        crate::percpu::current().preempt_work.store(false, Ordering::SeqCst);
    }
}

/// Calls up to the kernel's preemption point if this CPU's flag asks for it. For the places
/// where the count returns to 0 or interrupts come back on.
#[inline]
pub(crate) fn preempt_point_if_work() {
    if crate::percpu::gs_ready() && crate::percpu::current().preempt_work.load(Ordering::Relaxed) {
        crate::upcalls::preempt_point();
    }
}
