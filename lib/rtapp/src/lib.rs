//! `cadence-rtapp`: rt-app 1.0 workload files for Cadence (and for the Linux peer).
//!
//! * [`json`]: a JSON parser that tracks line numbers, keeps duplicate keys in file order,
//!   accepts comments, trailing commas and workgen's bare `"suspend"` member, and never panics;
//! * [`model`]: the workload grammar of rt-app's `tutorial.txt` ([`model::load`]), with
//!   errors that name the key path and the line;
//! * [`log`]: rt-app's log rows and the per-thread summary line;
//! * [`peer`]: the file rewritten for Linux's rt-app (what workgen would do, plus overrides).
//!
//! Pure: no hardware, no `unsafe`, only `alloc`; the kernel's runner is `kernel/src/rtapp/`.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod json;
pub mod log;
pub mod model;
pub mod peer;

pub use model::{load, Error, Workload};
