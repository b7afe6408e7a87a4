/* Differential conformance: signals. Handlers and their frames (siginfo, ucontext, masks,
 * SA_RESTART / SA_NODEFER / SA_RESETHAND / SA_ONSTACK), queued real-time signals, sigsuspend,
 * sigtimedwait, sigaltstack, restarts and EINTR, default actions (terminate, stop, continue,
 * ignore) as a parent's wait sees them, SIGCHLD, faults caught by a handler, and every call's
 * bad inputs. Prints what each call returned; the output must equal Linux's
 * (tests/fixtures/conform-signal.linux-6.1.txt). No pids, addresses or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile sig_atomic_t hits, last_sig, last_code, last_pid_ok, last_value, blocked_inside, order[8], norder;
static volatile uintptr_t handler_sp;

static void on_info(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    hits++;
    last_sig = sig;
    last_code = si->si_code;
    last_pid_ok = si->si_pid == getpid();
    last_value = si->si_value.sival_int;
    if (norder < 8) order[norder++] = si->si_value.sival_int;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    blocked_inside = sigismember(&cur, sig) * 1 + sigismember(&cur, SIGUSR2) * 2;
    int local;
    handler_sp = (uintptr_t)&local;
}

static void on_plain(int sig) {
    (void)sig;
    hits++;
}

static void set(int sig, void (*h)(int, siginfo_t *, void *), int flags, const sigset_t *mask) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | flags;
    if (mask) sa.sa_mask = *mask;
    sigaction(sig, &sa, NULL);
}

static void set_plain(int sig, void (*h)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static sigjmp_buf jump;
static volatile int fault_code;
static volatile void *fault_addr;
static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    fault_code = si->si_code;
    fault_addr = si->si_addr;
    siglongjmp(jump, 1);
}

static volatile double fpu_in_handler;
static void on_fpu(int sig) {
    (void)sig;
    volatile double x = 3.0;
    fpu_in_handler = x * 7.0;
}

static volatile int chld_code, chld_status, chld_hits;
static void on_chld(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    chld_hits++;
    chld_code = si->si_code;
    chld_status = si->si_status;
}

/* A child that sleeps `ms`, sends `sig` to its parent, sleeps `ms2` and writes a byte to `fd`. */
static pid_t poke_later(int ms, int sig, int ms2, int fd) {
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        usleep(ms * 1000);
        kill(parent, sig);
        if (fd >= 0) {
            usleep(ms2 * 1000);
            if (write(fd, "x", 1) < 0) _exit(2);
        }
        _exit(0);
    }
    return c;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t empty, s1, s2;
    sigemptyset(&empty);
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    sigemptyset(&s2);
    sigaddset(&s2, SIGUSR2);

    /* Handlers and their info. */
    set(SIGUSR1, on_info, 0, &s2);
    CALL("raise SIGUSR1", raise(SIGUSR1));
    VALUE("handler ran", hits);
    VALUE("si_signo", last_sig);
    VALUE("si_code (SI_TKILL)", last_code);
    VALUE("si_pid is mine", last_pid_ok);
    VALUE("inside: sig blocked + sa_mask blocked", blocked_inside);
    sigset_t after;
    sigprocmask(SIG_BLOCK, NULL, &after);
    VALUE("after: SIGUSR1 blocked", sigismember(&after, SIGUSR1));
    CALL("kill self SIGUSR1", kill(getpid(), SIGUSR1));
    VALUE("si_code (SI_USER)", last_code);
    set(SIGUSR1, on_info, SA_NODEFER, NULL);
    raise(SIGUSR1);
    VALUE("SA_NODEFER: sig blocked inside", blocked_inside & 1);

    /* Blocking, pending, coalescing. */
    hits = 0;
    CALL("block SIGUSR1", sigprocmask(SIG_BLOCK, &s1, NULL));
    raise(SIGUSR1);
    raise(SIGUSR1);
    VALUE("blocked: not run", hits);
    sigset_t pend;
    CALL("sigpending", sigpending(&pend));
    VALUE("SIGUSR1 pending", sigismember(&pend, SIGUSR1));
    CALL("unblock SIGUSR1", sigprocmask(SIG_UNBLOCK, &s1, NULL));
    VALUE("standard signals coalesce: runs", hits);

    /* Queued real-time signals, in order, with values. */
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN + 1);
    set(SIGRTMIN + 1, on_info, 0, NULL);
    sigprocmask(SIG_BLOCK, &rt, NULL);
    hits = 0;
    norder = 0;
    for (int i = 1; i <= 3; i++) {
        union sigval v = {.sival_int = i * 10};
        CALL("sigqueue RT", sigqueue(getpid(), SIGRTMIN + 1, v));
    }
    sigprocmask(SIG_UNBLOCK, &rt, NULL);
    VALUE("RT instances delivered", hits);
    VALUE("RT order 1", order[0]);
    VALUE("RT order 2", order[1]);
    VALUE("RT order 3", order[2]);
    VALUE("RT si_code (SI_QUEUE)", last_code);

    /* SA_RESETHAND: the second delivery takes the default action. */
    pid_t c = fork();
    if (c == 0) {
        set(SIGUSR2, on_info, SA_RESETHAND, NULL);
        raise(SIGUSR2);
        raise(SIGUSR2);
        _exit(0);
    }
    int st = 0;
    CALL("waitpid resethand child", waitpid(c, &st, 0));
    VALUE("killed by SIGUSR2", WIFSIGNALED(st) ? WTERMSIG(st) : -1);

    /* Alternate stack. */
    static char alt[65536];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0}, old;
    CALL("sigaltstack set", sigaltstack(&ss, &old));
    VALUE("old: disabled", old.ss_flags == SS_DISABLE);
    set(SIGUSR2, on_info, SA_ONSTACK, NULL);
    raise(SIGUSR2);
    VALUE("handler ran on the alternate stack", handler_sp > (uintptr_t)alt && handler_sp < (uintptr_t)alt + sizeof alt);
    CALL("sigaltstack query", sigaltstack(NULL, &old));
    VALUE("query: enabled, not on it", old.ss_flags);
    stack_t small = {.ss_sp = alt, .ss_size = 100, .ss_flags = 0};
    CALL("sigaltstack too small", sigaltstack(&small, NULL));
    stack_t badf = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0x55};
    CALL("sigaltstack bad flags", sigaltstack(&badf, NULL));
    CALL("sigaltstack bad pointer", syscall(SYS_sigaltstack, (void *)8, NULL));
    stack_t dis = {.ss_flags = SS_DISABLE};
    CALL("sigaltstack disable", sigaltstack(&dis, NULL));

    /* SA_RESTART and EINTR: a read a signal interrupts. */
    int p[2];
    if (pipe(p) != 0) return 1;
    set_plain(SIGUSR1, on_plain, 0);
    c = poke_later(30, SIGUSR1, 30, p[1]);
    char ch;
    CALL("read without SA_RESTART", read(p[0], &ch, 1));
    waitpid(c, NULL, 0);
    CALL("then the byte", read(p[0], &ch, 1));
    set_plain(SIGUSR1, on_plain, SA_RESTART);
    hits = 0;
    c = poke_later(30, SIGUSR1, 30, p[1]);
    CALL("read with SA_RESTART", read(p[0], &ch, 1));
    VALUE("handler ran", hits);
    waitpid(c, NULL, 0);

    /* nanosleep: EINTR with the time left. */
    struct timespec req = {5, 0}, rem = {0, 0};
    c = poke_later(30, SIGUSR1, 0, -1);
    CALL("nanosleep interrupted", nanosleep(&req, &rem));
    VALUE("rem between 1 and 5 s", rem.tv_sec >= 1 && rem.tv_sec < 5);
    waitpid(c, NULL, 0);

    /* A signal without a handler does not interrupt: SIGCHLD is ignored by default. */
    c = fork();
    if (c == 0) _exit(0);
    struct timespec short_req = {0, 60 * 1000 * 1000};
    CALL("nanosleep with an ignored SIGCHLD", nanosleep(&short_req, NULL));
    waitpid(c, NULL, 0);

    /* sigsuspend. */
    sigprocmask(SIG_BLOCK, &s1, NULL);
    hits = 0;
    c = poke_later(30, SIGUSR1, 0, -1);
    CALL("sigsuspend", sigsuspend(&empty));
    VALUE("handler ran", hits);
    sigprocmask(SIG_BLOCK, NULL, &after);
    VALUE("mask restored: SIGUSR1 blocked", sigismember(&after, SIGUSR1));
    waitpid(c, NULL, 0);
    sigprocmask(SIG_UNBLOCK, &s1, NULL);

    /* sigtimedwait / sigwaitinfo. */
    sigprocmask(SIG_BLOCK, &s2, NULL);
    kill(getpid(), SIGUSR2);
    siginfo_t si;
    struct timespec zero = {0, 0}, tenms = {0, 10 * 1000 * 1000};
    CALL("sigtimedwait pending", sigtimedwait(&s2, &si, &zero));
    VALUE("info signo", si.si_signo);
    VALUE("info code", si.si_code);
    CALL("sigtimedwait nothing, 0", sigtimedwait(&s2, &si, &zero));
    CALL("sigtimedwait nothing, 10 ms", sigtimedwait(&s2, &si, &tenms));
    union sigval v7 = {.sival_int = 7};
    sigprocmask(SIG_BLOCK, &rt, NULL);
    sigqueue(getpid(), SIGRTMIN + 1, v7);
    CALL("sigwaitinfo RT", sigwaitinfo(&rt, &si) == SIGRTMIN + 1 ? 1 : -1);
    VALUE("RT value", si.si_value.sival_int);
    c = poke_later(30, SIGUSR2, 0, -1);
    CALL("sigtimedwait woken", sigtimedwait(&s2, &si, NULL) == SIGUSR2 ? 1 : -1);
    waitpid(c, NULL, 0);
    struct timespec badts = {0, 2000000000};
    CALL("sigtimedwait bad timeout", sigtimedwait(&s2, &si, &badts));
    sigprocmask(SIG_UNBLOCK, &s2, NULL);
    sigprocmask(SIG_UNBLOCK, &rt, NULL);

    /* Default actions as the parent sees them. */
    c = fork();
    if (c == 0) {
        for (;;) pause();
    }
    CALL("kill SIGSTOP", kill(c, SIGSTOP));
    CALL("waitpid WUNTRACED", waitpid(c, &st, WUNTRACED));
    VALUE("stopped by SIGSTOP", WIFSTOPPED(st) ? WSTOPSIG(st) : -1);
    CALL("kill SIGCONT", kill(c, SIGCONT));
    CALL("waitpid WCONTINUED", waitpid(c, &st, WCONTINUED));
    VALUE("continued", WIFCONTINUED(st));
    CALL("kill SIGTERM", kill(c, SIGTERM));
    CALL("waitpid", waitpid(c, &st, 0));
    VALUE("killed by SIGTERM", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    c = fork();
    if (c == 0) {
        kill(getpid(), SIGWINCH);
        kill(getpid(), SIGURG);
        _exit(5);
    }
    waitpid(c, &st, 0);
    VALUE("SIGWINCH and SIGURG ignored: exit", WEXITSTATUS(st));
    siginfo_t wi;
    c = fork();
    if (c == 0) _exit(9);
    memset(&wi, 0, sizeof wi);
    CALL("waitid WEXITED|WNOWAIT", waitid(P_PID, c, &wi, WEXITED | WNOWAIT));
    VALUE("waitid code, status", wi.si_code * 100 + wi.si_status);
    CALL("waitid again WEXITED", waitid(P_PID, c, &wi, WEXITED));
    CALL("waitid gone", waitid(P_PID, c, &wi, WEXITED));
    CALL("waitid no options", waitid(P_ALL, 0, &wi, 0));
    CALL("waitid bad idtype", waitid(9, 0, &wi, WEXITED));
    CALL("waitid WNOHANG none", waitid(P_ALL, 0, &wi, WEXITED | WNOHANG));

    /* SIGCHLD with a handler. */
    set(SIGCHLD, on_chld, 0, NULL);
    c = fork();
    if (c == 0) _exit(3);
    waitpid(c, &st, 0);
    VALUE("SIGCHLD handler ran", chld_hits > 0);
    VALUE("CLD_EXITED, status", chld_code * 100 + chld_status);
    signal(SIGCHLD, SIG_DFL);
    /* SIG_IGN on SIGCHLD: children are reaped at once. */
    signal(SIGCHLD, SIG_IGN);
    c = fork();
    if (c == 0) _exit(0);
    usleep(100 * 1000);
    CALL("waitpid of an auto-reaped child", waitpid(c, &st, 0));
    signal(SIGCHLD, SIG_DFL);

    /* Faults caught by a handler. */
    set(SIGSEGV, on_segv, SA_NODEFER, NULL);
    if (sigsetjmp(jump, 1) == 0) {
        volatile int *volatile null16 = (volatile int *)16;
        *null16 = 1;
    }
    VALUE("SIGSEGV code (SEGV_MAPERR)", fault_code);
    VALUE("si_addr", (long)(uintptr_t)fault_addr);
    static const int ro = 5;
    if (sigsetjmp(jump, 1) == 0) {
        *(volatile int *)&ro = 1;
    }
    VALUE("SIGSEGV code (SEGV_ACCERR)", fault_code);
    signal(SIGSEGV, SIG_DFL);

    /* The FPU state survives a handler that uses it. */
    signal(SIGUSR1, on_fpu);
    volatile double mine = 1.25;
    raise(SIGUSR1);
    VALUE("fpu in handler x100", (long)(fpu_in_handler * 100));
    VALUE("fpu after x100", (long)(mine * 100));

    /* Bad inputs. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_plain;
    CALL("sigaction 0", syscall(SYS_rt_sigaction, 0, &sa, NULL, 8));
    CALL("sigaction 65", syscall(SYS_rt_sigaction, 65, &sa, NULL, 8));
    CALL("sigaction SIGKILL", sigaction(SIGKILL, &sa, NULL));
    CALL("sigaction SIGSTOP", sigaction(SIGSTOP, &sa, NULL));
    CALL("sigaction SIGKILL query", sigaction(SIGKILL, NULL, &sa));
    CALL("rt_sigaction size 4", syscall(SYS_rt_sigaction, SIGUSR1, NULL, NULL, 4));
    CALL("rt_sigaction bad act", syscall(SYS_rt_sigaction, SIGUSR1, (void *)8, NULL, 8));
    CALL("rt_sigaction bad oact", syscall(SYS_rt_sigaction, SIGUSR1, NULL, (void *)8, 8));
    CALL("sigprocmask bad how", syscall(SYS_rt_sigprocmask, 7, &s1, NULL, 8));
    CALL("sigprocmask bad how, no set", syscall(SYS_rt_sigprocmask, 7, NULL, NULL, 8));
    CALL("sigprocmask size 4", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s1, NULL, 4));
    CALL("sigprocmask bad set", syscall(SYS_rt_sigprocmask, SIG_BLOCK, (void *)8, NULL, 8));
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    sigprocmask(SIG_SETMASK, NULL, &after);
    VALUE("SIGKILL never blocked", sigismember(&after, SIGKILL));
    VALUE("SIGSTOP never blocked", sigismember(&after, SIGSTOP));
    sigprocmask(SIG_SETMASK, &empty, NULL);
    CALL("sigpending size 9", syscall(SYS_rt_sigpending, &pend, 9));
    CALL("sigpending bad pointer", syscall(SYS_rt_sigpending, (void *)8, 8));
    CALL("sigsuspend size 4", syscall(SYS_rt_sigsuspend, &empty, 4));
    CALL("sigsuspend bad mask", syscall(SYS_rt_sigsuspend, (void *)8, 8));
    CALL("sigtimedwait size 4", syscall(SYS_rt_sigtimedwait, &s2, NULL, &zero, 4));
    CALL("kill sig 65", kill(getpid(), 65));
    CALL("kill sig 0 self", kill(getpid(), 0));
    CALL("kill no such pid", kill(4000000, SIGUSR1));
    CALL("kill INT_MIN", kill(-2147483647 - 1, 0));
    CALL("kill no such group", kill(-4000000, 0));
    CALL("tgkill wrong tgid", syscall(SYS_tgkill, 4000000, syscall(SYS_gettid), 0));
    CALL("tgkill tid 0", syscall(SYS_tgkill, getpid(), 0, 0));
    CALL("tgkill sig 65", syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 65));
    CALL("tkill -1", syscall(SYS_tkill, -1, 0));
    siginfo_t forged;
    memset(&forged, 0, sizeof forged);
    forged.si_code = SI_USER;
    CALL("rt_sigqueueinfo forged to self", syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR2, &forged) == 0 ? 0 : -1);
    c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    CALL("rt_sigqueueinfo forged to other", syscall(SYS_rt_sigqueueinfo, c, SIGUSR2, &forged));
    CALL("rt_sigqueueinfo bad info", syscall(SYS_rt_sigqueueinfo, c, SIGUSR2, (void *)8));
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
    VALUE("SIGKILL while in pause", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    printf("conform-signal: done\n");
    return 0;
}
