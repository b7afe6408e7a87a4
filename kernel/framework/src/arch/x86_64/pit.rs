//! The 8254 PIT, used only to calibrate the TSC when CPUID does not report its frequency.
//! Channel 2 is gated through port 0x61 and counts down at 1.193182 MHz; we poll its output bit
//! instead of taking an interrupt.

use ::x86_64::instructions::port::Port;

/// The PIT's input clock in Hz (Linux's `PIT_TICK_RATE`): each channel counts down at this rate.
pub const PIT_HZ: u64 = 1_193_182;

/// Busy-waits for `ms` milliseconds (≤ 54) using PIT channel 2 and returns the TSC ticks that
/// elapsed meanwhile.
pub fn measure_tsc_over_ms(ms: u64) -> u64 {
    let count = (PIT_HZ * ms / 1000).min(0xffff) as u16;
    // SAFETY: ports 0x42/0x43/0x61 are the PIT channel 2 data, PIT command and the keyboard
    // controller port B gate; used single-threaded during BSP boot only.
    unsafe {
        let mut gate = Port::<u8>::new(0x61);
        let mut cmd = Port::<u8>::new(0x43);
        let mut ch2 = Port::<u8>::new(0x42);
        let g = gate.read();
        gate.write((g & !0x02) | 0x01); // gate on, speaker off
        cmd.write(0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary
        ch2.write(count as u8);
        ch2.write((count >> 8) as u8);
        // Restart the count by toggling the gate.
        let g = gate.read();
        gate.write(g & !0x01);
        gate.write(g | 0x01);
        let start = super::tsc::rdtsc();
        let mut spins: u64 = 0;
        while gate.read() & 0x20 == 0 {
            spins += 1;
            if spins > 500_000_000 {
                break; // no PIT: give up rather than hang; the caller sanity-checks the result
            }
        }
        super::tsc::rdtsc() - start
    }
}
