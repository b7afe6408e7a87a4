//! sysfs at `/sys`: the CPU and NUMA-node files that glibc (`sysconf(_SC_NPROCESSORS_*)`),
//! libnuma, util-linux `lscpu` and rt-app read, generated from the framework's CPU table
//! (`percpu`, `smp` topology) in Linux's formats:
//!
//! * `/sys/devices/system/cpu/{online,possible,present,offline,kernel_max}`, `smt/{control,active}`,
//!   `cpuN/online`, `cpuN/cache/indexM/*` (CPUID leaf 4) and `cpuN/topology/{core_id,physical_package_id,die_id,cluster_id,
//!   thread_siblings,thread_siblings_list,core_siblings,core_siblings_list,core_cpus,
//!   core_cpus_list,package_cpus,package_cpus_list}`;
//! * `/sys/devices/system/node/{online,possible,has_cpu,has_memory}` and
//!   `node0/{cpumap,cpulist,meminfo}` (one node).
//!
//! * debugfs at `/sys/kernel/debug`: `sched/features`, `sched/debug`, `sched/base_slice_ns` and
//!   Cadence's `sched/work_conservation` (see [`debugfs`]);
//!   tracefs at `/sys/kernel/tracing` (see [`super::tracefs`]).
//!
//! CPUs do not come and go after boot, so the CPU directories are made once, at the first look.

use super::pseudo::{cpumask_hex, Fixed, Node};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use cadence_sched::errno::Errno;
use cadence_sched::CpuMask;

/// The `/sys` directory.
pub fn root() -> Node {
    Node::dir(Fixed(alloc::vec![
        (String::from("devices"), Node::dir(Fixed(alloc::vec![(String::from("system"), system())]))),
        // Mountpoints, as Linux's sysfs has them: debugfs and tracefs are mounted on the first
        // two at boot, cgroupfs where the user mounts it.
        (String::from("kernel"), Node::dir(Fixed(alloc::vec![(String::from("debug"), empty()), (String::from("tracing"), empty())])),),
        (String::from("fs"), Node::dir(Fixed(alloc::vec![(String::from("cgroup"), empty())]))),
    ]))
}

fn empty() -> Node {
    Node::Dir(0o755, alloc::sync::Arc::new(Fixed(Vec::new())))
}

/// Mounts `/sys`, then debugfs and tracefs on their directories in it (Linux's boot mounts
/// them too, as systemd does).
pub fn mount_all() {
    super::mount_pseudo("sysfs", "/sys", "sysfs", "rw,nosuid,nodev,noexec,relatime", root());
    super::mount_pseudo("debugfs", "/sys/kernel/debug", "debugfs", "rw,nosuid,nodev,noexec,relatime", debugfs());
    super::mount_pseudo("tracefs", "/sys/kernel/tracing", "tracefs", "rw,nosuid,nodev,noexec,relatime", super::tracefs::root());
}

/// debugfs at `/sys/kernel/debug` (listed as mounted in `/proc/mounts`): the scheduler's
/// `sched/features`, as Linux's, over the same flags as `kernel.sched_features`: a read lists
/// each feature, `NO_` before those off, a space after each; a write names one feature,
/// `NO_` to turn it off (EINVAL otherwise). `sched/base_slice_ns` is
/// `kernel.sched_base_slice_ns` (Linux 6.6 moved it here), `sched/wakeup_granularity_ns`
/// `kernel.sched_wakeup_granularity_ns` (Linux 6.1's place for it). `sched/debug` is
/// [`crate::sched::debug`]'s run-queue dump.
pub fn debugfs() -> Node {
    let sysctl_file = |name: &'static str| {
        Node::rw(
            move || Ok(format!("{}\n", crate::sysctl::get(name).unwrap_or_default())),
            move |v| crate::sysctl::set(name, v.trim()).map_err(|e| e.unwrap_or(cadence_abi::errno::Errno::EINVAL)),
        )
    };
    let features = Node::rw(
        || {
            let all = crate::sysctl::get("kernel.sched_features").unwrap_or_default();
            let mut out = String::new();
            for f in all.split_whitespace() {
                out.push_str(f);
                out.push(' ');
            }
            out.push('\n');
            Ok(out)
        },
        |v| {
            let word = v.trim();
            if word.is_empty() || word.contains(char::is_whitespace) {
                return Err(cadence_abi::errno::Errno::EINVAL);
            }
            crate::sysctl::set("kernel.sched_features", word).map_err(|e| e.unwrap_or(cadence_abi::errno::Errno::EINVAL))
        },
    );
    let sched = Node::Dir(
        0o755,
        alloc::sync::Arc::new(Fixed(alloc::vec![
            (String::from("base_slice_ns"), sysctl_file("kernel.sched_base_slice_ns")),
            (String::from("debug"), Node::ro(|| Ok(crate::sched::debug::text()))),
            (String::from("domains"), domains_dir()),
            (
                String::from("verbose"),
                Node::rw(
                    || Ok(String::from(if crate::sched::topology::verbose() { "Y\n" } else { "N\n" })),
                    |v| {
                        let on = match v.trim() {
                            "Y" | "y" | "1" => true,
                            "N" | "n" | "0" => false,
                            _ => return Err(cadence_abi::errno::Errno::EINVAL),
                        };
                        crate::sched::topology::set_verbose(on);
                        Ok(())
                    },
                ),
            ),
            (String::from("features"), features),
            (String::from("wakeup_granularity_ns"), sysctl_file("kernel.sched_wakeup_granularity_ns")),
            // Cadence's own (no Linux counterpart): the work-conservation monitor's counters.
            (String::from("work_conservation"), Node::ro(|| Ok(crate::sched::wc::text()))),
        ])),
    );
    Node::Dir(
        0o700,
        alloc::sync::Arc::new(Fixed(alloc::vec![
            (String::from("sched"), sched),
            // Linux mounts tracefs here too.
            (String::from("tracing"), Node::Link(String::from("../tracing"))),
        ])),
    )
}

/// `cpuN/cache/indexM` (Linux's `cacheinfo`): one directory per cache of CPUID leaf 4, with
/// the CPUs sharing it: those whose APIC ids agree above the bits that number its sharers.
fn cache_dir(c: &framework::percpu::PerCpu, cpus: &[&framework::percpu::PerCpu]) -> Node {
    let caches = crate::arch::cpuid::identity().caches;
    let dirs = caches
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let id = k.id_of(c.apic_id);
            let shared: CpuMask = cpus.iter().filter(|o| k.id_of(o.apic_id) == id).map(|o| o.cpu_id as usize).collect();
            let text = |v: String| Node::text(format!("{v}\n"));
            let files = alloc::vec![
                (String::from("coherency_line_size"), text(format!("{}", k.line))),
                (String::from("id"), text(format!("{id}"))),
                (String::from("level"), text(format!("{}", k.level))),
                (String::from("number_of_sets"), text(format!("{}", k.sets))),
                (String::from("physical_line_partition"), text(format!("{}", k.partitions))),
                (String::from("shared_cpu_list"), Node::text(list(shared))),
                (String::from("shared_cpu_map"), text(cpumask_hex(shared))),
                (String::from("size"), text(format!("{}K", k.size() / 1024))),
                (String::from("type"), text(String::from(k.kind))),
                (String::from("ways_of_associativity"), text(format!("{}", k.ways))),
            ];
            (format!("index{i}"), Node::dir(Fixed(files)))
        })
        .collect();
    Node::dir(Fixed(dirs))
}

/// Linux 6.12's `kstrtobool` (what `cpuN/online` takes): the first character `y`, `Y`, `t`,
/// `T`, `1` or `n`, `N`, `f`, `F`, `0`, or `on` / `off` in any case; the rest is not looked at.
/// Else `EINVAL`.
fn kstrtobool(v: &str) -> Result<bool, Errno> {
    let b = v.as_bytes();
    match (b.first(), b.get(1)) {
        (Some(b'y' | b'Y' | b't' | b'T' | b'1'), _) => Ok(true),
        (Some(b'n' | b'N' | b'f' | b'F' | b'0'), _) => Ok(false),
        (Some(b'o' | b'O'), Some(b'n' | b'N')) => Ok(true),
        (Some(b'o' | b'O'), Some(b'f' | b'F')) => Ok(false),
        _ => Err(Errno::EINVAL),
    }
}

fn list(m: CpuMask) -> String {
    format!("{}\n", m.to_list())
}

fn system() -> Node {
    let cpus: Vec<_> = crate::percpu::online_cpus().collect();
    // Present and possible: the CPUs that came up at boot; online: those the scheduler uses now
    // (`cpuN/online`, `sched::hotplug`).
    let present = crate::sched::possible_mask();
    let mut cpu_dir: Vec<(String, Node)> = alloc::vec![
        (String::from("kernel_max"), Node::text(format!("{}\n", cadence_sched::NR_CPUS - 1))),
        (String::from("offline"), Node::ro(move || Ok(list(present & !crate::sched::online_mask())))),
        (String::from("online"), Node::ro(|| Ok(list(crate::sched::online_mask())))),
        (String::from("possible"), Node::text(list(present))),
        (String::from("present"), Node::text(list(present))),
    ];
    let smt = cpus.iter().any(|c| crate::smp::smt_siblings(c).len() > 1);
    cpu_dir.push((
        String::from("smt"),
        Node::dir(Fixed(alloc::vec![
            (String::from("active"), Node::text(format!("{}\n", u8::from(smt)))),
            // Linux's `nosmt` boot says `off`: the siblings exist but stay offline.
            (
                String::from("control"),
                Node::text(String::from(if smt {
                    "on\n"
                } else if crate::smp::siblings_left_offline() {
                    "off\n"
                } else {
                    "notsupported\n"
                })),
            ),
        ])),
    ));
    Node::dir(Fixed(alloc::vec![(String::from("cpu"), Node::dir(CpuDir(cpu_dir))), (String::from("node"), node_dir())]))
}

/// `/sys/devices/system/cpu`: the fixed files, and a `cpuN` directory per online CPU made when
/// looked up (at 1,024 CPUs, making them all at boot was O(CPUs²)).
struct CpuDir(Vec<(String, Node)>);

impl super::pseudo::GenDir for CpuDir {
    fn list(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self.0.iter().map(|(n, node)| (n.clone(), node.kind())).collect();
        out.extend(crate::percpu::online_cpus().map(|c| (format!("cpu{}", c.cpu_id), super::pseudo::DIR)));
        out
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        if let Some((_, node)) = self.0.iter().find(|(n, _)| n == name) {
            return Some(node.clone());
        }
        let id: u32 = name.strip_prefix("cpu")?.parse().ok()?;
        let c = crate::percpu::get(id).filter(|c| c.online.load(core::sync::atomic::Ordering::Acquire))?;
        Some(cpu_node(c))
    }
}

/// `cpuN`: its `online` file (not CPU 0's, as Linux: 1 or 0, and writing 0 or 1 takes it
/// offline or back, `sched::hotplug`), `cache/` and `topology/` (not while it is offline, as
/// Linux removes them; their sibling masks hold the CPUs online).
fn cpu_node(c: &'static framework::percpu::PerCpu) -> Node {
    let id = c.cpu_id;
    let online_file = move || {
        Node::rw(
            move || Ok(format!("{}\n", u8::from(crate::sched::online_mask().contains(id as usize)))),
            move |v| match kstrtobool(v)? {
                true => crate::sched::hotplug::cpu_up(id),
                false => crate::sched::hotplug::cpu_down(id),
            },
        )
    };
    let online = crate::sched::online_mask();
    if !online.contains(id as usize) {
        return Node::dir(Fixed(alloc::vec![(String::from("online"), online_file())]));
    }
    let cpus: Vec<_> = crate::percpu::online_cpus().filter(|o| online.contains(o.cpu_id as usize)).collect();
    let mask =
        |pred: &dyn Fn(&&&framework::percpu::PerCpu) -> bool| cpus.iter().filter(pred).map(|o| o.cpu_id as usize).collect::<CpuMask>();
    let siblings = mask(&|o| o.topology.package == c.topology.package && o.topology.core == c.topology.core);
    let package = mask(&|o| o.topology.package == c.topology.package);
    let pair = |name: &str, m: CpuMask| {
        [(String::from(name), Node::text(format!("{}\n", cpumask_hex(m)))), (format!("{name}_list"), Node::text(list(m)))]
    };
    let mut topo: Vec<(String, Node)> = alloc::vec![
        (String::from("cluster_id"), Node::text(format!("{}\n", c.topology.core))),
        (String::from("core_id"), Node::text(format!("{}\n", c.topology.core))),
        (String::from("die_id"), Node::text(String::from("0\n"))),
        (String::from("physical_package_id"), Node::text(format!("{}\n", c.topology.package))),
    ];
    for (name, m) in [("core_cpus", siblings), ("core_siblings", package), ("package_cpus", package), ("thread_siblings", siblings)] {
        topo.extend(pair(name, m));
    }
    topo.sort_by(|a, b| a.0.cmp(&b.0));
    let mut entries = alloc::vec![(String::from("cache"), cache_dir(c, &cpus)), (String::from("topology"), Node::dir(Fixed(topo)))];
    if c.cpu_id != 0 {
        // Linux's CPU 0 cannot go offline and has no `online` file.
        entries.insert(0, (String::from("online"), online_file()));
    }
    Node::dir(Fixed(entries))
}

/// `/sys/devices/system/node` (Linux's `drivers/base/node.c`): the nodes of the SRAT (one,
/// node 0, without it), each with its CPUs, its distances (the SLIT's row) and its memory.
fn node_dir() -> Node {
    use crate::sched::topology as topo;
    let n = topo::nr_nodes();
    let all = if n == 1 { String::from("0\n") } else { format!("0-{}\n", n - 1) };
    let node_cpus: Vec<CpuMask> = (0..n as u32).map(topo::cpus_of_node).collect();
    let with_cpus: CpuMask = (0..n).filter(|&k| !node_cpus[k].is_empty()).collect();
    let mut entries = alloc::vec![
        (String::from("has_cpu"), Node::text(list(with_cpus))),
        (String::from("has_memory"), Node::text(all.clone())),
        (String::from("has_normal_memory"), Node::text(all.clone())),
        (String::from("online"), Node::text(all.clone())),
        (String::from("possible"), Node::text(all)),
    ];
    for (node, &cpus) in (0..n as u32).zip(&node_cpus) {
        let distance = (0..n as u32).map(|to| format!("{}", topo::node_distance(node, to))).collect::<Vec<_>>().join(" ");
        entries.push((
            format!("node{node}"),
            Node::dir(Fixed(alloc::vec![
                // The node's CPUs online (Linux's `cpumask_of_node` loses an offline one).
                (String::from("cpulist"), Node::ro(move || Ok(list(cpus & crate::sched::online_mask())))),
                (String::from("cpumap"), Node::ro(move || Ok(format!("{}\n", cpumask_hex(cpus & crate::sched::online_mask()))))),
                (String::from("distance"), Node::text(format!("{distance}\n"))),
                (String::from("meminfo"), Node::ro(move || Ok(node_meminfo(node)))),
            ])),
        ));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Node::dir(Fixed(entries))
}

/// `nodeN/meminfo`'s first lines: the node's usable and free memory as the frame allocator
/// counts them per node (all of memory on a machine of one node).
fn node_meminfo(node: u32) -> String {
    let (usable, free) = u16::try_from(node).ok().and_then(crate::mm::frame::node_frames).unwrap_or((0, 0));
    let (total, free) = (usable * 4, free * 4);
    format!(
        "Node {node} MemTotal:       {total:>8} kB\nNode {node} MemFree:        {free:>8} kB\nNode {node} MemUsed:        {:>8} kB\n",
        total.saturating_sub(free)
    )
}

/// debugfs `sched/domains`: `cpuN/domainM/{min_interval, max_interval, ..., name, flags,
/// groups_flags, level}` as Linux 6.12 lists them (`register_sd`), made when looked up; empty
/// unless `sched/verbose` is `Y` (Linux 6.12 fills it only then).
fn domains_dir() -> Node {
    Node::Dir(0o555, alloc::sync::Arc::new(DomainsDir))
}

struct DomainsDir;

impl super::pseudo::GenDir for DomainsDir {
    fn list(&self) -> Vec<(String, u32)> {
        if !crate::sched::topology::verbose() {
            return Vec::new();
        }
        crate::percpu::online_cpus().map(|c| (alloc::format!("cpu{}", c.cpu_id), super::pseudo::DIR)).collect()
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        if !crate::sched::topology::verbose() {
            return None;
        }
        let cpu: u32 = name.strip_prefix("cpu")?.parse().ok()?;
        crate::percpu::get(cpu)?;
        Some(Node::Dir(0o555, alloc::sync::Arc::new(CpuDomainsDir(cpu as usize))))
    }
}

struct CpuDomainsDir(usize);

impl super::pseudo::GenDir for CpuDomainsDir {
    fn list(&self) -> Vec<(String, u32)> {
        let n = crate::sched::topology::domains().map(|d| d.domains(self.0).len()).unwrap_or(0);
        (0..n).map(|i| (alloc::format!("domain{i}"), super::pseudo::DIR)).collect()
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let index: usize = name.strip_prefix("domain")?.parse().ok()?;
        let files = crate::sched::topology::domains()?.debugfs_files(self.0, index)?;
        let nodes = files.into_iter().map(|(f, text)| (String::from(f), Node::text(text))).collect();
        Some(Node::Dir(0o555, alloc::sync::Arc::new(Fixed(nodes))))
    }
}
