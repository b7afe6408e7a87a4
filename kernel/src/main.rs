//! Cadence: a bare-metal x86_64 kernel built around its scheduler.
//!
//! Boot sequence (BSP, [`kernel_main`]): console → TSC clock → frames and heap → per-CPU area,
//! GDT/TSS/IDT → command line (fw_cfg) → legacy PIC masked, ACPI MADT, LAPIC + I/O APIC →
//! LAPIC timer calibrated, periodic tick → APs started → boot report → (tests | run= | idle).
//!
//! Module map: the hardware, per-CPU data, locks, interrupts, timers, memory primitives and the
//! context switch are the framework crate's (`framework`, re-exported here under their old
//! names: `arch`, `mm`, `percpu`, `smp`, `platform`, `sync`, `interrupts`, `time`, `timer`);
//! this crate holds no `unsafe` and builds the scheduler (`sched`), the tracer's scheduler half
//! (`trace`), the block layer (`block`), the virtio disk (`drivers`), ttys and sessions (`tty`),
//! sysctls, the shell, benchmarks, rt-app and the chaos stress on top. The framework calls up
//! only through what [`upcalls`] registers at boot. See docs/design/layering.md.
#![no_std]
#![no_main]
// Every `unsafe` is the framework crate's (docs/design/layering.md; tools/check-unsafe.py).
#![deny(unsafe_code)]
#![feature(custom_test_frameworks)]
#![test_runner(crate::testing::run_tests)]
#![reexport_test_harness_main = "test_main"]

extern crate alloc;

pub mod bench;
pub mod block;
pub mod chaos;
pub mod cmdline;
pub mod console;
pub mod drivers;
pub mod fs;
#[cfg(test)]
mod fwtests;
pub mod process;
pub mod rtapp;
pub mod sched;
pub mod shell;
pub mod syscall;
pub mod sysctl;
pub mod testing;
pub mod trace;
pub mod tty;
pub mod upcalls;

// The framework's modules under their old paths (`crate::percpu`, `crate::sync`, ...).
pub use framework::{arch, interrupts, irqflags, klog, kprint, kprintln, mm, percpu, platform, smp, sync, time, timer};

use bootloader_api::config::{BootloaderConfig, Mapping};
use bootloader_api::BootInfo;

/// Bootloader configuration: map all physical memory (dynamic address), keep the bootloader's
/// own dynamic mappings out of the stack region (`mm::stack`).
pub const BOOTLOADER_CONFIG: BootloaderConfig = {
    let mut config = BootloaderConfig::new_default();
    config.mappings.physical_memory = Some(Mapping::Dynamic);
    config.mappings.dynamic_range_start = Some(0xffff_8000_0000_0000);
    config.mappings.dynamic_range_end = Some(0xffff_9fff_ffff_ffff);
    config.kernel_stack_size = 256 * 1024;
    config
};

bootloader_api::entry_point!(kernel_main, config = &BOOTLOADER_CONFIG);

/// The heap's initial size: an eighth of usable memory, between 16 MiB and 256 MiB. The heap grows
/// from the page allocator past it when kernel objects need more (`mm::heap`'s doc: trace rings,
/// the objects of a program holding thousands of files); what boot maps covers the kernel's
/// own working set, so the usual tests never see it grow.
fn heap_size(usable: u64) -> u64 {
    (usable / 8).clamp(16 << 20, 256 << 20) & !0xfff
}

fn kernel_main(boot_info: &'static mut BootInfo) -> ! {
    upcalls::register();
    sched::set_exit_notifier(tty::task_exit);
    fs::signalfd::set_dequeue(process::signal::signalfd_dequeue);
    console::init();
    let (_, tsc_source) = arch::tsc::init();

    let Some(phys_offset) = boot_info.physical_memory_offset.into_option() else {
        kprintln!("cadence: fatal: the bootloader did not map physical memory");
        arch::qemu::exit(arch::qemu::ExitCode::Failure);
    };
    mm::set_phys_offset(phys_offset);
    let (usable, frames) = mm::frame::init(&boot_info.memory_regions, phys_offset);
    let heap = mm::heap::init(heap_size(usable));
    if heap == 0 {
        kprintln!("cadence: fatal: no memory for the kernel heap, or its region is already mapped");
        arch::qemu::exit(arch::qemu::ExitCode::Failure);
    }
    if !mm::stack::init() {
        kprintln!("cadence: fatal: the stack region is already mapped by the bootloader");
        arch::qemu::exit(arch::qemu::ExitCode::Failure);
    }
    if !mm::init_user_memory(frames * mm::frame::FRAME_SIZE) {
        kprintln!("cadence: fatal: no memory for the kernel half's page tables");
        arch::qemu::exit(arch::qemu::ExitCode::Failure);
    }

    // Interrupt controllers before the per-CPU LAPIC setup.
    arch::pic::remap_and_mask();
    let platform = platform::discover(boot_info.rsdp_addr.into_option());
    if let Some(err) = &platform.error {
        kprintln!("cadence: warning: {}; running on the boot cpu only", err);
    }
    arch::apic::set_base(platform.lapic_address, phys_offset);

    let line = cmdline::read();
    let opts = cmdline::parse(&line);
    arch::apic::set_tick_hz(opts.hz);
    let max_cpus = opts.maxcpus.unwrap_or(percpu::NR_CPUS as u32);
    let x2apic = arch::apic::choose_mode(!opts.nox2apic);
    // Per-CPU data made at each CPU's bring-up is sized for all of them.
    smp::set_possible(&platform.ap_apic_ids, max_cpus);
    sched::topology::init_numa(platform.srat.as_deref(), platform.slit.as_deref());

    let bsp = smp::init_bsp();
    smp::park_aps(&platform.ap_apic_ids);
    let tsc_hz = arch::tsc::refine(tsc_source);
    time::init_realtime(); // once the TSC's frequency is final
    let lapic_hz = arch::apic::calibrate_timer();
    let tsc_deadline = arch::apic::detect_timer_mode();
    timer::start_tick(sched::scheduler_tick);
    klog!(
        "memory: {} MiB usable, heap {} MiB, tsc via {:?} (±{} ppm), timer {}, {}, cmdline '{}'",
        usable >> 20,
        heap >> 20,
        tsc_source,
        arch::tsc::calibration_spread_ppm(),
        if tsc_deadline { "tsc-deadline" } else { "lapic one-shot" },
        if x2apic { "x2apic" } else { "xapic" },
        line
    );
    for io in &platform.io_apics {
        let ioapic = arch::ioapic::IoApic::from_platform(io);
        ioapic.mask_all();
        klog!("ioapic id {} at {:#x}: {} inputs from gsi {}, masked", io.id, io.address, ioapic.max_entries(), io.gsi_base);
    }
    if !console::enable_rx_irq(&platform, bsp.apic_id) {
        klog!("console: no I/O APIC for COM1: the shell polls for input");
    }
    drivers::virtio_blk::set_platform(&platform, bsp.apic_id);
    if let Some(archive) = platform::ramdisk(boot_info) {
        match fs::initramfs::init(archive) {
            Ok(n) => klog!("initramfs: {} entries, {} KiB", n, archive.len() >> 10),
            Err(e) => kprintln!("cadence: warning: initramfs unreadable at byte {}: {}", e.offset, e.what),
        }
    }
    fs::init_devices();
    sched::init_this_cpu();
    smp::announce_online(bsp);
    irqflags::enable();

    if let Some(fault) = opts.test_fault {
        provoke_fault(fault);
    }

    smp::start_aps(&platform.ap_apic_ids, max_cpus, opts.nosmt);

    smp::report_packages();
    let (cpus, packages, cores, threads) = smp::topology_summary();
    kprintln!("cadence: smp: {} cpus online ({} packages, {} cores, {} threads per core)", cpus, packages, cores, threads);
    // The generated trees, once the CPUs are up (sysfs lists the online CPUs).
    fs::mount_pseudo("proc", "/proc", "proc", "rw,nosuid,nodev,noexec,relatime", process::procfs::root());
    fs::sysfs::mount_all();
    for cpu in percpu::online_cpus().take_while(|_| percpu::nr_possible() <= smp::PER_CPU_REPORT_MAX) {
        let sib = smp::smt_siblings(cpu);
        kprintln!("cadence: cpu {} smt-siblings {:?}", cpu.cpu_id, sib);
    }
    kprintln!("cadence: tsc {} MHz, lapic timer {} MHz, hz {}", tsc_hz / 1_000_000, lapic_hz / 1_000_000, arch::apic::tick_hz());
    sched::balance::init_topology();
    sched::topology::build_domains();
    sched::load_balance::init();
    sched::topology::init_memory_nodes();
    sched::init_tunables(cpus);
    kprintln!("cadence: boot ok in {} ms", time::uptime_ms());

    let init = sched::task::SpawnOptions::new("init").stack_size(128 * 1024).detached();
    if let Err(e) = sched::spawn(init, move || init_main(opts)) {
        kprintln!("cadence: fatal: cannot start init: {:?}", e);
        arch::qemu::exit(arch::qemu::ExitCode::Failure);
    }
    // The boot context is CPU 0's idle task from here on.
    sched::idle_loop()
}

/// The first task (pid 1): runs the kernel tests under `cargo test`, else the `run=` commands,
/// then powers off if asked.
fn init_main(opts: cmdline::BootOptions) -> i32 {
    mm::frame::init_watermarks(); // before the boot command line's sysctls (vm.min_free_kbytes=)
    cmdline::apply_sysctls(&opts);
    sched::lockup::start();
    sched::reserve::settle();
    mm::atomic_alloc::arm();
    drivers::virtio_blk::probe();
    block::reclaim::start();
    block::writeback::start();
    fs::blockdev::install();
    #[cfg(test)]
    {
        testing::configure(&opts);
        test_main();
    }

    for cmd in cmdline::run_commands(&opts) {
        kprintln!("cadence> {}", cmd);
        shell::execute(&cmd);
    }
    if let Some(cmd) = &opts.sh {
        let argv = ["sh", "-c", cmd.as_str()].map(alloc::string::String::from).to_vec();
        let status = process::spawn_session("/bin/sh", argv);
        if opts.poweroff {
            match status {
                Ok(0) => {
                    kprintln!("cadence: poweroff");
                    arch::qemu::exit(arch::qemu::ExitCode::Success);
                }
                Ok(s) => kprintln!("cadence: sh= ended with status {}; poweroff", s),
                Err(e) => kprintln!("cadence: sh= could not start /bin/sh: {}; poweroff", e.name()),
            }
            arch::qemu::exit(arch::qemu::ExitCode::Failure);
        }
    }
    if opts.poweroff {
        kprintln!("cadence: poweroff");
        arch::qemu::exit(arch::qemu::ExitCode::Success);
    }
    // Nothing asked: the user's shell on the console if the root filesystem has one, then (or
    // else, or with `kshell`) the kernel's shell on COM1 (it never returns).
    if opts.run.is_none() && opts.sh.is_none() && !opts.kshell && fs::vfs::lookup(&fs::vfs::root(), "/bin/sh", true).is_ok() {
        let status = process::spawn_console_session("/bin/sh", alloc::vec![alloc::string::String::from("-sh")]);
        kprintln!("cadence: /bin/sh ended ({:?}); the kernel's shell follows (help lists its commands)", status);
    }
    shell::console::run()
}

/// Where every AP ends up after bring-up: its idle task.
pub fn ap_main() -> ! {
    irqflags::enable();
    sched::idle_loop()
}

fn provoke_fault(kind: cmdline::TestFault) {
    kprintln!("cadence: provoking {:?} as asked (test_fault=)", kind);
    arch::fault::provoke(kind);
}
