//! The scheduling API, with Linux's semantics and errno values (kernel functions now, the
//! bodies of syscalls later). `pid` 0 means the calling task.
//!
//! | function | Linux | errors |
//! |---|---|---|
//! | [`sched_setattr`] | sched_setattr(2) | EINVAL bad policy / priority / nice / flags / deadline parameters, EOPNOTSUPP util clamp or `SCHED_FLAG_RECLAIM` (no GRUB), EBUSY deadline admission, EPERM deadline affinity, ESRCH |
//! | [`sched_getattr`] | sched_getattr(2) | ESRCH |
//! | [`sched_setscheduler`] | sched_setscheduler(2) (keeps nice) | EINVAL, ESRCH |
//! | [`setpriority`] | setpriority(PRIO_PROCESS) (nice clamped to −20..19) | ESRCH |
//! | [`nice`] | nice(2) (increment, clamped) | — |
//! | [`sched_yield`] | sched_yield(2) | — |
//! | [`sched_setaffinity`] / [`sched_getaffinity`] | (2) | EINVAL empty / offline-only mask, ESRCH |
//! | [`sched_get_priority_min`] / `max` | (2) | EINVAL unknown policy |
//!
//! Changing a queued or running task's attributes follows Linux's `__sched_setscheduler`:
//! take it off its queue (saving its fair lag), change class / priority / weight, put it back,
//! and reschedule its CPU.

use super::task::{self, SchedParams, Task, Tid};
use super::{class, online_mask, rq_of, update_counts};
use alloc::sync::Arc;
use cadence_sched::eevdf::DEQUEUE_SAVE;
use cadence_sched::{CpuMask, Errno, SchedAttr, ValidAttr};

fn task_of(pid: Tid) -> Result<Arc<Task>, Errno> {
    let t = if pid == 0 { Some(super::current()) } else { task::find(pid) };
    match t {
        Some(t) if t.state() != task::TaskState::Dead && !t.is_idle => Ok(t),
        _ => Err(Errno::ESRCH),
    }
}

/// Applies new parameters to `t` (caller holds nothing).
fn change_params(t: &Arc<Task>, f: impl FnOnce(&mut SchedParams)) {
    let p = t.params.lock();
    apply_params(t, p, f);
}

/// [`change_params`] with the checks that need `params` held: a deadline task's affinity must
/// span the root domain (`EPERM`, as Linux's `sched_setattr`), and its bandwidth must be
/// admitted (`EBUSY`); a task leaving SCHED_DEADLINE gives its bandwidth back.
fn change_attr(t: &Arc<Task>, new: ValidAttr) -> Result<(), Errno> {
    let p = t.params.lock();
    if t.left_group.load(core::sync::atomic::Ordering::Acquire) {
        return Err(Errno::ESRCH); // exited: its class let go of it (`task_dead`)
    }
    if new.dl.is_some() && !super::class::deadline::spans_root_domain(p.affinity) {
        return Err(Errno::EPERM);
    }
    if p.attr.dl != new.dl {
        super::class::deadline::admit(p.attr.dl, new.dl)?;
    }
    apply_params(t, p, |p| p.attr = new);
    // A task in a priority-inheritance chain moves in it (after `params` is let go: the
    // chains' lock comes first).
    super::pi::own_changed(t);
    Ok(())
}

pub(super) fn apply_params(t: &Arc<Task>, mut p: crate::sync::IrqLockGuard<'_, SchedParams>, f: impl FnOnce(&mut SchedParams)) {
    let old_prio = crate::trace::task_prio(t);
    super::with_task_rq(t, |g, now| {
        super::requeue_locked(g, t, now, |g| {
            // The effective attributes (a priority-inheritance boost included) are what the
            // classes see.
            let (old, old_class) = (p.effective(), t.class());
            f(&mut p);
            t.cache_params(&p);
            // The classes adjust what they keep of the task (`prio_changed`, or
            // `switched_from` / `switched_to`): the fair entity, reweighted with its lag.
            class::attr_changed(g, t, old_class, &old, &p.effective());
        });
        // Under the run-queue lock, with the change: the RT checker replays it in order.
        crate::trace::sched_pi_setprio(t, old_prio, now);
    });
}

/// The RT watchdog's soft-limit action: SCHED_NORMAL, nice 0.
pub fn demote_to_normal(t: &Arc<Task>) {
    let p = t.params.lock();
    // Checked under `params`: a task that left the RT class meanwhile (SCHED_DEADLINE, whose
    // bandwidth this would not give back) is not demoted.
    if p.attr.policy.is_rt() {
        apply_params(t, p, |p| p.attr = ValidAttr::default());
    }
}

/// `sched_setattr(pid, attr, 0)`.
pub fn sched_setattr(pid: Tid, attr: &SchedAttr) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    let t = task_of(pid)?;
    let current = t.attr();
    let new = attr.resolve_keep(&current).validate()?;
    change_attr(&t, new)
}

/// `sched_getattr(pid)`.
pub fn sched_getattr(pid: Tid) -> Result<ValidAttr, Errno> {
    let _defer = super::signal::DeferFatal::new();
    Ok(task_of(pid)?.attr())
}

/// `sched_setscheduler(pid, policy, {sched_priority})`: the nice value is kept.
pub fn sched_setscheduler(pid: Tid, policy: i32, priority: i32) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    if priority < 0 {
        return Err(Errno::EINVAL);
    }
    let t = task_of(pid)?;
    let nice = t.attr().nice;
    let attr = SchedAttr { policy, nice, rt_priority: priority as u32, ..SchedAttr::default() };
    let new = attr.validate()?;
    let custom_slice_ns = t.attr().custom_slice_ns;
    change_attr(&t, ValidAttr { custom_slice_ns, ..new })
}

/// `setpriority(PRIO_PROCESS, pid, nice)`: nice is clamped to −20..19 as Linux does.
pub fn setpriority(pid: Tid, nice: i64) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    let t = task_of(pid)?;
    let nice = cadence_sched::attr::clamp_nice(nice);
    change_params(&t, |p| p.attr.nice = nice);
    Ok(())
}

/// `getpriority(PRIO_PROCESS, pid)` as a nice value.
pub fn getpriority(pid: Tid) -> Result<i32, Errno> {
    let _defer = super::signal::DeferFatal::new();
    Ok(task_of(pid)?.attr().nice)
}

/// `nice(inc)` for the calling task; returns the new nice value.
pub fn nice(increment: i64) -> i32 {
    let _defer = super::signal::DeferFatal::new();
    let t = super::current();
    let new = cadence_sched::attr::nice_after_increment(t.attr().nice, increment);
    change_params(&t, |p| p.attr.nice = new);
    new
}

/// `sched_yield()`.
pub fn sched_yield() {
    super::yield_now();
}

/// `sched_setaffinity(pid, mask)`. A task running on a CPU it may no longer use is moved
/// at its next switch (its CPU is kicked now).
pub fn sched_setaffinity(pid: Tid, mask: CpuMask) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    // Kept with the CPUs offline for now (Linux 6.12's `cpuset_cpus_allowed` for the top
    // cpuset: the possible CPUs), so the task uses them again once they are back; EINVAL if
    // none of it is up (`__set_cpus_allowed_ptr_locked`).
    let effective = mask & super::possible_mask();
    if (effective & online_mask()).is_empty() {
        return Err(Errno::EINVAL);
    }
    let t = task_of(pid)?;
    {
        let p = t.params.lock();
        // Again under `params`: a CPU that went offline meanwhile was widened away by
        // `hotplug` only from the masks it saw (`hotplug::break_affinities`).
        if (effective & online_mask()).is_empty() {
            return Err(Errno::EINVAL);
        }
        // A deadline task may not narrow its affinity below the root domain (Linux: EBUSY).
        if p.attr.dl.is_some() && !super::class::deadline::spans_root_domain(effective) {
            return Err(Errno::EBUSY);
        }
        apply_params(&t, p, |p| p.affinity = effective);
    }
    crate::trace::task_affinity(t.tid, effective);
    crate::trace::sched_set_affinity(&t, effective, crate::time::uptime_ns());
    // A queued task on a now-forbidden CPU is requeued where it may run; a running one is
    // moved by `schedule()` when its CPU (kicked by `change_params`) switches it out.
    let _params = t.params.lock();
    let cpu = t.cpu();
    if effective.contains(cpu as usize) {
        return Ok(());
    }
    let rq = rq_of(cpu);
    let mut g = rq.lock.lock();
    let running = g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, &t));
    if t.cpu() == cpu && t.is_on_rq() && !running {
        let level_before = rq.rt_level.load(core::sync::atomic::Ordering::SeqCst);
        // A migration: `on_rq` stays set until the enqueue there (see `sched::dequeue_task`).
        super::dequeue_task(&mut g, &t, DEQUEUE_SAVE | cadence_sched::eevdf::DEQUEUE_MIGRATING);
        update_counts(rq, &g);
        drop(g);
        let target = super::balance::select_cpu(&t, crate::percpu::cpu_id());
        super::activate_on(&t, target, cadence_sched::eevdf::ENQUEUE_MIGRATED | cadence_sched::eevdf::ENQUEUE_MIGRATING);
        // Its best queued RT task may have left: that CPU may pull.
        super::balance_callbacks(cpu, level_before);
    } else if running {
        // Kick again: the kick from `change_params` may have been spent on the very switch
        // that started it here (it was queued behind another task, and picking does not look
        // at affinity). Any switch-out of a running task on a forbidden CPU migrates it
        // (Linux forces this with `migration_cpu_stop`); without a kick, a task alone on its
        // CPU would never switch out.
        drop(g);
        super::set_need_resched(cpu);
    }
    Ok(())
}

/// Linux's `select_fallback_rq` last resort: `t`, allowed on no CPU up any more (its CPUs went
/// offline), may run on every CPU of `mask`. Unlike `sched_setaffinity`, the mask is kept whole
/// (offline CPUs included: the task may use them again once back). A task waiting on an
/// offline CPU is moved by `hotplug`, a running one by its CPU's next switch.
/// Only if `stuck` says so of its affinity, read under `params`; true if it widened it.
pub(super) fn widen_affinity_if(t: &Arc<Task>, mask: CpuMask, stuck: impl FnOnce(CpuMask) -> bool) -> bool {
    let p = t.params.lock();
    if !stuck(p.affinity) {
        return false;
    }
    apply_params(t, p, |p| p.affinity = mask);
    crate::trace::task_affinity(t.tid, mask);
    true
}

/// `sched_getaffinity(pid)`.
pub fn sched_getaffinity(pid: Tid) -> Result<CpuMask, Errno> {
    let _defer = super::signal::DeferFatal::new();
    Ok(task_of(pid)?.affinity() & online_mask())
}

pub fn sched_get_priority_max(policy: i32) -> Result<i32, Errno> {
    cadence_sched::attr::sched_get_priority_max(policy)
}

pub fn sched_get_priority_min(policy: i32) -> Result<i32, Errno> {
    cadence_sched::attr::sched_get_priority_min(policy)
}
