//! pidfds (Linux `kernel/pid.c`'s `pidfd_fops`): a file that names a process. What it holds is
//! the pid and the process's thread group: Cadence never reuses a tid
//! (`sched::task::reserve_tid` counts up), so the pid alone names the process for as long as
//! the file lives, as Linux's `struct pid` does, and the group says whether the process has
//! ended. The system calls that take one (`pidfd_send_signal`, `pidfd_getfd`,
//! `waitid(P_PIDFD)`, `process_mrelease`) are in `syscall::pidfd`, above the process layer.
//!
//! `poll` is readable once the whole process has ended (a zombie or reaped: Linux's
//! `pidfd_poll` over `thread_group_exited`), never writable; the end wakes the pollers
//! (`process::run_thread` after the group's `exited`). Reads and writes are EINVAL, `lseek`
//! ESPIPE, `mmap` ENODEV, and `fstat` shows an anonymous inode (mode 0600, no type bits), as
//! Linux 6.1's `anon_inode:[pidfd]`.

use crate::sched::process::ThreadGroup;
use crate::sched::task::Tid;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

/// One pidfd (what the open file holds).
pub struct PidFd {
    pid: Tid,
    /// The process's thread group: set when the pidfd is made, or for `clone(CLONE_PIDFD)`
    /// by whichever comes first of the child's start and `clone`'s return.
    group: spin::Once<Arc<ThreadGroup>>,
    /// The process had ended and its tasks were gone when the pidfd was made (a zombie).
    ended: bool,
}

impl PidFd {
    /// A pidfd of process `pid`, whose thread group is `group`, or which has ended (`None`).
    pub fn new(pid: Tid, group: Option<Arc<ThreadGroup>>) -> Arc<PidFd> {
        let ended = group.is_none();
        Arc::new(PidFd { pid, group: group.map_or_else(spin::Once::new, spin::Once::initialized), ended })
    }

    /// A pidfd of a process `clone` is making: its group comes with [`PidFd::set_group`].
    pub fn for_new_process(pid: Tid) -> Arc<PidFd> {
        Arc::new(PidFd { pid, group: spin::Once::new(), ended: false })
    }

    /// The new process's thread group (the first call counts).
    pub fn set_group(&self, group: &Arc<ThreadGroup>) {
        self.group.call_once(|| group.clone());
    }

    /// The process's pid.
    pub fn pid(&self) -> Tid {
        self.pid
    }

    /// Has the whole process ended (its wait status recorded: a zombie, or reaped; a kernel
    /// task, which records none: gone)? Linux's `thread_group_exited`.
    pub fn exited(&self) -> bool {
        self.ended || self.group.get().is_some_and(|g| g.exited.load(Ordering::Acquire) || g.is_empty())
    }

    /// An inode-like number for `fstat`.
    pub fn id(&self) -> u64 {
        (2 << 60) | u64::from(self.pid)
    }
}
