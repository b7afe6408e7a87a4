/* Differential conformance: signalfd. signalfd / signalfd4's checks (sizemask, the mask's
 * address, flags, an fd that is closed or not a signalfd), the file (fstat, its /proc link,
 * flags, write / lseek / pread), reads of 0, 127, 128 and 256 bytes, O_NONBLOCK's EAGAIN,
 * poll and select readiness and wakeups, two signals in one read (the thread's own first,
 * then the process's), the mask replaced, the siginfo of kill, tgkill, sigqueue and SIGCHLD,
 * a blocking read woken by another process, interrupted (EINTR) or restarted (SA_RESTART) by a
 * handled signal, SIGKILL and SIGSTOP left out of the mask, and a forked child reading its own
 * signals. Prints what each call returned; the output must equal Linux's
 * (tests/fixtures/conform-signalfd.linux-6.1.txt). No pids, addresses or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long sfd4(long fd, const void *mask, long size, long flags) { return syscall(SYS_signalfd4, fd, mask, size, flags); }
static long sfd3(long fd, const void *mask, long size) { return syscall(SYS_signalfd, fd, mask, size); }

static void msleep(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static volatile sig_atomic_t alrm_hits, usr2_hits;
static void on_alrm(int s) {
    (void)s;
    alrm_hits++;
}
static void on_usr2(int s) {
    (void)s;
    usr2_hits++;
}

static void handle(int sig, void (*h)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static void alarm_in_ms(int ms) {
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* A child that sleeps `ms`, then sends `sig` to its parent (sigqueue with `value` if >= 0,
 * else kill), and exits. */
static pid_t send_later(int ms, int sig, int value) {
    pid_t c = fork();
    if (c == 0) {
        msleep(ms);
        if (value >= 0)
            sigqueue(getppid(), sig, (union sigval){.sival_int = value});
        else
            kill(getppid(), sig);
        _exit(0);
    }
    return c;
}

static int reap(pid_t c) {
    int st = 0;
    waitpid(c, &st, 0);
    return st;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const int rt = SIGRTMIN;
    sigset_t m, blocked;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR1);
    sigaddset(&m, rt);
    sigaddset(&m, rt + 1);
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigaddset(&blocked, SIGUSR2);
    sigaddset(&blocked, rt);
    sigaddset(&blocked, rt + 1);
    sigaddset(&blocked, SIGCHLD);
    sigaddset(&blocked, SIGURG);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    int bad = 100;
    close(bad);

    /* The checks, in Linux's order. */
    CALL("signalfd4 sizemask 0", sfd4(-1, &m, 0, 0));
    CALL("signalfd4 sizemask 4", sfd4(-1, &m, 4, 0));
    CALL("signalfd4 sizemask 9", sfd4(-1, &m, 9, 0));
    CALL("signalfd4 sizemask 128", sfd4(-1, &m, 128, 0));
    CALL("signalfd4 sizemask ~0", sfd4(-1, &m, -1L, 0));
    CALL("signalfd4 mask NULL", sfd4(-1, NULL, 8, 0));
    CALL("signalfd4 mask kernel address", sfd4(-1, (void *)0xffffffff80000000UL, 8, 0));
    CALL("signalfd4 mask NULL, bad flags", sfd4(-1, NULL, 8, 1));
    CALL("signalfd4 sizemask 9, bad flags", sfd4(-1, &m, 9, 1));
    CALL("signalfd4 flags 1", sfd4(-1, &m, 8, 1));
    CALL("signalfd4 flags O_RDWR", sfd4(-1, &m, 8, O_RDWR));
    CALL("signalfd4 flags ~0", sfd4(-1, &m, 8, -1L));
    CALL("signalfd flags ~0 (glibc)", signalfd(-1, &m, ~0));
    CALL("signalfd4 closed fd", sfd4(bad, &m, 8, 0));
    CALL("signalfd4 fd -2", sfd4(-2, &m, 8, 0));
    CALL("signalfd4 closed fd, bad flags", sfd4(bad, &m, 8, 1));
    CALL("signalfd4 stdout", sfd4(STDOUT_FILENO, &m, 8, 0));
    CALL("signalfd stdout (glibc)", signalfd(STDOUT_FILENO, &m, 0));
    CALL("signalfd3 sizemask 9", sfd3(-1, &m, 9));
    CALL("signalfd3 closed fd", sfd3(bad, &m, 8));
    CALL("signalfd3 stdout", sfd3(STDOUT_FILENO, &m, 8));
    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    CALL("signalfd4 on a timerfd", sfd4(tfd, &m, 8, 0));
    close(tfd);
    long wide = sfd4(0xffffffffL, &m, 8, SFD_CLOEXEC);
    VALUE("fd 0xffffffff (int -1) makes one", wide > 2);
    close((int)wide);
    long plain = sfd3(-1, &m, 8);
    VALUE("signalfd3 makes one", plain > 2);
    VALUE("signalfd3: F_GETFL", fcntl((int)plain, F_GETFL));
    VALUE("signalfd3: F_GETFD", fcntl((int)plain, F_GETFD));
    close((int)plain);

    /* The file. */
    sigset_t mk = m;
    sigaddset(&mk, SIGKILL);
    sigaddset(&mk, SIGSTOP);
    int fd = signalfd(-1, &mk, SFD_NONBLOCK | SFD_CLOEXEC);
    VALUE("signalfd made", fd > 2);
    VALUE("F_GETFL", fcntl(fd, F_GETFL));
    VALUE("F_GETFD", fcntl(fd, F_GETFD));
    struct stat st;
    CALL("fstat", fstat(fd, &st));
    VALUE("st_mode", st.st_mode);
    VALUE("st_size", st.st_size);
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t ln = readlink(path, link, sizeof link - 1);
    link[ln > 0 ? ln : 0] = 0;
    VALUE("proc link is anon_inode:[signalfd]", strcmp(link, "anon_inode:[signalfd]") == 0);
    char b[512];
    memset(b, 0, sizeof b);
    CALL("write", write(fd, b, 128));
    CALL("lseek", lseek(fd, 0, SEEK_SET));
    CALL("lseek SEEK_END", lseek(fd, 10, SEEK_END));
    CALL("pread", pread(fd, b, 128, 0));
    CALL("pwrite", pwrite(fd, b, 128, 0));
    int avail = 0;
    CALL("ioctl FIONREAD", ioctl(fd, FIONREAD, &avail));

    /* Reads with nothing pending. */
    CALL("read 0 bytes", read(fd, b, 0));
    CALL("read 127 bytes", read(fd, b, 127));
    CALL("read 128 bytes, none pending", read(fd, b, 128));
    CALL("read 256 bytes, none pending", read(fd, b, 256));
    struct pollfd p = {fd, POLLIN | POLLOUT, 0};
    CALL("poll, none pending", poll(&p, 1, 0));
    VALUE("revents", p.revents);

    /* kill: SI_USER. */
    CALL("kill self SIGUSR1", kill(getpid(), SIGUSR1));
    CALL("read 0 bytes, one pending", read(fd, b, 0));
    CALL("read 127 bytes, one pending", read(fd, b, 127));
    p.revents = 0;
    CALL("poll, SIGUSR1 pending", poll(&p, 1, 0));
    VALUE("revents", p.revents);
    p.events = POLLOUT;
    CALL("poll POLLOUT only, SIGUSR1 pending", poll(&p, 1, 0));
    VALUE("revents", p.revents);
    p.events = POLLIN;
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(fd, &rs);
    struct timeval tv0 = {0, 0};
    CALL("select, SIGUSR1 pending", select(fd + 1, &rs, NULL, NULL, &tv0));
    VALUE("select: fd set", FD_ISSET(fd, &rs) != 0);
    sigset_t pend;
    sigpending(&pend);
    VALUE("sigpending has SIGUSR1", sigismember(&pend, SIGUSR1));
    struct signalfd_siginfo si[4];
    memset(si, 0, sizeof si);
    VALUE("read 256 bytes, one pending", read(fd, si, 256));
    VALUE("  ssi_signo", si[0].ssi_signo);
    VALUE("  ssi_code (SI_USER)", si[0].ssi_code);
    VALUE("  ssi_pid is mine", si[0].ssi_pid == (uint32_t)getpid());
    VALUE("  ssi_uid", si[0].ssi_uid);
    VALUE("  ssi_int", si[0].ssi_int);
    VALUE("  ssi_ptr", (long)si[0].ssi_ptr);
    VALUE("  second record untouched", si[1].ssi_signo);
    sigpending(&pend);
    VALUE("sigpending has SIGUSR1 after", sigismember(&pend, SIGUSR1));
    p.revents = 0;
    CALL("poll after the read", poll(&p, 1, 0));
    CALL("read 128 bytes, none left", read(fd, si, 128));

    /* sigqueue: SI_QUEUE, value; two in one read; lowest first. */
    CALL("sigqueue SIGRTMIN 42", sigqueue(getpid(), rt, (union sigval){.sival_int = 42}));
    CALL("sigqueue SIGRTMIN 43", sigqueue(getpid(), rt, (union sigval){.sival_int = 43}));
    CALL("kill self SIGUSR1", kill(getpid(), SIGUSR1));
    memset(si, 0, sizeof si);
    ssize_t n = read(fd, si, 256);
    VALUE("read 256 bytes, three pending", n);
    VALUE("  [0] ssi_signo", si[0].ssi_signo);
    VALUE("  [1] ssi_signo is SIGRTMIN", (int)si[1].ssi_signo == rt);
    VALUE("  [1] ssi_code (SI_QUEUE)", si[1].ssi_code);
    VALUE("  [1] ssi_int", si[1].ssi_int);
    VALUE("  [1] ssi_ptr", (long)si[1].ssi_ptr);
    VALUE("  [1] ssi_pid is mine", si[1].ssi_pid == (uint32_t)getpid());
    n = read(fd, si, 512);
    VALUE("read 512 bytes, one pending", n);
    VALUE("  ssi_int", si[0].ssi_int);
    CALL("read 128 bytes, none left", read(fd, si, 128));
    void *ptr = (void *)0x123456789aUL;
    sigqueue(getpid(), rt + 1, (union sigval){.sival_ptr = ptr});
    n = read(fd, si, 128);
    VALUE("sigqueue pointer: read", n);
    VALUE("  ssi_ptr is the pointer", si[0].ssi_ptr == (uint64_t)(uintptr_t)ptr);
    VALUE("  ssi_int", si[0].ssi_int);

    /* The thread's own signals before the process's. */
    kill(getpid(), rt);
    syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), rt + 1);
    memset(si, 0, sizeof si);
    n = read(fd, si, 256);
    VALUE("process SIGRTMIN + thread SIGRTMIN+1: read", n);
    VALUE("  [0] is SIGRTMIN+1", (int)si[0].ssi_signo == rt + 1);
    VALUE("  [0] ssi_code (SI_TKILL)", si[0].ssi_code);
    VALUE("  [0] ssi_pid is mine", si[0].ssi_pid == (uint32_t)getpid());
    VALUE("  [1] is SIGRTMIN", (int)si[1].ssi_signo == rt);
    VALUE("  [1] ssi_code (SI_USER)", si[1].ssi_code);

    /* The mask replaced; the flags stay. */
    sigset_t m2;
    sigemptyset(&m2);
    sigaddset(&m2, SIGUSR2);
    long r = signalfd(fd, &m2, 0);
    VALUE("replace the mask: returns the fd", r == fd);
    VALUE("F_GETFL after", fcntl(fd, F_GETFL));
    VALUE("F_GETFD after", fcntl(fd, F_GETFD));
    kill(getpid(), SIGUSR1);
    p.revents = 0;
    CALL("poll, SIGUSR1 pending, not in mask", poll(&p, 1, 0));
    CALL("read, SIGUSR1 pending, not in mask", read(fd, si, 128));
    kill(getpid(), SIGUSR2);
    CALL("poll, SIGUSR2 pending", poll(&p, 1, 0));
    n = read(fd, si, 256);
    VALUE("read SIGUSR2", n);
    VALUE("  ssi_signo", si[0].ssi_signo);
    CALL("replace with SFD_NONBLOCK|SFD_CLOEXEC", sfd4(fd, &m, 8, SFD_NONBLOCK | SFD_CLOEXEC));
    CALL("replace with bad flags", sfd4(fd, &m, 8, 1));
    n = read(fd, si, 256);
    VALUE("read SIGUSR1 (still pending)", n);
    VALUE("  ssi_signo", si[0].ssi_signo);
    close(fd);
    sigpending(&pend);
    VALUE("nothing pending", sigisemptyset(&pend) ? 1 : 0);

    /* A blocked signal that is ignored is still queued (Linux queues blocked ignored
     * signals); SIGCHLD's info. */
    sigset_t mc;
    sigemptyset(&mc);
    sigaddset(&mc, SIGURG);
    sigaddset(&mc, SIGCHLD);
    fd = signalfd(-1, &mc, SFD_NONBLOCK);
    kill(getpid(), SIGURG);
    n = read(fd, si, 128);
    VALUE("SIGURG (default ignore, blocked): read", n);
    VALUE("  ssi_signo", si[0].ssi_signo);
    close(fd);
    fd = signalfd(-1, &mc, 0);
    pid_t c = fork();
    if (c == 0) _exit(3);
    memset(si, 0, sizeof si);
    n = read(fd, si, 128);
    VALUE("SIGCHLD, blocking read", n);
    VALUE("  ssi_signo", si[0].ssi_signo);
    VALUE("  ssi_code (CLD_EXITED)", si[0].ssi_code);
    VALUE("  ssi_status", si[0].ssi_status);
    VALUE("  ssi_pid is the child", si[0].ssi_pid == (uint32_t)c);
    VALUE("  child's exit status", WEXITSTATUS(reap(c)));
    close(fd);

    /* A blocking read woken by another process's sigqueue (stress-ng's sigfd). */
    fd = signalfd(-1, &m, 0);
    c = send_later(50, rt, 7);
    memset(si, 0, sizeof si);
    n = read(fd, si, 256);
    VALUE("blocking read, sigqueue from a child", n);
    VALUE("  ssi_signo is SIGRTMIN", (int)si[0].ssi_signo == rt);
    VALUE("  ssi_code (SI_QUEUE)", si[0].ssi_code);
    VALUE("  ssi_int", si[0].ssi_int);
    VALUE("  ssi_pid is the child", si[0].ssi_pid == (uint32_t)c);
    reap(c);

    /* poll and select woken by a signal. */
    c = send_later(50, SIGUSR1, -1);
    struct pollfd pw = {fd, POLLIN, 0};
    CALL("poll waits, kill from a child", poll(&pw, 1, 10000));
    VALUE("revents", pw.revents);
    reap(c);
    n = read(fd, si, 128);
    VALUE("read", n);
    VALUE("  ssi_signo", si[0].ssi_signo);
    c = send_later(50, rt + 1, 9);
    FD_ZERO(&rs);
    FD_SET(fd, &rs);
    struct timeval tv = {10, 0};
    CALL("select waits, sigqueue from a child", select(fd + 1, &rs, NULL, NULL, &tv));
    reap(c);
    n = read(fd, si, 128);
    VALUE("read", n);
    VALUE("  ssi_int", si[0].ssi_int);

    /* A handled signal outside the mask: EINTR, or with SA_RESTART the read goes on. */
    handle(SIGALRM, on_alrm, 0);
    alarm_in_ms(50);
    CALL("blocking read, SIGALRM handler", read(fd, si, 128));
    VALUE("alarm handler ran", alrm_hits);
    handle(SIGALRM, on_alrm, SA_RESTART);
    alrm_hits = 0;
    c = send_later(400, SIGUSR1, -1);
    alarm_in_ms(50);
    n = read(fd, si, 128);
    VALUE("blocking read, SA_RESTART handler", n);
    VALUE("  ssi_signo", si[0].ssi_signo);
    VALUE("alarm handler ran", alrm_hits);
    reap(c);

    /* A signal of the mask that is not blocked goes to its handler first. */
    sigset_t mu;
    sigemptyset(&mu);
    sigaddset(&mu, SIGUSR2);
    int ufd = signalfd(-1, &mu, SFD_NONBLOCK);
    handle(SIGUSR2, on_usr2, 0);
    sigprocmask(SIG_UNBLOCK, &mu, NULL);
    kill(getpid(), SIGUSR2);
    VALUE("unblocked SIGUSR2: handler ran", usr2_hits);
    CALL("unblocked SIGUSR2: read", read(ufd, si, 128));
    sigprocmask(SIG_BLOCK, &mu, NULL);
    close(ufd);

    /* A forked child reads its own signals, not its parent's. */
    kill(getpid(), SIGUSR1);
    int nfd = signalfd(-1, &m, SFD_NONBLOCK);
    c = fork();
    if (c == 0) {
        long cr = read(nfd, si, 128);
        int e = errno;
        kill(getpid(), SIGUSR1);
        long cr2 = read(nfd, si, 128);
        _exit((cr < 0 && e == EAGAIN ? 1 : 0) | (cr2 == 128 && si[0].ssi_signo == SIGUSR1 ? 2 : 0));
    }
    VALUE("child: parent's EAGAIN + own read", WEXITSTATUS(reap(c)));
    n = read(nfd, si, 128);
    VALUE("parent's SIGUSR1 still there", n);
    close(nfd);

    /* SIGKILL and SIGSTOP in the mask are left out: they still stop and kill. */
    c = fork();
    if (c == 0) {
        sigset_t ms;
        sigemptyset(&ms);
        sigaddset(&ms, SIGSTOP);
        sigaddset(&ms, SIGKILL);
        sigaddset(&ms, SIGUSR1);
        int cfd = signalfd(-1, &ms, 0);
        struct signalfd_siginfo ci;
        long cr = read(cfd, &ci, sizeof ci);
        _exit(cr == sizeof ci ? (int)ci.ssi_signo : 99);
    }
    msleep(100);
    int stt = 0;
    kill(c, SIGSTOP);
    waitpid(c, &stt, WUNTRACED);
    VALUE("SIGSTOP in the mask: child stopped", WIFSTOPPED(stt) ? WSTOPSIG(stt) : -1);
    kill(c, SIGCONT);
    msleep(50);
    kill(c, SIGUSR1);
    stt = reap(c);
    VALUE("after SIGCONT, the read goes on: exit", WIFEXITED(stt) ? WEXITSTATUS(stt) : -1);
    c = fork();
    if (c == 0) {
        sigset_t ms;
        sigemptyset(&ms);
        sigaddset(&ms, SIGKILL);
        int cfd = signalfd(-1, &ms, 0);
        struct signalfd_siginfo ci;
        read(cfd, &ci, sizeof ci);
        _exit(98);
    }
    msleep(100);
    kill(c, SIGKILL);
    stt = reap(c);
    VALUE("SIGKILL in the mask: killed by", WIFSIGNALED(stt) ? WTERMSIG(stt) : -1);
    close(fd);
    return 0;
}
