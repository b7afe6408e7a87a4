//! Hierarchical fair load balancing (Linux's `sched_balance_domains`, `sched_balance_rq`,
//! `sched_balance_newidle`): the decisions are `cadence_sched::load_balance`'s, pure and
//! host-tested over the domains `sched::topology` built; this module gives them the run queues
//! ([`KernelRqs`], its `LbRunQueues`) and calls them from the tick, the idle loop and the nohz
//! idle balance.
//!
//! # State
//! [`Lb`], built once the domains are (`init`): the balancer's view of the domains, the
//! `sched_group_capacity` imbalance flags shared by all CPUs, the tunables, and per CPU its
//! `SdState` per domain level and `next_balance`, under a per-CPU lock ([`LbCpu`]) that a CPU
//! takes for its own balance and the nohz idle balancer takes for the tickless CPUs it balances
//! for. Lock order: an `LbCpu` lock, then run-queue locks (two at a time, `try_lock_two`: a
//! balance never spins on a run-queue lock; a busy one is skipped and retried next interval).
//!
//! # What the balancer reads (`CpuStats`)
//! Lock-free, from what each CPU publishes: `nr_running`, fair tasks (`h_nr_running`), idle
//! (`balance::IDLE_CPUS`), load = the root fair queue's weight now (`Rq::fair_load`, Linux's
//! `load.weight`; a task weighs its `task_h_load` in the same units: its weight scaled down
//! by each group level's share), the PELT utilization and runnable averages decayed to now, and
//! capacity = 1024 less the RT and DEADLINE signals' utilization (Linux's `scale_rt_capacity`).
//! Instantaneous load rather than PELT's `load_avg`: Cadence's PELT attaches grouped tasks to
//! the root directly (no group-entity propagation yet), so its `load_avg` is not Linux's for
//! grouped tasks, while `load.weight` is.
//!
//! # Work conservation beyond Linux (`WC_PULL`)
//! A fair task that starts waiting behind another while an idle CPU may run it gets that CPU
//! asked to pull ([`note_waiting`], [`wc_pull`]), and an idle CPU's newly-idle balance ends with
//! the idle fallback (also when the once-per-tick gate skips the domains: [`wc_fallback`]).
//! docs/design/balancing.md has why and what it measured.
//!
//! # Active balance
//! When a pass finds only running tasks to move and fails long enough (`need_active_balance`),
//! `active_balance` asks the busiest CPU to push its running fair task to the balancing CPU
//! (`Rq::active_balance_to` and a reschedule IPI): that CPU's next switch moves it
//! (`switch.rs`, the path of a task that may no longer run where it is), as Linux's stopper
//! (`active_load_balance_cpu_stop`) does; `alb_*` in `/proc/schedstat` count them.

use super::balance::{self, movable, move_task};
use super::rqlock::try_lock_two;
use super::task::{ClassId, Task};
use super::{online_mask, rq_of, set_need_resched, update_counts, RqInner};
use crate::sync::IrqLock;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::load_balance::{
    self as lb, ActiveBalance, CpuIdleType, CpuStats, LbConfig, LbEnv, LbRunQueues, LbShared, LbTask, LbTopology, SdState, SdStats, Verdict,
};
use cadence_sched::topology::{SD_BALANCE_FORK, SD_SHARE_CPUCAPACITY};
use cadence_sched::CpuMask;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The domains of the moment as the balancer uses them, with their groups' shared state;
/// replaced whole when a CPU goes offline or comes back ([`domains_changed`]).
struct LbDomains {
    topo: LbTopology,
    shared: LbShared,
}

/// The balancer's per-CPU state.
pub struct LbCpu {
    /// The domains this CPU balances over, and its state per level of them (replaced
    /// together, under this lock).
    dom: Arc<LbDomains>,
    states: Vec<SdState>,
    /// `rq->next_balance`, in jiffies.
    next_balance: u64,
}

/// Everything the hierarchical balancer keeps.
pub struct Lb {
    cfg: LbConfig,
    cpus: Vec<IrqLock<LbCpu>>,
}

fn states_of(dom: &LbDomains, cpu: usize, now: u64) -> Vec<SdState> {
    dom.topo.domains().domains(cpu).iter().map(|sd| SdState::new(sd, now)).collect()
}

static LB: spin::Once<Option<Lb>> = spin::Once::new();

/// Builds the balancer over the domains, once they exist (boot, after `topology::build_domains`).
/// Without domains the flat balancer (`balance::pull_fair`) stays in charge.
pub fn init() {
    LB.call_once(|| {
        let dom = Arc::new(LbDomains::new(&*super::topology::domains()?));
        let n = dom.topo.domains().nr_cpus();
        let cfg = LbConfig::new(n, u64::from(crate::arch::apic::tick_hz().max(1)));
        let now = jiffies();
        let cpus = (0..n).map(|c| IrqLock::new(LbCpu { states: states_of(&dom, c, now), dom: dom.clone(), next_balance: now })).collect();
        Some(Lb { cfg, cpus })
    });
}

impl LbDomains {
    fn new(domains: &cadence_sched::topology::SchedDomains) -> Self {
        let topo = LbTopology::new(domains.clone());
        let shared = LbShared::new(&topo);
        LbDomains { topo, shared }
    }
}

/// The domains were rebuilt (`topology::rebuild_domains`: a CPU went offline or came back):
/// every CPU balances over the new ones from its next balance, with fresh per-level state
/// (Linux builds new `sched_domain`s, counters at 0). Made here, in process context, and
/// swapped in under each CPU's lock (nothing allocates with interrupts off).
pub fn domains_changed(domains: Arc<cadence_sched::topology::SchedDomains>) {
    let Some(lb) = lb() else { return }; // boot: `init` builds from them
    let dom = Arc::new(LbDomains::new(&domains));
    let now = jiffies();
    for (c, slot) in lb.cpus.iter().enumerate() {
        let mut states = states_of(&dom, c, now);
        let mut old = dom.clone();
        {
            let mut st = slot.lock();
            core::mem::swap(&mut st.states, &mut states);
            core::mem::swap(&mut st.dom, &mut old);
            st.next_balance = now;
        }
        drop((states, old)); // the old ones, freed with the lock released
    }
}

fn lb() -> Option<&'static Lb> {
    LB.get().and_then(|l| l.as_ref())
}

/// Is the hierarchical balancer in charge (domains built)?
pub fn active() -> bool {
    lb().is_some()
}

fn jiffies() -> u64 {
    crate::time::uptime_ns() / crate::timer::tick_period_ns().max(1)
}

/// The periodic balance of `cpu` (its tick, or the nohz idle balancer on its behalf): every
/// domain whose interval has passed (`sched_balance_domains`). Returns the tasks moved.
pub fn periodic(cpu: u32, idle: bool) -> u32 {
    let Some(lb) = lb() else { return 0 };
    let Some(slot) = lb.cpus.get(cpu as usize) else { return 0 };
    let now = jiffies();
    let Some(mut st) = slot.try_lock() else { return 0 };
    if now < st.next_balance {
        return 0;
    }
    let idle = if idle { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
    let LbCpu { dom, states, next_balance } = &mut *st;
    let mut rqs = KernelRqs::new(Some(dom));
    let (next, moved) = lb::sched_balance_domains(&dom.topo, &lb.cfg, &dom.shared, cpu as usize, idle, now, states, &mut rqs);
    *next_balance = next;
    moved
}

/// The newly-idle balance of `cpu` (`sched_balance_newidle`): domain by domain, bottom-up,
/// until a task comes. Returns the tasks pulled.
pub fn newidle(cpu: u32, overloaded: bool) -> u32 {
    let Some(lb) = lb() else { return 0 };
    let Some(slot) = lb.cpus.get(cpu as usize) else { return 0 };
    let Some(mut st) = slot.try_lock() else { return 0 };
    let LbCpu { dom, states, .. } = &mut *st;
    let mut rqs = KernelRqs::new(Some(dom));
    lb::sched_balance_newidle(&dom.topo, &lb.cfg, &dom.shared, cpu as usize, overloaded, states, &mut rqs)
}

/// `WC_PULL` in `kernel.sched_features` (Cadence's; default on): see [`note_waiting`].
static WC_PULL: AtomicBool = AtomicBool::new(true);

pub fn wc_pull_enabled() -> bool {
    WC_PULL.load(Ordering::Relaxed)
}

pub fn set_wc_pull(on: bool) {
    WC_PULL.store(on, Ordering::Relaxed);
}

/// Fair `task` starts waiting on `g`'s CPU, behind what runs there (an enqueue, or a preempted
/// task put back; `g` locked): if an idle CPU may run it, that CPU is asked to pull
/// (`Rq::wc_kick` and a reschedule IPI; its idle loop runs [`newidle`], Linux's domains, then
/// the idle fallback). One idle CPU per wait, the waiting CPU's LLC first, none already asked.
///
/// Why (Cadence's `WC_PULL`; `NO_WC_PULL` is Linux's behaviour): Linux's idle CPUs balance at
/// idle entry and then only when a busy CPU's tick kicks the nohz balancer, rate-limited and
/// backed off after passes that found the domains "balanced" by their load arithmetic (pinned
/// load on a sibling, an allowed NUMA imbalance). At HZ=250 that left CPUs idle for 16 to 60 ms
/// beside waiting tasks in the wasted-cores scenarios, on Linux 6.12 and on Cadence alike
/// (`tools/bench-balance.sh`). Cost: a few atomic loads per wait when no CPU is idle (the
/// common case under load); a task with a core-scheduling cookie is left to the cookie-aware
/// paths.
pub(super) fn note_waiting(g: &RqInner, task: &Task) {
    if !wc_pull_enabled() || task.class() != ClassId::Fair || task.core_cookie.load(Ordering::Relaxed) != 0 || !active() {
        return;
    }
    let idle = balance::idle_cpus();
    if idle.is_empty() {
        return;
    }
    let here = g.cpu;
    let allowed = (idle & task.affinity()).without(here as usize);
    if allowed.is_empty() {
        return;
    }
    let near = balance::llc_cpus(here).map_or(CpuMask::EMPTY, |llc| allowed & llc);
    let free = |c: usize| !rq_of(c as u32).wc_kick.load(Ordering::Relaxed);
    let Some(target) = near.iter_wrap(here as usize).find(|&c| free(c)).or_else(|| allowed.iter_wrap(here as usize).find(|&c| free(c)))
    else {
        return;
    };
    rq_of(target as u32).wc_src.store(here, Ordering::Relaxed);
    if !rq_of(target as u32).wc_kick.swap(true, Ordering::AcqRel) {
        WC_KICKS.fetch_add(1, Ordering::Relaxed);
        super::send_reschedule_ipi(target as u32);
    }
}

/// Work-conservation kicks sent ([`note_waiting`]).
static WC_KICKS: AtomicU64 = AtomicU64::new(0);

/// Work-conservation kicks sent so far (debugfs `sched/work_conservation`).
pub fn wc_kicks() -> u64 {
    WC_KICKS.load(Ordering::Relaxed)
}

/// The idle loop of a CPU asked to pull ([`note_waiting`]): a waiting task of the CPU it was
/// asked for, else a new-idle balance. True if it has a task now.
///
/// The queue it was asked for comes first, read under its lock: the kick is sent from inside
/// the enqueue, before the queue's counts are published, and a CPU that answered at once found
/// the queue not yet overloaded by the counts the balancer reads, pulled nothing and halted
/// (three forks queued behind their parent on one CPU waited 8.5 ms beside an idle one,
/// `wasted-cores.sh mixed`, traced).
pub(super) fn wc_pull(cpu: u32) -> bool {
    let rq = rq_of(cpu);
    if !rq.wc_kick.swap(false, Ordering::AcqRel) {
        return false;
    }
    // A short bounded wait for `src`'s lock: the enqueue that asked still holds it, and this
    // CPU may answer at once.
    const LOCK_WAIT_NS: u64 = 50_000;
    let src = rq.wc_src.load(Ordering::Relaxed);
    if src != cpu && balance::pull_one_waiting(src, cpu, LOCK_WAIT_NS) {
        return true;
    }
    newidle(cpu, true) > 0
}

/// Idle `cpu` pulls one waiting fair task it may run, if some CPU has one (`WC_PULL`; the
/// balancer's idle fallback without its domains). True if it has a task now.
pub(super) fn wc_fallback(cpu: u32) -> bool {
    let Some(lb) = lb() else { return false };
    if !wc_pull_enabled() || !super::nohz::overloaded() {
        return false;
    }
    let Some(slot) = lb.cpus.get(cpu as usize) else { return false };
    let Some(st) = slot.try_lock() else { return false };
    let Some(top) = st.dom.topo.domains().domains(cpu as usize).last() else { return false };
    lb::idle_fallback(&lb.cfg, cpu as usize, CpuIdleType::Idle, top.span, &mut KernelRqs::new(None)) > 0
}

/// An active balance asked of `src` towards `dst` ran (`switch.rs`): `alb_count`, and
/// `alb_pushed` or `alb_failed`, in `src`'s lowest domain spanning `dst` (Linux counts them in
/// the stopper's `sd`). Not counted if the balancer's lock is busy at that moment.
pub(super) fn note_active_balance(src: u32, dst: u32, pushed: bool) {
    let Some(slot) = lb().and_then(|lb| lb.cpus.get(src as usize)) else { return };
    let Some(mut st) = slot.try_lock() else { return };
    let LbCpu { dom, states, .. } = &mut *st;
    let level = dom.topo.domains().domains(src as usize).iter().position(|sd| sd.span.contains(dst as usize));
    if let Some(stats) = level.and_then(|l| states.get_mut(l)).map(|s| &mut s.stats) {
        stats.alb[0] += 1;
        stats.alb[if pushed { 2 } else { 1 }] += 1;
    }
}

/// `cpu`'s schedstat counters per domain level (empty without the balancer).
pub fn sd_stats(cpu: u32) -> Vec<SdStats> {
    let Some(slot) = lb().and_then(|lb| lb.cpus.get(cpu as usize)) else { return Vec::new() };
    slot.lock().states.iter().map(|st| st.stats).collect()
}

/// Where a new fair task goes (Linux's `select_task_rq_fair` with `SD_BALANCE_FORK`:
/// `sched_balance_find_dst_cpu` from the parent's CPU `this`): `None` to place it as a wakeup
/// would (no domains yet, one allowed CPU, not fair, or a core-scheduling cookie, whose
/// placement `balance::select_cpu_fair` knows).
pub fn select_cpu_fork(task: &Task, this: u32) -> Option<u32> {
    let allowed = task.affinity() & online_mask();
    if allowed.count() <= 1 || task.class() != ClassId::Fair || task.core_cookie.load(Ordering::Relaxed) != 0 {
        return None;
    }
    // Under this CPU's balancer lock, not a clone of its domains: the `Arc`'s last reference
    // must not go here, with interrupts off (`params`).
    let st = lb()?.cpus.get(this as usize)?.lock();
    let rqs = KernelRqs::new(None);
    let cpu = lb::sched_balance_find_dst_cpu(&st.dom.topo, &st.dom.shared, this as usize, this as usize, allowed, SD_BALANCE_FORK, &rqs);
    drop(st);
    allowed.contains(cpu).then_some(cpu as u32)
}

/// How long the idle fallback waits for a source queue's lock (per source, 8 at most).
const FALLBACK_LOCK_WAIT_NS: u64 = 50_000;

/// The run queues as the balancer sees them, at one moment (`now` for the PELT decays), and
/// the domains of the balance that asks (`dom`; for the cache-hotness of a level).
pub struct KernelRqs<'a> {
    now: u64,
    dom: Option<&'a LbDomains>,
}

impl<'a> KernelRqs<'a> {
    fn new(dom: Option<&'a LbDomains>) -> Self {
        KernelRqs { now: crate::time::uptime_ns(), dom }
    }
}

/// `task_h_load`: `t`'s weight scaled by each group level's share of its parent queue (its
/// group entity's weight over the group queue's load), in the units of the root queue's
/// `load.weight`.
fn task_h_load(g: &RqInner, t: &Task) -> u64 {
    let mut load = t.attr_weight_cached();
    let mut gid = t.se_group.load(Ordering::Relaxed);
    let mut depth = 0;
    while gid != super::group::ROOT_GROUP && depth < 64 {
        let Some(grq) = g.group_rqs.get(&gid) else { break };
        let ent = grq.entity.map_or(0, |e| e.weight);
        load = load * ent / grq.rq.load().max(1);
        gid = grq.parent;
        depth += 1;
    }
    load.max(1)
}

/// Linux's `task_hot` (6.12) with `sysctl_sched_migration_cost` (0.5 ms): it ran within that
/// (`exec_start`: when it last started or stopped running). Never between SMT siblings
/// (`smt_level`: the domain shares CPU capacity; they share their caches) nor for a SCHED_IDLE
/// task.
fn task_hot(t: &Task, smt_level: bool, now: u64) -> bool {
    const MIGRATION_COST_NS: u64 = 500_000;
    !smt_level
        && t.policy() != cadence_sched::Policy::Idle
        && now.saturating_sub(t.stats.exec_start.load(Ordering::Relaxed)) < MIGRATION_COST_NS
}

impl LbRunQueues for KernelRqs<'_> {
    fn cpu_stats(&self, cpu: usize) -> CpuStats {
        let rq = rq_of(cpu as u32);
        let nr = rq.nr_running.load(Ordering::Acquire);
        CpuStats {
            nr_running: nr,
            h_nr_running: rq.h_nr_running.load(Ordering::Acquire),
            idle: balance::idle_cpus().contains(cpu),
            load: rq.fair_load.load(Ordering::Acquire),
            util: balance::cpu_util(cpu as u32, self.now),
            runnable: balance::cpu_runnable(cpu as u32, self.now),
            capacity: rq.capacity.load(Ordering::Relaxed).max(1),
        }
    }

    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        let (src_cpu, dst_cpu) = (env.src_cpu() as u32, env.dst_cpu() as u32);
        if src_cpu == dst_cpu {
            return 0;
        }
        let (src_rq, dst_rq) = (rq_of(src_cpu), rq_of(dst_cpu));
        let Some(mut guards) = try_lock_two(&src_rq.lock, src_cpu, &dst_rq.lock, dst_cpu) else { return 0 };
        let (src, dst) = guards.pair();
        if !env.detach_start(src.nr_queued() as u32) {
            return 0;
        }
        // Room without allocating (interrupts are off): at most what the destination holds.
        let room = super::reserve::room(dst) as u32;
        let mut candidates: [Option<Arc<Task>>; balance::NR_MIGRATE_SCAN] = [const { None }; balance::NR_MIGRATE_SCAN];
        let cursor = src.balance_cursor;
        let mut last = None;
        let mut n = 0;
        for (tid, t) in src.tasks.range_from(&cursor).chain(src.tasks.range_before(&cursor)) {
            if n == candidates.len() {
                break;
            }
            last = Some(*tid);
            // A task whose core-scheduling cookie the destination's core does not run stays
            // (Linux counts it cache-hot, so failed passes end up moving it; Cadence never
            // does, `balance::cookie_hot`).
            if t.class() == ClassId::Fair && !balance::cookie_hot(t, dst_cpu) {
                candidates[n] = Some(t.clone());
                n += 1;
            }
        }
        if let Some(last) = last {
            src.balance_cursor = last.wrapping_add(1);
        }
        let smt_level = self
            .dom
            .and_then(|d| d.topo.domains().domains(env.this_cpu()).get(env.level()))
            .is_some_and(|sd| sd.flags.contains(SD_SHARE_CPUCAPACITY));
        let mut moved = 0;
        for t in candidates.into_iter().flatten() {
            if moved >= room {
                super::reserve::note_short(dst_cpu);
                break;
            }
            let allowed = t.affinity();
            let running = src.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, &t)) || t.on_cpu.load(Ordering::Acquire);
            let task = LbTask {
                cpus_allowed: &allowed,
                running,
                cache_hot: task_hot(&t, smt_level, self.now),
                throttled: super::bandwidth::throttled_hierarchy(src, &t),
                per_cpu_kthread: t.kthread && allowed.count() == 1,
                sched_delayed: false,
                load: task_h_load(src, &t),
                util: super::pelt::task_avg(&t).util_avg,
            };
            let verdict = env.consider(&task);
            if matches!(verdict, Verdict::Detach | Verdict::DetachStop) && movable(src, &t, dst_cpu) {
                move_task(src, dst, &t);
                moved += 1;
            }
            if matches!(verdict, Verdict::Stop | Verdict::DetachStop) {
                break;
            }
        }
        if moved > 0 {
            update_counts(src_rq, src);
            update_counts(dst_rq, dst);
        }
        drop(guards);
        if moved > 0 {
            set_need_resched(dst_cpu);
        }
        moved
    }

    /// Linux's stopper push, by the next switch of `src` (`Rq::active_balance_to`, a
    /// reschedule IPI): its running task moves to `dst` if it is a fair task allowed there
    /// without a core-scheduling cookie (those are the cookie paths'), else "pinned".
    fn active_balance(&mut self, src: usize, dst: usize) -> ActiveBalance {
        let (src_cpu, dst_cpu) = (src as u32, dst as u32);
        if src == dst || !online_mask().contains(dst) {
            return ActiveBalance::CurrPinned;
        }
        let rq = rq_of(src_cpu);
        // What runs there, under its lock (tried once: a balance never spins on one).
        let Some(g) = rq.lock.try_lock() else { return ActiveBalance::CurrPinned };
        let pushable = g.curr.as_ref().is_some_and(|c| {
            !c.is_idle
                && c.class() == ClassId::Fair
                && c.affinity().contains(dst)
                && c.core_cookie.load(Ordering::Relaxed) == 0
                && !(c.kthread && c.affinity().count() == 1)
        });
        drop(g);
        if !pushable {
            return ActiveBalance::CurrPinned;
        }
        // One push at a time per CPU (Linux's `busiest->active_balance`).
        if rq.active_balance_to.compare_exchange(super::rq::NO_CPU, dst_cpu, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            set_need_resched(src_cpu);
        }
        ActiveBalance::Started
    }

    /// The idle fallback: one waiting fair task allowed on `dst`, from the CPU of `span` with
    /// the most tasks queued that has one.
    fn pull_waiting(&mut self, dst: usize, span: CpuMask) -> bool {
        let dst_cpu = dst as u32;
        let span = span & online_mask();
        let mut order: [(u32, u32); 8] = [(0, 0); 8];
        let mut k = 0;
        // The busiest few (a bounded pass: 8 sources examined).
        for c in span.without(dst).iter() {
            let nr = rq_of(c as u32).nr_running.load(Ordering::Acquire);
            if nr < 2 {
                continue;
            }
            if k < order.len() {
                order[k] = (nr, c as u32);
                k += 1;
            } else if let Some(min) = order.iter_mut().min_by_key(|e| e.0).filter(|m| m.0 < nr) {
                *min = (nr, c as u32);
            }
        }
        let order = &mut order[..k];
        order.sort_unstable_by_key(|e| core::cmp::Reverse(e.0));
        for &(_, src_cpu) in order.iter() {
            // A short wait for the lock: the CPU is idle, and a holder busy for a moment would
            // otherwise leave it halted beside the waiting task (pull_one_waiting's `lb_retry`
            // covers a longer hold).
            if balance::pull_one_waiting(src_cpu, dst_cpu, FALLBACK_LOCK_WAIT_NS) {
                return true;
            }
        }
        false
    }
}
