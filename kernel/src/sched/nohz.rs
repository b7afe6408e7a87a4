//! Tickless idle (Linux's `CONFIG_NO_HZ_IDLE`, `kernel/time/tick-sched.c`) and the nohz
//! idle-balance kick (`kernel/sched/fair.c`: `nohz.idle_cpus_mask`, `nohz_balancer_kick`,
//! `kick_ilb`, `_nohz_idle_balance`). Boot `nohz=off` keeps every CPU ticking.
//!
//! # The tick
//! * **Stop** ([`idle_stop_tick`]): the idle loop, interrupts off, about to halt with nothing to
//!   run (no queued task, no wakeup on its way, no reschedule or kick pending, no group queue
//!   throttled by CFS bandwidth: their unthrottling is the tick's) stops the CPU's tick
//!   (`framework::timer::tick_stop`) unless another of its timers comes no later than the next
//!   tick would. It then sleeps until its earliest timer (sleeps, hrtick, timerfds, POSIX
//!   timers...) or an interrupt. While its RT period is running (RT time charged in it), the
//!   tick still fires once at the period's end (Linux's RT period timer), whose accounting
//!   ends the period. The CPU joins [`idle_cpus`] and, if it had the timekeeping duty, gives it
//!   up.
//! * **Restart** ([`idle_exit`], from `__schedule` on a CPU whose tick is stopped: the idle task
//!   is being switched away from, from the idle loop or from an interrupt's exit): the tick
//!   restarts on its grid, at the first tick period boundary after now (Linux's
//!   `tick_nohz_restart`), and the CPU leaves [`idle_cpus`]. Nothing else needs catching up:
//!   jiffies are derived from the clock (`sched::debug`, `times`), the idle time is charged at
//!   the switch (`update_curr`) and read with the stretch in progress (`sched::idle_ns`), the
//!   load average catches up on the windows nobody sampled (`accounting::sample_load`).
//! * **The timekeeping duty** (Linux's `tick_do_timer_cpu`; [`do_timer_cpu`]): one ticking CPU
//!   folds the load averages every 5 s and checks the other CPUs for hard lockups once a
//!   second. CPU 0 holds it at boot; a CPU that stops its tick gives it up, and the next CPU
//!   whose tick runs takes it. With every CPU tickless nobody holds it, and there is nothing to
//!   do: no CPU runs anything, and no tick stalls (the detector skips tickless CPUs).
//!
//! # The kick
//! A tickless CPU runs no periodic balance. So a busy CPU's tick that finds two or more tasks
//! queued while some CPU is tickless idle ([`tick`]; at most one kick a tick period, machine
//! wide, longer after a balance that moved nothing) sends a reschedule IPI to the first CPU of
//! [`idle_cpus`] (one load per mask word) with its kick flag set. That CPU's idle loop then
//! balances ([`idle_balance`]): for each tickless idle CPU in turn, starting after itself, the
//! balance that CPU's idle loop would run (an RT or deadline pull, else one fair task), on its
//! behalf (a CPU that gets a task is woken by the move's reschedule IPI), then for itself; it
//! stops when it has work of its own or no CPU has two tasks queued any more.
//!
//! **Guarantee**: a task waiting on a CPU while another CPU it may run on is idle waits at
//! most a few ticks: the idle CPU is either ticking (its own balancing) or tickless, and then
//! the busy CPU's tick (it has two tasks queued) kicks a balance for it within one tick period
//! of the last kick, or [`BALANCE_BACKOFF_TICKS`] after a balance that found nothing movable
//! (everything waiting pinned or running). RT and deadline tasks are moved first at their
//! wakeups and switches (push and pull, `balance`); the kick is the same safety net the idle
//! CPUs' ticks were.
//!
//! **Cost**: nothing on a busy CPU's tick beyond a few atomic loads and, when it kicks, one
//! scan of the mask's words. A kicked balance visits the tickless CPUs, each pull taking the
//! fair snapshot (O(CPUs)): O(tickless × CPUs) when nothing can move (all pinned), at most
//! once every [`BALANCE_BACKOFF_TICKS`]; when tasks move it ends as soon as no CPU has two
//! queued.
//!
//! # Lock order
//! The stop reads the run queue under its lock, then releases it before `tick_stop`, which
//! takes the framework's tick and timer-queue locks (leaves). Everything else here is atomics.

use super::{balance, class, rq_of, rt_limits, update_curr};
use crate::percpu::PerCpuVar;
use cadence_cmdline::BootParam;
use cadence_sched::{AtomicCpuMask, CpuMask};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Whether idle CPUs stop their tick (boot `nohz=on|off`).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Boot options (`cmdline`).
pub static BOOT_PARAMS: &[BootParam] = &[BootParam {
    usage: "nohz=on|off",
    help: "stop the periodic tick of idle CPUs (tickless idle, default on; off: every CPU ticks at hz, as Linux's nohz=off)",
    set: |v| match v {
        Some("on") => {
            ENABLED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Some("off") => {
            ENABLED.store(false, Ordering::Relaxed);
            Ok(())
        }
        _ => Err("needs on or off".into()),
    },
}];

/// No CPU has the timekeeping duty (Linux's `TICK_DO_TIMER_NONE`).
const NONE: u32 = u32::MAX;
/// The CPU whose tick does the machine-wide work (Linux's `tick_do_timer_cpu`).
static DO_TIMER_CPU: AtomicU32 = AtomicU32::new(0);
/// Ticks run with the duty, whichever CPU had it: the hard-lockup detector's clock.
static DO_TIMER_TICKS: AtomicU64 = AtomicU64::new(0);
/// CPUs idle with their tick stopped (Linux's `nohz.idle_cpus_mask`), and how many.
static IDLE_CPUS: AtomicCpuMask = AtomicCpuMask::new();
static NR_IDLE: AtomicU32 = AtomicU32::new(0);
/// CPUs with two or more tasks queued (`accounting::update_counts`): the idle balance stops
/// when there are none.
static NR_OVERLOADED: AtomicU32 = AtomicU32::new(0);
/// No kick before this time (ns; Linux's `nohz.next_balance`).
static NEXT_BALANCE: AtomicU64 = AtomicU64::new(0);
/// Kicks sent since boot.
static KICKS: AtomicU64 = AtomicU64::new(0);

/// Tick periods before the next kick after an idle balance that moved nothing (everything
/// waiting is pinned, or runs): Linux backs its intervals off too.
pub const BALANCE_BACKOFF_TICKS: u64 = balance::BALANCE_INTERVAL_TICKS;

/// One CPU's tickless state (its own CPU writes it, except `kick`, set by kickers).
pub struct CpuNohz {
    /// The idle loop stopped the tick and the CPU is in [`IDLE_CPUS`] (Linux's
    /// `rq->nohz_tick_stopped`).
    stopped: AtomicBool,
    /// An idle balance for the tickless CPUs is asked of this CPU (Linux's
    /// `NOHZ_BALANCE_KICK`); the kicker that sets it sends the IPI.
    kick: AtomicBool,
    /// Idle-loop halts that asked to stop the tick (Linux's `idle_calls`).
    idle_calls: AtomicU64,
    /// Idle balances this CPU ran when kicked, and those that moved a task.
    ilb_runs: AtomicU64,
    ilb_moved: AtomicU64,
    /// CPU had two or more tasks queued at its last count (for [`NR_OVERLOADED`]).
    overloaded: AtomicBool,
}

static CPUS: PerCpuVar<CpuNohz> = PerCpuVar::new();

/// Creates CPU `cpu`'s state (bring-up, from `sched::init_cpu`).
pub(super) fn init_cpu(cpu: u32) {
    CPUS.init(
        cpu,
        CpuNohz {
            stopped: AtomicBool::new(false),
            kick: AtomicBool::new(false),
            idle_calls: AtomicU64::new(0),
            ilb_runs: AtomicU64::new(0),
            ilb_moved: AtomicU64::new(0),
            overloaded: AtomicBool::new(false),
        },
    );
}

/// The CPUs idle with their tick stopped now.
pub fn idle_cpus() -> CpuMask {
    IDLE_CPUS.load(Ordering::Acquire)
}

/// The CPU with the timekeeping duty (`None`: every CPU is tickless).
pub fn do_timer_cpu() -> Option<u32> {
    Some(DO_TIMER_CPU.load(Ordering::Relaxed)).filter(|&c| c != NONE)
}

/// Kicks sent since boot.
pub fn kicks() -> u64 {
    KICKS.load(Ordering::Relaxed)
}

/// CPU `cpu`'s counters: [idle-loop calls to stop the tick, idle balances run when kicked,
/// those that moved a task].
pub fn counters(cpu: u32) -> [u64; 3] {
    CPUS.get(cpu).map_or([0; 3], |c| [&c.idle_calls, &c.ilb_runs, &c.ilb_moved].map(|v| v.load(Ordering::Relaxed)))
}

/// Some CPU has two tasks or more queued (Linux's `rd->overloaded`): a newly idle CPU has
/// something to look for.
pub fn overloaded() -> bool {
    NR_OVERLOADED.load(Ordering::Acquire) != 0
}

/// Drops an idle-balance request of this CPU (an offline CPU balances for no one).
pub(super) fn drop_kick() {
    CPUS.this().kick.store(false, Ordering::Release);
}

/// Whether an idle balance is asked of this CPU (the idle loop checks it before halting).
pub(super) fn kicked() -> bool {
    CPUS.this().kick.load(Ordering::Acquire)
}

/// `cpu`'s queues now hold `nr` tasks (`accounting::update_counts`, its run-queue lock held):
/// keeps [`NR_OVERLOADED`].
pub(super) fn note_nr_running(cpu: u32, nr: u32) {
    let Some(me) = CPUS.get(cpu) else { return };
    let over = nr >= 2;
    if me.overloaded.load(Ordering::Relaxed) != over {
        me.overloaded.store(over, Ordering::Relaxed);
        if over {
            NR_OVERLOADED.fetch_add(1, Ordering::AcqRel);
        } else {
            NR_OVERLOADED.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The idle loop, interrupts off, about to halt: stops this CPU's tick if nothing needs it
/// (see the module doc). Does nothing with `nohz=off`.
pub(super) fn idle_stop_tick(cpu: u32) {
    if !enabled() {
        return;
    }
    let me = CPUS.this();
    me.idle_calls.fetch_add(1, Ordering::Relaxed);
    let rq = rq_of(cpu);
    // Lock-free first: a forced-idle CPU (core scheduling) halts with tasks queued, often.
    let busy = || {
        !rq.ready.load(Ordering::Acquire)
            || rq.need_resched.load(Ordering::Acquire)
            || me.kick.load(Ordering::Acquire)
            || rq.nr_running.load(Ordering::Acquire) != 0
            || rq.wake_pending.load(Ordering::Acquire) != 0
            || rq.lb_retry.load(Ordering::Relaxed)
    };
    if busy() {
        return;
    }
    let wake_by = {
        let mut g = rq.lock.lock();
        if busy() || g.nr_queued() != 0 || g.bw_nr_throttled != 0 {
            return;
        }
        // What the tick would do first: charge the time, advance the RT period.
        let now = crate::time::uptime_ns();
        update_curr(&mut g, now);
        if rt_limits::check_throttle(&mut g, now) {
            drop(g);
            super::flag_need_resched(cpu);
            return;
        }
        // The RT period still runs (RT time charged in it): its end must be seen.
        g.rt_bw.period_start.map(|start| start.saturating_add(rt_limits::rt_period_us() * 1000))
    };
    if !crate::timer::tick_stop(wake_by) {
        return;
    }
    if !me.stopped.swap(true, Ordering::Relaxed) {
        // An offline CPU (`hotplug`) balances for no one: never the one kicked.
        if super::online_mask().contains(cpu as usize) {
            IDLE_CPUS.set(cpu as usize, Ordering::Release);
            NR_IDLE.fetch_add(1, Ordering::AcqRel);
        }
        // A ticking CPU takes the duty at its next tick.
        let _ = DO_TIMER_CPU.compare_exchange(cpu, NONE, Ordering::AcqRel, Ordering::Relaxed);
    }
}

/// This CPU leaves tickless idle (`__schedule` on a CPU whose tick the idle loop stopped,
/// interrupts off): its tick restarts on its grid and it leaves [`IDLE_CPUS`]. A kick still
/// pending is dropped, as Linux drops one that finds its CPU busy: the busy CPU's next tick
/// kicks another.
pub(super) fn idle_exit(cpu: u32) {
    let me = CPUS.this();
    if !me.stopped.load(Ordering::Relaxed) {
        return;
    }
    if IDLE_CPUS.clear(cpu as usize, Ordering::AcqRel) {
        NR_IDLE.fetch_sub(1, Ordering::AcqRel);
    }
    me.kick.store(false, Ordering::Release);
    me.stopped.store(false, Ordering::Relaxed);
    crate::timer::tick_restart();
}

/// From every tick, after the scheduler's own work (interrupt context): the timekeeping duty
/// and, on a CPU with `nr_running` ≥ 2, the kick.
pub(super) fn tick(cpu: u32, now: u64, nr_running: u32) {
    // A stopped tick's single expiry (the RT period's end) does not take the duty.
    let stopped = CPUS.this().stopped.load(Ordering::Relaxed);
    if !stopped && DO_TIMER_CPU.load(Ordering::Relaxed) == NONE {
        let _ = DO_TIMER_CPU.compare_exchange(NONE, cpu, Ordering::AcqRel, Ordering::Relaxed);
    }
    if DO_TIMER_CPU.load(Ordering::Relaxed) == cpu {
        do_timer(cpu, now);
    }
    if enabled() && (nr_running >= 2 || (nr_running == 1 && llc_busy_beside(cpu))) {
        kick(cpu, now);
    }
}

/// Another CPU of `cpu`'s LLC is busy too (Linux's `nohz_balancer_kick`: `nr_busy_cpus > 1` in
/// `sd_llc_shared`): an idle CPU elsewhere may take one of them, and with only running tasks
/// to move, only a balance that fails long enough gets there (active balance). Without it, two
/// CPU hogs on the SMT siblings of one core stayed there beside an idle core.
fn llc_busy_beside(cpu: u32) -> bool {
    let Some(llc) = super::balance::llc_cpus(cpu) else { return false };
    (llc & super::online_mask() & !super::balance::idle_cpus()).count() > 1
}

/// The machine-wide part of the tick, on the CPU with the duty.
fn do_timer(cpu: u32, now: u64) {
    let n = DO_TIMER_TICKS.fetch_add(1, Ordering::Relaxed) + 1;
    super::accounting::sample_load(now);
    let hz = (1_000_000_000 / crate::timer::tick_period_ns().max(1)).max(1);
    if n.is_multiple_of(hz) {
        super::lockup::check_others(cpu, n, now);
    }
}

/// Linux's `nohz_balancer_kick` → `kick_ilb`: asks the first tickless idle CPU to balance.
fn kick(cpu: u32, now: u64) {
    if NR_IDLE.load(Ordering::Acquire) == 0 {
        return;
    }
    let next = NEXT_BALANCE.load(Ordering::Relaxed);
    let period = crate::timer::tick_period_ns();
    if now < next || NEXT_BALANCE.compare_exchange(next, now + period, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return;
    }
    let Some(ilb) = IDLE_CPUS.first_except(cpu as usize, Ordering::Acquire) else { return };
    let Some(target) = CPUS.get(ilb as u32) else { return };
    if target.kick.swap(true, Ordering::AcqRel) {
        return; // one pending already: it will balance
    }
    KICKS.fetch_add(1, Ordering::Relaxed);
    super::send_reschedule_ipi(ilb as u32);
}

/// The idle loop of a kicked CPU (interrupts on): the idle balance of every tickless idle CPU,
/// on its behalf, then of this one (Linux's `_nohz_idle_balance`). True if this CPU itself has
/// a task now. False at once if no kick is pending.
///
/// Each idle CPU balances as its own idle loop does when it runs out of work
/// (`BalancePoint::NewIdle`: an RT or deadline pull from overloaded CPUs, else one fair task
/// from the busiest): what a ticking idle CPU did at each tick, its tick waking it. One fair
/// task per idle CPU and pass, not the periodic pull's half of the difference: an idle CPU
/// runs one, and a second pulled there would wait while another idle CPU has none.
pub(super) fn idle_balance(this: u32) -> bool {
    let me = CPUS.this();
    if !me.kick.swap(false, Ordering::AcqRel) {
        return false;
    }
    me.ilb_runs.fetch_add(1, Ordering::Relaxed);
    let here = rq_of(this);
    let mut moved = false;
    for cpu in IDLE_CPUS.load(Ordering::Acquire).iter_wrap(this as usize + 1) {
        // Work came here (it runs first; the busy CPUs' next tick kicks again). Not stopped
        // when no CPU has two tasks: busy CPUs with one task each may still be misplaced (two
        // hogs on one core's SMT siblings), which only the domains' passes, failing until an
        // active balance, resolve (Linux's `_nohz_idle_balance` does not look at overload).
        if here.need_resched.load(Ordering::Acquire) {
            break;
        }
        let cpu = cpu as u32;
        let rq = rq_of(cpu);
        if cpu == this
            || !IDLE_CPUS.contains(cpu as usize, Ordering::Acquire)
            || rq.nr_running.load(Ordering::Acquire) != 0
            || rq.need_resched.load(Ordering::Acquire)
        {
            continue;
        }
        if balance_for(cpu) && !moved {
            moved = true;
            me.ilb_moved.fetch_add(1, Ordering::Relaxed);
        }
    }
    let mut mine = false;
    if !here.need_resched.load(Ordering::Acquire) {
        // Without preemption until it is counted: a task pulled here would otherwise preempt
        // this idle loop at once, and the count would wait until this CPU is idle again.
        let guard = super::preempt_disable();
        mine = balance_for(this);
        if mine && !moved {
            me.ilb_moved.fetch_add(1, Ordering::Relaxed);
        }
        moved |= mine;
        drop(guard);
    }
    if !moved {
        // Nothing movable: the next kick waits longer (the kick set one period).
        let later = crate::time::uptime_ns() + BALANCE_BACKOFF_TICKS * crate::timer::tick_period_ns();
        NEXT_BALANCE.fetch_max(later, Ordering::AcqRel);
    }
    mine
}

/// The idle balance of idle CPU `cpu` (from the kicked CPU's [`idle_balance`]). The fair pull's
/// own back-off after fruitless passes (`Rq::balance_skip`, counted in calls) is cleared: for a
/// tickless CPU the kick's interval is the back-off, and the two together made a CPU whose
/// earlier pulls found only pinned tasks wait eight kicks (128 ms) before it looked again,
/// once those tasks were allowed everywhere (the in-kernel test
/// `kicked_idle_balance_spreads_tasks_piled_on_one_cpu`, 157 ms).
fn balance_for(cpu: u32) -> bool {
    rq_of(cpu).balance_skip.store(0, Ordering::Relaxed);
    // Then, as Linux's `_nohz_idle_balance`, the CPU's periodic balance as an idle CPU (its
    // domains whose interval passed, and the idle fallback), which its stopped tick skips.
    class::balance(cpu, class::BalancePoint::NewIdle) || super::load_balance::periodic(cpu, true) > 0
}

/// `debug.nohz`'s value: the mode, the duty, the tickless CPUs, the kicks, then per CPU its
/// tick state and counters (Linux's `/proc/timer_list` `nohz_mode`, `tick_stopped`,
/// `idle_calls`, `idle_sleeps`).
pub fn debug_text() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::new();
    let duty = do_timer_cpu().map_or(alloc::string::String::from("none"), |c| alloc::format!("{c}"));
    let idle = idle_cpus().to_list();
    let idle = if idle.is_empty() { alloc::string::String::from("none") } else { idle };
    let _ = write!(s, "nohz={} do_timer_cpu={duty} idle_cpus={idle} kicks={}", if enabled() { "on" } else { "off" }, kicks());
    for cpu in super::online_mask().iter() {
        let cpu = cpu as u32;
        let [stops, skipped] = crate::timer::tick_counters(cpu);
        let [calls, ilb, ilb_moved] = counters(cpu);
        let _ = write!(
            s,
            " cpu{cpu} tick_stopped={} idle_calls={calls} idle_sleeps={stops} ticks_skipped={skipped} ilb={ilb} ilb_moved={ilb_moved}",
            crate::timer::tick_stopped(cpu) as u8
        );
    }
    s
}
