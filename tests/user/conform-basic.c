/* Differential conformance, first family set (memory, identity, time, the console fds): each
 * line is a call, its return value and errno name, for valid and invalid arguments. The same
 * static binary runs on Cadence and on Linux; tests/fixtures/conform-basic.linux.txt is Linux's
 * output (regenerate: target/user/conform-basic > tests/fixtures/conform-basic.linux.txt, on the
 * peer or any Linux). Addresses and times are not printed, only whether they look right. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#define CONFORM_WIDTH "40"
#include "conform.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char buf[64];
    CALL("write(1, ok, 0)", write(1, buf, 0));
    CALL("write(-1)", write(-1, buf, 1));
    CALL("write(99)", write(99, buf, 1));
    CALL("write(1, NULL, 1)", syscall(SYS_write, 1, NULL, 1));
    CALL("write(1, kernel addr, 1)", write(1, (void *)0xffff800000000000UL, 1));
    CALL("read(-1)", read(-1, buf, 1));
    CALL("read(0, buf, 0)", read(0, buf, 0));
    CALL("syscall(999)", syscall(999));
    CALL("uname(NULL)", uname(NULL));
    CALL("uname((void*)1)", uname((void *)1));
    void *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CALL("mmap anon rw", p == MAP_FAILED ? -1 : 1);
    CALL("mmap page reads zero", ((char *)p)[4097] == 0 ? 1 : -1);
    CALL("mmap len 0", mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 1);
    CALL("mmap no type", mmap(NULL, 4096, PROT_READ, MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 1);
    CALL("mmap bad prot", mmap(NULL, 4096, 0x80, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 1);
    CALL("mmap fixed unaligned", mmap((void *)0x10001000UL + 1, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ? -1 : 1);
    CALL("mmap fixed_noreplace over p", mmap(p, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED ? -1 : 1);
    CALL("mprotect(p, 4096, READ)", mprotect(p, 4096, PROT_READ));
    CALL("mprotect unaligned", mprotect((char *)p + 1, 4096, PROT_READ));
    CALL("mprotect bad prot", mprotect(p, 4096, 0x80));
    CALL("write(1, PROT_NONE page)", (mprotect(p, 4096, PROT_NONE), write(1, p, 1)));
    CALL("munmap(p, 8192)", munmap(p, 8192));
    CALL("munmap again", munmap(p, 8192));
    CALL("munmap len 0", munmap(p, 0));
    CALL("munmap unaligned", munmap((char *)p + 1, 4096));
    /* A 32 TiB reservation with one page touched: each call below walks only the pages
     * held (a per-page loop over its length never ends). */
    size_t huge = 1UL << 45;
    char *r = mmap(NULL, huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CALL("mmap 32 TiB PROT_NONE", r == MAP_FAILED ? -1 : 1);
    CALL("mprotect one page rw", mprotect(r + (huge >> 1), 4096, PROT_READ | PROT_WRITE));
    r[huge >> 1] = 1;
    CALL("madvise 32 TiB DONTNEED", madvise(r, huge, MADV_DONTNEED));
    CALL("page reads zero after DONTNEED", r[huge >> 1] == 0 ? 1 : -1);
    CALL("mprotect 32 TiB PROT_NONE", mprotect(r, huge, PROT_NONE));
    CALL("munmap 32 TiB", munmap(r, huge));
    CALL("madvise 64 TiB hole DONTNEED", madvise((void *)0x10000000UL, 1UL << 46, MADV_DONTNEED));
    CALL("madvise past user space", madvise((void *)(1UL << 47), 4096, MADV_DONTNEED));
    CALL("brk(0) > 0", syscall(SYS_brk, 0) > 0 ? 1 : -1);
    struct timespec ts, ts2;
    CALL("clock_gettime(MONOTONIC)", clock_gettime(CLOCK_MONOTONIC, &ts));
    CALL("clock_gettime(bad clock)", clock_gettime(99, &ts));
    CALL("clock_gettime(MONOTONIC, NULL)", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, NULL));
    CALL("clock_getres(MONOTONIC)", clock_getres(CLOCK_MONOTONIC, &ts));
    CALL("clock_getres is 1 ns", ts.tv_sec == 0 && ts.tv_nsec == 1 ? 1 : -1);
    struct timespec d = {0, 2000000};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    CALL("nanosleep 2 ms", nanosleep(&d, NULL));
    clock_gettime(CLOCK_MONOTONIC, &ts2);
    CALL("slept >= 2 ms", (ts2.tv_sec - ts.tv_sec) * 1000000000L + ts2.tv_nsec - ts.tv_nsec >= 2000000 ? 1 : -1);
    struct timespec bad = {0, 1000000000};
    CALL("nanosleep nsec 1e9", nanosleep(&bad, NULL));
    CALL("nanosleep NULL", syscall(SYS_nanosleep, NULL, NULL));
    CALL("getpid > 0", getpid() > 0 ? 1 : -1);
    CALL("gettid == getpid", gettid() == getpid() ? 1 : -1);
    CALL("getuid", getuid());
    CALL("arch_prctl bad code", syscall(SYS_arch_prctl, 0x9999, 0));
    CALL("set_robust_list bad len", syscall(SYS_set_robust_list, NULL, 1));
    CALL("close(-1)", close(-1));
    CALL("close(2)", close(2));
    CALL("write(2) after close", write(2, "x", 1));
    return 0;
}
