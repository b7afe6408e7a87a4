//! The OOM killer (Linux `mm/oom_kill.c`, `pagefault_out_of_memory`): when a user page fault
//! gets no frame, the process with the most badness (`cadence_vm::oom`: resident pages plus
//! `oom_score_adj` × total pages / 1000; -1000 never) is sent SIGKILL, the kill is logged as
//! Linux logs it, and the faulting task retries its fault (or dies, if it was the victim).
//! While a victim is still ending no other is chosen (Linux's `tsk_is_oom_victim` abort): the
//! faulting task waits a tick and retries. The kernel's own memory (heap, stacks, page tables)
//! never comes from here: a kernel allocation does not invoke the killer.
//!
//! Lock order: the process registry (`LIMITS`, copied out first), then each candidate's `mm`
//! one at a time; the faulting task holds no `mm` lock when it calls [`out_of_memory`].

use super::{Process, Thread};
use crate::sched::task::Tid;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_vm::oom::{self, Candidate, Invoked, KillReport, Summary};
use core::sync::atomic::{AtomicU32, Ordering};

/// The pid of the last victim, until it has ended.
static VICTIM: AtomicU32 = AtomicU32::new(0);

/// What [`out_of_memory`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oom {
    /// A victim was killed or is still ending: retry the fault.
    Retry,
    /// Nothing can be killed (Linux panics here; Cadence sends the faulting task SIGBUS).
    NoVictim,
}

/// One candidate with what the report needs.
struct Seen {
    c: Candidate,
    comm: alloc::string::String,
    total_vm_pages: u64,
    uid: u32,
}

fn candidate(pid: Tid, p: &Arc<Process>) -> Option<Seen> {
    let task = crate::sched::task::find(pid)?;
    let mm = super::thread_of(&task).and_then(|t| t.mm_if_live());
    let (rss, vm) = match &mm {
        Some(mm) => {
            let mm = mm.lock_uninterruptible();
            (mm.resident_pages(), mm.vmas().map(|v| (v.end - v.start) / 4096).sum())
        }
        None => (0, 0),
    };
    let dying = task.process.group.exited.load(Ordering::Acquire) || crate::sched::signal::fatal_pending(&task);
    Some(Seen {
        c: Candidate {
            pid,
            rss_pages: rss,
            swap_pages: 0,
            pgtables_bytes: 0,
            oom_score_adj: p.oom_score_adj.load(Ordering::Relaxed),
            unkillable: pid == 1 || mm.is_none() || dying,
        },
        comm: task.comm_string(),
        total_vm_pages: vm,
        uid: p.creds.lock_uninterruptible().uid[0],
    })
}

/// `/proc/PID/oom_score` of process `pid`.
pub fn score(pid: Tid) -> i64 {
    let p = super::LIMITS.lock_uninterruptible().get(&pid).cloned();
    p.and_then(|p| candidate(pid, &p)).map_or(0, |s| oom::oom_score(&s.c, framework::mm::frame::total_frames()))
}

/// A user page fault of `t` got no frame: chooses and kills a victim (module doc).
pub fn out_of_memory(t: &Thread) -> Oom {
    // Only a real shortage (free frames at or below the high watermark) kills: a failure that
    // `debug.fail_alloc` injected with memory to spare is the faulting thread's SIGBUS
    // (docs/design/user.md), as Linux's OOM killer runs only when the allocator itself fails.
    let (wm, _, _) = framework::mm::frame::watermarks();
    if framework::mm::frame::free_frames() > wm.high {
        return Oom::NoVictim;
    }
    let victim = VICTIM.load(Ordering::Acquire);
    if victim != 0 {
        let alive = crate::sched::task::find(victim).is_some_and(|v| !v.process.group.exited.load(Ordering::Acquire));
        if alive {
            // Interruptible: this thread may be the victim, or be killed meanwhile; the retry
            // goes back through the signal check on the way to user mode.
            let _ = crate::sched::sleep_until_interruptible(crate::time::uptime_ns() + 4_000_000);
            return Oom::Retry;
        }
        let _ = VICTIM.compare_exchange(victim, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
    let procs: Vec<(Tid, Arc<Process>)> = super::LIMITS.lock_uninterruptible().iter().map(|(k, v)| (*k, v.clone())).collect();
    let seen: Vec<Seen> = procs.iter().filter_map(|(pid, p)| candidate(*pid, p)).collect();
    let cs: Vec<Candidate> = seen.iter().map(|s| s.c).collect();
    let total = framework::mm::frame::total_frames();
    let Some((i, _)) = oom::select(&cs, total) else { return Oom::NoVictim };
    let v = &seen[i];
    if VICTIM.compare_exchange(0, v.c.pid, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        // Another CPU chose one meanwhile.
        return Oom::Retry;
    }
    let me = crate::sched::current();
    crate::kprintln!("{}", Invoked { comm: &me.comm_string(), oom_score_adj: t.process.oom_score_adj.load(Ordering::Relaxed) });
    crate::kprintln!("{}", Summary { comm: &v.comm, pid: v.c.pid, uid: v.uid });
    crate::kprintln!(
        "{}",
        KillReport {
            pid: v.c.pid,
            comm: &v.comm,
            total_vm_pages: v.total_vm_pages,
            anon_rss_pages: v.c.rss_pages,
            file_rss_pages: 0,
            uid: v.uid,
            pgtables_bytes: 0,
            oom_score_adj: v.c.oom_score_adj,
        }
    );
    let _ = crate::sched::signal::kill(v.c.pid, super::SIGKILL as u32);
    Oom::Retry
}
