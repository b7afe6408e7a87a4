/* Differential conformance: threads and futexes. pthread_create / join / exit / detach,
 * mutexes, condition variables, barriers, robust mutexes (EOWNERDEAD), thread ids, signals to
 * one thread (tgkill) and to the process, exit_group from a thread, execve from a
 * multithreaded process, vfork via posix_spawn, the raw futex operations with their errors,
 * clone's flag checks. Prints what each call returned; the output must equal Linux's
 * (tests/fixtures/conform-thread.linux-6.1.txt). No ids, addresses or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long futex(void *a, int op, int val, const void *ts_or_val2, void *a2, int val3) {
    return syscall(SYS_futex, a, op, val, ts_or_val2, a2, val3);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long counter;
static int turn;

static void *adder(void *arg) {
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return arg;
}

static void *pinger(void *arg) {
    long me = (long)arg;
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&m);
        while (turn != me) pthread_cond_wait(&cv, &m);
        turn = 1 - me;
        counter++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static pthread_barrier_t bar;
static int after_barrier[4];
static void *barrier_user(void *arg) {
    long i = (long)arg;
    pthread_barrier_wait(&bar);
    after_barrier[i] = 1;
    return NULL;
}

static void *ids(void *arg) {
    long *out = arg;
    out[0] = getpid();
    out[1] = syscall(SYS_gettid);
    out[2] = getppid();
    return NULL;
}

static void *exits_early(void *arg) {
    (void)arg;
    pthread_exit((void *)42);
    return NULL;
}

static pthread_mutex_t robust;
static void *dies_holding(void *arg) {
    (void)arg;
    pthread_mutex_lock(&robust);
    return NULL;
}

static volatile long handler_tid;
static volatile int handler_hits;
static void on_usr1(int sig) {
    (void)sig;
    handler_tid = syscall(SYS_gettid);
    handler_hits++;
}

static volatile int stop_waiter;
static void *waits_for_signal(void *arg) {
    long *tid = arg;
    *tid = syscall(SYS_gettid);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    while (!stop_waiter) usleep(1000);
    return NULL;
}

static void *sleeps_forever(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

static uint32_t word = 0;
static void *wakes_word(void *arg) {
    (void)arg;
    usleep(30 * 1000);
    __atomic_store_n(&word, 1, __ATOMIC_SEQ_CST);
    futex(&word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return NULL;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
        printf("exec-child: running, threads gone\n");
        return 7;
    }

    /* Create, join, return values, mutexes. */
    pthread_t t[8];
    for (long i = 0; i < 8; i++) CALL("pthread_create", pthread_create(&t[i], NULL, adder, (void *)i));
    long sum = 0;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (long)r;
    }
    VALUE("joined return values", sum);
    VALUE("mutex-protected counter", counter);

    /* Condition variables: strict alternation. */
    counter = 0;
    pthread_create(&t[0], NULL, pinger, (void *)0);
    pthread_create(&t[1], NULL, pinger, (void *)1);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    VALUE("condvar ping-pong rounds", counter);

    /* Barriers. */
    CALL("barrier init", pthread_barrier_init(&bar, NULL, 4));
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, barrier_user, (void *)i);
    barrier_user((void *)3);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    VALUE("all passed the barrier", after_barrier[0] + after_barrier[1] + after_barrier[2] + after_barrier[3]);

    /* Ids. */
    long got[3];
    pthread_create(&t[0], NULL, ids, got);
    pthread_join(t[0], NULL);
    VALUE("thread: same pid", got[0] == getpid());
    VALUE("thread: own tid", got[1] != getpid() && got[1] > 0);
    VALUE("thread: same ppid", got[2] == getppid());
    VALUE("main: tid == pid", syscall(SYS_gettid) == getpid());

    /* pthread_exit, detached threads. */
    void *r;
    pthread_create(&t[0], NULL, exits_early, NULL);
    pthread_join(t[0], &r);
    VALUE("pthread_exit value", (long)r);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    CALL("create detached", pthread_create(&t[0], &at, adder, NULL));
    CALL("join detached", pthread_join(t[0], NULL) == EINVAL ? -1 : 0);

    /* Robust mutexes: the owner's death is reported to the next locker. */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &ma);
    pthread_create(&t[0], NULL, dies_holding, NULL);
    pthread_join(t[0], NULL);
    int rc = pthread_mutex_lock(&robust);
    printf("%-44s = %s\n", "lock after the owner died", errno_name(rc));
    CALL("consistent", pthread_mutex_consistent(&robust));
    CALL("unlock", pthread_mutex_unlock(&robust));
    CALL("lock again", pthread_mutex_lock(&robust));
    pthread_mutex_unlock(&robust);

    /* Signals: to one thread, and to the process with all but one thread blocking it. */
    signal(SIGUSR1, on_usr1);
    long wtid = 0;
    sigset_t s1;
    sigemptyset(&s1);
    sigaddset(&s1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s1, NULL);
    pthread_create(&t[0], NULL, waits_for_signal, &wtid);
    while (wtid == 0) usleep(1000);
    CALL("tgkill to the thread", syscall(SYS_tgkill, getpid(), wtid, SIGUSR1));
    while (handler_hits == 0) usleep(1000);
    VALUE("ran in that thread", handler_tid == wtid);
    handler_hits = 0;
    CALL("kill to the process", kill(getpid(), SIGUSR1));
    while (handler_hits == 0) usleep(1000);
    VALUE("taken by the thread not blocking it", handler_tid == wtid);
    stop_waiter = 1;
    pthread_join(t[0], NULL);
    pthread_sigmask(SIG_UNBLOCK, &s1, NULL);

    /* exit from a thread of a child ends the whole child. */
    pid_t c = fork();
    if (c == 0) {
        pthread_t x;
        pthread_create(&x, NULL, sleeps_forever, NULL);
        usleep(20 * 1000);
        exit(3);
    }
    int st;
    waitpid(c, &st, 0);
    VALUE("exit with a thread running: status", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    c = fork();
    if (c == 0) {
        pthread_t x;
        pthread_create(&x, NULL, sleeps_forever, NULL);
        usleep(20 * 1000);
        syscall(SYS_exit, 0); /* the first thread alone */
    }
    usleep(50 * 1000);
    CALL("process alive after its first thread exits", waitpid(c, &st, WNOHANG));
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
    VALUE("then killed", WIFSIGNALED(st) ? WTERMSIG(st) : -1);

    /* execve from a multithreaded process. */
    c = fork();
    if (c == 0) {
        pthread_t x;
        pthread_create(&x, NULL, sleeps_forever, NULL);
        usleep(20 * 1000);
        char *args[] = {argv[0], "exec-child", NULL};
        execve(argv[0], args, environ);
        _exit(100);
    }
    waitpid(c, &st, 0);
    VALUE("execve with a thread: status", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    /* posix_spawn (clone with CLONE_VM | CLONE_VFORK). */
    pid_t sp;
    char *args[] = {argv[0], "exec-child", NULL};
    CALL("posix_spawn", posix_spawn(&sp, argv[0], NULL, NULL, args, environ));
    waitpid(sp, &st, 0);
    VALUE("spawned status", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    char *bad[] = {"/nonexistent", NULL};
    rc = posix_spawn(&sp, "/nonexistent", NULL, NULL, bad, environ);
    printf("%-44s = %s\n", "posix_spawn missing program", errno_name(rc));

    /* Raw futex operations. */
    struct timespec ms10 = {0, 10 * 1000 * 1000}, badts = {0, -1};
    word = 0;
    CALL("FUTEX_WAIT wrong value", futex(&word, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0));
    CALL("FUTEX_WAIT timeout", futex(&word, FUTEX_WAIT_PRIVATE, 0, &ms10, NULL, 0));
    CALL("FUTEX_WAIT bad timeout", futex(&word, FUTEX_WAIT_PRIVATE, 0, &badts, NULL, 0));
    pthread_create(&t[0], NULL, wakes_word, NULL);
    CALL("FUTEX_WAIT woken", futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) == 0 || word == 1 ? 0 : -1);
    pthread_join(t[0], NULL);
    CALL("FUTEX_WAKE nobody", futex(&word, FUTEX_WAKE_PRIVATE, 5, NULL, NULL, 0));
    CALL("FUTEX_WAKE shared nobody", futex(&word, FUTEX_WAKE, 5, NULL, NULL, 0));
    CALL("FUTEX_WAIT misaligned", futex((char *)&word + 1, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
    CALL("FUTEX_WAIT NULL", futex(NULL, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
    CALL("FUTEX_WAIT shared unmapped", futex((void *)4096, FUTEX_WAIT, 0, NULL, NULL, 0));
    CALL("FUTEX_WAKE private unmapped", futex((void *)4096, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
    CALL("FUTEX_WAIT_BITSET bitset 0", futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, NULL, NULL, 0));
    CALL("FUTEX_WAKE_BITSET bitset 0", futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0));
    struct timespec past = {0, 1};
    CALL("FUTEX_WAIT_BITSET abs in the past", futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 1, &past, NULL, -1));
    CALL("WAIT_BITSET|CLOCK_REALTIME in the past", futex(&word, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 1, &past, NULL, -1));
    CALL("FUTEX_WAIT|CLOCK_REALTIME", futex(&word, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 1, NULL, NULL, 0));
    CALL("unknown op 99", futex(&word, 99, 0, NULL, NULL, 0));
    uint32_t w2 = 0;
    CALL("CMP_REQUEUE value differs", futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, &w2, 12345));
    CALL("CMP_REQUEUE nobody", futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, &w2, (int)word));
    CALL("CMP_REQUEUE negative count", futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, -1, (void *)1, &w2, (int)word));
    CALL("REQUEUE nobody", futex(&word, FUTEX_REQUEUE_PRIVATE, 1, (void *)1, &w2, 0));
    w2 = 5;
    CALL("WAKE_OP add 3 (cmp eq 5)", futex(&word, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &w2, FUTEX_OP(FUTEX_OP_ADD, 3, FUTEX_OP_CMP_EQ, 5)));
    VALUE("word after WAKE_OP", w2);
    CALL("WAKE_OP bad op", futex(&word, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &w2, (7 << 28)));
    CALL("WAKE_OP bad cmp", futex(&word, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &w2, (9 << 24)));
    CALL("WAKE_OP unmapped", futex(&word, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, (void *)4096, 0));
    /* A shared futex in a shared mapping, across fork. */
    uint32_t *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    *shared = 0;
    c = fork();
    if (c == 0) {
        usleep(30 * 1000);
        __atomic_store_n(shared, 1, __ATOMIC_SEQ_CST);
        _exit(futex(shared, FUTEX_WAKE, 1, NULL, NULL, 0) == 1 ? 0 : 1);
    }
    CALL("shared futex across fork: wait", futex(shared, FUTEX_WAIT, 0, NULL, NULL, 0) == 0 || *shared == 1 ? 0 : -1);
    waitpid(c, &st, 0);
    VALUE("the child woke it", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    /* Robust list calls. */
    CALL("set_robust_list bad len", syscall(SYS_set_robust_list, NULL, 1));
    void *head;
    size_t len;
    CALL("get_robust_list self", syscall(SYS_get_robust_list, 0, &head, &len));
    VALUE("head len", len);
    CALL("get_robust_list no such", syscall(SYS_get_robust_list, 4000000, &head, &len));
    CALL("get_robust_list bad ptr", syscall(SYS_get_robust_list, 0, (void *)8, &len));

    /* clone's flag checks. */
    CALL("clone THREAD without SIGHAND", syscall(SYS_clone, CLONE_THREAD | CLONE_VM, NULL, NULL, NULL, 0));
    CALL("clone SIGHAND without VM", syscall(SYS_clone, CLONE_SIGHAND, NULL, NULL, NULL, 0));
    printf("conform-thread: done\n");
    return 0;
}
