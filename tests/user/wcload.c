/* The loads of the "wasted cores" scenarios (issue 61; Lozi et al., EuroSys 2016), the same
 * static binary on Cadence and on the Linux peer. Work is measured in CPU time the task
 * itself consumed (CLOCK_THREAD_CPUTIME_ID), so a slow or shared CPU does not change how much
 * work there is, only how long it takes: completion times compare schedulers.
 *
 *   wcload build JOBS TASKS MS   `make -j JOBS`: TASKS child processes, at most JOBS at a time,
 *                                each spinning MS ms of CPU time then exiting
 *   wcload hog SECS              one CPU-bound process for SECS seconds of wall time
 *   wcload wake THREADS ROUNDS MS  THREADS threads that each spin MS ms of CPU time then wait
 *                                at a barrier, ROUNDS times (a wakeup storm: every round all
 *                                of them sleep and are woken together). The threads start
 *                                where the process runs (start it pinned to a loaded node)
 *                                and then allow themselves every CPU: only the scheduler keeps
 *                                them near their creator.
 *
 * Each prints one line: `wcload: <mode> ... elapsed_ms=<n>` (wall time from start to end).
 * With WCLOAD_AFFINITY=FILE in the environment, `build` appends to FILE a line
 * `# cadence-affinity: pid=<child> mask=0x<hex>` for each child (the affinity it inherits),
 * for `cadence-boot trace check wc`: a trace does not say what a task was allowed to run on.
 * Bad arguments: a usage line on stderr and exit status 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spins until this thread has used `ms` ms of CPU time. */
static void spin_cpu_ms(long ms) {
    long long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000LL;
    volatile unsigned long x = 0;
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 1000; i++)
            x += i;
}

static long arg(const char *s, long min) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min) {
        fprintf(stderr, "wcload: bad number %s\n", s);
        exit(2);
    }
    return v;
}

/* Appends the affinity line of `pid` (with this process's mask) to `f`. */
static void note_affinity(FILE *f, pid_t pid) {
    cpu_set_t set;
    if (!f || sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    int top = CPU_SETSIZE - 1;
    while (top > 0 && !CPU_ISSET(top, &set))
        top--;
    fprintf(f, "# cadence-affinity: pid=%d mask=0x", (int)pid);
    for (int d = top / 4; d >= 0; d--) {
        int v = 0;
        for (int b = 3; b >= 0; b--)
            v = v * 2 + (CPU_ISSET(d * 4 + b, &set) ? 1 : 0);
        fputc("0123456789abcdef"[v], f);
    }
    fputc('\n', f);
    fflush(f);
}

static int build(long jobs, long tasks, long ms) {
    long long t0 = now_ns(CLOCK_MONOTONIC);
    const char *aff = getenv("WCLOAD_AFFINITY");
    FILE *affinity = aff ? fopen(aff, "a") : NULL;
    long started = 0, running = 0, failed = 0;
    while (started < tasks || running > 0) {
        while (running < jobs && started < tasks) {
            pid_t pid = fork();
            if (pid < 0) {
                perror("wcload: fork");
                return 1;
            }
            if (pid == 0) {
                spin_cpu_ms(ms);
                _exit(0);
            }
            note_affinity(affinity, pid);
            started++;
            running++;
        }
        int status;
        if (wait(&status) < 0) {
            perror("wcload: wait");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
        running--;
    }
    printf("wcload: build jobs=%ld tasks=%ld ms=%ld failed=%ld elapsed_ms=%lld\n", jobs, tasks, ms, failed,
           (now_ns(CLOCK_MONOTONIC) - t0) / 1000000);
    return failed != 0;
}

static int hog(long secs) {
    long long t0 = now_ns(CLOCK_MONOTONIC), end = t0 + secs * 1000000000LL;
    volatile unsigned long x = 0;
    while (now_ns(CLOCK_MONOTONIC) < end)
        for (int i = 0; i < 100000; i++)
            x += i;
    printf("wcload: hog secs=%ld cpu_ms=%lld elapsed_ms=%lld\n", secs, now_ns(CLOCK_PROCESS_CPUTIME_ID) / 1000000,
           (now_ns(CLOCK_MONOTONIC) - t0) / 1000000);
    return 0;
}

static pthread_barrier_t barrier;
static long wake_rounds, wake_ms;

static void *waker(void *unused) {
    (void)unused;
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; c++)
        CPU_SET(c, &all);
    sched_setaffinity(0, sizeof all, &all); /* the kernel keeps the online ones */
    for (long r = 0; r < wake_rounds; r++) {
        spin_cpu_ms(wake_ms);
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static int wake(long threads, long rounds, long ms) {
    long long t0 = now_ns(CLOCK_MONOTONIC);
    wake_rounds = rounds;
    wake_ms = ms;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    if (!t)
        return 1;
    for (long i = 0; i < threads; i++) {
        int e = pthread_create(&t[i], NULL, waker, NULL);
        if (e) {
            fprintf(stderr, "wcload: pthread_create: %s\n", strerror(e));
            return 1;
        }
    }
    for (long i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("wcload: wake threads=%ld rounds=%ld ms=%ld elapsed_ms=%lld\n", threads, rounds, ms,
           (now_ns(CLOCK_MONOTONIC) - t0) / 1000000);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 5 && !strcmp(argv[1], "build"))
        return build(arg(argv[2], 1), arg(argv[3], 1), arg(argv[4], 0));
    if (argc == 3 && !strcmp(argv[1], "hog"))
        return hog(arg(argv[2], 0));
    if (argc == 5 && !strcmp(argv[1], "wake"))
        return wake(arg(argv[2], 1), arg(argv[3], 1), arg(argv[4], 0));
    fprintf(stderr, "usage: wcload build JOBS TASKS MS | hog SECS | wake THREADS ROUNDS MS\n");
    return 2;
}
