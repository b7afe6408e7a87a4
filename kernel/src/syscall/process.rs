//! Process and identity system calls: exit, ids, `uname`, `arch_prctl`, `set_tid_address`,
//! `prlimit64`, `getrandom`, `rseq` (Linux `kernel/exit.c`, `kernel/sys.c`,
//! `arch/x86/kernel/process_64.c`).

use super::{ok, Outcome};
use crate::process::Process;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
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

/// `prlimit64(pid, resource, new, old)`: reports Linux's defaults (RLIMIT_CORE 0); setting is
/// not yet kept (EPERM).
pub fn prlimit64(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let me = crate::sched::current();
    if a[0] != 0 && a[0] != u64::from(me.tid) && a[0] != u64::from(me.process.tgid) {
        return Err(Errno::ESRCH);
    }
    let (mut soft, hard) = default_limit(a[1]).ok_or(Errno::EINVAL)?;
    if a[1] == 4 {
        soft = 0;
    }
    if a[2] != 0 {
        return Err(Errno::EPERM);
    }
    if a[3] != 0 {
        let mut buf = [0u8; 16];
        buf[..8].copy_from_slice(&soft.to_le_bytes());
        buf[8..].copy_from_slice(&hard.to_le_bytes());
        proc.mm.lock_uninterruptible().write(a[3], &buf)?;
    }
    ok(0)
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
