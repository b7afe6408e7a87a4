//! timerfd (Linux `fs/timerfd.c`): a timer whose expirations are read from a file descriptor
//! as an 8-byte count, and which `poll` reports readable once it has expired.
//!
//! Each timerfd sits in a slot of [`SLOTS`]; its armed kernel timer (`crate::timer`, on the
//! CPU that armed it) carries the slot and a generation, so an expiry of an older arming is
//! ignored. The expiry runs in interrupt context: it counts one expiration, marks the timer
//! `expired` and wakes the readers (one queue for all timerfds: a reader rechecks its own
//! count) and `poll`. It never re-arms: a periodic timer is re-armed by the `read` (or
//! `timerfd_gettime`) that finds it expired, past now, the periods missed meanwhile added to
//! the count (Linux's `timerfd_tmrproc` returns HRTIMER_NORESTART and `timerfd_read` calls
//! `hrtimer_forward_now`). So a periodic timer fires at most once per read, whatever its
//! period: re-armed in the interrupt, a 1 ns period expired again before its handler had
//! returned, and the timer interrupt never ended (issue 59: stress-ng's timerfd stressor
//! soft-locked CPU 0). Nothing is allocated or freed in the interrupt: the slot table grows
//! when a timerfd is made, and a closed timerfd leaves its slot in process context.
//!
//! Times are kept on the monotonic clock; a CLOCK_REALTIME absolute expiry is converted when
//! armed (a later `clock_settime` does not move it, and TFD_TIMER_CANCEL_ON_SET is accepted
//! without cancelling).

use crate::sched::wait::{WaitQueue, POLL};
use crate::sync::IrqLock;
use crate::timer::TimerId;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicU32, Ordering};

/// A timerfd's timer.
struct State {
    /// Next expiry on the monotonic clock (0: disarmed).
    expires_ns: u64,
    /// Period (0: one-shot).
    interval_ns: u64,
    /// Expirations not read yet.
    ticks: u64,
    /// The kernel timer fired and a periodic timer waits for a read to be re-armed (Linux's
    /// `ctx->expired`).
    expired: bool,
    /// Bumped at every (re)arm: an older kernel timer's expiry is stale.
    gen: u32,
    armed: Option<(u32, TimerId)>,
}

/// One timerfd (what the open file holds; closing the last fd disarms it).
pub struct TimerFd {
    slot: AtomicU32,
    /// On CLOCK_REALTIME (absolute times are converted when armed).
    realtime: bool,
    st: IrqLock<State>,
}

/// Every timerfd by slot (free slots `None`). Lock order: `SLOTS`, then a timerfd's `st`.
static SLOTS: IrqLock<Vec<Option<Arc<TimerFd>>>> = IrqLock::new(Vec::new());
/// The readers of every timerfd.
static READERS: WaitQueue = WaitQueue::new();

/// A new, disarmed timerfd.
pub fn create(realtime: bool) -> Arc<TimerFd> {
    let tf = Arc::new(TimerFd {
        slot: AtomicU32::new(0),
        realtime,
        st: IrqLock::new(State { expires_ns: 0, interval_ns: 0, ticks: 0, expired: false, gen: 0, armed: None }),
    });
    let mut slots = crate::sync::lock_with_room(&SLOTS, 1, |v| v);
    let slot = match slots.iter().position(Option::is_none) {
        Some(i) => i,
        None => {
            slots.push(None);
            slots.len() - 1
        }
    };
    tf.slot.store(slot as u32, Ordering::Relaxed);
    slots[slot] = Some(tf.clone());
    tf
}

/// The kernel timer of slot `data >> 32`, generation `data as u32`, fired (interrupt context):
/// one expiration, and the readers woken. A periodic timer stays expired until read.
fn expired(_cpu: u32, data: u64) {
    let (slot, gen) = ((data >> 32) as usize, data as u32);
    {
        let slots = SLOTS.lock();
        let Some(Some(tf)) = slots.get(slot) else { return };
        let mut s = tf.st.lock();
        if s.gen != gen {
            return;
        }
        s.armed = None;
        s.ticks = s.ticks.saturating_add(1);
        s.expired = true;
        if s.interval_ns == 0 {
            s.expires_ns = 0;
        }
    }
    READERS.wake_all();
    POLL.wake_all();
}

/// An expired periodic timer is moved past now and re-armed on this CPU; the periods that
/// passed after the expiry that was counted are added to its count (Linux's `ticks +=
/// hrtimer_forward_now(..) - 1`).
fn rearm_if_expired(s: &mut State, slot: u32) {
    if !s.expired || s.interval_ns == 0 {
        return;
    }
    s.expired = false;
    let (next, periods) = cadence_sched::timerq::forward(s.expires_ns, s.interval_ns, crate::time::uptime_ns());
    s.expires_ns = next;
    s.ticks = s.ticks.saturating_add(periods.saturating_sub(1));
    arm_kernel_timer(s, slot);
}

/// Arms `s`'s kernel timer at `s.expires_ns` on this CPU, tagged with its slot and generation.
fn arm_kernel_timer(s: &mut State, slot: u32) {
    s.armed = crate::timer::arm_here(s.expires_ns, expired, u64::from(slot) << 32 | u64::from(s.gen));
}

/// What the timer reads as: (time to the next expiry, interval), ns.
fn reading(s: &State) -> (u64, u64) {
    let left = if s.expires_ns == 0 { 0 } else { s.expires_ns.saturating_sub(crate::time::uptime_ns()).max(1) };
    (left, s.interval_ns)
}

impl TimerFd {
    /// `timerfd_settime`: arms (or with `value_ns` 0 disarms) the timer, `value_ns` from now or,
    /// with `absolute`, on the timerfd's clock; unread expirations are dropped. The old
    /// (time left, interval).
    pub fn settime(&self, value_ns: u64, interval_ns: u64, absolute: bool) -> (u64, u64) {
        let now = crate::time::uptime_ns();
        let expires = if value_ns == 0 {
            0
        } else if !absolute {
            now.saturating_add(value_ns)
        } else if self.realtime {
            // The realtime clock's offset from the monotonic one, now.
            let offset = crate::time::realtime_ns().saturating_sub(now);
            value_ns.saturating_sub(offset).max(1)
        } else {
            value_ns
        };
        let mut s = self.st.lock();
        let old = reading(&s);
        if let Some((cpu, id)) = s.armed.take() {
            crate::timer::cancel(cpu, id);
        }
        s.gen = s.gen.wrapping_add(1);
        s.ticks = 0;
        s.expired = false;
        s.interval_ns = interval_ns;
        s.expires_ns = expires;
        if expires != 0 {
            arm_kernel_timer(&mut s, self.slot.load(Ordering::Relaxed));
        }
        old
    }

    /// `timerfd_gettime`: (time to the next expiry, interval); an expired periodic timer is
    /// re-armed first (as Linux's).
    pub fn gettime(&self) -> (u64, u64) {
        let mut s = self.st.lock();
        rearm_if_expired(&mut s, self.slot.load(Ordering::Relaxed));
        reading(&s)
    }

    /// `read`: the expirations since the last read as 8 bytes, waiting for one unless
    /// `nonblock` (EAGAIN). EINVAL for a buffer under 8 bytes.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        loop {
            {
                let mut s = self.st.lock();
                if s.ticks > 0 {
                    rearm_if_expired(&mut s, self.slot.load(Ordering::Relaxed));
                    let n = core::mem::take(&mut s.ticks);
                    drop(s);
                    buf[..8].copy_from_slice(&n.to_le_bytes());
                    return Ok(8);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            READERS.wait_until_interruptible(|| self.st.lock().ticks > 0).map_err(|_| Errno::ERESTARTSYS)?;
        }
    }

    /// Has it expired since the last read (`poll`'s readable)?
    pub fn readable(&self) -> bool {
        self.st.lock().ticks > 0
    }

    /// An inode-like number for `fstat`.
    pub fn id(&self) -> u64 {
        (1 << 61) | u64::from(self.slot.load(Ordering::Relaxed))
    }

    /// The last fd is closed: disarm and give the slot back.
    pub fn close(&self) {
        let taken = {
            let mut slots = SLOTS.lock();
            let mut s = self.st.lock();
            if let Some((cpu, id)) = s.armed.take() {
                crate::timer::cancel(cpu, id);
            }
            s.gen = s.gen.wrapping_add(1);
            drop(s);
            slots.get_mut(self.slot.load(Ordering::Relaxed) as usize).and_then(Option::take)
        };
        // Dropped with the table unlocked: never the last reference (the caller holds one).
        drop(taken);
    }
}
