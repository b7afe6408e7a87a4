//! Linux errno values used by the scheduler policy layer.
//!
//! Contract: every fallible operation in this crate returns `Result<_, Errno>`
//! with the errno Linux would return for the same condition, so the kernel's
//! syscall layer can hand `-(err.code())` straight back to user space.
//! The numeric values are the x86_64 Linux ABI values (asm-generic/errno-base.h).

use core::fmt;

/// A Linux error number. `code()` is the positive errno; syscalls return its negation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum Errno {
    /// Operation not permitted (missing CAP_SYS_NICE / rlimit).
    EPERM = 1,
    /// No such process (unknown task / entity key).
    ESRCH = 3,
    /// Interrupted system call.
    EINTR = 4,
    /// Try again.
    EAGAIN = 11,
    /// Out of memory.
    ENOMEM = 12,
    /// Permission denied (e.g. writing a read-only sysctl).
    EACCES = 13,
    /// Bad address (a `uaddr` the value cannot be stored at).
    EFAULT = 14,
    /// Device or resource busy (entity already queued / running).
    EBUSY = 16,
    /// No such device.
    ENODEV = 19,
    /// Invalid argument.
    EINVAL = 22,
    /// Result out of range.
    ERANGE = 34,
    /// Operation not supported (e.g. util-clamp flags: Cadence has no uclamp,
    /// like Linux built without CONFIG_UCLAMP_TASK).
    EOPNOTSUPP = 95,
}

impl Errno {
    /// The positive errno number (`EINVAL.code() == 22`).
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The symbolic name, e.g. `"EINVAL"`.
    pub const fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ESRCH => "ESRCH",
            Errno::EINTR => "EINTR",
            Errno::EAGAIN => "EAGAIN",
            Errno::ENOMEM => "ENOMEM",
            Errno::EBUSY => "EBUSY",
            Errno::ENODEV => "ENODEV",
            Errno::EFAULT => "EFAULT",
            Errno::EACCES => "EACCES",
            Errno::EINVAL => "EINVAL",
            Errno::ERANGE => "ERANGE",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
        }
    }

    /// Inverse of [`Errno::code`]; `None` for numbers this crate never produces.
    pub const fn from_code(code: i32) -> Option<Errno> {
        Some(match code {
            1 => Errno::EPERM,
            3 => Errno::ESRCH,
            4 => Errno::EINTR,
            11 => Errno::EAGAIN,
            12 => Errno::ENOMEM,
            16 => Errno::EBUSY,
            19 => Errno::ENODEV,
            13 => Errno::EACCES,
            14 => Errno::EFAULT,
            22 => Errno::EINVAL,
            34 => Errno::ERANGE,
            95 => Errno::EOPNOTSUPP,
            _ => return None,
        })
    }
}

impl Errno {
    /// The C library's `strerror` text (what Linux tools print).
    pub const fn strerror(self) -> &'static str {
        match self {
            Errno::EPERM => "Operation not permitted",
            Errno::ESRCH => "No such process",
            Errno::EINTR => "Interrupted system call",
            Errno::EAGAIN => "Resource temporarily unavailable",
            Errno::ENOMEM => "Cannot allocate memory",
            Errno::EBUSY => "Device or resource busy",
            Errno::ENODEV => "No such device",
            Errno::EACCES => "Permission denied",
            Errno::EFAULT => "Bad address",
            Errno::EINVAL => "Invalid argument",
            Errno::ERANGE => "Numerical result out of range",
            Errno::EOPNOTSUPP => "Operation not supported",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_match_linux() {
        let all = [
            (Errno::EPERM, 1, "EPERM"),
            (Errno::ESRCH, 3, "ESRCH"),
            (Errno::EINTR, 4, "EINTR"),
            (Errno::EAGAIN, 11, "EAGAIN"),
            (Errno::ENOMEM, 12, "ENOMEM"),
            (Errno::EACCES, 13, "EACCES"),
            (Errno::EBUSY, 16, "EBUSY"),
            (Errno::ENODEV, 19, "ENODEV"),
            (Errno::EINVAL, 22, "EINVAL"),
            (Errno::ERANGE, 34, "ERANGE"),
            (Errno::EOPNOTSUPP, 95, "EOPNOTSUPP"),
        ];
        for (e, code, name) in all {
            assert_eq!(e.code(), code);
            assert_eq!(e.name(), name);
            assert_eq!(Errno::from_code(code), Some(e));
        }
        assert_eq!(Errno::from_code(0), None);
        assert_eq!(Errno::EINVAL.to_string(), "EINVAL (22)");
    }
}
