//! Typed wrappers for the model-specific registers Cadence uses. Each register is a constant
//! of [`Msr`]; reads and writes are `unsafe` only inside this module.

/// A model-specific register number known to Cadence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Msr {
    /// IA32_APIC_BASE: LAPIC physical base, enable and BSP bits.
    ApicBase = 0x1b,
    /// IA32_TSC_DEADLINE: the LAPIC timer's deadline in TSC-deadline mode.
    TscDeadline = 0x6e0,
    /// IA32_EFER: long mode, NX enable.
    Efer = 0xc000_0080,
    /// IA32_STAR: the segment selectors `syscall` and `sysret` load.
    Star = 0xc000_0081,
    /// IA32_LSTAR: the `syscall` entry point.
    Lstar = 0xc000_0082,
    /// IA32_FMASK: RFLAGS bits `syscall` clears.
    Fmask = 0xc000_0084,
    /// IA32_FS_BASE: the running user thread's FS base (its TLS pointer).
    FsBase = 0xc000_0100,
    /// IA32_GS_BASE: the per-CPU area's address (see `percpu`).
    GsBase = 0xc000_0101,
    /// IA32_KERNEL_GS_BASE: what `swapgs` exchanges with GS base (0 while in the kernel; the
    /// per-CPU area's address while in user mode).
    KernelGsBase = 0xc000_0102,
}

/// The x2APIC register at xAPIC MMIO offset `offset`: MSR `0x800 + offset / 16` (Intel SDM
/// vol. 3A §11.12.1.2). Only `apic` uses it, and only once x2APIC mode is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct X2ApicReg(u32);

impl X2ApicReg {
    /// The MSR of the register at xAPIC offset `offset` (a multiple of 16 below 0x400).
    pub const fn from_offset(offset: usize) -> Self {
        X2ApicReg(0x800 + (offset as u32 >> 4))
    }
}

/// Reads an x2APIC register.
pub fn read_x2apic(reg: X2ApicReg) -> u64 {
    // SAFETY: `apic` calls this only in x2APIC mode (enabled after CPUID offered it), where
    // MSRs 0x800..0x8ff are the LAPIC's registers; reading one has no side effect (the
    // registers with read side effects have none in x2APIC mode either).
    unsafe { ::x86_64::registers::model_specific::Msr::new(reg.0).read() }
}

/// Writes an x2APIC register (an ICR write sends an IPI, an EOI write ends an interrupt: the
/// caller, `apic`, knows which it asks for).
pub fn write_x2apic(reg: X2ApicReg, value: u64) {
    // SAFETY: as `read_x2apic`: x2APIC mode is on, so the MSR exists; LAPIC registers affect
    // only interrupt delivery, which `apic` manages.
    unsafe { ::x86_64::registers::model_specific::Msr::new(reg.0).write(value) }
}

/// Reads an MSR.
pub fn read(msr: Msr) -> u64 {
    // SAFETY: every `Msr` variant is an architectural MSR present on all x86_64 CPUs Cadence
    // supports (TscDeadline is only touched after CPUID reports it); reading has no side effects.
    unsafe { ::x86_64::registers::model_specific::Msr::new(msr as u32).read() }
}

/// Writes an MSR.
///
/// # Safety
/// The caller must make sure the value keeps the CPU in a state the kernel relies on (e.g. do
/// not clear EFER.LME, point GS base only at a live per-CPU area).
pub unsafe fn write(msr: Msr, value: u64) {
    // SAFETY: forwarded to the caller's contract above.
    unsafe { ::x86_64::registers::model_specific::Msr::new(msr as u32).write(value) }
}
