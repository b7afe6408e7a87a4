//! Spawning and reaping, sleeping, affinity, the system calls' errors and the class order.

use super::{stop_and_reap, MS};
use crate::sched::api;
use crate::sched::task::SpawnOptions;
use crate::sched::{spawn, wait};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::consts::*;
use cadence_sched::{CpuMask, Errno, Policy, SchedAttr};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[test_case]
fn spawn_wait_returns_exit_code() {
    let t = spawn(SpawnOptions::new("answer"), || 42).expect("spawn");
    assert_eq!(wait(t.tid), Ok(42));
    assert_eq!(wait(t.tid), Err(Errno::ESRCH), "reaped tasks are gone");
}

#[test_case]
fn sleep_lasts_at_least_its_duration() {
    let start = crate::time::uptime_ns();
    crate::sched::sleep_ns(5 * MS);
    let slept = crate::time::uptime_ns() - start;
    assert!(slept >= 5 * MS, "slept {} ns", slept);
    assert!(slept < 50 * MS, "overslept: {} ns", slept);
}

#[test_case]
fn affinity_is_honoured_through_balancing_and_changes() {
    let stop = Arc::new(AtomicBool::new(false));
    let masks = [0b0001u64, 0b0110, 0b1000, 0b1100, 0b0011, 0b1010];
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..masks.len()).map(|_| AtomicU64::new(0)).collect());
    let mut tasks = Vec::new();
    for (i, &m) in masks.iter().enumerate() {
        let (stop, seen) = (stop.clone(), seen.clone());
        tasks.push(
            spawn(SpawnOptions::new("pinned").affinity(CpuMask::from_u64(m)), move || {
                while !stop.load(Ordering::Relaxed) {
                    // Interrupts off: no migration between reading the CPU and recording it.
                    x86_64::instructions::interrupts::without_interrupts(|| {
                        seen[i].fetch_or(1 << crate::percpu::cpu_id(), Ordering::Relaxed);
                    });
                }
                0
            })
            .expect("spawn"),
        );
    }
    crate::sched::sleep_ns(200 * MS);
    for (i, &m) in masks.iter().enumerate() {
        let s = seen[i].load(Ordering::Relaxed);
        assert!(s & !m == 0, "task {} with mask {:#b} ran on {:#b}", i, m, s);
    }
    // Move every task to CPU 3 only; after they switch out once, they must stay there.
    for t in &tasks {
        api::sched_setaffinity(t.tid, CpuMask::from_u64(0b1000)).expect("setaffinity");
    }
    crate::sched::sleep_ns(100 * MS);
    for s in seen.iter() {
        s.store(0, Ordering::SeqCst);
    }
    crate::sched::sleep_ns(200 * MS);
    for (i, s) in seen.iter().enumerate() {
        let s = s.load(Ordering::Relaxed);
        if s & !0b1000 != 0 {
            // Say which way it went wrong: a CPU that never rescheduled (look at its
            // need_resched, preempt_count and switch count) or a task placed there again.
            let t = &tasks[i];
            for c in crate::percpu::online_cpus() {
                crate::kprintln!(
                    "cpu {}: need_resched={} preempt_count={} switches={} current={:?}",
                    c.cpu_id,
                    crate::sched::rq_of(c.cpu_id).need_resched.load(Ordering::Relaxed),
                    c.preempt_count.load(Ordering::Relaxed),
                    crate::sched::rq_of(c.cpu_id).nr_switches.load(Ordering::Relaxed),
                    // Without waiting: the CPU may be stuck holding its lock (None then).
                    crate::sched::rq_of(c.cpu_id).lock.try_lock().and_then(|g| g.curr.as_ref().map(|t| t.tid)),
                );
            }
            crate::kprintln!(
                "task {}: tid {} cpu={} on_rq={} on_cpu={} affinity={} migrations={}",
                i,
                t.tid,
                t.cpu(),
                t.is_on_rq(),
                t.on_cpu.load(Ordering::Relaxed),
                t.affinity().to_list(),
                t.stats.nr_migrations.load(Ordering::Relaxed)
            );
        }
        assert!(s & !0b1000 == 0, "task {} ran on {:#b} after moving to cpu 3", i, s);
    }
    stop_and_reap(&stop, &tasks);
}

#[test_case]
fn errno_cases_match_linux() {
    let me = 0;
    let bad = |policy, prio, nice| SchedAttr { policy, nice, rt_priority: prio, slice_ns: 0, flags: 0, ..Default::default() };
    assert_eq!(api::sched_setattr(me, &bad(7, 0, 0)), Err(Errno::EINVAL), "unknown policy");
    assert_eq!(api::sched_setattr(me, &bad(SCHED_DEADLINE, 0, 0)), Err(Errno::EINVAL), "deadline without parameters");
    assert_eq!(api::sched_setattr(me, &bad(SCHED_FIFO, 0, 0)), Err(Errno::EINVAL), "FIFO prio 0");
    assert_eq!(api::sched_setattr(me, &bad(SCHED_RR, 100, 0)), Err(Errno::EINVAL), "RR prio 100");
    assert_eq!(api::sched_setattr(me, &bad(SCHED_NORMAL, 5, 0)), Err(Errno::EINVAL), "normal with prio");
    assert_eq!(api::sched_setattr(me, &bad(SCHED_NORMAL, 0, 20)), Err(Errno::EINVAL), "nice 20");
    assert_eq!(api::sched_setattr(me, &bad(SCHED_NORMAL, 0, -21)), Err(Errno::EINVAL), "nice -21");
    assert_eq!(api::sched_setattr(999_999, &bad(SCHED_NORMAL, 0, 0)), Err(Errno::ESRCH));
    assert_eq!(api::sched_setscheduler(me, SCHED_FIFO, -1), Err(Errno::EINVAL));
    assert_eq!(api::sched_setscheduler(999_999, SCHED_FIFO, 10), Err(Errno::ESRCH));
    assert_eq!(api::setpriority(999_999, 0), Err(Errno::ESRCH));
    assert_eq!(api::sched_setaffinity(me, CpuMask::from_u64(0)), Err(Errno::EINVAL), "empty mask");
    assert_eq!(api::sched_setaffinity(me, CpuMask::from_u64(1 << 40)), Err(Errno::EINVAL), "offline-only mask");
    assert_eq!(api::sched_setaffinity(999_999, CpuMask::from_u64(1)), Err(Errno::ESRCH));
    assert_eq!(api::sched_getaffinity(999_999), Err(Errno::ESRCH));
    assert_eq!(api::sched_getattr(999_999), Err(Errno::ESRCH));
    assert_eq!(api::sched_get_priority_max(SCHED_FIFO), Ok(99));
    assert_eq!(api::sched_get_priority_min(SCHED_RR), Ok(1));
    assert_eq!(api::sched_get_priority_max(SCHED_NORMAL), Ok(0));
    assert_eq!(api::sched_get_priority_max(42), Err(Errno::EINVAL));
    // Valid changes round-trip; setpriority clamps like Linux.
    api::setpriority(me, 30).expect("clamped");
    assert_eq!(api::getpriority(me), Ok(19));
    api::setpriority(me, 0).expect("back to 0");
    let a = api::sched_getattr(me).expect("getattr");
    assert_eq!((a.policy, a.nice), (Policy::Normal, 0));
}

/// Across classes the order of `CLASSES` decides wakeup preemption: RT over fair over idle.
#[test_case]
fn class_order_decides_cross_class_preemption() {
    use crate::sched::class::preempts_by_class;
    use crate::sched::task::ClassId::*;
    assert!(preempts_by_class(Rt, Fair) && preempts_by_class(Rt, Idle) && preempts_by_class(Fair, Idle));
    assert!(!preempts_by_class(Fair, Rt) && !preempts_by_class(Idle, Fair) && !preempts_by_class(Rt, Rt));
    assert!(preempts_by_class(Dl, Rt) && !preempts_by_class(Rt, Dl) && !preempts_by_class(Dl, Dl));
}
