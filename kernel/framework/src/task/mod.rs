//! What the scheduler needs from the hardware and from `unsafe` code, as safe mechanisms:
//!
//! - [`TaskContext`]: a kernel task's saved registers and its stack; created ready to start an
//!   entry function, or adopted for the context a CPU already runs (boot, idle);
//! - [`RqLock`]: the run-queue lock, which alone can switch contexts
//!   ([`RqGuard::switch_to`]): it stays held across the switch and the task switched to takes
//!   it over ([`RqLock::finish_switch`]), as in Linux;
//! - [`Current`]: each CPU's running task, readable without a reference count;
//! - [`WakeList`]: the lock-free wake list other CPUs push wakeups onto (Linux's `llist`);
//! - [`timer::arm`]: a timer that hands a reference-counted object to its handler;
//! - [`SleepMutex`]: a mutex whose waiters sleep on the kernel's wait queue.
//!
//! The policy (which task runs, when, where) is the kernel's; these types only make the
//! mechanism impossible to misuse without a panic: a context cannot run on two CPUs, cannot be
//! resumed after its stack is released, a lock handed across a switch is taken over exactly
//! once, and a wake-list node cannot be on two lists.

mod context;
mod current;
mod mutex;
mod rqlock;
pub mod timer;
mod wake_list;

pub use context::{Switchable, TaskContext};
pub use current::Current;
pub use mutex::{SleepMutex, SleepMutexGuard, WaitStrategy};
pub use rqlock::{lock_two, try_lock_two, RqGuard, RqLock, TwoGuards};
pub use wake_list::{WakeLink, WakeList, WakeListDrain, WakeListNode};
