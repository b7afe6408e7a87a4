/* Failure injection in user-memory paths (issue 39 item 4): `memload N PERCENT` enables
 * debug.fail_alloc on the user-memory sites (page faults, fork's address-space copy, execve's
 * new image, mmap) at PERCENT and runs N children, each a fresh execve of `memload child`
 * that maps and touches anonymous, shared and file pages, forks a grandchild that writes
 * copy-on-write pages, and execs /bin/busybox true. Every failure must be Linux's: a call
 * returns ENOMEM (or EAGAIN for a task), or a thread whose page cannot be had dies of SIGBUS;
 * anything else (another errno, another signal) is counted as `unexpected`. The parent keeps
 * its own memory present (mlockall) and forks nothing itself (vfork shares its memory and
 * stack until the child's execve), so injection cannot kill it; it turns injection off before printing the tallies:
 *   memload: spawned=.. spawn_enomem=.. exit0=.. sigbus=.. sigkill=.. unexpected=.. injected=..
 * Static, so the dynamic loader's own mmaps are not in the way. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
/* Set by a vfork child whose execve failed (the child shares this memory). */
static volatile int exec_errno;

static int put(const char *path, const char *v) {
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    int r = write(fd, v, strlen(v)) == (ssize_t)strlen(v) ? 0 : -1;
    close(fd);
    return r;
}

static long get(const char *path) {
    char b[32] = {0};
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    read(fd, b, sizeof b - 1);
    close(fd);
    return atol(b);
}

/* Exit codes of a child: 0 fine; 10 + step: a call failed with an errno Linux would not give. */
static int child(void) {
    const long pg = 4096;
    char *a = mmap(0, 16 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return errno == ENOMEM ? 0 : 11;
    for (int i = 0; i < 16; i++)
        a[i * pg] = (char)i;
    char *s = mmap(0, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED && errno != ENOMEM)
        return 12;
    int fd = open("/bin/busybox", O_RDONLY);
    char *f = fd < 0 ? MAP_FAILED : mmap(0, 32 * pg, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f == MAP_FAILED && errno != ENOMEM)
        return 13;
    volatile long sum = 0;
    if (f != MAP_FAILED)
        for (int i = 0; i < 32; i++)
            sum += f[i * pg];
    char *p = mmap(0, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED && errno != ENOMEM)
        return 14;
    pid_t c = fork();
    if (c < 0)
        return errno == ENOMEM || errno == EAGAIN ? 0 : 15;
    if (c == 0) {
        for (int i = 0; i < 16; i++)
            a[i * pg] = 'c'; /* copy-on-write */
        if (s != MAP_FAILED)
            s[0] = 'g';
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) != SIGBUS)
        return 16;
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        return 17;
    for (int i = 0; i < 16; i++)
        if (a[i * pg] != (char)i) /* the parent's pages are its own */
            return 18;
    char *argv[] = {"busybox", "true", 0};
    execve("/bin/busybox", argv, environ);
    return errno == ENOMEM ? 0 : 19;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    int n = argc > 1 ? atoi(argv[1]) : 50;
    const char *percent = argc > 2 ? argv[2] : "10";
    setvbuf(stdout, 0, _IOLBF, 0);
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        perror("memload: mlockall");
    const char *d = "/proc/sys/debug/fail_alloc/";
    char path[128];
#define SET(name, v) (snprintf(path, sizeof path, "%s%s", d, name), put(path, v))
    long before = (snprintf(path, sizeof path, "%sinjected", d), get(path));
    if (SET("sites", "fault_*,fork_mm,exec_mm,mmap_*") || SET("verbose", "0") || SET("times", "-1") || SET("interval", "1")) {
        printf("memload: cannot set debug.fail_alloc\n");
        return 1;
    }
    printf("memload: %d children at %s%%\n", n, percent);
    SET("probability", percent);
    long spawned = 0, spawn_enomem = 0, exit0 = 0, sigbus = 0, sigkill = 0, unexpected = 0;
    char *cargv[] = {"memload", "child", 0};
    for (int i = 0; i < n; i++) {
        /* vfork: the child runs on this process's (present) stack until its execve; glibc's
         * posix_spawn would store the child's entry on a fresh, unpopulated stack from here (clone
         * without clone3), and a failed fault there would kill this process. */
        exec_errno = 0;
        pid_t pid = vfork();
        if (pid == 0) {
            execve("/bin/memload", cargv, environ);
            exec_errno = errno;
            _exit(127);
        }
        int st;
        if (pid < 0 && (errno == ENOMEM || errno == EAGAIN)) {
            spawn_enomem++;
            continue;
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid) {
            printf("memload: vfork or waitpid failed: %s\n", strerror(errno));
            unexpected++;
            continue;
        }
        if (exec_errno == ENOMEM) {
            spawn_enomem++;
            continue;
        }
        if (exec_errno != 0) {
            printf("memload: execve: %s\n", strerror(exec_errno));
            unexpected++;
            continue;
        }
        spawned++;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            exit0++;
        else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS)
            sigbus++;
        else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            sigkill++;
        else {
            unexpected++;
            printf("memload: child %d: %s %d\n", i, WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        }
    }
    SET("probability", "0");
    SET("sites", "");
    SET("times", "1");
    long injected = (snprintf(path, sizeof path, "%sinjected", d), get(path)) - before;
    printf("memload: spawned=%ld spawn_enomem=%ld exit0=%ld sigbus=%ld sigkill=%ld unexpected=%ld injected=%ld\n", spawned, spawn_enomem,
           exit0, sigbus, sigkill, unexpected, injected);
    return unexpected != 0;
}
