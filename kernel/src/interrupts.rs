//! What the kernel does on each interrupt (the IDT stubs in `arch::x86_64::idt` call these):
//! each hands over to the subsystem the interrupt is for (timers, the scheduler's IPIs, the
//! TLB flush of `mm::tlb`, drivers).

use core::sync::atomic::{AtomicU64, Ordering};

static UNEXPECTED: AtomicU64 = AtomicU64::new(0);
static CALL_FUNCTION_IPIS: AtomicU64 = AtomicU64::new(0);
static RESCHEDULE_IPIS: AtomicU64 = AtomicU64::new(0);

/// Vector of the COM1 receive interrupt (ISA IRQ 4, routed through the I/O APIC to CPU 0).
pub const COM1_VECTOR: u8 = 0x30;

/// COM1 has received bytes: move them to the console's input buffer and wake its reader.
/// (The IDT stub acknowledges the LAPIC and calls `sched::irq_exit` afterwards.)
pub fn com1() {
    crate::console::rx_interrupt();
}

/// Vector of the virtio-blk disk's INTx line (routed through the I/O APIC to CPU 0 by
/// `drivers::virtio_blk::probe`).
pub const VIRTIO_BLK_VECTOR: u8 = crate::drivers::virtio_blk::VIRTIO_BLK_VECTOR;

/// The disk completed requests: acknowledge it and wake their tasks. (The IDT stub sends the
/// EOI after this and calls `sched::irq_exit`.)
pub fn virtio_blk() {
    crate::drivers::virtio_blk::interrupt();
}

/// The LAPIC timer interrupt: expire this CPU's timers (the tick is one of them).
pub fn lapic_timer() {
    crate::timer::interrupt();
    crate::sched::irq_exit();
}

/// A reschedule IPI arrived.
pub fn reschedule_ipi() {
    RESCHEDULE_IPIS.fetch_add(1, Ordering::Relaxed);
    crate::sched::ttwu_pending();
    crate::sched::irq_exit();
}

/// A call-function IPI arrived.
pub fn call_function_ipi() {
    CALL_FUNCTION_IPIS.fetch_add(1, Ordering::Relaxed);
    let cpu = crate::percpu::current();
    let req = cpu.ipi_requests.swap(0, Ordering::AcqRel);
    if req & crate::percpu::IPI_REQ_TIMER != 0 {
        crate::timer::reprogram_this_cpu();
    }
    if req & crate::percpu::IPI_REQ_TLB != 0 {
        crate::mm::tlb::flush_requested();
    }
    if req & crate::percpu::IPI_REQ_RT_PUSH != 0 {
        crate::sched::balance::push_requested(cpu.cpu_id);
    }
}

/// Asks `cpu` to re-program its timer (a timer earlier than its programmed one was armed).
pub fn kick_timer(cpu: &crate::percpu::PerCpu) {
    cpu.ipi_requests.fetch_or(crate::percpu::IPI_REQ_TIMER, Ordering::AcqRel);
    crate::trace::ipi_send(cpu.cpu_id, crate::arch::apic::CALL_FUNCTION_VECTOR, crate::time::uptime_ns());
    crate::arch::apic::send_ipi(cpu.apic_id, crate::arch::apic::CALL_FUNCTION_VECTOR);
}

/// Asks `cpu` to push its waiting RT tasks (`RT_PUSH_IPI`, see `sched::balance::pull_rt`).
pub fn request_rt_push(cpu: &crate::percpu::PerCpu) {
    cpu.ipi_requests.fetch_or(crate::percpu::IPI_REQ_RT_PUSH, Ordering::AcqRel);
    crate::trace::ipi_send(cpu.cpu_id, crate::arch::apic::CALL_FUNCTION_VECTOR, crate::time::uptime_ns());
    crate::arch::apic::send_ipi(cpu.apic_id, crate::arch::apic::CALL_FUNCTION_VECTOR);
}

/// An interrupt nobody asked for (counted; `info` is vector-specific, e.g. the APIC ESR).
pub fn count_unexpected(_vector: u8, _info: u32) {
    UNEXPECTED.fetch_add(1, Ordering::Relaxed);
}

/// Counters for tests and diagnostics: (unexpected, reschedule IPIs, call-function IPIs).
pub fn counters() -> (u64, u64, u64) {
    (UNEXPECTED.load(Ordering::Relaxed), RESCHEDULE_IPIS.load(Ordering::Relaxed), CALL_FUNCTION_IPIS.load(Ordering::Relaxed))
}
