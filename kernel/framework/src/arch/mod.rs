//! Architecture layer. Everything that touches x86_64 hardware (descriptor tables, APICs,
//! MSRs, I/O ports, the SMP trampoline) lives under `arch::x86_64`; the rest of the kernel calls
//! the small typed functions exported here and never issues raw port or MSR accesses itself.

pub mod x86_64;
pub use self::x86_64::*;
