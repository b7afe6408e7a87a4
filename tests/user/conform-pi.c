/* Differential conformance: priority-inheritance futexes. The raw FUTEX_LOCK_PI /
 * TRYLOCK_PI / UNLOCK_PI / LOCK_PI2 operations with their errors and the words they leave,
 * a hand-over to a waiter, timeouts on both clocks, a deadlock cycle, a dead owner, requeue-PI
 * (WAIT_REQUEUE_PI / CMP_REQUEUE_PI onto a free and a held PI futex, its timeout and errors), and glibc's
 * PTHREAD_PRIO_INHERIT mutexes (contended, robust, owner dead with a waiter). Prints what each
 * call returned; the output must equal Linux's (tests/fixtures/conform-pi.linux-6.1.txt). No
 * ids, addresses or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

static long futex(void *a, int op, int val, const void *ts, void *a2, int val3) {
    return syscall(SYS_futex, a, op, val, ts, a2, val3);
}

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

static void msleep(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void after(struct timespec *t, clockid_t c, long ms) {
    clock_gettime(c, t);
    t->tv_nsec += ms * 1000000L;
    while (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec++;
    }
}

static uint32_t word, word2;
static volatile pid_t waiter_tid;
static volatile long waiter_ret = 99, waiter_errno;
static volatile uint32_t word_seen;

/* Blocks in FUTEX_LOCK_PI on `word`, then records what it found and unlocks. */
static void *pi_waiter(void *arg) {
    (void)arg;
    waiter_tid = tid();
    errno = 0;
    waiter_ret = futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    waiter_errno = errno;
    word_seen = word;
    futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static volatile long timed_ret[2], timed_errno[2];
static void *timed_locker(void *arg) {
    struct timespec t;
    errno = 0;
    after(&t, CLOCK_REALTIME, 50);
    timed_ret[0] = futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, &t, NULL, 0);
    timed_errno[0] = errno;
    errno = 0;
    after(&t, CLOCK_MONOTONIC, 50);
    timed_ret[1] = futex(&word, FUTEX_LOCK_PI2 | FUTEX_PRIVATE_FLAG, 0, &t, NULL, 0);
    timed_errno[1] = errno;
    (void)arg;
    return NULL;
}

/* Holds `word2`, then waits for `word` (which main holds). */
static volatile int cycle_ready;
static void *cycle_holder(void *arg) {
    (void)arg;
    futex(&word2, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    cycle_ready = 1;
    futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    futex(&word2, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static void *lock_and_exit(void *arg) {
    futex(arg, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

/* Requeue-PI: waits on `cond` for a requeue to the PI futex `word`, records what it got and
 * whether it then owned `word`, and unlocks it if so. */
static uint32_t cond;
static volatile int rq_ready;
static volatile long rq_ret = 99, rq_errno;
static volatile int rq_owned;
static void *requeue_waiter(void *arg) {
    struct timespec t, *tp = NULL;
    if (arg) {
        after(&t, CLOCK_MONOTONIC, (long)arg);
        tp = &t;
    }
    rq_ready = 1;
    errno = 0;
    rq_ret = futex(&cond, FUTEX_WAIT_REQUEUE_PI_PRIVATE, 0, tp, &word, 0);
    rq_errno = errno;
    rq_owned = (word & FUTEX_TID_MASK) == (uint32_t)tid();
    if (rq_owned) futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static void requeue_case(const char *what, long timeout_ms, int hold, int how) {
    pthread_t t;
    char label[64];
    word = 0;
    cond = 0;
    rq_ready = 0;
    rq_ret = 99;
    rq_owned = 0;
    if (hold) futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    pthread_create(&t, NULL, requeue_waiter, (void *)timeout_ms);
    while (!rq_ready) msleep(5);
    msleep(50);
    if (how == 1) {
        snprintf(label, sizeof label, "%s: cmp_requeue_pi", what);
        CALL(label, futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)(long)INT32_MAX, &word, 0));
    } else if (how == 2) {
        snprintf(label, sizeof label, "%s: plain wake", what);
        CALL(label, futex(&cond, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
        snprintf(label, sizeof label, "%s: plain cmp_requeue", what);
        CALL(label, futex(&cond, FUTEX_CMP_REQUEUE_PRIVATE, 0, (void *)1L, &word2, 0));
        snprintf(label, sizeof label, "%s: cmp_requeue_pi to word2", what);
        CALL(label, futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)1L, &word2, 0));
        snprintf(label, sizeof label, "%s: cmp_requeue_pi then", what);
        CALL(label, futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)1L, &word, 0));
    }
    if (hold) {
        msleep(50);
        snprintf(label, sizeof label, "%s: waiter still waiting", what);
        VALUE(label, rq_ret == 99);
        futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    }
    pthread_join(t, NULL);
    snprintf(label, sizeof label, "%s: waiter returned", what);
    printf("%-" CONFORM_WIDTH "s = %ld %s\n", label, rq_ret, rq_ret < 0 ? errno_name(rq_errno) : "0");
    snprintf(label, sizeof label, "%s: waiter owned the pi futex", what);
    VALUE(label, rq_owned);
}

static pthread_mutex_t pim;
static long counter;
static void *pi_adder(void *arg) {
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&pim);
        counter++;
        pthread_mutex_unlock(&pim);
    }
    return arg;
}

static pthread_mutex_t robust;
static volatile int robust_held;
static void *robust_die(void *arg) {
    pthread_mutex_lock(&robust);
    robust_held = 1;
    msleep((int)(long)arg);
    return NULL; /* dies holding it */
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pid_t me = tid();

    /* The raw operations on a free word, our own word, a stranger's word. */
    word = 0;
    CALL("trylock_pi free", futex(&word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("word names the caller", word == (uint32_t)me);
    CALL("trylock_pi own", futex(&word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("lock_pi own (self deadlock)", futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("unlock_pi owner", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("word after unlock", word);
    CALL("unlock_pi unowned", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("lock_pi free", futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("word names the caller again", word == (uint32_t)me);
    CALL("unlock_pi again", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    word = 0x3ffffff0;
    CALL("unlock_pi another's", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("trylock_pi no such owner", futex(&word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("waiters bit set on the way", (word & FUTEX_WAITERS) != 0);
    CALL("lock_pi no such owner", futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    word = FUTEX_OWNER_DIED;
    CALL("trylock_pi owner died", futex(&word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("owner-died bit kept", word == (FUTEX_OWNER_DIED | (uint32_t)me));
    CALL("unlock_pi owner died", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("word after that unlock", word);
    CALL("lock_pi misaligned", futex((char *)&word + 1, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("lock_pi null", futex(NULL, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("unlock_pi null", futex(NULL, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("trylock_pi shared free", futex(&word2, FUTEX_TRYLOCK_PI, 0, NULL, NULL, 0));
    CALL("unlock_pi shared", futex(&word2, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0));

    /* A waiter: the owner's word gains FUTEX_WAITERS; the unlock hands the lock over. */
    word = 0;
    futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    pthread_t t;
    pthread_create(&t, NULL, pi_waiter, NULL);
    msleep(100);
    VALUE("owner's word has waiters bit", word == ((uint32_t)me | FUTEX_WAITERS));
    VALUE("waiter still waiting", waiter_ret);
    CALL("user unlock fails (cmpxchg)", __sync_bool_compare_and_swap(&word, (uint32_t)me, 0) ? 0 : -1);
    CALL("unlock_pi hands over", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    pthread_join(t, NULL);
    VALUE("waiter's lock_pi", waiter_ret);
    VALUE("waiter saw its tid | waiters", word_seen == ((uint32_t)waiter_tid | FUTEX_WAITERS));
    VALUE("word after the waiter's unlock", word);

    /* Timeouts: absolute CLOCK_REALTIME (LOCK_PI), absolute CLOCK_MONOTONIC (LOCK_PI2). */
    futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    pthread_create(&t, NULL, timed_locker, NULL);
    pthread_join(t, NULL);
    printf("%-44s = %ld %s\n", "lock_pi realtime timeout", timed_ret[0], timed_ret[0] < 0 ? errno_name((int)timed_errno[0]) : "0");
    printf("%-44s = %ld %s\n", "lock_pi2 monotonic timeout", timed_ret[1], timed_ret[1] < 0 ? errno_name((int)timed_errno[1]) : "0");
    VALUE("word keeps owner and waiters bit", word == ((uint32_t)me | FUTEX_WAITERS));
    CALL("unlock_pi after timeouts", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    VALUE("word after it", word);

    /* A cycle: we hold word, a thread holds word2 and waits for word; we lock word2. */
    word = word2 = 0;
    futex(&word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0);
    pthread_create(&t, NULL, cycle_holder, NULL);
    while (!cycle_ready) msleep(5);
    msleep(100);
    CALL("lock_pi closing a cycle", futex(&word2, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    CALL("unlock_pi breaks it", futex(&word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0));
    pthread_join(t, NULL);
    VALUE("both words free", word == 0 && word2 == 0);

    /* An owner that exits without unlocking (not robust): the word still names it. */
    word = 0;
    pthread_create(&t, NULL, lock_and_exit, &word);
    pthread_join(t, NULL);
    VALUE("dead owner's word kept", word != 0 && (word & FUTEX_OWNER_DIED) == 0);
    CALL("trylock_pi dead owner", futex(&word, FUTEX_TRYLOCK_PI_PRIVATE, 0, NULL, NULL, 0));

    /* glibc's PI mutexes. */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    CALL("setprotocol inherit", pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT));
    CALL("mutex init", pthread_mutex_init(&pim, &a));
    pthread_t ts[4];
    for (long i = 0; i < 4; i++) pthread_create(&ts[i], NULL, pi_adder, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(ts[i], NULL);
    VALUE("pi mutex counter", counter);
    CALL("trylock pi mutex", pthread_mutex_trylock(&pim));
    VALUE("trylock again (EBUSY)", pthread_mutex_trylock(&pim) == EBUSY);
    CALL("unlock pi mutex", pthread_mutex_unlock(&pim));
    VALUE("unlock not owned (EPERM)", pthread_mutex_unlock(&pim) == EPERM);

    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &a);
    pthread_create(&t, NULL, robust_die, (void *)0L);
    pthread_join(t, NULL);
    VALUE("robust pi: owner died (EOWNERDEAD)", pthread_mutex_lock(&robust) == EOWNERDEAD);
    CALL("consistent", pthread_mutex_consistent(&robust));
    CALL("unlock robust", pthread_mutex_unlock(&robust));
    robust_held = 0;
    pthread_create(&t, NULL, robust_die, (void *)200L);
    while (!robust_held) msleep(5);
    VALUE("waiter sees owner die (EOWNERDEAD)", pthread_mutex_lock(&robust) == EOWNERDEAD);
    pthread_join(t, NULL);
    CALL("consistent again", pthread_mutex_consistent(&robust));
    CALL("unlock robust again", pthread_mutex_unlock(&robust));

    /* Requeue-PI. */
    word = 0;
    cond = 1;
    CALL("wait_requeue_pi wrong value", futex(&cond, FUTEX_WAIT_REQUEUE_PI_PRIVATE, 0, NULL, &word, 0));
    CALL("wait_requeue_pi same futex", futex(&cond, FUTEX_WAIT_REQUEUE_PI_PRIVATE, 1, NULL, &cond, 0));
    CALL("cmp_requeue_pi nr_wake 2", futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 2, (void *)1L, &word, 1));
    CALL("cmp_requeue_pi same futex", futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)1L, &cond, 1));
    CALL("cmp_requeue_pi value differs", futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)1L, &word, 7));
    CALL("cmp_requeue_pi no waiter", futex(&cond, FUTEX_CMP_REQUEUE_PI_PRIVATE, 1, (void *)1L, &word, 1));
    requeue_case("free pi futex", 0, 0, 1);
    requeue_case("held pi futex", 0, 1, 1);
    requeue_case("timeout", 100, 0, 0);
    requeue_case("wrong wakers", 0, 0, 2);
    printf("done\n");
    return 0;
}
