//! Bringing a CPU under the scheduler ([`init_this_cpu`], [`online_mask`]) and its idle loop.

use super::task::{self, SchedParams, SpawnOptions};
use super::{balance, fair_tunables, idle_poll_ns, nohz, reserve, rq_of, schedule, this_cpu, CURRENT};
use cadence_sched::{AtomicCpuMask, CpuMask, ValidAttr};
use core::sync::atomic::Ordering;

/// Mask of the CPUs that run the scheduler.
pub fn online_mask() -> CpuMask {
    ONLINE_MASK.load(Ordering::Acquire)
}

static ONLINE_MASK: AtomicCpuMask = AtomicCpuMask::new();

/// Mask of the CPUs that came up at boot (Linux's `cpu_possible_mask` here: no CPU is added
/// later), online now or not. What a task's affinity may hold: a CPU offline for now stays in
/// it (Linux's `cpuset_cpus_allowed` for the top cpuset).
pub fn possible_mask() -> CpuMask {
    POSSIBLE_MASK.load(Ordering::Acquire)
}

static POSSIBLE_MASK: AtomicCpuMask = AtomicCpuMask::new();

/// Puts `cpu` in or out of [`online_mask`] (`hotplug`).
pub(super) fn set_online(cpu: u32, on: bool) {
    if on {
        ONLINE_MASK.set(cpu as usize, Ordering::AcqRel);
    } else {
        ONLINE_MASK.clear(cpu as usize, Ordering::AcqRel);
    }
}

/// Turns the calling context into this CPU's idle task and starts scheduling on it.
pub fn init_this_cpu() {
    let cpu = this_cpu();
    let mut opts = SpawnOptions::new("swapper");
    opts.name = alloc::format!("swapper/{}", cpu.cpu_id);
    // The idle task is never queued, so its mask only matters as what its children inherit.
    let params = SchedParams::new(ValidAttr::default(), CpuMask::all(cadence_sched::NR_CPUS));
    let idle = task::new_task(&opts, None, params, None, true, cpu.cpu_id);
    {
        let mut g = rq_of(cpu.cpu_id).lock.lock();
        g.fair.set_tunables(fair_tunables());
        g.curr = Some(idle.clone());
        g.idle = Some(idle.clone());
        g.exec_start = crate::time::uptime_ns();
        rq_of(cpu.cpu_id).online_at_ns.store(g.exec_start, Ordering::Relaxed);
        // This CPU runs its boot stack now: the idle task's context, saved at its first switch.
        idle.adopt_running_context();
        drop(CURRENT.set(&idle));
    }
    reserve::refill(cpu.cpu_id); // the queues' first storage, before anything is queued
    POSSIBLE_MASK.set(cpu.cpu_id as usize, Ordering::AcqRel);
    ONLINE_MASK.set(cpu.cpu_id as usize, Ordering::AcqRel);
    super::balance::refresh_idle(cpu.cpu_id); // idle until something is queued
    rq_of(cpu.cpu_id).ready.store(true, Ordering::Release);
}

/// The idle loop of every CPU (never returns). Before it halts with nothing to do it stops
/// the CPU's tick (`nohz`); the switch away from it restarts the tick.
pub fn idle_loop() -> ! {
    let cpu = this_cpu();
    loop {
        crate::irqflags::disable();
        if rq_of(cpu.cpu_id).need_resched.load(Ordering::Acquire) {
            schedule();
            continue;
        }
        crate::irqflags::enable();
        // Offline (`hotplug`): whatever waits here goes elsewhere; no balancing.
        if !online_mask().contains(cpu.cpu_id as usize) {
            if rq_of(cpu.cpu_id).nr_running.load(Ordering::Acquire) > 0 {
                super::hotplug::push_queued_away(cpu.cpu_id);
            }
            rq_of(cpu.cpu_id).wc_kick.store(false, Ordering::Relaxed);
            nohz::drop_kick(); // a kick sent before it left the idle set: not its to answer
            halt_offline(cpu.cpu_id);
            continue;
        }
        // Asked to pull a task waiting behind another (`WC_PULL`).
        if super::load_balance::wc_pull(cpu.cpu_id) {
            continue;
        }
        // Kicked by a busy CPU: balance for the tickless idle CPUs, then for this one.
        if nohz::kicked() {
            nohz::idle_balance(cpu.cpu_id);
            continue;
        }
        // Forced idle by core scheduling: a waiting task of the sibling's cookie elsewhere
        // can run here now.
        if rq_of(cpu.cpu_id).nr_running.load(Ordering::Acquire) > 0 && super::coresched::steal_cookie_task(cpu.cpu_id) {
            continue;
        }
        if balance::idle_balance(cpu.cpu_id) {
            continue;
        }
        let ceiling = idle_poll_ns();
        let limit = rq_of(cpu.cpu_id).idle_poll_limit.load(Ordering::Relaxed).min(ceiling);
        let idle_start = crate::time::uptime_ns();
        if limit > 0 {
            rq_of(cpu.cpu_id).polling.store(true, Ordering::SeqCst);
            let until = idle_start + limit;
            while !rq_of(cpu.cpu_id).need_resched.load(Ordering::SeqCst)
                && !nohz::kicked()
                && !rq_of(cpu.cpu_id).wc_kick.load(Ordering::Relaxed)
                && crate::time::uptime_ns() < until
            {
                core::hint::spin_loop();
            }
            rq_of(cpu.cpu_id).polling.store(false, Ordering::SeqCst);
        }
        crate::irqflags::disable();
        let nothing_to_do = || {
            !rq_of(cpu.cpu_id).need_resched.load(Ordering::SeqCst) && !nohz::kicked() && !rq_of(cpu.cpu_id).wc_kick.load(Ordering::SeqCst)
        };
        if nothing_to_do() {
            // The tick stops if nothing needs it (`nohz`; which may find a reason to
            // reschedule, hence the second check).
            nohz::idle_stop_tick(cpu.cpu_id);
        }
        if nothing_to_do() {
            // `sti; hlt`: a wakeup or kick IPI cannot slip in between the check and the halt.
            // The timer may be moved earlier for the halt (`kernel.timer_advance_ns`).
            crate::timer::halt_prepare();
            crate::arch::wait_for_interrupt();
            crate::timer::halt_done();
        }
        if ceiling > 0 {
            let block_ns = crate::time::uptime_ns().saturating_sub(idle_start);
            let next = cadence_sched::haltpoll::adjust(limit, block_ns, ceiling);
            rq_of(cpu.cpu_id).idle_poll_limit.store(next, Ordering::Relaxed);
        }
    }
}

/// An offline CPU's wait (`hotplug`): its tick stopped, halted until an interrupt (its
/// timers, or the reschedule IPI of a task queued here or of `cpu_up`).
fn halt_offline(cpu: u32) {
    crate::irqflags::disable();
    let rq = rq_of(cpu);
    if !rq.need_resched.load(Ordering::SeqCst) {
        nohz::idle_stop_tick(cpu);
    }
    if !rq.need_resched.load(Ordering::SeqCst) {
        // `sti; hlt`, as the idle loop's halt. A task that could not be pushed away yet keeps
        // the tick running (`idle_stop_tick` leaves it on): the next tick tries again.
        crate::timer::halt_prepare();
        crate::arch::wait_for_interrupt();
        crate::timer::halt_done();
    } else {
        crate::irqflags::enable();
    }
}
