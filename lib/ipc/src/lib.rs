//! `cadence-ipc`: the state of Linux's IPC objects as plain data, so the host can test what is
//! subtle about them; the kernel (`fs::mqueue`, `process::sem`) adds the locks, the sleeping
//! and the user memory.
//!
//! * [`mqueue`]: a POSIX message queue (Linux `ipc/mqueue.c`): messages by priority, highest
//!   first and FIFO within one; blocked senders and receivers ordered by their task's priority
//!   and served by hand-off (`pipelined_send` / `pipelined_receive`), so the best waiter gets
//!   the message, not whoever runs first; the attribute limits.
//! * [`sem`]: a System V semaphore set (Linux `ipc/sem.c`): a `semop` array applied atomically
//!   or not at all, pending operations retried in arrival order after every change, SEM_UNDO
//!   adjustments and their application at exit, `GETNCNT` / `GETZCNT`.
//! * [`ids`]: Linux's ipc identifiers (`ipc/util.c`): a slot index reused cyclically, and a
//!   sequence number bumped when the cursor wraps, `id = seq * 32768 + index`.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod ids;
pub mod mqueue;
pub mod sem;
