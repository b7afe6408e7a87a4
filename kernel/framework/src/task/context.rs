//! A kernel task's saved registers and stack ([`TaskContext`]), with the state that makes the
//! switch protocol safe: a context is switched to only when it is ready (saved, or prepared to
//! start), by one CPU at a time, and never after its stack has been released.

use crate::arch::context::Context;
use crate::mm::stack::KernelStack;
use crate::sync::IrqLock;
use crate::user::UserCpuState;
use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};

/// Nothing to run yet: neither started nor adopted.
const EMPTY: u32 = u32::MAX;
/// Saved by a switch, or prepared by [`TaskContext::start`]: may be switched to.
const READY: u32 = u32::MAX - 1;
/// Retired ([`TaskContext::retire`]): its stack is gone, it never runs again.
const RETIRED: u32 = u32::MAX - 2;
// Any value below `NR_CPUS`: running on that CPU.

/// Something the run-queue lock can switch between: the kernel's task type.
pub trait Switchable: Send + Sync + 'static {
    /// The task's context.
    fn task_context(&self) -> &TaskContext;
}

/// A kernel task's CPU context: its callee-saved registers (through the saved stack pointer)
/// and the stack they live on.
///
/// States: *empty* (new), *ready* (may be switched to), *running on CPU n*, *retired*. Only
/// [`RqGuard::switch_to`](super::RqGuard::switch_to) moves a context from ready to running
/// (and the previous one from running to ready, once its registers are saved, in
/// [`RqLock::finish_switch`](super::RqLock::finish_switch)); a switch to a context in any other
/// state panics, so no context ever runs on two CPUs or on a freed stack.
pub struct TaskContext {
    state: AtomicU32,
    regs: UnsafeCell<Context>,
    stack: IrqLock<Option<KernelStack>>,
    /// A user thread's state (`crate::user`), touched only by the task itself while it runs
    /// here with interrupts off, and by the switches away from and to it.
    user: UnsafeCell<Option<Box<UserCpuState>>>,
}

// SAFETY: `regs` (and `user`, the same way) is written only by `start` (state empty, before anyone may switch to it) and
// by the switch itself, which the state machine admits for one CPU at a time (running on that
// CPU, or claimed from ready by a compare-exchange); the stack is behind a lock.
unsafe impl Sync for TaskContext {}
// SAFETY: as above: nothing in it is tied to a CPU.
unsafe impl Send for TaskContext {}

/// The first code of a started context: `arg` is the entry function [`TaskContext::start`]
/// stored.
extern "C" fn start_entry(arg: u64) -> ! {
    // SAFETY: `arg` is a `fn() -> !` converted to an integer by `start` (the only writer of a
    // new context's frame); function pointers round-trip through `usize`.
    let entry: fn() -> ! = unsafe { core::mem::transmute::<usize, fn() -> !>(arg as usize) };
    entry()
}

impl TaskContext {
    /// An empty context owning `stack` (a kernel task's, to [`start`](Self::start) on), or none
    /// (the context a CPU runs already, to [`adopt_running`](Self::adopt_running)).
    pub fn new(stack: Option<KernelStack>) -> Self {
        Self {
            state: AtomicU32::new(EMPTY),
            regs: UnsafeCell::new(Context::default()),
            stack: IrqLock::new(stack),
            user: UnsafeCell::new(None),
        }
    }

    /// Prepares the context to run `entry` on its own stack when first switched to; from then
    /// on it is ready. `entry` runs with interrupts off and must never return (a task ends by
    /// switching away for good). Panics if the context has no stack or is not empty.
    pub fn start(&self, entry: fn() -> !) {
        let stack = self.stack.lock();
        let top = stack.as_ref().expect("TaskContext::start without a stack").top();
        assert_eq!(self.state.load(Ordering::Acquire), EMPTY, "TaskContext::start on a context already started");
        // SAFETY: the stack is this context's own (held above, so not released meanwhile), at
        // least a page, and unused: the context is empty, so nothing runs on it and nobody may
        // switch to it before the state says ready (below, after the write).
        let regs = unsafe { Context::new_task(top, start_entry, entry as usize as u64) };
        // SAFETY: empty: no switch reads or writes `regs` until the release store below.
        unsafe { *self.regs.get() = regs };
        self.state.store(READY, Ordering::Release);
    }

    /// Makes this empty context the one the calling CPU is running (its boot stack: the idle
    /// task). Its registers are saved by the first switch away. Panics if not empty.
    pub fn adopt_running(&self) {
        let cpu = crate::percpu::cpu_id();
        let was = self.state.compare_exchange(EMPTY, cpu, Ordering::AcqRel, Ordering::Acquire);
        assert!(was.is_ok(), "TaskContext::adopt_running on a context already in use");
    }

    /// Retires a context that will never run again and returns its stack: only a ready one
    /// (saved by its last switch away) or one never started. `None`, and nothing changes, if
    /// it is running or already retired.
    pub fn retire(&self) -> Option<KernelStack> {
        let ok = [READY, EMPTY].iter().any(|&from| self.state.compare_exchange(from, RETIRED, Ordering::AcqRel, Ordering::Acquire).is_ok());
        if ok {
            self.stack.lock().take()
        } else {
            None
        }
    }

    /// Claims a ready context for the calling CPU (the switch's next side). Panics otherwise.
    pub(super) fn claim(&self, cpu: u32) {
        if let Err(state) = self.state.compare_exchange(READY, cpu, Ordering::AcqRel, Ordering::Acquire) {
            panic!("switch to a context that is not ready ({})", describe(state));
        }
    }

    /// Checks that this context runs on `cpu` (the switch's previous side).
    pub(crate) fn check_running_on(&self, cpu: u32) {
        let state = self.state.load(Ordering::Relaxed);
        assert!(state == cpu, "switch from a context that is not running on cpu {} ({})", cpu, describe(state));
    }

    /// The previous side's registers are saved: it may be switched to again.
    pub(super) fn saved(&self) {
        self.state.store(READY, Ordering::Release);
    }

    /// The user state, if this is a user thread.
    ///
    /// # Safety
    /// Only for the switch (this context running here, or claimed by this CPU) or the task
    /// itself running here with interrupts off: nobody else may touch it meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn user_state(&self) -> Option<&mut UserCpuState> {
        // SAFETY: exclusive per the contract.
        unsafe { (*self.user.get()).as_deref_mut() }
    }

    /// The user-state slot itself (to fill).
    ///
    /// # Safety
    /// As for [`TaskContext::user_state`].
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn user_slot(&self) -> &mut Option<Box<UserCpuState>> {
        // SAFETY: exclusive per the contract.
        unsafe { &mut *self.user.get() }
    }

    /// The saved-registers slot, for the switch itself.
    pub(super) fn regs(&self) -> *mut Context {
        self.regs.get()
    }
}

fn describe(state: u32) -> &'static str {
    match state {
        EMPTY => "never started",
        READY => "ready",
        RETIRED => "retired",
        _ => "running",
    }
}
