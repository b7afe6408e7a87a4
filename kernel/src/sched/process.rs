//! What makes a task a process rather than a thread the scheduler runs: its thread group
//! ([`ThreadGroup`], shared by the threads of one process: process group, session,
//! controlling tty, the signals sent to the process, its stop state), its own exit code and
//! signals ([`ProcIdentity`], the task's `process` field). The scheduling classes read none of
//! it.
//!
//! Signal sets use the kernel's `sigset_t` encoding: bit `n - 1` is signal `n` (1..=64).

use super::task::Tid;
use crate::sync::IrqLock;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// A task's process identity: its thread group (a task spawned with
/// [`SpawnOptions::thread`](super::task::SpawnOptions::thread) joins its parent's), exit code
/// and its own signal state.
pub struct ProcIdentity {
    /// The thread group's id (the process's pid: its first thread's tid).
    pub tgid: Tid,
    /// What the threads of the process share.
    pub group: Arc<ThreadGroup>,
    exit_code: AtomicI32,
    /// This thread's signals.
    pub signals: SignalState,
    /// The user-space layer's object for this thread (the kernel's `process::Thread`), set at
    /// spawn or when a kernel task becomes a process (`process::run_loaded`); unset for kernel
    /// tasks.
    pub user: spin::Once<Arc<dyn Any + Send + Sync>>,
}

impl ProcIdentity {
    /// A thread of `group`; exit code 0, no signal pending.
    pub(super) fn new(tgid: Tid, group: Arc<ThreadGroup>, user: Option<Arc<dyn Any + Send + Sync>>) -> Self {
        ProcIdentity {
            tgid,
            group,
            exit_code: AtomicI32::new(0),
            signals: SignalState { pending: AtomicU64::new(0), fatal_defer: AtomicU32::new(0), blocked: AtomicU64::new(0) },
            user: match user {
                Some(u) => spin::Once::initialized(u),
                None => spin::Once::new(),
            },
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_code.load(Ordering::Acquire)
    }

    pub(super) fn set_exit_code(&self, code: i32) {
        self.exit_code.store(code, Ordering::Release);
    }

    /// Is this a user thread (its waits end for any signal it does not block)?
    pub fn is_user(&self) -> bool {
        self.user.is_completed()
    }

    /// Signals pending for this thread that it does not block (its own and its process's).
    pub fn deliverable(&self) -> u64 {
        let p = self.signals.pending.load(Ordering::Acquire) | self.group.pending.load(Ordering::Acquire);
        p & !(self.signals.blocked.load(Ordering::Relaxed) & !cadence_abi::signal::UNBLOCKABLE)
    }
}

/// What the threads of one process share (Linux's `signal_struct`): process group, session,
/// controlling tty, the signals sent to the process as a whole, the ignored set, and whether
/// the process is stopping, stopped or ending.
pub struct ThreadGroup {
    pub pgid: AtomicU32,
    pub sid: AtomicU32,
    /// Controlling tty (0 = none; see `tty`).
    pub tty: AtomicU32,
    /// Signals sent to the process (any thread that does not block one takes it).
    pub pending: AtomicU64,
    /// Signals whose disposition is SIG_IGN: discarded when sent (user processes).
    pub ignored: AtomicU64,
    /// The process has ended as far as its parent can tell (its wait status is recorded)
    /// while its tasks finish exiting: signals find no such process (ESRCH), as after Linux's
    /// reap.
    pub exited: AtomicBool,
    /// The process is ending (`exit_group`, a fatal signal): every thread leaves at its next
    /// return to user mode or signal check. Holds the wait status (Linux's encoding) + 1, or 0.
    pub exiting: AtomicI32,
    /// The stop signal of a group stop under way or done (0 = running): each thread parks at
    /// its next signal check until SIGCONT.
    pub stop_signal: AtomicU32,
    /// An `execve` by this thread is ending the process's other threads (0: none).
    pub exec_tid: AtomicU32,
    /// A SIGCONT ended a stop, and the parent has not been told yet.
    pub continued: AtomicBool,
    /// User time of every thread the process has had, charged a tick at a time
    /// (`sched::cputimer`).
    pub utime_ns: AtomicU64,
    /// System time, likewise.
    pub stime_ns: AtomicU64,
    /// `ITIMER_VIRTUAL` and `ITIMER_PROF` (`sched::cputimer`), and whether either is armed
    /// (the tick's cheap test).
    pub itimers: IrqLock<super::cputimer::Itimers>,
    pub itimers_armed: AtomicBool,
    /// The rest of its resource usage and its reaped children's (`sched::rusage`).
    pub usage: super::rusage::GroupUsage,
    /// The process's threads, leader first.
    members: IrqLock<Vec<Tid>>,
}

impl ThreadGroup {
    /// A new group with one member.
    pub fn new(leader: Tid, pgid: Tid, sid: Tid, tty: u32) -> Arc<ThreadGroup> {
        let members = alloc::vec![leader];
        Arc::new(ThreadGroup {
            pgid: AtomicU32::new(pgid),
            sid: AtomicU32::new(sid),
            tty: AtomicU32::new(tty),
            pending: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
            exited: AtomicBool::new(false),
            exiting: AtomicI32::new(0),
            stop_signal: AtomicU32::new(0),
            continued: AtomicBool::new(false),
            exec_tid: AtomicU32::new(0),
            utime_ns: AtomicU64::new(0),
            stime_ns: AtomicU64::new(0),
            itimers: IrqLock::new(Default::default()),
            itimers_armed: AtomicBool::new(false),
            usage: Default::default(),
            members: IrqLock::new(members),
        })
    }

    /// Adds a thread.
    pub(super) fn join(&self, tid: Tid) {
        crate::sync::lock_with_room(&self.members, 1, |m| m).push(tid);
    }

    /// Removes a thread (at its death), its usage counters folded into the process's.
    pub(super) fn leave(&self, task: &super::task::Task) {
        let mut m = self.members.lock();
        m.retain(|&t| t != task.tid);
        super::rusage::fold_exited(self, task);
    }

    /// The threads, leader first (a snapshot, allocated with the lock released).
    pub fn members(&self) -> Vec<Tid> {
        crate::sync::collect_unlocked(&self.members, 4, |m| m.len(), |m, out| out.extend(m.iter().copied()))
    }

    /// How many threads are alive.
    pub fn len(&self) -> usize {
        self.members.lock().len()
    }

    /// No thread left?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Must thread `tid` leave (its process is ending, or another thread's `execve` ends it)?
    pub fn must_leave(&self, tid: Tid) -> bool {
        let exec = self.exec_tid.load(Ordering::Acquire);
        self.exiting.load(Ordering::Acquire) != 0 || (exec != 0 && exec != tid)
    }

    /// The wait status the process is ending with, if it is ending.
    pub fn exit_status(&self) -> Option<i32> {
        let v = self.exiting.load(Ordering::Acquire);
        (v != 0).then(|| v - 1)
    }

    /// Starts the process's end with wait status `status`, unless it is already ending;
    /// returns whether this call started it.
    pub fn start_exit(&self, status: i32) -> bool {
        self.exiting.compare_exchange(0, status + 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

/// A thread's signals (see `signal`).
pub struct SignalState {
    /// Signals sent to this thread alone (`tgkill`, a fault's signal, the watchdog's).
    pub pending: AtomicU64,
    /// Depth of kernel sections that hold references on their stack ([`super::signal::DeferFatal`]):
    /// while > 0, interrupt exit does not act on a fatal signal.
    pub(super) fatal_defer: AtomicU32,
    /// A user thread's blocked signals (`rt_sigprocmask`).
    pub blocked: AtomicU64,
}

/// A task's state in the dirty throttle (Linux's `current->nr_dirtied`,
/// `nr_dirtied_pause`, `dirty_paused_when`); only the task itself touches it. The block
/// layer's writeback (`block::writeback`, above the scheduler) owns its meaning; the task
/// only carries it, as Linux's `task_struct` does.
#[derive(Default)]
pub struct WriterState {
    /// Pages newly dirtied since its last check.
    pub nr_dirtied: AtomicU64,
    /// Pages before its next check (0: check at the next page).
    pub nr_dirtied_pause: AtomicU64,
    /// When its last check ended (after any pause), ns since boot.
    pub paused_when: AtomicU64,
    /// The `Dirtiers` interval it was last counted in.
    pub seen: AtomicU64,
    /// Time paused by the dirty throttle (`block::writeback::balance_dirty_pages`), ns.
    pub throttled_ns: AtomicU64,
}
