//! The OOM killer (Linux `mm/oom_kill.c`, `pagefault_out_of_memory`): when a user page fault
//! gets no frame, the process with the most badness (`cadence_vm::oom`: resident pages plus
//! `oom_score_adj` × total pages / 1000; -1000 never) is sent SIGKILL, the kill is logged as
//! Linux logs it, and the faulting task retries its fault (or dies, if it was the victim).
//! While a victim is still ending no other is chosen (Linux's `tsk_is_oom_victim` abort): the
//! faulting tasks sleep until it has ended ([`process_ended`] wakes them) and retry. A victim
//! that has not ended within [`VICTIM_PATIENCE_NS`] is passed over, as Linux's OOM reaper
//! gives up on one (`MMF_OOM_SKIP`). A task already dying does not choose: its end frees memory.
//! A system call about to make kernel objects for its caller (a fork's copies, a new fd) asks
//! [`kernel_room`] first: when the heap cannot grow for them (`framework::mm::heap::ensure_free`)
//! the killer is invoked as for a fault, and the call fails with ENOMEM if no victim frees
//! enough (Linux's `GFP_KERNEL` allocations in `copy_process` and `alloc_file` enter the
//! killer the same way, then fail). Other kernel allocations (inside the allocator, under
//! locks) never invoke it.
//!
//! One task at a time chooses (Linux's `oom_lock`, taken with `mutex_trylock`): the others
//! sleep until it is done and retry their faults. The choice allocates one batch, not a record per
//! process, and reads each process's resident pages without its `mm` lock: a fork bomb's
//! thousands of tasks fault together when memory runs out, and each building its own list
//! of every process once took the whole kernel heap (240 MiB at `-m 512M`, a heap panic), and
//! a scan sleeping on thousands of `mm` locks behind thousands of runnable tasks took minutes
//! (`tests/tests/limits.rs`, the fork bomb at threads-max 100000).
//!
//! Lock order: `CHOOSING`, then the process registry (`LIMITS`, a batch copied out at a time),
//! then the victim's `mm` and `creds`; the faulting task holds no `mm` lock when it calls
//! [`out_of_memory`].

use super::{Process, Thread};
use crate::sched::task::Tid;
use crate::sched::wait::WaitQueue;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_vm::oom::{self, Candidate, Chooser, Invoked, KillReport, Summary};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The pid of the last victim, until it has ended or was given up on.
static VICTIM: AtomicU32 = AtomicU32::new(0);
/// When the last victim was chosen (ns of uptime).
static VICTIM_SINCE: AtomicU64 = AtomicU64::new(0);
/// Faulting tasks waiting for the victim's end or for the choice of one.
static OOM_WAIT: WaitQueue = WaitQueue::new();
/// Set by the task choosing a victim (Linux's `oom_lock`, taken with `mutex_trylock`).
static CHOOSING: AtomicBool = AtomicBool::new(false);

/// The right to choose: clears [`CHOOSING`] and wakes the waiters when dropped.
struct Choosing;

impl Choosing {
    fn try_take() -> Option<Choosing> {
        CHOOSING.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok().then_some(Choosing)
    }
}

impl Drop for Choosing {
    fn drop(&mut self) {
        CHOOSING.store(false, Ordering::Release);
        OOM_WAIT.wake_all();
    }
}
/// Processes weighed per look at the registry.
const BATCH: usize = 32;
/// How long a victim may take to end before it is passed over (Linux's OOM reaper gives up
/// after 10 tries 100 ms apart and sets `MMF_OOM_SKIP`): a victim asleep in an uninterruptible
/// wait must not stop the killer for good. It is still dying, so it is not chosen again.
const VICTIM_PATIENCE_NS: u64 = 1_000_000_000;

/// What [`out_of_memory`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oom {
    /// A victim was killed or is still ending: retry the fault.
    Retry,
    /// Nothing can be killed (Linux panics here; Cadence sends the faulting task SIGBUS).
    NoVictim,
}

/// What the killer weighs of process `pid`: its resident pages (read without its `mm` lock)
/// and `oom_score_adj`.
fn candidate(pid: Tid, p: &Process) -> Option<Candidate> {
    let task = crate::sched::task::find(pid)?;
    let rss = super::thread_of(&task).and_then(|t| t.resident_pages_if_live());
    let g = &task.process.group;
    let dying = g.exited.load(Ordering::Acquire) || g.exit_status().is_some();
    Some(Candidate {
        pid,
        rss_pages: rss.unwrap_or(0),
        swap_pages: 0,
        pgtables_bytes: 0,
        oom_score_adj: p.oom_score_adj.load(Ordering::Relaxed),
        unkillable: pid == 1 || rss.is_none() || dying,
    })
}

/// `/proc/PID/oom_score` of process `pid`.
pub fn score(pid: Tid) -> i64 {
    let p = super::LIMITS.lock_uninterruptible().get(&pid).cloned();
    p.and_then(|p| candidate(pid, &p)).map_or(0, |c| oom::oom_score(&c, framework::mm::frame::total_frames()))
}

/// Process `pid` has ended (its memory is freed): if it was the victim, the faulting tasks
/// waiting for it retry.
pub fn process_ended(pid: Tid) {
    if VICTIM.compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
        OOM_WAIT.wake_all();
    }
}

/// Waits (interruptibly: the waiter may be killed itself) until victim `pid` has ended, or
/// until it has had [`VICTIM_PATIENCE_NS`], then gives up on it.
fn wait_for_victim(pid: Tid) {
    let deadline = VICTIM_SINCE.load(Ordering::Acquire).saturating_add(VICTIM_PATIENCE_NS);
    let ended = || VICTIM.load(Ordering::Acquire) != pid || has_ended(pid);
    if let Ok(false) = OOM_WAIT.wait_until_interruptible_deadline(ended, deadline) {
        if VICTIM.compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            crate::kprintln!("oom_reaper: victim {} has not ended in {} ms, choosing another", pid, VICTIM_PATIENCE_NS / 1_000_000);
            OOM_WAIT.wake_all();
        }
    } else if has_ended(pid) {
        // It ended before it was recorded as the victim (its `process_ended` came too early).
        process_ended(pid);
    }
}

/// Has process `pid` ended (gone, or its last thread's end done)?
fn has_ended(pid: Tid) -> bool {
    crate::sched::task::find(pid).is_none_or(|v| v.process.group.exited.load(Ordering::Acquire))
}

/// Tries before [`kernel_room`] gives up: each kill the killer makes frees a victim's memory.
const ROOM_TRIES: usize = 4;

/// Room in the kernel heap for `bytes` of objects that `t`'s system call is about to make (the
/// module doc): `Ok` once the heap has them free, else the OOM killer's turn, and ENOMEM if it
/// finds no victim or the room is still missing after its kills. Task context, no lock held
/// that a dying victim needs (`mm`, the fd table).
pub fn kernel_room(t: &Thread, bytes: usize) -> Result<(), cadence_abi::errno::Errno> {
    for _ in 0..ROOM_TRIES {
        if framework::mm::heap::ensure_free(bytes) {
            return Ok(());
        }
        if invoke(t, true) == Oom::NoVictim {
            break;
        }
    }
    if framework::mm::heap::ensure_free(bytes) {
        Ok(())
    } else {
        Err(cadence_abi::errno::Errno::ENOMEM)
    }
}

/// A user page fault of `t` got no frame: chooses and kills a victim (module doc).
pub fn out_of_memory(t: &Thread) -> Oom {
    invoke(t, false)
}

/// The killer, for a user page (`kernel` false) or a kernel allocation ([`kernel_room`]).
fn invoke(t: &Thread, kernel: bool) -> Oom {
    // Only a real shortage (free frames at or below the high watermark) kills: a failure that
    // `debug.fail_alloc` injected with memory to spare is the faulting thread's SIGBUS
    // (docs/design/user.md), as Linux's OOM killer runs only when the allocator itself fails.
    let (wm, _, _) = framework::mm::frame::watermarks();
    if framework::mm::frame::free_frames() > wm.high {
        return Oom::NoVictim;
    }
    let me = crate::sched::current();
    // Dying already (Linux's `task_will_free_mem(current)`): its own end frees memory.
    if me.process.group.exit_status().is_some() {
        return Oom::Retry;
    }
    let victim = VICTIM.load(Ordering::Acquire);
    if victim != 0 {
        wait_for_victim(victim);
        return Oom::Retry;
    }
    let Some(_choosing) = Choosing::try_take() else {
        // Another task is choosing: its victim will free memory, or it found none. Sleeping
        // until it is done, not polling: thousands of faulting tasks polling every tick kept
        // the chooser waiting behind them. The deadline only bounds a lost wakeup.
        let deadline = crate::time::uptime_ns() + VICTIM_PATIENCE_NS;
        let _ = OOM_WAIT.wait_until_interruptible_deadline(|| !CHOOSING.load(Ordering::Acquire), deadline);
        return Oom::Retry;
    };
    // A victim chosen while this task waited for the lock is still ending.
    if VICTIM.load(Ordering::Acquire) != 0 {
        return Oom::Retry;
    }
    let total = framework::mm::frame::total_frames();
    let mut chooser: Chooser<(Candidate, Arc<Process>)> = Chooser::new(total);
    let mut batch: Vec<(Tid, Arc<Process>)> = Vec::with_capacity(BATCH);
    let mut from = 0;
    loop {
        batch.extend(super::LIMITS.lock_uninterruptible().range(from..).take(BATCH).map(|(k, v)| (*k, v.clone())));
        let Some(&(last, _)) = batch.last() else { break };
        for (pid, p) in batch.drain(..) {
            if let Some(c) = candidate(pid, &p) {
                chooser.offer((c, p), &c);
            }
        }
        from = last + 1;
    }
    let Some(((v, process), _)) = chooser.chosen() else { return Oom::NoVictim };
    let Some(task) = crate::sched::task::find(v.pid) else { return Oom::Retry };
    let total_vm_pages = super::thread_of(&task).and_then(|t| t.mm_if_live()).map_or(0, |mm| mm.lock_uninterruptible().total_pages());
    VICTIM_SINCE.store(crate::time::uptime_ns(), Ordering::Release);
    VICTIM.store(v.pid, Ordering::Release);
    let comm = task.comm_string();
    let uid = process.creds.lock_uninterruptible().uid[0];
    crate::kprintln!("{}", Invoked { comm: &me.comm_string(), oom_score_adj: t.process.oom_score_adj.load(Ordering::Relaxed), kernel });
    crate::kprintln!("{}", Summary { comm: &comm, pid: v.pid, uid });
    crate::kprintln!(
        "{}",
        KillReport {
            pid: v.pid,
            comm: &comm,
            total_vm_pages,
            anon_rss_pages: v.rss_pages,
            file_rss_pages: 0,
            uid,
            pgtables_bytes: 0,
            oom_score_adj: v.oom_score_adj,
        }
    );
    let _ = crate::sched::signal::kill(v.pid, super::SIGKILL as u32);
    Oom::Retry
}
