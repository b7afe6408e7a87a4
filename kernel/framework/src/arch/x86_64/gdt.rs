//! Per-CPU GDT and TSS.
//!
//! Each CPU gets its own GDT (null, kernel code, kernel data, TSS) and TSS, because the TSS
//! holds per-CPU interrupt stacks. IST slots: [`DOUBLE_FAULT_IST`] and [`NMI_IST`], each a
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

/// The descriptor tables of one CPU (leaked: they live as long as the CPU).
pub struct CpuTables {
    /// This CPU's GDT: null, kernel code, kernel data, TSS.
    pub gdt: &'static GlobalDescriptorTable,
    /// This CPU's TSS, holding its IST stacks.
    pub tss: &'static TaskStateSegment,
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
    let tss: &'static TaskStateSegment = Box::leak(Box::new(tss));
    let mut gdt = GlobalDescriptorTable::new();
    let code = gdt.append(Descriptor::kernel_code_segment());
    let data = gdt.append(Descriptor::kernel_data_segment());
    let tss_sel = gdt.append(Descriptor::tss_segment(tss));
    let gdt: &'static GlobalDescriptorTable = Box::leak(Box::new(gdt));
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
