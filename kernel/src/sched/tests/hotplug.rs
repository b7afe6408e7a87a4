//! CPU hot-plug (`sched::hotplug`): an offline CPU runs nothing but its idle task, its tasks
//! go elsewhere (a task pinned to it has its affinity widened), the domains leave it out and
//! take it back, the load balancer spreads tasks onto it once it is back (the wasted-cores
//! paper's fourth bug: a CPU back online that no domain reached stayed idle), and bad requests
//! get Linux's errors.

use super::{hog, stop_and_reap, MS};
use crate::sched::hotplug::{cpu_down, cpu_up};
use crate::sched::task::{SpawnOptions, Task};
use crate::sched::{online_mask, rq_of, topology};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::errno::Errno;
use cadence_sched::CpuMask;
use core::sync::atomic::AtomicBool;

/// The highest online CPU other than the caller's and CPU 0.
fn victim() -> u32 {
    let me = crate::percpu::cpu_id() as usize;
    online_mask().iter().filter(|&c| c != 0 && c != me).last().expect("a CPU to take offline") as u32
}

use crate::sched::hotplug::drained as runs_only_idle;

#[test_case]
fn an_offline_cpu_runs_nothing_and_its_pinned_task_moves_with_a_widened_affinity() {
    let cpu = victim();
    let stop = Arc::new(AtomicBool::new(false));
    let pinned = hog("pinned", SpawnOptions::new("pinned").pin(cpu), &stop);
    let free: Vec<Arc<Task>> = (0..online_mask().count()).map(|_| hog("free", SpawnOptions::new("free"), &stop)).collect();
    crate::sched::sleep_ns(20 * MS);
    assert_eq!(cpu_down(cpu), Ok(()));
    assert!(!online_mask().contains(cpu as usize));
    assert_eq!(pinned.affinity(), crate::sched::possible_mask(), "the pinned task's affinity is widened");
    // For 100 ms, sampled: nothing but the idle task there, while more tasks than CPUs spin.
    for _ in 0..20 {
        assert!(runs_only_idle(cpu), "cpu{cpu} is offline but runs or queues a task");
        crate::sched::sleep_ns(5 * MS);
    }
    assert!(pinned.cpu() != cpu && free.iter().all(|t| t.cpu() != cpu));
    // No domain of any CPU reaches it.
    let d = topology::domains().expect("domains");
    assert!(d.domains(cpu as usize).is_empty());
    for c in online_mask().iter() {
        assert!(d.domains(c).iter().all(|sd| !sd.span.contains(cpu as usize)), "cpu{c}'s domains reach offline cpu{cpu}");
    }
    assert_eq!(cpu_up(cpu), Ok(()));
    let mut all = free;
    all.push(pinned);
    stop_and_reap(&stop, &all);
}

#[test_case]
fn a_cpu_back_online_gets_its_domains_back_and_the_balancer_gives_it_work() {
    let cpu = victim();
    let boot = topology::domains().expect("domains");
    assert_eq!(cpu_down(cpu), Ok(()));
    assert_eq!(cpu_down(cpu), Ok(()), "already offline: nothing to do");
    // Spinners started while it is offline, one per CPU up: none lands there.
    let stop = Arc::new(AtomicBool::new(false));
    let n = online_mask().count() as usize + 1;
    let spinners: Vec<Arc<Task>> = (0..n).map(|_| hog("spin", SpawnOptions::new("spin"), &stop)).collect();
    crate::sched::sleep_ns(20 * MS);
    assert!(runs_only_idle(cpu));
    assert_eq!(cpu_up(cpu), Ok(()));
    assert_eq!(cpu_up(cpu), Ok(()), "already online: nothing to do");
    assert_eq!(*topology::domains().expect("domains"), *boot, "the domains are the boot ones again");
    // One spinner more than the CPUs that were up: the balancer moves one to it.
    let start = crate::time::uptime_ns();
    let mut took = None;
    while crate::time::uptime_ns() - start < 500 * MS {
        if !runs_only_idle(cpu) && rq_of(cpu).lock.lock().curr.as_ref().is_some_and(|c| !c.is_idle) {
            took = Some(crate::time::uptime_ns() - start);
            break;
        }
        crate::sched::sleep_ns(MS);
    }
    stop_and_reap(&stop, &spinners);
    let took = took.expect("cpu back online stayed idle for 500 ms beside a waiting spinner");
    crate::kprint!("(cpu{} busy {} µs after coming back) ", cpu, took / 1000);
}

#[test_case]
fn bad_hotplug_requests_get_linuxs_errors() {
    assert_eq!(cpu_down(0), Err(Errno::EPERM), "CPU 0 stays (x86 Linux has no cpu0/online)");
    assert_eq!(cpu_down(cadence_sched::NR_CPUS as u32), Err(Errno::EINVAL));
    assert_eq!(cpu_up(cadence_sched::NR_CPUS as u32 + 7), Err(Errno::EINVAL));
    assert_eq!(online_mask().count(), crate::percpu::online_cpus().count() as u32);
}

/// A CPU going offline and back twenty times while a task keeps pinning itself to it and
/// spawning children pinned to it: after each `cpu_down`, no task is left allowed only on
/// offline CPUs (each side checks under the task's `params`, after its own first step).
#[test_case]
fn hotplug_beside_pinning_and_spawning_strands_no_task() {
    let cpu = victim();
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        crate::sched::spawn(SpawnOptions::new("churn"), move || {
            while !stop.load(core::sync::atomic::Ordering::Relaxed) {
                let _ = crate::sched::api::sched_setaffinity(crate::sched::current_tid(), CpuMask::single(cpu as usize));
                if let Ok(child) = crate::sched::spawn(SpawnOptions::new("child"), || 0) {
                    let _ = crate::sched::wait(child.tid);
                }
                let _ = crate::sched::api::sched_setaffinity(crate::sched::current_tid(), crate::sched::possible_mask());
            }
            0
        })
        .expect("spawn churn")
    };
    for round in 0..20 {
        assert_eq!(cpu_down(cpu), Ok(()));
        let online = online_mask();
        for t in crate::sched::task::all() {
            assert!(
                t.is_idle || !(t.affinity() & online).is_empty(),
                "round {round}: {} ({}) allowed only offline",
                t.tid,
                t.comm_string()
            );
        }
        crate::sched::sleep_ns(MS);
        assert_eq!(cpu_up(cpu), Ok(()));
        crate::sched::sleep_ns(MS);
    }
    stop_and_reap(&stop, &[churn]);
}
