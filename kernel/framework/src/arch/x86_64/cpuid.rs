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

/// Does the CPU offer x2APIC mode (CPUID.1:ECX bit 21)?
pub fn has_x2apic() -> bool {
    CpuId::new().get_feature_info().map(|f| f.has_x2apic()).unwrap_or(false)
}

/// Does the CPU report the hypervisor bit (running under QEMU/KVM)?
pub fn is_hypervisor() -> bool {
    CpuId::new().get_feature_info().map(|f| f.has_hypervisor()).unwrap_or(false)
}

/// CPUID.1:EDX, the feature bits Linux passes to programs as AT_HWCAP.
pub fn leaf1_edx() -> u32 {
    raw_cpuid::cpuid!(1).edx
}

/// One cache level as CPUID leaf 4 describes it (what Linux's `cacheinfo` shows in sysfs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cache {
    /// 1, 2, 3.
    pub level: u8,
    /// `Data`, `Instruction` or `Unified` (Linux's sysfs `type` words).
    pub kind: &'static str,
    /// Ways of associativity.
    pub ways: u32,
    /// Line size in bytes.
    pub line: u32,
    /// Number of sets.
    pub sets: u32,
    /// Physical line partitions.
    pub partitions: u32,
    /// How many logical CPUs share it at most (leaf 4, EAX bits 25..14, plus 1).
    pub sharing: u32,
}

impl Cache {
    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        u64::from(self.ways) * u64::from(self.line) * u64::from(self.sets) * u64::from(self.partitions)
    }

    /// The id of the instance of this cache that the CPU with `apic_id` uses: the CPUs sharing
    /// it are those whose APIC ids agree above the bits that number its sharers (Linux's
    /// `cpu_llc_id`/`cpu_l2c_id`, sysfs `cache/indexM/id`).
    pub fn id_of(&self, apic_id: u32) -> u32 {
        apic_id >> self.sharing.next_power_of_two().trailing_zeros()
    }
}

/// What `/proc/cpuinfo` and `lscpu` tell of the processor (the same on every CPU here).
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// CPUID leaf 0's vendor (`GenuineIntel`).
    pub vendor: alloc::string::String,
    /// The brand string of leaves 0x80000002-4, trimmed.
    pub brand: alloc::string::String,
    /// Family as Linux computes it (the extended family added to 15).
    pub family: u32,
    /// Model as Linux computes it (the extended model added for families 6 and 15).
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
    /// Highest standard leaf (`cpuid level`).
    pub max_leaf: u32,
    /// Physical address bits (leaf 0x80000008).
    pub phys_bits: u8,
    /// Virtual address bits (leaf 0x80000008).
    pub virt_bits: u8,
    /// `clflush size` in bytes.
    pub clflush: u32,
    /// Feature flags with Linux's names, in Linux's order (see [`FLAG_NAMES`]).
    pub flags: alloc::vec::Vec<&'static str>,
    /// The caches of leaf 4, in leaf order (L1d, L1i, L2, L3 on Intel).
    pub caches: alloc::vec::Vec<Cache>,
}

/// Linux's names of CPUID feature bits (`arch/x86/include/asm/cpufeatures.h`), by (register
/// word, bit), in Linux's word order: leaf 1 EDX, 0x80000001 EDX, leaf 1 ECX, 0x80000001 ECX,
/// leaf 7 EBX, leaf 7 ECX, leaf 7 EDX. Synthetic flags Linux derives (`constant_tsc`,
/// `nopl`, ...) are not CPUID bits and are not here.
pub const FLAG_NAMES: &[(u8, u8, &str)] = &[
    (0, 0, "fpu"),
    (0, 1, "vme"),
    (0, 2, "de"),
    (0, 3, "pse"),
    (0, 4, "tsc"),
    (0, 5, "msr"),
    (0, 6, "pae"),
    (0, 7, "mce"),
    (0, 8, "cx8"),
    (0, 9, "apic"),
    (0, 11, "sep"),
    (0, 12, "mtrr"),
    (0, 13, "pge"),
    (0, 14, "mca"),
    (0, 15, "cmov"),
    (0, 16, "pat"),
    (0, 17, "pse36"),
    (0, 18, "pn"),
    (0, 19, "clflush"),
    (0, 21, "dts"),
    (0, 22, "acpi"),
    (0, 23, "mmx"),
    (0, 24, "fxsr"),
    (0, 25, "sse"),
    (0, 26, "sse2"),
    (0, 27, "ss"),
    (0, 28, "ht"),
    (0, 29, "tm"),
    (0, 31, "pbe"),
    (1, 11, "syscall"),
    (1, 20, "nx"),
    (1, 22, "mmxext"),
    (1, 25, "fxsr_opt"),
    (1, 26, "pdpe1gb"),
    (1, 27, "rdtscp"),
    (1, 29, "lm"),
    (1, 30, "3dnowext"),
    (1, 31, "3dnow"),
    (2, 0, "pni"),
    (2, 1, "pclmulqdq"),
    (2, 2, "dtes64"),
    (2, 3, "monitor"),
    (2, 4, "ds_cpl"),
    (2, 5, "vmx"),
    (2, 6, "smx"),
    (2, 7, "est"),
    (2, 8, "tm2"),
    (2, 9, "ssse3"),
    (2, 11, "sdbg"),
    (2, 12, "fma"),
    (2, 13, "cx16"),
    (2, 14, "xtpr"),
    (2, 15, "pdcm"),
    (2, 17, "pcid"),
    (2, 18, "dca"),
    (2, 19, "sse4_1"),
    (2, 20, "sse4_2"),
    (2, 21, "x2apic"),
    (2, 22, "movbe"),
    (2, 23, "popcnt"),
    (2, 24, "tsc_deadline_timer"),
    (2, 25, "aes"),
    (2, 26, "xsave"),
    (2, 28, "avx"),
    (2, 29, "f16c"),
    (2, 30, "rdrand"),
    (2, 31, "hypervisor"),
    (3, 0, "lahf_lm"),
    (3, 1, "cmp_legacy"),
    (3, 2, "svm"),
    (3, 3, "extapic"),
    (3, 4, "cr8_legacy"),
    (3, 5, "abm"),
    (3, 6, "sse4a"),
    (3, 7, "misalignsse"),
    (3, 8, "3dnowprefetch"),
    (3, 9, "osvw"),
    (3, 11, "xop"),
    (3, 16, "fma4"),
    (3, 21, "tbm"),
    (3, 22, "topoext"),
    (4, 0, "fsgsbase"),
    (4, 1, "tsc_adjust"),
    (4, 3, "bmi1"),
    (4, 4, "hle"),
    (4, 5, "avx2"),
    (4, 7, "smep"),
    (4, 8, "bmi2"),
    (4, 9, "erms"),
    (4, 10, "invpcid"),
    (4, 11, "rtm"),
    (4, 14, "mpx"),
    (4, 16, "avx512f"),
    (4, 17, "avx512dq"),
    (4, 18, "rdseed"),
    (4, 19, "adx"),
    (4, 20, "smap"),
    (4, 23, "clflushopt"),
    (4, 24, "clwb"),
    (4, 28, "avx512cd"),
    (4, 29, "sha_ni"),
    (4, 30, "avx512bw"),
    (4, 31, "avx512vl"),
    (5, 1, "avx512vbmi"),
    (5, 2, "umip"),
    (5, 3, "pku"),
    (5, 4, "ospke"),
    (5, 8, "gfni"),
    (5, 9, "vaes"),
    (5, 10, "vpclmulqdq"),
    (5, 16, "la57"),
    (5, 22, "rdpid"),
    (6, 4, "fsrm"),
];

/// Reads the processor's identity (run on any CPU: they are alike here).
pub fn identity() -> Identity {
    let cpuid = CpuId::new();
    let vendor = cpuid.get_vendor_info().map(|v| alloc::string::String::from(v.as_str())).unwrap_or_default();
    let brand = cpuid
        .get_processor_brand_string()
        .map(|b| alloc::string::String::from(b.as_str().trim_matches(|c: char| c == '\0' || c == ' ')))
        .unwrap_or_default();
    let leaf0 = raw_cpuid::cpuid!(0);
    let leaf1 = raw_cpuid::cpuid!(1);
    let ext_max = raw_cpuid::cpuid!(0x8000_0000).eax;
    let ext1 = if ext_max >= 0x8000_0001 { raw_cpuid::cpuid!(0x8000_0001) } else { raw_cpuid::cpuid!(0) };
    let leaf7 = if leaf0.eax >= 7 { raw_cpuid::cpuid!(7, 0) } else { raw_cpuid::cpuid!(0) };
    let (ext1_edx, ext1_ecx) = if ext_max >= 0x8000_0001 { (ext1.edx, ext1.ecx) } else { (0, 0) };
    let (l7b, l7c, l7d) = if leaf0.eax >= 7 { (leaf7.ebx, leaf7.ecx, leaf7.edx) } else { (0, 0, 0) };
    let words = [leaf1.edx, ext1_edx, leaf1.ecx, ext1_ecx, l7b, l7c, l7d];
    let flags = FLAG_NAMES.iter().filter(|(w, b, _)| words[*w as usize] & (1 << b) != 0).map(|(_, _, n)| *n).collect();
    let base_family = (leaf1.eax >> 8) & 0xf;
    let family = if base_family == 0xf { base_family + ((leaf1.eax >> 20) & 0xff) } else { base_family };
    let base_model = (leaf1.eax >> 4) & 0xf;
    let model = if base_family == 6 || base_family == 0xf { base_model + (((leaf1.eax >> 16) & 0xf) << 4) } else { base_model };
    let (phys_bits, virt_bits) = if ext_max >= 0x8000_0008 {
        let r = raw_cpuid::cpuid!(0x8000_0008);
        ((r.eax & 0xff) as u8, ((r.eax >> 8) & 0xff) as u8)
    } else {
        (36, 48)
    };
    let mut caches = alloc::vec::Vec::new();
    if leaf0.eax >= 4 {
        for sub in 0..8 {
            let r = raw_cpuid::cpuid!(4, sub);
            let kind = match r.eax & 0x1f {
                1 => "Data",
                2 => "Instruction",
                3 => "Unified",
                _ => break,
            };
            caches.push(Cache {
                level: ((r.eax >> 5) & 0x7) as u8,
                kind,
                ways: ((r.ebx >> 22) & 0x3ff) + 1,
                partitions: ((r.ebx >> 12) & 0x3ff) + 1,
                line: (r.ebx & 0xfff) + 1,
                sets: r.ecx + 1,
                sharing: ((r.eax >> 14) & 0xfff) + 1,
            });
        }
    }
    Identity {
        vendor,
        brand,
        family,
        model,
        stepping: leaf1.eax & 0xf,
        max_leaf: leaf0.eax,
        phys_bits,
        virt_bits,
        clflush: ((leaf1.ebx >> 8) & 0xff) * 8,
        flags,
        caches,
    }
}
