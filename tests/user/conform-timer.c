/* Differential conformance: interval timers. alarm, setitimer / getitimer (ITIMER_REAL, and the
 * CPU-time ITIMER_VIRTUAL and ITIMER_PROF),
 * timer_create / timer_settime / timer_gettime / timer_getoverrun / timer_delete with
 * SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID and glibc's SIGEV_THREAD, periodic timers,
 * absolute times, and the errors. Prints what each call returned, and times only as
 * comparisons; the output must equal Linux's (tests/fixtures/conform-timer.linux-6.1.txt). */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int alrm, rt_count, rt_code, rt_value, thread_hits;
static volatile pid_t hit_tid;

static void on_alrm(int s) {
    (void)s;
    alrm++;
}

static void on_rt(int s, siginfo_t *si, void *u) {
    (void)s;
    (void)u;
    rt_count++;
    rt_code = si->si_code;
    rt_value = si->si_value.sival_int;
    hit_tid = (pid_t)syscall(SYS_gettid);
}

static void on_thread_timer(union sigval v) {
    (void)v;
    thread_hits++;
}

static volatile int prof_hits, vt_hits;
static void on_prof(int s) {
    (void)s;
    prof_hits++;
}
static void on_vt(int s) {
    (void)s;
    vt_hits++;
}

static long ms_of(const struct timespec *t) { return t->tv_sec * 1000 + t->tv_nsec / 1000000; }

static void msleep(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static volatile int worker_stop;
static pid_t worker_tid;
static void *worker(void *a) {
    (void)a;
    worker_tid = (pid_t)syscall(SYS_gettid);
    while (!worker_stop) msleep(5);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGALRM, on_alrm);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMIN + 1, &sa, NULL);

    /* alarm */
    VALUE("alarm(5) first", alarm(5));
    VALUE("alarm(0) returns the 5 left", alarm(0));
    VALUE("alarm(0) again", alarm(0));
    alarm(1);
    pause();
    VALUE("SIGALRM after alarm(1)", alrm);

    /* setitimer / getitimer */
    struct itimerval it = {{0, 50000}, {0, 100000}}, old;
    CALL("setitimer real 100ms/50ms", setitimer(ITIMER_REAL, &it, NULL));
    CALL("getitimer real", getitimer(ITIMER_REAL, &old));
    VALUE("interval reads 50ms", old.it_interval.tv_usec == 50000 && old.it_interval.tv_sec == 0);
    VALUE("value at most 100ms, not 0", old.it_value.tv_sec == 0 && old.it_value.tv_usec > 0 && old.it_value.tv_usec <= 100000);
    alrm = 0;
    while (alrm < 3) pause();
    VALUE("periodic SIGALRM x3", alrm);
    struct itimerval zero = {{0, 0}, {0, 0}};
    CALL("setitimer disarm, old", setitimer(ITIMER_REAL, &zero, &old));
    VALUE("old interval 50ms", old.it_interval.tv_usec);
    CALL("getitimer after disarm", getitimer(ITIMER_REAL, &old));
    VALUE("disarmed value", old.it_value.tv_sec + old.it_value.tv_usec);
    struct itimerval bad = {{0, 0}, {0, 1000000}};
    CALL("setitimer usec 1000000", setitimer(ITIMER_REAL, &bad, NULL));
    CALL("setitimer which 5", setitimer(5, &it, NULL));
    CALL("getitimer which 5", getitimer(5, &old));
    CALL("getitimer bad pointer", getitimer(ITIMER_REAL, (struct itimerval *)8));

    /* ITIMER_VIRTUAL and ITIMER_PROF: on the process's CPU time, sampled at ticks (a newly armed
     * value gets a tick added: 20 ms reads at most 24 ms at HZ 250) */
    {
        signal(SIGPROF, on_prof);
        signal(SIGVTALRM, on_vt);
        struct itimerval cpu = {{0, 10000}, {0, 20000}};
        CALL("setitimer prof 20ms/10ms", setitimer(ITIMER_PROF, &cpu, NULL));
        CALL("setitimer virtual 20ms/10ms", setitimer(ITIMER_VIRTUAL, &cpu, NULL));
        CALL("getitimer prof", getitimer(ITIMER_PROF, &old));
        VALUE("prof interval", old.it_interval.tv_usec);
        VALUE("prof value in [16ms, 24ms]", old.it_value.tv_sec == 0 && old.it_value.tv_usec >= 16000 && old.it_value.tv_usec <= 24000);
        CALL("getitimer virtual", getitimer(ITIMER_VIRTUAL, &old));
        VALUE("virtual value in [16ms, 24ms]", old.it_value.tv_sec == 0 && old.it_value.tv_usec >= 16000 && old.it_value.tv_usec <= 24000);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        /* User-mode work between the clock reads: without a vDSO (Cadence) a loop of bare
         * clock_gettime calls is almost all system time, and ITIMER_VIRTUAL counts user time. */
        do {
            for (volatile int i = 0; i < 100000; i++) {
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while ((prof_hits < 3 || vt_hits < 3) && ms_of(&t1) - ms_of(&t0) < 3000);
        VALUE("SIGPROF x3 while spinning", prof_hits >= 3);
        VALUE("SIGVTALRM x3 while spinning", vt_hits >= 3);
        CALL("setitimer prof disarm, old", setitimer(ITIMER_PROF, &zero, &old));
        VALUE("old prof interval", old.it_interval.tv_usec);
        VALUE("old prof value in (0, 10ms]", old.it_value.tv_sec == 0 && old.it_value.tv_usec > 0 && old.it_value.tv_usec <= 10000);
        CALL("setitimer virtual NULL (disarms)", setitimer(ITIMER_VIRTUAL, NULL, &old));
        VALUE("old virtual interval", old.it_interval.tv_usec);
        CALL("getitimer prof after disarm", getitimer(ITIMER_PROF, &old));
        VALUE("disarmed prof", old.it_value.tv_sec + old.it_value.tv_usec + old.it_interval.tv_usec);
        CALL("getitimer virtual after disarm", getitimer(ITIMER_VIRTUAL, &old));
        VALUE("disarmed virtual", old.it_value.tv_sec + old.it_value.tv_usec + old.it_interval.tv_usec);
        CALL("setitimer prof usec 1000000", setitimer(ITIMER_PROF, &bad, NULL));
        CALL("getitimer virtual bad pointer", getitimer(ITIMER_VIRTUAL, (struct itimerval *)8));
        CALL("setitimer which 3", setitimer(3, &it, NULL));
        CALL("getitimer which -1", getitimer(-1, &old));
        signal(SIGPROF, SIG_DFL);
        signal(SIGVTALRM, SIG_DFL);
    }

    /* timer_create and kin: SIGEV_SIGNAL with a value */
    timer_t t1;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGRTMIN + 1;
    ev.sigev_value.sival_int = 4242;
    CALL("timer_create monotonic signal", timer_create(CLOCK_MONOTONIC, &ev, &t1));
    struct itimerspec ts = {{0, 0}, {0, 20000000}}, cur;
    CALL("timer_gettime disarmed", timer_gettime(t1, &cur));
    VALUE("disarmed reads 0", cur.it_value.tv_sec + cur.it_value.tv_nsec);
    CALL("timer_settime 20ms", timer_settime(t1, 0, &ts, NULL));
    CALL("timer_gettime armed", timer_gettime(t1, &cur));
    VALUE("armed reads in (0, 20ms]", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 && cur.it_value.tv_nsec <= 20000000);
    /* Waits for the expiry rather than a fixed time: a loaded host may delay it. */
    for (int waited = 0; rt_count < 1 && waited < 5000; waited += 5) msleep(5);
    msleep(20);
    VALUE("rt signal count", rt_count);
    VALUE("si_code SI_TIMER", rt_code == SI_TIMER);
    VALUE("si_value", rt_value);
    CALL("timer_getoverrun", timer_getoverrun(t1));
    /* periodic, absolute start */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ts.it_value = now;
    ts.it_value.tv_nsec += 10000000;
    if (ts.it_value.tv_nsec >= 1000000000) {
        ts.it_value.tv_nsec -= 1000000000;
        ts.it_value.tv_sec++;
    }
    ts.it_interval.tv_nsec = 20000000;
    rt_count = 0;
    CALL("timer_settime abstime periodic", timer_settime(t1, TIMER_ABSTIME, &ts, &cur));
    VALUE("old setting was disarmed", cur.it_value.tv_sec + cur.it_value.tv_nsec);
    while (rt_count < 4) msleep(5);
    VALUE("periodic rt signals >= 4", rt_count >= 4);
    CALL("timer_gettime periodic", timer_gettime(t1, &cur));
    VALUE("interval reads 20ms", ms_of(&cur.it_interval));
    CALL("timer_delete", timer_delete(t1));
    CALL("timer_delete again", timer_delete(t1));
    CALL("timer_gettime deleted", timer_gettime(t1, &cur));
    CALL("timer_settime deleted", timer_settime(t1, 0, &ts, NULL));
    CALL("timer_getoverrun deleted", timer_getoverrun(t1));

    /* SIGEV_NONE: only read */
    timer_t t2;
    ev.sigev_notify = SIGEV_NONE;
    CALL("timer_create none", timer_create(CLOCK_REALTIME, &ev, &t2));
    ts.it_interval.tv_nsec = 0;
    ts.it_value.tv_sec = 5;
    ts.it_value.tv_nsec = 0;
    CALL("timer_settime none 5s", timer_settime(t2, 0, &ts, NULL));
    CALL("timer_gettime none", timer_gettime(t2, &cur));
    VALUE("none reads about 5s", ms_of(&cur.it_value) > 4000 && ms_of(&cur.it_value) <= 5000);
    ts.it_value.tv_nsec = 1000000000;
    CALL("timer_settime bad nsec", timer_settime(t2, 0, &ts, NULL));
    CALL("timer_settime bad pointer", timer_settime(t2, 0, (struct itimerspec *)8, NULL));
    CALL("timer_delete none", timer_delete(t2));

    /* SIGEV_THREAD_ID: to one thread */
    pthread_t w;
    pthread_create(&w, NULL, worker, NULL);
    while (!worker_tid) msleep(1);
    timer_t t3;
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGRTMIN + 1;
    ev._sigev_un._tid = worker_tid;
    CALL("timer_create thread id", timer_create(CLOCK_MONOTONIC, &ev, &t3));
    ts.it_value.tv_sec = 0;
    ts.it_value.tv_nsec = 10000000;
    rt_count = 0;
    hit_tid = 0;
    CALL("timer_settime thread id", timer_settime(t3, 0, &ts, NULL));
    while (rt_count < 1) msleep(5);
    VALUE("delivered to that thread", hit_tid == worker_tid);
    CALL("timer_delete thread id", timer_delete(t3));
    worker_stop = 1;
    pthread_join(w, NULL);
    ev._sigev_un._tid = 999999;
    CALL("timer_create no such thread", timer_create(CLOCK_MONOTONIC, &ev, &t3));

    /* glibc's SIGEV_THREAD */
    timer_t t4;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = on_thread_timer;
    CALL("timer_create sigev_thread", timer_create(CLOCK_MONOTONIC, &ev, &t4));
    ts.it_value.tv_nsec = 10000000;
    ts.it_interval.tv_nsec = 10000000;
    CALL("timer_settime sigev_thread", timer_settime(t4, 0, &ts, NULL));
    while (thread_hits < 3) msleep(5);
    VALUE("sigev_thread ran >= 3", thread_hits >= 3);
    CALL("timer_delete sigev_thread", timer_delete(t4));

    /* errors */
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = 0;
    CALL("timer_create signo 0", timer_create(CLOCK_MONOTONIC, &ev, &t4));
    ev.sigev_signo = 65;
    CALL("timer_create signo 65", timer_create(CLOCK_MONOTONIC, &ev, &t4));
    ev.sigev_signo = SIGUSR1;
    ev.sigev_notify = 77;
    CALL("timer_create bad notify", timer_create(CLOCK_MONOTONIC, &ev, &t4));
    ev.sigev_notify = SIGEV_SIGNAL;
    CALL("timer_create bad clock", timer_create(99, &ev, &t4));
    CALL("timer_create bad id pointer", syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, (void *)8));
    CALL("timer_create NULL sevp", timer_create(CLOCK_MONOTONIC, NULL, &t4));
    CALL("timer_delete it", timer_delete(t4));
    CALL("raw timer_delete -1", syscall(SYS_timer_delete, -1));
    CALL("raw timer_getoverrun 12345", syscall(SYS_timer_getoverrun, 12345));

    /* timerfd */
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    CALL("timerfd_create monotonic", tfd);
    VALUE("timerfd cloexec", (fcntl(tfd, F_GETFD) & FD_CLOEXEC) != 0);
    VALUE("timerfd nonblock", (fcntl(tfd, F_GETFL) & O_NONBLOCK) != 0);
    struct stat tst;
    CALL("fstat timerfd", fstat(tfd, &tst));
    VALUE("timerfd st_mode", tst.st_mode);
    uint64_t ticks = 0;
    CALL("read unarmed (nonblock)", read(tfd, &ticks, sizeof ticks));
    CALL("read short buffer", read(tfd, &ticks, 4));
    CALL("write timerfd", write(tfd, &ticks, sizeof ticks));
    CALL("lseek timerfd", lseek(tfd, 0, SEEK_SET));
    struct itimerspec its = {0}, told;
    its.it_value.tv_nsec = 20000000;
    its.it_interval.tv_nsec = 10000000;
    CALL("timerfd_settime 20 ms every 10 ms", timerfd_settime(tfd, 0, &its, NULL));
    CALL("timerfd_gettime", timerfd_gettime(tfd, &told));
    VALUE("gettime value in (0, 20 ms]", told.it_value.tv_sec == 0 && told.it_value.tv_nsec > 0 && told.it_value.tv_nsec <= 20000000);
    VALUE("gettime interval 10 ms", told.it_interval.tv_nsec == 10000000);
    struct pollfd pfd = {.fd = tfd, .events = POLLIN};
    VALUE("poll before expiry", poll(&pfd, 1, 0));
    VALUE("poll until expiry", poll(&pfd, 1, 1000));
    VALUE("revents POLLIN", pfd.revents == POLLIN);
    msleep(35);
    CALL("read after expiries", read(tfd, &ticks, sizeof ticks));
    VALUE("expirations >= 2", ticks >= 2);
    CALL("read again (nonblock)", read(tfd, &ticks, sizeof ticks));
    int tfl = fcntl(tfd, F_GETFL);
    fcntl(tfd, F_SETFL, tfl & ~O_NONBLOCK);
    CALL("blocking read", read(tfd, &ticks, sizeof ticks));
    VALUE("one expiration", ticks);
    its.it_value.tv_nsec = 0;
    CALL("timerfd_settime disarm (old)", timerfd_settime(tfd, 0, &its, &told));
    VALUE("old interval 10 ms", told.it_interval.tv_nsec == 10000000);
    CALL("timerfd_gettime disarmed", timerfd_gettime(tfd, &told));
    VALUE("disarmed value 0", told.it_value.tv_sec == 0 && told.it_value.tv_nsec == 0);
    struct timespec nowts;
    clock_gettime(CLOCK_REALTIME, &nowts);
    int rfd = timerfd_create(CLOCK_REALTIME, 0);
    CALL("timerfd_create realtime", rfd);
    its.it_interval.tv_nsec = 0;
    its.it_value = nowts;
    its.it_value.tv_nsec += 10000000;
    if (its.it_value.tv_nsec >= 1000000000) { its.it_value.tv_sec++; its.it_value.tv_nsec -= 1000000000; }
    CALL("timerfd_settime realtime absolute", timerfd_settime(rfd, TFD_TIMER_ABSTIME, &its, NULL));
    CALL("blocking read realtime", read(rfd, &ticks, sizeof ticks));
    VALUE("realtime expirations", ticks);
    its.it_value.tv_sec = 1;
    its.it_value.tv_nsec = 1000000000;
    CALL("timerfd_settime bad nsec", timerfd_settime(rfd, 0, &its, NULL));
    its.it_value.tv_nsec = 0;
    CALL("timerfd_settime bad flags", timerfd_settime(rfd, 8, &its, NULL));
    CALL("timerfd_settime bad pointer", timerfd_settime(rfd, 0, (void *)8, NULL));
    CALL("timerfd_settime on a pipe", ({ int pp[2]; pipe(pp); timerfd_settime(pp[0], 0, &its, NULL); }));
    CALL("timerfd_settime bad fd", timerfd_settime(999, 0, &its, NULL));
    CALL("timerfd_gettime on stdin", timerfd_gettime(0, &told));
    CALL("timerfd_create bad clock", timerfd_create(99, 0));
    CALL("timerfd_create cputime clock", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0));
    CALL("timerfd_create bad flags", timerfd_create(CLOCK_MONOTONIC, 1));
    CALL("close timerfd", close(tfd));
    CALL("close realtime timerfd", close(rfd));

    /* 1 ns periods: a periodic timer fires again only once its signal is taken (Linux's
     * posixtimer_rearm), so it cannot storm; the periods between are its overrun. */
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_rt;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGRTMIN + 1, &sa, NULL);
        sigset_t m;
        sigemptyset(&m);
        sigaddset(&m, SIGRTMIN + 1);
        sigaddset(&m, SIGALRM);
        sigprocmask(SIG_BLOCK, &m, NULL);
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = SIGRTMIN + 1;
        timer_t fast;
        CALL("timer_create for a 1 ns period", timer_create(CLOCK_MONOTONIC, &ev, &fast));
        struct itimerspec one = {{0, 1}, {0, 1}}, zero = {{0, 0}, {0, 0}}, cur;
        CALL("timer_settime 1 ns period", timer_settime(fast, 0, &one, NULL));
        msleep(30);
        timer_gettime(fast, &cur);
        VALUE("fired, blocked: its interval reads 1 ns", cur.it_interval.tv_nsec);
        VALUE("and its next expiry within 1 ns", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec <= 1);
        /* Taken while blocked (sigtimedwait): one signal for the 30 ms, the periods as its
         * overrun; the timer re-arms as it is taken, and fires again. */
        siginfo_t si;
        struct timespec nowait = {0, 0};
        sigset_t rt1;
        sigemptyset(&rt1);
        sigaddset(&rt1, SIGRTMIN + 1);
        VALUE("sigtimedwait takes it", sigtimedwait(&rt1, &si, &nowait) == SIGRTMIN + 1);
        VALUE("its si_overrun over 1000", si.si_overrun > 1000);
        VALUE("timer_getoverrun the same", timer_getoverrun(fast) == si.si_overrun);
        msleep(5);
        VALUE("re-armed when taken: pending again", sigtimedwait(&rt1, &si, &nowait) == SIGRTMIN + 1);
        CALL("timer_delete the fast timer", timer_delete(fast));
        sigset_t alrm1;
        sigemptyset(&alrm1);
        sigaddset(&alrm1, SIGALRM);
        struct itimerval fastit = {{0, 1}, {0, 1}}, offit = {{0, 0}, {0, 0}};
        CALL("setitimer 1 us period", setitimer(ITIMER_REAL, &fastit, NULL));
        msleep(30);
        VALUE("SIGALRM taken by sigtimedwait", sigtimedwait(&alrm1, &si, &nowait) == SIGALRM);
        VALUE("its si_code SI_KERNEL", si.si_code == SI_KERNEL);
        msleep(5);
        VALUE("ITIMER_REAL re-armed when taken", sigtimedwait(&alrm1, &si, &nowait) == SIGALRM);
        CALL("setitimer off", setitimer(ITIMER_REAL, &offit, NULL));
        sigtimedwait(&alrm1, &si, &nowait);
        sigprocmask(SIG_UNBLOCK, &m, NULL);
        (void)zero;
    }
    printf("done\n");
    return 0;
}
