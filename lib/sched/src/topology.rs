//! Scheduling domains and groups, built as Linux 6.12 builds them on x86.
//!
//! Input: what the kernel learns from CPUID and ACPI (per CPU: package, core, thread, LLC,
//! optional L2 cluster, NUMA node; the node distance table from the SLIT). Output: for every
//! CPU, the `sched_domain` hierarchy that Linux 6.12 attaches on the same machine, bottom-up
//! after degenerate levels are removed, with the spans, groups (and, on NUMA levels, their
//! balance masks), names, `SD_*` flags and `sd_init` tunables that Linux prints in
//! `/proc/schedstat` and `/sys/kernel/debug/sched/domains/cpuN/domainM/`.
//!
//! The construction follows, step by step and under Linux's own names:
//!
//! * arch/x86/kernel/smpboot.c `set_cpu_sibling_map` (`match_smt`, `match_l2c`, `match_llc`,
//!   `topology_sane`, `x86_has_numa_in_package`) for the SMT, CLS and MC masks, and
//!   `build_sched_topology` for the level table `SMT, CLS, MC, PKG` (PKG dropped when a
//!   package holds several nodes);
//! * kernel/sched/topology.c `sched_init_numa`: one extra level per distinct node distance
//!   (`NODE` for the local distance, then `NUMA` levels with `SDTL_OVERLAP`);
//! * `build_sched_domains`: per CPU, `sd_init` + `build_sched_domain` level by level until a
//!   span covers every CPU; then groups (`build_sched_groups`/`get_group` for ordinary
//!   levels, `build_overlap_sched_groups` with `find_descended_sibling`,
//!   `build_group_from_child_sched_domain`, `init_overlap_sched_group` and
//!   `build_balance_mask` for NUMA levels); then `imb_numa_nr`; then `cpu_attach_domain`
//!   per CPU (`sd_parent_degenerate`, `sd_degenerate`, the `SD_PREFER_SIBLING` transfer and
//!   the group-flag updates).
//!
//! Groups are shared between CPUs exactly where Linux shares them (per level, keyed by the
//! first CPU of the child span), so a group's flags and balance mask come out as Linux's
//! do, including when one CPU's attach rewrites a group another CPU also uses.
//!
//! Overlapping (NUMA) groups are built from each CPU's own point of view, starting with its
//! own child domain and walking the span from that CPU (`for_each_cpu_wrap`), and a
//! sibling whose child reaches outside the domain is replaced by its proper descendant
//! (`find_descended_sibling`, Linux 5.13). The "Decade of Wasted Cores" group-construction
//! bug (groups built once from CPU 0's perspective) therefore cannot occur; the tests check
//! that every CPU of a domain lies in a group of it and that no group leaves the domain.
//!
//! Not modelled (none applies to QEMU/TCG x86): asymmetric CPU capacity
//! (`SD_ASYM_CPUCAPACITY*`: CPUs of different capacities, hybrid parts), ITMT
//! (`SD_ASYM_PACKING` needs Turbo Boost Max 3.0 with the sysctl on), AMD TOPOEXT compute
//! units, `relax_domain_level`, cpusets partitions and isolated CPUs (the CPU map is every
//! CPU), hot-plug, and the runtime values (group capacity, `max_newidle_lb_cost`,
//! `balance_interval` after the first balance).
//!
//! All masks are [`CpuMask`]s (up to `NR_CPUS` CPUs), so the module works for any
//! width `CpuMask` provides.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

use crate::cpumask::{CpuMask, NR_CPUS};

// ---------------------------------------------------------------------------------------
// SD_* flags (include/linux/sched/sd_flags.h, 6.12)
// ---------------------------------------------------------------------------------------

/// A set of `SD_*` flags, with Linux 6.12's bit values (bit n = the n-th `SD_FLAG()` in
/// include/linux/sched/sd_flags.h).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SdFlags(pub u32);

/// Balance when about to become idle.
pub const SD_BALANCE_NEWIDLE: SdFlags = SdFlags(1 << 0);
/// Balance on exec.
pub const SD_BALANCE_EXEC: SdFlags = SdFlags(1 << 1);
/// Balance on fork, clone.
pub const SD_BALANCE_FORK: SdFlags = SdFlags(1 << 2);
/// Balance on wakeup.
pub const SD_BALANCE_WAKE: SdFlags = SdFlags(1 << 3);
/// Consider waking the task on the waking CPU.
pub const SD_WAKE_AFFINE: SdFlags = SdFlags(1 << 4);
/// Domain members have different CPU capacities.
pub const SD_ASYM_CPUCAPACITY: SdFlags = SdFlags(1 << 5);
/// Domain members span every distinct CPU capacity.
pub const SD_ASYM_CPUCAPACITY_FULL: SdFlags = SdFlags(1 << 6);
/// Domain members share CPU capacity (SMT).
pub const SD_SHARE_CPUCAPACITY: SdFlags = SdFlags(1 << 7);
/// Domain members share a cluster (L2 or LLC tags).
pub const SD_CLUSTER: SdFlags = SdFlags(1 << 8);
/// Domain members share the last-level cache.
pub const SD_SHARE_LLC: SdFlags = SdFlags(1 << 9);
/// Only one load-balancing instance at a time (NUMA levels).
pub const SD_SERIALIZE: SdFlags = SdFlags(1 << 10);
/// Place busy tasks earlier in the domain (ITMT, SMT quirks).
pub const SD_ASYM_PACKING: SdFlags = SdFlags(1 << 11);
/// Prefer to place tasks in a sibling domain.
pub const SD_PREFER_SIBLING: SdFlags = SdFlags(1 << 12);
/// The groups of this level overlap (NUMA levels above NODE).
pub const SD_OVERLAP: SdFlags = SdFlags(1 << 13);
/// Cross-node balancing.
pub const SD_NUMA: SdFlags = SdFlags(1 << 14);

/// Number of `SD_*` flags (`__SD_FLAG_CNT`).
pub const SD_FLAG_CNT: usize = 15;

/// Metaflag: if a domain has the flag, its child must have it too.
pub const SDF_SHARED_CHILD: u8 = 0x1;
/// Metaflag: if a domain has the flag, its parent must have it too.
pub const SDF_SHARED_PARENT: u8 = 0x2;
/// Metaflag: the flag only matters on a domain with more than one group.
pub const SDF_NEEDS_GROUPS: u8 = 0x4;

/// One entry of Linux's `sd_flag_debug[]`: the flag's name and metaflags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdFlagDebug {
    /// `SD_...`, as debugfs prints it.
    pub name: &'static str,
    /// `SDF_*` bits.
    pub meta_flags: u8,
}

/// Linux's `sd_flag_debug[]`, indexed by bit number.
pub const SD_FLAG_DEBUG: [SdFlagDebug; SD_FLAG_CNT] = [
    SdFlagDebug { name: "SD_BALANCE_NEWIDLE", meta_flags: SDF_SHARED_CHILD | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_BALANCE_EXEC", meta_flags: SDF_SHARED_CHILD | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_BALANCE_FORK", meta_flags: SDF_SHARED_CHILD | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_BALANCE_WAKE", meta_flags: SDF_SHARED_CHILD | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_WAKE_AFFINE", meta_flags: SDF_SHARED_CHILD },
    SdFlagDebug { name: "SD_ASYM_CPUCAPACITY", meta_flags: SDF_SHARED_PARENT | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_ASYM_CPUCAPACITY_FULL", meta_flags: SDF_SHARED_PARENT | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_SHARE_CPUCAPACITY", meta_flags: SDF_SHARED_CHILD | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_CLUSTER", meta_flags: SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_SHARE_LLC", meta_flags: SDF_SHARED_CHILD | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_SERIALIZE", meta_flags: SDF_SHARED_PARENT | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_ASYM_PACKING", meta_flags: SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_PREFER_SIBLING", meta_flags: SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_OVERLAP", meta_flags: SDF_SHARED_PARENT | SDF_NEEDS_GROUPS },
    SdFlagDebug { name: "SD_NUMA", meta_flags: SDF_SHARED_PARENT | SDF_NEEDS_GROUPS },
];

const fn flags_with_meta(meta: u8) -> SdFlags {
    let mut bits = 0u32;
    let mut i = 0;
    while i < SD_FLAG_CNT {
        if SD_FLAG_DEBUG[i].meta_flags & meta != 0 {
            bits |= 1 << i;
        }
        i += 1;
    }
    SdFlags(bits)
}

/// Flags that need at least two groups (`SD_DEGENERATE_GROUPS_MASK`).
pub const SD_DEGENERATE_GROUPS_MASK: SdFlags = flags_with_meta(SDF_NEEDS_GROUPS);
/// Flags with `SDF_SHARED_CHILD` (`SD_SHARED_CHILD_MASK`).
pub const SD_SHARED_CHILD_MASK: SdFlags = flags_with_meta(SDF_SHARED_CHILD);

impl SdFlags {
    /// No flag.
    pub const EMPTY: SdFlags = SdFlags(0);

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Every flag of `other` is set here.
    pub const fn contains(self, other: SdFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// At least one flag of `other` is set here.
    pub const fn intersects(self, other: SdFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// Names of the set flags in bit order (`for_each_set_bit` over `sd_flag_debug[]`).
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        SD_FLAG_DEBUG.iter().enumerate().filter(move |(i, _)| self.0 & (1 << i) != 0).map(|(_, d)| d.name)
    }

    /// What `/sys/kernel/debug/sched/domains/cpuN/domainM/flags` (and `groups_flags`)
    /// reads: each name followed by a space, then a newline (kernel/sched/debug.c
    /// `sd_flags_show`). No flag reads as `"\n"`.
    pub fn debugfs_text(self) -> String {
        let mut out = String::new();
        for name in self.names() {
            out.push_str(name);
            out.push(' ');
        }
        out.push('\n');
        out
    }
}

impl fmt::Debug for SdFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SdFlags(")?;
        for (i, name) in self.names().enumerate() {
            if i > 0 {
                f.write_str("|")?;
            }
            f.write_str(name)?;
        }
        f.write_str(")")
    }
}

impl BitOr for SdFlags {
    type Output = SdFlags;
    fn bitor(self, rhs: SdFlags) -> SdFlags {
        SdFlags(self.0 | rhs.0)
    }
}

impl BitAnd for SdFlags {
    type Output = SdFlags;
    fn bitand(self, rhs: SdFlags) -> SdFlags {
        SdFlags(self.0 & rhs.0)
    }
}

impl Not for SdFlags {
    type Output = SdFlags;
    fn not(self) -> SdFlags {
        SdFlags(!self.0)
    }
}

impl BitOrAssign for SdFlags {
    fn bitor_assign(&mut self, rhs: SdFlags) {
        self.0 |= rhs.0;
    }
}

impl BitAndAssign for SdFlags {
    fn bitand_assign(&mut self, rhs: SdFlags) {
        self.0 &= rhs.0;
    }
}

// ---------------------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------------------

/// Linux's `LOCAL_DISTANCE`: a node's distance to itself.
pub const LOCAL_DISTANCE: u8 = 10;
/// Linux's `REMOTE_DISTANCE`: every other node's distance when there is no SLIT.
pub const REMOTE_DISTANCE: u8 = 20;
/// Linux's `RECLAIM_DISTANCE` (the default `node_reclaim_distance`): NUMA levels farther
/// than this lose `SD_BALANCE_EXEC`, `SD_BALANCE_FORK` and `SD_WAKE_AFFINE`.
pub const RECLAIM_DISTANCE: u32 = 30;

/// What the kernel knows of one CPU (from CPUID leaves 0xB/0x1F/4 and the SRAT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpuTopo {
    /// Physical package (socket) id.
    pub package: u32,
    /// Core id, unique within the package.
    pub core: u32,
    /// Thread number within the core.
    pub thread: u32,
    /// Last-level-cache id: CPUs with the same id (and node) share their LLC.
    pub llc: u32,
    /// L2 cache id (`cpu_l2c_id`) if CPUID reports one; `None` is Linux's `BAD_APICID`,
    /// where the cluster level falls back to the SMT siblings (`match_l2c`). QEMU's CPU
    /// models give an L2 per core, so `None` and "one id per core" both mean: no cluster.
    pub l2: Option<u32>,
    /// NUMA node (from the SRAT; 0 without one).
    pub node: u32,
}

/// The node distance table (`node_distance(a, b)`), as x86 fills it from the ACPI SLIT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDistances {
    nr_nodes: usize,
    table: Vec<u8>,
}

impl NodeDistances {
    /// No SLIT: `LOCAL_DISTANCE` (10) on the diagonal, `REMOTE_DISTANCE` (20) elsewhere.
    pub fn without_slit(nr_nodes: usize) -> NodeDistances {
        let n = nr_nodes.max(1);
        let table = (0..n * n).map(|k| if k / n == k % n { LOCAL_DISTANCE } else { REMOTE_DISTANCE }).collect();
        NodeDistances { nr_nodes: n, table }
    }

    /// From a SLIT's `nr_nodes * nr_nodes` entries (row `a` = distances from node `a`), as
    /// Linux's `acpi_numa_slit_init`: a table that `slit_valid` rejects (wrong size, a
    /// diagonal entry other than 10, an off-diagonal entry of 10 or less) is ignored and
    /// the defaults apply ("ACPI: SLIT table looks invalid. Not used."). Asymmetric tables
    /// are accepted, as Linux accepts them.
    pub fn from_slit(nr_nodes: usize, entries: &[u8]) -> NodeDistances {
        NodeDistances::try_from_matrix(nr_nodes, entries).unwrap_or_else(|_| NodeDistances::without_slit(nr_nodes))
    }

    /// Like [`NodeDistances::from_slit`] but reports an invalid table instead of
    /// falling back to the defaults.
    pub fn try_from_matrix(nr_nodes: usize, entries: &[u8]) -> Result<NodeDistances, TopologyError> {
        if nr_nodes == 0 || entries.len() != nr_nodes * nr_nodes {
            return Err(TopologyError::InvalidDistances);
        }
        let valid = entries.iter().enumerate().all(|(k, &d)| {
            let (a, b) = (k / nr_nodes, k % nr_nodes);
            if a == b {
                d == LOCAL_DISTANCE
            } else {
                d > LOCAL_DISTANCE
            }
        });
        if !valid {
            return Err(TopologyError::InvalidDistances);
        }
        Ok(NodeDistances { nr_nodes, table: entries.to_vec() })
    }

    /// Number of nodes (`nr_node_ids`).
    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes
    }

    /// `node_distance(a, b)`; nodes outside the table get the defaults, as on x86.
    pub fn distance(&self, a: usize, b: usize) -> u32 {
        if a < self.nr_nodes && b < self.nr_nodes {
            u32::from(self.table[a * self.nr_nodes + b])
        } else if a == b {
            u32::from(LOCAL_DISTANCE)
        } else {
            u32::from(REMOTE_DISTANCE)
        }
    }
}

/// Why a machine description was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// No CPU, or more than `CpuMask` can hold.
    CpuCount,
    /// A CPU's node is not in the distance table.
    NodeOutOfRange {
        /// The CPU.
        cpu: usize,
    },
    /// Two CPUs claim the same package, core and thread.
    DuplicateThread {
        /// The later CPU.
        cpu: usize,
    },
    /// Some CPUs report an L2 id and others do not.
    MixedL2,
    /// The levels would not nest (threads of a core in different LLCs or L2s, or CPUs
    /// sharing an L2 in different LLCs). Linux prints "BUG: arch topology borken" and
    /// widens the parent; we refuse such a description instead.
    NotNested {
        /// A CPU whose levels do not nest.
        cpu: usize,
    },
    /// A distance table that `slit_valid` rejects (see [`NodeDistances::try_from_matrix`]).
    InvalidDistances,
}

/// A machine: its CPUs (CPU id = index) and node distances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineTopology {
    cpus: Vec<CpuTopo>,
    distances: NodeDistances,
    node_reclaim_distance: u32,
}

impl MachineTopology {
    /// Checks and stores a machine description. `node_reclaim_distance` starts at
    /// [`RECLAIM_DISTANCE`] (Linux raises it to 32 on AMD Zen; see
    /// [`MachineTopology::with_node_reclaim_distance`]).
    pub fn new(cpus: Vec<CpuTopo>, distances: NodeDistances) -> Result<MachineTopology, TopologyError> {
        if cpus.is_empty() || cpus.len() > NR_CPUS {
            return Err(TopologyError::CpuCount);
        }
        if let Some(cpu) = cpus.iter().position(|c| c.node as usize >= distances.nr_nodes()) {
            return Err(TopologyError::NodeOutOfRange { cpu });
        }
        let with_l2 = cpus.iter().filter(|c| c.l2.is_some()).count();
        if with_l2 != 0 && with_l2 != cpus.len() {
            return Err(TopologyError::MixedL2);
        }
        for (cpu, c) in cpus.iter().enumerate() {
            for o in &cpus[..cpu] {
                if (o.package, o.core, o.thread) == (c.package, c.core, c.thread) {
                    return Err(TopologyError::DuplicateThread { cpu });
                }
                let same_core = (o.package, o.core) == (c.package, c.core);
                let same_l2 = c.l2.is_some() && o.l2 == c.l2;
                if (same_core && (o.llc != c.llc || o.l2 != c.l2)) || (same_l2 && o.llc != c.llc) {
                    return Err(TopologyError::NotNested { cpu });
                }
            }
        }
        Ok(MachineTopology { cpus, distances, node_reclaim_distance: RECLAIM_DISTANCE })
    }

    /// Sets `node_reclaim_distance` (NUMA levels farther than this lose
    /// `SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE`).
    pub fn with_node_reclaim_distance(mut self, distance: u32) -> MachineTopology {
        self.node_reclaim_distance = distance;
        self
    }

    /// Number of CPUs (`nr_cpu_ids`).
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The CPUs, by CPU id.
    pub fn cpus(&self) -> &[CpuTopo] {
        &self.cpus
    }

    /// The node distances.
    pub fn distances(&self) -> &NodeDistances {
        &self.distances
    }
}

// ---------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------

/// One scheduling group, as a domain's group list refers to it (several CPUs' domains
/// may refer to the same group, as in Linux).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedGroup {
    /// `sched_group_span()`.
    pub span: CpuMask,
    /// `group_balance_mask()`: the CPUs of the group that would reach this group from
    /// their own domains. Equal to `span` except on overlapping (NUMA) levels.
    pub balance_mask: CpuMask,
    /// `sgc->id`, the number `sched_domain_debug` prints before each group.
    pub id: usize,
    /// `sg->flags`: the flags of the child domain the group was built from, as later
    /// rewritten by `cpu_attach_domain` (debugfs `groups_flags` for a domain's first group).
    pub flags: SdFlags,
}

/// One scheduling domain of one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomain {
    /// `sd->name`: "SMT", "CLS", "MC", "PKG", "NODE" or "NUMA".
    pub name: &'static str,
    /// `sd->level` (debugfs `level`): the position in the hierarchy as built, before
    /// degenerate levels were removed, so it can skip numbers. The `domainN` number is
    /// instead the index in [`SchedDomains::domains`].
    pub level: u32,
    /// `sched_domain_span()`.
    pub span: CpuMask,
    /// `sd->flags`.
    pub flags: SdFlags,
    /// The groups, first the one holding this CPU, in Linux's list order (indices for
    /// [`SchedDomains::group`]).
    pub groups: Vec<usize>,
    /// `min_interval`: the span weight, in milliseconds.
    pub min_interval: u64,
    /// `max_interval`: twice the span weight.
    pub max_interval: u64,
    /// `busy_factor`: 16.
    pub busy_factor: u32,
    /// `imbalance_pct`: 110 on SMT levels, 117 elsewhere.
    pub imbalance_pct: u32,
    /// `cache_nice_tries`: 0 on SMT, 1 on LLC and other non-NUMA levels, 2 on NUMA levels.
    pub cache_nice_tries: u32,
    /// `imb_numa_nr`: the NUMA imbalance allowed before balancing (build_sched_domains).
    pub imb_numa_nr: u32,
}

/// The domains of every CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomains {
    nr_cpus: usize,
    per_cpu: Vec<Vec<SchedDomain>>,
    groups: Vec<SchedGroup>,
    numa_distances: Vec<u32>,
    level_names: Vec<&'static str>,
    numa_in_package: bool,
}

/// `/proc/schedstat`'s version in Linux 6.12 (16; version 17, 6.14, adds the domain name).
pub const SCHEDSTAT_VERSION: u32 = 16;

/// Linux's `%*pb` of a cpumask ([`CpuMask::to_hex`]); empty for `nr_cpu_ids` 0.
pub fn cpumask_pr_hex(mask: CpuMask, nr_cpu_ids: usize) -> String {
    if nr_cpu_ids == 0 {
        return String::new();
    }
    mask.to_hex(nr_cpu_ids)
}

/// Linux's `%*pbl` of a cpumask: ranges, `0-3,8-11`; empty for no CPU. CPUs from
/// `nr_cpu_ids` on are left out.
pub fn cpumask_pr_list(mask: CpuMask, nr_cpu_ids: usize) -> String {
    mask.and_(CpuMask::all(nr_cpu_ids)).to_list()
}

/// The start of a domain line in Linux 6.12's `/proc/schedstat` (version 16,
/// kernel/sched/stats.c `show_schedstat`): `domain<N> <%*pb span>`; the counters follow,
/// each after a space. (Version 17, Linux 6.14, puts the name between the two.)
pub fn schedstat_domain_prefix(index: usize, span: CpuMask, nr_cpu_ids: usize) -> String {
    let mut out = String::new();
    let _ = write!(out, "domain{index} {}", cpumask_pr_hex(span, nr_cpu_ids));
    out
}

impl SchedDomains {
    /// Builds every CPU's domains as Linux 6.12 does at boot (`sched_init_numa`, then
    /// `sched_init_domains` over every CPU).
    pub fn build(machine: &MachineTopology) -> SchedDomains {
        Self::build_for(machine, CpuMask::all(machine.nr_cpus()))
    }

    /// Builds the domains of the CPUs in `cpu_map` (Linux's `build_sched_domains` over
    /// `cpu_active_mask`, after a CPU went offline or came back): every topology mask is
    /// limited to `cpu_map`, as Linux's sibling, core, node and NUMA masks hold only the CPUs
    /// that are up, and a CPU outside it has no domains (Linux attaches it to the NULL
    /// domain). The NUMA distance levels stay those of the whole machine (`sched_init_numa`
    /// runs once, at boot).
    pub fn build_for(machine: &MachineTopology, cpu_map: CpuMask) -> SchedDomains {
        Builder::new(machine, cpu_map & CpuMask::all(machine.nr_cpus())).run()
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// `cpu`'s domains bottom-up (`for_each_domain`); the index is the `N` of `domainN` in
    /// `/proc/schedstat` and debugfs. Empty for a CPU without domains (a single-CPU
    /// machine) or out of range.
    pub fn domains(&self, cpu: usize) -> &[SchedDomain] {
        self.per_cpu.get(cpu).map_or(&[], |v| v.as_slice())
    }

    /// A group by index (from [`SchedDomain::groups`]).
    pub fn group(&self, index: usize) -> &SchedGroup {
        &self.groups[index]
    }

    /// The groups of `sd`, in list order.
    pub fn groups_of<'a>(&'a self, sd: &'a SchedDomain) -> impl Iterator<Item = &'a SchedGroup> + 'a {
        sd.groups.iter().map(move |&g| &self.groups[g])
    }

    /// debugfs `groups_flags`: the flags of `sd`'s first group.
    pub fn groups_flags(&self, sd: &SchedDomain) -> SdFlags {
        sd.groups.first().map_or(SdFlags::EMPTY, |&g| self.groups[g].flags)
    }

    /// `sched_domains_numa_distance[]`: the distinct distances between nodes with CPUs,
    /// ascending (one `NODE`/`NUMA` level each).
    pub fn numa_distances(&self) -> &[u32] {
        &self.numa_distances
    }

    /// The topology table the domains were built from (`sched_domain_topology`), bottom-up:
    /// `SMT, CLS, MC[, PKG], NODE[, NUMA...]`.
    pub fn level_names(&self) -> &[&'static str] {
        &self.level_names
    }

    /// `x86_has_numa_in_package`: some package holds CPUs of two nodes, so there is no PKG
    /// level.
    pub fn has_numa_in_package(&self) -> bool {
        self.numa_in_package
    }

    /// Linux `highest_flag_domain(cpu, flag)`: the highest domain with `flag`; for a
    /// `SDF_SHARED_CHILD` flag the search stops at the first domain without it (so
    /// `SD_SHARE_LLC` gives `sd_llc`).
    pub fn highest_flag_domain(&self, cpu: usize, flag: SdFlags) -> Option<&SchedDomain> {
        let mut found = None;
        for sd in self.domains(cpu) {
            if sd.flags.intersects(flag) {
                found = Some(sd);
                continue;
            }
            if flag.intersects(SD_SHARED_CHILD_MASK) {
                break;
            }
        }
        found
    }

    /// Linux `lowest_flag_domain(cpu, flag)`: the lowest domain with `flag` (`SD_NUMA`
    /// gives `sd_numa`).
    pub fn lowest_flag_domain(&self, cpu: usize, flag: SdFlags) -> Option<&SchedDomain> {
        self.domains(cpu).iter().find(|sd| sd.flags.intersects(flag))
    }

    /// The files of `/sys/kernel/debug/sched/domains/cpu<cpu>/domain<index>/` with what
    /// each reads right after boot (kernel/sched/debug.c `register_sd`, in its order).
    /// Linux 6.12 creates them only with `sched_verbose` on the command line or after
    /// writing 1 to `/sys/kernel/debug/sched/verbose`. `max_newidle_lb_cost` is a runtime
    /// value and reads 0 here.
    pub fn debugfs_files(&self, cpu: usize, index: usize) -> Option<Vec<(&'static str, String)>> {
        let sd = self.domains(cpu).get(index)?;
        let mut files = Vec::new();
        let mut num = |name: &'static str, v: u64| {
            let mut s = String::new();
            let _ = writeln!(s, "{v}");
            files.push((name, s));
        };
        num("min_interval", sd.min_interval);
        num("max_interval", sd.max_interval);
        num("max_newidle_lb_cost", 0);
        num("busy_factor", u64::from(sd.busy_factor));
        num("imbalance_pct", u64::from(sd.imbalance_pct));
        num("cache_nice_tries", u64::from(sd.cache_nice_tries));
        let mut name = String::from(sd.name);
        name.push('\n');
        files.push(("name", name));
        files.push(("flags", sd.flags.debugfs_text()));
        files.push(("groups_flags", self.groups_flags(sd).debugfs_text()));
        let mut level = String::new();
        let _ = writeln!(level, "{}", sd.level);
        files.push(("level", level));
        Some(files)
    }

    /// What Linux 6.12 logs for `cpu` with `sched_verbose` (kernel/sched/topology.c
    /// `sched_domain_debug`, `sched_domain_debug_one`), one line each: `CPU<n> attaching
    /// sched-domain(s):`, then per domain `domain-<k>: span=<list> level=<name>` and its
    /// `groups: <id>:{ span=<list> [mask=<list>] }, ...`, indented one more space per level.
    /// Linux adds ` cap=<capacity>` to groups whose capacity is not 1024; runtime capacity is
    /// not modelled, so no `cap=` is printed (compare Linux's log with it removed).
    pub fn sched_domain_debug(&self, cpu: usize) -> Vec<String> {
        let mut out = Vec::new();
        let doms = self.domains(cpu);
        if doms.is_empty() {
            out.push(alloc::format!("CPU{cpu} attaching NULL sched-domain."));
            return out;
        }
        out.push(alloc::format!("CPU{cpu} attaching sched-domain(s):"));
        for (level, sd) in doms.iter().enumerate() {
            out.push(alloc::format!("{:level$} domain-{level}: span={} level={}", "", sd.span.to_list(), sd.name));
            let mut groups = alloc::format!("{:width$} groups:", "", width = level + 1);
            let gs: Vec<&SchedGroup> = self.groups_of(sd).collect();
            for (k, g) in gs.iter().enumerate() {
                let _ = write!(groups, " {}:{{ span={}", g.id, g.span.to_list());
                if sd.flags.contains(SD_OVERLAP) && g.balance_mask != g.span {
                    let _ = write!(groups, " mask={}", g.balance_mask.to_list());
                }
                groups.push_str(" }");
                if k + 1 < gs.len() {
                    groups.push(',');
                }
            }
            out.push(groups);
        }
        out
    }

    /// `cpu`'s domain lines of `/proc/schedstat` up to the counters (see
    /// [`schedstat_domain_prefix`]).
    pub fn schedstat_prefixes(&self, cpu: usize) -> Vec<String> {
        self.domains(cpu).iter().enumerate().map(|(i, sd)| schedstat_domain_prefix(i, sd.span, self.nr_cpus)).collect()
    }
}

// ---------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------

/// One entry of `sched_domain_topology` (`struct sched_domain_topology_level`), with its
/// mask already evaluated for every CPU.
struct Tl {
    name: &'static str,
    sd_flags: SdFlags,
    overlap: bool,
    numa_level: Option<usize>,
    mask: Vec<CpuMask>,
}

/// A `struct sched_domain` being built; `child`/`parent` are topology-level indices of the
/// same CPU.
#[derive(Clone)]
struct Sd {
    name: &'static str,
    span: CpuMask,
    flags: SdFlags,
    level: u32,
    child: Option<usize>,
    parent: Option<usize>,
    groups: Vec<usize>,
    weight: u32,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    imb_numa_nr: u32,
}

struct Group {
    span: CpuMask,
    flags: SdFlags,
    sgc: usize,
    id: usize,
    refs: u32,
}

struct Sgc {
    mask: CpuMask,
    refs: u32,
}

struct Builder {
    n: usize,
    cpu_map: CpuMask,
    tls: Vec<Tl>,
    numa_distances: Vec<u32>,
    numa_in_package: bool,
    node_reclaim_distance: u32,
    /// `sdd->sd`: [tl][cpu], `None` = never initialized (kzalloc'd: empty span, no child).
    sds: Vec<Vec<Option<Sd>>>,
    groups: Vec<Group>,
    sgcs: Vec<Sgc>,
    /// `sdd->sg` / `sdd->sgc`: [tl][cpu] → index, allocated on first use.
    sg_slot: Vec<Vec<Option<usize>>>,
    sgc_slot: Vec<Vec<Option<usize>>>,
    /// Per CPU: the bottom domain after `cpu_attach_domain` (a tl index).
    base: Vec<Option<usize>>,
}

impl Builder {
    fn new(m: &MachineTopology, cpu_map: CpuMask) -> Builder {
        let n = m.cpus.len();
        let cpus = &m.cpus;
        let dist = &m.distances;
        let node = |c: usize| cpus[c].node as usize;
        let same_node = |a: usize, b: usize| node(a) == node(b);

        // set_cpu_sibling_map(): has_smt = __max_threads_per_core > 1, has_mp also if a
        // package has more than one core.
        let max_count = |key: &dyn Fn(&CpuTopo) -> (u32, u32)| {
            (0..n).map(|c| cpus.iter().filter(|o| key(o) == key(&cpus[c])).count()).max().unwrap_or(0)
        };
        let has_smt = max_count(&|c| (c.package, c.core)) > 1;
        let cores_per_pkg = (0..n)
            .map(|c| {
                let mut cores: Vec<u32> = cpus.iter().filter(|o| o.package == cpus[c].package).map(|o| o.core).collect();
                cores.sort_unstable();
                cores.dedup();
                cores.len()
            })
            .max()
            .unwrap_or(0);
        let has_mp = has_smt || cores_per_pkg > 1;

        // match_smt (no TOPOEXT: same package, die = package, core) and topology_sane.
        let match_smt = |a: usize, b: usize| cpus[a].package == cpus[b].package && cpus[a].core == cpus[b].core && same_node(a, b);
        let match_l2c = |a: usize, b: usize| match cpus[a].l2 {
            None => match_smt(a, b),
            Some(id) => cpus[b].l2 == Some(id) && same_node(a, b),
        };
        // match_llc: same LLC id; a different node is refused (Intel SNC silently,
        // otherwise through topology_sane's warning).
        let match_llc = |a: usize, b: usize| cpus[a].llc == cpus[b].llc && same_node(a, b);
        let sibling_mask = |cpu: usize, enabled: bool, pred: &dyn Fn(usize, usize) -> bool| -> CpuMask {
            (0..n).filter(|&o| o == cpu || (enabled && pred(cpu, o))).collect()
        };
        let smt: Vec<CpuMask> = (0..n).map(|c| sibling_mask(c, has_mp && has_smt, &match_smt)).collect();
        let cls: Vec<CpuMask> = (0..n).map(|c| sibling_mask(c, has_mp, &match_l2c)).collect();
        let mc: Vec<CpuMask> = (0..n).map(|c| sibling_mask(c, has_mp, &match_llc)).collect();
        // cpu_cpu_mask() = cpumask_of_node(cpu_to_node(cpu)).
        let node_mask: Vec<CpuMask> = (0..n).map(|c| (0..n).filter(|&o| same_node(c, o)).collect()).collect();
        let numa_in_package = has_mp && (0..n).any(|a| (0..n).any(|b| cpus[a].package == cpus[b].package && !same_node(a, b)));

        // build_sched_topology().
        let mut tls = Vec::new();
        tls.push(Tl { name: "SMT", sd_flags: SD_SHARE_CPUCAPACITY | SD_SHARE_LLC, overlap: false, numa_level: None, mask: smt });
        tls.push(Tl { name: "CLS", sd_flags: SD_CLUSTER | SD_SHARE_LLC, overlap: false, numa_level: None, mask: cls });
        tls.push(Tl { name: "MC", sd_flags: SD_SHARE_LLC, overlap: false, numa_level: None, mask: mc });
        if !numa_in_package {
            tls.push(Tl { name: "PKG", sd_flags: SdFlags::EMPTY, overlap: false, numa_level: None, mask: node_mask });
        }

        // sched_init_numa(): the distinct distances between nodes that have CPUs.
        let mut cpu_nodes: Vec<usize> = (0..n).map(node).collect();
        cpu_nodes.sort_unstable();
        cpu_nodes.dedup();
        let mut numa_distances: Vec<u32> = cpu_nodes.iter().flat_map(|&a| cpu_nodes.iter().map(move |&b| dist.distance(a, b))).collect();
        numa_distances.sort_unstable();
        numa_distances.dedup();
        for (level, &d) in numa_distances.iter().enumerate() {
            // masks[level][node]: CPUs of the nodes within distance d of node.
            let mask = (0..n).map(|c| (0..n).filter(|&o| dist.distance(node(c), node(o)) <= d).collect()).collect();
            if level == 0 {
                tls.push(Tl { name: "NODE", sd_flags: SdFlags::EMPTY, overlap: false, numa_level: Some(0), mask });
            } else {
                tls.push(Tl { name: "NUMA", sd_flags: SD_NUMA, overlap: true, numa_level: Some(level), mask });
            }
        }

        // Only the CPUs that are up are in a topology mask.
        for tl in &mut tls {
            for m in &mut tl.mask {
                *m = *m & cpu_map;
            }
        }
        let ntl = tls.len();
        Builder {
            n,
            cpu_map,
            tls,
            numa_distances,
            numa_in_package,
            node_reclaim_distance: m.node_reclaim_distance,
            sds: (0..ntl).map(|_| (0..n).map(|_| None).collect()).collect(),
            groups: Vec::new(),
            sgcs: Vec::new(),
            sg_slot: (0..ntl).map(|_| (0..n).map(|_| None).collect()).collect(),
            sgc_slot: (0..ntl).map(|_| (0..n).map(|_| None).collect()).collect(),
            base: (0..n).map(|_| None).collect(),
        }
    }

    fn sd(&self, tl: usize, cpu: usize) -> &Sd {
        self.sds[tl][cpu].as_ref().expect("domain built")
    }

    fn sd_mut(&mut self, tl: usize, cpu: usize) -> &mut Sd {
        self.sds[tl][cpu].as_mut().expect("domain built")
    }

    /// Span of a possibly never-initialized domain (empty, as kzalloc left it).
    fn span_or_empty(&self, tl: usize, cpu: usize) -> CpuMask {
        self.sds[tl][cpu].as_ref().map_or(CpuMask::EMPTY, |sd| sd.span)
    }

    fn child_of(&self, tl: usize, cpu: usize) -> Option<usize> {
        self.sds[tl][cpu].as_ref().and_then(|sd| sd.child)
    }

    /// sd_init().
    fn sd_init(&self, tl: usize, cpu: usize, child: Option<usize>) -> Sd {
        let t = &self.tls[tl];
        let mask = t.mask[cpu];
        let weight = mask.count();
        let mut flags = SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING | t.sd_flags;
        let mut imbalance_pct = 117;
        let cache_nice_tries;
        if flags.intersects(SD_SHARE_CPUCAPACITY) {
            imbalance_pct = 110;
            cache_nice_tries = 0;
        } else if flags.intersects(SD_SHARE_LLC) {
            imbalance_pct = 117;
            cache_nice_tries = 1;
        } else if flags.intersects(SD_NUMA) {
            cache_nice_tries = 2;
            flags &= !SD_PREFER_SIBLING;
            flags |= SD_SERIALIZE;
            let level = t.numa_level.unwrap_or(0);
            if self.numa_distances[level] > self.node_reclaim_distance {
                flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
            }
        } else {
            cache_nice_tries = 1;
        }
        Sd {
            name: t.name,
            span: self.cpu_map & mask,
            flags,
            level: 0,
            child,
            parent: None,
            groups: Vec::new(),
            weight,
            imbalance_pct,
            cache_nice_tries,
            imb_numa_nr: 0,
        }
    }

    fn run(mut self) -> SchedDomains {
        let cpus = self.cpu_map;
        // Set up domains for every CPU (build_sched_domains, first loop).
        for cpu in cpus.iter() {
            let mut child: Option<usize> = None;
            for tl in 0..self.tls.len() {
                let mut sd = self.sd_init(tl, cpu, child);
                if let Some(c) = child {
                    let child_level = self.sd(c, cpu).level;
                    sd.level = child_level + 1;
                    // Our masks always nest (MachineTopology::new checks it), so Linux's
                    // "arch topology borken" fix-up never applies.
                    debug_assert!(self.sd(c, cpu).span.is_subset_of(sd.span));
                    self.sd_mut(c, cpu).parent = Some(tl);
                }
                if self.tls[tl].overlap {
                    sd.flags |= SD_OVERLAP;
                }
                let full = self.cpu_map == sd.span;
                self.sds[tl][cpu] = Some(sd);
                child = Some(tl);
                if full {
                    break;
                }
            }
        }

        // Build the groups (second loop), CPU by CPU, bottom-up.
        for cpu in cpus.iter() {
            let mut tl = Some(0);
            while let Some(t) = tl {
                if self.tls[t].overlap {
                    self.build_overlap_sched_groups(t, cpu);
                } else {
                    self.build_sched_groups(t, cpu);
                }
                tl = self.sd(t, cpu).parent;
            }
        }

        // The allowed NUMA imbalance (third loop).
        for cpu in cpus.iter() {
            self.set_imb_numa_nr(cpu);
        }

        // Attach the domains.
        for cpu in cpus.iter() {
            self.cpu_attach_domain(cpu);
        }

        self.finish()
    }

    /// build_sched_groups() with get_group(): one shared group per child domain.
    fn build_sched_groups(&mut self, tl: usize, cpu: usize) {
        let span = self.sd(tl, cpu).span;
        let mut covered = CpuMask::EMPTY;
        let mut list = Vec::new();
        for i in span.iter_wrap(cpu) {
            if covered.contains(i) {
                continue;
            }
            let g = self.get_group(tl, i);
            covered = covered | self.groups[g].span;
            list.push(g);
        }
        self.sd_mut(tl, cpu).groups = list;
    }

    fn sgc_for(&mut self, tl: usize, cpu: usize) -> usize {
        if let Some(s) = self.sgc_slot[tl][cpu] {
            return s;
        }
        self.sgcs.push(Sgc { mask: CpuMask::EMPTY, refs: 0 });
        let s = self.sgcs.len() - 1;
        self.sgc_slot[tl][cpu] = Some(s);
        s
    }

    fn get_group(&mut self, tl: usize, i: usize) -> usize {
        let child = self.child_of(tl, i);
        let cpu = child.map_or(i, |c| self.sd(c, i).span.first().unwrap_or(i));
        let sgc = self.sgc_for(tl, cpu);
        let g = match self.sg_slot[tl][cpu] {
            Some(g) => g,
            None => {
                self.groups.push(Group { span: CpuMask::EMPTY, flags: SdFlags::EMPTY, sgc, id: cpu, refs: 0 });
                let g = self.groups.len() - 1;
                self.sg_slot[tl][cpu] = Some(g);
                g
            }
        };
        self.groups[g].refs += 1;
        self.sgcs[sgc].refs += 1;
        if self.groups[g].refs > 1 {
            return g;
        }
        if let Some(c) = child {
            let (span, flags) = (self.sd(c, i).span, self.sd(c, i).flags);
            self.groups[g].span = span;
            self.groups[g].flags = flags;
            self.sgcs[sgc].mask = span;
        } else {
            self.groups[g].span = self.groups[g].span.with(cpu);
            self.sgcs[sgc].mask = self.sgcs[sgc].mask.with(cpu);
        }
        g
    }

    /// find_descended_sibling(): the descendant of `sibling` (a domain of CPU `i`) whose
    /// child stays inside `span`, skipping levels that will degenerate.
    fn find_descended_sibling(&self, span: CpuMask, mut tl: usize, i: usize) -> usize {
        while let Some(c) = self.child_of(tl, i) {
            if self.sd(c, i).span.is_subset_of(span) {
                break;
            }
            tl = c;
        }
        while let Some(c) = self.child_of(tl, i) {
            if self.sd(c, i).span != self.sd(tl, i).span {
                break;
            }
            tl = c;
        }
        tl
    }

    /// build_overlap_sched_groups(): groups seen from `cpu`, one per sibling child domain.
    fn build_overlap_sched_groups(&mut self, tl: usize, cpu: usize) {
        let span = self.sd(tl, cpu).span;
        let mut covered = CpuMask::EMPTY;
        let mut list = Vec::new();
        for i in span.iter_wrap(cpu) {
            if covered.contains(i) {
                continue;
            }
            // Asymmetric setups: i's hierarchy may have stopped below this level.
            if !self.span_or_empty(tl, i).contains(i) {
                continue;
            }
            let mut sib = tl;
            if let Some(c) = self.child_of(tl, i) {
                if !self.sd(c, i).span.is_subset_of(span) {
                    sib = self.find_descended_sibling(span, tl, i);
                }
            }
            // build_group_from_child_sched_domain(sibling, cpu).
            let (gspan, gflags) = match self.child_of(sib, i) {
                Some(c) => (self.sd(c, i).span, self.sd(c, i).flags),
                None => (self.sd(sib, i).span, SdFlags::EMPTY),
            };
            covered = covered | gspan;
            // init_overlap_sched_group(sibling, sg).
            let mask = self.build_balance_mask(sib, gspan);
            let (sgc, id) = match mask.first() {
                Some(first) => {
                    let s = self.sgc_for(sib, first);
                    self.sgcs[s].refs += 1;
                    if self.sgcs[s].refs == 1 {
                        self.sgcs[s].mask = mask;
                    }
                    (s, first)
                }
                None => {
                    // Linux WARNs here; keep an empty balance mask visible to callers.
                    self.sgcs.push(Sgc { mask: CpuMask::EMPTY, refs: 1 });
                    (self.sgcs.len() - 1, usize::MAX)
                }
            };
            self.groups.push(Group { span: gspan, flags: gflags, sgc, id, refs: 1 });
            list.push(self.groups.len() - 1);
        }
        self.sd_mut(tl, cpu).groups = list;
    }

    /// build_balance_mask(): the CPUs of the group whose own domain at the sibling's level
    /// has exactly the group's span as child.
    fn build_balance_mask(&self, sib_tl: usize, gspan: CpuMask) -> CpuMask {
        gspan
            .iter()
            .filter(|&i| match self.child_of(sib_tl, i) {
                Some(c) => gspan == self.sd(c, i).span,
                None => false,
            })
            .collect()
    }

    /// build_sched_domains(): `imb_numa_nr`, from the domains as built.
    fn set_imb_numa_nr(&mut self, cpu: usize) {
        let mut imb: u32 = 0;
        let mut imb_span: u32 = 1;
        let mut tl = Some(0);
        while let Some(t) = tl {
            let sd = self.sd(t, cpu);
            let weight = sd.span.count();
            let child_llc = sd.child.map(|c| (self.sd(c, cpu).flags.intersects(SD_SHARE_LLC), self.sd(c, cpu).span.count()));
            let parent = sd.parent;
            let value;
            match child_llc {
                Some((true, child_weight)) if !sd.flags.intersects(SD_SHARE_LLC) => {
                    let nr_llcs = weight / child_weight;
                    imb = if nr_llcs == 1 { weight >> 3 } else { nr_llcs };
                    imb = imb.max(1);
                    value = imb;
                    let mut top = parent;
                    while let Some(p) = top {
                        if self.sd(p, cpu).flags.intersects(SD_NUMA) {
                            break;
                        }
                        top = self.sd(p, cpu).parent;
                    }
                    imb_span = top.map_or(weight, |p| self.sd(p, cpu).span.count());
                }
                _ => {
                    let factor = (weight / imb_span).max(1);
                    value = imb * factor;
                }
            }
            self.sd_mut(t, cpu).imb_numa_nr = value;
            tl = parent;
        }
    }

    fn nr_groups(&self, tl: usize, cpu: usize) -> usize {
        self.sd(tl, cpu).groups.len()
    }

    /// sd_degenerate().
    fn sd_degenerate(&self, tl: usize, cpu: usize) -> bool {
        let sd = self.sd(tl, cpu);
        if sd.span.count() == 1 {
            return true;
        }
        if sd.flags.intersects(SD_DEGENERATE_GROUPS_MASK) && sd.groups.len() > 1 {
            return false;
        }
        !sd.flags.intersects(SD_WAKE_AFFINE)
    }

    /// sd_parent_degenerate().
    fn sd_parent_degenerate(&self, tl: usize, parent: usize, cpu: usize) -> bool {
        if self.sd_degenerate(parent, cpu) {
            return true;
        }
        let (sd, p) = (self.sd(tl, cpu), self.sd(parent, cpu));
        if sd.span != p.span {
            return false;
        }
        let mut pflags = p.flags;
        if self.nr_groups(parent, cpu) == 1 {
            pflags &= !SD_DEGENERATE_GROUPS_MASK;
        }
        !(!sd.flags).intersects(pflags)
    }

    /// cpu_attach_domain(): drop the domains that do not contribute to scheduling.
    fn cpu_attach_domain(&mut self, cpu: usize) {
        let mut tmp = 0;
        while let Some(parent) = self.sd(tmp, cpu).parent {
            if self.sd_parent_degenerate(tmp, parent, cpu) {
                let grand = self.sd(parent, cpu).parent;
                self.sd_mut(tmp, cpu).parent = grand;
                if let Some(pp) = grand {
                    self.sd_mut(pp, cpu).child = Some(tmp);
                    let first = self.sd(pp, cpu).groups[0];
                    self.groups[first].flags = self.sd(tmp, cpu).flags;
                }
                // Transfer SD_PREFER_SIBLING down: the spans match, so the property does.
                if self.sd(parent, cpu).flags.intersects(SD_PREFER_SIBLING) {
                    self.sd_mut(tmp, cpu).flags |= SD_PREFER_SIBLING;
                }
                self.sds[parent][cpu] = None;
            } else {
                tmp = parent;
            }
        }
        let mut base = Some(0);
        if self.sd_degenerate(0, cpu) {
            base = self.sd(0, cpu).parent;
            self.sds[0][cpu] = None;
            if let Some(b) = base {
                // "sched groups hold the flags of the child sched domain for convenience.
                // Clear such flags since the child is being destroyed." (The loop in 6.12
                // never advances, so only the first group is cleared.)
                let first = self.sd(b, cpu).groups[0];
                self.groups[first].flags = SdFlags::EMPTY;
                self.sd_mut(b, cpu).child = None;
            }
        }
        self.base[cpu] = base;
    }

    fn finish(self) -> SchedDomains {
        let mut remap: Vec<Option<usize>> = (0..self.groups.len()).map(|_| None).collect();
        let mut groups = Vec::new();
        let mut per_cpu = Vec::with_capacity(self.n);
        for cpu in 0..self.n {
            let mut chain = Vec::new();
            let mut tl = self.base[cpu];
            while let Some(t) = tl {
                let sd = self.sd(t, cpu);
                let ids = sd
                    .groups
                    .iter()
                    .map(|&g| {
                        *remap[g].get_or_insert_with(|| {
                            let src = &self.groups[g];
                            groups.push(SchedGroup { span: src.span, balance_mask: self.sgcs[src.sgc].mask, id: src.id, flags: src.flags });
                            groups.len() - 1
                        })
                    })
                    .collect();
                chain.push(SchedDomain {
                    name: sd.name,
                    level: sd.level,
                    span: sd.span,
                    flags: sd.flags,
                    groups: ids,
                    min_interval: u64::from(sd.weight),
                    max_interval: 2 * u64::from(sd.weight),
                    busy_factor: 16,
                    imbalance_pct: sd.imbalance_pct,
                    cache_nice_tries: sd.cache_nice_tries,
                    imb_numa_nr: sd.imb_numa_nr,
                });
                tl = sd.parent;
            }
            per_cpu.push(chain);
        }
        SchedDomains {
            nr_cpus: self.n,
            per_cpu,
            groups,
            numa_distances: self.numa_distances,
            level_names: self.tls.iter().map(|t| t.name).collect(),
            numa_in_package: self.numa_in_package,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec;
    use proptest::prelude::*;

    /// QEMU's `-smp cpus,sockets=S,cores=C,threads=T` numbering: CPU id =
    /// `(socket * C + core) * T + thread`; the LLC is the package (qemu64 is AMD family 15:
    /// `llc_id = die_id`; Intel models report an L3 per package), no L2 id.
    fn qemu(sockets: u32, cores: u32, threads: u32, node_of: impl Fn(usize) -> u32) -> Vec<CpuTopo> {
        let mut v = Vec::new();
        for s in 0..sockets {
            for c in 0..cores {
                for t in 0..threads {
                    let cpu = v.len();
                    v.push(CpuTopo { package: s, core: c, thread: t, llc: s, l2: None, node: node_of(cpu) });
                }
            }
        }
        v
    }

    fn build(cpus: Vec<CpuTopo>, distances: NodeDistances) -> SchedDomains {
        SchedDomains::build(&MachineTopology::new(cpus, distances).unwrap())
    }

    fn mask(cpus: impl IntoIterator<Item = usize>) -> CpuMask {
        cpus.into_iter().collect()
    }

    fn list(m: CpuMask) -> String {
        cpumask_pr_list(m, NR_CPUS)
    }

    /// `name span` per domain of `cpu`, span as `%*pb`.
    fn chain(d: &SchedDomains, cpu: usize) -> Vec<String> {
        d.domains(cpu).iter().map(|sd| format!("{} {}", sd.name, cpumask_pr_hex(sd.span, d.nr_cpus()))).collect()
    }

    /// The groups of a domain as Linux's sched_domain_debug prints spans (`%*pbl`), with
    /// ` mask=` where the balance mask differs.
    fn groups(d: &SchedDomains, sd: &SchedDomain) -> String {
        let parts: Vec<String> = d
            .groups_of(sd)
            .map(|g| {
                if g.balance_mask == g.span {
                    format!("{{{}}}", list(g.span))
                } else {
                    format!("{{{} mask={}}}", list(g.span), list(g.balance_mask))
                }
            })
            .collect();
        parts.join(",")
    }

    fn slit(n: usize, f: impl Fn(usize, usize) -> u8) -> NodeDistances {
        let t: Vec<u8> = (0..n * n).map(|k| f(k / n, k % n)).collect();
        NodeDistances::try_from_matrix(n, &t).unwrap()
    }

    const BASE: &str = "SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE";

    #[test]
    fn flag_table_matches_linux() {
        assert_eq!(SD_FLAG_DEBUG[9].name, "SD_SHARE_LLC");
        assert_eq!(SD_NUMA.bits(), 0x4000);
        assert_eq!(SD_SHARE_LLC.bits(), 0x200);
        // Everything but SD_WAKE_AFFINE needs groups.
        assert_eq!(SD_DEGENERATE_GROUPS_MASK, SdFlags(0x7fff) & !SD_WAKE_AFFINE);
        assert_eq!(
            SD_SHARED_CHILD_MASK,
            SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_BALANCE_WAKE | SD_WAKE_AFFINE | SD_SHARE_CPUCAPACITY | SD_SHARE_LLC
        );
        assert_eq!(SdFlags::EMPTY.debugfs_text(), "\n");
        assert_eq!((SD_NUMA | SD_BALANCE_NEWIDLE).debugfs_text(), "SD_BALANCE_NEWIDLE SD_NUMA \n");
        assert_eq!(format!("{:?}", SD_CLUSTER | SD_SHARE_LLC), "SdFlags(SD_CLUSTER|SD_SHARE_LLC)");
    }

    #[test]
    fn pb_and_pbl_formats() {
        assert_eq!(cpumask_pr_hex(mask(0..4), 4), "f");
        assert_eq!(cpumask_pr_hex(mask(0..2), 6), "03");
        assert_eq!(cpumask_pr_hex(mask(0..4), 16), "000f");
        assert_eq!(cpumask_pr_hex(mask(0..32), 32), "ffffffff");
        assert_eq!(cpumask_pr_hex(mask([0, 32]), 33), "1,00000001");
        assert_eq!(cpumask_pr_hex(mask(0..2), 64), "00000000,00000003");
        assert_eq!(cpumask_pr_hex(mask(0..64), 64), "ffffffff,ffffffff");
        assert_eq!(cpumask_pr_hex(mask([63]), 64), "80000000,00000000");
        assert_eq!(cpumask_pr_hex(mask([]), 8), "00");
        assert_eq!(cpumask_pr_hex(mask([]), 0), "");
        assert_eq!(cpumask_pr_list(mask([0, 1, 2, 4, 6, 7]), 8), "0-2,4,6-7");
        assert_eq!(cpumask_pr_list(mask([]), 8), "");
        assert_eq!(schedstat_domain_prefix(1, mask(0..16), 64), "domain1 00000000,0000ffff");
    }

    /// `-smp 4,sockets=1,cores=4`: one package, no SMT. SMT and CLS span one CPU, MC spans
    /// everything so PKG is never built; SMT (weight 1) and CLS degenerate: one MC level.
    #[test]
    fn flat_four_cpus_one_package() {
        let d = build(qemu(1, 4, 1, |_| 0), NodeDistances::without_slit(1));
        assert_eq!(d.level_names(), ["SMT", "CLS", "MC", "PKG", "NODE"]);
        for cpu in 0..4 {
            assert_eq!(chain(&d, cpu), ["MC f"]);
        }
        let mc = &d.domains(0)[0];
        assert_eq!(groups(&d, mc), "{0},{1},{2},{3}");
        assert_eq!(groups(&d, &d.domains(2)[0]), "{2},{3},{0},{1}");
        assert_eq!(
            (mc.level, mc.min_interval, mc.max_interval, mc.busy_factor, mc.imbalance_pct, mc.cache_nice_tries),
            (2, 4, 8, 16, 117, 1)
        );
        assert_eq!(mc.flags.debugfs_text(), format!("{BASE} SD_SHARE_LLC SD_PREFER_SIBLING \n"));
        // The degenerate SMT child's flags are cleared from the first group.
        assert_eq!(d.groups_flags(mc), SdFlags::EMPTY);
        assert_eq!(d.schedstat_prefixes(0), ["domain0 f"]);
        let files = d.debugfs_files(0, 0).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.0).collect();
        assert_eq!(
            names,
            [
                "min_interval", "max_interval", "max_newidle_lb_cost", "busy_factor", "imbalance_pct", "cache_nice_tries", "name", "flags",
                "groups_flags", "level"
            ]
        );
        let text: Vec<&str> = files.iter().map(|f| f.1.as_str()).collect();
        assert_eq!(&text[..7], ["4\n", "8\n", "0\n", "16\n", "117\n", "1\n", "MC\n"]);
        assert_eq!(text[9], "2\n");
        assert!(d.debugfs_files(0, 1).is_none());
        assert_eq!(d.highest_flag_domain(0, SD_SHARE_LLC).map(|sd| sd.name), Some("MC"));
        assert!(d.lowest_flag_domain(0, SD_NUMA).is_none());
    }

    /// `-smp 4` on an old machine type (one socket per CPU): SMT, CLS and MC are the CPU
    /// itself, PKG (the node) spans everything.
    #[test]
    fn flat_four_cpus_four_sockets() {
        let d = build(qemu(4, 1, 1, |_| 0), NodeDistances::without_slit(1));
        assert_eq!(chain(&d, 1), ["PKG f"]);
        let pkg = &d.domains(1)[0];
        assert_eq!((pkg.level, pkg.cache_nice_tries, pkg.imbalance_pct), (3, 1, 117));
        assert_eq!(pkg.flags.debugfs_text(), format!("{BASE} SD_PREFER_SIBLING \n"));
        assert_eq!(groups(&d, pkg), "{1},{2},{3},{0}");
        assert!(d.highest_flag_domain(1, SD_SHARE_LLC).is_none());
    }

    #[test]
    fn single_cpu_has_no_domain() {
        let d = build(qemu(1, 1, 1, |_| 0), NodeDistances::without_slit(1));
        assert!(d.domains(0).is_empty());
        assert!(d.schedstat_prefixes(0).is_empty());
        assert!(d.domains(7).is_empty());
    }

    /// `-smp 16,sockets=1,cores=4,threads=4`.
    #[test]
    fn smt4() {
        let d = build(qemu(1, 4, 4, |_| 0), NodeDistances::without_slit(1));
        assert_eq!(chain(&d, 0), ["SMT 000f", "MC ffff"]);
        assert_eq!(chain(&d, 13), ["SMT f000", "MC ffff"]);
        let (smt, mc) = (&d.domains(5)[0], &d.domains(5)[1]);
        assert_eq!(groups(&d, smt), "{5},{6},{7},{4}");
        assert_eq!(groups(&d, mc), "{4-7},{8-11},{12-15},{0-3}");
        assert_eq!(smt.flags.debugfs_text(), format!("{BASE} SD_SHARE_CPUCAPACITY SD_SHARE_LLC SD_PREFER_SIBLING \n"));
        assert_eq!((smt.level, smt.min_interval, smt.max_interval, smt.imbalance_pct, smt.cache_nice_tries), (0, 4, 8, 110, 0));
        assert_eq!((mc.level, mc.min_interval, mc.max_interval, mc.imbalance_pct, mc.cache_nice_tries), (2, 16, 32, 117, 1));
        // MC's first group took SMT's flags when CLS degenerated; SMT has no child.
        assert_eq!(d.groups_flags(mc), smt.flags);
        assert_eq!(d.groups_flags(smt), SdFlags::EMPTY);
        assert_eq!(d.groups_of(mc).map(|g| g.id).collect::<Vec<_>>(), [4, 8, 12, 0]);
        assert_eq!(d.schedstat_prefixes(5), ["domain0 00f0", "domain1 ffff"]);
        assert_eq!(d.highest_flag_domain(5, SD_SHARE_CPUCAPACITY).map(|sd| sd.name), Some("SMT"));
    }

    /// An L2 shared by pairs of cores (Intel E-core modules): the cluster level appears.
    #[test]
    fn cluster_level() {
        let mut cpus = qemu(1, 8, 1, |_| 0);
        for c in &mut cpus {
            c.l2 = Some(c.core / 2);
        }
        let d = build(cpus, NodeDistances::without_slit(1));
        assert_eq!(chain(&d, 2), ["CLS 0c", "MC ff"]);
        let cls = &d.domains(2)[0];
        assert_eq!(cls.flags.debugfs_text(), format!("{BASE} SD_CLUSTER SD_SHARE_LLC SD_PREFER_SIBLING \n"));
        assert_eq!((cls.level, cls.cache_nice_tries), (1, 1));
        assert_eq!(groups(&d, &d.domains(2)[1]), "{2-3},{4-5},{6-7},{0-1}");
    }

    /// Two nodes, no SLIT: `-smp 4,sockets=2,cores=2 -numa node,cpus=0-1 -numa node,cpus=2-3`.
    #[test]
    fn two_nodes() {
        for sockets in [2, 1] {
            let (s, c) = (sockets, 4 / sockets);
            let d = build(qemu(s, c, 1, |cpu| (cpu / 2) as u32), NodeDistances::without_slit(2));
            assert_eq!(d.has_numa_in_package(), sockets == 1);
            assert_eq!(d.numa_distances(), [10, 20]);
            assert_eq!(chain(&d, 0), ["MC 3", "NUMA f"]);
            assert_eq!(chain(&d, 3), ["MC c", "NUMA f"]);
            let numa = &d.domains(3)[1];
            assert_eq!(groups(&d, numa), "{2-3},{0-1}");
            assert_eq!(numa.flags.debugfs_text(), format!("{BASE} SD_SERIALIZE SD_OVERLAP SD_NUMA \n"));
            assert_eq!((numa.cache_nice_tries, numa.imbalance_pct, numa.min_interval), (2, 117, 4));
            let expect_level = if sockets == 2 { 5 } else { 4 };
            assert_eq!(numa.level, expect_level);
            assert_eq!(d.lowest_flag_domain(3, SD_NUMA).map(|sd| sd.level), Some(expect_level));
            // The level above the LLC: one LLC of 2 CPUs: max(1, 2 >> 3) = 1, scaled by
            // span / first NUMA span = 4 / 4.
            assert_eq!((d.domains(0)[0].imb_numa_nr, numa.imb_numa_nr), (0, 1));
        }
        let names = build(qemu(1, 4, 1, |cpu| (cpu / 2) as u32), NodeDistances::without_slit(2));
        assert_eq!(names.level_names(), ["SMT", "CLS", "MC", "NODE", "NUMA"]);
    }

    /// NUMA levels farther than node_reclaim_distance lose exec/fork balancing and
    /// wake-affine.
    #[test]
    fn far_numa_level_loses_wake_affine() {
        let far = slit(2, |a, b| if a == b { 10 } else { 40 });
        let d = build(qemu(2, 2, 1, |cpu| (cpu / 2) as u32), far.clone());
        assert_eq!(d.domains(0)[1].flags.debugfs_text(), "SD_BALANCE_NEWIDLE SD_SERIALIZE SD_OVERLAP SD_NUMA \n");
        let zen =
            SchedDomains::build(&MachineTopology::new(qemu(2, 2, 1, |cpu| (cpu / 2) as u32), far).unwrap().with_node_reclaim_distance(40));
        assert!(zen.domains(0)[1].flags.contains(SD_WAKE_AFFINE | SD_BALANCE_EXEC));
    }

    /// The 64-vCPU, 8-node guest measured on Linux 6.12: 2 threads per core, 8 CPUs (one
    /// LLC) per node, SLIT `d(i, j) = 10 + 6 * bit_length(i ^ j)`: 16 to the node that
    /// differs in bit 0, 22 within the aligned group of 4, 28 beyond. cpu0: SMT `3`, MC `ff`,
    /// NUMA `ffff`, NUMA `ffffffff`, NUMA all (printed with nr_cpu_ids = 64).
    #[test]
    fn eight_nodes_64_cpus() {
        let dist = slit(8, |a, b| if a == b { 10 } else { 10 + 6 * (usize::BITS - (a ^ b).leading_zeros()) as u8 });
        assert_eq!(dist.distance(0, 1), 16);
        assert_eq!(dist.distance(1, 2), 22);
        assert_eq!(dist.distance(3, 4), 28);
        // One socket per node, or one socket for all (numa in package): the same domains.
        for (sockets, cores) in [(8, 4), (1, 32)] {
            let d = build(qemu(sockets, cores, 2, |cpu| (cpu / 8) as u32), dist.clone());
            assert_eq!(d.numa_distances(), [10, 16, 22, 28]);
            assert_eq!(
                chain(&d, 0),
                [
                    "SMT 00000000,00000003", "MC 00000000,000000ff", "NUMA 00000000,0000ffff", "NUMA 00000000,ffffffff",
                    "NUMA ffffffff,ffffffff"
                ]
            );
            let levels: Vec<u32> = d.domains(0).iter().map(|sd| sd.level).collect();
            assert_eq!(levels, if sockets == 8 { [0, 2, 5, 6, 7] } else { [0, 2, 4, 5, 6] });
            let imb: Vec<u32> = d.domains(0).iter().map(|sd| sd.imb_numa_nr).collect();
            assert_eq!(imb, [0, 0, 1, 2, 4]);
            assert_eq!(chain(&d, 63)[2..], ["NUMA ffff0000,00000000", "NUMA ffffffff,00000000", "NUMA ffffffff,ffffffff"]);
            let sds = d.domains(0);
            assert_eq!(groups(&d, &sds[2]), "{0-7},{8-15}");
            assert_eq!(groups(&d, &sds[3]), "{0-15},{16-31}");
            assert_eq!(groups(&d, &sds[4]), "{0-31},{32-63}");
            assert_eq!(groups(&d, &d.domains(20)[4]), "{0-31},{32-63}");
            assert_eq!(groups(&d, &d.domains(20)[2]), "{16-23},{24-31}");
            for sd in &sds[2..] {
                assert_eq!(sd.flags.debugfs_text(), format!("{BASE} SD_SERIALIZE SD_OVERLAP SD_NUMA \n"));
            }
            assert_eq!(d.schedstat_prefixes(0)[4], "domain4 ffffffff,ffffffff");
            check_invariants(&d).unwrap();
        }
    }

    /// The ring from the comment above build_balance_mask() in topology.c: 0-1-2-3-0 at
    /// 20, opposite nodes at 30.
    #[test]
    fn ring_of_four_nodes() {
        let ring = slit(4, |a, b| {
            if a == b {
                10
            } else if (a + 2) % 4 == b {
                30
            } else {
                20
            }
        });
        let d = build(qemu(4, 2, 1, |cpu| (cpu / 2) as u32), ring);
        let node = |n: usize| list(mask(2 * n..2 * n + 2));
        assert_eq!(node(2), "4-5");
        // Node 0: NUMA-1 spans nodes 0,1,3 with one group per node; NUMA-2 spans all with
        // groups {0,1,3} (its own child) and {1,2,3} (node 2's child), the latter
        // reachable only from node 2 (its balance mask).
        let sds = d.domains(0);
        assert_eq!(chain(&d, 0), ["MC 03", "NUMA cf", "NUMA ff"]);
        assert_eq!(groups(&d, &sds[1]), "{0-1},{2-3},{6-7}");
        assert_eq!(groups(&d, &sds[2]), "{0-3,6-7 mask=0-1},{2-7 mask=4-5}");
        let sds = d.domains(2);
        assert_eq!(groups(&d, &sds[1]), "{2-3},{4-5},{0-1}");
        assert_eq!(groups(&d, &sds[2]), "{0-5 mask=2-3},{0-1,4-7 mask=6-7}");
        check_invariants(&d).unwrap();
    }

    /// Diameter 3 (the line 0-1-2-3 at 20 per hop): the topology whose NUMA-2 groups
    /// left the domain before find_descended_sibling() (Linux 5.13).
    #[test]
    fn line_of_four_nodes_uses_descended_siblings() {
        let line = slit(4, |a, b| 10 + 10 * a.abs_diff(b) as u8);
        let d = build(qemu(4, 1, 1, |cpu| cpu as u32), line);
        assert_eq!(d.numa_distances(), [10, 20, 30, 40]);
        let at = |cpu: usize| -> Vec<String> { d.domains(cpu).iter().map(|sd| format!("{}:{}", list(sd.span), groups(&d, sd))).collect() };
        // Linux's comment shows NUMA-2 of node 0 with groups {0-1},{1-3}: the second one
        // reached outside 0-2. Node 2's descendant whose child fits is its NUMA-1
        // (1-3), whose child is node 2 itself.
        assert_eq!(at(0), ["0-1:{0},{1}", "0-2:{0-1 mask=0},{2}", "0-3:{0-2 mask=0},{1-3 mask=3}"]);
        assert_eq!(at(1), ["0-2:{1},{2},{0}", "0-3:{0-2 mask=1},{2-3 mask=3}"]);
        assert_eq!(at(3), ["2-3:{3},{2}", "1-3:{2-3 mask=3},{1}", "0-3:{1-3 mask=3},{0-2 mask=0}"]);
        check_invariants(&d).unwrap();
    }

    /// The asymmetric mesh from topology.c's comment: nodes 1 and 2 see every node at 20,
    /// nodes 0 and 3 are 30 apart. Nodes 1 and 2 stop at NUMA-1.
    #[test]
    fn asymmetric_mesh() {
        let mesh = slit(4, |a, b| {
            if a == b {
                10
            } else if a + b == 3 && a != 1 && a != 2 {
                30
            } else {
                20
            }
        });
        assert_eq!(mesh.distance(0, 3), 30);
        assert_eq!(mesh.distance(1, 2), 20);
        let d = build(qemu(4, 1, 1, |cpu| cpu as u32), mesh);
        let spans = |cpu: usize| -> Vec<String> { d.domains(cpu).iter().map(|sd| list(sd.span)).collect() };
        assert_eq!(spans(0), ["0-2", "0-3"]);
        assert_eq!(spans(1), ["0-3"]);
        assert_eq!(spans(2), ["0-3"]);
        assert_eq!(spans(3), ["1-3", "0-3"]);
        // The groups of topology.c's comment; as balance masks, only the CPUs whose own
        // NUMA-2 child is the group (nodes 1 and 2 have no NUMA-2 domain).
        assert_eq!(groups(&d, &d.domains(0)[1]), "{0-2 mask=0},{1-3 mask=3}");
        assert_eq!(groups(&d, &d.domains(1)[0]), "{1},{2},{3},{0}");
        check_invariants(&d).unwrap();
    }

    /// A node without CPUs adds no distance (sched_init_numa walks N_CPU nodes only).
    #[test]
    fn memory_only_node_adds_no_level() {
        let dist = slit(3, |a, b| match (a.min(b), a.max(b)) {
            (x, y) if x == y => 10,
            (0, 1) => 20,
            _ => 30,
        });
        let d = build(qemu(2, 2, 1, |cpu| (cpu / 2) as u32), dist);
        assert_eq!(d.numa_distances(), [10, 20]);
        assert_eq!(chain(&d, 0), ["MC 3", "NUMA f"]);
    }

    #[test]
    fn slit_validation_and_fallback() {
        assert_eq!(NodeDistances::from_slit(2, &[10, 10, 10, 10]), NodeDistances::without_slit(2));
        assert_eq!(NodeDistances::from_slit(2, &[10, 20, 20]), NodeDistances::without_slit(2));
        assert_eq!(NodeDistances::from_slit(2, &[10, 25, 25, 11]), NodeDistances::without_slit(2));
        assert_eq!(NodeDistances::try_from_matrix(2, &[10, 9, 20, 10]), Err(TopologyError::InvalidDistances));
        let asym = NodeDistances::from_slit(2, &[10, 20, 30, 10]);
        assert_eq!((asym.distance(0, 1), asym.distance(1, 0)), (20, 30));
        assert_eq!((asym.distance(5, 5), asym.distance(0, 5)), (10, 20));
        assert_eq!(NodeDistances::without_slit(0).nr_nodes(), 1);
    }

    #[test]
    fn refuses_inconsistent_machines() {
        let one = NodeDistances::without_slit(1);
        assert_eq!(MachineTopology::new(Vec::new(), one.clone()), Err(TopologyError::CpuCount));
        let mut cpus = qemu(1, 2, 2, |_| 0);
        cpus[1].llc = 7;
        assert_eq!(MachineTopology::new(cpus, one.clone()), Err(TopologyError::NotNested { cpu: 1 }));
        let mut cpus = qemu(1, 2, 1, |_| 0);
        cpus[0].l2 = Some(0);
        assert_eq!(MachineTopology::new(cpus.clone(), one.clone()), Err(TopologyError::MixedL2));
        cpus[1].l2 = Some(0);
        cpus[1].llc = 1;
        assert_eq!(MachineTopology::new(cpus, one.clone()), Err(TopologyError::NotNested { cpu: 1 }));
        let mut cpus = qemu(1, 2, 1, |_| 0);
        cpus[1].core = 0;
        assert_eq!(MachineTopology::new(cpus, one.clone()), Err(TopologyError::DuplicateThread { cpu: 1 }));
        assert_eq!(MachineTopology::new(qemu(1, 2, 1, |c| c as u32), one), Err(TopologyError::NodeOutOfRange { cpu: 1 }));
        assert_eq!(MachineTopology::new(qemu(1, 2, 1, |_| 0), NodeDistances::without_slit(1)).unwrap().nr_cpus(), 2);
    }

    /// SMT threads that the SRAT puts on different nodes are not siblings
    /// (topology_sane), and neither are LLC sharers on different nodes.
    #[test]
    fn siblings_on_other_nodes_are_ignored() {
        let d = build(qemu(1, 2, 2, |cpu| (cpu % 2) as u32), NodeDistances::without_slit(2));
        assert!(d.has_numa_in_package());
        assert_eq!(chain(&d, 0), ["MC 5", "NUMA f"]);
        check_invariants(&d).unwrap();
    }

    /// As many CPUs as `CpuMask` holds (64 now, more once it widens): two packages, one
    /// node each, two threads per core.
    #[test]
    fn full_width_machine() {
        let n = NR_CPUS;
        let cores = (n / 4) as u32;
        let d = build(qemu(2, cores, 2, |cpu| (cpu / (n / 2)) as u32), NodeDistances::without_slit(2));
        for cpu in [0, n / 2 - 1, n / 2, n - 1] {
            let sds = d.domains(cpu);
            let names: Vec<&str> = sds.iter().map(|sd| sd.name).collect();
            assert_eq!(names, ["SMT", "MC", "NUMA"]);
            let half = if cpu < n / 2 { CpuMask::all(n / 2) } else { CpuMask::all(n).andnot(CpuMask::all(n / 2)) };
            assert!((sds[0].span == mask([cpu & !1, cpu | 1])));
            assert!((sds[1].span == half));
            assert!((sds[2].span == CpuMask::all(n)));
            assert_eq!((sds[1].groups.len(), sds[2].groups.len()), (n / 4, 2));
            assert_eq!(sds[1].min_interval, (n / 2) as u64);
        }
        assert_eq!(cpumask_pr_hex(d.domains(0)[2].span, n).len(), n / 4 + n / 32 - 1);
        check_invariants(&d).unwrap();
    }

    // ----- invariants -----

    /// The properties every CPU's domains must have (Linux's sched_domain_debug checks
    /// and the load balancer's assumptions).
    fn check_invariants(d: &SchedDomains) -> Result<(), String> {
        check_invariants_on(d, CpuMask::all(d.nr_cpus()))
    }

    /// [`check_invariants`] of domains built for the CPUs in `all` (the others offline).
    fn check_invariants_on(d: &SchedDomains, all: CpuMask) -> Result<(), String> {
        let n = d.nr_cpus();
        for cpu in 0..n {
            let sds = d.domains(cpu);
            let at = |k: usize, what: &str| format!("cpu{cpu} domain{k} {}: {what}", sds[k].name);
            if !all.contains(cpu) {
                if !sds.is_empty() {
                    return Err(format!("cpu{cpu}: an offline CPU has domains"));
                }
                continue;
            }
            if all.count() == 1 {
                if !sds.is_empty() {
                    return Err(format!("cpu{cpu}: a lone CPU has domains"));
                }
                continue;
            }
            // The top level reaches every CPU.
            match sds.last() {
                Some(top) if (top.span == all) => {}
                _ => return Err(format!("cpu{cpu}: top domain does not span every CPU")),
            }
            for (k, sd) in sds.iter().enumerate() {
                if !sd.span.contains(cpu) {
                    return Err(at(k, "span misses the CPU"));
                }
                if k > 0 {
                    let child = &sds[k - 1];
                    if !(child.span.is_subset_of(sd.span) && child.span.count() < sd.span.count()) {
                        return Err(at(k, "span does not strictly grow"));
                    }
                    if sd.level <= child.level {
                        return Err(at(k, "level does not grow"));
                    }
                    for (bit, dbg) in SD_FLAG_DEBUG.iter().enumerate() {
                        let f = SdFlags(1 << bit);
                        if dbg.meta_flags & SDF_SHARED_CHILD != 0 && sd.flags.contains(f) && !child.flags.contains(f) {
                            return Err(at(k, &format!("{} set here but not in child", dbg.name)));
                        }
                        if dbg.meta_flags & SDF_SHARED_PARENT != 0 && child.flags.contains(f) && !sd.flags.contains(f) {
                            return Err(at(k, &format!("{} set in child but not here", dbg.name)));
                        }
                    }
                }
                let gs: Vec<&SchedGroup> = d.groups_of(sd).collect();
                if gs.is_empty() || !gs[0].span.contains(cpu) {
                    return Err(at(k, "first group misses the CPU"));
                }
                if k > 0 && gs[0].span != sds[k - 1].span {
                    return Err(at(k, "first group is not the child domain"));
                }
                let mut union = CpuMask::EMPTY;
                for (j, g) in gs.iter().enumerate() {
                    if g.span.is_empty() || !g.span.is_subset_of(sd.span) {
                        return Err(at(k, &format!("group {} is empty or leaves the domain", list(g.span))));
                    }
                    let overlap = sd.flags.contains(SD_OVERLAP);
                    if !overlap && !(union & g.span).is_empty() {
                        return Err(at(k, "groups of a non-overlapping level intersect"));
                    }
                    if overlap && gs[..j].iter().any(|h| h.span == g.span) {
                        return Err(at(k, "the same group twice"));
                    }
                    if g.balance_mask.is_empty() || !g.balance_mask.is_subset_of(g.span) || !g.balance_mask.contains(g.id) {
                        return Err(at(k, &format!("bad balance mask {} for group {}", list(g.balance_mask), list(g.span))));
                    }
                    if !overlap && g.balance_mask != g.span {
                        return Err(at(k, "balance mask of a non-overlapping group differs from its span"));
                    }
                    // Each group is a real child-level domain of one of its CPUs (or one CPU).
                    let real = g.span.count() == 1 || g.span.iter().any(|c| d.domains(c).iter().any(|o| o.span == g.span));
                    if !real {
                        return Err(at(k, &format!("group {} is no CPU's domain", list(g.span))));
                    }
                    union = union | g.span;
                }
                // Wasted cores: every CPU of the domain is in one of its groups.
                if union != sd.span {
                    return Err(at(k, &format!("groups cover {} of {}", list(union), list(sd.span))));
                }
                if sd.groups.len() < 2 {
                    return Err(at(k, "a surviving domain with a single group"));
                }
                // Non-overlapping levels look the same from every CPU they span.
                if !sd.flags.contains(SD_OVERLAP) {
                    for other in sd.span.iter() {
                        if !d.domains(other).iter().any(|o| o.name == sd.name && o.span == sd.span) {
                            return Err(at(k, &format!("cpu{other} lacks the same domain")));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A machine from per-node CPU counts: `per_node[i]` CPUs on node i, grouped in cores
    /// of `threads`, one package per node or one for all.
    fn small_machine(per_node: &[usize], threads: usize, one_package: bool, dist: &NodeDistances) -> Option<MachineTopology> {
        let mut cpus = Vec::new();
        let mut core = 0;
        for (node, &count) in per_node.iter().enumerate() {
            for k in 0..count {
                if k % threads == 0 {
                    core += 1;
                }
                let package = if one_package { 0 } else { node as u32 };
                cpus.push(CpuTopo { package, core, thread: (k % threads) as u32, llc: package, l2: None, node: node as u32 });
            }
        }
        MachineTopology::new(cpus, dist.clone()).ok()
    }

    /// Symmetric tables over `nodes` nodes: 10 on the diagonal, every combination of
    /// `values` elsewhere.
    fn symmetric_tables(nodes: usize, values: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
        let pairs: Vec<(usize, usize)> = (0..nodes).flat_map(|a| (a + 1..nodes).map(move |b| (a, b))).collect();
        let k = values.len();
        (0..k.pow(pairs.len() as u32)).map(move |code| {
            let mut table = vec![10u8; nodes * nodes];
            let mut c = code;
            for &(a, b) in &pairs {
                table[a * nodes + b] = values[c % k];
                table[b * nodes + a] = values[c % k];
                c /= k;
            }
            table
        })
    }

    /// Whether no renumbering of the nodes gives a lexicographically smaller table (one
    /// table per isomorphism class).
    fn is_canonical(nodes: usize, table: &[u8]) -> bool {
        let mut perm: Vec<usize> = (0..nodes).collect();
        // Heap's algorithm over all permutations.
        let mut c = vec![0; nodes];
        let smaller = |perm: &[usize]| {
            for a in 0..nodes {
                for b in 0..nodes {
                    let (x, y) = (table[perm[a] * nodes + perm[b]], table[a * nodes + b]);
                    if x != y {
                        return x < y;
                    }
                }
            }
            false
        };
        let mut i = 0;
        while i < nodes {
            if c[i] < i {
                if i % 2 == 0 {
                    perm.swap(0, i);
                } else {
                    perm.swap(c[i], i);
                }
                if smaller(&perm) {
                    return false;
                }
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        true
    }

    /// Every symmetric distance table over up to 4 nodes with entries from {10, 20, 30}
    /// (an off-diagonal 10 makes the SLIT invalid, so the defaults apply), each with every
    /// choice of 0 or 1 CPU per node (nodes without CPUs), and with 2 CPUs per node as two
    /// cores or one SMT core, in one package per node or one package for all.
    #[test]
    fn exhaustive_small_topologies() {
        let mut checked = 0;
        for nodes in 1..=4usize {
            for table in symmetric_tables(nodes, &[10, 20, 30]) {
                let dist = NodeDistances::from_slit(nodes, &table);
                let mut layouts: Vec<(Vec<usize>, usize, bool)> =
                    (1..1usize << nodes).map(|bits| ((0..nodes).map(|i| bits >> i & 1).collect(), 1, false)).collect();
                for threads in [1, 2] {
                    for one_package in [false, true] {
                        layouts.push((vec![2; nodes], threads, one_package));
                    }
                }
                for (per_node, threads, one_package) in layouts {
                    let Some(m) = small_machine(&per_node, threads, one_package, &dist) else { continue };
                    if let Err(e) = check_invariants(&SchedDomains::build(&m)) {
                        panic!("{per_node:?} threads {threads} one package {one_package} table {table:?}: {e}");
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// NUMA diameters up to 3, where find_descended_sibling matters: every symmetric table
    /// over 4 nodes with entries from {20, 30, 40}, and one of each isomorphism class over
    /// 5 nodes; one CPU per node.
    #[test]
    fn exhaustive_deep_numa() {
        let mut classes = 0;
        for nodes in [4usize, 5] {
            for table in symmetric_tables(nodes, &[20, 30, 40]) {
                if nodes == 5 && !is_canonical(nodes, &table) {
                    continue;
                }
                classes += usize::from(nodes == 5);
                let dist = NodeDistances::try_from_matrix(nodes, &table).unwrap();
                let m = small_machine(&vec![1; nodes], 1, false, &dist).unwrap();
                if let Err(e) = check_invariants(&SchedDomains::build(&m)) {
                    panic!("table {table:?}: {e}");
                }
            }
        }
        // Edge 3-colourings of K5 up to isomorphism.
        assert_eq!(classes, 792);
    }

    /// Random valid machines: cores with 1..=threads threads in packages, LLCs, optional
    /// L2 clusters and nodes, CPU ids shuffled, random symmetric SLITs (or none).
    fn arb_machine() -> impl Strategy<Value = MachineTopology> {
        let core = (0u32..3, 0u32..3, 0u32..2, 0u32..4, 1u32..=2);
        (1usize..=5, prop::collection::vec(core, 1..=16), any::<bool>(), any::<bool>(), prop::collection::vec(11u8..=60, 10)).prop_flat_map(
            |(nodes, cores, use_l2, use_slit, raw)| {
                let mut cpus = Vec::new();
                for (k, &(package, llc, l2, node, threads)) in cores.iter().enumerate() {
                    for t in 0..threads {
                        let l2 = use_l2.then_some(llc * 2 + l2);
                        cpus.push(CpuTopo { package, core: k as u32, thread: t, llc, l2, node: node % nodes as u32 });
                    }
                }
                let mut table = vec![10u8; nodes * nodes];
                let mut it = raw.into_iter();
                for a in 0..nodes {
                    for b in a + 1..nodes {
                        let v = it.next().unwrap_or(20);
                        table[a * nodes + b] = v;
                        table[b * nodes + a] = v;
                    }
                }
                let dist = if use_slit { NodeDistances::from_slit(nodes, &table) } else { NodeDistances::without_slit(nodes) };
                Just(cpus).prop_shuffle().prop_map(move |cpus| MachineTopology::new(cpus, dist.clone()).unwrap())
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Nesting, coverage, partition, first group, balance masks, flag inheritance and
        /// full reach hold on any machine.
        #[test]
        fn invariants_hold_on_random_machines(m in arb_machine()) {
            let d = SchedDomains::build(&m);
            if let Err(e) = check_invariants(&d) {
                return Err(TestCaseError::fail(format!("{e}\n{:?}", m)));
            }
            // The schedstat lines and debugfs files exist for exactly the domains.
            for cpu in 0..m.nr_cpus() {
                prop_assert_eq!(d.schedstat_prefixes(cpu).len(), d.domains(cpu).len());
                for (i, line) in d.schedstat_prefixes(cpu).iter().enumerate() {
                    let expected = format!("domain{i} ");
                    prop_assert!(line.starts_with(&expected));
                }
                prop_assert!(d.debugfs_files(cpu, d.domains(cpu).len()).is_none());
            }
        }

        /// Domains built without some CPUs (offline) keep every invariant over the others:
        /// no span or group holds an offline CPU, the top level reaches every online one (the
        /// wasted-cores paper's "missing scheduling domains" bug is a CPU back online that no
        /// domain reaches), and bringing every CPU back builds the boot domains again.
        #[test]
        fn invariants_hold_with_cpus_offline(m in arb_machine(), offline in prop::collection::vec(any::<prop::sample::Index>(), 1..=4)) {
            let n = m.nr_cpus();
            let mut map = CpuMask::all(n);
            for i in &offline {
                map = map.without(i.index(n));
            }
            prop_assume!(!map.is_empty());
            let d = SchedDomains::build_for(&m, map);
            if let Err(e) = check_invariants_on(&d, map) {
                return Err(TestCaseError::fail(format!("{e}\nonline {}\n{:?}", list(map), m)));
            }
            for cpu in 0..n {
                for sd in d.domains(cpu) {
                    prop_assert!(sd.span.is_subset_of(map));
                    for g in d.groups_of(sd) {
                        prop_assert!(g.span.is_subset_of(map));
                    }
                }
            }
            prop_assert_eq!(SchedDomains::build_for(&m, CpuMask::all(n)), SchedDomains::build(&m));
        }

        /// `%*pb` has Linux's width and reads back as the same set.
        #[test]
        fn pb_format_roundtrips(bits in prop::collection::vec(any::<bool>(), 1..=64)) {
            let n = bits.len();
            let m: CpuMask = bits.iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| i).collect();
            let hex = cpumask_pr_hex(m, n);
            let digits: String = hex.chars().filter(|&c| c != ',').collect();
            prop_assert_eq!(digits.len(), n.div_ceil(32).saturating_sub(1) * 8 + (if n % 32 == 0 { 32 } else { n % 32 }).div_ceil(4));
            let value = digits.chars().rev().enumerate().fold(Vec::new(), |mut acc, (i, ch)| {
                let v = ch.to_digit(16).unwrap();
                for b in 0..4 { if v & (1 << b) != 0 { acc.push(i * 4 + b); } }
                acc
            });
            prop_assert_eq!(value, m.iter().collect::<Vec<_>>());
            prop_assert_eq!(cpumask_pr_list(m, n).is_empty(), m.is_empty());
        }
    }

    /// `sched_domain_debug` prints what Linux 6.12 logged for the mesh's CPU 0 (recorded with
    /// `sched_verbose`, `cap=` removed).
    #[test]
    fn verbose_log_as_linux() {
        let cpus: Vec<CpuTopo> =
            (0..8u32).map(|c| CpuTopo { package: c / 2, core: c % 2, thread: 0, llc: c / 2, l2: None, node: c / 2 }).collect();
        #[rustfmt::skip]
        let ring = [10, 20, 30, 20,  20, 10, 20, 30,  30, 20, 10, 20,  20, 30, 20, 10];
        let m = MachineTopology::new(cpus, NodeDistances::try_from_matrix(4, &ring).unwrap()).unwrap();
        let d = SchedDomains::build(&m);
        assert_eq!(
            d.sched_domain_debug(0),
            [
                "CPU0 attaching sched-domain(s):",
                " domain-0: span=0-1 level=MC",
                "  groups: 0:{ span=0 }, 1:{ span=1 }",
                "  domain-1: span=0-3,6-7 level=NUMA",
                "   groups: 0:{ span=0-1 }, 2:{ span=2-3 }, 6:{ span=6-7 }",
                "   domain-2: span=0-7 level=NUMA",
                "    groups: 0:{ span=0-3,6-7 mask=0-1 }, 4:{ span=2-7 mask=4-5 }",
            ]
        );
    }
}
