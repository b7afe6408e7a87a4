/* Limits and exhaustion scenarios (tests/tests/limits.rs).
 *
 *   limits forkbomb UID NPROC  a fork bomb (every process forks until fork fails) as real
 *                              user UID (0 = stay root) with RLIMIT_NPROC = NPROC
 *                              (0 = leave it); prints how many processes it reached and
 *                              fork's errors, then releases and reaps them all
 *   limits hog                 a child touches memory 1 MiB at a time until the OOM killer
 *                              kills it; the parent (oom_score_adj -1000) reports how it ended
 *   limits as                  RLIMIT_AS 64 MiB: mmap and brk past it fail (ENOMEM, the old
 *                              break), within it succeed
 *   limits spin SOFT_US HARD_US  SCHED_FIFO 99 `while (1);` with RLIMIT_RTTIME (SOFT, HARD);
 *                              SIGXCPU is reported; the hard limit's SIGKILL ends it
 *   limits memlock             RLIMIT_MEMLOCK: mlock, mlock2, munlock, mlockall, MCL_FUTURE and
 *                              MAP_LOCKED mappings as root and as uid 1000, VmLck after each
 *   limits stack               the stack's growth against RLIMIT_STACK, RLIMIT_AS and (locked
 *                              by mlockall) RLIMIT_MEMLOCK: a child's exit status or signal
 *
 * memlock and stack print differential lines (conform.h), compared with Linux 6.1's
 * (tests/fixtures/limits-memlock.linux-6.1.txt), recorded on the peer with
 *   ../shared/peer/run.sh --linux 6.1 --file target/user/limits 'cd /tmp && /limits memlock && /limits stack' \
 *     | grep -a " = " | tr -d '\r' | grep -v "^\["
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#define CONFORM_WIDTH "56"
#include "conform.h"

static int report[2], release[2];

/* Has the reporter released the bomb (closed the release pipe's write end)? */
static int released(void) {
    struct pollfd p = {release[0], POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* One process of the bomb: forks until fork fails, reports the errno once, waits for the
 * release, then reaps its children. It also stops forking once released: past threads-max,
 * when memory alone stops the bomb, the OOM killer takes the newest process (equal badness
 * goes to the later one, as Linux's), which is often the child just forked, so its parent's
 * next fork succeeds again with the memory the kill gave back, and it might never fail. */
static void bomb(void) {
    for (;;) {
        if (released())
            break;
        pid_t p = fork();
        if (p == 0)
            continue;
        if (p < 0) {
            unsigned char e = (unsigned char)errno;
            if (write(report[1], &e, 1) != 1)
                _exit(2);
            break;
        }
    }
    char c;
    while (read(release[0], &c, 1) < 0 && errno == EINTR)
        ;
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    _exit(0);
}

static int write_file(const char *path, const char *v) {
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -errno;
    int r = write(fd, v, strlen(v)) < 0 ? -errno : 0;
    close(fd);
    return r;
}

/* A field of a /proc file of `Name:   value kB` lines, in kB (-1 if absent), read without
 * malloc: under MCL_FUTURE and a small RLIMIT_MEMLOCK the heap may not grow. */
static long proc_kb(const char *path, const char *field) {
    static char buf[4096];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    size_t len = strlen(field);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : 0)
        if (!strncmp(l, field, len) && l[len] == ':')
            return strtol(l + len + 1, 0, 10);
    return -1;
}

static long meminfo_kb(const char *field) {
    return proc_kb("/proc/meminfo", field);
}

static int forkbomb(unsigned uid, unsigned long nproc) {
    if (pipe(report) || pipe(release))
        return perror("pipe"), 1;
    /* The reporter is not the OOM killer's to take, should memory run out first. */
    if (write_file("/proc/self/oom_score_adj", "-1000"))
        return perror("oom_score_adj"), 1;
    pid_t leader = fork();
    if (leader == 0) {
        if (write_file("/proc/self/oom_score_adj", "0"))
            _exit(1);
        close(report[0]);
        close(release[1]);
        if (nproc) {
            struct rlimit r = {nproc, nproc};
            if (setrlimit(RLIMIT_NPROC, &r))
                perror("setrlimit"), _exit(1);
        }
        if (uid && setresuid(uid, uid, uid))
            perror("setresuid"), _exit(1);
        bomb();
    }
    close(report[1]);
    close(release[0]);
    long free_before = meminfo_kb("MemFree"), slab_before = meminfo_kb("Slab");
    unsigned char e;
    if (read(report[0], &e, 1) != 1)
        return fprintf(stderr, "forkbomb: no report\n"), 1;
    /* Every process of the bomb reports once, when its fork fails: read until 2 s pass
     * without a report (a root bomb of thousands takes a while to report). */
    int n = 1, eagain = e == EAGAIN, enomem = e == ENOMEM, other = e != EAGAIN && e != ENOMEM;
    struct pollfd pfd = {report[0], POLLIN, 0};
    while (poll(&pfd, 1, 2000) > 0 && read(report[0], &e, 1) == 1) {
        n++;
        if (e == EAGAIN)
            eagain++;
        else if (e == ENOMEM)
            enomem++;
        else
            other++;
    }
    printf("forkbomb: %d processes, fork failed with EAGAIN %d times, ENOMEM %d times, otherwise %d times\n", n, eagain, enomem,
           other);
    long free_peak = meminfo_kb("MemFree"), slab_peak = meminfo_kb("Slab");
    printf("forkbomb: a process took %ld kB of MemFree and %ld kB of Slab (the kernel heap)\n", (free_before - free_peak) / n,
           (slab_peak - slab_before) / n);
    fflush(stdout);
    close(release[1]);
    int st;
    if (waitpid(leader, &st, 0) != leader)
        return perror("waitpid"), 1;
    /* Orphans of the bomb (none: every process reaps its children before it ends). */
    printf("forkbomb: released, leader status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}

static int hog(void) {
    printf("hog: oom_score_adj 1001 = %s\n", write_file("/proc/self/oom_score_adj", "1001") == -EINVAL ? "EINVAL" : "accepted");
    if (write_file("/proc/self/oom_score_adj", "-1000"))
        return perror("oom_score_adj"), 1;
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        if (write_file("/proc/self/oom_score_adj", "0"))
            _exit(1);
        for (unsigned long mb = 0;; mb++) {
            char *m = malloc(1 << 20);
            if (!m)
                _exit(4);
            for (int i = 0; i < (1 << 20); i += 4096)
                m[i] = 1;
        }
    }
    int st;
    if (waitpid(p, &st, 0) != p)
        return perror("waitpid"), 1;
    if (WIFSIGNALED(st))
        printf("hog: killed by signal %d\n", WTERMSIG(st));
    else
        printf("hog: exit status %d\n", WEXITSTATUS(st));
    return 0;
}

static int as_limit(void) {
    struct rlimit r = {64 << 20, 64 << 20};
    if (setrlimit(RLIMIT_AS, &r))
        return perror("setrlimit"), 1;
    void *big = mmap(0, 128 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("as: mmap 128 MiB = %s\n", big == MAP_FAILED ? (errno == ENOMEM ? "ENOMEM" : strerror(errno)) : "ok");
    void *small = mmap(0, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("as: mmap 8 MiB = %s\n", small == MAP_FAILED ? strerror(errno) : "ok");
    void *b = sbrk(0);
    void *b2 = (void *)syscall(SYS_brk, (char *)b + (128 << 20));
    printf("as: brk +128 MiB = %s\n", b2 == b ? "old break" : "moved");
    return 0;
}

static void xcpu(int sig) {
    (void)sig;
    static const char m[] = "spin: SIGXCPU\n";
    if (write(1, m, sizeof m - 1) < 0)
        _exit(3);
}

static int spin(unsigned long soft, unsigned long hard) {
    struct rlimit r = {soft, hard};
    if (setrlimit(RLIMIT_RTTIME, &r))
        return perror("setrlimit"), 1;
    signal(SIGXCPU, xcpu);
    struct sched_param sp = {.sched_priority = 99};
    if (sched_setscheduler(0, SCHED_FIFO, &sp))
        return perror("sched_setscheduler"), 1;
    printf("spin: SCHED_FIFO 99, RLIMIT_RTTIME %lu:%lu us\n", soft, hard);
    fflush(stdout);
    for (;;)
        __asm__ volatile("" ::: "memory");
}

static long status_kb(const char *field) {
    return proc_kb("/proc/self/status", field);
}

#define P 4096UL
#define MAPPED(p) ((p) == MAP_FAILED ? -1 : 1)

static void *anon(size_t len, int prot, int flags) {
    return mmap(0, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

static int memlock(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct rlimit r, small = {16 * P, 16 * P};
    getrlimit(RLIMIT_MEMLOCK, &r);
    VALUE("RLIMIT_MEMLOCK soft", r.rlim_cur);
    VALUE("RLIMIT_MEMLOCK hard", r.rlim_max);
    VALUE("VmLck at start (kB)", status_kb("VmLck"));
    char *a = anon(64 * P, PROT_READ | PROT_WRITE, 0);
    CALL("mmap 64 pages", MAPPED(a));

    /* Root has CAP_IPC_LOCK: the limit does not apply. */
    CALL("root: setrlimit MEMLOCK 16 pages", setrlimit(RLIMIT_MEMLOCK, &small));
    CALL("root: mlock 32 pages, over the limit", mlock(a, 32 * P));
    VALUE("root: VmLck (kB)", status_kb("VmLck"));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        VALUE("root: fork child's VmLck (kB)", status_kb("VmLck"));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    CALL("root: mlockall(MCL_CURRENT), over the limit", mlockall(MCL_CURRENT));
    VALUE("root: VmLck > 128 after mlockall", status_kb("VmLck") > 128);
    CALL("root: munlockall", munlockall());
    VALUE("root: VmLck after munlockall (kB)", status_kb("VmLck"));
    struct rlimit zero_soft = {0, 16 * P};
    CALL("root: setrlimit MEMLOCK 0 soft", setrlimit(RLIMIT_MEMLOCK, &zero_soft));
    CALL("root: RLIMIT_MEMLOCK 0: mlock 1 page", mlock(a, P));
    CALL("root: munlock 1 page", munlock(a, P));
    CALL("root: setrlimit MEMLOCK 16 pages", setrlimit(RLIMIT_MEMLOCK, &small));

    /* uid 1000: no CAP_IPC_LOCK. */
    CALL("setresuid 1000", setresuid(1000, 1000, 1000));
    struct rlimit raise = {16 * P, 32 * P};
    CALL("user: setrlimit MEMLOCK, hard raised", setrlimit(RLIMIT_MEMLOCK, &raise));
    CALL("user: mlock 8 pages", mlock(a, 8 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock the same 8 pages again", mlock(a, 8 * P));
    CALL("user: mlock 16 pages, 4 of them locked", mlock(a + 4 * P, 16 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock 12 pages, 4 locked: at the limit", mlock(a + 4 * P, 12 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock 1 more page", mlock(a + 16 * P, 1));
    CALL("user: mlock 1 byte of a locked page, unaligned", mlock(a + 1, 1));
    CALL("user: munlock 4 pages", munlock(a, 4 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mprotect a locked page read-only", mprotect(a + 8 * P, P, PROT_READ));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: munmap 2 locked pages", munmap(a + 14 * P, 2 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: munlock across the hole", munlock(a, 20 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock across the hole", mlock(a + 10 * P, 8 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock unmapped", mlock(a + 14 * P, P));
    CALL("user: munlock unmapped", munlock(a + 14 * P, P));
    CALL("user: mlock length 0", mlock(a, 0));
    CALL("user: mlock wraps", mlock(a, ~0UL - 2 * P));
    CALL("user: munlock wraps", munlock(a, ~0UL - 2 * P));
    CALL("user: mlockall(MCL_CURRENT), over the limit", mlockall(MCL_CURRENT));
    CALL("user: mlockall(MCL_CURRENT|MCL_ONFAULT), over", mlockall(MCL_CURRENT | MCL_ONFAULT));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlockall(0)", mlockall(0));
    CALL("user: mlockall(MCL_ONFAULT)", mlockall(MCL_ONFAULT));
    CALL("user: mlockall(8)", mlockall(8));
    CALL("user: mlockall(MCL_FUTURE)", mlockall(MCL_FUTURE));
    CALL("user: MCL_FUTURE: mmap 16 pages, over the limit", MAPPED(anon(16 * P, PROT_READ | PROT_WRITE, 0)));
    CALL("user: MCL_FUTURE: mmap 8 pages", MAPPED(anon(8 * P, PROT_READ | PROT_WRITE, 0)));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    char *b = sbrk(0);
    VALUE("user: MCL_FUTURE: brk +64 pages moves it", (char *)syscall(SYS_brk, b + 64 * P) != b);
    VALUE("user: MCL_FUTURE: brk +4 pages moves it", (char *)syscall(SYS_brk, b + 4 * P) != b);
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    VALUE("user: brk back moves it", (char *)syscall(SYS_brk, b) == b);
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: munlockall", munlockall());
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mmap 16 pages after munlockall", MAPPED(anon(16 * P, PROT_READ | PROT_WRITE, 0)));
    CALL("user: mmap MAP_LOCKED 32 pages, over the limit", MAPPED(anon(32 * P, PROT_READ | PROT_WRITE, MAP_LOCKED)));
    CALL("user: mmap MAP_LOCKED 8 pages", MAPPED(anon(8 * P, PROT_READ | PROT_WRITE, MAP_LOCKED)));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: munlockall", munlockall());
    CALL("user: mlock2 4 pages MLOCK_ONFAULT", syscall(SYS_mlock2, a + 20 * P, 4 * P, 1));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock2 the same 4 pages, locked", syscall(SYS_mlock2, a + 20 * P, 4 * P, 0));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock2 flags 2", syscall(SYS_mlock2, a + 20 * P, P, 2));
    CALL("user: mlock2 flags 1<<32 | MLOCK_ONFAULT", syscall(SYS_mlock2, a + 20 * P, P, (1UL << 32) | 1));
    CALL("user: mlock2 20 pages, over the limit", syscall(SYS_mlock2, a + 20 * P, 20 * P, 1));
    CALL("user: munlockall", munlockall());
    char *n = anon(4 * P, PROT_NONE, 0);
    CALL("user: mlock PROT_NONE 4 pages", mlock(n, 4 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: munlock PROT_NONE 4 pages", munlock(n, 4 * P));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: mlock2 PROT_NONE 4 pages MLOCK_ONFAULT", syscall(SYS_mlock2, n, 4 * P, 1));
    VALUE("user: VmLck (kB)", status_kb("VmLck"));
    CALL("user: munlockall", munlockall());

    struct rlimit zero = {0, 0};
    CALL("user: setrlimit MEMLOCK 0", setrlimit(RLIMIT_MEMLOCK, &zero));
    CALL("user: RLIMIT_MEMLOCK 0: mlock 1 page", mlock(a, P));
    CALL("user: RLIMIT_MEMLOCK 0: mlock length 0", mlock(a, 0));
    CALL("user: RLIMIT_MEMLOCK 0: mlock2 MLOCK_ONFAULT", syscall(SYS_mlock2, a, P, 1));
    CALL("user: RLIMIT_MEMLOCK 0: mlock2 flags 2", syscall(SYS_mlock2, a, P, 2));
    CALL("user: RLIMIT_MEMLOCK 0: mlockall(MCL_CURRENT)", mlockall(MCL_CURRENT));
    CALL("user: RLIMIT_MEMLOCK 0: mlockall(MCL_FUTURE)", mlockall(MCL_FUTURE));
    CALL("user: RLIMIT_MEMLOCK 0: mlockall(0)", mlockall(0));
    CALL("user: RLIMIT_MEMLOCK 0: munlock 1 page", munlock(a, P));
    CALL("user: RLIMIT_MEMLOCK 0: munlockall", munlockall());
    CALL("user: RLIMIT_MEMLOCK 0: mmap MAP_LOCKED", MAPPED(anon(P, PROT_READ | PROT_WRITE, MAP_LOCKED)));
    CALL("user: RLIMIT_MEMLOCK 0: mmap", MAPPED(anon(P, PROT_READ | PROT_WRITE, 0)));
    return 0;
}

/* Writes a byte `below` bytes under the current frame: the stack grows to it, or not. */
static __attribute__((noinline)) void touch_below(size_t below) {
    volatile char *p = (char *)__builtin_frame_address(0) - below;
    *p = 1;
}

/* A child sets `resource` to `extra` bytes past its current VmSize (`resource` -1: leaves
 * the limits; RLIMIT_STACK: to `extra` itself), mlockall()s as uid 1000 (`lock` 1) or as root
 * (`lock` 2),
 * then touches the stack `below` bytes down. Prints how the child ended: 0 or the signal. */
static void stack_case(const char *label, int resource, unsigned long extra, int lock, size_t below) {
    pid_t c = fork();
    if (c == 0) {
        if (resource >= 0) {
            rlim_t v = resource == RLIMIT_STACK ? extra : (rlim_t)status_kb("VmSize") * 1024 + extra;
            struct rlimit r = {v, v};
            if (setrlimit(resource, &r))
                _exit(100);
        }
        if (lock == 1 && setresuid(1000, 1000, 1000))
            _exit(101);
        if (lock && mlockall(MCL_CURRENT | MCL_FUTURE))
            _exit(102);
        touch_below(below);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    VALUE(label, WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static int stack(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    stack_case("stack: 4 MiB down, default limits", -1, 0, 0, 4 << 20);
    stack_case("stack: 16 MiB down, RLIMIT_STACK 8 MiB", -1, 0, 0, 16 << 20);
    stack_case("stack: 512 KiB down, RLIMIT_STACK 1 MiB", RLIMIT_STACK, 1 << 20, 0, 512 << 10);
    stack_case("stack: 2 MiB down, RLIMIT_STACK 1 MiB", RLIMIT_STACK, 1 << 20, 0, 2 << 20);
    stack_case("stack: 100 KiB down, RLIMIT_AS VmSize + 256 KiB", RLIMIT_AS, 256 << 10, 0, 100 << 10);
    stack_case("stack: 1 MiB down, RLIMIT_AS VmSize + 256 KiB", RLIMIT_AS, 256 << 10, 0, 1 << 20);
    stack_case("stack: 100 KiB down, locked, MEMLOCK VmSize + 256 KiB", RLIMIT_MEMLOCK, 256 << 10, 1, 100 << 10);
    stack_case("stack: 1 MiB down, locked, MEMLOCK VmSize + 256 KiB", RLIMIT_MEMLOCK, 256 << 10, 1, 1 << 20);
    stack_case("stack: 1 MiB down, locked, as root", RLIMIT_MEMLOCK, 256 << 10, 2, 1 << 20);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "memlock"))
        return memlock();
    if (argc == 2 && !strcmp(argv[1], "stack"))
        return stack();
    if (argc == 4 && !strcmp(argv[1], "forkbomb"))
        return forkbomb(strtoul(argv[2], 0, 0), strtoul(argv[3], 0, 0));
    if (argc == 2 && !strcmp(argv[1], "as"))
        return as_limit();
    if (argc == 2 && !strcmp(argv[1], "hog"))
        return hog();
    if (argc == 4 && !strcmp(argv[1], "spin"))
        return spin(strtoul(argv[2], 0, 0), strtoul(argv[3], 0, 0));
    fprintf(stderr, "usage: limits forkbomb UID NPROC | limits as | limits hog | limits spin SOFT_US HARD_US | limits memlock | limits stack\n");
    return 2;
}
