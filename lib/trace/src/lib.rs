//! `cadence-trace`: the pure half of Cadence's scheduler tracer, shared by the kernel (which
//! records events and prints reports) and the host tool (`cadence-boot trace report`, which
//! parses the exported text and prints the same reports).
//!
//! * [`event`]: the fixed-size, self-contained event record ([`Event`]): task names are stored
//!   inline (16 bytes, like Linux's `comm`), so a record never points at a task.
//! * [`ftrace`]: the ftrace text format of `/sys/kernel/tracing/trace` (Linux 6.1 field
//!   formats), writing and parsing; `parse(write(e)) == e` for every event (timestamps are
//!   truncated to microseconds, the precision of the text format); Cadence's exports also carry
//!   one `# cadence-affinity:` comment line per task.
//! * [`report`]: wakeup-latency summary (overall, RT, fair), log2 histogram, and a per-task table
//!   like `perf sched latency`. Computed on microsecond-truncated timestamps so the kernel's
//!   report and the host's report of the exported text agree exactly.
//! * [`ring`]: index arithmetic of the per-CPU overwrite-oldest ring buffers.
//! * [`coresched`]: the core-scheduling checker (`trace check coresched`).
//! * [`rtcheck`]: the RT-guarantee checker (`trace check rt`): intervals in which an RT task
//!   waited while a CPU it may use ran something less important.
//! * [`wccheck`]: the work-conservation checker (`trace check wc`): intervals in which a CPU
//!   stayed idle while a task that may run on it waited.
//!
//! The two replaying checkers share `replay` (crate-private): the window, the event order,
//! what each CPU runs, which tasks wait, the affinities.
//!
//! No `unsafe`, no panics on any input (parsers return errors, arithmetic saturates).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod coresched;
pub mod event;
pub mod ftrace;
mod replay;
pub mod report;
pub mod ring;
pub mod rtcheck;
pub mod wccheck;

pub use event::{Comm, Event, EventKind, EventType, TaskInfo};
