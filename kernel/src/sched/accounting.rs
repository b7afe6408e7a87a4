//! Counts published for lock-free readers ([`update_counts`], `RT_OVERLOAD`), wait-time
//! statistics, and the checks the stress tests assert ([`check_accounting`], [`bad_enqueues`]).

use super::task::{ClassId, Task, Tid};
use super::{balance, class, online_mask, rq_of, Rq, RqInner};
use crate::percpu;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

/// Publishes `g`'s counts for lock-free readers (balancing, RT placement). Called with `g`
/// locked after every change of its queues or of `curr`.
///
/// RT placement reads `rt_level` and `RT_OVERLOAD` without locks, from both sides: a CPU that
/// queues a pushable task sets its overload bit and then reads the others' levels (push),
/// while a CPU whose level drops stores it and then reads the overload mask (pull). Both use
/// `SeqCst`, so at least one side sees the other (store-load ordering), and the task is moved.
pub(super) fn update_counts(rq: &Rq, g: &RqInner) {
    rq.nr_running.store(g.nr_queued() as u32, Ordering::Release);
    balance::refresh_idle(g.cpu);
    super::nohz::note_nr_running(g.cpu, g.nr_queued() as u32);
    rq.fair_load.store(g.fair.load(), Ordering::Release);
    rq.h_nr_running.store(g.nr_fair_tasks as u32, Ordering::Release);
    let curr = g.curr.as_ref();
    let running_rt = curr.is_some_and(|c| c.class() == ClassId::Rt && c.is_on_rq());
    let waiting = g.rt.nr_running().saturating_sub(running_rt as usize);
    rq.rt_waiting.store(waiting as u32, Ordering::Release);
    // The most important waiting RT task that is allowed elsewhere. Pinned tasks are never
    // push or pull candidates, so they do not mark the CPU overloaded (Linux's
    // `rt_nr_migratory`): otherwise every switch anywhere would lock this queue for nothing.
    // Only the tasks marked migratory are walked (Linux's `pushable_tasks`), so thousands of
    // pinned ones cost nothing here; the first is the answer unless it runs or its other CPUs
    // went offline.
    let mut pushable = 0u8;
    if waiting > 0 {
        let online = online_mask();
        for (tid, prio) in g.rt.migratory() {
            let Some(t) = g.tasks.get(&tid) else { continue };
            let running = curr.is_some_and(|c| Arc::ptr_eq(c, t));
            if cadence_sched::rt_smp::is_pushable(t.affinity(), online, running) {
                pushable = 2 + prio;
                break;
            }
        }
    }
    rq.rt_level.store(balance::locked_level(g), Ordering::SeqCst);
    rq.rt_pushable.store(pushable, Ordering::SeqCst);
    let overloaded = RT_OVERLOAD.contains(g.cpu as usize, Ordering::SeqCst);
    if pushable != 0 && !overloaded {
        RT_OVERLOAD.set(g.cpu as usize, Ordering::SeqCst);
    } else if pushable == 0 && overloaded {
        RT_OVERLOAD.clear(g.cpu as usize, Ordering::SeqCst);
    }
}

/// Run-queue accounting, for stress tests (the chaos stress): on every CPU, under its lock, the
/// published `nr_running` equals the queues' counts and the queued-task map, every queued task
/// is on the run queue of its own CPU, and no task is queued on two CPUs. Returns one line per
/// problem (empty: consistent). Wakeups still on a wake list are neither queued nor counted.
pub fn check_accounting() -> alloc::vec::Vec<alloc::string::String> {
    use alloc::format;
    let mut problems = alloc::vec::Vec::new();
    let mut seen: BTreeMap<Tid, u32> = BTreeMap::new();
    for cpu in percpu::online_cpus() {
        let g = rq_of(cpu.cpu_id).lock.lock();
        let queued = g.nr_queued();
        let published = rq_of(cpu.cpu_id).nr_running.load(Ordering::Acquire) as usize;
        let throttled = g.tasks.values().filter(|t| t.class() == ClassId::Dl && class::deadline::is_throttled(t)).count();
        if queued != published || queued + throttled != g.tasks.len() {
            problems.push(format!(
                "cpu {}: nr_running {} published, {} in the class queues, {} throttled, {} queued tasks",
                cpu.cpu_id,
                published,
                queued,
                throttled,
                g.tasks.len()
            ));
        }
        for (tid, t) in g.tasks.iter() {
            if !t.is_on_rq() || t.cpu() != cpu.cpu_id {
                problems.push(format!("cpu {}: task {} queued here, on_rq {} cpu {}", cpu.cpu_id, tid, t.is_on_rq(), t.cpu()));
            }
            if let Some(other) = seen.insert(*tid, cpu.cpu_id) {
                problems.push(format!("task {} queued on cpus {} and {}", tid, other, cpu.cpu_id));
            }
        }
    }
    problems
}

/// CPUs with a waiting RT task that may run elsewhere (Linux's `rto_mask`): pull sources.
pub(super) static RT_OVERLOAD: cadence_sched::AtomicCpuMask = cadence_sched::AtomicCpuMask::new();

/// The task starts waiting on a run queue, unless it already was (a requeue or migration
/// while it waits does not restart its wait).
pub(super) fn start_wait(task: &Task, now: u64) {
    let _ = task.stats.wait_start.compare_exchange(0, now.max(1), Ordering::Relaxed, Ordering::Relaxed);
}

/// `task` begins running on `cpu`: its wait ends, charged to it (`wait_sum`, `wait_max`) and
/// to `cpu`'s `run_delay_ns`; `cpu`'s `pcount` counts the start.
pub(super) fn end_wait(task: &Task, now: u64, cpu: u32) {
    let start = task.stats.wait_start.swap(0, Ordering::Relaxed);
    task.stats.last_queued_at.store(start, Ordering::Relaxed);
    if !task.is_idle {
        rq_of(cpu).pcount.fetch_add(1, Ordering::Relaxed);
    }
    if start != 0 {
        let w = now.saturating_sub(start);
        rq_of(cpu).run_delay_ns.fetch_add(w, Ordering::Relaxed);
        task.stats.wait_sum.fetch_add(w, Ordering::Relaxed);
        task.stats.wait_max.fetch_max(w, Ordering::Relaxed);
        task.stats.wait_count.fetch_add(1, Ordering::Relaxed);
    }
}

/// Enqueues that found `on_rq` other than their kind expects (see [`dequeue_task`]): a plain
/// enqueue of a task already marked queued — a task on two run queues — or the second half of
/// a requeue or migration of one not marked queued; and enqueues a class refused because the
/// task was already in its queue. 0 unless a bug; the chaos stress counts it
/// as a violation and every in-kernel test asserts it.
pub(super) static BAD_ENQUEUES: AtomicU64 = AtomicU64::new(0);

/// A class found a task it was asked to queue already queued (its policy's `EBUSY`): the
/// same bug as a wrong `on_rq`, counted with it.
pub(super) fn note_bad_enqueue() {
    BAD_ENQUEUES.fetch_add(1, Ordering::Relaxed);
}

/// How many enqueues found `on_rq` wrong ([`BAD_ENQUEUES`]).
pub fn bad_enqueues() -> u64 {
    BAD_ENQUEUES.load(Ordering::Relaxed)
}

// ----- what /proc reads --------------------------------------------------------------------

/// Time `cpu` spent in its idle task (ns; `/proc/stat`'s idle column, `/proc/uptime`,
/// `/proc/schedstat`), the stretch it is idle in now included: a tickless idle CPU charges
/// nothing until it leaves idle (Linux's `get_cpu_idle_time_us` adds the same). Takes `cpu`'s
/// run-queue lock.
pub fn idle_ns(cpu: u32) -> u64 {
    let rq = rq_of(cpu);
    let g = rq.lock.lock();
    let now = crate::time::uptime_ns();
    let running = if g.curr.as_ref().is_some_and(|c| c.is_idle) { now.saturating_sub(g.exec_start) } else { 0 };
    rq.idle_ns.load(Ordering::Relaxed) + running
}

/// `cpu`'s time since it came online as `/proc/stat` splits it: (user, system, idle) in ns.
/// Idle is [`idle_ns`]; user is what the tick sampled in user mode (at most the non-idle
/// time); system is the rest. Before, the busy column was uptime less idle, so a CPU that came
/// online 25 s into a 64-vCPU boot showed 25 s of user time before any program ran, and the
/// system column was always 0.
pub fn cpu_times(cpu: u32) -> (u64, u64, u64) {
    let rq = rq_of(cpu);
    let online = crate::time::uptime_ns().saturating_sub(rq.online_at_ns.load(Ordering::Relaxed));
    let idle = idle_ns(cpu).min(online);
    let busy = online - idle;
    let user = rq.user_ns.load(Ordering::Relaxed).min(busy);
    (user, busy - user, idle)
}

/// Idle time of all online CPUs (ns).
pub fn idle_ns_total() -> u64 {
    percpu::online_cpus().map(|c| idle_ns(c.cpu_id)).sum()
}

/// The next load sample's time and the averages (see [`sample_load`]).
static LOADAVG: crate::sync::IrqLock<(u64, cadence_sched::loadavg::LoadAvg)> =
    crate::sync::IrqLock::new((cadence_sched::loadavg::LOAD_FREQ_NS, cadence_sched::loadavg::LoadAvg { avenrun: [0; 3] }));

/// From the tick of the CPU with the timekeeping duty (`nohz`): every 5 s, folds the runnable
/// tasks of all CPUs into the load averages (Linux's `calc_global_load`; Cadence has no
/// uninterruptible-sleep count to add). Windows that passed unsampled, every CPU idle and
/// tickless so nothing runnable, count as samples of 0 (Linux's `calc_global_nohz`).
pub(super) fn sample_load(now: u64) {
    let mut l = LOADAVG.lock();
    if now < l.0 {
        return;
    }
    let missed = (now - l.0) / cadence_sched::loadavg::LOAD_FREQ_NS;
    l.1.sample_n(0, missed);
    l.0 = now + cadence_sched::loadavg::LOAD_FREQ_NS;
    let active: u64 = percpu::online_cpus().map(|c| u64::from(rq_of(c.cpu_id).nr_running.load(Ordering::Relaxed))).sum();
    l.1.sample(active);
}

/// The 1-, 5- and 15-minute load averages, fixed point (`cadence_sched::loadavg`).
pub fn loadavg() -> [u64; 3] {
    LOADAVG.lock().1.avenrun
}

/// A task's fair entity now, (vruntime, weight), for `/proc/PID/sched`; `None` if it is not
/// in the fair class or moved while looked at.
pub fn fair_snapshot(t: &Task) -> Option<(u64, u64)> {
    if let Some(e) = t.parked_se.lock().as_ref() {
        return Some((e.vruntime(), e.weight()));
    }
    let cpu = t.cpu();
    let g = rq_of(cpu).lock.lock();
    if t.cpu() != cpu {
        return None;
    }
    let gid = t.se_group.load(Ordering::Relaxed);
    let frq = if gid == 0 { Some(&g.fair) } else { g.group_rqs.get(&gid).map(|q| &q.rq) };
    frq.and_then(|f| f.entity(super::SeKey::Task(t.tid))).map(|e| (e.vruntime(), e.weight()))
}
