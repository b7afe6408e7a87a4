//! TLB shootdown: every online CPU flushes its TLB after kernel mappings were removed
//! (`mm::stack` unmaps freed kernel stacks and reuses their slots only after this).
//!
//! Protocol: the initiator bumps the global generation `TLB_GEN`, flushes its own TLB, sets
//! `IPI_REQ_TLB` in each other online CPU's requests and sends it a call-function IPI; each
//! CPU flushes and records the generation it flushed for (its `FLUSHED`); the initiator
//! waits until every CPU's recorded generation reaches its own. One shootdown at a time
//! (`SHOOTDOWN`).

use crate::percpu::PerCpuVar;
use core::sync::atomic::{AtomicU64, Ordering};

static TLB_GEN: AtomicU64 = AtomicU64::new(0);
static SHOOTDOWN: spin::Mutex<()> = spin::Mutex::new(());
/// The last generation each CPU flushed for (this module's per-CPU data).
static FLUSHED: PerCpuVar<AtomicU64> = PerCpuVar::new();

/// Creates CPU `cpu`'s flush record (bring-up, before the CPU's area is listed).
pub fn init_cpu(cpu: u32) {
    FLUSHED.init(cpu, AtomicU64::new(0));
}

/// The call-function IPI asked this CPU to flush (`IPI_REQ_TLB`).
pub fn flush_requested() {
    x86_64::instructions::tlb::flush_all();
    FLUSHED.this().store(TLB_GEN.load(Ordering::Acquire), Ordering::Release);
}

/// Flushes every online CPU's TLB and waits until they all did. Must be called with
/// interrupts enabled (another CPU may be waiting for *our* flush). Returns false if some CPU
/// did not answer within a second (the caller must then not reuse the unmapped addresses).
pub fn shootdown_all() -> bool {
    if !x86_64::instructions::interrupts::are_enabled() {
        return false;
    }
    let _one_at_a_time = SHOOTDOWN.lock();
    let gen = TLB_GEN.fetch_add(1, Ordering::AcqRel) + 1;
    x86_64::instructions::tlb::flush_all();
    let me = crate::percpu::cpu_id();
    for cpu in crate::percpu::online_cpus().filter(|c| c.cpu_id != me) {
        cpu.ipi_requests.fetch_or(crate::percpu::IPI_REQ_TLB, Ordering::AcqRel);
        crate::arch::apic::send_ipi(cpu.apic_id, crate::arch::apic::CALL_FUNCTION_VECTOR);
    }
    let deadline = crate::time::uptime_ns() + 1_000_000_000;
    for cpu in crate::percpu::online_cpus().filter(|c| c.cpu_id != me) {
        let Some(flushed) = FLUSHED.get(cpu.cpu_id) else { return false };
        while flushed.load(Ordering::Acquire) < gen {
            if crate::time::uptime_ns() > deadline {
                return false;
            }
            core::hint::spin_loop();
        }
    }
    true
}
