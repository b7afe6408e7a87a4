//! The tables QEMU 10 builds for tools/topology.sh's machines (copied out of the Linux peer's
//! /sys/firmware/acpi/tables by tools/topology-linux.sh), against what Linux 6.12 made of them
//! on the same boot (tests/fixtures/topology/linux-6.12/): nodes, each node's CPUs, distances
//! and memory ranges.
mod common;

use cadence_firmware::numa::{Numa, SlitUse};
use cadence_firmware::{slit, srat};
use common::*;

/// Topologies with NUMA nodes (QEMU builds an SRAT and, given distances, a SLIT).
const NUMA: &[&str] = &["2node", "8node", "mesh", "seed003"];
/// Topologies without (no SRAT, no SLIT).
const FLAT: &[&str] = &["flat", "smt4"];

fn recorded(topo: &str) -> bool {
    std::path::Path::new(&format!("{}/../../tests/fixtures/topology/linux-6.12/{topo}", env!("CARGO_MANIFEST_DIR"))).is_dir()
}

/// `node/nodeN/FILE: VALUE` lines of node.txt.
fn node_files(topo: &str, file: &str) -> Vec<(u16, String)> {
    linux(topo, "node.txt")
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("node/node")?;
            let (n, rest) = rest.split_once('/')?;
            let value = rest.strip_prefix(file)?.strip_prefix(": ")?;
            Some((n.parse().ok()?, value.to_string()))
        })
        .collect()
}

#[test]
fn qemu_tables_parse_as_linux_reads_them() {
    let mut checked = 0;
    for &topo in NUMA {
        let Some(srat_bytes) = fixture(topo, "SRAT") else { continue };
        if !recorded(topo) {
            continue;
        }
        let s = srat::parse(&srat_bytes).unwrap_or_else(|e| panic!("{topo} SRAT: {e}"));
        assert_eq!(&s.header.oem_id, b"BOCHS ", "{topo}");
        assert_eq!(s.header.revision, 1, "{topo}: QEMU's SRAT is revision 1");
        let l = fixture(topo, "SLIT").map(|b| slit::parse(&b).unwrap_or_else(|e| panic!("{topo} SLIT: {e}")));
        let numa = Numa::linux(Some(&s), l.as_ref());
        assert_eq!(numa.fallback(), None, "{topo}");
        assert_eq!(numa.slit(), if l.is_some() { SlitUse::Used } else { SlitUse::Absent }, "{topo}");

        // The nodes and their distance rows, as /sys/devices/system/node/nodeN/distance.
        let rows = node_files(topo, "distance");
        let nodes: Vec<u16> = rows.iter().map(|(n, _)| *n).collect();
        assert_eq!(numa.nodes(), nodes, "{topo}: nodes");
        for (n, row) in &rows {
            let ours: Vec<String> = numa.nodes().iter().map(|&m| numa.distance(*n, m).to_string()).collect();
            assert_eq!(ours.join(" "), *row, "{topo}: node{n}/distance");
        }

        // Each node's CPUs: Linux numbers CPUs in the MADT's order, which is QEMU's SRAT order
        // (both walk the possible CPUs in order of APIC id).
        let cpus: Vec<_> = s.cpus().filter(|c| c.enabled).collect();
        for (n, list) in node_files(topo, "cpulist") {
            let ours: Vec<u32> = (0..cpus.len() as u32).filter(|&i| numa.node_of_apic(cpus[i as usize].apic_id) == Some(n)).collect();
            assert_eq!(ours, cpulist(&list), "{topo}: node{n}/cpulist");
        }

        // The memory ranges, as Linux logs them: "ACPI: SRAT: Node 0 PXM 0 [mem 0x00000000-0x0009ffff]".
        let logged: Vec<String> =
            linux(topo, "dmesg-numa.txt").lines().filter(|l| l.starts_with("ACPI: SRAT: Node ")).map(String::from).collect();
        let ours: Vec<String> = numa
            .memory()
            .iter()
            .map(|m| {
                let pxm = numa.pxm_of_node(m.node).unwrap();
                format!(
                    "ACPI: SRAT: Node {} PXM {pxm} [mem {:#010x}-{:#010x}]{}",
                    m.node,
                    m.start,
                    m.end - 1,
                    if m.hotpluggable { " hotplug" } else { "" }
                )
            })
            .collect();
        assert_eq!(ours, logged, "{topo}: memory ranges");
        checked += 1;
    }
    assert!(checked >= 3, "the 2node, 8node and mesh fixtures are in the tree");
}

#[test]
fn flat_machines_have_no_tables_and_one_node() {
    for &topo in FLAT {
        assert!(fixture(topo, "SRAT").is_none() && fixture(topo, "SLIT").is_none(), "{topo}");
        let numa = Numa::linux(None, None);
        let rows = node_files(topo, "distance");
        assert_eq!(rows, [(0, "10".to_string())], "{topo}");
        assert_eq!(numa.nodes(), [0]);
        assert_eq!(numa.distance(0, 0), 10);
    }
}

#[test]
fn eight_nodes_have_the_documented_matrix() {
    // tools/topology.sh's 8node: 16 if i^j == 1, 22 within a half, 28 across.
    let s = slit::parse(&fixture("8node", "SLIT").unwrap()).unwrap();
    assert_eq!(s.localities(), 8);
    for i in 0..8 {
        for j in 0..8 {
            let want = if i == j {
                10
            } else if i ^ j == 1 {
                16
            } else if i / 4 == j / 4 {
                22
            } else {
                28
            };
            assert_eq!(s.distance(i, j), Some(want), "{i}->{j}");
        }
    }
    // The mesh: a ring, neighbours 20, opposite 30.
    let s = slit::parse(&fixture("mesh", "SLIT").unwrap()).unwrap();
    assert_eq!(s.matrix(), [10, 20, 30, 20, 20, 10, 20, 30, 30, 20, 10, 20, 20, 30, 20, 10]);
}

#[test]
fn qemu_lists_a_disabled_empty_memory_entry_last() {
    // QEMU ends its SRAT with a zeroed, disabled memory entry (a placeholder): parsed, and
    // ignored by Linux as disabled.
    let s = srat::parse(&fixture("2node", "SRAT").unwrap()).unwrap();
    let last = s.memory().last().unwrap();
    assert!(!last.enabled());
    assert_eq!((last.base, last.length), (0, 0));
    assert_eq!(s.cpus().count(), 8);
    assert!(s.cpus().all(|c| c.enabled && !c.x2apic));
}

#[test]
fn seed003_tables_place_each_socket_in_its_node() {
    // -smp 224,sockets=2,cores=28,threads=4: APIC id = socket << 7 | core << 2 | thread (28
    // cores take 5 bits), all below 255, so QEMU lists type-0 entries only; node = socket.
    let s = srat::parse(&fixture("seed003", "SRAT").unwrap()).unwrap();
    let l = slit::parse(&fixture("seed003", "SLIT").unwrap()).unwrap();
    let cpus: Vec<_> = s.cpus().collect();
    assert_eq!(cpus.len(), 224);
    assert!(cpus.iter().all(|c| c.enabled && !c.x2apic));
    let want: Vec<u32> = (0..2).flat_map(|s| (0..28).flat_map(move |c| (0..4).map(move |t| s << 7 | c << 2 | t))).collect();
    assert_eq!(cpus.iter().map(|c| c.apic_id).collect::<Vec<_>>(), want);
    let numa = Numa::linux(Some(&s), Some(&l));
    assert_eq!((numa.fallback(), numa.slit(), numa.nodes()), (None, SlitUse::Used, &[0, 1][..]));
    for c in &cpus {
        assert_eq!(numa.node_of_apic(c.apic_id), Some((c.apic_id >> 7) as u16));
    }
    assert_eq!((numa.distance(0, 1), numa.distance(1, 0), numa.distance(1, 1)), (20, 20, 10));
    // As Linux logged them on that boot: "ACPI: SRAT: Node 0 PXM 0 [mem 0x00000000-0x0009ffff]", ...
    let ranges: Vec<_> = numa.memory().iter().map(|m| (m.node, m.start, m.end - 1)).collect();
    assert_eq!(ranges, [(0, 0, 0x9ffff), (0, 0x100000, 0x1fff_ffff), (1, 0x2000_0000, 0x3fff_ffff)]);
}
