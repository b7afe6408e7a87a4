//! In-kernel tests of core scheduling (on `-smp 4,cores=2,threads=2`): Linux's
//! `tools/testing/selftests/sched/cs_prctl_test.c` ported in spirit, and a stress test checked
//! by the trace checker.

use super::coresched::{self, prctl};
use super::task::{SpawnOptions, Task};
use super::{spawn, wait};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::core_sched::*;
use cadence_sched::{Errno, Policy};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const MS: u64 = 1_000_000;

fn get(pid: u32) -> u64 {
    prctl(PR_SCHED_CORE_GET as u64, pid as u64, PIDTYPE_PID as u64, 8).expect("GET")
}

fn sleeper(opts: SpawnOptions, stop: &Arc<AtomicBool>) -> Arc<Task> {
    let stop = stop.clone();
    spawn(opts, move || {
        while !stop.load(Ordering::Relaxed) {
            super::sleep_ns(2 * MS);
        }
        0
    })
    .expect("spawn")
}

/// Is this `-smp 4,cores=2,threads=2` (CPUs 0-1 and 2-3 siblings)? Prints the skip if not.
fn two_cores_of_two_threads() -> bool {
    let fits = crate::percpu::nr_cpus() == 4
        && coresched::siblings(1) == cadence_sched::CpuMask::from_u64(0b11)
        && coresched::siblings(3) == cadence_sched::CpuMask::from_u64(0b1100);
    if !fits {
        crate::kprint!("(needs -smp 4,cores=2,threads=2: skipped) ");
    }
    fits
}

/// A task pinned to `cpu` that spins (preemptible; a sleeping one's wakeups would place it
/// anew), or with `nap` sleeps 1 ms at a time, until `stop`; once `go` is set it marks each CPU
/// it runs on in `seen` (a bit each).
fn looper(
    name: &'static str,
    cpu: u32,
    nap: bool,
    go: &Arc<AtomicBool>,
    stop: &Arc<AtomicBool>,
    seen: Option<&Arc<AtomicU64>>,
) -> Arc<Task> {
    let (go, stop, seen) = (go.clone(), stop.clone(), seen.cloned());
    spawn(SpawnOptions::new(name).pin(cpu), move || {
        while !stop.load(Ordering::Acquire) {
            if let (true, Some(seen)) = (go.load(Ordering::Acquire), seen.as_ref()) {
                let cpu = crate::percpu::cpu_id();
                if seen.fetch_or(1 << cpu, Ordering::Relaxed) & (1 << cpu) == 0 {
                    let _ = FIRST_SEEN_NS[cpu as usize % FIRST_SEEN_NS.len()].compare_exchange(
                        0,
                        crate::time::uptime_ns(),
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                }
            }
            if nap {
                super::sleep_ns(MS);
            } else {
                core::hint::spin_loop();
            }
        }
        0
    })
    .expect("spawn")
}

/// Runs `f` with this task pinned to `cpu` (then restores its affinity). A placement test keeps
/// itself (it wakes every few ms to poll) and its helpers on a CPU whose load cannot make the
/// balancer move the tasks under test: one extra task woken on a CPU of the scenario gave it
/// one task more than its neighbour, and the balancer moved a task the test meant only a
/// cookie rule to move (traced: `init` woken on CPU 3 beside `a3` and `b3`, and CPU 1 pulled
/// `a3`; about one run in ten).
fn pinned_to<R>(cpu: u32, f: impl FnOnce() -> R) -> R {
    let me = super::current();
    let before = me.affinity();
    super::api::sched_setaffinity(me.tid, cadence_sched::CpuMask::single(cpu as usize)).expect("pin the test task");
    // The move happens at the next switch, asked for by the call: at the latest a tick away.
    let deadline = crate::time::uptime_ns() + 1000 * MS;
    while crate::percpu::cpu_id() != cpu {
        assert!(crate::time::uptime_ns() < deadline, "the test task did not move to CPU {} within a second", cpu);
        super::sleep_ns(MS / 10);
    }
    let r = f();
    super::api::sched_setaffinity(me.tid, before).expect("restore the test task's affinity");
    r
}

/// When a [`looper`] with `seen` first ran on each CPU (ns of uptime; 0: not yet), for the
/// trace a failing placement test prints ([`PlacementTrace`]).
static FIRST_SEEN_NS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// The scheduler's trace (switches, wakeups, migrations, forced idle) over a placement test,
/// so that a failure shows how a task reached the CPU it should not have: the path (a
/// wakeup's placement, a pull, a steal) and what the siblings ran then. Placement races are
/// rare (a few runs in a hundred, mostly on a busy host); without the trace one failure says
/// only that it happened.
struct PlacementTrace {
    tracing: bool,
}

impl PlacementTrace {
    fn start() -> Self {
        for t in &FIRST_SEEN_NS {
            t.store(0, Ordering::Relaxed);
        }
        use cadence_trace::event::EventType as E;
        let mask = [E::SchedSwitch, E::SchedWakeup, E::SchedWakeupNew, E::SchedMigrateTask, E::CoreForceIdle, E::SetAffinity]
            .iter()
            .fold(0, |m, e| m | e.bit());
        crate::trace::set_event_mask(mask);
        // About a second of these events per CPU: the rings are made here, under TCG, at each run.
        let tracing = crate::trace::start(20_000).is_ok();
        PlacementTrace { tracing }
    }

    /// Prints the trace of every CPU from 5 ms before a looper first ran on `cpu` to 0.5 ms
    /// after (nothing if it never did).
    fn print_before_first_run_on(&self, cpu: u32) {
        let at = FIRST_SEEN_NS[cpu as usize % FIRST_SEEN_NS.len()].load(Ordering::Relaxed);
        if self.tracing && at != 0 {
            crate::trace::stop();
            crate::kprintln!("\n-- trace: first run on CPU {} at {} ns --", cpu, at);
            crate::trace::print_window(&[0, 1, 2, 3], at.saturating_sub(5 * MS), at + MS / 2);
        }
    }
}

impl Drop for PlacementTrace {
    fn drop(&mut self) {
        if self.tracing {
            crate::trace::stop();
            crate::trace::clear();
        }
        crate::trace::set_event_mask(cadence_trace::event::EventType::ALL_MASK);
    }
}

/// Gives `from` a new cookie (CREATE) and, if `to` names tasks, shares it with them through
/// this task (SHARE_FROM, then SHARE_TO each), as `bench coresched` does. This task keeps the
/// cookie until it takes another one.
fn give_cookie(from: &Task, to: &[&Arc<Task>]) {
    prctl(PR_SCHED_CORE_CREATE as u64, from.tid as u64, PIDTYPE_PID as u64, 0).expect("create");
    if to.is_empty() {
        return;
    }
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, from.tid as u64, PIDTYPE_PID as u64, 0).expect("share from");
    for t in to {
        prctl(PR_SCHED_CORE_SHARE_TO as u64, t.tid as u64, PIDTYPE_PID as u64, 0).expect("share to");
    }
}

/// The end of a placement test: no cookied task started without the core-wide check, and no
/// cookie outlived its tasks.
fn assert_checked_and_cookies_freed() {
    assert_eq!(coresched::unchecked_picks(), 0, "a cookied task was started without the core-wide check");
    assert_eq!(coresched::COOKIES.lock().live(), 0);
}

#[test_case]
fn cs_prctl_cases_match_linux() {
    let stop = Arc::new(AtomicBool::new(false));
    // A "process" (session + process group leader) with two threads and a child process in
    // its process group, and an unrelated process in another group.
    let (s2, stop2) = (stop.clone(), stop.clone());
    let ids = Arc::new(crate::sync::IrqLock::new(Vec::new()));
    let ids2 = ids.clone();
    let leader = spawn(SpawnOptions::new("cs-parent"), move || {
        let _ = crate::tty::setsid();
        let t1 = sleeper(SpawnOptions::new("cs-thread").thread(), &s2);
        let t2 = sleeper(SpawnOptions::new("cs-thread").thread(), &s2);
        let child = sleeper(SpawnOptions::new("cs-child"), &s2);
        ids2.lock().extend([t1.tid, t2.tid, child.tid]);
        while !stop2.load(Ordering::Relaxed) {
            super::sleep_ns(2 * MS);
        }
        for t in [t1, t2, child] {
            let _ = wait(t.tid);
        }
        0
    })
    .expect("leader");
    let other = sleeper(SpawnOptions::new("cs-other"), &stop);
    // Made before the test task takes a cookie (children inherit cookies).
    let plain = sleeper(SpawnOptions::new("cs-plain"), &stop);
    while ids.lock().len() < 3 {
        super::sleep_ns(MS);
    }
    let (t1, t2, child) = {
        let v = ids.lock();
        (v[0], v[1], v[2])
    };
    let me = super::current_tid();
    // Cookies start at 0.
    for pid in [leader.tid, t1, t2, child, other.tid, me] {
        assert_eq!(get(pid), 0, "pid {} starts without a cookie", pid);
    }
    // CREATE over the thread group: the leader and its threads share one new cookie; the child
    // process (another thread group) does not get it.
    prctl(PR_SCHED_CORE_CREATE as u64, leader.tid as u64, PIDTYPE_TGID as u64, 0).expect("CREATE tgid");
    let c1 = get(leader.tid);
    assert_ne!(c1, 0);
    assert_eq!((get(t1), get(t2)), (c1, c1));
    assert_eq!(get(child), 0);
    // CREATE over the process group reaches every member, with one new cookie.
    prctl(PR_SCHED_CORE_CREATE as u64, leader.tid as u64, PIDTYPE_PGID as u64, 0).expect("CREATE pgid");
    let c2 = get(leader.tid);
    assert!(c2 != 0 && c2 != c1);
    for pid in [t1, t2, child] {
        assert_eq!(get(pid), c2, "pgid member {}", pid);
    }
    assert_eq!(get(other.tid), 0, "outside the process group");
    // SHARE_FROM: the caller takes the target's cookie; SHARE_TO: gives its own.
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, child as u64, PIDTYPE_PID as u64, 0).expect("SHARE_FROM");
    assert_eq!(get(me), c2);
    prctl(PR_SCHED_CORE_SHARE_TO as u64, other.tid as u64, PIDTYPE_PID as u64, 0).expect("SHARE_TO");
    assert_eq!(get(other.tid), c2);
    // CREATE for one pid only.
    prctl(PR_SCHED_CORE_CREATE as u64, other.tid as u64, PIDTYPE_PID as u64, 0).expect("CREATE pid");
    let c3 = get(other.tid);
    assert!(c3 != 0 && c3 != c2);
    // Errors: invalid command, non-zero uaddr, bad types, GET with a bad scope or address,
    // no such task.
    assert_eq!(prctl(PR_SCHED_CORE_MAX as u64, 0, 0, 0), Err(Errno::EINVAL));
    assert_eq!(prctl(PR_SCHED_CORE_CREATE as u64, other.tid as u64, 0, 8), Err(Errno::EINVAL));
    assert_eq!(prctl(PR_SCHED_CORE_CREATE as u64, other.tid as u64, 3, 0), Err(Errno::EINVAL));
    assert_eq!(prctl(PR_SCHED_CORE_GET as u64, other.tid as u64, PIDTYPE_TGID as u64, 8), Err(Errno::EINVAL));
    assert_eq!(prctl(PR_SCHED_CORE_GET as u64, other.tid as u64, PIDTYPE_PID as u64, 7), Err(Errno::EINVAL));
    assert_eq!(prctl(PR_SCHED_CORE_GET as u64, other.tid as u64, PIDTYPE_PID as u64, 0), Err(Errno::EFAULT));
    assert_eq!(prctl(PR_SCHED_CORE_SHARE_FROM as u64, other.tid as u64, PIDTYPE_PGID as u64, 0), Err(Errno::EINVAL));
    assert_eq!(prctl(PR_SCHED_CORE_CREATE as u64, 999_999, 0, 0), Err(Errno::ESRCH));
    // Back to no cookie for the test task (share from a task without one).
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).expect("reset");
    assert_eq!(get(me), 0);
    stop.store(true, Ordering::SeqCst);
    for t in [leader, other, plain] {
        wait(t.tid).expect("reap");
    }
    assert_eq!(coresched::COOKIES.lock().live(), 0, "cookies freed with their last task");
    assert_eq!(coresched::unchecked_picks(), 0, "a cookied task was started without the core-wide check");
}

use crate::testing::Rng;

#[test_case]
fn stress_never_runs_different_cookies_on_siblings() {
    // 200,000 switches (the bar, ~2.5 min under TCG); `make test-stress` (kernel option
    // `test_stress`) runs 1,000,000. Earlier versions found rare overlaps here: a wakeup racing
    // a cookie change (fixed: `with_task_rq` under `params`), a pending cookie missed after
    // re-locking, and the lock-free queued-cookie count dipping to 0 while a running cookied
    // task was requeued (fixed: `requeue_locked` holds a count).
    let target: u64 = if crate::testing::stress_enabled() { 1_000_000 } else { 200_000 };
    crate::trace::set_event_mask(cadence_trace::event::EventType::CoreSwitch.bit() | cadence_trace::event::EventType::CoreForceIdle.bit());
    // Rings sized for the whole run (a switch and about as many forced-idle events per switch
    // at most, per CPU), so that the check covers at least 90% of the switches (asserted).
    let ncpus = crate::percpu::nr_cpus() as u64;
    crate::trace::start((2 * target / ncpus.max(1)).max(200_000) as usize).expect("trace start");
    let stop = Arc::new(AtomicBool::new(false));
    let switches0: u64 = crate::percpu::online_cpus().map(|c| super::rq_of(c.cpu_id).nr_switches.load(Ordering::Relaxed)).sum();
    let forced0: u64 = crate::percpu::online_cpus().map(|c| super::rq_of(c.cpu_id).forced_idle_ns.load(Ordering::Relaxed)).sum();
    // Three cookie groups of four tasks and four cookie-0 tasks: random bursts and sleeps,
    // random migrations (affinity changes) and cookie changes.
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let stop = stop.clone();
        let policy = if i % 7 == 3 { Policy::Fifo } else { Policy::Normal };
        let opts = SpawnOptions::new("cs-stress").policy(policy, if policy == Policy::Fifo { 10 } else { 0 }, 0).stack_size(16 * 1024);
        tasks.push(
            spawn(opts, move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((i + 1) * 0x1000_0001));
                while !stop.load(Ordering::Relaxed) {
                    let burst = 20_000 + rng.next_u64() % 300_000;
                    let until = crate::time::uptime_ns() + burst;
                    while crate::time::uptime_ns() < until {
                        core::hint::spin_loop();
                    }
                    super::sleep_ns(50_000 + rng.next_u64() % 400_000);
                    if rng.next_u64().is_multiple_of(16) {
                        let mask = (rng.next_u64() % 15) + 1;
                        let _ = super::api::sched_setaffinity(0, cadence_sched::CpuMask::from_u64(mask));
                    }
                }
                0
            })
            .expect("stress task"),
        );
    }
    // Made before the test task takes cookies (children inherit them).
    let reset = sleeper(SpawnOptions::new("cs-plain"), &stop);
    // Cookies: groups {0..4}, {4..8}, {8..12}; 12..16 keep none. Each leader gets a new
    // cookie; the test task takes it (SHARE_FROM) and gives it to the members (SHARE_TO).
    for g in 0..3 {
        prctl(PR_SCHED_CORE_CREATE as u64, tasks[g * 4].tid as u64, PIDTYPE_PID as u64, 0).expect("create");
    }
    // Share within groups: the test task takes each leader's cookie and shares it to members.
    for g in 0..3 {
        prctl(PR_SCHED_CORE_SHARE_FROM as u64, tasks[g * 4].tid as u64, PIDTYPE_PID as u64, 0).expect("share from");
        for k in 1..4 {
            prctl(PR_SCHED_CORE_SHARE_TO as u64, tasks[g * 4 + k].tid as u64, PIDTYPE_PID as u64, 0).expect("share to");
        }
    }
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, reset.tid as u64, PIDTYPE_PID as u64, 0).expect("reset");
    // Run, changing cookies now and then, until `target` switches happened.
    let mut rng = Rng(12345);
    // Generous: under TCG a loaded host stretches emulated time.
    let deadline = crate::time::uptime_ns() + target / 200_000 * 300_000 * MS;
    loop {
        super::sleep_ns(100 * MS);
        let switches: u64 =
            crate::percpu::online_cpus().map(|c| super::rq_of(c.cpu_id).nr_switches.load(Ordering::Relaxed)).sum::<u64>() - switches0;
        if switches >= target || crate::time::uptime_ns() > deadline {
            break;
        }
        let t = &tasks[(rng.next_u64() % 12) as usize];
        let _ = prctl(PR_SCHED_CORE_CREATE as u64, t.tid as u64, PIDTYPE_PID as u64, 0);
    }
    let switches: u64 =
        crate::percpu::online_cpus().map(|c| super::rq_of(c.cpu_id).nr_switches.load(Ordering::Relaxed)).sum::<u64>() - switches0;
    // Stop first: a snapshot taken while tracing drops events that arrive during its pause.
    crate::trace::stop();
    let report = crate::trace::check_coresched();
    crate::trace::set_event_mask(cadence_trace::event::EventType::ALL_MASK);
    stop.store(true, Ordering::SeqCst);
    for t in tasks.iter().chain(core::iter::once(&reset)) {
        wait(t.tid).expect("reap");
    }
    let forced: u64 =
        crate::percpu::online_cpus().map(|c| super::rq_of(c.cpu_id).forced_idle_ns.load(Ordering::Relaxed)).sum::<u64>() - forced0;
    let report = report.expect("checkable trace");
    let checked_pct = report.switches * 100 / switches.max(1);
    crate::kprint!("({} switches, {} of them checked ({}%), {}) ", switches, report.switches, checked_pct, report);
    assert!(switches >= target, "only {} switches", switches);
    assert!(checked_pct >= 90, "the check covered {} of {} switches ({}%), under 90%", report.switches, switches, checked_pct);
    assert_eq!(coresched::unchecked_picks(), 0, "a cookied task was started without the core-wide check");
    for c in crate::percpu::online_cpus() {
        assert_eq!(super::rq_of(c.cpu_id).nr_cookied.load(Ordering::SeqCst), 0, "cpu {} still counts queued cookied tasks", c.cpu_id);
    }
    if let Some(v) = report.violations.first() {
        crate::trace::print_window(&[v.cpu_a as u32, v.cpu_b as u32], v.start_ns.saturating_sub(3_000_000), v.end_ns + 200_000);
    }
    assert_eq!(report.violations.len(), 0, "first violation: {:?}", report.violations.first());
    assert!(forced > 0 && report.forced_idle_ns > 0, "forced idle was not accounted");
    assert_eq!(coresched::COOKIES.lock().live(), 0);
}

/// `prctl` allocates (task lists, registry entries) only with interrupts on: the cookie
/// registry's lock leaves them on (`mm::atomic_alloc`'s contract; `bench coresched` once
/// counted 133 allocations under it).
#[test_case]
fn prctl_allocates_nothing_with_interrupts_off() {
    let stop = Arc::new(AtomicBool::new(false));
    // Made before the test task takes a cookie: sharing from it clears the test task's.
    let plain = sleeper(SpawnOptions::new("cs-aa-plain"), &stop);
    let a = sleeper(SpawnOptions::new("cs-aa-a"), &stop);
    let b = sleeper(SpawnOptions::new("cs-aa-b"), &stop);
    let me = super::current_tid();
    let round = || {
        prctl(PR_SCHED_CORE_CREATE as u64, a.tid as u64, PIDTYPE_PID as u64, 0).expect("CREATE");
        prctl(PR_SCHED_CORE_SHARE_FROM as u64, a.tid as u64, PIDTYPE_PID as u64, 0).expect("SHARE_FROM");
        prctl(PR_SCHED_CORE_SHARE_TO as u64, b.tid as u64, PIDTYPE_PID as u64, 0).expect("SHARE_TO");
        assert_eq!(get(b.tid), get(me));
        prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).expect("clear");
    };
    round(); // warm-up
    crate::mm::atomic_alloc::reset();
    for _ in 0..5 {
        round();
    }
    let mut report = alloc::string::String::new();
    let _ = crate::mm::atomic_alloc::report(&mut report, crate::sched::reserve::stats());
    let total = crate::mm::atomic_alloc::total();
    stop.store(true, Ordering::SeqCst);
    for t in [plain, a, b] {
        wait(t.tid).expect("reap");
    }
    assert_eq!(get(me), 0);
    assert_eq!(total, 0, "allocations with interrupts off:\n{}", report);
    assert_eq!(coresched::COOKIES.lock().live(), 0, "cookies freed with their last task");
}

/// An RT task that cannot start on either CPU it may use (each one's SMT sibling runs a task
/// of another cookie and cannot be switched off: it spins with preemption disabled) stays
/// where it is until a sibling makes room. It used to be handed back and forth: each CPU,
/// waiting for its sibling, counted as busy above every task and pushed it to the other, which
/// did the same (14,000 round trips in 400 ms of a chaos run, interrupts off, starving the
/// siblings of their run-queue locks). `balance::rt_placement_mask` keeps it off CPUs whose
/// sibling runs another cookie.
#[test_case]
fn rt_task_is_not_bounced_between_cpus_its_siblings_keep_busy() {
    if !two_cores_of_two_threads() {
        return;
    }
    let now = crate::time::uptime_ns;
    // The hogs spin, not preemptible, from `go` until 100 ms after the later of them started;
    // that one wakes the RT task. So it wakes with both its CPUs' siblings busy, however late
    // the host runs either hog's vCPU (a fixed wake time 20 ms after `go` failed about one run
    // in ten: the host can leave a vCPU 10-20 ms without running it, and a hog not spinning
    // yet left its sibling free). Nothing else can run on CPUs 0 and 2 meanwhile except tasks
    // of the hogs' cookie (this task, cookie 0, may wait too: the hogs end on their own).
    let go = Arc::new(AtomicBool::new(false));
    let spinning = Arc::new(AtomicU64::new(0));
    let hog_end = Arc::new(AtomicU64::new(u64::MAX));
    let rt_wq = Arc::new(super::wait::WaitQueue::new());
    let hog = |cpu: u32| {
        let (go, spinning, hog_end, rt_wq) = (go.clone(), spinning.clone(), hog_end.clone(), rt_wq.clone());
        spawn(SpawnOptions::new("cs-hog").pin(cpu), move || {
            while !go.load(Ordering::Acquire) {
                super::sleep_ns(MS);
            }
            let _no_preempt = super::preempt_disable();
            if spinning.fetch_add(1, Ordering::AcqRel) == 1 {
                hog_end.store(crate::time::uptime_ns() + 100 * MS, Ordering::Release);
                rt_wq.wake_all();
            }
            while crate::time::uptime_ns() < hog_end.load(Ordering::Acquire) {
                core::hint::spin_loop();
            }
            0
        })
        .expect("hog")
    };
    let (h1, h3) = (hog(1), hog(3));
    let stop = Arc::new(AtomicBool::new(false));
    let plain = sleeper(SpawnOptions::new("cs-plain"), &stop);
    // One cookie for both hogs; this task takes it to share it and then drops it again.
    prctl(PR_SCHED_CORE_CREATE as u64, h1.tid as u64, PIDTYPE_PID as u64, 0).expect("create");
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, h1.tid as u64, PIDTYPE_PID as u64, 0).expect("share from");
    prctl(PR_SCHED_CORE_SHARE_TO as u64, h3.tid as u64, PIDTYPE_PID as u64, 0).expect("share to");
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).expect("reset");
    // No cookie, SCHED_FIFO 50, allowed on CPUs 0 and 2 (the hogs' siblings).
    let ran_at = Arc::new(AtomicU64::new(0));
    let (ran_at2, spinning2, rt_wq2) = (ran_at.clone(), spinning.clone(), rt_wq.clone());
    let opts = SpawnOptions::new("cs-rt").policy(Policy::Fifo, 50, 0).affinity(cadence_sched::CpuMask::from_u64(0b101));
    let rt = spawn(opts, move || {
        rt_wq2.wait_until(|| spinning2.load(Ordering::Acquire) >= 2);
        ran_at2.store(crate::time::uptime_ns(), Ordering::Release);
        0
    })
    .expect("rt task");
    super::sleep_ns(5 * MS);
    let moves_before = rt.stats.nr_migrations.load(Ordering::Relaxed);
    let start = now() + 5 * MS;
    while now() < start {
        core::hint::spin_loop();
    }
    go.store(true, Ordering::Release);
    for t in [&rt, &h1, &h3] {
        wait(t.tid).expect("reap");
    }
    let moves = rt.stats.nr_migrations.load(Ordering::Relaxed) - moves_before;
    stop.store(true, Ordering::Release);
    wait(plain.tid).expect("reap");
    let (ran, end) = (ran_at.load(Ordering::Acquire), hog_end.load(Ordering::Acquire));
    crate::kprint!("(ran {} us after the hogs ended, {} moves) ", ran.saturating_sub(end) / 1000, moves);
    assert!(
        ran >= end,
        "the RT task ran while both its CPUs' siblings ran another cookie ({} us before the hogs ended)",
        end.saturating_sub(ran) / 1000
    );
    // Its wakeup may place it once; a bounced task moved thousands of times here.
    assert!(moves <= 2, "the RT task moved {} times while it could not run anywhere", moves);
    assert_eq!(coresched::COOKIES.lock().live(), 0);
}

/// A forced-idle CPU takes a task of its sibling's cookie that waits on another CPU (Linux's
/// `sched_core_balance`, [`coresched::steal_cookie_task`]). Cookie A: `a0` pinned to CPU 0,
/// `a3` on CPU 3 and allowed on CPUs 1 and 3; cookie B: two tasks pinned to CPU 1, one to
/// CPU 3. Whenever core 0 runs `a0`, CPU 1 (B tasks only) is forced idle, and `a3` waits on
/// CPU 3 whenever its B task runs. The queues hold 1, 2, 0 and 2 tasks and nothing but `a3`
/// may move, so the load balancer has no reason to take `a3` to CPU 1 (it counts tasks, not
/// cookies) and `a3` never sleeps, so no wakeup places it: only the steal gets it there. This
/// task and its helper live on CPU 2 meanwhile ([`pinned_to`]).
#[test_case]
fn forced_idle_cpu_takes_a_waiting_task_of_its_siblings_cookie() {
    if !two_cores_of_two_threads() {
        return;
    }
    // This task and `plain` on CPU 2, which nothing else uses (see [`pinned_to`]).
    pinned_to(2, forced_idle_cpu_takes_a_waiting_task_of_its_siblings_cookie_on_cpu_2);
}

fn forced_idle_cpu_takes_a_waiting_task_of_its_siblings_cookie_on_cpu_2() {
    let now = crate::time::uptime_ns;
    let go = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    // The CPUs `a3` was seen running on (a bit each).
    let a3_cpus = Arc::new(AtomicU64::new(0));
    let hog = |name, cpu, seen| looper(name, cpu, false, &go, &stop, seen);
    let a0 = hog("cs-a0", 0, None);
    let a3 = hog("cs-a3", 3, Some(&a3_cpus));
    let b1 = hog("cs-b1", 1, None);
    let b1b = hog("cs-b1b", 1, None);
    let b3 = hog("cs-b3", 3, None);
    let plain = sleeper(SpawnOptions::new("cs-plain").pin(2), &stop);
    give_cookie(&a0, &[&a3]);
    give_cookie(&b1, &[&b1b, &b3]);
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).expect("reset");
    super::api::sched_setaffinity(a3.tid, cadence_sched::CpuMask::from_u64(0b1010)).expect("affinity");
    let steals_before = coresched::steals();
    let trace = PlacementTrace::start();
    go.store(true, Ordering::Release);
    // Until `a3` has run on CPU 1, at most a second.
    let deadline = now() + 1000 * MS;
    while a3_cpus.load(Ordering::Relaxed) & 0b10 == 0 && now() < deadline {
        super::sleep_ns(MS);
    }
    stop.store(true, Ordering::Release);
    for t in [&a0, &a3, &b1, &b1b, &b3, &plain] {
        wait(t.tid).expect("reap");
    }
    let steals = coresched::steals() - steals_before;
    crate::kprint!("({} steals) ", steals);
    assert_ne!(
        a3_cpus.load(Ordering::Relaxed) & 0b10,
        0,
        "a3 never ran beside a0 on CPU 1 (ran on {:#b})",
        a3_cpus.load(Ordering::Relaxed)
    );
    if steals == 0 {
        trace.print_before_first_run_on(1);
    }
    assert!(steals > 0, "a3 reached CPU 1, but no forced-idle CPU took a task of its sibling's cookie");
    assert_checked_and_cookies_freed();
}

/// Tasks are neither pulled nor woken onto a CPU whose SMT sibling runs another cookie
/// (Linux's `task_hot` and `__select_idle_cpu` cookie rules: [`super::balance`]'s
/// `cookie_hot` and `select_cpu_fair`). Cookie A: `a0` spins pinned to CPU 0, so CPU 1 is
/// idle beside cookie A throughout. Cookie B: a spinner and a sleeper (1 ms naps), allowed on
/// CPUs 1 and 2, start on CPU 2, which they share with a cookie-less hog (CPU 3 has another).
/// CPU 1 is the only idle CPU and CPU 2 holds three tasks: without the rules the balancer
/// pulls the spinner there and the sleeper's wakeups place it there, and each would then run
/// only by forcing `a0` off its core.
#[test_case]
fn another_cookie_is_neither_pulled_nor_woken_beside_a_running_cookie() {
    if !two_cores_of_two_threads() {
        return;
    }
    // This task and `plain` beside `h3` on CPU 3, where the B tasks may not go (see
    // [`pinned_to`]).
    pinned_to(3, another_cookie_is_neither_pulled_nor_woken_beside_a_running_cookie_on_cpu_3);
}

fn another_cookie_is_neither_pulled_nor_woken_beside_a_running_cookie_on_cpu_3() {
    let now = crate::time::uptime_ns;
    let go = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    // The CPUs the B tasks were seen running on (a bit each), once they have their cookie.
    let b_cpus = Arc::new(AtomicU64::new(0));
    let task = |name, cpu, nap, seen| looper(name, cpu, nap, &go, &stop, seen);
    let a0 = task("cs-a0", 0, false, None);
    let h2 = task("cs-h2", 2, false, None);
    let h3 = task("cs-h3", 3, false, None);
    let b_spin = task("cs-b-spin", 2, false, Some(&b_cpus));
    let b_nap = task("cs-b-nap", 2, true, Some(&b_cpus));
    let plain = sleeper(SpawnOptions::new("cs-plain").pin(3), &stop);
    give_cookie(&a0, &[]);
    give_cookie(&b_spin, &[&b_nap]);
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).expect("reset");
    // Our own cookie B is dropped at our next switch: until then cookie B runs here, wherever
    // this is, and the B tasks may rightly be placed beside us.
    super::sleep_ns(2 * MS);
    for b in [&b_spin, &b_nap] {
        super::api::sched_setaffinity(b.tid, cadence_sched::CpuMask::from_u64(0b110)).expect("affinity");
    }
    let naps_before = b_nap.stats.nr_wakeups.load(Ordering::Relaxed);
    let trace = PlacementTrace::start();
    go.store(true, Ordering::Release);
    let deadline = now() + 300 * MS;
    while now() < deadline && b_cpus.load(Ordering::Relaxed) & 0b10 == 0 {
        super::sleep_ns(5 * MS);
    }
    stop.store(true, Ordering::Release);
    let naps = b_nap.stats.nr_wakeups.load(Ordering::Relaxed) - naps_before;
    for t in [&a0, &h2, &h3, &b_spin, &b_nap, &plain] {
        wait(t.tid).expect("reap");
    }
    crate::kprint!("({} wakeups of the sleeper) ", naps);
    if b_cpus.load(Ordering::Relaxed) & 0b10 != 0 {
        trace.print_before_first_run_on(1);
    }
    assert_eq!(
        b_cpus.load(Ordering::Relaxed) & 0b10,
        0,
        "a task of cookie B ran on CPU 1 beside cookie A (B ran on {:#b})",
        b_cpus.load(Ordering::Relaxed)
    );
    assert!(naps >= 20, "the sleeper woke only {} times: the wakeup rule was hardly exercised", naps);
    assert_checked_and_cookies_freed();
}

/// A task woken while its previous CPU's core runs another cookie, and no idle CPU fits it,
/// is queued on its waker's CPU if that core runs its own cookie (`balance::select_cpu_fair`'s
/// cookie-aware wake-affine fallback). Cookie A: two hogs pinned to CPU 0, one to CPU 1 and
/// a waker `w` pinned to CPU 0 that wakes `x` every 200 µs of its own running; cookie B: hogs
/// pinned to CPUs 2 and 3. `x` (cookie A, allowed on CPUs 0 and 2) starts on CPU 2. CPU 0
/// holds three tasks and CPU 2 two, so the balancer has no reason to move `x` to CPU 0, and
/// no CPU is idle: without the fallback every wakeup queues `x` on CPU 2 again, where it runs
/// only when core 1 turns to cookie A.
#[test_case]
fn task_woken_beside_another_cookie_is_queued_on_its_wakers_core() {
    if !two_cores_of_two_threads() {
        return;
    }
    let now = crate::time::uptime_ns;
    let go = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let x_cpus = Arc::new(AtomicU64::new(0));
    let wq = Arc::new(super::wait::WaitQueue::new());
    let hog = |name, cpu| looper(name, cpu, false, &go, &stop, None);
    let a0 = hog("cs-a0", 0);
    let a0b = hog("cs-a0b", 0);
    let a1 = hog("cs-a1", 1);
    let b2 = hog("cs-b2", 2);
    let b3 = hog("cs-b3", 3);
    let w = {
        let (go, stop, rounds, wq) = (go.clone(), stop.clone(), rounds.clone(), wq.clone());
        spawn(SpawnOptions::new("cs-w").pin(0), move || {
            while !stop.load(Ordering::Acquire) {
                if go.load(Ordering::Acquire) {
                    rounds.fetch_add(1, Ordering::AcqRel);
                    wq.wake_all();
                }
                let until = crate::time::uptime_ns() + 200_000;
                while crate::time::uptime_ns() < until {
                    core::hint::spin_loop();
                }
            }
            wq.wake_all();
            0
        })
        .expect("waker")
    };
    let x = {
        let (go, stop, rounds, wq, x_cpus) = (go.clone(), stop.clone(), rounds.clone(), wq.clone(), x_cpus.clone());
        spawn(SpawnOptions::new("cs-x").pin(2), move || {
            let mut seen = 0;
            while !stop.load(Ordering::Acquire) {
                wq.wait_until(|| rounds.load(Ordering::Acquire) != seen || stop.load(Ordering::Acquire));
                seen = rounds.load(Ordering::Acquire);
                if go.load(Ordering::Acquire) {
                    x_cpus.fetch_or(1 << crate::percpu::cpu_id(), Ordering::Relaxed);
                }
            }
            0
        })
        .expect("wakee")
    };
    let plain = sleeper(SpawnOptions::new("cs-plain"), &stop);
    give_cookie(&a0, &[&a0b, &a1, &w, &x]);
    give_cookie(&b2, &[&b3]);
    prctl(PR_SCHED_CORE_SHARE_FROM as u64, plain.tid as u64, PIDTYPE_PID as u64, 0).expect("reset");
    super::sleep_ns(2 * MS); // our own cookie B goes at this switch
    super::api::sched_setaffinity(x.tid, cadence_sched::CpuMask::from_u64(0b101)).expect("affinity");
    go.store(true, Ordering::Release);
    let deadline = now() + 500 * MS;
    while now() < deadline && x_cpus.load(Ordering::Relaxed) & 0b1 == 0 {
        super::sleep_ns(5 * MS);
    }
    stop.store(true, Ordering::Release);
    let woken = rounds.load(Ordering::Relaxed);
    for t in [&a0, &a0b, &a1, &b2, &b3, &w, &x, &plain] {
        wait(t.tid).expect("reap");
    }
    crate::kprint!("({} wakeups) ", woken);
    assert_ne!(x_cpus.load(Ordering::Relaxed) & 0b1, 0, "x never ran on its waker's CPU 0 (ran on {:#b})", x_cpus.load(Ordering::Relaxed));
    assert_checked_and_cookies_freed();
}
