//! The interrupt descriptor table (one, shared by all CPUs) and the low-level handlers.
//!
//! Every vector enters through its stub in `entry`, which sends vectors from kernel mode to
//! the handlers here and vectors from user mode to `crate::user` (exceptions become the
//! kernel's to handle; interrupts run `irq_from_user`).
//!
//! Exceptions in the kernel: every CPU exception prints one report line,
//! `cadence: EXCEPTION <name> vector=<n> error=<code|none> rip=<addr> cr2=<addr> cpu=<n>`,
//! then the kernel stops: it exits QEMU with the failure code (so a test run fails) or halts.
//! Double fault and NMI run on their own IST stacks.
//!
//! Device/IPI vectors: `apic::TIMER_VECTOR` → `crate::interrupts::lapic_timer` (this CPU's [`crate::timer`]s),
//! `RESCHEDULE_VECTOR` and `CALL_FUNCTION_VECTOR` → `crate::interrupts`,
//! `interrupts::COM1_VECTOR` (COM1 receive, ISA IRQ 4 through the I/O APIC) → `crate::interrupts::com1`,
//! `interrupts::VIRTIO_BLK_VECTOR` (the virtio disk's INTx, level-triggered) → the handler the kernel's driver registered (`crate::interrupts::register`),
//! spurious ignored.
//! Any other vector is counted and acknowledged.

use super::apic;
use super::entry;
use super::gdt::{DOUBLE_FAULT_IST, NMI_IST};
use ::x86_64::registers::control::Cr2;
use ::x86_64::structures::idt::{InterruptDescriptorTable, InterruptStackFrame, PageFaultErrorCode};

static IDT: spin::Once<InterruptDescriptorTable> = spin::Once::new();

/// Builds the IDT once and loads it on the calling CPU.
pub fn load() {
    IDT.call_once(build).load();
}

fn exception_report(name: &str, vector: u8, error: Option<u64>, frame: &InterruptStackFrame) -> ! {
    let cr2 = Cr2::read_raw();
    let cpu = crate::percpu::cpu_id_checked().map(|c| c as i64).unwrap_or(-1);
    let rip = frame.instruction_pointer.as_u64();
    match error {
        Some(e) => crate::console::emergency_print(format_args!(
            "cadence: EXCEPTION {} vector={} error={:#x} rip={:#x} cr2={:#x} cpu={}\n",
            name, vector, e, rip, cr2, cpu
        )),
        None => crate::console::emergency_print(format_args!(
            "cadence: EXCEPTION {} vector={} error=none rip={:#x} cr2={:#x} cpu={}\n",
            name, vector, rip, cr2, cpu
        )),
    }
    // Only raw values here: the faulting context's data structures may be what is broken.
    crate::console::emergency_print(format_args!("cadence: exception context: rsp={:#x}\n", frame.stack_pointer.as_u64()));
    crate::console::emergency_print(format_args!("cadence: stopped after exception\n"));
    super::qemu::exit(super::qemu::ExitCode::Failure)
}

macro_rules! exception {
    ($fn:ident, $name:literal, $vec:literal) => {
        extern "x86-interrupt" fn $fn(frame: InterruptStackFrame) {
            exception_report($name, $vec, None, &frame)
        }
    };
    ($fn:ident, $name:literal, $vec:literal, code) => {
        extern "x86-interrupt" fn $fn(frame: InterruptStackFrame, code: u64) {
            exception_report($name, $vec, Some(code), &frame)
        }
    };
}

exception!(divide_error, "divide_error", 0);
exception!(debug, "debug", 1);
exception!(breakpoint, "breakpoint", 3);
exception!(overflow, "overflow", 4);
exception!(bound_range, "bound_range_exceeded", 5);
exception!(invalid_opcode, "invalid_opcode", 6);
exception!(device_not_available, "device_not_available", 7);
exception!(invalid_tss, "invalid_tss", 10, code);
exception!(segment_not_present, "segment_not_present", 11, code);
exception!(stack_segment, "stack_segment_fault", 12, code);
exception!(general_protection, "general_protection_fault", 13, code);
exception!(x87_fp, "x87_floating_point", 16);
exception!(alignment_check, "alignment_check", 17, code);
exception!(simd_fp, "simd_floating_point", 19);
exception!(virtualization, "virtualization", 20);
exception!(cp_protection, "control_protection", 21, code);
exception!(hv_injection, "hypervisor_injection", 28);
exception!(vmm_communication, "vmm_communication", 29, code);
exception!(security, "security_exception", 30, code);

extern "x86-interrupt" fn nmi(frame: InterruptStackFrame) {
    // An NMI is how a panicking CPU stops the others (see `crate::panic`): halt quietly.
    if crate::panic::stopping() {
        super::halt_forever();
    }
    exception_report("nmi", 2, None, &frame)
}

extern "x86-interrupt" fn page_fault(frame: InterruptStackFrame, code: PageFaultErrorCode) {
    exception_report("page_fault", 14, Some(code.bits()), &frame)
}

extern "x86-interrupt" fn double_fault(frame: InterruptStackFrame, code: u64) -> ! {
    exception_report("double_fault", 8, Some(code), &frame)
}

extern "x86-interrupt" fn machine_check(frame: InterruptStackFrame) -> ! {
    exception_report("machine_check", 18, None, &frame)
}

extern "x86-interrupt" fn timer(_frame: InterruptStackFrame) {
    timer_irq(false);
}

extern "x86-interrupt" fn reschedule_ipi(_frame: InterruptStackFrame) {
    reschedule_irq();
}

extern "x86-interrupt" fn call_function_ipi(_frame: InterruptStackFrame) {
    call_function_irq();
}

extern "x86-interrupt" fn com1(_frame: InterruptStackFrame) {
    com1_irq();
}

extern "x86-interrupt" fn virtio_blk(_frame: InterruptStackFrame) {
    virtio_blk_irq();
}

extern "x86-interrupt" fn apic_error(_frame: InterruptStackFrame) {
    apic_error_irq();
}

extern "x86-interrupt" fn spurious(_frame: InterruptStackFrame) {
    // Spurious LAPIC interrupts must not be acknowledged (SDM 11.9).
}

extern "x86-interrupt" fn unexpected(_frame: InterruptStackFrame) {
    unexpected_irq();
}

// The bodies, shared by the handlers above (vectors from kernel mode) and `irq_from_user`.

fn timer_irq(from_user: bool) {
    crate::irqflags::hardirq_enter();
    crate::percpu::current().timer_from_user.store(from_user, core::sync::atomic::Ordering::Relaxed);
    apic::eoi();
    crate::interrupts::lapic_timer();
    crate::irqflags::hardirq_exit();
}

fn reschedule_irq() {
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::reschedule_ipi();
    crate::irqflags::hardirq_exit();
}

fn call_function_irq() {
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::call_function_ipi();
    crate::irqflags::hardirq_exit();
}

fn com1_irq() {
    crate::irqflags::hardirq_enter();
    crate::interrupts::com1();
    apic::eoi();
    crate::interrupts::irq_exit();
    crate::irqflags::hardirq_exit();
}

fn virtio_blk_irq() {
    crate::irqflags::hardirq_enter();
    // Level-triggered: the handler reads the device's ISR status (lowering the line) before
    // the EOI.
    crate::interrupts::device(crate::interrupts::VIRTIO_BLK_VECTOR);
    apic::eoi();
    crate::interrupts::irq_exit();
    crate::irqflags::hardirq_exit();
}

fn apic_error_irq() {
    crate::irqflags::hardirq_enter();
    apic::write(apic::Reg::ErrorStatus, 0);
    let esr = apic::read(apic::Reg::ErrorStatus);
    apic::eoi();
    crate::interrupts::count_unexpected(apic::ERROR_VECTOR, esr);
    crate::irqflags::hardirq_exit();
}

fn unexpected_irq() {
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::count_unexpected(0, 0);
    crate::irqflags::hardirq_exit();
}

/// An interrupt (vector 32 or above) that arrived in user mode: the same work as its
/// handler's, on the task's kernel stack (the entry code's frame is below `execute`'s).
pub(crate) fn irq_from_user(vector: u8) {
    match vector {
        apic::TIMER_VECTOR => timer_irq(true),
        apic::RESCHEDULE_VECTOR => reschedule_irq(),
        apic::CALL_FUNCTION_VECTOR => call_function_irq(),
        crate::interrupts::COM1_VECTOR => com1_irq(),
        crate::interrupts::VIRTIO_BLK_VECTOR => virtio_blk_irq(),
        apic::ERROR_VECTOR => apic_error_irq(),
        apic::SPURIOUS_VECTOR => {}
        _ => unexpected_irq(),
    }
}

fn build() -> InterruptDescriptorTable {
    use ::x86_64::PrivilegeLevel;
    let mut handlers = [unexpected as *const () as u64; 256];
    let mut idt = InterruptDescriptorTable::new();
    macro_rules! exc {
        ($field:ident, $vec:literal, $f:expr) => {{
            handlers[$vec] = $f as *const () as u64;
            // SAFETY: the stub for this vector is the entry code's (`entry`), which jumps to
            // `$f` for a vector from kernel mode with the CPU's frame untouched, as if the IDT
            // had pointed at `$f`.
            unsafe { idt.$field.set_handler_addr(::x86_64::VirtAddr::new(entry::stub($vec))) }
        }};
    }
    exc!(divide_error, 0, divide_error);
    exc!(debug, 1, debug);
    exc!(breakpoint, 3, breakpoint).set_privilege_level(PrivilegeLevel::Ring3);
    exc!(overflow, 4, overflow).set_privilege_level(PrivilegeLevel::Ring3);
    exc!(bound_range_exceeded, 5, bound_range);
    exc!(invalid_opcode, 6, invalid_opcode);
    exc!(device_not_available, 7, device_not_available);
    exc!(invalid_tss, 10, invalid_tss);
    exc!(segment_not_present, 11, segment_not_present);
    exc!(stack_segment_fault, 12, stack_segment);
    exc!(general_protection_fault, 13, general_protection);
    exc!(page_fault, 14, page_fault);
    exc!(x87_floating_point, 16, x87_fp);
    exc!(alignment_check, 17, alignment_check);
    exc!(machine_check, 18, machine_check);
    exc!(simd_floating_point, 19, simd_fp);
    exc!(virtualization, 20, virtualization);
    exc!(cp_protection_exception, 21, cp_protection);
    exc!(hv_injection_exception, 28, hv_injection);
    exc!(vmm_communication_exception, 29, vmm_communication);
    exc!(security_exception, 30, security);
    // SAFETY: the IST indices name stacks that `gdt::init_this_cpu` installs in every CPU's
    // TSS before that CPU loads this IDT.
    let df = exc!(double_fault, 8, double_fault);
    // SAFETY: as above.
    unsafe { df.set_stack_index(DOUBLE_FAULT_IST) };
    let nmi_entry = exc!(non_maskable_interrupt, 2, nmi);
    // SAFETY: as above.
    unsafe { nmi_entry.set_stack_index(NMI_IST) };
    let devices: [(u8, u64); 7] = [
        (apic::TIMER_VECTOR, timer as *const () as u64),
        (apic::RESCHEDULE_VECTOR, reschedule_ipi as *const () as u64),
        (apic::CALL_FUNCTION_VECTOR, call_function_ipi as *const () as u64),
        (crate::interrupts::COM1_VECTOR, com1 as *const () as u64),
        (crate::interrupts::VIRTIO_BLK_VECTOR, virtio_blk as *const () as u64),
        (apic::ERROR_VECTOR, apic_error as *const () as u64),
        (apic::SPURIOUS_VECTOR, spurious as *const () as u64),
    ];
    for (v, h) in devices {
        handlers[v as usize] = h;
    }
    for v in 32..=255u8 {
        // SAFETY: as for the exceptions: the stub reaches `handlers[v]` from kernel mode.
        unsafe { idt[v].set_handler_addr(::x86_64::VirtAddr::new(entry::stub(v))) };
    }
    for (slot, h) in entry::KERNEL_HANDLERS.iter().zip(handlers) {
        slot.store(h, core::sync::atomic::Ordering::Relaxed);
    }
    idt
}
