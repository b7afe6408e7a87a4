//! Load averages (Linux `kernel/sched/loadavg.c`): the number of runnable tasks, sampled every
//! [`LOAD_FREQ_NS`], decayed into 1-, 5- and 15-minute exponential averages in 11-bit fixed
//! point (`/proc/loadavg`, `sysinfo`).
//!
//! `avenrun' = avenrun · e + active · (1 − e)` with `e = exp(−5 s / period)`, rounded up
//! while the load rises (so a constant load is reached, not approached forever from below).

/// Fixed-point shift: 1.0 is `1 << FSHIFT`.
pub const FSHIFT: u32 = 11;
/// 1.0 in fixed point.
pub const FIXED_1: u64 = 1 << FSHIFT;
/// `exp(−5/60)`, `exp(−5/300)`, `exp(−5/900)` in fixed point (Linux's EXP_1, EXP_5, EXP_15).
pub const EXP: [u64; 3] = [1884, 2014, 2037];
/// The sampling period (Linux's `LOAD_FREQ`, 5 s).
pub const LOAD_FREQ_NS: u64 = 5_000_000_000;

/// One step of one average (Linux's `calc_load`): `load` and `active` in fixed point.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        newload += FIXED_1 - 1;
    }
    newload / FIXED_1
}

/// The three averages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadAvg {
    /// 1-, 5- and 15-minute averages, fixed point.
    pub avenrun: [u64; 3],
}

impl LoadAvg {
    /// Folds in one sample: `nr_active` runnable (and uninterruptible) tasks.
    pub fn sample(&mut self, nr_active: u64) {
        let active = nr_active * FIXED_1;
        for (avg, exp) in self.avenrun.iter_mut().zip(EXP) {
            *avg = calc_load(*avg, exp, active);
        }
    }

    /// An average as Linux prints it: integer part and hundredths (`LOAD_INT`, `LOAD_FRAC`).
    pub fn format(v: u64) -> (u64, u64) {
        let v = v + FIXED_1 / 200; // Linux adds this before printing: rounds to hundredths
        (v >> FSHIFT, ((v & (FIXED_1 - 1)) * 100) >> FSHIFT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_busy_task_for_a_minute_reads_as_linux_does() {
        // 12 samples (1 min) of one runnable task from idle: 1 - e^-1 = 0.63 for the 1-min
        // average (Linux prints 0.63 after a minute of one spinner on an idle machine).
        let mut l = LoadAvg::default();
        for _ in 0..12 {
            l.sample(1);
        }
        assert_eq!(LoadAvg::format(l.avenrun[0]), (0, 63));
    }

    proptest! {
        #[test]
        fn a_constant_load_is_reached_and_kept(n in 0u64..64, steps in 200usize..400) {
            // From any start, a constant load converges to exactly n in every average.
            let mut l = LoadAvg { avenrun: [7 * FIXED_1, 0, 3 * FIXED_1] };
            for _ in 0..steps * 10 {
                l.sample(n);
            }
            for avg in l.avenrun {
                prop_assert!(avg.abs_diff(n * FIXED_1) <= FIXED_1 / 100, "avg {} for n {}", avg, n);
            }
        }

        #[test]
        fn averages_move_toward_the_sample(start in 0u64..(64 * FIXED_1), n in 0u64..64) {
            let mut l = LoadAvg { avenrun: [start; 3] };
            l.sample(n);
            for avg in l.avenrun {
                let target = n * FIXED_1;
                prop_assert!(avg.abs_diff(target) <= start.abs_diff(target), "{} -> {} (target {})", start, avg, target);
            }
        }
    }
}
