//! The time-stamp counter: Cadence's clock.
//!
//! Frequency source, in order: CPUID leaf 0x15 (crystal × ratio), leaf 0x16 (base MHz), else a
//! calibration against PIT channel 2 (the tightest of several bracketed 10 ms windows). Time in ns is
//! `(tsc - boot_tsc) * NS_PER_TICK_FP >> 32` (32.32 fixed point, u128 intermediate), so the
//! conversion costs one multiply. All CPUs read the same counter: QEMU keeps TSCs in sync.

use core::sync::atomic::{AtomicU64, Ordering};

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
static BOOT_TSC: AtomicU64 = AtomicU64::new(0);
/// ns per TSC tick in 32.32 fixed point.
static NS_PER_TICK_FP: AtomicU64 = AtomicU64::new(0);

/// How the TSC frequency was found (reported at boot).
#[derive(Clone, Copy, Debug)]
pub enum TscSource {
    /// CPUID leaf 0x15: crystal clock × TSC/crystal ratio (exact).
    Cpuid15,
    /// CPUID leaf 0x16: the processor base frequency in MHz (rounded).
    Cpuid16,
    /// Measured against PIT channel 2 (the tightest of several bracketed 10 ms windows).
    Pit,
}

/// Reads this CPU's time-stamp counter (`RDTSC`, not serializing: it may run ahead of earlier
/// instructions). Any context; in TSC ticks, see [`hz`].
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC is available on every x86_64 CPU and has no side effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Determines the TSC frequency and starts the clock. Called once on the BSP.
pub fn init() -> (u64, TscSource) {
    BOOT_TSC.store(rdtsc(), Ordering::Relaxed);
    let (hz, src) = match super::cpuid::tsc_hz_from_cpuid() {
        Some((hz, true)) => (hz, TscSource::Cpuid15),
        Some((hz, false)) => (hz, TscSource::Cpuid16),
        // No PIT either: 1 GHz keeps time roughly right rather than dividing by zero.
        None => (calibrate_with_pit(3).unwrap_or(1_000_000_000), TscSource::Pit),
    };
    (set_hz(hz), src)
}

/// Makes `hz` (at least 1 MHz: a broken calibration must not divide by zero later) the
/// frequency every conversion uses. Returns it.
fn set_hz(hz: u64) -> u64 {
    let hz = hz.max(1_000_000);
    TSC_HZ.store(hz, Ordering::Relaxed);
    NS_PER_TICK_FP.store(((1_000_000_000u128 << 32) / hz as u128) as u64, Ordering::Relaxed);
    hz
}

/// The calibration's best PIT window so far (its spread is the frequency's uncertainty).
static BEST_WINDOW: spin::Mutex<Option<super::pit::PitWindow>> = spin::Mutex::new(None);

/// The PIT window's length in ms: long enough that a few µs of bracket are a few hundred ppm.
const PIT_WINDOW_MS: u64 = 10;

/// Measures `tries` PIT windows and keeps the tightest bracket seen (this call's or an earlier
/// one's). Returns the frequency its midpoint gives, or `None` when no PIT answered.
fn calibrate_with_pit(tries: usize) -> Option<u64> {
    let mut best = BEST_WINDOW.lock();
    for _ in 0..tries {
        let Some(w) = super::pit::measure_tsc_over_ms(PIT_WINDOW_MS) else { break };
        if best.is_none_or(|b| w.spread() < b.spread()) {
            *best = Some(w);
        }
    }
    best.map(|w| w.midpoint() * (1000 / PIT_WINDOW_MS))
}

/// The uncertainty of the PIT calibration in parts per million (0 when CPUID gave the frequency).
pub fn calibration_spread_ppm() -> u64 {
    BEST_WINDOW.lock().map_or(0, |w| w.spread() * 1_000_000 / w.midpoint().max(1))
}

/// Measures the TSC against the PIT again once the other CPUs are parked
/// ([`crate::smp::park_aps`]), as Linux refines its early calibration: five more bracketed
/// windows, the tightest of all kept. Only when the frequency came from the PIT; before any timer
/// is armed. The clock stays continuous: `uptime_ns` at the change is the same at both rates.
/// Returns the frequency.
///
/// Why brackets: under TCG each vCPU is a host thread, and at 64 vCPUs on 2 host cores the boot
/// CPU's thread is descheduled for milliseconds at a time. A window timed from one TSC read to
/// another is stretched when the host stops the vCPU before it sees the PIT's end (the firmware's
/// spinning APs once made 10 ms read as 380 ms: 98,667 MHz for a 2,600 MHz TSC), and shortened
/// when it stops it between starting the count and the first read (64 vCPUs read 1,841 MHz; the
/// count starts when its high byte is written, not at the gate toggle timed before). Each
/// sample's reads bound both ends, so a disturbed sample shows itself by its spread.
pub fn refine(src: TscSource) -> u64 {
    if !matches!(src, TscSource::Pit) {
        return hz();
    }
    match calibrate_with_pit(5) {
        Some(new_hz) => {
            let now = rdtsc();
            let uptime = ticks_to_ns(now.wrapping_sub(BOOT_TSC.load(Ordering::Relaxed)));
            let hz = set_hz(new_hz);
            // Rebase so that `uptime_ns()` continues from `uptime` at the new rate.
            BOOT_TSC.store(now.wrapping_sub(ns_to_ticks(uptime)), Ordering::Relaxed);
            hz
        }
        None => hz(),
    }
}

/// TSC ticks per second (0 before [`init`]).
pub fn hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Converts a TSC delta to nanoseconds.
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    ((ticks as u128 * NS_PER_TICK_FP.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// Converts nanoseconds to TSC ticks.
pub fn ns_to_ticks(ns: u64) -> u64 {
    (ns as u128 * hz() as u128 / 1_000_000_000) as u64
}

/// Nanoseconds since [`init`] (0 before it).
#[inline]
pub fn uptime_ns() -> u64 {
    ticks_to_ns(rdtsc().wrapping_sub(BOOT_TSC.load(Ordering::Relaxed)))
}

/// Busy-waits for `us` microseconds (only valid after [`init`]).
pub fn delay_us(us: u64) {
    let end = rdtsc() + ns_to_ticks(us * 1000);
    while rdtsc() < end {
        core::hint::spin_loop();
    }
}
