//! Platform discovery from ACPI (the `acpi` crate): the MADT's local APIC address, I/O APICs and
//! the list of processors. Without usable ACPI tables Cadence degrades to the boot CPU alone,
//! with the LAPIC at the address IA32_APIC_BASE reports, and says so.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ptr::NonNull;

/// One I/O APIC as the MADT describes it (reach it with `arch::ioapic::IoApic::from_platform`).
#[derive(Clone, Copy, Debug)]
pub struct IoApicInfo {
    /// Its I/O APIC id.
    pub id: u8,
    /// Physical address of its MMIO window.
    pub address: u32,
    /// First global system interrupt it serves (its pin 0).
    pub gsi_base: u32,
}

/// What the firmware told us about the machine.
#[derive(Clone, Debug, Default)]
pub struct Platform {
    /// LAPIC physical address (0 = use IA32_APIC_BASE).
    pub lapic_address: u64,
    /// The I/O APICs, MADT order (empty without an APIC interrupt model).
    pub io_apics: Vec<IoApicInfo>,
    /// APIC ids of the application processors that are enabled or online-capable, MADT order.
    pub ap_apic_ids: Vec<u32>,
    /// APIC id of the boot processor per the MADT (`None` without processor information).
    pub bsp_apic_id: Option<u32>,
    /// MADT interrupt source overrides: (ISA IRQ, global system interrupt).
    pub isa_overrides: Vec<(u8, u32)>,
    /// The ACPI SRAT (CPU and memory affinity to proximity domains), whole, header included,
    /// if the firmware has one (QEMU: with `-numa`); parsed by the kernel.
    pub srat: Option<Vec<u8>>,
    /// The ACPI SLIT (distances between proximity domains), whole, if the firmware has one.
    pub slit: Option<Vec<u8>>,
    /// Why discovery failed, if it did.
    pub error: Option<String>,
}

/// A table the `acpi` crate does not parse, found by signature and copied whole.
macro_rules! raw_table {
    ($name:ident, $sig:ident) => {
        #[repr(C, packed)]
        struct $name {
            header: acpi::sdt::SdtHeader,
        }
        // SAFETY: the struct is exactly the SDT header every ACPI table starts with, and its
        // signature constant is the table's.
        unsafe impl acpi::AcpiTable for $name {
            const SIGNATURE: acpi::sdt::Signature = acpi::sdt::Signature::$sig;
            fn header(&self) -> &acpi::sdt::SdtHeader {
                &self.header
            }
        }
    };
}
raw_table!(RawSrat, SRAT);
raw_table!(RawSlit, SLIT);

/// The bytes of table `T`, whole (its header's length), if the firmware lists it.
fn table_bytes<T: acpi::AcpiTable + Unpin>(tables: &acpi::AcpiTables<PhysMapHandler>) -> Option<Vec<u8>> {
    let mapping = tables.find_table::<T>().ok()?;
    let len = acpi::AcpiTable::header(&*mapping).length as usize;
    let virt = crate::mm::phys_to_virt(mapping.physical_start() as u64) as *const u8;
    // SAFETY: the table lies in physical memory, all of which is mapped at phys_offset; the
    // `acpi` crate validated its header (signature, length, checksum over `len` bytes), so
    // `len` bytes from its start are the table. The copy outlives no mapping (none is torn down).
    Some(unsafe { core::slice::from_raw_parts(virt, len) }.to_vec())
}

/// Maps ACPI tables through the kernel's physical-memory mapping (no page-table changes).
#[derive(Clone, Copy)]
struct PhysMapHandler;

impl acpi::AcpiHandler for PhysMapHandler {
    unsafe fn map_physical_region<T>(&self, physical_address: usize, size: usize) -> acpi::PhysicalMapping<Self, T> {
        let virt = crate::mm::phys_to_virt(physical_address as u64) as *mut T;
        // SAFETY: all physical memory (including ACPI tables) is mapped at phys_offset, so the
        // region is readable for `size` bytes; the mapping is never torn down.
        unsafe { acpi::PhysicalMapping::new(physical_address, NonNull::new(virt).expect("non-null"), size, size, *self) }
    }

    fn unmap_physical_region<T>(_region: &acpi::PhysicalMapping<Self, T>) {}
}

/// Reads the MADT through the RSDP the bootloader found.
pub fn discover(rsdp_addr: Option<u64>) -> Platform {
    let Some(rsdp) = rsdp_addr else {
        return Platform { error: Some("no RSDP from the bootloader".to_string()), ..Default::default() };
    };
    // SAFETY: the bootloader hands us the physical address of a valid RSDP; the handler maps it.
    let tables = match unsafe { acpi::AcpiTables::from_rsdp(PhysMapHandler, rsdp as usize) } {
        Ok(t) => t,
        Err(e) => return Platform { error: Some(alloc::format!("ACPI tables unusable: {:?}", e)), ..Default::default() },
    };
    let info = match tables.platform_info() {
        Ok(i) => i,
        Err(e) => return Platform { error: Some(alloc::format!("no usable MADT: {:?}", e)), ..Default::default() },
    };
    let mut p = Platform { srat: table_bytes::<RawSrat>(&tables), slit: table_bytes::<RawSlit>(&tables), ..Default::default() };
    match info.interrupt_model {
        acpi::InterruptModel::Apic(apic) => {
            p.lapic_address = apic.local_apic_address;
            p.io_apics = apic
                .io_apics
                .iter()
                .map(|io| IoApicInfo { id: io.id, address: io.address, gsi_base: io.global_system_interrupt_base })
                .collect();
            p.isa_overrides = apic.interrupt_source_overrides.iter().map(|o| (o.isa_source, o.global_system_interrupt)).collect();
        }
        _ => p.error = Some("the MADT describes no APIC interrupt model".to_string()),
    }
    if let Some(procs) = info.processor_info {
        p.bsp_apic_id = Some(procs.boot_processor.local_apic_id);
        p.ap_apic_ids = procs
            .application_processors
            .iter()
            .filter(|c| c.state != acpi::platform::ProcessorState::Disabled)
            .map(|c| c.local_apic_id)
            .collect();
    }
    p
}

/// The bootloader's ramdisk (the initramfs archive), if it loaded one: its bytes, mapped read
/// only for as long as the kernel runs (the memory map marks the frames as the bootloader's,
/// so the frame allocator never hands them out). `None` if there is none, or if the boot
/// information names pages that are not mapped.
pub fn ramdisk(boot_info: &bootloader_api::BootInfo) -> Option<&'static [u8]> {
    let addr = boot_info.ramdisk_addr.into_option()?;
    let len = boot_info.ramdisk_len;
    if len == 0 || addr.checked_add(len).is_none() {
        return None;
    }
    let mut page = addr & !0xfff;
    while page < addr + len {
        crate::mm::paging::translate(page)?;
        page += 4096;
    }
    // SAFETY: every page of the range is mapped (checked), by the bootloader, for the ramdisk
    // it loaded there; nothing writes or frees it afterwards (its frames are not usable memory).
    Some(unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) })
}
