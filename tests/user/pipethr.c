/* pipetest's ping-pong between two threads of one process instead of two processes: the same
   system calls, no address-space switch (no CR3 write), so the difference between the two
   programs is what switching address spaces costs (docs/results/2026-12-06-pipe-tcg-costs.md).
     pipethr N CPU_A CPU_B
   The main thread is pinned to CPU_A, the other to CPU_B (same number: both on one CPU). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static int ping[2], pong[2];
static long rounds;
static int cpu_b;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void pin(int cpu) {
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
  if (sched_setaffinity(0, sizeof s, &s)) { perror("pipethr: sched_setaffinity"); exit(2); }
}
static void *partner(void *unused) {
  char c;
  pin(cpu_b);
  for (long i = 0; i < rounds; i++) {
    if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) { perror("pipethr: partner"); exit(1); }
  }
  return 0;
}
int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: pipethr N CPU_A CPU_B\n"); return 2; }
  rounds = atol(argv[1]); int cpu_a = atoi(argv[2]); cpu_b = atoi(argv[3]); char c = 0;
  pthread_t t;
  if (pipe(ping) || pipe(pong)) { perror("pipethr: pipe"); return 1; }
  if (pthread_create(&t, 0, partner, 0)) { fprintf(stderr, "pipethr: pthread_create failed\n"); return 1; }
  pin(cpu_a);
  double t0 = now();
  for (long i = 0; i < rounds; i++) {
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) { perror("pipethr"); return 1; }
  }
  double dt = now() - t0;
  pthread_join(t, 0);
  printf("pipethr: cpus %d and %d\n", cpu_a, cpu_b);
  printf("pipethr: %ld round trips in %.3f s: %.0f round trips/s, %.2f us per switch\n", rounds, dt, rounds / dt, dt / rounds / 2 * 1e6);
  return 0;
}
