/* Limits and exhaustion scenarios (tests/tests/limits.rs).
 *
 *   limits forkbomb UID NPROC  a fork bomb (every process forks until fork fails) as real
 *                              user UID (0 = stay root) with RLIMIT_NPROC = NPROC
 *                              (0 = leave it); prints how many processes it reached and
 *                              fork's error, then releases and reaps them all
 *   limits hog                 a child touches memory 1 MiB at a time until the OOM killer
 *                              kills it; the parent (oom_score_adj -1000) reports how it ended
 *   limits as                  RLIMIT_AS 64 MiB: mmap and brk past it fail (ENOMEM, the old
 *                              break), within it succeed
 *   limits spin SOFT_US HARD_US  SCHED_FIFO 99 `while (1);` with RLIMIT_RTTIME (SOFT, HARD);
 *                              SIGXCPU is reported; the hard limit's SIGKILL ends it
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

static int report[2], release[2];

/* One process of the bomb: forks until fork fails, reports the errno once, waits for the
 * release, then reaps its children. */
static void bomb(void) {
    for (;;) {
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

static int forkbomb(unsigned uid, unsigned long nproc) {
    if (pipe(report) || pipe(release))
        return perror("pipe"), 1;
    pid_t leader = fork();
    if (leader == 0) {
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
    unsigned char e;
    if (read(report[0], &e, 1) != 1)
        return fprintf(stderr, "forkbomb: no report\n"), 1;
    /* Every process of the bomb reports once, when its fork fails. */
    sleep(2);
    int n = 1, eagain = e == EAGAIN, other = e != EAGAIN;
    fcntl(report[0], F_SETFL, O_NONBLOCK);
    while (read(report[0], &e, 1) == 1) {
        n++;
        if (e == EAGAIN)
            eagain++;
        else
            other++;
    }
    printf("forkbomb: %d processes, fork failed with EAGAIN %d times, otherwise %d times\n", n, eagain, other);
    fflush(stdout);
    close(release[1]);
    int st;
    if (waitpid(leader, &st, 0) != leader)
        return perror("waitpid"), 1;
    /* Orphans of the bomb (none: every process reaps its children before it ends). */
    printf("forkbomb: released, leader status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}

static int write_file(const char *path, const char *v) {
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -errno;
    int r = write(fd, v, strlen(v)) < 0 ? -errno : 0;
    close(fd);
    return r;
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

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "forkbomb"))
        return forkbomb(strtoul(argv[2], 0, 0), strtoul(argv[3], 0, 0));
    if (argc == 2 && !strcmp(argv[1], "as"))
        return as_limit();
    if (argc == 2 && !strcmp(argv[1], "hog"))
        return hog();
    if (argc == 4 && !strcmp(argv[1], "spin"))
        return spin(strtoul(argv[2], 0, 0), strtoul(argv[3], 0, 0));
    fprintf(stderr, "usage: limits forkbomb UID NPROC | limits as | limits hog | limits spin SOFT_US HARD_US\n");
    return 2;
}
