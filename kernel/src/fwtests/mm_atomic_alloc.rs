//! In-kernel tests of `framework::mm::atomic_alloc` (they run in the kernel crate's harness).

use crate::sched::pipe::pipe;
use crate::sched::task::SpawnOptions;
use crate::sched::{api, group, spawn, wait};
use alloc::vec::Vec;
use cadence_sched::{CpuMask, Policy};

/// The scheduler's hot paths — spawn, wakeups through pipes and sleeps (wait queues and
/// timers), RT and fair preemption, yields, affinity changes with migration, tasks in a
/// group, exit — allocate nothing with interrupts off (issue #11).
#[test_case]
fn scheduler_hot_paths_allocate_nothing_with_interrupts_off() {
    let ncpus = crate::percpu::online_cpus().count() as u32;
    let tg = group::create("atomic-alloc", group::ROOT_GROUP, 100, group::GroupKind::Manual).expect("group");
    let round = |label: &str| {
        let mut tasks = Vec::new();
        for i in 0..ncpus {
            let (r1, w1) = pipe();
            let (r2, w2) = pipe();
            let rt = if i % 2 == 0 { (Policy::Fifo, 10 + i as u8) } else { (Policy::Normal, 0) };
            tasks.push(
                spawn(SpawnOptions::new("aa-pong").policy(rt.0, rt.1, 0).pin(i), move || {
                    let mut b = [0u8; 1];
                    for _ in 0..300 {
                        if r1.read(&mut b) != 1 || w2.write(&b).is_err() {
                            return 1;
                        }
                    }
                    0
                })
                .expect(label),
            );
            tasks.push(
                spawn(SpawnOptions::new("aa-ping").pin((i + 1) % ncpus), move || {
                    let mut b = [1u8; 1];
                    for k in 0..300u32 {
                        if w1.write(&b).is_err() || r2.read(&mut b) != 1 {
                            return 1;
                        }
                        if k % 50 == 0 {
                            let _ = api::sched_setaffinity(0, CpuMask::single((k / 50 % ncpus) as usize));
                            crate::sched::sleep_ns(100_000);
                            api::sched_yield();
                        }
                    }
                    0
                })
                .expect(label),
            );
        }
        for t in tasks {
            assert_eq!(wait(t.tid), Ok(0), "{}", label);
        }
    };
    // The children inherit the group (joining one is not a hot path).
    let me = crate::sched::current_tid();
    group::move_task(me, tg.id).expect("join the group");
    // Warm-up: the queues, lists and caches grow to this workload's size once.
    round("warm-up");
    framework::mm::atomic_alloc::reset();
    round("measured");
    let sites = framework::mm::atomic_alloc::sites();
    let mut report = alloc::string::String::new();
    let _ = framework::mm::atomic_alloc::report(&mut report, crate::sched::reserve::stats());
    group::move_task(me, group::ROOT_GROUP).expect("leave the group");
    let _ = group::destroy(tg.id);
    assert!(sites.is_empty() && framework::mm::atomic_alloc::total() == 0, "allocations with interrupts off:\n{}", report);
}
