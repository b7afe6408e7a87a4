//! Signals: how they are sent, and what they do to kernel tasks (Linux numbers; sets in the
//! kernel's `sigset_t` encoding, bit `n - 1` for signal `n`).
//!
//! **Kernel tasks.**
//! * `SIGKILL` (and `SIGTERM`, `SIGINT`, `SIGHUP`, whose default action is to terminate): the
//!   task exits with status `128 + sig` at its next interrupt exit or wakeup. It is woken if
//!   sleeping; `wait_until` loops notice a fatal signal and exit. Kernel tasks get no
//!   unwinding: what their own stack frames own is leaked, and a sleeping mutex they hold stays
//!   held (documented limit). The kernel's blocking primitives (`sleep_until`, `wait_until`,
//!   `task::wait`) are not ended in the middle: inside them ([`DeferFatal`]) interrupt exit
//!   leaves a fatal signal pending, and they act on it themselves at their next wakeup, after
//!   giving back what they hold (their task reference, their wait-queue entry). Ending them
//!   anywhere leaked one `Task` per kill (the chaos stress found 146 after 100,000 operations).
//! * `SIGSTOP` / `SIGCONT`: stop (state `Stopped`, off the run queue) / continue.
//! * `SIGXCPU`: recorded as pending (the RT watchdog's notification); tasks poll it with
//!   [`take_pending`].
//! * Signal 0: only checks that the task exists (`kill -0`).
//!
//! **User threads** ([`ProcIdentity::is_user`](super::process::ProcIdentity::is_user)) are
//! never ended in place: sending only records the signal ([`send`] for one thread,
//! [`send_process`] for the process, as Linux's `send_signal` with `PIDTYPE_PID` /
//! `PIDTYPE_TGID`) and wakes a thread that can take it; every interruptible wait of a user
//! thread ends for any signal it does not block ([`interrupted`]); the user-space layer
//! (`process::signal`) acts on them on the way back to user mode: handlers, default actions,
//! group stops and group exits. What happens at sending time follows Linux's
//! `prepare_signal`: SIGCONT discards pending stop signals and resumes a stopped process, a
//! stop signal discards a pending SIGCONT, an ignored signal is discarded (unless blocked),
//! and SIGKILL starts the whole process's exit at once.

use super::process::ThreadGroup;
use super::task::{self, Task, TaskState, Tid};
use alloc::sync::Arc;
use cadence_abi::signal::{sigbit, DefaultAction, STOP_SIGNALS};
use cadence_sched::Errno;
use core::sync::atomic::{AtomicUsize, Ordering};

pub use cadence_abi::signal::sigbit as bit;

pub const SIGHUP: u32 = 1;
pub const SIGINT: u32 = 2;
pub const SIGKILL: u32 = 9;
pub const SIGTERM: u32 = 15;
pub const SIGCHLD: u32 = 17;
pub const SIGCONT: u32 = 18;
pub const SIGSTOP: u32 = 19;
pub const SIGXCPU: u32 = 24;
/// Highest signal number (Linux's `_NSIG`, 64).
pub const SIGMAX: u32 = 64;

/// Linux signal name (without the `SIG` prefix) for the common ones.
pub fn name(sig: u32) -> Option<&'static str> {
    Some(match sig {
        SIGHUP => "HUP",
        SIGINT => "INT",
        3 => "QUIT",
        SIGKILL => "KILL",
        10 => "USR1",
        12 => "USR2",
        14 => "ALRM",
        SIGTERM => "TERM",
        SIGCHLD => "CHLD",
        SIGCONT => "CONT",
        SIGSTOP => "STOP",
        20 => "TSTP",
        SIGXCPU => "XCPU",
        _ => return None,
    })
}

/// Parses `9`, `KILL` or `SIGKILL`.
pub fn parse(s: &str) -> Option<u32> {
    if let Ok(n) = s.parse::<u32>() {
        return (n <= SIGMAX).then_some(n);
    }
    let s = s.strip_prefix("SIG").unwrap_or(s);
    (1..=SIGMAX).find(|&n| name(n) == Some(s))
}

/// Signals whose default action ends a kernel task (the ones Cadence acts on for them).
const KERNEL_FATAL: u64 = sigbit(SIGKILL) | sigbit(SIGTERM) | sigbit(SIGINT) | sigbit(SIGHUP);

/// Does `sig`'s default action end a kernel task?
pub fn is_fatal(sig: u32) -> bool {
    (1..=SIGMAX).contains(&sig) && KERNEL_FATAL & sigbit(sig) != 0
}

/// Does `sig`'s default action end a user process (Linux's terminate and core actions)?
pub const fn default_terminates(sig: u32) -> bool {
    sig >= 1 && sig <= SIGMAX && matches!(cadence_abi::signal::default_action(sig), DefaultAction::Terminate | DefaultAction::Core)
}

/// Is this task one that signals can no longer reach (idle, dead, or a process already
/// ended as its parent sees it)?
fn unreachable_task(t: &Task) -> bool {
    t.is_idle || t.state() == TaskState::Dead || t.process.group.exited.load(Ordering::Acquire)
}

/// `kill(pid, sig)` from the kernel (the shell's `kill`, tests) or for a process's `kill`:
/// a thread group's id reaches the process ([`send_process`]), another tid that thread
/// ([`send`]). EINVAL for a bad signal, ESRCH for no such task (or a kernel-internal one
/// such as the idle tasks).
pub fn kill(tid: Tid, sig: u32) -> Result<(), Errno> {
    let _defer = DeferFatal::new();
    if sig > SIGMAX {
        return Err(Errno::EINVAL);
    }
    let t = task::find(tid).filter(|t| !unreachable_task(t)).ok_or(Errno::ESRCH)?;
    if sig == 0 {
        return Ok(());
    }
    if t.process.tgid == t.tid {
        send_process(&t, sig);
    } else {
        send(&t, sig);
    }
    Ok(())
}

/// Sends `sig` to every process of process group `pgid` (the terminal's signal keys,
/// `disassociate_ctty`); returns whether any was found. Kernel-sent: taken with `SI_KERNEL`.
pub fn kill_pgrp(pgid: Tid, sig: u32) -> bool {
    let mut hit = false;
    for t in task::all() {
        if t.process.tgid == t.tid && t.process.group.pgid.load(Ordering::Acquire) == pgid && !unreachable_task(&t) && !t.kthread {
            hit = true;
            send_process(&t, sig);
        }
    }
    hit
}

/// Sends `sig` to thread `t` alone (Linux `PIDTYPE_PID`): `tgkill`, a fault's signal, the
/// RT watchdog's. Returns whether it was queued (false: discarded, e.g. ignored, or a kernel
/// thread, which ignores signals as Linux's kthreads do).
pub fn send(t: &Arc<Task>, sig: u32) -> bool {
    let queued = deliver(t, sig, false);
    if queued {
        signalfd_notify();
    }
    queued
}

/// Sends `sig` to the process `t` belongs to (Linux `PIDTYPE_TGID`): any of its threads that
/// does not block it takes it. Returns whether it was queued.
pub fn send_process(t: &Arc<Task>, sig: u32) -> bool {
    let queued = deliver(t, sig, true);
    if queued {
        signalfd_notify();
    }
    queued
}

/// [`send`] from under a run-queue lock (the deadline class's overrun SIGXCPU): the signal is
/// marked pending and its thread kicked, but signalfd readers and pollers are not woken, as
/// waking another task would take a run-queue lock. A signalfd or `poll` of that signal sees
/// it at its next wakeup.
pub fn send_under_rq_lock(t: &Arc<Task>, sig: u32) -> bool {
    deliver(t, sig, false)
}

/// Live signalfds (`fs::signalfd`): while there are none, a sent signal wakes no one for them.
pub static SIGNALFDS: AtomicUsize = AtomicUsize::new(0);

/// Where signalfd readers sleep (one queue for every signalfd: a reader rechecks its own
/// pending signals, as on Linux's per-`sighand` `signalfd_wqh`).
pub static SIGNALFD_READERS: super::wait::WaitQueue = super::wait::WaitQueue::new();

/// A signal was queued: signalfd readers and `poll` look again (Linux's `signalfd_notify`).
pub fn signalfd_notify() {
    if SIGNALFDS.load(Ordering::Acquire) != 0 {
        SIGNALFD_READERS.wake_all();
        super::wait::POLL.wake_all();
    }
}

/// The signals of `set` pending for the calling thread, its own or its process's (what a
/// signalfd of `set` would read; 0 outside a task).
pub fn current_pending(set: u64) -> u64 {
    with_current(|t| (t.process.signals.pending.load(Ordering::Acquire) | t.process.group.pending.load(Ordering::Acquire)) & set)
        .unwrap_or(0)
}

fn deliver(t: &Arc<Task>, sig: u32, whole_process: bool) -> bool {
    if t.kthread || !(1..=SIGMAX).contains(&sig) {
        return false;
    }
    if !t.process.is_user() {
        send_to_kernel_task(t, sig);
        return true;
    }
    let group = &t.process.group;
    let b = sigbit(sig);
    // Linux's `prepare_signal`.
    if sig == SIGCONT {
        discard(group, STOP_SIGNALS);
        if group.stop_signal.swap(0, Ordering::AcqRel) != 0 {
            group.continued.store(true, Ordering::Release);
        }
        for_each_member(group, |m| {
            if m.transition(TaskState::Stopped, TaskState::Sleeping) {
                super::wake_up(m);
            }
        });
    } else if b & STOP_SIGNALS != 0 {
        discard(group, sigbit(SIGCONT));
    }
    if sig == SIGKILL {
        // The whole process ends, whichever thread it was sent to (Linux `complete_signal`).
        group.start_exit(SIGKILL as i32);
        for_each_member(group, |m| {
            m.process.signals.pending.fetch_or(b, Ordering::AcqRel);
            wake_for_signal(m, true);
        });
        return true;
    }
    let blocked_by_target = t.process.signals.blocked.load(Ordering::Relaxed) & b != 0;
    if group.ignored.load(Ordering::Relaxed) & b != 0 && !blocked_by_target {
        return false;
    }
    if whole_process {
        group.pending.fetch_or(b, Ordering::AcqRel);
        // A thread that does not block it takes it: `t` (the one named) first, as Linux
        // prefers the main thread.
        if !blocked_by_target {
            wake_for_signal(t, false);
        } else {
            let mut woken = false;
            for_each_member(group, |m| {
                if !woken && m.process.signals.blocked.load(Ordering::Relaxed) & b == 0 {
                    wake_for_signal(m, false);
                    woken = true;
                }
            });
        }
    } else {
        t.process.signals.pending.fetch_or(b, Ordering::AcqRel);
        if !blocked_by_target {
            wake_for_signal(t, false);
        }
    }
    true
}

/// The process of user thread `t` ends with wait status `status` (`exit_group`, a fatal
/// signal), unless it is ending already: every other thread is marked with SIGKILL and woken
/// (a stopped one too), and leaves at its next check.
pub fn exit_group(t: &Arc<Task>, status: i32) {
    let group = &t.process.group;
    group.start_exit(status);
    for_each_member(group, |m| {
        if m.tid != t.tid {
            m.process.signals.pending.fetch_or(sigbit(SIGKILL), Ordering::AcqRel);
            wake_for_signal(m, true);
        }
    });
}

/// Takes `set` out of the process's and each of its threads' pending signals.
fn discard(group: &ThreadGroup, set: u64) {
    group.pending.fetch_and(!set, Ordering::AcqRel);
    for_each_member(group, |m| {
        m.process.signals.pending.fetch_and(!set, Ordering::AcqRel);
    });
}

/// Runs `f` on each live thread of `group`.
pub fn for_each_member(group: &ThreadGroup, mut f: impl FnMut(&Arc<Task>)) {
    for tid in group.members() {
        if let Some(m) = task::find(tid) {
            f(&m);
        }
    }
}

/// Makes `t` notice a signal: woken if sleeping (every wait re-checks its condition, so
/// waking an uninterruptible one is harmless), brought back from user mode if running
/// elsewhere; a stopped thread only for SIGKILL.
fn wake_for_signal(t: &Arc<Task>, kill: bool) {
    if kill {
        let _ = t.transition(TaskState::Stopped, TaskState::Sleeping);
    }
    super::wake_up(t);
    super::kick_task(t);
}

/// A kernel task's signals (module doc).
fn send_to_kernel_task(t: &Arc<Task>, sig: u32) {
    match sig {
        SIGCONT => {
            t.process.signals.pending.fetch_and(!sigbit(SIGSTOP), Ordering::AcqRel);
            if t.transition(TaskState::Stopped, TaskState::Sleeping) {
                super::wake_up(t);
            }
        }
        SIGSTOP => {
            t.process.signals.pending.fetch_or(sigbit(SIGSTOP), Ordering::AcqRel);
            super::kick_task(t);
        }
        _ => {
            t.process.signals.pending.fetch_or(sigbit(sig), Ordering::AcqRel);
            if is_fatal(sig) {
                let _ = t.transition(TaskState::Stopped, TaskState::Sleeping);
                super::wake_up(t);
                super::kick_task(t);
            }
        }
    }
}

/// Is a fatal signal pending for kernel task `t`? (Never for a user thread: it unwinds
/// through its system call instead of ending in place; see [`interrupted`].)
pub fn fatal_pending(t: &Task) -> bool {
    !t.process.is_user() && t.process.signals.pending.load(Ordering::Acquire) & KERNEL_FATAL != 0
}

/// Should an interruptible wait of `t` end? A kernel task's for a fatal signal; a user
/// thread's for any signal it does not block, or its process's end or stop (Linux's
/// `signal_pending`).
pub fn interrupted(t: &Task) -> bool {
    if t.process.is_user() {
        let g = &t.process.group;
        t.process.deliverable() != 0 || g.must_leave(t.tid) || g.stop_signal.load(Ordering::Acquire) != 0
    } else {
        fatal_pending(t)
    }
}

/// Is a fatal signal pending for the calling task? (`false` before the scheduler runs.)
pub fn current_fatal_pending() -> bool {
    with_current(|t| fatal_pending(t) || (t.process.is_user() && interrupted(t))).unwrap_or(false)
}

/// Takes a pending non-fatal signal of the calling task (e.g. SIGXCPU), if any.
pub fn take_pending(sig: u32) -> bool {
    // No task reference, and no `DeferFatal` either: a task polling this in a loop would
    // spend nearly all its time deferring its own kill (the hard RLIMIT_RTTIME kill came
    // 12–24 ms late that way).
    with_current(|t| t.process.signals.pending.fetch_and(!sigbit(sig), Ordering::AcqRel) & sigbit(sig) != 0).unwrap_or(false)
}

/// While alive, interrupt exit does not act on the current task's fatal signals (see the
/// module docs): for kernel code that holds references on its stack across a sleep. Nests.
/// Not `Send`: it belongs to the task (and stack) that made it, which is therefore the current
/// task again when it drops.
pub struct DeferFatal {
    /// Whether `new` counted it (false before the scheduler runs on this CPU).
    counted: bool,
    _not_send: core::marker::PhantomData<*const ()>,
}

impl DeferFatal {
    /// A no-op before the scheduler runs on this CPU (boot-time callers have no task).
    pub fn new() -> Self {
        // Preemption, not interrupts, off: a fatal signal is acted on at interrupt exit only
        // where preemption is allowed, so none comes between the read and the count.
        let counted =
            super::rq::with_current_preemption_off(|t| t.map(|t| t.process.signals.fatal_defer.fetch_add(1, Ordering::AcqRel)).is_some());
        DeferFatal { counted, _not_send: core::marker::PhantomData }
    }
}

impl Default for DeferFatal {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for DeferFatal {
    fn drop(&mut self) {
        if self.counted {
            // The guard lives on its task's stack and is not `Send`: the current task is the
            // one `new` counted on.
            super::rq::with_current_preemption_off(|t| t.map(|t| t.process.signals.fatal_defer.fetch_sub(1, Ordering::AcqRel)));
        }
    }
}

/// Runs `f` on the running task, read through the per-CPU `current` without taking a
/// reference (none may be held with interrupts on outside a [`DeferFatal`] section: see
/// [`handle_pending`]). `None` before the scheduler runs on this CPU. `f` runs with
/// interrupts off: keep it short.
pub(crate) fn with_current<R>(f: impl FnOnce(&Task) -> R) -> Option<R> {
    super::with_current(|t| t.map(f))
}

/// Is the current task inside a [`DeferFatal`] section?
fn fatal_deferred() -> bool {
    with_current(|t| t.process.signals.fatal_defer.load(Ordering::Acquire) > 0).unwrap_or(false)
}

/// [`handle_pending`] at an interrupt exit: not inside a [`DeferFatal`] section, whose
/// primitive acts on the signal itself at its next wakeup (see the module docs).
///
/// Like Linux's `exit_to_user_mode_loop`, the work itself (an exit, a stop) runs with
/// interrupts enabled: it frees and allocates (the exit path), which must not happen with
/// interrupts off (see `mm::atomic_alloc`). Interrupts are off again when this returns.
/// Call from an interrupt's exit, with preemption enabled (timer and IPI handlers run on the
/// task's stack, not an IST stack, so an interrupt nesting here is fine).
pub fn handle_pending_at_irq_exit() {
    if fatal_deferred() || !pending_on_current() {
        return;
    }
    crate::irqflags::enable();
    handle_pending();
    crate::irqflags::disable();
}

/// Has the running kernel task a signal pending? (User threads take theirs on the way back to
/// user mode, in the user-space layer.)
fn pending_on_current() -> bool {
    with_current(|t| !t.process.is_user() && t.process.signals.pending.load(Ordering::Acquire) != 0).unwrap_or(false)
}

/// Acts on the calling task's signals at a safe point: exit on a fatal one, stop on SIGSTOP.
///
/// Called with interrupts on (from an interrupt's exit too), so while it holds its task
/// reference an interrupt may come in, and that interrupt's exit could end the task with the
/// reference still in this frame (a leaked `Task`, seen by the chaos stress with the tracer
/// on). The reference is therefore held only inside a [`DeferFatal`] section, and the exit or
/// stop happens after both are gone.
pub fn handle_pending() {
    enum Act {
        Exit(i32),
        Stop,
    }
    let act = {
        let _defer = DeferFatal::new();
        let me = super::current();
        let p = me.process.signals.pending.load(Ordering::Acquire);
        // Already exiting (preempted inside `exit` between setting Dead and its last switch,
        // and resumed through an interrupt exit): nothing left to act on. Acting anyway
        // overwrote Dead with Stopped on a SIGSTOP, and the task, continued, returned from its
        // last `schedule()` (the chaos stress: "a dead task was scheduled again").
        if p == 0 || me.is_idle || me.state() == TaskState::Dead || me.process.is_user() {
            return;
        }
        if p & KERNEL_FATAL != 0 {
            Act::Exit(128 + (p & KERNEL_FATAL).trailing_zeros() as i32 + 1)
        } else if p & sigbit(SIGSTOP) != 0 {
            me.process.signals.pending.fetch_and(!sigbit(SIGSTOP), Ordering::AcqRel);
            me.set_state(TaskState::Stopped);
            Act::Stop
        } else {
            return;
        }
    };
    match act {
        Act::Exit(code) => super::exit(code),
        Act::Stop => super::schedule(),
    }
}
