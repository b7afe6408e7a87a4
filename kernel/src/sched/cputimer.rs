//! Each process's user and system time, charged a tick at a time, and its CPU-time interval
//! timers `ITIMER_PROF` and `ITIMER_VIRTUAL` on them (Linux's tick accounting,
//! `account_process_tick`, and `check_cpu_itimer`; the timers' arithmetic is
//! `cadence_sched::cputimer`).
//!
//! Each tick charges its period to the process of the task it interrupted: user time if the
//! tick came from user mode, system time if from the kernel (a system call, a fault, a
//! kernel preemption point). `ITIMER_VIRTUAL` counts the user time, `ITIMER_PROF` both. The
//! timers are checked in the same tick; their signal (SIGVTALRM, SIGPROF, `SI_KERNEL`) goes to
//! the process, at most one of each per tick whatever the period. Kernel threads and the idle
//! task are not charged.
//!
//! Locks: a process's `itimers` is an `IrqLock` taken in the tick (interrupt context) and by
//! `setitimer`/`getitimer`; nothing is taken under it. The signal is sent after it is released.

use super::process::ThreadGroup;
use super::task::Task;
use alloc::sync::Arc;
use cadence_abi::signal::{SIGPROF, SIGVTALRM};
use cadence_sched::cputimer::CpuItimer;
use core::sync::atomic::Ordering;

/// `ITIMER_VIRTUAL` and `ITIMER_PROF`: Linux's `which` values (ITIMER_REAL is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Virtual = 1,
    Prof = 2,
}

impl Which {
    /// `which` of `setitimer` / `getitimer`, if a CPU-time timer.
    pub fn from_raw(which: u64) -> Option<Which> {
        match which {
            1 => Some(Which::Virtual),
            2 => Some(Which::Prof),
            _ => None,
        }
    }

    fn index(self) -> usize {
        self as usize - 1
    }
}

/// A process's CPU-time timers (`ThreadGroup::itimers`), by [`Which::index`].
pub type Itimers = [CpuItimer; 2];

/// The clock sample of timer `which`: user time, or user plus system time.
fn sample(g: &ThreadGroup, which: Which) -> u64 {
    let user = g.utime_ns.load(Ordering::Relaxed);
    match which {
        Which::Virtual => user,
        Which::Prof => user + g.stime_ns.load(Ordering::Relaxed),
    }
}

/// The tick (interrupt context, run-queue lock released): charges a period to `curr` and its
/// process, as user time if the tick interrupted user mode, and fires its CPU-time timers
/// that are due.
pub fn account_tick(curr: &Arc<Task>, from_user: bool) {
    if curr.is_idle || curr.kthread || !curr.process.is_user() {
        return;
    }
    let g = &curr.process.group;
    let tick = crate::timer::tick_period_ns();
    if from_user {
        curr.stats.utime_ns.fetch_add(tick, Ordering::Relaxed);
        g.utime_ns.fetch_add(tick, Ordering::Relaxed);
    } else {
        curr.stats.stime_ns.fetch_add(tick, Ordering::Relaxed);
        g.stime_ns.fetch_add(tick, Ordering::Relaxed);
    }
    if !g.itimers_armed.load(Ordering::Acquire) {
        return;
    }
    let fired = {
        let mut t = g.itimers.lock();
        let fired = [Which::Virtual, Which::Prof].map(|w| t[w.index()].check(sample(g, w)));
        g.itimers_armed.store(t.iter().any(CpuItimer::armed), Ordering::Release);
        fired
    };
    for (fire, sig) in fired.into_iter().zip([SIGVTALRM, SIGPROF]) {
        if fire {
            super::signal::send_process(curr, sig);
        }
    }
}

/// `getitimer(which)` of process `g`: (value left, interval), ns.
pub fn get(g: &ThreadGroup, which: Which) -> (u64, u64) {
    let t = g.itimers.lock();
    t[which.index()].read(sample(g, which), crate::timer::tick_period_ns())
}

/// `setitimer(which)` of process `g` (`value` 0 disarms): the old (value left, interval).
pub fn set(g: &ThreadGroup, which: Which, value: u64, interval: u64) -> (u64, u64) {
    let mut t = g.itimers.lock();
    let old = t[which.index()].set(value, interval, sample(g, which), crate::timer::tick_period_ns());
    g.itimers_armed.store(t.iter().any(CpuItimer::armed), Ordering::Release);
    old
}

/// Process `g`'s (user, system) time so far, ns (tick-sampled).
pub fn times(g: &ThreadGroup) -> (u64, u64) {
    (g.utime_ns.load(Ordering::Relaxed), g.stime_ns.load(Ordering::Relaxed))
}
