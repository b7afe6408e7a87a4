/* The bandwidth-control experiment (make compare-bandwidth): a cgroup v2 group with
 * cpu.max "QUOTA PERIOD" runs N spinners on N CPUs for S seconds; the group's share of one CPU
 * is measured three ways: by cpu.stat usage_usec (the group's count), by the spinners' own CPU
 * times (CLOCK_PROCESS_CPUTIME_ID, the tasks' count), and by the spinners' own loop counts against a spinner's rate outside the group (calibrated first with N spinners at
 * once, so that the vCPUs share the host as they do in the group).
 *
 *   bw-bench: calibrate spinners=<n> rate_per_ms=<n>
 *   bw-bench: spinner=<i> count=<n> cpu_ms=<n>
 *   bw-bench: cpu.max="<quota> <period>" spinners=<n> seconds=<s> usage_share=<x.xxx>
 *             cputime_share=<x.xxx> count_share=<x.xxx> nr_periods=<n> nr_throttled=<n> throttled_usec=<n>
 *
 * Usage: bw-bench [quota_us] [period_us] [spinners] [seconds]  (defaults 50000 100000 4 10).
 * Mounts cgroup2 at /sys/fs/cgroup if nothing is there (both kernels), enables +cpu in the
 * root's subtree_control, makes /sys/fs/cgroup/bw-bench. Needs root. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CG "/sys/fs/cgroup"
#define GRP CG "/bw-bench"

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spins until `until` (CLOCK_MONOTONIC ns), counting loops of a fixed amount of work. */
static unsigned long long spin_until(long long until) {
    unsigned long long count = 0;
    volatile unsigned long sink = 0;
    while (now_ns() < until) {
        for (int i = 0; i < 1000; i++)
            sink += i;
        count++;
    }
    return count;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "bw-bench: write %s '%s': %s\n", path, text, strerror(errno));
        exit(1);
    }
}

/* A field of cpu.stat. */
static long long stat_field(const char *name) {
    FILE *f = fopen(GRP "/cpu.stat", "r");
    char key[64];
    long long v, found = -1;
    if (!f) {
        perror("bw-bench: cpu.stat");
        exit(1);
    }
    while (fscanf(f, "%63s %lld", key, &v) == 2)
        if (strcmp(key, name) == 0)
            found = v;
    fclose(f);
    return found;
}

int main(int argc, char **argv) {
    long quota = argc > 1 ? atol(argv[1]) : 50000, period = argc > 2 ? atol(argv[2]) : 100000;
    int n = argc > 3 ? atoi(argv[3]) : 4, secs = argc > 4 ? atoi(argv[4]) : 10;
    char buf[64];
    struct stat st;

    if (stat(CG "/cgroup.controllers", &st) != 0 && mount("none", CG, "cgroup2", 0, NULL) != 0) {
        perror("bw-bench: mount cgroup2");
        return 1;
    }
    put(CG "/cgroup.subtree_control", "+cpu");
    if (mkdir(GRP, 0755) != 0 && errno != EEXIST) {
        perror("bw-bench: mkdir");
        return 1;
    }
    snprintf(buf, sizeof buf, "%ld %ld", quota, period);
    put(GRP "/cpu.max", buf);

    int fds[64][2];
    pid_t pids[64];
    if (n > 64)
        n = 64;
    /* N spinners at once outside the group, for 2 s: the loops per ms of one CPU when N vCPUs
     * run together (under TCG they share the host's cores, as they do in the group). */
    long long cal_end = now_ns() + 2000000000LL;
    unsigned long long cal = 0;
    for (int i = 0; i < n; i++) {
        if (pipe(fds[i]) != 0)
            return 1;
        pids[i] = fork();
        if (pids[i] == 0) {
            unsigned long long c[2] = {spin_until(cal_end), 0};
            if (write(fds[i][1], c, sizeof c) != sizeof c)
                _exit(1);
            _exit(0);
        }
    }
    for (int i = 0; i < n; i++) {
        unsigned long long c[2] = {0, 0};
        if (read(fds[i][0], c, sizeof c) != sizeof c)
            fprintf(stderr, "bw-bench: calibration spinner %d sent nothing\n", i);
        waitpid(pids[i], NULL, 0);
        close(fds[i][0]);
        close(fds[i][1]);
        cal += c[0];
    }
    double rate = cal / (n * 2000.0);
    printf("bw-bench: calibrate spinners=%d rate_per_ms=%.0f\n", n, rate);
    fflush(stdout);

    long long start = now_ns() + 300000000LL, end = start + secs * 1000000000LL;
    struct timespec at = {start / 1000000000LL, start % 1000000000LL};
    for (int i = 0; i < n; i++) {
        if (pipe(fds[i]) != 0)
            return 1;
        pids[i] = fork();
        if (pids[i] == 0) {
            put(GRP "/cgroup.procs", "0");
            /* Asleep until the start: the group's usage before it is nothing. */
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
                ;
            unsigned long long c[2] = {spin_until(end), 0};
            struct timespec cpu;
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
            c[1] = cpu.tv_sec * 1000000000ULL + cpu.tv_nsec;
            if (write(fds[i][1], c, sizeof c) != sizeof c)
                _exit(1);
            _exit(0);
        }
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
    long long usage0 = stat_field("usage_usec");
    unsigned long long total = 0, cpu_ns = 0;
    for (int i = 0; i < n; i++) {
        unsigned long long c[2] = {0, 0};
        if (read(fds[i][0], c, sizeof c) != sizeof c)
            fprintf(stderr, "bw-bench: spinner %d sent nothing\n", i);
        waitpid(pids[i], NULL, 0);
        printf("bw-bench: spinner=%d count=%llu cpu_ms=%llu\n", i, c[0], c[1] / 1000000);
        total += c[0];
        cpu_ns += c[1];
    }
    long long usage = stat_field("usage_usec") - usage0;
    double wall_us = secs * 1e6;
    printf("bw-bench: cpu.max=\"%ld %ld\" spinners=%d seconds=%d usage_share=%.3f cputime_share=%.3f count_share=%.3f "
           "nr_periods=%lld nr_throttled=%lld throttled_usec=%lld\n",
           quota, period, n, secs, usage / wall_us, cpu_ns / (wall_us * 1000.0), total / (rate * secs * 1000.0), stat_field("nr_periods"),
           stat_field("nr_throttled"), stat_field("throttled_usec"));
    rmdir(GRP);
    return 0;
}
