//! The legacy 8259 PIC pair: remapped away from the exception vectors and fully masked, so
//! only the local and I/O APICs deliver interrupts. A spurious PIC interrupt (IRQ 7/15) would
//! arrive at `PIC_VECTOR_BASE + 7` / `+ 15`, which the IDT counts as unexpected.

use ::x86_64::instructions::port::Port;

/// Where the (masked) PIC's vectors are remapped to.
pub const PIC_VECTOR_BASE: u8 = 0xe0;

/// Remaps both PICs to `PIC_VECTOR_BASE` and masks every line.
pub fn remap_and_mask() {
    // SAFETY: ports 0x20/0x21/0xa0/0xa1 are the PC's 8259 PICs; this is the standard ICW1-4
    // initialisation followed by masking all lines, run once on the BSP before interrupts are on.
    unsafe {
        let mut cmd1 = Port::<u8>::new(0x20);
        let mut data1 = Port::<u8>::new(0x21);
        let mut cmd2 = Port::<u8>::new(0xa0);
        let mut data2 = Port::<u8>::new(0xa1);
        cmd1.write(0x11); // ICW1: init, expect ICW4
        cmd2.write(0x11);
        data1.write(PIC_VECTOR_BASE); // ICW2: vector offsets
        data2.write(PIC_VECTOR_BASE + 8);
        data1.write(4); // ICW3: slave on IRQ2
        data2.write(2);
        data1.write(1); // ICW4: 8086 mode
        data2.write(1);
        data1.write(0xff); // mask everything
        data2.write(0xff);
    }
}
