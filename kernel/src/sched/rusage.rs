//! Resource usage (Linux's `getrusage`, `times`, `wait4`'s rusage): what each task and each
//! process used, and what a process's reaped children used.
//!
//! A task's user and system time are tick-sampled (`sched::cputimer` charges the task and its
//! process); its context switches are counted by the scheduler, its page faults by the fault
//! path (`TaskStats`). A process's times are its `ThreadGroup`'s totals, which keep the time of
//! the threads that ended (Linux's `signal->utime`); its other counters are the sum over its
//! live threads plus what its ended threads left ([`GroupUsage`], folded in when a thread
//! leaves, Linux's `__exit_signal`). When a child process is reaped, its usage and its own
//! children's is added to the parent's children totals (Linux's `wait_task_zombie`).
//!
//! The peak resident set is the memory layer's: it records it into
//! [`GroupUsage::maxrss_pages`] when a thread drops its memory (exit, `execve`), as Linux's
//! `setmax_mm_hiwater_rss`.
//!
//! Locks: `GroupUsage::children` is an `IrqLock` (taken at reap and by readers); nothing is
//! taken under it.

use super::process::ThreadGroup;
use super::task::{self, Task};
use crate::sync::IrqLock;
use core::sync::atomic::{AtomicU64, Ordering};

/// Linux's `USER_HZ`: the clock ticks of `times`, `/proc`'s times and SIGCHLD's `si_utime`.
pub const USER_HZ: u64 = 100;

/// `ns` in clock ticks (Linux's `nsec_to_clock_t`).
pub fn clock_t(ns: u64) -> u64 {
    ns / (1_000_000_000 / USER_HZ)
}

/// One resource usage: times in ns, the peak resident set in pages, counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub utime_ns: u64,
    pub stime_ns: u64,
    pub maxrss_pages: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
}

impl Usage {
    /// Both added (the peak resident set: the larger).
    pub fn plus(self, o: Usage) -> Usage {
        Usage {
            utime_ns: self.utime_ns + o.utime_ns,
            stime_ns: self.stime_ns + o.stime_ns,
            maxrss_pages: self.maxrss_pages.max(o.maxrss_pages),
            minflt: self.minflt + o.minflt,
            majflt: self.majflt + o.majflt,
            nvcsw: self.nvcsw + o.nvcsw,
            nivcsw: self.nivcsw + o.nivcsw,
        }
    }
}

/// A process's usage besides its times (`ThreadGroup::usage`).
#[derive(Default)]
pub struct GroupUsage {
    /// What the process's ended threads left (Linux's `signal->nvcsw` and kin).
    dead_nvcsw: AtomicU64,
    dead_nivcsw: AtomicU64,
    dead_minflt: AtomicU64,
    dead_majflt: AtomicU64,
    /// Threads folded in so far: a reader that sees it change retries.
    leaves: AtomicU64,
    /// The largest resident set of the memories the process dropped (Linux's
    /// `signal->maxrss`), pages.
    pub maxrss_pages: AtomicU64,
    /// The reaped children's usage, their own children's included (Linux's `signal->cutime`,
    /// `cmaxrss`, `cnvcsw` and kin).
    children: IrqLock<Usage>,
}

/// Task `t`'s own usage (`RUSAGE_THREAD`; no resident set).
pub fn task_usage(t: &Task) -> Usage {
    let s = &t.stats;
    Usage {
        utime_ns: s.utime_ns.load(Ordering::Relaxed),
        stime_ns: s.stime_ns.load(Ordering::Relaxed),
        maxrss_pages: 0,
        minflt: s.min_flt.load(Ordering::Relaxed),
        majflt: s.maj_flt.load(Ordering::Relaxed),
        nvcsw: s.nr_voluntary_switches.load(Ordering::Relaxed),
        nivcsw: s.nr_involuntary_switches.load(Ordering::Relaxed),
    }
}

/// Folds ended task `t`'s counters into its process's (called as it leaves the group, under
/// the group's member lock).
pub(super) fn fold_exited(g: &ThreadGroup, t: &Task) {
    let u = task_usage(t);
    let d = &g.usage;
    d.dead_nvcsw.fetch_add(u.nvcsw, Ordering::Relaxed);
    d.dead_nivcsw.fetch_add(u.nivcsw, Ordering::Relaxed);
    d.dead_minflt.fetch_add(u.minflt, Ordering::Relaxed);
    d.dead_majflt.fetch_add(u.majflt, Ordering::Relaxed);
    d.leaves.fetch_add(1, Ordering::Release);
}

/// Process `g`'s own usage, its ended threads' included (`RUSAGE_SELF` without the resident
/// set of the memory it has now).
pub fn group_usage(g: &ThreadGroup) -> Usage {
    let d = &g.usage;
    loop {
        let seen = d.leaves.load(Ordering::Acquire);
        let mut u = Usage {
            utime_ns: g.utime_ns.load(Ordering::Relaxed),
            stime_ns: g.stime_ns.load(Ordering::Relaxed),
            maxrss_pages: d.maxrss_pages.load(Ordering::Relaxed),
            minflt: d.dead_minflt.load(Ordering::Relaxed),
            majflt: d.dead_majflt.load(Ordering::Relaxed),
            nvcsw: d.dead_nvcsw.load(Ordering::Relaxed),
            nivcsw: d.dead_nivcsw.load(Ordering::Relaxed),
        };
        for t in g.members().into_iter().filter_map(task::find) {
            let o = task_usage(&t);
            u.minflt += o.minflt;
            u.majflt += o.majflt;
            u.nvcsw += o.nvcsw;
            u.nivcsw += o.nivcsw;
        }
        if d.leaves.load(Ordering::Acquire) == seen {
            return u;
        }
    }
}

/// What process `g`'s reaped children used (`RUSAGE_CHILDREN`).
pub fn children_usage(g: &ThreadGroup) -> Usage {
    *g.usage.children.lock()
}

/// Process `g`'s usage with its reaped children's (Linux's `RUSAGE_BOTH`: what `wait4`
/// reports of a child).
pub fn both_usage(g: &ThreadGroup) -> Usage {
    group_usage(g).plus(children_usage(g))
}

/// Child process `child` is reaped by `parent`: its usage with its children's goes to the
/// parent's children totals. Returns it.
pub fn reap(parent: &ThreadGroup, child: &ThreadGroup) -> Usage {
    let u = both_usage(child);
    let mut c = parent.usage.children.lock();
    *c = c.plus(u);
    u
}
