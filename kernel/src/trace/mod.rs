//! The latency tracer's hook points (stub: the tracer itself is being built; see issue
//! "Latency tracer"). The scheduler calls these at Linux's tracepoints; each must be cheap
//! when its event is disabled (one relaxed load and a branch).
//!
//! Contract for the implementation: called with interrupts disabled (or from interrupt
//! context), possibly with a run-queue lock held: must not take run-queue locks, allocate, or
//! block. `now_ns` is `time::uptime_ns()` at the event.

use crate::sched::task::{Task, TaskState};

/// `sched_switch`: `prev` (which leaves in `prev_state`) → `next` on this CPU.
#[inline]
pub fn sched_switch(_prev: &Task, _prev_state: TaskState, _next: &Task, _now_ns: u64) {}

/// `sched_wakeup` (`new == false`) or `sched_wakeup_new`: `task` made runnable on `target_cpu`.
#[inline]
pub fn sched_wakeup(_task: &Task, _target_cpu: u32, _new: bool, _now_ns: u64) {}

/// `sched_migrate_task`: `task` moves from `orig_cpu` to `dest_cpu`.
#[inline]
pub fn sched_migrate_task(_task: &Task, _orig_cpu: u32, _dest_cpu: u32, _now_ns: u64) {}

/// `sched_process_exit`: `task` exited.
#[inline]
pub fn sched_process_exit(_task: &Task, _now_ns: u64) {}

/// `timer_expire`: a timer of this CPU fired (`what` names the handler).
#[inline]
pub fn timer_expire(_what: &'static str, _expires_ns: u64, _now_ns: u64) {}

/// `hrtick_start`: `cpu`'s slice-end timer armed `delay_ns` ahead.
#[inline]
pub fn hrtick_start(_cpu: u32, _delay_ns: u64, _now_ns: u64) {}

/// `hrtick_fire`: `cpu`'s slice-end timer fired.
#[inline]
pub fn hrtick_fire(_cpu: u32, _now_ns: u64) {}

/// `ipi_send`: this CPU sends `vector` to `target_cpu`.
#[inline]
pub fn ipi_send(_target_cpu: u32, _vector: u8, _now_ns: u64) {}
