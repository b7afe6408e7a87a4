//! The context switch.
//!
//! A switched-out task's callee-saved registers live on its own kernel stack; its
//! [`Context`] holds only the saved stack pointer. [`switch_to`] pushes, in this order,
//! `rbp, rbx, r12, r13, r14, r15` on the old stack, stores `rsp` into `prev.rsp`, loads
//! `next.rsp`, pops the same six registers in reverse order and `ret`s into the next task.
//! Everything else is caller-saved under the SysV ABI (the kernel is soft-float: no FPU/SSE state).
//!
//! A new task's stack is laid out by [`Context::new_task`] so that the first switch to it "returns"
//! into `cadence_task_entry`, which passes `r12` (the start argument) to the Rust start function
//! in `rdi` with a 16-byte aligned stack. Frame, from the top of the stack down:
//!
//! ```text
//! top-8   0                       (padding; keeps the entry's stack aligned)
//! top-16  cadence_task_entry      (return address for `ret`)
//! top-24  rbp = 0
//! top-32  rbx = 0
//! top-40  r12 = start argument
//! top-48  r13 = start function
//! top-56  r14 = 0
//! top-64  r15 = 0                 <- initial rsp
//! ```

/// Saved CPU state of a task that is not running.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Context {
    /// Stack pointer at the moment the task was switched out.
    pub rsp: u64,
}

core::arch::global_asm!(
    r#"
.pushsection .text.cadence_switch, "ax"
.global cadence_switch_context
cadence_switch_context:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    mov [rdi], rsp
    mov rsp, rsi
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

.global cadence_task_entry
cadence_task_entry:
    mov rdi, r12
    and rsp, -16
    call r13
    ud2
.popsection
"#
);

extern "C" {
    fn cadence_switch_context(prev_rsp: *mut u64, next_rsp: u64);
    pub(crate) fn cadence_task_entry();
}

impl Context {
    /// Prepares a context that starts `start(arg)` on the stack whose top is `stack_top`
    /// (16-byte aligned). `start` must never return.
    ///
    /// # Safety
    /// `stack_top` must be the top of a mapped, writable stack of at least 64 bytes owned by
    /// the new task.
    pub unsafe fn new_task(stack_top: u64, start: extern "C" fn(u64) -> !, arg: u64) -> Context {
        let frame: [u64; 8] = [0, 0, start as usize as u64, arg, 0, 0, cadence_task_entry as *const () as u64, 0];
        let rsp = stack_top - 64;
        // SAFETY: per the contract, the 64 bytes below `stack_top` are ours to write.
        unsafe { core::ptr::copy_nonoverlapping(frame.as_ptr(), rsp as *mut u64, 8) };
        Context { rsp }
    }
}

/// Switches from the current task to `next`.
///
/// # Safety
/// Interrupts must be disabled; `prev` must be the running task's context and `next` a
/// context saved by a previous switch (or made by [`Context::new_task`]) that no CPU is running.
pub unsafe fn switch_to(prev: *mut Context, next: *const Context) {
    // SAFETY: forwarded contract; the asm saves/restores exactly the callee-saved registers.
    unsafe { cadence_switch_context(&raw mut (*prev).rsp, (*next).rsp) }
}
