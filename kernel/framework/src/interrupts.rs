//! What each interrupt does (the IDT stubs in `arch::x86_64::idt` call these): each hands over
//! to the subsystem the interrupt is for — timers, the TLB flush of `mm::tlb`, the console —
//! or up to the kernel: the scheduler's IPIs and interrupt exit through
//! [`Upcalls`](crate::upcalls::Upcalls), device interrupts through the handlers the kernel's
//! drivers [`register`].

use core::sync::atomic::{AtomicU64, Ordering};
use spin::Once;

/// What an interrupt was, for the per-CPU counts `/proc/interrupts` shows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IrqKind {
    /// The LAPIC timer (Linux's `LOC`).
    Timer = 0,
    /// The reschedule IPI (`RES`).
    Reschedule = 1,
    /// The call-function IPI (`CAL`).
    CallFunction = 2,
    /// COM1's receive interrupt (ISA IRQ 4).
    Com1 = 3,
    /// The virtio-blk disk's line.
    VirtioBlk = 4,
    /// A vector nobody asked for (`SPU`).
    Unexpected = 5,
}

const IRQ_KINDS: usize = 6;

/// Per CPU, per [`IrqKind`]: interrupts taken (each counter written by its CPU only).
static COUNTS: [[AtomicU64; IRQ_KINDS]; crate::percpu::NR_CPUS] =
    [const { [const { AtomicU64::new(0) }; IRQ_KINDS] }; crate::percpu::NR_CPUS];

fn count(kind: IrqKind) {
    if let Some(c) = COUNTS.get(crate::percpu::cpu_id() as usize) {
        c[kind as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// Interrupts of `kind` CPU `cpu` has taken since boot.
pub fn count_of(cpu: u32, kind: IrqKind) -> u64 {
    COUNTS.get(cpu as usize).map_or(0, |c| c[kind as usize].load(Ordering::Relaxed))
}

fn total(kind: IrqKind) -> u64 {
    COUNTS.iter().map(|c| c[kind as usize].load(Ordering::Relaxed)).sum()
}

/// Vector of the COM1 receive interrupt (ISA IRQ 4, routed through the I/O APIC to CPU 0).
pub const COM1_VECTOR: u8 = 0x30;

/// COM1 has received bytes: move them to the console's input buffer and wake its reader.
/// (The IDT stub acknowledges the LAPIC and runs the interrupt exit afterwards.)
pub(crate) fn com1() {
    count(IrqKind::Com1);
    crate::console::rx_interrupt();
}

/// Vector of the virtio-blk disk's INTx line (routed through the I/O APIC to CPU 0 by the
/// kernel's driver, which [`register`]s its handler).
pub const VIRTIO_BLK_VECTOR: u8 = 0x31;

/// The vectors a driver may [`register`] a handler for, and their handlers.
const DEVICE_VECTORS: [u8; 1] = [VIRTIO_BLK_VECTOR];
static DEVICE_HANDLERS: [Once<fn()>; DEVICE_VECTORS.len()] = [const { Once::new() }; DEVICE_VECTORS.len()];

/// Registers `handler` for device vector `vector` (interrupt context, interrupts off; the
/// stub sends the EOI after it, so a level-triggered device must be quiet by then). Once per
/// vector: false if `vector` is not a device vector or already has a handler.
pub fn register(vector: u8, handler: fn()) -> bool {
    let Some(i) = DEVICE_VECTORS.iter().position(|&v| v == vector) else { return false };
    let mut fresh = false;
    DEVICE_HANDLERS[i].call_once(|| {
        fresh = true;
        handler
    });
    fresh
}

/// A device interrupt on `vector`: its registered handler, or counted as unexpected.
pub(crate) fn device(vector: u8) {
    if vector == VIRTIO_BLK_VECTOR {
        count(IrqKind::VirtioBlk);
    }
    match DEVICE_VECTORS.iter().position(|&v| v == vector).and_then(|i| DEVICE_HANDLERS[i].get()) {
        Some(handler) => handler(),
        None => count_unexpected(vector, 0),
    }
}

/// The end of an interrupt (the stubs call it last, interrupts still off): the kernel may
/// preempt the interrupted task here.
pub(crate) fn irq_exit() {
    crate::upcalls::irq_exit();
}

/// The LAPIC timer interrupt: expire this CPU's timers (the tick is one of them).
pub(crate) fn lapic_timer() {
    count(IrqKind::Timer);
    crate::timer::interrupt();
    irq_exit();
}

/// Did the timer interrupt this CPU is handling (or handled last) arrive in user mode? For
/// the tick's accounting of user and system time (Linux's `user_mode(get_irq_regs())` in
/// `update_process_times`).
pub fn timer_from_user() -> bool {
    crate::percpu::current().timer_from_user.load(core::sync::atomic::Ordering::Relaxed)
}

/// A reschedule IPI arrived.
pub(crate) fn reschedule_ipi() {
    count(IrqKind::Reschedule);
    crate::upcalls::reschedule_ipi();
    irq_exit();
}

/// A call-function IPI arrived.
pub(crate) fn call_function_ipi() {
    count(IrqKind::CallFunction);
    let cpu = crate::percpu::current();
    let req = cpu.ipi_requests.swap(0, Ordering::AcqRel);
    if req & crate::percpu::IPI_REQ_TIMER != 0 {
        crate::timer::reprogram_this_cpu();
    }
    if req & crate::percpu::IPI_REQ_TLB != 0 {
        crate::mm::tlb::flush_requested();
    }
    if req & crate::percpu::IPI_REQ_RT_PUSH != 0 {
        crate::upcalls::rt_push_requested(cpu.cpu_id);
    }
}

/// Asks `cpu` to re-program its timer (a timer earlier than its programmed one was armed).
pub fn kick_timer(cpu: &crate::percpu::PerCpu) {
    cpu.ipi_requests.fetch_or(crate::percpu::IPI_REQ_TIMER, Ordering::AcqRel);
    crate::trace::ipi_send(cpu.cpu_id, crate::arch::apic::CALL_FUNCTION_VECTOR, crate::time::uptime_ns());
    crate::arch::apic::send_ipi(cpu.apic_id, crate::arch::apic::CALL_FUNCTION_VECTOR);
}

/// Asks `cpu` to push its waiting RT tasks (`RT_PUSH_IPI`, the kernel's `sched::balance::pull_rt`).
pub fn request_rt_push(cpu: &crate::percpu::PerCpu) {
    cpu.ipi_requests.fetch_or(crate::percpu::IPI_REQ_RT_PUSH, Ordering::AcqRel);
    crate::trace::ipi_send(cpu.cpu_id, crate::arch::apic::CALL_FUNCTION_VECTOR, crate::time::uptime_ns());
    crate::arch::apic::send_ipi(cpu.apic_id, crate::arch::apic::CALL_FUNCTION_VECTOR);
}

/// An interrupt nobody asked for (counted; `info` is vector-specific, e.g. the APIC ESR).
pub fn count_unexpected(_vector: u8, _info: u32) {
    count(IrqKind::Unexpected);
}

/// Counters for tests and diagnostics: (unexpected, reschedule IPIs, call-function IPIs).
pub fn counters() -> (u64, u64, u64) {
    (total(IrqKind::Unexpected), total(IrqKind::Reschedule), total(IrqKind::CallFunction))
}
