//! x86_64 support: descriptor tables, interrupts, local/IO APIC, TSC, SMP bring-up, QEMU
//! firmware interfaces.

pub mod apic;
pub mod context;
pub mod cpuid;
pub mod entry;
pub mod fault;
pub mod fpu;
pub mod fwcfg;
pub mod gdt;
pub mod idt;
pub mod ioapic;
pub mod msr;
pub mod pci;
pub mod pic;
pub mod pit;
pub mod qemu;
pub mod rtc;
pub mod smp;
pub mod tsc;
pub mod uaccess;

/// Halts this CPU forever with interrupts disabled.
pub fn halt_forever() -> ! {
    loop {
        ::x86_64::instructions::interrupts::disable();
        ::x86_64::instructions::hlt();
    }
}

/// Waits for the next interrupt with interrupts enabled (the idle loop's body). `sti; hlt`
/// back to back so a wakeup interrupt cannot slip in between the two.
#[track_caller]
pub fn wait_for_interrupt() {
    crate::irqflags::enable_and_hlt();
}
