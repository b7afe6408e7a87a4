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
