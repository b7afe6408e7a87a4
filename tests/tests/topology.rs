//! The machine as both kernels show it (issue 60): Cadence boots a topology of
//! `tools/topology.sh`, runs the probe the Linux fixtures were recorded with
//! (`tools/topology/probe.sh`, through `tools/topology-cadence.sh`), and every view —
//! `/proc/schedstat`'s domains, debugfs `sched/domains` names and flags, the `sched_verbose`
//! log's groups and balance masks, `/sys/devices/system/node`, `lscpu`'s topology lines and
//! `numactl --hardware` — must equal what Linux 6.12 showed on the same QEMU flags
//! (`tests/fixtures/topology/linux-6.12/NAME`, compared by `tools/topology-compare.py`).
//! Two of the five topologies run here (2 nodes, and a ring whose NUMA groups overlap); all five
//! and the big machines are `make bench-topology`.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn matches_linux(name: &str) {
    let out = std::env::temp_dir().join(format!("cadence-topology-{name}-{}", std::process::id()));
    let rec = Command::new(root().join("tools/topology-cadence.sh"))
        .arg(name)
        .arg(&out)
        .env("TIMEOUT", "300")
        .output()
        .expect("run tools/topology-cadence.sh");
    assert!(
        rec.status.success(),
        "{name}: recording failed:\n{}{}",
        String::from_utf8_lossy(&rec.stdout),
        String::from_utf8_lossy(&rec.stderr)
    );
    let cmp = Command::new("python3")
        .arg(root().join("tools/topology-compare.py"))
        .arg(root().join("tests/fixtures/topology/linux-6.12").join(name))
        .arg(&out)
        .args(["--name", name])
        .output()
        .expect("run tools/topology-compare.py");
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        cmp.status.success(),
        "{name}: Cadence differs from Linux 6.12:\n{}{}",
        String::from_utf8_lossy(&cmp.stdout),
        String::from_utf8_lossy(&cmp.stderr)
    );
}

#[test]
fn two_nodes_match_linux() {
    matches_linux("2node");
}

#[test]
fn overlapping_numa_groups_match_linux() {
    matches_linux("mesh");
}
