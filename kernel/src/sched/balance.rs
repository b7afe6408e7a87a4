//! SMP placement and balancing: which CPU a waking task goes to, periodic and new-idle load
//! balancing of fair tasks, and RT push/pull so that on N CPUs the N highest-priority runnable
//! RT tasks are the ones running.
//!
//! Decisions come from `cadence_sched::balance` (pure functions over snapshots of per-CPU
//! atomics: `nr_running`, `fair_load`, `curr_prio`); this module re-checks them under the run
//! queue locks (taken in CPU order with `lock_two`) before moving anything, and never moves a
//! running task or one whose affinity excludes the destination.

use super::rqlock::lock_two;
use super::task::{ClassId, Task};
use super::{cpu_prio, online_mask, rq_of, set_need_resched, update_counts, RqInner};
use crate::percpu;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::balance::{self as policy, CpuPrio, Topology};
use cadence_sched::eevdf::{DEQUEUE_MIGRATING, ENQUEUE_MIGRATED};
use cadence_sched::CpuMask;
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
                smt.push(CpuMask(1 << id));
                llc.push(CpuMask(1 << id));
                continue;
            };
            let t = cpu.topology;
            let same = |f: &dyn Fn(&percpu::PerCpu) -> bool| -> CpuMask {
                percpu::online_cpus().filter(|c| f(c)).map(|c| c.cpu_id as usize).collect()
            };
            smt.push(same(&|c| c.topology.package == t.package && c.topology.core == t.core) | CpuMask(1 << id));
            llc.push(same(&|c| c.topology.package == t.package) | CpuMask(1 << id));
        }
        Topology::new(smt, llc).unwrap_or_else(|_| Topology::flat(n))
    });
}

fn topology() -> Option<&'static Topology> {
    TOPOLOGY.get()
}

/// The SMT siblings of `cpu` (itself included), once the topology is known.
pub fn smt_siblings(cpu: u32) -> Option<CpuMask> {
    let t = topology()?;
    ((cpu as usize) < t.nr_cpus()).then(|| t.smt_siblings(cpu as usize))
}

fn prio_snapshot() -> Vec<CpuPrio> {
    (0..percpu::nr_cpus())
        .map(|id| {
            let online = online_mask().contains(id as usize);
            match percpu::get(id).map(|c| c.rq.curr_prio.load(Ordering::Acquire)) {
                Some(0) if online => CpuPrio::Idle,
                Some(1) if online => CpuPrio::Fair,
                Some(p) if online => CpuPrio::Rt(p - 2),
                _ => CpuPrio::Rt(u8::MAX), // offline: never a target
            }
        })
        .collect()
}

fn idle_mask() -> CpuMask {
    online_mask()
        .iter()
        .filter(|&c| percpu::get(c as u32).is_some_and(|p| p.rq.nr_running.load(Ordering::Acquire) == 0))
        .collect()
}

/// The CPU a waking (or new) task should be queued on.
pub fn select_cpu(task: &Task, waker_cpu: u32) -> u32 {
    let allowed = task.affinity() & online_mask();
    let prev = task.cpu();
    if allowed.is_empty() {
        return prev; // cannot happen: affinity is validated against online CPUs
    }
    match task.class() {
        ClassId::Rt => {
            let prios = prio_snapshot();
            policy::find_lowest_rq(task.rt_priority(), allowed, prev as usize, &prios)
                .map(|c| c as u32)
                .unwrap_or(if allowed.contains(prev as usize) { prev } else { allowed.first().unwrap_or(0) as u32 })
        }
        _ => {
            let topo = topology();
            match topo {
                Some(t) if t.nr_cpus() >= percpu::nr_cpus() as usize => {
                    policy::select_task_rq_fair(allowed, prev as usize, Some(waker_cpu as usize), idle_mask(), t)
                        .map(|c| c as u32)
                        .unwrap_or(prev)
                }
                _ => {
                    if allowed.contains(prev as usize) {
                        prev
                    } else {
                        allowed.first().unwrap_or(0) as u32
                    }
                }
            }
        }
    }
}

/// Moves a queued, not-running task between two locked run queues.
fn move_task(src: &mut RqInner, dst: &mut RqInner, task: &Arc<Task>) {
    let now = crate::time::uptime_ns();
    // The fair entity is parked by the dequeue and carries its lag to `dst`.
    super::dequeue_task(src, task, DEQUEUE_MIGRATING);
    task.stats.nr_migrations.fetch_add(1, Ordering::Relaxed);
    crate::trace::sched_migrate_task(task, src.cpu, dst.cpu, now);
    super::enqueue_task(dst, task, ENQUEUE_MIGRATED, now);
}

fn movable(g: &RqInner, task: &Arc<Task>, dst: u32) -> bool {
    !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, task))
        && !task.on_cpu.load(Ordering::Acquire)
        && task.affinity().contains(dst as usize)
}

/// Pulls fair tasks to `this` from the busiest CPU if the imbalance is worth it. Returns how
/// many moved.
fn pull_fair(this: u32, idle: bool) -> usize {
    // Back off after fruitless passes (everything pinned), like Linux's balance_interval.
    let me = rq_of(this);
    let skip = me.balance_skip.load(Ordering::Relaxed);
    if skip > 0 {
        me.balance_skip.store(skip - 1, Ordering::Relaxed);
        return 0;
    }
    let n = percpu::nr_cpus() as usize;
    let nr: Vec<u32> = (0..n as u32).map(|c| rq_of(c).nr_running.load(Ordering::Acquire)).collect();
    let load: Vec<u64> = (0..n as u32).map(|c| rq_of(c).fair_load.load(Ordering::Acquire)).collect();
    let Some(imb) = policy::find_busiest(this as usize, &nr, &load, online_mask()) else { return 0 };
    let src_cpu = imb.busiest as u32;
    let (this_rq, src_rq) = (rq_of(this), rq_of(src_cpu));
    let mut guards = lock_two(&this_rq.lock, this, &src_rq.lock, src_cpu);
    let (dst, src) = guards.pair();
    // Examine at most NR_MIGRATE_SCAN tasks, starting after where the last pass stopped.
    let cursor = src.balance_cursor;
    let scanned: Vec<Arc<Task>> = src
        .tasks
        .range(cursor..)
        .chain(src.tasks.range(..cursor))
        .take(NR_MIGRATE_SCAN)
        .map(|(_, t)| t.clone())
        .collect();
    if let Some(last) = scanned.last() {
        src.balance_cursor = last.tid.wrapping_add(1);
    }
    let candidates: Vec<Arc<Task>> =
        scanned.into_iter().filter(|t| t.class() == ClassId::Fair && movable(src, t, this)).collect();
    let mut moved = 0;
    let mut remaining = imb.load_imbalance;
    for t in candidates {
        if moved as u32 >= imb.nr_to_pull {
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
    } else {
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

/// Periodic balancing from the tick.
pub fn periodic_balance(this: u32) {
    pull_fair(this, rq_of(this).nr_running.load(Ordering::Acquire) == 0);
}

/// New-idle balancing from the idle loop: pull RT, then fair work. True if something moved.
pub fn idle_balance(this: u32) -> bool {
    let rq = rq_of(this);
    let tick = rq.ticks.load(Ordering::Relaxed);
    if rq.last_idle_balance.swap(tick, Ordering::Relaxed) == tick {
        return false; // at most once per tick
    }
    if super::RT_OVERLOAD.load(Ordering::Acquire) != 0 && pull_rt(this) {
        return true;
    }
    pull_fair(this, true) > 0
}

/// Pushes waiting RT tasks of `cpu` to CPUs running something of lower priority.
pub fn push_rt(cpu: u32) {
    for _ in 0..8 {
        if rq_of(cpu).rt_waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        // Pick the highest waiting RT task and a target for it.
        let candidate = {
            let g = rq_of(cpu).lock.lock();
            let found = g
                .rt
                .iter()
                .filter_map(|(tid, _)| g.tasks.get(&tid).cloned())
                .find(|t| !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, t)));
            found
        };
        let Some(task) = candidate else { return };
        let prios = prio_snapshot();
        let allowed = task.affinity() & online_mask();
        let Some(target) = policy::find_lowest_rq(task.rt_priority(), allowed.without(cpu as usize), cpu as usize, &prios)
        else {
            return;
        };
        let target = target as u32;
        if target == cpu {
            return;
        }
        let mut guards = lock_two(&rq_of(cpu).lock, cpu, &rq_of(target).lock, target);
        let (src, dst) = guards.pair();
        let still_there = src.tasks.get(&task.tid).is_some_and(|t| Arc::ptr_eq(t, &task));
        let dst_prio = dst.curr.as_ref().map(|c| cpu_prio(c)).unwrap_or(0);
        if !still_there || !movable(src, &task, target) || dst_prio >= cpu_prio(&task) {
            return;
        }
        move_task(src, dst, &task);
        update_counts(rq_of(cpu), src);
        update_counts(rq_of(target), dst);
        drop(guards);
        set_need_resched(target);
    }
}

/// Pulls the highest waiting RT task that outranks what `this` runs. True if one moved.
pub fn pull_rt(this: u32) -> bool {
    if rq_of(this).rt_throttled.load(Ordering::Relaxed) {
        return false; // could not run it here anyway
    }
    let overloaded = CpuMask(super::RT_OVERLOAD.load(Ordering::Acquire)).without(this as usize);
    for src_cpu in overloaded.iter() {
        let src_cpu = src_cpu as u32;
        let mut guards = lock_two(&rq_of(this).lock, this, &rq_of(src_cpu).lock, src_cpu);
        let (dst, src) = guards.pair();
        let this_prio = dst
            .rt
            .highest_prio()
            .map(|p| p + 2)
            .max(dst.curr.as_ref().map(|c| cpu_prio(c)))
            .unwrap_or(if dst.fair.nr_queued() > 0 { 1 } else { 0 });
        let best = src
            .rt
            .iter()
            .filter_map(|(tid, _)| src.tasks.get(&tid).cloned())
            .find(|t| movable(src, t, this) && cpu_prio(t) > this_prio);
        if let Some(t) = best {
            move_task(src, dst, &t);
            update_counts(rq_of(src_cpu), src);
            update_counts(rq_of(this), dst);
            drop(guards);
            set_need_resched(this);
            return true;
        }
    }
    false
}
