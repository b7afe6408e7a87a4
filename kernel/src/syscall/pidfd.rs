//! pidfd system calls (Linux `kernel/pid.c`, `kernel/signal.c`, `mm/oom_kill.c`):
//! `pidfd_open`, `pidfd_send_signal`, `pidfd_getfd`, `process_mrelease`, over the file kind
//! `fs::pidfd`. `waitid(P_PIDFD)` is in [`super::process`], `clone(CLONE_PIDFD)` in
//! `process::clone`; both find the pidfd with [`pidfd_of`].
//!
//! A pidfd names a process by its pid, which Cadence never reuses. What the pid stands for
//! when a call comes is one of three (Linux's `pid_task` on the `struct pid`): a live process
//! (its leader task), a zombie (ended, its status not yet collected: the task Linux keeps
//! until `wait`), or nothing (reaped). Calls answer as Linux's do on each: a signal to a
//! zombie succeeds and does nothing, to a reaped process is ESRCH; `pidfd_getfd` of a zombie
//! is ESRCH (its files are gone with PF_EXITING set).

use super::{ok, Outcome};
use crate::fs::file::{Kind, OpenFile, O_NONBLOCK, O_RDWR};
use crate::fs::pidfd::PidFd;
use crate::process::signal as psig;
use crate::process::Thread;
use crate::sched::task::{Task, TaskState, Tid};
use alloc::sync::Arc;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{code, SigInfo, SIGINFO_SIZE};
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// What a pid stands for now.
enum Target {
    /// A live process: its leader task.
    Live(Arc<Task>),
    /// A process that ended and has not been reaped.
    Zombie,
    /// Nothing (reaped, or never was).
    Gone,
}

/// Is `t` a task that has not ended as far as its process's parent can tell?
fn alive(t: &Task) -> bool {
    !t.is_idle && !t.process.group.exited.load(Ordering::Acquire) && t.state() != TaskState::Dead
}

/// What process `pid` is now. A live thread's tid that is not its process's pid is the
/// process's (as a `/proc/TID` directory, which Linux's `pidfd_send_signal` takes, signals the
/// thread's process).
fn target(pid: Tid) -> Target {
    if let Some(t) = crate::sched::task::find(pid).filter(|t| alive(t)) {
        if t.tid == t.process.tgid {
            return Target::Live(t);
        }
        if let Some(leader) = crate::sched::task::find(t.process.tgid).filter(|l| alive(l)) {
            return Target::Live(leader);
        }
    }
    if crate::process::zombie(pid).is_some() {
        Target::Zombie
    } else {
        Target::Gone
    }
}

/// The pidfd open at `fd` and whether it is non-blocking: EBADF if `fd` is not open or not a
/// pidfd (Linux's `pidfd_get_pid`).
pub fn pidfd_of(proc: &Thread, fd: u64) -> Result<(Arc<PidFd>, bool), Errno> {
    let f = super::fs::fd_file(proc, fd)?;
    match &f.kind {
        Kind::PidFd(p) => Ok((p.clone(), f.nonblock())),
        _ => Err(Errno::EBADF),
    }
}

/// The pid of a pidfd, or of an open `/proc/PID` directory (Linux's `pidfd_to_pid`, which
/// `pidfd_send_signal` alone uses); EBADF for any other file.
fn pid_of_file(f: &OpenFile) -> Result<Tid, Errno> {
    match &f.kind {
        Kind::PidFd(p) => Ok(p.pid()),
        Kind::Inode(i) => match &*i.lock() {
            crate::fs::vfs::Content::GenDir(d) => d.tgid_dir().ok_or(Errno::EBADF),
            _ => Err(Errno::EBADF),
        },
        _ => Err(Errno::EBADF),
    }
}

/// A new pidfd of `pid` (its thread group `group`, `None` once its tasks are gone) in the
/// caller's fd table, close-on-exec (EMFILE past RLIMIT_NOFILE).
fn install(proc: &Thread, pidfd: Arc<PidFd>, nonblock: bool) -> Result<u64, Errno> {
    let file = OpenFile::new(Kind::PidFd(pidfd), O_RDWR | if nonblock { O_NONBLOCK } else { 0 });
    let limit = proc.nofile();
    proc.files().lock_uninterruptible().install(file, true, limit)
}

/// `pidfd_open(pid, flags)`: a pidfd of process `pid`, close-on-exec; PIDFD_NONBLOCK
/// (O_NONBLOCK) makes `waitid(P_PIDFD)` on it non-blocking. EINVAL for other flags, a pid
/// <= 0 or a thread's tid that is not its process's pid (Linux 6.1's `pid_has_task(pid,
/// PIDTYPE_TGID)`); ESRCH for no such process (a zombie is one).
pub fn pidfd_open(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (pid, flags) = (a[0] as i32, a[1] as u32);
    if flags & !O_NONBLOCK != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    let pid = pid as Tid;
    let task = crate::sched::task::find(pid).filter(|t| !t.is_idle);
    let group = match (target(pid), &task) {
        (Target::Live(leader), Some(t)) if leader.tid == t.tid => Some(t.process.group.clone()),
        (Target::Live(_), _) => return Err(Errno::EINVAL),
        // A zombie whose leader task is still listed: its group (already exited).
        (Target::Zombie, _) => task.filter(|t| t.tid == t.process.tgid).map(|t| t.process.group.clone()),
        (Target::Gone, _) => return Err(Errno::ESRCH),
    };
    ok(install(proc, PidFd::new(pid, group), flags & O_NONBLOCK != 0)?)
}

/// Makes a pidfd for `clone(CLONE_PIDFD)`'s child `tid` in the caller's table and returns it
/// with its fd; the child's group is set once it exists ([`PidFd::set_group`]).
pub fn install_for_clone(proc: &Thread, tid: Tid) -> Result<(Arc<PidFd>, u64), Errno> {
    let p = PidFd::for_new_process(tid);
    let fd = install(proc, p.clone(), false)?;
    Ok((p, fd))
}

/// Takes back a pidfd [`install_for_clone`] made when the `clone` fails after it (Linux's
/// `bad_fork_put_pidfd`), unless the fd no longer holds it.
pub fn uninstall_for_clone(proc: &Thread, p: &Arc<PidFd>, fd: u64) {
    let table = proc.files();
    let mut t = table.lock_uninterruptible();
    let ours = t.get(fd).is_ok_and(|f| matches!(&f.kind, Kind::PidFd(q) if Arc::ptr_eq(p, q)));
    let entry = if ours { t.remove(fd).ok() } else { None };
    drop(t);
    drop(entry);
}

/// `pidfd_send_signal(pidfd, sig, info, flags)`: `sig` to the process of a pidfd or of an open
/// `/proc/PID` directory, as `kill` sends it (SI_USER, the caller's pid and uid) when `info`
/// is NULL, else with the caller's `info`, whose `si_signo` must be `sig` (EINVAL) and whose
/// `si_code` may be >= 0 or SI_TKILL only when the caller is the process itself (else EPERM,
/// as `rt_sigqueueinfo`). Signal 0 only checks. EINVAL for flags or a bad signal, EBADF for an
/// fd that is neither, EFAULT for an unreadable `info`, EPERM for another user's process
/// ([`may_kill`]); a zombie takes the signal and nothing happens, a reaped process is ESRCH.
/// Linux's order: flags, the fd, `info`, then the process.
pub fn pidfd_send_signal(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[3] as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    let pid = pid_of_file(&*super::fs::fd_file(proc, a[0])?)?;
    let sig = a[1] as i32;
    let me = crate::sched::current();
    let (info, queued) = if a[2] != 0 {
        let mut b = [0u8; SIGINFO_SIZE];
        proc.read_user(a[2], &mut b)?;
        let info = SigInfo::decode_queued(&b);
        if info.signo as i32 != sig {
            return Err(Errno::EINVAL);
        }
        // Only the process itself may forge what the kernel or `kill` / `tkill` would send
        // (Linux compares the calling thread's pid: another thread of the process may not).
        if me.tid != pid && (info.code >= 0 || info.code == code::SI_TKILL) {
            return Err(Errno::EPERM);
        }
        let queued = info.code != code::SI_USER;
        (info, queued)
    } else {
        (psig::info_from_me(sig as u32, code::SI_USER), false)
    };
    match target(pid) {
        Target::Gone => Err(Errno::ESRCH),
        _ if !psig::valid(u64::from(sig as u32)) => Err(Errno::EINVAL),
        Target::Zombie => ok(0),
        Target::Live(t) => {
            if info.code <= 0 && !may_kill(proc, &me, &t, sig as u32) {
                return Err(Errno::EPERM);
            }
            // A real-time signal with the caller's info is refused when the queue is full
            // (EAGAIN), unless it claims SI_USER (Linux's `__send_signal_locked`).
            psig::send(&t, sig as u32, info, true, queued)?;
            ok(0)
        }
    }
}

/// Linux's `check_kill_permission` for a signal a process sends (`si_code` <= 0): to its own
/// process always; to another if the sender's real or effective uid is the target's real or
/// saved uid, or the sender is root (CAP_KILL: effective uid 0 here), or it is SIGCONT within
/// the sender's session (`kill_ok_by_cred`). A kernel task's ids are root's.
fn may_kill(proc: &Thread, me: &Task, t: &Task, sig: u32) -> bool {
    if t.process.tgid == me.process.tgid {
        return true;
    }
    let (ruid, euid) = {
        let c = proc.process.creds.lock_uninterruptible();
        (c.uid[0], c.uid[1])
    };
    let (tuid, tsuid) = crate::process::thread_of(t).map_or((0, 0), |th| {
        let c = th.process.creds.lock_uninterruptible();
        (c.uid[0], c.uid[2])
    });
    euid == 0
        || [ruid, euid].iter().any(|&u| u == tuid || u == tsuid)
        || (sig == cadence_abi::signal::SIGCONT
            && t.process.group.sid.load(Ordering::Relaxed) == me.process.group.sid.load(Ordering::Relaxed))
}

/// Linux's `__ptrace_may_access(task, PTRACE_MODE_ATTACH_REALCREDS)` for a process other than
/// the caller's: the caller's real uid and gid must equal the target's real, effective and
/// saved ones, or the caller must have CAP_SYS_PTRACE (effective uid 0 here). Every process
/// is dumpable (PR_GET_DUMPABLE answers 1) and there is no Yama, so nothing else refuses.
fn may_attach(proc: &Thread, target: &Thread) -> bool {
    let mine = proc.process.creds.lock_uninterruptible().clone();
    if mine.uid[1] == 0 {
        return true;
    }
    let theirs = target.process.creds.lock_uninterruptible().clone();
    theirs.uid[..3].iter().all(|&u| u == mine.uid[0]) && theirs.gid[..3].iter().all(|&g| g == mine.gid[0])
}

/// `pidfd_getfd(pidfd, targetfd, flags)`: a copy of the pidfd's process's fd `targetfd` in the
/// caller's table, close-on-exec (the same open file: offset and status flags shared, as
/// `dup`). EINVAL for flags, EBADF for a non-pidfd or a `targetfd` not open there, ESRCH once
/// the process has ended (its files gone: a zombie too), EPERM without
/// PTRACE_MODE_ATTACH_REALCREDS ([`may_attach`]), EMFILE past the caller's RLIMIT_NOFILE.
pub fn pidfd_getfd(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    let (pidfd, _) = pidfd_of(proc, a[0])?;
    let Target::Live(task) = target(pidfd.pid()) else { return Err(Errno::ESRCH) };
    // A kernel task has no fds a process could take.
    let Some(th) = crate::process::thread_of(&task) else { return Err(Errno::EBADF) };
    let same = Arc::ptr_eq(&th.process, &proc.process);
    if !same && !may_attach(proc, &th) {
        return Err(Errno::EPERM);
    }
    // The leader's files go at its end (a leader that left before its threads: PF_EXITING).
    let files = th.files_if_live().ok_or(Errno::ESRCH)?;
    let file = files.lock_uninterruptible().get(a[1])?;
    drop(files);
    let limit = proc.nofile();
    ok(proc.files().lock_uninterruptible().install(file, true, limit)?)
}

/// `process_mrelease(pidfd, flags)`: Linux reaps the memory of a process that is being killed
/// before it has finished exiting. Cadence's exit frees the memory itself, so the call only
/// answers as Linux's does: EINVAL for flags or a process that is not dying (no SIGKILL or
/// group exit under way), EBADF for a non-pidfd, ESRCH once its memory is gone (a zombie
/// too), else 0.
pub fn process_mrelease(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    let (pidfd, _) = pidfd_of(proc, a[0])?;
    let Target::Live(task) = target(pidfd.pid()) else { return Err(Errno::ESRCH) };
    let group = &task.process.group;
    // Linux's `find_lock_task_mm`: a thread of the process that still has its memory.
    let has_mm = group.members().into_iter().any(|tid| {
        crate::sched::task::find(tid).and_then(|t| crate::process::thread_of(&t)).is_some_and(|th| th.mm_ref_if_live().is_some())
    });
    if !has_mm {
        return Err(Errno::ESRCH);
    }
    // Linux's `task_will_free_mem`: the process is exiting.
    if group.exit_status().is_none() {
        return Err(Errno::EINVAL);
    }
    ok(0)
}
