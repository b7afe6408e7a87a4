//! The run-queue lock is the framework's (`framework::task::RqLock`, which alone switches
//! contexts: see its docs): this module names it for the scheduler's task type.

pub use framework::task::{lock_two, try_lock_two, RqLock, TwoGuards};

/// A held run-queue lock whose switches run [`Task`](super::task::Task)s.
pub type RqGuard<'a, T> = framework::task::RqGuard<'a, T, super::task::Task>;
