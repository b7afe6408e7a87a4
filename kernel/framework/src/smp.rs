//! SMP bring-up and the boot report.
//!
//! The BSP starts each AP from the MADT in order (logical ids 1, 2, ...), one at a time, through
//! `arch::smp`. Each AP sets up its GS base, GDT/TSS, IDT and LAPIC, then hands over to the
//! kernel (the [`ap_start`](crate::upcalls::Upcalls::ap_start) upcall), which starts its
//! periodic tick, prints its `cadence: cpu <n> online ...` line ([`announce_online`]) and goes
//! idle. An AP that does not come up is reported and skipped (a degraded boot with fewer CPUs,
//! said so).
//!
//! Topology: each CPU reads its own (package, core, thread) from CPUID; [`smt_siblings`] groups
//! CPUs with the same package and core.

use crate::arch::{apic, cpuid, smp as arch_smp};
use crate::mm::stack::KernelStack;
use crate::percpu::{self, PerCpu};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

const AP_STACK_SIZE: usize = 64 * 1024;

/// Brings this CPU's descriptor tables and LAPIC up (shared by the BSP and the APs). The
/// periodic tick is started separately: the BSP must calibrate the LAPIC timer first.
fn init_this_cpu_interrupts() {
    let tables = crate::arch::gdt::init_this_cpu();
    percpu::current().tss.store(tables.tss, Ordering::Release);
    crate::arch::idt::load();
    crate::arch::entry::init_this_cpu();
    crate::arch::uaccess::init_this_cpu();
    crate::arch::fpu::init_this_cpu();
    apic::enable();
}

/// Machines with more CPUs than this get one boot-report line per package
/// ([`report_packages`]) instead of one per CPU, so the console stays readable.
pub const PER_CPU_REPORT_MAX: u32 = 64;

/// Prints this CPU's boot-report line (on machines of at most [`PER_CPU_REPORT_MAX`] CPUs)
/// and marks it online.
pub fn announce_online(cpu: &PerCpu) {
    let t = cpu.topology;
    if percpu::nr_possible() <= PER_CPU_REPORT_MAX {
        crate::kprintln!(
            "cadence: cpu {} online apic={} package={} core={} thread={}",
            cpu.cpu_id,
            cpu.apic_id,
            t.package,
            t.core,
            t.thread
        );
    }
    cpu.online.store(true, Ordering::Release);
}

/// On a machine of more than [`PER_CPU_REPORT_MAX`] CPUs, prints one line per package in
/// place of the per-CPU lines: `cadence: package <p> online: cpus <list> apic <list> (<c>
/// cores, <t> threads per core)`. Nothing on smaller machines.
pub fn report_packages() {
    if percpu::nr_possible() <= PER_CPU_REPORT_MAX {
        return;
    }
    let cpus: Vec<&PerCpu> = percpu::online_cpus().collect();
    let mut packages: Vec<u32> = cpus.iter().map(|c| c.topology.package).collect();
    packages.sort_unstable();
    packages.dedup();
    for p in packages {
        let mine: Vec<&&PerCpu> = cpus.iter().filter(|c| c.topology.package == p).collect();
        let ids: cadence_sched::CpuMask = mine.iter().map(|c| c.cpu_id as usize).collect();
        let mut apics: Vec<u32> = mine.iter().map(|c| c.apic_id).collect();
        apics.sort_unstable();
        let mut cores: Vec<u32> = mine.iter().map(|c| c.topology.core).collect();
        cores.sort_unstable();
        cores.dedup();
        let threads = mine.len().div_ceil(cores.len().max(1));
        crate::kprintln!(
            "cadence: package {} online: cpus {} apic {} ({} cores, {} threads per core)",
            p,
            ids.to_list(),
            id_list(&apics),
            cores.len(),
            threads
        );
    }
}

/// Sorted ids in Linux's list format (`0-3,8-11`).
fn id_list(sorted: &[u32]) -> alloc::string::String {
    use core::fmt::Write;
    let mut out = alloc::string::String::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        let sep = if out.is_empty() { "" } else { "," };
        let _ = if i == j { write!(out, "{sep}{}", sorted[i]) } else { write!(out, "{sep}{}-{}", sorted[i], sorted[j]) };
        i = j + 1;
    }
    out
}

/// Creates CPU `cpu`'s per-CPU data of each subsystem that has some (`percpu::PerCpuVar`),
/// before its area is listed: whoever finds a CPU listed finds its run queue and timers.
fn init_cpu_data(cpu: u32) {
    crate::upcalls::init_cpu(cpu);
    crate::timer::init_cpu(cpu);
    crate::mm::tlb::init_cpu(cpu);
    crate::trace::irqsoff::init_cpu(cpu);
}

/// The BSP's own per-CPU and interrupt setup.
pub fn init_bsp() -> &'static PerCpu {
    let topo = cpuid::topology();
    init_cpu_data(0);
    let cpu = percpu::install(0, topo.apic_id, topo);
    init_this_cpu_interrupts();
    cpu
}

extern "C" fn ap_entry(arg: u64) -> ! {
    // First thing: the GS base, so that everything after (logging, faults) knows which CPU this is.
    let area = arg as *mut PerCpu;
    arch_smp::AP_STARTED.fetch_add(1, Ordering::AcqRel);
    let topo = cpuid::topology();
    // SAFETY: the BSP leaked this area for this AP alone and waits for it; nobody else touches it
    // until `activate` publishes it.
    let cpu = unsafe { percpu::activate(area, topo) };
    init_this_cpu_interrupts();
    crate::upcalls::ap_start(cpu)
}

/// SMT sibling threads were present and left offline by the `nosmt` boot option.
static SIBLINGS_LEFT_OFFLINE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Did this boot leave SMT sibling threads offline (`nosmt` on a machine that has them)?
pub fn siblings_left_offline() -> bool {
    SIBLINGS_LEFT_OFFLINE.load(core::sync::atomic::Ordering::Relaxed)
}

/// Fixes how many CPUs this boot may bring up ([`percpu::nr_possible`], Linux's
/// `nr_cpu_ids`): the boot CPU and the listed APs, at most `max_cpus` and `NR_CPUS`. Before
/// [`init_bsp`], so that every CPU's per-CPU data is sized for the whole machine.
pub fn set_possible(ap_apic_ids: &[u32], max_cpus: u32) {
    let listed = u32::try_from(ap_apic_ids.len()).unwrap_or(u32::MAX).saturating_add(1);
    percpu::set_nr_possible(listed.min(max_cpus.max(1)));
}

/// Sends every other CPU an INIT IPI, so that APs the firmware left running (OVMF's wait loop)
/// stop executing until [`start_aps`] starts them: under TCG their vCPU threads otherwise take
/// the host's cores from the boot CPU while it calibrates its clocks. Boot, after
/// [`init_bsp`] (the LAPIC in its chosen mode), before the APs start.
pub fn park_aps(ap_apic_ids: &[u32]) {
    if ap_apic_ids.is_empty() {
        return;
    }
    apic::send_init_all_but_self();
    crate::arch::tsc::delay_us(10_000); // INIT's settling time, as start_ap waits after it
}

/// Starts every AP listed by the platform (at most `max_cpus` CPUs in all). Returns how many
/// APs came up.
pub fn start_aps(ap_apic_ids: &[u32], max_cpus: u32, nosmt: bool) -> u32 {
    let smt_mask = (1u32 << cpuid::smt_shift()) - 1;
    if ap_apic_ids.is_empty() || max_cpus <= 1 {
        return 0;
    }
    let Some(page) = crate::mm::frame::take_low_page() else {
        crate::kprintln!("cadence: warning: no free page below 1 MiB for the SMP trampoline; running on 1 cpu");
        return 0;
    };
    let tramp = match arch_smp::Trampoline::install(page) {
        Ok(t) => t,
        Err(e) => {
            crate::kprintln!("cadence: warning: SMP trampoline unusable ({:?}); running on 1 cpu", e);
            return 0;
        }
    };
    let mut next_id = 1u32;
    for &apic_id in ap_apic_ids {
        if next_id >= max_cpus || next_id >= percpu::nr_possible() {
            crate::kprintln!("cadence: cpu limit {} reached; apic {} left offline", max_cpus, apic_id);
            continue;
        }
        if apic_id > 0xfe && !apic::x2apic_mode() {
            crate::kprintln!("cadence: apic {} needs x2APIC mode (not offered, or nox2apic); left offline", apic_id);
            continue;
        }
        if nosmt && apic_id & smt_mask != 0 {
            SIBLINGS_LEFT_OFFLINE.store(true, core::sync::atomic::Ordering::Relaxed);
            crate::kprintln!("cadence: nosmt: apic {} is an SMT sibling thread, left offline", apic_id);
            continue;
        }
        let stack = match KernelStack::allocate(AP_STACK_SIZE) {
            Ok(s) => s,
            Err(e) => {
                crate::kprintln!("cadence: warning: no stack for apic {} ({:?}); left offline", apic_id, e);
                continue;
            }
        };
        init_cpu_data(next_id);
        let area = percpu::new_area(next_id, apic_id);
        tramp.prepare(stack.top(), ap_entry, area as u64);
        // Up to 10 s for the AP to call in, as Linux's do_boot_cpu waits: under TCG on a
        // loaded host a vCPU thread can sit unscheduled for hundreds of ms, and a 200 ms limit
        // gave up on an AP that then came up late on the next AP's start-up data (a boot
        // panic, "switch to a context that is not ready", seen by `make suite`).
        if arch_smp::start_ap(&tramp, apic_id, 10_000) {
            core::mem::forget(stack); // the AP's idle stack lives forever
                                      // Wait for it to finish bring-up (prints its online line) before reusing the trampoline.
            let deadline = crate::time::uptime_ns() + 10_000_000_000;
            let cpu_id = next_id;
            while !percpu::get(cpu_id).is_some_and(|c| c.online.load(Ordering::Acquire)) {
                if crate::time::uptime_ns() > deadline {
                    crate::kprintln!("cadence: warning: cpu {} (apic {}) started but never came online", cpu_id, apic_id);
                    break;
                }
                core::hint::spin_loop();
            }
            next_id += 1;
        } else {
            crate::kprintln!("cadence: warning: cpu {} (apic {}) did not come up; continuing with fewer cpus", next_id, apic_id);
            // SAFETY: the AP never reached its entry (and was sent INIT again), so the area was
            // never published; reclaim it.
            drop(unsafe { Box::from_raw(area) });
        }
    }
    next_id - 1
}

/// Logical ids of the online CPUs that share a core with `cpu` (itself included).
pub fn smt_siblings(cpu: &PerCpu) -> Vec<u32> {
    percpu::online_cpus()
        .filter(|c| c.topology.package == cpu.topology.package && c.topology.core == cpu.topology.core)
        .map(|c| c.cpu_id)
        .collect()
}

/// Counts (cpus, packages, cores, max threads per core) over the online CPUs.
pub fn topology_summary() -> (u32, u32, u32, u32) {
    let cpus: Vec<&PerCpu> = percpu::online_cpus().collect();
    let mut packages: Vec<u32> = cpus.iter().map(|c| c.topology.package).collect();
    packages.sort_unstable();
    packages.dedup();
    let mut cores: Vec<(u32, u32)> = cpus.iter().map(|c| (c.topology.package, c.topology.core)).collect();
    cores.sort_unstable();
    cores.dedup();
    let threads = cpus.iter().map(|c| smt_siblings(c).len() as u32).max().unwrap_or(1);
    (cpus.len() as u32, packages.len() as u32, cores.len() as u32, threads)
}
