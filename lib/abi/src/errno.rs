//! Linux's errno values (x86_64 uses `include/uapi/asm-generic/errno-base.h` and `errno.h`)
//! with their names, as a system call returns them (`-errno` in RAX) and as the conformance
//! programs print them.

/// An errno value Cadence returns (a subset of Linux's, with Linux's numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Errno {
    /// Operation not permitted.
    EPERM = 1,
    /// No such file or directory.
    ENOENT = 2,
    /// No such process.
    ESRCH = 3,
    /// Interrupted system call.
    EINTR = 4,
    /// I/O error.
    EIO = 5,
    /// No such device or address.
    ENXIO = 6,
    /// Argument list too long.
    E2BIG = 7,
    /// Exec format error.
    ENOEXEC = 8,
    /// Bad file number.
    EBADF = 9,
    /// No child processes.
    ECHILD = 10,
    /// Try again.
    EAGAIN = 11,
    /// Out of memory.
    ENOMEM = 12,
    /// Permission denied.
    EACCES = 13,
    /// Bad address.
    EFAULT = 14,
    /// Block device required.
    ENOTBLK = 15,
    /// Device or resource busy.
    EBUSY = 16,
    /// File exists.
    EEXIST = 17,
    /// Cross-device link.
    EXDEV = 18,
    /// No such device.
    ENODEV = 19,
    /// Not a directory.
    ENOTDIR = 20,
    /// Is a directory.
    EISDIR = 21,
    /// Invalid argument.
    EINVAL = 22,
    /// File table overflow.
    ENFILE = 23,
    /// Too many open files.
    EMFILE = 24,
    /// Not a typewriter.
    ENOTTY = 25,
    /// Text file busy.
    ETXTBSY = 26,
    /// File too large.
    EFBIG = 27,
    /// No space left on device.
    ENOSPC = 28,
    /// Illegal seek.
    ESPIPE = 29,
    /// Read-only file system.
    EROFS = 30,
    /// Too many links.
    EMLINK = 31,
    /// Broken pipe.
    EPIPE = 32,
    /// Math argument out of domain of func.
    EDOM = 33,
    /// Math result not representable.
    ERANGE = 34,
    /// Resource deadlock would occur.
    EDEADLK = 35,
    /// File name too long.
    ENAMETOOLONG = 36,
    /// No record locks available.
    ENOLCK = 37,
    /// Invalid system call number.
    ENOSYS = 38,
    /// Directory not empty.
    ENOTEMPTY = 39,
    /// Too many symbolic links encountered.
    ELOOP = 40,
    /// Identifier removed.
    EIDRM = 43,
    /// No data available.
    ENODATA = 61,
    /// Timer expired.
    ETIME = 62,
    /// Value too large for defined data type.
    EOVERFLOW = 75,
    /// Socket operation on non-socket.
    ENOTSOCK = 88,
    /// Message too long.
    EMSGSIZE = 90,
    /// Protocol not supported.
    EPROTONOSUPPORT = 93,
    /// Operation not supported on transport endpoint.
    EOPNOTSUPP = 95,
    /// Address family not supported by protocol.
    EAFNOSUPPORT = 97,
    /// Connection timed out.
    ETIMEDOUT = 110,
    /// Operation now in progress.
    EINPROGRESS = 115,
    /// Owner died.
    EOWNERDEAD = 130,
    /// State not recoverable.
    ENOTRECOVERABLE = 131,
    /// Kernel-internal: restart the call if the signal's handler has SA_RESTART (or no
    /// handler runs); else EINTR. Never seen by user space.
    ERESTARTSYS = 512,
    /// Kernel-internal: always restart the call after the signal.
    ERESTARTNOINTR = 513,
    /// Kernel-internal: restart the call unless a handler runs (then EINTR).
    ERESTARTNOHAND = 514,
    /// Kernel-internal: continue the call through `restart_syscall` unless a handler runs.
    #[allow(non_camel_case_types)]
    ERESTART_RESTARTBLOCK = 516,
}

impl Errno {
    /// Every value, in numeric order.
    pub const ALL: &'static [Errno] = &[
        Errno::EPERM,
        Errno::ENOENT,
        Errno::ESRCH,
        Errno::EINTR,
        Errno::EIO,
        Errno::ENXIO,
        Errno::E2BIG,
        Errno::ENOEXEC,
        Errno::EBADF,
        Errno::ECHILD,
        Errno::EAGAIN,
        Errno::ENOMEM,
        Errno::EACCES,
        Errno::EFAULT,
        Errno::ENOTBLK,
        Errno::EBUSY,
        Errno::EEXIST,
        Errno::EXDEV,
        Errno::ENODEV,
        Errno::ENOTDIR,
        Errno::EISDIR,
        Errno::EINVAL,
        Errno::ENFILE,
        Errno::EMFILE,
        Errno::ENOTTY,
        Errno::ETXTBSY,
        Errno::EFBIG,
        Errno::ENOSPC,
        Errno::ESPIPE,
        Errno::EROFS,
        Errno::EMLINK,
        Errno::EPIPE,
        Errno::EDOM,
        Errno::ERANGE,
        Errno::EDEADLK,
        Errno::ENAMETOOLONG,
        Errno::ENOLCK,
        Errno::ENOSYS,
        Errno::ENOTEMPTY,
        Errno::ELOOP,
        Errno::EIDRM,
        Errno::ENODATA,
        Errno::ETIME,
        Errno::EOVERFLOW,
        Errno::ENOTSOCK,
        Errno::EMSGSIZE,
        Errno::EPROTONOSUPPORT,
        Errno::EOPNOTSUPP,
        Errno::EAFNOSUPPORT,
        Errno::ETIMEDOUT,
        Errno::EINPROGRESS,
        Errno::EOWNERDEAD,
        Errno::ENOTRECOVERABLE,
        Errno::ERESTARTSYS,
        Errno::ERESTARTNOINTR,
        Errno::ERESTARTNOHAND,
        Errno::ERESTART_RESTARTBLOCK,
    ];

    /// The positive number (`Errno::EINVAL.code() == 22`).
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The symbolic name (`"EINVAL"`).
    pub const fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::EINTR => "EINTR",
            Errno::EIO => "EIO",
            Errno::ENXIO => "ENXIO",
            Errno::E2BIG => "E2BIG",
            Errno::ENOEXEC => "ENOEXEC",
            Errno::EBADF => "EBADF",
            Errno::ECHILD => "ECHILD",
            Errno::EAGAIN => "EAGAIN",
            Errno::ENOMEM => "ENOMEM",
            Errno::EACCES => "EACCES",
            Errno::EFAULT => "EFAULT",
            Errno::ENOTBLK => "ENOTBLK",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::EXDEV => "EXDEV",
            Errno::ENODEV => "ENODEV",
            Errno::ENOTDIR => "ENOTDIR",
            Errno::EISDIR => "EISDIR",
            Errno::EINVAL => "EINVAL",
            Errno::ENFILE => "ENFILE",
            Errno::EMFILE => "EMFILE",
            Errno::ENOTTY => "ENOTTY",
            Errno::ETXTBSY => "ETXTBSY",
            Errno::EFBIG => "EFBIG",
            Errno::ENOSPC => "ENOSPC",
            Errno::ESPIPE => "ESPIPE",
            Errno::EROFS => "EROFS",
            Errno::EMLINK => "EMLINK",
            Errno::EPIPE => "EPIPE",
            Errno::EDOM => "EDOM",
            Errno::ERANGE => "ERANGE",
            Errno::EDEADLK => "EDEADLK",
            Errno::ENAMETOOLONG => "ENAMETOOLONG",
            Errno::ENOLCK => "ENOLCK",
            Errno::ENOSYS => "ENOSYS",
            Errno::ENOTEMPTY => "ENOTEMPTY",
            Errno::ELOOP => "ELOOP",
            Errno::EIDRM => "EIDRM",
            Errno::ENODATA => "ENODATA",
            Errno::ETIME => "ETIME",
            Errno::EOVERFLOW => "EOVERFLOW",
            Errno::ENOTSOCK => "ENOTSOCK",
            Errno::EMSGSIZE => "EMSGSIZE",
            Errno::EPROTONOSUPPORT => "EPROTONOSUPPORT",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
            Errno::EAFNOSUPPORT => "EAFNOSUPPORT",
            Errno::ETIMEDOUT => "ETIMEDOUT",
            Errno::EINPROGRESS => "EINPROGRESS",
            Errno::EOWNERDEAD => "EOWNERDEAD",
            Errno::ENOTRECOVERABLE => "ENOTRECOVERABLE",
            Errno::ERESTARTSYS => "ERESTARTSYS",
            Errno::ERESTARTNOINTR => "ERESTARTNOINTR",
            Errno::ERESTARTNOHAND => "ERESTARTNOHAND",
            Errno::ERESTART_RESTARTBLOCK => "ERESTART_RESTARTBLOCK",
        }
    }

    /// The C library's `strerror` text (glibc's wording: what Linux tools print).
    pub const fn strerror(self) -> &'static str {
        match self {
            Errno::EPERM => "Operation not permitted",
            Errno::ENOENT => "No such file or directory",
            Errno::ESRCH => "No such process",
            Errno::EINTR => "Interrupted system call",
            Errno::EIO => "Input/output error",
            Errno::ENXIO => "No such device or address",
            Errno::E2BIG => "Argument list too long",
            Errno::ENOEXEC => "Exec format error",
            Errno::EBADF => "Bad file descriptor",
            Errno::ECHILD => "No child processes",
            Errno::EAGAIN => "Resource temporarily unavailable",
            Errno::ENOMEM => "Cannot allocate memory",
            Errno::EACCES => "Permission denied",
            Errno::EFAULT => "Bad address",
            Errno::ENOTBLK => "Block device required",
            Errno::EBUSY => "Device or resource busy",
            Errno::EEXIST => "File exists",
            Errno::EXDEV => "Invalid cross-device link",
            Errno::ENODEV => "No such device",
            Errno::ENOTDIR => "Not a directory",
            Errno::EISDIR => "Is a directory",
            Errno::EINVAL => "Invalid argument",
            Errno::ENFILE => "Too many open files in system",
            Errno::EMFILE => "Too many open files",
            Errno::ENOTTY => "Inappropriate ioctl for device",
            Errno::ETXTBSY => "Text file busy",
            Errno::EFBIG => "File too large",
            Errno::ENOSPC => "No space left on device",
            Errno::ESPIPE => "Illegal seek",
            Errno::EROFS => "Read-only file system",
            Errno::EMLINK => "Too many links",
            Errno::EPIPE => "Broken pipe",
            Errno::EDOM => "Numerical argument out of domain",
            Errno::ERANGE => "Numerical result out of range",
            Errno::EDEADLK => "Resource deadlock avoided",
            Errno::ENAMETOOLONG => "File name too long",
            Errno::ENOLCK => "No locks available",
            Errno::ENOSYS => "Function not implemented",
            Errno::ENOTEMPTY => "Directory not empty",
            Errno::ELOOP => "Too many levels of symbolic links",
            Errno::EIDRM => "Identifier removed",
            Errno::ENODATA => "No data available",
            Errno::ETIME => "Timer expired",
            Errno::EOVERFLOW => "Value too large for defined data type",
            Errno::ENOTSOCK => "Socket operation on non-socket",
            Errno::EMSGSIZE => "Message too long",
            Errno::EPROTONOSUPPORT => "Protocol not supported",
            Errno::EOPNOTSUPP => "Operation not supported",
            Errno::EAFNOSUPPORT => "Address family not supported by protocol",
            Errno::ETIMEDOUT => "Connection timed out",
            Errno::EINPROGRESS => "Operation now in progress",
            Errno::EOWNERDEAD => "Owner died",
            Errno::ENOTRECOVERABLE => "State not recoverable",
            Errno::ERESTARTSYS | Errno::ERESTARTNOINTR | Errno::ERESTARTNOHAND | Errno::ERESTART_RESTARTBLOCK => "Interrupted system call",
        }
    }

    /// The value with number `code`, if Cadence knows it. A binary search ([`Errno::ALL`] is
    /// in number order, tested): every return to user space asks this of its result (is it a
    /// restart code?), and a linear scan of the table cost ~150 instructions per system call.
    pub fn from_code(code: i32) -> Option<Errno> {
        Errno::ALL.binary_search_by_key(&code, |e| e.code()).ok().map(|i| Errno::ALL[i])
    }

    /// Is this one of the kernel-internal restart codes (which a signal check turns into a
    /// restart or EINTR)?
    pub const fn is_restart(self) -> bool {
        matches!(self, Errno::ERESTARTSYS | Errno::ERESTARTNOINTR | Errno::ERESTARTNOHAND | Errno::ERESTART_RESTARTBLOCK)
    }

    /// What a system call returns for this error: `-errno` as the 64-bit RAX.
    pub const fn to_return(self) -> u64 {
        (-(self as i64)) as u64
    }
}

impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

/// EWOULDBLOCK is EAGAIN on Linux.
pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
/// ENOTSUP is EOPNOTSUPP on Linux.
pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_names_and_returns_round_trip() {
        for &e in Errno::ALL {
            assert_eq!(Errno::from_code(e.code()), Some(e));
            assert!(e.name().starts_with('E'));
            assert_eq!(e.to_return() as i64, -(e.code() as i64));
        }
        assert!(Errno::ALL.windows(2).all(|w| w[0].code() < w[1].code()));
        assert_eq!(Errno::ENOSYS.code(), 38);
        assert_eq!(Errno::EFAULT.to_return(), u64::MAX - 13);
        assert_eq!(Errno::EINVAL.strerror(), "Invalid argument");
        assert_eq!(Errno::EINVAL.to_string(), "EINVAL (22)");
        assert_eq!(Errno::from_code(0), None);
        // Between, below and above the known numbers.
        for code in [i32::MIN, -1, 41, 58, 134, 511, 517, i32::MAX] {
            assert_eq!(Errno::from_code(code), None, "{}", code);
        }
    }
}
