/* fuzz SEED CALLS PROCS: Cadence's system-call fuzzer (issue 39 item 1; `make test-fuzz`,
 * tools/test-fuzz.sh, docs/guide/tests.md).
 *
 * PROCS worker processes (slots) issue CALLS random system calls between them, drawn from the
 * numbers of the kernel's dispatch table. The list is not kept here: the build generates
 * fuzz-syscalls.h from docs/design/syscalls.md's table, which tests/tests/user.rs checks against
 * the kernel's own (`syscall_table_doc_matches_the_dispatch_table`). Each number gets its
 * arguments from typed generators (the SIG table below: fds open / closed / huge / negative;
 * pointers valid / NULL / unmapped / read-only / kernel / non-canonical / misaligned /
 * straddling the end of a mapping followed by a PROT_NONE page; lengths 0 / small / page /
 * huge / negative; flags of random bits; pids self / child / dead / 0 / -1 / huge; signals,
 * every catchable one with a handler installed). A number without a typed entry is fuzzed with
 * random words and named on the `fuzz: table:` line (`untyped=`), which the scenario test
 * requires to be 0: a new system call cannot drift past the fuzzer silently.
 *
 * What is kept out, because it ends or wedges the fuzzer without telling anything about the
 * kernel: exit and exit_group (only the churn children exit, deliberately); kill / tkill /
 * sigqueue of pid -1, 0 or a process group with a signal that ends or stops (pid -1: signal 0
 * only; the parent's pid is never generated); rt_sigaction's new action for SIGALRM (the
 * timer that interrupts blocking calls) and ARCH_SET_FS with another base than the current
 * one; mmap / munmap / mprotect / madvise / mlock / mbind / brk addresses outside the
 * worker's scratch region (brk never below the current break); execve of anything but
 * /bin/true (or bad names and pointers); clone with CLONE_VM, CLONE_THREAD, CLONE_SIGHAND,
 * CLONE_VFORK, CLONE_SETTLS or CLONE_PARENT (threads and vfork are made deliberately, below);
 * paths outside the worker's scratch directory for the calls that change the file system.
 * Blocking calls run with a 5 ms one-shot ITIMER_REAL (SIGALRM unblocked first) so they end
 * in EINTR; a worker that makes no progress for STALL_S seconds anyway (a FUTEX_LOCK_PI
 * restarting after every signal, a SIGSTOP, a handler at a random address looping) is killed
 * with SIGKILL and replaced, counted as `stalled`; a worker ended by a signal is counted and
 * replaced (churn). Deliberate churn: fork children that make a few calls and exit, vfork +
 * execve /bin/true, threads (clone CLONE_VM|CLONE_THREAD) that make a few calls and exit.
 *
 * Determinism: worker (slot, generation) draws everything from xorshift64* seeded with
 * splitmix64(SEED, slot, generation), so one process's sequence of calls and argument choices
 * repeats for a seed (what other processes do meanwhile does not).
 *
 * errno_unexpected: a failing call's errno is checked against the errnos Linux's man page lists
 * for it (ALLOWED below, the calls covered); an errno outside the list is counted and printed as
 * `fuzz: unexpected: <call> <ERRNO> xN (first: slot S gen G call C)`. Calls not covered are
 * named on the `fuzz: table:` line (`unchecked=`).
 *
 * Output: `fuzz: seed=<n> calls=<n> procs=<n>` first; one `fuzz: worker <slot>: ...` line per
 * slot; then `fuzz: done seed=<n> calls=<n> procs=<n> errno_unexpected=<n> ...`. Exit status 0
 * when every slot finished its share. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <mqueue.h>
#ifndef IPC_64
#define IPC_64 0x0100
#endif
#include <sys/resource.h>
#include <sys/socket.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 32
#define STALL_S 10
#define NR_MAX 512
#define ERR_MAX 160
#define PG 4096UL

/* The dispatch table: FUZZ_SYSCALL(nr, name), generated from docs/design/syscalls.md. */
static const struct { int nr; const char *name; } table[] = {
#define FUZZ_SYSCALL(nr, name) {nr, #name},
#include "fuzz-syscalls.h"
#undef FUZZ_SYSCALL
};
#define NTABLE ((int)(sizeof table / sizeof table[0]))

/* ---- errno names ---- */
static const struct { int e; const char *n; } errnames[] = {
#define E(x) {x, #x},
    E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC) E(EBADF) E(ECHILD) E(EAGAIN) E(ENOMEM)
    E(EACCES) E(EFAULT) E(ENOTBLK) E(EBUSY) E(EEXIST) E(EXDEV) E(ENODEV) E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE)
    E(EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG) E(ENOSPC) E(ESPIPE) E(EROFS) E(EMLINK) E(EPIPE) E(EDOM) E(ERANGE)
    E(EDEADLK) E(ENAMETOOLONG) E(ENOLCK) E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(ENOMSG) E(EOVERFLOW) E(ELIBBAD)
    E(EAFNOSUPPORT) E(EPROTONOSUPPORT) E(EOPNOTSUPP) E(EDESTADDRREQ) E(EDQUOT) E(ETIMEDOUT) E(ECANCELED)
    E(EOWNERDEAD) E(ENOTRECOVERABLE) E(EUSERS) E(EHWPOISON) E(ENOTSOCK) E(EMSGSIZE) E(ENOTCONN) E(ENODATA) E(EIDRM) E(ETIME)
#undef E
};
static const char *ename(int e) {
    static char buf[24];
    for (size_t i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
        if (errnames[i].e == e) return errnames[i].n;
    snprintf(buf, sizeof buf, "errno%d", e);
    return buf;
}
static int errno_of(const char *n, size_t len) {
    for (size_t i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
        if (strlen(errnames[i].n) == len && memcmp(errnames[i].n, n, len) == 0) return errnames[i].e;
    return -1;
}

/* ---- argument signatures: one letter per argument ----
 * F fd; D dirfd (AT_FDCWD or an fd); P path in the scratch directory (calls that change the file
 * system); R path anywhere readable (/, /proc/self/stat, /bin/true, /dev/null, scratch ...);
 * B pointer; L length; N count (nfds, iovcnt); X flags (random bits); I integer; i small
 * integer (-2..40: which, resource, clock, option, policy); p pid; s signal; A address in the
 * scratch region; M length for A; T pointer to a timespec or timeval (short or random); V
 * pointer to an iovec array; S pointer to a sigset; O offset; U uid / gid; 0 zero; Y pointer
 * to an itimerspec / itimerval at the extremes (periods of 1 ns or 1 us, values of 1 ns, 0, the
 * largest, negative, out of range: issue 59's timer storms); C clock id (every static clock,
 * out of range, and the CPU-time clocks of self, a child, a dead pid, as Linux encodes them).
 * Flags after the letters: '!' blocking (arm the timer first). */
struct sig {
    int nr;
    const char *args;
    const char *allowed;
};
/* path_resolution(7): what any call taking a path may fail with, listed or not on its page. */
#define PATHERR "EACCES ENAMETOOLONG ENOENT ENOTDIR ELOOP"
#define FSERR "EACCES EBADF EFAULT ELOOP ENAMETOOLONG ENOENT ENOMEM ENOTDIR EINVAL"
#define OPENERR "EACCES EBUSY EDQUOT EEXIST EFAULT EFBIG EINTR EINVAL EISDIR ELOOP EMFILE ENAMETOOLONG ENFILE ENODEV ENOENT ENOMEM ENOSPC ENOTDIR ENXIO EOPNOTSUPP EOVERFLOW EPERM EROFS ETXTBSY EAGAIN EBADF"
#define READERR "EAGAIN EBADF EFAULT EINTR EINVAL EIO EISDIR"
#define WRITEERR "EAGAIN EBADF EDESTADDRREQ EDQUOT EFAULT EFBIG EINTR EINVAL EIO ENOSPC EPERM EPIPE"
#define IDERR "EAGAIN EINVAL EPERM"
#define SCHEDERR "EINVAL EPERM ESRCH EFAULT EBUSY E2BIG"
static const struct sig sigs[] = {
    {SYS_read, "FBL!", READERR},
    {SYS_write, "FBL!", WRITEERR},
    {SYS_open, "PXI", OPENERR},
    {SYS_close, "F", "EBADF EINTR EIO"},
    {SYS_stat, "RB", FSERR " EOVERFLOW"},
    {SYS_fstat, "FB", "EBADF EFAULT ENOMEM EOVERFLOW"},
    {SYS_lstat, "RB", FSERR " EOVERFLOW"},
    {SYS_poll, "BNI!", "EFAULT EINTR EINVAL ENOMEM"},
    {SYS_lseek, "FOi", "EBADF EINVAL ENXIO EOVERFLOW ESPIPE"},
    {SYS_mmap, "AMXXFO", "EACCES EAGAIN EBADF EEXIST EINVAL ENFILE ENODEV ENOMEM EOVERFLOW EPERM ETXTBSY"},
    {SYS_mprotect, "AMX", "EACCES EINVAL ENOMEM"},
    {SYS_munmap, "AM", "EINVAL ENOMEM"},
    {SYS_brk, "I", ""},
    {SYS_rt_sigaction, "sBBL", "EFAULT EINVAL"},
    {SYS_rt_sigprocmask, "iSBL", "EFAULT EINVAL"},
    {SYS_ioctl, "FIB", "EBADF EFAULT EINVAL ENOTTY EPERM EIO ENXIO"},
    {SYS_pread64, "FBLO!", READERR " ENXIO EOVERFLOW ESPIPE"},
    {SYS_pwrite64, "FBLO!", WRITEERR " ENXIO EOVERFLOW ESPIPE"},
    {SYS_readv, "FVN!", READERR " EOPNOTSUPP"},
    {SYS_writev, "FVN!", WRITEERR " EOPNOTSUPP"},
    {SYS_access, "Ri", FSERR " EIO EROFS ETXTBSY EPERM"},
    {SYS_pipe, "B", "EFAULT EINVAL EMFILE ENFILE"},
    {SYS_select, "NBBBT!", "EBADF EINTR EINVAL ENOMEM EFAULT"},
    {SYS_sched_yield, "", ""},
    {SYS_madvise, "AMi", "EACCES EAGAIN EBADF EFAULT EINVAL EIO ENOMEM EPERM EHWPOISON"},
    {SYS_dup, "F", "EBADF EMFILE"},
    {SYS_dup2, "FF", "EBADF EBUSY EINTR EINVAL EMFILE"},
    {SYS_pause, "!", "EINTR"},
    {SYS_nanosleep, "TB!", "EFAULT EINTR EINVAL"},
    {SYS_getitimer, "iB", "EFAULT EINVAL"},
    {SYS_alarm, "I", ""},
    {SYS_setitimer, "iYB", "EFAULT EINVAL"},
    {SYS_getpid, "", ""},
    {SYS_sendfile, "FFBL!", "EAGAIN EBADF EFAULT EINVAL EIO ENOMEM EOVERFLOW ESPIPE EINTR EPIPE"},
    {SYS_socketpair, "iiiB", "EAFNOSUPPORT EFAULT EMFILE ENFILE EOPNOTSUPP EPROTONOSUPPORT EINVAL"},
    {SYS_clone, "XABBI", "EAGAIN EBUSY EEXIST EINVAL ENOMEM ENOSPC EOPNOTSUPP EPERM EUSERS EFAULT EMFILE"},
    {SYS_fork, "", "EAGAIN ENOMEM"},
    {SYS_vfork, "", "EAGAIN ENOMEM"},
    {SYS_execve, "RBB", "E2BIG EACCES EAGAIN EFAULT EINVAL EIO EISDIR ELIBBAD ELOOP EMFILE ENAMETOOLONG ENFILE ENOENT ENOEXEC ENOMEM ENOTDIR EPERM ETXTBSY"},
    {SYS_exit, "", ""},
    {SYS_wait4, "pBXB!", "ECHILD EINTR EINVAL EFAULT"},
    {SYS_kill, "ps", "EINVAL EPERM ESRCH"},
    {SYS_uname, "B", "EFAULT"},
    {SYS_fcntl, "FiI", "EACCES EAGAIN EBADF EBUSY EDEADLK EFAULT EINTR EINVAL EMFILE ENOLCK ENOTDIR EPERM"},
    {SYS_fsync, "F", "EBADF EINTR EIO ENOSPC EROFS EINVAL EDQUOT"},
    {SYS_fdatasync, "F", "EBADF EINTR EIO ENOSPC EROFS EINVAL EDQUOT"},
    {SYS_truncate, "PO", "EACCES EFAULT EFBIG EINTR EINVAL EIO EISDIR ELOOP ENAMETOOLONG ENOENT ENOTDIR EPERM EROFS ETXTBSY"},
    {SYS_ftruncate, "FO", "EBADF EFBIG EINTR EINVAL EIO EISDIR EPERM EROFS ETXTBSY"},
    {SYS_getcwd, "BL", "EACCES EFAULT EINVAL ENAMETOOLONG ENOENT ERANGE ENOMEM"},
    {SYS_chdir, "P", FSERR " EIO"},
    {SYS_fchdir, "F", "EACCES EBADF ENOTDIR EIO"},
    {SYS_rename, "PP", FSERR " EBUSY EDQUOT EISDIR EMLINK ENOSPC ENOTEMPTY EEXIST EPERM EROFS EXDEV"},
    {SYS_mkdir, "PI", FSERR " EDQUOT EEXIST EMLINK ENOSPC EPERM EROFS"},
    {SYS_rmdir, "P", FSERR " EBUSY ENOTEMPTY EPERM EROFS"},
    {SYS_creat, "PI", OPENERR},
    {SYS_unlink, "P", FSERR " EBUSY EIO EISDIR EPERM EROFS"},
    {SYS_symlink, "PP", FSERR " EDQUOT EEXIST EIO ENOSPC EPERM EROFS"},
    {SYS_readlink, "RBL", FSERR " EIO"},
    {SYS_chmod, "PI", FSERR " EIO EPERM EROFS"},
    {SYS_fchmod, "FI", "EBADF EIO EPERM EROFS EINVAL"},
    {SYS_chown, "PUU", FSERR " EIO EPERM EROFS"},
    {SYS_fchown, "FUU", "EBADF EIO ENOENT EPERM EROFS EINVAL"},
    {SYS_lchown, "PUU", FSERR " EIO EPERM EROFS"},
    {SYS_umask, "I", ""},
    {SYS_gettimeofday, "BB", "EFAULT EINVAL"},
    {SYS_getrlimit, "iB", "EFAULT EINVAL"},
    {SYS_getrusage, "iB", "EFAULT EINVAL"},
    {SYS_sysinfo, "B", "EFAULT"},
    {SYS_times, "B", "EFAULT"},
    {SYS_getuid, "", ""},
    {SYS_getgid, "", ""},
    {SYS_setuid, "U", IDERR},
    {SYS_setgid, "U", IDERR},
    {SYS_geteuid, "", ""},
    {SYS_getegid, "", ""},
    {SYS_setpgid, "pp", "EACCES EINVAL EPERM ESRCH"},
    {SYS_getppid, "", ""},
    {SYS_getpgrp, "", ""},
    {SYS_setsid, "", "EPERM"},
    {SYS_setreuid, "UU", IDERR},
    {SYS_setregid, "UU", IDERR},
    {SYS_getgroups, "NB", "EFAULT EINVAL"},
    {SYS_setgroups, "NB", "EFAULT EINVAL ENOMEM EPERM"},
    {SYS_setresuid, "UUU", IDERR},
    {SYS_getresuid, "BBB", "EFAULT"},
    {SYS_setresgid, "UUU", IDERR},
    {SYS_getresgid, "BBB", "EFAULT"},
    {SYS_getpgid, "p", "ESRCH EPERM"},
    {SYS_setfsuid, "U", ""},
    {SYS_setfsgid, "U", ""},
    {SYS_getsid, "p", "ESRCH EPERM"},
    {SYS_rt_sigpending, "BL", "EFAULT EINVAL"},
    {SYS_rt_sigtimedwait, "SBTL!", "EAGAIN EINTR EINVAL EFAULT"},
    {SYS_rt_sigqueueinfo, "psB", "EAGAIN EINVAL EPERM ESRCH EFAULT"},
    {SYS_rt_sigsuspend, "SL!", "EFAULT EINTR EINVAL"},
    {SYS_sigaltstack, "BB", "EFAULT EINVAL ENOMEM EPERM"},
    {SYS_getpriority, "ip", "EINVAL ESRCH"},
    {SYS_setpriority, "ipI", "EACCES EINVAL EPERM ESRCH"},
    {SYS_sched_setparam, "pB", SCHEDERR},
    {SYS_sched_getparam, "pB", SCHEDERR},
    {SYS_sched_setscheduler, "piB", SCHEDERR},
    {SYS_sched_getscheduler, "p", SCHEDERR},
    {SYS_sched_get_priority_max, "i", "EINVAL"},
    {SYS_sched_get_priority_min, "i", "EINVAL"},
    {SYS_sched_rr_get_interval, "pB", "EFAULT EINVAL ESRCH"},
    {SYS_mlock, "AM", "EAGAIN EINVAL ENOMEM EPERM"},
    {SYS_munlock, "AM", "EAGAIN EINVAL ENOMEM EPERM"},
    {SYS_mlock2, "AMX", "EAGAIN EINVAL ENOMEM EPERM"},
    {SYS_mlockall, "X", "EINVAL ENOMEM EPERM"},
    {SYS_munlockall, "", ""},
    {SYS_prctl, "iIIII", "EACCES EBADF EBUSY EFAULT EINVAL ENXIO EOPNOTSUPP EPERM ERANGE ENODEV ESRCH ENOMEM"},
    {SYS_arch_prctl, "iB", "EFAULT EINVAL EPERM"},
    {SYS_setrlimit, "iB", "EFAULT EINVAL EPERM"},
    {SYS_sync, "", ""},
    {SYS_settimeofday, "TB", "EFAULT EINVAL EPERM"},
    {SYS_mount, "RPRXB", "EACCES EBUSY EFAULT EINVAL ELOOP EMFILE ENAMETOOLONG ENODEV ENOENT ENOMEM ENOTBLK ENOTDIR ENXIO EPERM EROFS"},
    {SYS_umount2, "PX", "EAGAIN EBUSY EFAULT EINVAL ENAMETOOLONG ENOENT ENOMEM EPERM " PATHERR},
    {SYS_gettid, "", ""},
    {SYS_tkill, "ps", "EAGAIN EINVAL EPERM ESRCH"},
    {SYS_time, "B", "EFAULT"},
    {SYS_futex, "BiITBI!", "EACCES EAGAIN EDEADLK EFAULT EINTR EINVAL ENFILE ENOMEM ENOSYS EPERM ESRCH ETIMEDOUT EOWNERDEAD ENOTRECOVERABLE"},
    {SYS_sched_setaffinity, "pLB", "EFAULT EINVAL EPERM ESRCH"},
    {SYS_sched_getaffinity, "pLB", "EFAULT EINVAL EPERM ESRCH"},
    {SYS_getdents64, "FBL", "EBADF EFAULT EINVAL ENOENT ENOTDIR"},
    {SYS_set_tid_address, "B", ""},
    {SYS_restart_syscall, "", "EINTR"},
    {SYS_timer_create, "CBB", "EAGAIN EINVAL ENOMEM EOPNOTSUPP EFAULT"},
    {SYS_timer_settime, "IXYB", "EFAULT EINVAL"},
    {SYS_timer_gettime, "IB", "EFAULT EINVAL"},
    {SYS_timer_getoverrun, "I", "EINVAL"},
    {SYS_timer_delete, "I", "EINVAL"},
    {SYS_clock_settime, "iT", "EFAULT EINVAL EPERM"},
    {SYS_clock_gettime, "CB", "EFAULT EINVAL EOVERFLOW"},
    {SYS_clock_getres, "CB", "EFAULT EINVAL EOVERFLOW"},
    {SYS_clock_nanosleep, "CXTB!", "EFAULT EINTR EINVAL EOPNOTSUPP"},
    {SYS_exit_group, "", ""},
    {SYS_tgkill, "pps", "EAGAIN EINVAL EPERM ESRCH"},
    {SYS_mbind, "AMiBLX", "EFAULT EINVAL EIO ENOMEM EPERM"},
    {SYS_set_mempolicy, "iBL", "EFAULT EINVAL ENOMEM"},
    {SYS_get_mempolicy, "BBLAX", "EFAULT EINVAL"},
    {SYS_waitid, "ipBXB!", "ECHILD EINTR EINVAL EFAULT EBADF EAGAIN"},
    {SYS_openat, "DPXI", OPENERR},
    {SYS_mkdirat, "DPI", FSERR " EDQUOT EEXIST EMLINK ENOSPC EPERM EROFS"},
    {SYS_newfstatat, "DRBX", FSERR " EOVERFLOW"},
    {SYS_unlinkat, "DPX", FSERR " EBUSY EIO EISDIR EPERM EROFS ENOTEMPTY"},
    {SYS_renameat, "DPDP", FSERR " EBUSY EDQUOT EISDIR EMLINK ENOSPC ENOTEMPTY EEXIST EPERM EROFS EXDEV"},
    {SYS_symlinkat, "PDP", FSERR " EDQUOT EEXIST EIO ENOSPC EPERM EROFS"},
    {SYS_readlinkat, "DRBL", FSERR " EIO"},
    {SYS_fchmodat, "DPIX", FSERR " EIO EPERM EROFS EOPNOTSUPP"},
    {SYS_faccessat, "DRi", FSERR " EIO EROFS ETXTBSY EPERM"},
    {SYS_pselect6, "NBBBTB!", "EBADF EINTR EINVAL ENOMEM EFAULT"},
    {SYS_ppoll, "BNTSL!", "EFAULT EINTR EINVAL ENOMEM"},
    {SYS_set_robust_list, "BL", "EINVAL"},
    {SYS_get_robust_list, "pBB", "EFAULT EPERM ESRCH"},
    {SYS_utimensat, "DRBX", FSERR " EPERM EROFS ESRCH"},
    {SYS_signalfd, "FSL", "EBADF EFAULT EINVAL EMFILE ENFILE ENODEV ENOMEM"},
    {SYS_timerfd_create, "CX", "EINVAL EMFILE ENFILE ENODEV ENOMEM EPERM"},
    {SYS_timerfd_settime, "FXYB", "EBADF EFAULT EINVAL ECANCELED"},
    {SYS_timerfd_gettime, "FB", "EBADF EFAULT EINVAL"},
    {SYS_signalfd4, "FSLX", "EBADF EFAULT EINVAL EMFILE ENFILE ENODEV ENOMEM"},
    {SYS_dup3, "FFX", "EBADF EBUSY EINTR EINVAL EMFILE"},
    {SYS_pipe2, "BX", "EFAULT EINVAL EMFILE ENFILE"},
    {SYS_rt_tgsigqueueinfo, "ppsB", "EAGAIN EINVAL EPERM ESRCH EFAULT"},
    {SYS_prlimit64, "piBB", "EFAULT EINVAL EPERM ESRCH"},
    {SYS_getcpu, "BBB", "EFAULT"},
    {SYS_sched_setattr, "pBX", SCHEDERR},
    {SYS_sched_getattr, "pBLX", SCHEDERR},
    {SYS_renameat2, "DPDPX", FSERR " EBUSY EDQUOT EISDIR EMLINK ENOSPC ENOTEMPTY EEXIST EPERM EROFS EXDEV"},
    {SYS_getrandom, "BLX!", "EAGAIN EFAULT EINTR EINVAL"},
    {SYS_statx, "DRXXB", FSERR},
    {SYS_rseq, "BLXI", "EBUSY EINVAL EFAULT EPERM ENOSYS"},
    /* pidfds: of the worker, its children or any pid g_pid draws (signals as kill's: one
     * process each); EAGAIN: a real-time signal with the caller's info to a full queue. */
    {SYS_pidfd_send_signal, "FsBX", "EBADF EINVAL EPERM ESRCH EFAULT EAGAIN"},
    {SYS_pidfd_open, "pX", "EINVAL EMFILE ENFILE ENODEV ENOMEM ESRCH"},
    {SYS_pidfd_getfd, "FIX", "EBADF EINVAL EMFILE ENFILE EPERM ESRCH"},
    {SYS_process_mrelease, "FX", "EBADF EINVAL ESRCH EINTR EAGAIN"},
    {SYS_faccessat2, "DRiX", FSERR " EIO EROFS ETXTBSY EPERM"},
    /* System V semaphores (ids: those the workers made, or random) and POSIX message queues
     * (names: /fuzzq0..3 and bad ones); the parent removes both at the end. EFAULT: the raw
     * calls take pointers the glibc pages do not list. */
    {SYS_semget, "IIX", "EACCES EEXIST EINVAL ENOENT ENOMEM ENOSPC"},
    {SYS_semop, "IBN!", "E2BIG EACCES EAGAIN EFAULT EFBIG EIDRM EINTR EINVAL ENOMEM ERANGE"},
    {SYS_semtimedop, "IBNT!", "E2BIG EACCES EAGAIN EFAULT EFBIG EIDRM EINTR EINVAL ENOMEM ERANGE"},
    {SYS_semctl, "IiiB", "EACCES EFAULT EIDRM EINVAL EPERM ERANGE"},
    {SYS_mq_open, "BXIB", "EACCES EEXIST EINVAL EMFILE ENAMETOOLONG ENFILE ENOENT ENOMEM ENOSPC EFAULT"},
    {SYS_mq_unlink, "B", "EACCES ENAMETOOLONG ENOENT EFAULT"},
    {SYS_mq_timedsend, "FBLIT!", "EAGAIN EBADF EINTR EINVAL EMSGSIZE ETIMEDOUT EFAULT"},
    {SYS_mq_timedreceive, "FBLBT!", "EAGAIN EBADF EINTR EINVAL EMSGSIZE ETIMEDOUT EFAULT"},
    {SYS_mq_notify, "FB", "EBADF EBUSY EINVAL ENOMEM EFAULT"},
    {SYS_mq_getsetattr, "FBB", "EBADF EINVAL EFAULT"},
    /* Native AIO: a context id is a random word (EINVAL, as a bad id), or a ring io_setup
     * mapped when the pointer it got held 0; EFAULT for the raw calls' pointers. */
    {SYS_io_setup, "IB", "EAGAIN EFAULT EINVAL ENOMEM"},
    {SYS_io_destroy, "I", "EFAULT EINVAL"},
    {SYS_io_getevents, "IIIBT!", "EFAULT EINTR EINVAL"},
    {SYS_io_submit, "INB", "EAGAIN EBADF EFAULT EINVAL EPERM"},
    {SYS_io_cancel, "IBB", "EAGAIN EFAULT EINVAL"},
    {SYS_io_pgetevents, "IIIBTB!", "EFAULT EINTR EINVAL"},
};
#define NSIGS ((int)(sizeof sigs / sizeof sigs[0]))

/* Calls never drawn at random (the churn below makes them deliberately). */
static int excluded(int nr) { return nr == SYS_exit || nr == SYS_exit_group || nr == SYS_rt_sigreturn; }
/* `fuzz SEED CALLS PROCS [only,these | -not,these]`: a subset of the calls, to narrow a finding
 * down ("churn" names the deliberate forks, vforks and threads). */
static unsigned char picked[NR_MAX];
static int churn_on = 1;

static const struct sig *sig_of(int nr) {
    for (int i = 0; i < NSIGS; i++)
        if (sigs[i].nr == nr) return &sigs[i];
    return NULL;
}
static const char *name_of(int nr) {
    for (int i = 0; i < NTABLE; i++)
        if (table[i].nr == nr) return table[i].name;
    return "?";
}

/* ---- shared state (MAP_SHARED anonymous, written by the workers) ---- */
struct slot {
    long budget, done, ok, failed, unexpected, gens, signaled, stalled, execs, exited, forks, threads;
    long ro_writes; /* calls after which the read-only page had changed */
    long progress;
    int nr; /* the call in flight (-1: churn or housekeeping) */
};
#define MAX_SEMIDS 4096
struct shared {
    struct slot slot[MAX_PROCS];
    int semids[MAX_SEMIDS]; /* every id semget returned (the parent removes them) */
    int nsemids;
    int unexpected[NR_MAX][ERR_MAX];
    struct { int slot, gen; long call; } first[NR_MAX][ERR_MAX];
};
static struct shared *sh;
static unsigned long allowed[NR_MAX][(ERR_MAX + 63) / 64];
static unsigned char checked[NR_MAX];

/* ---- the worker's state ---- */
static uint64_t rng;
static int slot_id, gen_id;
static long call_no;
static char scratch[64];
static char *buf;          /* 2 RW pages, then a PROT_NONE page, then a read-only page */
static char ro_copy[4096]; /* what the read-only page holds */
static int trace_me, trace_fd = -1; /* FUZZ_TRACE=slot:gen names this worker: its calls go to trace_fd */
static char *area;         /* scratch region for the memory calls, AREA_PAGES pages */
#define AREA_PAGES 64
static pid_t kids[16];
static int nkids;
static pid_t dead_pid = 999999;
static pid_t self_pid;
static unsigned long maps[8];
static unsigned long map_len[8];
static int nmaps;
static volatile sig_atomic_t sig_hits;
static int in_child; /* a churn child: no further forks */

static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static uint64_t r64(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dULL;
}
static unsigned rn(unsigned n) { return (unsigned)(r64() % n); }

static void on_signal(int s) { (void)s; sig_hits++; }
/* A fault's signal keeps its default action (the worker dies and is replaced): a handler that
 * returns re-runs the faulting instruction, forever, on Linux as here (a handler at a random
 * address, a jump to one, rt_sigreturn's restored RIP). */
static int synchronous(int s) { return s == SIGSEGV || s == SIGBUS || s == SIGILL || s == SIGFPE || s == SIGTRAP; }

static long raw(long nr, long a, long b, long c, long d, long e, long f) {
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    return r;
}

/* A 5 ms one-shot SIGALRM with SIGALRM unblocked: a blocking call ends in EINTR. */
static void arm(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    raw(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&s, 0, 8, 0, 0);
    struct itimerval it = {{0, 0}, {0, 5000}};
    raw(SYS_setitimer, ITIMER_REAL, (long)&it, 0, 0, 0, 0);
}

/* ---- generators ---- */
static long g_ptr(void) {
    switch (rn(12)) {
    case 0: return 0;
    case 1: return (long)(area - PG);                                  /* unmapped (guard hole) */
    case 2: return (long)(buf + 3 * PG + rn(PG));                      /* read-only page */
    case 3: return (long)(0xffff800000000000UL + (r64() & 0x7fffffffffffUL)); /* kernel */
    case 4: return (long)(0x0000800000000000UL + (r64() & 0xffffffffUL)); /* non-canonical */
    case 5: return (long)(buf + 1 + rn(7));                            /* misaligned */
    case 6: return (long)(buf + 2 * PG - 1 - rn(24));                  /* straddles into PROT_NONE */
    case 7: return -1;
    default: return (long)(buf + (rn(2 * PG) & ~7UL));                 /* valid */
    }
}
static long g_len(void) {
    switch (rn(9)) {
    case 0: return 0;
    case 1: case 2: return 1 + rn(64);
    case 3: return PG;
    case 4: return 2 * PG;
    case 5: return 1L << (32 + rn(30));
    case 6: return -1 - (long)rn(4096);
    case 7: return (long)r64();
    default: return rn(300);
    }
}
static long g_count(void) {
    switch (rn(6)) {
    case 0: return 0;
    case 1: return 1024 + rn(2);
    case 2: return -1;
    case 3: return 1L << (20 + rn(40));
    default: return 1 + rn(8);
    }
}
static long g_flags(void) {
    switch (rn(5)) {
    case 0: return 0;
    case 1: return 1L << rn(32);
    case 2: return (long)(r64() & 0xffffffff);
    case 3: return (long)r64();
    default: return (long)(r64() & r64() & 0xfffff);
    }
}
static long g_int(void) {
    switch (rn(6)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return (long)(int)r64();
    case 3: return (long)r64();
    default: return rn(64);
    }
}
static long g_small(void) { return rn(8) == 0 ? (long)(int)r64() : (long)rn(43) - 2; }
static long g_fd(void) {
    switch (rn(10)) {
    case 0: return -1;
    case 1: return -100 - (long)rn(2);
    case 2: return 1L << (10 + rn(21));
    case 3: return (long)(int)r64();
    default: return rn(24);
    }
}
static long g_pid(void) {
    switch (rn(9)) {
    case 0: return self_pid;
    case 1: case 2: return nkids ? kids[rn(nkids)] : self_pid;
    case 3: return dead_pid;
    case 4: return 0;
    case 5: return -1;
    case 6: return (1L << 22) + rn(1000);
    case 7: return (long)(int)r64();
    default: return raw(SYS_gettid, 0, 0, 0, 0, 0, 0);
    }
}
static long g_signal(void) {
    switch (rn(10)) {
    case 0: return 0;
    case 1: return 65 + rn(3);
    case 2: return -1;
    default: return 1 + rn(64);
    }
}
/* A pointer of g_ptr's as a path for a call that changes the file system: random bytes may
 * spell an absolute path or `..` (a file made in / or /tmp, outside the scratch tree that is
 * removed at the end), so such a string becomes a scratch name; an unreadable pointer stays. */
static long confine(long p) {
    unsigned long a = (unsigned long)p, lo = (unsigned long)buf, hi = lo + 4 * PG;
    if (a < lo || a >= hi || (a + 1 > lo + 2 * PG && a < lo + 3 * PG)) return p;
    const char *c = (const char *)a;
    size_t room = (a < lo + 2 * PG ? lo + 2 * PG : hi) - a; /* never read into PROT_NONE */
    size_t n = strnlen(c, room);
    if (n == room) return p; /* runs into the guard: EFAULT, as it is */
    if (c[0] == '/' || memmem(c, n, "..", 2)) return (long)"f2";
    return p;
}
/* Paths: the worker's scratch names (NAMES below), relative or absolute. */
static const char *names[] = {"f0", "f1", "f2", "d0", "d1", "l0", "d0/f0", "d0/d2", "d0/l1", "d1/f3"};
static char pathbuf[8][300];
static int npath;
static char longpath[5000];
static long g_path(int readable) {
    char *p = pathbuf[npath++ & 7];
    unsigned k = rn(readable ? 18 : 14);
    switch (k) {
    case 0: return readable ? g_ptr() : confine(g_ptr());
    case 1: return (long)"";
    case 2: return (long)longpath;
    case 3: snprintf(p, 300, "%s/nonexistent/x", scratch); return (long)p;
    case 4: snprintf(p, 300, "%s", scratch); return (long)p;
    case 5: case 6: case 7: snprintf(p, 300, "%s", names[rn(sizeof names / sizeof names[0])]); return (long)p;
    case 14: return (long)"/bin/true";
    case 15: return (long)"/proc/self/stat";
    case 16: return (long)"/";
    case 17: return (long)"/dev/zero";
    default: snprintf(p, 300, "%s/%s", scratch, names[rn(sizeof names / sizeof names[0])]); return (long)p;
    }
}
/* A timespec / timeval: well formed and short (under 2 ms), or anything g_ptr gives. */
static long g_time(void) {
    if (rn(3) == 0) return g_ptr();
    long *t = (long *)(buf + PG + 512 + 16 * rn(4));
    t[0] = rn(8) == 0 ? -1 : 0;
    t[1] = rn(8) == 0 ? 1000000000L + rn(10) : (long)rn(2000000);
    return (long)t;
}
/* An itimerspec or itimerval (both two {seconds, fraction} pairs: interval, then value) with
 * extreme times, mostly the shortest period there is. */
static long g_itimer(void) {
    if (rn(4) == 0) return g_ptr();
    static const long secs[] = {0, 0, 0, 0, 1, -1, 0x7fffffffffffffffL};
    static const long fracs[] = {1, 1, 1, 0, 999999, 999999999, 1000000000, -1, 2};
    long *t = (long *)(buf + PG + 512 + 64 + 32 * rn(2));
    for (int i = 0; i < 4; i += 2) {
        t[i] = secs[rn(sizeof secs / sizeof secs[0])];
        t[i + 1] = fracs[rn(sizeof fracs / sizeof fracs[0])];
    }
    return (long)t;
}
/* A clock id: the static ones (0..11), out of range, or a CPU-time clock as Linux encodes it
 * (~pid << 3 | type, type 0 PROF, 1 VIRT, 2 SCHED, 3 invalid; bit 2: a thread's). */
static long g_clock(void) {
    switch (rn(6)) {
    case 0: return (long)rn(16) - 2;
    case 1: return (long)(int)r64();
    case 2: case 3: {
        long pid = rn(3) == 0 ? 0 : g_pid();
        return (long)(int)((~(unsigned)pid << 3) | rn(8));
    }
    default: return rn(12);
    }
}
static long g_iov(void) {
    if (rn(3) == 0) return g_ptr();
    struct iovec *v = (struct iovec *)(buf + PG + 1024);
    for (int i = 0; i < 8; i++) {
        v[i].iov_base = (void *)g_ptr();
        v[i].iov_len = rn(2) ? (size_t)rn(512) : (size_t)g_len();
    }
    return (long)v;
}
/* A sigset: SIGALRM's bit stays clear in the buffers we fill (a blocked SIGALRM wedges the
 * timer that ends blocking calls). */
static long g_sigset(void) {
    if (rn(3) == 0) return g_ptr();
    uint64_t *s = (uint64_t *)(buf + PG + 2048);
    *s = r64() & ~(1ULL << (SIGALRM - 1));
    return (long)s;
}
static long g_off(void) {
    switch (rn(6)) {
    case 0: return 0;
    case 1: return -1 - (long)rn(10);
    case 2: return 1L << (20 + rn(43));
    case 3: return (long)r64();
    default: return rn(3 * PG);
    }
}
static long g_uid(void) {
    switch (rn(4)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1000;
    default: return (long)(int)r64();
    }
}
/* Memory-call addresses: inside the scratch region (aligned or not), or a kernel / NULL one. */
static long g_addr(void) {
    switch (rn(10)) {
    case 0: return 0;
    case 1: return (long)(0xffff800000000000UL + (r64() & 0x7fffffffff000UL));
    case 2: return (long)(area + rn(AREA_PAGES) * PG + 1 + rn(PG - 1));
    default: return (long)(area + rn(AREA_PAGES) * PG);
    }
}
/* A length for an address in the scratch region: never past its end unless so huge that
 * Linux refuses it whole (beyond TASK_SIZE: EINVAL / ENOMEM). */
static long g_mlen(long addr) {
    unsigned long end = (unsigned long)area + AREA_PAGES * PG;
    unsigned long room = (unsigned long)addr >= (unsigned long)area && (unsigned long)addr < end ? end - addr : 4 * PG;
    switch (rn(7)) {
    case 0: return 0;
    case 1: return (1L << 47) + (long)rn(1000) * PG;
    case 2: return -1 - (long)rn(2) * (long)PG;
    case 3: return room;
    case 4: return PG < room ? PG : room;
    default: return 1 + rn(room);
    }
}

/* A semaphore set id: one a worker made (perhaps removed since), or anything g_int gives. */
static long g_semid(void) {
    int n = __atomic_load_n(&sh->nsemids, __ATOMIC_RELAXED);
    if (n > MAX_SEMIDS) n = MAX_SEMIDS;
    return n && rn(4) ? sh->semids[rn(n)] : g_int();
}

/* ---- deliberate churn ---- */
static void reap(int block) {
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, block ? __WALL : (WNOHANG | __WALL));
        if (p <= 0) return;
        for (int i = 0; i < nkids; i++)
            if (kids[i] == p) {
                kids[i] = kids[--nkids];
                dead_pid = p;
                break;
            }
    }
}
static void add_kid(pid_t p) {
    if (nkids == 16) {
        kill(kids[0], SIGKILL);
        kids[0] = kids[--nkids];
    }
    kids[nkids++] = p;
}
static int thread_fn(void *arg) {
    (void)arg;
    for (int i = 0; i < 8; i++) raw(i & 1 ? SYS_gettid : SYS_sched_yield, 0, 0, 0, 0, 0, 0);
    raw(SYS_exit, 0, 0, 0, 0, 0, 0);
    return 0;
}
static char *tstack;
static volatile pid_t ttid;
static void one_call(void);
static void churn(void) {
    struct slot *s = &sh->slot[slot_id];
    switch (rn(4)) {
    case 0: { /* fork: the child makes a few random calls and exits */
        pid_t p = fork();
        if (p == 0) {
            in_child = 1;
            self_pid = getpid();
            nkids = 0;
            for (int i = 0; i < 5; i++) one_call();
            raw(SYS_exit_group, 0, 0, 0, 0, 0, 0);
        }
        if (p > 0) add_kid(p), __atomic_add_fetch(&s->forks, 1, __ATOMIC_RELAXED);
        break;
    }
    case 1: { /* vfork + execve /bin/true */
        pid_t p = vfork();
        if (p == 0) {
            char *argv[] = {"true", NULL};
            execve("/bin/true", argv, environ);
            _exit(127);
        }
        if (p > 0) add_kid(p), __atomic_add_fetch(&s->forks, 1, __ATOMIC_RELAXED);
        break;
    }
    case 2: { /* a thread that makes a few calls and exits; joined through its cleared tid */
        if (!tstack) tstack = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (tstack == MAP_FAILED) { tstack = NULL; break; }
        ttid = 1;
        int t = clone(thread_fn, tstack + 64 * 1024,
                      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID,
                      NULL, NULL, NULL, &ttid);
        if (t > 0) {
            __atomic_add_fetch(&s->threads, 1, __ATOMIC_RELAXED);
            for (int i = 0; i < 1000 && ttid != 0; i++) {
                struct timespec ts = {0, 1000000};
                raw(SYS_futex, (long)&ttid, FUTEX_WAIT, ttid, (long)&ts, 0, 0);
            }
            if (ttid != 0) raw(SYS_exit_group, 99, 0, 0, 0, 0, 0); /* a thread that never ended: a stall */
        }
        break;
    }
    case 3: { /* rt_sigreturn on a frame of random words, in a child: it dies or runs wild and is
               * killed (it may restore any RIP, RSP, mask or segment selector) */
        if (rn(4)) { reap(0); break; }
        pid_t p = fork();
        if (p == 0) {
            uint64_t *f = (uint64_t *)(buf + PG);
            for (int i = 0; i < 64; i++) f[i] = rn(2) ? r64() : (uint64_t)g_ptr();
            __asm__ volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2" : : "r"(f) : "memory");
        }
        if (p > 0) add_kid(p), __atomic_add_fetch(&s->forks, 1, __ATOMIC_RELAXED);
        break;
    }
    }
}

/* ---- one random call ---- */
static void count_result(int nr, long r) {
    struct slot *s = &sh->slot[slot_id];
    if (r >= 0 || r < -4095) {
        __atomic_add_fetch(&s->ok, 1, __ATOMIC_RELAXED);
        return;
    }
    int e = (int)-r;
    __atomic_add_fetch(&s->failed, 1, __ATOMIC_RELAXED);
    if (nr < NR_MAX && checked[nr] && (e >= ERR_MAX || !(allowed[nr][e / 64] >> (e % 64) & 1))) {
        __atomic_add_fetch(&s->unexpected, 1, __ATOMIC_RELAXED);
        int ei = e < ERR_MAX ? e : ERR_MAX - 1;
        if (__atomic_fetch_add(&sh->unexpected[nr][ei], 1, __ATOMIC_RELAXED) == 0) {
            sh->first[nr][ei].slot = slot_id;
            sh->first[nr][ei].gen = gen_id;
            sh->first[nr][ei].call = call_no;
        }
    }
}

static void one_call(void) {
    int nr;
    do nr = table[rn(NTABLE)].nr;
    while (excluded(nr) || !picked[nr] || (in_child && (nr == SYS_fork || nr == SYS_vfork || nr == SYS_clone || nr == SYS_execve)));
    const struct sig *sg = sig_of(nr);
    long a[6] = {0};
    int blocking = 0;
    if (sg) {
        const char *c = sg->args;
        for (int i = 0; *c; c++) {
            if (*c == '!') { blocking = 1; continue; }
            long v = 0;
            switch (*c) {
            case 'F': v = g_fd(); break;
            case 'D': v = rn(2) ? AT_FDCWD : g_fd(); break;
            case 'P': v = g_path(0); break;
            case 'R': v = g_path(1); break;
            case 'B': v = g_ptr(); break;
            case 'L': v = g_len(); break;
            case 'N': v = g_count(); break;
            case 'X': v = g_flags(); break;
            case 'I': v = g_int(); break;
            case 'i': v = g_small(); break;
            case 'p': v = g_pid(); break;
            case 's': v = g_signal(); break;
            case 'A': v = g_addr(); break;
            case 'M': v = g_mlen(a[i - 1]); break;
            case 'T': v = g_time(); break;
            case 'Y': v = g_itimer(); break;
            case 'C': v = g_clock(); break;
            case 'V': v = g_iov(); break;
            case 'S': v = g_sigset(); break;
            case 'O': v = g_off(); break;
            case 'U': v = g_uid(); break;
            default: v = 0;
            }
            a[i++] = v;
        }
    } else {
        for (int i = 0; i < 6; i++) a[i] = g_int();
    }
    /* The exclusions that keep the fuzzer alive (see the header). */
    switch (nr) {
    case SYS_rt_sigsuspend: case SYS_ppoll: { /* a mask read from our memory must leave SIGALRM open */
        int i = nr == SYS_rt_sigsuspend ? 0 : 3;
        unsigned long p = (unsigned long)a[i];
        if (p >= (unsigned long)buf && p + 8 <= (unsigned long)buf + 4 * PG && !(p + 8 > (unsigned long)buf + 2 * PG && p < (unsigned long)buf + 3 * PG) &&
            (*(uint64_t *)p & (1ULL << (SIGALRM - 1))))
            a[i] = g_sigset();
        break;
    }
    case SYS_kill: case SYS_rt_sigqueueinfo:
        if (a[0] == -1) a[1] = 0;
        else if (a[0] <= 0 && (a[1] == SIGKILL || a[1] == SIGSTOP)) a[1] = SIGURG;
        break;
    case SYS_rt_sigaction:
        if (a[0] == SIGALRM || synchronous((int)a[0])) a[1] = 0;
        if (rn(2) && a[1] != 0) { /* a well-formed action through glibc (its restorer) */
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            long h = rn(3);
            sa.sa_handler = h == 0 ? on_signal : h == 1 ? SIG_IGN : SIG_DFL;
            sa.sa_flags = (int)(r64() & (SA_NOCLDSTOP | SA_NOCLDWAIT | SA_NODEFER | SA_RESETHAND | SA_RESTART | SA_ONSTACK));
            sigfillset(&sa.sa_mask);
            if (rn(2)) sigemptyset(&sa.sa_mask);
            count_result(nr, sigaction((int)a[0], &sa, NULL) == 0 ? 0 : -errno);
            return;
        }
        break;
    case SYS_arch_prctl:
        if (a[0] == 0x1002 /* ARCH_SET_FS */) a[1] = (long)__builtin_thread_pointer();
        break;
    case SYS_brk: {
        long cur = raw(SYS_brk, 0, 0, 0, 0, 0, 0);
        long choice[] = {0, cur, cur + PG, cur + rn(1 << 20), (long)(0xffff800000000000UL), cur + 1};
        a[0] = choice[rn(6)];
        break;
    }
    case SYS_clone:
        a[0] &= ~(long)(CLONE_VM | CLONE_THREAD | CLONE_SIGHAND | CLONE_VFORK | CLONE_SETTLS | CLONE_PARENT);
        if (rn(2)) a[0] = (a[0] & ~0xffL) | SIGCHLD;
        a[1] = 0; /* the child runs on a copy of this stack */
        break;
    case SYS_execve: { /* a[0]: /bin/true, a scratch name, an unexecutable file or a bad pointer */
        if (rn(2)) { /* a well-formed argv */
            char **v = (char **)(buf + PG + 3072);
            v[0] = "true";
            v[1] = rn(2) ? (char *)g_ptr() : NULL;
            v[2] = NULL;
            a[1] = (long)v;
        }
        break;
    }
    case SYS_mount: {
        static const char *types[] = {"tmpfs", "ramfs", "proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "nosuchfs", ""};
        if (rn(4)) a[2] = (long)types[rn(10)];
        if (rn(2)) a[4] = 0;
        break;
    }
    case SYS_futex: {
        static const int ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 128, 129, 137, 256 + 9};
        if (rn(4)) a[1] = ops[rn(sizeof ops / sizeof ops[0])] | (rn(2) ? 128 : 0);
        if (rn(2) && (unsigned long)a[0] >= (unsigned long)buf && (unsigned long)a[0] < (unsigned long)buf + 2 * PG - 4)
            a[2] = *(int *)a[0];
        break;
    }
    case SYS_ioctl: {
        static const long cmds[] = {0x5401, 0x5402, 0x5403, 0x5404, 0x5413, 0x5414, 0x540E, 0x5422, 0x540F, 0x5410, 0x5429, 0x541B,
                                    0x80081272, 0x1260, 0x1268, 0x5421};
        if (rn(4)) a[1] = cmds[rn(sizeof cmds / sizeof cmds[0])];
        break;
    }
    case SYS_prctl: {
        static const long opts[] = {15, 16, 3, 4, 62, 1, 2, 36, 37, 38, 22, 8, 21, 24, 26, 39};
        if (rn(4)) a[0] = opts[rn(sizeof opts / sizeof opts[0])];
        if (a[0] == 15 || a[0] == 16) a[1] = g_ptr(); /* PR_SET_NAME / PR_GET_NAME */
        break;
    }
    case SYS_fcntl: {
        static const long cmds[] = {0, 1, 2, 3, 4, 5, 6, 7, 1030, 1024, 1025, 1031, 1032, 8, 9};
        if (rn(4)) a[1] = cmds[rn(sizeof cmds / sizeof cmds[0])];
        if (a[1] == 5 || a[1] == 6 || a[1] == 7) a[2] = g_ptr();
        break;
    }
    case SYS_sched_setscheduler: case SYS_sched_setattr: case SYS_sched_setparam:
        /* Another worker's pid never comes up; this one's own policy is reset every 64 calls. */
        break;
    case SYS_symlink: case SYS_symlinkat: /* a link never leads out of the scratch directory */
        if ((unsigned long)a[0] >= (unsigned long)buf && (unsigned long)a[0] < (unsigned long)buf + 4 * PG) a[0] = (long)"f1";
        break;
    case SYS_timer_create:
        if (rn(2)) a[2] = (long)(buf + PG + 3584); /* a timer id back in the buffer */
        if (rn(2)) { /* a well-formed sigevent: a signal (one with a handler, or none), or this thread's */
            struct sigevent *ev = (struct sigevent *)(buf + PG + 3072);
            memset(ev, 0, sizeof *ev);
            static const int notify[] = {SIGEV_SIGNAL, SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID};
            ev->sigev_notify = notify[rn(4)];
            ev->sigev_signo = rn(2) ? SIGRTMIN + (int)rn(8) : SIGUSR1;
            ev->_sigev_un._tid = (pid_t)raw(SYS_gettid, 0, 0, 0, 0, 0, 0);
            a[1] = (long)ev;
        }
        if (rn(2)) a[0] = rn(2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        break;
    case SYS_timer_settime: /* mostly the timers this worker made (ids from 0) */
        if (rn(2)) a[0] = rn(4);
        break;
    case SYS_semget: /* a private set, one of 8 keys, or a random key; nsems mostly small */
        a[0] = rn(3) == 0 ? IPC_PRIVATE : rn(4) ? 0x5a000 + (long)rn(8) : a[0];
        if (rn(4)) a[1] = rn(40);
        if (rn(2)) a[2] = (a[2] & ~0x1ffL) | (rn(2) ? IPC_CREAT : 0) | (rn(4) ? 0 : IPC_EXCL) | 0600;
        break;
    case SYS_semop: case SYS_semtimedop: case SYS_semctl:
        a[0] = g_semid();
        if (nr == SYS_semctl) {
            static const long cmds[] = {IPC_RMID, IPC_SET, IPC_STAT, IPC_INFO, SEM_STAT, SEM_INFO, SEM_STAT_ANY, GETPID, GETVAL, GETALL,
                                        GETNCNT, GETZCNT, SETVAL, SETALL};
            if (rn(4)) a[2] = cmds[rn(sizeof cmds / sizeof cmds[0])] | (rn(2) ? IPC_64 : 0);
            if (rn(3) == 0) a[1] = rn(4);
            if ((a[2] & 0xff) == SETVAL && rn(2)) a[3] = rn(40000);
        } else if (rn(2)) { /* a well-formed array of sembufs, IPC_NOWAIT or not */
            struct sembuf *b = (struct sembuf *)(buf + PG + 256);
            int n = 1 + rn(4);
            for (int i = 0; i < n; i++) {
                b[i].sem_num = (unsigned short)rn(4);
                b[i].sem_op = (short)(rn(3) - 1);
                b[i].sem_flg = (short)((rn(2) ? IPC_NOWAIT : 0) | (rn(3) ? 0 : SEM_UNDO));
            }
            a[1] = (long)b;
            a[2] = n;
        }
        break;
    case SYS_mq_open: case SYS_mq_unlink: {
        static const char *qn[] = {"/fuzzq0", "/fuzzq1", "/fuzzq2", "/fuzzq3", "fuzzq", "/", "/a/b", ""};
        a[0] = rn(6) == 0 ? (rn(2) ? g_ptr() : (long)longpath) : (long)qn[rn(8)];
        if (nr == SYS_mq_open) {
            if (rn(2)) a[1] = (rn(3) ? O_RDWR : (long)rn(3)) | (rn(2) ? O_CREAT : 0) | (rn(4) ? 0 : O_EXCL) | (rn(2) ? O_NONBLOCK : 0);
            if (rn(2)) a[2] = 0600;
            if (rn(2)) { /* an attr: sizes in and out of the limits */
                struct mq_attr *at = (struct mq_attr *)(buf + PG + 3840);
                memset(at, 0, sizeof *at);
                at->mq_maxmsg = rn(3) ? 1 + rn(10) : (long)g_len();
                at->mq_msgsize = rn(3) ? 1 + rn(8192) : (long)g_len();
                a[3] = (long)at;
            }
        }
        break;
    }
    case SYS_mq_timedsend: case SYS_mq_timedreceive:
        if (rn(2)) a[2] = rn(9000);
        if (nr == SYS_mq_timedsend && rn(2)) a[3] = rn(40000);
        break;
    default: break;
    }
    if (!in_child) sh->slot[slot_id].nr = nr;
    if (blocking) arm();
    if (trace_me) { /* FUZZ_TRACE=slot:gen: this worker's calls on the console, before each */
        char line[256];
        int n = snprintf(line, sizeof line, "fuzz-trace: %d:%d call %ld %s(%#lx, %#lx, %#lx, %#lx, %#lx, %#lx)\n", slot_id, gen_id, call_no, name_of(nr), a[0],
                         a[1], a[2], a[3], a[4], a[5]);
        raw(SYS_write, trace_fd, (long)line, n, 0, 0, 0);
    }
    long r = raw(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (trace_me) {
        char line[64];
        int n = snprintf(line, sizeof line, "fuzz-trace: = %ld\n", r);
        raw(SYS_write, trace_fd, (long)line, n, 0, 0, 0);
    }
    if ((nr == SYS_fork || nr == SYS_vfork || nr == SYS_clone) && r == 0) raw(SYS_exit_group, 0, 0, 0, 0, 0, 0);
    if ((nr == SYS_fork || nr == SYS_vfork || nr == SYS_clone) && r > 0) add_kid((pid_t)r);
    if (nr == SYS_mmap && r > 0 && !((unsigned long)r >= (unsigned long)area && (unsigned long)r < (unsigned long)area + AREA_PAGES * PG)) {
        if (nmaps == 8) {
            munmap((void *)maps[0], map_len[0]);
            maps[0] = maps[7];
            map_len[0] = map_len[7];
            nmaps--;
        }
        maps[nmaps] = (unsigned long)r;
        map_len[nmaps++] = (unsigned long)a[1];
    }
    if (nr == SYS_semget && r >= 0) {
        int k = __atomic_fetch_add(&sh->nsemids, 1, __ATOMIC_RELAXED);
        if (k < MAX_SEMIDS) sh->semids[k] = (int)r;
        else raw(SYS_semctl, r, 0, IPC_RMID, 0, 0, 0); /* the list is full: removed at once */
    }
    if (blocking) {
        struct itimerval it = {{0, 0}, {0, 0}};
        raw(SYS_setitimer, ITIMER_REAL, (long)&it, 0, 0, 0, 0);
    }
    count_result(nr, r);
    if ((nr == SYS_chdir || nr == SYS_fchdir) && r == 0) { /* the working directory stays in the scratch tree */
        char cwd[512];
        if (!getcwd(cwd, sizeof cwd) || strncmp(cwd, scratch, strlen(scratch)) != 0) {
            if (chdir(scratch) != 0) raw(SYS_exit_group, 3, 0, 0, 0, 0, 0);
        }
    }
    /* No call may write where the caller cannot: the read-only page is as it was made. */
    if (memcmp(buf + 3 * PG, ro_copy, PG) != 0) {
        struct slot *sl = &sh->slot[slot_id];
        if (__atomic_fetch_add(&sl->ro_writes, 1, __ATOMIC_RELAXED) == 0)
            printf("fuzz: slot %d gen %d call %ld: the read-only page changed after %s\n", slot_id, gen_id, call_no, name_of(nr)), fflush(stdout);
        memcpy(ro_copy, buf + 3 * PG, PG);
    }
}

/* The fds a worker starts with (and gets back every 256 calls): files in the scratch directory,
 * /dev/null, /dev/zero, a pipe, a socket pair, a timerfd, a signalfd (SIGUSR1, SIGUSR2), the
 * scratch directory itself. */
static void replenish(void) {
    int fds[2];
    if (open(scratch, O_RDONLY | O_DIRECTORY) < 0) { /* the scratch directory moved: make it again */
        mkdir(scratch, 0755);
    }
    char p[128];
    snprintf(p, sizeof p, "%s/f0", scratch);
    open(p, O_RDWR | O_CREAT, 0644);
    open("/dev/null", O_RDWR);
    open("/dev/zero", O_RDONLY);
    if (pipe(fds) == 0 && rn(2)) fcntl(fds[0], F_SETFL, O_NONBLOCK);
    socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
    raw(SYS_timerfd_create, CLOCK_MONOTONIC, 0, 0, 0, 0, 0);
    uint64_t usr = 1u << (SIGUSR1 - 1) | 1u << (SIGUSR2 - 1);
    raw(SYS_signalfd4, -1, (long)&usr, 8, 0, 0, 0);
}

static void worker(int slot, int gen, uint64_t seed) {
    struct slot *s = &sh->slot[slot];
    slot_id = slot;
    gen_id = gen;
    rng = splitmix(seed ^ splitmix((uint64_t)slot << 32 | (uint64_t)gen)) | 1;
    self_pid = getpid();
    setpgid(0, 0);
    const char *tr = getenv("FUZZ_TRACE");
    if (tr) {
        int ts = -1, tg = -1;
        if (sscanf(tr, "%d:%d", &ts, &tg) == 2 && ts == slot && tg == gen) {
            trace_me = 1;
            trace_fd = fcntl(1, F_DUPFD, 900); /* kept past the dup2s below, high */
        }
    }
    int nul = open("/dev/null", O_RDWR);
    dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
    if (nul > 2) close(nul);
    snprintf(scratch, sizeof scratch, "/tmp/fuzz/w%d", slot);
    mkdir(scratch, 0755);
    if (chdir(scratch) != 0) raw(SYS_exit_group, 3, 0, 0, 0, 0, 0);
    memset(longpath, 'a', sizeof longpath - 1);
    /* buf: 2 RW pages, a PROT_NONE page, a read-only page. area: the memory calls' region, a
     * hole on each side. */
    buf = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *region = mmap(NULL, (AREA_PAGES + 2) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED || region == MAP_FAILED) raw(SYS_exit_group, 3, 0, 0, 0, 0, 0);
    for (size_t i = 0; i < 2 * PG; i += 8) *(uint64_t *)(buf + i) = r64();
    for (size_t i = 0; i < PG; i += 8) *(uint64_t *)(ro_copy + i) = *(uint64_t *)(buf + 3 * PG + i) = r64();
    mprotect(buf + 2 * PG, PG, PROT_NONE);
    mprotect(buf + 3 * PG, PG, PROT_READ);
    munmap(region, PG);
    munmap(region + (AREA_PAGES + 1) * PG, PG);
    area = region + PG;
    mmap(area, AREA_PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    for (int i = 1; i < 65; i++)
        if (i != SIGKILL && i != SIGSTOP && !synchronous(i)) sigaction(i, &sa, NULL);
    replenish();
    while (__atomic_load_n(&s->done, __ATOMIC_RELAXED) < s->budget) {
        call_no = __atomic_add_fetch(&s->done, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->progress, 1, __ATOMIC_RELAXED);
        s->nr = -1;
        if (rn(64) == 0) {
            if (churn_on) churn();
        }
        else one_call();
        if ((call_no & 63) == 0) { /* housekeeping: back to SCHED_OTHER nice 0, children reaped */
            struct sched_param sp = {0};
            sched_setscheduler(0, SCHED_OTHER, &sp);
            setpriority(PRIO_PROCESS, 0, 0);
            reap(0);
        }
        if ((call_no & 255) == 0) { /* the fds back, and the scratch directory as cwd (chdir d0 repeated nests deep) */
            replenish();
            if (chdir(scratch) != 0) mkdir(scratch, 0755);
        }
    }
    for (int i = 0; i < nkids; i++) kill(kids[i], SIGKILL);
    /* Every child reaped, under a timer (a child's SIGCHLD may have been ignored: ECHILD). */
    struct itimerval it = {{0, 100000}, {0, 100000}};
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGALRM);
    sigprocmask(SIG_UNBLOCK, &m, NULL);
    setitimer(ITIMER_REAL, &it, NULL);
    for (int tries = 0; tries < 100 && nkids; tries++) {
        for (int i = 0; i < nkids; i++) kill(kids[i], SIGKILL);
        reap(1);
        if (errno == ECHILD) break;
    }
    raw(SYS_exit_group, 0, 0, 0, 0, 0, 0);
}

/* ---- the parent ---- */
/* Removes NAME (relative to the current directory) and everything under it, unmounting first;
 * chdir-based, so a deep tree needs no long paths. */
static void rm_tree(const char *name, int depth) {
    struct stat st;
    umount2(name, MNT_DETACH);
    if (lstat(name, &st) != 0) return;
    if (!S_ISDIR(st.st_mode) || depth > 10000) {
        unlink(name);
        return;
    }
    if (chdir(name) == 0) {
        DIR *d = opendir(".");
        char names[64][256];
        int n;
        do { /* a batch at a time: the directory changes under readdir */
            n = 0;
            struct dirent *e;
            if (d) rewinddir(d);
            while (d && n < 64 && (e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) snprintf(names[n++], 256, "%s", e->d_name);
            for (int i = 0; i < n; i++) rm_tree(names[i], depth + 1);
        } while (n == 64);
        if (d) closedir(d);
        if (chdir("..") != 0) return;
    }
    rmdir(name);
}

/* Writes a sysctl (retried: under failure injection the open itself may fail). */
static void set_sysctl(const char *path, const char *value) {
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(path, O_WRONLY);
        if (fd >= 0) {
            ssize_t n = write(fd, value, strlen(value));
            close(fd);
            if (n == (ssize_t)strlen(value)) return;
        }
    }
    fprintf(stderr, "fuzz: could not write %s to %s\n", value, path);
}

/* Kills every user process started after this one (a pid above this one's; a kernel task's
 * statm is all zeros) until none is left (at most ~10 s): the workers' children that outlived
 * them, whatever their process group, session or name (PR_SET_NAME) became. Nothing else runs
 * in the guest meanwhile (tools/test-fuzz.sh). The number that would not go. */
static int sweep(void) {
    int me = (int)getpid();
    int n = 0;
    for (int round = 0; round < 100; round++) {
        n = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            int pid = atoi(e->d_name);
            if (pid <= me) continue;
            char p[300];
            long size = 0;
            snprintf(p, sizeof p, "/proc/%d/statm", pid);
            FILE *f = fopen(p, "r");
            if (!f) continue;
            if (fscanf(f, "%ld", &size) == 1 && size > 0) {
                kill(pid, SIGKILL);
                n++;
            }
            fclose(f);
        }
        if (d) closedir(d);
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {}
        if (!n) break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return n;
}

static void parse_allowed(void) {
    for (int i = 0; i < NSIGS; i++) {
        int nr = sigs[i].nr;
        checked[nr] = 1;
        const char *c = sigs[i].allowed;
        if (strcmp(c, "-") == 0) { /* what comes back is a restored RAX, not a result */
            checked[nr] = 0;
            continue;
        }
        while (*c) {
            while (*c == ' ') c++;
            size_t n = strcspn(c, " ");
            if (!n) break;
            int e = errno_of(c, n);
            if (e < 0 || e >= ERR_MAX) {
                fprintf(stderr, "fuzz: unknown errno %.*s for %s\n", (int)n, c, name_of(nr));
                exit(2);
            }
            allowed[nr][e / 64] |= 1UL << (e % 64);
            c += n;
        }
        /* ENOSYS from a number in the dispatch table, a leaked ERESTART*, are never allowed. */
    }
}

/* A worker for slot i, generation gen: fork retried while it fails (failure injection makes
 * it fail: ENOMEM, EAGAIN), for up to ~10 s; -1 if it never succeeded (never a pid of -1 or 0
 * for the parent to signal). */
static pid_t spawn(int i, int gen, uint64_t seed) {
    for (int tries = 0; tries < 1000; tries++) {
        pid_t p = fork();
        if (p == 0) worker(i, gen, seed);
        if (p > 0) return p;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    printf("fuzz: slot %d gen %d: fork failed for 10 s (%s)\n", i, gen, strerror(errno));
    return -1;
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    long calls = argc > 2 ? atol(argv[2]) : 10000;
    int procs = argc > 3 ? atoi(argv[3]) : 4;
    if (procs < 1 || procs > MAX_PROCS || calls < 0) {
        fprintf(stderr, "usage: fuzz SEED CALLS PROCS (1..%d processes)\n", MAX_PROCS);
        return 2;
    }
    printf("fuzz: seed=%llu calls=%ld procs=%d\n", (unsigned long long)seed, calls, procs);
    const char *subset = argc > 4 ? argv[4] : NULL;
    int negate = subset && subset[0] == '-';
    for (int i = 0; i < NTABLE; i++) picked[table[i].nr] = !subset || negate;
    if (subset) {
        char list[1024];
        snprintf(list, sizeof list, "%s", subset + negate);
        churn_on = negate;
        for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
            int found = strcmp(t, "churn") == 0;
            if (found) churn_on = !negate;
            for (int i = 0; i < NTABLE; i++)
                if (strcmp(table[i].name, t) == 0) picked[table[i].nr] = !negate, found = 1;
            if (!found) {
                fprintf(stderr, "fuzz: no call %s in the table\n", t);
                return 2;
            }
        }
        printf("fuzz: subset %s\n", subset);
    }
    parse_allowed();
    /* The table's coverage. */
    int typed = 0, excl = 0, nunchecked = 0;
    char untyped[1024] = "", unchecked[1024] = "";
    for (int i = 0; i < NTABLE; i++) {
        int nr = table[i].nr;
        if (excluded(nr)) { excl++; continue; }
        if (sig_of(nr)) typed++;
        else snprintf(untyped + strlen(untyped), sizeof untyped - strlen(untyped), " %s", table[i].name);
        if (nr >= NR_MAX || !checked[nr]) {
            nunchecked++;
            snprintf(unchecked + strlen(unchecked), sizeof unchecked - strlen(unchecked), " %s", table[i].name);
        }
    }
    printf("fuzz: table: %d calls, %d typed, %d excluded, untyped=%d%s, unchecked=%d%s\n", NTABLE, typed, excl, NTABLE - typed - excl,
           untyped, nunchecked, unchecked);
    fflush(stdout);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("fuzz: mmap");
        return 1;
    }
    mkdir("/tmp/fuzz", 0755);
    /* The parent ignores what the workers may send to their groups and keeps SIGCHLD. */
    for (int i = 1; i < 65; i++)
        if (i != SIGKILL && i != SIGSTOP && i != SIGCHLD) signal(i, SIG_IGN);
    /* FUZZ_FAIL=percent: the kernel's failure injection (debug.fail_alloc) on for the run, set
     * here, after the shell has started this program (its own fork would fail too, and a shell
     * that cannot fork ends its script), and off again before the results. */
    const char *fail = getenv("FUZZ_FAIL");
    int failing = fail && atoi(fail) > 0;
    if (failing) {
        /* Every site but the page faults': a fault that fails is SIGBUS to whoever touched the
         * page, this program's parent or the shell included, which would end the run
         * (tests/tests/faults.rs covers the fault sites with children of its own). */
        set_sysctl("/proc/sys/debug/fail_alloc/sites", "task,kernel_stack,task_group,sched_core_cookie,tty,trace_buffer,fork_mm,exec_mm,mmap_vma,mmap_populate");
        set_sysctl("/proc/sys/debug/fail_alloc/times", "-1");
        set_sysctl("/proc/sys/debug/fail_alloc/verbose", "0");
        set_sysctl("/proc/sys/debug/fail_alloc/probability", fail);
    }
    pid_t pid[MAX_PROCS];
    long last[MAX_PROCS];
    struct timespec since[MAX_PROCS];
    for (int i = 0; i < procs; i++) {
        sh->slot[i].budget = calls / procs + (i < calls % procs);
        sh->slot[i].gens = 1;
    }
    for (int i = 0; i < procs; i++) {
        pid[i] = spawn(i, 0, seed);
        last[i] = -1;
        clock_gettime(CLOCK_MONOTONIC, &since[i]);
    }
    int live = procs;
    for (int i = 0; i < procs; i++)
        if (pid[i] < 0) {
            sh->slot[i].budget = 0;
            pid[i] = 0;
            live--;
        }
    while (live > 0) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG | WUNTRACED);
        if (p > 0) {
            int i;
            for (i = 0; i < procs && pid[i] != p; i++) {}
            if (i == procs) continue;
            struct slot *s = &sh->slot[i];
            if (WIFSTOPPED(st)) {
                kill(p, SIGCONT);
                continue;
            }
            kill(-p, SIGKILL); /* the worker's children (its process group) go with it */
            if (WIFSIGNALED(st)) s->signaled++;
            else if (WEXITSTATUS(st) == 0 && s->done < s->budget) s->execs++; /* execve'd /bin/true */
            else if (WEXITSTATUS(st) != 0) s->exited++;
            if (s->done < s->budget) { /* churn: a new generation takes over the slot */
                int gen = (int)s->gens++;
                pid[i] = spawn(i, gen, seed);
                if (pid[i] < 0) { /* fork kept failing: the slot's share ends here */
                    s->budget = s->done;
                    pid[i] = 0;
                    live--;
                    continue;
                }
                last[i] = -1;
                clock_gettime(CLOCK_MONOTONIC, &since[i]);
            } else {
                pid[i] = 0;
                live--;
            }
            continue;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (int i = 0; i < procs; i++) {
            if (pid[i] <= 0) continue;
            long pr = __atomic_load_n(&sh->slot[i].progress, __ATOMIC_RELAXED);
            if (pr != last[i]) {
                last[i] = pr;
                since[i] = now;
            } else if (now.tv_sec - since[i].tv_sec >= STALL_S) {
                sh->slot[i].stalled++;
                int nr = sh->slot[i].nr;
                char path[64], stat[512] = "", wchan[64] = "";
                snprintf(path, sizeof path, "/proc/%d/stat", (int)pid[i]);
                FILE *f = fopen(path, "r");
                if (f) {
                    if (!fgets(stat, sizeof stat, f)) stat[0] = 0;
                    fclose(f);
                }
                snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid[i]);
                if ((f = fopen(path, "r"))) {
                    if (!fgets(wchan, sizeof wchan, f)) wchan[0] = 0;
                    fclose(f);
                }
                stat[strcspn(stat, "\n")] = 0;
                char sigs[256] = "";
                snprintf(path, sizeof path, "/proc/%d/status", (int)pid[i]);
                if ((f = fopen(path, "r"))) {
                    char l[128];
                    while (fgets(l, sizeof l, f))
                        if (!strncmp(l, "SigPnd", 6) || !strncmp(l, "ShdPnd", 6) || !strncmp(l, "SigBlk", 6) || !strncmp(l, "SigIgn", 6)) {
                            l[strcspn(l, "\n")] = ' ';
                            strncat(sigs, l, sizeof sigs - strlen(sigs) - 1);
                        }
                    fclose(f);
                }
                printf("fuzz: slot %d gen %ld stalled at call %ld (%s): SIGKILL; wchan %s; %s; stat %s\n", i, sh->slot[i].gens - 1, sh->slot[i].done,
                       nr < 0 ? "churn" : name_of(nr), wchan[0] ? wchan : "-", sigs, stat);
                if (getenv("FUZZ_TRACE")) { /* replaying: the stalled worker's mappings too */
                    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid[i]);
                    if ((f = fopen(path, "r"))) {
                        char l[256];
                        while (fgets(l, sizeof l, f)) printf("fuzz: maps: %s", l);
                        fclose(f);
                    }
                }
                fflush(stdout);
                kill(pid[i], SIGKILL);
                since[i] = now;
            }
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Children of workers that ended (killed, or replaced after a stall) are init's now and may
     * have left their worker's process group (setpgid, setsid): SIGKILL for every process of
     * this program but this one, until none is left (init reaps them). */
    int left = sweep();
    if (failing) {
        set_sysctl("/proc/sys/debug/fail_alloc/probability", "0");
        set_sysctl("/proc/sys/debug/fail_alloc/sites", "");
        char injected[32] = "?";
        FILE *f = fopen("/proc/sys/debug/fail_alloc/injected", "r");
        if (f) {
            if (!fgets(injected, sizeof injected, f)) injected[0] = 0;
            fclose(f);
        }
        injected[strcspn(injected, "\n")] = 0;
        printf("fuzz: failure injection %s%%: %s allocations failed\n", fail, injected);
    }
    /* Everything reaped; the semaphore sets and queues the workers made go, */
    for (int i = 0; i < sh->nsemids && i < MAX_SEMIDS; i++) semctl(sh->semids[i], 0, IPC_RMID);
    /* and any set whose id no worker recorded (one killed between semget and the record), found
     * by index: a set outlives its creator, so one left would be this program's, not a leak. */
    struct seminfo si;
    int max_idx = semctl(0, 0, SEM_INFO, (void *)&si), unrecorded = 0;
    for (int i = 0; i <= max_idx; i++) {
        struct semid_ds ds;
        int id = semctl(i, 0, SEM_STAT_ANY, (void *)&ds);
        if (id >= 0 && semctl(id, 0, IPC_RMID) == 0) unrecorded++;
    }
    printf("fuzz: semaphore sets: %d recorded, %d found by index\n", sh->nsemids, unrecorded);
    for (int i = 0; i < 4; i++) {
        char q[16];
        snprintf(q, sizeof q, "/fuzzq%d", i);
        mq_unlink(q);
    }
    /* and the scratch tree (and anything mounted in it). */
    for (int tries = 0; tries < 3; tries++)
        if (chdir("/tmp") == 0) rm_tree("fuzz", 0);
    long unexpected = 0, total = 0, ro_writes = 0;
    for (int i = 0; i < procs; i++) {
        struct slot *s = &sh->slot[i];
        printf("fuzz: worker %d: calls=%ld ok=%ld failed=%ld unexpected=%ld generations=%ld killed_by_signal=%ld stalled=%ld execs=%ld "
               "exited=%ld forks=%ld threads=%ld\n",
               i, s->done, s->ok, s->failed, s->unexpected, s->gens, s->signaled, s->stalled, s->execs, s->exited, s->forks, s->threads);
        unexpected += s->unexpected;
        total += s->done;
        ro_writes += s->ro_writes;
    }
    for (int nr = 0; nr < NR_MAX; nr++)
        for (int e = 0; e < ERR_MAX; e++)
            if (sh->unexpected[nr][e])
                printf("fuzz: unexpected: %s %s x%d (first: slot %d gen %d call %ld)\n", name_of(nr), ename(e), sh->unexpected[nr][e],
                       sh->first[nr][e].slot, sh->first[nr][e].gen, sh->first[nr][e].call);
    struct stat st;
    printf("fuzz: done seed=%llu calls=%ld procs=%d errno_unexpected=%ld ro_writes=%ld scratch_left=%d unkillable=%d\n", (unsigned long long)seed,
           total, procs, unexpected, ro_writes, stat("/tmp/fuzz", &st) == 0, left);
    return 0;
}
