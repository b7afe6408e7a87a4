//! User processes and their threads. A thread is a kernel task that runs user code through
//! `framework::user` ([`run_thread`]); its [`Thread`] holds what it shares with others by
//! `clone` flags — its memory ([`mm`], CLONE_VM), fd table (CLONE_FILES), directory and umask
//! (CLONE_FS), signal dispositions (CLONE_SIGHAND) — and what is its own (its signal queue,
//! alternate stack, `clear_child_tid`, robust list). The threads of one process (CLONE_THREAD)
//! share a [`Process`]: its limits, children, parent, the signals sent to it, and the count of
//! its live threads; the scheduler's `ThreadGroup` holds their process group, session, tty and
//! the signal bits.
//!
//! **Life.** The first process is started by the kernel ([`spawn`]: the shell's `exec`, the
//! `sh=` boot option); the rest by `clone` ([`clone`]: `fork`, `vfork`, `pthread_create`).
//! A thread ends by `exit` (that thread), `exit_group` or a fatal signal (every thread of the
//! process: the group exit, [`signal`]). Its end runs in its own task, on its way out of
//! [`run_thread`] (the whole life of a thread runs in a `DeferFatal` section, so nothing ends
//! the task in place): `clear_child_tid` is cleared and woken, the robust list walked, its
//! references to the shared parts dropped (the last one closes the files and frees the memory).
//! The first thread (whose tid is the pid) ends last: it waits for the others, then records
//! the wait status in its parent's [`Family`] and sends the parent SIGCHLD
//! ([`signal::notify_parent`]).

pub mod cgroupfs;
pub mod exec;
pub mod futex;
pub mod mm;
pub mod oom;
pub mod procfs;
pub mod sem;
pub mod signal;
pub mod timers;

use crate::fs::file::FdTable;
use crate::fs::vfs::Inode;
use crate::sched::process::ThreadGroup;
use crate::sched::task::{SpawnOptions, Task, Tid};
use crate::sched::wait::{Mutex, WaitQueue};
use crate::sync::{IrqLock, SpinLock};
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{AltStack, SigInfo, SS_DISABLE};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use framework::task::Switchable;
use framework::user::{self, ReturnReason, UserContext};

/// One signal's disposition as `rt_sigaction` stores it (handler, flags, restorer, mask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    /// `SIG_DFL` (0), `SIG_IGN` (1) or a handler's address.
    pub handler: u64,
    /// `SA_*`.
    pub flags: u64,
    /// `sa_restorer`.
    pub restorer: u64,
    /// `sa_mask` (the kernel's encoding: bit n - 1 for signal n).
    pub mask: u64,
}

/// `SIG_DFL`.
pub const SIG_DFL: u64 = 0;
/// `SIG_IGN`.
pub const SIG_IGN: u64 = 1;

/// Signal dispositions, by signal number (0 unused): shared by CLONE_SIGHAND.
pub type SigHand = Mutex<[SigAction; 65]>;

/// A process's directory and umask (Linux's `fs_struct`): shared by CLONE_FS.
pub struct FsInfo {
    /// The working directory.
    pub cwd: Mutex<Arc<Inode>>,
    /// `umask`.
    pub umask: AtomicU32,
}

/// What a child's parent has not yet been told, or may still collect.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChildState {
    /// Its wait status once it ended (Linux's encoding: `code << 8`, or the signal).
    pub exit: Option<i32>,
    /// A stop not yet reported to `wait4(WUNTRACED)`: the stop signal.
    pub stopped: Option<u32>,
    /// A continue not yet reported to `wait4(WCONTINUED)`.
    pub continued: bool,
}

/// A child as its parent's `wait4` sees it.
pub struct ChildRecord {
    /// Its pid.
    pub pid: AtomicU32,
    /// Its thread group (for its current process group: `wait4(0)`, `wait4(-pgid)`).
    pub group: spin::Once<Arc<ThreadGroup>>,
    /// What is there to collect.
    pub state: IrqLock<ChildState>,
    /// A clone child (exit signal other than SIGCHLD; `__WCLONE`).
    pub clone_child: bool,
    /// Reaped (by `wait`, or at once by a parent ignoring SIGCHLD): the process is gone for
    /// `/proc` too, though its tasks may still be finishing their exit.
    pub reaped: AtomicBool,
}

impl ChildRecord {
    /// Its process group now.
    pub fn pgid(&self) -> Tid {
        self.group.get().map_or(0, |g| g.pgid.load(Ordering::Relaxed))
    }
}

/// A process's children and the queue its `wait4` sleeps on.
pub struct Family {
    /// Children not yet reaped.
    pub children: Mutex<Vec<Arc<ChildRecord>>>,
    /// Woken when a child ends, stops or continues.
    pub changed: WaitQueue,
    /// The process has ended and reaped its ended children: a child ending later is reaped at
    /// once (init's part). Set and read under `children`'s lock, so a child ending while its
    /// parent ends is either seen by the parent's sweep or sees this (a zombie was left when
    /// both looked at once).
    pub orphaned: AtomicBool,
}

impl Default for Family {
    fn default() -> Self {
        Family { children: Mutex::new(Vec::new()), changed: WaitQueue::new(), orphaned: AtomicBool::new(false) }
    }
}

/// Who to tell when a process stops, continues or ends.
pub struct ParentLink {
    /// The parent's pid.
    pub pid: Tid,
    /// The parent's family, where the child's record is.
    pub family: Arc<Family>,
    /// The child's record there.
    pub record: Arc<ChildRecord>,
    /// The parent's dispositions (SIGCHLD's SA_NOCLDSTOP, SA_NOCLDWAIT and SIG_IGN).
    pub sighand: Weak<SigHand>,
    /// The signal the parent gets at the end (SIGCHLD for `fork`; `clone`'s CSIGNAL).
    pub exit_signal: u32,
}

/// What the threads of one process share (module doc).
pub struct Process {
    /// `/proc/PID/oom_score_adj` (-1000..=1000; inherited across fork, as Linux's
    /// `signal->oom_score_adj`).
    pub oom_score_adj: AtomicI32,
    /// Resource limits (soft, hard) by resource (RLIMIT_RTTIME lives in the task's watchdog);
    /// shared with [`limits_of`]'s registry, so `prlimit(pid)` reaches another process's.
    pub rlimits: Limits,
    /// Its children.
    pub family: Arc<Family>,
    /// Its parent (None for a process the kernel started).
    pub parent: Option<ParentLink>,
    /// Signals sent to the process, with their info (the scheduler's group holds the bits).
    pub sigqueue: IrqLock<Vec<SigInfo>>,
    /// Its user and group ids.
    pub creds: Mutex<Creds>,
    /// Threads that have not finished exiting.
    pub live: AtomicU32,
    /// Woken when `live` drops (the first thread waits there to end last; `execve` for the
    /// other threads to go).
    pub all_gone: WaitQueue,
    /// The `exit` code of the thread that ended last by `exit` (the process's status if no
    /// `exit_group` or signal ended it).
    pub exit_code: AtomicI32,
    /// Threads parked in a group stop.
    pub stopped: AtomicU32,
    /// The group stop under way was reported to the parent.
    pub stop_reported: AtomicBool,
}

/// A process's credentials (Linux's `struct cred`): real, effective, saved and file-system
/// user and group ids and the supplementary groups. Every process starts as root; the ids
/// change by Linux's rules (`kernel/sys.c`), with "privileged" meaning effective uid 0
/// (CAP_SETUID / CAP_SETGID). Cadence checks no file permissions: the ids are what programs
/// are told, not a security boundary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Creds {
    /// Real, effective, saved, file-system user ids.
    pub uid: [u32; 4],
    /// Real, effective, saved, file-system group ids.
    pub gid: [u32; 4],
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// A process's resource limits, shared with the registry.
pub type Limits = Arc<Mutex<[(u64, u64); 16]>>;

/// A restart of an interrupted sleep (`restart_syscall`): the clock and absolute deadline.
#[derive(Clone, Copy, Debug)]
pub struct RestartBlock {
    /// The clock (`CLOCK_*`).
    pub clock: u32,
    /// The absolute deadline on that clock, ns.
    pub deadline_ns: u64,
    /// Where the remaining time goes if a handler interrupts the restarted sleep (0: none).
    pub rem: u64,
}

/// A thread's memory: the `Mm` and, beside it, its page tables, which are read without the
/// `mm` lock: the resident count (the OOM killer's scan of every process, as Linux's atomic
/// `rss_stat`) and the copies to and from user memory. The space is the `Mm`'s own, fixed
/// for the `Mm`'s life.
///
/// **Copies take the `mm` lock only to fault.** A copy ([`MmRef::read`], [`MmRef::write`],
/// [`MmRef::atomic_u32`]) first goes through the page tables alone, as Linux's
/// `copy_to_user` takes no `mmap_lock` for a page that is there; only a page that is missing
/// or lacks the access's permission takes the lock, to resolve it as a page fault would, and
/// the whole copy is done again under it. The space's own lock keeps each page mapped while
/// it is copied ([`framework::mm::vm::VmSpace`]); a copy racing an `munmap` or `mprotect` of
/// another thread sees the page before or after, as on Linux. Why: an RT thread's
/// `clock_gettime` or `clock_nanosleep` writes or reads its `timespec`, and with the lock it
/// waited for whatever the process's SCHED_OTHER threads did under it (cyclictest's main
/// thread populating its next thread's 8 MiB stack under `mlockall(MCL_FUTURE)`: 800 ms
/// behind 160 hackbench tasks, issue 38's -smp 4 maxima).
///
/// **Its AIO contexts** (`io_setup`'s, Linux's `mm->ioctx_table`) are beside it too: shared by
/// the threads that share the memory, none in a fork's child or after `execve`, and ended when
/// the last thread using the memory lets it go (Linux's `exit_aio` at the last `mmput`).
#[derive(Clone)]
pub struct MmRef {
    mm: Arc<Mutex<mm::Mm>>,
    space: Arc<framework::mm::vm::VmSpace>,
    aio: Arc<crate::fs::aio::Table>,
}

impl MmRef {
    /// `mm` with its space beside it, and no AIO contexts.
    pub fn new(mm: mm::Mm) -> MmRef {
        MmRef { space: mm.space.clone(), mm: Arc::new(Mutex::new(mm)), aio: Arc::new(crate::fs::aio::Table::new()) }
    }

    /// The address space's AIO contexts.
    pub fn aio(&self) -> &Arc<crate::fs::aio::Table> {
        &self.aio
    }

    /// The `Mm` (its lock is for changing the mappings and for faults).
    pub fn mm(&self) -> &Arc<Mutex<mm::Mm>> {
        &self.mm
    }

    /// Copies user memory at `addr` into `buf` (EFAULT where the process could not read).
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        if self.space.read_bytes(addr, buf).is_ok() {
            return Ok(());
        }
        self.mm.lock_uninterruptible().read(addr, buf)
    }

    /// Copies `data` into user memory at `addr` (EFAULT where the process could not write).
    /// A copy that faults part way is done again whole under the lock: its first pages are
    /// written twice with the same bytes.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        if self.space.write_bytes(addr, data).is_ok() {
            return Ok(());
        }
        self.mm.lock_uninterruptible().write(addr, data)
    }

    /// Reads a NUL-terminated string of at most `max` bytes (ENAMETOOLONG past it).
    pub fn read_cstr(&self, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
        mm::read_cstr(|at, chunk| self.read(at, chunk), addr, max)
    }

    /// Runs the atomic `f` on the 4-byte aligned word at `addr` (EINVAL if misaligned),
    /// resolving a fault (a page not yet there, or copy-on-write) under the lock and retrying;
    /// EFAULT where the program could not write.
    pub fn atomic_u32<R>(&self, addr: u64, mut f: impl FnMut(&AtomicU32) -> R) -> Result<R, Errno> {
        if !addr.is_multiple_of(4) {
            return Err(Errno::EINVAL);
        }
        if let Ok(r) = self.space.atomic_u32(addr, &mut f) {
            return Ok(r);
        }
        loop {
            let mut m = self.mm.lock_uninterruptible();
            match m.space.atomic_u32(addr, &mut f) {
                Ok(r) => return Ok(r),
                Err(fault) => m.fault(fault.addr, true)?,
            }
        }
    }
}

/// One thread of a process (module doc).
pub struct Thread {
    /// Its process.
    pub process: Arc<Process>,
    /// Spin locks, not `IrqLock`s: no interrupt handler reads a thread's memory or files, and
    /// every system call that copies user memory or looks up an fd takes them.
    mm: SpinLock<Option<MmRef>>,
    files: SpinLock<Option<Arc<Mutex<FdTable>>>>,
    /// Directory and umask.
    pub fs: Arc<FsInfo>,
    /// Signal dispositions.
    pub sighand: Arc<SigHand>,
    /// `set_tid_address` / CLONE_CHILD_CLEARTID: cleared and woken at the thread's end.
    pub clear_child_tid: AtomicU64,
    /// `set_robust_list`'s head (0: none).
    pub robust_list: AtomicU64,
    /// Its PI futexes are handed on at its end (`futex::exit_pi`): set then, under the PI
    /// futex lock, a locker finds it gone (ESRCH), as Linux's `FUTEX_STATE_DEAD`.
    pub futex_exited: AtomicBool,
    /// `sigaltstack`. This and the two after the signal queue are the thread's own (set and
    /// read by its system calls and its way back to user mode, never by an interrupt
    /// handler): `SpinLock`s, as the way back takes `saved_mask` at every return.
    pub altstack: SpinLock<AltStack>,
    /// Signals sent to this thread, with their info.
    pub sigqueue: IrqLock<Vec<SigInfo>>,
    /// The mask to restore once a signal is handled (`rt_sigsuspend`, `ppoll`, `pselect6`:
    /// Linux's `saved_sigmask`).
    pub saved_mask: SpinLock<Option<u64>>,
    /// What `restart_syscall` continues.
    pub restart: SpinLock<Option<RestartBlock>>,
    /// A `vfork` child's parent waits on this until the child execs or ends.
    pub vfork_done: Option<Arc<Completion>>,
}

/// A one-shot event a task waits for.
#[derive(Default)]
pub struct Completion {
    done: AtomicBool,
    queue: WaitQueue,
}

impl Completion {
    /// Marks it done and wakes the waiters.
    pub fn complete(&self) {
        self.done.store(true, Ordering::Release);
        self.queue.wake_all();
    }

    /// Waits until it is done, or until the caller's process is ending (other signals stay
    /// pending: Linux's killable wait of `vfork`).
    pub fn wait_killable(&self) {
        let me = crate::sched::current();
        while !self.done.load(Ordering::Acquire) {
            if me.process.group.exit_status().is_some() {
                return;
            }
            if self.queue.wait_until_interruptible(|| self.done.load(Ordering::Acquire)).is_err() {
                // Interrupted by a signal that does not end the process: keep waiting, with a
                // short sleep so a signal that stays pending does not make this spin.
                let _ = crate::sched::sleep_until_interruptible(crate::time::uptime_ns() + 1_000_000);
            }
        }
    }
}

impl Thread {
    /// The thread's memory (present from its start until its end).
    pub fn mm(&self) -> Arc<Mutex<mm::Mm>> {
        self.mm.lock().as_ref().map(|m| m.mm.clone()).expect("a running thread has its memory")
    }

    /// The thread's memory and its page tables (present from its start until its end).
    pub fn mm_ref(&self) -> MmRef {
        self.mm.lock().clone().expect("a running thread has its memory")
    }

    /// Copies the thread's user memory at `addr` into `buf` ([`MmRef::read`]).
    pub fn read_user(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.mm_ref().read(addr, buf)
    }

    /// `len` bytes of the thread's user memory at `addr`, in a new buffer ([`MmRef::read`]).
    /// The caller bounds `len` (a system call's own limit: IOV_MAX, the queue's message size).
    pub fn read_user_vec(&self, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let mut buf = alloc::vec![0u8; len];
        self.read_user(addr, &mut buf)?;
        Ok(buf)
    }

    /// Copies `data` into the thread's user memory at `addr` ([`MmRef::write`]).
    pub fn write_user(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        self.mm_ref().write(addr, data)
    }

    /// The NUL-terminated string at `addr` of at most `max` bytes ([`MmRef::read_cstr`]).
    pub fn read_user_cstr(&self, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
        self.mm_ref().read_cstr(addr, max)
    }

    /// The thread's memory, if it has not ended.
    pub fn mm_if_live(&self) -> Option<Arc<Mutex<mm::Mm>>> {
        self.mm.lock().as_ref().map(|m| m.mm.clone())
    }

    /// The thread's memory and its page tables, if it has not ended.
    pub fn mm_ref_if_live(&self) -> Option<MmRef> {
        self.mm.lock().clone()
    }

    /// The thread's resident pages, if it has not ended, read without its `mm` lock.
    pub fn resident_pages_if_live(&self) -> Option<u64> {
        self.mm.lock().as_ref().map(|m| m.space.resident_pages())
    }

    /// Its memory's peak resident set, pages (`None` once it has ended).
    pub fn hiwater_pages_if_live(&self) -> Option<u64> {
        self.mm.lock().as_ref().map(|m| m.space.hiwater_pages())
    }

    /// Replaces the thread's memory (`execve`); returns the old one. The old reference goes
    /// after the lock is released: the last one ends the address space's AIO contexts, which
    /// takes sleeping locks.
    pub fn set_mm(&self, mm: mm::Mm) -> Option<Arc<Mutex<mm::Mm>>> {
        let new = MmRef::new(mm);
        let old = self.mm.lock().replace(new);
        old.map(|m| m.mm)
    }

    /// The thread's fd table.
    pub fn files(&self) -> Arc<Mutex<FdTable>> {
        self.files.lock().clone().expect("a running thread has its files")
    }

    /// The fd table, unless the thread has ended (for other tasks' views: `/proc`).
    pub fn files_if_live(&self) -> Option<Arc<Mutex<FdTable>>> {
        self.files.lock().clone()
    }

    /// The fds the process may use: its RLIMIT_NOFILE soft limit.
    pub fn nofile(&self) -> usize {
        (self.process.rlimits.lock_uninterruptible()[7].0 as usize).min(crate::fs::file::NR_OPEN)
    }
}

/// The user thread `task` runs, if it is one.
pub fn thread_of(task: &Task) -> Option<Arc<Thread>> {
    task.process.user.get().and_then(|u| u.clone().downcast::<Thread>().ok())
}

/// Has `t` Linux's CAP_IPC_LOCK (RLIMIT_MEMLOCK does not bind it)? Effective uid 0 has every
/// capability here, as root's on Linux; another uid none.
pub fn capable_ipc_lock(t: &Thread) -> bool {
    t.process.creds.lock_uninterruptible().uid[1] == 0
}

/// Every live process's limits, by pid (`prlimit` of another process).
/// The parent's pid as `getppid` and `/proc` report it: 1 once the parent has ended (init
/// adopts orphans on Linux), 0 for a process the kernel started.
pub fn ppid(process: &Process) -> Tid {
    let Some(p) = process.parent.as_ref() else { return 0 };
    let alive = crate::sched::task::find(p.pid)
        .is_some_and(|t| !t.process.group.exited.load(Ordering::Acquire) && t.state() != crate::sched::task::TaskState::Dead);
    if alive {
        p.pid
    } else {
        1
    }
}

/// What `/proc` shows of a process that ended and is not reaped yet (its tasks may be gone):
/// Linux keeps the task until `wait`; Cadence keeps these lines of it.
#[derive(Clone)]
pub struct Zombie {
    /// Its parent's pid.
    pub ppid: Tid,
    /// Its process group and session.
    pub pgid: Tid,
    pub sid: Tid,
    /// Its name (`comm`).
    pub comm: [u8; 16],
    /// Its wait status.
    pub status: i32,
}

/// Zombies by pid (see [`Zombie`]): in at the exit's report to the parent, out at the reap.
static ZOMBIES: Mutex<alloc::collections::BTreeMap<Tid, Zombie>> = Mutex::new(alloc::collections::BTreeMap::new());

/// The zombie `pid`, if it is one.
pub fn zombie(pid: Tid) -> Option<Zombie> {
    ZOMBIES.lock_uninterruptible().get(&pid).cloned()
}

/// The zombies' pids.
pub fn zombies() -> Vec<Tid> {
    ZOMBIES.lock_uninterruptible().keys().copied().collect()
}

/// A memory of process `g` is dropped (its thread's exit, `execve`): its peak resident set
/// goes to the process's (Linux's `setmax_mm_hiwater_rss`).
pub fn record_maxrss(g: &crate::sched::process::ThreadGroup, space: &framework::mm::vm::VmSpace) {
    g.usage.maxrss_pages.fetch_max(space.hiwater_pages(), Ordering::Relaxed);
}

/// `pid` was reaped (or will never be: its parent ended).
pub fn reaped(record: &ChildRecord) {
    record.reaped.store(true, Ordering::Release);
    ZOMBIES.lock_uninterruptible().remove(&record.pid.load(Ordering::Acquire));
}

/// The live processes by pid: `prlimit(pid)`'s registry and RLIMIT_NPROC's count. A child is
/// listed by `clone` before it is spawned (so that a parent forking faster than its children
/// start cannot overshoot the limit) and leaves when its last thread has ended.
/// Lock order: `LIMITS`, then a process's `creds`.
static LIMITS: Mutex<alloc::collections::BTreeMap<Tid, Arc<Process>>> = Mutex::new(alloc::collections::BTreeMap::new());

/// The limits of live process `pid`.
pub fn limits_of(pid: Tid) -> Option<Limits> {
    LIMITS.lock_uninterruptible().get(&pid).map(|p| p.rlimits.clone())
}

/// RLIMIT_NPROC's resource number.
pub const RLIMIT_NPROC: usize = 6;

/// Linux's `copy_process` checks, made atomic with listing the new task: EAGAIN when the
/// tasks reach `max_threads`, or when the caller's real user has RLIMIT_NPROC's soft limit
/// of threads and is not root (Linux: `INIT_USER`, CAP_SYS_RESOURCE, CAP_SYS_ADMIN; here
/// effective uid 0 has them). A new process `child` is listed as `tid` when allowed; a new
/// thread is already counted in its process's `live`.
fn charge(parent: &Thread, tid: Tid, child: Option<&Arc<Process>>) -> Result<(), Errno> {
    let (ruid, euid) = {
        let c = parent.process.creds.lock_uninterruptible();
        (c.uid[0], c.uid[1])
    };
    let limit = parent.process.rlimits.lock_uninterruptible()[RLIMIT_NPROC].0;
    let mut procs = LIMITS.lock_uninterruptible();
    // The forks charged but not yet in the task table count too: checked against the table
    // alone, concurrent forks passed together (a root bomb at `threads-max` 2000 reached 2,125
    // tasks on 2 CPUs). Linux counts `nr_threads` in the critical section of its check.
    if crate::sched::task::count() + FORKS_IN_FLIGHT.load(Ordering::Acquire) >= crate::sched::task::max_threads() {
        return Err(Errno::EAGAIN);
    }
    if ruid != 0 && euid != 0 {
        let threads: u64 = procs
            .values()
            .filter(|p| p.creds.lock_uninterruptible().uid[0] == ruid)
            .map(|p| u64::from(p.live.load(Ordering::Acquire)))
            .sum();
        // A new thread is in `threads` already.
        if threads - u64::from(child.is_none()) >= limit {
            return Err(Errno::EAGAIN);
        }
    }
    if let Some(p) = child {
        procs.insert(tid, p.clone());
    }
    FORKS_IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// Forks [`charge`]d whose task is not in the task table yet (`clone` takes it back once its
/// spawn returned, made or failed).
static FORKS_IN_FLIGHT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Illegal instruction.
pub const SIGILL: i32 = 4;
/// Trace trap (int3).
pub const SIGTRAP: i32 = 5;
/// Bus error.
pub const SIGBUS: i32 = 7;
/// Floating-point exception.
pub const SIGFPE: i32 = 8;
/// Kill.
pub const SIGKILL: i32 = 9;
/// Segmentation violation.
pub const SIGSEGV: i32 = 11;
/// Broken pipe.
pub const SIGPIPE: i32 = 13;

/// Has the running task something to take in the kernel before it returns to user mode (a
/// signal it does not block, its process's stop or end)? The framework asks after an
/// interrupt in user mode (interrupts off).
pub fn user_event_pending() -> bool {
    crate::sched::signal::with_current(|t| t.process.is_user() && crate::sched::signal::interrupted(t)).unwrap_or(false)
}

/// Sends `sig` to the calling thread (a broken pipe's SIGPIPE), as from itself (`SI_USER`).
pub fn signal_self(sig: i32) {
    let me = crate::sched::current();
    let info = SigInfo::kill(sig as u32, cadence_abi::signal::code::SI_USER, me.process.tgid);
    let _ = signal::send(&me, sig as u32, info, false, false);
}

/// The shell's name for a signal's death (bash's `strsignal` words).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        SIGILL => "Illegal instruction",
        SIGTRAP => "Trace/breakpoint trap",
        6 => "Aborted",
        SIGBUS => "Bus error",
        SIGFPE => "Floating point exception",
        SIGKILL => "Killed",
        10 => "User defined signal 1",
        SIGSEGV => "Segmentation fault",
        12 => "User defined signal 2",
        SIGPIPE => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        24 => "CPU time limit exceeded",
        _ => "Killed by a signal",
    }
}

/// How a thread's run ended.
enum ThreadEnd {
    /// `exit(code)`: this thread alone.
    Exit(i32),
    /// The process is ending (its status is in the group).
    Group,
}

/// Runs the thread until it ends.
fn thread_loop(t: &Thread, mut ctx: UserContext) -> ThreadEnd {
    let mut syscall: Option<u64> = None;
    loop {
        // `TIMER_KICK` on the way out as well as at switches: a CPU busy with system calls
        // (hackbench's) may go long without a switch while its timer interrupt is overdue.
        // Before the signal check: the kicked interrupt's wakeup may switch this thread out
        // (at the kick's preemption point), and a signal sent to it meanwhile sends no IPI.
        if crate::sched::timer_kick_enabled() {
            crate::timer::kick_if_overdue();
        }
        if signal::before_user(t, &mut ctx, syscall.take()) {
            return ThreadEnd::Group;
        }
        match user::execute(&mut ctx) {
            ReturnReason::Syscall => {
                let nr = ctx.regs.rax;
                match crate::syscall::dispatch(t, &mut ctx) {
                    crate::syscall::After::Return => syscall = Some(nr),
                    crate::syscall::After::Restored => {}
                    crate::syscall::After::ExitThread(code) => return ThreadEnd::Exit(code),
                    crate::syscall::After::ExitGroup(code) => {
                        signal::group_exit(code << 8);
                        return ThreadEnd::Group;
                    }
                }
            }
            ReturnReason::Exception(e) if e.vector == 14 => {
                let write = e.error & 2 != 0;
                let fixed = t.mm().lock_uninterruptible().fault(e.addr, write);
                if fixed.is_ok() {
                    // A minor fault: Cadence does not tell those that waited for the disk.
                    crate::sched::current().stats.min_flt.fetch_add(1, Ordering::Relaxed);
                }
                if let Err(err) = fixed {
                    if err == Errno::ENOMEM && oom::out_of_memory(t) == oom::Oom::Retry {
                        continue;
                    }
                    let sig = if matches!(err, Errno::ENOMEM | Errno::EIO) { SIGBUS } else { SIGSEGV };
                    signal::force_fault(t, &ctx, sig as u32, e.addr, e.vector, e.error);
                }
            }
            ReturnReason::Exception(e) => {
                let sig = signal::signal_of(e.vector);
                signal::force_fault(t, &ctx, sig as u32, 0, e.vector, e.error);
            }
            ReturnReason::Interrupted => {}
        }
    }
}

/// Runs thread `t` with `ctx` in the calling task (which it was spawned for, or which becomes
/// it) until it ends, then does the thread's end (module doc). Returns the process's status as
/// a shell reports it (the exit status, or 128 + the signal that killed it); a thread that is
/// not the process's last returns 0. The caller holds a `DeferFatal` for the task's life.
fn run_thread(t: Arc<Thread>, ctx: UserContext) -> i32 {
    let me = crate::sched::current();
    me.process.user.call_once(|| t.clone());
    me.task_context().enable_user();
    me.task_context().set_vm_space(Some(t.mm_ref().space.clone()));
    let end = thread_loop(&t, ctx);
    let leader = me.tid == me.process.tgid;
    // This thread's own end: a vfork parent resumes; pthread_join's futex; robust mutexes.
    if let Some(v) = &t.vfork_done {
        v.complete();
    }
    futex::exit_robust_list(&t);
    futex::exit_pi(&t, me.tid);
    let ctid = t.clear_child_tid.swap(0, Ordering::AcqRel);
    if ctid != 0 && ctid.is_multiple_of(4) {
        let mm = t.mm_ref();
        if mm.write(ctid, &0u32.to_le_bytes()).is_ok() {
            let _ = futex::wake(&mm, ctid, false, 1, futex::BITSET_ANY);
        }
    }
    // The shared parts: the last reference closes the files (a pipe's last writer gives its
    // reader EOF), then frees the memory. The space goes before the memory: no CPU has it
    // loaded when it is freed.
    let files = t.files.lock().take();
    drop(files);
    me.task_context().set_vm_space(None);
    let mm = t.mm.lock().take();
    if let Some(mm) = &mm {
        record_maxrss(&me.process.group, &mm.space);
    }
    drop(mm);
    let process = t.process.clone();
    if let ThreadEnd::Exit(code) = end {
        process.exit_code.store(code, Ordering::Release);
    }
    process.live.fetch_sub(1, Ordering::AcqRel);
    // The first thread waits for the count to reach 0, an `execve` for it to reach 1.
    process.all_gone.wake_all();
    if !leader {
        return 0;
    }
    // The first thread ends last (its tid is the pid the parent waits for).
    process.all_gone.wait_until_uninterruptible(|| process.live.load(Ordering::Acquire) == 0);
    timers::exit_process(me.tid);
    // SEM_UNDO adjustments are the process's: applied once its last thread is gone.
    sem::exit_process(me.process.tgid);
    let group = &me.process.group;
    // Ended by `exit_group` or a signal: that status; else the last thread's `exit` code.
    let wait_status = group.exit_status().unwrap_or((process.exit_code.load(Ordering::Acquire) & 0xff) << 8);
    LIMITS.lock_uninterruptible().remove(&me.tid);
    // Children that ended and were not waited for never will be: init would reap them; one
    // ending from now on reaps itself (`orphaned`, under the same lock).
    {
        let children = process.family.children.lock_uninterruptible();
        process.family.orphaned.store(true, Ordering::Release);
        for r in children.iter() {
            if r.state.lock().exit.is_some() {
                reaped(r);
            }
        }
    }
    if process.parent.is_some() {
        let zombie = Zombie {
            ppid: process.parent.as_ref().map_or(0, |p| p.pid),
            pgid: group.pgid.load(Ordering::Relaxed),
            sid: group.sid.load(Ordering::Relaxed),
            comm: me.comm(),
            status: wait_status,
        };
        ZOMBIES.lock_uninterruptible().insert(me.tid, zombie);
    }
    group.exited.store(true, Ordering::Release);
    // Its pidfds are readable now: their pollers look again (Linux's `do_notify_pidfd`).
    crate::sched::wait::POLL.wake_all();
    oom::process_ended(me.tid);
    signal::notify_parent_exit(&process, me.tid, wait_status);
    if wait_status & 0x7f != 0 {
        128 + (wait_status & 0x7f)
    } else {
        (wait_status >> 8) & 0xff
    }
}

/// [`run_thread`] for a freshly loaded program without a parent process (the kernel's), in
/// the calling task.
pub fn run_loaded(mm: mm::Mm, ctx: UserContext) -> i32 {
    match new_process(mm) {
        Ok(t) => {
            LIMITS.lock_uninterruptible().insert(crate::sched::current().tid, t.process.clone());
            run_thread(t, ctx)
        }
        Err(e) => 128 + e.code(),
    }
}

/// Dispositions as a new process has them (every signal SIG_DFL), and the scheduler's
/// ignored set that goes with them: the signals whose default action is to ignore.
fn default_ignored() -> u64 {
    (1..=64u32)
        .filter(|&s| {
            s != 19
                && matches!(
                    cadence_abi::signal::default_action(s),
                    cadence_abi::signal::DefaultAction::Ignore | cadence_abi::signal::DefaultAction::Continue
                )
        })
        .fold(0, |m, s| m | cadence_abi::signal::sigbit(s))
}

/// A thread of a new process with `mm`, the console on fds 0–2, `/` as its directory, no
/// parent.
fn new_process(mm: mm::Mm) -> Result<Arc<Thread>, Errno> {
    let mut files = FdTable::default();
    let console = crate::fs::vfs::lookup(&crate::fs::vfs::root(), "/dev/console", true)?;
    let kind = crate::fs::file::open_kind(&console, crate::fs::file::O_RDWR)?;
    let f = crate::fs::file::OpenFile::new(kind, crate::fs::file::O_RDWR);
    for _ in 0..3 {
        files.install(f.clone(), false, crate::fs::file::NOFILE)?;
    }
    let process = Arc::new(Process {
        rlimits: Arc::new(Mutex::new(crate::syscall::process::default_limits())),
        oom_score_adj: AtomicI32::new(0),
        family: Arc::new(Family::default()),
        parent: None,
        sigqueue: IrqLock::new(Vec::new()),
        creds: Mutex::new(Creds::default()),
        live: AtomicU32::new(1),
        all_gone: WaitQueue::new(),
        exit_code: AtomicI32::new(0),
        stopped: AtomicU32::new(0),
        stop_reported: AtomicBool::new(false),
    });
    crate::sched::current().process.group.ignored.store(default_ignored(), Ordering::Relaxed);
    Ok(Arc::new(Thread {
        process,
        mm: SpinLock::new(Some(MmRef::new(mm))),
        files: SpinLock::new(Some(Arc::new(Mutex::new(files)))),
        fs: Arc::new(FsInfo { cwd: Mutex::new(crate::fs::vfs::root()), umask: AtomicU32::new(0o022) }),
        sighand: Arc::new(Mutex::new([SigAction::default(); 65])),
        clear_child_tid: AtomicU64::new(0),
        robust_list: AtomicU64::new(0),
        futex_exited: AtomicBool::new(false),
        altstack: SpinLock::new(AltStack { sp: 0, flags: SS_DISABLE, size: 0 }),
        sigqueue: IrqLock::new(Vec::new()),
        saved_mask: SpinLock::new(None),
        restart: SpinLock::new(None),
        vfork_done: None,
    }))
}

/// Starts `path` as a process the kernel owns with `argv` (Linux's default environment for
/// init), waits for it, and returns its status as a shell reports it: the exit status, or 128 +
/// the signal that killed it.
pub fn spawn(path: &str, argv: Vec<String>) -> Result<i32, Errno> {
    spawn_as(path, argv, false, false)
}

/// [`spawn`] in a new session (`setsid` first: its own process group and, in session
/// autogroup mode, its own autogroup), as the first process of a boot (`sh=`, the console's
/// `/bin/sh`).
pub fn spawn_session(path: &str, argv: Vec<String>) -> Result<i32, Errno> {
    spawn_as(path, argv, true, false)
}

/// [`spawn_session`] with the console as the session's controlling terminal and the process
/// in its foreground (the interactive shell `make run` starts, as a `getty` login would: job
/// control works, ^C reaches the foreground job).
pub fn spawn_console_session(path: &str, argv: Vec<String>) -> Result<i32, Errno> {
    spawn_as(path, argv, true, true)
}

fn spawn_as(path: &str, argv: Vec<String>, session: bool, ctty: bool) -> Result<i32, Errno> {
    let path = String::from(path);
    let load_error = Arc::new(Mutex::new(None::<Errno>));
    let err_slot = load_error.clone();
    let name: String = path.rsplit('/').next().unwrap_or("a.out").chars().take(15).collect();
    let handle = crate::sched::spawn_result(SpawnOptions::new(&name), move || {
        // The whole life of a process defers fatal signals at interrupt exit (module doc).
        let _defer = crate::sched::signal::DeferFatal::new();
        if session {
            let _ = crate::tty::setsid();
        }
        if ctty {
            let _ = crate::tty::set_controlling(crate::tty::CONSOLE, false);
        }
        let argv_bytes: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let envp: [&[u8]; 3] = [b"HOME=/", b"PATH=/sbin:/usr/sbin:/bin:/usr/bin", b"TERM=linux"];
        let loaded = match exec::load(&crate::fs::vfs::root(), &path, &argv_bytes, &envp) {
            Ok(l) => l,
            Err(e) => {
                *err_slot.lock_uninterruptible() = Some(e);
                return -1;
            }
        };
        run_loaded(loaded.mm, UserContext::new(loaded.entry, loaded.sp))
    })
    .map_err(|_| Errno::EAGAIN)?;
    let status = handle.join().map_err(|_| Errno::ECHILD)?;
    if let Some(e) = *load_error.lock_uninterruptible() {
        return Err(e);
    }
    Ok(status)
}

/// `clone` flags.
pub mod flags {
    /// The exit signal's bits.
    pub const CSIGNAL: u64 = 0xff;
    /// Share the memory.
    pub const CLONE_VM: u64 = 0x100;
    /// Share the directory and umask.
    pub const CLONE_FS: u64 = 0x200;
    /// Share the fd table.
    pub const CLONE_FILES: u64 = 0x400;
    /// Share the dispositions.
    pub const CLONE_SIGHAND: u64 = 0x800;
    /// A pidfd of the child, stored at `CloneArgs::pidfd` (legacy `clone`: `parent_tid`).
    pub const CLONE_PIDFD: u64 = 0x1000;
    /// Traced (ignored: no ptrace).
    pub const CLONE_PTRACE: u64 = 0x2000;
    /// The parent waits until the child execs or ends.
    pub const CLONE_VFORK: u64 = 0x4000;
    /// The child's parent is the caller's parent.
    pub const CLONE_PARENT: u64 = 0x8000;
    /// A thread of the caller's process.
    pub const CLONE_THREAD: u64 = 0x1_0000;
    /// A new mount namespace.
    pub const CLONE_NEWNS: u64 = 0x2_0000;
    /// Share System V semaphore undo lists (accepted: Cadence has no SysV semaphores).
    pub const CLONE_SYSVSEM: u64 = 0x4_0000;
    /// Set the child's TLS (FS base).
    pub const CLONE_SETTLS: u64 = 0x8_0000;
    /// Store the child's tid at `parent_tid` in the parent's memory.
    pub const CLONE_PARENT_SETTID: u64 = 0x10_0000;
    /// Clear (and futex-wake) `child_tid` at the child's end.
    pub const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
    /// Ignored by Linux.
    pub const CLONE_DETACHED: u64 = 0x40_0000;
    /// Ignored (no ptrace).
    pub const CLONE_UNTRACED: u64 = 0x80_0000;
    /// Store the child's tid at `child_tid` in the child's memory.
    pub const CLONE_CHILD_SETTID: u64 = 0x100_0000;
    /// Namespaces and cgroups (not supported: a Linux built without them answers EINVAL).
    pub const NAMESPACES: u64 = 0x0200_0000 | 0x0400_0000 | 0x0800_0000 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000 | CLONE_NEWNS;
    /// `CLONE_IO` (accepted).
    pub const CLONE_IO: u64 = 0x8000_0000;
}

/// What `clone` asks.
#[derive(Clone, Copy, Default, Debug)]
pub struct CloneArgs {
    /// `CLONE_*` and the exit signal.
    pub flags: u64,
    /// The child's stack pointer (0: the caller's).
    pub stack: u64,
    /// CLONE_PARENT_SETTID's address.
    pub parent_tid: u64,
    /// CLONE_CHILD_SETTID / CLEARTID's address.
    pub child_tid: u64,
    /// CLONE_SETTLS's FS base.
    pub tls: u64,
    /// Where CLONE_PIDFD stores the pidfd (an `int`; legacy `clone` passes `parent_tid`).
    pub pidfd: u64,
}

/// `clone` (and `fork`, `vfork`): a new thread of the caller's process (CLONE_THREAD) or a
/// new process, sharing what the flags say and copying the rest (memory copy-on-write),
/// resuming at the caller's registers with RAX = 0 (RSP = `stack` if non-zero), its FPU state
/// and FS base (or CLONE_SETTLS's). Returns the child's tid. CLONE_PIDFD makes a pidfd of the
/// child in the caller's table (close-on-exec) and stores it at `args.pidfd` before the child
/// runs (EFAULT there undoes the clone, as Linux's `copy_process`; EMFILE without a free fd).
/// EINVAL for inconsistent or unsupported flags (namespaces, CLONE_PARENT; CLONE_PIDFD with
/// CLONE_THREAD or CLONE_DETACHED, or with CLONE_PARENT_SETTID at the same address), EAGAIN at
/// `threads-max` or RLIMIT_NPROC, ENOMEM when the memory for the task (its stack, its page
/// tables) runs out.
pub fn clone(parent: &Thread, ctx: &UserContext, args: CloneArgs) -> Result<Tid, Errno> {
    use flags::*;
    let f = args.flags;
    if f & (CLONE_THREAD | CLONE_SIGHAND) != 0 && f & CLONE_SIGHAND == 0
        || f & CLONE_SIGHAND != 0 && f & CLONE_VM == 0
        || f & CLONE_PARENT != 0
        || f & CLONE_PIDFD != 0
            && (f & (CLONE_THREAD | CLONE_DETACHED) != 0 || f & CLONE_PARENT_SETTID != 0 && args.pidfd == args.parent_tid)
    {
        return Err(Errno::EINVAL);
    }
    let thread = f & CLONE_THREAD != 0;
    if f & NAMESPACES != 0 {
        return Err(Errno::EINVAL);
    }
    if (f & CSIGNAL) > 64 {
        return Err(Errno::EINVAL);
    }
    if f & CLONE_SETTLS != 0 && args.tls >= crate::mm::vm::USER_END {
        return Err(Errno::EPERM);
    }
    let me = crate::sched::current();
    // Room in the kernel heap for the copies (the fd table, the VMA tree; the task, its stack
    // and the rest fit the headroom), before any is made: ENOMEM, or the OOM killer's turn,
    // when memory has run out, as Linux's fork (`copy_process`) fails or kills.
    let mut copies = 0;
    if f & CLONE_VM == 0 {
        copies += parent.mm().lock_uninterruptible().fork_heap_bytes();
    }
    if f & CLONE_FILES == 0 {
        copies += parent.files().lock_uninterruptible().clone_bytes();
    }
    oom::kernel_room(parent, copies)?;
    let mm = if f & CLONE_VM != 0 { parent.mm_ref() } else { MmRef::new(parent.mm().lock_uninterruptible().fork()?) };
    let files =
        if f & CLONE_FILES != 0 { parent.files() } else { Arc::new(Mutex::new(parent.files().lock_uninterruptible().try_clone()?)) };
    let fs = if f & CLONE_FS != 0 {
        parent.fs.clone()
    } else {
        Arc::new(FsInfo {
            cwd: Mutex::new(parent.fs.cwd.lock_uninterruptible().clone()),
            umask: AtomicU32::new(parent.fs.umask.load(Ordering::Relaxed)),
        })
    };
    let sighand =
        if f & CLONE_SIGHAND != 0 { parent.sighand.clone() } else { Arc::new(Mutex::new(*parent.sighand.lock_uninterruptible())) };
    let record = (!thread).then(|| {
        Arc::new(ChildRecord {
            pid: AtomicU32::new(0),
            group: spin::Once::new(),
            state: IrqLock::new(ChildState::default()),
            clone_child: (f & CSIGNAL) as u32 != crate::sched::signal::SIGCHLD,
            reaped: AtomicBool::new(false),
        })
    });
    let process = if thread {
        parent.process.live.fetch_add(1, Ordering::AcqRel);
        parent.process.clone()
    } else {
        Arc::new(Process {
            rlimits: Arc::new(Mutex::new(*parent.process.rlimits.lock_uninterruptible())),
            oom_score_adj: AtomicI32::new(parent.process.oom_score_adj.load(Ordering::Relaxed)),
            family: Arc::new(Family::default()),
            parent: Some(ParentLink {
                pid: me.process.tgid,
                family: parent.process.family.clone(),
                record: record.clone().expect("a process has a record"),
                sighand: Arc::downgrade(&parent.sighand),
                exit_signal: (f & CSIGNAL) as u32,
            }),
            sigqueue: IrqLock::new(Vec::new()),
            creds: Mutex::new(parent.process.creds.lock_uninterruptible().clone()),
            live: AtomicU32::new(1),
            all_gone: WaitQueue::new(),
            exit_code: AtomicI32::new(0),
            stopped: AtomicU32::new(0),
            stop_reported: AtomicBool::new(false),
        })
    };
    let vfork_done = (f & CLONE_VFORK != 0).then(|| Arc::new(Completion::default()));
    // A thread with a stack of its own has no alternate stack (Linux: CLONE_VM without vfork).
    let altstack =
        if f & CLONE_VM != 0 && f & CLONE_VFORK == 0 { AltStack { sp: 0, flags: SS_DISABLE, size: 0 } } else { *parent.altstack.lock() };
    let child = Arc::new(Thread {
        process: process.clone(),
        mm: SpinLock::new(Some(mm.clone())),
        files: SpinLock::new(Some(files)),
        fs,
        sighand,
        clear_child_tid: AtomicU64::new(if f & CLONE_CHILD_CLEARTID != 0 { args.child_tid } else { 0 }),
        robust_list: AtomicU64::new(0),
        futex_exited: AtomicBool::new(false),
        altstack: SpinLock::new(altstack),
        sigqueue: IrqLock::new(Vec::new()),
        saved_mask: SpinLock::new(None),
        restart: SpinLock::new(None),
        vfork_done: vfork_done.clone(),
    });
    let mut regs = *ctx;
    regs.regs.rax = 0;
    if args.stack != 0 {
        regs.regs.rsp = args.stack;
    }
    let fx = user::fpu_snapshot();
    let fs_base = if f & CLONE_SETTLS != 0 { args.tls } else { user::fs_base() };
    let blocked = me.process.signals.blocked.load(Ordering::Relaxed);
    let ignored = me.process.group.ignored.load(Ordering::Relaxed);
    // The child's tid is known before it exists, so that CLONE_PARENT_SETTID is written
    // before the child can run (and, with shared memory, end and clear it: `pthread_join`
    // reads it as soon as `pthread_create` returns), as Linux does. A bad address is not an
    // error of clone's.
    let tid = crate::sched::task::reserve_tid();
    // The pidfd before the child exists: a bad address fails the clone with nothing made.
    let pidfd = if f & CLONE_PIDFD != 0 {
        let (p, fd) = crate::syscall::pidfd::install_for_clone(parent, tid)?;
        if parent.write_user(args.pidfd, &(fd as i32).to_le_bytes()).is_err() {
            crate::syscall::pidfd::uninstall_for_clone(parent, &p, fd);
            return Err(Errno::EFAULT);
        }
        Some((p, fd))
    } else {
        None
    };
    let child_pidfd = pidfd.as_ref().map(|(p, _)| p.clone());
    if f & CLONE_PARENT_SETTID != 0 {
        let _ = parent.write_user(args.parent_tid, &tid.to_le_bytes());
    }
    let child_settid = (f & CLONE_CHILD_SETTID != 0).then_some(args.child_tid);
    if let Some(r) = &record {
        // Listed before the child can end, so an end never misses its record.
        parent.process.family.children.lock_uninterruptible().push(r.clone());
    }
    // The child starts with the parent's comm (Linux copies `task->comm` at fork).
    let name: String = me.comm_string();
    let mut opts = SpawnOptions::new(&name).detached().user(child.clone()).with_tid(tid);
    if thread {
        opts = opts.thread();
    }
    let body_thread = child.clone();
    let charged = charge(parent, tid, (!thread).then_some(&process));
    let task = charged.and_then(|()| {
        crate::sched::spawn(opts, move || {
            let _defer = crate::sched::signal::DeferFatal::new();
            let me = crate::sched::current();
            me.process.signals.blocked.store(blocked, Ordering::Relaxed);
            if !thread {
                if let Some(r) = &body_thread.process.parent {
                    r.record.pid.store(me.tid, Ordering::Release);
                    r.record.group.call_once(|| me.process.group.clone());
                }
                if let Some(p) = &child_pidfd {
                    p.set_group(&me.process.group);
                }
                me.process.group.ignored.store(ignored, Ordering::Relaxed);
            }
            me.task_context().enable_user();
            user::set_fpu(&fx);
            let _ = user::set_fs_base(fs_base);
            if let Some(at) = child_settid {
                let _ = body_thread.write_user(at, &me.tid.to_le_bytes());
            }
            run_thread(body_thread, regs)
        })
        // Linux's copy_process: no memory for the task (its stack) is ENOMEM; a deadline
        // parent's child (`sched_fork`) and anything else EAGAIN.
        .map_err(|e| if e == crate::sched::SpawnError::NoMemory { Errno::ENOMEM } else { Errno::EAGAIN })
    });
    if charged.is_ok() {
        // In the table now (or failed): no longer in flight.
        FORKS_IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
    }
    let task = match task {
        Ok(t) => t,
        Err(e) => {
            if thread {
                parent.process.live.fetch_sub(1, Ordering::AcqRel);
            }
            if let Some(r) = &record {
                parent.process.family.children.lock_uninterruptible().retain(|c| !Arc::ptr_eq(c, r));
                LIMITS.lock_uninterruptible().remove(&tid);
            }
            if let Some((p, fd)) = &pidfd {
                crate::syscall::pidfd::uninstall_for_clone(parent, p, *fd);
            }
            return Err(e);
        }
    };
    if let Some(r) = record {
        r.pid.store(task.tid, Ordering::Release);
        r.group.call_once(|| task.process.group.clone());
    }
    if let Some((p, _)) = &pidfd {
        p.set_group(&task.process.group);
    }
    if let Some(v) = vfork_done {
        v.wait_killable();
    }
    Ok(task.tid)
}

#[cfg(test)]
mod tests;
