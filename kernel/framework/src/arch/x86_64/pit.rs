//! The 8254 PIT, used only to calibrate the TSC when CPUID does not report its frequency.
//! Channel 2 is gated through port 0x61 and counts down at 1.193182 MHz; we poll its output bit
//! instead of taking an interrupt.

use ::x86_64::instructions::port::Port;

/// The PIT's input clock in Hz (Linux's `PIT_TICK_RATE`): each channel counts down at this rate.
pub const PIT_HZ: u64 = 1_193_182;

/// One PIT window measured in TSC ticks, bracketed: the window's true length lies in
/// `[shortest, longest]`. Its start is the count's write, known only to lie between the TSC reads
/// just before and just after it; its end lies between the TSC read taken before the last poll
/// that saw the count running and the read taken after the poll that saw it expire. A vCPU
/// descheduled by the host inside either bracket widens it (and only that sample is spoiled):
/// the caller keeps the tightest window, as Linux's `pit_calibrate_tsc` discards samples whose
/// reads were disturbed.
#[derive(Clone, Copy, Debug)]
pub struct PitWindow {
    /// The window's length if it began at the last moment and ended at the first one possible.
    pub shortest: u64,
    /// The window's length if it began at the first moment and ended at the last one possible.
    pub longest: u64,
}

impl PitWindow {
    /// The uncertainty of this sample in TSC ticks.
    pub fn spread(&self) -> u64 {
        self.longest - self.shortest
    }

    /// The middle of the bracket: the estimate with the smallest worst-case error.
    pub fn midpoint(&self) -> u64 {
        self.shortest + self.spread() / 2
    }
}

/// Busy-waits for `ms` milliseconds (≤ 54) using PIT channel 2 and returns the TSC ticks that
/// elapsed meanwhile as a bracket; `None` when the PIT never signalled the end (no PIT).
pub fn measure_tsc_over_ms(ms: u64) -> Option<PitWindow> {
    let count = (PIT_HZ * ms / 1000).min(0xffff) as u16;
    let rdtsc = super::tsc::rdtsc;
    // SAFETY: ports 0x42/0x43/0x61 are the PIT channel 2 data, PIT command and the keyboard
    // controller port B gate; used single-threaded during BSP boot only.
    unsafe {
        let mut gate = Port::<u8>::new(0x61);
        let mut cmd = Port::<u8>::new(0x43);
        let mut ch2 = Port::<u8>::new(0x42);
        let g = gate.read();
        gate.write((g & !0x02) | 0x01); // gate on (counting enabled), speaker off
        cmd.write(0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary: OUT goes low
        ch2.write(count as u8);
        // Mode 0 starts counting down when the count's high byte is written (toggling the gate
        // only pauses it), so that write is the window's start.
        let start_lo = rdtsc();
        ch2.write((count >> 8) as u8);
        let start_hi = rdtsc();
        // A lower bound on the expiry: a TSC read taken before a poll that saw the count running.
        let mut expiry_lo = start_lo;
        let mut spins: u64 = 0;
        loop {
            let before_poll = rdtsc();
            let out = gate.read() & 0x20 != 0;
            let after_poll = rdtsc();
            if out {
                return Some(PitWindow { shortest: expiry_lo.saturating_sub(start_hi), longest: after_poll - start_lo });
            }
            expiry_lo = before_poll;
            spins += 1;
            if spins > 500_000_000 {
                return None; // no PIT: give up rather than hang
            }
        }
    }
}
