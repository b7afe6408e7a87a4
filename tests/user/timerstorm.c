/* Timers with periods far shorter than the kernel's handling of them must not take a CPU from
 * everything else (issue 59: stress-ng's timerfd stressor soft-locked CPU 0).
 *
 *   timerstorm MODE [SECS] [TIMERS]
 *
 * MODE: none (no timer, the main thread sleeps: the watchers' idle figures), timerfd (TIMERS
 * timerfds with a 1 ns period, read in turn), timerfd-idle (armed and never read: the program
 * only spins), posix (timer_create SIGEV_SIGNAL, 1 ns period, a
 * handler counting), itimer (setitimer ITIMER_REAL at 1 us, SIGALRM counted), all (one after
 * another, after none).
 *
 * The storm runs on CPU 0 for SECS seconds (default 2). Beside it on the same CPU a
 * SCHED_FIFO 90 watcher sleeps 1 ms at a time (clock_nanosleep, absolute) and records its
 * lateness (99th percentile, to 100 us, and the largest): the watcher must keep running
 * (issue 59: at least once per 10 ms). With two or more CPUs a second watcher does the same on
 * CPU 1. Prints one line per mode,
 *
 *   timerstorm: mode=timerfd secs=2 events=N same_cpu_wakeups=W same_cpu_p99_late_us=P
 *     same_cpu_max_late_us=M other_cpu_p99_late_us=P2 other_cpu_max_late_us=M2
 *
 * and exits 0 when every mode finished (the bound is the scenario test's to check). A kernel
 * with the bug never prints the line: its CPU 0 loops in the timer interrupt. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static volatile long events;
static volatile int stop;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "timerstorm: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
}

/* Lateness histogram: 100 us buckets up to 100 ms (the last one holds everything later). */
#define BUCKETS 1000
#define BUCKET_NS 100000

struct watcher {
    int cpu;
    pthread_t thread;
    uint64_t max_late_ns;
    uint64_t wakeups;
    uint64_t hist[BUCKETS];
};

/* The lateness (us) at or below which 99% of the wakeups came: the upper edge of its bucket. */
static uint64_t p99_us(const struct watcher *w) {
    uint64_t seen = 0, want = w->wakeups - w->wakeups / 100;
    for (int i = 0; i < BUCKETS; i++) {
        seen += w->hist[i];
        if (seen >= want) return (uint64_t)(i + 1) * BUCKET_NS / 1000;
    }
    return (uint64_t)BUCKETS * BUCKET_NS / 1000;
}

/* SCHED_FIFO 90 on its CPU: sleeps to each next millisecond, records how late it woke. */
static void *watch(void *arg) {
    struct watcher *w = arg;
    pin(w->cpu);
    struct sched_param sp = {.sched_priority = 90};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) die("sched_setscheduler FIFO 90");
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!stop) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
        uint64_t want = (uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec;
        uint64_t late = now_ns() - want;
        if (late > w->max_late_ns) w->max_late_ns = late;
        w->wakeups++;
        w->hist[late / BUCKET_NS < BUCKETS ? late / BUCKET_NS : BUCKETS - 1]++;
        /* Fell behind (a long stall): start again from now, not with a burst of catch-ups. */
        if (late > 1000000) clock_gettime(CLOCK_MONOTONIC, &next);
    }
    return NULL;
}

static void on_signal(int s) {
    (void)s;
    events++;
}

static void storm_timerfd(double secs, int n, int read_them) {
    int *fds = calloc((size_t)n, sizeof *fds);
    if (!fds) die("calloc");
    struct itimerspec its = {.it_interval = {0, 1}, .it_value = {0, 1}};
    for (int i = 0; i < n; i++) {
        fds[i] = timerfd_create(CLOCK_MONOTONIC, 0);
        if (fds[i] < 0) die("timerfd_create");
        if (timerfd_settime(fds[i], 0, &its, NULL) != 0) die("timerfd_settime");
    }
    uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
    while (now_ns() < end) {
        if (!read_them) continue;
        for (int i = 0; i < n; i++) {
            uint64_t ticks;
            if (read(fds[i], &ticks, sizeof ticks) != (ssize_t)sizeof ticks) die("read timerfd");
            events += (long)ticks;
        }
    }
    for (int i = 0; i < n; i++) close(fds[i]);
    free(fds);
}

static void storm_posix(double secs) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGRTMIN, &sa, NULL) != 0) die("sigaction");
    struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN};
    timer_t t;
    if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0) die("timer_create");
    struct itimerspec its = {.it_interval = {0, 1}, .it_value = {0, 1}};
    if (timer_settime(t, 0, &its, NULL) != 0) die("timer_settime");
    uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
    while (now_ns() < end) {
    }
    timer_delete(t);
}

static void storm_itimer(double secs) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0) die("sigaction");
    struct itimerval iv = {.it_interval = {0, 1}, .it_value = {0, 1}};
    if (setitimer(ITIMER_REAL, &iv, NULL) != 0) die("setitimer");
    uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
    while (now_ns() < end) {
    }
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
}

static void run(const char *mode, double secs, int timers) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct watcher w[2] = {{.cpu = 0}, {.cpu = 1}};
    int nw = ncpu > 1 ? 2 : 1;
    stop = 0;
    events = 0;
    for (int i = 0; i < nw; i++) {
        if (pthread_create(&w[i].thread, NULL, watch, &w[i]) != 0) die("pthread_create");
    }
    usleep(20000); /* the watchers are in their loops */
    if (!strcmp(mode, "none")) usleep((useconds_t)(secs * 1e6));
    else if (!strcmp(mode, "timerfd")) storm_timerfd(secs, timers, 1);
    else if (!strcmp(mode, "timerfd-idle")) storm_timerfd(secs, timers, 0);
    else if (!strcmp(mode, "posix")) storm_posix(secs);
    else if (!strcmp(mode, "itimer")) storm_itimer(secs);
    else {
        fprintf(stderr, "timerstorm: unknown mode %s\n", mode);
        exit(2);
    }
    stop = 1;
    for (int i = 0; i < nw; i++) pthread_join(w[i].thread, NULL);
    printf("timerstorm: mode=%s secs=%g events=%ld same_cpu_wakeups=%llu same_cpu_p99_late_us=%llu "
           "same_cpu_max_late_us=%llu", mode, secs, events, (unsigned long long)w[0].wakeups,
           (unsigned long long)p99_us(&w[0]), (unsigned long long)(w[0].max_late_ns / 1000));
    if (nw > 1)
        printf(" other_cpu_p99_late_us=%llu other_cpu_max_late_us=%llu", (unsigned long long)p99_us(&w[1]),
               (unsigned long long)(w[1].max_late_ns / 1000));
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: timerstorm none|timerfd|timerfd-idle|posix|itimer|all [SECS] [TIMERS]\n");
        return 2;
    }
    double secs = argc > 2 ? atof(argv[2]) : 2;
    int timers = argc > 3 ? atoi(argv[3]) : 4;
    if (secs <= 0 || timers <= 0) {
        fprintf(stderr, "timerstorm: SECS and TIMERS must be positive\n");
        return 2;
    }
    pin(0);
    if (!strcmp(argv[1], "all")) {
        const char *modes[] = {"none", "timerfd", "timerfd-idle", "posix", "itimer"};
        for (unsigned i = 0; i < sizeof modes / sizeof *modes; i++) run(modes[i], secs, timers);
    } else {
        run(argv[1], secs, timers);
    }
    return 0;
}
