//! Console input for tasks: the reader's side of COM1. The framework's console moves received
//! bytes into its buffer from the receive interrupt and calls [`input_arrived`] (the kernel's
//! `console_input` upcall); [`read_byte`] blocks the calling task on a wait queue until a byte
//! is there (no busy-spinning). Without an I/O APIC the reader polls the UART every 10 ms.

use crate::sched::wait::WaitQueue;

/// Tasks waiting for console input.
static RX_WAIT: WaitQueue = WaitQueue::new();

/// Bytes arrived (interrupt context): wake the readers.
pub fn input_arrived() {
    RX_WAIT.wake_all();
    crate::sched::wait::POLL.wake_all();
}

/// [`read_byte`] for a user process: a fatal signal ends the wait
/// ([`Interrupted`](crate::sched::Interrupted)).
pub fn read_byte_interruptible() -> Result<u8, crate::sched::Interrupted> {
    loop {
        if let Some(b) = framework::console::pop_input() {
            return Ok(b);
        }
        if !framework::console::rx_irq_enabled() {
            if !framework::console::poll_input() {
                crate::sched::sleep_until_interruptible(crate::time::uptime_ns() + 10_000_000)?;
            }
            continue;
        }
        RX_WAIT.wait_until_interruptible(framework::console::poll_input)?;
    }
}

/// Blocks the calling kernel thread until `ready()` holds and input is waiting (the console
/// line discipline's worker: `ready` says whether it owns the input).
pub fn wait_for_input(ready: impl Fn() -> bool) {
    loop {
        if ready() && framework::console::poll_input() {
            return;
        }
        if !framework::console::rx_irq_enabled() {
            crate::sched::sleep_ns(10_000_000);
            continue;
        }
        RX_WAIT.wait_until(|| ready() && framework::console::poll_input());
    }
}

/// Next input byte, blocking the calling task while there is none.
pub fn read_byte() -> u8 {
    loop {
        if let Some(b) = framework::console::pop_input() {
            return b;
        }
        if !framework::console::rx_irq_enabled() {
            if !framework::console::poll_input() {
                crate::sched::sleep_ns(10_000_000);
            }
            continue;
        }
        // Check the UART too: a byte that raced the interrupt routing is not lost.
        RX_WAIT.wait_until(framework::console::poll_input);
    }
}

pub use framework::console::{emergency_print, enable_rx_irq, init, RX_DROPPED};
