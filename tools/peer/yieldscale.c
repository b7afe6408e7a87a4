/* The Linux side of Cadence's `bench scale`: N threads pinned to CPU 0, each calling
 * sched_yield() in a loop, for SECS seconds per count; prints one line per count in
 * bench scale's format (us per switch = elapsed / total yields).
 *
 *   yieldscale [SECS] N...      e.g. yieldscale 1 2 100 1000 10000
 *
 * Static build: gcc -O2 -static -pthread -o yieldscale yieldscale.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int go, stop;
static atomic_long total;

static void *yielder(void *arg) {
    (void)arg;
    long n = 0;
    while (!atomic_load_explicit(&go, memory_order_acquire))
        sched_yield();
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        sched_yield();
        n++;
    }
    atomic_fetch_add(&total, n);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: yieldscale SECS N...\n");
        return 2;
    }
    double secs = atof(argv[1]);
    cpu_set_t cpu0;
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    for (int a = 2; a < argc; a++) {
        int n = atoi(argv[a]);
        pthread_t *t = calloc(n, sizeof *t);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        pthread_attr_setaffinity_np(&attr, sizeof cpu0, &cpu0);
        atomic_store(&go, 0);
        atomic_store(&stop, 0);
        atomic_store(&total, 0);
        int made = 0;
        for (; made < n; made++)
            if (pthread_create(&t[made], &attr, yielder, NULL) != 0)
                break;
        /* The main thread leaves CPU 0 to the yielders. */
        cpu_set_t cpu1;
        CPU_ZERO(&cpu1);
        CPU_SET(1, &cpu1);
        sched_setaffinity(0, sizeof cpu1, &cpu1);
        double t0 = now();
        atomic_store_explicit(&go, 1, memory_order_release);
        struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
        nanosleep(&d, NULL);
        atomic_store(&stop, 1);
        double el = now() - t0; /* the exits and joins after it are not the measurement */
        for (int i = 0; i < made; i++)
            pthread_join(t[i], NULL);
        long y = atomic_load(&total);
        printf("scale: tasks=%d switches_per_s=%.0f us_per_switch=%.2f\n", made, y / el, y ? el * 1e6 / y : 0.0);
        fflush(stdout);
        free(t);
    }
    return 0;
}
