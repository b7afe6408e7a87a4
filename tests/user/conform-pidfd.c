/* Differential conformance: pidfds (Linux kernel/pid.c, kernel/signal.c, kernel/exit.c).
 * pidfd_open, pidfd_send_signal, pidfd_getfd, poll and select on a pidfd before and after
 * the process ends, waitid(P_PIDFD), clone(CLONE_PIDFD), and every call's bad inputs: flags,
 * pids, fds that are not pidfds, a zombie, a reaped process, a thread's tid, a non-root
 * caller. Prints what each call returned; the output must equal Linux's
 * (tests/fixtures/conform-pidfd.linux-6.1.txt). No pids, fds or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "52"
#include "conform.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#define PIDFD_NONBLOCK O_NONBLOCK

static int pidfd_open(pid_t pid, unsigned flags) { return (int)syscall(434, pid, flags); }
static int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned flags) { return (int)syscall(424, fd, sig, info, flags); }
static int pidfd_getfd(int fd, int target, unsigned flags) { return (int)syscall(438, fd, target, flags); }
static int mrelease(int fd, unsigned flags) { return (int)syscall(448, fd, flags); }

static volatile sig_atomic_t got, got_code, got_pid_ok, got_uid_ok, got_value;

static void on_usr1(int s, siginfo_t *si, void *u) {
    (void)s;
    (void)u;
    got++;
    got_code = si->si_code;
    got_pid_ok = si->si_pid == getpid();
    got_uid_ok = si->si_uid == getuid();
    got_value = si->si_value.sival_int;
}

static void msleep(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* A child that waits for signals until it is killed. */
static pid_t child_pause(void) {
    pid_t p = fork();
    if (p == 0) {
        for (;;) pause();
    }
    return p;
}

/* A child that exits with `code` after `ms`. */
static pid_t child_exit(int code, int ms) {
    pid_t p = fork();
    if (p == 0) {
        msleep(ms);
        _exit(code);
    }
    return p;
}

static siginfo_t info_with(int signo, int code, int value) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = signo;
    si.si_code = code;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = value;
    return si;
}

static int self_fd;
static volatile pid_t thread_tid;
static int thread_gate[2];

static void *thread_fn(void *a) {
    (void)a;
    thread_tid = (pid_t)syscall(SYS_gettid);
    char c;
    while (read(thread_gate[0], &c, 1) < 0) {
    }
    /* task_pid(current) is the thread's own pid: only a negative si_code may be forged. */
    siginfo_t si = info_with(0, SI_USER, 0);
    CALL("thread: send SI_USER info to own process", pidfd_send_signal(self_fd, 0, &si, 0));
    si = info_with(0, SI_QUEUE, 0);
    CALL("thread: send SI_QUEUE info to own process", pidfd_send_signal(self_fd, 0, &si, 0));
    CALL("thread: send sig 0 NULL info", pidfd_send_signal(self_fd, 0, NULL, 0));
    return NULL;
}

static void check_link(int fd) {
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    VALUE("fd link is anon_inode:[pidfd]", strcmp(buf, "anon_inode:[pidfd]") == 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    int pipefd[2];
    pipe(pipefd);
    int procfd = open("/proc/self", O_DIRECTORY | O_RDONLY);
    char tpath[64];
    snprintf(tpath, sizeof tpath, "/proc/self/task/%d", getpid());
    int taskfd = open(tpath, O_DIRECTORY | O_RDONLY);
    int procroot = open("/proc", O_DIRECTORY | O_RDONLY);
    siginfo_t si, wi;

    /* pidfd_open */
    self_fd = pidfd_open(getpid(), 0);
    VALUE("pidfd_open self ok", self_fd >= 0);
    VALUE("pidfd FD_CLOEXEC", fcntl(self_fd, F_GETFD));
    VALUE("pidfd F_GETFL accmode|nonblock", fcntl(self_fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK));
    int nb = pidfd_open(getpid(), PIDFD_NONBLOCK);
    VALUE("PIDFD_NONBLOCK ok", nb >= 0);
    VALUE("PIDFD_NONBLOCK F_GETFL accmode|nonblock", fcntl(nb, F_GETFL) & (O_ACCMODE | O_NONBLOCK));
    VALUE("PIDFD_NONBLOCK FD_CLOEXEC", fcntl(nb, F_GETFD));
    close(nb);
    CALL("pidfd_open flags 1", pidfd_open(getpid(), 1));
    CALL("pidfd_open flags ~1", pidfd_open(getpid(), ~1U));
    CALL("pidfd_open flags O_CLOEXEC", pidfd_open(getpid(), O_CLOEXEC));
    CALL("pidfd_open flags O_RDWR", pidfd_open(getpid(), O_RDWR));
    CALL("pidfd_open pid 0", pidfd_open(0, 0));
    CALL("pidfd_open pid -1", pidfd_open(-1, 0));
    CALL("pidfd_open pid INT_MIN", pidfd_open((pid_t)0x80000000u, 0));
    CALL("pidfd_open pid 4194304 (none)", pidfd_open(4194304, 0));
    CALL("pidfd_open pid -1 flags 1", pidfd_open(-1, 1));
    CALL("pidfd_open pid 4194304 flags 1", pidfd_open(4194304, 1));

    /* A thread's tid is not a process. */
    pipe(thread_gate);
    pthread_t th;
    pthread_create(&th, NULL, thread_fn, NULL);
    while (!thread_tid) msleep(1);
    CALL("pidfd_open a thread's tid", pidfd_open(thread_tid, 0));
    write(thread_gate[1], "x", 1);
    pthread_join(th, NULL);

    /* What the file is */
    struct stat st;
    CALL("fstat pidfd", fstat(self_fd, &st));
    VALUE("fstat st_mode", st.st_mode);
    VALUE("fstat st_size", st.st_size);
    VALUE("fstat st_nlink", st.st_nlink);
    check_link(self_fd);
    char b[16];
    CALL("read pidfd", read(self_fd, b, 8));
    CALL("write pidfd", write(self_fd, b, 8));
    CALL("lseek pidfd", lseek(self_fd, 0, SEEK_SET));
    CALL("pread pidfd", pread(self_fd, b, 8, 0));
    CALL("mmap pidfd", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, self_fd, 0) == MAP_FAILED ? -1L : 0L);
    int d = dup(self_fd);
    VALUE("dup pidfd ok", d >= 0);
    VALUE("dup FD_CLOEXEC", fcntl(d, F_GETFD));
    CALL("send sig 0 through the dup", pidfd_send_signal(d, 0, NULL, 0));
    close(d);
    struct pollfd pfd = {self_fd, POLLIN | POLLOUT, 0};
    CALL("poll own pidfd", poll(&pfd, 1, 0));
    VALUE("own pidfd revents", pfd.revents);

    /* pidfd_send_signal: the arguments */
    CALL("send sig 0 self", pidfd_send_signal(self_fd, 0, NULL, 0));
    CALL("send flags 1", pidfd_send_signal(self_fd, 0, NULL, 1));
    CALL("send flags ~1", pidfd_send_signal(self_fd, 0, NULL, ~1U));
    CALL("send flags 1 fd -1", pidfd_send_signal(-1, 0, NULL, 1));
    CALL("send fd -1", pidfd_send_signal(-1, 0, NULL, 0));
    CALL("send fd not open", pidfd_send_signal(1000, 0, NULL, 0));
    CALL("send pipe fd", pidfd_send_signal(pipefd[0], 0, NULL, 0));
    CALL("send /proc/self dirfd sig 0", pidfd_send_signal(procfd, 0, NULL, 0));
    CALL("send /proc/self/task/TID dirfd", pidfd_send_signal(taskfd, 0, NULL, 0));
    CALL("send /proc dirfd", pidfd_send_signal(procroot, 0, NULL, 0));
    CALL("send sig 65", pidfd_send_signal(self_fd, 65, NULL, 0));
    CALL("send sig -1", pidfd_send_signal(self_fd, -1, NULL, 0));
    CALL("send bad info pointer", pidfd_send_signal(self_fd, SIGUSR1, (siginfo_t *)8, 0));
    CALL("send bad info pointer, fd not pidfd", pidfd_send_signal(pipefd[0], SIGUSR1, (siginfo_t *)8, 0));
    si = info_with(SIGUSR2, SI_QUEUE, 0);
    CALL("send si_signo other than sig", pidfd_send_signal(self_fd, SIGUSR1, &si, 0));
    si = info_with(65, SI_QUEUE, 0);
    CALL("send sig 65 with si_signo 65", pidfd_send_signal(self_fd, 65, &si, 0));
    memset(&si, 0, sizeof si);
    CALL("send sig 0 zeroed info", pidfd_send_signal(self_fd, 0, &si, 0));

    /* pidfd_send_signal: what arrives */
    got = 0;
    CALL("send SIGUSR1 NULL info", pidfd_send_signal(self_fd, SIGUSR1, NULL, 0));
    VALUE("handler ran", got);
    VALUE("si_code (SI_USER 0)", got_code);
    VALUE("si_pid is the sender", got_pid_ok);
    VALUE("si_uid is the sender's", got_uid_ok);
    si = info_with(SIGUSR1, SI_QUEUE, 77);
    CALL("send SIGUSR1 SI_QUEUE info", pidfd_send_signal(self_fd, SIGUSR1, &si, 0));
    VALUE("handler ran", got);
    VALUE("si_code (SI_QUEUE -1)", got_code);
    VALUE("si_value", got_value);
    si = info_with(SIGUSR1, SI_USER, 5);
    CALL("send SI_USER info to self", pidfd_send_signal(self_fd, SIGUSR1, &si, 0));
    VALUE("si_code", got_code);
    si = info_with(SIGUSR1, SI_TKILL, 6);
    CALL("send SI_TKILL info to self", pidfd_send_signal(self_fd, SIGUSR1, &si, 0));
    VALUE("si_code", got_code);
    si = info_with(SIGUSR1, 3, 7);
    CALL("send si_code 3 (kernel) to self", pidfd_send_signal(self_fd, SIGUSR1, &si, 0));
    VALUE("si_code", got_code);
    VALUE("handler ran", got);
    CALL("send SIGUSR1 through /proc/self", pidfd_send_signal(procfd, SIGUSR1, NULL, 0));
    VALUE("handler ran", got);

    /* A child: signals, stop and continue, its end */
    pid_t c = child_pause();
    int cfd = pidfd_open(c, 0);
    VALUE("pidfd_open child ok", cfd >= 0);
    pfd = (struct pollfd){cfd, POLLIN, 0};
    CALL("poll running child", poll(&pfd, 1, 0));
    VALUE("revents", pfd.revents);
    CALL("send sig 0 child", pidfd_send_signal(cfd, 0, NULL, 0));
    si = info_with(0, SI_USER, 0);
    CALL("send SI_USER info to child", pidfd_send_signal(cfd, 0, &si, 0));
    si = info_with(0, SI_TKILL, 0);
    CALL("send SI_TKILL info to child", pidfd_send_signal(cfd, 0, &si, 0));
    si = info_with(0, 1, 0);
    CALL("send si_code 1 info to child", pidfd_send_signal(cfd, 0, &si, 0));
    si = info_with(0, SI_QUEUE, 0);
    CALL("send SI_QUEUE info to child", pidfd_send_signal(cfd, 0, &si, 0));
    si = info_with(0, SI_MESGQ, 0);
    CALL("send SI_MESGQ info to child", pidfd_send_signal(cfd, 0, &si, 0));
    CALL("mrelease flags 1", mrelease(cfd, 1));
    CALL("mrelease not a pidfd", mrelease(pipefd[0], 0));
    CALL("mrelease /proc/self dirfd", mrelease(procfd, 0));
    CALL("mrelease a running child", mrelease(cfd, 0));
    CALL("mrelease self", mrelease(self_fd, 0));
    CALL("send SIGSTOP child", pidfd_send_signal(cfd, SIGSTOP, NULL, 0));
    memset(&wi, 0, sizeof wi);
    CALL("waitid P_PIDFD WSTOPPED", waitid(P_PIDFD, cfd, &wi, WSTOPPED));
    VALUE("si_code CLD_STOPPED", wi.si_code == CLD_STOPPED);
    VALUE("si_status", wi.si_status);
    VALUE("si_pid is the child", wi.si_pid == c);
    VALUE("si_signo", wi.si_signo);
    CALL("send SIGCONT child", pidfd_send_signal(cfd, SIGCONT, NULL, 0));
    CALL("waitid P_PIDFD WCONTINUED", waitid(P_PIDFD, cfd, &wi, WCONTINUED));
    VALUE("si_code CLD_CONTINUED", wi.si_code == CLD_CONTINUED);
    memset(&wi, 0, sizeof wi);
    wi.si_pid = 99;
    CALL("waitid WEXITED|WNOHANG running", waitid(P_PIDFD, cfd, &wi, WEXITED | WNOHANG));
    VALUE("si_pid (0: nothing)", wi.si_pid);
    int cnb = pidfd_open(c, PIDFD_NONBLOCK);
    wi.si_signo = 99;
    CALL("waitid nonblocking pidfd running", waitid(P_PIDFD, cnb, &wi, WEXITED));
    VALUE("si_signo after EAGAIN", wi.si_signo);
    CALL("waitid nonblocking pidfd WNOHANG", waitid(P_PIDFD, cnb, &wi, WEXITED | WNOHANG));
    CALL("fcntl clear O_NONBLOCK", fcntl(cnb, F_SETFL, 0));
    CALL("send SIGKILL child", pidfd_send_signal(cfd, SIGKILL, NULL, 0));
    pfd = (struct pollfd){cfd, POLLIN | POLLOUT, 0};
    CALL("poll until the child ends", poll(&pfd, 1, 10000));
    VALUE("revents (POLLIN|POLLRDNORM)", pfd.revents);
    CALL("send sig 0 zombie", pidfd_send_signal(cfd, 0, NULL, 0));
    CALL("send SIGUSR1 zombie", pidfd_send_signal(cfd, SIGUSR1, NULL, 0));
    CALL("send sig 65 zombie", pidfd_send_signal(cfd, 65, NULL, 0));
    int zfd = pidfd_open(c, 0);
    VALUE("pidfd_open zombie ok", zfd >= 0);
    CALL("getfd zombie's fd 0", pidfd_getfd(cfd, 0, 0));
    CALL("mrelease zombie", mrelease(cfd, 0));
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(zfd, &rs);
    struct timeval tv = {0, 0};
    CALL("select zombie's pidfd", select(zfd + 1, &rs, NULL, NULL, &tv));
    VALUE("readable", FD_ISSET(zfd, &rs) != 0);
    memset(&wi, 0, sizeof wi);
    CALL("waitid WEXITED|WNOWAIT", waitid(P_PIDFD, cfd, &wi, WEXITED | WNOWAIT));
    VALUE("si_code CLD_KILLED", wi.si_code == CLD_KILLED);
    VALUE("si_status", wi.si_status);
    CALL("waitid nonblocking pidfd (now blocking)", waitid(P_PIDFD, cnb, &wi, WEXITED));
    VALUE("si_pid is the child", wi.si_pid == c);
    CALL("waitid reaped", waitid(P_PIDFD, cfd, &wi, WEXITED));
    CALL("waitid reaped WNOHANG", waitid(P_PIDFD, cfd, &wi, WEXITED | WNOHANG));
    CALL("send sig 0 reaped", pidfd_send_signal(cfd, 0, NULL, 0));
    CALL("send sig 65 reaped", pidfd_send_signal(cfd, 65, NULL, 0));
    si = info_with(0, SI_USER, 0);
    CALL("send SI_USER info reaped", pidfd_send_signal(cfd, 0, &si, 0));
    CALL("getfd reaped", pidfd_getfd(cfd, 0, 0));
    CALL("mrelease reaped", mrelease(cfd, 0));
    CALL("pidfd_open reaped", pidfd_open(c, 0));
    pfd = (struct pollfd){zfd, POLLIN, 0};
    CALL("poll reaped", poll(&pfd, 1, 0));
    VALUE("revents", pfd.revents);
    close(cfd);
    close(cnb);
    close(zfd);

    /* waitid(P_PIDFD): an exit code, a blocking wait, select, the errors */
    c = child_exit(7, 50);
    cfd = pidfd_open(c, 0);
    FD_ZERO(&rs);
    FD_SET(cfd, &rs);
    tv = (struct timeval){10, 0};
    CALL("select until the child ends", select(cfd + 1, &rs, NULL, NULL, &tv));
    VALUE("readable", FD_ISSET(cfd, &rs) != 0);
    memset(&wi, 0, sizeof wi);
    CALL("waitid P_PIDFD WEXITED", waitid(P_PIDFD, cfd, &wi, WEXITED));
    VALUE("si_code CLD_EXITED", wi.si_code == CLD_EXITED);
    VALUE("si_status", wi.si_status);
    VALUE("si_signo", wi.si_signo);
    close(cfd);
    c = child_exit(9, 50);
    cfd = pidfd_open(c, 0);
    memset(&wi, 0, sizeof wi);
    CALL("waitid P_PIDFD blocks until the end", waitid(P_PIDFD, cfd, &wi, WEXITED));
    VALUE("si_status", wi.si_status);
    CALL("wait4 after (no child)", wait4(-1, NULL, WNOHANG, NULL));
    CALL("waitid P_PIDFD self (not a child)", waitid(P_PIDFD, self_fd, &wi, WEXITED | WNOHANG));
    CALL("waitid P_PIDFD -1", waitid(P_PIDFD, (id_t)-1, &wi, WEXITED));
    CALL("waitid P_PIDFD fd not open", waitid(P_PIDFD, 1000, &wi, WEXITED));
    CALL("waitid P_PIDFD pipe", waitid(P_PIDFD, pipefd[0], &wi, WEXITED));
    CALL("waitid P_PIDFD /proc/self", waitid(P_PIDFD, procfd, &wi, WEXITED));
    CALL("waitid P_PIDFD options 0", waitid(P_PIDFD, cfd, &wi, 0));
    CALL("waitid P_PIDFD options 0x10", waitid(P_PIDFD, cfd, &wi, WEXITED | 0x10));
    CALL("waitid idtype 4", syscall(SYS_waitid, 4, 0, &wi, WEXITED, NULL));
    wi.si_signo = 99;
    CALL("waitid P_PIDFD self, info after ECHILD", waitid(P_PIDFD, self_fd, &wi, WEXITED | WNOHANG));
    VALUE("si_signo after ECHILD", wi.si_signo);
    CALL("waitid ECHILD with a bad info pointer", syscall(SYS_waitid, P_PIDFD, self_fd, (void *)8, WEXITED | WNOHANG, NULL));
    close(cfd);

    /* pidfd_getfd */
    int p[2];
    pipe(p);
    write(p[1], "self", 4);
    CALL("getfd flags 1", pidfd_getfd(self_fd, p[0], 1));
    CALL("getfd flags ~0", pidfd_getfd(self_fd, p[0], ~0U));
    CALL("getfd flags 1, fd not open", pidfd_getfd(1000, p[0], 1));
    CALL("getfd not a pidfd", pidfd_getfd(p[0], p[0], 0));
    CALL("getfd /proc/self dirfd", pidfd_getfd(procfd, p[0], 0));
    CALL("getfd fd -1", pidfd_getfd(-1, p[0], 0));
    CALL("getfd target fd not open", pidfd_getfd(self_fd, 1000, 0));
    CALL("getfd target fd -1", pidfd_getfd(self_fd, -1, 0));
    int g = pidfd_getfd(self_fd, p[0], 0);
    VALUE("getfd own pipe ok", g >= 0);
    VALUE("getfd FD_CLOEXEC", fcntl(g, F_GETFD));
    VALUE("getfd keeps O_RDONLY", fcntl(g, F_GETFL) & O_ACCMODE);
    memset(b, 0, sizeof b);
    VALUE("read through it", read(g, b, sizeof b));
    VALUE("what it read", strcmp(b, "self") == 0);
    close(g);
    g = pidfd_getfd(self_fd, self_fd, 0);
    VALUE("getfd of the pidfd itself ok", g >= 0);
    CALL("send through it", pidfd_send_signal(g, 0, NULL, 0));
    close(g);

    int ready[2];
    pipe(ready);
    pid_t c2 = fork();
    if (c2 == 0) {
        int q[2];
        pipe(q);
        write(q[1], "child", 5);
        write(ready[1], &q[0], sizeof q[0]);
        for (;;) pause();
    }
    int qfd = -1;
    read(ready[0], &qfd, sizeof qfd);
    int c2fd = pidfd_open(c2, 0);
    g = pidfd_getfd(c2fd, qfd, 0);
    VALUE("getfd child's pipe ok", g >= 0);
    VALUE("getfd FD_CLOEXEC", fcntl(g, F_GETFD));
    memset(b, 0, sizeof b);
    VALUE("read through it", read(g, b, sizeof b));
    VALUE("what it read", strcmp(b, "child") == 0);
    close(g);
    CALL("getfd child's fd 999", pidfd_getfd(c2fd, 999, 0));
    /* A non-root caller: a root process's fds are not its (PTRACE_MODE_ATTACH_REALCREDS). */
    pid_t u = fork();
    if (u == 0) {
        if (setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000)) _exit(1);
        CALL("uid 1000: getfd a root process's fd", pidfd_getfd(c2fd, qfd, 0));
        int mine = pidfd_open(getpid(), 0);
        int own = pidfd_getfd(mine, 1, 0);
        VALUE("uid 1000: getfd its own fd ok", own >= 0);
        CALL("uid 1000: pidfd_open a root process", pidfd_open(c2, 0));
        CALL("uid 1000: send sig 0 to a root process", pidfd_send_signal(c2fd, 0, NULL, 0));
        CALL("uid 1000: send SIGCONT to it (same session)", pidfd_send_signal(c2fd, SIGCONT, NULL, 0));
        siginfo_t qi = info_with(0, SI_QUEUE, 0);
        CALL("uid 1000: send sig 0 SI_QUEUE to it", pidfd_send_signal(c2fd, 0, &qi, 0));
        CALL("uid 1000: send sig 0 to itself", pidfd_send_signal(mine, 0, NULL, 0));
        _exit(0);
    }
    int status;
    waitpid(u, &status, 0);
    VALUE("uid 1000 helper status", status);
    pidfd_send_signal(c2fd, SIGKILL, NULL, 0);
    waitid(P_PIDFD, c2fd, &wi, WEXITED);
    VALUE("killed child si_status", wi.si_status);
    close(c2fd);

    /* clone(CLONE_PIDFD): the pidfd at parent_tid */
    int cpfd = -1;
    long r = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &cpfd, 0, 0);
    if (r == 0) _exit(3);
    VALUE("clone CLONE_PIDFD ok", r > 0);
    VALUE("pidfd stored", cpfd >= 0);
    VALUE("its FD_CLOEXEC", fcntl(cpfd, F_GETFD));
    check_link(cpfd);
    memset(&wi, 0, sizeof wi);
    CALL("waitid P_PIDFD on it", waitid(P_PIDFD, cpfd, &wi, WEXITED));
    VALUE("si_status", wi.si_status);
    VALUE("si_pid is the child", wi.si_pid == r);
    close(cpfd);
    r = syscall(SYS_clone, CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, 0, &cpfd, 0, 0);
    if (r == 0) _exit(0);
    VALUE("clone PIDFD|PARENT_SETTID, one pointer (-22)", r < 0 ? -errno : 1);
    r = syscall(SYS_clone, CLONE_PIDFD | CLONE_DETACHED | SIGCHLD, 0, &cpfd, 0, 0);
    if (r == 0) _exit(0);
    VALUE("clone PIDFD|DETACHED (-22)", r < 0 ? -errno : 1);
    r = syscall(SYS_clone, CLONE_PIDFD | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, 0, &cpfd, 0, 0);
    if (r == 0) _exit(0);
    VALUE("clone PIDFD|THREAD (-22)", r < 0 ? -errno : 1);
    r = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, (int *)8, 0, 0);
    if (r == 0) _exit(0);
    VALUE("clone PIDFD bad pointer (-14)", r < 0 ? -errno : 1);
    msleep(50);
    CALL("no child was left behind", waitpid(-1, NULL, WNOHANG));
    return 0;
}
