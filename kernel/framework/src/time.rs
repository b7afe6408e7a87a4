//! Kernel time: nanoseconds since boot from the TSC (see `arch::tsc`).

pub use crate::arch::tsc::{delay_us, uptime_ns};

/// Milliseconds since boot.
pub fn uptime_ms() -> u64 {
    uptime_ns() / 1_000_000
}

/// CLOCK_REALTIME at uptime 0, in ns since the Unix epoch (0 until [`init_realtime`]).
static REALTIME_AT_BOOT_NS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Starts the wall clock from the CMOS RTC (once, at boot, after the TSC is calibrated); with
/// no readable RTC it stays at the epoch.
pub fn init_realtime() {
    if let Some(s) = crate::arch::rtc::unix_seconds() {
        let at_boot = (s * 1_000_000_000).saturating_sub(uptime_ns());
        REALTIME_AT_BOOT_NS.store(at_boot, core::sync::atomic::Ordering::Relaxed);
    }
}

/// CLOCK_REALTIME: ns since the Unix epoch.
pub fn realtime_ns() -> u64 {
    REALTIME_AT_BOOT_NS.load(core::sync::atomic::Ordering::Relaxed).saturating_add(uptime_ns())
}

/// Sets CLOCK_REALTIME to `ns` (`clock_settime`): monotonic time is unchanged.
pub fn set_realtime_ns(ns: u64) {
    REALTIME_AT_BOOT_NS.store(ns.saturating_sub(uptime_ns()), core::sync::atomic::Ordering::Relaxed);
}

/// The uptime at which CLOCK_REALTIME reads `ns` (an absolute realtime deadline as a
/// monotonic one; 0 if that is before boot).
pub fn realtime_to_uptime(ns: u64) -> u64 {
    ns.saturating_sub(REALTIME_AT_BOOT_NS.load(core::sync::atomic::Ordering::Relaxed))
}
