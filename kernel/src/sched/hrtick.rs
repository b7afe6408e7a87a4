//! hrtick: preempt exactly when a slice ends, instead of at the next periodic tick
//! (Linux `kernel/sched/core.c` hrtick_*, `fair.c` hrtick_start_fair).
//!
//! When the running task is fair and more than one fair entity is queued on its CPU, a one-shot
//! timer (the CPU's timer queue, see `timer`) is armed for the rest of its slice:
//! `delay = (deadline − vruntime) × weight / 1024` (virtual → real time), at least
//! [`HRTICK_MIN_DELAY_NS`]; if that is already ≤ 0 the CPU reschedules at once. For SCHED_RR
//! with peers at its priority, the timer is armed for the rest of the RR quantum. The timer is
//! re-armed whenever the CPU picks a task or a task is queued on it, and cancelled when the
//! running task is alone. When it fires, the runtime is accounted (`update_curr`) and the CPU
//! reschedules if the slice is used up (otherwise it re-arms for what is left).
//!
//! Switch: `sysctl kernel.sched_features=HRTICK|NO_HRTICK`, boot `hrtick=0|1`. Default off, as
//! in Linux (`SCHED_FEAT(HRTICK, false)`), by measurement: under emulation every LAPIC
//! programming is an exit into the VMM, and one that moves its timer earlier wakes QEMU's
//! main loop, the thread that delivers every vCPU's timer interrupts. Under `bench hackbench`
//! at `-smp 2`, hrtick doubled the timer interrupts (a third of them for cancelled slice
//! ends) and made `bench cyclic`'s average latency ~80 µs worse (docs/design/hrtick.md; the
//! figures: docs/results/2026-12-02-compare-smp2.md).
//!
//! Slice-overshoot statistics for `bench slice`: while enabled, every time a fair task's slice
//! ends, how far it ran past the end (real ns) is recorded per CPU.

use super::class::HrtickSlice;
use super::task::Task;
use super::{rq_of, update_curr, RqInner};
use crate::sync::IrqLock;
use alloc::vec::Vec;
use cadence_cmdline::BootParam;
use core::sync::atomic::{AtomicBool, Ordering};

/// Linux's minimum hrtick delay (10 µs).
pub const HRTICK_MIN_DELAY_NS: u64 = 10_000;

static HRTICK: AtomicBool = AtomicBool::new(false);

pub fn enabled() -> bool {
    HRTICK.load(Ordering::Relaxed)
}

/// Boot options (`cmdline`).
pub static BOOT_PARAMS: &[BootParam] = &[BootParam {
    usage: "hrtick=0|1",
    help: "preempt exactly at slice end with one-shot timers (default 0, as Linux)",
    set: |v| match v {
        Some("0") => {
            set_enabled(false);
            Ok(())
        }
        Some("1") => {
            set_enabled(true);
            Ok(())
        }
        _ => Err("needs 0 or 1".into()),
    },
}];

pub fn set_enabled(on: bool) {
    HRTICK.store(on, Ordering::Relaxed);
}

/// `HRTICK_DL` (Linux's feature of that name; on by default here): the hrtick throttles a
/// deadline task exactly when its runtime runs out, whatever `HRTICK` says. Off, runtime is
/// enforced at the next tick (up to 4 ms late at HZ=250: Linux's default).
static HRTICK_DL: AtomicBool = AtomicBool::new(true);

pub fn dl_enabled() -> bool {
    HRTICK_DL.load(Ordering::Relaxed)
}

pub fn set_dl_enabled(on: bool) {
    HRTICK_DL.store(on, Ordering::Relaxed);
}

pub use cadence_sched::eevdf::virtual_to_real;

/// Cancels the CPU's hrtick timer and arms it again if `curr` (the task running, or about
/// to run, on `g`'s CPU) needs one. Called with the run-queue lock held.
pub(super) fn update(g: &mut RqInner, curr: &Task, now: u64) {
    if let Some(id) = g.hrtick_timer.take() {
        crate::timer::cancel(g.cpu, id);
    }
    let on = if curr.class() == super::ClassId::Dl { dl_enabled() } else { enabled() };
    if !on {
        return;
    }
    let delay = match super::class::of(curr).hrtick_slice(g, curr) {
        HrtickSlice::Left(ns) => ns,
        HrtickSlice::Expired => {
            // `g` may be another CPU's queue (a wakeup queued there): that CPU must get the
            // IPI, not just the flag.
            super::set_need_resched(g.cpu);
            return;
        }
        HrtickSlice::None => return,
    };
    let delay = delay.max(HRTICK_MIN_DELAY_NS);
    crate::trace::hrtick_start(delay);
    g.hrtick_seq = g.hrtick_seq.wrapping_add(1);
    g.hrtick_timer = crate::timer::arm(g.cpu, now + delay, fire, g.hrtick_seq);
}

/// The hrtick timer number `seq` fired on `cpu`.
fn fire(cpu: u32, seq: u64) {
    let now = crate::time::uptime_ns();
    crate::trace::hrtick_fire();
    let rq = rq_of(cpu);
    let mut g = rq.lock.lock();
    // Between its expiry and this lock another CPU may have re-armed (the cancel missed this
    // one, already popped): then the newer timer is the CPU's hrtick and must stay recorded,
    // or nothing would cancel it.
    if g.hrtick_seq != seq {
        return;
    }
    g.hrtick_timer = None;
    if update_curr(&mut g, now) {
        super::flag_need_resched(cpu);
    } else if let Some(curr) = g.curr.clone() {
        update(&mut g, &curr, now);
    }
}

// ----- slice-overshoot statistics ---------------------------------------------------------

static STATS_ON: AtomicBool = AtomicBool::new(false);
static SAMPLES: IrqLock<Vec<u32>> = IrqLock::new(Vec::new());
const MAX_SAMPLES: usize = 200_000;

/// Starts recording overshoot samples (clearing old ones).
pub fn stats_start() {
    {
        // Reserved here, in task context: samples are pushed under run-queue locks, where
        // the heap must not be taken.
        let mut s = SAMPLES.lock();
        s.clear();
        s.reserve(MAX_SAMPLES);
    }
    STATS_ON.store(true, Ordering::SeqCst);
}

/// Stops recording and returns the samples (ns past the slice end, one per expired slice).
pub fn stats_take() -> Vec<u32> {
    STATS_ON.store(false, Ordering::SeqCst);
    core::mem::take(&mut *SAMPLES.lock())
}

/// Records that a fair slice ended `overshoot_ns` late (called under the run-queue lock).
pub(super) fn record_overshoot(overshoot_ns: u64) {
    if STATS_ON.load(Ordering::Relaxed) {
        let mut s = SAMPLES.lock();
        if s.len() < MAX_SAMPLES {
            s.push(overshoot_ns.min(u32::MAX as u64) as u32);
        }
    }
}

pub(super) fn stats_on() -> bool {
    STATS_ON.load(Ordering::Relaxed)
}
