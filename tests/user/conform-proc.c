/* Differential conformance: processes. Ids (user and group ids included), process groups and
 * sessions (setpgid, getpgid, setsid, getsid and their errors), the parent of an orphan,
 * wait4's selectors and options, exit statuses, vfork, resource limits (RLIMIT_NOFILE
 * enforced), prctl names, umask. Prints what each call returned; the output must equal
 * Linux's (tests/fixtures/conform-proc.linux-6.1.txt). No pids or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pid_t me = getpid();

    /* Parents and children. */
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t c = fork();
    if (c == 0) {
        pid_t pp = getppid();
        if (write(p[1], &pp, sizeof pp) < 0) _exit(1);
        _exit(0);
    }
    pid_t seen;
    if (read(p[0], &seen, sizeof seen) != sizeof seen) return 1;
    VALUE("child's getppid is me", seen == me);
    int st;
    waitpid(c, &st, 0);
    /* An orphan's parent is init. */
    c = fork();
    if (c == 0) {
        pid_t g = fork();
        if (g == 0) {
            usleep(100 * 1000);
            pid_t pp = getppid();
            if (write(p[1], &pp, sizeof pp) < 0) _exit(1);
            _exit(0);
        }
        _exit(0);
    }
    waitpid(c, &st, 0);
    if (read(p[0], &seen, sizeof seen) != sizeof seen) return 1;
    VALUE("orphan's getppid", seen);

    /* Exit statuses. */
    c = fork();
    if (c == 0) exit(256 + 3);
    waitpid(c, &st, 0);
    VALUE("exit(259) status", WEXITSTATUS(st));
    c = fork();
    if (c == 0) {
        raise(SIGABRT);
        _exit(0);
    }
    waitpid(c, &st, 0);
    VALUE("SIGABRT: signaled, sig", WIFSIGNALED(st) * 100 + WTERMSIG(st));

    /* wait4 selectors and options. */
    c = fork();
    if (c == 0) {
        usleep(50 * 1000);
        _exit(4);
    }
    CALL("waitpid WNOHANG, running", waitpid(c, &st, WNOHANG));
    CALL("waitpid bad options", waitpid(c, &st, 0x100));
    CALL("waitpid(0)", waitpid(0, &st, 0) == c ? 0 : -1);
    VALUE("status", WEXITSTATUS(st));
    CALL("waitpid no children", waitpid(-1, &st, 0));
    CALL("waitpid not my child", waitpid(1, &st, 0));
    CALL("waitpid bad status pointer", ({ pid_t x = fork(); if (x == 0) _exit(0); int r = waitpid(x, (int *)8, 0); waitpid(x, NULL, WNOHANG); r; }));
    c = fork();
    if (c == 0) {
        setpgid(0, 0);
        usleep(30 * 1000);
        _exit(6);
    }
    setpgid(c, c);
    CALL("waitpid(-pgid)", waitpid(-c, &st, 0) == c ? 0 : -1);
    VALUE("status", WEXITSTATUS(st));

    /* Process groups and sessions. */
    VALUE("getpgid(0) == getpgrp()", getpgid(0) == getpgrp());
    CALL("getpgid no such", getpgid(4000000));
    CALL("getpgid -1", getpgid(-1));
    CALL("getsid no such", getsid(4000000));
    CALL("setpgid -1", setpgid(0, -1));
    CALL("setpgid no such", setpgid(4000000, 0));
    c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    CALL("setpgid child to its own group", setpgid(c, c));
    CALL("getpgid(child)", getpgid(c) == c ? 0 : -1);
    CALL("setpgid child back to mine", setpgid(c, getpgrp()));
    CALL("setpgid to a group that does not exist", setpgid(c, 4000000));
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
    c = fork();
    if (c == 0) {
        CALL("child: setsid", setsid() == getpid() ? 0 : -1);
        CALL("child: getsid(0) == pid", getsid(0) == getpid() ? 0 : -1);
        CALL("child: getpgrp() == pid", getpgrp() == getpid() ? 0 : -1);
        CALL("child: setsid again", setsid());
        CALL("child: setpgid as session leader", setpgid(0, 0));
        pid_t g = fork();
        if (g == 0) {
            CALL("grandchild: setpgid to parent's group", setpgid(0, getppid()));
            _exit(0);
        }
        waitpid(g, NULL, 0);
        _exit(0);
    }
    waitpid(c, &st, 0);
    c = fork();
    if (c == 0) {
        setsid();
        pause();
        _exit(0);
    }
    usleep(30 * 1000);
    CALL("setpgid of a child in another session", setpgid(c, c));
    kill(c, SIGKILL);
    waitpid(c, &st, 0);

    /* vfork: the child runs in the parent's memory until it exits. */
    volatile int shared = 1;
    c = vfork();
    if (c == 0) {
        shared = 2;
        _exit(0);
    }
    waitpid(c, &st, 0);
    VALUE("vfork child's write seen", shared);

    /* User and group ids. */
    VALUE("getuid", getuid());
    VALUE("geteuid", geteuid());
    VALUE("getgid", getgid());
    uid_t r, e, s;
    CALL("getresuid", getresuid(&r, &e, &s));
    VALUE("resuid", r * 100 + e * 10 + s);
    CALL("getresuid bad pointer", syscall(SYS_getresuid, (void *)8, &e, &s));
    CALL("getgroups(0)", getgroups(0, NULL));
    gid_t gs[4] = {0};
    CALL("setgroups", setgroups(1, gs));
    CALL("setgroups too many", setgroups(70000, gs));
    CALL("setuid(0)", setuid(0));
    CALL("setgid(0)", setgid(0));
    CALL("setreuid(-1,-1)", setreuid(-1, -1));
    CALL("setresgid(-1,-1,-1)", setresgid(-1, -1, -1));
    c = fork();
    if (c == 0) {
        CALL("child: setresuid(1000,1000,1000)", setresuid(1000, 1000, 1000));
        VALUE("child: getuid", getuid());
        VALUE("child: geteuid", geteuid());
        CALL("child: setuid(0) back", setuid(0));
        _exit(0);
    }
    waitpid(c, &st, 0);

    /* Resource limits. */
    struct rlimit rl;
    CALL("getrlimit NOFILE", getrlimit(RLIMIT_NOFILE, &rl));
    VALUE("NOFILE soft", rl.rlim_cur);
    struct rlimit small = {8, rl.rlim_max};
    CALL("setrlimit NOFILE 8", setrlimit(RLIMIT_NOFILE, &small));
    int last = 0;
    for (int i = 0; i < 10; i++) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            printf("%-44s = %d %s\n", "open until the limit", i, errno_name(errno));
            break;
        }
        last = fd;
    }
    VALUE("highest fd", last);
    CALL("dup2 to fd 8", dup2(0, 8));
    CALL("fcntl F_DUPFD 20", fcntl(0, F_DUPFD, 20));
    for (int fd = 3; fd <= last; fd++)
        if (fd != p[0] && fd != p[1]) close(fd);
    setrlimit(RLIMIT_NOFILE, &rl);
    struct rlimit bad = {10, 5};
    CALL("setrlimit soft > hard", setrlimit(RLIMIT_NOFILE, &bad));
    CALL("getrlimit 99", getrlimit(99, &rl));
    CALL("getrlimit bad pointer", getrlimit(RLIMIT_NOFILE, (void *)8));
    CALL("prlimit no such pid", prlimit(4000000, RLIMIT_NOFILE, NULL, &rl));
    CALL("getrlimit STACK", getrlimit(RLIMIT_STACK, &rl));
    VALUE("STACK soft MiB", rl.rlim_cur >> 20);

    /* Names, umask. */
    CALL("PR_SET_NAME", prctl(PR_SET_NAME, "conform-name-that-is-long"));
    char name[32] = {0};
    CALL("PR_GET_NAME", prctl(PR_GET_NAME, name));
    printf("%-44s = %s\n", "name", name);
    CALL("PR_SET_NAME bad pointer", prctl(PR_SET_NAME, (void *)8));
    CALL("prctl unknown option", prctl(9999, 0, 0, 0, 0));
    VALUE("umask old", umask(077));
    VALUE("umask new", umask(022));
    printf("conform-proc: done\n");
    return 0;
}
