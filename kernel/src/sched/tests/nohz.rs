//! Tickless idle (`sched::nohz`): idle CPUs take few timer interrupts, sleeps on them wake on
//! time, their idle time is counted, the kick spreads tasks piled on one CPU, and the lockup
//! and hung-task detectors leave tickless CPUs alone. With `nohz=off` the tickless
//! expectations are skipped and the rest still holds.

use super::{hog, stop_and_reap, MS};
use crate::interrupts::{count_of, IrqKind};
use crate::sched::task::SpawnOptions;
use crate::sched::{api, lockup, nohz, online_mask, spawn, wait};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::CpuMask;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A CPU other than `avoid` (the online CPU after it).
fn other_cpu(avoid: u32) -> u32 {
    let online = online_mask();
    online.iter_wrap(avoid as usize + 1).find(|&c| c != avoid as usize).unwrap_or(avoid as usize) as u32
}

/// Over 500 ms with one CPU spinning, every other CPU takes a handful of timer interrupts
/// (a tick would be 125 at 250 Hz) while the spinner's takes its ticks, and the idle CPUs'
/// idle time still grows with the time (it is charged only when they leave idle). A vCPU the
/// host does not run skips ticks (they do not burst when it runs again), so the ticking CPUs
/// are held to a fifth of their ticks only: far above the tickless ones' ten.
#[test_case]
fn idle_cpus_take_few_timer_interrupts_while_one_cpu_spins() {
    let me = crate::percpu::cpu_id();
    let busy = other_cpu(me);
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = hog("spin", SpawnOptions::new("spin").pin(busy), &stop);
    // Let the idle CPUs reach their idle loops and stop their ticks.
    crate::sched::sleep_ns(100 * MS);
    let cpus: Vec<u32> = online_mask().iter().map(|c| c as u32).collect();
    let loc = |c: u32| count_of(c, IrqKind::Timer);
    let before: Vec<(u64, u64)> = cpus.iter().map(|&c| (loc(c), crate::sched::idle_ns(c))).collect();
    let start = crate::time::uptime_ns();
    crate::sched::sleep_ns(500 * MS);
    let elapsed = crate::time::uptime_ns() - start;
    let after: Vec<(u64, u64)> = cpus.iter().map(|&c| (loc(c), crate::sched::idle_ns(c))).collect();
    stop_and_reap(&stop, &[spinner]);
    let period = crate::timer::tick_period_ns();
    let ticks = elapsed / period;
    let irqs: Vec<u64> = cpus.iter().enumerate().map(|(i, _)| after[i].0 - before[i].0).collect();
    crate::kprint!("(timer interrupts in {} ms by cpu: {:?}, busy cpu {}) ", elapsed / MS, irqs, busy);
    for (i, &c) in cpus.iter().enumerate() {
        let irqs = after[i].0 - before[i].0;
        let idle = after[i].1 - before[i].1;
        if c == busy {
            assert!(irqs >= ticks / 5, "cpu {c} spinning took {irqs} timer interrupts in {} ms ({ticks} ticks)", elapsed / MS);
            continue;
        }
        // This CPU ran the test a little; the others nothing but stray kernel threads.
        assert!(idle >= elapsed * 8 / 10, "cpu {c}: idle {} ms of {} ms", idle / MS, elapsed / MS);
        if nohz::enabled() {
            assert!(irqs <= 10, "idle cpu {c} took {irqs} timer interrupts in {} ms (tick: {ticks})", elapsed / MS);
        } else {
            assert!(irqs >= ticks / 5, "nohz=off: idle cpu {c} took only {irqs} timer interrupts in {} ms", elapsed / MS);
        }
    }
}

/// Sleeps of a task alone on an otherwise idle CPU, whose tick stops between them, end on time:
/// never early, and the median lateness under a millisecond (the timer, not the tick, wakes it).
#[test_case]
fn sleeps_on_a_tickless_cpu_wake_on_time() {
    const ROUNDS: usize = 21;
    let cpu = other_cpu(crate::percpu::cpu_id());
    let stops_before = crate::timer::tick_counters(cpu)[0];
    let late = Arc::new([const { AtomicU64::new(u64::MAX) }; ROUNDS]);
    let t = {
        let late = late.clone();
        spawn(SpawnOptions::new("sleeper").pin(cpu), move || {
            for slot in late.iter() {
                let deadline = crate::time::uptime_ns() + 10 * MS;
                crate::sched::sleep_until(deadline);
                slot.store(crate::time::uptime_ns().saturating_sub(deadline), Ordering::Relaxed);
            }
            0
        })
        .expect("spawn sleeper")
    };
    assert_eq!(wait(t.tid), Ok(0));
    let mut lateness: Vec<u64> = late.iter().map(|l| l.load(Ordering::Relaxed)).collect();
    lateness.sort_unstable();
    let median = lateness[ROUNDS / 2];
    crate::kprint!("(median lateness {} µs) ", median / 1000);
    assert!(median < MS, "median lateness {} µs (all: {:?} µs)", median / 1000, lateness.iter().map(|l| l / 1000).collect::<Vec<_>>());
    if nohz::enabled() {
        let stops = crate::timer::tick_counters(cpu)[0] - stops_before;
        assert!(stops >= ROUNDS as u64 / 2, "cpu {cpu} stopped its tick {stops} times in {ROUNDS} sleeps of 10 ms");
    }
}

/// N + 1 spinners piled on one CPU, then allowed everywhere: within ~100 ms every CPU runs one.
/// The other CPUs are idle and tickless, so the busy CPU's kick brings them work
/// (`nohz::idle_balance` on their behalf, or their own newly-idle balance once woken); with
/// `nohz=off` their own ticks pull.
#[test_case]
fn kicked_idle_balance_spreads_tasks_piled_on_one_cpu() {
    let online = online_mask();
    let n = online.count() as usize;
    let me = crate::percpu::cpu_id();
    let pile = other_cpu(me);
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..=n).map(|_| hog("spin", SpawnOptions::new("spin").pin(pile), &stop)).collect();
    // The others go idle and tickless meanwhile (the pile's kicks find nothing movable).
    crate::sched::sleep_ns(30 * MS);
    let moved_before: u64 = online.iter().map(|c| nohz::counters(c as u32)[2]).sum();
    let kicks_before = nohz::kicks();
    for t in &spinners {
        api::sched_setaffinity(t.tid, online).expect("widen");
    }
    let start = crate::time::uptime_ns();
    let spread = || spinners.iter().map(|t| t.cpu() as usize).collect::<CpuMask>() == online;
    while !spread() && crate::time::uptime_ns() - start < 1000 * MS {
        crate::sched::sleep_ns(2 * MS);
    }
    let took = crate::time::uptime_ns() - start;
    let cpus: Vec<u32> = spinners.iter().map(|t| t.cpu()).collect();
    let kicks = nohz::kicks() - kicks_before;
    let moved: u64 = online.iter().map(|c| nohz::counters(c as u32)[2]).sum::<u64>() - moved_before;
    stop_and_reap(&stop, &spinners);
    crate::kprint!("(spread in {} ms, {} kicks, {} kicked balances moved) ", took / MS, kicks, moved);
    assert!(spread(), "after {} ms the spinners are on cpus {:?} ({} kicks)", took / MS, cpus, kicks);
    assert!(took <= 100 * MS, "spreading took {} ms ({} kicks)", took / MS, kicks);
    // Which path moves the spinners varies since the hierarchical balancer (issue 61): the
    // pile's kicks (the kicked CPU balancing on behalf of the others), or a CPU's own
    // newly-idle pass once something wakes it (this test's 2 ms sleeps, the affinity change's
    // IPIs); both pull one task per idle CPU as soon as they run. The bound above is the
    // property; the kicks and the kicked balances that moved are printed.
}

/// Two CPU hogs on the SMT siblings of one core, then allowed everywhere, beside an idle core:
/// neither ever waits, so only an active balance moves one (Linux's stopper push: the idle
/// core's balance fails on running tasks until `need_active_balance`, then the busy CPU's next
/// switch pushes its task there). Within a second the hogs are on two cores. Skipped without
/// SMT siblings.
#[test_case]
fn active_balance_moves_a_hog_off_a_busy_core_to_an_idle_one() {
    let online = online_mask();
    let Some(core) = crate::sched::balance::smt_siblings(0).map(|m| m & online).filter(|m| m.count() == 2) else {
        crate::kprint!("(no SMT siblings: skipped) ");
        return;
    };
    if (online & !core).count() < 2 {
        crate::kprint!("(no second core: skipped) ");
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = core.iter().map(|c| hog("spin", SpawnOptions::new("spin").pin(c as u32), &stop)).collect();
    crate::sched::sleep_ns(20 * MS);
    for t in &hogs {
        api::sched_setaffinity(t.tid, online).expect("widen");
    }
    let start = crate::time::uptime_ns();
    let apart = || hogs.iter().any(|t| !core.contains(t.cpu() as usize));
    while !apart() && crate::time::uptime_ns() - start < 1000 * MS {
        crate::sched::sleep_ns(2 * MS);
    }
    let took = crate::time::uptime_ns() - start;
    let cpus: Vec<u32> = hogs.iter().map(|t| t.cpu()).collect();
    let moved = apart();
    // The pushes, counted where Linux counts them (`alb_pushed` of the pushing CPU's domain).
    let pushed: u64 = online.iter().flat_map(|c| crate::sched::load_balance::sd_stats(c as u32)).map(|st| st.alb[2]).sum();
    stop_and_reap(&stop, &hogs);
    crate::kprint!("(one hog moved to another core in {} ms, alb_pushed {}) ", took / MS, pushed);
    assert!(!moved || pushed >= 1, "a hog moved without an active balance");
    assert!(moved, "after {} ms both hogs are still on core {:?}: cpus {:?}", took / MS, core, cpus);
}

/// Idle tickless CPUs are neither hard lockups (their tick count stands still) nor make hung
/// tasks: with a 1 s threshold (reports after 2 s) and 3 s of quiet, nothing is reported, and
/// a hung-task scan with a 1 s timeout finds nothing.
#[test_case]
fn tickless_cpus_are_not_reported_as_locked_up() {
    let (thresh, panic, hung_panic) = (lockup::watchdog_thresh_s(), lockup::lockup_panic(), lockup::hung_panic());
    lockup::set_watchdog_thresh_s(1);
    let before = lockup::REPORTS.load(Ordering::SeqCst);
    // A sleeper on another CPU: its wakeups come from its timer alone.
    let cpu = other_cpu(crate::percpu::cpu_id());
    let sleeper = spawn(SpawnOptions::new("sleeper").pin(cpu), || {
        for _ in 0..3 {
            crate::sched::sleep_ns(1000 * MS);
        }
        0
    })
    .expect("spawn sleeper");
    crate::sched::sleep_ns(3200 * MS);
    assert_eq!(wait(sleeper.tid), Ok(0));
    lockup::set_hung_panic(false);
    let hung = lockup::scan(1);
    lockup::set_hung_panic(hung_panic);
    let reports = lockup::REPORTS.load(Ordering::SeqCst) - before;
    lockup::set_watchdog_thresh_s(thresh);
    lockup::set_lockup_panic(panic);
    assert_eq!(reports, 0, "lockups reported with the idle CPUs tickless");
    assert_eq!(hung, 0, "hung tasks found with the idle CPUs tickless");
}

/// `WC_PULL` (issue 61): a fair spinner allowed everywhere, preempted on its CPU by a SCHED_FIFO
/// spinner pinned there, starts waiting while other CPUs idle tickless: an idle CPU is asked to
/// pull it and does, long before the FIFO task ends (50 ms). Without the ask the spinner waited
/// for a kick from the busy CPU's tick, rate-limited and backed off (16–60 ms idle beside waiting
/// tasks in `tools/bench-balance.sh`'s scenarios).
#[test_case]
fn an_idle_cpu_pulls_a_task_preempted_beside_it() {
    let online = online_mask();
    let me = crate::percpu::cpu_id();
    let busy = other_cpu(me);
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = hog("spin", SpawnOptions::new("spin").pin(busy), &stop);
    crate::sched::sleep_ns(30 * MS);
    // Allowed everywhere while it runs: it stays where it is (nothing waits there).
    api::sched_setaffinity(spinner.tid, online).expect("widen");
    crate::sched::sleep_ns(10 * MS);
    let kicks_before = crate::sched::load_balance::wc_kicks();
    let start = crate::time::uptime_ns();
    let fifo = spawn(SpawnOptions::new("fifo").policy(cadence_sched::Policy::Fifo, 60, 0).pin(busy), move || {
        let end = crate::time::uptime_ns() + 50 * MS;
        while crate::time::uptime_ns() < end {
            core::hint::spin_loop();
        }
        0
    })
    .expect("fifo");
    let mut moved_at = None;
    while crate::time::uptime_ns() - start < 45 * MS {
        if spinner.cpu() != busy {
            moved_at = Some(crate::time::uptime_ns() - start);
            break;
        }
        crate::sched::sleep_ns(MS / 2);
    }
    let kicks = crate::sched::load_balance::wc_kicks() - kicks_before;
    assert_eq!(wait(fifo.tid), Ok(0));
    stop_and_reap(&stop, &[spinner]);
    crate::kprint!("(pulled after {:?} us, {} asks) ", moved_at.map(|t| t / 1000), kicks);
    assert!(kicks > 0, "no idle CPU was asked to pull");
    assert!(moved_at.is_some(), "the preempted spinner stayed on cpu {busy} beside idle CPUs for 45 ms");
}
