//! The ways into and out of user mode: the trap stubs of every IDT vector, the `syscall` entry,
//! and the switch to user mode that [`crate::user::execute`] runs on.
//!
//! **The frame.** Every way in from user mode builds one [`TrapFrame`] (176 bytes: the fifteen
//! general registers, the vector, an error code and the CPU's interrupt frame) at the same place:
//! right below the kernel stack pointer that `execute` recorded on its way out (the per-CPU
//! `user_rsp0`, which is also the TSS's RSP0), where `execute` pushed the address of its
//! [`UserContext`](crate::user::UserContext). So the way back to `execute`'s caller
//! (`cadence_exit_to_kernel`) copies the frame into that context and unwinds `execute`'s six
//! saved registers: `execute` returns as if it were an ordinary call.
//!
//! **GS.** The kernel reaches its per-CPU area through the GS base. In user mode the GS base is
//! the user's (always 0: CR4.FSGSBASE is off, and loading a selector sets a zero base) and the
//! per-CPU area's address waits in IA32_KERNEL_GS_BASE; every way in from user mode starts with
//! `swapgs` and every way out ends with one. A stub knows it came from user mode by the saved
//! CS's privilege level. The three vectors that run on their own stacks (NMI, double fault,
//! machine check) can arrive anywhere, even between a `swapgs` and the instruction that leaves,
//! so they decide by the GS base itself (a kernel address has bit 63 set): Linux's "paranoid"
//! entry. They never return to user mode (each reports and stops the machine, or halts).
//!
//! **Vectors from the kernel** jump straight to the vector's `x86-interrupt` handler with the CPU's
//! frame untouched (the table `KERNEL_HANDLERS`, filled by `idt::build`), except a page fault on
//! the user-copy routine's string instructions, which resumes at its fixup ([`super::uaccess`]).
//! **From user mode** they go to [`crate::user`]'s trap handler with the whole frame: exceptions go
//! back to `execute`'s caller (the kernel's fault handling); interrupts run their handler (which
//! may preempt the task, as it would a kernel task) and return to user mode, unless the kernel asks
//! for the task (a signal to deliver).
//!
//! **`syscall`** arrives with interrupts off (IA32_FMASK clears IF, TF, DF, AC and NT), on the
//! user's stack: it saves the user stack pointer in a per-CPU scratch slot, takes `user_rsp0`,
//! builds the same frame (vector [`SYSCALL_VECTOR`], RIP from RCX, RFLAGS from R11) and goes
//! back to `execute`'s caller. Returns to user mode are `sysretq` when the frame allows it (RCX
//! and R11 hold RIP and RFLAGS, TF clear: after most system calls) and `iretq` otherwise
//! (`enter_user`); `execute` refuses a non-canonical RIP, on which `sysretq` would fault in
//! ring 0.

use super::gdt::{KERNEL_CS, SYSRET_BASE, USER_CS, USER_DS};
use super::msr::{self, Msr};
use crate::percpu::PerCpu;
use core::mem::offset_of;
use core::sync::atomic::AtomicU64;

/// The vector [`TrapFrame::vector`] records for a `syscall` (above every IDT vector).
pub const SYSCALL_VECTOR: u64 = 0x100;

/// Every register of a user thread as a way in from user mode saved them, in the order the
/// entry code pushes them (the lowest address first).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    /// The IDT vector, or [`SYSCALL_VECTOR`].
    pub vector: u64,
    /// The exception's error code (0 where the CPU pushes none).
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

const FRAME_SIZE: usize = core::mem::size_of::<TrapFrame>();
const _: () = assert!(FRAME_SIZE == 176 && FRAME_SIZE.is_multiple_of(16));

/// Where a vector arriving from kernel mode goes: its `x86-interrupt` handler (`idt::build`
/// fills this before the IDT is loaded; read by the stubs).
pub(super) static KERNEL_HANDLERS: [AtomicU64; 256] = [const { AtomicU64::new(0) }; 256];

extern "C" {
    /// The 256 stubs' addresses, by vector (for the IDT).
    static cadence_trap_stubs: [u64; 256];
    fn cadence_user_enter(ctx: *mut TrapFrame);
    fn cadence_user_enter_sysret(ctx: *mut TrapFrame);
    fn cadence_syscall_entry();
}

/// The address of vector `v`'s stub (the IDT's entry for it).
pub(super) fn stub(v: u8) -> u64 {
    // SAFETY: `cadence_trap_stubs` is a 256-entry table of addresses, written by the linker
    // (relocated by the loader) and never changed.
    unsafe { cadence_trap_stubs[v as usize] }
}

core::arch::global_asm!(
    r#"
.macro PUSH_GPRS
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
.endm

.macro POP_GPRS
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
.endm

.macro TRAP_STUB vec
.balign 16
cadence_trap_\vec:
.if (\vec == 2) || (\vec == 8) || (\vec == 18)
    push rax
    push rcx
    push rdx
    mov ecx, 0xc0000101
    rdmsr
    test edx, edx
    js 2f
    swapgs
2:
    pop rdx
    pop rcx
    pop rax
    jmp qword ptr [rip + {handlers} + \vec * 8]
.else
.if (\vec == 8) || (\vec == 10) || (\vec == 11) || (\vec == 12) || (\vec == 13) || (\vec == 14) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
    test byte ptr [rsp + 16], 3
    jnz 1f
.if \vec == 14
    // A kernel-mode page fault on one of the user-copy routine's string instructions resumes
    // at its fixup (`uaccess`), the error code dropped: [rsp] error code, [rsp + 8] RIP.
    push rax
    lea rax, [rip + cadence_copy_user_movsq]
    cmp [rsp + 16], rax
    lea rax, [rip + cadence_copy_user_fixup_movsq]
    je 3f
    lea rax, [rip + cadence_copy_user_movsb]
    cmp [rsp + 16], rax
    lea rax, [rip + cadence_copy_user_fixup_movsb]
    je 3f
    pop rax
    jmp qword ptr [rip + {handlers} + \vec * 8]
3:
    mov [rsp + 16], rax
    pop rax
    add rsp, 8
    iretq
.else
    jmp qword ptr [rip + {handlers} + \vec * 8]
.endif
1:
.else
    test byte ptr [rsp + 8], 3
    jnz 1f
    jmp qword ptr [rip + {handlers} + \vec * 8]
1:
    push 0
.endif
    push \vec
    jmp cadence_user_trap_entry
.endif
.endm

.section .text.cadence_entry, "ax"
.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129,130,131,132,133,134,135,136,137,138,139,140,141,142,143,144,145,146,147,148,149,150,151,152,153,154,155,156,157,158,159,160,161,162,163,164,165,166,167,168,169,170,171,172,173,174,175,176,177,178,179,180,181,182,183,184,185,186,187,188,189,190,191,192,193,194,195,196,197,198,199,200,201,202,203,204,205,206,207,208,209,210,211,212,213,214,215,216,217,218,219,220,221,222,223,224,225,226,227,228,229,230,231,232,233,234,235,236,237,238,239,240,241,242,243,244,245,246,247,248,249,250,251,252,253,254,255
TRAP_STUB \v
.endr

cadence_user_trap_entry:
    swapgs
    cld
    PUSH_GPRS
    mov rdi, rsp
    call {user_trap}
    test rax, rax
    jnz cadence_exit_to_kernel
    POP_GPRS
    add rsp, 16
    swapgs
    iretq

.global cadence_syscall_entry
cadence_syscall_entry:
    swapgs
    mov gs:[{scratch}], rsp
    mov rsp, gs:[{rsp0}]
    push {user_ds}
    push qword ptr gs:[{scratch}]
    push r11
    push {user_cs}
    push rcx
    push 0
    push {syscall_vector}
    PUSH_GPRS
    jmp cadence_exit_to_kernel

cadence_exit_to_kernel:
    mov rdi, [rsp + {frame_size}]
    mov rsi, rsp
    mov ecx, {frame_qwords}
    rep movsq
    add rsp, {frame_size}
    pop rdi
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

// The two ways out to user mode share their start: push the six callee-saved registers
// and the context's address (what `cadence_exit_to_kernel` unwinds), record the stack
// pointer as `user_rsp0` and the TSS's RSP0; and the loads of every general register but
// RCX, R11 and RDI (RDI, the context's address, goes last), which differ between them.
.macro USER_ENTER_SAVE
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    push rdi
    mov gs:[{rsp0}], rsp
    mov rax, gs:[{tss}]
    mov [rax + 4], rsp
.endm

.macro USER_ENTER_LOAD_GPRS
    mov r15, [rdi + 0]
    mov r14, [rdi + 8]
    mov r13, [rdi + 16]
    mov r12, [rdi + 24]
    mov r10, [rdi + 40]
    mov r9, [rdi + 48]
    mov r8, [rdi + 56]
    mov rbp, [rdi + 64]
    mov rsi, [rdi + 80]
    mov rdx, [rdi + 88]
    mov rbx, [rdi + 104]
    mov rax, [rdi + 112]
.endm

.global cadence_user_enter
cadence_user_enter:
    USER_ENTER_SAVE
    push qword ptr [rdi + 168]
    push qword ptr [rdi + 160]
    push qword ptr [rdi + 152]
    push qword ptr [rdi + 144]
    push qword ptr [rdi + 136]
    USER_ENTER_LOAD_GPRS
    mov r11, [rdi + 32]
    mov rcx, [rdi + 96]
    mov rdi, [rdi + 72]
    swapgs
    iretq

// RIP from RCX and RFLAGS from R11, as the frame's (`enter_user` checked), then the user
// stack, interrupts still off.
.global cadence_user_enter_sysret
cadence_user_enter_sysret:
    USER_ENTER_SAVE
    USER_ENTER_LOAD_GPRS
    mov rcx, [rdi + 136]
    mov r11, [rdi + 152]
    mov rsp, [rdi + 160]
    mov rdi, [rdi + 72]
    swapgs
    sysretq

.section .data.rel.ro.cadence_trap_stubs, "aw"
.balign 8
.global cadence_trap_stubs
cadence_trap_stubs:
.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129,130,131,132,133,134,135,136,137,138,139,140,141,142,143,144,145,146,147,148,149,150,151,152,153,154,155,156,157,158,159,160,161,162,163,164,165,166,167,168,169,170,171,172,173,174,175,176,177,178,179,180,181,182,183,184,185,186,187,188,189,190,191,192,193,194,195,196,197,198,199,200,201,202,203,204,205,206,207,208,209,210,211,212,213,214,215,216,217,218,219,220,221,222,223,224,225,226,227,228,229,230,231,232,233,234,235,236,237,238,239,240,241,242,243,244,245,246,247,248,249,250,251,252,253,254,255
    .quad cadence_trap_\v
.endr
.text
"#,
    handlers = sym KERNEL_HANDLERS,
    user_trap = sym crate::user::cadence_user_trap,
    scratch = const offset_of!(PerCpu, user_rsp_scratch),
    rsp0 = const offset_of!(PerCpu, user_rsp0),
    tss = const offset_of!(PerCpu, tss),
    user_ds = const USER_DS,
    user_cs = const USER_CS,
    syscall_vector = const SYSCALL_VECTOR,
    frame_size = const FRAME_SIZE,
    frame_qwords = const FRAME_SIZE / 8,
);

/// Enters user mode with `frame`'s registers and returns when the thread next comes back
/// (a `syscall`, an exception, or an interrupt the kernel wants it back for), with `frame`
/// holding its registers then.
///
/// # Safety
/// Interrupts must be off; this CPU's per-CPU area must point at its TSS; `frame` must have
/// `cs` = [`USER_CS`], `ss` = [`USER_DS`], a canonical lower-half `rip` and `rflags` with
/// IF set and IOPL, NT and VM clear (the caller, `user::execute`, makes sure). The running
/// task's user state must be switched by the context switch (`user::switch_user_state`).
///
/// A frame that `sysretq` can restore exactly (RCX holds RIP and R11 RFLAGS, as after a
/// `syscall`, and TF is clear) leaves through `sysretq`, as Linux's opportunistic `SYSRET`
/// does: under TCG `iretq` reads the CS and SS descriptors from the GDT, `sysretq` only
/// STAR. A non-canonical RIP would make `sysretq` fault in ring 0: the contract's lower-half
/// RIP rules that out. TF would trap right after it (Linux's reason to leave it to `iretq`).
pub(crate) unsafe fn enter_user(frame: &mut TrapFrame) {
    const TF: u64 = 1 << 8;
    let sysret = frame.rcx == frame.rip && frame.r11 == frame.rflags && frame.rflags & TF == 0;
    let stub = if sysret { cadence_user_enter_sysret } else { cadence_user_enter };
    // Either stub saves and restores the callee-saved registers and returns through
    // `cadence_exit_to_kernel` on the same stack, below which the frame was built. `sysretq`
    // takes CS and SS from STAR (`init_this_cpu`: the contract's selectors), RIP and RFLAGS
    // from RCX and R11 (equal to the frame's, checked), and the stub loads RSP just before it
    // with interrupts still off (only NMI, double fault and machine check, on their own
    // stacks, can come between, and they decide by the GS base).
    // SAFETY: the forwarded contract, and the stubs as said above.
    unsafe { stub(frame) }
}

/// Programs this CPU's `syscall` MSRs (STAR, LSTAR, FMASK, EFER.SCE and NXE) and clears
/// IA32_KERNEL_GS_BASE (the user's GS base while in the kernel: always 0).
pub fn init_this_cpu() {
    let star = (u64::from(SYSRET_BASE) << 48) | (u64::from(KERNEL_CS) << 32);
    // IF, TF, DF, AC, NT: the entry runs with interrupts off and the flags the kernel expects.
    let fmask: u64 = (1 << 9) | (1 << 8) | (1 << 10) | (1 << 18) | (1 << 14);
    let efer = msr::read(Msr::Efer) | 1 | (1 << 11);
    // SAFETY: STAR names this CPU's GDT selectors (`gdt`'s table), LSTAR the entry above,
    // which builds its frame on the stack `execute` left; setting EFER.SCE and NXE keeps long
    // mode; the kernel GS base is only ever swapped in by the entry code.
    unsafe {
        msr::write(Msr::Star, star);
        msr::write(Msr::Lstar, cadence_syscall_entry as *const () as u64);
        msr::write(Msr::Fmask, fmask);
        msr::write(Msr::Efer, efer);
        msr::write(Msr::KernelGsBase, 0);
    }
}
