//! Clock system calls (Linux `kernel/time/posix-timers.c`, `hrtimer.c`). There is no vDSO:
//! every clock read is a system call (programs read `clock_gettime` through glibc, which
//! falls back to the system call when AT_SYSINFO_EHDR is absent).

use super::{ok, Outcome};
use crate::process::Thread;
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
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE => Ok(crate::time::realtime_ns()),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_MONOTONIC_COARSE | CLOCK_BOOTTIME => Ok(t),
        // The running slice included (the charged sum alone moves only at ticks and
        // switches: a program spinning on its CPU time would see it stand still).
        CLOCK_THREAD_CPUTIME_ID => Ok(crate::sched::current_cputime_ns()),
        CLOCK_PROCESS_CPUTIME_ID => {
            // The live threads' times (those of threads already gone are not kept).
            let me = crate::sched::current();
            let others: u64 = me
                .process
                .group
                .members()
                .into_iter()
                .filter(|&tid| tid != me.tid)
                .filter_map(crate::sched::task::find)
                .map(|t| t.stats.sum_exec_runtime.load(core::sync::atomic::Ordering::Relaxed))
                .sum();
            Ok(crate::sched::current_cputime_ns() + others)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// A `struct timespec` of `ns` nanoseconds.
pub fn timespec(ns: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(ns / NS).to_le_bytes());
    b[8..].copy_from_slice(&(ns % NS).to_le_bytes());
    b
}

/// A `struct timespec` from its 16 bytes, in ns (EINVAL if negative or with nanoseconds out of
/// range, as Linux's `timespec64_valid`).
pub fn parse_timespec(b: &[u8]) -> Result<u64, Errno> {
    let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
    let nsec = i64::from_le_bytes(b[8..16].try_into().expect("8"));
    if sec < 0 || !(0..NS as i64).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64).saturating_mul(NS).saturating_add(nsec as u64))
}

/// The `struct timespec` at `addr` of the caller's memory, in ns ([`parse_timespec`]'s
/// errors, EFAULT).
pub fn read_timespec(proc: &Thread, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 16];
    proc.read_user(addr, &mut b)?;
    parse_timespec(&b)
}

/// `clock_gettime(clock, tp)`.
pub fn clock_gettime(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = now(a[0])?;
    proc.write_user(a[1], &timespec(t))?;
    ok(0)
}

/// `clock_getres(clock, res)`: 1 ns (high-resolution timers), as Linux answers with hrtimers.
pub fn clock_getres(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    now(a[0])?;
    if a[1] != 0 {
        let res = if a[0] == CLOCK_REALTIME_COARSE || a[0] == CLOCK_MONOTONIC_COARSE { NS / 250 } else { 1 };
        proc.write_user(a[1], &timespec(res))?;
    }
    ok(0)
}

/// `gettimeofday(tv, tz)`.
pub fn gettimeofday(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = now(CLOCK_REALTIME)?;
    if a[0] != 0 {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(t / NS).to_le_bytes());
        b[8..].copy_from_slice(&((t % NS) / 1000).to_le_bytes());
        proc.write_user(a[0], &b)?;
    }
    if a[1] != 0 {
        proc.write_user(a[1], &[0u8; 8])?;
    }
    ok(0)
}

/// An absolute CLOCK_REALTIME time as a monotonic deadline.
pub fn realtime_to_monotonic(ns: u64) -> u64 {
    crate::time::realtime_to_uptime(ns)
}

/// Sleeps until the monotonic `deadline`. Interrupted by a signal: the time left goes to
/// `rem` (if non-zero) and the sleep continues through `restart_syscall` unless a handler
/// runs (then EINTR), as Linux's `hrtimer_nanosleep`; an absolute sleep is simply restarted.
fn sleep_until(proc: &Thread, clock: u64, deadline: u64, rem: u64, absolute: bool) -> Result<Outcome, Errno> {
    if crate::sched::sleep_until_interruptible(deadline).is_ok() {
        return ok(0);
    }
    if absolute {
        return Err(Errno::ERESTARTNOHAND);
    }
    if rem != 0 {
        let left = deadline.saturating_sub(crate::time::uptime_ns());
        proc.write_user(rem, &timespec(left))?;
    }
    *proc.restart.lock() = Some(crate::process::RestartBlock { clock: clock as u32, deadline_ns: deadline, rem });
    Err(Errno::ERESTART_RESTARTBLOCK)
}

/// `nanosleep(req, rem)`.
pub fn nanosleep(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let d = read_timespec(proc, a[0])?;
    sleep_until(proc, CLOCK_MONOTONIC, crate::time::uptime_ns().saturating_add(d), a[1], false)
}

/// `clock_nanosleep(clock, flags, req, rem)`: relative or TIMER_ABSTIME, on REALTIME,
/// MONOTONIC(_RAW), BOOTTIME; EINVAL for the thread CPU clock, EOPNOTSUPP for the process one.
pub fn clock_nanosleep(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] == CLOCK_THREAD_CPUTIME_ID {
        return Err(Errno::EINVAL);
    }
    now(a[0])?;
    if a[0] == CLOCK_PROCESS_CPUTIME_ID {
        return Err(Errno::EOPNOTSUPP);
    }
    let d = read_timespec(proc, a[2])?;
    let absolute = a[1] & TIMER_ABSTIME != 0;
    let deadline = match (absolute, a[0]) {
        (true, CLOCK_REALTIME | CLOCK_REALTIME_COARSE) => realtime_to_monotonic(d),
        (true, _) => d,
        (false, _) => crate::time::uptime_ns().saturating_add(d),
    };
    sleep_until(proc, a[0], deadline, if absolute { 0 } else { a[3] }, absolute)
}

/// `restart_syscall()`: continues a sleep a signal interrupted (its deadline kept); EINTR if
/// there is none.
pub fn restart_syscall(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    let Some(r) = proc.restart.lock().take() else { return Err(Errno::EINTR) };
    sleep_until(proc, u64::from(r.clock), r.deadline_ns, r.rem, false)
}

/// `clock_settime(clock, tp)`: CLOCK_REALTIME only (EINVAL for the others, as Linux).
pub fn clock_settime(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    now(a[0])?;
    let t = read_timespec(proc, a[1])?;
    if a[0] != CLOCK_REALTIME {
        return Err(Errno::EINVAL);
    }
    crate::time::set_realtime_ns(t);
    ok(0)
}

/// `settimeofday(tv, tz)`: the wall clock (a NULL `tv` changes nothing).
pub fn settimeofday(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] != 0 {
        let mut b = [0u8; 16];
        proc.read_user(a[0], &mut b)?;
        let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
        let usec = i64::from_le_bytes(b[8..].try_into().expect("8"));
        if sec < 0 || !(0..1_000_000).contains(&usec) {
            return Err(Errno::EINVAL);
        }
        crate::time::set_realtime_ns((sec as u64).saturating_mul(NS).saturating_add(usec as u64 * 1000));
    }
    ok(0)
}

/// `time(tloc)`: seconds of CLOCK_REALTIME, also stored at `tloc` if non-NULL.
pub fn time(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = now(CLOCK_REALTIME)? / NS;
    if a[0] != 0 {
        proc.write_user(a[0], &t.to_le_bytes())?;
    }
    ok(t)
}

// ----- interval timers (`process::timers`) -------------------------------------------------

const US: u64 = 1_000;
const ITIMER_REAL: u64 = 0;
const ITIMER_PROF: u64 = 2;

/// A `struct timeval` (EINVAL for a negative or out-of-range part) in ns.
fn read_timeval(b: &[u8]) -> Result<u64, Errno> {
    let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
    let usec = i64::from_le_bytes(b[8..16].try_into().expect("8"));
    if sec < 0 || !(0..1_000_000).contains(&usec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64).saturating_mul(NS).saturating_add(usec as u64 * US))
}

fn timeval(ns: u64) -> [u8; 16] {
    // A running timer never reads as 0 (Linux rounds a remaining fraction up to 1 µs).
    let us = ns.div_ceil(US);
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(us / 1_000_000).to_le_bytes());
    b[8..].copy_from_slice(&(us % 1_000_000).to_le_bytes());
    b
}

fn itimerval(left: u64, interval: u64) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&timeval(interval));
    b[16..].copy_from_slice(&timeval(left));
    b
}

use crate::sched::cputimer;

fn tgid_of_caller() -> u32 {
    crate::sched::current().process.tgid
}

/// `getitimer(which, value)`: ITIMER_REAL, or the CPU-time ITIMER_VIRTUAL and ITIMER_PROF
/// (`sched::cputimer`); EINVAL for `which` out of range.
pub fn getitimer(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (left, interval) = if a[0] == ITIMER_REAL {
        crate::process::timers::get_real(tgid_of_caller())
    } else {
        let which = cputimer::Which::from_raw(a[0]).ok_or(Errno::EINVAL)?;
        cputimer::get(&crate::sched::current().process.group, which)
    };
    proc.write_user(a[1], &itimerval(left, interval))?;
    ok(0)
}

/// `setitimer(which, new, old)`: ITIMER_REAL (SIGALRM after `it_value`, then every
/// `it_interval`), ITIMER_VIRTUAL (SIGVTALRM, on the process's user time) or ITIMER_PROF
/// (SIGPROF, on its user and system time; both tick-sampled, `sched::cputimer`); a NULL `new`
/// disarms, as Linux. EINVAL for bad times or another timer.
pub fn setitimer(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] > ITIMER_PROF {
        return Err(Errno::EINVAL);
    }
    let (value, interval) = if a[1] == 0 {
        (0, 0)
    } else {
        let mut b = [0u8; 32];
        proc.read_user(a[1], &mut b)?;
        (read_timeval(&b[16..])?, read_timeval(&b[..16])?)
    };
    let (left, old_interval) = match cputimer::Which::from_raw(a[0]) {
        Some(which) => cputimer::set(&crate::sched::current().process.group, which, value, interval),
        None => crate::process::timers::set_real(tgid_of_caller(), value, interval)?,
    };
    if a[2] != 0 {
        proc.write_user(a[2], &itimerval(left, old_interval))?;
    }
    ok(0)
}

/// `alarm(seconds)`: SIGALRM after `seconds` (0 cancels); returns the seconds the previous
/// alarm had left, rounded as Linux (to the nearest, a fraction alone counting as 1).
pub fn alarm(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let secs = a[0] as u32 as u64;
    let (left, _) = crate::process::timers::set_real(tgid_of_caller(), secs * NS, 0)?;
    let (s, us) = (left.div_ceil(US) / 1_000_000, left.div_ceil(US) % 1_000_000);
    ok(if (s == 0 && us > 0) || us >= 500_000 { s + 1 } else { s })
}

fn itimerspec(left: u64, interval: u64) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&timespec(interval));
    b[16..].copy_from_slice(&timespec(left));
    b
}

/// `timer_create(clock, sevp, timerid)`: a timer on CLOCK_REALTIME, MONOTONIC or BOOTTIME
/// (the CPU-time clocks: EOPNOTSUPP, not in Cadence; unknown clocks EINVAL), notifying by
/// SIGEV_SIGNAL (the default: SIGALRM with the timer id as value), SIGEV_NONE or
/// SIGEV_THREAD_ID (a thread of the caller's process, else EINVAL). EINVAL for a bad signal
/// or notification, EAGAIN past the per-process limit, EFAULT.
pub fn timer_create(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    use crate::process::timers::Notify;
    const SIGEV_SIGNAL: u32 = 0;
    const SIGEV_NONE: u32 = 1;
    const SIGEV_THREAD_ID: u32 = 4;
    match a[0] {
        CLOCK_REALTIME | CLOCK_MONOTONIC | CLOCK_BOOTTIME => {}
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    }
    let tgid = tgid_of_caller();
    let (notify, value) = if a[1] == 0 {
        (Notify::Process { signo: cadence_abi::signal::SIGALRM }, None)
    } else {
        let mut b = [0u8; 24];
        proc.read_user(a[1], &mut b)?;
        let value = u64::from_le_bytes(b[..8].try_into().expect("8"));
        let signo = u32::from_le_bytes(b[8..12].try_into().expect("4"));
        let how = u32::from_le_bytes(b[12..16].try_into().expect("4"));
        let tid = u32::from_le_bytes(b[16..20].try_into().expect("4"));
        let valid_signo = (1..=64).contains(&signo);
        let notify = match how {
            SIGEV_NONE => Notify::None,
            SIGEV_SIGNAL if valid_signo => Notify::Process { signo },
            SIGEV_THREAD_ID if valid_signo => {
                let ok_thread = crate::sched::task::find(tid)
                    .is_some_and(|t| t.process.tgid == tgid && t.state() != crate::sched::task::TaskState::Dead);
                if !ok_thread {
                    return Err(Errno::EINVAL);
                }
                Notify::Thread { signo, tid }
            }
            _ => return Err(Errno::EINVAL),
        };
        (notify, Some(value))
    };
    // The id's slot must be writable before the timer exists.
    proc.write_user(a[2], &0u32.to_le_bytes())?;
    let id = crate::process::timers::create(tgid, a[0] == CLOCK_REALTIME, notify, value)?;
    if let Err(e) = proc.write_user(a[2], &(id as u32).to_le_bytes()) {
        let _ = crate::process::timers::delete(tgid, id);
        return Err(e);
    }
    ok(0)
}

fn timer_id(raw: u64) -> Result<i32, Errno> {
    let id = raw as u32 as i32;
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(id)
}

/// `timer_settime(id, flags, new, old)`: arms (TIMER_ABSTIME: an absolute time on the
/// timer's clock) or disarms (`it_value` 0). EINVAL for no such timer or a bad time.
pub fn timer_settime(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let id = timer_id(a[0])?;
    let mut b = [0u8; 32];
    proc.read_user(a[2], &mut b)?;
    let interval = parse_timespec(&b[..16])?;
    let value = parse_timespec(&b[16..])?;
    let absolute = a[1] & TIMER_ABSTIME != 0;
    let (left, old_interval) = crate::process::timers::settime(tgid_of_caller(), id, value, interval, absolute)?;
    if a[3] != 0 {
        proc.write_user(a[3], &itimerspec(left, old_interval))?;
    }
    ok(0)
}

/// `timer_gettime(id, cur)`: the time to the next expiry and the interval.
pub fn timer_gettime(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (left, interval) = crate::process::timers::gettime(tgid_of_caller(), timer_id(a[0])?)?;
    proc.write_user(a[1], &itimerspec(left, interval))?;
    ok(0)
}

/// `timer_getoverrun(id)`: periods the last expiry missed.
pub fn timer_getoverrun(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    ok(crate::process::timers::getoverrun(tgid_of_caller(), timer_id(a[0])?)? as u64)
}

/// `timer_delete(id)`.
pub fn timer_delete(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    crate::process::timers::delete(tgid_of_caller(), timer_id(a[0])?)?;
    ok(0)
}

// ----- timerfd ------------------------------------------------------------------------------

/// `TFD_TIMER_ABSTIME`.
const TFD_TIMER_ABSTIME: u64 = 1;
/// `TFD_TIMER_CANCEL_ON_SET` (accepted; a clock change does not cancel: `fs::timerfd`).
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;

/// `timerfd_create(clockid, flags)`: CLOCK_REALTIME, CLOCK_MONOTONIC or CLOCK_BOOTTIME (the
/// `_ALARM` clocks as their base clocks: there is no suspend); TFD_NONBLOCK, TFD_CLOEXEC.
/// EINVAL for another clock or flag.
pub fn timerfd_create(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    use crate::fs::file::{Kind, OpenFile, O_CLOEXEC, O_NONBLOCK, O_RDWR};
    let realtime = match a[0] as u32 as u64 {
        CLOCK_REALTIME | 8 => true,
        CLOCK_MONOTONIC | 7 | 9 => false,
        _ => return Err(Errno::EINVAL),
    };
    let flags = a[1] as u32;
    if flags & !(O_NONBLOCK | O_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    // Read-write, as Linux's anonymous inode: a write is EINVAL (no write operation), not EBADF.
    let file = OpenFile::new(Kind::TimerFd(crate::fs::timerfd::create(realtime)), O_RDWR | (flags & O_NONBLOCK));
    let table = super::fs::files(proc);
    let fd = table.lock_uninterruptible().install(file, flags & O_CLOEXEC != 0, proc.nofile())?;
    ok(fd)
}

/// The timerfd behind `fd` (EBADF if none, EINVAL if not a timerfd).
fn timerfd_of(proc: &Thread, fd: u64) -> Result<alloc::sync::Arc<crate::fs::timerfd::TimerFd>, Errno> {
    match &super::fs::fd_file(proc, fd)?.kind {
        crate::fs::file::Kind::TimerFd(t) => Ok(t.clone()),
        _ => Err(Errno::EINVAL),
    }
}

/// `timerfd_settime(fd, flags, new, old)`: arms, re-arms or (an `it_value` of 0) disarms;
/// the old setting into `old` if given. EINVAL for unknown flags or a bad timespec.
pub fn timerfd_settime(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let tf = timerfd_of(proc, a[0])?;
    let mut b = [0u8; 32];
    proc.read_user(a[2], &mut b)?;
    let interval = parse_timespec(&b[..16])?;
    let value = parse_timespec(&b[16..])?;
    let (left, old_interval) = tf.settime(value, interval, a[1] & TFD_TIMER_ABSTIME != 0);
    if a[3] != 0 {
        proc.write_user(a[3], &itimerspec(left, old_interval))?;
    }
    ok(0)
}

/// `timerfd_gettime(fd, cur)`: the time to the next expiry and the interval.
pub fn timerfd_gettime(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (left, interval) = timerfd_of(proc, a[0])?.gettime();
    proc.write_user(a[1], &itimerspec(left, interval))?;
    ok(0)
}
