//! CPUID queries: CPU topology (leaf 0xB, fallback 0x1/0x4), TSC frequency (0x15/0x16),
//! feature bits (TSC-deadline, x2APIC). Thin wrappers over `raw-cpuid`.
//!
//! Topology decoding (Intel SDM vol. 3A §9.9): with leaf 0xB, level 0 (SMT) gives the number of
//! APIC-id bits for the thread (`smt_shift`), level 1 (core) the bits for thread+core
//! (`core_shift`): `thread = id & ((1<<smt_shift)-1)`,
//! `core = (id >> smt_shift) & ((1<<(core_shift-smt_shift))-1)`, `package = id >> core_shift`.

use raw_cpuid::{CpuId, TopologyType};

/// Where a CPU sits: package (socket), core within the package, SMT thread within the core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// The APIC id decoded (the x2APIC id of leaf 0xB, else leaf 1's 8-bit initial APIC id).
    pub apic_id: u32,
    /// Package (socket) number: the APIC id above the core bits.
    pub package: u32,
    /// Core number within the package.
    pub core: u32,
    /// SMT thread number within the core (0 without SMT).
    pub thread: u32,
}

/// Reads this CPU's topology (run on the CPU itself).
pub fn topology() -> Topology {
    let cpuid = CpuId::new();
    if let Some(iter) = cpuid.get_extended_topology_info() {
        let mut smt_shift = None;
        let mut core_shift = None;
        let mut x2apic_id = 0;
        for level in iter {
            x2apic_id = level.x2apic_id();
            match level.level_type() {
                TopologyType::SMT => smt_shift = Some(level.shift_right_for_next_apic_id()),
                TopologyType::Core => core_shift = Some(level.shift_right_for_next_apic_id()),
                _ => {}
            }
        }
        if let Some(smt) = smt_shift {
            let core_shift = core_shift.unwrap_or(smt);
            return decode(x2apic_id, smt, core_shift);
        }
    }
    // Fallback: leaf 1 (logical processors per package) and leaf 4 (cores per package).
    let apic_id = cpuid.get_feature_info().map(|f| f.initial_local_apic_id() as u32).unwrap_or(0);
    let logical = cpuid.get_feature_info().map(|f| f.max_logical_processor_ids() as u32).unwrap_or(1).max(1);
    let cores = cpuid.get_cache_parameters().and_then(|mut c| c.next()).map(|c| c.max_cores_for_package() as u32).unwrap_or(1).max(1);
    let threads = (logical / cores).max(1);
    let smt_shift = bits_for(threads);
    let core_shift = smt_shift + bits_for(cores);
    decode(apic_id, smt_shift, core_shift)
}

pub(crate) fn bits_for(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

pub(crate) fn decode(apic_id: u32, smt_shift: u32, core_shift: u32) -> Topology {
    let thread = apic_id & ((1u32 << smt_shift) - 1);
    let core_bits = core_shift.saturating_sub(smt_shift);
    let core = (apic_id >> smt_shift) & ((1u32 << core_bits) - 1);
    let package = apic_id.checked_shr(core_shift).unwrap_or(0);
    Topology { apic_id, package, core, thread }
}

/// Number of low APIC-id bits that number SMT threads within a core (0 without SMT).
pub fn smt_shift() -> u32 {
    let cpuid = CpuId::new();
    if let Some(iter) = cpuid.get_extended_topology_info() {
        for level in iter {
            if level.level_type() == TopologyType::SMT {
                return level.shift_right_for_next_apic_id();
            }
        }
    }
    0
}

/// TSC frequency from CPUID: `Some((hz, true))` from leaf 0x15, `Some((hz, false))` from 0x16.
pub fn tsc_hz_from_cpuid() -> Option<(u64, bool)> {
    let cpuid = CpuId::new();
    if let Some(tsc) = cpuid.get_tsc_info() {
        if let Some(hz) = tsc.tsc_frequency() {
            if hz > 0 {
                return Some((hz, true));
            }
        }
    }
    if let Some(f) = cpuid.get_processor_frequency_info() {
        let mhz = f.processor_base_frequency() as u64;
        if mhz > 0 {
            return Some((mhz * 1_000_000, false));
        }
    }
    None
}

/// Does the LAPIC support TSC-deadline mode? (QEMU TCG does not.)
pub fn has_tsc_deadline() -> bool {
    CpuId::new().get_feature_info().map(|f| f.has_tsc_deadline()).unwrap_or(false)
}

/// Does the CPU report the hypervisor bit (running under QEMU/KVM)?
pub fn is_hypervisor() -> bool {
    CpuId::new().get_feature_info().map(|f| f.has_hypervisor()).unwrap_or(false)
}

/// CPUID.1:EDX, the feature bits Linux passes to programs as AT_HWCAP.
pub fn leaf1_edx() -> u32 {
    raw_cpuid::cpuid!(1).edx
}
