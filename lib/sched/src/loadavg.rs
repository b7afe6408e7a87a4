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

/// `x^n` for `x` in fixed point with `frac_bits` fraction bits, rounded at each step (Linux's
/// `fixed_power_int`): O(log n) multiplications, by squaring.
pub fn fixed_power(mut x: u64, frac_bits: u32, mut n: u64) -> u64 {
    let one = 1u64 << frac_bits;
    let half = one >> 1;
    let mut result = one;
    while n > 0 {
        if n & 1 == 1 {
            result = (result * x + half) >> frac_bits;
        }
        n >>= 1;
        if n > 0 {
            x = (x * x + half) >> frac_bits;
        }
    }
    result
}

/// `n` steps of [`calc_load`] with the same `active` at once (Linux's `calc_load_n`, used when
/// sampling windows were missed): the decay `exp^n`, then one step.
pub fn calc_load_n(load: u64, exp: u64, active: u64, n: u64) -> u64 {
    calc_load(load, fixed_power(exp, FSHIFT, n), active)
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

    /// Folds in `n` samples of `nr_active` at once (`n` = 0 changes nothing): the windows a
    /// machine with every CPU idle and tickless let pass unsampled, caught up when the next
    /// sample is taken (Linux's `calc_global_nohz`).
    pub fn sample_n(&mut self, nr_active: u64, n: u64) {
        if n == 0 {
            return;
        }
        let active = nr_active * FIXED_1;
        for (avg, exp) in self.avenrun.iter_mut().zip(EXP) {
            *avg = calc_load_n(*avg, exp, active, n);
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

    #[test]
    fn fixed_power_is_exact_on_easy_cases() {
        assert_eq!(fixed_power(FIXED_1 / 2, FSHIFT, 0), FIXED_1);
        assert_eq!(fixed_power(FIXED_1 / 2, FSHIFT, 1), FIXED_1 / 2);
        assert_eq!(fixed_power(FIXED_1 / 2, FSHIFT, 3), FIXED_1 / 8);
        assert_eq!(fixed_power(FIXED_1, FSHIFT, 1_000_000), FIXED_1);
        assert_eq!(fixed_power(EXP[0], FSHIFT, u64::MAX), 0, "decays to nothing, no overflow");
    }

    #[test]
    fn four_hours_idle_empty_every_average() {
        let mut l = LoadAvg { avenrun: [40 * FIXED_1; 3] };
        l.sample_n(0, 4 * 720);
        assert_eq!(l.avenrun, [0, 0, 0]);
        let mut k = LoadAvg { avenrun: [5; 3] };
        k.sample_n(3, 0);
        assert_eq!(k.avenrun, [5; 3], "no window, no change");
    }

    proptest! {
        /// Missed windows caught up at once land where sampling each would have, within the
        /// rounding of the power and of each step (a percent of the larger of the two loads).
        #[test]
        fn catching_up_matches_sampling_each_window(start in 0u64..(64 * FIXED_1), n in 1u64..400, active in 0u64..8) {
            let mut each = LoadAvg { avenrun: [start; 3] };
            for _ in 0..n {
                each.sample(active);
            }
            let mut once = LoadAvg { avenrun: [start; 3] };
            once.sample_n(active, n);
            // Each step of the one-by-one path rounds by up to one (`calc_load` rounds up while
            // the load rises and truncates while it falls: 12 steps from 40 at EXP_15 fall to
            // 28, the exact decay to 37), which the single step does once.
            let tolerance = start.max(active * FIXED_1) / 100 + 8 + n;
            for (a, b) in once.avenrun.iter().zip(each.avenrun) {
                prop_assert!(a.abs_diff(b) <= tolerance, "{} vs {} (start {}, n {}, active {})", a, b, start, n, active);
            }
        }
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
