//! System calls: one dispatch table ([`TABLE`], by Linux x86_64 number) over one file per
//! family ([`fs`], [`mm`], [`process`], [`time`]). A handler gets the process and the six
//! arguments and returns a value or an [`Errno`]; the dispatcher writes `-errno` into RAX as
//! Linux does. A number nobody handles is ENOSYS, counted ([`unknown_counts`]), never a panic.
//!
//! Each entry says whether it is complete or partial, and what "partial" lacks: that is the
//! syscall table in `docs/design/syscalls.md`, which a test compares with this table.

pub mod fs;
pub mod mm;
pub mod process;
pub mod time;

use crate::process::Process;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicU64, Ordering};
use framework::user::UserContext;

/// What a handler returns: the value for RAX, an error, or the thread's end.
pub enum Outcome {
    /// Return this value.
    Value(u64),
    /// The thread (and, with one thread, the process) exits with this status.
    Exit(i32),
}

/// A handler: the process, the caller's registers (for calls that need more than the
/// arguments) and the six arguments.
pub type Handler = fn(&Process, &mut UserContext, [u64; 6]) -> Result<Outcome, Errno>;

/// How complete an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Linux's semantics for every argument.
    Implemented,
    /// Works for the cases named; the text says what is missing.
    Partial(&'static str),
}

/// One system call.
pub struct Entry {
    /// Linux's x86_64 number.
    pub nr: u32,
    /// Its name (`man 2` page).
    pub name: &'static str,
    /// The handler.
    pub handler: Handler,
    /// How complete it is.
    pub status: Status,
}

macro_rules! entries {
    ($($nr:literal $name:ident $handler:path, $status:expr;)*) => {
        /// Every system call Cadence answers, by number.
        pub static TABLE: &[Entry] = &[$(Entry { nr: $nr, name: stringify!($name), handler: $handler, status: $status }),*];
    };
}

use Status::{Implemented, Partial};

entries! {
    0 read fs::read, Partial("fds 0-2 only (the console); no VFS yet");
    1 write fs::write, Partial("fds 1 and 2 only (the console); no VFS yet");
    3 close fs::close, Partial("fds 0-2 only");
    5 fstat fs::fstat, Partial("fds 0-2 only (a character device)");
    9 mmap mm::mmap, Partial("anonymous private mappings only (no files, no MAP_SHARED)");
    10 mprotect mm::mprotect, Implemented;
    11 munmap mm::munmap, Implemented;
    12 brk mm::brk, Implemented;
    16 ioctl fs::ioctl, Partial("ENOTTY for every request (no termios yet)");
    20 writev fs::writev, Partial("fds 1 and 2 only");
    24 sched_yield process::sched_yield, Implemented;
    28 madvise mm::madvise, Partial("MADV_DONTNEED drops pages; other advice is accepted and ignored");
    35 nanosleep time::nanosleep, Partial("a fatal signal ends it; no handlers yet, so no EINTR seen");
    39 getpid process::getpid, Implemented;
    60 exit process::exit, Implemented;
    63 uname process::uname, Implemented;
    96 gettimeofday time::gettimeofday, Partial("the wall clock starts at the epoch (no RTC read)");
    102 getuid process::getid, Implemented;
    104 getgid process::getid, Implemented;
    107 geteuid process::getid, Implemented;
    108 getegid process::getid, Implemented;
    110 getppid process::getppid, Implemented;
    158 arch_prctl process::arch_prctl, Partial("ARCH_SET_FS and ARCH_GET_FS only");
    186 gettid process::gettid, Implemented;
    218 set_tid_address process::set_tid_address, Partial("the address is kept; threads will clear it at exit");
    228 clock_gettime time::clock_gettime, Partial("REALTIME starts at the epoch (no RTC read)");
    229 clock_getres time::clock_getres, Implemented;
    230 clock_nanosleep time::clock_nanosleep, Partial("a fatal signal ends it; no handlers yet, so no EINTR seen");
    231 exit_group process::exit, Implemented;
    273 set_robust_list process::set_robust_list, Partial("the list is kept, not yet walked at exit");
    302 prlimit64 process::prlimit64, Partial("reads Linux's defaults; setting is EPERM for now");
    318 getrandom process::getrandom, Partial("not cryptographic (TSC-seeded)");
    334 rseq process::rseq, Implemented;
}

/// ENOSYS answers by number (numbers 0..512; larger ones count in the last slot).
static UNKNOWN: [AtomicU64; 512] = [const { AtomicU64::new(0) }; 512];

/// (number, how often) of every unknown system call seen since boot.
pub fn unknown_counts() -> impl Iterator<Item = (usize, u64)> {
    UNKNOWN.iter().enumerate().map(|(i, c)| (i, c.load(Ordering::Relaxed))).filter(|&(_, c)| c > 0)
}

/// The table's entry for `nr`.
pub fn lookup(nr: u64) -> Option<&'static Entry> {
    let nr = u32::try_from(nr).ok()?;
    TABLE.binary_search_by_key(&nr, |e| e.nr).ok().map(|i| &TABLE[i])
}

/// Handles the system call in `ctx`; `Some(status)` if the thread exits.
pub fn dispatch(proc: &Process, ctx: &mut UserContext) -> Option<i32> {
    let (nr, args) = ctx.syscall_args();
    let result = match lookup(nr) {
        Some(e) => (e.handler)(proc, ctx, args),
        None => {
            UNKNOWN[(nr as usize).min(UNKNOWN.len() - 1)].fetch_add(1, Ordering::Relaxed);
            Err(Errno::ENOSYS)
        }
    };
    match result {
        Ok(Outcome::Value(v)) => ctx.set_syscall_return(v),
        Ok(Outcome::Exit(status)) => return Some(status),
        Err(e) => ctx.set_syscall_return(e.to_return()),
    }
    None
}

/// A value result.
pub fn ok(v: u64) -> Result<Outcome, Errno> {
    Ok(Outcome::Value(v))
}

#[cfg(test)]
mod tests {
    #[test_case]
    fn the_table_is_sorted_and_unique() {
        assert!(super::TABLE.windows(2).all(|w| w[0].nr < w[1].nr));
    }
}
