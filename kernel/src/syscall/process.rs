//! Process and identity system calls: exit, ids, `uname`, `arch_prctl`, `set_tid_address`,
//! `prlimit64`, `getrandom`, `rseq` (Linux `kernel/exit.c`, `kernel/sys.c`,
//! `arch/x86/kernel/process_64.c`).

use super::{ok, Outcome};
use crate::process::Thread;
use crate::sched::rusage::{self, Usage};
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::task::Switchable;
use framework::user::{self, UserContext};

const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const RLIM_INFINITY: u64 = u64::MAX;

/// `exit(status)`: the calling thread ends (the process with its last thread).
pub fn exit(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    Ok(Outcome::ExitThread((a[0] & 0xff) as i32))
}

/// `exit_group(status)`: every thread of the process ends.
pub fn exit_group(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    Ok(Outcome::ExitGroup((a[0] & 0xff) as i32))
}

/// `getpid()`: the thread group's id.
pub fn getpid(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().process.tgid))
}

/// `gettid()`.
pub fn gettid(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().tid))
}

/// `getppid()`: the parent process's pid; 1 (init) once the parent has ended, as Linux
/// reparents an orphan; 0 for a process the kernel started.
pub fn getppid(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::process::ppid(&proc.process)))
}

/// `sched_yield()`.
pub fn sched_yield(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    crate::sched::api::sched_yield();
    ok(0)
}

/// `uname(buf)`: Linux's name and a 6.1 release (programs choose features by it), Cadence in
/// `version` (as gVisor does).
pub fn uname(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    use crate::sysctl::{DOMAINNAME, HOSTNAME, OSRELEASE, OSTYPE, VERSION};
    let fields: [&str; 6] = [OSTYPE, HOSTNAME, OSRELEASE, VERSION, "x86_64", DOMAINNAME];
    let mut buf = [0u8; 65 * 6];
    for (i, f) in fields.iter().enumerate() {
        buf[i * 65..i * 65 + f.len()].copy_from_slice(f.as_bytes());
    }
    proc.write_user(a[0], &buf)?;
    ok(0)
}

/// `arch_prctl(code, addr)`: the FS base (TLS).
pub fn arch_prctl(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    match a[0] {
        ARCH_SET_FS => {
            user::set_fs_base(a[1]).map_err(|_| Errno::EPERM)?;
            ok(0)
        }
        ARCH_GET_FS => {
            proc.write_user(a[1], &user::fs_base().to_le_bytes())?;
            ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `rseq(...)`: ENOSYS, deliberately: glibc then leaves `sched_getcpu` to the system call,
/// where a fake success would give it stale CPU numbers (see `../shared/notes/linux-abi.md`).
pub fn rseq(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
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
/// ESRCH for no such process; EPERM for a hard limit raised by a non-root caller (but
/// RLIMIT_RTTIME's) or NOFILE's past `fs.nr_open`. Limits are recorded; RTTIME, NOFILE, NPROC
/// (`process::charge`), AS (`mmap`, `brk`, the stack's growth), STACK (the stack's growth),
/// MEMLOCK (`mlock`, `mlockall`, locked mappings) and MSGQUEUE are enforced, the others not yet.
pub fn prlimit64(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let me = crate::sched::current();
    let resource = a[1];
    default_limit(resource).ok_or(Errno::EINVAL)?;
    let new = if a[2] != 0 {
        let mut b = [0u8; 16];
        proc.read_user(a[2], &mut b)?;
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
            proc.process.rlimits.clone()
        } else {
            crate::process::limits_of(pid as u32).ok_or(Errno::ESRCH)?
        };
        // Linux's do_prlimit: a hard limit above fs.nr_open for NOFILE, or raised without
        // CAP_SYS_RESOURCE (effective uid 0 here), is EPERM.
        let capable = proc.process.creds.lock_uninterruptible().uid[1] == 0;
        let mut limits = target.lock_uninterruptible();
        let old = limits[resource as usize];
        if let Some(n) = new {
            if (resource == 7 && n.1 > crate::fs::file::NR_OPEN as u64) || (n.1 > old.1 && !capable) {
                return Err(Errno::EPERM);
            }
            limits[resource as usize] = n;
        }
        old
    };
    if a[3] != 0 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&old.0.to_le_bytes());
        buf[8..].copy_from_slice(&old.1.to_le_bytes());
        proc.write_user(a[3], &buf)?;
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
pub fn getrandom(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
    proc.write_user(a[0], &bytes)?;
    ok(len as u64)
}

/// `clone(flags, newsp, parent_tid, child_tid, tls)` (x86_64 argument order): a process
/// (`fork`, `vfork`, `posix_spawn`'s CLONE_VM|CLONE_VFORK) or a thread (`pthread_create`'s
/// CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID); see
/// `process::clone`. The flags are the low 32 bits, as Linux's `lower_32_bits`; CLONE_PIDFD
/// stores the pidfd at `parent_tid`, as Linux's legacy `clone`.
pub fn clone(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let args =
        crate::process::CloneArgs { flags: a[0] & 0xffff_ffff, stack: a[1], parent_tid: a[2], child_tid: a[3], tls: a[4], pidfd: a[2] };
    ok(u64::from(crate::process::clone(proc, ctx, args)?))
}

/// `fork()`.
pub fn fork(proc: &Thread, ctx: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    let args = crate::process::CloneArgs { flags: u64::from(crate::sched::signal::SIGCHLD), ..Default::default() };
    ok(u64::from(crate::process::clone(proc, ctx, args)?))
}

/// `vfork()`: the child shares the caller's memory, and the caller waits until it execs or
/// ends.
pub fn vfork(proc: &Thread, ctx: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    use crate::process::flags::{CLONE_VFORK, CLONE_VM};
    let args = crate::process::CloneArgs { flags: CLONE_VM | CLONE_VFORK | u64::from(crate::sched::signal::SIGCHLD), ..Default::default() };
    ok(u64::from(crate::process::clone(proc, ctx, args)?))
}

/// Reads a NULL-terminated array of string pointers (argv, envp): E2BIG past the limits.
fn string_array(proc: &Thread, addr: u64) -> Result<Vec<Vec<u8>>, Errno> {
    let mut out = Vec::new();
    if addr == 0 {
        return Ok(out);
    }
    let mut total = 0;
    let mm = proc.mm_ref();
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

/// `execve(path, argv, envp)`: the process's memory is replaced; its other threads end
/// first (Linux's `de_thread`; the calling thread keeps its tid, so after an `execve` by a
/// thread other than the first, `gettid` differs from `getpid`); close-on-exec fds are
/// closed, handled signals reset to their default (ignored ones stay ignored), the
/// alternate stack, robust list, FPU and FS base reset; a `vfork` parent resumes. On success
/// nothing returns: the new program starts.
pub fn execve(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = {
        let bytes = proc.read_user_cstr(a[0], crate::fs::vfs::PATH_MAX - 1)?;
        if bytes.is_empty() {
            return Err(Errno::ENOENT);
        }
        alloc::string::String::from_utf8(bytes).map_err(|_| Errno::ENOENT)?
    };
    let argv = string_array(proc, a[1])?;
    let envp = string_array(proc, a[2])?;
    let (argv_s, envp_s): (Vec<&[u8]>, Vec<&[u8]>) = (argv.iter().map(|v| &v[..]).collect(), envp.iter().map(|v| &v[..]).collect());
    let cwd = proc.fs.cwd.lock_uninterruptible().clone();
    let loaded = crate::process::exec::load(&cwd, &path, &argv_s, &envp_s)?;
    // The point of no return.
    let me = crate::sched::current();
    crate::process::signal::end_other_threads(proc, &me);
    if let Some(v) = &proc.vfork_done {
        v.complete();
    }
    me.task_context().set_vm_space(Some(loaded.mm.space.clone()));
    let old = proc.set_mm(loaded.mm);
    if let Some(old) = &old {
        crate::process::record_maxrss(&me.process.group, &old.lock_uninterruptible().space);
    }
    drop(old);
    let closed = proc.files().lock_uninterruptible().take_cloexec();
    drop(closed);
    crate::process::signal::reset_handlers_for_exec(proc, &me);
    user::set_fpu(&user::FxArea::initial());
    let _ = user::set_fs_base(0);
    proc.clear_child_tid.store(0, Ordering::Relaxed);
    proc.robust_list.store(0, Ordering::Relaxed);
    *proc.saved_mask.lock() = None;
    *proc.altstack.lock() = cadence_abi::signal::AltStack { sp: 0, flags: cadence_abi::signal::SS_DISABLE, size: 0 };
    {
        crate::sched::current().set_comm(path.rsplit('/').next().unwrap_or("").as_bytes());
    }
    *ctx = UserContext::new(loaded.entry, loaded.sp);
    Ok(Outcome::Restored)
}

const WNOHANG: u64 = 1;
const WUNTRACED: u64 = 2;
const WSTOPPED: u64 = 2;
const WEXITED: u64 = 4;
const WCONTINUED: u64 = 8;
const WNOWAIT: u64 = 0x0100_0000;
const WNOTHREAD: u64 = 0x2000_0000;
const WALL: u64 = 0x4000_0000;
const WCLONE: u64 = 0x8000_0000;

/// Which children a wait is for.
#[derive(Clone, Copy)]
enum Which {
    Any,
    Pid(u32),
    Pgid(u32),
}

/// What a wait found.
enum Found {
    Exited(i32),
    Stopped(u32),
    Continued,
}

/// The core of `wait4` and `waitid` (Linux `do_wait`): the first matching child with
/// something to report (an end with WEXITED, a stop with WSTOPPED, a continue with
/// WCONTINUED); with WNOWAIT it stays reportable. ECHILD if no child matches; `None` with
/// WNOHANG if none has anything; ERESTARTSYS if a signal comes while it waits.
fn do_wait(proc: &Thread, which: Which, options: u64) -> Result<Option<(u32, Found, Usage)>, Errno> {
    let my_pgid = crate::sched::current().process.group.pgid.load(Ordering::Relaxed);
    let matches = |r: &crate::process::ChildRecord| -> bool {
        let kind_ok = options & WALL != 0 || (options & WCLONE != 0) == r.clone_child;
        kind_ok
            && match which {
                Which::Any => true,
                Which::Pid(p) => r.pid.load(Ordering::Acquire) == p,
                Which::Pgid(0) => r.pgid() == my_pgid,
                Which::Pgid(g) => r.pgid() == g,
            }
    };
    let reportable = |st: &crate::process::ChildState| -> bool {
        (options & WEXITED != 0 && st.exit.is_some())
            || (options & WSTOPPED != 0 && st.stopped.is_some())
            || (options & WCONTINUED != 0 && st.continued)
    };
    let family = proc.process.family.clone();
    loop {
        {
            let mut kids = family.children.lock_uninterruptible();
            if !kids.iter().any(|r| matches(r)) {
                return Err(Errno::ECHILD);
            }
            let hit = kids.iter().position(|r| matches(r) && reportable(&r.state.lock()));
            if let Some(i) = hit {
                let r = kids[i].clone();
                let pid = r.pid.load(Ordering::Acquire);
                let keep = options & WNOWAIT != 0;
                let mut reaping = false;
                let found = {
                    let mut st = r.state.lock();
                    if let Some(status) = st.exit.filter(|_| options & WEXITED != 0) {
                        drop(st);
                        reaping = !keep;
                        if !keep {
                            crate::process::reaped(&r);
                            kids.remove(i);
                        }
                        Found::Exited(status)
                    } else if let Some(sig) = st.stopped.filter(|_| options & WSTOPPED != 0) {
                        if !keep {
                            st.stopped = None;
                        }
                        Found::Stopped(sig)
                    } else {
                        if !keep {
                            st.continued = false;
                        }
                        Found::Continued
                    }
                };
                return Ok(Some((pid, found, child_usage(&r, pid, reaping))));
            }
        }
        if options & WNOHANG != 0 {
            return Ok(None);
        }
        family
            .changed
            .wait_until_interruptible(|| {
                // Something to report, or no matching child left (an auto-reaped one: ECHILD).
                family
                    .children
                    .try_lock()
                    .is_none_or(|k| k.iter().all(|r| !matches(r)) || k.iter().any(|r| matches(r) && reportable(&r.state.lock())))
            })
            .map_err(|_| Errno::ERESTARTSYS)?;
    }
}

/// What child `r` (pid `pid`) used, its reaped children included (Linux's `RUSAGE_BOTH`);
/// `reaping`: it is being reaped, its usage goes to the caller's children totals (Linux's
/// `wait_task_zombie`). A child that still has its memory (stopped) adds its peak resident set.
fn child_usage(r: &crate::process::ChildRecord, pid: u32, reaping: bool) -> Usage {
    let Some(g) = r.group.get() else { return Usage::default() };
    if reaping {
        return rusage::reap(&crate::sched::current().process.group, g);
    }
    let mut u = rusage::both_usage(g);
    let live = crate::sched::task::find(pid).and_then(|t| crate::process::thread_of(&t)).and_then(|t| t.hiwater_pages_if_live());
    u.maxrss_pages = u.maxrss_pages.max(live.unwrap_or(0));
    u
}

/// `struct rusage` (144 bytes): the times as `timeval`s, `ru_maxrss` in KiB, the fault and
/// switch counts; the rest 0 (fields Linux leaves 0, and the block I/O counts Cadence does not
/// keep).
pub fn encode_rusage(u: &Usage) -> [u8; 144] {
    let mut b = [0u8; 144];
    let tv = |ns: u64| [(ns / 1_000_000_000) as i64, ((ns % 1_000_000_000) / 1000) as i64];
    let [us, uu] = tv(u.utime_ns);
    let [ss, su] = tv(u.stime_ns);
    // ru_utime, ru_stime, then the longs: maxrss ixrss idrss isrss minflt majflt nswap
    // inblock oublock msgsnd msgrcv nsignals nvcsw nivcsw.
    let mut longs = [0i64; 18];
    longs[..4].copy_from_slice(&[us, uu, ss, su]);
    longs[4] = (u.maxrss_pages * (crate::process::mm::PAGE / 1024)) as i64;
    longs[8] = u.minflt as i64;
    longs[9] = u.majflt as i64;
    longs[16] = u.nvcsw as i64;
    longs[17] = u.nivcsw as i64;
    for (i, v) in longs.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// `getrusage(who, ru)`: RUSAGE_SELF (0: the process, its ended threads included),
/// RUSAGE_CHILDREN (-1: its reaped children and theirs), RUSAGE_THREAD (1: the caller); EINVAL
/// for another `who`, EFAULT for a bad `ru` (Linux's `getrusage`). `ru_maxrss` is the peak
/// resident set of the process's memories (the children's: the largest of theirs).
pub fn getrusage(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const RUSAGE_SELF: i32 = 0;
    const RUSAGE_CHILDREN: i32 = -1;
    const RUSAGE_THREAD: i32 = 1;
    let me = crate::sched::current();
    let g = &me.process.group;
    let mut u = match a[0] as i32 {
        RUSAGE_SELF => rusage::group_usage(g),
        RUSAGE_CHILDREN => rusage::children_usage(g),
        RUSAGE_THREAD => Usage { maxrss_pages: g.usage.maxrss_pages.load(Ordering::Relaxed), ..rusage::task_usage(&me) },
        _ => return Err(Errno::EINVAL),
    };
    if a[0] as i32 != RUSAGE_CHILDREN {
        u.maxrss_pages = u.maxrss_pages.max(proc.hiwater_pages_if_live().unwrap_or(0));
    }
    proc.write_user(a[1], &encode_rusage(&u))?;
    ok(0)
}

/// `times(buf)`: the process's user and system time and its reaped children's, in clock
/// ticks, into `buf` (NULL allowed; EFAULT for a bad one); returns the clock ticks since an
/// arbitrary point: since boot, offset as Linux's jiffies are (`INITIAL_JIFFIES`, 5 minutes
/// before a 32-bit wrap, at Debian's HZ 250), so a program never sees a small count.
pub fn times(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    use rusage::{clock_t, USER_HZ};
    const HZ: u64 = 250;
    const INITIAL_JIFFIES: u64 = (1 << 32) - 300 * HZ;
    if a[0] != 0 {
        let g = &crate::sched::current().process.group;
        let (own, kids) = (rusage::group_usage(g), rusage::children_usage(g));
        let mut b = [0u8; 32];
        for (i, ns) in [own.utime_ns, own.stime_ns, kids.utime_ns, kids.stime_ns].into_iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&clock_t(ns).to_le_bytes());
        }
        proc.write_user(a[0], &b)?;
    }
    ok(INITIAL_JIFFIES * USER_HZ / HZ + clock_t(crate::time::uptime_ns()))
}

/// `wait4(pid, wstatus, options, rusage)`: -1 any child, > 0 that child, 0 / < -1 a process
/// group; WUNTRACED reports stops, WCONTINUED continues. ECHILD without a matching child; 0
/// with WNOHANG if none has anything to report. `rusage`: the child's usage with its reaped
/// children's (`child_usage`).
pub fn wait4(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE | WNOTHREAD) != 0 {
        return Err(Errno::EINVAL);
    }
    let pid = a[0] as i32;
    let which = match pid {
        -1 => Which::Any,
        0 => Which::Pgid(0),
        p if p > 0 => Which::Pid(p as u32),
        p if p == i32::MIN => return Err(Errno::ESRCH),
        p => Which::Pgid(p.unsigned_abs()),
    };
    let Some((pid, found, usage)) = do_wait(proc, which, a[2] | WEXITED)? else { return ok(0) };
    let status: i32 = match found {
        Found::Exited(s) => s,
        Found::Stopped(sig) => ((sig as i32) << 8) | 0x7f,
        Found::Continued => 0xffff,
    };
    if a[1] != 0 {
        proc.write_user(a[1], &status.to_le_bytes())?;
    }
    if a[3] != 0 {
        proc.write_user(a[3], &encode_rusage(&usage))?;
    }
    ok(u64::from(pid))
}

/// `waitid(idtype, id, infop, options, rusage)`: P_ALL, P_PID, P_PGID (0: the caller's
/// group), P_PIDFD (the child a pidfd names; EBADF for an fd that is not a pidfd; a
/// PIDFD_NONBLOCK pidfd waits as with WNOHANG, and finding nothing without WNOHANG is EAGAIN);
/// WEXITED / WSTOPPED / WCONTINUED (at least one), WNOHANG, WNOWAIT. The child's state goes
/// into `infop` as a SIGCHLD `siginfo_t`; whatever the call answers, `infop` is written (zeroed
/// when nothing was found or the call failed, EFAULT if it cannot be), as Linux's. EINVAL for
/// a bad idtype, id or options.
pub fn waitid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let found = waitid_found(proc, a[0], a[1] as i32, a[3]);
    if let (Ok(Some((_, _, usage))), true) = (&found, a[4] != 0) {
        proc.write_user(a[4], &encode_rusage(usage))?;
    }
    if a[2] != 0 {
        use cadence_abi::signal::{code, SigFields, SigInfo, SIGCHLD};
        let info = match &found {
            Ok(Some((pid, f, _))) => {
                let (c, status) = match *f {
                    Found::Exited(s) if s & 0x7f != 0 => (code::CLD_KILLED, s & 0x7f),
                    Found::Exited(s) => (code::CLD_EXITED, (s >> 8) & 0xff),
                    Found::Stopped(sig) => (code::CLD_STOPPED, sig as i32),
                    Found::Continued => (code::CLD_CONTINUED, 18),
                };
                SigInfo { signo: SIGCHLD, code: c, errno: 0, fields: SigFields::Child { pid: *pid, uid: 0, status, utime: 0, stime: 0 } }
            }
            _ => SigInfo::default(),
        };
        proc.write_user(a[2], &info.encode())?;
    }
    found?;
    ok(0)
}

/// `waitid`'s wait (Linux's `kernel_waitid`): what it found, `None` with nothing to report.
fn waitid_found(proc: &Thread, idtype: u64, id: i32, options: u64) -> Result<Option<(u32, Found, Usage)>, Errno> {
    const P_ALL: u64 = 0;
    const P_PID: u64 = 1;
    const P_PGID: u64 = 2;
    const P_PIDFD: u64 = 3;
    if options & !(WNOHANG | WNOWAIT | WEXITED | WSTOPPED | WCONTINUED | WALL | WCLONE | WNOTHREAD) != 0
        || options & (WEXITED | WSTOPPED | WCONTINUED) == 0
    {
        return Err(Errno::EINVAL);
    }
    let mut nonblock = false;
    let which = match idtype {
        P_ALL => Which::Any,
        P_PID if id > 0 => Which::Pid(id as u32),
        P_PGID if id >= 0 => Which::Pgid(id as u32),
        P_PIDFD if id >= 0 => {
            let (pidfd, nb) = super::pidfd::pidfd_of(proc, id as u64)?;
            nonblock = nb;
            Which::Pid(pidfd.pid())
        }
        _ => return Err(Errno::EINVAL),
    };
    let found = do_wait(proc, which, options | if nonblock { WNOHANG } else { 0 })?;
    if found.is_none() && nonblock && options & WNOHANG == 0 {
        return Err(Errno::EAGAIN);
    }
    Ok(found)
}

/// `setpgid(pid, pgid)`.
pub fn setpgid(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if (a[0] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    crate::tty::setpgid(a[0] as u32, a[1] as i32 as i64)?;
    ok(0)
}

/// `getpgid(pid)`.
pub fn getpgid(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if (a[0] as i32) < 0 {
        return Err(Errno::ESRCH);
    }
    ok(u64::from(crate::tty::getpgid(a[0] as u32)?))
}

/// `getpgrp()`.
pub fn getpgrp(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::sched::current().process.group.pgid.load(Ordering::Relaxed)))
}

/// `setsid()`: a new session and process group (and, as in Linux, a new autogroup in session
/// mode).
pub fn setsid(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(crate::tty::setsid()?))
}

/// `getsid(pid)`.
pub fn getsid(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if (a[0] as i32) < 0 {
        return Err(Errno::ESRCH);
    }
    ok(u64::from(crate::tty::getsid(a[0] as u32)?))
}

/// `prctl(option, ...)`: PR_SET_NAME / PR_GET_NAME (the name is kept per process, 15 bytes),
/// PR_SCHED_CORE (core-scheduling cookies: GET, CREATE, SHARE_TO, SHARE_FROM, as `sched::coresched`),
/// PR_GET_DUMPABLE / PR_SET_DUMPABLE; other options are EINVAL, as Linux answers an unknown one.
pub fn prctl(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const PR_SET_DUMPABLE: u64 = 4;
    const PR_GET_DUMPABLE: u64 = 3;
    const PR_SET_NAME: u64 = 15;
    const PR_GET_NAME: u64 = 16;
    const PR_SCHED_CORE: u64 = 62;
    const PR_SCHED_CORE_GET: u64 = 0;
    match a[0] {
        PR_SET_NAME => {
            let bytes = proc.read_user_cstr(a[1], 4096)?;
            crate::sched::current().set_comm(&bytes);
            ok(0)
        }
        PR_GET_NAME => {
            let name = crate::sched::current().comm();
            proc.write_user(a[1], &name)?;
            ok(0)
        }
        PR_SCHED_CORE => {
            // (cmd, pid, pidtype, uaddr); GET stores the cookie at uaddr (8 bytes, aligned).
            if a[1] == PR_SCHED_CORE_GET && (a[4] == 0 || !a[4].is_multiple_of(8)) {
                return Err(Errno::EFAULT);
            }
            let v = crate::sched::coresched::prctl(a[1], a[2], a[3], a[4])?;
            if a[1] == PR_SCHED_CORE_GET {
                proc.write_user(a[4], &v.to_le_bytes())?;
            }
            ok(0)
        }
        PR_GET_DUMPABLE => ok(1),
        PR_SET_DUMPABLE if a[1] <= 1 => ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// `getrlimit(resource, rlim)`: `prlimit64` on the caller.
pub fn getrlimit(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    prlimit64(proc, ctx, [0, a[0], 0, a[1], 0, 0])
}

/// `setrlimit(resource, rlim)`: `prlimit64` on the caller.
pub fn setrlimit(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] == 0 {
        return Err(Errno::EFAULT);
    }
    prlimit64(proc, ctx, [0, a[0], a[1], 0, 0, 0])
}

/// `sysinfo(info)`: uptime, memory in pages of `mem_unit` 4096, the number of tasks; loads 0
/// (no load average yet).
pub fn sysinfo(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mut b = [0u8; 112];
    let put = |b: &mut [u8; 112], at: usize, v: u64, n: usize| b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    put(&mut b, 0, crate::time::uptime_ns() / 1_000_000_000, 8);
    // Loads in 1 << SI_LOAD_SHIFT (16) fixed point, from the 11-bit averages.
    for (i, l) in crate::sched::loadavg().into_iter().enumerate() {
        put(&mut b, 8 + 8 * i, l << (16 - cadence_sched::loadavg::FSHIFT), 8);
    }
    put(&mut b, 32, crate::mm::frame::total_frames(), 8);
    put(&mut b, 40, crate::mm::frame::free_frames(), 8);
    put(&mut b, 80, crate::sched::task::count().min(u16::MAX as usize) as u64, 2);
    put(&mut b, 104, 4096, 4);
    proc.write_user(a[0], &b)?;
    ok(0)
}
