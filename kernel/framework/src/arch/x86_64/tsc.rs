//! The time-stamp counter: Cadence's clock.
//!
//! Frequency source, in order: CPUID leaf 0x15 (crystal × ratio), leaf 0x16 (base MHz), else a
//! calibration against PIT channel 2 (median of 3 × 10 ms). Time in ns is
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
    /// Measured against PIT channel 2 (median of 3 × 10 ms).
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
        None => (calibrate_with_pit(), TscSource::Pit),
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

fn calibrate_with_pit() -> u64 {
    let mut samples = [0u64; 3];
    for s in samples.iter_mut() {
        *s = super::pit::measure_tsc_over_ms(10) * 100;
    }
    samples.sort_unstable();
    samples[1]
}

/// Measures the TSC against the PIT again once the other CPUs are parked
/// ([`crate::smp::park_aps`]), as Linux refines its early calibration: five 10 ms windows, the
/// shortest kept (a window can only be stretched, by the host descheduling this vCPU before it
/// sees the PIT's end, never shortened), and the lower of that and the boot's estimate. Only
/// when the frequency came from the PIT; before any timer is armed. Returns the frequency.
///
/// Why: the firmware (OVMF) leaves the APs running its wait loop, and under TCG their vCPU
/// threads share the host's cores with the boot CPU's; at 64 vCPUs on 2 host cores the boot
/// CPU saw the PIT's 10 ms end about 380 ms late, and measured 98,667 MHz for a 2,600 MHz TSC.
pub fn refine(src: TscSource) -> u64 {
    if !matches!(src, TscSource::Pit) {
        return hz();
    }
    let best = (0..5).map(|_| super::pit::measure_tsc_over_ms(10) * 100).min().unwrap_or(u64::MAX);
    // A lower frequency makes every later `uptime_ns` larger: time only jumps forward.
    set_hz(best.min(hz()))
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
