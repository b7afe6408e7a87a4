/* Differential conformance for the scheduling calls: each line is a call, its result and errno
 * name, for valid and invalid arguments; tests/fixtures/conform-sched.linux-6.1.txt is Linux
 * 6.1's output (../shared/peer/run.sh --file target/user/conform-sched /conform-sched). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define CONFORM_WIDTH "44"
#include "conform.h"

/* include/uapi/linux/sched/types.h (glibc 2.36 has no sched_attr). */
struct sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
    uint32_t sched_util_min, sched_util_max;
};

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sched_param sp = {0};
    VALUE("getscheduler(0)", sched_getscheduler(0));
    CALL("getscheduler(-1)", sched_getscheduler(-1));
    CALL("getscheduler(no such pid)", sched_getscheduler(99999));
    sp.sched_priority = 50;
    CALL("setscheduler FIFO 50", sched_setscheduler(0, SCHED_FIFO, &sp));
    VALUE("getscheduler after", sched_getscheduler(0));
    CALL("getparam", sched_getparam(0, &sp));
    VALUE("priority", sp.sched_priority);
    CALL("getparam NULL", syscall(SYS_sched_getparam, 0, NULL));
    sp.sched_priority = 100;
    CALL("setscheduler FIFO 100", sched_setscheduler(0, SCHED_FIFO, &sp));
    sp.sched_priority = 0;
    CALL("setscheduler FIFO 0", sched_setscheduler(0, SCHED_FIFO, &sp));
    sp.sched_priority = 5;
    CALL("setscheduler OTHER 5", sched_setscheduler(0, SCHED_OTHER, &sp));
    CALL("setscheduler policy 99", sched_setscheduler(0, 99, &sp));
    CALL("setscheduler NULL param", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, NULL));
    CALL("setscheduler bad pointer", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, (void *)8));
    sp.sched_priority = 10;
    CALL("setparam 10 (RR? no: FIFO)", sched_setparam(0, &sp));
    VALUE("priority after setparam", (sched_getparam(0, &sp), sp.sched_priority));
    sp.sched_priority = 0;
    CALL("setscheduler RR|RESET_ON_FORK 0", sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &sp));
    sp.sched_priority = 20;
    CALL("setscheduler RR|RESET_ON_FORK 20", sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &sp));
    VALUE("getscheduler with reset flag", sched_getscheduler(0));
    struct timespec ts;
    CALL("rr_get_interval", sched_rr_get_interval(0, &ts));
    CALL("rr_get_interval positive", ts.tv_sec > 0 || ts.tv_nsec > 0 ? 1 : -1);
    CALL("rr_get_interval NULL", syscall(SYS_sched_rr_get_interval, 0, NULL));
    sp.sched_priority = 0;
    CALL("back to OTHER", sched_setscheduler(0, SCHED_OTHER, &sp));
    VALUE("prio max FIFO", sched_get_priority_max(SCHED_FIFO));
    VALUE("prio min FIFO", sched_get_priority_min(SCHED_FIFO));
    VALUE("prio max RR", sched_get_priority_max(SCHED_RR));
    VALUE("prio max OTHER", sched_get_priority_max(SCHED_OTHER));
    VALUE("prio max DEADLINE", sched_get_priority_max(SCHED_DEADLINE));
    CALL("prio max bad policy", sched_get_priority_max(42));
    cpu_set_t set;
    CPU_ZERO(&set);
    CALL("getaffinity", sched_getaffinity(0, sizeof set, &set));
    VALUE("getaffinity raw bytes", syscall(SYS_sched_getaffinity, 0, sizeof set, &set));
    VALUE("cpu 0 in mask", CPU_ISSET(0, &set));
    CALL("getaffinity size 4", syscall(SYS_sched_getaffinity, 0, 4, &set));
    CALL("getaffinity size 12", syscall(SYS_sched_getaffinity, 0, 12, &set));
    CALL("getaffinity NULL", syscall(SYS_sched_getaffinity, 0, sizeof set, NULL));
    CPU_ZERO(&set);
    CALL("setaffinity empty", sched_setaffinity(0, sizeof set, &set));
    CPU_SET(0, &set);
    CALL("setaffinity cpu 0", sched_setaffinity(0, sizeof set, &set));
    VALUE("running on cpu 0", sched_getcpu());
    CALL("setaffinity size 0", syscall(SYS_sched_setaffinity, 0, 0, &set));
    CALL("setaffinity no such pid", sched_setaffinity(99999, sizeof set, &set));
    struct sched_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    CALL("getattr", syscall(SYS_sched_getattr, 0, &a, sizeof a, 0));
    VALUE("getattr size", a.size);
    VALUE("getattr policy", a.sched_policy);
    CALL("getattr size 10", syscall(SYS_sched_getattr, 0, &a, 10, 0));
    CALL("getattr flags 1", syscall(SYS_sched_getattr, 0, &a, sizeof a, 1));
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.sched_policy = SCHED_DEADLINE;
    a.sched_runtime = 10 * 1000 * 1000;
    a.sched_deadline = 30 * 1000 * 1000;
    a.sched_period = 30 * 1000 * 1000;
    CALL("setattr DEADLINE 10/30/30", syscall(SYS_sched_setattr, 0, &a, 0));
    VALUE("getscheduler DEADLINE", sched_getscheduler(0));
    CALL("yield in deadline", sched_yield());
    a.sched_runtime = 40 * 1000 * 1000;
    CALL("setattr runtime > deadline", syscall(SYS_sched_setattr, 0, &a, 0));
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.sched_policy = SCHED_OTHER;
    a.sched_nice = 3;
    CALL("setattr OTHER nice 3", syscall(SYS_sched_setattr, 0, &a, 0));
    VALUE("getpriority after nice 3", getpriority(PRIO_PROCESS, 0));
    a.size = 8;
    CALL("setattr size 8", syscall(SYS_sched_setattr, 0, &a, 0));
    VALUE("size written back", a.size);
    CALL("setattr flags 1", syscall(SYS_sched_setattr, 0, &a, 1));
    CALL("setattr NULL", syscall(SYS_sched_setattr, 0, NULL, 0));
    CALL("setpriority 5", setpriority(PRIO_PROCESS, 0, 5));
    VALUE("getpriority", getpriority(PRIO_PROCESS, 0));
    CALL("setpriority bad which", setpriority(7, 0, 5));
    CALL("setpriority no such pid", setpriority(PRIO_PROCESS, 99999, 5));
    CALL("setpriority 40 clamps", setpriority(PRIO_PROCESS, 0, 40));
    VALUE("getpriority clamped", getpriority(PRIO_PROCESS, 0));
    CALL("sched_yield", sched_yield());
    return 0;
}
