//! Scheduling system calls (Linux `kernel/sched/syscalls.c`), on top of `sched::api`: every
//! feature of Cadence's scheduler with Linux's call and errno. `pid` 0 is the calling thread;
//! a pid is a thread id (glibc's `pthread_setschedparam` passes the tid).

use super::{ok, Outcome};
use crate::process::Thread;
use cadence_abi::errno::Errno;
use cadence_sched::{CpuMask, SchedAttr};
use framework::user::UserContext;

/// `struct sched_attr`'s size in its first version (`SCHED_ATTR_SIZE_VER0`).
const SCHED_ATTR_SIZE_VER0: u32 = 48;
/// The size Cadence knows (`SCHED_ATTR_SIZE_VER1`, with the util-clamp fields).
const SCHED_ATTR_SIZE_VER1: u32 = 56;

/// A pid argument: negative is EINVAL (Linux's `pid_t` check), 0 the caller.
fn pid_arg(v: u64) -> Result<u32, Errno> {
    let pid = v as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(pid as u32)
}

fn read_param(proc: &Thread, addr: u64) -> Result<i32, Errno> {
    if addr == 0 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 4];
    proc.read_user(addr, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

/// `sched_setscheduler(pid, policy, param)`.
pub fn sched_setscheduler(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    let prio = read_param(proc, a[2])?;
    let policy = a[1] as i32;
    if policy < 0 {
        return Err(Errno::EINVAL);
    }
    // SCHED_RESET_ON_FORK may be or'ed into the policy.
    const SCHED_RESET_ON_FORK: i32 = 0x4000_0000;
    let reset = policy & SCHED_RESET_ON_FORK != 0;
    let policy = policy & !SCHED_RESET_ON_FORK;
    if reset {
        let current = crate::sched::api::sched_getattr(pid)?;
        let attr = SchedAttr {
            policy,
            nice: current.nice,
            rt_priority: prio.max(0) as u32,
            flags: cadence_sched::consts::SCHED_FLAG_RESET_ON_FORK,
            ..SchedAttr::default()
        };
        if prio < 0 {
            return Err(Errno::EINVAL);
        }
        crate::sched::api::sched_setattr(pid, &attr)?;
    } else {
        crate::sched::api::sched_setscheduler(pid, policy, prio)?;
    }
    ok(0)
}

/// `sched_setparam(pid, param)`: the priority within the current policy.
pub fn sched_setparam(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    let prio = read_param(proc, a[1])?;
    let current = crate::sched::api::sched_getattr(pid)?;
    crate::sched::api::sched_setscheduler(pid, current.policy.raw(), prio)?;
    ok(0)
}

/// `sched_getscheduler(pid)`: the policy (| SCHED_RESET_ON_FORK if set).
pub fn sched_getscheduler(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let attr = crate::sched::api::sched_getattr(pid_arg(a[0])?)?;
    let reset = if attr.reset_on_fork { 0x4000_0000 } else { 0 };
    ok((attr.policy.raw() | reset) as u64)
}

/// `sched_getparam(pid, param)`.
pub fn sched_getparam(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    if a[1] == 0 {
        return Err(Errno::EINVAL);
    }
    let attr = crate::sched::api::sched_getattr(pid)?;
    proc.write_user(a[1], &i32::from(attr.rt_priority).to_le_bytes())?;
    ok(0)
}

/// `sched_get_priority_max(policy)`.
pub fn sched_get_priority_max(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    ok(crate::sched::api::sched_get_priority_max(a[0] as i32)? as u64)
}

/// `sched_get_priority_min(policy)`.
pub fn sched_get_priority_min(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    ok(crate::sched::api::sched_get_priority_min(a[0] as i32)? as u64)
}

/// `sched_rr_get_interval(pid, tp)`: the RR quantum for SCHED_RR, 0 for FIFO, the fair slice
/// otherwise (Linux reports the task's slice).
pub fn sched_rr_get_interval(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let attr = crate::sched::api::sched_getattr(pid_arg(a[0])?)?;
    let ns = match attr.policy {
        cadence_sched::Policy::RR => crate::sched::rr_timeslice_ns(),
        cadence_sched::Policy::Fifo | cadence_sched::Policy::Deadline => 0,
        _ => attr.custom_slice_ns.unwrap_or_else(|| crate::sched::fair_tunables().base_slice_ns),
    };
    proc.write_user(a[1], &super::time::timespec(ns))?;
    ok(0)
}

/// Linux's `cpumask_size()`: the bytes of a mask of this machine's `nr_cpu_ids` CPUs, in whole
/// 64-bit words (8 up to 64 CPUs, 128 at 1,024; libnuma sizes its masks by what
/// `sched_getaffinity` returns).
fn cpumask_size() -> usize {
    (crate::percpu::nr_cpus().max(1) as usize).div_ceil(64) * 8
}

/// The mask a `cpusetsize`-byte user buffer holds (Linux's `get_user_cpu_mask`: bytes past
/// `cpumask_size()` are not read, a shorter buffer leaves the higher CPUs out).
fn read_mask(proc: &Thread, len: u64, addr: u64) -> Result<CpuMask, Errno> {
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let n = (len as usize).min(cpumask_size());
    let mut b = [0u8; cadence_sched::NR_CPUS / 8];
    proc.read_user(addr, &mut b[..n])?;
    Ok(CpuMask::from_le_bytes(&b[..n]))
}

/// `sched_setaffinity(pid, cpusetsize, mask)`.
pub fn sched_setaffinity(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    let mask = read_mask(proc, a[1], a[2])?;
    crate::sched::api::sched_setaffinity(pid, mask)?;
    ok(0)
}

/// `sched_getaffinity(pid, cpusetsize, mask)`: returns the bytes written, `min(cpusetsize,
/// cpumask_size())`; EINVAL if the size is not a multiple of 8 or has fewer bits than the
/// machine has CPUs (Linux's checks, in that order of meaning).
pub fn sched_getaffinity(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    let len = a[1];
    if len.saturating_mul(8) < crate::percpu::nr_cpus() as u64 || !len.is_multiple_of(8) || len == 0 {
        return Err(Errno::EINVAL);
    }
    let mask = crate::sched::api::sched_getaffinity(pid)?;
    let n = (len as usize).min(cpumask_size());
    let mut b = [0u8; cadence_sched::NR_CPUS / 8];
    mask.write_le_bytes(&mut b[..n]);
    proc.write_user(a[2], &b[..n])?;
    ok(n as u64)
}

/// `sched_setattr(pid, attr, flags)`.
pub fn sched_setattr(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    if a[1] == 0 || a[2] != 0 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; SCHED_ATTR_SIZE_VER1 as usize];
    let mm = proc.mm_ref();
    mm.read(a[1], &mut b[..4])?;
    let size = u32::from_le_bytes(b[..4].try_into().expect("4"));
    // Linux: size 0 means VER0; smaller than VER0 is E2BIG (with the size written back).
    let size = if size == 0 { SCHED_ATTR_SIZE_VER0 } else { size };
    if !(SCHED_ATTR_SIZE_VER0..=4096).contains(&size) {
        mm.write(a[1], &SCHED_ATTR_SIZE_VER1.to_le_bytes())?;
        return Err(Errno::E2BIG);
    }
    let n = size.min(SCHED_ATTR_SIZE_VER1) as usize;
    mm.read(a[1], &mut b[..n])?;
    // Bytes past what Cadence knows must be zero (Linux's `copy_struct_from_user`).
    if size > SCHED_ATTR_SIZE_VER1 {
        let mut rest = alloc::vec![0u8; (size - SCHED_ATTR_SIZE_VER1) as usize];
        mm.read(a[1] + u64::from(SCHED_ATTR_SIZE_VER1), &mut rest)?;
        if rest.iter().any(|&x| x != 0) {
            mm.write(a[1], &SCHED_ATTR_SIZE_VER1.to_le_bytes())?;
            return Err(Errno::E2BIG);
        }
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
    let attr = SchedAttr {
        policy: u32_at(4) as i32,
        flags: u64_at(8),
        nice: u32_at(16) as i32,
        rt_priority: u32_at(20),
        slice_ns: u64_at(24),
        deadline_ns: u64_at(32),
        period_ns: u64_at(40),
    };
    crate::sched::api::sched_setattr(pid, &attr)?;
    ok(0)
}

/// `sched_getattr(pid, attr, size, flags)`: the task's own attributes (not a PI boost), as
/// much of `struct sched_attr` as `size` holds, with `size` set to what was written.
pub fn sched_getattr(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = pid_arg(a[0])?;
    let size = a[2] as u32;
    if a[1] == 0 || a[3] != 0 || !(SCHED_ATTR_SIZE_VER0..=4096).contains(&size) {
        return Err(Errno::EINVAL);
    }
    let attr = crate::sched::api::sched_getattr(pid)?;
    let n = size.min(SCHED_ATTR_SIZE_VER1);
    let mut b = [0u8; SCHED_ATTR_SIZE_VER1 as usize];
    b[..4].copy_from_slice(&n.to_le_bytes());
    b[4..8].copy_from_slice(&attr.policy.raw().to_le_bytes());
    let flags = if attr.reset_on_fork { cadence_sched::consts::SCHED_FLAG_RESET_ON_FORK } else { 0 };
    b[8..16].copy_from_slice(&flags.to_le_bytes());
    b[16..20].copy_from_slice(&attr.nice.to_le_bytes());
    b[20..24].copy_from_slice(&u32::from(attr.rt_priority).to_le_bytes());
    let (runtime, deadline, period) = match attr.dl {
        Some(d) => (d.runtime, d.deadline, d.period),
        None => (attr.custom_slice_ns.unwrap_or(0), 0, 0),
    };
    b[24..32].copy_from_slice(&runtime.to_le_bytes());
    b[32..40].copy_from_slice(&deadline.to_le_bytes());
    b[40..48].copy_from_slice(&period.to_le_bytes());
    // util_min 0, util_max 1024 (no clamping: Linux reports these too).
    b[52..56].copy_from_slice(&1024u32.to_le_bytes());
    proc.write_user(a[1], &b[..n as usize])?;
    ok(0)
}

const PRIO_PROCESS: u64 = 0;
const PRIO_PGRP: u64 = 1;
const PRIO_USER: u64 = 2;

/// `setpriority(which, who, prio)`: PRIO_PROCESS (a thread; 0 the caller), PRIO_PGRP, PRIO_USER
/// (every process: everyone is root).
pub fn setpriority(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let nice = a[2] as i32 as i64;
    match a[0] {
        PRIO_PROCESS => crate::sched::api::setpriority(a[1] as u32, nice)?,
        PRIO_PGRP | PRIO_USER => {
            let pgid = if a[1] == 0 {
                crate::sched::current().process.group.pgid.load(core::sync::atomic::Ordering::Relaxed)
            } else {
                a[1] as u32
            };
            let mut hit = false;
            for t in crate::sched::task::all() {
                let member = a[0] == PRIO_USER || t.process.group.pgid.load(core::sync::atomic::Ordering::Relaxed) == pgid;
                if member && !t.is_idle && !t.kthread {
                    hit = true;
                    let _ = crate::sched::api::setpriority(t.tid, nice);
                }
            }
            if !hit {
                return Err(Errno::ESRCH);
            }
        }
        _ => return Err(Errno::EINVAL),
    }
    ok(0)
}

/// `getpriority(which, who)`: Linux's raw value, 20 - nice (glibc turns it back).
pub fn getpriority(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] != PRIO_PROCESS {
        if a[0] == PRIO_PGRP || a[0] == PRIO_USER {
            let nice = crate::sched::api::getpriority(0)?;
            return ok((20 - nice) as u64);
        }
        return Err(Errno::EINVAL);
    }
    let nice = crate::sched::api::getpriority(a[1] as u32)?;
    ok((20 - nice) as u64)
}

/// `getcpu(cpu, node, cache)`.
pub fn getcpu(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let cpu = crate::percpu::cpu_id();
    let mm = proc.mm_ref();
    if a[0] != 0 {
        mm.write(a[0], &cpu.to_le_bytes())?;
    }
    if a[1] != 0 {
        mm.write(a[1], &0u32.to_le_bytes())?;
    }
    ok(0)
}
