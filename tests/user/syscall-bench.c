/* User-space micro-benchmarks for `make bench-user`, the same binary on Cadence and Linux:
 *   syscall-bench [N]   getppid round trip (ns per call), clock_gettime(CLOCK_MONOTONIC) through
 *                       glibc (ns per call: Linux answers it in its vDSO without entering the
 *                       kernel, Cadence has no vDSO and takes a system call) and fork+exit+wait
 *                       (us per child).
 * Prints one `name: value unit` line per figure. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    double t0 = now();
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
    double t1 = now();
    printf("syscall-bench: getppid %.1f ns per call (%ld calls)\n", (t1 - t0) * 1e9 / n, n);
    struct timespec ts;
    t0 = now();
    for (long i = 0; i < n; i++)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    t1 = now();
    printf("syscall-bench: clock_gettime %.1f ns per call (%ld calls)\n", (t1 - t0) * 1e9 / n, n);
    long forks = n / 100 > 0 ? n / 100 : 1;
    t0 = now();
    for (long i = 0; i < forks; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        if (p < 0 || waitpid(p, NULL, 0) != p) {
            perror("syscall-bench: fork");
            return 1;
        }
    }
    t1 = now();
    printf("syscall-bench: fork+exit+wait %.1f us per child (%ld children)\n", (t1 - t0) * 1e6 / forks, forks);
    return 0;
}
