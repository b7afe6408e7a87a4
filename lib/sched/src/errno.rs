//! Linux errno values used by the scheduler policy layer: Cadence's one errno type,
//! `cadence_abi::errno::Errno` (numbers, names and `strerror` texts of the x86_64 ABI).
//!
//! Contract: every fallible operation in this crate returns `Result<_, Errno>`
//! with the errno Linux would return for the same condition, so the kernel's
//! syscall layer can hand `-(err.code())` straight back to user space.

pub use cadence_abi::errno::Errno;
