//! Panics: print the message and location, stop the other CPUs (NMI), exit QEMU with failure.
//! The kernel's panic upcall runs first (under `cargo test` the harness reports the failing
//! test there).

use core::sync::atomic::{AtomicBool, Ordering};

static STOPPING: AtomicBool = AtomicBool::new(false);

/// True once a CPU has started stopping the system (other CPUs then halt on NMI).
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Acquire)
}

/// Sends an NMI to every other online CPU so they halt.
pub fn stop_other_cpus() {
    STOPPING.store(true, Ordering::Release);
    let me = crate::percpu::cpu_id();
    for cpu in crate::percpu::online_cpus() {
        if cpu.cpu_id != me {
            crate::arch::apic::send_nmi(cpu.apic_id);
        }
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    x86_64::instructions::interrupts::disable();
    crate::upcalls::panic();
    crate::console::emergency_print(format_args!(
        "cadence: PANIC on cpu {}: {}\n",
        crate::percpu::cpu_id_checked().map(|c| c as i64).unwrap_or(-1),
        info
    ));
    stop_other_cpus();
    crate::arch::qemu::exit(crate::arch::qemu::ExitCode::Failure)
}
