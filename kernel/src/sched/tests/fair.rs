//! The fair class: shares by nice value and policy, reweighting on renice.

use super::{hog, runtime, stop_and_reap, MS};
use crate::sched::api;
use crate::sched::task::{SpawnOptions, Task};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::Policy;
use core::sync::atomic::{AtomicBool, Ordering};

#[test_case]
fn fairness_nice0_vs_nice5_on_one_cpu() {
    let stop = Arc::new(AtomicBool::new(false));
    let a = hog("n0", SpawnOptions::new("nice0").policy(Policy::Normal, 0, 0).pin(3), &stop);
    let b = hog("n5", SpawnOptions::new("nice5").policy(Policy::Normal, 0, 5).pin(3), &stop);
    crate::sched::sleep_ns(50 * MS);
    let (a0, b0) = (runtime(&a), runtime(&b));
    crate::sched::sleep_ns(600 * MS);
    let (a1, b1) = (runtime(&a) - a0, runtime(&b) - b0);
    stop_and_reap(&stop, &[a, b]);
    let ratio = a1 as f64 / b1.max(1) as f64;
    let want = 1024.0 / 335.0;
    assert!((ratio / want - 1.0).abs() < 0.05, "nice0:nice5 = {:.3}, want {:.3} ± 5%", ratio, want);
}

#[test_case]
fn eight_hogs_on_four_cpus_get_half_a_cpu_each() {
    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = (0..8).map(|_| hog("hog", SpawnOptions::new("hog").policy(Policy::Normal, 0, 0), &stop)).collect();
    // Settling: forks stack on this CPU once every CPU has one task (Linux's
    // `sched_balance_find_dst_group` keeps a fork local while the groups have spare
    // capacity), and busy CPUs balance every `balance_interval × busy_factor`, a level at a
    // time, as Linux's do; after the pinned tests before this one, `balance_interval` may have
    // backed off to `MAX_PINNED_INTERVAL` (512 ms, 400 ms at this size once clamped) until a
    // pass finds an imbalance. So: wait until every CPU runs two of them (at most 2 s), then
    // measure with them settled.
    let settle = crate::time::uptime_ns();
    let settled = || {
        let mut per_cpu = [0u32; 64];
        hogs.iter().for_each(|t| per_cpu[t.cpu() as usize % 64] += 1);
        crate::sched::online_mask().iter().all(|c| per_cpu[c % 64] == 2)
    };
    while !settled() && crate::time::uptime_ns() - settle < 2000 * MS {
        crate::sched::sleep_ns(20 * MS);
    }
    let took = (crate::time::uptime_ns() - settle) / MS;
    assert!(settled(), "8 hogs not 2 per CPU after {took} ms: cpus {:?}", hogs.iter().map(|t| t.cpu()).collect::<Vec<_>>());
    crate::kprint!("(settled in {took} ms) ");
    crate::sched::sleep_ns(50 * MS);
    let before: Vec<u64> = hogs.iter().map(|t| runtime(t)).collect();
    let t0 = crate::time::uptime_ns();
    crate::sched::sleep_ns(1000 * MS);
    let elapsed = crate::time::uptime_ns() - t0;
    let shares: Vec<f64> = hogs.iter().zip(&before).map(|(t, b)| (runtime(t) - b) as f64 / elapsed as f64).collect();
    stop_and_reap(&stop, &hogs);
    for s in &shares {
        assert!((s - 0.5).abs() <= 0.05, "shares {:?}", shares);
    }
}

#[test_case]
fn sched_idle_yields_to_normal_and_batch_shares_equally() {
    let stop = Arc::new(AtomicBool::new(false));
    let normal = hog("n", SpawnOptions::new("normal").policy(Policy::Normal, 0, 0).pin(2), &stop);
    let idle = hog("i", SpawnOptions::new("idle").policy(Policy::Idle, 0, 0).pin(2), &stop);
    let batch = hog("b", SpawnOptions::new("batch").policy(Policy::Batch, 0, 0).pin(1), &stop);
    let normal2 = hog("n2", SpawnOptions::new("normal2").policy(Policy::Normal, 0, 0).pin(1), &stop);
    crate::sched::sleep_ns(30 * MS);
    let r0: Vec<u64> = [&normal, &idle, &batch, &normal2].iter().map(|t| runtime(t)).collect();
    crate::sched::sleep_ns(400 * MS);
    let r: Vec<u64> = [&normal, &idle, &batch, &normal2].iter().zip(&r0).map(|(t, b)| runtime(t) - b).collect();
    stop_and_reap(&stop, &[normal, idle, batch, normal2]);
    let idle_share = r[1] as f64 / (r[0] + r[1]) as f64;
    assert!(idle_share < 0.02, "SCHED_IDLE got {:.3} of the CPU beside a normal hog", idle_share);
    let batch_share = r[2] as f64 / (r[2] + r[3]) as f64;
    assert!((batch_share - 0.5).abs() < 0.05, "SCHED_BATCH share {:.3}", batch_share);
}

/// A nice change reaches the entity wherever it is: running (the entity stays in its queue as
/// `curr` across the save/restore requeue) or queued behind it; with the weights the CPU
/// splits as the new nice values say.
#[test_case]
fn renice_reweights_running_and_queued_fair_tasks() {
    let stop = Arc::new(AtomicBool::new(false));
    let a = hog("ra", SpawnOptions::new("renice-a").pin(3), &stop);
    let b = hog("rb", SpawnOptions::new("renice-b").pin(3), &stop);
    crate::sched::sleep_ns(30 * MS);
    let weight_of = |t: &Arc<Task>| {
        let g = crate::sched::rq_of(3).lock.lock();
        let gid = t.se_group.load(Ordering::Relaxed);
        let queued = crate::sched::class::fair_rq(&g, gid).and_then(|f| f.entity(t.key()).map(|e| e.weight()));
        queued.or_else(|| t.parked_se.lock().as_ref().map(|e| e.weight()))
    };
    // One of them runs, the other waits: renice both.
    assert_eq!(api::setpriority(a.tid, 5), Ok(()));
    assert_eq!(api::setpriority(b.tid, -5), Ok(()));
    let (wa, wb) = (weight_of(&a), weight_of(&b));
    crate::sched::sleep_ns(50 * MS);
    let (a0, b0) = (runtime(&a), runtime(&b));
    crate::sched::sleep_ns(400 * MS);
    let (a1, b1) = (runtime(&a) - a0, runtime(&b) - b0);
    stop_and_reap(&stop, &[a, b]);
    assert_eq!((wa, wb), (Some(335), Some(3121)), "entity weights after renice");
    let ratio = b1 as f64 / a1.max(1) as f64;
    let want = 3121.0 / 335.0;
    assert!((ratio / want - 1.0).abs() < 0.15, "nice-5:nice5 = {:.2}, want {:.2} ± 15%", ratio, want);
}
