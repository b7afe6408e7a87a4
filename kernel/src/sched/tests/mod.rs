//! In-kernel scheduler tests (run under QEMU on 4 CPUs: 2 cores × 2 threads).
//!
//! The tests run inside `init` (a fair task); measuring tests make it sleep while the tasks
//! under test run, and every task they start is stopped and reaped before they return.
//!
//! One file per concern; test names keep the `sched::tests::` prefix (`test=sched::tests`
//! selects them all), followed by the file's module.

mod basics;
mod deadline;
mod fair;
mod hotplug;
mod lifetime;
mod nohz;
mod rt;
mod wakeups;

use super::task::{SpawnOptions, Task};
use super::{spawn, wait};
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

const MS: u64 = 1_000_000;

fn runtime(t: &Task) -> u64 {
    t.stats.sum_exec_runtime.load(Ordering::Relaxed)
}

/// Spawns a CPU hog that spins until `stop`.
fn hog(name: &str, opts: SpawnOptions, stop: &Arc<AtomicBool>) -> Arc<Task> {
    let stop = stop.clone();
    let _ = name;
    spawn(opts, move || {
        while !stop.load(Ordering::Relaxed) {
            core::hint::spin_loop();
        }
        0
    })
    .expect("spawn hog")
}

fn stop_and_reap(stop: &Arc<AtomicBool>, tasks: &[Arc<Task>]) {
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        wait(t.tid).expect("reap");
    }
}
