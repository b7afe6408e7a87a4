//! The serial console (COM1, 16550 UART at I/O port 0x3f8).
//!
//! `kprint!`/`kprintln!` write raw text (the boot report and test lines go out this way, exactly
//! as scripts expect them); `klog!` prefixes a line with the uptime in seconds and the CPU id,
//! like dmesg: `[    0.012345] cpu0: text`. Output is serialised by an [`IrqLock`], one
//! `write_fmt` at a time, so lines from different CPUs never interleave mid-line.
//! The exception and panic paths use [`emergency_print`], which does not wait for the lock.

use crate::sync::IrqLock;
use core::fmt::{self, Write};
use uart_16550::SerialPort;

const COM1: u16 = 0x3f8;

static CONSOLE: IrqLock<Option<SerialPort>> = IrqLock::new(None);

/// Initialises COM1 (115200 8N1). Safe to call more than once.
pub fn init() {
    let mut console = CONSOLE.lock();
    if console.is_none() {
        // SAFETY: 0x3f8 is the standard COM1 base on the PC platform QEMU emulates, and this
        // module is the only owner of those ports.
        let mut port = unsafe { SerialPort::new(COM1) };
        port.init();
        *console = Some(port);
    }
}

struct LfToCrLf<'a>(&'a mut SerialPort);

impl Write for LfToCrLf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.0.send(b'\r');
            }
            self.0.send(b);
        }
        Ok(())
    }
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments) {
    if let Some(port) = CONSOLE.lock().as_mut() {
        let _ = LfToCrLf(port).write_fmt(args);
    }
}

/// Prints even if another CPU (or the interrupted code on this one) holds the console lock:
/// tries the lock for a while, then writes through a fresh port handle.
pub fn emergency_print(args: fmt::Arguments) {
    for _ in 0..1_000_000 {
        if let Some(mut guard) = CONSOLE.try_lock() {
            if let Some(port) = guard.as_mut() {
                let _ = LfToCrLf(port).write_fmt(args);
                return;
            }
            break;
        }
        core::hint::spin_loop();
    }
    // SAFETY: last resort on a dying system: the UART was initialised at boot and a second
    // handle only risks interleaved bytes, not memory unsafety.
    let mut port = unsafe { SerialPort::new(COM1) };
    let _ = LfToCrLf(&mut port).write_fmt(args);
}

/// Reads one byte from COM1 if one is waiting (non-blocking).
pub fn try_read_byte() -> Option<u8> {
    CONSOLE.lock().as_mut().and_then(|p| p.try_receive().ok())
}

#[macro_export]
macro_rules! kprint {
    ($($arg:tt)*) => ($crate::console::_print(format_args!($($arg)*)));
}

#[macro_export]
macro_rules! kprintln {
    () => ($crate::kprint!("\n"));
    ($($arg:tt)*) => ($crate::console::_print(format_args!("{}\n", format_args!($($arg)*))));
}

/// A dmesg-style log line: `[uptime] cpuN: message`.
#[macro_export]
macro_rules! klog {
    ($($arg:tt)*) => {{
        let ns = $crate::time::uptime_ns();
        $crate::console::_print(format_args!(
            "[{:5}.{:06}] cpu{}: {}\n",
            ns / 1_000_000_000,
            (ns % 1_000_000_000) / 1000,
            $crate::percpu::cpu_id(),
            format_args!($($arg)*)
        ));
    }};
}
