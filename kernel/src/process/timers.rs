//! POSIX interval timers (`timer_create` and kin, Linux `kernel/time/posix-timers.c`) and the
//! process's real-time interval timer (`setitimer(ITIMER_REAL)`, `alarm`), which is one more
//! timer of the same kind (Linux `kernel/time/itimer.c`).
//!
//! Each armed timer is one kernel timer (`crate::timer`) on the CPU that armed it. Expiry runs
//! in interrupt context: it only hands the timer to `ktimers`, a kernel thread that sends the
//! signal with its `siginfo` (SI_TIMER, the timer id, the overrun count, the sigevent's value;
//! ITIMER_REAL's SIGALRM is SI_KERNEL): queueing the info may allocate, which the interrupt
//! path must not.
//!
//! A periodic timer is re-armed when its signal is *taken* ([`on_dequeue`], from the signal
//! code's dequeue), not when it fires, as Linux's `posixtimer_rearm` and `dequeue_signal`'s
//! SIGALRM rule: the periods that passed meanwhile are its overrun, and a timer fires at most
//! as often as its process takes the signal. Re-armed at expiry, a 1 ns period re-fired at
//! once, forever: a storm of timer interrupts that took its CPU from everything else (found by
//! `make test-fuzz`). A SIGEV_NONE timer has no signal: its periodic expiry is computed when
//! read, and nothing is armed after the first.
//!
//! Times are kept on the monotonic clock; a CLOCK_REALTIME timer's absolute expiry is
//! converted when it is armed (a later `clock_settime` does not move it, unlike Linux).
//! Timers end with their process. Not yet: timers on the CPU-time clocks (EOPNOTSUPP),
//! `ITIMER_VIRTUAL` / `ITIMER_PROF` (EINVAL), deleting timers at `execve`.

use crate::sched::task::{self, Tid};
use crate::sched::wait::WaitQueue;
use crate::sync::IrqLock;
use crate::timer::TimerId;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{code, SigFields, SigInfo};
use core::sync::atomic::{AtomicBool, Ordering};

/// The id `setitimer(ITIMER_REAL)` uses among a process's timers (never a `timer_create` id).
pub const ITIMER_REAL_ID: i32 = -1;
/// Timers per process (Linux bounds them by RLIMIT_SIGPENDING; EAGAIN past it).
const MAX_TIMERS: usize = 256;

/// How a timer notifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// SIGEV_NONE: nothing (the timer is read with `timer_gettime`).
    None,
    /// SIGEV_SIGNAL: `signo` to the process.
    Process { signo: u32 },
    /// SIGEV_THREAD_ID: `signo` to thread `tid`.
    Thread { signo: u32, tid: Tid },
}

struct PosixTimer {
    tgid: Tid,
    /// On CLOCK_REALTIME (absolute times are converted when armed).
    realtime: bool,
    id: i32,
    notify: Notify,
    value: u64,
    /// Period (0: one-shot).
    interval_ns: u64,
    /// Next expiry on the monotonic clock (0: disarmed).
    expires_ns: u64,
    /// Periods missed at the last expiry (`timer_getoverrun`, `si_overrun`).
    overrun: i32,
    /// Bumped at every (re)arm or delete: an older kernel timer's expiry is stale.
    gen: u32,
    /// A periodic timer fired and waits for its signal to be taken to be re-armed (Linux's
    /// `it_requeue_pending`); also a fired periodic SIGEV_NONE timer, read by arithmetic.
    requeue_pending: bool,
    /// Fired, its signal not sent yet by `ktimers` (several expiries before it runs send one
    /// signal, as Linux's one preallocated sigqueue per timer).
    to_send: bool,
    armed: Option<(u32, TimerId)>,
}

struct Table {
    /// By global key (`serial`), which the kernel timer's data carries.
    timers: BTreeMap<u32, PosixTimer>,
    next_serial: u32,
}

static TABLE: IrqLock<Table> = IrqLock::new(Table { timers: BTreeMap::new(), next_serial: 1 });
/// Some timer has `to_send` set: `ktimers` has work. A flag per timer and this one, never a
/// queue: an interrupt cannot find it full (a queue sized when timers were made dropped
/// expiries once timers fired faster than `ktimers` ran).
static KTIMERS_PENDING: AtomicBool = AtomicBool::new(false);
static KTIMERS_WORK: WaitQueue = WaitQueue::new();
static KTIMERS_STARTED: AtomicBool = AtomicBool::new(false);

fn find(t: &Table, tgid: Tid, id: i32) -> Option<u32> {
    t.timers.iter().find(|(_, x)| x.tgid == tgid && x.id == id).map(|(&s, _)| s)
}

/// Starts `ktimers` the first time a timer is made.
fn ensure_ktimers() -> Result<(), Errno> {
    if KTIMERS_STARTED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    // FIFO 1, as PREEMPT_RT's `ktimers/N`: above every fair task, below the RT tasks.
    let opts = task::SpawnOptions::new("ktimers").kthread().detached().policy(cadence_sched::Policy::Fifo, 1, 0);
    crate::sched::spawn(opts, ktimers).map_err(|_| {
        KTIMERS_STARTED.store(false, Ordering::Release);
        Errno::EAGAIN
    })?;
    Ok(())
}

fn ktimers() -> i32 {
    let mut batch: Vec<(u32, u32, Tid, i32, Notify, u64, i32)> = Vec::new();
    loop {
        KTIMERS_WORK.wait_until_uninterruptible(|| KTIMERS_PENDING.swap(false, Ordering::AcqRel));
        {
            // Room first, outside the lock (a few more than there are timers now).
            let n = TABLE.lock().timers.len() + 8;
            batch.reserve(n); // `batch` is empty: room for n
            let mut t = TABLE.lock();
            for (&serial, x) in t.timers.iter_mut().filter(|(_, x)| x.to_send) {
                if batch.len() == batch.capacity() {
                    KTIMERS_PENDING.store(true, Ordering::Release); // the rest next round
                    break;
                }
                x.to_send = false;
                batch.push((serial, x.gen, x.tgid, x.id, x.notify, x.value, x.overrun));
            }
        }
        for (serial, gen, tgid, id, notify, value, overrun) in batch.drain(..) {
            // ITIMER_REAL's SIGALRM is the kernel's (Linux's SEND_SIG_PRIV: SI_KERNEL).
            let info = |signo| {
                if id == ITIMER_REAL_ID {
                    SigInfo::kill(signo, code::SI_KERNEL, 0)
                } else {
                    SigInfo { signo, code: code::SI_TIMER, errno: 0, fields: SigFields::Timer { tid: id, overrun, value } }
                }
            };
            let target = match notify {
                Notify::None => None,
                Notify::Process { signo } => {
                    task::find(tgid).filter(|l| !l.process.group.exited.load(Ordering::Acquire)).map(|l| (l, signo, true))
                }
                Notify::Thread { signo, tid } => {
                    task::find(tid).filter(|t| t.process.tgid == tgid && t.state() != task::TaskState::Dead).map(|t| (t, signo, false))
                }
            };
            if let Some((target, signo, whole_process)) = target {
                // An ignored signal is never taken, so it would never re-arm the timer: it is
                // re-armed here, at least a tick on (Linux's posix_timer_fn, "protection
                // against a storm of ignored signals").
                let b = 1u64 << (signo - 1);
                let ignored = target.process.group.ignored.load(Ordering::Relaxed) & b != 0
                    && target.process.signals.blocked.load(Ordering::Relaxed) & b == 0;
                let _ = super::signal::send(&target, signo, info(signo), whole_process, false);
                if ignored {
                    rearm_ignored(serial, gen);
                }
            }
        }
    }
}

/// A timer's kernel timer fired (interrupt context): hand it to `ktimers`; a periodic one
/// waits for its signal to be taken ([`on_dequeue`]) to be re-armed.
fn expired(_cpu: u32, data: u64) {
    let (serial, gen) = ((data >> 32) as u32, data as u32);
    let mut t = TABLE.lock();
    let Some(x) = t.timers.get_mut(&serial).filter(|x| x.gen == gen) else { return };
    x.armed = None;
    // `overrun` stays what the last taken signal reported (Linux's it_overrun_last) until the
    // next is taken.
    if x.interval_ns > 0 {
        x.requeue_pending = true;
    } else {
        x.expires_ns = 0;
    }
    if x.notify != Notify::None {
        x.to_send = true;
        drop(t);
        KTIMERS_PENDING.store(true, Ordering::Release);
        KTIMERS_WORK.wake_all();
    }
}

/// Re-arms a fired periodic timer whose signal was ignored, past now plus at least a tick.
fn rearm_ignored(serial: u32, gen: u32) {
    let mut t = TABLE.lock();
    let Some(x) = t.timers.get_mut(&serial).filter(|x| x.gen == gen && x.requeue_pending) else { return };
    let tick = crate::timer::tick_period_ns();
    let now = crate::time::uptime_ns();
    rearm(x, serial, if x.interval_ns < tick { now + tick } else { now });
}

/// Re-arms a fired periodic timer past `past`: the periods missed become its overrun (Linux's
/// it_overrun_last), and its kernel timer is armed on this CPU.
fn rearm(x: &mut PosixTimer, serial: u32, past: u64) {
    x.requeue_pending = false;
    let missed = forward(x, past);
    x.overrun = missed.min(i32::MAX as u64) as i32;
    arm_kernel_timer(x, serial);
}

/// Arms `x`'s kernel timer at `x.expires_ns` on this CPU, tagged with its serial and generation.
fn arm_kernel_timer(x: &mut PosixTimer, serial: u32) {
    x.armed = crate::timer::arm_here(x.expires_ns, expired, u64::from(serial) << 32 | u64::from(x.gen));
}

/// Moves a fired periodic timer's expiry past `now`; the periods that passed after the
/// expiry that fired (its overrun).
fn forward(x: &mut PosixTimer, now: u64) -> u64 {
    let (next, periods) = cadence_sched::timerq::forward(x.expires_ns, x.interval_ns, now);
    x.expires_ns = next;
    periods.saturating_sub(1)
}

/// The calling thread takes signal `sig` with `info` (the signal code's dequeue, process
/// `tgid`): a periodic timer behind it is re-armed past now, its overrun (the periods that
/// passed since it fired) in `info` and in `timer_getoverrun` (Linux's `posixtimer_rearm`;
/// SIGALRM re-arms ITIMER_REAL, whoever sent it, as Linux's `dequeue_signal`).
pub fn on_dequeue(tgid: Tid, sig: u32, info: &mut SigInfo) {
    let mut ids = [None, None];
    if sig == cadence_abi::signal::SIGALRM {
        ids[0] = Some(ITIMER_REAL_ID);
    }
    if info.code == code::SI_TIMER {
        if let SigFields::Timer { tid, .. } = info.fields {
            ids[1] = Some(tid);
        }
    }
    let mut t = TABLE.lock();
    for id in ids.into_iter().flatten() {
        let Some(serial) = find(&t, tgid, id) else { continue };
        let x = t.timers.get_mut(&serial).expect("just found");
        if !x.requeue_pending {
            continue;
        }
        rearm(x, serial, crate::time::uptime_ns());
        if id >= 0 {
            if let SigFields::Timer { overrun, .. } = &mut info.fields {
                *overrun = x.overrun;
            }
        }
    }
}

/// (Re)arms or disarms (`value_ns` 0) `x`; `value_ns` is relative to now or, with
/// `absolute_mono`, the monotonic expiry.
fn arm(x: &mut PosixTimer, serial: u32, value_ns: u64, interval_ns: u64, absolute_mono: bool) {
    if let Some((cpu, id)) = x.armed.take() {
        crate::timer::cancel(cpu, id);
    }
    x.gen = x.gen.wrapping_add(1);
    x.interval_ns = interval_ns;
    x.overrun = 0;
    x.requeue_pending = false;
    x.to_send = false;
    if value_ns == 0 {
        x.expires_ns = 0;
        return;
    }
    let now = crate::time::uptime_ns();
    x.expires_ns = if absolute_mono { value_ns.max(1) } else { now.saturating_add(value_ns) };
    arm_kernel_timer(x, serial);
}

/// What a timer reads as: (time to the next expiry, interval), ns. A fired periodic timer
/// waiting to be re-armed reads as if it had been (Linux's `common_timer_get` forwards it).
fn reading(x: &PosixTimer) -> (u64, u64) {
    let now = crate::time::uptime_ns();
    let expires = if x.requeue_pending { cadence_sched::timerq::forward(x.expires_ns, x.interval_ns, now).0 } else { x.expires_ns };
    let left = if expires == 0 { 0 } else { expires.saturating_sub(now).max(1) };
    (left, x.interval_ns)
}

/// Adds a disarmed timer (under `t`).
fn insert(t: &mut Table, tgid: Tid, id: i32, realtime: bool, notify: Notify, value: u64) {
    let serial = t.next_serial;
    t.next_serial = t.next_serial.wrapping_add(1).max(1);
    let x = PosixTimer {
        tgid,
        realtime,
        id,
        notify,
        value,
        interval_ns: 0,
        expires_ns: 0,
        overrun: 0,
        gen: 0,
        requeue_pending: false,
        to_send: false,
        armed: None,
    };
    t.timers.insert(serial, x);
}

/// `timer_create`: a new disarmed timer of process `tgid`; returns its id. EAGAIN past
/// [`MAX_TIMERS`] timers.
pub fn create(tgid: Tid, realtime: bool, notify: Notify, value: Option<u64>) -> Result<i32, Errno> {
    ensure_ktimers()?;
    let mut t = TABLE.lock();
    let count = t.timers.values().filter(|x| x.tgid == tgid && x.id >= 0).count();
    if count >= MAX_TIMERS {
        return Err(Errno::EAGAIN);
    }
    let id = (0..).find(|&i| find(&t, tgid, i).is_none()).expect("fewer than MAX_TIMERS ids are taken");
    insert(&mut t, tgid, id, realtime, notify, value.unwrap_or(id as u64));
    Ok(id)
}

/// `timer_settime`: arms timer `id` (`value_ns` 0 disarms), `absolute`: at that time of the
/// timer's clock (a CLOCK_REALTIME time converted to monotonic now); returns the old (left,
/// interval). EINVAL for no such timer.
pub fn settime(tgid: Tid, id: i32, value_ns: u64, interval_ns: u64, absolute: bool) -> Result<(u64, u64), Errno> {
    let mut t = TABLE.lock();
    let serial = find(&t, tgid, id).ok_or(Errno::EINVAL)?;
    let x = t.timers.get_mut(&serial).expect("just found");
    let old = reading(x);
    let value_ns = if absolute && x.realtime && value_ns != 0 { crate::time::realtime_to_uptime(value_ns).max(1) } else { value_ns };
    arm(x, serial, value_ns, interval_ns, absolute);
    Ok(old)
}

/// `timer_gettime`: (left, interval) ns; EINVAL for no such timer.
pub fn gettime(tgid: Tid, id: i32) -> Result<(u64, u64), Errno> {
    let t = TABLE.lock();
    let serial = find(&t, tgid, id).ok_or(Errno::EINVAL)?;
    Ok(reading(&t.timers[&serial]))
}

/// `timer_getoverrun`; EINVAL for no such timer.
pub fn getoverrun(tgid: Tid, id: i32) -> Result<i32, Errno> {
    let t = TABLE.lock();
    let serial = find(&t, tgid, id).ok_or(Errno::EINVAL)?;
    Ok(t.timers[&serial].overrun)
}

/// `timer_delete`; EINVAL for no such timer.
pub fn delete(tgid: Tid, id: i32) -> Result<(), Errno> {
    let mut t = TABLE.lock();
    let serial = find(&t, tgid, id).ok_or(Errno::EINVAL)?;
    let mut x = t.timers.remove(&serial).expect("just found");
    arm(&mut x, serial, 0, 0, false);
    Ok(())
}

/// `setitimer(ITIMER_REAL)` / `alarm`: SIGALRM to the process after `value_ns`, then every
/// `interval_ns`; returns the old (left, interval).
pub fn set_real(tgid: Tid, value_ns: u64, interval_ns: u64) -> Result<(u64, u64), Errno> {
    if value_ns != 0 {
        ensure_ktimers()?;
        let mut t = TABLE.lock();
        if find(&t, tgid, ITIMER_REAL_ID).is_none() {
            insert(&mut t, tgid, ITIMER_REAL_ID, false, Notify::Process { signo: cadence_abi::signal::SIGALRM }, 0);
        }
    } else if find(&TABLE.lock(), tgid, ITIMER_REAL_ID).is_none() {
        return Ok((0, 0));
    }
    settime(tgid, ITIMER_REAL_ID, value_ns, interval_ns, false)
}

/// `getitimer(ITIMER_REAL)`: (left, interval).
pub fn get_real(tgid: Tid) -> (u64, u64) {
    gettime(tgid, ITIMER_REAL_ID).unwrap_or((0, 0))
}

/// Process `tgid` ended: its timers go.
pub fn exit_process(tgid: Tid) {
    TABLE.lock().timers.retain(|&serial, x| {
        if x.tgid == tgid {
            arm(x, serial, 0, 0, false); // disarmed: its kernel timer is cancelled
        }
        x.tgid != tgid
    });
}
