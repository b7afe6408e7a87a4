//! Leaving QEMU through the `isa-debug-exit` device (I/O port 0xf4). Writing `v` makes QEMU exit
//! with status `(v << 1) | 1`: [`ExitCode::Success`] (0x10) → 33, [`ExitCode::Failure`] (0x11)
//! → 35. The host runner maps 33 to 0 and 35 to 1. Without the device the write is ignored and
//! the CPU halts.

use ::x86_64::instructions::port::Port;

/// The value written to the isa-debug-exit port; QEMU's exit status is `(value << 1) | 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// The run passed: QEMU exits with 33, which the runner reports as 0.
    Success = 0x10,
    /// The run failed (a test, a panic, an exception): QEMU exits with 35, reported as 1.
    Failure = 0x11,
}

/// Exits QEMU (or halts forever on hardware without the debug-exit device).
pub fn exit(code: ExitCode) -> ! {
    // SAFETY: port 0xf4 is the isa-debug-exit device configured by the runner; on a machine
    // without it the write goes nowhere.
    unsafe { Port::<u32>::new(0xf4).write(code as u32) };
    super::halt_forever()
}
