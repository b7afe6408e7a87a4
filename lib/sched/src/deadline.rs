//! SCHED_DEADLINE policy (issue #16, first part): parameter checks, bandwidth and admission
//! control, the CBS rules of one entity, the EDF order, and `cpudl` (Linux's heap of CPUs by
//! earliest deadline for global EDF push). Pure: time comes in as `now_ns`. Linux 6.1's
//! `kernel/sched/deadline.c`, `cpudeadline.c` and `syscalls.c`, which
//! `Documentation/scheduler/sched-deadline.rst` describes.
//!
//! # Parameters ([`DlParams::check`], Linux `__checkparam_dl`)
//! `deadline != 0`; `runtime >= 1024` ns (`1 << DL_SCALE`); neither deadline nor period has
//! bit 63 set; with `period = period or deadline`: `runtime <= deadline <= period`; and
//! `sysctl_sched_dl_period_min` (100 µs) `<= period <=` `sysctl_sched_dl_period_max` (2^22 µs,
//! about 4.19 s). Anything else is `EINVAL`.
//!
//! # Bandwidth and admission ([`to_ratio`], [`DlAdmission`], Linux `__dl_overflow`)
//! A task's bandwidth is `runtime << 20 / period` (`BW_SHIFT` = 20, so 1.0 is `1 << 20`). The
//! root domain admits a new or changed task unless
//! `bw × cpus < total_bw − old_bw + new_bw`, with `bw = to_ratio(sched_rt_period_us,
//! sched_rt_runtime_us)` (no limit when `sched_rt_runtime_us` is −1): `EBUSY`.
//!
//! # CBS ([`DlEntity`])
//! * **Wakeup** (`update_dl_entity`): if the current deadline has passed, or the remaining
//!   runtime over the time left to the deadline exceeds the task's density
//!   (`runtime / (deadline − now) > dl_runtime / dl_deadline`, `dl_entity_overflow`, both in
//!   `DL_SCALE` units as Linux), the task gets a new period: `deadline = now + dl_deadline`,
//!   `runtime = dl_runtime`. A constrained task (`dl_deadline < dl_period`) whose deadline
//!   has not passed keeps it with runtime cut to `density × laxity` (the revised wakeup
//!   rule, `update_dl_revised_wakeup`).
//! * **Charging** (`update_curr_dl`): running time is taken from `runtime`; at `runtime <= 0`
//!   the task is throttled until the start of its next period,
//!   `deadline − dl_deadline + dl_period` (`dl_next_period`, the replenishment timer).
//! * **Replenishment** (`replenish_dl_entity`): while `runtime <= 0`, `deadline += dl_period`
//!   and `runtime += dl_runtime`; if the deadline is still in the past ("DL replenish lagged
//!   too much") the task starts a new period at `now`.
//!
//! # EDF and push ([`CpuDl`])
//! A run queue picks its earliest deadline. [`CpuDl`] keeps, for global EDF, every CPU's
//! earliest deadline in a max-heap, with the CPUs that run no deadline task in a free mask.
//! [`CpuDl::find`] answers "where can a task with this deadline run": a free CPU it may use,
//! else the top CPU (the latest earliest-deadline) if the task's deadline is earlier and it
//! may run there (`cpudl_find`).

use crate::cpumask::CpuMask;
use crate::errno::Errno;
use alloc::vec::Vec;

/// Linux `DL_SCALE`: runtimes and deadlines are compared in units of 1024 ns.
pub const DL_SCALE: u32 = 10;
/// Linux `BW_SHIFT`: bandwidths are fixed point with 20 fractional bits.
pub const BW_SHIFT: u32 = 20;
/// 1.0 in bandwidth units.
pub const BW_UNIT: u64 = 1 << BW_SHIFT;
/// `kernel.sched_dl_period_min_us` default (100 µs), in ns.
pub const DL_PERIOD_MIN_NS: u64 = 100_000;
/// `kernel.sched_dl_period_max_us` default (`1 << 22` µs), in ns.
pub const DL_PERIOD_MAX_NS: u64 = (1 << 22) * 1000;

/// `sched_attr`'s deadline fields (ns), and its deadline flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DlParams {
    /// `sched_runtime`.
    pub runtime: u64,
    /// `sched_deadline` (relative).
    pub deadline: u64,
    /// `sched_period` (0: equal to the deadline).
    pub period: u64,
    /// The deadline flags of `sched_flags` the task keeps (Linux `dl_se->flags`, part of its
    /// parameters: changing them is a parameter change): only
    /// [`SCHED_FLAG_DL_OVERRUN`](crate::consts::SCHED_FLAG_DL_OVERRUN), SIGXCPU when the task
    /// runs out of runtime. `check` drops other bits.
    pub flags: u64,
}

impl DlParams {
    /// Linux `__checkparam_dl` with the default period limits (module doc); `EINVAL` if not.
    /// Returns the parameters with `period` filled in.
    pub fn check(self) -> Result<DlParams, Errno> {
        self.check_with(DL_PERIOD_MIN_NS, DL_PERIOD_MAX_NS)
    }

    /// [`check`](Self::check) with explicit period limits (ns).
    pub fn check_with(self, period_min: u64, period_max: u64) -> Result<DlParams, Errno> {
        let DlParams { runtime, deadline, period, flags } = self;
        if deadline == 0 || runtime < (1 << DL_SCALE) {
            return Err(Errno::EINVAL);
        }
        if deadline & (1 << 63) != 0 || period & (1 << 63) != 0 {
            return Err(Errno::EINVAL);
        }
        let period = if period == 0 { deadline } else { period };
        if period < deadline || deadline < runtime {
            return Err(Errno::EINVAL);
        }
        if period < period_min || period > period_max {
            return Err(Errno::EINVAL);
        }
        Ok(DlParams { runtime, deadline, period, flags: flags & crate::consts::SCHED_FLAG_DL_OVERRUN })
    }

    /// The task's bandwidth, `runtime / period` (Linux `dl_bw`).
    pub fn bandwidth(&self) -> u64 {
        to_ratio(self.period, self.runtime)
    }

    /// The task's density, `runtime / deadline` (Linux `dl_density`).
    pub fn density(&self) -> u64 {
        to_ratio(self.deadline, self.runtime)
    }

    /// An implicit-deadline task (`deadline == period`).
    pub fn is_implicit(&self) -> bool {
        self.deadline == self.period
    }
}

/// Linux `to_ratio`: `runtime << BW_SHIFT / period` (0 for a zero period).
pub fn to_ratio(period: u64, runtime: u64) -> u64 {
    if period == 0 {
        return 0;
    }
    ((u128::from(runtime) << BW_SHIFT) / u128::from(period)).min(u128::from(u64::MAX)) as u64
}

/// A root domain's deadline bandwidth: the limit and what admitted tasks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlAdmission {
    /// Per-CPU limit (`to_ratio(rt_period, rt_runtime)`); `None`: no limit (`rt_runtime` −1).
    pub bw: Option<u64>,
    /// Sum of the admitted tasks' bandwidths.
    pub total_bw: u64,
    /// CPUs in the root domain.
    pub cpus: u32,
}

impl DlAdmission {
    /// The limit from `kernel.sched_rt_runtime_us` (−1: none) and `sched_rt_period_us`.
    pub fn new(rt_runtime_us: i64, rt_period_us: u64, cpus: u32) -> Self {
        let bw = (rt_runtime_us >= 0).then(|| to_ratio(rt_period_us, rt_runtime_us as u64));
        DlAdmission { bw, total_bw: 0, cpus }
    }

    /// Linux `__dl_overflow`: would replacing `old_bw` by `new_bw` pass the limit?
    pub fn overflows(&self, old_bw: u64, new_bw: u64) -> bool {
        match self.bw {
            None => false,
            Some(bw) => {
                let cap = u128::from(bw) * u128::from(self.cpus);
                cap < u128::from(self.total_bw.saturating_sub(old_bw)) + u128::from(new_bw)
            }
        }
    }

    /// Admits a change from `old_bw` (0 for a new deadline task) to `new_bw` (0 when it leaves
    /// the class): `EBUSY` if it would overflow, else the total is updated. Leaving always
    /// succeeds.
    pub fn change(&mut self, old_bw: u64, new_bw: u64) -> Result<(), Errno> {
        if new_bw > old_bw && self.overflows(old_bw, new_bw) {
            return Err(Errno::EBUSY);
        }
        self.total_bw = self.total_bw.saturating_sub(old_bw) + new_bw;
        Ok(())
    }
}

/// `a` is before `b` on a wrapping clock (Linux `dl_time_before`).
pub fn time_before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// One deadline task's CBS state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlEntity {
    /// Its parameters (checked).
    pub params: DlParams,
    /// Runtime left in this period (ns; ≤ 0 when exhausted).
    pub runtime: i64,
    /// Absolute deadline (ns since boot).
    pub deadline: u64,
    /// Out of runtime, waiting for the next period (the replenishment timer).
    pub throttled: bool,
}

impl DlEntity {
    /// A task entering the class: no deadline yet, so its first wakeup or enqueue gives it a
    /// new period ([`DlEntity::wakeup`]).
    pub fn new(params: DlParams) -> Self {
        DlEntity { params, runtime: 0, deadline: 0, throttled: false }
    }

    /// Linux `replenish_dl_new_period`: a full runtime and a deadline from `now`.
    pub fn new_period(&mut self, now: u64) {
        self.deadline = now.wrapping_add(self.params.deadline);
        self.runtime = self.params.runtime.min(i64::MAX as u64) as i64;
    }

    /// Linux `dl_entity_overflow`: would the remaining runtime, used before the current
    /// deadline, exceed the task's density? (Compared in `DL_SCALE` units.)
    pub fn overflows(&self, now: u64) -> bool {
        let left = (self.params.deadline >> DL_SCALE) as u128 * ((self.runtime.max(0) as u64) >> DL_SCALE) as u128;
        let right = (self.deadline.wrapping_sub(now) >> DL_SCALE) as u128 * (self.params.runtime >> DL_SCALE) as u128;
        right < left
    }

    /// The CBS wakeup rule (module doc, Linux `update_dl_entity`).
    pub fn wakeup(&mut self, now: u64) {
        let passed = time_before(self.deadline, now);
        if passed || self.overflows(now) {
            if !self.params.is_implicit() && !passed {
                // Revised wakeup rule: keep the deadline, runtime = density × laxity.
                let laxity = self.deadline.wrapping_sub(now);
                let rt = (u128::from(self.params.density()) * u128::from(laxity)) >> BW_SHIFT;
                self.runtime = rt.min(i64::MAX as u128) as i64;
                return;
            }
            self.new_period(now);
        }
    }

    /// Charges `delta_ns` of running time (Linux `update_curr_dl`); returns whether the task is
    /// now throttled (runtime exhausted).
    pub fn charge(&mut self, delta_ns: u64) -> bool {
        self.runtime = self.runtime.saturating_sub(delta_ns.min(i64::MAX as u64) as i64);
        if self.runtime <= 0 {
            self.throttled = true;
        }
        self.throttled
    }

    /// When a throttled task's replenishment timer fires: the start of its next period
    /// (Linux `dl_next_period`).
    pub fn next_period(&self) -> u64 {
        self.deadline.wrapping_sub(self.params.deadline).wrapping_add(self.params.period)
    }

    /// Linux `replenish_dl_entity` (module doc); unthrottles.
    pub fn replenish(&mut self, now: u64) {
        if self.deadline == 0 {
            self.new_period(now);
        }
        while self.runtime <= 0 {
            self.deadline = self.deadline.wrapping_add(self.params.period);
            self.runtime = self.runtime.saturating_add(self.params.runtime.min(i64::MAX as u64) as i64);
        }
        if time_before(self.deadline, now) {
            self.new_period(now);
        }
        self.throttled = false;
    }

    /// Linux `dl_entity_preempt`: does `self` preempt `other` (an earlier deadline)?
    pub fn preempts(&self, other: &DlEntity) -> bool {
        time_before(self.deadline, other.deadline)
    }
}

/// Linux `cpudl`: each CPU's earliest deadline in a max-heap (the CPU whose earliest deadline
/// is latest on top), and the CPUs with no deadline task as a free mask.
#[derive(Clone, Debug)]
pub struct CpuDl {
    /// Heap of (deadline, cpu), `cpus` slots.
    heap: Vec<(u64, u32)>,
    len: usize,
    /// Position of each CPU in `heap` (`NONE` if it is free).
    pos: Vec<u32>,
    free: CpuMask,
}

const NONE: u32 = u32::MAX;

impl CpuDl {
    /// `cpus` CPUs (at most [`NR_CPUS`](crate::cpumask::NR_CPUS)), all free.
    pub fn new(cpus: u32) -> Self {
        let n = (cpus as usize).min(crate::cpumask::NR_CPUS);
        CpuDl { heap: alloc::vec![(0, 0); n], len: 0, pos: alloc::vec![NONE; n], free: CpuMask::all(n) }
    }

    /// CPUs that run no deadline task.
    pub fn free_cpus(&self) -> CpuMask {
        self.free
    }

    /// The CPU whose earliest deadline is the latest, and that deadline.
    pub fn top(&self) -> Option<(u32, u64)> {
        (self.len > 0).then(|| (self.heap[0].1, self.heap[0].0))
    }

    /// `cpu`'s earliest deadline is now `deadline` (Linux `cpudl_set`).
    pub fn set(&mut self, cpu: u32, deadline: u64) {
        let c = cpu as usize;
        if c >= self.pos.len() {
            return;
        }
        self.free = self.free.without(c);
        let i = match self.pos[c] {
            NONE => {
                let i = self.len;
                self.len += 1;
                self.heap[i] = (deadline, cpu);
                self.pos[c] = i as u32;
                i
            }
            p => {
                self.heap[p as usize].0 = deadline;
                p as usize
            }
        };
        let i = self.sift_up(i);
        self.sift_down(i);
    }

    /// `cpu` runs no deadline task any more (Linux `cpudl_clear`).
    pub fn clear(&mut self, cpu: u32) {
        let c = cpu as usize;
        if c >= self.pos.len() {
            return;
        }
        self.free = self.free.with(c);
        let p = self.pos[c];
        if p == NONE {
            return;
        }
        let i = p as usize;
        self.len -= 1;
        self.pos[c] = NONE;
        if i != self.len {
            self.heap[i] = self.heap[self.len];
            self.pos[self.heap[i].1 as usize] = i as u32;
            let i = self.sift_up(i);
            self.sift_down(i);
        }
    }

    /// Linux `cpudl_find`: a CPU in `allowed` for a task with `deadline`: a free one if any
    /// (the lowest-numbered), else the top CPU if the task's deadline is earlier than its
    /// earliest one. `None`: nowhere to push.
    pub fn find(&self, allowed: CpuMask, deadline: u64) -> Option<u32> {
        if let Some(free) = (self.free & allowed).first() {
            return Some(free as u32);
        }
        let (cpu, latest) = self.top()?;
        (allowed.contains(cpu as usize) && time_before(deadline, latest)).then_some(cpu)
    }

    fn later(a: (u64, u32), b: (u64, u32)) -> bool {
        time_before(b.0, a.0)
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i].1 as usize] = i as u32;
        self.pos[self.heap[j].1 as usize] = j as u32;
    }

    fn sift_up(&mut self, mut i: usize) -> usize {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::later(self.heap[i], self.heap[parent]) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
        i
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut largest = i;
            if l < self.len && Self::later(self.heap[l], self.heap[largest]) {
                largest = l;
            }
            if r < self.len && Self::later(self.heap[r], self.heap[largest]) {
                largest = r;
            }
            if largest == i {
                return;
            }
            self.swap(i, largest);
            i = largest;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const US: u64 = 1000;
    const MS: u64 = 1_000_000;

    #[test]
    fn checkparam_follows_linux() {
        let ok = |r, d, p| DlParams { runtime: r, deadline: d, period: p, flags: 0 }.check();
        assert_eq!(ok(10 * MS, 30 * MS, 0), Ok(DlParams { runtime: 10 * MS, deadline: 30 * MS, period: 30 * MS, flags: 0 }));
        assert_eq!(ok(10 * MS, 30 * MS, 100 * MS).map(|p| p.period), Ok(100 * MS));
        assert_eq!(ok(1024, 100 * US, 0).map(|p| p.runtime), Ok(1024));
        assert_eq!(ok(1023, 100 * US, 0), Err(Errno::EINVAL), "runtime under 1024 ns");
        assert_eq!(ok(10 * MS, 0, 0), Err(Errno::EINVAL), "deadline 0");
        assert_eq!(ok(31 * MS, 30 * MS, 0), Err(Errno::EINVAL), "runtime > deadline");
        assert_eq!(ok(10 * MS, 30 * MS, 20 * MS), Err(Errno::EINVAL), "deadline > period");
        assert_eq!(ok(10 * US, 50 * US, 0), Err(Errno::EINVAL), "period under 100 µs");
        assert_eq!(ok(10 * MS, 30 * MS, 5_000 * MS), Err(Errno::EINVAL), "period over 2^22 µs");
        assert_eq!(ok(10 * MS, 1 << 63, 0), Err(Errno::EINVAL), "bit 63");
    }

    #[test]
    fn admission_is_rt_ratio_times_cpus() {
        // 950000/1000000 on 2 CPUs: 1.9 CPUs of deadline bandwidth.
        let mut a = DlAdmission::new(950_000, 1_000_000, 2);
        let p = DlParams { runtime: 5 * MS, deadline: 10 * MS, period: 10 * MS, flags: 0 }.check().unwrap();
        assert_eq!(p.bandwidth(), BW_UNIT / 2);
        assert_eq!(a.change(0, p.bandwidth()), Ok(()));
        assert_eq!(a.change(0, p.bandwidth()), Ok(()));
        let small = DlParams { runtime: 8 * MS, deadline: 10 * MS, period: 10 * MS, flags: 0 }.check().unwrap();
        assert_eq!(a.change(0, small.bandwidth()), Ok(()), "1.8 of 1.9");
        assert_eq!(a.change(0, p.bandwidth()), Err(Errno::EBUSY), "2.3 of 1.9");
        // Shrinking and leaving always pass; the total follows.
        assert_eq!(a.change(small.bandwidth(), 0), Ok(()));
        assert_eq!(a.total_bw, BW_UNIT);
        assert!(!DlAdmission::new(-1, 1_000_000, 1).overflows(0, 10 * BW_UNIT), "no limit");
        assert_eq!(to_ratio(0, 5), 0);
    }

    #[test]
    fn cbs_wakeup_throttle_and_replenish() {
        let p = DlParams { runtime: 10 * MS, deadline: 30 * MS, period: 100 * MS, flags: 0 }.check().unwrap();
        let mut e = DlEntity::new(p);
        e.wakeup(1_000 * MS);
        assert_eq!((e.deadline, e.runtime), (1_030 * MS, 10 * MS as i64), "first wakeup: new period");
        // Runs 4 ms, sleeps, wakes at +10 ms: 6 ms left for 20 ms is under the density 1/3.
        assert!(!e.charge(4 * MS));
        e.wakeup(1_010 * MS);
        assert_eq!(e.deadline, 1_030 * MS, "kept");
        // Wakes at +25 ms: 6 ms in 5 ms overflows; constrained, so revised: runtime = 5/3 ms.
        e.wakeup(1_025 * MS);
        assert_eq!(e.deadline, 1_030 * MS);
        assert_eq!(e.runtime, (((BW_UNIT / 3) as u128 * (5 * MS) as u128) >> BW_SHIFT) as i64);
        // Runs out: throttled until the next period start (deadline − 30 + 100).
        assert!(e.charge(2 * MS));
        assert_eq!(e.next_period(), 1_100 * MS);
        e.replenish(1_100 * MS);
        assert!(!e.throttled);
        assert_eq!(e.deadline, 1_130 * MS);
        assert!(e.runtime > 0 && e.runtime <= 10 * MS as i64);
        // Replenished long after (lagged too much): a new period at now.
        assert!(e.charge(20 * MS));
        e.replenish(5_000 * MS);
        assert_eq!((e.deadline, e.runtime), (5_030 * MS, 10 * MS as i64));
        // An implicit-deadline task with a passed deadline gets a new period at wakeup.
        let mut i = DlEntity::new(DlParams { runtime: MS, deadline: 10 * MS, period: 0, flags: 0 }.check().unwrap());
        i.wakeup(0);
        i.wakeup(11 * MS);
        assert_eq!(i.deadline, 21 * MS);
        assert!(i.preempts(&e));
    }

    proptest! {
        /// The heap's top is always the CPU with the latest deadline, the free mask is the
        /// complement of the CPUs set, and `find` agrees with a brute-force search.
        #[test]
        fn cpudl_matches_brute_force(ops in proptest::collection::vec((0u32..8, any::<bool>(), 0u64..1000), 0..200),
                                     allowed in 0u64..256, dl in 0u64..1000) {
            let mut h = CpuDl::new(8);
            let mut model: [Option<u64>; 8] = [None; 8];
            for (cpu, set, d) in ops {
                if set { h.set(cpu, d); model[cpu as usize] = Some(d); } else { h.clear(cpu); model[cpu as usize] = None; }
                let latest = model.iter().filter_map(|x| *x).max();
                prop_assert_eq!(h.top().map(|t| t.1), latest);
                let free = model.iter().enumerate().filter(|(_, x)| x.is_none()).fold(0u64, |m, (i, _)| m | 1 << i);
                prop_assert_eq!(h.free_cpus().low_u64(), free);
            }
            let want = if free_of(&model) & allowed != 0 {
                Some((free_of(&model) & allowed).trailing_zeros())
            } else {
                h.top().filter(|&(c, d)| allowed & (1 << c) != 0 && dl < d).map(|(c, _)| c)
            };
            prop_assert_eq!(h.find(CpuMask::from_u64(allowed), dl), want);
        }
    }

    fn free_of(model: &[Option<u64>; 8]) -> u64 {
        model.iter().enumerate().filter(|(_, x)| x.is_none()).fold(0u64, |m, (i, _)| m | 1 << i)
    }
}
