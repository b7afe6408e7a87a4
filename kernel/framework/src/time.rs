//! Kernel time: nanoseconds since boot from the TSC (see `arch::tsc`).

pub use crate::arch::tsc::{delay_us, uptime_ns};

/// Milliseconds since boot.
pub fn uptime_ms() -> u64 {
    uptime_ns() / 1_000_000
}
