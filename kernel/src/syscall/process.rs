//! Process and identity system calls: exit, ids, `uname`, `arch_prctl`, `set_tid_address`,
//! `prlimit64`, `getrandom`, `rseq` (Linux `kernel/exit.c`, `kernel/sys.c`,
//! `arch/x86/kernel/process_64.c`).

use super::{ok, Outcome};
use crate::process::Process;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::task::Switchable;
use framework::user::{self, UserContext};

const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const RLIM_INFINITY: u64 = u64::MAX;

/// `exit(status)` and `exit_group(status)` (one thread: the same).
pub fn exit(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    Ok(Outcome::Exit((a[0] & 0xff) as i32))
}

/// `getpid()`: the thread group's id.
pub fn getpid(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().process.tgid))
}

/// `gettid()`.
pub fn gettid(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().tid))
}

/// `getppid()`.
pub fn getppid(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().parent))
}

/// `getuid`, `geteuid`, `getgid`, `getegid`: everyone is root.
pub fn getid(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(0)
}

/// `sched_yield()`.
pub fn sched_yield(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    crate::sched::api::sched_yield();
    ok(0)
}

/// `uname(buf)`: Linux's name and a 6.1 release (programs choose features by it), Cadence in
/// `version` (as gVisor does).
pub fn uname(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let fields: [&str; 6] = ["Linux", "cadence", "6.1.0-cadence", "#1 SMP PREEMPT_DYNAMIC Cadence", "x86_64", "(none)"];
    let mut buf = [0u8; 65 * 6];
    for (i, f) in fields.iter().enumerate() {
        buf[i * 65..i * 65 + f.len()].copy_from_slice(f.as_bytes());
    }
    proc.mm.lock_uninterruptible().write(a[0], &buf)?;
    ok(0)
}

/// `arch_prctl(code, addr)`: the FS base (TLS).
pub fn arch_prctl(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    match a[0] {
        ARCH_SET_FS => {
            user::set_fs_base(a[1]).map_err(|_| Errno::EPERM)?;
            ok(0)
        }
        ARCH_GET_FS => {
            proc.mm.lock_uninterruptible().write(a[1], &user::fs_base().to_le_bytes())?;
            ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `set_tid_address(tidptr)`: returns the caller's tid.
pub fn set_tid_address(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    proc.clear_child_tid.store(a[0], Ordering::Release);
    ok(u64::from(crate::sched::current().tid))
}

/// `set_robust_list(head, len)`: EINVAL unless `len` is the x86_64 header's 24 bytes.
pub fn set_robust_list(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] != 24 {
        return Err(Errno::EINVAL);
    }
    ok(0)
}

/// `rseq(...)`: ENOSYS, deliberately: glibc then leaves `sched_getcpu` to the system call,
/// where a fake success would give it stale CPU numbers (see `../shared/notes/linux-abi.md`).
pub fn rseq(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    Err(Errno::ENOSYS)
}

/// Linux's default limits (soft, hard) by resource number, as a root shell sees them.
fn default_limit(resource: u64) -> Option<(u64, u64)> {
    Some(match resource {
        0 | 1 | 4 | 5 | 9 | 10 | 15 => (RLIM_INFINITY, RLIM_INFINITY), // CPU FSIZE CORE(0 below) RSS AS LOCKS RTTIME
        2 => (RLIM_INFINITY, RLIM_INFINITY),                           // DATA
        3 => (8 << 20, RLIM_INFINITY),                                 // STACK
        6 => (63_704, 63_704),                                         // NPROC
        7 => (1024, 1_048_576),                                        // NOFILE
        8 => (8 << 20, 8 << 20),                                       // MEMLOCK
        11 => (63_704, 63_704),                                        // SIGPENDING
        12 => (819_200, 819_200),                                      // MSGQUEUE
        13 | 14 => (0, 0),                                             // NICE RTPRIO
        _ => return None,
    })
}

/// `prlimit64(pid, resource, new, old)`: a process's limits (Linux's defaults at first, as a
/// root shell sees them; inherited across fork); RLIMIT_RTTIME of any task through the
/// scheduler's watchdog (`sched::rt_limits`). EINVAL for an unknown resource or soft > hard;
/// ESRCH for no such process. Limits are recorded; RTTIME is enforced, the others not yet.
pub fn prlimit64(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let me = crate::sched::current();
    let resource = a[1];
    default_limit(resource).ok_or(Errno::EINVAL)?;
    let new = if a[2] != 0 {
        let mut b = [0u8; 16];
        proc.mm.lock_uninterruptible().read(a[2], &mut b)?;
        let (soft, hard) = (u64::from_le_bytes(b[..8].try_into().expect("8")), u64::from_le_bytes(b[8..].try_into().expect("8")));
        if soft > hard {
            return Err(Errno::EINVAL);
        }
        Some((soft, hard))
    } else {
        None
    };
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let old = if resource == u64::from(crate::sched::rt_limits::RLIMIT_RTTIME) {
        crate::sched::rt_limits::prlimit(pid as u32, resource as u32, new)?
    } else {
        let target = if pid == 0 || pid as u32 == me.tid || pid as u32 == me.process.tgid {
            proc.rlimits.clone()
        } else {
            crate::process::limits_of(pid as u32).ok_or(Errno::ESRCH)?
        };
        let mut limits = target.lock_uninterruptible();
        let old = limits[resource as usize];
        if let Some(n) = new {
            limits[resource as usize] = n;
        }
        old
    };
    if a[3] != 0 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&old.0.to_le_bytes());
        buf[8..].copy_from_slice(&old.1.to_le_bytes());
        proc.mm.lock_uninterruptible().write(a[3], &buf)?;
    }
    ok(0)
}

/// Linux's default limits of a root shell: (soft, hard) by resource, for a new process.
pub fn default_limits() -> [(u64, u64); 16] {
    core::array::from_fn(|r| {
        let (soft, hard) = default_limit(r as u64).expect("0..16 are Linux's resources");
        (if r == 4 { 0 } else { soft }, hard)
    })
}

/// `getrandom(buf, len, flags)`.
pub fn getrandom(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const GRND_NONBLOCK: u64 = 1;
    const GRND_RANDOM: u64 = 2;
    const GRND_INSECURE: u64 = 4;
    if a[2] & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0 || a[2] & (GRND_RANDOM | GRND_INSECURE) == (GRND_RANDOM | GRND_INSECURE) {
        return Err(Errno::EINVAL);
    }
    let len = a[1].min(256) as usize;
    let mut x = crate::arch::tsc::rdtsc() | 1;
    let bytes: alloc::vec::Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    proc.mm.lock_uninterruptible().write(a[0], &bytes)?;
    ok(len as u64)
}

const CLONE_VM: u64 = 0x100;
const CLONE_FS: u64 = 0x200;
const CLONE_FILES: u64 = 0x400;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_PARENT_SETTID: u64 = 0x0010_0000;
const CLONE_CHILD_CLEARTID: u64 = 0x0020_0000;
const CLONE_CHILD_SETTID: u64 = 0x0100_0000;
const CLONE_THREAD: u64 = 0x1_0000;
const CLONE_SETTLS: u64 = 0x8_0000;
const CSIGNAL: u64 = 0xff;

/// `clone(flags, newsp, parent_tid, child_tid, tls)` in its process form (what glibc's
/// `fork` and `vfork` call): the sharing flags (threads) are EINVAL until user space II.
pub fn clone(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let flags = a[0];
    let known = CSIGNAL
        | CLONE_VM
        | CLONE_FS
        | CLONE_FILES
        | CLONE_SIGHAND
        | CLONE_VFORK
        | CLONE_PARENT_SETTID
        | CLONE_CHILD_CLEARTID
        | CLONE_CHILD_SETTID
        | CLONE_THREAD
        | CLONE_SETTLS;
    if flags & !known != 0 || flags & (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SETTLS) != 0 {
        return Err(Errno::EINVAL);
    }
    let tids = crate::process::TidRequests {
        child_settid: (flags & CLONE_CHILD_SETTID != 0).then_some(a[3]),
        child_cleartid: (flags & CLONE_CHILD_CLEARTID != 0).then_some(a[3]),
    };
    let pid = crate::process::fork(proc, ctx, a[1], tids)?;
    if flags & CLONE_PARENT_SETTID != 0 {
        proc.mm.lock_uninterruptible().write(a[2], &pid.to_le_bytes())?;
    }
    ok(u64::from(pid))
}

/// `fork()`.
pub fn fork(proc: &Process, ctx: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::process::fork(proc, ctx, 0, Default::default())?))
}

/// `vfork()`: a fork (the parent does not wait for the child's `execve` or exit; the child has
/// its own copy of memory, which every correct vfork child tolerates).
pub fn vfork(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    fork(proc, ctx, a)
}

/// Reads a NULL-terminated array of string pointers (argv, envp): E2BIG past the limits.
fn string_array(proc: &Process, addr: u64) -> Result<Vec<Vec<u8>>, Errno> {
    let mut out = Vec::new();
    if addr == 0 {
        return Ok(out);
    }
    let mut total = 0;
    let mm = proc.mm.lock_uninterruptible();
    for i in 0.. {
        let mut p = [0u8; 8];
        mm.read(addr + 8 * i, &mut p)?;
        let p = u64::from_le_bytes(p);
        if p == 0 {
            break;
        }
        let s = mm.read_cstr(p, cadence_abi::stack::MAX_ARG_BYTES).map_err(|e| if e == Errno::ENAMETOOLONG { Errno::E2BIG } else { e })?;
        total += s.len() + 9;
        if total > cadence_abi::stack::MAX_ARG_BYTES {
            return Err(Errno::E2BIG);
        }
        out.push(s);
    }
    Ok(out)
}

/// `execve(path, argv, envp)`: the process's memory is replaced; its close-on-exec fds are
/// closed, handled signals reset to their default (ignored ones stay ignored), the FPU and the
/// FS base reset. On success nothing returns: the new program starts.
pub fn execve(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = {
        let bytes = proc.mm.lock_uninterruptible().read_cstr(a[0], crate::fs::vfs::PATH_MAX - 1)?;
        if bytes.is_empty() {
            return Err(Errno::ENOENT);
        }
        alloc::string::String::from_utf8(bytes).map_err(|_| Errno::ENOENT)?
    };
    let argv = string_array(proc, a[1])?;
    let envp = string_array(proc, a[2])?;
    let (argv_s, envp_s): (Vec<&[u8]>, Vec<&[u8]>) = (argv.iter().map(|v| &v[..]).collect(), envp.iter().map(|v| &v[..]).collect());
    let cwd = proc.cwd.lock_uninterruptible().clone();
    let loaded = crate::process::exec::load(&cwd, &path, &argv_s, &envp_s)?;
    // The point of no return.
    let me = crate::sched::current();
    me.task_context().set_vm_space(Some(loaded.mm.space.clone()));
    let old = core::mem::replace(&mut *proc.mm.lock_uninterruptible(), loaded.mm);
    drop(old);
    let closed = proc.files.lock_uninterruptible().take_cloexec();
    drop(closed);
    {
        let mut acts = proc.sigactions.lock_uninterruptible();
        for act in acts.iter_mut() {
            if act.handler > crate::process::SIG_IGN {
                *act = Default::default();
            }
        }
    }
    user::set_fpu(&user::FxArea::initial());
    let _ = user::set_fs_base(0);
    proc.clear_child_tid.store(0, Ordering::Relaxed);
    *ctx = UserContext::new(loaded.entry, loaded.sp);
    ok(0)
}

const WNOHANG: u64 = 1;
const WUNTRACED: u64 = 2;
const WCONTINUED: u64 = 8;
const WALL: u64 = 0x4000_0000;
const WCLONE: u64 = 0x8000_0000;
const WNOTHREAD: u64 = 0x2000_0000;

/// `wait4(pid, wstatus, options, rusage)`: -1 any child, > 0 that child, 0 / < -1 a process
/// group. ECHILD without a matching child; 0 with WNOHANG if none has ended; EINTR if a fatal
/// signal came. `rusage` is zeroed (not yet accounted).
pub fn wait4(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE | WNOTHREAD) != 0 {
        return Err(Errno::EINVAL);
    }
    let pid = a[0] as i32;
    let my_pgid = crate::sched::current().process.pgid.load(Ordering::Relaxed);
    let matches = |r: &crate::process::ChildRecord| -> bool {
        match pid {
            -1 => true,
            0 => r.pgid.load(Ordering::Relaxed) == my_pgid,
            p if p > 0 => r.pid.load(Ordering::Acquire) == p as u32,
            p => r.pgid.load(Ordering::Relaxed) == p.unsigned_abs(),
        }
    };
    let family = proc.family.clone();
    loop {
        let found = {
            let mut kids = family.children.lock_uninterruptible();
            if !kids.iter().any(|r| matches(r)) {
                return Err(Errno::ECHILD);
            }
            let done = kids.iter().position(|r| matches(r) && r.status.lock().is_some());
            done.map(|i| kids.remove(i))
        };
        if let Some(r) = found {
            let status = r.status.lock().expect("ended");
            if a[1] != 0 {
                proc.mm.lock_uninterruptible().write(a[1], &status.to_le_bytes())?;
            }
            if a[3] != 0 {
                proc.mm.lock_uninterruptible().write(a[3], &[0u8; 144])?;
            }
            return ok(u64::from(r.pid.load(Ordering::Acquire)));
        }
        if a[2] & WNOHANG != 0 {
            return ok(0);
        }
        family
            .exited
            .wait_until_interruptible(|| {
                family.children.try_lock().is_none_or(|k| k.iter().any(|r| matches(r) && r.status.lock().is_some()))
            })
            .map_err(|_| Errno::EINTR)?;
    }
}

/// `kill(pid, sig)`: > 0 that process, 0 the caller's process group, -1 every process but
/// init and the caller, < -1 process group -pid. EINVAL for a bad signal, ESRCH if nobody
/// matched.
pub fn kill(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (pid, sig) = (a[0] as i32, a[1]);
    if sig > 64 {
        return Err(Errno::EINVAL);
    }
    if pid > 0 {
        crate::sched::signal::kill(pid as u32, sig as u32)?;
        return ok(0);
    }
    let me = crate::sched::current();
    let target_pgid = match pid {
        0 => Some(me.process.pgid.load(Ordering::Relaxed)),
        -1 => None,
        p => Some(p.unsigned_abs()),
    };
    let mut hit = false;
    for t in crate::sched::task::all() {
        let in_group = target_pgid.is_none_or(|g| t.process.pgid.load(Ordering::Relaxed) == g);
        let skip = t.kthread || t.is_idle || t.process.exited.load(Ordering::Acquire) || (pid == -1 && (t.tid == 1 || t.tid == me.tid));
        if in_group && !skip && t.process.tgid == t.tid {
            hit = true;
            if sig != 0 {
                crate::sched::signal::send(&t, sig as u32);
            }
        }
    }
    if hit {
        ok(0)
    } else {
        Err(Errno::ESRCH)
    }
}

/// `tgkill(tgid, tid, sig)`.
pub fn tgkill(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 || a[2] > 64 {
        return Err(Errno::EINVAL);
    }
    let t = crate::sched::task::find(a[1] as u32).filter(|t| t.process.tgid == a[0] as u32).ok_or(Errno::ESRCH)?;
    crate::sched::signal::kill(t.tid, a[2] as u32)?;
    ok(0)
}

/// `tkill(tid, sig)`.
pub fn tkill(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] as i32 <= 0 || a[1] > 64 {
        return Err(Errno::EINVAL);
    }
    crate::sched::signal::kill(a[0] as u32, a[1] as u32)?;
    ok(0)
}

/// `setpgid(pid, pgid)`.
pub fn setpgid(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if (a[0] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    crate::tty::setpgid(a[0] as u32, a[1] as i32 as i64)?;
    ok(0)
}

/// `getpgid(pid)`.
pub fn getpgid(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if (a[0] as i32) < 0 {
        return Err(Errno::ESRCH);
    }
    ok(u64::from(crate::tty::getpgid(a[0] as u32)?))
}

/// `getpgrp()`.
pub fn getpgrp(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().process.pgid.load(Ordering::Relaxed)))
}

/// `setsid()`: a new session and process group (and, as in Linux, a new autogroup in session
/// mode).
pub fn setsid(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::tty::setsid()?))
}

/// `getsid(pid)`.
pub fn getsid(_: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if (a[0] as i32) < 0 {
        return Err(Errno::ESRCH);
    }
    ok(u64::from(crate::tty::getsid(a[0] as u32)?))
}

/// `rt_sigaction(sig, act, oact, sigsetsize)`: dispositions are kept (handlers are not run yet:
/// a handled signal acts as its default); SIG_IGN makes the signal discarded.
pub fn rt_sigaction(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let sig = a[0] as usize;
    if a[3] != 8 || !(1..=64).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    if a[1] != 0 && (sig == 9 || sig == 19) {
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let mut b = [0u8; 32];
        proc.mm.lock_uninterruptible().read(a[1], &mut b)?;
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8"));
        Some(crate::process::SigAction { handler: w(0), flags: w(1), restorer: w(2), mask: w(3) })
    } else {
        None
    };
    let old = {
        let mut acts = proc.sigactions.lock_uninterruptible();
        let old = acts[sig];
        if let Some(n) = new {
            acts[sig] = n;
        }
        old
    };
    if let Some(n) = new {
        let me = crate::sched::current();
        let bit = 1u64 << sig;
        if n.handler == crate::process::SIG_IGN {
            me.process.signals.ignored.fetch_or(bit, Ordering::Relaxed);
            me.process.signals.pending.fetch_and(!bit, Ordering::AcqRel);
        } else {
            me.process.signals.ignored.fetch_and(!bit, Ordering::Relaxed);
        }
    }
    if a[2] != 0 {
        let mut b = [0u8; 32];
        for (i, w) in [old.handler, old.flags, old.restorer, old.mask].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        proc.mm.lock_uninterruptible().write(a[2], &b)?;
    }
    ok(0)
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`: SIGKILL and SIGSTOP are never blocked.
pub fn rt_sigprocmask(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[3] != 8 {
        return Err(Errno::EINVAL);
    }
    let me = crate::sched::current();
    let blocked = &me.process.signals.blocked;
    let old = blocked.load(Ordering::Relaxed);
    if a[1] != 0 {
        let mut b = [0u8; 8];
        proc.mm.lock_uninterruptible().read(a[1], &mut b)?;
        // Signal n is bit n - 1 in the user's sigset; bit n here.
        let set = u64::from_le_bytes(b) << 1;
        let new = match a[0] {
            0 => old | set,
            1 => old & !set,
            2 => set,
            _ => return Err(Errno::EINVAL),
        };
        blocked.store(new & !((1 << 9) | (1 << 19)), Ordering::Relaxed);
    }
    if a[2] != 0 {
        proc.mm.lock_uninterruptible().write(a[2], &(old >> 1).to_le_bytes())?;
    }
    ok(0)
}

/// `sigaltstack(ss, old_ss)`: reported as disabled (SS_DISABLE); a new one is accepted (kept
/// nowhere until handlers run).
pub fn sigaltstack(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] != 0 {
        let mut b = [0u8; 24];
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        proc.mm.lock_uninterruptible().write(a[1], &b)?;
    }
    ok(0)
}

/// `prctl(option, ...)`: PR_SET_NAME / PR_GET_NAME (the name is kept per process, 15 bytes),
/// PR_SCHED_CORE (core-scheduling cookies: GET, CREATE, SHARE_TO, SHARE_FROM, as `sched::coresched`),
/// PR_GET_DUMPABLE / PR_SET_DUMPABLE; other options are EINVAL, as Linux answers an unknown one.
pub fn prctl(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const PR_SET_DUMPABLE: u64 = 4;
    const PR_GET_DUMPABLE: u64 = 3;
    const PR_SET_NAME: u64 = 15;
    const PR_GET_NAME: u64 = 16;
    const PR_SCHED_CORE: u64 = 62;
    const PR_SCHED_CORE_GET: u64 = 0;
    match a[0] {
        PR_SET_NAME => {
            let mut name = [0u8; 16];
            let bytes = proc.mm.lock_uninterruptible().read_cstr(a[1], 4096)?;
            let n = bytes.len().min(15);
            name[..n].copy_from_slice(&bytes[..n]);
            *proc.comm.lock_uninterruptible() = name;
            ok(0)
        }
        PR_GET_NAME => {
            let name = *proc.comm.lock_uninterruptible();
            proc.mm.lock_uninterruptible().write(a[1], &name)?;
            ok(0)
        }
        PR_SCHED_CORE => {
            // (cmd, pid, pidtype, uaddr); GET stores the cookie at uaddr (8 bytes, aligned).
            if a[1] == PR_SCHED_CORE_GET && (a[4] == 0 || !a[4].is_multiple_of(8)) {
                return Err(Errno::EFAULT);
            }
            let v = crate::sched::coresched::prctl(a[1], a[2], a[3], a[4])?;
            if a[1] == PR_SCHED_CORE_GET {
                proc.mm.lock_uninterruptible().write(a[4], &v.to_le_bytes())?;
            }
            ok(0)
        }
        PR_GET_DUMPABLE => ok(1),
        PR_SET_DUMPABLE if a[1] <= 1 => ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// Where `pause` and `rt_sigsuspend` sleep: nothing wakes the queue itself; a signal wakes the
/// sleeping task directly.
static PAUSED: crate::sched::wait::WaitQueue = crate::sched::wait::WaitQueue::new();

/// `pause()`: sleeps until a signal; a fatal one (the only kind taken so far) ends the process
/// on its way out, so EINTR is what the caller would see.
pub fn pause(_: &Process, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    let _ = PAUSED.wait_until_interruptible(crate::process::user_event_pending);
    Err(Errno::EINTR)
}

/// `rt_sigsuspend(mask, sigsetsize)`: `pause` with the mask replaced meanwhile.
pub fn rt_sigsuspend(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] != 8 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 8];
    proc.mm.lock_uninterruptible().read(a[0], &mut b)?;
    let me = crate::sched::current();
    let blocked = &me.process.signals.blocked;
    let old = blocked.swap((u64::from_le_bytes(b) << 1) & !((1 << 9) | (1 << 19)), Ordering::Relaxed);
    let _ = PAUSED.wait_until_interruptible(crate::process::user_event_pending);
    blocked.store(old, Ordering::Relaxed);
    Err(Errno::EINTR)
}

/// `getrlimit(resource, rlim)`: `prlimit64` on the caller.
pub fn getrlimit(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    prlimit64(proc, ctx, [0, a[0], 0, a[1], 0, 0])
}

/// `setrlimit(resource, rlim)`: `prlimit64` on the caller.
pub fn setrlimit(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] == 0 {
        return Err(Errno::EFAULT);
    }
    prlimit64(proc, ctx, [0, a[0], a[1], 0, 0, 0])
}

/// `sysinfo(info)`: uptime, memory in pages of `mem_unit` 4096, the number of tasks; loads 0
/// (no load average yet).
pub fn sysinfo(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mut b = [0u8; 112];
    let put = |b: &mut [u8; 112], at: usize, v: u64, n: usize| b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    put(&mut b, 0, crate::time::uptime_ns() / 1_000_000_000, 8);
    put(&mut b, 32, crate::mm::frame::total_frames(), 8);
    put(&mut b, 40, crate::mm::frame::free_frames(), 8);
    put(&mut b, 80, crate::sched::task::count().min(u16::MAX as usize) as u64, 2);
    put(&mut b, 104, 4096, 4);
    proc.mm.lock_uninterruptible().write(a[0], &b)?;
    ok(0)
}
