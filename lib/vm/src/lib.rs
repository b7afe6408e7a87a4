//! `cadence-vm`: the memory-management *policy* of the Cadence kernel.
//!
//! Pure arithmetic and decisions, no hardware access, no `unsafe`, no clock: page counts come
//! in as numbers, time as ns. Names, constants and formulas follow Linux (`mm/page_alloc.c`,
//! `mm/page-writeback.c`, 6.1 and later) where Cadence does what Linux does, and the 2003 seed
//! (Robert Love's "RT tasks dip deeper into reserves", Andrew Morton's "do not throttle
//! real-time tasks") where a switch selects it.
//!
//! * [`watermark`]: `min_free_kbytes`, the `min`/`low`/`high` watermarks, allocation contexts
//!   and the reserve each may use (`vm.rt_alloc_reserve = seed | linux | off`).
//! * [`dirty`]: dirty thresholds (`vm.dirty_ratio` / `_bytes`, `vm.dirty_background_*`), the
//!   RT rule (`vm.rt_dirty_throttle = exempt | boost | off`) and the throttle pause.
//! * [`numa`]: which node owns each frame, and the order an allocation falls back from its
//!   node to the others (Linux's zonelist).
//! * [`oom`]: the OOM killer's choice (`oom_badness`, `select_bad_process`), `oom_score` and
//!   Linux's report lines.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod dirty;
pub mod numa;
pub mod oom;
pub mod watermark;

/// Bytes in a page (Cadence's only page size).
pub const PAGE_SIZE: u64 = 4096;

/// A setting out of its range (the kernel answers `EINVAL`, as Linux's sysctl handlers do),
/// with what the range is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid(pub &'static str);

impl core::fmt::Display for Invalid {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.0)
    }
}
