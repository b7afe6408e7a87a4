//! SMP placement and balancing: which CPU a waking task goes to, periodic and new-idle load
//! balancing of fair tasks, and RT push/pull (Linux `rt.c`, `cpupri.c`).
//!
//! Decisions come from `cadence_sched` (`balance` for fair placement and imbalance, `cpupri`
//! and `rt_smp` for RT), pure functions over snapshots of per-CPU atomics; this module
//! re-checks them under the run-queue locks (taken in CPU order with `lock_two`) before moving
//! anything, and never moves a running task or one whose affinity excludes the destination.
//!
//! # RT balancing
//! Each CPU publishes its level (`Rq::rt_level`: the higher of what runs and its best queued
//! RT task; see `cadence_sched::cpupri::cpu_level`) and, if it has a waiting RT task allowed
//! elsewhere, its bit in `RT_OVERLOAD` and that task's level (`Rq::rt_pushable`). Pinned
//! tasks never mark a CPU overloaded. Then, as in Linux:
//! * a waking RT task goes to the lowest-level allowed CPU (`select_cpu`);
//! * **push** (`push_rt`) runs after a wakeup that does not preempt, and after every
//!   scheduling decision that leaves a pushable task waiting (a preempted RT task, a raised
//!   priority, a widened affinity): each waiting task, most important first, goes to a CPU of
//!   strictly lower level; a task without a target is skipped, not the end of the scan;
//! * **pull** (`pull_rt`) runs whenever a CPU's level drops (to a lower RT priority, fair or
//!   idle) and from the idle loop: it takes the best waiting task that beats its level and is
//!   not about to run on its own CPU (`should_pull`), locking only sources whose published
//!   pushable level beats its own.
//!
//! The lock-free protocol is in `update_counts` (store-load ordering between a CPU that
//! becomes overloaded and one whose level drops). Result: no RT task waits while a CPU it may
//! use runs something less important, beyond the time a push or pull takes (checked on traces
//! by `trace check rt`; modelled by `cadence-sched`'s `rt_guarantee` proptest).

use super::class::BalancePoint;
use super::rqlock::{lock_two, try_lock_two};
use super::task::{ClassId, Task, Tid};
use super::{cpu_prio, online_mask, rq_of, set_need_resched, update_counts, RqInner};
use crate::percpu;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::balance::{self as policy, CpuPrio, Topology};
use cadence_sched::eevdf::{DEQUEUE_MIGRATING, ENQUEUE_MIGRATED, ENQUEUE_MIGRATING};
use cadence_sched::rt_smp::{self, PullSource, WaitingRt};
use cadence_sched::CpuMask;
use cadence_sched::CpuPri;
use core::sync::atomic::Ordering;

/// Ticks between periodic balancing passes on a CPU (staggered by CPU id).
pub const BALANCE_INTERVAL_TICKS: u64 = 4;
/// Tasks examined per balancing pass (Linux `sysctl_sched_nr_migrate`): bounds the work done
/// with two run-queue locks held, whatever the queue length.
pub const NR_MIGRATE_SCAN: usize = 32;
/// Longest back-off (in balancing passes) after passes that found nothing movable.
const MAX_BACKOFF: u32 = 8;

static TOPOLOGY: spin::Once<Topology> = spin::Once::new();

/// Records the SMT/LLC topology once all CPUs are up (one LLC per package, as QEMU models).
pub fn init_topology() {
    TOPOLOGY.call_once(|| {
        let n = percpu::nr_cpus() as usize;
        let mut smt = Vec::with_capacity(n);
        let mut llc = Vec::with_capacity(n);
        for id in 0..n as u32 {
            let Some(cpu) = percpu::get(id) else {
                smt.push(CpuMask::single(id as usize));
                llc.push(CpuMask::single(id as usize));
                continue;
            };
            let t = cpu.topology;
            let same = |f: &dyn Fn(&percpu::PerCpu) -> bool| -> CpuMask {
                percpu::online_cpus().filter(|c| f(c)).map(|c| c.cpu_id as usize).collect()
            };
            smt.push(same(&|c| c.topology.package == t.package && c.topology.core == t.core) | CpuMask::single(id as usize));
            llc.push(same(&|c| c.topology.package == t.package) | CpuMask::single(id as usize));
        }
        Topology::new(smt, llc).unwrap_or_else(|_| Topology::flat(n))
    });
}

fn topology() -> Option<&'static Topology> {
    TOPOLOGY.get()
}

/// The CPUs sharing `cpu`'s last-level cache (itself included), once the topology is known.
pub fn llc_cpus(cpu: u32) -> Option<CpuMask> {
    let t = topology()?;
    ((cpu as usize) < t.nr_cpus()).then(|| t.llc(cpu as usize))
}

/// The SMT siblings of `cpu` (itself included), once the topology is known.
pub fn smt_siblings(cpu: u32) -> Option<CpuMask> {
    let t = topology()?;
    ((cpu as usize) < t.nr_cpus()).then(|| t.smt_siblings(cpu as usize))
}

/// Decodes a [`cpu_prio`]-encoded level (0 idle, 1 fair, 2 + rt_priority).
fn level_prio(level: u8) -> CpuPrio {
    match level {
        0 => CpuPrio::Idle,
        1 => CpuPrio::Fair,
        p => CpuPrio::Rt(p - 2),
    }
}

/// The inverse of [`level_prio`] (the `u8` encoding `Rq::rt_level` publishes).
fn prio_level(prio: CpuPrio) -> u8 {
    match prio {
        CpuPrio::Idle => 0,
        CpuPrio::Fair => 1,
        CpuPrio::Rt(p) => 2 + p,
    }
}

/// The level of what `g`'s CPU runs (idle, fair or its RT priority), throttling aside.
fn curr_level(g: &RqInner) -> u8 {
    g.curr.as_ref().map(|c| if c.is_idle { 0 } else { cpu_prio(c) }).unwrap_or(0)
}

/// Per-CPU scratch space for balancing decisions: a `CpuPri` and the load snapshot, sized for
/// the machine's possible CPUs at each CPU's bring-up ([`init_cpu`]). Not on the stack: these
/// decisions run in wakeups, inside interrupt handlers, on top of whatever task stack was
/// interrupted (16 KiB for some tasks); not allocated there either.
struct Scratch {
    cpupri: CpuPri,
    nr_running: Vec<u32>,
    fair_load: Vec<u64>,
}

static SCRATCH: percpu::IrqLocal<Scratch> = percpu::IrqLocal::new();

/// Creates CPU `cpu`'s balancing scratch space (bring-up, from `sched::init_cpu`).
pub(super) fn init_cpu(cpu: u32) {
    let n = percpu::nr_possible() as usize;
    SCRATCH.init(cpu, Scratch { cpupri: CpuPri::new(n), nr_running: alloc::vec![0; n], fair_load: alloc::vec![0; n] });
}

/// Runs `f` on this CPU's scratch space, with interrupts disabled meanwhile. `f` must not
/// call `with_scratch` again (it only runs pure policy code).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(f)
}

/// Linux's cpupri (`cadence_sched::CpuPri`: per-level CPU masks), refreshed into `cp` from
/// every online CPU's published level (`Rq::rt_level`: what runs or the best queued RT task,
/// whichever is more important). The levels themselves are per-CPU atomics written under each
/// run-queue lock, so placement takes no global lock; the structure is rebuilt (O(CPUs)) when
/// a decision needs it.
fn refresh_cpupri(cp: &mut CpuPri) {
    let n = (percpu::nr_cpus() as usize).min(cp.nr_cpus());
    let online = online_mask();
    cp.clear();
    for id in online.iter().filter(|&id| id < n) {
        if let Some(c) = percpu::get(id as u32) {
            cp.set(id, Some(level_prio(super::rq_of(c.cpu_id).rt_level.load(Ordering::SeqCst))));
        }
    }
}

/// The lowest-level allowed CPU for an RT task of `rt_priority` (Linux `find_lowest_rq`).
fn find_lowest_rt(rt_priority: u8, allowed: CpuMask, prev: u32) -> Option<u32> {
    let hint = cache_hint(prev);
    with_scratch(|s| {
        refresh_cpupri(&mut s.cpupri);
        s.cpupri.find_lowest(rt_priority, allowed, prev as usize, hint).map(|c| c as u32)
    })
}

/// The cache siblings of `cpu` (a placement hint after `cpu` itself).
fn cache_hint(cpu: u32) -> Option<CpuMask> {
    topology().filter(|t| (cpu as usize) < t.nr_cpus()).map(|t| t.llc(cpu as usize))
}

/// What `g`'s CPU runs, as push/pull see it: a throttled CPU, or one that core scheduling
/// keeps idle (forced idle, or waiting for a sibling to leave a task of another cookie),
/// counts as running above every task, so its waiting RT tasks may be pushed to (or pulled
/// by) CPUs that can run them now. Linux does not do this for forced idle; the chaos stress
/// showed RT tasks waiting 4 to 15 ms on a forced-idle CPU while other cores ran fair tasks.
/// Which CPUs can run a task *now* is [`rt_placement_mask`]'s part: without it this rule
/// handed tasks back and forth (see there).
fn running_prio(g: &RqInner) -> CpuPrio {
    if g.rt_bw.throttled || g.forced_since != 0 {
        return level_prio(THROTTLED_LEVEL);
    }
    level_prio(curr_level(g))
}

/// The CPUs of `candidates` where a task with core cookie `cookie` cannot start now because
/// an SMT sibling runs a task of another cookie (`cadence_sched::rt_smp::core_excluded`, from
/// what `running` says each sibling runs: [`running_now`] or [`running_for_fair`]). Empty
/// unless core scheduling is on and a cookie exists (without cookies every task has cookie 0
/// and nothing is excluded).
fn core_excluded(cookie: u64, candidates: CpuMask, running: fn(usize) -> rt_smp::Running) -> CpuMask {
    if !super::coresched::enabled() || !super::coresched::cookies_exist() {
        return CpuMask::from_u64(0);
    }
    rt_smp::core_excluded(cookie, candidates, |c| super::coresched::siblings(c as u32), running)
}

/// What CPU `c` runs, from its published `curr_prio` / `curr_cookie` (a forced-idle CPU runs
/// its idle task). RT placement's view.
fn running_now(c: usize) -> rt_smp::Running {
    let rq = rq_of(c as u32);
    rt_smp::Running { prio: level_prio(rq.curr_prio.load(Ordering::Acquire)), cookie: rq.curr_cookie.load(Ordering::Acquire) }
}

/// Fair placement's view of what CPU `c` runs: [`running_now`], but a forced-idle CPU (its
/// idle task running, tasks queued) runs the core's cookie (`Rq::core_cookie`), as Linux's
/// `sched_core_cookie_match` compares with `rq->core->core_cookie`: its sibling is about to
/// run, or runs, that cookie. Seen as idle, it let a task of another cookie wake onto the
/// sibling just as the core turned back to the forced-idle CPU's cookie (the in-kernel test
/// `another_cookie_is_neither_pulled_nor_woken_beside_a_running_cookie`, about one run in
/// two). RT placement keeps the plain view: an RT task beats what the core waits for.
fn running_for_fair(c: usize) -> rt_smp::Running {
    let rq = rq_of(c as u32);
    match running_now(c) {
        r if r.prio == CpuPrio::Idle && rq.nr_running.load(Ordering::Acquire) > 0 => {
            rt_smp::Running { prio: CpuPrio::Fair, cookie: rq.core_cookie.load(Ordering::Acquire) }
        }
        r => r,
    }
}

/// Where an RT task may be moved to (push, pull) or placed at a wakeup: its online CPUs less
/// those where core scheduling would make it wait ([`core_excluded`], [`running_now`]).
///
/// Without this, a CPU that could not run a task at once (forced idle, or waiting for its
/// sibling, so running "above every task" for [`running_prio`]) pushed it to another such
/// CPU, which pushed or let it be pulled back: 14,000 round trips in 400 ms of one chaos run
/// (seed 7, 30,000 operations, `-smp 4` SMT), with interrupts off, starving the sibling that
/// was to make room of its run-queue lock; RT tasks waited up to 400 ms. Now a task moves
/// only to a CPU whose siblings run idle or its own cookie, where it starts at once.
fn rt_placement_mask(task: &Task) -> CpuMask {
    let allowed = task.affinity() & online_mask();
    allowed & !core_excluded(task.core_cookie.load(Ordering::Relaxed), allowed, running_now)
}

/// `g`'s waiting migratory RT tasks (not `curr`; the pinned ones can go nowhere, Linux's
/// `pushable_tasks`) in run order, at most [`RT_SCAN`], as policy sees them (affinity:
/// [`rt_placement_mask`], so no task is moved where core scheduling would make it wait; its
/// own CPU stays in it if allowed, so "pushable" keeps meaning "allowed on another CPU", and
/// pushes never target their own CPU anyway).
fn waiting_rt(g: &RqInner) -> impl Iterator<Item = WaitingRt<Tid>> + '_ {
    g.rt.migratory().filter(move |(tid, _)| !g.curr.as_ref().is_some_and(|c| c.tid == *tid)).take(RT_SCAN).filter_map(move |(tid, prio)| {
        g.tasks.get(&tid).map(|t| WaitingRt {
            key: tid,
            rt_priority: prio,
            affinity: rt_placement_mask(t) | (t.affinity() & CpuMask::single(g.cpu as usize)),
        })
    })
}

/// Level of an RT-throttled CPU: above every task, so nothing is pushed to a CPU that could
/// not run it until its next period.
pub const THROTTLED_LEVEL: u8 = u8::MAX;

/// The level of `g`'s CPU under its lock (what `Rq::rt_level` publishes): the higher of what
/// runs and its best queued RT task; [`THROTTLED_LEVEL`] while its RT class is throttled.
pub fn locked_level(g: &RqInner) -> u8 {
    if g.rt_bw.throttled {
        return THROTTLED_LEVEL;
    }
    prio_level(cadence_sched::cpupri::cpu_level(level_prio(curr_level(g)), g.rt.highest_prio()))
}

/// The CPUs with nothing queued and no wakeup on their way (`Rq::nr_running` and
/// `Rq::wake_pending` both 0): what fair wakeup placement calls idle. Kept bit by bit by each
/// change of either count ([`refresh_idle`]), so a wakeup reads one word per 64 CPUs instead of
/// two counters of every CPU (4,096 loads per wakeup at 1,024 CPUs, issue 60's item 7).
static IDLE_CPUS: cadence_sched::cpumask::AtomicCpuMask = cadence_sched::cpumask::AtomicCpuMask::new();

/// Brings `cpu`'s bit of [`IDLE_CPUS`] up to date after a change of its `nr_running` or
/// `wake_pending` (any context, any lock: the changer calls it after its change).
///
/// Two CPUs may refresh the same bit at once from different readings; each re-reads the counts
/// after writing the bit and starts again if they moved, so whoever wrote last wrote from the
/// latest counts, and the bit settles on the truth once the counts stop changing. Meanwhile it
/// is a hint, as the counts it replaces were (a snapshot is stale the moment it is read).
pub(super) fn refresh_idle(cpu: u32) {
    let rq = rq_of(cpu);
    let counts = || (rq.nr_running.load(Ordering::SeqCst), rq.wake_pending.load(Ordering::SeqCst));
    let mut seen = counts();
    loop {
        let idle = seen == (0, 0);
        if IDLE_CPUS.contains(cpu as usize, Ordering::SeqCst) != idle {
            if idle {
                IDLE_CPUS.set(cpu as usize, Ordering::SeqCst);
            } else {
                IDLE_CPUS.clear(cpu as usize, Ordering::SeqCst);
            }
        }
        let now = counts();
        if now == seen {
            return;
        }
        seen = now;
    }
}

/// SIS_UTIL in `kernel.sched_features`: a wakeup does not search a busy LLC for an idle CPU
/// ([`llc_busy`]). Linux's default is on; Cadence's is off: measured before tasks' utilization
/// moved with them (per-task PELT, `sched::pelt`), it brought no gain, and it has not been
/// measured again since (issue 61). Measured on at 8node (hackbench -p -l 200,
/// single runs): 1.13 / 9.09 / 80.2 s at 1 / 4 / 16 groups against 1.18 / 9.90 / 52.9 off,
/// within the 16-group row's run-to-run spread (51 to 75 s) and no gain
/// (docs/results/2026-12-07-tsc-and-messaging.md).
static SIS_UTIL: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

pub fn sis_util_enabled() -> bool {
    SIS_UTIL.load(Ordering::Relaxed)
}

pub fn set_sis_util(on: bool) {
    SIS_UTIL.store(on, Ordering::Relaxed);
}

/// CPU `cpu`'s fair utilization at `now` (out of 1024): its last published `util_avg`, decayed
/// over the PELT periods since (a CPU that went idle stops updating it; Linux decays such
/// blocked averages from the nohz balance).
pub(super) fn cpu_util(cpu: u32, now: u64) -> u64 {
    published_avg(cpu, |rq| &rq.util_avg, now)
}

/// CPU `cpu`'s fair `runnable_avg` at `now`, decayed as [`cpu_util`].
pub(super) fn cpu_runnable(cpu: u32, now: u64) -> u64 {
    published_avg(cpu, |rq| &rq.runnable_avg, now)
}

/// One of `cpu`'s published PELT averages, decayed over the periods since `Rq::util_stamp`.
fn published_avg(cpu: u32, avg: impl Fn(&super::Rq) -> &core::sync::atomic::AtomicU64, now: u64) -> u64 {
    let rq = rq_of(cpu);
    let stamp = rq.util_stamp.load(Ordering::Acquire);
    let value = avg(rq).load(Ordering::Relaxed);
    let periods = (now.saturating_sub(stamp) >> 10) / 1024;
    cadence_sched::pelt::decay_load(value, periods)
}

/// Is `cpu`'s LLC too busy for a wakeup to search for an idle CPU (SIS_UTIL: Linux's
/// `nr_idle_scan` is 0)? The LLC's utilization is summed here, at the wakeup, over its CPUs
/// (Linux sums it during load balancing; the search this saves is as long).
fn llc_busy(t: &Topology, cpu: usize, now: u64) -> bool {
    if !sis_util_enabled() {
        return false;
    }
    let llc = t.llc(cpu);
    let sum: u64 = llc.iter().map(|c| cpu_util(c as u32, now)).sum();
    policy::sis_util_nr_scan(sum, llc.count() as usize, policy::IMBALANCE_PCT) == 0
}

/// The online CPUs [`IDLE_CPUS`] says are idle (a hint: see [`refresh_idle`]).
pub(super) fn idle_cpus() -> CpuMask {
    idle_mask()
}

/// Is `t`, queued on `g` and not running, waiting to run — not held back by design (a
/// throttled group queue or RT throttling; deadline tasks, whose throttling is CBS's, are left
/// to `trace check rt`)? The work-conservation monitor's test (`wc`).
pub(super) fn waits_runnable(g: &RqInner, t: &Arc<Task>) -> bool {
    !t.on_cpu.load(Ordering::Acquire)
        && match t.class() {
            ClassId::Fair => !super::bandwidth::throttled_hierarchy(g, t),
            ClassId::Rt => !g.rt_bw.throttled,
            _ => false,
        }
}

fn idle_mask() -> CpuMask {
    IDLE_CPUS.load(Ordering::Acquire) & online_mask()
}

/// The CPU a waking (or new) task should be queued on: its class decides
/// (`SchedClass::select_cpu`) among the allowed online CPUs.
pub fn select_cpu(task: &Task, waker_cpu: u32) -> u32 {
    let allowed = task.affinity() & online_mask();
    let prev = task.cpu();
    if allowed.is_empty() {
        // Its CPUs went offline and `hotplug` has not widened its affinity yet (Linux's
        // `select_fallback_rq`): a CPU up near `prev`, for now.
        let online = online_mask();
        let node = super::topology::cpus_of_node(super::topology::cpu_to_node(prev)) & online;
        return node.first().or_else(|| online.first()).map_or(prev, |c| c as u32);
    }
    // One CPU allowed: no class has a choice to make (Linux's `select_task_rq` calls the
    // class only if `nr_cpus_allowed > 1`). A pinned pipe pair's wakeup skipped ~400
    // instructions and ~40 translation blocks here (the fair scan of idle CPUs and cores).
    if allowed.count() == 1 {
        return allowed.first().map_or(prev, |c| c as u32);
    }
    super::class::of(task).select_cpu(task, prev, waker_cpu, allowed)
}

/// An RT task's CPU: the lowest-level allowed CPU (cpupri), avoiding SMT siblings running
/// another cookie; `prev` if none is lower.
pub fn select_cpu_rt(task: &Task, prev: u32, allowed: CpuMask) -> u32 {
    let placeable = rt_placement_mask(task);
    let placeable = if placeable.is_empty() { allowed } else { placeable };
    find_lowest_rt(task.rt_priority(), placeable, prev).unwrap_or_else(|| super::class::stay_or_first(prev, allowed))
}

/// A fair task's CPU: `cadence_sched::balance::select_task_rq_fair` over the idle CPUs and
/// the topology (before the topology is known: `prev`).
///
/// With core scheduling, an idle CPU whose core runs another cookie does not count as idle
/// for `task` ([`core_excluded`] with [`running_for_fair`]; Linux's `sched_cpu_cookie_match` in
/// `__select_idle_cpu`): the task would wait there, forced idle or forcing the sibling idle,
/// and wake it with an IPI. A fully idle core always fits.
pub fn select_cpu_fair(task: &Task, prev: u32, waker_cpu: u32, allowed: CpuMask) -> u32 {
    match topology() {
        Some(t) if t.nr_cpus() >= percpu::nr_cpus() as usize => {
            let cookie = task.core_cookie.load(Ordering::Relaxed);
            let idle = idle_mask();
            let idle = idle & !core_excluded(cookie, idle, running_for_fair);
            let now = crate::time::uptime_ns();
            let cpu = policy::select_task_rq_fair(allowed, prev as usize, Some(waker_cpu as usize), idle, t, |c| llc_busy(t, c, now))
                .map(|c| c as u32)
                .unwrap_or(prev);
            // No idle CPU fits: the task queues on `prev`. If `prev`'s core runs another
            // cookie and the waker's runs the task's own, the waker's CPU is the better queue
            // (a cookie-aware `wake_affine`): at `prev` the task would wait for its core to
            // change cookie, each time it wakes. A pipe pair with a cookie, split across two
            // cores that both ran CPU hogs of another cookie, waited for both cores to switch
            // on every round trip and nothing brought it together (`coresched-bench pipe+cpu`:
            // 232 round trips a second instead of ~2,400, traced).
            if cpu == prev
                && !idle.contains(prev as usize)
                && waker_cpu != prev
                && allowed.contains(waker_cpu as usize)
                && cookie != 0
                && core_runs_another_cookie(cookie, prev)
                && !core_runs_another_cookie(cookie, waker_cpu)
            {
                return waker_cpu;
            }
            cpu
        }
        _ => super::class::stay_or_first(prev, allowed),
    }
}

/// Moves a queued, not-running task between two locked run queues. `on_rq` stays set
/// throughout (`DEQUEUE_MIGRATING` … `ENQUEUE_MIGRATING`, see `sched::dequeue_task`): the task
/// may be asleep-to-be (set Sleeping, preempted before switching out), and its waker, which
/// does not take the run-queue locks we hold here, must not take it for a task on no queue.
pub(super) fn move_task(src: &mut RqInner, dst: &mut RqInner, task: &Arc<Task>) {
    let now = crate::time::uptime_ns();
    // The fair entity is parked by the dequeue and carries its lag to `dst`.
    super::dequeue_task(src, task, DEQUEUE_MIGRATING);
    task.stats.nr_migrations.fetch_add(1, Ordering::Relaxed);
    crate::trace::sched_migrate_task(task, src.cpu, dst.cpu, now);
    super::enqueue_task(dst, task, ENQUEUE_MIGRATED | ENQUEUE_MIGRATING, now);
}

/// May `task`, queued on `g`, move to CPU `dst`? Not if it runs, may not run there (its
/// affinity, or `dst` offline: every push, pull and steal goes through here), or waits below a
/// throttled group queue here (`bandwidth::throttled_hierarchy`).
pub(super) fn movable(g: &RqInner, task: &Arc<Task>, dst: u32) -> bool {
    !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, task))
        && !task.on_cpu.load(Ordering::Acquire)
        && task.affinity().contains(dst as usize)
        && online_mask().contains(dst as usize)
        && !(task.class() == ClassId::Fair && super::bandwidth::throttled_hierarchy(g, task))
}

/// Would a fair task with `cookie` wait on `cpu` for its core to turn to its cookie? Yes if
/// an SMT sibling of `cpu` runs another cookie ([`core_excluded`] with [`running_for_fair`])
/// or `cpu` itself does ([`running_now`]: a periodic pull runs on a busy CPU; a wakeup may
/// queue behind what runs). Lock-free, from what the CPUs publish; false without SMT siblings
/// or cookies.
fn core_runs_another_cookie(cookie: u64, cpu: u32) -> bool {
    if core_excluded(cookie, CpuMask::single(cpu as usize), running_for_fair).contains(cpu as usize) {
        return true;
    }
    let here = running_now(cpu as usize);
    super::coresched::enabled()
        && super::coresched::cookies_exist()
        && super::coresched::siblings(cpu).count() > 1
        && here.prio != CpuPrio::Idle
        && here.cookie != cookie
}

/// The fair pull leaves `task` where it is if it would wait on `dst` for the core's cookie
/// ([`core_runs_another_cookie`]): Linux's `task_hot` with `sched_core_cookie_match` ("don't
/// migrate task if the task's cookie does not match with the destination CPU's core
/// cookie"), without Linux's way out after failed balancing passes (ours back off instead).
///
/// Without this, a CPU forced idle beside a pipe task pulled the CPU hogs of another cookie
/// queued on its sibling, and the core turned to the hogs' cookie for their whole slices
/// while the pipe pair waited (`coresched-bench pipe+cpu`, traced).
pub(super) fn cookie_hot(task: &Task, dst: u32) -> bool {
    core_runs_another_cookie(task.core_cookie.load(Ordering::Relaxed), dst)
}

/// How a fair pull was started.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PullKind {
    /// From the tick; `idle` if this CPU has nothing to run.
    Periodic { idle: bool },
    /// From the idle loop, the CPU having just run out of work (Linux `CPU_NEWLY_IDLE`).
    NewIdle,
}

/// Pulls fair tasks to `this` from the busiest CPU if the imbalance is worth it. Returns how
/// many moved.
///
/// A new-idle pull moves at most one task, as Linux's preemptible kernels do ("NEWIDLE
/// balancing is a source of latency", `detach_tasks`): the idle task does it with two run-queue
/// locks held, and an RT task woken on this CPU meanwhile waits for all of it (measured: 30
/// moves, 7 ms under TCG, in front of a cyclictest wakeup). More follow from the tick.
pub fn pull_fair(this: u32, kind: PullKind) -> usize {
    let idle = kind != PullKind::Periodic { idle: false };
    let max_moves = if kind == PullKind::NewIdle { 1 } else { u32::MAX };
    // Back off after fruitless passes (everything pinned), like Linux's balance_interval.
    let me = rq_of(this);
    let skip = me.balance_skip.load(Ordering::Relaxed);
    if skip > 0 {
        me.balance_skip.store(skip - 1, Ordering::Relaxed);
        return 0;
    }
    // The snapshot goes to per-CPU scratch space: this runs from the timer interrupt (no heap,
    // little stack).
    let imb = with_scratch(|s| {
        let n = (percpu::nr_cpus() as usize).min(s.nr_running.len());
        for c in 0..n {
            s.nr_running[c] = rq_of(c as u32).nr_running.load(Ordering::Acquire);
            s.fair_load[c] = rq_of(c as u32).fair_load.load(Ordering::Acquire);
        }
        policy::find_busiest(this as usize, &s.nr_running[..n], &s.fair_load[..n], online_mask())
    });
    let Some(imb) = imb else { return 0 };
    let src_cpu = imb.busiest as u32;
    let (this_rq, src_rq) = (rq_of(this), rq_of(src_cpu));
    // Never spin here: a fair pull may be skipped and is retried next interval, while a
    // waiter would keep this CPU (and any RT task woken on it meanwhile) waiting for as long
    // as a lock holder's vCPU is descheduled by the host (measured under TCG at -smp 4: 1.5 to
    // 2.3 ms in front of cyclictest wakeups, from the tick).
    let Some(mut guards) = try_lock_two(&this_rq.lock, this, &src_rq.lock, src_cpu) else {
        return 0;
    };
    let (dst, src) = guards.pair();
    // Examine at most NR_MIGRATE_SCAN tasks, starting after where the last pass stopped.
    let cursor = src.balance_cursor;
    let mut candidates: [Option<Arc<Task>>; NR_MIGRATE_SCAN] = [const { None }; NR_MIGRATE_SCAN];
    let mut last = None;
    for (slot, (tid, t)) in candidates.iter_mut().zip(src.tasks.range_from(&cursor).chain(src.tasks.range_before(&cursor))) {
        last = Some(*tid);
        if t.class() == ClassId::Fair && movable(src, t, this) && !cookie_hot(t, this) {
            *slot = Some(t.clone());
        }
    }
    if let Some(last) = last {
        src.balance_cursor = last.wrapping_add(1);
    }
    let mut moved = 0;
    let mut remaining = imb.load_imbalance;
    // No more than the destination's queues hold without allocating (interrupts are off);
    // if that is less than wanted, they grow at the next preemption point.
    let room = super::reserve::room(dst) as u32;
    if room < imb.nr_to_pull.min(max_moves) {
        super::reserve::note_short(this);
    }
    let max_moves = max_moves.min(room);
    for t in candidates.into_iter().flatten() {
        if moved as u32 >= imb.nr_to_pull.min(max_moves) {
            break;
        }
        let w = t.attr_weight_cached();
        if !idle && !policy::worth_moving(w, remaining.saturating_add(1)) {
            continue;
        }
        move_task(src, dst, &t);
        remaining = remaining.saturating_sub(w);
        moved += 1;
    }
    if moved > 0 {
        update_counts(src_rq, src);
        update_counts(this_rq, dst);
        this_rq.balance_backoff.store(0, Ordering::Relaxed);
    } else if room > 0 {
        // Fruitless (not for want of room): back off.
        let b = (this_rq.balance_backoff.load(Ordering::Relaxed) * 2).clamp(1, MAX_BACKOFF);
        this_rq.balance_backoff.store(b, Ordering::Relaxed);
        this_rq.balance_skip.store(b, Ordering::Relaxed);
    }
    drop(guards);
    if moved > 0 {
        set_need_resched(this);
    }
    moved
}

/// Moves one waiting fair task allowed on `dst` from `src` to `dst` (the hierarchical
/// balancer's idle fallback, `load_balance::KernelRqs::pull_waiting`, and a `WC_PULL` ask,
/// `load_balance::wc_pull`): the first of at most [`NR_MIGRATE_SCAN`] queued tasks that is
/// movable and not cookie-hot. Waits at most `lock_wait_ns` for the two run-queue locks (0:
/// one try), never for as long as a holder's vCPU is descheduled; when the wait runs out, `dst`
/// keeps its tick to try again at the next one (`Rq::lb_retry`).
pub(super) fn pull_one_waiting(src_cpu: u32, dst: u32, lock_wait_ns: u64) -> bool {
    let (src_rq, dst_rq) = (rq_of(src_cpu), rq_of(dst));
    let until = crate::time::uptime_ns().saturating_add(lock_wait_ns);
    let mut guards = loop {
        if let Some(g) = try_lock_two(&src_rq.lock, src_cpu, &dst_rq.lock, dst) {
            break g;
        }
        if lock_wait_ns == 0 || crate::time::uptime_ns() >= until {
            // Tried again at `dst`'s next tick (`Rq::lb_retry`).
            dst_rq.lb_retry.store(true, Ordering::Relaxed);
            return false;
        }
        core::hint::spin_loop();
    };
    let (src, dstg) = guards.pair();
    if dstg.nr_queued() != 0 || super::reserve::room(dstg) == 0 {
        return false;
    }
    let task = src
        .tasks
        .iter()
        .take(NR_MIGRATE_SCAN)
        .map(|(_, t)| t)
        .find(|t| t.class() == ClassId::Fair && movable(src, t, dst) && !cookie_hot(t, dst))
        .cloned();
    let Some(t) = task else { return false };
    move_task(src, dstg, &t);
    update_counts(src_rq, src);
    update_counts(dst_rq, dstg);
    drop(guards);
    set_need_resched(dst);
    true
}

/// Periodic balancing from the tick: every class's `balance` hook.
pub fn periodic_balance(this: u32) {
    super::class::balance(this, BalancePoint::Tick { idle: rq_of(this).nr_running.load(Ordering::Acquire) == 0 });
}

/// New-idle balancing from the idle loop: the classes in order (RT pulls, then fair), until
/// one brings a task. True if something moved.
pub fn idle_balance(this: u32) -> bool {
    let rq = rq_of(this);
    // Set again below if a queue's lock is still held past the pull's wait.
    rq.lb_retry.store(false, Ordering::Relaxed);
    let tick = rq.ticks.load(Ordering::Relaxed);
    if rq.last_idle_balance.swap(tick, Ordering::Relaxed) == tick {
        // At most one new-idle balance per tick; a task waiting elsewhere is still taken
        // (`WC_PULL`): a CPU that pulled one, ran it briefly and idled again within the tick
        // halted beside a waiting fork for 16 ms until a busy CPU's tick kicked it.
        return super::load_balance::wc_fallback(this);
    }
    super::class::balance(this, BalancePoint::NewIdle)
}

/// Most waiting RT tasks examined per push or pull (bounds the work under run-queue locks).
const RT_SCAN: usize = 16;
/// Most moves (or lost races) per push call.
const RT_PUSH_ROUNDS: usize = 8;

/// Pushes waiting RT tasks of `cpu` to CPUs running something less important (Linux
/// `push_rt_tasks`), until none can go anywhere.
///
/// Unlike Linux, which stops at the first pushable task without a target, the scan goes on to
/// the next waiting task: with affinities, a lower task may be allowed on a CPU the higher one
/// is not. A move that loses a race (the target gained work, the task ran) is retried.
pub fn push_rt(cpu: u32) {
    for _ in 0..RT_PUSH_ROUNDS {
        let src_rq = rq_of(cpu);
        if src_rq.rt_pushable.load(Ordering::SeqCst) == 0 {
            return;
        }
        let candidate = {
            let g = src_rq.lock.lock();
            let hint = cache_hint(cpu);
            let push = with_scratch(|s| {
                refresh_cpupri(&mut s.cpupri);
                rt_smp::push_candidate(cpu as usize, running_prio(&g), waiting_rt(&g), &s.cpupri, hint)
            });
            push.and_then(|m| g.tasks.get(&m.key).map(|t| (t.clone(), m.dst_cpu as u32)))
        };
        let Some((task, target)) = candidate else { return };
        let mut guards = lock_two(&rq_of(cpu).lock, cpu, &rq_of(target).lock, target);
        let (src, dst) = guards.pair();
        let still_there = src.tasks.get(&task.tid).is_some_and(|t| Arc::ptr_eq(t, &task));
        if !still_there || !movable(src, &task, target) || locked_level(dst) >= cpu_prio(&task) {
            continue; // lost a race: look again
        }
        move_task(src, dst, &task);
        update_counts(rq_of(cpu), src);
        update_counts(rq_of(target), dst);
        drop(guards);
        set_need_resched(target);
    }
}

/// `RT_PUSH_IPI` (Linux's feature of that name): instead of locking the overloaded CPUs'
/// queues from here, ask each one that may have something for `this` to push (a call-function
/// IPI; it pushes under its own lock to the lowest CPUs, which now include `this`). When
/// several CPUs drop at once they do not all contend for the overloaded CPU's lock, and a
/// pull never spins behind a holder whose vCPU is descheduled. One request per CPU is in
/// flight at a time (`Rq::push_ipi_pending`). Returns false: nothing moved synchronously.
fn ask_to_push(this: u32) -> bool {
    let me = rq_of(this);
    let overloaded = super::RT_OVERLOAD.load(Ordering::SeqCst).without(this as usize);
    for src_cpu in overloaded.iter_wrap(this as usize + 1) {
        let src_rq = rq_of(src_cpu as u32);
        if src_rq.rt_pushable.load(Ordering::SeqCst) <= me.rt_level.load(Ordering::SeqCst) {
            continue;
        }
        if !src_rq.push_ipi_pending.swap(true, Ordering::SeqCst) {
            if let Some(c) = percpu::get(src_cpu as u32) {
                crate::interrupts::request_rt_push(c);
            }
        }
    }
    false
}

/// The call-function IPI's `RT_PUSH_IPI` request: push this CPU's waiting RT tasks.
pub fn push_requested(this: u32) {
    rq_of(this).push_ipi_pending.store(false, Ordering::SeqCst);
    push_rt(this);
}

/// Pulls the most important waiting RT task that `this` should run (Linux `pull_rt_task`):
/// from the overloaded CPUs whose best pushable task beats this CPU's level, a task allowed
/// here that beats what runs or waits here and that its own CPU is not about to run
/// (`should_pull`). True if one moved.
pub fn pull_rt(this: u32) -> bool {
    let me = rq_of(this);
    if me.rt_throttled.load(Ordering::Relaxed) {
        return false; // could not run it here anyway
    }
    if super::rt_push_ipi_enabled() {
        return ask_to_push(this);
    }
    let mut moved = false;
    let overloaded = super::RT_OVERLOAD.load(Ordering::SeqCst).without(this as usize);
    for src_cpu in overloaded.iter_wrap(this as usize + 1) {
        let src_cpu = src_cpu as u32;
        let src_rq = rq_of(src_cpu);
        // Lock-free pre-check: lock a remote queue only if it may have something for us.
        if src_rq.rt_pushable.load(Ordering::SeqCst) <= me.rt_level.load(Ordering::SeqCst) {
            continue;
        }
        let mut guards = lock_two(&me.lock, this, &src_rq.lock, src_cpu);
        let (dst, src) = guards.pair();
        let source = PullSource { cpu: src_cpu as usize, running: running_prio(src), waiting: waiting_rt(src) };
        let pick = rt_smp::pull_candidate(this as usize, level_prio(locked_level(dst)), [source]);
        let task = pick.and_then(|m| src.tasks.get(&m.key).cloned());
        if let Some(t) = task.filter(|t| movable(src, t, this)) {
            move_task(src, dst, &t);
            update_counts(src_rq, src);
            update_counts(me, dst);
            moved = true;
        }
    }
    if moved {
        set_need_resched(this);
    }
    moved
}
