//! Task creation ([`spawn`], [`spawn_result`]), a new task's first code and a task's end
//! ([`exit`], `task_dead`).

use super::task::{self, SchedParams, SpawnOptions, Task, TaskState, Tid};
use super::{
    activate_on_if, autogroup, class, coresched, current, finish_task_switch, group, online_mask, preempt_point, reserve, schedule,
    select_cpu, signal, wait,
};
use crate::percpu;
use alloc::boxed::Box;
use alloc::sync::Arc;
use cadence_sched::eevdf::ENQUEUE_INITIAL;
use cadence_sched::ValidAttr;
use core::sync::atomic::Ordering;

/// Why a task could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnError {
    NoMemory,
    /// The affinity mask names no online CPU (or, for a deadline task, not all of them).
    BadAffinity,
    /// A deadline task's bandwidth is not admitted (`EBUSY`).
    Busy,
    /// The parent is a deadline task and the child would inherit its policy (Linux's
    /// `sched_fork`: `EAGAIN` unless reset-on-fork).
    Again,
}

/// A new task's [`task::Entry`] for body `f` (a helper: `spawn`'s `impl FnOnce` type has no
/// name to instantiate `run_entry` with).
fn entry_of<F: FnOnce() -> i32 + Send + 'static>(f: F) -> task::Entry {
    (task::run_entry::<F>, Box::new(f))
}

/// Creates and starts a kernel task running `f`; its return value is the exit code.
pub fn spawn(opts: SpawnOptions, f: impl FnOnce() -> i32 + Send + 'static) -> Result<Arc<Task>, SpawnError> {
    let _defer = signal::DeferFatal::new();
    let parent = current();
    let inherited = *parent.params.lock();
    let mut attr = opts.attr.unwrap_or(inherited.attr);
    if opts.attr.is_none() && inherited.attr.reset_on_fork {
        // Linux: reset-on-fork children get SCHED_NORMAL (and nice 0 if the parent's was < 0).
        attr = ValidAttr { nice: attr.nice.max(0), ..ValidAttr::default() };
    }
    // Inherited whole (Linux's `dup_task_struct`): a CPU offline for now stays in it, to be
    // used once back. Some CPU of it must be up.
    let affinity = opts.affinity.unwrap_or(inherited.affinity) & super::possible_mask();
    if (affinity & online_mask()).is_empty() {
        return Err(SpawnError::BadAffinity);
    }
    // A deadline child: only explicitly, within the root domain's bandwidth, on every CPU.
    if attr.dl.is_some() {
        if opts.attr.is_none() {
            return Err(SpawnError::Again);
        }
        if !class::deadline::spans_root_domain(affinity) {
            return Err(SpawnError::BadAffinity);
        }
        class::deadline::admit(None, attr.dl).map_err(|_| SpawnError::Busy)?;
    }
    // Admitted bandwidth goes back if the spawn fails below.
    let unadmit = |e: SpawnError| {
        if attr.dl.is_some() {
            let _ = class::deadline::admit(attr.dl, None);
        }
        e
    };
    crate::mm::stack::reclaim_if_needed();
    let stack = crate::mm::stack::KernelStack::allocate(opts.stack_size).map_err(|_| unadmit(SpawnError::NoMemory))?;
    // Before anything is registered: a failure here leaves nothing behind (the stack goes back
    // to the cache as it drops).
    if crate::mm::fail_alloc::should_fail("task") {
        return Err(unadmit(SpawnError::NoMemory));
    }
    let params = SchedParams::new(attr, affinity);
    let task = task::new_task(&opts, Some(&parent), params, Some(stack), false, parent.cpu());
    crate::trace::task_affinity(task.tid, affinity);
    // Registered now: if its CPUs went offline since the check above, `hotplug` did not see it.
    super::hotplug::fix_affinity(&task);
    task::set_entry(&task, entry_of(f));
    // Groups, like cgroups and autogroups, are inherited.
    let manual = parent.group.load(Ordering::Acquire);
    if manual != group::ROOT_GROUP && group::lookup(manual).is_some() {
        group::join(manual);
        task.group.store(manual, Ordering::Release);
    }
    autogroup::inherit(&task, &parent);
    coresched::fork(&task, &parent);
    task::init_context(&task, task_start);
    {
        let p = task.params.lock();
        // Under `params`: a `sched_setattr` by tid may already have changed the attributes.
        class::of(&task).task_new(&task, &p.attr);
    }
    // Queued only where it fits without allocating: other CPUs' wakeups may have used up the
    // target's headroom, and this enqueue runs with interrupts off (`params`). A full queue is
    // refilled here, where interrupts are on and no lock is held, and the placement is made
    // again; should wakeups fill it again each time, the enqueue after `SPAWN_REFILLS` refills
    // grows the queue under the lock (counted by `trace atomic-alloc`).
    for tries in 1.. {
        let _p = task.params.lock();
        // A fair task goes where Linux's fork balancing puts it (the idlest group, level by
        // level: `load_balance::select_cpu_fork`), others as a wakeup would.
        let here = percpu::cpu_id();
        let cpu = super::load_balance::select_cpu_fork(&task, here).unwrap_or_else(|| select_cpu(&task, here));
        if activate_on_if(&task, cpu, ENQUEUE_INITIAL, |g| tries > SPAWN_REFILLS || reserve::fits(g, &task)) {
            break;
        }
        drop(_p);
        reserve::refill_waiting(cpu);
    }
    Ok(task)
}

/// Refills `spawn` makes for a target queue with no room before it enqueues anyway.
const SPAWN_REFILLS: u32 = 8;

/// A task started by [`spawn_result`]: its tid, and the value its body returns.
pub struct JoinHandle<T> {
    pub tid: Tid,
    slot: Arc<spin::Mutex<Option<T>>>,
}

impl<T> JoinHandle<T> {
    /// Waits for the task and takes its value; `Err` with its exit code if it did not return
    /// one (killed), or the errno of `wait`.
    pub fn join(self) -> Result<T, Result<i32, cadence_sched::Errno>> {
        let code = wait(self.tid);
        self.slot.lock().take().ok_or(code)
    }
}

/// [`spawn`] for a body that returns a value rather than an exit code (exit code 0): the
/// caller gets it from [`JoinHandle::join`], with no shared state of its own.
pub fn spawn_result<T: Send + 'static>(opts: SpawnOptions, f: impl FnOnce() -> T + Send + 'static) -> Result<JoinHandle<T>, SpawnError> {
    let slot = Arc::new(spin::Mutex::new(None));
    let s2 = slot.clone();
    let t = spawn(opts, move || {
        let v = f();
        *s2.lock() = Some(v);
        0
    })?;
    Ok(JoinHandle { tid: t.tid, slot })
}

/// The first code a new task runs (its context's entry, see `task::init_context`).
fn task_start() -> ! {
    finish_task_switch();
    crate::irqflags::enable();
    // The switch may have left a reschedule pending (see `schedule`).
    preempt_point();
    let defer = signal::DeferFatal::new();
    // The entry, taken through `current` without keeping a reference: a reference held in
    // this frame would never be dropped (the task ends in `exit`).
    let entry = signal::with_current(|t| t.take_entry()).flatten();
    let code = match entry {
        Some((run, body)) => run(body, defer),
        None => {
            drop(defer);
            0
        }
    };
    exit(code)
}

/// Ends the calling task with `code`.
pub fn exit(code: i32) -> ! {
    // A kill arriving meanwhile must not start a second `exit` from the interrupt exit,
    // abandoning this frame and its reference (a leaked `Task`). Never dropped: the task does
    // not come back.
    let _defer = signal::DeferFatal::new();
    let me = current();
    me.set_exit_code(code);
    crate::trace::sched_process_exit(&me, crate::time::uptime_ns());
    drop(me);
    // Dead is set with no reference left in this frame (through `current`, which the run
    // queue keeps alive): from here on the frame may be abandoned at any instruction.
    signal::with_current(|t| t.set_state(TaskState::Dead));
    schedule();
    unreachable!("a dead task was scheduled again");
}

/// A task finished switching out for the last time.
pub(super) fn task_dead(task: Arc<Task>) {
    // The parked entity (if any) goes with the task; its class lets go of what it kept (a
    // deadline task's bandwidth and timer).
    let _ = task.parked_se.lock().take();
    super::pelt::task_dead(&task);
    autogroup::exit(&task);
    // Under `params`, with `left_group` set, so that a `group::move_task` racing with the
    // exit cannot join the task to a group after it left its last one. The cookie reference
    // is dropped under `params` too: `coresched::apply` (a racing prctl's) moves the pending
    // cookie to the effective one under it; dropping the reference in between would drop the
    // old cookie a second time and leak the new one (found by the chaos stress at 100,000
    // ops). The cookie registry's lock comes first (see `coresched::exit`).
    {
        let mut cookies = coresched::COOKIES.lock();
        let params = task.params.lock();
        coresched::exit(&mut cookies, &task);
        task.left_group.store(true, Ordering::Release);
        // Under `params` too: a `sched_setattr` racing with the exit either changed the class
        // before (its bandwidth is what this releases) or sees `left_group` and fails.
        class::of(&task).task_dead(&task, &params.attr);
        group::leave(task.group.swap(group::ROOT_GROUP, Ordering::AcqRel));
    }
    if let Some(notify) = EXIT_NOTIFIER.get() {
        notify(&task);
    }
    task.process.group.leave(&task);
    drop(task.take_stack());
    task.released.store(true, Ordering::Release);
    if task.detached.load(Ordering::Acquire) {
        task::remove(task.tid);
    }
    task.exited.wake_all();
}

/// Told of every task's death, after its scheduler state is released (the tty layer, which
/// frees a session leader's tty: registered at boot by `main`, since it sits above the
/// scheduler).
static EXIT_NOTIFIER: spin::Once<fn(&Task)> = spin::Once::new();

/// Registers the function told of every task's death (once, at boot).
pub fn set_exit_notifier(f: fn(&Task)) {
    EXIT_NOTIFIER.call_once(|| f);
}
