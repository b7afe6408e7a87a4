//! User processes: a kernel task that runs a user thread through `framework::user`
//! ([`run_loaded`]), with its memory ([`mm`]) loaded from an ELF file ([`exec`]), its open
//! files, working directory and children ([`Process`]), and its system calls dispatched by
//! `crate::syscall`.
//!
//! **Life.** The first process is started by the kernel ([`spawn`]: the shell's `exec`, the
//! `sh=` boot option); the rest by `fork` ([`fork`]), which copies the address space
//! copy-on-write and the fd table. A process ends by `exit`, or by a fatal signal, which the run
//! loop takes on its way back to user mode ([`user_event_pending`] brings a thread back from
//! user mode for it): the whole life of a process runs in a `DeferFatal` section, so nothing ends
//! the task in place, and its memory and files are freed as it returns. Its parent learns its
//! wait status through their shared [`Family`] (`wait4`).
//!
//! **Signals, so far.** Dispositions are recorded (`rt_sigaction`), blocked masks kept
//! (`rt_sigprocmask`); a signal whose default action terminates ends the process unless it is
//! ignored or blocked (SIGKILL always ends it). Handlers are not run yet (user space II).

pub mod exec;
pub mod mm;

use crate::fs::file::FdTable;
use crate::fs::vfs::Inode;
use crate::sched::task::{SpawnOptions, Tid};
use crate::sched::wait::{Mutex, WaitQueue};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use framework::task::Switchable;
use framework::user::{self, FxArea, ReturnReason, UserContext};

/// One signal's disposition as `rt_sigaction` stores it (handler, flags, restorer, mask).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    /// `SIG_DFL` (0), `SIG_IGN` (1) or a handler's address.
    pub handler: u64,
    /// `SA_*`.
    pub flags: u64,
    /// `sa_restorer`.
    pub restorer: u64,
    /// `sa_mask`.
    pub mask: u64,
}

/// `SIG_IGN`.
pub const SIG_IGN: u64 = 1;

/// A child as its parent's `wait4` sees it.
pub struct ChildRecord {
    /// Its pid.
    pub pid: AtomicU32,
    /// Its process group (for `wait4(-pgid)` and `wait4(0)`).
    pub pgid: AtomicU32,
    /// Its wait status once it ended (Linux's encoding: `code << 8`, or the signal).
    pub status: crate::sync::IrqLock<Option<i32>>,
}

/// A process's children and the queue its `wait4` sleeps on.
pub struct Family {
    /// Children not yet reaped.
    pub children: Mutex<Vec<Arc<ChildRecord>>>,
    /// Woken when a child ends.
    pub exited: WaitQueue,
}

impl Default for Family {
    fn default() -> Self {
        Family { children: Mutex::new(Vec::new()), exited: WaitQueue::new() }
    }
}

/// A process (one thread today).
pub struct Process {
    /// Its memory.
    pub mm: Mutex<mm::Mm>,
    /// Its open files.
    pub files: Mutex<FdTable>,
    /// Its working directory.
    pub cwd: Mutex<Arc<Inode>>,
    /// `umask`.
    pub umask: AtomicU32,
    /// `set_tid_address`'s pointer (cleared and woken at exit, once threads exist).
    pub clear_child_tid: AtomicU64,
    /// Resource limits (soft, hard) by resource (RLIMIT_RTTIME lives in the task's watchdog);
    /// shared with [`limits_of`]'s registry, so `prlimit(pid)` reaches another process's.
    pub rlimits: Limits,
    /// `prctl(PR_SET_NAME)`'s name (NUL-padded).
    pub comm: Mutex<[u8; 16]>,
    /// Signal dispositions, by signal number (0 unused).
    pub sigactions: Mutex<[SigAction; 65]>,
    /// Its children.
    pub family: Arc<Family>,
    /// Its own entry in its parent's family (None for a process the kernel started).
    pub record: Option<(Arc<Family>, Arc<ChildRecord>)>,
}

impl Process {
    /// A process with `mm`, the console on fds 0–2, `/` as its directory, no parent.
    pub fn new(mm: mm::Mm) -> Result<Process, Errno> {
        let mut files = FdTable::default();
        let console = crate::fs::vfs::lookup(&crate::fs::vfs::root(), "/dev/console", true)?;
        let kind = crate::fs::file::open_kind(&console, crate::fs::file::O_RDWR)?;
        let f = crate::fs::file::OpenFile::new(kind, crate::fs::file::O_RDWR);
        for _ in 0..3 {
            files.install(f.clone(), false)?;
        }
        Ok(Process {
            mm: Mutex::new(mm),
            files: Mutex::new(files),
            cwd: Mutex::new(crate::fs::vfs::root()),
            umask: AtomicU32::new(0o022),
            clear_child_tid: AtomicU64::new(0),
            rlimits: Arc::new(Mutex::new(crate::syscall::process::default_limits())),
            comm: Mutex::new([0; 16]),
            sigactions: Mutex::new([SigAction::default(); 65]),
            family: Arc::new(Family::default()),
            record: None,
        })
    }
}

/// A process's resource limits, shared with the registry.
pub type Limits = Arc<Mutex<[(u64, u64); 16]>>;

/// Every live process's limits, by pid (`prlimit` of another process).
static LIMITS: Mutex<alloc::collections::BTreeMap<Tid, Limits>> = Mutex::new(alloc::collections::BTreeMap::new());

/// The limits of live process `pid`.
pub fn limits_of(pid: Tid) -> Option<Limits> {
    LIMITS.lock_uninterruptible().get(&pid).cloned()
}

/// How a thread's run ended.
enum Exit {
    /// `exit` / `exit_group` with this status.
    Status(i32),
    /// Killed by this signal.
    Signal(i32),
}

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

/// Signals whose default action ends the process (Linux's `SIG_KERNEL_*` tables: terminate and
/// core; not SIGCHLD, SIGCONT, SIGURG, SIGWINCH, nor the stop signals).
pub const DEFAULT_FATAL: u64 = {
    let mut m = 0u64;
    let mut s = 1;
    while s < 64 {
        if crate::sched::signal::default_terminates(s) {
            m |= 1 << s;
        }
        s += 1;
    }
    m
};

/// The signal a user exception raises (Linux `arch/x86/kernel/traps.c`).
fn signal_of(vector: u8) -> i32 {
    match vector {
        0 | 16 | 19 => SIGFPE,
        1 | 3 => SIGTRAP,
        6 => SIGILL,
        17 => SIGBUS,
        _ => SIGSEGV,
    }
}

/// Signals of the calling task that end it now: pending, not blocked (SIGKILL always),
/// not ignored, fatal by default.
fn deadly_pending(sig: &crate::sched::process::SignalState) -> u64 {
    let p = sig.pending.load(Ordering::Acquire);
    let blocked = sig.blocked.load(Ordering::Relaxed) & !(1 << SIGKILL);
    p & !blocked & !sig.ignored.load(Ordering::Relaxed) & DEFAULT_FATAL
}

/// Has the running task a signal pending that ends it? The framework asks after an interrupt
/// in user mode (interrupts off), whether the thread should come back to the kernel; `pause`
/// asks in task context.
pub fn user_event_pending() -> bool {
    crate::sched::signal::with_current(|t| deadly_pending(&t.process.signals) != 0).unwrap_or(false)
}

/// The signal that ends the calling process now, if any (ignored ones pending are dropped).
fn fatal_signal() -> Option<i32> {
    let me = crate::sched::current();
    let s = &me.process.signals;
    let ign = s.ignored.load(Ordering::Relaxed) & !(1 << SIGKILL);
    s.pending.fetch_and(!ign, Ordering::AcqRel);
    let d = deadly_pending(s);
    (d != 0).then(|| if d & (1 << SIGKILL) != 0 { SIGKILL } else { d.trailing_zeros() as i32 })
}

/// Sends `sig` to the calling process (a broken pipe's SIGPIPE, a fault's signal).
pub fn signal_self(sig: i32) {
    let me = crate::sched::current();
    crate::sched::signal::send(&me, sig as u32);
}

/// Runs the thread until it exits.
fn user_loop(proc: &Process, mut ctx: UserContext) -> Exit {
    loop {
        if let Some(sig) = fatal_signal() {
            return Exit::Signal(sig);
        }
        match user::execute(&mut ctx) {
            ReturnReason::Syscall => {
                if let Some(status) = crate::syscall::dispatch(proc, &mut ctx) {
                    return Exit::Status(status);
                }
            }
            ReturnReason::Exception(e) if e.vector == 14 => {
                let write = e.error & 2 != 0;
                let fixed = proc.mm.lock_uninterruptible().fault(e.addr, write);
                if let Err(err) = fixed {
                    let sig = if err == Errno::ENOMEM { SIGBUS } else { SIGSEGV };
                    crate::kprintln!(
                        "cadence: pid {}: {} at {:#x} (rip {:#x}, {})",
                        crate::sched::current().tid,
                        signal_name(sig),
                        e.addr,
                        ctx.regs.rip,
                        if write { "write" } else { "read" }
                    );
                    return Exit::Signal(sig);
                }
            }
            ReturnReason::Exception(e) => {
                let sig = signal_of(e.vector);
                crate::kprintln!(
                    "cadence: pid {}: {} (vector {}, rip {:#x})",
                    crate::sched::current().tid,
                    signal_name(sig),
                    e.vector,
                    ctx.regs.rip
                );
                return Exit::Signal(sig);
            }
            ReturnReason::Interrupted => {}
        }
    }
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
        SIGSEGV => "Segmentation fault",
        SIGPIPE => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        _ => "Killed by a signal",
    }
}

/// Runs `proc` with `ctx` in the calling task (which becomes its thread) until it ends; its
/// wait status as a shell reports it (the exit status, or 128 + the signal that killed it). The
/// caller holds a `DeferFatal` for the task's life (module doc).
fn run_process(proc: Process, ctx: UserContext) -> i32 {
    let me = crate::sched::current();
    me.task_context().enable_user();
    me.task_context().set_vm_space(Some(proc.mm.lock_uninterruptible().space.clone()));
    LIMITS.lock_uninterruptible().insert(me.tid, proc.rlimits.clone());
    let exit = user_loop(&proc, ctx);
    LIMITS.lock_uninterruptible().remove(&me.tid);
    // The space goes before the process's memory: no CPU has it loaded when it is freed.
    me.task_context().set_vm_space(None);
    let (shell_status, wait_status) = match exit {
        Exit::Status(s) => (s & 0xff, (s & 0xff) << 8),
        Exit::Signal(sig) => (128 + sig, sig),
    };
    // Files first (a pipe's last writer closing gives its reader EOF), then the memory; then
    // the parent hears of it.
    let files = proc.files.lock_uninterruptible().take_all();
    drop(files);
    let record = proc.record.clone();
    drop(proc);
    me.process.exited.store(true, Ordering::Release);
    if let Some((parent, rec)) = record {
        *rec.status.lock() = Some(wait_status);
        parent.exited.wake_all();
    }
    shell_status
}

/// [`run_process`] for a freshly loaded program without a parent process (the kernel's).
pub fn run_loaded(mm: mm::Mm, ctx: UserContext) -> i32 {
    match Process::new(mm) {
        Ok(p) => run_process(p, ctx),
        Err(e) => 128 + e.code(),
    }
}

/// Starts `path` as a process the kernel owns with `argv` (Linux's default environment for
/// init), waits for it, and returns its status as a shell reports it: the exit status, or 128 +
/// the signal that killed it.
pub fn spawn(path: &str, argv: Vec<String>) -> Result<i32, Errno> {
    spawn_as(path, argv, false)
}

/// [`spawn`] in a new session (`setsid` first: its own process group and, in session
/// autogroup mode, its own autogroup), as the first process of a boot (`sh=`, the console's
/// `/bin/sh`).
pub fn spawn_session(path: &str, argv: Vec<String>) -> Result<i32, Errno> {
    spawn_as(path, argv, true)
}

fn spawn_as(path: &str, argv: Vec<String>, session: bool) -> Result<i32, Errno> {
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

/// What `clone` flags ask the child to do with its tid.
#[derive(Clone, Copy, Default)]
pub struct TidRequests {
    /// CLONE_CHILD_SETTID: store the tid here in the child's memory.
    pub child_settid: Option<u64>,
    /// CLONE_CHILD_CLEARTID: the child's `clear_child_tid`.
    pub child_cleartid: Option<u64>,
}

/// `fork`: a child process with a copy-on-write copy of the caller's memory, a copy of its fd
/// table (sharing the open files), its directory, umask, dispositions and mask, resuming at
/// the caller's registers with RAX = 0 (and RSP = `stack` if non-zero). Returns the child's
/// pid.
pub fn fork(parent: &Process, ctx: &UserContext, stack: u64, tids: TidRequests) -> Result<Tid, Errno> {
    let mm = parent.mm.lock_uninterruptible().fork()?;
    let files = parent.files.lock_uninterruptible().clone();
    let cwd = parent.cwd.lock_uninterruptible().clone();
    let sigactions = *parent.sigactions.lock_uninterruptible();
    let me = crate::sched::current();
    let (blocked, ignored) = (me.process.signals.blocked.load(Ordering::Relaxed), me.process.signals.ignored.load(Ordering::Relaxed));
    let record = Arc::new(ChildRecord {
        pid: AtomicU32::new(0),
        pgid: AtomicU32::new(me.process.pgid.load(Ordering::Relaxed)),
        status: crate::sync::IrqLock::new(None),
    });
    let child = Process {
        mm: Mutex::new(mm),
        files: Mutex::new(files),
        cwd: Mutex::new(cwd),
        umask: AtomicU32::new(parent.umask.load(Ordering::Relaxed)),
        clear_child_tid: AtomicU64::new(tids.child_cleartid.unwrap_or(0)),
        rlimits: Arc::new(Mutex::new(*parent.rlimits.lock_uninterruptible())),
        comm: Mutex::new(*parent.comm.lock_uninterruptible()),
        sigactions: Mutex::new(sigactions),
        family: Arc::new(Family::default()),
        record: Some((parent.family.clone(), record.clone())),
    };
    let mut regs = *ctx;
    regs.regs.rax = 0;
    if stack != 0 {
        regs.regs.rsp = stack;
    }
    let fx: FxArea = user::fpu_snapshot();
    let fs = user::fs_base();
    let rec = record.clone();
    let name: String = me.name.clone();
    let task = crate::sched::spawn(SpawnOptions::new(&name).detached(), move || {
        let _defer = crate::sched::signal::DeferFatal::new();
        let me = crate::sched::current();
        rec.pid.store(me.tid, Ordering::Release);
        me.process.signals.blocked.store(blocked, Ordering::Relaxed);
        me.process.signals.ignored.store(ignored, Ordering::Relaxed);
        me.task_context().enable_user();
        user::set_fpu(&fx);
        let _ = user::set_fs_base(fs);
        if let Some(at) = tids.child_settid {
            let _ = child.mm.lock_uninterruptible().write(at, &me.tid.to_le_bytes());
        }
        run_process(child, regs)
    })
    .map_err(|_| Errno::EAGAIN)?;
    record.pid.store(task.tid, Ordering::Release);
    parent.family.children.lock_uninterruptible().push(record);
    Ok(task.tid)
}

#[cfg(test)]
mod tests;
