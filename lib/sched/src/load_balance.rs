//! Linux 6.12's hierarchical fair load balancer (kernel/sched/fair.c, "Fair scheduling class
//! load-balancing methods"), as pure policy over [`SchedDomains`].
//!
//! Names follow fair.c so a reader of it finds their way: [`should_we_balance`],
//! [`update_sg_lb_stats`], [`group_classify`], [`update_sd_pick_busiest`],
//! [`calculate_imbalance`], [`find_busiest_group`] (6.10 renamed it
//! `sched_balance_find_src_group`), [`find_busiest_queue`] (`sched_balance_find_src_rq`),
//! [`LbEnv::can_migrate_task`] and the body of `detach_tasks` ([`LbEnv::consider`]),
//! [`need_active_balance`], [`sched_balance_rq`] (`load_balance` before 6.10),
//! [`get_sd_balance_interval`], [`sched_balance_domains`] (`rebalance_domains`) and
//! [`sched_balance_newidle`] (`newidle_balance`).
//!
//! # Contract
//!
//! Nothing here locks, allocates or reads a clock. The kernel builds an [`LbTopology`] (the
//! domains plus what the balancer derives from them: group weights, cores, `sgc` slots) and
//! an [`LbShared`] (each `sched_group_capacity`'s `imbalance` flag, atomics shared by all
//! CPUs) once at boot, keeps one [`SdState`] per CPU per domain level (`balance_interval`,
//! `nr_balance_failed`, `last_balance`), and implements [`LbRunQueues`]:
//!
//! * `cpu_stats(cpu)`: a [`CpuStats`] — a snapshot taken before the call or live values, as
//!   Linux reads other CPUs' `rq` fields without their locks. `load` is the caller's choice
//!   of `cpu_load()`: the fair queue's PELT `load_avg` (Linux) or its instantaneous weight;
//!   task loads given to [`LbEnv::consider`] must be of the same kind (`task_h_load` or the
//!   task's weight). `capacity` is `capacity_of()`: 1024 less RT, deadline and IRQ pressure.
//! * `detach_tasks(env)`: with the source's run-queue lock held, walk its fair tasks from the
//!   least recently run (the tail of Linux's `cfs_tasks`), ask [`LbEnv::consider`] about each
//!   and move those it answers `Detach`/`DetachStop` for to `env.dst_cpu()`; stop at `Stop`,
//!   `DetachStop` or the end of the list. Return how many moved.
//! * `active_balance(src, dst)`: `need_active_balance` said yes; if `src`'s running task may
//!   run on `dst`, start pushing it (Linux's stopper, `active_load_balance_cpu_stop`).
//!
//! Every entry point runs in bounded time over caller-owned memory (the [`LbEnv`] and the
//! statistics live on the stack, about 1 KiB at 1,024 CPUs), so the kernel may call it from
//! its tick with interrupts off.
//!
//! # Formulas (6.12)
//!
//! Group statistics ([`update_sg_lb_stats`]) sum `load`, `util` (clamped to 1024, Linux's
//! `cpu_util_cfs`), `runnable`, `nr_running`, `h_nr_running` and idle CPUs over the group's
//! CPUs in `env.cpus`; `group_capacity` is the sum of the group's CPUs' `capacity`. A group
//! is **overloaded** if `nr > weight` and `capacity·100 < util·pct` or `capacity·pct <
//! runnable·100`; it **has capacity** if `nr < weight`, or unless `capacity·pct < runnable·100`,
//! if `capacity·100 > util·pct`. [`group_classify`]: overloaded, else imbalanced (the
//! `sgc->imbalance` flag), else `smt_balance` (an idle destination and an SMT group running two
//! fair tasks), else misfit (a reduced-capacity CPU running one task, idle destination), else
//! fully busy if it has no capacity, else has spare. [`calculate_imbalance`]: misfit →
//! `migrate_load` of the misfit load; smt_balance and imbalanced → `migrate_task` 1; local has
//! spare: busiest overloaded above the LLC → `migrate_util` of the local spare capacity (1 task
//! if that is 0 and we are idle); busiest of weight 1 or `prefer_sibling` → `migrate_task`
//! `sibling_imbalance / 2`; else `migrate_task` `(local idle − busiest idle) / 2`, both after
//! `adjust_numa_imbalance` on NUMA levels (no move while the imbalance is ≤ 2 and the local
//! group would run at most `imb_numa_nr` tasks); otherwise `migrate_load` of
//! `min((busiest_avg − avg)·busiest_cap, (avg − local_avg)·local_cap) / 1024`, with
//! `avg_load = load·1024 / capacity`. Integer widths and wrap-arounds are C's (`long`
//! imbalance, `int` in `adjust_numa_imbalance`, `unsigned long` loads), with one deliberate
//! exception: the idle-CPU difference saturates where Linux's `unsigned int` subtraction wraps
//! (see [`calculate_imbalance`]).
//!
//! # Left out
//!
//! As [`crate::topology`] leaves them out (nothing QEMU/TCG x86 has): asymmetric capacity
//! (`SD_ASYM_CPUCAPACITY`, `migrate_misfit`, the misfit checks of `update_sd_pick_busiest` and
//! `find_busiest_queue`), ITMT packing (`group_asym_packing`, `asym_active_balance`), energy
//! aware scheduling (the `rd->pd` early exit), NUMA balancing (`fbq_type`, `nr_numa_running`,
//! `migrate_degrades_locality`: every queue is `regular`), `LB_MIN` (off by default), SCHED_IDLE
//! run queues counting as idle in `sched_balance_domains` (the caller's `idle` says it), the
//! newidle cost bookkeeping (`avg_idle`, `max_newidle_lb_cost`), and nohz: the kernel's idle
//! load balancer calls [`sched_balance_domains`] for each tickless CPU with
//! [`CpuIdleType::Idle`]. Group capacities are summed afresh at every balance, where Linux
//! refreshes `sgc->capacity` only when the group's own CPUs balance.
//!
//! # Cadence's addition: the idle fallback
//!
//! [`LbConfig::idle_fallback`] (on by default; off gives Linux as written): after an idle
//! CPU's periodic balance at its top level moved nothing, it pulls any waiting fair task
//! that may run on it ([`LbRunQueues::pull_waiting`]). The exhaustive test
//! `lib/sched/tests/work_conservation.rs` shows why Linux's logic alone leaves an idle CPU
//! beside a waiting task it could run (docs/design/balancing.md).

use core::sync::atomic::{AtomicBool, Ordering};

use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;

use crate::cpumask::CpuMask;
use crate::topology::{
    SchedDomain, SchedDomains, SD_BALANCE_NEWIDLE, SD_NUMA, SD_PREFER_SIBLING, SD_SERIALIZE, SD_SHARE_CPUCAPACITY, SD_SHARE_LLC,
};

/// `SCHED_CAPACITY_SCALE`: a CPU's full capacity.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;
/// `sysctl_sched_nr_migrate` (32 without PREEMPT_RT): tasks examined per pass.
pub const SYSCTL_SCHED_NR_MIGRATE: u32 = 32;
/// `SCHED_NR_MIGRATE_BREAK`: a breather (`LBF_NEED_BREAK`) every this many tasks.
pub const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// `MAX_PINNED_INTERVAL`: the longest `balance_interval` (ms) after all-pinned passes.
pub const MAX_PINNED_INTERVAL: u64 = 512;
/// `NUMA_IMBALANCE_MIN`: a NUMA imbalance of this many tasks or fewer is allowed.
pub const NUMA_IMBALANCE_MIN: i32 = 2;

/// `LBF_ALL_PINNED`: no task examined may run on the destination.
pub const LBF_ALL_PINNED: u32 = 0x01;
/// `LBF_NEED_BREAK`: `detach_tasks` stopped for a breather; go on after.
pub const LBF_NEED_BREAK: u32 = 0x02;
/// `LBF_DST_PINNED`: some task may not run on the destination but may on `new_dst_cpu`.
pub const LBF_DST_PINNED: u32 = 0x04;
/// `LBF_SOME_PINNED`: some task examined may not run on the destination.
pub const LBF_SOME_PINNED: u32 = 0x08;
/// `LBF_ACTIVE_LB`: an active balance (the stopper) is detaching.
pub const LBF_ACTIVE_LB: u32 = 0x10;

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE`: the balancing CPU runs something.
    NotIdle,
    /// `CPU_IDLE`: periodic (or nohz) balance of an idle CPU.
    Idle,
    /// `CPU_NEWLY_IDLE`: the CPU is about to go idle (`sched_balance_newidle`).
    NewlyIdle,
}

impl CpuIdleType {
    /// `env->idle` as C tests it (`if (env->idle)`): anything but `NotIdle`.
    pub const fn is_idle(self) -> bool {
        !matches!(self, CpuIdleType::NotIdle)
    }

    /// The idle type's place in `/proc/schedstat` version 15's domain lines: `CPU_IDLE`,
    /// `CPU_NOT_IDLE`, `CPU_NEWLY_IDLE` (the enum's order before 6.11 renumbered it).
    pub const fn schedstat_index(self) -> usize {
        match self {
            CpuIdleType::Idle => 0,
            CpuIdleType::NotIdle => 1,
            CpuIdleType::NewlyIdle => 2,
        }
    }
}

/// `enum group_type`, ordered by pulling priority (asym packing left out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupType {
    /// `group_has_spare`: room for more tasks.
    #[default]
    HasSpare,
    /// `group_fully_busy`: fully used, tasks do not compete.
    FullyBusy,
    /// `group_misfit_task`: here only a reduced-capacity CPU running one task.
    MisfitTask,
    /// `group_smt_balance`: an SMT group with two fair tasks sharing a core.
    SmtBalance,
    /// `group_imbalanced`: affinity kept a lower level from balancing (`sgc->imbalance`).
    Imbalanced,
    /// `group_overloaded`: more tasks than it can serve.
    Overloaded,
}

/// `enum migration_type` (`migrate_misfit` left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MigrationType {
    /// `migrate_load`: move this much load.
    Load,
    /// `migrate_util`: move this much utilization.
    Util,
    /// `migrate_task`: move this many tasks.
    Task,
}

/// One CPU as the balancer sees it (what fair.c reads from `cpu_rq(i)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuStats {
    /// `rq->nr_running`: tasks of every class, running one included.
    pub nr_running: u32,
    /// `rq->cfs.h_nr_running`: fair tasks, running one included.
    pub h_nr_running: u32,
    /// `idle_cpu()`: the idle task runs, nothing is queued and no wakeup is on its way.
    pub idle: bool,
    /// `cpu_load()`: PELT `load_avg` of the fair queue, or its instantaneous weight.
    pub load: u64,
    /// The fair queue's `util_avg` (`cpu_util_cfs` before the clamp to 1024).
    pub util: u64,
    /// The fair queue's `runnable_avg` (`cpu_runnable`).
    pub runnable: u64,
    /// `capacity_of()`: 1024 less RT, deadline and IRQ pressure, at least 1.
    pub capacity: u64,
}

impl CpuStats {
    /// An idle CPU of full capacity.
    pub const IDLE: CpuStats =
        CpuStats { nr_running: 0, h_nr_running: 0, idle: true, load: 0, util: 0, runnable: 0, capacity: SCHED_CAPACITY_SCALE };

    fn util_cfs(&self) -> u64 {
        self.util.min(SCHED_CAPACITY_SCALE)
    }

    fn util_cfs_boost(&self) -> u64 {
        self.util.max(self.runnable).min(SCHED_CAPACITY_SCALE)
    }

    fn capacity_of(&self) -> u64 {
        self.capacity.max(1)
    }
}

/// What the kernel keeps per CPU per domain level (the runtime fields of `struct
/// sched_domain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SdState {
    /// `balance_interval`, in ms: `min_interval` after a pass that found work, doubled after
    /// balanced ones up to `max_interval` (up to [`MAX_PINNED_INTERVAL`] when all pinned).
    pub balance_interval: u64,
    /// `nr_balance_failed`: periodic passes in a row that found an imbalance and moved nothing.
    pub nr_balance_failed: u32,
    /// `last_balance`, in jiffies.
    pub last_balance: u64,
    /// The domain's schedstat counters (`/proc/schedstat`'s domain lines).
    pub stats: SdStats,
}

impl SdState {
    /// As `sd_init` leaves it: `balance_interval = span weight` (`min_interval`).
    pub fn new(sd: &SchedDomain, now: u64) -> SdState {
        SdState { balance_interval: sd.min_interval.max(1), nr_balance_failed: 0, last_balance: now, stats: SdStats::default() }
    }
}

/// `struct sched_domain`'s schedstat counters, per idle type as `/proc/schedstat` version 15
/// orders them ([`CpuIdleType::schedstat_index`]). Counters, not state: equal and hashed alike
/// whatever they hold, so that states compare by what steers the balancer (the exhaustive
/// check of `tests/work_conservation.rs` keys states by them).
#[derive(Clone, Copy, Debug, Default)]
pub struct SdStats {
    /// Per idle type: `lb_count`, `lb_balanced`, `lb_failed`, `lb_imbalance`, `lb_gained`,
    /// `lb_hot_gained`, `lb_nobusyq`, `lb_nobusyg` (the [`SdStats::LB_COUNT`]... indices).
    pub lb: [[u64; 8]; 3],
    /// `alb_count`, `alb_failed`, `alb_pushed`: the stopper's active balances run, that moved
    /// nothing, that moved a task (the kernel's, which runs them).
    pub alb: [u64; 3],
}

impl SdStats {
    /// `lb_count`: passes of `sched_balance_rq`.
    pub const LB_COUNT: usize = 0;
    /// `lb_balanced`: passes that found the domain balanced (or everything pinned).
    pub const LB_BALANCED: usize = 1;
    /// `lb_failed`: passes that found an imbalance and moved nothing.
    pub const LB_FAILED: usize = 2;
    /// `lb_imbalance`: the imbalances found, summed (in the migration type's units).
    pub const LB_IMBALANCE: usize = 3;
    /// `lb_gained`: tasks moved.
    pub const LB_GAINED: usize = 4;
    /// `lb_hot_gained`: cache-hot tasks moved anyway (not counted yet: always 0).
    pub const LB_HOT_GAINED: usize = 5;
    /// `lb_nobusyq`: passes that found a busiest group but no busiest run queue in it.
    pub const LB_NOBUSYQ: usize = 6;
    /// `lb_nobusyg`: passes that found no busiest group.
    pub const LB_NOBUSYG: usize = 7;

    fn add(&mut self, idle: CpuIdleType, field: usize, n: u64) {
        let c = &mut self.lb[idle.schedstat_index()][field];
        *c = c.saturating_add(n);
    }
}

impl PartialEq for SdStats {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SdStats {}

impl core::hash::Hash for SdStats {
    fn hash<H: core::hash::Hasher>(&self, _: &mut H) {}
}

/// Tunables and machine facts the balancer needs besides the domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbConfig {
    /// Jiffies per second (the tick).
    pub hz: u64,
    /// `cpu_active_mask`.
    pub active: CpuMask,
    /// `max_load_balance_interval` in jiffies: `HZ · online CPUs / 10`.
    pub max_load_balance_interval: u64,
    /// `CONFIG_PREEMPTION`: a newly idle balance detaches at most one task.
    pub preempt: bool,
    /// `sysctl_sched_nr_migrate`.
    pub nr_migrate: u32,
    /// Cadence's idle fallback (see the module docs); `false` is Linux as written.
    pub idle_fallback: bool,
}

impl LbConfig {
    /// Defaults for `nr_cpus` active CPUs at `hz`: Linux's tunables, preemptible, with the
    /// idle fallback.
    pub fn new(nr_cpus: usize, hz: u64) -> LbConfig {
        LbConfig {
            hz,
            active: CpuMask::all(nr_cpus),
            max_load_balance_interval: (hz * nr_cpus as u64 / 10).max(1),
            preempt: true,
            nr_migrate: SYSCTL_SCHED_NR_MIGRATE,
            idle_fallback: true,
        }
    }

    fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        (ms * self.hz).div_ceil(1000)
    }
}

/// The domains and what the balancer derives from them, built once.
#[derive(Clone, Debug)]
pub struct LbTopology {
    domains: SchedDomains,
    /// Per group index: its `sgc` slot (groups sharing a `sched_group_capacity` share it).
    sgc_slot: Vec<u32>,
    nr_sgc: usize,
    /// Per group index: `group_weight`, `cores`.
    group_weight: Vec<u32>,
    group_cores: Vec<u32>,
    /// Per CPU: `cpu_smt_mask()`.
    smt_mask: Vec<CpuMask>,
    smt_active: bool,
}

impl LbTopology {
    /// Derives the balancer's view of `domains`. A group's `sched_group_capacity` is Linux's
    /// per topology level and per CPU (`sdd->sgc`): the slot of a group is its domain's
    /// `level` and its `id` (`sgc->id`), so NUMA groups that Linux builds privately per CPU
    /// still share their `imbalance` flag as Linux's do.
    pub fn new(domains: SchedDomains) -> LbTopology {
        let n = domains.nr_cpus();
        let mut nr_groups = 0;
        for cpu in 0..n {
            for sd in domains.domains(cpu) {
                nr_groups = sd.groups.iter().fold(nr_groups, |m, &g| m.max(g + 1));
            }
        }
        let mut slots = BTreeMap::new();
        let mut sgc_slot = vec![0u32; nr_groups];
        for cpu in 0..n {
            for sd in domains.domains(cpu) {
                for &g in &sd.groups {
                    let key = (sd.level, domains.group(g).id);
                    let next = slots.len() as u32;
                    sgc_slot[g] = *slots.entry(key).or_insert(next);
                }
            }
        }
        let smt_mask: Vec<CpuMask> = (0..n)
            .map(|cpu| {
                domains.domains(cpu).iter().find(|sd| sd.flags.contains(SD_SHARE_CPUCAPACITY)).map_or(CpuMask::single(cpu), |sd| sd.span)
            })
            .collect();
        let smt_active = smt_mask.iter().any(|m| m.count() > 1);
        let group_weight = (0..nr_groups).map(|g| domains.group(g).span.count()).collect();
        let group_cores = (0..nr_groups)
            .map(|g| {
                let mut mask = domains.group(g).span;
                let mut cores = 0;
                while let Some(cpu) = mask.first() {
                    cores += 1;
                    mask = mask.andnot(smt_mask[cpu]).without(cpu);
                }
                cores
            })
            .collect();
        LbTopology { nr_sgc: slots.len(), domains, sgc_slot, group_weight, group_cores, smt_mask, smt_active }
    }

    /// The domains.
    pub fn domains(&self) -> &SchedDomains {
        &self.domains
    }

    /// Number of `sched_group_capacity` slots (size of [`LbShared`]).
    pub fn nr_sgc(&self) -> usize {
        self.nr_sgc
    }

    /// The `sgc` slot of group `g`.
    pub fn sgc_of(&self, g: usize) -> usize {
        self.sgc_slot[g] as usize
    }

    /// `cpu_smt_mask(cpu)`.
    pub fn smt_mask(&self, cpu: usize) -> CpuMask {
        self.smt_mask.get(cpu).copied().unwrap_or(CpuMask::single(cpu))
    }

    /// `sched_smt_active()`.
    pub fn smt_active(&self) -> bool {
        self.smt_active
    }

    /// `sg->group_weight`.
    pub fn group_weight(&self, g: usize) -> u32 {
        self.group_weight[g]
    }

    /// `sg->cores`: the SMT cores the group's span touches.
    pub fn group_cores(&self, g: usize) -> u32 {
        self.group_cores[g]
    }
}

/// State shared by every CPU's balancer: each `sched_group_capacity`'s `imbalance` flag
/// (`sg_imbalanced()`) and `sched_balance_running` (`SD_SERIALIZE`). Lock-free, as Linux's.
#[derive(Debug)]
pub struct LbShared {
    imbalance: Vec<AtomicBool>,
    balance_running: AtomicBool,
}

impl LbShared {
    /// All flags clear.
    pub fn new(topo: &LbTopology) -> LbShared {
        LbShared { imbalance: (0..topo.nr_sgc()).map(|_| AtomicBool::new(false)).collect(), balance_running: AtomicBool::new(false) }
    }

    /// `sgc->imbalance` of slot `sgc`.
    pub fn imbalance(&self, sgc: usize) -> bool {
        self.imbalance.get(sgc).is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Sets `sgc->imbalance` of slot `sgc`.
    pub fn set_imbalance(&self, sgc: usize, on: bool) {
        if let Some(f) = self.imbalance.get(sgc) {
            f.store(on, Ordering::Relaxed);
        }
    }

    /// Every flag, by slot (for a model's state).
    pub fn snapshot(&self) -> impl Iterator<Item = bool> + '_ {
        self.imbalance.iter().map(|f| f.load(Ordering::Relaxed))
    }
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgLbStats {
    /// `avg_load`: `group_load · 1024 / group_capacity`, computed only when needed.
    pub avg_load: u64,
    /// `group_load`.
    pub group_load: u64,
    /// `group_capacity`.
    pub group_capacity: u64,
    /// `group_util`.
    pub group_util: u64,
    /// `group_runnable`.
    pub group_runnable: u64,
    /// `sum_nr_running`.
    pub sum_nr_running: u32,
    /// `sum_h_nr_running`.
    pub sum_h_nr_running: u32,
    /// `idle_cpus`.
    pub idle_cpus: u32,
    /// `group_weight`.
    pub group_weight: u32,
    /// `group_type`.
    pub group_type: GroupType,
    /// `group_smt_balance`.
    pub group_smt_balance: bool,
    /// `group_misfit_task_load` (reduced-capacity CPUs only).
    pub group_misfit_task_load: u64,
}

/// A group of the domain being balanced: its index and what the decisions read of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRef {
    /// Index for [`SchedDomains::group`].
    pub index: usize,
    /// `sched_group_span()`.
    pub span: CpuMask,
    /// `sg->flags`.
    pub flags: crate::topology::SdFlags,
    /// `sg->cores`.
    pub cores: u32,
}

/// `struct sd_lb_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdLbStats {
    /// `busiest`.
    pub busiest: Option<GroupRef>,
    /// `local`.
    pub local: Option<GroupRef>,
    /// `total_load`.
    pub total_load: u64,
    /// `total_capacity`.
    pub total_capacity: u64,
    /// `avg_load`.
    pub avg_load: u64,
    /// `prefer_sibling`.
    pub prefer_sibling: bool,
    /// `busiest_stat`.
    pub busiest_stat: SgLbStats,
    /// `local_stat`.
    pub local_stat: SgLbStats,
}

impl SdLbStats {
    /// `init_sd_lb_stats`: the busiest statistics start as the least busy possible.
    pub fn new() -> SdLbStats {
        SdLbStats {
            busiest_stat: SgLbStats { idle_cpus: u32::MAX, group_type: GroupType::HasSpare, ..SgLbStats::default() },
            ..SdLbStats::default()
        }
    }
}

/// A fair task of the source run queue, as `can_migrate_task` and `detach_tasks` see it.
#[derive(Clone, Copy, Debug)]
pub struct LbTask<'a> {
    /// `p->cpus_ptr`.
    pub cpus_allowed: &'a CpuMask,
    /// `task_on_cpu()`: it runs (or is switching out) on the source.
    pub running: bool,
    /// `task_hot()`: the caller's verdict (recently ran, `sysctl_sched_migration_cost`,
    /// a core-scheduling cookie mismatch ...). Overridden after `cache_nice_tries` failures.
    pub cache_hot: bool,
    /// `throttled_lb_pair()`: a throttled group at either end.
    pub throttled: bool,
    /// `kthread_is_per_cpu()`.
    pub per_cpu_kthread: bool,
    /// `p->se.sched_delayed` (6.12's delayed dequeue): moved only by `migrate_load`.
    pub sched_delayed: bool,
    /// `task_h_load()` (or the weight, matching [`CpuStats::load`]).
    pub load: u64,
    /// `task_util_est()`.
    pub util: u64,
}

/// What [`LbEnv::consider`] says about one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Leave it, look at the next one.
    Skip,
    /// Move it, look at the next one.
    Detach,
    /// Move it and stop.
    DetachStop,
    /// Stop without moving it.
    Stop,
}

/// `struct lb_env`: one balancing pass at one domain of one CPU.
#[derive(Clone, Debug)]
pub struct LbEnv {
    cpu: usize,
    level: usize,
    dst_cpu: usize,
    src_cpu: usize,
    dst_grpmask: CpuMask,
    new_dst_cpu: usize,
    idle: CpuIdleType,
    imbalance: i64,
    cpus: CpuMask,
    flags: u32,
    loop_: u32,
    loop_break: u32,
    loop_max: u32,
    migration_type: MigrationType,
    /// `env->src_rq->nr_running` while detaching (kept by `consider`).
    src_nr_running: u32,
    nr_balance_failed: u32,
    cache_nice_tries: u32,
    imbalance_pct: u32,
    sd_flags: crate::topology::SdFlags,
    imb_numa_nr: u32,
    preempt: bool,
}

impl LbEnv {
    /// The balancing CPU (`this_cpu`).
    pub fn this_cpu(&self) -> usize {
        self.cpu
    }
    /// The domain level (index into `domains(this_cpu)`).
    pub fn level(&self) -> usize {
        self.level
    }
    /// `env->dst_cpu` (changes when `LBF_DST_PINNED` redirects the pull).
    pub fn dst_cpu(&self) -> usize {
        self.dst_cpu
    }
    /// `env->src_cpu`.
    pub fn src_cpu(&self) -> usize {
        self.src_cpu
    }
    /// `env->idle`.
    pub fn idle(&self) -> CpuIdleType {
        self.idle
    }
    /// `env->imbalance`: what is still to move, in `migration_type` units.
    pub fn imbalance(&self) -> i64 {
        self.imbalance
    }
    /// `env->migration_type`.
    pub fn migration_type(&self) -> MigrationType {
        self.migration_type
    }
    /// `env->flags` (`LBF_*`).
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// `env->cpus`: the CPUs still considered.
    pub fn cpus(&self) -> CpuMask {
        self.cpus
    }

    /// The start of `detach_tasks`, with the source locked: `src_nr_running` as it is now.
    /// False if there is nothing to do (the source has at most one task, which also clears
    /// `LBF_ALL_PINNED`; or no imbalance).
    pub fn detach_start(&mut self, src_nr_running: u32) -> bool {
        self.src_nr_running = src_nr_running;
        if src_nr_running <= 1 {
            self.flags &= !LBF_ALL_PINNED;
            return false;
        }
        self.imbalance > 0
    }

    /// `can_migrate_task`: may `p` move from the source to `dst_cpu` now? Keeps the `LBF_*`
    /// flags and `new_dst_cpu` as Linux does.
    pub fn can_migrate_task(&mut self, p: &LbTask<'_>) -> bool {
        if p.sched_delayed && self.migration_type != MigrationType::Load {
            return false;
        }
        if p.throttled || p.per_cpu_kthread {
            return false;
        }
        if !p.cpus_allowed.contains(self.dst_cpu) {
            self.flags |= LBF_SOME_PINNED;
            if self.idle == CpuIdleType::NewlyIdle || self.flags & (LBF_DST_PINNED | LBF_ACTIVE_LB) != 0 {
                return false;
            }
            if let Some(cpu) = (self.dst_grpmask & self.cpus & *p.cpus_allowed).first() {
                self.flags |= LBF_DST_PINNED;
                self.new_dst_cpu = cpu;
            }
            return false;
        }
        self.flags &= !LBF_ALL_PINNED;
        if p.running {
            return false;
        }
        if self.flags & LBF_ACTIVE_LB != 0 {
            return true;
        }
        !p.cache_hot || self.nr_balance_failed > self.cache_nice_tries
    }

    /// The body of `detach_tasks`' loop for the next task from the tail of the source's list.
    pub fn consider(&mut self, p: &LbTask<'_>) -> Verdict {
        if self.idle.is_idle() && self.src_nr_running <= 1 {
            return Verdict::Stop;
        }
        self.loop_ += 1;
        if self.loop_ > self.loop_max {
            return Verdict::Stop;
        }
        if self.loop_ > self.loop_break {
            self.loop_break += SCHED_NR_MIGRATE_BREAK;
            self.flags |= LBF_NEED_BREAK;
            return Verdict::Stop;
        }
        if !self.can_migrate_task(p) {
            return Verdict::Skip;
        }
        match self.migration_type {
            MigrationType::Load => {
                let load = p.load.max(1);
                if shr_bound(load, self.nr_balance_failed) as i64 > self.imbalance {
                    return Verdict::Skip;
                }
                self.imbalance = self.imbalance.wrapping_sub(load as i64);
            }
            MigrationType::Util => {
                let util = p.util;
                if shr_bound(util, self.nr_balance_failed) as i64 > self.imbalance {
                    return Verdict::Skip;
                }
                self.imbalance = self.imbalance.wrapping_sub(util as i64);
            }
            MigrationType::Task => self.imbalance -= 1,
        }
        self.src_nr_running -= 1;
        if (self.preempt && self.idle == CpuIdleType::NewlyIdle) || self.imbalance <= 0 {
            Verdict::DetachStop
        } else {
            Verdict::Detach
        }
    }
}

/// `shr_bound(val, shift)`: `val >> min(shift, 63)`.
pub const fn shr_bound(val: u64, shift: u32) -> u64 {
    val >> if shift < 63 { shift } else { 63 }
}

/// Whether [`LbRunQueues::active_balance`] started a push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActiveBalance {
    /// The source's running task may not run on the destination (`out_one_pinned`).
    CurrPinned,
    /// A push was started (or one was already under way: `busiest->active_balance`).
    Started,
}

/// What the balancer asks of the kernel's run queues (see the module docs).
pub trait LbRunQueues {
    /// CPU `cpu`'s statistics.
    fn cpu_stats(&self, cpu: usize) -> CpuStats;
    /// `detach_tasks` + `attach_tasks` from `env.src_cpu()` to `env.dst_cpu()`, driven by
    /// [`LbEnv::detach_start`] and [`LbEnv::consider`]. Returns how many tasks moved.
    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32;
    /// `src`'s running task should be pushed to `dst` (the stopper): start it if that task
    /// may run on `dst`.
    fn active_balance(&mut self, src: usize, dst: usize) -> ActiveBalance;
    /// Cadence's idle fallback: move one waiting (not running) fair task allowed on `dst` from
    /// any CPU of `span` to `dst`, the busiest queue first. True if one moved. Called only
    /// with [`LbConfig::idle_fallback`].
    fn pull_waiting(&mut self, dst: usize, span: CpuMask) -> bool {
        let _ = (dst, span);
        false
    }
}

/// The result of one [`sched_balance_rq`] pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbOutcome {
    /// Tasks moved (`ld_moved`).
    pub ld_moved: u32,
    /// The last pull decided (busiest CPU and how much), if any.
    pub decision: Option<LbDecision>,
    /// An active balance was started from this CPU to that one.
    pub active_balance: Option<(usize, usize)>,
    /// `should_we_balance` said no: the caller stops walking up (`continue_balancing = 0`).
    pub stop: bool,
}

/// A pull decision: [`find_busiest_group`] then [`find_busiest_queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbDecision {
    /// The CPU to pull from.
    pub busiest_cpu: usize,
    /// The busiest group (index for [`SchedDomains::group`]).
    pub busiest_group: usize,
    /// How the imbalance is measured.
    pub migration_type: MigrationType,
    /// `env->imbalance` as computed.
    pub imbalance: i64,
    /// The busiest group's type.
    pub busiest_type: GroupType,
    /// The local group's type.
    pub local_type: GroupType,
}

/// Reads `stats(i)` only for `i` in `mask`.
fn for_each_cpu(mask: CpuMask, mut f: impl FnMut(usize)) {
    for cpu in mask.iter() {
        f(cpu);
    }
}

fn is_core_idle(topo: &LbTopology, rqs: &impl LbRunQueues, cpu: usize) -> bool {
    topo.smt_mask(cpu).without(cpu).iter().all(|s| rqs.cpu_stats(s).idle)
}

/// `should_we_balance`: is `env.dst_cpu` the one CPU of its group that balances this domain
/// now? Newly idle: yes unless work arrived. Otherwise the first idle CPU of the local group's
/// balance mask (above SMT, on an idle core first, else the first idle SMT thread), else the
/// mask's first CPU (`group_balance_cpu`).
pub fn should_we_balance(topo: &LbTopology, env: &LbEnv, rqs: &impl LbRunQueues) -> bool {
    if !env.cpus.contains(env.dst_cpu) {
        return false;
    }
    if env.idle == CpuIdleType::NewlyIdle {
        let s = rqs.cpu_stats(env.dst_cpu);
        return s.nr_running == 0;
    }
    let sd = &topo.domains.domains(env.cpu)[env.level];
    let sg = topo.domains.group(sd.groups[0]);
    let mut swb_cpus = sg.balance_mask;
    let mut idle_smt = None;
    while let Some(cpu) = (swb_cpus & env.cpus).first() {
        swb_cpus = swb_cpus.without(cpu);
        if !rqs.cpu_stats(cpu).idle {
            continue;
        }
        if topo.smt_active && !sd.flags.contains(SD_SHARE_CPUCAPACITY) && !is_core_idle(topo, rqs, cpu) {
            idle_smt.get_or_insert(cpu);
            swb_cpus = swb_cpus.andnot(topo.smt_mask(cpu));
            continue;
        }
        return cpu == env.dst_cpu;
    }
    if let Some(cpu) = idle_smt {
        return cpu == env.dst_cpu;
    }
    sg.balance_mask.first() == Some(env.dst_cpu)
}

/// `group_has_capacity`.
pub fn group_has_capacity(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = u64::from(imbalance_pct);
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    if sgs.group_capacity.wrapping_mul(pct) < sgs.group_runnable.wrapping_mul(100) {
        return false;
    }
    sgs.group_capacity.wrapping_mul(100) > sgs.group_util.wrapping_mul(pct)
}

/// `group_is_overloaded` (without EAS).
pub fn group_is_overloaded(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = u64::from(imbalance_pct);
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    if sgs.group_capacity.wrapping_mul(100) < sgs.group_util.wrapping_mul(pct) {
        return true;
    }
    sgs.group_capacity.wrapping_mul(pct) < sgs.group_runnable.wrapping_mul(100)
}

/// `group_classify`: `sg_imbalanced` is the group's `sgc->imbalance` flag.
pub fn group_classify(imbalance_pct: u32, sg_imbalanced: bool, sgs: &SgLbStats) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        GroupType::Overloaded
    } else if sg_imbalanced {
        GroupType::Imbalanced
    } else if sgs.group_smt_balance {
        GroupType::SmtBalance
    } else if sgs.group_misfit_task_load != 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(imbalance_pct, sgs) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `check_cpu_capacity`: capacity noticeably reduced by other classes or IRQs.
fn check_cpu_capacity(s: &CpuStats, imbalance_pct: u32) -> bool {
    s.capacity_of() * u64::from(imbalance_pct) < SCHED_CAPACITY_SCALE * 100
}

/// The sums of `update_sg_lb_stats` and `update_sg_wakeup_stats` over the CPUs of `cpus` (load,
/// utilization, runnable, task counts, idle CPUs; `busy` is told of each CPU that is not idle),
/// with group `g`'s capacity (over its whole span, as `sgc->capacity`) and weight.
fn sum_group(
    topo: &LbTopology,
    g: usize,
    cpus: CpuMask,
    rqs: &impl LbRunQueues,
    mut busy: impl FnMut(&mut SgLbStats, &CpuStats),
) -> SgLbStats {
    let mut sgs = SgLbStats::default();
    let mut capacity = 0u64;
    for_each_cpu(topo.domains.group(g).span, |i| capacity += rqs.cpu_stats(i).capacity_of());
    for_each_cpu(cpus, |i| {
        let s = rqs.cpu_stats(i);
        sgs.group_load = sgs.group_load.wrapping_add(s.load);
        sgs.group_util = sgs.group_util.wrapping_add(s.util_cfs());
        sgs.group_runnable = sgs.group_runnable.wrapping_add(s.runnable);
        sgs.sum_h_nr_running += s.h_nr_running;
        sgs.sum_nr_running += s.nr_running;
        if s.nr_running == 0 && s.idle {
            sgs.idle_cpus += 1;
        } else {
            busy(&mut sgs, &s);
        }
    });
    sgs.group_capacity = capacity.max(1);
    sgs.group_weight = topo.group_weight(g);
    sgs
}

/// `update_sg_lb_stats` for group `g` of `env`'s domain.
pub fn update_sg_lb_stats(
    topo: &LbTopology,
    shared: &LbShared,
    env: &LbEnv,
    g: usize,
    local_group: bool,
    rqs: &impl LbRunQueues,
) -> SgLbStats {
    let group = topo.domains.group(g);
    let mut sgs = sum_group(topo, g, group.span & env.cpus, rqs, |sgs, s| {
        // Not SD_ASYM_CPUCAPACITY: a reduced-capacity CPU running one fair task.
        if !local_group
            && env.idle.is_idle()
            && s.h_nr_running == 1
            && check_cpu_capacity(s, env.imbalance_pct)
            && sgs.group_misfit_task_load < s.load
        {
            sgs.group_misfit_task_load = s.load;
        }
    });
    if !local_group && env.idle.is_idle() && group.flags.contains(SD_SHARE_CPUCAPACITY) && sgs.sum_h_nr_running > 1 {
        sgs.group_smt_balance = true;
    }
    sgs.group_type = group_classify(env.imbalance_pct, shared.imbalance(topo.sgc_of(g)), &sgs);
    if sgs.group_type == GroupType::Overloaded {
        sgs.avg_load = sgs.group_load.wrapping_mul(SCHED_CAPACITY_SCALE) / sgs.group_capacity;
    }
    sgs
}

fn smt_vs_nonsmt_groups(a: Option<GroupRef>, b: Option<GroupRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.flags.contains(SD_SHARE_CPUCAPACITY) != b.flags.contains(SD_SHARE_CPUCAPACITY),
        _ => false,
    }
}

/// `update_sd_pick_busiest`: is `sg` (with `sgs`) busier than the busiest so far?
pub fn update_sd_pick_busiest(sds: &SdLbStats, sg: GroupRef, sgs: &SgLbStats) -> bool {
    let busiest = &sds.busiest_stat;
    if sgs.sum_h_nr_running == 0 {
        return false;
    }
    if sgs.group_type > busiest.group_type {
        return true;
    }
    if sgs.group_type < busiest.group_type {
        return false;
    }
    let has_spare = |sgs: &SgLbStats| {
        !(sgs.idle_cpus > busiest.idle_cpus || (sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running))
    };
    match sgs.group_type {
        GroupType::Overloaded => sgs.avg_load > busiest.avg_load,
        GroupType::Imbalanced => false,
        GroupType::MisfitTask => sgs.group_misfit_task_load > busiest.group_misfit_task_load,
        GroupType::SmtBalance | GroupType::FullyBusy => {
            if sgs.group_type == GroupType::SmtBalance && (sgs.idle_cpus != 0 || busiest.idle_cpus != 0) {
                return has_spare(sgs);
            }
            if sgs.avg_load < busiest.avg_load {
                return false;
            }
            if sgs.avg_load == busiest.avg_load && sds.busiest.is_some_and(|b| b.flags.contains(SD_SHARE_CPUCAPACITY)) {
                return false;
            }
            true
        }
        GroupType::HasSpare => {
            if smt_vs_nonsmt_groups(sds.busiest, Some(sg)) {
                return !(sg.flags.contains(SD_SHARE_CPUCAPACITY) && sgs.sum_h_nr_running <= 1);
            }
            has_spare(sgs)
        }
    }
}

/// `update_sd_lb_stats`: every group of the domain, the local one first.
pub fn update_sd_lb_stats(topo: &LbTopology, shared: &LbShared, env: &LbEnv, rqs: &impl LbRunQueues) -> SdLbStats {
    let mut sds = SdLbStats::new();
    let sd = &topo.domains.domains(env.cpu)[env.level];
    for &g in &sd.groups {
        let group = topo.domains.group(g);
        let local_group = group.span.contains(env.dst_cpu);
        let sg = GroupRef { index: g, span: group.span, flags: group.flags, cores: topo.group_cores(g) };
        let sgs = update_sg_lb_stats(topo, shared, env, g, local_group, rqs);
        if local_group {
            sds.local = Some(sg);
            sds.local_stat = sgs;
        } else if update_sd_pick_busiest(&sds, sg, &sgs) {
            sds.busiest = Some(sg);
            sds.busiest_stat = sgs;
        }
        sds.total_load = sds.total_load.wrapping_add(sgs.group_load);
        sds.total_capacity = sds.total_capacity.wrapping_add(sgs.group_capacity);
    }
    if let Some(b) = sds.busiest {
        sds.prefer_sibling = b.flags.contains(SD_PREFER_SIBLING);
    }
    sds
}

/// `adjust_numa_imbalance` (its `int` arguments as C passes them).
pub fn adjust_numa_imbalance(imbalance: i32, dst_running: i32, imb_numa_nr: i32) -> i32 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// `sibling_imbalance`: tasks to move so both groups run as many per core (0 unless idle).
pub fn sibling_imbalance(idle: CpuIdleType, sds: &SdLbStats, busiest: &SgLbStats, local: &SgLbStats) -> i64 {
    if !idle.is_idle() || busiest.sum_nr_running == 0 {
        return 0;
    }
    let ncores_busiest = i64::from(sds.busiest.map_or(1, |g| g.cores));
    let ncores_local = i64::from(sds.local.map_or(1, |g| g.cores));
    if ncores_busiest == ncores_local {
        return (i64::from(busiest.sum_nr_running) - i64::from(local.sum_nr_running)).max(0);
    }
    let mut imbalance = (ncores_local * i64::from(busiest.sum_nr_running) - ncores_busiest * i64::from(local.sum_nr_running)).max(0);
    imbalance = (2 * imbalance + ncores_local + ncores_busiest) / (ncores_local + ncores_busiest);
    if imbalance <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1 {
        imbalance = 2;
    }
    imbalance
}

/// What [`calculate_imbalance`] reads of the domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImbalanceCtx {
    /// `env->idle`.
    pub idle: CpuIdleType,
    /// `sd->flags & SD_SHARE_LLC`.
    pub share_llc: bool,
    /// `sd->flags & SD_NUMA`.
    pub numa: bool,
    /// `sd->imb_numa_nr`.
    pub imb_numa_nr: u32,
}

/// `calculate_imbalance`: how much to move and how it is measured. `sds.local_stat.avg_load`
/// and `sds.avg_load` are filled in when needed, as Linux does.
pub fn calculate_imbalance(ctx: ImbalanceCtx, sds: &mut SdLbStats) -> (MigrationType, i64) {
    let busiest = sds.busiest_stat;
    let local = &mut sds.local_stat;
    match busiest.group_type {
        GroupType::MisfitTask => return (MigrationType::Load, busiest.group_misfit_task_load as i64),
        GroupType::SmtBalance | GroupType::Imbalanced => return (MigrationType::Task, 1),
        _ => {}
    }
    if local.group_type == GroupType::HasSpare {
        if busiest.group_type > GroupType::FullyBusy && !ctx.share_llc {
            let imbalance = local.group_capacity.max(local.group_util) - local.group_util;
            if ctx.idle.is_idle() && imbalance == 0 {
                return (MigrationType::Task, 1);
            }
            return (MigrationType::Util, imbalance as i64);
        }
        let local = *local;
        let mut imbalance = if busiest.group_weight == 1 || sds.prefer_sibling {
            sibling_imbalance(ctx.idle, sds, &busiest, &local)
        } else {
            // Linux: max_t(long, 0, local->idle_cpus - busiest->idle_cpus), an unsigned int
            // difference that wraps to 2^32 - 1 (2^31 - 1 tasks after the halving) when the
            // busiest group has more idle CPUs; that needs an overloaded busiest group of
            // several CPUs without SD_PREFER_SIBLING on an LLC level (asymmetric-capacity
            // machines). Found by the proptest below; Cadence saturates at 0.
            i64::from(local.idle_cpus.saturating_sub(busiest.idle_cpus))
        };
        if ctx.numa {
            imbalance = i64::from(adjust_numa_imbalance(imbalance as i32, local.sum_nr_running as i32 + 1, ctx.imb_numa_nr as i32));
        }
        return (MigrationType::Task, imbalance >> 1);
    }
    if local.group_type < GroupType::Overloaded {
        local.avg_load = local.group_load.wrapping_mul(SCHED_CAPACITY_SCALE) / local.group_capacity.max(1);
        if local.avg_load >= busiest.avg_load {
            return (MigrationType::Load, 0);
        }
        sds.avg_load = sds.total_load.wrapping_mul(SCHED_CAPACITY_SCALE) / sds.total_capacity.max(1);
        if sds.local_stat.avg_load >= sds.avg_load {
            return (MigrationType::Load, 0);
        }
    }
    let local = &sds.local_stat;
    let a = busiest.avg_load.wrapping_sub(sds.avg_load).wrapping_mul(busiest.group_capacity);
    let b = sds.avg_load.wrapping_sub(local.avg_load).wrapping_mul(local.group_capacity);
    (MigrationType::Load, (a.min(b) / SCHED_CAPACITY_SCALE) as i64)
}

/// `find_busiest_group`: the busiest group of the domain if pulling from it is worth it; sets
/// `env`'s imbalance and migration type.
pub fn find_busiest_group(topo: &LbTopology, shared: &LbShared, env: &mut LbEnv, rqs: &impl LbRunQueues) -> Option<(GroupRef, SdLbStats)> {
    let mut sds = update_sd_lb_stats(topo, shared, env, rqs);
    env.imbalance = 0;
    let busiest_group = sds.busiest?;
    let busiest = sds.busiest_stat;
    let local = sds.local_stat;
    let force = matches!(busiest.group_type, GroupType::MisfitTask | GroupType::Imbalanced);
    if !force {
        if local.group_type > busiest.group_type {
            return None;
        }
        if local.group_type == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load {
                return None;
            }
            sds.avg_load = sds.total_load.wrapping_mul(SCHED_CAPACITY_SCALE) / sds.total_capacity.max(1);
            if local.avg_load >= sds.avg_load {
                return None;
            }
            if 100 * busiest.avg_load <= u64::from(env.imbalance_pct) * local.avg_load {
                return None;
            }
        }
        let sibling =
            sds.prefer_sibling && local.group_type == GroupType::HasSpare && sibling_imbalance(env.idle, &sds, &busiest, &local) > 1;
        if !sibling && busiest.group_type != GroupType::Overloaded {
            if !env.idle.is_idle() {
                return None;
            }
            let smt = busiest.group_type == GroupType::SmtBalance && smt_vs_nonsmt_groups(sds.local, sds.busiest);
            if !smt {
                if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus.wrapping_add(1) {
                    return None;
                }
                if busiest.sum_h_nr_running == 1 {
                    return None;
                }
            }
        }
    }
    let ctx = ImbalanceCtx {
        idle: env.idle,
        share_llc: env.sd_flags.contains(SD_SHARE_LLC),
        numa: env.sd_flags.contains(SD_NUMA),
        imb_numa_nr: env.imb_numa_nr,
    };
    let (migration_type, imbalance) = calculate_imbalance(ctx, &mut sds);
    env.migration_type = migration_type;
    env.imbalance = imbalance;
    (imbalance != 0).then_some((busiest_group, sds))
}

/// `find_busiest_queue`: the CPU of `group` to pull from, by `env`'s migration type.
pub fn find_busiest_queue(env: &LbEnv, group: &GroupRef, rqs: &impl LbRunQueues) -> Option<usize> {
    let mut busiest = None;
    let (mut busiest_util, mut busiest_load, mut busiest_capacity, mut busiest_nr) = (0u64, 0u64, 1u64, 0u32);
    for i in (group.span & env.cpus).iter() {
        let s = rqs.cpu_stats(i);
        let nr_running = s.h_nr_running;
        if nr_running == 0 {
            continue;
        }
        let capacity = s.capacity_of();
        match env.migration_type {
            MigrationType::Load => {
                let load = s.load;
                if nr_running == 1 && load as i64 > env.imbalance && !check_cpu_capacity(&s, env.imbalance_pct) {
                    continue;
                }
                if u128::from(load) * u128::from(busiest_capacity) > u128::from(busiest_load) * u128::from(capacity) {
                    busiest_load = load;
                    busiest_capacity = capacity;
                    busiest = Some(i);
                }
            }
            MigrationType::Util => {
                let util = s.util_cfs_boost();
                if nr_running <= 1 {
                    continue;
                }
                if busiest_util < util {
                    busiest_util = util;
                    busiest = Some(i);
                }
            }
            MigrationType::Task => {
                if busiest_nr < nr_running {
                    busiest_nr = nr_running;
                    busiest = Some(i);
                }
            }
        }
    }
    busiest
}

/// `imbalanced_active_balance` + the reduced-capacity case of `need_active_balance`.
pub fn need_active_balance(env: &LbEnv, src: &CpuStats, dst: &CpuStats) -> bool {
    if env.migration_type == MigrationType::Task && env.nr_balance_failed > env.cache_nice_tries + 2 {
        return true;
    }
    env.idle.is_idle()
        && src.h_nr_running == 1
        && check_cpu_capacity(src, env.imbalance_pct)
        && src.capacity_of() * u64::from(env.imbalance_pct) < dst.capacity_of() * 100
}

/// `get_sd_balance_interval`, in jiffies: `balance_interval` (times `busy_factor` when busy),
/// one less when busy, clamped to `1..=max_load_balance_interval`.
pub fn get_sd_balance_interval(state: &SdState, sd: &SchedDomain, cpu_busy: bool, cfg: &LbConfig) -> u64 {
    let mut interval = state.balance_interval;
    if cpu_busy {
        interval *= u64::from(sd.busy_factor);
    }
    interval = cfg.msecs_to_jiffies(interval);
    if cpu_busy {
        interval = interval.saturating_sub(1);
    }
    interval.clamp(1, cfg.max_load_balance_interval.max(1))
}

/// A fresh `lb_env` for `this_cpu`'s domain `level`.
pub fn lb_env(topo: &LbTopology, cfg: &LbConfig, this_cpu: usize, level: usize, idle: CpuIdleType, state: &SdState) -> LbEnv {
    let sd = &topo.domains.domains(this_cpu)[level];
    LbEnv {
        cpu: this_cpu,
        level,
        dst_cpu: this_cpu,
        src_cpu: this_cpu,
        dst_grpmask: topo.domains.group(sd.groups[0]).balance_mask,
        new_dst_cpu: this_cpu,
        idle,
        imbalance: 0,
        cpus: sd.span & cfg.active,
        flags: 0,
        loop_: 0,
        loop_break: SCHED_NR_MIGRATE_BREAK,
        loop_max: 0,
        migration_type: MigrationType::Load,
        src_nr_running: 0,
        nr_balance_failed: state.nr_balance_failed,
        cache_nice_tries: sd.cache_nice_tries,
        imbalance_pct: sd.imbalance_pct,
        sd_flags: sd.flags,
        imb_numa_nr: sd.imb_numa_nr,
        preempt: cfg.preempt,
    }
}

/// `sched_balance_rq` (`load_balance`): one pass of `this_cpu` at its domain `level`.
/// `state` is that domain's [`SdState`]; the parent's first group's `imbalance` flag is kept
/// in `shared`.
#[allow(clippy::too_many_arguments)] // Linux's arguments plus the caller-owned state.
pub fn sched_balance_rq(
    topo: &LbTopology,
    cfg: &LbConfig,
    shared: &LbShared,
    this_cpu: usize,
    level: usize,
    idle: CpuIdleType,
    state: &mut SdState,
    rqs: &mut impl LbRunQueues,
) -> LbOutcome {
    let domains = topo.domains.domains(this_cpu);
    let sd = &domains[level];
    let parent_sgc = domains.get(level + 1).map(|p| topo.sgc_of(p.groups[0]));
    let mut env = lb_env(topo, cfg, this_cpu, level, idle, state);
    let mut out = LbOutcome { ld_moved: 0, decision: None, active_balance: None, stop: false };
    let mut ld_moved = 0u32;

    enum Exit {
        Unbalanced,
        Balanced,
        AllPinned,
        OnePinned,
    }
    state.stats.add(idle, SdStats::LB_COUNT, 1);
    let exit = 'redo: loop {
        if !should_we_balance(topo, &env, rqs) {
            out.stop = true;
            break 'redo Exit::Balanced;
        }
        let Some((group, sds)) = find_busiest_group(topo, shared, &mut env, rqs) else {
            state.stats.add(idle, SdStats::LB_NOBUSYG, 1);
            break 'redo Exit::Balanced;
        };
        let Some(busiest) = find_busiest_queue(&env, &group, rqs) else {
            state.stats.add(idle, SdStats::LB_NOBUSYQ, 1);
            break 'redo Exit::Balanced;
        };
        state.stats.add(idle, SdStats::LB_IMBALANCE, env.imbalance.max(0) as u64);
        out.decision = Some(LbDecision {
            busiest_cpu: busiest,
            busiest_group: group.index,
            migration_type: env.migration_type,
            imbalance: env.imbalance,
            busiest_type: sds.busiest_stat.group_type,
            local_type: sds.local_stat.group_type,
        });
        env.src_cpu = busiest;
        env.flags |= LBF_ALL_PINNED;
        let src_nr = rqs.cpu_stats(busiest).nr_running;
        if src_nr > 1 {
            env.loop_max = cfg.nr_migrate.min(src_nr);
            loop {
                ld_moved += rqs.detach_tasks(&mut env);
                if env.flags & LBF_NEED_BREAK != 0 {
                    env.flags &= !LBF_NEED_BREAK;
                    continue;
                }
                if env.flags & LBF_DST_PINNED != 0 && env.imbalance > 0 {
                    env.cpus = env.cpus.without(env.dst_cpu);
                    env.dst_cpu = env.new_dst_cpu;
                    env.flags &= !LBF_DST_PINNED;
                    env.loop_ = 0;
                    env.loop_break = SCHED_NR_MIGRATE_BREAK;
                    continue;
                }
                break;
            }
            if let Some(p) = parent_sgc {
                if env.flags & LBF_SOME_PINNED != 0 && env.imbalance > 0 {
                    shared.set_imbalance(p, true);
                }
            }
            if env.flags & LBF_ALL_PINNED != 0 {
                env.cpus = env.cpus.without(busiest);
                if !env.cpus.is_subset_of(env.dst_grpmask) {
                    env.loop_ = 0;
                    env.loop_break = SCHED_NR_MIGRATE_BREAK;
                    continue 'redo;
                }
                break 'redo Exit::AllPinned;
            }
        }
        state.stats.add(idle, SdStats::LB_GAINED, u64::from(ld_moved));
        if ld_moved == 0 {
            state.stats.add(idle, SdStats::LB_FAILED, 1);
            if idle != CpuIdleType::NewlyIdle {
                state.nr_balance_failed = state.nr_balance_failed.saturating_add(1);
                env.nr_balance_failed = state.nr_balance_failed;
            }
            let (src, dst) = (rqs.cpu_stats(env.src_cpu), rqs.cpu_stats(env.dst_cpu));
            if need_active_balance(&env, &src, &dst) {
                match rqs.active_balance(busiest, this_cpu) {
                    ActiveBalance::CurrPinned => break 'redo Exit::OnePinned,
                    ActiveBalance::Started => {
                        env.flags &= !LBF_ALL_PINNED;
                        out.active_balance = Some((busiest, this_cpu));
                    }
                }
            }
        } else {
            state.nr_balance_failed = 0;
        }
        break 'redo Exit::Unbalanced;
    };
    if matches!(exit, Exit::Balanced | Exit::AllPinned) {
        state.stats.add(idle, SdStats::LB_BALANCED, 1);
    }
    match exit {
        Exit::Unbalanced => {
            state.balance_interval = sd.min_interval.max(1);
            out.ld_moved = ld_moved;
            return out;
        }
        Exit::Balanced => {
            if let Some(p) = parent_sgc {
                if env.flags & LBF_ALL_PINNED == 0 {
                    shared.set_imbalance(p, false);
                }
            }
            state.nr_balance_failed = 0;
        }
        Exit::AllPinned => state.nr_balance_failed = 0,
        Exit::OnePinned => {}
    }
    // out_one_pinned
    if env.idle != CpuIdleType::NewlyIdle
        && ((env.flags & LBF_ALL_PINNED != 0 && state.balance_interval < MAX_PINNED_INTERVAL) || state.balance_interval < sd.max_interval)
    {
        state.balance_interval *= 2;
    }
    out.ld_moved = 0;
    out
}

/// `sched_balance_domains` (`rebalance_domains`) at `now` (jiffies): every domain of `cpu`
/// whose interval has passed, bottom-up, while `should_we_balance` agrees; `states[level]` per
/// domain. Returns `rq->next_balance` and the tasks moved. With [`LbConfig::idle_fallback`],
/// when the top domain's interval had passed and the CPU is still idle at the end, it pulls
/// one waiting task it may run ([`idle_fallback`]): at most once per top-level interval.
#[allow(clippy::too_many_arguments)] // Linux's arguments plus the caller-owned state.
pub fn sched_balance_domains(
    topo: &LbTopology,
    cfg: &LbConfig,
    shared: &LbShared,
    cpu: usize,
    idle: CpuIdleType,
    now: u64,
    states: &mut [SdState],
    rqs: &mut impl LbRunQueues,
) -> (u64, u32) {
    let mut idle = idle;
    let mut busy = idle != CpuIdleType::Idle;
    let mut next_balance = now + 60 * cfg.hz;
    let mut moved = 0;
    let domains = topo.domains.domains(cpu);
    let top_due = match (domains.last(), states.get(domains.len().wrapping_sub(1))) {
        (Some(sd), Some(st)) => now >= st.last_balance + get_sd_balance_interval(st, sd, busy, cfg),
        _ => false,
    };
    for (level, sd) in domains.iter().enumerate() {
        let Some(state) = states.get_mut(level) else { break };
        let mut interval = get_sd_balance_interval(state, sd, busy, cfg);
        if now >= state.last_balance + interval {
            let need_serialize = sd.flags.contains(SD_SERIALIZE);
            if need_serialize && shared.balance_running.swap(true, Ordering::Acquire) {
                break;
            }
            let out = sched_balance_rq(topo, cfg, shared, cpu, level, idle, state, rqs);
            if need_serialize {
                shared.balance_running.store(false, Ordering::Release);
            }
            moved += out.ld_moved;
            if out.ld_moved > 0 {
                idle = if rqs.cpu_stats(cpu).idle { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
                busy = idle != CpuIdleType::Idle;
            }
            state.last_balance = now;
            interval = get_sd_balance_interval(state, sd, busy, cfg);
            next_balance = next_balance.min(state.last_balance + interval);
            if out.stop {
                break;
            }
            continue;
        }
        next_balance = next_balance.min(state.last_balance + interval);
    }
    if top_due {
        if let Some(top) = domains.last() {
            moved += idle_fallback(cfg, cpu, idle, top.span, rqs);
        }
    }
    (next_balance, moved)
}

/// Cadence's idle fallback: an idle CPU pulls one waiting task it may run from anywhere in
/// `span` (its top domain: the machine).
pub fn idle_fallback(cfg: &LbConfig, cpu: usize, idle: CpuIdleType, span: CpuMask, rqs: &mut impl LbRunQueues) -> u32 {
    if !cfg.idle_fallback || idle != CpuIdleType::Idle || !rqs.cpu_stats(cpu).idle {
        return 0;
    }
    u32::from(rqs.pull_waiting(cpu, span & cfg.active))
}

/// `sched_balance_newidle` (`newidle_balance`): `this_cpu` is about to idle; balance each
/// domain with `SD_BALANCE_NEWIDLE` bottom-up until a task came. `overloaded` is
/// `rd->overloaded` (some CPU has two tasks or more). Returns the tasks pulled.
///
/// With [`LbConfig::idle_fallback`], a CPU still idle after the domains pulls one waiting task
/// it may run from anywhere in its top domain ([`LbRunQueues::pull_waiting`]): Linux goes idle
/// beside a waiting task whenever its load arithmetic calls the domains balanced (pinned load
/// on a sibling, a NUMA imbalance it allows), which is how the wasted-cores scenarios leave
/// CPUs idle for tens of milliseconds on both kernels.
pub fn sched_balance_newidle(
    topo: &LbTopology,
    cfg: &LbConfig,
    shared: &LbShared,
    this_cpu: usize,
    overloaded: bool,
    states: &mut [SdState],
    rqs: &mut impl LbRunQueues,
) -> u32 {
    if !overloaded || !cfg.active.contains(this_cpu) {
        return 0;
    }
    let mut pulled = 0;
    for (level, sd) in topo.domains.domains(this_cpu).iter().enumerate() {
        let Some(state) = states.get_mut(level) else { break };
        let mut stop = false;
        if sd.flags.contains(SD_BALANCE_NEWIDLE) {
            let out = sched_balance_rq(topo, cfg, shared, this_cpu, level, CpuIdleType::NewlyIdle, state, rqs);
            pulled += out.ld_moved;
            stop = out.stop;
        }
        if pulled > 0 || stop || rqs.cpu_stats(this_cpu).nr_running > 0 {
            break;
        }
    }
    if pulled == 0 {
        if let Some(top) = topo.domains.domains(this_cpu).last() {
            // Still idle after the pass: the fallback's own idle check decides.
            pulled += idle_fallback(cfg, this_cpu, CpuIdleType::Idle, top.span, rqs);
        }
    }
    pulled
}

/// `update_sg_wakeup_stats` for a task not yet on any queue (a fork or exec): group `g`'s
/// statistics over the CPUs of its span that `allowed` contains.
fn update_sg_wakeup_stats(
    topo: &LbTopology,
    shared: &LbShared,
    sd: &SchedDomain,
    g: usize,
    allowed: CpuMask,
    rqs: &impl LbRunQueues,
) -> SgLbStats {
    let mut sgs = sum_group(topo, g, topo.domains.group(g).span & allowed, rqs, |_, _| {});
    sgs.group_type = group_classify(sd.imbalance_pct, shared.imbalance(topo.sgc_of(g)), &sgs);
    if matches!(sgs.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
        sgs.avg_load = sgs.group_load.wrapping_mul(SCHED_CAPACITY_SCALE) / sgs.group_capacity;
    }
    sgs
}

/// `update_pick_idlest`: is `sgs` idler than the idlest so far?
fn update_pick_idlest(idlest: &SgLbStats, sgs: &SgLbStats) -> bool {
    if sgs.group_type != idlest.group_type {
        return sgs.group_type < idlest.group_type;
    }
    match sgs.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => idlest.avg_load > sgs.avg_load,
        GroupType::HasSpare => {
            idlest.idle_cpus < sgs.idle_cpus || (idlest.idle_cpus == sgs.idle_cpus && idlest.group_util > sgs.group_util)
        }
        _ => false,
    }
}

/// `sched_balance_find_dst_group` (`find_idlest_group`, 6.12): the group of `sd` a new task
/// allowed on `allowed` should go to, or `None` to stay in `this_cpu`'s own group.
pub fn sched_balance_find_dst_group(
    topo: &LbTopology,
    shared: &LbShared,
    sd: &SchedDomain,
    this_cpu: usize,
    allowed: CpuMask,
    rqs: &impl LbRunQueues,
) -> Option<usize> {
    let mut idlest: Option<(usize, SgLbStats)> = None;
    let mut local: Option<SgLbStats> = None;
    for &g in &sd.groups {
        let span = topo.domains.group(g).span;
        if (span & allowed).is_empty() {
            continue;
        }
        let sgs = update_sg_wakeup_stats(topo, shared, sd, g, allowed, rqs);
        if span.contains(this_cpu) {
            local = Some(sgs);
        } else if idlest.as_ref().is_none_or(|(_, i)| update_pick_idlest(i, &sgs)) {
            idlest = Some((g, sgs));
        }
    }
    let (idlest, idlest_sgs) = idlest?;
    let Some(local) = local else { return Some(idlest) };
    if local.group_type != idlest_sgs.group_type {
        return (local.group_type > idlest_sgs.group_type).then_some(idlest);
    }
    match local.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            let imbalance = SCHED_CAPACITY_SCALE * u64::from(sd.imbalance_pct.saturating_sub(100)) / 100;
            if idlest_sgs.avg_load >= local.avg_load + imbalance
                || 100 * local.avg_load <= u64::from(sd.imbalance_pct) * idlest_sgs.avg_load
            {
                return None;
            }
        }
        GroupType::HasSpare => {
            if sd.flags.contains(SD_NUMA) {
                // No NUMA balancing (no preferred node); `imb_numa_nr` bounded by the affinity.
                let imb_numa_nr = (allowed & sd.span).count().min(sd.imb_numa_nr) as i32;
                let imbalance = (local.idle_cpus as i32 - idlest_sgs.idle_cpus as i32).abs();
                if adjust_numa_imbalance(imbalance, local.sum_nr_running as i32 + 1, imb_numa_nr) == 0 {
                    return None;
                }
            }
            if local.idle_cpus >= idlest_sgs.idle_cpus {
                return None;
            }
        }
        _ => {}
    }
    Some(idlest)
}

/// `sched_balance_find_dst_group_cpu` (`find_idlest_group_cpu`): in group `g`, the first idle
/// allowed CPU, else the least loaded allowed one.
pub fn sched_balance_find_dst_group_cpu(topo: &LbTopology, g: usize, this_cpu: usize, allowed: CpuMask, rqs: &impl LbRunQueues) -> usize {
    let span = topo.domains.group(g).span & allowed;
    if topo.group_weight(g) == 1 {
        return topo.domains.group(g).span.first().unwrap_or(this_cpu);
    }
    let mut least: Option<(u64, usize)> = None;
    for i in span.iter() {
        let s = rqs.cpu_stats(i);
        if s.idle && s.nr_running == 0 {
            return i;
        }
        if least.is_none_or(|(l, _)| s.load < l) {
            least = Some((s.load, i));
        }
    }
    least.map_or(this_cpu, |(_, i)| i)
}

/// `sched_balance_find_dst_cpu` (`find_idlest_cpu`, 6.12) for a new task (`flag`:
/// `SD_BALANCE_FORK`, or `SD_BALANCE_EXEC` at exec) allowed on `allowed`: from the highest
/// domain of `cpu` with `flag` down, the idlest group, then its idlest CPU, then again at that
/// CPU's domains below the level just looked at. `prev` when no domain spans an allowed CPU.
pub fn sched_balance_find_dst_cpu(
    topo: &LbTopology,
    shared: &LbShared,
    cpu: usize,
    prev: usize,
    allowed: CpuMask,
    flag: crate::topology::SdFlags,
    rqs: &impl LbRunQueues,
) -> usize {
    let domains = topo.domains.domains(cpu);
    // `select_task_rq_fair`'s walk: the highest domain with `flag` among the bottom ones that
    // all have it.
    let Some(top) = domains.iter().take_while(|sd| sd.flags.contains(flag)).count().checked_sub(1) else { return prev };
    if (domains[top].span & allowed).is_empty() {
        return prev;
    }
    let mut cpu = cpu;
    let mut new_cpu = cpu;
    let mut level = Some(top);
    while let Some(l) = level {
        let sd = &topo.domains.domains(cpu)[l];
        let child = l.checked_sub(1);
        if !sd.flags.contains(flag) {
            level = child;
            continue;
        }
        let Some(group) = sched_balance_find_dst_group(topo, shared, sd, cpu, allowed, rqs) else {
            level = child;
            continue;
        };
        new_cpu = sched_balance_find_dst_group_cpu(topo, group, cpu, allowed, rqs);
        if new_cpu == cpu {
            level = child;
            continue;
        }
        // Now at the new CPU, its domains below this one's size.
        let weight = sd.span.count();
        cpu = new_cpu;
        level = topo
            .domains
            .domains(cpu)
            .iter()
            .enumerate()
            .take_while(|(_, d)| d.span.count() < weight)
            .filter(|(_, d)| d.flags.contains(flag))
            .map(|(i, _)| i)
            .last();
    }
    new_cpu
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{CpuTopo, MachineTopology, NodeDistances, SD_BALANCE_FORK};
    use proptest::prelude::*;

    fn machine(sockets: u32, cores: u32, threads: u32, nodes: u32) -> LbTopology {
        let mut v = Vec::new();
        for s in 0..sockets {
            for c in 0..cores {
                for t in 0..threads {
                    v.push(CpuTopo { package: s, core: c, thread: t, llc: s, l2: None, node: s % nodes });
                }
            }
        }
        LbTopology::new(SchedDomains::build(&MachineTopology::new(v, NodeDistances::without_slit(nodes as usize)).unwrap()))
    }

    /// Plain CPUs: `tasks[cpu]` nice-0 hogs each.
    struct Rqs {
        tasks: Vec<u32>,
        moves: Vec<(usize, usize)>,
    }

    impl LbRunQueues for Rqs {
        fn cpu_stats(&self, cpu: usize) -> CpuStats {
            let n = self.tasks[cpu];
            CpuStats {
                nr_running: n,
                h_nr_running: n,
                idle: n == 0,
                load: 1024 * u64::from(n),
                util: if n > 0 { 1024 } else { 0 },
                runnable: 1024 * u64::from(n),
                capacity: 1024,
            }
        }
        fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
            let (src, dst) = (env.src_cpu(), env.dst_cpu());
            if !env.detach_start(self.tasks[src]) {
                return 0;
            }
            let all = CpuMask::all(self.tasks.len());
            let mut moved = 0;
            for k in 0..self.tasks[src] {
                let t = LbTask {
                    cpus_allowed: &all,
                    running: k == 0,
                    cache_hot: false,
                    throttled: false,
                    per_cpu_kthread: false,
                    sched_delayed: false,
                    load: 1024,
                    util: 1024 / self.tasks[src] as u64,
                };
                match env.consider(&t) {
                    Verdict::Skip => {}
                    Verdict::Detach => moved += 1,
                    Verdict::DetachStop => {
                        moved += 1;
                        break;
                    }
                    Verdict::Stop => break,
                }
            }
            self.tasks[src] -= moved;
            self.tasks[dst] += moved;
            for _ in 0..moved {
                self.moves.push((src, dst));
            }
            moved
        }
        fn active_balance(&mut self, _: usize, _: usize) -> ActiveBalance {
            ActiveBalance::Started
        }
    }

    #[test]
    fn idle_cpu_pulls_from_the_busiest_at_mc() {
        let topo = machine(1, 4, 1, 1);
        let cfg = LbConfig::new(4, 250);
        let shared = LbShared::new(&topo);
        let mut rqs = Rqs { tasks: vec![0, 1, 3, 1], moves: Vec::new() };
        let mut st = SdState::new(&topo.domains().domains(0)[0], 0);
        let out = sched_balance_rq(&topo, &cfg, &shared, 0, 0, CpuIdleType::Idle, &mut st, &mut rqs);
        assert_eq!(out.ld_moved, 1);
        let d = out.decision.unwrap();
        assert_eq!((d.busiest_cpu, d.migration_type, d.imbalance), (2, MigrationType::Task, 1));
        assert_eq!(rqs.tasks, [1, 1, 2, 1]);
        assert_eq!(st.balance_interval, 4);
    }

    #[test]
    fn only_the_first_idle_cpu_balances_a_group() {
        // Two packages of two cores: at PKG, CPU 1 defers to CPU 0 when both are idle.
        let topo = machine(2, 2, 1, 1);
        let cfg = LbConfig::new(4, 250);
        let shared = LbShared::new(&topo);
        let mut rqs = Rqs { tasks: vec![0, 0, 3, 1], moves: Vec::new() };
        let doms = topo.domains().domains(1);
        assert_eq!(doms.len(), 2);
        let mut st = SdState::new(&doms[1], 0);
        let out = sched_balance_rq(&topo, &cfg, &shared, 1, 1, CpuIdleType::Idle, &mut st, &mut rqs);
        assert!(out.stop && out.ld_moved == 0);
        let out = sched_balance_rq(&topo, &cfg, &shared, 0, 1, CpuIdleType::Idle, &mut st, &mut rqs);
        // Above the LLC an overloaded busiest group gives migrate_util: the local group's
        // spare capacity (2048) takes both waiting tasks (341 each).
        let d = out.decision.unwrap();
        assert_eq!((d.migration_type, d.imbalance, out.ld_moved), (MigrationType::Util, 2048, 2), "{out:?}");
        assert_eq!(rqs.tasks, [2, 0, 1, 1]);
    }

    #[test]
    fn balanced_passes_double_the_interval() {
        let topo = machine(1, 4, 1, 1);
        let cfg = LbConfig::new(4, 250);
        let shared = LbShared::new(&topo);
        let mut rqs = Rqs { tasks: vec![1, 1, 1, 1], moves: Vec::new() };
        let sd = &topo.domains().domains(0)[0];
        let mut st = SdState::new(sd, 0);
        for expect in [8, 8] {
            sched_balance_rq(&topo, &cfg, &shared, 0, 0, CpuIdleType::NotIdle, &mut st, &mut rqs);
            assert_eq!(st.balance_interval, expect);
        }
        assert_eq!(get_sd_balance_interval(&st, sd, false, &cfg), 2);
        assert_eq!(get_sd_balance_interval(&st, sd, true, &cfg), 31);
        let big = SdState { balance_interval: 512, ..st };
        assert_eq!(get_sd_balance_interval(&big, sd, true, &cfg), cfg.max_load_balance_interval);
    }

    #[test]
    fn numa_allows_a_small_imbalance() {
        assert_eq!(adjust_numa_imbalance(2, 1, 2), 0);
        assert_eq!(adjust_numa_imbalance(3, 1, 2), 3);
        assert_eq!(adjust_numa_imbalance(2, 3, 2), 2);
    }

    #[test]
    fn sibling_imbalance_spreads_per_core() {
        let g = |cores| Some(GroupRef { index: 0, span: CpuMask::EMPTY, flags: Default::default(), cores });
        let sds = SdLbStats { busiest: g(2), local: g(1), ..SdLbStats::new() };
        let b = SgLbStats { sum_nr_running: 2, ..Default::default() };
        let l = SgLbStats::default();
        assert_eq!(sibling_imbalance(CpuIdleType::Idle, &sds, &b, &l), 2);
        assert_eq!(sibling_imbalance(CpuIdleType::NotIdle, &sds, &b, &l), 0);
    }

    fn arb_sgs(weight: u32) -> impl Strategy<Value = SgLbStats> {
        (
            0u32..=weight * 3,
            0u32..=weight,
            0u64..=4096 * u64::from(weight),
            0u64..=1024 * u64::from(weight),
            0u64..=4096 * u64::from(weight),
            1u64..=1024,
        )
            .prop_map(move |(nr, idle, load, util, runnable, cap)| {
                // An idle CPU has no task, a CPU without one is idle; the tasks may all sit on
                // one CPU.
                let idle = idle.clamp(weight.saturating_sub(nr), weight - nr.min(1));
                let cap = cap * u64::from(weight);
                SgLbStats {
                    group_load: load,
                    group_capacity: cap,
                    group_util: util,
                    group_runnable: runnable,
                    sum_nr_running: nr,
                    sum_h_nr_running: nr,
                    idle_cpus: idle,
                    group_weight: weight,
                    ..Default::default()
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, max_global_rejects: 1 << 20, ..ProptestConfig::default() })]

        /// Over consistent group statistics (an idle CPU has no task, a group has no more idle
        /// CPUs than CPUs without tasks), whatever find_busiest_group forwards: the imbalance
        /// is never negative and a task count never exceeds the busiest group's fair tasks.
        #[test]
        fn calculate_imbalance_invariants(
            local in (1u32..=4).prop_flat_map(arb_sgs), busiest in (1u32..=4).prop_flat_map(arb_sgs),
            idle in prop::sample::select(vec![CpuIdleType::NotIdle, CpuIdleType::Idle, CpuIdleType::NewlyIdle]),
            share_llc: bool, numa: bool, imb_numa_nr in 0u32..4, prefer_sibling: bool, cores in (1u32..=4, 1u32..=4),
        ) {
            let pct = 117;
            let mut local = local;
            let mut busiest = busiest;
            local.group_type = group_classify(pct, false, &local);
            busiest.group_type = group_classify(pct, false, &busiest);
            if local.group_type == GroupType::Overloaded {
                local.avg_load = local.group_load * 1024 / local.group_capacity;
            }
            if busiest.group_type == GroupType::Overloaded {
                busiest.avg_load = busiest.group_load * 1024 / busiest.group_capacity;
            }
            let g = |cores: u32| Some(GroupRef { index: 0, span: CpuMask::EMPTY, flags: Default::default(), cores: cores.min(4) });
            let mut sds = SdLbStats {
                busiest: g(cores.0.min(busiest.group_weight)), local: g(cores.1.min(local.group_weight)),
                total_load: local.group_load + busiest.group_load,
                total_capacity: local.group_capacity + busiest.group_capacity,
                prefer_sibling, busiest_stat: busiest, local_stat: local, ..SdLbStats::new()
            };
            // find_busiest_group's filters (see there) before it calls calculate_imbalance.
            prop_assume!(busiest.sum_h_nr_running > 0);
            prop_assume!(local.group_type <= busiest.group_type);
            if local.group_type == GroupType::Overloaded {
                let avg = sds.total_load * 1024 / sds.total_capacity;
                prop_assume!(local.avg_load < busiest.avg_load && local.avg_load < avg && 100 * busiest.avg_load > pct as u64 * local.avg_load);
            }
            let sibling = sds.prefer_sibling && local.group_type == GroupType::HasSpare && sibling_imbalance(idle, &sds, &busiest, &local) > 1;
            if !sibling && busiest.group_type != GroupType::Overloaded {
                prop_assume!(idle.is_idle());
                prop_assume!(!(busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1));
                prop_assume!(busiest.sum_h_nr_running != 1);
            }
            let ctx = ImbalanceCtx { idle, share_llc, numa, imb_numa_nr };
            let (ty, imb) = calculate_imbalance(ctx, &mut sds);
            prop_assert!(imb >= 0, "negative imbalance {imb} ({ty:?}) from {sds:?}");
            prop_assert!(imb < 1 << 40, "overflowed imbalance {imb} ({ty:?})");
            if ty == MigrationType::Task {
                prop_assert!(imb <= i64::from(busiest.sum_h_nr_running), "{imb} tasks of {}", busiest.sum_h_nr_running);
            }
            if ty == MigrationType::Util {
                prop_assert!(imb as u64 <= local.group_capacity);
            }
        }

        /// The detach loop never moves more tasks than a migrate_task imbalance asks, never the
        /// running one, never one not allowed on the destination, and at most loop_max tasks
        /// are examined.
        #[test]
        fn consider_respects_the_imbalance(
            imbalance in 1i64..5, running in 0usize..3, allowed in prop::collection::vec(any::<bool>(), 1..40),
            idle in prop::sample::select(vec![CpuIdleType::NotIdle, CpuIdleType::Idle, CpuIdleType::NewlyIdle]),
        ) {
            let topo = machine(1, 2, 1, 1);
            let cfg = LbConfig::new(2, 250);
            let st = SdState::new(&topo.domains().domains(0)[0], 0);
            let mut env = lb_env(&topo, &cfg, 0, 0, idle, &st);
            env.src_cpu = 1;
            env.migration_type = MigrationType::Task;
            env.imbalance = imbalance;
            let nr = allowed.len() as u32;
            env.loop_max = cfg.nr_migrate.min(nr);
            env.flags |= LBF_ALL_PINNED;
            let yes = CpuMask::all(2);
            let no = CpuMask::single(1);
            let mut moved = 0;
            let mut examined = 0;
            if env.detach_start(nr) {
                for (k, &a) in allowed.iter().enumerate() {
                    let t = LbTask { cpus_allowed: if a { &yes } else { &no }, running: k == running % allowed.len(), cache_hot: false, throttled: false, per_cpu_kthread: false, sched_delayed: false, load: 1024, util: 512 };
                    let v = env.consider(&t);
                    if v != Verdict::Stop { examined += 1; }
                    if matches!(v, Verdict::Detach | Verdict::DetachStop) {
                        prop_assert!(a && k != running);
                        moved += 1;
                    }
                    if matches!(v, Verdict::Stop | Verdict::DetachStop) { break; }
                }
            }
            prop_assert!(moved <= imbalance);
            prop_assert!(examined <= env.loop_max);
            prop_assert!(moved < i64::from(nr), "emptied the source");
            if idle == CpuIdleType::NewlyIdle { prop_assert!(moved <= 1); }
        }
    }

    /// A fork on a machine whose CPU 0 runs everything goes to an idle CPU in another group,
    /// and a fork when every CPU is equally busy stays local.
    #[test]
    fn fork_goes_to_the_idlest_group() {
        let topo = machine(2, 2, 2, 2); // 2 nodes x 2 cores x 2 threads
        let shared = LbShared::new(&topo);
        let mut rqs = Rqs { tasks: vec![3, 0, 0, 0, 0, 0, 0, 0], moves: Vec::new() };
        let all = CpuMask::all(8);
        let cpu = sched_balance_find_dst_cpu(&topo, &shared, 0, 0, all, SD_BALANCE_FORK, &rqs);
        assert_ne!(cpu, 0);
        assert!(rqs.tasks[cpu] == 0, "{cpu}");
        // Node 0 runs 3 tasks, more than its `imb_numa_nr`: the other node (Linux's answer).
        assert!(cpu >= 4, "{cpu}");
        rqs.tasks = vec![2; 8];
        assert_eq!(sched_balance_find_dst_cpu(&topo, &shared, 5, 5, all, SD_BALANCE_FORK, &rqs), 5);
        // Affinity: only CPUs 6 and 7.
        rqs.tasks = vec![0, 0, 0, 0, 0, 0, 1, 0];
        let only = CpuMask::single(6) | CpuMask::single(7);
        assert_eq!(sched_balance_find_dst_cpu(&topo, &shared, 0, 0, only, SD_BALANCE_FORK, &rqs), 7);
    }
}
