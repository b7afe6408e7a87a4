//! The serial console (COM1, 16550 UART at I/O port 0x3f8).
//!
//! `kprint!`/`kprintln!` write raw text (the boot report and test lines go out this way, exactly
//! as scripts expect them); `klog!` prefixes a line with the uptime in seconds and the CPU id,
//! like dmesg: `[    0.012345] cpu0: text`. Output is serialised by an [`IrqLock`], one
//! `write_fmt` at a time, so lines from different CPUs never interleave mid-line.
//! The exception and panic paths use [`emergency_print`], which does not wait for the lock.
//!
//! Input: COM1's receive interrupt (ISA IRQ 4, routed by [`enable_rx_irq`] through the I/O
//! APIC to the boot CPU, vector `interrupts::COM1_VECTOR`) moves received bytes into a
//! 4 KiB buffer (bytes beyond it are dropped and counted) and tells the kernel
//! ([`Upcalls::console_input`](crate::upcalls::Upcalls::console_input)), whose reader blocks on a
//! wait queue until [`pop_input`] gives it a byte. Without an I/O APIC ([`rx_irq_enabled`]
//! false) the reader polls with [`poll_input`] instead.

use crate::sync::IrqLock;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// Writes raw bytes (a user program's output: not necessarily UTF-8), LF as CR LF as a tty's
/// `ONLCR` does.
pub fn write_bytes(bytes: &[u8]) {
    if let Some(port) = CONSOLE.lock().as_mut() {
        for &b in bytes {
            if b == b'\n' {
                port.send(b'\r');
            }
            port.send(b);
        }
    }
}

/// Writes `bytes` to COM1 as they are (a terminal's line discipline does its own output
/// processing).
pub fn write_raw(bytes: &[u8]) {
    if let Some(port) = CONSOLE.lock().as_mut() {
        for &b in bytes {
            port.send(b);
        }
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

/// A fixed ring of received bytes (the interrupt handler must not allocate).
struct Ring {
    buf: [u8; RX_CAPACITY],
    head: usize,
    len: usize,
}

impl Ring {
    fn push(&mut self, b: u8) -> bool {
        if self.len == RX_CAPACITY {
            return false;
        }
        self.buf[(self.head + self.len) % RX_CAPACITY] = b;
        self.len += 1;
        true
    }
    fn pop(&mut self) -> Option<u8> {
        if self.len == 0 {
            return None;
        }
        let b = self.buf[self.head];
        self.head = (self.head + 1) % RX_CAPACITY;
        self.len -= 1;
        Some(b)
    }
}

/// Received bytes not yet read, and the tasks waiting for them.
static RX: IrqLock<Ring> = IrqLock::new(Ring { buf: [0; RX_CAPACITY], head: 0, len: 0 });
static RX_IRQ: AtomicBool = AtomicBool::new(false);
/// Bytes dropped because the input buffer was full.
pub static RX_DROPPED: AtomicU64 = AtomicU64::new(0);
const RX_CAPACITY: usize = 4096;

/// Moves every byte the UART holds into the input buffer; true if any arrived.
///
/// The ring's lock is held across each read from the UART and its push (lock order: `RX`,
/// then `CONSOLE`; nothing takes `RX` under `CONSOLE`). Two drainers run at once — the receive
/// interrupt on one CPU, the reading task's wait condition on another — and with the byte read
/// under `CONSOLE` alone and pushed after, one could push a later byte before the other pushed
/// an earlier one: the console fuzz typed `ps\r` and the shell got `p`, `\r`, `s`.
fn drain_uart() -> bool {
    let mut any = false;
    let mut rx = RX.lock();
    while let Some(b) = try_read_byte() {
        if !rx.push(b) {
            RX_DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        any = true;
    }
    any
}

/// The COM1 receive interrupt (interrupt context).
pub(crate) fn rx_interrupt() {
    if drain_uart() {
        crate::upcalls::console_input();
    }
}

/// Routes COM1's IRQ 4 (or the GSI an MADT override names) to `apic_id`, and sets the UART's
/// receive trigger to one byte. Returns false (input is then polled) without an I/O APIC.
pub fn enable_rx_irq(platform: &crate::platform::Platform, apic_id: u32) -> bool {
    let gsi = platform.isa_overrides.iter().find(|(isa, _)| *isa == 4).map(|&(_, g)| g).unwrap_or(4);
    let Some(io) = platform.io_apics.iter().find(|io| gsi >= io.gsi_base && gsi < io.gsi_base + 24) else {
        return false;
    };
    let ioapic = crate::arch::ioapic::IoApic::from_platform(io);
    if gsi - io.gsi_base >= ioapic.max_entries() {
        return false;
    }
    {
        let _c = CONSOLE.lock();
        // SAFETY: FCR (COM1 + 2) belongs to the UART this module owns (lock held): FIFO on,
        // both FIFOs cleared, receive trigger level 1 byte. IER (COM1 + 1) = 1: receive interrupt.
        unsafe {
            x86_64::instructions::port::Port::<u8>::new(COM1 + 2).write(0x07);
            x86_64::instructions::port::Port::<u8>::new(COM1 + 1).write(0x01);
        }
    }
    ioapic.route(gsi - io.gsi_base, crate::interrupts::COM1_VECTOR, apic_id);
    RX_IRQ.store(true, Ordering::Release);
    drain_uart();
    true
}

/// The oldest received byte not yet read, if any.
pub fn pop_input() -> Option<u8> {
    RX.lock().pop()
}

/// Are received bytes waiting to be read? Checks the UART too (a byte that raced the
/// interrupt routing, or any byte when input is polled), moving what it holds into the buffer.
pub fn poll_input() -> bool {
    let queued = RX.lock().len > 0;
    queued || drain_uart()
}

/// Does COM1's receive interrupt feed the input buffer ([`enable_rx_irq`] succeeded)? If not,
/// readers poll.
pub fn rx_irq_enabled() -> bool {
    RX_IRQ.load(Ordering::Acquire)
}

/// Prints to the serial console like `print!` (`\n` goes out as `\r\n`; nothing is printed
/// before [`crate::console::init`]). Takes the console's `IrqLock`: any context
/// except one that may already hold it on this CPU (exception and panic paths use
/// [`crate::console::emergency_print`]).
#[macro_export]
macro_rules! kprint {
    ($($arg:tt)*) => ($crate::console::_print(format_args!($($arg)*)));
}

/// [`kprint!`] plus a newline, written under one lock hold, so the line never interleaves with
/// another CPU's output.
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
