//! Wakeups: pipe ping-pong across CPUs, and wakeups onto a CPU whose queues are full.

use super::{hog, stop_and_reap, MS};
use crate::sched::api;
use crate::sched::pipe::pipe;
use crate::sched::task::SpawnOptions;
use crate::sched::{spawn, wait};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::{CpuMask, Policy};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[test_case]
fn pipe_ping_pong_across_cpus_loses_no_wakeup() {
    let rounds = ping_pong_rounds();
    let (r1, w1) = pipe();
    let (r2, w2) = pipe();
    let ponger = spawn(SpawnOptions::new("pong").pin(2), move || {
        let mut b = [0u8; 1];
        for _ in 0..rounds {
            if r1.read(&mut b) != 1 {
                return 1;
            }
            if w2.write(&b).is_err() {
                return 2;
            }
        }
        0
    })
    .expect("pong");
    let pinger = spawn(SpawnOptions::new("ping").pin(1), move || {
        let mut b = [7u8; 1];
        for i in 0..rounds {
            b[0] = i as u8;
            if w1.write(&b).is_err() {
                return 2;
            }
            if r2.read(&mut b) != 1 || b[0] != i as u8 {
                return 1;
            }
        }
        0
    })
    .expect("ping");
    assert_eq!(wait(pinger.tid), Ok(0));
    assert_eq!(wait(ponger.tid), Ok(0));
}

/// 1,000,000 round trips as the issue asks; `CADENCE_QUICK` builds could lower it.
fn ping_pong_rounds() -> u32 {
    1_000_000
}

/// Wakeups onto a CPU whose queues are full never allocate there with interrupts off: they
/// go to its wake list and wait for the refill (`sched::activate_wakeup`, `ttwu_pending`).
/// CI once saw `bench hackbench` at -smp 4 SMT outrun a queue's headroom (`trace
/// atomic-alloc` counted 2 allocations in `try_to_wake_up`, 2 of 40 runs).
///
/// Here the refills at preemption points are held ([`crate::sched::reserve::HOLD_REFILLS`]) while a
/// waker wakes more tasks than the last CPU `x`'s queue holds onto `x`, an RT task there
/// keeping them all queued: the waker itself if `local` (it runs on `x`), else an RT hog (the
/// waker runs on the first CPU). Once a wakeup has waited for room, one more task is spawned
/// onto `x` (`spawn` refills a full queue first) and the refills go on; every task must run,
/// and nothing may have allocated with interrupts off. Nothing to do on one CPU.
fn wake_past_a_full_run_queue(local: bool) {
    let online = crate::sched::online_mask();
    let (Some(first), Some(x)) = (online.iter().next(), online.iter().last()) else { return };
    if first == x {
        return;
    }
    let (x, first) = (x as u32, first as u32);
    // The sleepers start on the first CPU, so that their spawns leave x's queue as it was.
    let (waker_cpu, hog_on_x) = if local { (x, false) } else { (first, true) };
    // This task polls while an RT task keeps CPU x: it runs elsewhere.
    let affinity = api::sched_getaffinity(0).expect("affinity");
    api::sched_setaffinity(0, online.without(x as usize)).expect("off x");
    let n = crate::sched::rq_of(x).lock.lock().tasks.capacity() + 16;
    let go = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let wq = Arc::new(crate::sched::wait::WaitQueue::new());
    let sleepers: Vec<_> = (0..n)
        .map(|_| {
            let (go, done, wq) = (go.clone(), done.clone(), wq.clone());
            spawn(SpawnOptions::new("full-rq").pin(first).stack_size(16 * 1024), move || {
                wq.wait_until(|| go.load(Ordering::Acquire));
                done.fetch_add(1, Ordering::Relaxed);
                0
            })
            .expect("spawn")
        })
        .collect();
    while wq.len() < n {
        crate::sched::sleep_ns(MS);
    }
    for t in &sleepers {
        api::sched_setaffinity(t.tid, CpuMask::from_u64(1 << x)).expect("affinity");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let rt_hog = hog_on_x.then(|| hog("rt-hog", SpawnOptions::new("rt-hog").policy(Policy::Fifo, 50, 0).pin(x), &stop));
    crate::sched::sleep_ns(5 * MS); // the hog is on CPU x
    let deferred0 = crate::sched::reserve::stats().2;
    crate::sched::reserve::HOLD_REFILLS.store(true, Ordering::Release);
    crate::mm::atomic_alloc::reset();
    let waker = {
        let (go, wq) = (go.clone(), wq.clone());
        spawn(SpawnOptions::new("waker").policy(Policy::Fifo, 60, 0).pin(waker_cpu), move || {
            go.store(true, Ordering::Release);
            wq.wake_all() as i32
        })
        .expect("spawn waker")
    };
    // Until a wakeup waits for room (the waker, if it runs on `x`, cannot finish before).
    let deadline = crate::time::uptime_ns() + 5_000 * MS;
    while crate::sched::reserve::stats().2 == deferred0 && crate::time::uptime_ns() < deadline {
        crate::sched::sleep_ns(MS);
    }
    let deferred = crate::sched::reserve::stats().2 - deferred0;
    let late = spawn(SpawnOptions::new("late").pin(x).stack_size(16 * 1024), || 7).expect("spawn late");
    crate::sched::reserve::HOLD_REFILLS.store(false, Ordering::Release);
    let woken = wait(waker.tid);
    stop_and_reap(&stop, rt_hog.as_slice());
    let late_exit = wait(late.tid);
    for t in &sleepers {
        wait(t.tid).expect("reap");
    }
    api::sched_setaffinity(0, affinity).expect("restore affinity");
    let mut report = alloc::string::String::new();
    let _ = crate::mm::atomic_alloc::report(&mut report, crate::sched::reserve::stats());
    assert_eq!(woken, Ok(n as i32), "woken");
    assert_eq!(late_exit, Ok(7), "the task spawned onto the full queue");
    assert_eq!(done.load(Ordering::Relaxed), n as u64, "every woken task ran");
    assert_eq!(crate::mm::atomic_alloc::total(), 0, "allocations with interrupts off:\n{}", report);
    assert!(deferred > 0, "no wakeup waited for room: the queue was never full ({} tasks)", n);
}

/// [`wake_past_a_full_run_queue`] from another CPU (`try_to_wake_up`'s remote enqueue).
#[test_case]
fn remote_wakeups_beyond_a_full_run_queue_wait_for_the_refill_without_allocating() {
    wake_past_a_full_run_queue(false);
}

/// [`wake_past_a_full_run_queue`] on the target CPU itself (`try_to_wake_up`'s local enqueue).
#[test_case]
fn local_wakeups_beyond_a_full_run_queue_wait_for_the_refill_without_allocating() {
    wake_past_a_full_run_queue(true);
}

#[test_case]
fn a_sleeper_records_where_it_sleeps_through_the_waits_track_caller() {
    // The hung-task report names this place: the wait's caller, not the wait queue's code.
    let go = Arc::new(AtomicBool::new(false));
    let wq = Arc::new(crate::sched::wait::WaitQueue::new());
    let m = Arc::new(crate::sched::wait::Mutex::new(()));
    let held = m.lock_uninterruptible();
    // The lines of the two waits, as the sleeper sees them.
    let lines = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let sleeper = {
        let (go, wq, m, lines) = (go.clone(), wq.clone(), m.clone(), lines.clone());
        spawn(SpawnOptions::new("wait-site"), move || {
            lines.0.store(u64::from(line!()) + 1, Ordering::Relaxed);
            wq.wait_until(|| go.load(Ordering::Acquire));
            lines.1.store(u64::from(line!()) + 1, Ordering::Relaxed);
            drop(m.lock_uninterruptible());
            0
        })
        .expect("spawn")
    };
    while wq.is_empty() {
        crate::sched::sleep_ns(MS);
    }
    let site = sleeper.wait_site().expect("a wait site");
    assert_eq!((site.file(), u64::from(site.line())), (file!(), lines.0.load(Ordering::Relaxed)), "asleep on the queue");
    go.store(true, Ordering::Release);
    wq.wake_all();
    let deadline = crate::time::uptime_ns() + 5_000 * MS;
    while sleeper.wait_site().is_some_and(|s| u64::from(s.line()) != lines.1.load(Ordering::Relaxed)) && crate::time::uptime_ns() < deadline
    {
        crate::sched::sleep_ns(MS);
    }
    let site = sleeper.wait_site().expect("a wait site");
    assert_eq!((site.file(), u64::from(site.line())), (file!(), lines.1.load(Ordering::Relaxed)), "asleep on the mutex");
    drop(held);
    assert_eq!(wait(sleeper.tid), Ok(0));
}
