/* Core scheduling's cost from user space (make bench-coresched-user; issue 38 item 5): the
 * workloads of Cadence's in-kernel `bench coresched` (kernel/src/bench/coresched.rs), run by
 * threads of one process that get their cookies through prctl(PR_SCHED_CORE), so the same
 * binary runs on Cadence and on Linux.
 *
 * Workloads (all threads SCHED_OTHER, nice 0; N = threads per group, default the online CPUs):
 *   cpu       two groups of N threads counting loops; ops = loops per second of all of them;
 *   pipe+cpu  a pipe ping-pong pair (one group) beside a group of N counting threads (another);
 *             ops = round trips per second of the pair.
 * Modes:
 *   off     no cookies, every thread on every CPU (a kernel without core scheduling);
 *   on      each group gets its own cookie, as `bench coresched` gives them: CREATE on the
 *           group's first thread (PIDTYPE_PID), SHARE_FROM it into the controlling thread,
 *           SHARE_TO each other member, then SHARE_FROM a thread that never had a cookie to
 *           drop it again;
 *   pinned  no cookies, every thread confined to thread 0 of each core (the lowest CPU of each
 *           cpuN/topology/thread_siblings_list), siblings online and idle;
 *   nosmt   no cookies, every thread on every CPU, meant for a system whose SMT siblings are
 *           offline (a `nosmt` boot, or Linux's /sys/devices/system/cpu/smt/control = off).
 * Default modes: off,on,pinned with SMT siblings online; nosmt when smt/control says off;
 * off alone without SMT.
 *
 * One line per run:
 *   coresched: mode=<m> workload=<w> ops_per_s=<n> normalized=<x.xx|n/a> forced_idle_pct=<p|n/a>
 * normalized = ops_per_s / this process's `off` run of the workload; forced_idle_pct = the
 * workers' core_forceidle_sum (/proc/self/task/TID/sched: Linux with CONFIG_SCHED_CORE and
 * schedstats, and Cadence) over the measured time times the online CPUs, n/a where the kernel
 * has no such field. A kernel without core scheduling answers prctl(PR_SCHED_CORE) with EINVAL
 * (ENODEV without SMT): mode on is then reported as
 *   coresched: mode=on workload=<w> ops_per_s=n/a normalized=n/a forced_idle_pct=n/a error=<ERRNO>
 * and the other modes still run.
 *
 * Usage: coresched-bench [-d S] [-n N] [-r R] [-m MODE,...] [-w WORKLOAD,...]   (S default 2)
 * -r R runs the modes of each workload R times in turn (off, on, pinned, off, on, ...; default
 * 1), so a host whose load drifts (under TCG every vCPU is a host thread) weighs on every mode
 * alike; `normalized` divides by the latest `off` run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Linux's constants (include/uapi/linux/prctl.h, pid_type). */
#define CS_PR_SCHED_CORE 62
#define CS_GET 0
#define CS_CREATE 1
#define CS_SHARE_TO 2
#define CS_SHARE_FROM 3
#define CS_PIDTYPE_PID 0

#define MAX_THREADS 130

struct worker {
    _Alignas(64) atomic_ullong count; /* loops (hogs) or round trips (ping) */
    atomic_int tid;
    int kind; /* 0 hog, 1 ping, 2 pong */
    int rfd, wfd;
    cpu_set_t affinity;
    pthread_t thread;
};

static struct worker workers[MAX_THREADS];
static atomic_int stop;
static int plain_tid; /* a thread that never has a cookie */
static atomic_int plain_stop;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_ns(long long ns) {
    struct timespec t = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

static int core_prctl(int cmd, int pid) {
    return prctl(CS_PR_SCHED_CORE, cmd, pid, CS_PIDTYPE_PID, 0);
}

static void *plain_thread(void *arg) {
    (void)arg;
    atomic_store(&plain_tid, (int)syscall(SYS_gettid));
    while (!atomic_load(&plain_stop))
        sleep_ns(10000000);
    return NULL;
}

static void *work(void *arg) {
    struct worker *w = arg;
    if (sched_setaffinity(0, sizeof w->affinity, &w->affinity) != 0)
        perror("coresched-bench: sched_setaffinity");
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    if (w->kind == 0) {
        unsigned long long n = 0;
        while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
            n++;
            if ((n & 4095) == 0)
                atomic_store_explicit(&w->count, n, memory_order_relaxed);
        }
    } else if (w->kind == 1) {
        char b = 0;
        unsigned long long n = 0;
        while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
            if (write(w->wfd, &b, 1) != 1 || read(w->rfd, &b, 1) != 1)
                break;
            atomic_store_explicit(&w->count, ++n, memory_order_relaxed);
        }
        close(w->wfd); /* pong reads end of file */
    } else {
        char b;
        while (read(w->rfd, &b, 1) == 1 && write(w->wfd, &b, 1) == 1) {
        }
    }
    return NULL;
}

/* Gives threads [first, first+n) one new cookie (see the header). 0 or an errno. */
static int cookie_group(int first, int n) {
    if (core_prctl(CS_CREATE, workers[first].tid) != 0)
        return errno;
    if (core_prctl(CS_SHARE_FROM, workers[first].tid) != 0)
        return errno;
    for (int i = first + 1; i < first + n; i++)
        if (core_prctl(CS_SHARE_TO, workers[i].tid) != 0)
            return errno;
    if (core_prctl(CS_SHARE_FROM, plain_tid) != 0)
        return errno;
    return 0;
}

/* core_forceidle_sum of every worker (ns), or -1 if the kernel shows none. */
static long long forced_idle_ns(int nthreads) {
    long long sum = 0;
    int found = 0;
    for (int i = 0; i < nthreads; i++) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/sched", workers[i].tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "core_forceidle_sum", 18) != 0)
                continue;
            char *colon = strchr(line, ':');
            long long ms = 0, frac = 0;
            if (colon && sscanf(colon + 1, " %lld.%lld", &ms, &frac) >= 1) {
                sum += ms * 1000000LL + frac;
                found = 1;
            }
        }
        fclose(f);
    }
    return found ? sum : -1;
}

static const char *errname(int e) {
    switch (e) {
    case EINVAL: return "EINVAL";
    case ENODEV: return "ENODEV";
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case ENOMEM: return "ENOMEM";
    default: return "errno";
    }
}

static cpu_set_t all_cpus, first_threads;
static int online;

/* thread 0 of each core: CPUs that are the lowest of their thread_siblings_list. */
static void find_first_threads(void) {
    CPU_ZERO(&first_threads);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &all_cpus))
            continue;
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        FILE *f = fopen(path, "r");
        int lowest = c;
        if (f) {
            if (fscanf(f, "%d", &lowest) != 1)
                lowest = c;
            fclose(f);
        }
        if (lowest == c)
            CPU_SET(c, &first_threads);
    }
}

static int smt_online(void) {
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &all_cpus))
            continue;
        if (!CPU_ISSET(c, &first_threads))
            return 1;
    }
    return 0;
}

static void smt_control(char *out, size_t len) {
    FILE *f = fopen("/sys/devices/system/cpu/smt/control", "r");
    snprintf(out, len, "unknown");
    if (f) {
        if (fgets(out, (int)len, f))
            out[strcspn(out, "\n")] = 0;
        fclose(f);
    }
}

/* Runs one workload in one mode. Returns 0 (ops and forced idle filled) or an errno of prctl. */
static int run(const char *workload, const char *mode, int secs, int per_group, double *ops, double *fi_pct) {
    int cookies = strcmp(mode, "on") == 0;
    const cpu_set_t *aff = strcmp(mode, "pinned") == 0 ? &first_threads : &all_cpus;
    int cpu = strcmp(workload, "cpu") == 0;
    int n = 0, err = 0;
    int p1[2] = {-1, -1}, p2[2] = {-1, -1};
    atomic_store(&stop, 0);
    memset(workers, 0, sizeof workers);
    if (cpu) {
        for (int i = 0; i < 2 * per_group; i++)
            workers[n++].kind = 0;
    } else {
        if (pipe(p1) != 0 || pipe(p2) != 0) {
            perror("coresched-bench: pipe");
            exit(1);
        }
        workers[n].kind = 1; /* ping: writes p1, reads p2 */
        workers[n].wfd = p1[1];
        workers[n++].rfd = p2[0];
        workers[n].kind = 2; /* pong */
        workers[n].rfd = p1[0];
        workers[n++].wfd = p2[1];
        for (int i = 0; i < per_group; i++)
            workers[n++].kind = 0;
    }
    for (int i = 0; i < n; i++) {
        workers[i].affinity = *aff;
        if (pthread_create(&workers[i].thread, NULL, work, &workers[i]) != 0) {
            fprintf(stderr, "coresched-bench: cannot start a thread\n");
            exit(1);
        }
    }
    for (int i = 0; i < n; i++)
        while (!atomic_load(&workers[i].tid))
            sleep_ns(1000000);
    if (cookies) {
        /* cpu: two groups of per_group; pipe+cpu: the pair, then the hogs. */
        int a = cpu ? per_group : 2;
        err = cookie_group(0, a);
        if (!err)
            err = cookie_group(a, n - a);
    }
    int counted = cpu ? n : 1; /* pipe+cpu counts the ping's round trips only */
    long long w0 = 0, w1 = 0;
    long long fi0 = 0, fi1 = 0, t0 = 0, t1 = 0;
    if (!err) {
        sleep_ns(100000000);
        fi0 = forced_idle_ns(n);
        for (int i = 0; i < counted; i++)
            w0 += atomic_load(&workers[i].count);
        t0 = now_ns();
        sleep_ns((long long)secs * 1000000000LL);
        t1 = now_ns();
        for (int i = 0; i < counted; i++)
            w1 += atomic_load(&workers[i].count);
        fi1 = forced_idle_ns(n);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].thread, NULL);
    if (!cpu) { /* p1[1] was closed by the ping */
        close(p1[0]);
        close(p2[0]);
        close(p2[1]);
    }
    if (err)
        return err;
    double dt = (double)(t1 - t0);
    *ops = (double)(w1 - w0) * 1e9 / dt;
    *fi_pct = fi0 < 0 || fi1 < 0 ? -1 : 100.0 * (double)(fi1 - fi0) / (dt * online);
    return 0;
}

static int listed(const char *list, const char *word) {
    size_t l = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += l)
        if ((p == list || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    int secs = 2, per_group = 0, reps = 1;
    const char *modes = NULL, *workloads = "cpu,pipe+cpu";
    int opt;
    while ((opt = getopt(argc, argv, "d:n:r:m:w:")) != -1) {
        switch (opt) {
        case 'd': secs = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'n': per_group = atoi(optarg); break;
        case 'm': modes = optarg; break;
        case 'w': workloads = optarg; break;
        default:
            fprintf(stderr, "usage: coresched-bench [-d S] [-n N] [-r R] [-m off,on,pinned|nosmt] [-w cpu,pipe+cpu]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (sched_getaffinity(0, sizeof all_cpus, &all_cpus) != 0) {
        perror("coresched-bench: sched_getaffinity");
        return 1;
    }
    online = CPU_COUNT(&all_cpus);
    if (per_group <= 0)
        per_group = online;
    if (secs < 1 || reps < 1 || per_group > (MAX_THREADS - 2) / 2) {
        fprintf(stderr, "coresched-bench: -d and -r must be >= 1 and -n at most %d\n", (MAX_THREADS - 2) / 2);
        return 2;
    }
    find_first_threads();
    char control[32];
    smt_control(control, sizeof control);
    int smt = smt_online();
    if (!modes)
        modes = smt ? "off,on,pinned" : (strcmp(control, "off") == 0 || strcmp(control, "forceoff") == 0) ? "nosmt" : "off";
    /* Does the kernel have core scheduling? (GET on ourselves: EINVAL without CONFIG_SCHED_CORE,
     * ENODEV without SMT.) */
    unsigned long long cookie = 0;
    int prctl_err = prctl(CS_PR_SCHED_CORE, CS_GET, 0, CS_PIDTYPE_PID, (unsigned long)&cookie) == 0 ? 0 : errno;
    pthread_t plain;
    if (pthread_create(&plain, NULL, plain_thread, NULL) != 0) {
        fprintf(stderr, "coresched-bench: cannot start a thread\n");
        return 1;
    }
    while (!atomic_load(&plain_tid))
        sleep_ns(1000000);
    printf("coresched-bench: online_cpus=%d cores=%d smt_control=%s tasks_per_group=%d secs=%d modes=%s prctl=%s reps=%d\n", online,
           CPU_COUNT(&first_threads), control, per_group, secs, modes, prctl_err ? errname(prctl_err) : "ok", reps);
    if (prctl_err && listed(modes, "on"))
        printf("coresched-bench: prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET) failed: %s (%s): mode on cannot run here\n", strerror(prctl_err),
               prctl_err == EINVAL ? "a kernel without core scheduling, CONFIG_SCHED_CORE" : prctl_err == ENODEV ? "no SMT siblings" : "?");
    const char *all_modes[] = {"off", "on", "pinned", "nosmt"};
    const char *all_workloads[] = {"cpu", "pipe+cpu"};
    int status = 0;
    for (int wi = 0; wi < 2; wi++) {
        if (!listed(workloads, all_workloads[wi]))
            continue;
        double base = 0;
        for (int k = 0; k < 4 * reps; k++) {
            int mi = k % 4;
            const char *m = all_modes[mi], *w = all_workloads[wi];
            if (!listed(modes, m))
                continue;
            double ops = 0, fi = 0;
            int e = mi == 1 && prctl_err ? prctl_err : run(w, m, secs, per_group, &ops, &fi);
            if (e) {
                printf("coresched: mode=%s workload=%s ops_per_s=n/a normalized=n/a forced_idle_pct=n/a error=%s\n", m, w, errname(e));
                if (!prctl_err)
                    status = 1; /* prctl failed mid-way where GET worked: a real failure */
                continue;
            }
            if (mi == 0)
                base = ops;
            char norm[32], fis[32];
            if (base > 0)
                snprintf(norm, sizeof norm, "%.2f", ops / base);
            else
                snprintf(norm, sizeof norm, "n/a");
            if (fi >= 0)
                snprintf(fis, sizeof fis, "%.1f", fi);
            else
                snprintf(fis, sizeof fis, "n/a");
            printf("coresched: mode=%s workload=%s ops_per_s=%.0f normalized=%s forced_idle_pct=%s\n", m, w, ops, norm, fis);
        }
    }
    atomic_store(&plain_stop, 1);
    pthread_join(plain, NULL);
    return status;
}
