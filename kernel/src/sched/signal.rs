//! Signals, as far as kernel tasks need them (Linux numbers and default actions).
//!
//! * `SIGKILL` (and `SIGTERM`, `SIGINT`, whose default action is to terminate): the task exits
//!   with status `128 + sig` at its next preemption point or wakeup. It is woken if sleeping;
//!   `wait_until` loops notice a fatal signal and exit. Kernel tasks get no cleanup: what their
//!   stack frames own is leaked, and a sleeping mutex they hold stays held (documented limit).
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

fn is_fatal(sig: u32) -> bool {
    matches!(sig, SIGKILL | SIGTERM | SIGINT | 1)
}

/// `kill(pid, sig)`. EINVAL for a bad signal, ESRCH for no such task (or a kernel-internal one
/// such as the idle tasks).
pub fn kill(tid: Tid, sig: u32) -> Result<(), Errno> {
    if sig > SIGMAX {
        return Err(Errno::EINVAL);
    }
    let t = task::find(tid).filter(|t| !t.is_idle && t.state() != TaskState::Dead).ok_or(Errno::ESRCH)?;
    if sig == 0 {
        return Ok(());
    }
    send(&t, sig);
    Ok(())
}

/// Delivers `sig` to `t`.
pub fn send(t: &Arc<Task>, sig: u32) {
    match sig {
        SIGCONT => {
            t.pending.fetch_and(!(1 << SIGSTOP), Ordering::AcqRel);
            if t.transition(TaskState::Stopped, TaskState::Sleeping) {
                super::wake_up(t);
            }
        }
        SIGSTOP => {
            t.pending.fetch_or(1 << SIGSTOP, Ordering::AcqRel);
            super::kick_task(t);
        }
        _ => {
            t.pending.fetch_or(1u64 << sig, Ordering::AcqRel);
            if is_fatal(sig) {
                let _ = t.transition(TaskState::Stopped, TaskState::Sleeping);
                super::wake_up(t);
                super::kick_task(t);
            }
        }
    }
}

/// Is a fatal signal pending for `t`?
pub fn fatal_pending(t: &Task) -> bool {
    let p = t.pending.load(Ordering::Acquire);
    (1..=SIGMAX).any(|s| p & (1u64 << s) != 0 && is_fatal(s))
}

/// Takes a pending non-fatal signal of the calling task (e.g. SIGXCPU), if any.
pub fn take_pending(sig: u32) -> bool {
    let me = super::current();
    me.pending.fetch_and(!(1u64 << sig), Ordering::AcqRel) & (1u64 << sig) != 0
}

/// Acts on the calling task's signals at a safe point: exit on a fatal one, stop on SIGSTOP.
pub fn handle_pending() {
    let me = super::current();
    let p = me.pending.load(Ordering::Acquire);
    if p == 0 || me.is_idle {
        return;
    }
    if let Some(sig) = (1..=SIGMAX).find(|&s| p & (1u64 << s) != 0 && is_fatal(s)) {
        drop(me);
        super::exit(128 + sig as i32);
    }
    if p & (1 << SIGSTOP) != 0 {
        me.pending.fetch_and(!(1 << SIGSTOP), Ordering::AcqRel);
        me.set_state(TaskState::Stopped);
        drop(me);
        super::schedule();
    }
}
