/* Differential conformance: resource usage. getrusage's who values and bad pointers, times()
 * with NULL and bad buffers, wait4's and waitid's rusage (WNOWAIT too), and how the figures
 * move: a CPU spin's time in RUSAGE_SELF and RUSAGE_THREAD, an ended thread's time kept in
 * the process's, a child's time in RUSAGE_CHILDREN only once it is reaped (its own reaped
 * children's included), a fresh child's counters, page faults, voluntary switches after
 * sleeps, the peak resident set, /proc/PID/stat's times. Prints results of calls and only
 * comparisons of times and counts, never raw values; the output must equal Linux's
 * (tests/fixtures/conform-rusage.linux-6.1.txt). */
#define _GNU_SOURCE
#define CONFORM_WIDTH "56"
#include "conform.h"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BAD ((void *)1)

static long ru(long who, void *r) { return syscall(SYS_getrusage, who, r); }
static long tms_(void *b) { return syscall(SYS_times, b); }

static long ms_of(const struct rusage *r) {
    return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000L + (r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1000L;
}
static long ums_of(const struct rusage *r) { return r->ru_utime.tv_sec * 1000L + r->ru_utime.tv_usec / 1000L; }
static long sms_of(const struct rusage *r) { return r->ru_stime.tv_sec * 1000L + r->ru_stime.tv_usec / 1000L; }

static long cpu_ms(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* Spins on the CPU until the thread has used `ms` more CPU time. */
static volatile unsigned long sink;
static void spin(long ms) {
    long until = cpu_ms(CLOCK_THREAD_CPUTIME_ID) + ms;
    while (cpu_ms(CLOCK_THREAD_CPUTIME_ID) < until) {
        for (int i = 0; i < 1000000; i++)
            sink += i;
    }
}

static void msleep(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static void in_range(const char *label, long v, long lo, long hi) {
    if (getenv("RUSAGE_DEBUG"))
        printf("debug: %ld\n", v);
    printf("%-" CONFORM_WIDTH "s = %s\n", label, v >= lo && v <= hi ? "yes" : "no");
}
static void yes(const char *label, int c) { printf("%-" CONFORM_WIDTH "s = %s\n", label, c ? "yes" : "no"); }

static long unsupported(const struct rusage *r) {
    return r->ru_ixrss + r->ru_idrss + r->ru_isrss + r->ru_nswap + r->ru_msgsnd + r->ru_msgrcv + r->ru_nsignals;
}

static volatile long chld_ticks = -1;
static void on_chld(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    chld_ticks = (long)si->si_utime + (long)si->si_stime;
}

static void *thread_spin(void *arg) {
    spin((long)(intptr_t)arg);
    return NULL;
}

/* /proc/self/stat's fields 14-17 (utime stime cutime cstime), clock ticks. */
static int stat_times(const char *path, long out[4]) {
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p += 2;
    /* p: field 3 (state); skip 11 fields to reach field 14. */
    for (int i = 0; i < 11; i++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
    }
    return sscanf(p, "%ld %ld %ld %ld", &out[0], &out[1], &out[2], &out[3]) == 4 ? 0 : -1;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct rusage r, r2;
    struct tms t1, t2;

    /* The calls' checks. */
    CALL("getrusage(SELF)", ru(RUSAGE_SELF, &r));
    CALL("getrusage(CHILDREN)", ru(RUSAGE_CHILDREN, &r));
    CALL("getrusage(THREAD)", ru(RUSAGE_THREAD, &r));
    CALL("getrusage(2)", ru(2, &r));
    CALL("getrusage(-2)", ru(-2, &r));
    CALL("getrusage(99, NULL)", ru(99, NULL));
    CALL("getrusage(SELF, NULL)", ru(RUSAGE_SELF, NULL));
    CALL("getrusage(CHILDREN, bad)", ru(RUSAGE_CHILDREN, BAD));
    CALL("getrusage(THREAD, bad)", ru(RUSAGE_THREAD, BAD));
    CALL("getrusage(0x100000000 = SELF as int)", ru(0x100000000L, &r));
    CALL("times(NULL)", tms_(NULL));
    CALL("times(buf)", tms_(&t1));
    CALL("times(bad)", tms_(BAD));
    ru(RUSAGE_SELF, &r);
    VALUE("SELF's unsupported fields summed", unsupported(&r));
    ru(RUSAGE_THREAD, &r);
    VALUE("THREAD's unsupported fields summed", unsupported(&r));
    ru(RUSAGE_CHILDREN, &r);
    VALUE("CHILDREN before any child: utime+stime ms", ms_of(&r));
    VALUE("CHILDREN before any child: minflt", r.ru_minflt);
    VALUE("CHILDREN before any child: nvcsw", r.ru_nvcsw);
    VALUE("CHILDREN before any child: maxrss", r.ru_maxrss);
    tms_(&t1);
    VALUE("times: cutime+cstime before any child", (long)(t1.tms_cutime + t1.tms_cstime));
    ru(RUSAGE_SELF, &r);
    yes("SELF maxrss > 0", r.ru_maxrss > 0);
    yes("SELF minflt > 0", r.ru_minflt > 0);

    /* times()'s clock moves with time. */
    long c1 = tms_(NULL);
    msleep(100);
    long c2 = tms_(NULL);
    in_range("times() grows by 8..100 ticks over a 100 ms sleep", c2 - c1, 8, 100);

    /* A 300 ms spin. */
    struct rusage s0, s1, th0, th1;
    ru(RUSAGE_SELF, &s0);
    ru(RUSAGE_THREAD, &th0);
    tms_(&t1);
    spin(300);
    ru(RUSAGE_SELF, &s1);
    ru(RUSAGE_THREAD, &th1);
    tms_(&t2);
    in_range("spin 300 ms: SELF utime+stime grew 200..400 ms", ms_of(&s1) - ms_of(&s0), 200, 400);
    in_range("spin 300 ms: THREAD utime+stime grew 200..400 ms", ms_of(&th1) - ms_of(&th0), 200, 400);
    if (getenv("RUSAGE_DEBUG"))
        printf("debug: user %ld sys %ld\n", ums_of(&s1) - ums_of(&s0), sms_of(&s1) - sms_of(&s0));
    yes("spin 300 ms: SELF user time grew more than system", ums_of(&s1) - ums_of(&s0) > sms_of(&s1) - sms_of(&s0));
    in_range("spin 300 ms: times utime+stime grew 20..40 ticks", (long)(t2.tms_utime + t2.tms_stime - t1.tms_utime - t1.tms_stime), 20, 40);
    {
        long st[4];
        ru(RUSAGE_SELF, &r);
        yes("/proc/self/stat read", stat_times("/proc/self/stat", st) == 0);
        in_range("/proc/self/stat utime+stime within 5 ticks of SELF", st[0] + st[1] - ms_of(&r) / 10, -5, 5);
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)syscall(SYS_gettid));
        ru(RUSAGE_THREAD, &r);
        yes("/proc/self/task/TID/stat read", stat_times(path, st) == 0);
        in_range("task stat utime+stime within 5 ticks of THREAD", st[0] + st[1] - ms_of(&r) / 10, -5, 5);
    }

    /* A thread's time: not the caller's thread's; kept in the process's after it ends. */
    ru(RUSAGE_SELF, &s0);
    ru(RUSAGE_THREAD, &th0);
    pthread_t pt;
    pthread_create(&pt, NULL, thread_spin, (void *)(intptr_t)200);
    pthread_join(pt, NULL);
    ru(RUSAGE_SELF, &s1);
    ru(RUSAGE_THREAD, &th1);
    in_range("ended thread's 200 ms spin in SELF (150..300 ms)", ms_of(&s1) - ms_of(&s0), 150, 300);
    in_range("ended thread's spin not in THREAD (< 50 ms)", ms_of(&th1) - ms_of(&th0), 0, 49);
    yes("SELF nvcsw >= THREAD nvcsw", s1.ru_nvcsw >= th1.ru_nvcsw);

    /* Voluntary switches after sleeps. */
    ru(RUSAGE_THREAD, &th0);
    for (int i = 0; i < 20; i++)
        msleep(2);
    ru(RUSAGE_THREAD, &th1);
    /* Not exactly 20: a sleep whose timer fires before the switch does not switch. */
    in_range("20 sleeps: THREAD nvcsw grew by >= 15", th1.ru_nvcsw - th0.ru_nvcsw, 15, 1000000);
    ru(RUSAGE_SELF, &s1);
    yes("SELF nvcsw >= THREAD nvcsw after sleeps", s1.ru_nvcsw >= th1.ru_nvcsw);

    /* Page faults. */
    ru(RUSAGE_THREAD, &th0);
    ru(RUSAGE_SELF, &s0);
    char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(m, 1 << 20, MADV_NOHUGEPAGE);
    for (int i = 0; i < 256; i++)
        m[i * 4096] = 1;
    ru(RUSAGE_THREAD, &th1);
    ru(RUSAGE_SELF, &s1);
    in_range("touching 256 new pages: THREAD minflt grew >= 256", th1.ru_minflt - th0.ru_minflt, 256, 100000);
    in_range("touching 256 new pages: SELF minflt grew >= 256", s1.ru_minflt - s0.ru_minflt, 256, 100000);
    in_range("touching 256 new pages: SELF maxrss grew >= 1000 KiB", s1.ru_maxrss - s0.ru_maxrss, 1000, 100000);
    munmap(m, 1 << 20);
    ru(RUSAGE_SELF, &s0);
    yes("maxrss stays after munmap", s0.ru_maxrss >= s1.ru_maxrss);

    /* A child: in RUSAGE_CHILDREN once reaped, not before; WNOWAIT does not reap. */
    struct rusage c0, cw, cc;
    ru(RUSAGE_CHILDREN, &c0);
    tms_(&t1);
    pid_t pid = fork();
    if (pid == 0) {
        struct rusage z;
        struct tms zt;
        ru(RUSAGE_CHILDREN, &z);
        int bad = ms_of(&z) != 0 || z.ru_minflt != 0 || z.ru_maxrss != 0;
        times(&zt);
        bad |= (zt.tms_cutime + zt.tms_cstime) != 0;
        ru(RUSAGE_SELF, &z);
        bad |= ms_of(&z) > 100 ? 2 : 0;
        char *cm = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        madvise(cm, 8 << 20, MADV_NOHUGEPAGE); /* a fault per page */
        for (int i = 0; i < 2048; i++)
            cm[i * 4096] = 1;
        spin(300);
        for (int i = 0; i < 5; i++)
            msleep(1);
        _exit(bad);
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    struct rusage wr;
    CALL("waitid(WEXITED|WNOWAIT, rusage)", syscall(SYS_waitid, P_PID, pid, &si, WEXITED | WNOWAIT, &wr));
    in_range("WNOWAIT rusage: child's spin and faults (250..700 ms)", ms_of(&wr), 250, 700);
    ru(RUSAGE_CHILDREN, &cw);
    VALUE("CHILDREN grew after WNOWAIT (ms)", ms_of(&cw) - ms_of(&c0));
    int status = 0;
    CALL("wait4(child, rusage)", wait4(pid, &status, 0, &wr));
    VALUE("child's exit status (fresh counters: 0)", WEXITSTATUS(status));
    ru(RUSAGE_CHILDREN, &cc);
    tms_(&t2);
    in_range("wait4 rusage: child's utime+stime 250..700 ms", ms_of(&wr), 250, 700);
    yes("wait4 rusage: child's user time more than system", ums_of(&wr) > sms_of(&wr));
    in_range("wait4 rusage: child's maxrss >= 8192 KiB", wr.ru_maxrss, 8192, 10000000);
    in_range("wait4 rusage: child's minflt >= 2048", wr.ru_minflt, 2048, 10000000);
    in_range("wait4 rusage: child's nvcsw >= 5", wr.ru_nvcsw, 5, 10000000);
    VALUE("wait4 rusage: unsupported fields summed", unsupported(&wr));
    in_range("CHILDREN grew 250..700 ms after wait4", ms_of(&cc) - ms_of(&c0), 250, 700);
    in_range("CHILDREN growth within 10 ms of wait4's rusage", ms_of(&cc) - ms_of(&c0) - ms_of(&wr), -10, 10);
    in_range("CHILDREN maxrss >= 8192 KiB", cc.ru_maxrss, 8192, 10000000);
    in_range("CHILDREN minflt grew >= 2048", cc.ru_minflt - c0.ru_minflt, 2048, 10000000);
    in_range("CHILDREN nvcsw grew >= 5", cc.ru_nvcsw - c0.ru_nvcsw, 5, 10000000);
    in_range("times: cutime+cstime grew 25..70 ticks", (long)(t2.tms_cutime + t2.tms_cstime - t1.tms_cutime - t1.tms_cstime), 25, 70);
    {
        long st[4];
        stat_times("/proc/self/stat", st);
        in_range("/proc/self/stat cutime+cstime within 5 ticks of CHILDREN", st[2] + st[3] - ms_of(&cc) / 10, -5, 5);
    }

    /* A grandchild reaped by the child counts in the child's rusage. */
    ru(RUSAGE_CHILDREN, &c0);
    pid = fork();
    if (pid == 0) {
        pid_t g = fork();
        if (g == 0) {
            spin(200);
            _exit(0);
        }
        waitpid(g, NULL, 0);
        _exit(0);
    }
    CALL("wait4(child with a reaped grandchild)", wait4(pid, &status, 0, &wr));
    in_range("its rusage holds the grandchild's 200 ms (150..300)", ms_of(&wr), 150, 300);
    ru(RUSAGE_CHILDREN, &cc);
    in_range("CHILDREN grew 150..300 ms", ms_of(&cc) - ms_of(&c0), 150, 300);

    /* A grandchild not waited for does not count. */
    ru(RUSAGE_CHILDREN, &c0);
    int p[2];
    pipe(p);
    pid = fork();
    if (pid == 0) {
        pid_t g = fork();
        if (g == 0) {
            close(p[0]);
            spin(200);
            _exit(0);
        }
        close(p[1]);
        _exit(0);
    }
    close(p[1]);
    CALL("wait4(child leaving a grandchild)", wait4(pid, &status, 0, &wr));
    char ch;
    read(p[0], &ch, 1); /* EOF when the grandchild ends */
    close(p[0]);
    in_range("its rusage without the grandchild (< 100 ms)", ms_of(&wr), 0, 99);
    ru(RUSAGE_CHILDREN, &cc);
    in_range("CHILDREN grew < 100 ms", ms_of(&cc) - ms_of(&c0), 0, 99);

    /* wait4 and waitid with a bad rusage: EFAULT, the child reaped all the same. */
    pid = fork();
    if (pid == 0)
        _exit(3);
    CALL("wait4(child, bad rusage)", wait4(pid, &status, 0, BAD));
    VALUE("its status written anyway", WEXITSTATUS(status));
    CALL("wait4(child) again", wait4(pid, &status, 0, NULL));
    pid = fork();
    if (pid == 0)
        _exit(4);
    memset(&si, 0, sizeof si);
    CALL("waitid(child, bad rusage)", syscall(SYS_waitid, P_PID, pid, &si, WEXITED, BAD));
    CALL("waitid(child) again", syscall(SYS_waitid, P_PID, pid, &si, WEXITED | WNOHANG, NULL));
    /* waitid with WNOHANG and nothing to report leaves the rusage alone. */
    pid = fork();
    if (pid == 0) {
        msleep(200);
        _exit(0);
    }
    memset(&r2, 0x5a, sizeof r2);
    CALL("waitid(WNOHANG, nothing yet, rusage)", syscall(SYS_waitid, P_PID, pid, &si, WEXITED | WNOHANG, &r2));
    VALUE("its rusage untouched", r2.ru_maxrss == 0x5a5a5a5a5a5a5a5aL);
    CALL("waitid(child, rusage)", syscall(SYS_waitid, P_PID, pid, &si, WEXITED, &r2));
    in_range("a sleeping child's rusage: < 50 ms", ms_of(&r2), 0, 49);

    /* SIGCHLD's si_utime + si_stime: the child's own times, in clock ticks. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_chld;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
    pid = fork();
    if (pid == 0) {
        spin(300);
        _exit(0);
    }
    CALL("wait4(spinning child)", wait4(pid, &status, 0, &wr));
    in_range("SIGCHLD si_utime+si_stime: 25..45 ticks", chld_ticks, 25, 45);
    return 0;
}
