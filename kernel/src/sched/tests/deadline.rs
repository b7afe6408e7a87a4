//! SCHED_DEADLINE: admission, the overrun signal, throttling to the bandwidth.

use super::{hog, runtime, stop_and_reap, MS};
use crate::sched::api;
use crate::sched::task::SpawnOptions;
use crate::sched::{spawn, wait};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::consts::*;
use cadence_sched::{CpuMask, Errno, Policy, SchedAttr};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

fn dl_attr(runtime: u64, deadline: u64, period: u64) -> SchedAttr {
    SchedAttr { policy: SCHED_DEADLINE, slice_ns: runtime, deadline_ns: deadline, period_ns: period, ..Default::default() }
}

/// SCHED_DEADLINE through `sched_setattr`: Linux's errors for bad parameters, a priority,
/// a narrow affinity and an over-committed root domain; `sched_getattr` reports the
/// parameters; leaving the class and exiting give the bandwidth back.
#[test_case]
fn deadline_setattr_checks_admits_and_releases() {
    use crate::sched::class::deadline::admitted;
    let (bw0, n0) = admitted();
    let stop = Arc::new(AtomicBool::new(false));
    let sleeper = {
        let stop = stop.clone();
        spawn(SpawnOptions::new("dl-sleeper"), move || {
            while !stop.load(Ordering::Relaxed) {
                crate::sched::sleep_ns(MS);
            }
            0
        })
        .expect("spawn")
    };
    let t = sleeper.tid;
    assert_eq!(api::sched_setattr(t, &dl_attr(20 * MS, 10 * MS, 0)), Err(Errno::EINVAL), "runtime > deadline");
    assert_eq!(api::sched_setattr(t, &dl_attr(MS, 10 * MS, 5 * MS)), Err(Errno::EINVAL), "deadline > period");
    assert_eq!(api::sched_setattr(t, &dl_attr(512, 10 * MS, 0)), Err(Errno::EINVAL), "runtime < 1024 ns");
    assert_eq!(api::sched_setattr(t, &dl_attr(MS, 50_000, 0)), Err(Errno::EINVAL), "period < 100 us");
    assert_eq!(api::sched_setattr(t, &SchedAttr { rt_priority: 5, ..dl_attr(MS, 10 * MS, 0) }), Err(Errno::EINVAL), "priority");
    assert_eq!(api::sched_setscheduler(t, SCHED_DEADLINE, 0), Err(Errno::EINVAL), "no parameters through setscheduler");
    let online = crate::sched::online_mask();
    if online.count() > 1 {
        api::sched_setaffinity(t, CpuMask::from_u64(1 << online.first().unwrap_or(0))).expect("narrow");
        assert_eq!(api::sched_setattr(t, &dl_attr(MS, 10 * MS, 0)), Err(Errno::EPERM), "affinity narrower than the root domain");
        api::sched_setaffinity(t, online).expect("widen");
    }
    let cpus = online.count() as u64;
    api::sched_setattr(t, &dl_attr(9 * MS, 10 * MS, 0)).expect("0.9 of a CPU fits");
    let a = api::sched_getattr(t).expect("getattr");
    let params = cadence_sched::deadline::DlParams { runtime: 9 * MS, deadline: 10 * MS, period: 10 * MS, flags: 0 };
    assert_eq!((a.policy, a.dl), (Policy::Deadline, Some(params)));
    assert_eq!(admitted().1, n0 + 1);
    // Narrowing a deadline task's affinity: EBUSY.
    if online.count() > 1 {
        assert_eq!(api::sched_setaffinity(t, CpuMask::from_u64(1 << online.first().unwrap_or(0))), Err(Errno::EBUSY));
    }
    // Fill the rest with sleepers of 0.9 each until EBUSY: the root domain holds 0.95 per CPU.
    let mut more = Vec::new();
    let busy = loop {
        let stop = stop.clone();
        let x = spawn(SpawnOptions::new("dl-filler"), move || {
            while !stop.load(Ordering::Relaxed) {
                crate::sched::sleep_ns(MS);
            }
            0
        })
        .expect("spawn");
        let r = api::sched_setattr(x.tid, &dl_attr(9 * MS, 10 * MS, 0));
        more.push(x);
        if r.is_err() || more.len() > 64 {
            break r;
        }
    };
    assert_eq!(busy, Err(Errno::EBUSY), "admission never refused ({} tasks of 0.9 on {} CPUs)", more.len() + 1, cpus);
    assert_eq!(more.len() as u64, cpus, "0.95 x {} CPUs admits {} tasks of 0.9", cpus, cpus);
    // Leaving the class gives the bandwidth back.
    api::sched_setscheduler(t, SCHED_NORMAL, 0).expect("back to normal");
    assert_eq!(admitted().1, n0 + more.len() - 1);
    stop_and_reap(&stop, &more);
    stop_and_reap(&stop, &[sleeper]);
    assert_eq!(admitted(), (bw0, n0), "exits gave the bandwidth back");
}

/// `SCHED_FLAG_DL_OVERRUN`: a deadline task that runs out of runtime gets SIGXCPU; without
/// the flag it does not. `SCHED_FLAG_RECLAIM` is refused (no GRUB) and `sched_getattr`
/// reports the flag with the parameters.
#[test_case]
fn deadline_overrun_flag_sends_sigxcpu() {
    use cadence_sched::consts::{SCHED_FLAG_DL_OVERRUN, SCHED_FLAG_RECLAIM};
    let reclaim = SchedAttr { flags: SCHED_FLAG_RECLAIM, ..dl_attr(MS, 10 * MS, 0) };
    assert_eq!(crate::sched::api::sched_setattr(0, &reclaim), Err(cadence_sched::Errno::EOPNOTSUPP));
    let run = |flags: u64| {
        let attr = SchedAttr { flags, ..dl_attr(MS, 10 * MS, 0) }.validate().expect("valid");
        let t = spawn(SpawnOptions::new("dl-overrun").attr(attr), move || {
            // Spins until it has run out of its 1 ms runtime twice (each time throttled until
            // its next period), counting the SIGXCPUs, then once more for one still pending
            // (a host that holds back the hrtick can end the spin before it is seen).
            let throttled = || crate::sched::class::deadline::nr_throttled(&crate::sched::current());
            let give_up = crate::time::uptime_ns() + 500 * MS;
            let mut seen = 0;
            while throttled() < 2 && crate::time::uptime_ns() < give_up {
                if crate::sched::signal::take_pending(crate::sched::signal::SIGXCPU) {
                    seen += 1;
                }
                core::hint::spin_loop();
            }
            seen += crate::sched::signal::take_pending(crate::sched::signal::SIGXCPU) as i32;
            let reported = crate::sched::api::sched_getattr(0).ok().and_then(|a| a.dl).map_or(u64::MAX, |d| d.flags);
            if reported != flags & SCHED_FLAG_DL_OVERRUN {
                return 100;
            }
            // One signal per time it ran out (signals pending together count once).
            match throttled() {
                n if n < 2 => 300,
                n if seen as u64 > n => 200,
                _ => seen,
            }
        })
        .expect("spawn");
        wait(t.tid).expect("reap")
    };
    let with = run(SCHED_FLAG_DL_OVERRUN);
    assert!(
        (1..100).contains(&with),
        "with SCHED_FLAG_DL_OVERRUN: {} SIGXCPUs (100: getattr lost the flag; 200: more than throttles; 300: not throttled twice in 500 ms)",
        with
    );
    assert_eq!(run(0), 0, "SIGXCPU without SCHED_FLAG_DL_OVERRUN");
}

/// A deadline task that wants more than its runtime is throttled each period (runtime 2 ms
/// per 20 ms: 20 ms of CPU take about 200 ms), and a fair task on the same CPU gets the rest.
#[test_case]
fn deadline_task_is_throttled_to_its_bandwidth() {
    let cpu = crate::sched::online_mask().first().unwrap_or(0) as u32;
    let stop = Arc::new(AtomicBool::new(false));
    let fair = hog("dl-fair", SpawnOptions::new("dl-fair").affinity(CpuMask::from_u64(1 << cpu)), &stop);
    let done_at = Arc::new(AtomicU64::new(0));
    let d = done_at.clone();
    let attr = dl_attr(2 * MS, 20 * MS, 0).validate().expect("valid");
    let t0 = crate::time::uptime_ns();
    let dl = spawn(SpawnOptions::new("dl-greedy").attr(attr), move || {
        let until = crate::sched::current_cputime_ns() + 20 * MS;
        while crate::sched::current_cputime_ns() < until {
            for _ in 0..1000 {
                core::hint::spin_loop();
            }
        }
        d.store(crate::time::uptime_ns(), Ordering::SeqCst);
        0
    })
    .expect("spawn");
    let throttled_seen = {
        // Sampled while it runs (its state goes with it at exit).
        let mut n = 0;
        while done_at.load(Ordering::SeqCst) == 0 {
            n = n.max(crate::sched::class::deadline::nr_throttled(&dl));
            crate::sched::sleep_ns(5 * MS);
        }
        n
    };
    wait(dl.tid).expect("reap");
    let took = done_at.load(Ordering::SeqCst) - t0;
    let fair_ran = runtime(&fair);
    stop_and_reap(&stop, &[fair]);
    assert!(throttled_seen >= 5, "throttled {} times for 20 ms of CPU at 2 ms per 20 ms", throttled_seen);
    assert!(took >= 120 * MS, "20 ms of CPU at 2 ms per 20 ms took only {} ms", took / MS);
    assert!(fair_ran > 0, "the fair task never ran beside the throttled deadline task");
    crate::kprint!("(20 ms of CPU in {} ms, throttled {}) ", took / MS, throttled_seen);
}
