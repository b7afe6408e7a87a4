/* Differential conformance: POSIX message queues (mq_open, mq_unlink, mq_timedsend,
 * mq_timedreceive, mq_notify, mq_getsetattr; glibc's wrappers and the raw calls) and System V
 * semaphores (semget, semop, semtimedop, semctl): valid and invalid arguments, priority order,
 * blocking with timeouts, signals and removal, waiters served by priority, SEM_UNDO at exit,
 * RLIMIT_MSGQUEUE. Prints what each call returned and values, never ids, addresses or times;
 * the output must equal Linux's (tests/fixtures/conform-ipc.linux-6.1.txt, recorded with
 * `../shared/peer/run.sh --linux 6.1 --file target/user/conform-ipc 'cd /tmp && /conform-ipc'`). */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
    struct seminfo *__buf;
};

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

static long ms_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static long raw_mq_open(const char *name, int oflag, int mode, struct mq_attr *attr) {
    return syscall(SYS_mq_open, name, oflag, mode, attr);
}

static void on_sig(int s) { (void)s; }

static volatile int notified, notify_code, notify_value, notify_signo;
static void on_notify(int s, siginfo_t *si, void *u) {
    (void)u;
    notified++;
    notify_signo = s;
    notify_code = si->si_code;
    notify_value = si->si_value.sival_int;
}

/* A receiver thread at a SCHED_FIFO priority: records the message it got and the order. */
struct rx {
    mqd_t q;
    int prio;
    char got;
    int order;
    long ret;
    int err;
};
static volatile int rx_seq;
static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;

static void *receiver(void *arg) {
    struct rx *r = arg;
    struct sched_param sp = {r->prio};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    char buf[8192];
    errno = 0;
    r->ret = mq_receive(r->q, buf, sizeof buf, NULL);
    r->err = errno;
    pthread_mutex_lock(&seq_lock);
    r->order = ++rx_seq;
    pthread_mutex_unlock(&seq_lock);
    r->got = r->ret > 0 ? buf[0] : '-';
    return NULL;
}

struct semwait {
    int id;
    struct sembuf op;
    long ret;
    int err;
    int done;
};
static void *sem_waiter(void *arg) {
    struct semwait *w = arg;
    errno = 0;
    w->ret = semop(w->id, &w->op, 1);
    w->err = errno;
    w->done = 1;
    return NULL;
}

static void mqueues(void) {
    struct mq_attr a, old;
    char buf[8192];
    unsigned prio;
    struct timespec ts, t0;

    puts("-- POSIX message queues");
    mq_unlink("/cf-q");
    CALL("mq_open no leading slash (glibc)", mq_open("cf-q", O_RDWR | O_CREAT, 0600, NULL));
    CALL("raw mq_open empty name", raw_mq_open("", O_RDWR | O_CREAT, 0600, NULL));
    CALL("raw mq_open a/b", raw_mq_open("a/b", O_RDWR | O_CREAT, 0600, NULL));
    CALL("raw mq_open ..", raw_mq_open("..", O_RDWR | O_CREAT, 0600, NULL));
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CALL("raw mq_open 299-byte name", raw_mq_open(longname, O_RDWR | O_CREAT, 0600, NULL));
    CALL("raw mq_open NULL name", raw_mq_open(NULL, O_RDWR | O_CREAT, 0600, NULL));
    CALL("raw mq_open bad attr pointer", raw_mq_open("cf-q", O_RDWR | O_CREAT, 0600, (void *)8));
    CALL("mq_open missing, no O_CREAT", mq_open("/cf-q", O_RDWR));
    mqd_t q = mq_open("/cf-q", O_RDWR | O_CREAT, 0600, NULL);
    VALUE("mq_open O_CREAT default attributes ok", q >= 0);
    VALUE("  close-on-exec", fcntl(q, F_GETFD));
    VALUE("  O_ACCMODE", fcntl(q, F_GETFL) & O_ACCMODE);
    CALL("mq_getattr", mq_getattr(q, &a));
    VALUE("  mq_maxmsg", a.mq_maxmsg);
    VALUE("  mq_msgsize", a.mq_msgsize);
    VALUE("  mq_curmsgs", a.mq_curmsgs);
    VALUE("  mq_flags", a.mq_flags);
    CALL("mq_open O_CREAT|O_EXCL existing", mq_open("/cf-q", O_RDWR | O_CREAT | O_EXCL, 0600, NULL));
    CALL("mq_open existing O_ACCMODE 3", mq_open("/cf-q", 3));
    mqd_t ro = mq_open("/cf-q", O_RDONLY);
    VALUE("mq_open existing O_RDONLY ok", ro >= 0);
    mqd_t wo = mq_open("/cf-q", O_WRONLY | O_NONBLOCK);
    VALUE("mq_open existing O_WRONLY|O_NONBLOCK ok", wo >= 0);
    CALL("mq_getattr of O_NONBLOCK fd", mq_getattr(wo, &a));
    VALUE("  mq_flags", a.mq_flags);

    /* Attributes. */
    a = (struct mq_attr){0, 0, 16, 0};
    CALL("mq_open maxmsg 0", mq_open("/cf-a", O_RDWR | O_CREAT, 0600, &a));
    a = (struct mq_attr){0, 2, -1, 0};
    CALL("mq_open msgsize -1", mq_open("/cf-a", O_RDWR | O_CREAT, 0600, &a));
    a = (struct mq_attr){0, 65537, 16, 0};
    CALL("mq_open maxmsg 65537 (root)", mq_open("/cf-a", O_RDWR | O_CREAT, 0600, &a));
    a = (struct mq_attr){0, 2, 16 * 1024 * 1024 + 1, 0};
    CALL("mq_open msgsize 16M+1 (root)", mq_open("/cf-a", O_RDWR | O_CREAT, 0600, &a));
    a = (struct mq_attr){0, 65536, 8192, 0};
    CALL("mq_open 65536 x 8192 (RLIMIT_MSGQUEUE)", mq_open("/cf-a", O_RDWR | O_CREAT, 0600, &a));
    a = (struct mq_attr){0, 2, 16, 0};
    mqd_t acc3 = mq_open("/cf-a", O_CREAT | 3, 0600, &a);
    VALUE("mq_open a nonexistent one, O_ACCMODE 3", acc3 >= 0);
    CALL("  mq_send on it", mq_send(acc3, "x", 1, 0));
    CALL("  mq_receive on it", mq_receive(acc3, buf, sizeof buf, NULL));
    CALL("  mq_getattr on it", mq_getattr(acc3, &a));
    mq_close(acc3);
    mq_unlink("/cf-a");
    a = (struct mq_attr){0, 20, 64, 0};
    mqd_t big = mq_open("/cf-a", O_RDWR | O_CREAT, 0600, &a);
    VALUE("mq_open maxmsg 20 above msg_max (root)", big >= 0);
    mq_getattr(big, &a);
    VALUE("  mq_maxmsg", a.mq_maxmsg);
    VALUE("  mq_msgsize", a.mq_msgsize);
    mq_close(big);
    mq_unlink("/cf-a");

    /* Sending and receiving. */
    CALL("mq_send prio 32768", mq_send(q, "x", 1, 32768));
    CALL("mq_send 8193 bytes", mq_send(q, buf, 8193, 0));
    CALL("mq_send on O_RDONLY fd", mq_send(ro, "x", 1, 0));
    CALL("mq_send on stdin", mq_send(0, "x", 1, 0));
    CALL("mq_send on fd 999", mq_send(999, "x", 1, 0));
    CALL("mq_send bad buffer", mq_send(q, (char *)8, 4, 0));
    CALL("mq_send a prio 0", mq_send(q, "a", 1, 0));
    CALL("mq_send bb prio 5", mq_send(q, "bb", 2, 5));
    CALL("mq_send ccc prio 5", mq_send(q, "ccc", 3, 5));
    CALL("mq_send d prio 1", mq_send(wo, "d", 1, 1));
    CALL("mq_send empty prio 3", mq_send(q, "", 0, 3));
    mq_getattr(q, &a);
    VALUE("mq_curmsgs after 5 sends", a.mq_curmsgs);
    ssize_t n = read(q, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("%-44s = %s", "read of the queue's fd", buf);
    CALL("read again at its end", read(q, buf, sizeof buf));
    CALL("lseek to 0", lseek(q, 0, SEEK_SET));
    CALL("write to the queue's fd", write(q, "x", 1));
    struct pollfd pf = {q, POLLIN | POLLOUT, 0};
    CALL("poll", poll(&pf, 1, 0));
    VALUE("  revents", pf.revents);
    CALL("mq_receive 8191-byte buffer", mq_receive(q, buf, 8191, &prio));
    CALL("mq_receive on O_WRONLY fd", mq_receive(wo, buf, sizeof buf, &prio));
    for (int i = 0; i < 5; i++) {
        memset(buf, 0, 8);
        prio = 99;
        long r = mq_receive(q, buf, sizeof buf, &prio);
        printf("%-44s = %ld [%s] prio %u\n", "mq_receive", r, buf, prio);
    }
    pf.revents = 0;
    CALL("poll of the empty queue", poll(&pf, 1, 0));
    VALUE("  revents", pf.revents);
    fcntl(ro, F_SETFL, O_NONBLOCK);
    CALL("mq_receive O_NONBLOCK (F_SETFL) empty", mq_receive(ro, buf, sizeof buf, &prio));
    fcntl(ro, F_SETFL, 0);
    struct mq_attr nb = {O_NONBLOCK, 0, 0, 0};
    CALL("mq_setattr O_NONBLOCK", mq_setattr(q, &nb, &old));
    VALUE("  old mq_flags", old.mq_flags);
    CALL("mq_receive now empty", mq_receive(q, buf, sizeof buf, &prio));
    mq_getattr(q, &a);
    VALUE("  mq_flags", a.mq_flags);
    VALUE("  F_GETFL O_NONBLOCK", (fcntl(q, F_GETFL) & O_NONBLOCK) != 0);
    nb.mq_flags = O_NONBLOCK | O_RDWR;
    CALL("mq_setattr flags O_NONBLOCK|O_RDWR", mq_setattr(q, &nb, &old));
    nb.mq_flags = 0;
    nb.mq_maxmsg = 99;
    CALL("mq_setattr 0 (maxmsg ignored)", mq_setattr(q, &nb, NULL));
    mq_getattr(q, &a);
    VALUE("  mq_maxmsg", a.mq_maxmsg);
    CALL("raw mq_getsetattr both NULL", syscall(SYS_mq_getsetattr, q, NULL, NULL));
    CALL("raw mq_getsetattr bad new", syscall(SYS_mq_getsetattr, q, (void *)8, NULL));
    CALL("raw mq_getsetattr bad old", syscall(SYS_mq_getsetattr, q, NULL, (void *)8));
    CALL("raw mq_getsetattr on a pipe", syscall(SYS_mq_getsetattr, 0, NULL, &a));

    /* Timeouts: absolute CLOCK_REALTIME. */
    ts = (struct timespec){0, 1000000000L};
    CALL("mq_timedreceive tv_nsec 1e9", mq_timedreceive(q, buf, sizeof buf, &prio, &ts));
    ts = (struct timespec){0, -1};
    CALL("mq_timedreceive tv_nsec -1", mq_timedreceive(q, buf, sizeof buf, &prio, &ts));
    ts = (struct timespec){-1, 0};
    CALL("mq_timedsend tv_sec -1 on fd 999", mq_timedsend(999, "x", 1, 0, &ts));
    CALL("mq_timedreceive bad timeout pointer", syscall(SYS_mq_timedreceive, q, buf, sizeof buf, &prio, (void *)8));
    ts = (struct timespec){0, 0};
    CALL("mq_timedreceive past, a message there", mq_send(q, "t", 1, 0) + mq_timedreceive(q, buf, sizeof buf, &prio, &ts));
    CALL("mq_timedreceive past, empty", mq_timedreceive(q, buf, sizeof buf, &prio, &ts));
    after(&ts, CLOCK_REALTIME, 60);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CALL("mq_timedreceive in 60 ms, empty", mq_timedreceive(q, buf, sizeof buf, &prio, &ts));
    VALUE("  waited >= 50 ms", ms_since(&t0) >= 50);
    a = (struct mq_attr){0, 2, 8, 0};
    mqd_t s = mq_open("/cf-s", O_RDWR | O_CREAT | O_EXCL, 0600, &a);
    VALUE("mq_open a 2 x 8 queue ok", s >= 0);
    mq_send(s, "1", 1, 0);
    mq_send(s, "2", 1, 0);
    ts = (struct timespec){0, 0};
    CALL("mq_timedsend full, past timeout", mq_timedsend(s, "3", 1, 0, &ts));
    after(&ts, CLOCK_REALTIME, 60);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CALL("mq_timedsend full, in 60 ms", mq_timedsend(s, "3", 1, 0, &ts));
    VALUE("  waited >= 50 ms", ms_since(&t0) >= 50);
    mq_setattr(s, &(struct mq_attr){O_NONBLOCK, 0, 0, 0}, NULL);
    CALL("mq_send full O_NONBLOCK", mq_send(s, "3", 1, 0));
    mq_setattr(s, &(struct mq_attr){0, 0, 0, 0}, NULL);
    pf = (struct pollfd){s, POLLIN | POLLOUT, 0};
    CALL("poll of the full queue", poll(&pf, 1, 0));
    VALUE("  revents", pf.revents);

    /* A blocked sender is let in by a receive, in priority order. */
    pid_t child = fork();
    if (child == 0) {
        mqd_t c = mq_open("/cf-s", O_WRONLY);
        mq_send(c, "4", 1, 7);
        _exit(0);
    }
    msleep(100);
    CALL("mq_receive from a full queue", mq_receive(s, buf, 8, &prio));
    int st;
    waitpid(child, &st, 0);
    VALUE("the blocked sender (child) finished", WIFEXITED(st));
    for (int i = 0; i < 2; i++) {
        buf[0] = 0;
        mq_receive(s, buf, 8, &prio);
        printf("%-44s = %c prio %u\n", "then", buf[0], prio);
    }
    mq_close(s);
    CALL("mq_unlink /cf-s", mq_unlink("/cf-s"));
    CALL("mq_unlink /cf-s again", mq_unlink("/cf-s"));
    CALL("mq_unlink no slash (glibc)", mq_unlink("cf-s"));
    CALL("raw mq_unlink empty", syscall(SYS_mq_unlink, ""));
    CALL("raw mq_unlink a/b", syscall(SYS_mq_unlink, "a/b"));
    CALL("mq_close a closed fd", mq_close(s));

    /* Blocked receivers are served by task priority, FIFO among equals. */
    mq_setattr(q, &(struct mq_attr){0, 0, 0, 0}, NULL);
    struct rx r[4] = {{q, 10, 0, 0, 0, 0}, {q, 30, 0, 0, 0, 0}, {q, 20, 0, 0, 0, 0}, {q, 30, 0, 0, 0, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&th[i], NULL, receiver, &r[i]);
        msleep(50);
    }
    msleep(100);
    mq_send(q, "A", 1, 0);
    msleep(30);
    mq_send(q, "B", 1, 0);
    msleep(30);
    mq_send(q, "C", 1, 0);
    msleep(30);
    mq_send(q, "D", 1, 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        printf("receiver %d at FIFO %-25d = got %c\n", i, r[i].prio, r[i].got);

    /* Signals: EINTR without SA_RESTART; SA_RESTART restarts. */
    struct sigaction sa = {0};
    sa.sa_handler = on_sig;
    sigaction(SIGUSR2, &sa, NULL);
    struct rx one = {q, 0, 0, 0, 0, 0};
    pthread_create(&th[0], NULL, receiver, &one);
    msleep(100);
    pthread_kill(th[0], SIGUSR2);
    pthread_join(th[0], NULL);
    CALL("mq_receive interrupted, no SA_RESTART", one.ret < 0 ? (errno = one.err, -1) : one.ret);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
    one = (struct rx){q, 0, 0, 0, 0, 0};
    pthread_create(&th[0], NULL, receiver, &one);
    msleep(100);
    pthread_kill(th[0], SIGUSR2);
    msleep(50);
    mq_send(q, "R", 1, 0);
    pthread_join(th[0], NULL);
    CALL("mq_receive with SA_RESTART", one.ret < 0 ? (errno = one.err, -1) : one.ret);
    VALUE("  got R", one.got == 'R');

    /* mq_notify (on an empty queue). */
    mq_getattr(q, &a);
    VALUE("queue empty before mq_notify", a.mq_curmsgs);
    struct sigaction nsa = {0};
    nsa.sa_sigaction = on_notify;
    nsa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &nsa, NULL);
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    ev.sigev_value.sival_int = 4242;
    CALL("mq_notify SIGEV_SIGNAL", mq_notify(q, &ev));
    CALL("mq_notify again (registered)", mq_notify(q, &ev));
    CALL("mq_notify NULL (unregister)", mq_notify(q, NULL));
    CALL("mq_notify NULL again", mq_notify(q, NULL));
    CALL("mq_notify SIGEV_SIGNAL again", mq_notify(q, &ev));
    mq_send(q, "n", 1, 0);
    msleep(20);
    VALUE("notified on the first message", notified);
    VALUE("  signo", notify_signo);
    VALUE("  si_code SI_MESGQ", notify_code == SI_MESGQ);
    VALUE("  si_value", notify_value);
    mq_send(q, "n", 1, 0);
    msleep(20);
    VALUE("not again (one-shot)", notified);
    mq_receive(q, buf, sizeof buf, &prio);
    mq_receive(q, buf, sizeof buf, &prio);
    ev.sigev_notify = SIGEV_NONE;
    CALL("mq_notify SIGEV_NONE", mq_notify(q, &ev));
    CALL("mq_notify SIGEV_SIGNAL while NONE holds it", mq_notify(q, &(struct sigevent){.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1}));
    mq_send(q, "n", 1, 0);
    mq_receive(q, buf, sizeof buf, &prio);
    CALL("mq_notify SIGEV_NONE fired, again", mq_notify(q, &ev));
    mq_notify(q, NULL);
    ev.sigev_notify = 99;
    CALL("mq_notify sigev_notify 99", mq_notify(q, &ev));
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = 65;
    CALL("mq_notify signal 65", mq_notify(q, &ev));
    ev.sigev_signo = 0;
    CALL("mq_notify signal 0", mq_notify(q, &ev));
    mq_notify(q, NULL);
    CALL("mq_notify on fd 999", mq_notify(999, NULL));
    CALL("mq_notify on a pipe", mq_notify(0, NULL));
    CALL("raw mq_notify bad sigevent", syscall(SYS_mq_notify, q, (void *)8));
    char cookie[32] = {0};
    struct sigevent tev = {0};
    tev.sigev_notify = SIGEV_THREAD;
    tev.sigev_value.sival_ptr = cookie;
    tev.sigev_signo = -1;
    CALL("raw mq_notify SIGEV_THREAD fd -1", syscall(SYS_mq_notify, q, &tev));
    tev.sigev_signo = q;
    CALL("raw mq_notify SIGEV_THREAD not a socket", syscall(SYS_mq_notify, q, &tev));
    tev.sigev_value.sival_ptr = (void *)8;
    CALL("raw mq_notify SIGEV_THREAD bad cookie", syscall(SYS_mq_notify, q, &tev));
    /* A queue another process opened: a send from it notifies this one. */
    CALL("mq_notify for a child's send", mq_notify(q, &(struct sigevent){.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1}));
    notified = 0;
    child = fork();
    if (child == 0) {
        mqd_t c = mq_open("/cf-q", O_WRONLY);
        _exit(mq_send(c, "k", 1, 0) == 0 ? 0 : 1);
    }
    waitpid(child, &st, 0);
    msleep(20);
    VALUE("  child's send ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    VALUE("  notified", notified);
    mq_receive(q, buf, sizeof buf, &prio);
    /* Closing the registering process's fd drops its registration. */
    mqd_t q2 = mq_open("/cf-q", O_RDWR);
    CALL("mq_notify on a second fd", mq_notify(q2, &(struct sigevent){.sigev_notify = SIGEV_NONE}));
    mq_close(q2);
    CALL("mq_notify after closing it", mq_notify(q, &(struct sigevent){.sigev_notify = SIGEV_NONE}));
    mq_notify(q, NULL);

    /* Unlinked: the name goes, open fds keep the queue. */
    CALL("mq_unlink /cf-q while open", mq_unlink("/cf-q"));
    CALL("mq_open /cf-q after unlink", mq_open("/cf-q", O_RDWR));
    CALL("mq_send to the unlinked queue", mq_send(q, "u", 1, 0));
    CALL("mq_receive from it", mq_receive(q, buf, sizeof buf, &prio));
    mq_close(q);
    mq_close(ro);
    mq_close(wo);

    /* RLIMIT_MSGQUEUE: 819200 bytes, a default queue is charged 82880. */
    struct rlimit rl;
    getrlimit(RLIMIT_MSGQUEUE, &rl);
    VALUE("RLIMIT_MSGQUEUE", rl.rlim_cur);
    mqd_t many[10];
    char name[16];
    int opened = 0;
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "/cf-m%d", i);
        mq_unlink(name);
        errno = 0;
        many[i] = mq_open(name, O_RDWR | O_CREAT, 0600, NULL);
        if (many[i] >= 0)
            opened++;
        else
            printf("%-44s = -1 %s\n", "mq_open of a default queue", errno_name(errno));
    }
    VALUE("default queues created", opened);
    CALL("mq_unlink one, its fd open", mq_unlink("/cf-m0"));
    CALL("mq_open another: still charged", mq_open("/cf-x", O_RDWR | O_CREAT, 0600, NULL));
    mq_close(many[0]);
    mqd_t x = mq_open("/cf-x", O_RDWR | O_CREAT, 0600, NULL);
    VALUE("mq_open after the last close: ok", x >= 0);
    mq_close(x);
    mq_unlink("/cf-x");
    for (int i = 1; i < 10; i++) {
        snprintf(name, sizeof name, "/cf-m%d", i);
        if (many[i] >= 0)
            mq_close(many[i]);
        mq_unlink(name);
    }
}

static void semaphores(void) {
    union semun arg;
    struct semid_ds ds;
    struct seminfo si;
    unsigned short vals[3];
    struct timespec ts, t0;
    int st;

    puts("-- System V semaphores");
    CALL("semget IPC_PRIVATE 0 sems", semget(IPC_PRIVATE, 0, 0600));
    CALL("semget nsems -1", semget(IPC_PRIVATE, -1, 0600));
    CALL("semget nsems 32001", semget(IPC_PRIVATE, 32001, 0600));
    int p = semget(IPC_PRIVATE, 3, 0600);
    VALUE("semget IPC_PRIVATE 3 ok", p >= 0);
    int p2 = semget(IPC_PRIVATE, 3, 0600);
    VALUE("  a second IPC_PRIVATE set differs", p2 >= 0 && p2 != p);
    key_t key = 0x5eb0c1;
    CALL("semget key, no IPC_CREAT", semget(key, 2, 0600));
    int k = semget(key, 2, 0600 | IPC_CREAT);
    VALUE("semget key IPC_CREAT ok", k >= 0);
    VALUE("  again: the same set", semget(key, 2, 0600 | IPC_CREAT) == k);
    VALUE("  nsems 0: the same set", semget(key, 0, 0) == k);
    CALL("semget key IPC_CREAT|IPC_EXCL", semget(key, 2, 0600 | IPC_CREAT | IPC_EXCL));
    CALL("semget key asking 3 of 2", semget(key, 3, 0));

    CALL("semctl GETVAL new", semctl(k, 0, GETVAL));
    arg.val = 5;
    CALL("semctl SETVAL 5", semctl(k, 0, SETVAL, arg));
    CALL("semctl GETVAL", semctl(k, 0, GETVAL));
    arg.val = -1;
    CALL("semctl SETVAL -1", semctl(k, 0, SETVAL, arg));
    arg.val = 32768;
    CALL("semctl SETVAL 32768", semctl(k, 0, SETVAL, arg));
    CALL("semctl SETVAL 32768 on semid -1", semctl(-1, 0, SETVAL, arg));
    CALL("semctl SETVAL 32768 on a stale id", semctl(k + 1, 0, SETVAL, arg));
    arg.val = 32767;
    CALL("semctl SETVAL 32767", semctl(k, 1, SETVAL, arg));
    CALL("semctl SETVAL semnum 2 of 2", semctl(k, 2, SETVAL, arg));
    CALL("semctl GETVAL semnum -1", semctl(k, -1, GETVAL));
    CALL("semctl GETVAL semid -1", semctl(-1, 0, GETVAL));
    CALL("semctl GETVAL a stale id", semctl(k + 1, 0, GETVAL));
    CALL("semctl cmd 99", semctl(k, 0, 99));
    VALUE("semctl GETPID is mine", semctl(k, 0, GETPID) == getpid());
    CALL("semctl GETPID of an untouched sem", semctl(p, 0, GETPID));
    CALL("semctl GETNCNT", semctl(k, 0, GETNCNT));
    CALL("semctl GETZCNT", semctl(k, 0, GETZCNT));
    arg.array = vals;
    CALL("semctl GETALL", semctl(k, 0, GETALL, arg));
    printf("%-44s = %d %d\n", "  values", vals[0], vals[1]);
    vals[0] = 1;
    vals[1] = 40000;
    CALL("semctl SETALL 1 40000", semctl(k, 0, SETALL, arg));
    vals[1] = 2;
    CALL("semctl SETALL 1 2 (semnum ignored)", semctl(k, 77, SETALL, arg));
    arg.array = (void *)8;
    CALL("semctl GETALL bad buffer", semctl(k, 0, GETALL, arg));
    arg.array = vals;
    memset(vals, 0, sizeof vals);
    semctl(k, 0, GETALL, arg);
    printf("%-44s = %d %d\n", "  values", vals[0], vals[1]);
    arg.buf = &ds;
    CALL("semctl IPC_STAT", semctl(k, 0, IPC_STAT, arg));
    VALUE("  sem_nsems", ds.sem_nsems);
    VALUE("  mode", ds.sem_perm.mode);
    VALUE("  key", ds.sem_perm.__key == key);
    VALUE("  uid", ds.sem_perm.uid);
    VALUE("  cuid", ds.sem_perm.cuid);
    VALUE("  otime set", ds.sem_otime != 0);
    VALUE("  ctime set", ds.sem_ctime != 0);
    ds.sem_perm.mode = 0640 | 0100000;
    CALL("semctl IPC_SET mode 0640", semctl(k, 0, IPC_SET, arg));
    semctl(k, 0, IPC_STAT, arg);
    VALUE("  mode", ds.sem_perm.mode);
    arg.buf = (void *)8;
    CALL("semctl IPC_STAT bad buffer", semctl(k, 0, IPC_STAT, arg));
    CALL("semctl IPC_SET bad buffer", semctl(k, 0, IPC_SET, arg));
    arg.__buf = &si;
    int maxidx = semctl(0, 0, IPC_INFO, arg);
    VALUE("semctl IPC_INFO (max index) >= 0", maxidx >= 0);
    printf("%-44s = %d %d %d %d %d %d %d %d %d %d\n", "  seminfo", si.semmap, si.semmni, si.semmns, si.semmnu, si.semmsl, si.semopm,
           si.semume, si.semusz, si.semvmx, si.semaem);
    semctl(0, 0, SEM_INFO, arg);
    printf("%-44s = %d %d\n", "  SEM_INFO semusz semaem", si.semusz, si.semaem);
    arg.buf = &ds;
    VALUE("semctl SEM_STAT of the max index is an id", semctl(maxidx, 0, SEM_STAT, arg) >= 0);
    CALL("semctl SEM_STAT index 32767", semctl(32767, 0, SEM_STAT, arg));

    /* semop and its errors. */
    struct sembuf op = {0, -1, 0};
    CALL("semop nsops 0", semop(k, &op, 0));
    CALL("semop nsops 501", semop(k, &op, 501));
    CALL("semop semid -1", semop(-1, &op, 1));
    CALL("semop a stale id", semop(k + 1, &op, 1));
    CALL("semop bad sops", semop(k, (void *)8, 1));
    op.sem_num = 2;
    CALL("semop sem_num 2 of 2", semop(k, &op, 1));
    op = (struct sembuf){1, 32767, 0};
    CALL("semop past SEMVMX", semop(k, &op, 1));
    struct sembuf two[2] = {{0, -1, 0}, {1, -3, IPC_NOWAIT}};
    CALL("semop array, 2nd would block, NOWAIT", semop(k, two, 2));
    VALUE("  sem 0 unchanged", semctl(k, 0, GETVAL));
    two[1].sem_op = -2;
    CALL("semop array both ok", semop(k, two, 2));
    VALUE("  sem 0", semctl(k, 0, GETVAL));
    VALUE("  sem 1", semctl(k, 1, GETVAL));
    struct sembuf dup[2] = {{0, 2, 0}, {0, -2, 0}};
    CALL("semop the same sem twice", semop(k, dup, 2));
    op = (struct sembuf){0, 0, 0};
    CALL("semop wait-for-zero at zero", semop(k, &op, 1));
    op = (struct sembuf){0, -1, IPC_NOWAIT};
    CALL("semop -1 at zero NOWAIT", semop(k, &op, 1));
    op.sem_flg = 0;
    ts = (struct timespec){0, 1000000000L};
    CALL("semtimedop tv_nsec 1e9", semtimedop(k, &op, 1, &ts));
    ts = (struct timespec){-1, 0};
    CALL("semtimedop tv_sec -1", semtimedop(k, &op, 1, &ts));
    CALL("semtimedop bad timeout pointer", semtimedop(k, &op, 1, (void *)8));
    ts = (struct timespec){0, 60000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CALL("semtimedop 60 ms, would block", semtimedop(k, &op, 1, &ts));
    VALUE("  waited >= 50 ms", ms_since(&t0) >= 50);
    ts = (struct timespec){0, 0};
    CALL("semtimedop 0 ms, would block", semtimedop(k, &op, 1, &ts));

    /* Waiters: GETNCNT / GETZCNT, woken by the operation that lets them through. */
    arg.val = 1;
    semctl(k, 1, SETVAL, arg);
    struct semwait w1 = {k, {0, -2, 0}, 0, 0, 0}, w2 = {k, {1, 0, 0}, 0, 0, 0};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, sem_waiter, &w1);
    pthread_create(&t2, NULL, sem_waiter, &w2);
    msleep(100);
    VALUE("GETNCNT sem 0 with a waiter", semctl(k, 0, GETNCNT));
    VALUE("GETZCNT sem 1 with a waiter", semctl(k, 1, GETZCNT));
    VALUE("GETZCNT sem 0", semctl(k, 0, GETZCNT));
    op = (struct sembuf){0, 1, 0};
    semop(k, &op, 1);
    msleep(50);
    VALUE("+1: the -2 waiter still waits", w1.done);
    semop(k, &op, 1);
    pthread_join(t1, NULL);
    CALL("+1 again: the -2 waiter's semop", w1.ret < 0 ? (errno = w1.err, -1) : w1.ret);
    VALUE("  sem 0", semctl(k, 0, GETVAL));
    op = (struct sembuf){1, -1, 0};
    semop(k, &op, 1);
    pthread_join(t2, NULL);
    CALL("sem 1 to 0: the zero waiter's semop", w2.ret < 0 ? (errno = w2.err, -1) : w2.ret);
    VALUE("GETNCNT after", semctl(k, 0, GETNCNT));

    /* A signal: EINTR even with SA_RESTART (semop is never restarted). */
    struct sigaction sa = {0};
    sa.sa_handler = on_sig;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
    w1 = (struct semwait){k, {0, -1, 0}, 0, 0, 0};
    pthread_create(&t1, NULL, sem_waiter, &w1);
    msleep(100);
    pthread_kill(t1, SIGUSR2);
    pthread_join(t1, NULL);
    CALL("semop interrupted (SA_RESTART)", w1.ret < 0 ? (errno = w1.err, -1) : w1.ret);
    VALUE("  GETNCNT after", semctl(k, 0, GETNCNT));

    /* SEM_UNDO: a child's adjustments are undone at its exit; SETVAL forgets them. */
    arg.val = 5;
    semctl(k, 0, SETVAL, arg);
    pid_t child = fork();
    if (child == 0) {
        struct sembuf u[2] = {{0, -2, SEM_UNDO}, {1, 3, SEM_UNDO}};
        _exit(semop(k, u, 2) == 0 ? 0 : 1);
    }
    waitpid(child, &st, 0);
    VALUE("child's SEM_UNDO semop ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    VALUE("  sem 0 after its exit", semctl(k, 0, GETVAL));
    VALUE("  sem 1 after its exit", semctl(k, 1, GETVAL));
    VALUE("  GETPID is the child", semctl(k, 0, GETPID) == child);
    int c2p[2], p2c[2];
    pipe(c2p);
    pipe(p2c);
    child = fork();
    if (child == 0) {
        struct sembuf u = {0, 4, SEM_UNDO};
        semop(k, &u, 1);
        char c;
        write(c2p[1], "x", 1);
        read(p2c[0], &c, 1);
        _exit(0);
    }
    char c;
    read(c2p[0], &c, 1);
    VALUE("child +4 SEM_UNDO: sem 0", semctl(k, 0, GETVAL));
    arg.val = 1;
    semctl(k, 0, SETVAL, arg);
    write(p2c[1], "x", 1);
    waitpid(child, &st, 0);
    VALUE("SETVAL 1, child exits: sem 0", semctl(k, 0, GETVAL));
    child = fork();
    if (child == 0) {
        struct sembuf u = {1, 10, SEM_UNDO};
        semop(k, &u, 1);
        arg.val = 2;
        semctl(k, 1, SETVAL, arg);
        u.sem_op = 1;
        u.sem_flg = SEM_UNDO;
        semop(k, &u, 1);
        _exit(0);
    }
    waitpid(child, &st, 0);
    VALUE("undo after SETVAL: sem 1", semctl(k, 1, GETVAL));
    child = fork();
    if (child == 0) {
        struct sembuf u = {1, 5, SEM_UNDO};
        semop(k, &u, 1);
        arg.val = 2;
        semctl(k, 1, SETVAL, arg);
        u.sem_op = 0;
        u.sem_flg = 0;
        _exit(0);
    }
    waitpid(child, &st, 0);
    VALUE("undo clamped at 0: sem 1", semctl(k, 1, GETVAL));
    op = (struct sembuf){0, 32767, SEM_UNDO};
    arg.val = 0;
    semctl(k, 0, SETVAL, arg);
    CALL("semop +32767 SEM_UNDO", semop(k, &op, 1));
    op.sem_op = -32767;
    op.sem_flg = 0;
    semop(k, &op, 1);
    op.sem_op = 1;
    op.sem_flg = SEM_UNDO;
    CALL("semop +1 SEM_UNDO: adjustment past -32768", semop(k, &op, 1));
    op.sem_op = 32767;
    op.sem_flg = 0;
    semop(k, &op, 1);
    op.sem_op = -1;
    op.sem_flg = SEM_UNDO;
    CALL("semop -1 SEM_UNDO: back in range", semop(k, &op, 1));

    /* IPC_RMID wakes the waiters with EIDRM; the id is gone. */
    arg.val = 0;
    semctl(k, 0, SETVAL, arg);
    w1 = (struct semwait){k, {0, -1, 0}, 0, 0, 0};
    w2 = (struct semwait){k, {0, -1, 0}, 0, 0, 0};
    pthread_create(&t1, NULL, sem_waiter, &w1);
    pthread_create(&t2, NULL, sem_waiter, &w2);
    msleep(100);
    VALUE("GETNCNT with two waiters", semctl(k, 0, GETNCNT));
    CALL("semctl IPC_RMID", semctl(k, 0, IPC_RMID));
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CALL("  a waiter's semop", w1.ret < 0 ? (errno = w1.err, -1) : w1.ret);
    CALL("  the other's", w2.ret < 0 ? (errno = w2.err, -1) : w2.ret);
    CALL("semctl IPC_RMID again", semctl(k, 0, IPC_RMID));
    CALL("semop on the removed set", semop(k, &op, 1));
    CALL("semget the removed key", semget(key, 2, 0600));
    int k2 = semget(key, 2, 0600 | IPC_CREAT | IPC_EXCL);
    VALUE("semget IPC_CREAT|IPC_EXCL: a new set", k2 >= 0 && k2 != k);
    semctl(k2, 0, IPC_RMID);
    semctl(p, 0, IPC_RMID);
    semctl(p2, 0, IPC_RMID);
    arg.__buf = &si;
    semctl(0, 0, SEM_INFO, arg);
    VALUE("SEM_INFO semusz after removing all", si.semusz);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    mqueues();
    semaphores();
    return 0;
}
