//! User mode for the kernel's tasks (the shape of Asterinas's `ostd::user`): a task that runs
//! a user thread keeps its registers in a [`UserContext`] and loops on [`execute`], which runs
//! the thread in ring 3 until it makes a system call, takes an exception, or an interrupt
//! leaves the kernel something to do for it, and says which ([`ReturnReason`]). The kernel
//! handles that as ordinary (preemptible, blocking) task code and calls `execute` again.
//!
//! **The task's user state** — the x87/SSE registers ([`FxArea`]), the FS base (TLS), the
//! kernel stack pointer traps from user mode start at, and the address space
//! ([`VmSpace`]) — belongs to the task's [`TaskContext`] once the task calls
//! [`TaskContext::enable_user`] on itself, and the context switch saves and loads it
//! (`switch_user_state`): interrupts from user mode preempt a user thread exactly as they
//! do a kernel task, at the same preemption points (interrupt exit), and the thread's state
//! follows it to whichever CPU resumes it. While the task runs, that state is in the CPU
//! (the registers, the FS base MSR, CR3), so [`fpu_snapshot`], [`set_fpu`], [`fs_base`] and
//! [`set_fs_base`] read and write the CPU.
//!
//! The entry code and its invariants (the frame, `swapgs`, the paranoid vectors) are in
//! `arch::x86_64::entry`.

use crate::arch::entry::{self, SYSCALL_VECTOR};
use crate::arch::gdt::{USER_CS, USER_DS};
use crate::arch::msr::{self, Msr};
use crate::mm::vm::{self, VmSpace, USER_END};
use crate::task::TaskContext;
use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

pub use crate::arch::entry::TrapFrame;
pub use crate::arch::fpu::FxArea;

/// RFLAGS bits user code may set: CF, PF, AF, ZF, SF, TF, DF, OF, AC, ID (Linux's
/// `FLAG_MASK` plus ID). IF is always set, IOPL, NT, RF, VM, VIF and VIP always clear.
const USER_RFLAGS: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | 0x4_0000 | 0x20_0000;
const RFLAGS_IF: u64 = 1 << 9;
const RFLAGS_FIXED: u64 = 1 << 1;

/// A user thread's registers (general, RIP, RSP, RFLAGS; the segment selectors are always
/// the user ones). `execute` enters user mode with them and leaves the thread's registers at
/// its return in them; `regs.vector` and `regs.error` then say why it returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserContext {
    /// The registers (`TrapFrame`'s layout, the entry code's).
    pub regs: TrapFrame,
}

impl UserContext {
    /// A thread about to start at `entry` with stack pointer `stack`, every other register 0
    /// (what a new program gets: glibc's `_start` takes RDX = 0 as "no `rtld_fini`").
    pub fn new(entry: u64, stack: u64) -> UserContext {
        let regs = TrapFrame { rip: entry, rsp: stack, rflags: RFLAGS_IF | RFLAGS_FIXED, ..TrapFrame::default() };
        UserContext { regs }
    }

    /// The system call number (RAX) and its six arguments (RDI, RSI, RDX, R10, R8, R9), as
    /// the x86_64 Linux ABI passes them.
    pub fn syscall_args(&self) -> (u64, [u64; 6]) {
        let r = &self.regs;
        (r.rax, [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9])
    }

    /// Sets the system call's return value (RAX). `syscall` also left RIP in RCX and RFLAGS in
    /// R11; the return restores them as they are here, as Linux's `sysret` does.
    pub fn set_syscall_return(&mut self, value: u64) {
        self.regs.rax = value;
    }
}

/// A CPU exception raised by user code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exception {
    /// The vector (0 #DE, 6 #UD, 13 #GP, 14 #PF, 16 #MF, 19 #XM, ...).
    pub vector: u8,
    /// The error code (for #PF: bit 0 present, bit 1 write, bit 2 user, bit 4 instruction
    /// fetch).
    pub error: u64,
    /// For #PF, the faulting address (CR2); else 0.
    pub addr: u64,
}

/// Why [`execute`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnReason {
    /// The thread made a system call ([`UserContext::syscall_args`]).
    Syscall,
    /// The thread raised an exception.
    Exception(Exception),
    /// An interrupt arrived in user mode and the kernel has something to do for the thread
    /// ([`Upcalls::user_event_pending`](crate::upcalls::Upcalls::user_event_pending)).
    Interrupted,
}

/// #GP's vector, which [`execute`] reports when it refuses to enter user mode.
const GP_VECTOR: u8 = 13;

/// Runs the current task's user thread with `ctx` until it comes back (module doc). The task
/// must have called [`TaskContext::enable_user`] (panics otherwise: its user state would not
/// follow it across switches) and must not hold a preemption count or run with interrupts
/// off. A RIP or RSP outside user space is not entered: that returns a #GP, as the CPU would
/// raise (Linux's `sigreturn` with a bad frame ends the same way, in SIGSEGV).
#[track_caller]
pub fn execute(ctx: &mut UserContext) -> ReturnReason {
    assert!(crate::percpu::current().user_task.load(Ordering::Relaxed), "user::execute from a task without user state");
    assert!(crate::irqflags::are_enabled(), "user::execute with interrupts off");
    let r = &mut ctx.regs;
    if r.rip >= USER_END || r.rsp >= USER_END {
        return ReturnReason::Exception(Exception { vector: GP_VECTOR, error: 0, addr: 0 });
    }
    r.cs = USER_CS.into();
    r.ss = USER_DS.into();
    r.rflags = (r.rflags & USER_RFLAGS) | RFLAGS_IF | RFLAGS_FIXED;
    crate::irqflags::disable();
    // Entering user mode turns interrupts on; coming back, off (the tracer's sections).
    crate::irqflags::hardirq_exit();
    // SAFETY: interrupts are off; the selectors, RIP and RFLAGS were just made valid; this
    // task's user state is switched (checked: `user_task`), and its TSS pointer was set at
    // the CPU's bring-up.
    unsafe { entry::enter_user(&mut ctx.regs) };
    let cr2 = ::x86_64::registers::control::Cr2::read_raw();
    crate::irqflags::hardirq_enter();
    crate::irqflags::enable();
    let r = &ctx.regs;
    match r.vector {
        SYSCALL_VECTOR => ReturnReason::Syscall,
        v if v < 32 => ReturnReason::Exception(Exception { vector: v as u8, error: r.error, addr: if v == 14 { cr2 } else { 0 } }),
        _ => ReturnReason::Interrupted,
    }
}

/// The entry code's call for a trap from user mode (interrupts off, on the task's kernel
/// stack): 1 to return to `execute`'s caller, 0 to resume user mode.
pub(crate) extern "C" fn cadence_user_trap(frame: &mut TrapFrame) -> u64 {
    if frame.vector < 32 {
        return 1;
    }
    crate::arch::idt::irq_from_user(frame.vector as u8);
    u64::from(crate::upcalls::user_event_pending())
}

/// A user thread's state that the context switch saves and loads (module doc).
pub(crate) struct UserCpuState {
    fx: FxArea,
    fs_base: u64,
    /// The kernel stack pointer of its `execute` frame (0 before its first `execute`).
    rsp0: u64,
    vm: Option<Arc<VmSpace>>,
}

/// The context switch's part for user state: saves `prev`'s (if a user thread), loads
/// `next`'s (its registers, FS base, RSP0 and address space), or the kernel's root for a
/// kernel task. Interrupts off, on the switching CPU.
///
/// # Safety
/// `prev` must be running on this CPU and `next` claimed by it (the switch's state machine),
/// so nothing else touches either's user state.
pub(crate) unsafe fn switch_user_state(prev: &TaskContext, next: &TaskContext) {
    let cpu = crate::percpu::current();
    // SAFETY: `prev` runs here (contract): its user state is ours to write.
    if let Some(p) = unsafe { prev.user_state() } {
        p.fx.save();
        p.fs_base = msr::read(Msr::FsBase);
        p.rsp0 = cpu.user_rsp0.load(Ordering::Relaxed);
    }
    // SAFETY: `next` is claimed by this CPU (contract).
    match unsafe { next.user_state() } {
        Some(n) => {
            set_rsp0(n.rsp0);
            n.fx.restore();
            // SAFETY: a user address (`set_fs_base` checks; 0 at first): the kernel does not
            // use FS.
            unsafe { msr::write(Msr::FsBase, n.fs_base) };
            vm::load_root(n.vm.as_ref().map_or_else(crate::mm::paging::kernel_root, |v| v.root()));
            cpu.user_task.store(true, Ordering::Relaxed);
        }
        None => {
            vm::load_root(crate::mm::paging::kernel_root());
            cpu.user_task.store(false, Ordering::Relaxed);
        }
    }
}

/// Points this CPU's traps from user mode (the per-CPU slot and the TSS's RSP0) at `rsp0`.
fn set_rsp0(rsp0: u64) {
    let cpu = crate::percpu::current();
    cpu.user_rsp0.store(rsp0, Ordering::Relaxed);
    let tss = cpu.tss.load(Ordering::Relaxed);
    // SAFETY: the TSS is this CPU's (set at bring-up, leaked), written only by this CPU with
    // interrupts off (the callers' context), and RSP0 is read only by a trap from user mode.
    unsafe { core::ptr::addr_of_mut!((*tss).privilege_stack_table[0]).write_unaligned(::x86_64::VirtAddr::new_truncate(rsp0)) };
}

impl TaskContext {
    /// Makes the calling task (this context must be the one running here) a user thread: from
    /// now on the switch saves and loads its user state, which starts as a new program's
    /// (initial FPU state, FS base 0, no address space: [`TaskContext::set_vm_space`]). Once;
    /// later calls change nothing. Panics if the context is not the one running here.
    pub fn enable_user(&self) {
        let state = Box::new(UserCpuState { fx: FxArea::initial(), fs_base: 0, rsp0: 0, vm: None });
        let irqs = crate::irqflags::save();
        self.check_running_on(crate::percpu::cpu_id());
        // SAFETY: this context runs here with interrupts off: no switch reads its state now.
        let slot = unsafe { self.user_slot() };
        if slot.is_none() {
            state.fx.restore();
            // SAFETY: 0 is a valid FS base; the kernel does not use FS.
            unsafe { msr::write(Msr::FsBase, 0) };
            *slot = Some(state);
            crate::percpu::current().user_task.store(true, Ordering::Relaxed);
        }
        crate::irqflags::restore(irqs);
    }

    /// Gives the calling task (this context, running here, a user thread) the address space
    /// `vm` (or none), loads it, and returns the one it had, which is no longer loaded here.
    /// Panics if the context is not running here or has no user state.
    pub fn set_vm_space(&self, vm: Option<Arc<VmSpace>>) -> Option<Arc<VmSpace>> {
        let irqs = crate::irqflags::save();
        self.check_running_on(crate::percpu::cpu_id());
        // SAFETY: as in `enable_user`.
        let state = unsafe { self.user_slot() }.as_mut().expect("set_vm_space on a task without user state");
        let old = core::mem::replace(&mut state.vm, vm);
        vm::load_root(state.vm.as_ref().map_or_else(crate::mm::paging::kernel_root, |v| v.root()));
        crate::irqflags::restore(irqs);
        old
    }
}

/// The calling user thread's x87/SSE registers (for `fork` and signal frames).
pub fn fpu_snapshot() -> FxArea {
    let mut a = FxArea::initial();
    a.save();
    a
}

/// Loads `fx` into the calling user thread's x87/SSE registers (`execve` with
/// [`FxArea::initial`], the child of `fork`, `sigreturn`).
pub fn set_fpu(fx: &FxArea) {
    fx.restore();
}

/// The calling user thread's FS base.
pub fn fs_base() -> u64 {
    msr::read(Msr::FsBase)
}

/// An address outside user space, where a user one is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotUserAddress;

/// Sets the calling user thread's FS base (`arch_prctl(ARCH_SET_FS)`); an address outside
/// user space is refused (Linux's EPERM).
pub fn set_fs_base(base: u64) -> Result<(), NotUserAddress> {
    if base >= USER_END {
        return Err(NotUserAddress);
    }
    // SAFETY: a user address; the kernel does not use FS, and the switch saves the MSR as
    // the running thread's.
    unsafe { msr::write(Msr::FsBase, base) };
    Ok(())
}
