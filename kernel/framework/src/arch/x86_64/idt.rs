//! The interrupt descriptor table (one, shared by all CPUs) and the low-level handlers.
//!
//! Exceptions: every CPU exception prints one report line,
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
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::lapic_timer();
    crate::irqflags::hardirq_exit();
}

extern "x86-interrupt" fn reschedule_ipi(_frame: InterruptStackFrame) {
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::reschedule_ipi();
    crate::irqflags::hardirq_exit();
}

extern "x86-interrupt" fn call_function_ipi(_frame: InterruptStackFrame) {
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::call_function_ipi();
    crate::irqflags::hardirq_exit();
}

extern "x86-interrupt" fn com1(_frame: InterruptStackFrame) {
    crate::irqflags::hardirq_enter();
    crate::interrupts::com1();
    apic::eoi();
    crate::interrupts::irq_exit();
    crate::irqflags::hardirq_exit();
}

extern "x86-interrupt" fn virtio_blk(_frame: InterruptStackFrame) {
    crate::irqflags::hardirq_enter();
    // Level-triggered: the handler reads the device's ISR status (lowering the line) before
    // the EOI.
    crate::interrupts::device(crate::interrupts::VIRTIO_BLK_VECTOR);
    apic::eoi();
    crate::interrupts::irq_exit();
    crate::irqflags::hardirq_exit();
}

extern "x86-interrupt" fn apic_error(_frame: InterruptStackFrame) {
    crate::irqflags::hardirq_enter();
    apic::write(apic::Reg::ErrorStatus, 0);
    let esr = apic::read(apic::Reg::ErrorStatus);
    apic::eoi();
    crate::interrupts::count_unexpected(apic::ERROR_VECTOR, esr);
    crate::irqflags::hardirq_exit();
}

extern "x86-interrupt" fn spurious(_frame: InterruptStackFrame) {
    // Spurious LAPIC interrupts must not be acknowledged (SDM 11.9).
}

extern "x86-interrupt" fn unexpected(_frame: InterruptStackFrame) {
    crate::irqflags::hardirq_enter();
    apic::eoi();
    crate::interrupts::count_unexpected(0, 0);
    crate::irqflags::hardirq_exit();
}

fn build() -> InterruptDescriptorTable {
    let mut idt = InterruptDescriptorTable::new();
    idt.divide_error.set_handler_fn(divide_error);
    idt.debug.set_handler_fn(debug);
    idt.breakpoint.set_handler_fn(breakpoint);
    idt.overflow.set_handler_fn(overflow);
    idt.bound_range_exceeded.set_handler_fn(bound_range);
    idt.invalid_opcode.set_handler_fn(invalid_opcode);
    idt.device_not_available.set_handler_fn(device_not_available);
    idt.invalid_tss.set_handler_fn(invalid_tss);
    idt.segment_not_present.set_handler_fn(segment_not_present);
    idt.stack_segment_fault.set_handler_fn(stack_segment);
    idt.general_protection_fault.set_handler_fn(general_protection);
    idt.page_fault.set_handler_fn(page_fault);
    idt.x87_floating_point.set_handler_fn(x87_fp);
    idt.alignment_check.set_handler_fn(alignment_check);
    idt.machine_check.set_handler_fn(machine_check);
    idt.simd_floating_point.set_handler_fn(simd_fp);
    idt.virtualization.set_handler_fn(virtualization);
    idt.cp_protection_exception.set_handler_fn(cp_protection);
    idt.hv_injection_exception.set_handler_fn(hv_injection);
    idt.vmm_communication_exception.set_handler_fn(vmm_communication);
    idt.security_exception.set_handler_fn(security);
    // SAFETY: the IST indices name stacks that `gdt::init_this_cpu` installs in every CPU's
    // TSS before that CPU loads this IDT.
    unsafe {
        idt.double_fault.set_handler_fn(double_fault).set_stack_index(DOUBLE_FAULT_IST);
        idt.non_maskable_interrupt.set_handler_fn(nmi).set_stack_index(NMI_IST);
    }
    for v in 32..=255u8 {
        idt[v].set_handler_fn(unexpected);
    }
    idt[apic::TIMER_VECTOR].set_handler_fn(timer);
    idt[apic::RESCHEDULE_VECTOR].set_handler_fn(reschedule_ipi);
    idt[apic::CALL_FUNCTION_VECTOR].set_handler_fn(call_function_ipi);
    idt[crate::interrupts::COM1_VECTOR].set_handler_fn(com1);
    idt[crate::interrupts::VIRTIO_BLK_VECTOR].set_handler_fn(virtio_blk);
    idt[apic::ERROR_VECTOR].set_handler_fn(apic_error);
    idt[apic::SPURIOUS_VECTOR].set_handler_fn(spurious);
    idt
}
