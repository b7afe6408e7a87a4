//! SMP decisions as pure functions over snapshots the kernel takes of its run queues.
//!
//! Nothing here locks, reads per-CPU state or moves tasks: the kernel gathers a snapshot
//! (idle CPUs, `nr_running`, load per CPU, what each CPU is running), asks, and acts.
//! Every answer honours the affinity mask passed in: a returned CPU is always in it.
//! Callers pass `affinity & online` as the affinity.
//!
//! * Wakeup placement ([`select_task_rq_fair`], after Linux `select_idle_sibling`):
//!   previous CPU if idle; else an idle CPU sharing cache with the previous (then the
//!   waker's) CPU, preferring a fully idle core, then an idle SMT sibling, then any idle
//!   CPU of the LLC; else any idle allowed CPU, fully idle cores first; else the previous
//!   CPU if allowed, else the first allowed one. With SIS_UTIL, a busy `prev` whose LLC is
//!   too loaded to search ([`sis_util_nr_scan`] is 0) keeps the task.
//! * Fair load balancing ([`find_busiest`]): pull from the CPU with the most load when it
//!   exceeds ours by more than `IMBALANCE_PCT` (117%, Linux's default `imbalance_pct`)
//!   and has a task that is not running. A task of load `t` is worth moving iff it
//!   shrinks the difference: `0 < t < remaining imbalance` ([`worth_moving`]).
//! * RT push/pull ([`find_lowest_rq`], [`should_pull`], after Linux rt.c/cpupri): a
//!   queued RT task is pushed to an allowed CPU running something strictly less
//!   important (idle first, then fair, then the lowest RT priority), and a CPU pulls a
//!   queued RT task that beats what it runs unless the task's own CPU is about to run it.
//!   Applied until no push applies, the N most important runnable RT tasks are running
//!   on N CPUs (tested below by simulation).

use alloc::vec::Vec;

use crate::cpumask::{CpuMask, NR_CPUS};
use crate::errno::Errno;

/// Linux's default `sd->imbalance_pct`: busiest must exceed us by 17%.
pub const IMBALANCE_PCT: u64 = 117;

/// Which CPUs share an SMT core and a last-level cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    smt: Vec<CpuMask>,
    llc: Vec<CpuMask>,
}

impl Topology {
    /// Builds from per-CPU masks (`smt[cpu]` = hardware threads of `cpu`'s core,
    /// `llc[cpu]` = CPUs sharing its last-level cache; both including `cpu`).
    /// `EINVAL` if lengths differ, exceed `NR_CPUS`, or a mask omits its own CPU or a sibling
    /// lies outside the LLC.
    pub fn new(smt: Vec<CpuMask>, llc: Vec<CpuMask>) -> Result<Self, Errno> {
        if smt.len() != llc.len() || smt.len() > NR_CPUS {
            return Err(Errno::EINVAL);
        }
        let ok = smt.iter().zip(&llc).enumerate().all(|(cpu, (s, l))| s.contains(cpu) && l.contains(cpu) && s.is_subset_of(*l));
        if ok {
            Ok(Topology { smt, llc })
        } else {
            Err(Errno::EINVAL)
        }
    }

    /// `ncpus` CPUs, one thread per core, all sharing one LLC.
    pub fn flat(ncpus: usize) -> Self {
        let n = ncpus.min(NR_CPUS);
        Topology { smt: (0..n).map(CpuMask::single).collect(), llc: (0..n).map(|_| CpuMask::all(n)).collect() }
    }

    /// `ncpus` CPUs numbered core by core: `threads_per_core` consecutive CPUs form a core
    /// and `cpus_per_llc` consecutive CPUs share a cache. `EINVAL` on zero sizes or if an
    /// LLC would split a core.
    pub fn uniform(ncpus: usize, threads_per_core: usize, cpus_per_llc: usize) -> Result<Self, Errno> {
        if threads_per_core == 0 || cpus_per_llc == 0 || !cpus_per_llc.is_multiple_of(threads_per_core) || ncpus > NR_CPUS {
            return Err(Errno::EINVAL);
        }
        let group = |cpu: usize, size: usize| {
            let start = cpu - cpu % size;
            CpuMask::all((start + size).min(ncpus)).andnot(CpuMask::all(start))
        };
        Topology::new((0..ncpus).map(|c| group(c, threads_per_core)).collect(), (0..ncpus).map(|c| group(c, cpus_per_llc)).collect())
    }

    /// Number of CPUs described.
    pub fn nr_cpus(&self) -> usize {
        self.smt.len()
    }

    /// Hardware threads of `cpu`'s core, `cpu` included (just `cpu` if unknown).
    pub fn smt_siblings(&self, cpu: usize) -> CpuMask {
        self.smt.get(cpu).copied().unwrap_or(CpuMask::single(cpu))
    }

    /// CPUs sharing `cpu`'s last-level cache, `cpu` included (just `cpu` if unknown).
    pub fn llc(&self, cpu: usize) -> CpuMask {
        self.llc.get(cpu).copied().unwrap_or(CpuMask::single(cpu))
    }

    /// Linux `cpus_share_cache`.
    pub fn shares_cache(&self, a: usize, b: usize) -> bool {
        self.llc(a).contains(b)
    }
}

/// Linux's SIS_UTIL (`update_idle_cpu_scan`): how many CPUs of an LLC a wakeup may examine
/// for an idle one, from the LLC's summed utilization `sum_util` (each CPU's `util_avg`, out
/// of [`SCHED_CAPACITY_SCALE`](crate::pelt::SCHED_CAPACITY_SCALE)) over `llc_weight` CPUs:
/// `llc_weight · (1 − min(1, x'² · pct² / (10⁴ · 1024)) / 1024)` with `x' = sum_util /
/// llc_weight`. The search shrinks as the LLC fills and stops (0) once it is about
/// `100 / pct` busy (85% at the default 117): there an idle CPU is rare, and looking for one
/// costs more than it brings.
pub fn sis_util_nr_scan(sum_util: u64, llc_weight: usize, imbalance_pct: u64) -> usize {
    const SCALE: u128 = crate::pelt::SCHED_CAPACITY_SCALE as u128;
    if llc_weight == 0 {
        return 0;
    }
    let x = sum_util as u128 / llc_weight as u128;
    let pct = imbalance_pct as u128;
    let tmp = (x * x * pct * pct / (10_000 * SCALE)).min(SCALE);
    ((SCALE - tmp) * llc_weight as u128 / SCALE) as usize
}

/// Picks the CPU a waking (or new) fair task should be queued on; see the module docs
/// for the order of preference. `None` only if `affinity` is empty.
///
/// `llc_busy(cpu)` says whether `cpu`'s LLC is too busy to search (SIS_UTIL's
/// [`sis_util_nr_scan`] is 0): a task whose `prev_cpu` is busy, allowed, and in such an LLC
/// stays there (Linux's `select_idle_sibling` returns its target when the scan is empty), and
/// the load balancer moves it if an idle CPU turns up. `|_| false` searches as before.
pub fn select_task_rq_fair(
    affinity: CpuMask,
    prev_cpu: usize,
    waker_cpu: Option<usize>,
    idle: CpuMask,
    topo: &Topology,
    llc_busy: impl Fn(usize) -> bool,
) -> Option<usize> {
    if affinity.is_empty() {
        return None;
    }
    let idle_ok = idle & affinity;
    if idle_ok.contains(prev_cpu) {
        return Some(prev_cpu);
    }
    if affinity.contains(prev_cpu) && llc_busy(prev_cpu) {
        return Some(prev_cpu);
    }
    // A core is fully idle when all of its threads are idle, allowed or not.
    let idle_core = |cpu: usize| topo.smt_siblings(cpu).is_subset_of(idle);
    let targets = [Some(prev_cpu), waker_cpu.filter(|&w| w != prev_cpu)];
    for target in targets.into_iter().flatten() {
        let llc = topo.llc(target) & idle_ok;
        let found = llc
            .iter_wrap(target)
            .find(|&c| idle_core(c))
            .or_else(|| (topo.smt_siblings(target) & idle_ok).iter_wrap(target).next())
            .or_else(|| llc.iter_wrap(target).next());
        if found.is_some() {
            return found;
        }
    }
    idle_ok
        .iter_wrap(prev_cpu)
        .find(|&c| idle_core(c))
        .or_else(|| idle_ok.iter_wrap(prev_cpu).next())
        .or_else(|| affinity.contains(prev_cpu).then_some(prev_cpu))
        .or_else(|| affinity.first())
}

/// Result of [`find_busiest`]: where to pull from and how much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Imbalance {
    /// CPU to pull from.
    pub busiest: usize,
    /// At most this many tasks: half the difference in `nr_running`, at least 1.
    pub nr_to_pull: u32,
    /// `load[busiest] - load[this]`; see [`worth_moving`].
    pub load_imbalance: u64,
}

/// Periodic / new-idle fair balancing for `this_cpu`: the CPU in `candidates` (minus
/// `this_cpu`) with the highest load among those with at least 2 runnable tasks (the
/// running one cannot move), if its load exceeds ours by more than `IMBALANCE_PCT`.
/// `nr_running[cpu]` / `load[cpu]` are the snapshot (load = sum of fair weights, or a
/// PELT average); CPUs beyond either slice are ignored. Ties go to more tasks, then the
/// lower CPU id. An idle CPU (load 0) pulls from any CPU with a queued task.
pub fn find_busiest(this_cpu: usize, nr_running: &[u32], load: &[u64], candidates: CpuMask) -> Option<Imbalance> {
    let this_nr = *nr_running.get(this_cpu)?;
    let this_load = *load.get(this_cpu)?;
    let n = nr_running.len().min(load.len());
    let (busiest, b_nr, b_load) = candidates
        .without(this_cpu)
        .iter()
        .filter(|&c| c < n && nr_running[c] >= 2)
        .map(|c| (c, nr_running[c], load[c]))
        .max_by(|a, b| (a.2, a.1).cmp(&(b.2, b.1)).then(b.0.cmp(&a.0)))?;
    if (b_load as u128) * 100 <= (this_load as u128) * (IMBALANCE_PCT as u128) {
        return None;
    }
    Some(Imbalance { busiest, nr_to_pull: (b_nr.saturating_sub(this_nr) / 2).max(1), load_imbalance: b_load - this_load })
}

/// Is moving a task of load `task_load` across a `remaining` load difference an
/// improvement? True iff `0 < task_load < remaining` (the difference becomes
/// `remaining - 2 * task_load`, smaller in magnitude). After moving, continue with
/// `remaining.saturating_sub(2 * task_load)`.
pub const fn worth_moving(task_load: u64, remaining: u64) -> bool {
    task_load > 0 && task_load < remaining
}

/// Linux `can_migrate_task` (without cache-hotness): allowed on `dst` and not running.
pub const fn can_migrate(affinity: CpuMask, dst: usize, is_running: bool) -> bool {
    affinity.contains(dst) && !is_running
}

/// What a CPU is running, for RT push/pull decisions. Ordered least important first:
/// `Idle < Fair < Rt(1) < ... < Rt(99)` (derive order: variants, then the RT priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuPrio {
    /// Running the idle task.
    Idle,
    /// Running a fair-class task (NORMAL, BATCH or IDLE policy).
    Fair,
    /// Running (or, for `should_pull`'s `this_highest`, having queued) an RT task of this
    /// user-visible priority.
    Rt(u8),
}

/// Linux `find_lowest_rq`: an allowed CPU whose current work is strictly less important
/// than an RT task of `rt_priority`, choosing the least important level (idle, then
/// fair, then the lowest RT priority) and, within it, `prev_cpu` if possible (warm
/// cache), else the first. `cpus[cpu]` is the snapshot; `None` if no CPU qualifies.
pub fn find_lowest_rq(rt_priority: u8, affinity: CpuMask, prev_cpu: usize, cpus: &[CpuPrio]) -> Option<usize> {
    let task = CpuPrio::Rt(rt_priority);
    let lowest = affinity.iter().filter_map(|c| cpus.get(c).copied()).filter(|&p| p < task).min()?;
    let at_lowest = |c: usize| affinity.contains(c) && cpus.get(c) == Some(&lowest);
    if at_lowest(prev_cpu) {
        return Some(prev_cpu);
    }
    affinity.iter().find(|&c| at_lowest(c))
}

/// Linux `pull_rt_task` test for one candidate: should a CPU whose most important
/// runnable work is `this_highest` pull a *queued* RT task of `rt_priority` from a CPU
/// running `src_curr`? Yes iff the task beats `this_highest` and is not more important
/// than `src_curr` (otherwise its own CPU is about to preempt in its favour).
pub fn should_pull(this_highest: CpuPrio, src_curr: CpuPrio, rt_priority: u8) -> bool {
    let task = CpuPrio::Rt(rt_priority);
    task > this_highest && task <= src_curr
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(cpus: &[usize]) -> CpuMask {
        cpus.iter().copied().collect()
    }

    #[test]
    fn topology_builders() {
        let t = Topology::uniform(8, 2, 4).unwrap();
        assert_eq!(t.smt_siblings(3), mask(&[2, 3]));
        assert_eq!(t.llc(5), mask(&[4, 5, 6, 7]));
        assert!(t.shares_cache(0, 3) && !t.shares_cache(3, 4));
        assert_eq!(t.smt_siblings(NR_CPUS + 1), CpuMask::EMPTY);
        assert_eq!(Topology::uniform(8, 2, 3), Err(Errno::EINVAL));
        assert_eq!(Topology::uniform(8, 0, 4), Err(Errno::EINVAL));
        assert_eq!(Topology::new(vec![mask(&[1])], vec![mask(&[0])]), Err(Errno::EINVAL));
        let f = Topology::flat(4);
        assert_eq!((f.nr_cpus(), f.llc(2), f.smt_siblings(2)), (4, CpuMask::all(4), mask(&[2])));
    }

    #[test]
    fn prev_cpu_when_idle() {
        let t = Topology::flat(4);
        assert_eq!(select_task_rq_fair(CpuMask::all(4), 2, Some(0), mask(&[0, 2]), &t, |_| false), Some(2));
    }

    #[test]
    fn idle_cpu_preferred_over_busy_prev() {
        let t = Topology::flat(4);
        assert_eq!(select_task_rq_fair(CpuMask::all(4), 2, None, mask(&[3]), &t, |_| false), Some(3));
        // Nothing idle: stay on prev.
        assert_eq!(select_task_rq_fair(CpuMask::all(4), 2, None, CpuMask::EMPTY, &t, |_| false), Some(2));
        // prev not allowed and nothing idle: first allowed.
        assert_eq!(select_task_rq_fair(mask(&[1, 3]), 2, None, CpuMask::EMPTY, &t, |_| false), Some(1));
        assert_eq!(select_task_rq_fair(CpuMask::EMPTY, 2, None, CpuMask::all(4), &t, |_| false), None);
    }

    #[test]
    fn cache_sharing_preference() {
        // Two LLCs of two 2-thread cores: {0,1 | 2,3} and {4,5 | 6,7}.
        let t = Topology::uniform(8, 2, 4).unwrap();
        let all = CpuMask::all(8);
        // prev=0 busy; sibling 1 idle; a fully idle core far away (6,7): sibling wins
        // over leaving the cache, since the local LLC has no idle core.
        assert_eq!(select_task_rq_fair(all, 0, None, mask(&[1, 6, 7]), &t, |_| false), Some(1));
        // A fully idle core in the same LLC beats the half-busy sibling.
        assert_eq!(select_task_rq_fair(all, 0, None, mask(&[1, 2, 3]), &t, |_| false), Some(2));
        // Nothing idle near prev: try the waker's LLC, fully idle core first.
        assert_eq!(select_task_rq_fair(all, 0, Some(4), mask(&[5, 6, 7]), &t, |_| false), Some(6));
        // No cache-sharing idle CPU: any idle CPU, fully idle cores first.
        assert_eq!(select_task_rq_fair(all, 0, None, mask(&[5, 6, 7]), &t, |_| false), Some(6));
        assert_eq!(select_task_rq_fair(all, 0, None, mask(&[5]), &t, |_| false), Some(5));
        // Affinity excludes the idle sibling.
        assert_eq!(select_task_rq_fair(all.without(1), 0, None, mask(&[1, 5]), &t, |_| false), Some(5));
    }

    #[test]
    fn sis_util_scan_shrinks_and_stops_at_85_percent() {
        // An idle LLC is searched whole; Linux's threshold: x = 100 / 117 of capacity stops it.
        assert_eq!(sis_util_nr_scan(0, 8, 117), 8);
        assert_eq!(sis_util_nr_scan(8 * 1024, 8, 117), 0);
        assert_eq!(sis_util_nr_scan(8 * 876, 8, 117), 0); // 85.5% busy
        assert_eq!(sis_util_nr_scan(8 * 512, 8, 117), 5); // half busy: 1 - (0.5 * 1.17)^2 = 0.66
        let mut last = usize::MAX;
        for util in (0..=1024).step_by(16) {
            let n = sis_util_nr_scan(28 * util, 28, 117);
            assert!(n <= last && n <= 28, "monotonic in the load: {util} gave {n} after {last}");
            last = n;
        }
        assert_eq!(sis_util_nr_scan(123, 0, 117), 0);
        // A busy LLC keeps a busy prev; an idle prev is still taken first.
        let t = Topology::uniform(8, 1, 4).unwrap();
        let all = CpuMask::all(8);
        assert_eq!(select_task_rq_fair(all, 1, Some(5), mask(&[2, 6]), &t, |c| c < 4), Some(1));
        assert_eq!(select_task_rq_fair(all, 1, Some(5), mask(&[1, 6]), &t, |_| true), Some(1));
        assert_eq!(select_task_rq_fair(all.without(1), 1, Some(5), mask(&[2, 6]), &t, |_| true), Some(2));
    }

    #[test]
    fn busiest_and_pull_amounts() {
        let all = CpuMask::all(4);
        // New-idle CPU 0 pulls half of CPU 2's excess.
        let imb = find_busiest(0, &[0, 1, 4, 2], &[0, 1024, 4096, 2048], all).unwrap();
        assert_eq!(imb, Imbalance { busiest: 2, nr_to_pull: 2, load_imbalance: 4096 });
        // Within 117%: balanced.
        assert_eq!(find_busiest(0, &[2, 2], &[2048, 2300], CpuMask::all(2)), None);
        // Just above 117%.
        assert!(find_busiest(0, &[2, 2], &[2048, 2400], CpuMask::all(2)).is_some());
        // Single running task cannot be pulled.
        assert_eq!(find_busiest(0, &[0, 1], &[0, 88761], CpuMask::all(2)), None);
        // Candidates filter, and out-of-range this_cpu.
        assert_eq!(find_busiest(0, &[0, 1, 4], &[0, 1, 4096], mask(&[0, 1])), None);
        assert_eq!(find_busiest(9, &[0, 3], &[0, 3072], CpuMask::all(2)), None);
        assert!(worth_moving(1024, 2048) && !worth_moving(1024, 1024) && !worth_moving(0, 5));
        assert!(can_migrate(mask(&[1]), 1, false));
        assert!(!can_migrate(mask(&[1]), 1, true) && !can_migrate(mask(&[1]), 2, false));
    }

    #[test]
    fn rt_push_targets() {
        use CpuPrio::*;
        let cpus = [Rt(50), Fair, Idle, Rt(10), Fair];
        let all = CpuMask::all(5);
        assert_eq!(find_lowest_rq(20, all, 0, &cpus), Some(2));
        assert_eq!(find_lowest_rq(20, all.without(2), 4, &cpus), Some(4));
        assert_eq!(find_lowest_rq(20, all.without(2), 0, &cpus), Some(1));
        assert_eq!(find_lowest_rq(20, mask(&[0, 3]), 0, &cpus), Some(3));
        assert_eq!(find_lowest_rq(10, mask(&[0, 3]), 0, &cpus), None);
        assert_eq!(find_lowest_rq(99, mask(&[0, 7]), 0, &cpus), Some(0));
        assert!(should_pull(Fair, Rt(50), 40));
        assert!(!should_pull(Rt(40), Rt(50), 40));
        assert!(!should_pull(Fair, Rt(30), 40));
        assert!(should_pull(Idle, Rt(40), 40));
    }
}
