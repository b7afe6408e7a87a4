//! Per-CPU GDT and TSS.
//!
//! Each CPU gets its own GDT and TSS, because the TSS holds per-CPU stacks: RSP0 (where a
//! trap from user mode starts, rewritten on every entry to user mode and every switch) and
//! the interrupt stacks. The GDT has Linux's layout, so user code sees Linux's selectors
//! (`__USER_CS` 0x33, `__USER_DS` 0x2b) and `syscall`/`sysret` find theirs through STAR:
//!
//! | index | selector | segment |
//! |---|---|---|
//! | 1 | 0x08 | (unused: Linux's 32-bit kernel code) |
//! | 2 | 0x10 | kernel code, 64-bit ([`KERNEL_CS`]) |
//! | 3 | 0x18 | kernel data ([`KERNEL_DS`]) |
//! | 4 | 0x23 | (left empty: Linux's 32-bit user code; no compat mode here, so `syscall` from it cannot happen) |
//! | 5 | 0x2b | user data ([`USER_DS`]) |
//! | 6 | 0x33 | user code, 64-bit ([`USER_CS`]) |
//! | 7–8 | 0x38 | the TSS |
//! IST slots: [`DOUBLE_FAULT_IST`] and [`NMI_IST`], each a
//! separate guarded stack, so a kernel stack overflow (a fault on the guard page) still gets a
//! working stack to report on.

use crate::mm::stack::KernelStack;
use ::x86_64::instructions::segmentation::{Segment, CS, DS, ES, SS};
use ::x86_64::instructions::tables::load_tss;
use ::x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use ::x86_64::structures::tss::TaskStateSegment;
use alloc::boxed::Box;

/// TSS interrupt-stack-table slot (0-based, as the IDT entry's stack index) of the double-fault
/// stack, so a fault on a kernel stack's guard page still has a stack (Linux's `IST_INDEX_DF`).
pub const DOUBLE_FAULT_IST: u16 = 0;
/// IST slot of the NMI stack: an NMI can arrive on any stack, even one that just overflowed
/// (Linux's `IST_INDEX_NMI`).
pub const NMI_IST: u16 = 1;
const IST_STACK_SIZE: usize = 16 * 1024;

/// Entries in each GDT: the null entry, six segments and the two-entry TSS descriptor.
const GDT_ENTRIES: usize = 9;

/// The kernel's code selector (what `syscall` loads: STAR\[47:32\]).
pub const KERNEL_CS: u16 = 0x10;
/// The kernel's data selector (STAR\[47:32\] + 8).
pub const KERNEL_DS: u16 = 0x18;
/// User mode's data and stack selector, RPL 3 (what 64-bit `sysret` loads: STAR\[63:48\] + 8).
pub const USER_DS: u16 = 0x2b;
/// User mode's 64-bit code selector, RPL 3 (STAR\[63:48\] + 16).
pub const USER_CS: u16 = 0x33;
/// STAR\[63:48\]: the base `sysret` adds to (Linux's `__USER32_CS`, 0x23).
pub const SYSRET_BASE: u16 = 0x23;

/// The descriptor tables of one CPU (leaked: they live as long as the CPU).
pub struct CpuTables {
    /// This CPU's GDT (the table in the module documentation).
    pub gdt: &'static GlobalDescriptorTable<GDT_ENTRIES>,
    /// This CPU's TSS, holding its RSP0 and IST stacks (written through the per-CPU area's
    /// pointer, by this CPU only).
    pub tss: *mut TaskStateSegment,
    /// Selector of the 64-bit kernel code segment (loaded into CS).
    pub code: SegmentSelector,
    /// Selector of the kernel data segment (loaded into SS, DS and ES).
    pub data: SegmentSelector,
}

/// Builds and loads this CPU's GDT and TSS, reloads the segment registers and the task register.
pub fn init_this_cpu() -> CpuTables {
    let mut tss = TaskStateSegment::new();
    for (slot, _) in [(DOUBLE_FAULT_IST, "double fault"), (NMI_IST, "nmi")] {
        let stack = KernelStack::allocate(IST_STACK_SIZE).expect("IST stack at boot");
        tss.interrupt_stack_table[slot as usize] = ::x86_64::VirtAddr::new(stack.top());
        core::mem::forget(stack); // IST stacks live as long as the CPU
    }
    let tss: *mut TaskStateSegment = Box::leak(Box::new(tss));
    let mut gdt = GlobalDescriptorTable::<GDT_ENTRIES>::empty();
    gdt.append(Descriptor::UserSegment(0));
    let code = gdt.append(Descriptor::kernel_code_segment());
    let data = gdt.append(Descriptor::kernel_data_segment());
    gdt.append(Descriptor::UserSegment(0));
    let user_data = gdt.append(Descriptor::user_data_segment());
    let user_code = gdt.append(Descriptor::user_code_segment());
    // SAFETY: the TSS is leaked (lives as long as the CPU) and only this CPU writes it, through
    // the pointer kept in its per-CPU area, never while the CPU reads it (RSP0 is read on a
    // trap from user mode; it is written with interrupts off, in the kernel).
    let tss_sel = gdt.append(Descriptor::tss_segment(unsafe { &*tss }));
    assert_eq!(
        (code.0, data.0, user_data.0, user_code.0),
        (KERNEL_CS, KERNEL_DS, USER_DS, USER_CS),
        "GDT layout (the selectors STAR and the entry code assume)"
    );
    let gdt: &'static GlobalDescriptorTable<GDT_ENTRIES> = Box::leak(Box::new(gdt));
    gdt.load();
    // SAFETY: the selectors index the GDT just loaded: `code` is a 64-bit code segment, `data`
    // a writable data segment and `tss_sel` a TSS descriptor pointing at a leaked TSS.
    unsafe {
        CS::set_reg(code);
        SS::set_reg(data);
        DS::set_reg(data);
        ES::set_reg(data);
        load_tss(tss_sel);
    }
    CpuTables { gdt, tss, code, data }
}
