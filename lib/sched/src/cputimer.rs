//! The process CPU-time interval timers, `ITIMER_PROF` and `ITIMER_VIRTUAL` (Linux
//! `kernel/time/itimer.c` and `check_cpu_itimer` in `posix-cpu-timers.c`), pure: the kernel
//! keeps one [`CpuItimer`] of each per process, passes in the process's CPU-time sample, and
//! checks them at each tick.
//!
//! The samples are tick-sampled, as Linux's without virtual CPU accounting: each tick charges
//! its period to the running process, as user time (`ITIMER_VIRTUAL`'s clock) if the tick
//! interrupted user mode, else as system time; `ITIMER_PROF`'s clock is their sum. So a timer
//! fires at a tick, at most once per tick (one signal, and the expiry moves on by one period
//! only: a period shorter than a tick keeps it due, as on Linux), and a newly armed value gets a
//! tick added ("to be consistent with the rest of the timers", Linux's `set_cpu_itimer`).

/// One CPU-time interval timer: expiry on its clock (ns of the process's CPU time; 0 = off)
/// and period (0 = one-shot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuItimer {
    /// Expiry on the timer's clock (ns of CPU time; 0 = disarmed).
    pub expires: u64,
    /// Period (ns; 0 = one-shot).
    pub incr: u64,
}

impl CpuItimer {
    /// What `getitimer` reads at clock sample `now`: (value left, interval); a timer past due
    /// reads one tick left ("about to fire"), a disarmed one 0.
    pub fn read(&self, now: u64, tick_ns: u64) -> (u64, u64) {
        let left = match self.expires {
            0 => 0,
            e if e < now => tick_ns,
            e => e - now,
        };
        (left, self.incr)
    }

    /// `setitimer` with `value` and `interval` (ns; `value` 0 disarms) at clock sample `now`:
    /// returns the old (value left, interval) as Linux reports them (a timer past due: one
    /// tick).
    pub fn set(&mut self, value: u64, interval: u64, now: u64, tick_ns: u64) -> (u64, u64) {
        let old = (
            match self.expires {
                0 => 0,
                e if e <= now => tick_ns,
                e => e - now,
            },
            self.incr,
        );
        self.expires = if value == 0 { 0 } else { value.saturating_add(tick_ns).saturating_add(now).max(1) };
        self.incr = interval;
        old
    }

    /// The tick's check at clock sample `now`: whether the timer fires (its signal is sent),
    /// the expiry moved on by one period or disarmed.
    pub fn check(&mut self, now: u64) -> bool {
        if self.expires == 0 || now < self.expires {
            return false;
        }
        self.expires = if self.incr == 0 { 0 } else { self.expires.saturating_add(self.incr) };
        true
    }

    /// Armed?
    pub fn armed(&self) -> bool {
        self.expires != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TICK: u64 = 4_000_000;

    #[test]
    fn arms_a_tick_late_and_reads_what_is_left() {
        let mut t = CpuItimer::default();
        assert_eq!(t.set(10_000_000, 1_000, 5_000_000, TICK), (0, 0), "was off");
        assert_eq!(t.expires, 5_000_000 + 10_000_000 + TICK);
        assert_eq!(t.read(5_000_000, TICK), (10_000_000 + TICK, 1_000));
        assert_eq!(t.read(t.expires + 1, TICK), (TICK, 1_000), "past due: about to fire");
        assert_eq!(t.set(0, 0, t.expires, TICK), (TICK, 1_000), "disarmed at its expiry");
        assert!(!t.armed());
        assert_eq!(t.read(123, TICK), (0, 0));
    }

    #[test]
    fn fires_once_per_check_and_moves_on_one_period() {
        let mut t = CpuItimer::default();
        t.set(1_000, 1_000, 0, TICK);
        assert!(!t.check(TICK));
        assert!(t.check(TICK + 1_000));
        assert_eq!(t.expires, TICK + 2_000, "one period on, still due at the next tick");
        assert!(t.check(2 * TICK));
        let mut once = CpuItimer::default();
        once.set(1, 0, 0, TICK);
        assert!(once.check(TICK + 1));
        assert!(!once.armed());
        assert!(!once.check(u64::MAX));
    }

    proptest! {
        #[test]
        fn a_periodic_timer_fires_at_every_tick_once_due(value in 1u64..100_000_000, incr in 1u64..100_000_000, ticks in 1u64..200) {
            let mut t = CpuItimer::default();
            t.set(value, incr, 0, TICK);
            let mut fired = 0;
            for k in 1..=ticks {
                let now = k * TICK;
                let due = t.expires <= now;
                prop_assert_eq!(t.check(now), due);
                fired += u64::from(due);
            }
            // Never more than one a tick, never more than the periods that passed.
            prop_assert!(fired <= ticks);
            let elapsed = (ticks * TICK).saturating_sub(value + TICK);
            if ticks * TICK >= value + TICK {
                prop_assert!(fired >= 1);
                prop_assert!(fired <= elapsed / incr + 1);
            } else {
                prop_assert_eq!(fired, 0);
            }
        }
    }
}
