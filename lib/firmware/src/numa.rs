//! What Linux 6.12 (x86_64, Debian's configuration) makes of an SRAT and a SLIT: its node ids,
//! the nodes it finds, each CPU's and memory range's node, and `node_distance()`.
//!
//! Followed from `drivers/acpi/numa/srat.c` (`acpi_numa_init`, `acpi_map_pxm_to_node`,
//! `acpi_numa_memory_affinity_init`, `acpi_parse_slit`, `slit_valid`, `acpi_numa_slit_init`),
//! `arch/x86/mm/srat.c` (`acpi_numa_processor_affinity_init`, `acpi_numa_x2apic_affinity_init`)
//! and `mm/numa_memblks.c` (`numa_add_memblk`, `numa_alloc_distance`, `numa_set_distance`,
//! `__node_distance`):
//!
//! - **Node ids.** A proximity domain gets the lowest node id not yet taken when Linux first
//!   meets it. Linux walks the SRAT twice: first the CPU entries (types 0 and 2, in table order,
//!   disabled ones skipped), then the memory entries (disabled ones skipped). So the domains of
//!   CPUs are numbered first, in the order of their first enabled entry, then any domain that
//!   only has memory.
//! - **Domains.** Type 0 carries 32 bits, but when the SRAT header's revision is 1 (QEMU's
//!   tables) Linux reads only the low byte; memory domains are likewise cut to 8 bits at
//!   revision 1. A domain at or above `MAX_PXM_DOMAINS` (1024 here) is "Too many proximity
//!   domains".
//! - **Giving up on the SRAT** (`bad_srat()`, "SRAT: SRAT not used."): a type-0 entry whose
//!   length is not 16, a type-1 entry shorter than 40 or a type-2 shorter than 24 (this crate's
//!   parser already refuses the short ones), a domain that cannot be mapped, more than
//!   `NR_NODE_MEMBLKS` memory ranges. With no enabled memory entry at all Linux also falls back.
//!   Falling back means one node, 0, with every CPU and all memory, and no distances (the SLIT
//!   is dropped with the rest).
//! - **CPUs.** An x2APIC entry with an id of `MAX_LOCAL_APIC` (32768) or more is skipped after
//!   its domain got its node id (so the node exists, but is not "parsed" through it). A later
//!   entry for the same APIC id overrides an earlier one.
//! - **Distances.** Without a SLIT, or with one `slit_valid()` refuses ([`crate::slit::Slit::linux_valid`]),
//!   `node_distance(a, b)` is 10 if `a == b` and 20 otherwise. With a valid SLIT, Linux sizes its
//!   table for the highest node found plus one (filled with 10 on the diagonal, 20 elsewhere),
//!   then copies the SLIT's entry for every pair of localities that both have a node; a
//!   locality without one (an I/O locality, or one past the SRAT's domains) is skipped.
//!
//! Not followed, because they need more than the two tables: memory ranges checked against the
//! e820 map (`numa_cleanup_meminfo`: ranges outside RAM set aside, overlaps between nodes reject
//! the whole configuration, and Linux's "nodes only cover ... of your RAM" check), the APIC
//! driver's `apic_id_valid()` (in xAPIC mode an x2APIC entry above 254 is ignored), SGI UV's
//! APIC ids, CXL's CEDT windows (`acpi_parse_cfmws`, which add nodes after the SRAT's),
//! `numa=off`, `numa=noacpi` and NUMA emulation (Debian builds without it). A CPU that the
//! SRAT does not list has no node here ([`Numa::node_of_apic`] says `None`).

use crate::slit::Slit;
use crate::srat::{self, Affinity, Srat};
use alloc::vec;
use alloc::vec::Vec;

/// A node id, as Linux numbers nodes.
pub type Node = u16;

/// `node_distance(a, a)` and the SLIT's diagonal.
pub const LOCAL_DISTANCE: u8 = 10;
/// `node_distance(a, b)` for `a != b` when the SLIT does not say.
pub const REMOTE_DISTANCE: u8 = 20;
/// Linux's `MAX_NUMNODES` for Debian's `CONFIG_NODES_SHIFT=10`.
pub const MAX_NUMNODES: usize = 1024;
/// Linux's `MAX_PXM_DOMAINS`: `MAX_NUMNODES` when that is above 256.
pub const MAX_PXM_DOMAINS: u32 = 1024;
/// Linux's `MAX_LOCAL_APIC` on x86_64: APIC ids at or above it get no node.
pub const MAX_LOCAL_APIC: u32 = 32768;
/// Linux's `NR_NODE_MEMBLKS`: at most this many memory ranges.
pub const NR_NODE_MEMBLKS: usize = MAX_NUMNODES * 2;

/// Why Linux has no NUMA configuration from the firmware, and one node 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// No SRAT ("No NUMA configuration found").
    NoSrat,
    /// Linux gave up on the SRAT at the entry at this offset ("SRAT: SRAT not used.").
    BadSrat { offset: usize, reason: BadSrat },
    /// The SRAT has no enabled memory range (`acpi_numa_init` returns `-ENOENT`).
    NoMemory,
}

/// Why Linux gave up on an SRAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadSrat {
    /// A type-0 entry whose length is not 16 (or a type-1 under 40, a type-2 under 24).
    EntryLength,
    /// A proximity domain at or above [`MAX_PXM_DOMAINS`] ("Too many proximity domains").
    Domain { pxm: u32 },
    /// More memory ranges than [`NR_NODE_MEMBLKS`] ("too many memblk ranges").
    TooManyRanges,
}

/// What became of the SLIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlitUse {
    /// None given (or the SRAT was not used, which drops it too).
    Absent,
    /// Given, but `slit_valid()` refused it ("SLIT table looks invalid. Not used.").
    Invalid,
    /// Its distances are Linux's.
    Used,
}

/// A CPU the SRAT places: its APIC id (8-bit or x2APIC) and node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuNode {
    pub apic_id: u32,
    pub node: Node,
}

/// A memory range the SRAT places, `[start, end)`, as Linux adds it (`numa_add_memblk`):
/// empty ranges and ranges whose end overflows are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemRange {
    pub node: Node,
    pub start: u64,
    pub end: u64,
    pub hotpluggable: bool,
    pub non_volatile: bool,
}

/// Linux's NUMA configuration from the firmware's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numa {
    fallback: Option<Fallback>,
    slit: SlitUse,
    /// Node of each proximity domain below [`MAX_PXM_DOMAINS`].
    pxm_to_node: Vec<Option<Node>>,
    /// The lowest proximity domain of each node (index: node).
    node_to_pxm: Vec<u32>,
    /// Linux's `numa_nodes_parsed`, ascending.
    nodes: Vec<Node>,
    cpus: Vec<CpuNode>,
    /// `cpus` by APIC id, each id once with its last entry's node (as a later SRAT entry
    /// overrides an earlier one): [`Numa::node_of_apic`] in O(log n), not a scan per CPU.
    by_apic: Vec<(u32, Node)>,
    memory: Vec<MemRange>,
    /// `numa_distance_cnt`: the distance table is `cnt × cnt` (0: no table).
    distance_cnt: usize,
    distance: Vec<u8>,
}

/// `cpus` sorted by APIC id, the last entry of each id kept (stable sort, then dedup from the
/// back).
fn index_by_apic(cpus: &[CpuNode]) -> Vec<(u32, Node)> {
    let mut v: Vec<(u32, Node)> = cpus.iter().map(|c| (c.apic_id, c.node)).collect();
    v.sort_by_key(|&(a, _)| a);
    let mut out: Vec<(u32, Node)> = Vec::with_capacity(v.len());
    for e in v {
        match out.last_mut() {
            Some(last) if last.0 == e.0 => *last = e,
            _ => out.push(e),
        }
    }
    out
}

/// Linux's pass over the SRAT, until it gives up.
struct Walk {
    pxm_to_node: Vec<Option<Node>>,
    node_to_pxm: Vec<u32>,
    parsed: Vec<bool>,
    cpus: Vec<CpuNode>,
    memory: Vec<MemRange>,
}

impl Walk {
    /// `acpi_map_pxm_to_node`: the domain's node, a new one (the lowest free id) the first time.
    fn map(&mut self, pxm: u32) -> Result<Node, BadSrat> {
        let slot = self.pxm_to_node.get_mut(pxm as usize).ok_or(BadSrat::Domain { pxm })?;
        if let Some(node) = *slot {
            return Ok(node);
        }
        // Node ids are handed out densely, so the lowest free one is the count so far (below
        // MAX_NUMNODES, as there are at most MAX_PXM_DOMAINS domains).
        let node = self.node_to_pxm.len() as Node;
        *slot = Some(node);
        self.node_to_pxm.push(pxm);
        self.parsed.push(false);
        Ok(node)
    }
}

impl Numa {
    /// Linux's view of these tables (either may be absent). Never fails: what Linux would refuse
    /// shows as [`Numa::fallback`] and [`Numa::slit`].
    pub fn linux(srat: Option<&Srat>, slit: Option<&Slit>) -> Numa {
        let Some(srat) = srat else { return Numa::flat(Fallback::NoSrat) };
        let mut walk = Walk {
            pxm_to_node: vec![None; MAX_PXM_DOMAINS as usize],
            node_to_pxm: Vec::new(),
            parsed: Vec::new(),
            cpus: Vec::new(),
            memory: Vec::new(),
        };
        match Numa::walk(srat, &mut walk) {
            Err((offset, reason)) => return Numa::flat(Fallback::BadSrat { offset, reason }),
            Ok(0) => return Numa::flat(Fallback::NoMemory),
            Ok(_) => {}
        }
        let nodes: Vec<Node> = (0..walk.parsed.len()).filter(|&n| walk.parsed[n]).map(|n| n as Node).collect();
        let mut numa = Numa {
            fallback: None,
            slit: SlitUse::Absent,
            pxm_to_node: walk.pxm_to_node,
            node_to_pxm: walk.node_to_pxm,
            nodes,
            by_apic: index_by_apic(&walk.cpus),
            cpus: walk.cpus,
            memory: walk.memory,
            distance_cnt: 0,
            distance: Vec::new(),
        };
        if let Some(slit) = slit {
            if slit.linux_valid() {
                numa.slit = SlitUse::Used;
                numa.apply_slit(slit);
            } else {
                numa.slit = SlitUse::Invalid;
            }
        }
        numa
    }

    /// One node 0 holding everything, no distance table: Linux's `dummy_numa_init`.
    fn flat(fallback: Fallback) -> Numa {
        Numa {
            fallback: Some(fallback),
            slit: SlitUse::Absent,
            pxm_to_node: Vec::new(),
            node_to_pxm: Vec::new(),
            nodes: vec![0],
            cpus: Vec::new(),
            by_apic: Vec::new(),
            memory: Vec::new(),
            distance_cnt: 0,
            distance: Vec::new(),
        }
    }

    /// The CPU pass, then the memory pass. Returns the number of memory entries Linux counted
    /// (`parsed_numa_memblks`), or the offset of the entry it gave up at and why.
    fn walk(srat: &Srat, w: &mut Walk) -> Result<usize, (usize, BadSrat)> {
        let revision = srat.header.revision;
        for e in &srat.entries {
            let bad = |reason| (e.offset, reason);
            match e.affinity {
                Affinity::Lapic(a) => {
                    if e.length != srat::LAPIC_LEN {
                        return Err(bad(BadSrat::EntryLength));
                    }
                    if !a.enabled() {
                        continue;
                    }
                    let pxm = if revision >= 2 { a.proximity_domain } else { a.proximity_domain_lo().into() };
                    let node = w.map(pxm).map_err(bad)?;
                    // Non-UV: the 8-bit APIC id, always below MAX_LOCAL_APIC.
                    w.cpus.push(CpuNode { apic_id: a.apic_id.into(), node });
                    w.parsed[node as usize] = true;
                }
                Affinity::X2apic(a) => {
                    if e.length < srat::X2APIC_LEN {
                        return Err(bad(BadSrat::EntryLength));
                    }
                    if !a.enabled() {
                        continue;
                    }
                    let node = w.map(a.proximity_domain).map_err(bad)?;
                    if a.x2apic_id >= MAX_LOCAL_APIC {
                        continue; // "skipped apicid that is too big"
                    }
                    w.cpus.push(CpuNode { apic_id: a.x2apic_id, node });
                    w.parsed[node as usize] = true;
                }
                Affinity::Memory(_) | Affinity::Other { .. } => {}
            }
        }
        let mut counted = 0;
        for e in &srat.entries {
            let Affinity::Memory(m) = e.affinity else { continue };
            let bad = |reason| (e.offset, reason);
            if e.length < srat::MEMORY_LEN {
                return Err(bad(BadSrat::EntryLength));
            }
            if !m.enabled() {
                continue;
            }
            // Hot-pluggable ranges count: Debian builds CONFIG_MEMORY_HOTPLUG.
            let pxm = if revision <= 1 { m.proximity_domain & 0xff } else { m.proximity_domain };
            let node = w.map(pxm).map_err(bad)?;
            // numa_add_memblk: an empty range is ignored, a wrapped one ignored with a warning,
            // both still "succeed" (the node counts as parsed).
            match m.end() {
                Some(end) if end > m.base => {
                    if w.memory.len() >= NR_NODE_MEMBLKS {
                        return Err(bad(BadSrat::TooManyRanges));
                    }
                    w.memory.push(MemRange { node, start: m.base, end, hotpluggable: m.hotpluggable(), non_volatile: m.non_volatile() });
                }
                _ => {}
            }
            w.parsed[node as usize] = true;
            counted += 1;
        }
        Ok(counted)
    }

    /// `acpi_numa_slit_init` through `numa_set_distance`.
    fn apply_slit(&mut self, slit: &Slit) {
        let n = slit.localities();
        for i in 0..n {
            let Some(from) = self.node_of_pxm_index(i) else { continue };
            for j in 0..n {
                let Some(to) = self.node_of_pxm_index(j) else { continue };
                let Some(d) = slit.distance(i, j) else { continue };
                if self.distance_cnt == 0 {
                    // numa_alloc_distance, on the first call: sized by the highest parsed node.
                    let cnt = self.nodes.last().map_or(0, |&n| usize::from(n) + 1);
                    self.distance_cnt = cnt;
                    self.distance = (0..cnt * cnt).map(|k| if k / cnt == k % cnt { LOCAL_DISTANCE } else { REMOTE_DISTANCE }).collect();
                }
                let (from, to) = (usize::from(from), usize::from(to));
                if from >= self.distance_cnt || to >= self.distance_cnt {
                    continue; // "node ids are out of bound"
                }
                if from == to && d != LOCAL_DISTANCE {
                    continue; // "invalid distance parameter" (slit_valid excludes it)
                }
                self.distance[from * self.distance_cnt + to] = d;
            }
        }
    }

    fn node_of_pxm_index(&self, pxm: usize) -> Option<Node> {
        self.pxm_to_node.get(pxm).copied().flatten()
    }

    /// Why Linux uses no NUMA information from the firmware, if it does not.
    pub fn fallback(&self) -> Option<Fallback> {
        self.fallback
    }

    /// What became of the SLIT.
    pub fn slit(&self) -> SlitUse {
        self.slit
    }

    /// The nodes Linux finds (`numa_nodes_parsed`, which becomes `node_possible_map`),
    /// ascending; `[0]` after a fallback.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node of a proximity domain (`pxm_to_node`), `None` if the SRAT gave it none.
    pub fn node_of_pxm(&self, pxm: u32) -> Option<Node> {
        self.node_of_pxm_index(pxm as usize)
    }

    /// The lowest proximity domain of a node (`node_to_pxm`).
    pub fn pxm_of_node(&self, node: Node) -> Option<u32> {
        self.node_to_pxm.get(usize::from(node)).copied()
    }

    /// The node of the CPU with this APIC id: the last enabled SRAT entry for it; node 0 after
    /// a fallback; `None` if the SRAT does not list it.
    pub fn node_of_apic(&self, apic_id: u32) -> Option<Node> {
        if self.fallback.is_some() {
            return Some(0);
        }
        self.by_apic.binary_search_by_key(&apic_id, |&(a, _)| a).ok().map(|i| self.by_apic[i].1)
    }

    /// The CPUs the SRAT places, in table order (empty after a fallback).
    pub fn cpus(&self) -> &[CpuNode] {
        &self.cpus
    }

    /// The memory ranges the SRAT places, in table order (empty after a fallback).
    pub fn memory(&self) -> &[MemRange] {
        &self.memory
    }

    /// The node of a physical address: the first range holding it; node 0 after a fallback.
    pub fn node_of_addr(&self, addr: u64) -> Option<Node> {
        if self.fallback.is_some() {
            return Some(0);
        }
        self.memory.iter().find(|m| m.start <= addr && addr < m.end).map(|m| m.node)
    }

    /// Linux's `node_distance(from, to)` (`__node_distance`): the SLIT's distance, or 10 from a
    /// node to itself and 20 between two nodes when the table does not cover them.
    pub fn distance(&self, from: Node, to: Node) -> u8 {
        let (f, t) = (usize::from(from), usize::from(to));
        if f >= self.distance_cnt || t >= self.distance_cnt {
            return if from == to { LOCAL_DISTANCE } else { REMOTE_DISTANCE };
        }
        self.distance[f * self.distance_cnt + t]
    }
}
