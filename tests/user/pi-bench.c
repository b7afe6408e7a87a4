/* The priority-inversion benchmark (make compare-pi): a SCHED_FIFO 90 thread blocks on a mutex
 * held by a SCHED_FIFO 10 thread while a SCHED_FIFO 50 hog spins on the only CPU the holder
 * may use (all three pinned to CPU 0). With a PTHREAD_PRIO_INHERIT mutex the holder is
 * boosted to 90 and the wait is the rest of its critical section plus scheduling latency;
 * with a plain mutex the hog runs first and the wait is the hog's whole run: the unbounded
 * inversion. Prints one line per protocol and round:
 *
 *   pi-bench: protocol=<inherit|none> round=<n> wait_us=<n> critical_us=<n> hog_ms=<n>
 *
 * Usage: pi-bench [rounds] [critical_us] [hog_ms]   (defaults 3, 5000, 200). Needs root (RT
 * policies) and CPU 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock;
static volatile int held, hog_go, waiting;
static long critical_us = 5000, hog_ms = 200;
static long wait_us;

static long long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pin_fifo(int prio) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) {
        perror("pi-bench: sched_setaffinity");
        exit(1);
    }
    struct sched_param p = {.sched_priority = prio};
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
        perror("pi-bench: sched_setscheduler");
        exit(1);
    }
}

/* FIFO 10: takes the lock, then burns `critical_us` of its own CPU time holding it. */
static void *holder(void *arg) {
    (void)arg;
    pin_fifo(10);
    pthread_mutex_lock(&lock);
    held = 1;
    /* The critical section starts once the waiter is about to block: it preempts us (same
     * CPU, higher priority) and sets `waiting` right before it locks. */
    while (!waiting) {
    }
    long long end = ns(CLOCK_THREAD_CPUTIME_ID) + critical_us * 1000LL;
    while (ns(CLOCK_THREAD_CPUTIME_ID) < end) {
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* FIFO 50: spins `hog_ms` of wall time once told to. */
static void *hog(void *arg) {
    (void)arg;
    pin_fifo(50);
    while (!hog_go) {
        struct timespec t = {0, 100000};
        nanosleep(&t, NULL);
    }
    long long end = ns(CLOCK_MONOTONIC) + hog_ms * 1000000LL;
    while (ns(CLOCK_MONOTONIC) < end) {
    }
    return NULL;
}

/* FIFO 90: once the holder holds the lock, wakes the hog and measures its own wait. */
static void *waiter(void *arg) {
    (void)arg;
    pin_fifo(90);
    while (!held) {
        struct timespec t = {0, 200000};
        nanosleep(&t, NULL);
    }
    hog_go = 1;
    waiting = 1;
    long long t0 = ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&lock);
    wait_us = (ns(CLOCK_MONOTONIC) - t0) / 1000;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void round_of(int protocol, int round) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, protocol);
    pthread_mutex_init(&lock, &a);
    held = hog_go = waiting = 0;
    pthread_t h, g, w;
    pthread_create(&h, NULL, holder, NULL);
    while (!held) {
        struct timespec t = {0, 200000};
        nanosleep(&t, NULL);
    }
    pthread_create(&g, NULL, hog, NULL);
    pthread_create(&w, NULL, waiter, NULL);
    pthread_join(w, NULL);
    pthread_join(g, NULL);
    pthread_join(h, NULL);
    pthread_mutex_destroy(&lock);
    printf("pi-bench: protocol=%s round=%d wait_us=%ld critical_us=%ld hog_ms=%ld\n", protocol == PTHREAD_PRIO_INHERIT ? "inherit" : "none",
           round, wait_us, critical_us, hog_ms);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    if (argc > 2) critical_us = atol(argv[2]);
    if (argc > 3) hog_ms = atol(argv[3]);
    if (rounds < 1 || critical_us < 1 || hog_ms < 1) {
        fprintf(stderr, "usage: pi-bench [rounds] [critical_us] [hog_ms]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) perror("pi-bench: mlockall");
    for (int r = 1; r <= rounds; r++) {
        round_of(PTHREAD_PRIO_INHERIT, r);
        round_of(PTHREAD_PRIO_NONE, r);
    }
    return 0;
}
