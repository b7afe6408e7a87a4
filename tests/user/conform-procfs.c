/* Differential conformance: /proc and /sys. What procps, libnuma, glibc's sysconf and rt-tests
 * read: /proc/PID/{stat,status,sched,task,comm,...} of itself, of a thread and of a child in
 * each state (sleeping, stopped, zombie, reaped), /proc/{self,thread-self,uptime,loadavg,stat,
 * meminfo}, /proc/sys/kernel tunables read and written, the errors of the generated trees, and
 * the CPU files of /sys. Prints facts that hold on any machine of the same QEMU topology
 * (field names and counts, values checked against the syscalls that report the same thing),
 * never raw pids or times. The output must equal Linux's
 * (tests/fixtures/conform-procfs.linux-6.1.txt). */
#define _GNU_SOURCE
#define CONFORM_WIDTH "48"
#include "conform.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char buf[65536];

/* The whole of a file, NUL-terminated, in `buf`; its length or -1. */
static long slurp(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long n = 0, r;
    while ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += r;
    close(fd);
    buf[n] = 0;
    return r < 0 ? -1 : n;
}

/* The value after "key:\t" in a status-like text (in `buf`), or "" */
static const char *field(const char *key) {
    static char v[1024];
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s:", key);
    const char *p = strncmp(buf, pat + 1, strlen(pat + 1)) == 0 ? buf - 1 : strstr(buf, pat);
    if (!p) return "";
    p += strlen(pat);
    while (*p == '\t' || *p == ' ') p++;
    size_t n = strcspn(p, "\n");
    if (n >= sizeof v) n = sizeof v - 1;
    memcpy(v, p, n);
    v[n] = 0;
    return v;
}

/* Field `n` (1-based) of a /proc/PID/stat line in `buf` (the comm may hold spaces). */
static long stat_field(int n) {
    if (n <= 2) return 0;
    const char *p = strrchr(buf, ')');
    if (!p) return -999;
    p += 2;
    for (int i = 3; i < n; i++) {
        p = strchr(p, ' ');
        if (!p) return -999;
        p++;
    }
    if (n == 3) return *p;
    return strtol(p, NULL, 10);
}

static int stat_fields(void) {
    const char *p = strrchr(buf, ')');
    int n = 2;
    for (; p && *p; p++)
        if (*p == ' ') n++;
    return n;
}

/* The names of a status-like text's fields, joined by ',' (one line). */
static void print_keys(const char *label) {
    printf("%-" CONFORM_WIDTH "s = ", label);
    for (const char *p = buf; *p;) {
        const char *colon = strchr(p, ':');
        const char *nl = strchr(p, '\n');
        if (!colon || (nl && nl < colon)) break;
        printf("%.*s,", (int)(colon - p), p);
        if (!nl) break;
        p = nl + 1;
    }
    printf("\n");
}

/* `name` in directory `dir`? */
static int listed(const char *dir, const char *name) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, name) == 0) found = 1;
    closedir(d);
    return found;
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static long sched_value(const char *key) {
    const char *p = strstr(buf, key);
    if (!p) return -999;
    p = strchr(p, ':');
    return p ? strtol(p + 1, NULL, 10) : -999;
}

static volatile int thread_go;
static pid_t thread_tid;

static void *thread_main(void *arg) {
    (void)arg;
    thread_tid = syscall(SYS_gettid);
    while (!thread_go) usleep(1000);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pid_t me = getpid();
    char path[256], want[256];

    /* The links to oneself. */
    char link[256];
    long n = readlink("/proc/self", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    snprintf(want, sizeof want, "%d", me);
    VALUE("readlink /proc/self is the pid", strcmp(link, want) == 0);
    n = readlink("/proc/thread-self", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    snprintf(want, sizeof want, "%d/task/%d", me, me);
    VALUE("readlink /proc/thread-self is pid/task/tid", strcmp(link, want) == 0);
    n = readlink("/proc/self/exe", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    VALUE("/proc/self/exe ends in conform-procfs", n > 14 && strcmp(link + n - 14, "conform-procfs") == 0);

    /* status */
    CALL("read /proc/self/status", slurp("/proc/self/status") > 0);
    print_keys("status fields");
    VALUE("status Name is comm", strcmp(field("Name"), "conform-procfs") == 0);
    VALUE("status State", field("State")[0]);
    VALUE("status Pid is getpid", atol(field("Pid")) == me);
    VALUE("status Tgid is getpid", atol(field("Tgid")) == me);
    VALUE("status PPid is getppid", atol(field("PPid")) == getppid());
    VALUE("status Threads", atol(field("Threads")));
    VALUE("status Umask is umask", strtol(field("Umask"), NULL, 8) == 022);
    printf("%-" CONFORM_WIDTH "s = %s\n", "status Cpus_allowed", field("Cpus_allowed"));
    printf("%-" CONFORM_WIDTH "s = %s\n", "status Cpus_allowed_list", field("Cpus_allowed_list"));
    printf("%-" CONFORM_WIDTH "s = %zu\n", "status Mems_allowed width", strlen(field("Mems_allowed")));
    printf("%-" CONFORM_WIDTH "s = %s\n", "status Mems_allowed_list", field("Mems_allowed_list"));
    printf("%-" CONFORM_WIDTH "s = [%s]\n", "status Groups", field("Groups"));
    printf("%-" CONFORM_WIDTH "s = %s\n", "status SigBlk", field("SigBlk"));
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGUSR2, SIG_IGN);
    slurp("/proc/self/status");
    printf("%-" CONFORM_WIDTH "s = %s\n", "status SigBlk after blocking SIGUSR1", field("SigBlk"));
    printf("%-" CONFORM_WIDTH "s = %s\n", "status SigIgn has SIGUSR2", (strtoull(field("SigIgn"), NULL, 16) >> (SIGUSR2 - 1)) & 1 ? "yes" : "no");
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    long vol0 = atol(field("voluntary_ctxt_switches"));
    usleep(2000);
    slurp("/proc/self/status");
    VALUE("status voluntary switches grow on sleep", atol(field("voluntary_ctxt_switches")) > vol0);

    /* stat */
    CALL("read /proc/self/stat", slurp("/proc/self/stat") > 0);
    VALUE("stat fields", stat_fields());
    VALUE("stat pid", stat_field(1) == 0 && atol(buf) == me);
    VALUE("stat comm", strncmp(strchr(buf, '('), "(conform-procfs)", 16) == 0);
    VALUE("stat state", stat_field(3));
    VALUE("stat ppid", stat_field(4) == getppid());
    VALUE("stat pgrp", stat_field(5) == getpgrp());
    VALUE("stat session", stat_field(6) == getsid(0));
    VALUE("stat priority (normal)", stat_field(18));
    VALUE("stat nice (normal)", stat_field(19));
    VALUE("stat num_threads", stat_field(20));
    VALUE("stat rsslim", stat_field(25) == -1 || (unsigned long)stat_field(25) == ~0UL);
    VALUE("stat exit_signal", stat_field(38));
    VALUE("stat processor is a cpu", stat_field(39) >= 0 && stat_field(39) < sysconf(_SC_NPROCESSORS_ONLN));
    VALUE("stat rt_priority (normal)", stat_field(40));
    VALUE("stat policy (normal)", stat_field(41));
    VALUE("stat vsize > 0", stat_field(23) > 0);
    VALUE("stat rss > 0", stat_field(24) > 0);
    setpriority(PRIO_PROCESS, 0, 5);
    slurp("/proc/self/stat");
    VALUE("stat priority after nice 5", stat_field(18));
    VALUE("stat nice after nice 5", stat_field(19));
    struct sched_param sp = {.sched_priority = 10};
    CALL("sched_setscheduler FIFO 10", sched_setscheduler(0, SCHED_FIFO, &sp));
    slurp("/proc/self/stat");
    VALUE("stat priority (FIFO 10)", stat_field(18));
    VALUE("stat rt_priority (FIFO 10)", stat_field(40));
    VALUE("stat policy (FIFO 10)", stat_field(41));

    /* sched */
    CALL("read /proc/self/sched", slurp("/proc/self/sched") > 0);
    snprintf(want, sizeof want, "conform-procfs (%d, #threads: 1)\n", me);
    VALUE("sched header", strncmp(buf, want, strlen(want)) == 0);
    VALUE("sched policy (FIFO 10)", sched_value("\npolicy "));
    VALUE("sched prio (FIFO 10)", sched_value("\nprio "));
    VALUE("sched has nr_voluntary_switches", sched_value("\nnr_voluntary_switches ") >= 0);
    VALUE("sched has nr_involuntary_switches", sched_value("\nnr_involuntary_switches ") >= 0);
    VALUE("sched has se.nr_migrations", sched_value("\nse.nr_migrations ") >= 0);
    VALUE("sched has se.sum_exec_runtime", strstr(buf, "\nse.sum_exec_runtime ") != NULL);
    sp.sched_priority = 0;
    sched_setscheduler(0, SCHED_OTHER, &sp);
    slurp("/proc/self/sched");
    VALUE("sched policy back to normal", sched_value("\npolicy "));
    VALUE("sched prio at nice 5", sched_value("\nprio "));
    CALL("read /proc/self/schedstat", slurp("/proc/self/schedstat") > 0);
    unsigned long long run = 0, wait = 0, slices = 0;
    VALUE("schedstat has three numbers", sscanf(buf, "%llu %llu %llu", &run, &wait, &slices) == 3);
    VALUE("schedstat run time > 0", run > 0);

    /* comm, written and read through prctl. */
    CALL("prctl PR_SET_NAME renamed", prctl(PR_SET_NAME, "renamed"));
    slurp("/proc/self/comm");
    printf("%-" CONFORM_WIDTH "s = %s", "comm after PR_SET_NAME", buf);
    int fd = open("/proc/self/comm", O_WRONLY);
    CALL("write /proc/self/comm", write(fd, "written", 7));
    close(fd);
    char name[32] = {0};
    prctl(PR_GET_NAME, name);
    printf("%-" CONFORM_WIDTH "s = %s\n", "PR_GET_NAME after writing comm", name);
    prctl(PR_SET_NAME, "conform-procfs");

    /* limits */
    CALL("read /proc/self/limits", slurp("/proc/self/limits") > 0);
    int lines = 0;
    for (char *p = buf; *p; p++)
        if (*p == '\n') lines++;
    VALUE("limits lines", lines);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    char *nofile = strstr(buf, "Max open files");
    VALUE("limits open files soft is getrlimit's", nofile && strtoul(nofile + 26, NULL, 10) == rl.rlim_cur);
    CALL("read /proc/self/maps", slurp("/proc/self/maps") > 0);
    VALUE("maps has [stack]", strstr(buf, "[stack]") != NULL);
    VALUE("maps has the program", strstr(buf, "conform-procfs") != NULL);
    VALUE("cmdline is argv", slurp("/proc/self/cmdline") > 0 && strstr(buf, "conform-procfs") != NULL);

    /* Threads: listed under task/, found but not listed at the top. */
    pthread_t th;
    pthread_create(&th, NULL, thread_main, NULL);
    while (!thread_tid) usleep(1000);
    snprintf(path, sizeof path, "/proc/%d/task", me);
    VALUE("task entries with a thread", count_entries(path));
    snprintf(want, sizeof want, "%d", thread_tid);
    VALUE("thread listed in task", listed(path, want));
    VALUE("thread listed in /proc", listed("/proc", want));
    snprintf(want, sizeof want, "%d", me);
    VALUE("process listed in /proc", listed("/proc", want));
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", me, thread_tid);
    VALUE("thread stat pid is its tid", slurp(path) > 0 && atol(buf) == thread_tid);
    VALUE("thread stat num_threads", stat_field(20));
    snprintf(path, sizeof path, "/proc/%d/status", thread_tid);
    VALUE("/proc/TID/status found", slurp(path) > 0);
    VALUE("/proc/TID/status Tgid is the pid", atol(field("Tgid")) == me);
    VALUE("/proc/TID/status Pid is the tid", atol(field("Pid")) == thread_tid);
    snprintf(path, sizeof path, "/proc/%d/task/%d/task", me, thread_tid);
    CALL("thread dir has no task/", access(path, F_OK));
    thread_go = 1;
    pthread_join(th, NULL);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);
    slurp("/proc/self/status");
    printf("%-" CONFORM_WIDTH "s = %s\n", "Cpus_allowed pinned to 0", field("Cpus_allowed"));
    printf("%-" CONFORM_WIDTH "s = %s\n", "Cpus_allowed_list pinned to 0", field("Cpus_allowed_list"));
    slurp("/proc/self/stat");
    VALUE("stat processor pinned to 0", stat_field(39));
    CPU_ZERO(&cpus);
    for (int c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); c++) CPU_SET(c, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);

    /* A child, in each state. */
    pid_t c = fork();
    if (c == 0) {
        for (;;) pause();
    }
    usleep(50000);
    snprintf(path, sizeof path, "/proc/%d/stat", c);
    slurp(path);
    VALUE("child stat state (pause)", stat_field(3));
    VALUE("child stat ppid is me", stat_field(4) == me);
    kill(c, SIGSTOP);
    siginfo_t si;
    waitid(P_PID, c, &si, WSTOPPED | WNOWAIT);
    slurp(path);
    VALUE("child stat state (stopped)", stat_field(3));
    snprintf(want, sizeof want, "/proc/%d/status", c);
    slurp(want);
    printf("%-" CONFORM_WIDTH "s = %s\n", "child status State (stopped)", field("State"));
    kill(c, SIGKILL);
    waitid(P_PID, c, &si, WEXITED | WNOWAIT);
    slurp(path);
    VALUE("child stat state (zombie)", stat_field(3));
    waitpid(c, NULL, 0);
    CALL("child stat after reaping", open(path, O_RDONLY));

    /* System-wide files. */
    CALL("read /proc/uptime", slurp("/proc/uptime") > 0);
    double up = 0, idle = 0;
    VALUE("uptime has two numbers", sscanf(buf, "%lf %lf", &up, &idle) == 2);
    struct sysinfo sinfo;
    sysinfo(&sinfo);
    VALUE("uptime agrees with sysinfo", (long)up >= sinfo.uptime - 1 && (long)up <= sinfo.uptime + 1);
    CALL("read /proc/loadavg", slurp("/proc/loadavg") > 0);
    double l1, l5, l15;
    int running, total, last;
    VALUE("loadavg format", sscanf(buf, "%lf %lf %lf %d/%d %d", &l1, &l5, &l15, &running, &total, &last) == 6);
    VALUE("loadavg running <= total", running >= 1 && running <= total);
    CALL("read /proc/stat", slurp("/proc/stat") > 0);
    VALUE("stat begins with cpu", strncmp(buf, "cpu  ", 5) == 0);
    int cpulines = 0;
    for (char *p = buf; (p = strstr(p, "\ncpu")); p++) cpulines++;
    VALUE("stat cpuN lines", cpulines);
    VALUE("stat has ctxt btime processes procs_running",
          strstr(buf, "\nctxt ") && strstr(buf, "\nbtime ") && strstr(buf, "\nprocesses ") && strstr(buf, "\nprocs_running "));
    CALL("read /proc/meminfo", slurp("/proc/meminfo") > 0);
    VALUE("meminfo begins MemTotal MemFree MemAvailable", strncmp(buf, "MemTotal:", 9) == 0 && strstr(buf, "\nMemFree:") && strstr(buf, "\nMemAvailable:"));
    VALUE("meminfo MemTotal is sysinfo's", strtoul(field("MemTotal"), NULL, 10) == sinfo.totalram * sinfo.mem_unit / 1024);
    VALUE("cpuinfo processors", ({ slurp("/proc/cpuinfo"); int k = 0; for (char *p = buf; (p = strstr(p, "processor\t")); p++) k++; k; }));

    /* sysctls as files. */
    CALL("read sched_rr_timeslice_ms", slurp("/proc/sys/kernel/sched_rr_timeslice_ms") > 0);
    printf("%-" CONFORM_WIDTH "s = %s", "sched_rr_timeslice_ms", buf);
    slurp("/proc/sys/kernel/sched_rt_period_us");
    printf("%-" CONFORM_WIDTH "s = %s", "sched_rt_period_us", buf);
    slurp("/proc/sys/kernel/sched_rt_runtime_us");
    printf("%-" CONFORM_WIDTH "s = %s", "sched_rt_runtime_us", buf);
    fd = open("/proc/sys/kernel/sched_rt_runtime_us", O_WRONLY | O_TRUNC);
    CALL("write sched_rt_runtime_us abc", write(fd, "abc\n", 4));
    CALL("write sched_rt_runtime_us 900000", write(fd, "900000\n", 7));
    close(fd);
    slurp("/proc/sys/kernel/sched_rt_runtime_us");
    printf("%-" CONFORM_WIDTH "s = %s", "sched_rt_runtime_us after write", buf);
    fd = open("/proc/sys/kernel/sched_rt_runtime_us", O_WRONLY | O_TRUNC);
    CALL("write sched_rt_runtime_us 950000", write(fd, "950000\n", 7));
    close(fd);
    VALUE("kernel dir lists sched_rt_period_us", listed("/proc/sys/kernel", "sched_rt_period_us"));
    /* kernel.threads-max: 1 to FUTEX_TID_MASK (Linux 6.1's sysctl_max_threads); the value read
     * back is the value written. */
    {
        char old[64];
        CALL("read threads-max", slurp("/proc/sys/kernel/threads-max") > 0);
        snprintf(old, sizeof old, "%s", buf);
        VALUE("threads-max > 20", strtol(old, NULL, 10) > 20);
        fd = open("/proc/sys/kernel/threads-max", O_WRONLY | O_TRUNC);
        CALL("write threads-max 0", write(fd, "0\n", 2));
        close(fd);
        fd = open("/proc/sys/kernel/threads-max", O_WRONLY | O_TRUNC);
        CALL("write threads-max 1073741824", write(fd, "1073741824\n", 11));
        close(fd);
        fd = open("/proc/sys/kernel/threads-max", O_WRONLY | O_TRUNC);
        CALL("write threads-max 19", write(fd, "19\n", 3));
        close(fd);
        slurp("/proc/sys/kernel/threads-max");
        printf("%-" CONFORM_WIDTH "s = %s", "threads-max after write", buf);
        fd = open("/proc/sys/kernel/threads-max", O_WRONLY | O_TRUNC);
        CALL("write threads-max back", write(fd, old, strlen(old)) > 0 ? 0 : -1);
        close(fd);
    }

    /* The generated trees' errors. */
    CALL("open /proc/self/nonexistent", open("/proc/self/nonexistent", O_RDONLY));
    CALL("open /proc/999999/stat", open("/proc/999999/stat", O_RDONLY));
    CALL("mkdir /proc/x", mkdir("/proc/x", 0755));
    CALL("creat /proc/y", open("/proc/y", O_CREAT | O_WRONLY, 0644));
    CALL("unlink /proc/self/stat", unlink("/proc/self/stat"));
    CALL("rmdir /proc/self/task", rmdir("/proc/self/task"));
    fd = open("/proc/self/stat", O_WRONLY);
    CALL("open /proc/self/stat for writing", fd);
    CALL("write /proc/self/stat", write(fd, "1", 1));
    close(fd);
    CALL("creat /tmp/procfs-x", creat("/tmp/procfs-x", 0644));
    CALL("rename /tmp/procfs-x /proc/x", rename("/tmp/procfs-x", "/proc/x"));
    unlink("/tmp/procfs-x");
    CALL("chdir /proc/self/task", chdir("/proc/self/task"));
    char cwd[256];
    snprintf(want, sizeof want, "/proc/%d/task", me);
    VALUE("getcwd there is /proc/PID/task", getcwd(cwd, sizeof cwd) && strcmp(cwd, want) == 0);
    CALL("chdir ..", chdir(".."));
    snprintf(want, sizeof want, "/proc/%d", me);
    VALUE("getcwd after .. is /proc/PID", getcwd(cwd, sizeof cwd) && strcmp(cwd, want) == 0);
    chdir("/");
    struct stat st;
    CALL("stat /proc/self/stat", stat("/proc/self/stat", &st));
    VALUE("its size", st.st_size);
    VALUE("its mode", st.st_mode);
    CALL("lstat /proc/self", lstat("/proc/self", &st));
    VALUE("is a link", S_ISLNK(st.st_mode));
    CALL("stat /proc/self/", stat("/proc/self/", &st));
    VALUE("is a directory", S_ISDIR(st.st_mode));
    VALUE("its mode", st.st_mode);

    /* /proc/self/fd: what each fd is open on. */
    int ffd = open("/tmp/procfs-fd", O_CREAT | O_RDWR, 0644);
    snprintf(path, sizeof path, "/proc/self/fd/%d", ffd);
    n = readlink(path, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    printf("%-" CONFORM_WIDTH "s = %s\n", "fd link of a file", link);
    int pp[2];
    pipe(pp);
    snprintf(path, sizeof path, "/proc/self/fd/%d", pp[0]);
    n = readlink(path, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    VALUE("fd link of a pipe is pipe:[...]", strncmp(link, "pipe:[", 6) == 0 && link[n - 1] == ']');
    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    snprintf(path, sizeof path, "/proc/self/fd/%d", tfd);
    n = readlink(path, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    printf("%-" CONFORM_WIDTH "s = %s\n", "fd link of a timerfd", link);
    n = readlink("/proc/self/fd/1", link, sizeof link - 1);
    VALUE("fd 1 has a link", n > 0);
    snprintf(want, sizeof want, "%d", ffd);
    VALUE("fd dir lists the file's fd", listed("/proc/self/fd", want));
    VALUE("fd dir lists fd 0", listed("/proc/self/fd", "0"));
    CALL("stat /proc/self/fd", stat("/proc/self/fd", &st));
    VALUE("its mode", st.st_mode);
    close(ffd);
    snprintf(path, sizeof path, "/proc/self/fd/%d", ffd);
    CALL("readlink a closed fd", readlink(path, link, sizeof link));
    VALUE("fd dir no longer lists it", listed("/proc/self/fd", want));
    snprintf(path, sizeof path, "/proc/%d/fd/1", c);
    CALL("readlink a reaped child's fd", readlink(path, link, sizeof link));
    close(pp[0]);
    close(pp[1]);
    close(tfd);
    unlink("/tmp/procfs-fd");

    /* sysfs's CPU files and what glibc makes of them. */
    VALUE("_SC_NPROCESSORS_CONF", sysconf(_SC_NPROCESSORS_CONF));
    VALUE("_SC_NPROCESSORS_ONLN", sysconf(_SC_NPROCESSORS_ONLN));
    const char *sys[] = {
        "/sys/devices/system/cpu/online",
        "/sys/devices/system/cpu/possible",
        "/sys/devices/system/cpu/present",
        "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
        "/sys/devices/system/cpu/cpu0/topology/thread_siblings",
        "/sys/devices/system/cpu/cpu0/topology/core_siblings_list",
        "/sys/devices/system/cpu/cpu1/topology/core_id",
        "/sys/devices/system/cpu/cpu2/topology/core_id",
        "/sys/devices/system/cpu/cpu3/topology/physical_package_id",
        "/sys/devices/system/cpu/cpu1/online",
        "/sys/devices/system/node/online",
        "/sys/devices/system/node/node0/cpulist",
        "/sys/devices/system/node/node0/cpumap",
    };
    for (unsigned i = 0; i < sizeof sys / sizeof *sys; i++) {
        if (slurp(sys[i]) < 0) snprintf(buf, sizeof buf, "(%s)\n", errno_name(errno));
        printf("%-" CONFORM_WIDTH "s = %s", sys[i] + 20, buf);
    }
    CALL("open /sys/devices/system/cpu/cpu0/online", open("/sys/devices/system/cpu/cpu0/online", O_RDONLY));
    VALUE("node dir lists node0", listed("/sys/devices/system/node", "node0"));
    return 0;
}
