//! Taking a CPU offline and bringing it back (`/sys/devices/system/cpu/cpuN/online`, Linux's
//! `cpu_device_down` / `cpu_device_up`), as far as the scheduler goes.
//!
//! # What offline means here
//! Linux's scheduler steps of a CPU hot-unplug (`sched_cpu_deactivate`, `sched_cpu_dying`):
//! the CPU leaves the active mask (no task is placed there, no balancer looks at it), the
//! domains are rebuilt over the CPUs left, its tasks are pushed to CPUs they may run on (a task
//! allowed nowhere else has its affinity widened to every CPU: "process N (comm) no longer affine
//! to cpuN"), and a deadline bandwidth that would not fit on the CPUs left refuses it (`EBUSY`).
//! Linux then takes the CPU out of the hardware's way (`play_dead`); Cadence leaves it in its
//! idle loop, halted with its tick stopped, still serving the interrupts routed to it (its
//! timers) — so nothing but the scheduler needs to know. Bringing it back reverses the first
//! two steps: in the active mask, domains rebuilt over every CPU up (the wasted-cores paper's
//! fourth bug was a CPU back online that no domain reached).
//!
//! # Invariant
//! An offline CPU runs only its idle task: its `schedule()` picks nothing else and moves a
//! preempted task away ([`super::switch`]), and its idle loop pushes away anything queued
//! there ([`push_queued_away`]: a wakeup that chose it before it left the mask, a task whose
//! group queue was throttled when it left). `cpu_down` returns once that holds.
//!
//! # Locking
//! One operation at a time (`HOTPLUG`, a sleeping try-lock; Linux's `cpu_add_remove_lock`).
//! The moves take two run-queue locks in CPU order (`rqlock::lock_two`).

use super::balance::{movable, move_task, select_cpu};
use super::rqlock::lock_two;
use super::{online_mask, rq_of, set_need_resched, update_counts};
use crate::sched::task::{self, Task};
use alloc::sync::Arc;
use cadence_sched::errno::Errno;
use core::sync::atomic::{AtomicBool, Ordering};

/// Held while a CPU goes down or up.
static HOTPLUG: AtomicBool = AtomicBool::new(false);

struct HotplugGuard;

impl HotplugGuard {
    fn take() -> HotplugGuard {
        while HOTPLUG.swap(true, Ordering::Acquire) {
            pause();
        }
        HotplugGuard
    }
}

/// A millisecond's wait that no signal ends early into a panic: a pending signal (the writer is
/// a user process; its signals are acted on when the write returns) turns it into a yield.
fn pause() {
    if super::sleep_until_interruptible(crate::time::uptime_ns() + 1_000_000).is_err() {
        super::yield_now();
    }
}

impl Drop for HotplugGuard {
    fn drop(&mut self) {
        HOTPLUG.store(false, Ordering::Release);
    }
}

/// How long `cpu_down` waits for the CPU to be left with its idle task alone.
const DRAIN_TIMEOUT_NS: u64 = 2_000_000_000;

/// Takes `cpu` out of the scheduler (see the module docs). Already offline: nothing to do.
/// `EINVAL` for no such CPU, `EBUSY` for the last one up or when the deadline tasks admitted
/// would not fit on the others, `EPERM` for CPU 0 (Linux x86 cannot take it down and shows
/// no `online` file for it).
pub fn cpu_down(cpu: u32) -> Result<(), Errno> {
    // A fatal signal is acted on after the operation, not in the middle of it.
    let _defer = super::signal::DeferFatal::new();
    if !super::possible_mask().contains(cpu as usize) {
        return Err(Errno::EINVAL);
    }
    if cpu == 0 {
        return Err(Errno::EPERM);
    }
    let _hp = HotplugGuard::take();
    let online = online_mask();
    if !online.contains(cpu as usize) {
        return Ok(());
    }
    if online.count() <= 1 {
        return Err(Errno::EBUSY);
    }
    // Checked and taken out under the deadline admission's lock: no task is admitted against
    // the CPUs of before meanwhile.
    super::class::deadline::without_one_cpu(|| super::idle::set_online(cpu, false))?;
    super::topology::rebuild_domains(online_mask());
    break_affinities(cpu);
    // Its `schedule()` now moves what runs there away, its idle loop what waits there.
    set_need_resched(cpu);
    let deadline = crate::time::uptime_ns() + DRAIN_TIMEOUT_NS;
    while !drained(cpu) {
        if crate::time::uptime_ns() > deadline {
            crate::kprintln!("cadence: warning: cpu{}: tasks did not leave in 2 s; brought back online", cpu);
            super::idle::set_online(cpu, true);
            super::topology::rebuild_domains(online_mask());
            set_need_resched(cpu);
            return Err(Errno::EBUSY);
        }
        push_queued_away(cpu);
        set_need_resched(cpu);
        pause();
    }
    crate::klog!("smpboot: CPU {} is now offline", cpu);
    Ok(())
}

/// Brings `cpu` back (see the module docs). Already online: nothing to do. `EINVAL` for no
/// such CPU.
pub fn cpu_up(cpu: u32) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    if !super::possible_mask().contains(cpu as usize) {
        return Err(Errno::EINVAL);
    }
    let _hp = HotplugGuard::take();
    if online_mask().contains(cpu as usize) {
        return Ok(());
    }
    super::idle::set_online(cpu, true);
    super::topology::rebuild_domains(online_mask());
    // Out of its offline halt: its tick restarts and its idle loop balances again.
    set_need_resched(cpu);
    crate::klog!("smpboot: CPU {} is now online", cpu);
    Ok(())
}

/// Only the idle task runs on `cpu` and nothing waits there.
pub(super) fn drained(cpu: u32) -> bool {
    let g = rq_of(cpu).lock.lock();
    g.tasks.is_empty() && g.curr.as_ref().is_some_and(|c| c.is_idle)
}

/// Linux's `select_fallback_rq` for every task allowed on no CPU left: its affinity becomes
/// every CPU (the top cpuset's: the possible ones), said as Linux says it for a user task.
///
/// Race-free with `sched_setaffinity` and `spawn` because each side checks under the task's
/// `params` lock after its own first step (the CPU out of the mask here, the task registered
/// there): whichever comes second sees the other ([`fix_affinity`]).
fn break_affinities(cpu: u32) {
    for t in task::all() {
        if !t.is_idle && fix_affinity(&t) && !t.kthread {
            crate::kprintln!("process {} ({}) no longer affine to cpu{}", t.tid, t.comm_string(), cpu);
        }
    }
}

/// Widens `t`'s affinity to the possible CPUs if none of it is up (`params` taken here). True
/// if it did.
pub(super) fn fix_affinity(t: &Arc<Task>) -> bool {
    super::api::widen_affinity_if(t, super::possible_mask(), |m| (m & online_mask()).is_empty())
}

/// Pushes every task waiting on offline `cpu` to a CPU it may run on (`select_cpu`, over the
/// CPUs up). From `cpu_down` and from the offline CPU's idle loop. Returns how many moved.
pub(super) fn push_queued_away(cpu: u32) -> u32 {
    const BATCH: usize = 16;
    let mut moved = 0;
    // Bounded: a task that cannot move now (throttled group queue, still switching out, no
    // room on its target) is skipped and tried again at the next call.
    for _ in 0..4 {
        // Taken without allocating (interrupts are off under the lock).
        let mut batch: [Option<Arc<Task>>; BATCH] = [const { None }; BATCH];
        {
            let g = rq_of(cpu).lock.lock();
            let queued = g.tasks.values().filter(|t| !t.is_idle && !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, t)));
            for (slot, t) in batch.iter_mut().zip(queued) {
                *slot = Some(t.clone());
            }
        }
        if batch[0].is_none() {
            break;
        }
        let mut moved_now = 0;
        for task in batch.into_iter().flatten() {
            let target = select_cpu(&task, cpu);
            if target == cpu || !online_mask().contains(target as usize) {
                continue;
            }
            let mut guards = lock_two(&rq_of(cpu).lock, cpu, &rq_of(target).lock, target);
            let (src, dst) = guards.pair();
            let still_there = src.tasks.get(&task.tid).is_some_and(|t| Arc::ptr_eq(t, &task));
            if !still_there || !movable(src, &task, target) || !super::reserve::fits(dst, &task) {
                continue;
            }
            move_task(src, dst, &task);
            update_counts(rq_of(cpu), src);
            update_counts(rq_of(target), dst);
            drop(guards);
            set_need_resched(target);
            moved_now += 1;
        }
        moved += moved_now;
        if moved_now == 0 {
            break;
        }
    }
    moved
}
