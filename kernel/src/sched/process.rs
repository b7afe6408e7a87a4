//! What makes a task a process rather than a thread the scheduler runs: its thread group,
//! process group, session, controlling tty, exit code and signals ([`ProcIdentity`], the
//! task's `process` field). The scheduling classes read none of it. Today each task holds its
//! own; once processes exist, the threads of one will share theirs.

use super::task::Tid;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// A task's process identity: thread group `tgid` (a task spawned with
/// [`SpawnOptions::thread`](super::task::SpawnOptions::thread) joins its parent's), process
/// group `pgid` and session `sid` (inherited; `setpgid`/`setsid` change them), controlling
/// tty, exit code and signal state.
pub struct ProcIdentity {
    pub tgid: Tid,
    pub pgid: AtomicU32,
    pub sid: AtomicU32,
    /// Controlling tty (0 = none; see `tty`).
    pub tty: AtomicU32,
    exit_code: AtomicI32,
    pub signals: SignalState,
    /// A user process that has ended as far as its parent can tell (its wait status is
    /// recorded) while its task finishes exiting: signals find no such process (ESRCH), as
    /// after Linux's reap.
    pub exited: core::sync::atomic::AtomicBool,
}

impl ProcIdentity {
    /// Thread group `tgid`, process group `pgid` and session `sid`; no tty, exit code 0, no
    /// signal pending.
    pub(super) fn new(tgid: Tid, pgid: Tid, sid: Tid) -> Self {
        ProcIdentity {
            tgid,
            pgid: AtomicU32::new(pgid),
            sid: AtomicU32::new(sid),
            tty: AtomicU32::new(0),
            exit_code: AtomicI32::new(0),
            signals: SignalState {
                pending: AtomicU64::new(0),
                fatal_defer: AtomicU32::new(0),
                blocked: AtomicU64::new(0),
                ignored: AtomicU64::new(0),
            },
            exited: core::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_code.load(Ordering::Acquire)
    }

    pub(super) fn set_exit_code(&self, code: i32) {
        self.exit_code.store(code, Ordering::Release);
    }
}

/// A task's signals (see `signal`).
pub struct SignalState {
    /// Pending signals (bit n = signal n).
    pub pending: AtomicU64,
    /// Depth of kernel sections that hold references on their stack ([`super::signal::DeferFatal`]):
    /// while > 0, interrupt exit does not act on a fatal signal.
    pub(super) fatal_defer: AtomicU32,
    /// A user process's blocked signals (`rt_sigprocmask`; bit n = signal n).
    pub blocked: AtomicU64,
    /// A user process's signals set to SIG_IGN (`rt_sigaction`), discarded when sent.
    pub ignored: AtomicU64,
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
