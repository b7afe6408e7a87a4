//! I/O APICs: found in the MADT, every redirection entry masked at boot. Devices get routed
//! (`route`) when a driver asks for a line.

use core::ptr::NonNull;
use volatile::VolatilePtr;

const IOREGSEL: u64 = 0x00;
const IOWIN: u64 = 0x10;
const REG_ID: u32 = 0x00;
const REG_VERSION: u32 = 0x01;
const REG_REDTBL: u32 = 0x10;
const MASKED: u32 = 1 << 16;
const LEVEL_TRIGGERED: u32 = 1 << 15;

/// One I/O APIC, addressed through the physical-memory mapping.
#[derive(Clone, Copy, Debug)]
pub struct IoApic {
    virt: u64,
    /// The chip's id as the MADT gives it (compare [`IoApic::hw_id`]).
    pub id: u8,
    /// The first global system interrupt (GSI) it serves: its pin `n` is GSI `gsi_base + n`.
    pub gsi_base: u32,
}

impl IoApic {
    /// The I/O APIC whose MMIO window is mapped at virtual address `virt`; nothing is accessed yet.
    ///
    /// # Safety
    /// `virt` must map the I/O APIC's MMIO window (phys_offset + MADT address).
    pub unsafe fn new(virt: u64, id: u8, gsi_base: u32) -> Self {
        Self { virt, id, gsi_base }
    }

    /// The I/O APIC the firmware described (its MADT entry, found by `platform::discover`),
    /// reached through the physical-memory mapping. Safe: the MADT's address is the chip's MMIO
    /// window, and the framework maps all physical memory.
    pub fn from_platform(io: &crate::platform::IoApicInfo) -> Self {
        // SAFETY: see above: `phys_to_virt` of the MADT address maps the MMIO window.
        unsafe { Self::new(crate::mm::phys_to_virt(io.address as u64), io.id, io.gsi_base) }
    }

    fn reg(&self, off: u64) -> VolatilePtr<'static, u32> {
        let ptr = NonNull::new((self.virt + off) as *mut u32).expect("non-null MMIO address");
        // SAFETY: `IoApic::new`'s contract: `virt` maps the MMIO window; IOREGSEL and IOWIN are
        // aligned 32-bit registers in it.
        unsafe { VolatilePtr::new(ptr) }
    }

    fn read(&self, index: u32) -> u32 {
        self.reg(IOREGSEL).write(index);
        self.reg(IOWIN).read()
    }

    fn write(&self, index: u32, value: u32) {
        self.reg(IOREGSEL).write(index);
        self.reg(IOWIN).write(value);
    }

    /// Number of redirection entries.
    pub fn max_entries(&self) -> u32 {
        ((self.read(REG_VERSION) >> 16) & 0xff) + 1
    }

    /// The id the chip itself reports.
    pub fn hw_id(&self) -> u32 {
        (self.read(REG_ID) >> 24) & 0xf
    }

    /// Masks every input.
    pub fn mask_all(&self) {
        for i in 0..self.max_entries() {
            self.write(REG_REDTBL + 2 * i, MASKED);
            self.write(REG_REDTBL + 2 * i + 1, 0);
        }
    }

    /// Routes input `pin` (edge, active high) to `vector` on the CPU with `apic_id`.
    pub fn route(&self, pin: u32, vector: u8, apic_id: u32) {
        self.write(REG_REDTBL + 2 * pin + 1, apic_id << 24);
        self.write(REG_REDTBL + 2 * pin, vector as u32);
    }

    /// Routes input `pin` (level-triggered, active high: a PCI INTx line as QEMU's PIIX3
    /// delivers it, see the MADT's overrides for IRQs 5, 9, 10, 11) to `vector` on the CPU with
    /// `apic_id`. The handler must quiet the device (e.g. read its interrupt status) before
    /// the EOI, or the line fires again at once.
    pub fn route_level(&self, pin: u32, vector: u8, apic_id: u32) {
        self.write(REG_REDTBL + 2 * pin + 1, apic_id << 24);
        self.write(REG_REDTBL + 2 * pin, vector as u32 | LEVEL_TRIGGERED);
    }
}
