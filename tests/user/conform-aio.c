/* Differential conformance: Linux's native AIO (fs/aio.c) through the raw system calls:
 * io_setup, io_destroy, io_submit (PREAD, PWRITE, PREADV, PWRITEV, FSYNC, FDSYNC, POLL and the
 * refused opcodes), io_getevents, io_pgetevents and io_cancel, with valid and invalid arguments;
 * the completion ring's header as user space sees it, /proc/sys/fs/aio-nr and aio-max-nr, POLL
 * requests that complete later (pipes, a socket, a timerfd) or are cancelled, signals during a
 * wait, io_destroy under a waiting thread, a fork's child and an exec. Prints what each call
 * returned and values, never context ids (ring addresses) or times; the output must equal
 * Linux's (tests/fixtures/conform-aio.linux-6.1.txt, recorded with
 * `../shared/peer/run.sh --linux 6.1 --smp 2 --file target/user/conform-aio 'cd /tmp && /conform-aio'`:
 * the ring's size depends on the number of CPUs, so both run with two). */
#define _GNU_SOURCE
#define CONFORM_WIDTH "52"
#include "conform.h"
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RWF_HIPRI
#define RWF_HIPRI 0x1
#define RWF_NOWAIT 0x8
#define RWF_APPEND 0x10
#endif

struct ring {
    unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

struct aio_sigset {
    const sigset_t *sigmask;
    size_t sigsetsize;
};

static long io_setup(unsigned n, aio_context_t *c) { return syscall(SYS_io_setup, n, c); }
static long io_destroy(aio_context_t c) { return syscall(SYS_io_destroy, c); }
static long io_submit(aio_context_t c, long n, struct iocb **p) { return syscall(SYS_io_submit, c, n, p); }
static long io_cancel(aio_context_t c, struct iocb *cb, struct io_event *ev) { return syscall(SYS_io_cancel, c, cb, ev); }
static long io_getevents(aio_context_t c, long min, long n, struct io_event *ev, struct timespec *t) {
    return syscall(SYS_io_getevents, c, min, n, ev, t);
}
static long io_pgetevents(aio_context_t c, long min, long n, struct io_event *ev, struct timespec *t, struct aio_sigset *s) {
    return syscall(SYS_io_pgetevents, c, min, n, ev, t, s);
}

static long sysctl_value(const char *name) {
    char path[64], buf[32];
    snprintf(path, sizeof path, "/proc/sys/fs/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    return atol(buf);
}

static void msleep(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* An iocb of `op` on `fd`. */
static struct iocb cb_of(int op, int fd, void *buf, unsigned long long nbytes, long long offset, unsigned long long data) {
    struct iocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_data = data;
    cb.aio_lio_opcode = op;
    cb.aio_fildes = fd;
    cb.aio_buf = (uintptr_t)buf;
    cb.aio_nbytes = nbytes;
    cb.aio_offset = offset;
    return cb;
}

/* Submits one iocb: io_submit's result. */
static long submit1(aio_context_t ctx, struct iocb *cb) {
    struct iocb *p[1] = {cb};
    return io_submit(ctx, 1, p);
}

static struct timespec ms_ts(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    return t;
}

/* Waits up to 2 s for one event; prints whether it came, its data, whether obj is `cb`, res. */
static void reap1(const char *what, aio_context_t ctx, struct iocb *cb) {
    struct io_event ev;
    memset(&ev, 0, sizeof ev);
    struct timespec t = ms_ts(2000);
    char label[96];
    long n = io_getevents(ctx, 1, 1, &ev, &t);
    snprintf(label, sizeof label, "%s: events", what);
    VALUE(label, n);
    if (n != 1) return;
    snprintf(label, sizeof label, "%s: data", what);
    VALUE(label, ev.data);
    snprintf(label, sizeof label, "%s: obj is the iocb", what);
    VALUE(label, ev.obj == (uintptr_t)cb);
    snprintf(label, sizeof label, "%s: res", what);
    VALUE(label, ev.res);
    snprintf(label, sizeof label, "%s: res2", what);
    VALUE(label, ev.res2);
}

static volatile int sigs;
static void on_sig(int s) {
    (void)s;
    sigs++;
}

static aio_context_t shared_ctx;
static volatile long waiter_ret, waiter_errno;
static void *waiter(void *a) {
    (void)a;
    struct io_event ev;
    errno = 0;
    waiter_ret = io_getevents(shared_ctx, 1, 1, &ev, NULL);
    waiter_errno = errno;
    return NULL;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "after-exec") == 0) {
        VALUE("after exec: aio-nr (the parent's 1)", sysctl_value("aio-nr"));
        return 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    VALUE("aio-max-nr", sysctl_value("aio-max-nr"));
    VALUE("aio-nr at the start", sysctl_value("aio-nr"));
    int w;
    CALL("open and write aio-nr (read-only)", (w = open("/proc/sys/fs/aio-nr", O_WRONLY)) < 0 ? -1 : write(w, "5", 1));
    if (w >= 0) close(w);

    /* io_setup */
    aio_context_t ctx = 0, c2 = 0;
    CALL("io_setup(0)", io_setup(0, &ctx));
    ctx = 1;
    CALL("io_setup with *ctxp != 0", io_setup(1, &ctx));
    CALL("io_setup ctxp NULL", io_setup(1, NULL));
    CALL("io_setup ctxp kernel address", io_setup(1, (aio_context_t *)0xffff800000000000UL));
    aio_context_t *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CALL("io_setup ctxp read-only", io_setup(1, ro));
    VALUE("aio-nr after the read-only ctxp", sysctl_value("aio-nr"));
    ctx = 0;
    CALL("io_setup(INT_MAX)", io_setup(INT_MAX, &ctx));
    CALL("io_setup(0x80000000)", io_setup(0x80000000u, &ctx));
    CALL("io_setup(0xffffffff)", io_setup(0xffffffffu, &ctx));
    CALL("io_setup(4194304)", io_setup(4194304, &ctx));
    CALL("io_setup(4194305)", io_setup(4194305, &ctx));
    CALL("io_setup(65537)", io_setup(65537, &ctx));
    CALL("io_setup(65536)", io_setup(65536, &ctx));
    VALUE("aio-nr with 65536", sysctl_value("aio-nr"));
    CALL("io_setup(1) past aio-max-nr", io_setup(1, &c2));
    struct ring *big = (struct ring *)ctx;
    VALUE("ring of 65536: nr", big->nr);
    CALL("io_destroy it", io_destroy(ctx));
    VALUE("aio-nr after io_destroy", sysctl_value("aio-nr"));
    ctx = 0;
    CALL("io_setup(1)", io_setup(1, &ctx));
    VALUE("ctx is non-zero", ctx != 0);
    VALUE("ctx is page-aligned", ctx % page == 0);
    VALUE("aio-nr with 1", sysctl_value("aio-nr"));
    struct ring *r = (struct ring *)ctx;
    VALUE("ring id", r->id);
    VALUE("ring nr", r->nr);
    VALUE("ring head", r->head);
    VALUE("ring tail", r->tail);
    VALUE("ring magic", r->magic);
    VALUE("ring compat_features", r->compat_features);
    VALUE("ring incompat_features", r->incompat_features);
    VALUE("ring header_length", r->header_length);
    CALL("io_setup(100)", io_setup(100, &c2));
    VALUE("second ring id", ((struct ring *)c2)->id);
    VALUE("second ring nr", ((struct ring *)c2)->nr);
    VALUE("aio-nr with 1 and 100", sysctl_value("aio-nr"));
    CALL("io_destroy the second", io_destroy(c2));
    CALL("io_destroy it again", io_destroy(c2));
    CALL("io_submit on a destroyed ctx", io_submit(c2, 0, NULL));
    CALL("io_destroy(0)", io_destroy(0));
    CALL("io_destroy(1)", io_destroy(1));
    CALL("io_destroy(ctx + 4)", io_destroy(ctx + 4));
    CALL("io_destroy kernel address", io_destroy(0xffff800000000000UL));

    /* io_submit: reads and writes of a regular file */
    int fd = open("aio-file", O_CREAT | O_RDWR | O_TRUNC, 0600);
    char out[64] = "hello, asynchronous world", in[64];
    struct iocb cb = cb_of(IOCB_CMD_PWRITE, fd, out, 25, 0, 0x1234);
    cb.aio_key = 0x55;
    CALL("io_submit PWRITE", submit1(ctx, &cb));
    VALUE("aio_key after io_submit", cb.aio_key);
    VALUE("ring tail - head after one completion", r->tail - r->head);
    reap1("PWRITE", ctx, &cb);
    VALUE("ring tail - head after io_getevents", r->tail - r->head);
    VALUE("ring head after one event", r->head);
    memset(in, 0, sizeof in);
    cb = cb_of(IOCB_CMD_PREAD, fd, in, sizeof in, 7, 7);
    CALL("io_submit PREAD at 7", submit1(ctx, &cb));
    reap1("PREAD at 7", ctx, &cb);
    VALUE("PREAD read asynchronous", strcmp(in, "asynchronous world") == 0);
    VALUE("file offset unmoved", lseek(fd, 0, SEEK_CUR));
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 10, 100, 8);
    CALL("io_submit PREAD past the end", submit1(ctx, &cb));
    reap1("PREAD past the end", ctx, &cb);
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 0, 0, 9);
    CALL("io_submit PREAD of 0 bytes", submit1(ctx, &cb));
    reap1("PREAD of 0 bytes", ctx, &cb);

    /* several at once, in order */
    struct iocb cbs[4];
    struct iocb *cbp[4];
    char a1[8] = "AAAA", a2[8] = "BBBB", got[8] = {0};
    cbs[0] = cb_of(IOCB_CMD_PWRITE, fd, a1, 4, 100, 1);
    cbs[1] = cb_of(IOCB_CMD_PWRITE, fd, a2, 4, 104, 2);
    cbs[2] = cb_of(IOCB_CMD_PREAD, fd, got, 8, 100, 3);
    cbs[3] = cb_of(IOCB_CMD_FSYNC, fd, NULL, 0, 0, 4);
    for (int i = 0; i < 4; i++) cbp[i] = &cbs[i];
    CALL("io_submit four", io_submit(ctx, 4, cbp));
    struct io_event evs[8];
    struct timespec t = ms_ts(2000);
    long n = io_getevents(ctx, 4, 8, evs, &t);
    VALUE("io_getevents four", n);
    for (int i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "event %d: data, res", i);
        VALUE(label, (long)evs[i].data * 1000 + evs[i].res);
    }
    VALUE("read back AAAABBBB", memcmp(got, "AAAABBBB", 8) == 0);
    struct stat st;
    fstat(fd, &st);
    VALUE("file size after writes at 100", st.st_size);

    /* vectored */
    char v1[4] = "vec", v2[8] = "tored", r1[3], r2[8];
    struct iovec wv[2] = {{v1, 3}, {v2, 5}}, rv[2] = {{r1, 3}, {r2, 8}};
    cb = cb_of(IOCB_CMD_PWRITEV, fd, wv, 2, 200, 10);
    CALL("io_submit PWRITEV", submit1(ctx, &cb));
    reap1("PWRITEV", ctx, &cb);
    cb = cb_of(IOCB_CMD_PREADV, fd, rv, 2, 200, 11);
    CALL("io_submit PREADV", submit1(ctx, &cb));
    reap1("PREADV", ctx, &cb);
    VALUE("PREADV data", memcmp(r1, "vec", 3) == 0 && memcmp(r2, "tored", 5) == 0);
    cb = cb_of(IOCB_CMD_PREADV, fd, rv, 0, 0, 12);
    CALL("io_submit PREADV of no segments", submit1(ctx, &cb));
    reap1("PREADV of no segments", ctx, &cb);
    cb = cb_of(IOCB_CMD_PREADV, fd, rv, 1025, 0, 13);
    CALL("PREADV of 1025 segments", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREADV, fd, NULL, 1, 0, 13);
    CALL("PREADV iovec NULL", submit1(ctx, &cb));
    struct iovec badv[2] = {{r1, 3}, {r2, (size_t)-1}};
    cb = cb_of(IOCB_CMD_PREADV, fd, badv, 2, 0, 13);
    CALL("PREADV negative iov_len", submit1(ctx, &cb));
    struct iovec kv[1] = {{(void *)0xffff800000000000UL, 8}};
    cb = cb_of(IOCB_CMD_PREADV, fd, kv, 1, 0, 13);
    CALL("PREADV iov_base kernel address", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PWRITEV, fd, kv, 1, 0, 13);
    CALL("PWRITEV iov_base kernel address", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FDSYNC, fd, NULL, 0, 0, 14);
    CALL("io_submit FDSYNC", submit1(ctx, &cb));
    reap1("FDSYNC", ctx, &cb);

    /* io_submit's errors */
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 8, 0, 20);
    cbp[0] = &cb;
    CALL("io_submit nr -1", io_submit(ctx, -1, cbp));
    CALL("io_submit nr 0", io_submit(ctx, 0, cbp));
    CALL("io_submit nr 0, iocbpp NULL", io_submit(ctx, 0, NULL));
    CALL("io_submit bad ctx", io_submit(ctx + page, 1, cbp));
    CALL("io_submit ctx 0", io_submit(0, 1, cbp));
    CALL("io_submit iocbpp NULL", io_submit(ctx, 1, NULL));
    struct iocb *nullp[1] = {NULL};
    CALL("io_submit iocb NULL", io_submit(ctx, 1, nullp));
    struct iocb *kp[1] = {(struct iocb *)0xffff800000000000UL};
    CALL("io_submit iocb kernel address", io_submit(ctx, 1, kp));
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 8, 0, 21);
    cb.aio_reserved2 = 1;
    CALL("aio_reserved2 set", submit1(ctx, &cb));
    cb = cb_of(99, fd, in, 8, 0, 22);
    CALL("opcode 99", submit1(ctx, &cb));
    cb = cb_of(4, fd, in, 8, 0, 22);
    CALL("opcode 4 (PREADX)", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_NOOP, fd, in, 8, 0, 22);
    CALL("IOCB_CMD_NOOP", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREAD, 1000, in, 8, 0, 23);
    CALL("PREAD bad fd", submit1(ctx, &cb));
    cb = cb_of(99, -1, in, 8, 0, 23);
    CALL("opcode 99 on fd -1", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 1ULL << 63, 0, 24);
    CALL("PREAD nbytes 2^63", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 8, -1, 24);
    CALL("PREAD offset -1", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PWRITE, fd, in, 8, LLONG_MAX - 4, 24);
    CALL("PWRITE offset + nbytes past loff_t", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREAD, fd, (void *)0xffff800000000000UL, 8, 0, 25);
    CALL("PREAD buf kernel address", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PWRITE, fd, (void *)0xffff800000000000UL, 8, 0, 25);
    CALL("PWRITE buf kernel address", submit1(ctx, &cb));
    void *hole = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole, page);
    cb = cb_of(IOCB_CMD_PREAD, fd, hole, 8, 0, 26);
    CALL("PREAD into an unmapped buf", submit1(ctx, &cb));
    reap1("PREAD into an unmapped buf", ctx, &cb);
    cb = cb_of(IOCB_CMD_PWRITE, fd, hole, 8, 0, 26);
    CALL("PWRITE from an unmapped buf", submit1(ctx, &cb));
    reap1("PWRITE from an unmapped buf", ctx, &cb);
    cb = cb_of(IOCB_CMD_PREAD, fd, (void *)ro, 8, 0, 27);
    CALL("PREAD into a read-only buf", submit1(ctx, &cb));
    reap1("PREAD into a read-only buf", ctx, &cb);
    int rdonly = open("aio-file", O_RDONLY), wronly = open("aio-file", O_WRONLY);
    cb = cb_of(IOCB_CMD_PWRITE, rdonly, out, 4, 0, 28);
    CALL("PWRITE on O_RDONLY", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREAD, wronly, in, 4, 0, 28);
    CALL("PREAD on O_WRONLY", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FSYNC, rdonly, NULL, 0, 0, 28);
    CALL("FSYNC on O_RDONLY", submit1(ctx, &cb));
    reap1("FSYNC on O_RDONLY", ctx, &cb);
    cb = cb_of(IOCB_CMD_FSYNC, fd, in, 0, 0, 29);
    CALL("FSYNC with aio_buf", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FDSYNC, fd, NULL, 1, 0, 29);
    CALL("FDSYNC with aio_nbytes", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FSYNC, fd, NULL, 0, 8, 29);
    CALL("FSYNC with aio_offset", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FSYNC, fd, NULL, 0, 0, 29);
    cb.aio_rw_flags = RWF_HIPRI;
    CALL("FSYNC with aio_rw_flags", submit1(ctx, &cb));
    int dir = open(".", O_RDONLY | O_DIRECTORY);
    cb = cb_of(IOCB_CMD_PREAD, dir, in, 8, 0, 30);
    CALL("PREAD of a directory", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FSYNC, dir, NULL, 0, 0, 30);
    CALL("FSYNC of a directory", submit1(ctx, &cb));
    reap1("FSYNC of a directory", ctx, &cb);
    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    cb = cb_of(IOCB_CMD_PREAD, tfd, in, 8, 0, 31);
    CALL("PREAD of a timerfd", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_FSYNC, tfd, NULL, 0, 0, 31);
    CALL("FSYNC of a timerfd", submit1(ctx, &cb));
    int null = open("/dev/null", O_RDWR);
    cb = cb_of(IOCB_CMD_PWRITE, null, out, 5, 0, 32);
    CALL("PWRITE /dev/null", submit1(ctx, &cb));
    reap1("PWRITE /dev/null", ctx, &cb);
    cb = cb_of(IOCB_CMD_PREAD, null, in, 5, 0, 32);
    CALL("PREAD /dev/null", submit1(ctx, &cb));
    reap1("PREAD /dev/null", ctx, &cb);
    cb = cb_of(IOCB_CMD_FSYNC, null, NULL, 0, 0, 32);
    CALL("FSYNC /dev/null", submit1(ctx, &cb));

    /* aio_rw_flags, aio_reqprio, aio_flags */
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 40);
    cb.aio_rw_flags = 0x100;
    CALL("rw_flags unknown bit", submit1(ctx, &cb));
    cb.aio_rw_flags = RWF_HIPRI;
    CALL("rw_flags RWF_HIPRI", submit1(ctx, &cb));
    reap1("RWF_HIPRI", ctx, &cb);
    cb.aio_rw_flags = RWF_NOWAIT;
    CALL("rw_flags RWF_NOWAIT on this file", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PWRITE, fd, "tail", 4, 0, 41);
    cb.aio_rw_flags = RWF_APPEND;
    fstat(fd, &st);
    long before = st.st_size;
    CALL("PWRITE with RWF_APPEND", submit1(ctx, &cb));
    reap1("RWF_APPEND", ctx, &cb);
    fstat(fd, &st);
    VALUE("RWF_APPEND grew the file by 4", st.st_size - before);
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 42);
    cb.aio_flags = IOCB_FLAG_IOPRIO;
    cb.aio_reqprio = (2 << 13) | 4;
    CALL("IOPRIO best-effort 4", submit1(ctx, &cb));
    reap1("IOPRIO best-effort 4", ctx, &cb);
    cb.aio_reqprio = (2 << 13) | 8;
    CALL("IOPRIO best-effort, level 0, hint 1", submit1(ctx, &cb));
    reap1("IOPRIO best-effort, hint 1", ctx, &cb);
    cb.aio_reqprio = (0 << 13) | 1;
    CALL("IOPRIO class none, level 1", submit1(ctx, &cb));
    cb.aio_reqprio = (0 << 13) | 8;
    CALL("IOPRIO class none, level 0, hint 1", submit1(ctx, &cb));
    reap1("IOPRIO class none, hint 1", ctx, &cb);
    cb.aio_reqprio = (1 << 13) | 7;
    CALL("IOPRIO real-time 7 (root)", submit1(ctx, &cb));
    reap1("IOPRIO real-time 7", ctx, &cb);
    cb.aio_reqprio = (7 << 13);
    CALL("IOPRIO class 7", submit1(ctx, &cb));
    cb.aio_reqprio = (3 << 13) | 5;
    CALL("IOPRIO idle", submit1(ctx, &cb));
    reap1("IOPRIO idle", ctx, &cb);
    cb.aio_reqprio = -1;
    CALL("IOPRIO -1", submit1(ctx, &cb));
    cb.aio_flags = 0;
    cb.aio_reqprio = 12345;
    CALL("aio_reqprio without IOCB_FLAG_IOPRIO", submit1(ctx, &cb));
    reap1("aio_reqprio without the flag", ctx, &cb);
    cb.aio_reqprio = 0;
    cb.aio_flags = IOCB_FLAG_RESFD;
    cb.aio_resfd = (unsigned)-1;
    CALL("IOCB_FLAG_RESFD fd -1", submit1(ctx, &cb));
    cb.aio_resfd = fd;
    CALL("IOCB_FLAG_RESFD not an eventfd", submit1(ctx, &cb));
    cb.aio_flags = 0x80;
    CALL("aio_flags unknown bit", submit1(ctx, &cb));
    reap1("aio_flags unknown bit", ctx, &cb);

    /* the iocb itself read-only: the kernel writes aio_key */
    struct iocb *rocb = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *rocb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 50);
    mprotect(rocb, page, PROT_READ);
    CALL("iocb read-only", submit1(ctx, rocb));

    /* partial submissions: the count so far */
    struct iocb p3[3];
    p3[0] = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 60);
    p3[1] = cb_of(IOCB_CMD_PREAD, 1000, in, 4, 0, 61);
    p3[2] = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 62);
    for (int i = 0; i < 3; i++) cbp[i] = &p3[i];
    CALL("io_submit good, bad fd, good", io_submit(ctx, 3, cbp));
    VALUE("io_submit good, bad fd, good: count", io_submit(ctx, 3, cbp));
    cbp[1] = NULL;
    VALUE("io_submit good, NULL: count", io_submit(ctx, 2, cbp));
    t = ms_ts(0);
    VALUE("three events waiting", io_getevents(ctx, 0, 8, evs, &t));

    /* io_getevents */
    t = ms_ts(0);
    CALL("io_getevents min -1", io_getevents(ctx, -1, 1, evs, &t));
    CALL("io_getevents min 1 > nr 0", io_getevents(ctx, 1, 0, evs, &t));
    CALL("io_getevents min 0, nr -1", io_getevents(ctx, 0, -1, evs, &t));
    CALL("io_getevents min 0, nr 0", io_getevents(ctx, 0, 0, evs, &t));
    CALL("io_getevents bad ctx", io_getevents(ctx + page, 0, 1, evs, &t));
    CALL("io_getevents ctx 0", io_getevents(0, 0, 1, evs, &t));
    CALL("io_getevents timeout NULL pointer ok, none", io_getevents(ctx, 0, 1, evs, NULL));
    CALL("io_getevents timeout kernel address", io_getevents(ctx, 0, 1, evs, (struct timespec *)0xffff800000000000UL));
    CALL("io_getevents timeout 0, none", io_getevents(ctx, 1, 1, evs, &t));
    t = ms_ts(20);
    CALL("io_getevents 20 ms, none", io_getevents(ctx, 1, 1, evs, &t));
    /* A negative timeout is no timeout at all (ktime_add_safe saturates): with min 0 it
     * returns at once, with min 1 it would wait for good. */
    t.tv_sec = 0;
    t.tv_nsec = -1;
    CALL("io_getevents tv_nsec -1, min 0", io_getevents(ctx, 0, 1, evs, &t));
    t.tv_sec = -1;
    t.tv_nsec = 0;
    CALL("io_getevents tv_sec -1, min 0", io_getevents(ctx, 0, 1, evs, &t));
    t.tv_sec = 0;
    t.tv_nsec = 2000000000L;
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 70);
    submit1(ctx, &cb);
    CALL("io_getevents tv_nsec 2e9 with one event", io_getevents(ctx, 1, 1, evs, &t));
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 71);
    submit1(ctx, &cb);
    t = ms_ts(0);
    CALL("io_getevents events NULL with one", io_getevents(ctx, 1, 1, NULL, &t));
    CALL("io_getevents events kernel address", io_getevents(ctx, 1, 1, (struct io_event *)0xffff800000000000UL, &t));
    CALL("io_getevents events read-only", io_getevents(ctx, 1, 1, (struct io_event *)ro, &t));
    VALUE("the event is still there", io_getevents(ctx, 1, 1, evs, &t));
    VALUE("its data", evs[0].data);
    for (int i = 0; i < 3; i++) {
        p3[i] = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 80 + i);
        cbp[i] = &p3[i];
    }
    io_submit(ctx, 3, cbp);
    VALUE("io_getevents min 1, nr 2 of 3", io_getevents(ctx, 1, 2, evs, &t));
    VALUE("then the third", io_getevents(ctx, 1, 2, evs, &t));
    VALUE("third's data", evs[0].data);
    /* user space reaps by moving head itself */
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 90);
    submit1(ctx, &cb);
    r->head = r->tail;
    VALUE("after head = tail: none", io_getevents(ctx, 0, 1, evs, &t));

    /* signals: io_getevents is EINTR even with SA_RESTART; io_pgetevents too */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, NULL);
    CALL("io_getevents interrupted (SA_RESTART)", io_getevents(ctx, 1, 1, evs, NULL));
    setitimer(ITIMER_REAL, &it, NULL);
    CALL("io_pgetevents interrupted (SA_RESTART)", io_pgetevents(ctx, 1, 1, evs, NULL, NULL));
    VALUE("handler runs", sigs);

    /* io_pgetevents */
    sigset_t block_alrm, usr1, none;
    sigemptyset(&block_alrm);
    sigaddset(&block_alrm, SIGALRM);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    struct aio_sigset as = {&block_alrm, 8};
    t = ms_ts(0);
    CALL("io_pgetevents usig NULL", io_pgetevents(ctx, 0, 1, evs, &t, NULL));
    CALL("io_pgetevents usig kernel address", io_pgetevents(ctx, 0, 1, evs, &t, (struct aio_sigset *)0xffff800000000000UL));
    as.sigsetsize = 4;
    CALL("io_pgetevents sigsetsize 4", io_pgetevents(ctx, 0, 1, evs, &t, &as));
    as.sigmask = (sigset_t *)0xffff800000000000UL;
    as.sigsetsize = 8;
    CALL("io_pgetevents sigmask kernel address", io_pgetevents(ctx, 0, 1, evs, &t, &as));
    as.sigmask = NULL;
    as.sigsetsize = 4;
    CALL("io_pgetevents sigmask NULL, size 4", io_pgetevents(ctx, 0, 1, evs, &t, &as));
    CALL("io_pgetevents timeout kernel address", io_pgetevents(ctx, 0, 1, evs, (struct timespec *)0xffff800000000000UL, NULL));
    CALL("io_pgetevents bad ctx", io_pgetevents(ctx + page, 0, 1, evs, &t, NULL));
    sigs = 0;
    as.sigmask = &block_alrm;
    as.sigsetsize = 8;
    setitimer(ITIMER_REAL, &it, NULL);
    t = ms_ts(200);
    CALL("io_pgetevents SIGALRM blocked: times out", io_pgetevents(ctx, 1, 1, evs, &t, &as));
    VALUE("SIGALRM handled once it returned", sigs);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    raise(SIGUSR1);
    as.sigmask = &none;
    t = ms_ts(0);
    sigs = 0;
    CALL("io_pgetevents unblocking a pending SIGUSR1", io_pgetevents(ctx, 0, 1, evs, &t, &as));
    VALUE("SIGUSR1 handled", sigs);
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    VALUE("SIGUSR1 blocked again", sigismember(&now, SIGUSR1));
    raise(SIGUSR1);
    sigs = 0;
    t = ms_ts(0);
    CALL("io_getevents, SIGUSR1 pending but blocked", io_getevents(ctx, 0, 1, evs, &t));
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    VALUE("SIGUSR1 handled once unblocked", sigs);

    /* io_cancel */
    struct io_event cev;
    CALL("io_cancel iocb NULL", io_cancel(ctx, NULL, &cev));
    cb = cb_of(IOCB_CMD_PREAD, fd, in, 4, 0, 100);
    cb.aio_key = 1;
    CALL("io_cancel aio_key 1", io_cancel(ctx, &cb, &cev));
    cb.aio_key = 0;
    CALL("io_cancel never submitted", io_cancel(ctx, &cb, &cev));
    CALL("io_cancel bad ctx", io_cancel(ctx + page, &cb, &cev));
    CALL("io_cancel result NULL", io_cancel(ctx, &cb, NULL));
    submit1(ctx, &cb);
    CALL("io_cancel after its completion", io_cancel(ctx, &cb, &cev));
    t = ms_ts(0);
    io_getevents(ctx, 0, 8, evs, &t);

    /* IOCB_CMD_POLL */
    int pfd[2];
    pipe(pfd);
    cb = cb_of(IOCB_CMD_POLL, fd, (void *)(uintptr_t)POLLIN, 0, 0, 200);
    CALL("POLL a regular file for POLLIN", submit1(ctx, &cb));
    reap1("POLL a regular file", ctx, &cb);
    cb = cb_of(IOCB_CMD_POLL, fd, (void *)(uintptr_t)(POLLIN | POLLOUT | POLLPRI), 0, 0, 201);
    CALL("POLL a regular file IN|OUT|PRI", submit1(ctx, &cb));
    reap1("POLL a regular file IN|OUT|PRI", ctx, &cb);
    cb = cb_of(IOCB_CMD_POLL, fd, (void *)(uintptr_t)POLLPRI, 0, 0, 202);
    CALL("POLL a regular file for POLLPRI", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)0x10000, 0, 0, 203);
    CALL("POLL events 0x10000", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 1, 0, 203);
    CALL("POLL with aio_nbytes", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 1, 203);
    CALL("POLL with aio_offset", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 0, 203);
    cb.aio_rw_flags = 1;
    CALL("POLL with aio_rw_flags", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 0, 204);
    CALL("POLL an empty pipe", submit1(ctx, &cb));
    t = ms_ts(0);
    CALL("not ready yet", io_getevents(ctx, 1, 1, evs, &t));
    VALUE("ring empty while it waits", r->tail - r->head);
    write(pfd[1], "x", 1);
    reap1("POLL the pipe after a write", ctx, &cb);
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 0, 205);
    CALL("POLL a pipe with data", submit1(ctx, &cb));
    reap1("POLL a pipe with data", ctx, &cb);
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)(POLLIN | POLLRDNORM), 0, 0, 206);
    CALL("POLL a pipe with data IN|RDNORM", submit1(ctx, &cb));
    reap1("POLL a pipe with data IN|RDNORM", ctx, &cb);
    read(pfd[0], in, 1);
    cb = cb_of(IOCB_CMD_POLL, pfd[1], (void *)(uintptr_t)POLLOUT, 0, 0, 207);
    CALL("POLL a pipe's write end", submit1(ctx, &cb));
    reap1("POLL a pipe's write end", ctx, &cb);
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 0, 208);
    CALL("POLL the pipe, to cancel", submit1(ctx, &cb));
    CALL("io_cancel the POLL", io_cancel(ctx, &cb, &cev));
    reap1("the cancelled POLL", ctx, &cb);
    CALL("io_cancel it again", io_cancel(ctx, &cb, &cev));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 0, 209);
    CALL("POLL the pipe, then close the writer", submit1(ctx, &cb));
    close(pfd[1]);
    reap1("POLL the pipe whose writer closed", ctx, &cb);
    close(pfd[0]);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    cb = cb_of(IOCB_CMD_POLL, sv[0], (void *)(uintptr_t)POLLIN, 0, 0, 210);
    CALL("POLL a socket", submit1(ctx, &cb));
    write(sv[1], "y", 1);
    reap1("POLL a socket after a write", ctx, &cb);
    read(sv[0], in, 1);
    cb = cb_of(IOCB_CMD_PREAD, sv[0], in, 8, 0, 212);
    cb.aio_rw_flags = RWF_NOWAIT;
    CALL("PREAD an empty socket RWF_NOWAIT", submit1(ctx, &cb));
    close(sv[0]);
    close(sv[1]);
    struct itimerspec its = {{0, 0}, {0, 20000000}};
    timerfd_settime(tfd, 0, &its, NULL);
    cb = cb_of(IOCB_CMD_POLL, tfd, (void *)(uintptr_t)POLLIN, 0, 0, 211);
    CALL("POLL a timerfd", submit1(ctx, &cb));
    reap1("POLL a timerfd after it fired", ctx, &cb);

    /* reads and writes of pipes: the offset does not matter, a negative one does */
    pipe(pfd);
    cb = cb_of(IOCB_CMD_PWRITE, pfd[1], "pipe!", 5, 12345, 220);
    CALL("PWRITE a pipe at offset 12345", submit1(ctx, &cb));
    reap1("PWRITE a pipe", ctx, &cb);
    memset(in, 0, sizeof in);
    cb = cb_of(IOCB_CMD_PREAD, pfd[0], in, 64, 999, 221);
    CALL("PREAD a pipe at offset 999", submit1(ctx, &cb));
    reap1("PREAD a pipe", ctx, &cb);
    VALUE("PREAD a pipe: data", strcmp(in, "pipe!") == 0);
    cb = cb_of(IOCB_CMD_PREAD, pfd[0], in, 64, -5, 222);
    CALL("PREAD a pipe at offset -5", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_PREAD, pfd[0], in, 64, 0, 223);
    cb.aio_rw_flags = RWF_NOWAIT;
    CALL("PREAD an empty pipe RWF_NOWAIT", submit1(ctx, &cb));
    reap1("PREAD an empty pipe RWF_NOWAIT", ctx, &cb);
    cb = cb_of(IOCB_CMD_FSYNC, pfd[0], NULL, 0, 0, 224);
    CALL("FSYNC a pipe", submit1(ctx, &cb));
    cb = cb_of(IOCB_CMD_POLL, pfd[0], (void *)(uintptr_t)POLLIN, 0, 0, 225);
    CALL("POLL the pipe, then io_destroy", submit1(ctx, &cb));
    int keep[2] = {pfd[0], pfd[1]};
    signal(SIGPIPE, SIG_IGN);
    pipe(pfd);
    close(pfd[0]);
    cb = cb_of(IOCB_CMD_PWRITE, pfd[1], "z", 1, 0, 226);
    CALL("PWRITE a pipe without readers", submit1(ctx, &cb));
    reap1("PWRITE a pipe without readers", ctx, &cb);
    close(pfd[1]);

    /* io_destroy cancels the waiting POLL and wakes a waiter */
    CALL("io_destroy with a POLL waiting", io_destroy(ctx));
    close(keep[0]);
    close(keep[1]);
    VALUE("aio-nr after it", sysctl_value("aio-nr"));
    shared_ctx = 0;
    io_setup(8, &shared_ctx);
    pthread_t th;
    pthread_create(&th, NULL, waiter, NULL);
    msleep(100);
    CALL("io_destroy under a waiting thread", io_destroy(shared_ctx));
    pthread_join(th, NULL);
    VALUE("the waiter's result", waiter_ret);
    VALUE("the waiter's errno is EINVAL", waiter_errno == EINVAL);

    /* more than the ring holds: a short count, then EAGAIN */
    ctx = 0;
    io_setup(1, &ctx);
    r = (struct ring *)ctx;
    struct iocb *many = calloc(200, sizeof *many);
    struct iocb **manyp = calloc(200, sizeof *manyp);
    for (int i = 0; i < 200; i++) {
        many[i] = cb_of(IOCB_CMD_PREAD, fd, in, 1, 0, i);
        manyp[i] = &many[i];
    }
    n = io_submit(ctx, 200, manyp);
    VALUE("io_submit 200 into a ring of 127: some", n > 0 && n < (long)r->nr);
    CALL("then the ring is full", io_submit(ctx, 1, manyp));
    struct io_event *mev = calloc(200, sizeof *mev);
    t = ms_ts(0);
    VALUE("all of them reaped", io_getevents(ctx, 0, 200, mev, &t) == n);
    CALL("room again", io_submit(ctx, 1, manyp));

    /* a fork's child has no contexts; an exec drops them */
    pid_t child = fork();
    if (child == 0) {
        errno = 0;
        long d = io_destroy(ctx);
        int e1 = errno;
        errno = 0;
        long s = io_submit(ctx, 1, manyp);
        int e2 = errno;
        _exit((d == -1 && e1 == EINVAL ? 1 : 0) + (s == -1 && e2 == EINVAL ? 2 : 0));
    }
    int status;
    waitpid(child, &status, 0);
    VALUE("child: io_destroy and io_submit EINVAL (3)", WEXITSTATUS(status));
    CALL("parent's ctx still works", io_submit(ctx, 1, manyp));
    VALUE("aio-nr before the exec", sysctl_value("aio-nr"));
    child = fork();
    if (child == 0) {
        aio_context_t mine = 0;
        io_setup(500, &mine);
        execl(argv[0], argv[0], "after-exec", (char *)NULL);
        _exit(99);
    }
    waitpid(child, &status, 0);
    CALL("io_destroy", io_destroy(ctx));
    VALUE("aio-nr at the end", sysctl_value("aio-nr"));
    unlink("aio-file");
    return 0;
}
