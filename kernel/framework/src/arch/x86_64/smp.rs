//! Starting the application processors (APs).
//!
//! The BSP copies a small real-mode trampoline into a free page below 1 MiB (chosen from the
//! memory map, identity-mapped so it keeps running when the AP turns paging on), fills in its
//! data block, and sends INIT, then STARTUP twice (Intel SDM vol. 3A §9.4.4, "MP initialization
//! protocol"). Only one AP is started at a time: the data block is shared.
//!
//! The trampoline (AT&T syntax below) goes straight from real mode to long mode:
//! `CS = page >> 4`, so data is addressed relative to DS = CS;
//! 1. `lgdt` a 3-entry GDT (null, 64-bit code 0x08, data 0x10) stored in the page;
//! 2. CR4 = the BSP's CR4 (PAE and friends), CR3 = the BSP's page tables (all physical memory
//!    is below 4 GiB under QEMU's 512 MiB; checked by the BSP), EFER |= LME | NXE;
//! 3. CR0 |= PG | PE | WP, then a far jump through a patched m16:32 pointer to 64-bit code;
//! 4. in long mode: load data segments, `rsp` = the AP's stack, `rdi` = its per-CPU pointer,
//!    and call the Rust entry (`ap_entry(percpu) -> !`).
//!
//! Data block layout (patched by [`Trampoline::prepare`]): `gdtr.base` (u32), `farptr.offset`
//! (u32), `cr3` (u32), `cr4` (u32), `stack` (u64), `entry` (u64), `arg` (u64).

use core::sync::atomic::{AtomicU64, Ordering};

core::arch::global_asm!(
    r#"
.section .text.cadence_ap_trampoline, "ax"
.global cadence_ap_trampoline_start
.global cadence_ap_trampoline_end
.global cadence_ap_tramp_gdt
.global cadence_ap_tramp_gdtr
.global cadence_ap_tramp_farptr
.global cadence_ap_tramp_long
.global cadence_ap_tramp_cr3
.global cadence_ap_tramp_cr4
.global cadence_ap_tramp_stack
.global cadence_ap_tramp_entry
.global cadence_ap_tramp_arg
.code16
cadence_ap_trampoline_start:
    cli
    cld
    mov %cs, %ax
    mov %ax, %ds
    lgdtl (cadence_ap_tramp_gdtr - cadence_ap_trampoline_start)
    movl (cadence_ap_tramp_cr4 - cadence_ap_trampoline_start), %eax
    mov %eax, %cr4
    movl (cadence_ap_tramp_cr3 - cadence_ap_trampoline_start), %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $0x900, %eax
    wrmsr
    mov %cr0, %eax
    or $0x80010001, %eax
    mov %eax, %cr0
    ljmpl *(cadence_ap_tramp_farptr - cadence_ap_trampoline_start)
.code64
cadence_ap_tramp_long:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    mov cadence_ap_tramp_stack(%rip), %rsp
    mov cadence_ap_tramp_arg(%rip), %rdi
    mov cadence_ap_tramp_entry(%rip), %rax
    call *%rax
1:  hlt
    jmp 1b
.balign 8
cadence_ap_tramp_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
cadence_ap_tramp_gdtr:
    .word 23
    .long 0
.balign 8
cadence_ap_tramp_farptr:
    .long 0
    .word 0x08
.balign 8
cadence_ap_tramp_cr3:
    .long 0
cadence_ap_tramp_cr4:
    .long 0
cadence_ap_tramp_stack:
    .quad 0
cadence_ap_tramp_entry:
    .quad 0
cadence_ap_tramp_arg:
    .quad 0
cadence_ap_trampoline_end:
.text
"#,
    options(att_syntax)
);

extern "C" {
    static cadence_ap_trampoline_start: u8;
    static cadence_ap_trampoline_end: u8;
    static cadence_ap_tramp_gdt: u8;
    static cadence_ap_tramp_gdtr: u8;
    static cadence_ap_tramp_farptr: u8;
    static cadence_ap_tramp_long: u8;
    static cadence_ap_tramp_cr3: u8;
    static cadence_ap_tramp_cr4: u8;
    static cadence_ap_tramp_stack: u8;
    static cadence_ap_tramp_entry: u8;
    static cadence_ap_tramp_arg: u8;
}

/// Offset of a trampoline symbol from the trampoline's start.
macro_rules! off {
    ($sym:ident) => {
        // Only the symbols' addresses are taken (no read): no `unsafe` needed.
        (&raw const $sym as u64) - (&raw const cadence_ap_trampoline_start as u64)
    };
}

/// Set by an AP as the first thing in its Rust entry: proves the trampoline worked.
pub static AP_STARTED: AtomicU64 = AtomicU64::new(0);

/// The trampoline, installed at a low physical page.
pub struct Trampoline {
    phys: u64,
}

/// Why the trampoline could not be installed.
#[derive(Debug)]
pub enum TrampolineError {
    /// No free page below 1 MiB to hold it ([`Trampoline::install`] itself is handed a page and
    /// never returns this).
    NoLowPage,
    /// The BSP's top-level page table lies above 4 GiB: the trampoline loads CR3 as 32 bits.
    PageTablesAbove4G,
    /// Identity-mapping the trampoline's page failed.
    Map(crate::mm::paging::MapError),
}

impl Trampoline {
    /// Copies the trampoline into `phys` (a page below 1 MiB) and identity-maps it.
    pub fn install(phys: u64) -> Result<Self, TrampolineError> {
        let (l4, _) = ::x86_64::registers::control::Cr3::read();
        if l4.start_address().as_u64() >= 1 << 32 {
            return Err(TrampolineError::PageTablesAbove4G);
        }
        crate::mm::paging::identity_map(phys).map_err(TrampolineError::Map)?;
        let len = off!(cadence_ap_trampoline_end) as usize;
        assert!(len <= 4096, "trampoline fits one page");
        // SAFETY: the page is reserved for the trampoline (taken from the frame allocator's low
        // pages) and mapped through the physical-memory mapping; the source is the trampoline's
        // bytes in the kernel image.
        unsafe {
            core::ptr::copy_nonoverlapping(&raw const cadence_ap_trampoline_start, crate::mm::phys_to_virt(phys) as *mut u8, len);
        }
        let t = Trampoline { phys };
        t.write_u32(off!(cadence_ap_tramp_gdtr) + 2, (phys + off!(cadence_ap_tramp_gdt)) as u32);
        t.write_u32(off!(cadence_ap_tramp_farptr), (phys + off!(cadence_ap_tramp_long)) as u32);
        t.write_u32(off!(cadence_ap_tramp_cr3), l4.start_address().as_u64() as u32);
        // CR4.PCIDE (bit 17) may only be set in long mode: the trampoline loads CR4 before that.
        let cr4 = ::x86_64::registers::control::Cr4::read_raw() & !(1 << 17);
        t.write_u32(off!(cadence_ap_tramp_cr4), cr4 as u32);
        Ok(t)
    }

    fn write_u32(&self, offset: u64, value: u32) {
        // SAFETY: `offset` is one of the data block's fields inside the installed page (the
        // GDTR base is only 2-byte aligned, hence unaligned writes).
        unsafe { (crate::mm::phys_to_virt(self.phys + offset) as *mut u32).write_unaligned(value) }
    }

    fn write_u64(&self, offset: u64, value: u64) {
        // SAFETY: as in `write_u32`; the u64 fields are 8-byte aligned.
        unsafe { (crate::mm::phys_to_virt(self.phys + offset) as *mut u64).write_volatile(value) }
    }

    /// Sets the stack, entry point and argument for the next AP.
    pub fn prepare(&self, stack_top: u64, entry: extern "C" fn(u64) -> !, arg: u64) {
        self.write_u64(off!(cadence_ap_tramp_stack), stack_top);
        self.write_u64(off!(cadence_ap_tramp_entry), entry as usize as u64);
        self.write_u64(off!(cadence_ap_tramp_arg), arg);
        core::sync::atomic::fence(Ordering::SeqCst);
    }

    /// STARTUP vector (the page number).
    pub fn vector(&self) -> u8 {
        (self.phys >> 12) as u8
    }
}

/// Wakes the AP `apic_id` (INIT, STARTUP, STARTUP) and waits up to `timeout_ms` for it to
/// reach its Rust entry. Returns whether it did.
pub fn start_ap(t: &Trampoline, apic_id: u32, timeout_ms: u64) -> bool {
    let before = AP_STARTED.load(Ordering::Acquire);
    super::apic::send_init(apic_id);
    super::tsc::delay_us(10_000);
    for _ in 0..2 {
        super::apic::send_startup(apic_id, t.vector());
        super::tsc::delay_us(200);
        if AP_STARTED.load(Ordering::Acquire) != before {
            return true;
        }
    }
    let deadline = crate::time::uptime_ns() + timeout_ms * 1_000_000;
    while crate::time::uptime_ns() < deadline {
        if AP_STARTED.load(Ordering::Acquire) != before {
            return true;
        }
        core::hint::spin_loop();
    }
    // Put it back to wait-for-SIPI so it cannot run later on another AP's stack.
    super::apic::send_init(apic_id);
    false
}
