//! Deliberate CPU exceptions, for the scenario tests of the exception handlers (the kernel's
//! `test_fault=` boot option).

/// An exception [`provoke`] can raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// #PF: a read of an unmapped address.
    PageFault,
    /// #GP: a read of a non-canonical address.
    GeneralProtection,
    /// #UD: `ud2`.
    InvalidOpcode,
    /// #BP: `int3`.
    Breakpoint,
    /// #DE: a division by zero.
    DivideError,
    /// A kernel stack overflow into its guard page (a double fault on the IST stack).
    StackOverflow,
}

#[allow(unconditional_recursion)]
fn recurse_forever(depth: u64) -> u64 {
    let buf = [depth; 64];
    core::hint::black_box(&buf);
    recurse_forever(depth + 1) + buf[3]
}

/// Raises `kind` on this CPU. The exception handler reports it and stops the machine (the
/// `test_fault=` boot option's scenario tests check that report).
pub fn provoke(kind: Fault) {
    use Fault::*;
    // Deliberately faulting is the point of every arm: the exception handler reports the
    // fault and stops the machine, so nothing runs on after undefined state.
    match kind {
        PageFault => {
            // SAFETY: see above (an unmapped address: a page fault is the intended outcome).
            let v = unsafe { core::ptr::read_volatile(0xdead_0000_0000usize as *const u64) };
            core::hint::black_box(v)
        }
        GeneralProtection => {
            // SAFETY: see above (a non-canonical address: #GP is the intended outcome).
            let v = unsafe { core::ptr::read_volatile(0x8000_0000_0000_0000usize as *const u64) };
            core::hint::black_box(v)
        }
        InvalidOpcode => {
            // SAFETY: see above (ud2 raises #UD).
            unsafe { core::arch::asm!("ud2") };
            0
        }
        Breakpoint => {
            x86_64::instructions::interrupts::int3();
            0
        }
        DivideError => {
            // SAFETY: see above (dividing by zero raises #DE).
            unsafe { core::arch::asm!("xor ecx, ecx", "div ecx", out("eax") _, out("edx") _, out("ecx") _) };
            0
        }
        StackOverflow => recurse_forever(0),
    };
}
