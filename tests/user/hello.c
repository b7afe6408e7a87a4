/* The first user program: glibc's static start-up (TLS, brk/mmap, auxv), stdio, and exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

int main(int argc, char **argv) {
    struct utsname u;
    printf("hello from user space: pid %d, argc %d", getpid(), argc);
    for (int i = 1; i < argc; i++)
        printf(" [%s]", argv[i]);
    printf("\n");
    if (uname(&u) == 0)
        printf("uname: %s %s %s\n", u.sysname, u.release, u.machine);
    char *p = malloc(1 << 20); /* past the brk heap's first page, and mmap for big blocks */
    memset(p, 7, 1 << 20);
    double x = 1.5;
    for (int i = 0; i < 10; i++)
        x = x * 1.25 + p[i];
    printf("malloc ok, fpu %.4f\n", x);
    free(p);
    return argc > 1 && strcmp(argv[1], "fail") == 0 ? 3 : 0;
}
