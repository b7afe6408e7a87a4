/* The Linux peer's pipetest (../shared/peer/pipetest.c), the same source on both kernels. */
/* pipe ping-pong between two processes: round trips per second (like the
   "pipe-test" quoted in the autogroup thread and perf bench sched pipe).
     pipetest [N] [CPU_A CPU_B]
   With CPU_A/CPU_B the parent is pinned to CPU_A and the child to CPU_B (same number:
   both on one CPU); without them both are unpinned. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void pin(int cpu){cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);if(sched_setaffinity(0,sizeof s,&s)){perror("pipetest: sched_setaffinity");exit(2);}}
int main(int argc,char**argv){
  long n = argc>1?atol(argv[1]):100000; int a[2],b[2]; char c=0;
  int ca = argc>3?atoi(argv[2]):-1, cb = argc>3?atoi(argv[3]):-1;
  if(pipe(a)||pipe(b)) return 1;
  pid_t p=fork();
  if(p==0){if(cb>=0)pin(cb);for(long i=0;i<n;i++){if(read(a[0],&c,1)!=1)_exit(1);if(write(b[1],&c,1)!=1)_exit(1);}_exit(0);}
  if(ca>=0)pin(ca);
  double t0=now();
  for(long i=0;i<n;i++){if(write(a[1],&c,1)!=1)return 1;if(read(b[0],&c,1)!=1)return 1;}
  double dt=now()-t0; waitpid(p,0,0);
  if(ca>=0) printf("pipetest: cpus %d and %d\n",ca,cb);
  printf("pipetest: %ld round trips in %.3f s: %.0f round trips/s, %.2f us per switch\n",n,dt,n/dt,dt/n/2*1e6);
  return 0;
}
