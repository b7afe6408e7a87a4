//! Autogroup: a task group made automatically per tty (the seed) or per session (mainline).
//! Stub: filled in with ttys and sessions.

use core::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(true);

/// `kernel.sched_autogroup_enabled`.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}
