//! Run-queue operation costs against the number of queued entities (issue #34), on the host:
//!
//!     cargo run --release -p cadence-sched --example runqueue-scale [-- N,N,...]
//!
//! For each N (default 10, 100, 1,000, 10,000, 100,000) prints ns per operation of
//! - `fair`: the fair class's queue as the kernel drives it (`FairRq<u32>`): a `schedule()`
//!   round (put the running entity back, pick, set it running, charge it 100 µs), and a
//!   sleep/wakeup pair (dequeue with `DEQUEUE_SLEEP`, enqueue with `ENQUEUE_WAKEUP`);
//! - `timeline`: the min-vruntime-augmented deadline tree (`timeline::Timeline`) alone: an
//!   insert + remove pair and an EEVDF pick;
//! - `rt`: the RT priority array (`RtPrioArray<u32>`, N tasks at one priority, a tenth of them
//!   migratory): a `sched_yield` round (requeue the head at the tail, pick) and a
//!   sleep/wakeup pair (dequeue and enqueue a task in the middle).
//!
//! Timing is wall-clock over enough rounds to take ~50 ms per figure; compare the growth
//! between rows, not the absolute values.

use cadence_sched::eevdf::{FairStorage, DEQUEUE_SLEEP, ENQUEUE_WAKEUP};
use cadence_sched::timeline::Timeline;
use cadence_sched::{FairRq, FairTunables, RtPrioArray};
use std::hint::black_box;
use std::time::Instant;

fn per_op(mut f: impl FnMut(u64)) -> f64 {
    // Calibrate the round count to ~50 ms.
    let mut rounds = 64u64;
    loop {
        let t0 = Instant::now();
        for i in 0..rounds {
            f(i);
        }
        let ns = t0.elapsed().as_nanos() as f64;
        if ns > 50e6 || rounds > 1 << 26 {
            return ns / rounds as f64;
        }
        rounds *= 4;
    }
}

fn fair_queue(n: u32) -> FairRq<u32> {
    let mut rq = FairRq::new(FairTunables::default());
    assert!(rq.adopt_storage(&mut FairStorage::with_capacity(n as usize + 1)), "fresh storage");
    for k in 0..n {
        rq.attach_new(k, 1024).expect("attach");
        rq.enqueue(k, ENQUEUE_WAKEUP).expect("enqueue");
    }
    let first = rq.pick_next().expect("pick");
    rq.set_next(first).expect("set_next");
    rq
}

fn main() {
    let ns: Vec<u32> = match std::env::args().nth(1) {
        Some(list) => list.split(',').map(|s| s.trim().parse().expect("N,N,...")).collect(),
        None => vec![10, 100, 1_000, 10_000, 100_000],
    };
    println!(
        "{:>8} {:>16} {:>16} {:>18} {:>14} {:>13} {:>15}",
        "N", "fair sched ns", "fair sleep+wake", "timeline ins+rem", "timeline pick", "rt yield", "rt sleep+wake"
    );
    for &n in &ns {
        let mut rq = fair_queue(n);
        let sched = per_op(|_| {
            let c = rq.curr().expect("curr");
            rq.update_curr(100_000);
            rq.put_prev(c).expect("put_prev");
            let next = rq.pick_next().expect("pick");
            rq.set_next(next).expect("set_next");
        });
        let mut rq = fair_queue(n);
        let sleep = per_op(|i| {
            // A queued entity other than the running one sleeps and wakes.
            let c = rq.curr().unwrap_or(0);
            let k = (i as u32).wrapping_mul(2_654_435_761) % n.max(1);
            let k = if k == c { (k + 1) % n.max(1) } else { k };
            if k != c {
                rq.dequeue(k, DEQUEUE_SLEEP).expect("dequeue");
                rq.enqueue(k, ENQUEUE_WAKEUP).expect("enqueue");
            }
        });
        let mut t: Timeline<u32> = Timeline::with_capacity(n as usize + 1);
        for k in 0..n {
            t.try_insert(u64::from(k) * 1000, k, u64::from(k.wrapping_mul(7919) % 100_000)).expect("room");
        }
        let ins_rem = per_op(|i| {
            let d = (i % 1_000_003) * 997;
            t.try_insert(d, u32::MAX, i % 100_000).expect("room");
            t.remove(d, u32::MAX).expect("present");
        });
        let pick = per_op(|i| {
            black_box(t.pick(|v| v <= 50_000 + i % 7));
        });
        let mut rt: RtPrioArray<u32> = RtPrioArray::new();
        for k in 0..n {
            rt.enqueue(k, 50, false).expect("enqueue");
            rt.set_migratory(k, k % 10 == 0).expect("queued");
        }
        let rt_yield = per_op(|_| {
            let head = rt.pick_highest().expect("head");
            rt.requeue(head, false).expect("requeue");
            black_box(rt.pick_highest());
        });
        let rt_sleep = per_op(|i| {
            let k = (i % u64::from(n)) as u32;
            rt.dequeue(k).expect("dequeue");
            rt.enqueue(k, 50, false).expect("enqueue");
        });
        println!("{:>8} {:>16.0} {:>16.0} {:>18.0} {:>14.0} {:>13.0} {:>15.0}", n, sched, sleep, ins_rem, pick, rt_yield, rt_sleep);
    }
}
