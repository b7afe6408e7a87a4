//! Clock system calls (Linux `kernel/time/posix-timers.c`, `hrtimer.c`). There is no vDSO:
//! every clock read is a system call (programs read `clock_gettime` through glibc, which
//! falls back to the system call when AT_SYSINFO_EHDR is absent).

use super::{ok, Outcome};
use crate::process::Process;
use cadence_abi::errno::Errno;
use framework::user::UserContext;

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_PROCESS_CPUTIME_ID: u64 = 2;
const CLOCK_THREAD_CPUTIME_ID: u64 = 3;
const CLOCK_MONOTONIC_RAW: u64 = 4;
const CLOCK_REALTIME_COARSE: u64 = 5;
const CLOCK_MONOTONIC_COARSE: u64 = 6;
const CLOCK_BOOTTIME: u64 = 7;
const TIMER_ABSTIME: u64 = 1;
const NS: u64 = 1_000_000_000;

/// The clock's reading in ns; EINVAL for a clock Linux does not have.
fn now(clock: u64) -> Result<u64, Errno> {
    let t = crate::time::uptime_ns();
    match clock {
        CLOCK_REALTIME | CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_REALTIME_COARSE | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => Ok(t),
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => {
            Ok(crate::sched::current().stats.sum_exec_runtime.load(core::sync::atomic::Ordering::Relaxed))
        }
        _ => Err(Errno::EINVAL),
    }
}

fn timespec(ns: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(ns / NS).to_le_bytes());
    b[8..].copy_from_slice(&(ns % NS).to_le_bytes());
    b
}

fn read_timespec(proc: &Process, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 16];
    proc.mm.lock_uninterruptible().read(addr, &mut b)?;
    let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
    let nsec = i64::from_le_bytes(b[8..].try_into().expect("8"));
    if sec < 0 || !(0..NS as i64).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64).saturating_mul(NS).saturating_add(nsec as u64))
}

/// `clock_gettime(clock, tp)`.
pub fn clock_gettime(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = now(a[0])?;
    proc.mm.lock_uninterruptible().write(a[1], &timespec(t))?;
    ok(0)
}

/// `clock_getres(clock, res)`: 1 ns (high-resolution timers), as Linux answers with hrtimers.
pub fn clock_getres(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    now(a[0])?;
    if a[1] != 0 {
        let res = if a[0] == CLOCK_REALTIME_COARSE || a[0] == CLOCK_MONOTONIC_COARSE { NS / 250 } else { 1 };
        proc.mm.lock_uninterruptible().write(a[1], &timespec(res))?;
    }
    ok(0)
}

/// `gettimeofday(tv, tz)`.
pub fn gettimeofday(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = now(CLOCK_REALTIME)?;
    if a[0] != 0 {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(t / NS).to_le_bytes());
        b[8..].copy_from_slice(&((t % NS) / 1000).to_le_bytes());
        proc.mm.lock_uninterruptible().write(a[0], &b)?;
    }
    if a[1] != 0 {
        proc.mm.lock_uninterruptible().write(a[1], &[0u8; 8])?;
    }
    ok(0)
}

/// Sleeps until `deadline`; EINTR if a fatal signal came (the process then dies of it on its
/// way out, so the value is never seen: Linux's `-ERESTART_RESTARTBLOCK` path ends the same).
fn sleep_until(deadline: u64) -> Result<(), Errno> {
    crate::sched::sleep_until_interruptible(deadline).map_err(|_| Errno::EINTR)
}

/// `nanosleep(req, rem)`.
pub fn nanosleep(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let d = read_timespec(proc, a[0])?;
    sleep_until(crate::time::uptime_ns().saturating_add(d))?;
    ok(0)
}

/// `clock_nanosleep(clock, flags, req, rem)`.
pub fn clock_nanosleep(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] == CLOCK_THREAD_CPUTIME_ID {
        return Err(Errno::EINVAL);
    }
    now(a[0])?;
    if a[0] == CLOCK_PROCESS_CPUTIME_ID {
        return Err(Errno::EOPNOTSUPP);
    }
    let d = read_timespec(proc, a[2])?;
    let deadline = if a[1] & TIMER_ABSTIME != 0 { d } else { crate::time::uptime_ns().saturating_add(d) };
    sleep_until(deadline)?;
    ok(0)
}

/// `time(tloc)`: seconds of CLOCK_REALTIME, also stored at `tloc` if non-NULL.
pub fn time(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = now(CLOCK_REALTIME)? / NS;
    if a[0] != 0 {
        proc.mm.lock_uninterruptible().write(a[0], &t.to_le_bytes())?;
    }
    ok(t)
}
