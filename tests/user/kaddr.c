/* Kernel memory is unreachable from user space (issue 39 item 2). Every pointer-taking
 * system call of the dispatch table (docs/design/syscalls.md) gets, in each pointer argument,
 * addresses the caller cannot access: the kernel's direct map (0xffff800000000000), the
 * kernel's text (0xffffffff80000000), the first non-canonical address (0x0000800000000000),
 * the guard page below TASK_SIZE (0x00007ffffffff000, never mappable) and an address whose
 * range wraps past 2^64 (0xfffffffffffffff8); the other arguments are valid, so the errno is
 * the one the pointer gives (or the one Linux checks first). Then writes into memory the
 * caller may read but not write (a PROT_READ page, a read-only MAP_SHARED file mapping, the
 * program's text, a copy-on-write page made read-only before a fork) through read(), pipe(),
 * clock_gettime(), getresuid() and others must be EFAULT and leave the bytes unchanged.
 * io_setup's context pointer and io_getevents' events (one read waiting in the ring) too.
 * Prints what each call returned, never addresses; the output must equal Linux's
 * (tests/fixtures/kaddr.linux-6.1.txt, recorded with
 * `../shared/peer/run.sh --linux 6.1 --cpu max,vendor=GenuineIntel,la57=off --file target/user/kaddr
 * 'cd /tmp && /kaddr'`: without LA57 Linux's user space ends at 0x00007ffffffff000 as
 * Cadence's does; with it, 0x0000800000000000 is a user address). */
#define _GNU_SOURCE
#define CONFORM_WIDTH "40"
#include "conform.h"
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char *name;
    unsigned long addr;
} BAD[] = {
    {"kmap", 0xffff800000000000UL},
    {"ktext", 0xffffffff80000000UL},
    {"noncanon", 0x0000800000000000UL},
    {"guard", 0x00007ffffffff000UL},
    {"wrap", 0xfffffffffffffff8UL},
};

static char label[64];
#define S(fmt, ...) (snprintf(label, sizeof label, fmt, __VA_ARGS__), label)
#define SYS(name, ...) CALL(S("%s %s", name, bn), syscall(__VA_ARGS__))

static int f, d, p[2], tfd, pidfd;
static timer_t timer;
static aio_context_t actx;

/* One completed read of `f` waiting in `actx`'s ring. */
static void aio_pend(void) {
    static char into[16];
    struct iocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_fildes = f;
    cb.aio_buf = (uintptr_t)into;
    cb.aio_nbytes = sizeof into;
    struct iocb *cbp = &cb;
    syscall(SYS_io_submit, actx, 1, &cbp);
}

/* Reads whatever events `actx` holds. */
static void aio_drain(void) {
    struct io_event ev[8];
    struct timespec t = {0, 0};
    syscall(SYS_io_getevents, actx, 0, 8, ev, &t);
}

/* clone(CLONE_PIDFD) storing the pidfd at `at`: a child made anyway exits at once. */
static long clone_pidfd(long at) {
    long r = syscall(SYS_clone, 0x1000 /* CLONE_PIDFD */ | SIGCHLD, 0, at, 0, 0);
    if (r == 0)
        _exit(0);
    if (r > 0)
        waitpid(r, 0, 0);
    return r;
}

/* A child that has exited (a zombie to wait for). */
static pid_t zombie(void) {
    pid_t c = fork();
    if (c == 0)
        _exit(7);
    usleep(20000);
    return c;
}

static void each_pointer(const char *bn, unsigned long b) {
    long B = (long)b;
    struct stat st;
    struct timespec ts0 = {0, 0};
    struct timeval tv0 = {0, 0};
    struct iovec iov = {(void *)B, 16};
    uid_t u;
    long buf[64];
    char sbuf[256];
    struct pollfd pfd = {p[0], POLLIN, 0};
    struct itimerval itv = {{0, 0}, {0, 0}};
    struct itimerspec its = {{0, 0}, {0, 0}};
    struct rlimit rl;
    sigset_t set;
    sigemptyset(&set);

    SYS("read", SYS_read, p[0], B, 16);
    SYS("write", SYS_write, f, B, 16);
    SYS("open", SYS_open, B, O_RDONLY);
    SYS("stat.path", SYS_stat, B, &st);
    SYS("stat.buf", SYS_stat, "/tmp", B);
    SYS("fstat", SYS_fstat, f, B);
    SYS("lstat.path", SYS_lstat, B, &st);
    SYS("lstat.buf", SYS_lstat, "/tmp", B);
    SYS("poll", SYS_poll, B, 1, 0);
    SYS("mmap.fixed", SYS_mmap, B & ~4095L, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    SYS("mprotect", SYS_mprotect, B, 4096, PROT_READ);
    SYS("munmap", SYS_munmap, B, 4096);
    CALL(S("brk %s moves nothing", bn), syscall(SYS_brk, B) == syscall(SYS_brk, 0) ? 0 : -1);
    SYS("rt_sigaction.act", SYS_rt_sigaction, SIGUSR1, B, 0, 8);
    SYS("rt_sigaction.old", SYS_rt_sigaction, SIGUSR1, 0, B, 8);
    SYS("rt_sigprocmask.set", SYS_rt_sigprocmask, SIG_BLOCK, B, 0, 8);
    SYS("rt_sigprocmask.old", SYS_rt_sigprocmask, SIG_BLOCK, 0, B, 8);
    SYS("ioctl.FIONREAD", SYS_ioctl, p[0], FIONREAD, B);
    SYS("pread64", SYS_pread64, f, B, 16, 0);
    SYS("pwrite64", SYS_pwrite64, f, B, 16, 0);
    SYS("readv.iov", SYS_readv, f, B, 1);
    SYS("readv.base", SYS_readv, p[0], &iov, 1);
    SYS("writev.iov", SYS_writev, f, B, 1);
    SYS("writev.base", SYS_writev, f, &iov, 1);
    SYS("access", SYS_access, B, F_OK);
    SYS("pipe", SYS_pipe, B);
    SYS("select.set", SYS_select, 1, B, 0, 0, &tv0);
    SYS("select.timeout", SYS_select, 1, 0, 0, 0, B);
    SYS("madvise", SYS_madvise, B, 4096, MADV_NORMAL);
    SYS("nanosleep", SYS_nanosleep, B, 0);
    SYS("getitimer", SYS_getitimer, ITIMER_REAL, B);
    SYS("setitimer.new", SYS_setitimer, ITIMER_REAL, B, 0);
    SYS("setitimer.old", SYS_setitimer, ITIMER_REAL, &itv, B);
    SYS("sendfile.offset", SYS_sendfile, p[1], f, B, 16);
    SYS("socketpair", SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, B);
    char *argv[] = {"x", 0};
    SYS("execve.path", SYS_execve, B, argv, 0);
    SYS("execve.argv", SYS_execve, "/nonexistent", B, 0);
    SYS("execve.envp", SYS_execve, "/nonexistent", argv, B);
    SYS("wait4.status", SYS_wait4, zombie(), B, 0, 0);
    SYS("wait4.rusage", SYS_wait4, zombie(), 0, 0, B);
    SYS("uname", SYS_uname, B);
    /* fcntl's F_GETLK / F_SETLK (record locks) are not implemented: EINVAL before any copy. */
    SYS("truncate", SYS_truncate, B, 0);
    SYS("getcwd", SYS_getcwd, B, 256);
    SYS("chdir", SYS_chdir, B);
    SYS("rename.old", SYS_rename, B, "/tmp/kaddr.x");
    SYS("rename.new", SYS_rename, "/tmp/kaddr.f", B);
    SYS("mkdir", SYS_mkdir, B, 0755);
    SYS("rmdir", SYS_rmdir, B);
    SYS("creat", SYS_creat, B, 0644);
    SYS("unlink", SYS_unlink, B);
    SYS("symlink.target", SYS_symlink, B, "/tmp/kaddr.y");
    SYS("symlink.path", SYS_symlink, "/tmp/kaddr.f", B);
    SYS("readlink.path", SYS_readlink, B, sbuf, 64);
    SYS("readlink.buf", SYS_readlink, "/tmp/kaddr.l", B, 64);
    SYS("chmod", SYS_chmod, B, 0644);
    SYS("chown", SYS_chown, B, -1, -1);
    SYS("lchown", SYS_lchown, B, -1, -1);
    SYS("gettimeofday", SYS_gettimeofday, B, 0);
    SYS("getrlimit", SYS_getrlimit, RLIMIT_NOFILE, B);
    SYS("sysinfo", SYS_sysinfo, B);
    SYS("setgroups", SYS_setgroups, 1, B);
    SYS("getresuid.r", SYS_getresuid, B, &u, &u);
    SYS("getresuid.e", SYS_getresuid, &u, B, &u);
    SYS("getresuid.s", SYS_getresuid, &u, &u, B);
    SYS("getresgid.r", SYS_getresgid, B, &u, &u);
    SYS("getresgid.s", SYS_getresgid, &u, &u, B);
    SYS("rt_sigpending", SYS_rt_sigpending, B, 8);
    SYS("rt_sigtimedwait.set", SYS_rt_sigtimedwait, B, 0, &ts0, 8);
    SYS("rt_sigtimedwait.timeout", SYS_rt_sigtimedwait, &set, 0, B, 8);
    SYS("rt_sigqueueinfo", SYS_rt_sigqueueinfo, getpid(), SIGUSR1, B);
    SYS("rt_sigsuspend", SYS_rt_sigsuspend, B, 8);
    SYS("sigaltstack.new", SYS_sigaltstack, B, 0);
    SYS("sigaltstack.old", SYS_sigaltstack, 0, B);
    SYS("sched_setparam", SYS_sched_setparam, 0, B);
    SYS("sched_getparam", SYS_sched_getparam, 0, B);
    SYS("sched_setscheduler", SYS_sched_setscheduler, 0, SCHED_OTHER, B);
    SYS("sched_rr_get_interval", SYS_sched_rr_get_interval, 0, B);
    SYS("mlock", SYS_mlock, B, 4096);
    SYS("munlock", SYS_munlock, B, 4096);
    SYS("prctl.PR_SET_NAME", SYS_prctl, PR_SET_NAME, B, 0, 0, 0);
    SYS("prctl.PR_GET_NAME", SYS_prctl, PR_GET_NAME, B, 0, 0, 0);
    SYS("arch_prctl.ARCH_GET_FS", SYS_arch_prctl, 0x1003, B);
    SYS("setrlimit", SYS_setrlimit, RLIMIT_NOFILE, B);
    SYS("settimeofday", SYS_settimeofday, B, 0);
    SYS("umount2", SYS_umount2, B, 0);
    SYS("time", SYS_time, B);
    SYS("futex.WAKE", SYS_futex, B, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
    SYS("futex.WAIT", SYS_futex, B, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0);
    SYS("sched_setaffinity", SYS_sched_setaffinity, 0, 128, B);
    SYS("sched_getaffinity", SYS_sched_getaffinity, 0, 128, B);
    struct iocb cb, *cbp = &cb, *bcbp = (struct iocb *)B;
    memset(&cb, 0, sizeof cb);
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_fildes = f;
    cb.aio_buf = B;
    cb.aio_nbytes = 16;
    struct io_event ev[4];
    SYS("io_setup", SYS_io_setup, 1, B);
    SYS("io_destroy", SYS_io_destroy, B);
    SYS("io_submit.ctx", SYS_io_submit, B, 1, &cbp);
    SYS("io_submit.iocbpp", SYS_io_submit, actx, 1, B);
    SYS("io_submit.iocb", SYS_io_submit, actx, 1, &bcbp);
    SYS("io_submit.buf", SYS_io_submit, actx, 1, &cbp);
    cb.aio_lio_opcode = IOCB_CMD_PREADV;
    cb.aio_nbytes = 1;
    SYS("io_submit.iovec", SYS_io_submit, actx, 1, &cbp);
    cb.aio_buf = (uintptr_t)&iov;
    SYS("io_submit.iov_base", SYS_io_submit, actx, 1, &cbp);
    aio_pend();
    SYS("io_getevents.events", SYS_io_getevents, actx, 1, 1, B, &ts0);
    SYS("io_getevents.timeout", SYS_io_getevents, actx, 1, 1, ev, B);
    SYS("io_getevents.ctx", SYS_io_getevents, B, 0, 1, ev, &ts0);
    SYS("io_pgetevents.events", SYS_io_pgetevents, actx, 1, 1, B, &ts0, 0);
    SYS("io_pgetevents.timeout", SYS_io_pgetevents, actx, 0, 1, ev, B, 0);
    SYS("io_pgetevents.usig", SYS_io_pgetevents, actx, 0, 1, ev, &ts0, B);
    SYS("io_cancel.iocb", SYS_io_cancel, actx, B, ev);
    CALL(S("io_getevents %s: the event stayed", bn), syscall(SYS_io_getevents, actx, 1, 4, ev, &ts0) == 1 ? 0 : -1);
    aio_drain();
    SYS("getdents64", SYS_getdents64, d, B, 4096);
    SYS("timer_create.event", SYS_timer_create, CLOCK_MONOTONIC, B, buf);
    SYS("timer_create.id", SYS_timer_create, CLOCK_MONOTONIC, 0, B);
    SYS("timer_settime.new", SYS_timer_settime, timer, 0, B, 0);
    SYS("timer_settime.old", SYS_timer_settime, timer, 0, &its, B);
    SYS("timer_gettime", SYS_timer_gettime, timer, B);
    SYS("clock_settime", SYS_clock_settime, CLOCK_REALTIME, B);
    SYS("clock_gettime", SYS_clock_gettime, CLOCK_MONOTONIC, B);
    SYS("clock_getres", SYS_clock_getres, CLOCK_MONOTONIC, B);
    SYS("clock_nanosleep", SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, B, 0);
    SYS("mq_open", SYS_mq_open, B, O_RDONLY, 0, 0);
    SYS("mq_unlink", SYS_mq_unlink, B);
    SYS("waitid.info", SYS_waitid, P_PID, zombie(), B, WEXITED, 0);
    SYS("openat", SYS_openat, AT_FDCWD, B, O_RDONLY);
    SYS("mkdirat", SYS_mkdirat, AT_FDCWD, B, 0755);
    SYS("newfstatat.path", SYS_newfstatat, AT_FDCWD, B, &st, 0);
    SYS("newfstatat.buf", SYS_newfstatat, AT_FDCWD, "/tmp", B, 0);
    SYS("unlinkat", SYS_unlinkat, AT_FDCWD, B, 0);
    SYS("renameat", SYS_renameat, AT_FDCWD, B, AT_FDCWD, "/tmp/kaddr.x");
    SYS("symlinkat", SYS_symlinkat, B, AT_FDCWD, "/tmp/kaddr.y");
    SYS("readlinkat", SYS_readlinkat, AT_FDCWD, "/tmp/kaddr.l", B, 64);
    SYS("fchmodat", SYS_fchmodat, AT_FDCWD, B, 0644);
    SYS("faccessat", SYS_faccessat, AT_FDCWD, B, F_OK);
    SYS("pselect6.set", SYS_pselect6, 1, B, 0, 0, &ts0, 0);
    SYS("pselect6.timeout", SYS_pselect6, 1, 0, 0, 0, B, 0);
    SYS("ppoll.fds", SYS_ppoll, B, 1, &ts0, 0, 8);
    SYS("ppoll.timeout", SYS_ppoll, &pfd, 1, B, 0, 8);
    SYS("get_robust_list.head", SYS_get_robust_list, 0, B, buf);
    SYS("get_robust_list.len", SYS_get_robust_list, 0, buf, B);
    SYS("utimensat.times", SYS_utimensat, AT_FDCWD, "/tmp/kaddr.f", B, 0);
    SYS("utimensat.path", SYS_utimensat, AT_FDCWD, B, 0, 0);
    SYS("timerfd_settime.new", SYS_timerfd_settime, tfd, 0, B, 0);
    SYS("timerfd_settime.old", SYS_timerfd_settime, tfd, 0, &its, B);
    SYS("timerfd_gettime", SYS_timerfd_gettime, tfd, B);
    SYS("pipe2", SYS_pipe2, B, 0);
    SYS("rt_tgsigqueueinfo", SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGUSR1, B);
    SYS("prlimit64.new", SYS_prlimit64, 0, RLIMIT_NOFILE, B, 0);
    SYS("prlimit64.old", SYS_prlimit64, 0, RLIMIT_NOFILE, 0, B);
    SYS("getcpu", SYS_getcpu, B, 0, 0);
    SYS("sched_setattr", SYS_sched_setattr, 0, B, 0);
    SYS("sched_getattr", SYS_sched_getattr, 0, B, 56, 0);
    SYS("renameat2", SYS_renameat2, AT_FDCWD, B, AT_FDCWD, "/tmp/kaddr.x", 0);
    SYS("getrandom", SYS_getrandom, B, 16, 0);
    SYS("statx.path", SYS_statx, AT_FDCWD, B, 0, 0x7ff, sbuf);
    SYS("statx.buf", SYS_statx, AT_FDCWD, "/tmp", 0, 0x7ff, B);
    SYS("faccessat2", SYS_faccessat2, AT_FDCWD, B, F_OK, 0);
    SYS("pidfd_send_signal.info", SYS_pidfd_send_signal, pidfd, SIGUSR1, B, 0);
    CALL(S("clone.pidfd %s", bn), clone_pidfd(B));
    SYS("get_mempolicy", SYS_get_mempolicy, B, 0, 0, 0, 0);
    SYS("set_mempolicy", SYS_set_mempolicy, 2 /* MPOL_BIND */, B, 64);
    (void)rl;
    /* Calls that keep the pointer for later: the kernel writes (clear_child_tid) or reads
     * (the robust list) it when the thread ends; the child must end normally. */
    pid_t c = fork();
    if (c == 0) {
        syscall(SYS_set_tid_address, B);
        syscall(SYS_set_robust_list, B, 24);
        _exit(3);
    }
    int status = 0;
    waitpid(c, &status, 0);
    VALUE(S("set_tid_address+robust %s: exit", bn), WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
}

/* The caller may read `ro` but not write it: each call that would write there is EFAULT and
 * the bytes stay. */
static void read_only(const char *bn, void *ro) {
    unsigned char before[64];
    memcpy(before, ro, sizeof before);
    CALL(S("%s: read", bn), read(f, ro, 16));
    CALL(S("%s: pread", bn), pread(f, ro, 16, 0));
    int q[2];
    CALL(S("%s: pipe", bn), syscall(SYS_pipe, ro));
    CALL(S("%s: pipe2", bn), syscall(SYS_pipe2, ro, 0));
    if (pipe(q) == 0) {
        CALL(S("%s: pipe write", bn), write(q[1], "0123456789abcdef", 16));
        CALL(S("%s: pipe read", bn), read(q[0], ro, 16));
        close(q[0]);
        close(q[1]);
    }
    CALL(S("%s: clock_gettime", bn), syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ro));
    CALL(S("%s: gettimeofday", bn), syscall(SYS_gettimeofday, ro, 0));
    CALL(S("%s: getresuid", bn), syscall(SYS_getresuid, ro, ro, ro));
    CALL(S("%s: uname", bn), syscall(SYS_uname, ro));
    CALL(S("%s: fstat", bn), syscall(SYS_fstat, f, ro));
    CALL(S("%s: getrandom", bn), syscall(SYS_getrandom, ro, 16, 0));
    CALL(S("%s: getcwd", bn), syscall(SYS_getcwd, ro, 64));
    CALL(S("%s: sysinfo", bn), syscall(SYS_sysinfo, ro));
    CALL(S("%s: rt_sigprocmask.old", bn), syscall(SYS_rt_sigprocmask, SIG_BLOCK, 0, ro, 8));
    CALL(S("%s: prlimit64.old", bn), syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, ro));
    CALL(S("%s: getdents64", bn), syscall(SYS_getdents64, d, ro, 4096));
    CALL(S("%s: readv", bn), ({
             struct iovec v = {ro, 16};
             readv(f, &v, 1);
         }));
    CALL(S("%s: futex WAKE_OP", bn), syscall(SYS_futex, ro, FUTEX_WAKE_OP_PRIVATE, 1, 1, ro, 0));
    CALL(S("%s: io_setup", bn), syscall(SYS_io_setup, 1, ro));
    aio_pend();
    struct timespec now = {0, 0};
    CALL(S("%s: io_getevents", bn), syscall(SYS_io_getevents, actx, 1, 1, ro, &now));
    aio_drain();
    CALL(S("%s: unchanged", bn), memcmp(before, ro, sizeof before) == 0 ? 0 : -1);
}

int main(void) {
    setvbuf(stdout, 0, _IOLBF, 0);
    char data[4096];
    memset(data, 'k', sizeof data);
    f = open("/tmp/kaddr.f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (f < 0 || write(f, data, sizeof data) != sizeof data)
        return 1;
    lseek(f, 0, SEEK_SET);
    d = open("/tmp", O_RDONLY | O_DIRECTORY);
    if (symlink("/tmp/kaddr.f", "/tmp/kaddr.l") != 0 && errno != EEXIST)
        return 1;
    if (pipe2(p, O_NONBLOCK) != 0 || write(p[1], "0123456789abcdef", 16) != 16)
        return 1;
    tfd = syscall(SYS_timerfd_create, CLOCK_MONOTONIC, 0);
    pidfd = syscall(SYS_pidfd_open, getpid(), 0);
    if (timer_create(CLOCK_MONOTONIC, 0, &timer) != 0)
        return 1;
    if (syscall(SYS_io_setup, 8, &actx) != 0)
        return 1;
    signal(SIGUSR1, SIG_IGN);
    for (unsigned i = 0; i < sizeof BAD / sizeof BAD[0]; i++)
        each_pointer(BAD[i].name, BAD[i].addr);

    /* A PROT_READ anonymous page (touched first, so it is mapped). */
    char *r = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(r, 'r', 4096);
    mprotect(r, 4096, PROT_READ);
    read_only("prot_read", r);
    /* Never touched: the kernel's write must not bring in a writable page. */
    char *n = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    read_only("prot_read untouched", n);
    /* A file mapped shared, read-only: the file keeps its bytes. */
    int g = open("/tmp/kaddr.f", O_RDONLY);
    char *s = mmap(0, 4096, PROT_READ, MAP_SHARED, g, 0);
    read_only("shared file", s);
    char back[16];
    CALL("shared file: mprotect PROT_WRITE", mprotect(s, 4096, PROT_READ | PROT_WRITE));
    CALL("shared file: mprotect PROT_WRITE after close", (close(g), mprotect(s, 4096, PROT_READ | PROT_WRITE)));
    read_only("shared file after mprotect", s);
    CALL("shared file: file unchanged", pread(f, back, 16, 0) == 16 && memcmp(back, data, 16) == 0 ? 0 : -1);
    /* The program's text. */
    read_only("text", (void *)((uintptr_t)main & ~4095UL));
    /* A private page shared copy-on-write with a child, then made read-only in the child. */
    char *w = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(w, 'w', 4096);
    pid_t c = fork();
    if (c == 0) {
        mprotect(w, 4096, PROT_READ);
        read_only("cow child", w);
        _exit(0);
    }
    waitpid(c, 0, 0);
    CALL("cow: parent's page unchanged", w[0] == 'w' && w[4095] == 'w' ? 0 : -1);
    mprotect(w, 4096, PROT_READ);
    read_only("cow parent", w);
    unlink("/tmp/kaddr.l");
    unlink("/tmp/kaddr.f");
    printf("kaddr done\n");
    return 0;
}
