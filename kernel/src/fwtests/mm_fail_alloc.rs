//! In-kernel tests of `framework::mm::fail_alloc` (they run in the kernel crate's harness).

use framework::mm::fail_alloc::*;

#[test_case]
fn fail_alloc_follows_times_and_interval() {
    let saved = Settings::current();
    let before = injected();
    Settings { probability: 100, interval: 1, times: 2, verbose: 0 }.apply();
    assert!(should_fail("test") && should_fail("test"));
    assert!(!should_fail("test"), "times=2 allows two failures");
    assert_eq!(injected() - before, 2);
    Settings { probability: 100, interval: 3, times: -1, verbose: 0 }.apply();
    let pattern: alloc::vec::Vec<bool> = (0..6).map(|_| should_fail("test")).collect();
    assert_eq!(pattern, [false, false, true, false, false, true], "every 3rd call");
    Settings { probability: 0, interval: 1, times: -1, verbose: 0 }.apply();
    assert!(!(0..100).any(|_| should_fail("test")), "probability 0 never fails");
    saved.apply();
}

#[test_case]
fn injected_failures_return_enomem_and_leak_nothing() {
    use crate::sched::{self, group};
    let saved = Settings::current();
    let tasks = crate::sched::task::all().len();
    let groups = group::all().len();
    Settings { probability: 100, interval: 1, times: -1, verbose: 0 }.apply();
    let spawned = sched::spawn(sched::task::SpawnOptions::new("never"), || 0);
    let grp = group::create("failinj", group::ROOT_GROUP, 100, group::GroupKind::Manual);
    let cookie = sched::coresched::prctl(cadence_sched::core_sched::PR_SCHED_CORE_CREATE as u64, 0, 0, 0);
    let tty = crate::tty::open(crate::tty::MAX_VT);
    saved.apply();
    assert!(matches!(spawned, Err(sched::SpawnError::NoMemory)), "{:?}", spawned.map(|t| t.tid));
    assert_eq!(grp.map(|g| g.id), Err(cadence_sched::Errno::ENOMEM));
    if sched::coresched::smt_present() {
        assert_eq!(cookie, Err(cadence_sched::Errno::ENOMEM));
    }
    assert_eq!(tty.map(|t| t.id), Err(cadence_sched::Errno::ENOMEM));
    assert_eq!(crate::sched::task::all().len(), tasks, "no task left behind");
    assert_eq!(group::all().len(), groups, "no group left behind");
    // And with injection off, the same calls work again.
    let t = sched::spawn(sched::task::SpawnOptions::new("after"), || 0).expect("spawn after injection");
    assert_eq!(sched::wait(t.tid), Ok(0));
}
