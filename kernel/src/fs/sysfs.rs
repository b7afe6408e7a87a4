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
//! * debugfs at `/sys/kernel/debug`: `sched/features`, `sched/debug` and `sched/base_slice_ns` (see [`debugfs`]);
//!   tracefs at `/sys/kernel/tracing` (see [`super::tracefs`]).
//!
//! CPUs do not come and go after boot, so the CPU directories are made once, at the first look.

use super::pseudo::{cpumask_hex, Fixed, Node};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
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
            (String::from("features"), features),
            (String::from("wakeup_granularity_ns"), sysctl_file("kernel.sched_wakeup_granularity_ns")),
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
            let shift = k.sharing.next_power_of_two().trailing_zeros();
            let id = c.apic_id >> shift;
            let shared = cpus.iter().filter(|o| o.apic_id >> shift == id).fold(CpuMask::EMPTY, |m, o| m.with(o.cpu_id as usize));
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

fn list(m: CpuMask) -> String {
    format!("{}\n", m.to_list())
}

fn system() -> Node {
    let on = crate::sched::online_mask();
    let cpus: Vec<_> = crate::percpu::online_cpus().collect();
    let mut cpu_dir: Vec<(String, Node)> = alloc::vec![
        (String::from("kernel_max"), Node::text(format!("{}\n", cadence_sched::NR_CPUS - 1))),
        (String::from("offline"), Node::text(String::from("\n"))),
        (String::from("online"), Node::text(list(on))),
        (String::from("possible"), Node::text(list(on))),
        (String::from("present"), Node::text(list(on))),
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
    for c in &cpus {
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
            entries.insert(0, (String::from("online"), Node::text(String::from("1\n"))));
        }
        cpu_dir.push((format!("cpu{}", c.cpu_id), Node::dir(Fixed(entries))));
    }
    let total_kb = crate::mm::frame::total_frames() * 4;
    let node0 = Node::dir(Fixed(alloc::vec![
        (String::from("cpulist"), Node::text(list(on))),
        (String::from("cpumap"), Node::text(format!("{}\n", cpumask_hex(on)))),
        (
            String::from("meminfo"),
            Node::ro(move || {
                let free = crate::mm::frame::free_frames() * 4;
                Ok(format!(
                    "Node 0 MemTotal:       {:>8} kB\nNode 0 MemFree:        {:>8} kB\nNode 0 MemUsed:        {:>8} kB\n",
                    total_kb,
                    free,
                    total_kb.saturating_sub(free)
                ))
            }),
        ),
    ]));
    let node_dir = alloc::vec![
        (String::from("has_cpu"), Node::text(String::from("0\n"))),
        (String::from("has_memory"), Node::text(String::from("0\n"))),
        (String::from("node0"), node0),
        (String::from("online"), Node::text(String::from("0\n"))),
        (String::from("possible"), Node::text(String::from("0\n"))),
    ];
    Node::dir(Fixed(alloc::vec![(String::from("cpu"), Node::dir(Fixed(cpu_dir))), (String::from("node"), Node::dir(Fixed(node_dir))),]))
}
