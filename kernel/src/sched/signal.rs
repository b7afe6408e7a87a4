//! Signals, as far as kernel tasks need them (Linux numbers and default actions).
//!
//! * `SIGKILL` (and `SIGTERM`, `SIGINT`, whose default action is to terminate): the task exits
//!   with status `128 + sig` at its next interrupt exit or wakeup. It is woken if sleeping;
//!   `wait_until` loops notice a fatal signal and exit. Kernel tasks get no unwinding: what
//!   their own stack frames own is leaked, and a sleeping mutex they hold stays held
//!   (documented limit). The kernel's blocking primitives (`sleep_until`, `wait_until`,
//!   `task::wait`) are not ended in the middle: inside them ([`DeferFatal`]) interrupt exit
//!   leaves a fatal signal pending, and they act on it themselves at their next wakeup, after
//!   giving back what they hold (their task reference, their wait-queue entry). Ending them
//!   anywhere leaked one `Task` per kill (the chaos stress found 146 after 100,000 operations).
//! * `SIGSTOP` / `SIGCONT`: stop (state `Stopped`, off the run queue) / continue.
//! * `SIGXCPU`: recorded as pending (the RT watchdog's notification); tasks poll it with
//!   [`take_pending`].
//! * Signal 0: only checks that the task exists (`kill -0`).

use super::task::{self, Task, TaskState, Tid};
use alloc::sync::Arc;
use cadence_sched::Errno;
use core::sync::atomic::Ordering;

pub const SIGINT: u32 = 2;
pub const SIGKILL: u32 = 9;
pub const SIGTERM: u32 = 15;
pub const SIGCONT: u32 = 18;
pub const SIGSTOP: u32 = 19;
pub const SIGXCPU: u32 = 24;
/// Highest signal number accepted (Linux has 64; Cadence keeps pending signals in one u64
/// with bit n = signal n, so 63).
pub const SIGMAX: u32 = 63;

/// Linux signal name (without the `SIG` prefix) for the common ones.
pub fn name(sig: u32) -> Option<&'static str> {
    Some(match sig {
        1 => "HUP",
        SIGINT => "INT",
        SIGKILL => "KILL",
        10 => "USR1",
        12 => "USR2",
        SIGTERM => "TERM",
        SIGCONT => "CONT",
        SIGSTOP => "STOP",
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

/// Does `sig`'s default action end the task (the ones Cadence acts on)?
pub fn is_fatal(sig: u32) -> bool {
    matches!(sig, SIGKILL | SIGTERM | SIGINT | 1)
}

/// Does `sig`'s default action end a user process (Linux's terminate and core actions: all
/// but SIGCHLD, SIGCONT, SIGURG, SIGWINCH and the stop signals)?
pub const fn default_terminates(sig: u32) -> bool {
    sig >= 1 && sig <= SIGMAX && !matches!(sig, 17 | 18 | 19 | 20 | 21 | 22 | 23 | 28)
}

/// `kill(pid, sig)`. EINVAL for a bad signal, ESRCH for no such task (or a kernel-internal one
/// such as the idle tasks).
pub fn kill(tid: Tid, sig: u32) -> Result<(), Errno> {
    let _defer = DeferFatal::new();
    if sig > SIGMAX {
        return Err(Errno::EINVAL);
    }
    let t = task::find(tid)
        .filter(|t| !t.is_idle && t.state() != TaskState::Dead && !t.process.exited.load(Ordering::Acquire))
        .ok_or(Errno::ESRCH)?;
    if sig == 0 {
        return Ok(());
    }
    send(&t, sig);
    Ok(())
}

/// Delivers `sig` to `t` (nothing for a kernel thread: Linux's kthreads ignore signals).
pub fn send(t: &Arc<Task>, sig: u32) {
    if t.kthread {
        return;
    }
    match sig {
        SIGCONT => {
            t.process.signals.pending.fetch_and(!(1 << SIGSTOP), Ordering::AcqRel);
            if t.transition(TaskState::Stopped, TaskState::Sleeping) {
                super::wake_up(t);
            }
        }
        SIGSTOP => {
            t.process.signals.pending.fetch_or(1 << SIGSTOP, Ordering::AcqRel);
            super::kick_task(t);
        }
        _ => {
            t.process.signals.pending.fetch_or(1u64 << sig, Ordering::AcqRel);
            // A user process dies of more than a kernel task does: wake it for any signal
            // whose default action ends it and that it does not ignore (a kernel task woken
            // for nothing goes back to sleep).
            let ends_process = default_terminates(sig) && t.process.signals.ignored.load(Ordering::Relaxed) & (1u64 << sig) == 0;
            if is_fatal(sig) || ends_process {
                let _ = t.transition(TaskState::Stopped, TaskState::Sleeping);
                super::wake_up(t);
                super::kick_task(t);
            }
        }
    }
}

/// Is a fatal signal pending for `t`?
pub fn fatal_pending(t: &Task) -> bool {
    let p = t.process.signals.pending.load(Ordering::Acquire);
    (1..=SIGMAX).any(|s| p & (1u64 << s) != 0 && is_fatal(s))
}

/// Is a fatal signal pending for the calling task? (`false` before the scheduler runs.)
pub fn current_fatal_pending() -> bool {
    with_current(fatal_pending).unwrap_or(false)
}

/// Takes a pending non-fatal signal of the calling task (e.g. SIGXCPU), if any.
pub fn take_pending(sig: u32) -> bool {
    // No task reference, and no `DeferFatal` either: a task polling this in a loop would
    // spend nearly all its time deferring its own kill (the hard RLIMIT_RTTIME kill came
    // 12–24 ms late that way).
    with_current(|t| t.process.signals.pending.fetch_and(!(1u64 << sig), Ordering::AcqRel) & (1u64 << sig) != 0).unwrap_or(false)
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
        let counted = crate::percpu::gs_ready()
            && super::with_current(|t| t.map(|t| t.process.signals.fatal_defer.fetch_add(1, Ordering::AcqRel)).is_some());
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
            super::with_current(|t| t.map(|t| t.process.signals.fatal_defer.fetch_sub(1, Ordering::AcqRel)));
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

/// Has the running task a signal pending?
fn pending_on_current() -> bool {
    with_current(|t| t.process.signals.pending.load(Ordering::Acquire) != 0).unwrap_or(false)
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
        if p == 0 || me.is_idle || me.state() == TaskState::Dead {
            return;
        }
        if let Some(sig) = (1..=SIGMAX).find(|&s| p & (1u64 << s) != 0 && is_fatal(s)) {
            Act::Exit(128 + sig as i32)
        } else if p & (1 << SIGSTOP) != 0 {
            me.process.signals.pending.fetch_and(!(1 << SIGSTOP), Ordering::AcqRel);
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
