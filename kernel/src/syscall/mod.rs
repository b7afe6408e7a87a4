//! System calls: one dispatch table ([`TABLE`], by Linux x86_64 number) over one file per
//! family ([`aio`], [`cred`], [`fs`], [`futex`], [`ipc`], [`mm`], [`mount`], [`pidfd`], [`process`], [`sched`], [`signal`], [`time`]). A handler gets the calling thread and the six
//! arguments and returns a value or an [`Errno`]; the dispatcher writes `-errno` into RAX as
//! Linux does. A number nobody handles is ENOSYS, counted ([`unknown_counts`]), never a panic.
//!
//! Each entry says whether it is complete or partial, and what "partial" lacks: that is the
//! syscall table in `docs/design/syscalls.md`, which a test compares with this table.

pub mod aio;
pub mod cred;
pub mod fs;
pub mod futex;
pub mod ipc;
pub mod mm;
pub mod mount;
pub mod pidfd;
pub mod process;
pub mod sched;
pub mod signal;
pub mod time;

use crate::process::Thread;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicU64, Ordering};
use framework::user::UserContext;

/// What a handler returns: the value for RAX, an error, or the thread's end.
pub enum Outcome {
    /// Return this value.
    Value(u64),
    /// The handler set every register itself (`execve`, `rt_sigreturn`): RAX is not the
    /// call's result, and no restart applies.
    Restored,
    /// The calling thread exits with this status (`exit`).
    ExitThread(i32),
    /// The whole process exits with this status (`exit_group`).
    ExitGroup(i32),
}

/// What the thread does after a system call.
pub enum After {
    /// Return to user mode with RAX set (signals and restarts first).
    Return,
    /// Return to user mode with the registers the handler set.
    Restored,
    /// The thread ends with this status.
    ExitThread(i32),
    /// The process ends with this status.
    ExitGroup(i32),
}

/// A handler: the calling thread, its registers (for calls that need more than the
/// arguments) and the six arguments.
pub type Handler = fn(&Thread, &mut UserContext, [u64; 6]) -> Result<Outcome, Errno>;

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
        // The lookup is a binary search: an entry out of order would be unreachable, so the
        // build fails instead.
        const _: () = {
            let nrs: &[u32] = &[$($nr),*];
            let mut i = 1;
            while i < nrs.len() {
                assert!(nrs[i - 1] < nrs[i], "the syscall table must be sorted by number, without duplicates");
                i += 1;
            }
        };
    };
}

use Status::{Implemented, Partial};

entries! {
    0 read fs::read, Implemented;
    1 write fs::write, Implemented;
    2 open fs::open, Implemented;
    3 close fs::close, Implemented;
    4 stat fs::stat, Implemented;
    5 fstat fs::fstat, Implemented;
    6 lstat fs::lstat, Implemented;
    7 poll fs::poll, Implemented;
    8 lseek fs::lseek, Partial("no SEEK_DATA / SEEK_HOLE");
    9 mmap mm::mmap, Implemented;
    10 mprotect mm::mprotect, Implemented;
    11 munmap mm::munmap, Implemented;
    12 brk mm::brk, Implemented;
    13 rt_sigaction signal::rt_sigaction, Implemented;
    14 rt_sigprocmask signal::rt_sigprocmask, Implemented;
    15 rt_sigreturn signal::rt_sigreturn, Implemented;
    16 ioctl fs::ioctl, Partial("terminals (console, /dev/ttyN): TCGETS/TCSETS*, TIOCGWINSZ/TIOCSWINSZ, TIOCSCTTY/TIOCNOTTY, TIOCGPGRP/TIOCSPGRP, TIOCGSID, FIONREAD; pipes, sockets: FIONREAD; /dev/vda: BLKGETSIZE64, BLKGETSIZE, BLKSSZGET; else ENOTTY");
    17 pread64 fs::pread64, Implemented;
    18 pwrite64 fs::pwrite64, Implemented;
    19 readv fs::readv, Implemented;
    20 writev fs::writev, Implemented;
    21 access fs::access, Implemented;
    22 pipe fs::pipe, Implemented;
    23 select fs::select, Partial("exceptfds never ready");
    24 sched_yield process::sched_yield, Implemented;
    28 madvise mm::madvise, Partial("MADV_DONTNEED drops pages; other advice is accepted and ignored");
    32 dup fs::dup, Implemented;
    33 dup2 fs::dup2, Implemented;
    34 pause signal::pause, Implemented;
    35 nanosleep time::nanosleep, Implemented;
    36 getitimer time::getitimer, Implemented;
    37 alarm time::alarm, Implemented;
    38 setitimer time::setitimer, Implemented;
    39 getpid process::getpid, Implemented;
    40 sendfile fs::sendfile, Partial("at most 64 KiB per call");
    53 socketpair fs::socketpair, Partial("AF_UNIX SOCK_STREAM only (datagram and seqpacket: EOPNOTSUPP); no socket / bind / connect");
    56 clone process::clone, Partial("no CLONE_PARENT or namespaces (EINVAL, as a Linux built without them)");
    57 fork process::fork, Implemented;
    58 vfork process::vfork, Implemented;
    59 execve process::execve, Implemented;
    60 exit process::exit, Implemented;
    61 wait4 process::wait4, Implemented;
    62 kill signal::kill, Implemented;
    63 uname process::uname, Implemented;
    64 semget ipc::semget, Partial("the limits are Linux's defaults, fixed (no kernel.sem sysctl, no /proc/sysvipc)");
    65 semop ipc::semop, Implemented;
    66 semctl ipc::semctl, Implemented;
    72 fcntl fs::fcntl, Partial("F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL; no locks");
    74 fsync fs::fsync, Implemented;
    75 fdatasync fs::fsync, Implemented;
    76 truncate fs::truncate, Implemented;
    77 ftruncate fs::ftruncate, Implemented;
    79 getcwd fs::getcwd, Implemented;
    80 chdir fs::chdir, Implemented;
    81 fchdir fs::fchdir, Implemented;
    82 rename fs::rename, Implemented;
    83 mkdir fs::mkdir, Implemented;
    84 rmdir fs::rmdir, Implemented;
    85 creat fs::creat, Implemented;
    87 unlink fs::unlink, Implemented;
    88 symlink fs::symlink, Implemented;
    89 readlink fs::readlink, Implemented;
    90 chmod fs::chmod, Implemented;
    91 fchmod fs::fchmod, Implemented;
    92 chown fs::chown, Partial("every file is root's: the owner does not change");
    93 fchown fs::fchown, Partial("every file is root's: the owner does not change");
    94 lchown fs::chown, Partial("every file is root's: the owner does not change");
    95 umask fs::umask, Implemented;
    96 gettimeofday time::gettimeofday, Implemented;
    97 getrlimit process::getrlimit, Partial("as prlimit64");
    98 getrusage process::getrusage, Partial("times tick-sampled, not scaled to the run time as Linux's; ru_majflt and the block I/O counts (ru_inblock, ru_oublock) are 0");
    99 sysinfo process::sysinfo, Partial("no shared/buffer/swap figures");
    100 times process::times, Partial("times tick-sampled, not scaled to the run time as Linux's");
    102 getuid cred::getuid, Implemented;
    104 getgid cred::getgid, Implemented;
    105 setuid cred::setuid, Partial("the ids are reported, not enforced: no file permission checks");
    106 setgid cred::setgid, Partial("the ids are reported, not enforced: no file permission checks");
    107 geteuid cred::geteuid, Implemented;
    108 getegid cred::getegid, Implemented;
    109 setpgid process::setpgid, Implemented;
    110 getppid process::getppid, Implemented;
    111 getpgrp process::getpgrp, Implemented;
    112 setsid process::setsid, Implemented;
    113 setreuid cred::setreuid, Partial("the ids are reported, not enforced: no file permission checks");
    114 setregid cred::setregid, Partial("the ids are reported, not enforced: no file permission checks");
    115 getgroups cred::getgroups, Implemented;
    116 setgroups cred::setgroups, Implemented;
    117 setresuid cred::setresuid, Partial("the ids are reported, not enforced: no file permission checks");
    118 getresuid cred::getresuid, Implemented;
    119 setresgid cred::setresgid, Partial("the ids are reported, not enforced: no file permission checks");
    120 getresgid cred::getresgid, Implemented;
    121 getpgid process::getpgid, Implemented;
    122 setfsuid cred::setfsuid, Implemented;
    123 setfsgid cred::setfsgid, Implemented;
    124 getsid process::getsid, Implemented;
    127 rt_sigpending signal::rt_sigpending, Implemented;
    128 rt_sigtimedwait signal::rt_sigtimedwait, Implemented;
    129 rt_sigqueueinfo signal::rt_sigqueueinfo, Implemented;
    130 rt_sigsuspend signal::rt_sigsuspend, Implemented;
    131 sigaltstack signal::sigaltstack, Implemented;
    140 getpriority sched::getpriority, Implemented;
    141 setpriority sched::setpriority, Implemented;
    142 sched_setparam sched::sched_setparam, Implemented;
    143 sched_getparam sched::sched_getparam, Implemented;
    144 sched_setscheduler sched::sched_setscheduler, Implemented;
    145 sched_getscheduler sched::sched_getscheduler, Implemented;
    146 sched_get_priority_max sched::sched_get_priority_max, Implemented;
    147 sched_get_priority_min sched::sched_get_priority_min, Implemented;
    148 sched_rr_get_interval sched::sched_rr_get_interval, Implemented;
    149 mlock mm::mlock, Implemented;
    150 munlock mm::munlock, Implemented;
    151 mlockall mm::mlockall, Implemented;
    152 munlockall mm::munlockall, Implemented;
    157 prctl process::prctl, Partial("PR_SET_NAME / PR_GET_NAME (not yet the name `ps` shows), PR_SCHED_CORE, PR_GET/SET_DUMPABLE; other options EINVAL");
    158 arch_prctl process::arch_prctl, Partial("ARCH_SET_FS and ARCH_GET_FS only");
    160 setrlimit process::setrlimit, Partial("as prlimit64");
    162 sync fs::sync, Implemented;
    164 settimeofday time::settimeofday, Implemented;
    165 mount mount::mount, Partial("proc, sysfs, cgroup (cpu), cgroup2, debugfs, tracefs, tmpfs/ramfs; no bind or move mounts (EINVAL); propagation flags accepted, one namespace");
    166 umount2 mount::umount2, Implemented;
    186 gettid process::gettid, Implemented;
    200 tkill signal::tkill, Implemented;
    201 time time::time, Implemented;
    202 futex futex::futex, Partial("CMP_REQUEUE_PI wakes the requeued waiters, which then take the PI futex themselves (Linux queues them on it)");
    203 sched_setaffinity sched::sched_setaffinity, Partial("CPUs 0-63 (Cadence's masks are 64 bits)");
    204 sched_getaffinity sched::sched_getaffinity, Implemented;
    206 io_setup aio::io_setup, Implemented;
    207 io_destroy aio::io_destroy, Implemented;
    208 io_getevents aio::io_getevents, Implemented;
    209 io_submit aio::io_submit, Partial("IOCB_FLAG_RESFD: Cadence has no eventfd (EINVAL, as Linux for a file that is not one); ring slots are counted without Linux's per-CPU batches, so Linux may refuse a few requests sooner (EAGAIN)");
    210 io_cancel aio::io_cancel, Implemented;
    217 getdents64 fs::getdents64, Implemented;
    218 set_tid_address futex::set_tid_address, Implemented;
    219 restart_syscall time::restart_syscall, Implemented;
    220 semtimedop ipc::semtimedop, Implemented;
    222 timer_create time::timer_create, Partial("no CPU-time clocks (EOPNOTSUPP); timers are not deleted at execve");
    223 timer_settime time::timer_settime, Implemented;
    224 timer_gettime time::timer_gettime, Implemented;
    225 timer_getoverrun time::timer_getoverrun, Implemented;
    226 timer_delete time::timer_delete, Implemented;
    227 clock_settime time::clock_settime, Implemented;
    228 clock_gettime time::clock_gettime, Partial("CLOCK_PROCESS_CPUTIME_ID counts the live threads only");
    229 clock_getres time::clock_getres, Implemented;
    230 clock_nanosleep time::clock_nanosleep, Implemented;
    231 exit_group process::exit_group, Implemented;
    234 tgkill signal::tgkill, Implemented;
    237 mbind mm::mbind, Partial("one NUMA node: every policy is node 0's");
    238 set_mempolicy mm::set_mempolicy, Partial("one NUMA node: every policy is node 0's");
    239 get_mempolicy mm::get_mempolicy, Partial("one NUMA node: MPOL_DEFAULT, node 0");
    240 mq_open ipc::mq_open, Partial("no /dev/mqueue filesystem (queues are reached by their mq_open names); the fs.mqueue limits are the defaults, fixed");
    241 mq_unlink ipc::mq_unlink, Implemented;
    242 mq_timedsend ipc::mq_timedsend, Implemented;
    243 mq_timedreceive ipc::mq_timedreceive, Implemented;
    244 mq_notify ipc::mq_notify, Partial("SIGEV_NONE, SIGEV_SIGNAL; SIGEV_THREAD needs a netlink socket, which Cadence lacks (its fd is EBADF / ENOTSOCK / EINVAL, as Linux for a non-netlink fd)");
    245 mq_getsetattr ipc::mq_getsetattr, Implemented;
    247 waitid process::waitid, Implemented;
    257 openat fs::openat, Partial("no O_TMPFILE, O_PATH");
    258 mkdirat fs::mkdirat, Implemented;
    262 newfstatat fs::newfstatat, Implemented;
    263 unlinkat fs::unlinkat, Implemented;
    264 renameat fs::renameat, Implemented;
    266 symlinkat fs::symlinkat, Implemented;
    267 readlinkat fs::readlinkat, Implemented;
    268 fchmodat fs::fchmodat, Implemented;
    269 faccessat fs::faccessat, Implemented;
    270 pselect6 fs::pselect6, Partial("exceptfds never ready");
    271 ppoll fs::ppoll, Implemented;
    273 set_robust_list futex::set_robust_list, Implemented;
    274 get_robust_list futex::get_robust_list, Implemented;
    280 utimensat fs::utimensat, Partial("sets the modification time to now, whatever the times asked");
    282 signalfd signal::signalfd, Implemented;
    283 timerfd_create time::timerfd_create, Partial("CLOCK_REALTIME, MONOTONIC, BOOTTIME (the _ALARM clocks as their base clocks)");
    286 timerfd_settime time::timerfd_settime, Partial("TFD_TIMER_CANCEL_ON_SET accepted; a clock change does not cancel");
    287 timerfd_gettime time::timerfd_gettime, Implemented;
    289 signalfd4 signal::signalfd4, Implemented;
    292 dup3 fs::dup3, Implemented;
    293 pipe2 fs::pipe2, Partial("no O_DIRECT (packet mode)");
    297 rt_tgsigqueueinfo signal::rt_tgsigqueueinfo, Implemented;
    302 prlimit64 process::prlimit64, Partial("enforced: RTTIME (any task), NOFILE, NPROC (non-root real users; EAGAIN), AS (mmap, brk, stack growth), STACK (stack growth), MEMLOCK (mlock, mlockall, locked mappings; not root), MSGQUEUE; recorded: the others");
    309 getcpu sched::getcpu, Implemented;
    314 sched_setattr sched::sched_setattr, Implemented;
    315 sched_getattr sched::sched_getattr, Implemented;
    316 renameat2 fs::renameat2, Partial("no RENAME_NOREPLACE / RENAME_EXCHANGE");
    318 getrandom process::getrandom, Partial("not cryptographic (TSC-seeded)");
    325 mlock2 mm::mlock2, Implemented;
    332 statx fs::statx, Partial("stx_mask is STATX_BASIC_STATS: no birth time, mount id or direct-I/O alignment");
    333 io_pgetevents aio::io_pgetevents, Implemented;
    334 rseq process::rseq, Implemented;
    424 pidfd_send_signal pidfd::pidfd_send_signal, Implemented;
    434 pidfd_open pidfd::pidfd_open, Implemented;
    438 pidfd_getfd pidfd::pidfd_getfd, Implemented;
    439 faccessat2 fs::faccessat2, Implemented;
    448 process_mrelease pidfd::process_mrelease, Partial("answers as Linux's; the memory is freed by the process's own exit, not reaped early");
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

/// Handles the system call in `ctx`.
pub fn dispatch(proc: &Thread, ctx: &mut UserContext) -> After {
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
        Ok(Outcome::Restored) => return After::Restored,
        Ok(Outcome::ExitThread(status)) => return After::ExitThread(status),
        Ok(Outcome::ExitGroup(status)) => return After::ExitGroup(status),
        Err(e) => ctx.set_syscall_return(e.to_return()),
    }
    After::Return
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
