/* First touch (issue 60 item 5): `numa-touch CPU MIB` pins itself to CPU, maps MIB MiB of
 * anonymous memory, touches every page, and says which NUMA node's free memory paid for it,
 * read from /sys/devices/system/node/nodeN/meminfo (MemFree) before and after:
 *   numa-touch: cpu 5 on node 1, 64 MiB touched
 *   node 0: none
 *   node 1: holds them
 * A node "holds them" when its free memory fell by at least 90% of what was touched, "none"
 * when by less than 10%, else "part" with the percentage (Linux's local policy puts every page
 * on the toucher's node while that node has free memory). The same binary runs on Linux, whose
 * answer is the reference. Errors go to stderr with the call that failed; exit status 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_NODES 64

/* MemFree of node n in kB, or -1 if the node does not exist. */
static long mem_free_kb(int n) {
    char path[96], line[256];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", n);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "MemFree:");
        if (p) {
            kb = strtol(p + strlen("MemFree:"), NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Does node n's cpulist (e.g. "0-3,8") hold cpu? */
static int node_has_cpu(int n, int cpu) {
    char path[96], buf[4096];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int found = 0;
    if (fgets(buf, sizeof buf, f)) {
        for (char *tok = strtok(buf, ",\n"); tok; tok = strtok(NULL, ",\n")) {
            int a, b;
            int k = sscanf(tok, "%d-%d", &a, &b);
            if (k == 1)
                b = a;
            if (k >= 1 && cpu >= a && cpu <= b)
                found = 1;
        }
    }
    fclose(f);
    return found;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: numa-touch CPU MIB\n");
        return 2;
    }
    int cpu = atoi(argv[1]);
    long mib = atol(argv[2]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "numa-touch: sched_setaffinity(cpu %d): %s\n", cpu, strerror(errno));
        return 1;
    }
    long before[MAX_NODES];
    int nodes = 0, home = -1;
    while (nodes < MAX_NODES && (before[nodes] = mem_free_kb(nodes)) >= 0) {
        if (node_has_cpu(nodes, cpu))
            home = nodes;
        nodes++;
    }
    if (nodes == 0) {
        fprintf(stderr, "numa-touch: no /sys/devices/system/node/node0/meminfo\n");
        return 1;
    }
    size_t len = (size_t)mib << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "numa-touch: mmap(%ld MiB): %s\n", mib, strerror(errno));
        return 1;
    }
    long page = sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < len; off += page)
        p[off] = 1;
    printf("numa-touch: cpu %d on node %d, %ld MiB touched\n", cpu, home, mib);
    for (int n = 0; n < nodes; n++) {
        long used = before[n] - mem_free_kb(n);
        long pct = used * 100 / (mib * 1024);
        if (pct >= 90)
            printf("node %d: holds them\n", n);
        else if (pct < 10)
            printf("node %d: none\n", n);
        else
            printf("node %d: part (%ld%%)\n", n, pct);
    }
    munmap(p, len);
    return 0;
}
