//! The machine as the scheduler sees it: each CPU's NUMA node (the ACPI SRAT), the distances
//! between nodes (the SLIT), and the scheduling domains Linux 6.12 builds on the same machine
//! (`cadence_sched::topology`, docs/design/topology.md).
//!
//! [`init_numa`] reads the firmware's tables at boot, before the APs start; [`build_domains`]
//! builds every CPU's domains once they are all up, [`rebuild_domains`] again when a CPU goes
//! offline or comes back (`super::hotplug`). Readers take an `Arc` of the domains of the moment.
//! Shown as Linux shows them: `/proc/schedstat`'s domain lines ([`super::debug::schedstat`]),
//! debugfs `sched/domains/cpuN/domainM/` and `/sys/devices/system/node` (`fs::sysfs`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_firmware::numa::{Fallback, Numa, SlitUse};
use cadence_sched::topology::{CpuTopo, MachineTopology, NodeDistances, SchedDomains};
use cadence_sched::CpuMask;

static NUMA: spin::Once<Numa> = spin::Once::new();
/// Linux's `sched_debug_verbose` (`sched_verbose` on the command line, debugfs
/// `sched/verbose`): the domains are logged when built and listed in debugfs.
static VERBOSE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Is `sched_verbose` on?
pub fn verbose() -> bool {
    VERBOSE.load(core::sync::atomic::Ordering::Relaxed)
}

/// Sets `sched_verbose`.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, core::sync::atomic::Ordering::Relaxed)
}
/// The machine the domains are built from (boot), and the domains of the CPUs now up.
static MACHINE: spin::Once<Option<MachineTopology>> = spin::Once::new();
static DOMAINS: crate::sync::IrqLock<Option<Arc<SchedDomains>>> = crate::sync::IrqLock::new(None);

/// Reads the SRAT and SLIT the firmware gave (either may be absent: one node then) and says
/// what was found, as Linux's boot log does. Boot, before the APs start.
pub fn init_numa(srat: Option<&[u8]>, slit: Option<&[u8]>) {
    let numa = NUMA.call_once(|| {
        let srat = srat.and_then(|b| match cadence_firmware::srat::parse(b) {
            Ok(t) => Some(t),
            Err(e) => {
                crate::kprintln!("cadence: warning: SRAT unusable ({:?}): one NUMA node", e);
                None
            }
        });
        let slit = slit.and_then(|b| match cadence_firmware::slit::parse(b) {
            Ok(t) => Some(t),
            Err(e) => {
                crate::kprintln!("cadence: warning: SLIT unusable ({:?}): default distances", e);
                None
            }
        });
        Numa::linux(srat.as_ref(), slit.as_ref())
    });
    match numa.fallback() {
        Some(Fallback::NoSrat) => {}
        Some(f) => crate::kprintln!("cadence: warning: SRAT not used ({:?}): one NUMA node", f),
        None => {
            let slit = match numa.slit() {
                SlitUse::Used => "distances from the SLIT",
                SlitUse::Invalid => "the SLIT looks invalid: not used",
                _ => "no SLIT: default distances",
            };
            crate::klog!("numa: {} nodes from the SRAT, {}", numa.nodes().len(), slit);
        }
    }
}

fn numa() -> Option<&'static Numa> {
    NUMA.get()
}

/// Number of NUMA nodes (Linux's `nr_node_ids` on a machine whose nodes are numbered densely;
/// 1 without an SRAT).
pub fn nr_nodes() -> usize {
    numa().map(|n| n.nodes().iter().map(|&k| k as usize + 1).max().unwrap_or(1)).unwrap_or(1)
}

/// The node of the CPU with `apic_id` (0 when the SRAT does not place it, as Linux's
/// `numa_init_array` puts unplaced CPUs on a node with memory).
pub fn node_of_apic(apic_id: u32) -> u32 {
    numa().and_then(|n| n.node_of_apic(apic_id)).map(u32::from).unwrap_or(0)
}

/// CPU `cpu`'s node.
pub fn cpu_to_node(cpu: u32) -> u32 {
    crate::percpu::get(cpu).map(|c| node_of_apic(c.apic_id)).unwrap_or(0)
}

/// Linux's `node_distance(a, b)`.
pub fn node_distance(a: u32, b: u32) -> u32 {
    match numa() {
        Some(n) => u32::from(n.distance(a as u16, b as u16)),
        None if a == b => 10,
        None => 20,
    }
}

/// The online CPUs of node `node` (Linux's `cpumask_of_node`).
pub fn cpus_of_node(node: u32) -> CpuMask {
    crate::percpu::online_cpus().filter(|c| node_of_apic(c.apic_id) == node).map(|c| c.cpu_id as usize).collect()
}

/// Gives every online CPU its node (`PerCpu::numa_node`, Linux's `numa_node_id()`) and the
/// frame allocator each node's memory (the SRAT's ranges) and fallback order (the SLIT's
/// distances): from here on a task's memory comes from the node it runs on (first touch).
/// Boot, once every CPU is up. A machine of one node changes nothing.
pub fn init_memory_nodes() {
    for c in crate::percpu::online_cpus() {
        c.numa_node.store(node_of_apic(c.apic_id) as u16, core::sync::atomic::Ordering::Relaxed);
    }
    let Some(n) = numa() else { return };
    let ranges: Vec<(u64, u64, u16)> = n.memory().iter().map(|m| (m.start, m.end, m.node)).collect();
    crate::mm::frame::set_nodes(&ranges, nr_nodes() as u16, |a, b| node_distance(u32::from(a), u32::from(b)));
}

/// What the scheduler knows of CPU `cpu`: its package, core and thread (CPUID), its LLC and L2
/// ids (CPUID leaf 4, `Cache::id_of`), its node.
fn cpu_topo(c: &framework::percpu::PerCpu) -> CpuTopo {
    let caches = crate::arch::cpuid::identity().caches;
    let id_of = |level: u8| caches.iter().rfind(|k| k.level == level && k.kind != "Instruction").map(|k| k.id_of(c.apic_id));
    let llc_level = caches.iter().map(|k| k.level).max().unwrap_or(0);
    let t = c.topology;
    CpuTopo {
        package: t.package,
        core: t.core,
        thread: t.thread,
        // Without cache information every package is one LLC (as Linux's fallback to the die).
        llc: id_of(llc_level).unwrap_or(t.package << 16),
        l2: id_of(2),
        node: node_of_apic(c.apic_id),
    }
}

/// Builds every online CPU's scheduling domains (at boot, when all CPUs are up). A machine the
/// builder refuses (CPU ids with gaps, inconsistent CPUID) gets no domains, said on the
/// console: the files that show them are then empty, as on a Linux without domains.
pub fn build_domains() {
    let machine = MACHINE.call_once(|| {
        let n = crate::percpu::nr_cpus();
        let cpus: Option<Vec<CpuTopo>> = (0..n)
            .map(|id| crate::percpu::get(id).filter(|c| c.online.load(core::sync::atomic::Ordering::Acquire)).map(cpu_topo))
            .collect();
        let Some(cpus) = cpus else {
            crate::kprintln!("cadence: warning: sched domains: a CPU id below {} is offline: no domains", n);
            return None;
        };
        let nodes = nr_nodes();
        let matrix: Vec<u8> = (0..nodes * nodes).map(|k| node_distance((k / nodes) as u32, (k % nodes) as u32) as u8).collect();
        let distances = NodeDistances::try_from_matrix(nodes, &matrix).unwrap_or_else(|_| NodeDistances::without_slit(nodes));
        match MachineTopology::new(cpus, distances) {
            Ok(m) => Some(m),
            Err(e) => {
                crate::kprintln!("cadence: warning: sched domains not built ({:?})", e);
                None
            }
        }
    });
    if let Some(m) = machine {
        let d = SchedDomains::build(m);
        crate::klog!("sched domains: levels {}", d.level_names().join(" "));
        install(d);
    }
}

/// Rebuilds the domains over the CPUs in `active` (a CPU went offline or came back: Linux's
/// `partition_sched_domains` over `cpu_active_mask`) and hands them to the load balancer.
/// Callers serialize (the hot-plug lock, `super::hotplug`).
pub fn rebuild_domains(active: CpuMask) {
    if let Some(Some(m)) = MACHINE.get() {
        install(SchedDomains::build_for(m, active));
    }
}

fn install(d: SchedDomains) {
    if verbose() {
        // Linux's sched_verbose log, line for line (without `cap=`).
        for cpu in 0..d.nr_cpus() {
            for line in d.sched_domain_debug(cpu) {
                crate::kprintln!("{}", line);
            }
        }
    }
    let d = Arc::new(d);
    let old = DOMAINS.lock().replace(d.clone());
    drop(old); // freed with the lock released
    super::load_balance::domains_changed(d);
}

/// Every CPU's domains as last built (they change when a CPU goes offline or comes back: hold
/// the `Arc` for one consistent view). `None` before the boot builds them or if it could not.
pub fn domains() -> Option<Arc<SchedDomains>> {
    DOMAINS.lock().clone()
}
