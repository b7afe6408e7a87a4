//! Copies between kernel memory and the loaded user address space through the user
//! addresses themselves, the hardware checking each access (Linux's `copy_from_user` /
//! `copy_to_user` with their exception-table entries, reduced to one routine).
//!
//! `cadence_copy_user` copies with `rep movsq`, then `rep movsb` for the last bytes. A page
//! fault in kernel mode on either instruction does not reach the kernel's page-fault handler:
//! the #PF stub (`entry`'s `TRAP_STUB 14`) resumes the routine at its fixup. After `rep movsq`
//! the fixup redoes what is left byte by byte, so that the copy stops exactly at the first
//! byte it cannot reach; after `rep movsb` it returns the count left. The CPU stops a string
//! instruction at a fault with RCX, RSI and RDI counting what it did, so no state is lost.
//!
//! What the hardware checks, the page walk of `mm::vm` checked in software before: the page is
//! present (a `PROT_NONE` page is not), and writable for a write, since CR0.WP makes a
//! kernel-mode write to a read-only page fault as a user write would (copy-on-write pages);
//! [`init_this_cpu`] checks that the boot code set it. No SMAP: the kernel may touch user pages
//! without `stac`/`clac` (with SMAP on, the routine would need them).

core::arch::global_asm!(
    r#"
.pushsection .text.cadence_entry, "ax"
.global cadence_copy_user
cadence_copy_user:
    mov rcx, rdx
    shr rcx, 3
    and edx, 7
.global cadence_copy_user_movsq
cadence_copy_user_movsq:
    rep movsq
    mov ecx, edx
.global cadence_copy_user_movsb
cadence_copy_user_movsb:
    rep movsb
    xor eax, eax
    ret
.global cadence_copy_user_fixup_movsq
cadence_copy_user_fixup_movsq:
    lea rcx, [rdx + rcx * 8]
    jmp cadence_copy_user_movsb
.global cadence_copy_user_fixup_movsb
cadence_copy_user_fixup_movsb:
    mov rax, rcx
    ret
.popsection
"#
);

extern "C" {
    /// Copies `len` bytes from `src` to `dst` (forward, DF clear as the ABI keeps it) and
    /// returns how many it did not copy: 0, or the count from the first byte whose access
    /// faulted.
    fn cadence_copy_user(dst: *mut u8, src: *const u8, len: usize) -> usize;
}

/// Copies `len` bytes from `src` to `dst`, one side user memory of the loaded address space;
/// returns the number of bytes not copied (0: all were), counted from the first byte that
/// could not be read or written.
///
/// # Safety
/// The kernel side (`dst` for a read from user memory, `src` for a write to it) must be valid
/// for `len` bytes. The user side must lie below the end of the lower half (`len` included),
/// and the address space it belongs to must stay loaded on this CPU for the whole copy
/// (preemption off, the caller having checked that it is loaded). Frames that a concurrent
/// unmap takes out are only freed after its TLB shootdown, which this CPU answers (interrupts
/// stay on), so the copy reads or writes either the old frame or faults.
pub(crate) unsafe fn copy_user(dst: *mut u8, src: *const u8, len: usize) -> usize {
    // SAFETY: forwarded contract; faults on the user side end at the fixup (module doc), and
    // the routine touches no memory but the two ranges and clobbers only RAX, RCX, RDX, RSI
    // and RDI, caller-saved in the C ABI.
    unsafe { cadence_copy_user(dst, src, len) }
}

/// Checks that CR0.WP is set on this CPU (the bootloader sets it on the first CPU, the AP
/// trampoline on the others): without it a kernel-mode write to a read-only user page, a
/// copy-on-write page, would not fault.
pub fn init_this_cpu() {
    use ::x86_64::registers::control::{Cr0, Cr0Flags};
    assert!(Cr0::read().contains(Cr0Flags::WRITE_PROTECT), "CR0.WP is clear: kernel writes to user memory would ignore read-only pages");
}
