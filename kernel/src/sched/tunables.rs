//! The scheduler's tunables (`kernel.sched_*`): RR timeslice, EEVDF base slice and wakeup
//! granularity, idle polling.

use super::rq_of;
use crate::percpu;
use cadence_sched::rt::RrTimeslice;
use cadence_sched::FairTunables;
use core::sync::atomic::{AtomicU64, Ordering};

/// Ceiling of the adaptive poll-before-halt of idle CPUs (Linux's haltpoll governor, see
/// `cadence_sched::haltpoll`: under virtualization a halted vCPU is slow to wake).
/// `kernel.sched_idle_poll_ns`, 0 = never poll. The default is chosen by measurement
/// (docs/design/wakeups.md, *Idle polling*).
static IDLE_POLL_NS: AtomicU64 = AtomicU64::new(cadence_sched::haltpoll::DEFAULT_CEILING_NS);

/// `TIMER_KICK` in `kernel.sched_features` (Cadence's own feature): at every context switch and
/// return to user space a CPU whose timer interrupt is overdue raises it itself
/// (`framework::timer::kick_if_overdue`: under TCG the interrupt waits for QEMU's main loop
/// while the vCPU runs on). The default is chosen by measurement (docs/design/wakeups.md,
/// *Timer kicks*).
static TIMER_KICK: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(true);

pub fn timer_kick_enabled() -> bool {
    TIMER_KICK.load(Ordering::Relaxed)
}

pub fn set_timer_kick(on: bool) {
    TIMER_KICK.store(on, Ordering::Relaxed);
}

pub fn idle_poll_ns() -> u64 {
    IDLE_POLL_NS.load(Ordering::Relaxed)
}

pub fn set_idle_poll_ns(ns: u64) {
    IDLE_POLL_NS.store(ns.min(10_000_000), Ordering::Relaxed);
}

static RR_TIMESLICE_MS: AtomicU64 = AtomicU64::new(cadence_sched::rt::RR_TIMESLICE_MS);
static WAKEUP_GRANULARITY_NS: AtomicU64 = AtomicU64::new(cadence_sched::eevdf::SCHED_WAKEUP_GRANULARITY_NS);
static BASE_SLICE_NS: AtomicU64 = AtomicU64::new(cadence_sched::eevdf::SCHED_BASE_SLICE_NS);

pub fn rr_timeslice_ns() -> u64 {
    RR_TIMESLICE_MS.load(Ordering::Relaxed) * 1_000_000
}

pub fn rr_timeslice_ms() -> u64 {
    RR_TIMESLICE_MS.load(Ordering::Relaxed)
}

/// `kernel.sched_rr_timeslice_ms`: values ≤ 0 reset to the default (100 ms), as in Linux.
pub fn set_rr_timeslice_ms(ms: i64) {
    let mut t = RrTimeslice::default();
    t.set_ms(ms);
    RR_TIMESLICE_MS.store(t.ms(), Ordering::Relaxed);
}

/// Fair tunables in force (base slice scaled for the CPU count, tick from `hz`).
pub fn fair_tunables() -> FairTunables {
    FairTunables {
        base_slice_ns: BASE_SLICE_NS.load(Ordering::Relaxed),
        tick_nsec: crate::timer::tick_period_ns(),
        wakeup_granularity_ns: WAKEUP_GRANULARITY_NS.load(Ordering::Relaxed),
        ..FairTunables::default()
    }
}

pub fn set_wakeup_granularity_ns(ns: u64) {
    WAKEUP_GRANULARITY_NS.store(ns, Ordering::Relaxed);
    refresh_tunables();
}

pub fn set_base_slice_ns(ns: u64) {
    BASE_SLICE_NS.store(ns, Ordering::Relaxed);
    refresh_tunables();
}

fn refresh_tunables() {
    let t = fair_tunables();
    for cpu in percpu::online_cpus() {
        rq_of(cpu.cpu_id).lock.lock().fair.set_tunables(t);
    }
}

/// Sets the base slice from the number of CPUs (Linux: 0.75 ms × (1 + ilog2(ncpus))).
pub fn init_tunables(ncpus: u32) {
    set_base_slice_ns(cadence_sched::eevdf::scaled_base_slice(ncpus));
}
