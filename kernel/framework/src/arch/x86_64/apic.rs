//! The local APIC, in x2APIC mode when the CPU offers it (through MSRs, 32-bit APIC ids: more
//! than 255 CPUs), else in xAPIC mode through MMIO (QEMU before 9.0 has no x2APIC under TCG).
//!
//! xAPIC: every CPU's LAPIC appears at the same physical address (from the MADT or
//! IA32_APIC_BASE), reached through the kernel's physical-memory mapping. x2APIC: register
//! offset `o` is MSR `0x800 + o / 16`, the ID register holds the whole 32-bit id, the ICR is
//! one 64-bit register with the destination in its high half and no delivery-pending bit.
//! Registers are the typed [`Reg`] constants; every access goes through [`read`]/[`write()`],
//! which pick the mode. The mode is chosen once, on the BSP, before any CPU uses its LAPIC
//! ([`choose_mode`], Linux's `x2apic_mode`); each CPU turns it on in its own IA32_APIC_BASE
//! ([`enable`]). `nox2apic` on the command line keeps xAPIC mode, as on Linux.
//!
//! Vectors (see also `idt`): timer 0x20, reschedule IPI 0x21, call-function IPI 0x22, error
//! 0xfe, spurious 0xff.
//!
//! Timer: calibrated once on the BSP against the TSC (divide-by-16, count down for 10 ms),
//! giving `timer_hz` = LAPIC timer input clock. Every CPU then runs its timers (the periodic tick
//! among them) in one-shot mode: see `timer`.

use super::msr::{self, Msr};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use volatile::VolatilePtr;

/// IDT vector of the LAPIC timer interrupt (Linux's `LOCAL_TIMER_VECTOR`): expires this CPU's
/// [`crate::timer`]s, the periodic tick among them.
pub const TIMER_VECTOR: u8 = 0x20;
/// IDT vector of the reschedule IPI (Linux's `RESCHEDULE_VECTOR`): the target CPU runs the
/// kernel's reschedule upcall and may preempt at interrupt exit.
pub const RESCHEDULE_VECTOR: u8 = 0x21;
/// IDT vector of the call-function IPI (Linux's `CALL_FUNCTION_VECTOR`): the target CPU serves
/// the request bits set in its `PerCpu::ipi_requests` (timer re-program, TLB flush, RT push).
pub const CALL_FUNCTION_VECTOR: u8 = 0x22;
/// IDT vector of LAPIC error interrupts (Linux's `ERROR_APIC_VECTOR`): the ESR is read and
/// counted as unexpected.
pub const ERROR_VECTOR: u8 = 0xfe;
/// IDT vector the LAPIC raises for spurious interrupts (Linux's `SPURIOUS_APIC_VECTOR`); its
/// handler sends no EOI (SDM vol. 3A §11.9).
pub const SPURIOUS_VECTOR: u8 = 0xff;

/// xAPIC register offsets (Intel SDM vol. 3A, table 11-1).
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
pub enum Reg {
    /// Local APIC ID: the APIC id in bits 24..31.
    Id = 0x20,
    /// Version and number of LVT entries.
    Version = 0x30,
    /// Task Priority Register (TPR): 0 accepts interrupts of every priority.
    TaskPriority = 0x80,
    /// End Of Interrupt: writing 0 acknowledges the in-service interrupt.
    Eoi = 0xb0,
    /// Spurious Interrupt Vector Register (SVR): bit 8 software-enables the LAPIC.
    SpuriousVector = 0xf0,
    /// Error Status Register (ESR): write it first to latch the errors, then read.
    ErrorStatus = 0x280,
    /// Interrupt Command Register, low half: writing it sends the IPI.
    IcrLow = 0x300,
    /// Interrupt Command Register, high half: the destination APIC id in bits 24..31.
    IcrHigh = 0x310,
    /// LVT timer entry: vector, mode (one-shot or TSC-deadline) and mask bit.
    LvtTimer = 0x320,
    /// LVT LINT0 entry (masked: no legacy PIC interrupts through the LAPIC).
    LvtLint0 = 0x350,
    /// LVT LINT1 entry (masked).
    LvtLint1 = 0x360,
    /// LVT error entry: routes LAPIC errors to [`ERROR_VECTOR`].
    LvtError = 0x370,
    /// Timer initial count (divided input-clock ticks): writing it starts a one-shot count, 0 stops it.
    TimerInitialCount = 0x380,
    /// Timer current count: the ticks left of the running count (read-only).
    TimerCurrentCount = 0x390,
    /// Timer divide configuration (divide-by-16 here).
    TimerDivide = 0x3e0,
}

const LVT_MASKED: u32 = 1 << 16;
const ICR_DELIVERY_PENDING: u32 = 1 << 12;
const ICR_LEVEL_ASSERT: u32 = 1 << 14;
const ICR_INIT: u32 = 0b101 << 8;
const ICR_STARTUP: u32 = 0b110 << 8;
const ICR_NMI: u32 = 0b100 << 8;
/// Destination shorthand "self" (the destination field is ignored).
const ICR_SELF: u32 = 0b01 << 18;
const TIMER_DIVIDE_BY_16: u32 = 0b0011;
const TIMER_DIVIDER: u64 = 16;

/// Virtual address of the LAPIC MMIO page (same on every CPU).
static LAPIC_VIRT: AtomicU64 = AtomicU64::new(0);
/// LAPIC timer input clock in Hz (before the divider).
static TIMER_HZ: AtomicU64 = AtomicU64::new(0);
/// Periodic tick rate in Hz.
static TICK_HZ: AtomicU32 = AtomicU32::new(250);

/// Records where the LAPIC is mapped. `phys` 0 means "read it from IA32_APIC_BASE".
pub fn set_base(phys: u64, phys_offset: u64) {
    let phys = if phys == 0 { msr::read(Msr::ApicBase) & 0xf_ffff_f000 } else { phys };
    LAPIC_VIRT.store(phys_offset + phys, Ordering::Relaxed);
}

/// x2APIC mode is in use (chosen by [`choose_mode`]).
static X2APIC: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// IA32_APIC_BASE bits: the LAPIC is enabled (xAPIC), and x2APIC mode (with EN).
const APIC_BASE_EN: u64 = 1 << 11;
const APIC_BASE_EXTD: u64 = 1 << 10;

/// Chooses the LAPIC mode for every CPU, on the BSP before its LAPIC is used: x2APIC if the CPU
/// offers it (CPUID.1:ECX bit 21) and `allow` (no `nox2apic`), else xAPIC. A firmware that already
/// turned x2APIC on leaves it on (x2APIC cannot go back to xAPIC without disabling the LAPIC).
/// Returns whether x2APIC mode is used.
pub fn choose_mode(allow: bool) -> bool {
    let already = msr::read(Msr::ApicBase) & APIC_BASE_EXTD != 0;
    let x2 = already || (allow && super::cpuid::has_x2apic());
    X2APIC.store(x2, Ordering::Relaxed);
    x2
}

/// Is the LAPIC used in x2APIC mode?
pub fn x2apic_mode() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

/// Turns x2APIC mode on in this CPU's IA32_APIC_BASE if [`choose_mode`] chose it (each CPU
/// for itself, first thing in [`enable`]).
fn enter_mode_this_cpu() {
    if !x2apic_mode() {
        return;
    }
    let base = msr::read(Msr::ApicBase);
    if base & APIC_BASE_EXTD == 0 {
        // SAFETY: CPUID offered x2APIC (checked by `choose_mode`); setting EN|EXTD moves this
        // CPU's LAPIC from xAPIC to x2APIC mode (an allowed transition, SDM §11.12.5), keeping
        // its base address and BSP bit.
        unsafe { msr::write(Msr::ApicBase, base | APIC_BASE_EN | APIC_BASE_EXTD) };
    }
}

fn reg_ptr(reg: Reg) -> VolatilePtr<'static, u32> {
    let addr = LAPIC_VIRT.load(Ordering::Relaxed) + reg as u64;
    let ptr = NonNull::new(addr as *mut u32).expect("LAPIC base set before use");
    // SAFETY: `addr` lies in the LAPIC's 4 KiB MMIO page inside the physical-memory mapping
    // (set by `set_base` at boot); every `Reg` offset is a 16-byte aligned 32-bit register.
    unsafe { VolatilePtr::new(ptr) }
}

/// Reads the calling CPU's LAPIC register `reg` (each CPU sees its own LAPIC at the same
/// address, or MSR). Any context, but only after [`set_base`] and [`choose_mode`].
pub fn read(reg: Reg) -> u32 {
    if x2apic_mode() {
        msr::read_x2apic(msr::X2ApicReg::from_offset(reg as usize)) as u32
    } else {
        reg_ptr(reg).read()
    }
}

/// Writes `value` to the calling CPU's LAPIC register `reg`. Any context, after [`set_base`];
/// to send an IPI use [`send_ipi`], which waits for the ICR and keeps its two writes together.
pub fn write(reg: Reg, value: u32) {
    if x2apic_mode() {
        msr::write_x2apic(msr::X2ApicReg::from_offset(reg as usize), value as u64)
    } else {
        reg_ptr(reg).write(value)
    }
}

/// This CPU's APIC id (xAPIC: bits 24..31 of the ID register; x2APIC: all 32 bits).
pub fn id() -> u32 {
    if x2apic_mode() {
        read(Reg::Id)
    } else {
        read(Reg::Id) >> 24
    }
}

/// Enables this CPU's LAPIC: software enable with the spurious vector, accept all priorities,
/// mask LINT0/1, route errors to `ERROR_VECTOR`.
pub fn enable() {
    enter_mode_this_cpu();
    write(Reg::TaskPriority, 0);
    write(Reg::LvtLint0, LVT_MASKED);
    write(Reg::LvtLint1, LVT_MASKED);
    write(Reg::LvtError, ERROR_VECTOR as u32);
    write(Reg::ErrorStatus, 0);
    write(Reg::SpuriousVector, 0x100 | SPURIOUS_VECTOR as u32);
    eoi();
}

/// Signals end of interrupt for the in-service interrupt.
#[inline]
pub fn eoi() {
    write(Reg::Eoi, 0);
}

/// Calibrates the LAPIC timer against the TSC; returns its input clock in Hz.
///
/// Each read of the timer's count is bracketed by two TSC reads, and a read whose bracket is wide
/// (the host descheduled this vCPU in between: see `tsc::refine`) is taken again, so a stall
/// cannot pass for timer ticks.
pub fn calibrate_timer() -> u64 {
    write(Reg::TimerDivide, TIMER_DIVIDE_BY_16);
    write(Reg::LvtTimer, LVT_MASKED);
    write(Reg::TimerInitialCount, u32::MAX);
    let (t0, c0) = read_count_bracketed();
    super::tsc::delay_us(10_000);
    let (t1, c1) = read_count_bracketed();
    write(Reg::TimerInitialCount, 0);
    let counted = c0.saturating_sub(c1) as u64;
    let elapsed_ns = super::tsc::ticks_to_ns(t1 - t0).max(1);
    let hz = (counted as u128 * TIMER_DIVIDER as u128 * 1_000_000_000 / elapsed_ns as u128) as u64;
    TIMER_HZ.store(hz, Ordering::Relaxed);
    hz
}

/// Reads the timer's current count with the TSC at the middle of the read: the read whose TSC
/// bracket is the tightest of a few (a few µs when undisturbed; the first under 20 µs is taken).
fn read_count_bracketed() -> (u64, u32) {
    let tight = super::tsc::ns_to_ticks(20_000);
    let read_once = || {
        let before = super::tsc::rdtsc();
        let count = read(Reg::TimerCurrentCount);
        let after = super::tsc::rdtsc();
        (after - before, before + (after - before) / 2, count)
    };
    let mut best = read_once(); // (spread, tsc midpoint, count)
    for _ in 0..7 {
        if best.0 <= tight {
            break;
        }
        let again = read_once();
        if again.0 < best.0 {
            best = again;
        }
    }
    (best.1, best.2)
}

/// LAPIC timer input clock in Hz (after calibration).
pub fn timer_hz() -> u64 {
    TIMER_HZ.load(Ordering::Relaxed)
}

/// The periodic tick rate in Hz (Linux's `HZ`, here a runtime setting; 250 by default).
pub fn tick_hz() -> u32 {
    TICK_HZ.load(Ordering::Relaxed)
}

/// Sets the tick rate in Hz (0 acts as 1). Each CPU's tick re-reads it when it re-arms, so the
/// new period takes effect from every CPU's next tick; any context.
pub fn set_tick_hz(hz: u32) {
    TICK_HZ.store(hz, Ordering::Relaxed);
}

const LVT_TIMER_TSC_DEADLINE: u32 = 0b10 << 17;
/// Use TSC-deadline mode (CPUID.1:ECX.TSC_Deadline; QEMU TCG does not offer it).
static TSC_DEADLINE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Chooses the timer mode once at boot: TSC-deadline when CPUID reports it, else one-shot.
/// Returns whether TSC-deadline mode is used.
pub fn detect_timer_mode() -> bool {
    let tscd = super::cpuid::has_tsc_deadline();
    TSC_DEADLINE.store(tscd, Ordering::Relaxed);
    tscd
}

/// Sets this CPU's timer up for [`arm_ns`] in the mode [`detect_timer_mode`] chose: the
/// divider and the LVT entry (vector, mode, unmasked) are written once here, so arming is one
/// register write (under TCG every LAPIC access is an exit into QEMU's device model, taken
/// under its global lock: arming with three writes was ~10% of a CPU's time under
/// `bench hackbench`, the hrtick re-arming at every switch). Call on each CPU before its first
/// timer, after [`calibrate_timer`] (which leaves the LVT masked).
pub fn timer_setup_this_cpu() {
    if TSC_DEADLINE.load(Ordering::Relaxed) {
        write(Reg::LvtTimer, TIMER_VECTOR as u32 | LVT_TIMER_TSC_DEADLINE);
    } else {
        write(Reg::TimerDivide, TIMER_DIVIDE_BY_16);
        write(Reg::LvtTimer, TIMER_VECTOR as u32);
    }
}

/// Arms this CPU's timer for `ns` from now (set up by [`timer_setup_this_cpu`]): TSC-deadline
/// mode writes the absolute TSC target to IA32_TSC_DEADLINE; one-shot mode loads the
/// count-down register.
pub fn arm_ns(ns: u64) {
    if TSC_DEADLINE.load(Ordering::Relaxed) {
        let target = super::tsc::rdtsc() + super::tsc::ns_to_ticks(ns).max(1);
        // SAFETY: TSC-deadline mode was detected through CPUID, so the MSR exists; writing a
        // future TSC value only arms this CPU's timer.
        unsafe { super::msr::write(super::msr::Msr::TscDeadline, target) };
    } else {
        let count = (ns as u128 * (timer_hz() / TIMER_DIVIDER) as u128 / 1_000_000_000).clamp(1, u32::MAX as u128);
        write(Reg::TimerInitialCount, count as u32);
    }
}

/// Disarms this CPU's timer (nothing pending in its queue: a tickless idle CPU with no timer).
/// One-shot mode loads a zero count, which stops the count-down; TSC-deadline mode writes 0 to
/// IA32_TSC_DEADLINE, which disarms it. A timer that already fired keeps its interrupt pending.
pub fn disarm() {
    if TSC_DEADLINE.load(Ordering::Relaxed) {
        // SAFETY: TSC-deadline mode was detected through CPUID, so the MSR exists; writing 0
        // only disarms this CPU's timer.
        unsafe { super::msr::write(super::msr::Msr::TscDeadline, 0) };
    } else {
        write(Reg::TimerInitialCount, 0);
    }
}

fn wait_icr_idle() {
    if x2apic_mode() {
        return; // x2APIC's ICR has no delivery-pending bit: a write is accepted at once
    }
    let mut spins = 0u32;
    while read(Reg::IcrLow) & ICR_DELIVERY_PENDING != 0 && spins < 10_000_000 {
        core::hint::spin_loop();
        spins += 1;
    }
}

/// Writes the ICR (destination, then command: the low write sends). Waits for a previous IPI's
/// delivery only before, as Linux's `__default_send_IPI_dest_field` does: every LAPIC access
/// is an exit into the VMM under emulation, and a wait after sending bought nothing.
fn send_icr(apic_id: u32, low: u32) {
    let flags = crate::irqflags::save();
    if x2apic_mode() {
        // One 64-bit write: destination (32-bit x2APIC id) high, command low.
        msr::write_x2apic(msr::X2ApicReg::from_offset(Reg::IcrLow as usize), (apic_id as u64) << 32 | low as u64);
    } else {
        wait_icr_idle();
        write(Reg::IcrHigh, apic_id << 24);
        write(Reg::IcrLow, low);
    }
    crate::irqflags::restore(flags);
}

/// Sends a fixed-delivery IPI with `vector` to the CPU with `apic_id`.
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, vector as u32 | ICR_LEVEL_ASSERT);
}

/// Raises `vector` on this CPU (a fixed-delivery IPI to itself): under emulation the vCPU's
/// own thread delivers it, at its next instruction boundary with interrupts on.
pub fn send_self_ipi(vector: u8) {
    send_icr(0, vector as u32 | ICR_LEVEL_ASSERT | ICR_SELF);
}

/// Sends an NMI to the CPU with `apic_id` (used to stop other CPUs on panic).
pub fn send_nmi(apic_id: u32) {
    send_icr(apic_id, ICR_NMI | ICR_LEVEL_ASSERT);
}

/// INIT IPI (first step of waking an AP).
pub fn send_init(apic_id: u32) {
    send_icr(apic_id, ICR_INIT | ICR_LEVEL_ASSERT);
}

/// Destination shorthand "all excluding self".
const ICR_ALL_BUT_SELF: u32 = 0b11 << 18;

/// INIT IPI to every other CPU (the destination shorthand): each goes to its wait-for-SIPI
/// state, executing nothing until a STARTUP IPI ([`crate::smp::park_aps`]).
pub fn send_init_all_but_self() {
    send_icr(0, ICR_INIT | ICR_LEVEL_ASSERT | ICR_ALL_BUT_SELF);
}

/// STARTUP IPI: the AP starts in real mode at `page << 12`.
pub fn send_startup(apic_id: u32, page: u8) {
    send_icr(apic_id, ICR_STARTUP | page as u32);
}
