/* Faults on purpose, as its argument says: the kernel kills it with the signal Linux would
 * send and stays up. */
#include <stdio.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Winfinite-recursion"

/* Deep recursion through the 8 MiB stack's demand-zero pages, then past its end. */
static int recurse(int depth) {
    volatile char buf[4096];
    buf[0] = (char)depth;
    return recurse(depth + 1) + buf[0];
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "segv";
    volatile long addr = 16;
    volatile int zero = 0, seven = 7;
    printf("crash: %s\n", how);
    fflush(stdout);
    if (strcmp(how, "segv") == 0)
        *(volatile int *)addr = 1;
    else if (strcmp(how, "kernel") == 0)
        *(volatile long *)0xffff800000100000UL = 1;
    else if (strcmp(how, "ill") == 0)
        __builtin_trap();
    else if (strcmp(how, "fpe") == 0)
        printf("%d\n", seven / zero);
    else if (strcmp(how, "stack") == 0)
        return recurse(0);
    return 0;
}
