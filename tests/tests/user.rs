//! User-space scenarios: Debian's busybox and the C programs of `tests/user` (static glibc),
//! from the root filesystem `make initramfs` builds, run as processes, through the kernel
//! shell's `exec` or the `sh=` boot option. `conform-basic`, `conform-files`, `conform-sched`,
//! `conform-signal`, `conform-signalfd`, `conform-timer`, `conform-thread`, `conform-pi`, `conform-tty`, `conform-proc`, `conform-ipc`, `conform-pidfd`, `conform-aio` and `conform-rusage` are the differential tests of the system-call families:
//! their output on Cadence must equal Linux 6.1's (`tests/fixtures/conform-*.linux-6.1.txt`, recorded on the peer with
//! `../shared/peer/run.sh --file target/user/conform-files 'cd /tmp && /conform-files'`).

use cadence_boot::KernelExit;
use cadence_tests::{boot, initramfs, qemu, Run};
use std::path::PathBuf;

fn run_user(smp: &str, commands: &str) -> Run {
    let run = boot(qemu().smp(smp).initrd(initramfs()).args(format!("run=\"{commands}\" poweroff")));
    run.expect_exit(KernelExit::Success);
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    run
}

/// Boots with `sh="<script>" poweroff` and expects the script to succeed.
fn run_sh(smp: &str, script: &str) -> Run {
    let run = boot(qemu().smp(smp).initrd(initramfs()).args(format!("sh=\"{script}\" poweroff")));
    run.expect_exit(KernelExit::Success);
    run
}

#[test]
fn static_glibc_programs_run_with_their_arguments_and_exit_status() {
    let run = run_user("4,sockets=1,cores=2,threads=2", "exec /bin/hello a 'b c'; exec /bin/hello fail; exec /bin/nope; exec /bin");
    let out = run.lines();
    let hello: Vec<&String> = out.iter().filter(|l| l.starts_with("hello from user space")).collect();
    run.check(hello.len() == 2, "two runs of hello");
    run.check(hello[0].ends_with("argc 3 [a] [b c]"), "hello's arguments");
    run.check(out.iter().filter(|l| *l == "uname: Linux 6.1.0-cadence x86_64").count() == 2, "uname from user space");
    run.check(out.iter().filter(|l| *l == "malloc ok, fpu 246.7402").count() == 2, "malloc and doubles as on Linux");
    run.check(out.iter().any(|l| l == "exec: /bin/hello: exit status 3"), "the exit status");
    run.check(out.iter().any(|l| l == "exec: /bin/nope: ENOENT"), "a missing program is ENOENT");
    run.check(out.iter().any(|l| l == "exec: /bin: EACCES"), "a directory is EACCES, as execve answers");
}

/// The lines a conformance program prints (` = ` in them; not the kernel's or the boot's).
fn conform_lines(run: &Run) -> Vec<String> {
    run.lines().into_iter().filter(|l| l.contains(" = ") && !l.starts_with('[') && !l.starts_with("cadence")).collect()
}

fn check_conformance(run: &Run, want: &str, what: &str) {
    check_lines(run, &conform_lines(run), want, what);
}

fn check_lines(run: &Run, got: &[String], want: &str, what: &str) {
    let want: Vec<&str> = want.lines().collect();
    for (i, w) in want.iter().enumerate() {
        let g = got.get(i).map(String::as_str).unwrap_or("<missing>");
        run.check(g == *w, format!("{what} line {}: Cadence `{g}`, Linux `{w}`", i + 1));
    }
    run.check(got.len() == want.len(), format!("{what}: {} lines, Linux printed {}", got.len(), want.len()));
}

#[test]
fn conform_basic_matches_linux() {
    let run = run_user("2", "exec /bin/conform-basic");
    check_conformance(&run, include_str!("../fixtures/conform-basic.linux-6.1.txt"), "conform-basic");
}

#[test]
fn conform_files_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-files");
    check_conformance(&run, include_str!("../fixtures/conform-files.linux-6.1.txt"), "conform-files");
}

/// `conform-sched`, then `conform-procfs` (/proc and /sys, which need the SMT topology too)
/// in the same boot.
#[test]
fn conform_sched_and_procfs_match_linux() {
    let run = run_sh("4,sockets=1,cores=2,threads=2", "/bin/conform-sched && cd /tmp && /bin/conform-procfs");
    check_two(
        &run,
        (include_str!("../fixtures/conform-sched.linux-6.1.txt"), "conform-sched"),
        (include_str!("../fixtures/conform-procfs.linux-6.1.txt"), "conform-procfs"),
    );
}

/// `conform-signal`, then `conform-timer` (alarm, itimers, POSIX timers) in the same boot.
#[test]
fn conform_signal_and_timer_match_linux() {
    let run = run_sh("4,sockets=1,cores=2,threads=2", "cd /tmp && /bin/conform-signal && /bin/conform-timer");
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    check_two(
        &run,
        (include_str!("../fixtures/conform-signal.linux-6.1.txt"), "conform-signal"),
        (include_str!("../fixtures/conform-timer.linux-6.1.txt"), "conform-timer"),
    );
}

/// `conform-rusage`: getrusage, times, wait4's and waitid's rusage, /proc/PID/stat's times.
#[test]
fn conform_rusage_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-rusage");
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    check_conformance(&run, include_str!("../fixtures/conform-rusage.linux-6.1.txt"), "conform-rusage");
}

/// `conform-signalfd`: signalfd's checks, reads, readiness and siginfo records.
#[test]
fn conform_signalfd_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-signalfd");
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    check_conformance(&run, include_str!("../fixtures/conform-signalfd.linux-6.1.txt"), "conform-signalfd");
}

/// Two programs' lines, one after the other in `run`'s output.
fn check_two(run: &Run, first: (&str, &str), second: (&str, &str)) {
    let got = conform_lines(run);
    let split = first.0.lines().count().min(got.len());
    check_lines(run, &got[..split], first.0, first.1);
    check_lines(run, &got[split..], second.0, second.1);
}

/// `conform-thread`, then `conform-pi` (priority-inheritance futexes) in the same boot.
#[test]
fn conform_thread_and_pi_match_linux() {
    let run = run_sh("4,sockets=1,cores=2,threads=2", "cd /tmp && /bin/conform-thread && /bin/conform-pi");
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    check_two(
        &run,
        (include_str!("../fixtures/conform-thread.linux-6.1.txt"), "conform-thread"),
        (include_str!("../fixtures/conform-pi.linux-6.1.txt"), "conform-pi"),
    );
}

/// `conform-pidfd`: pidfd_open, pidfd_send_signal, pidfd_getfd, process_mrelease, poll and
/// select on a pidfd, waitid(P_PIDFD) and clone(CLONE_PIDFD), on live, zombie and reaped
/// processes, as root and as uid 1000.
#[test]
fn conform_pidfd_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-pidfd");
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    check_conformance(&run, include_str!("../fixtures/conform-pidfd.linux-6.1.txt"), "conform-pidfd");
}

#[test]
fn conform_tty_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-tty");
    check_conformance(&run, include_str!("../fixtures/conform-tty.linux-6.1.txt"), "conform-tty");
}

#[test]
fn conform_proc_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-proc");
    check_conformance(&run, include_str!("../fixtures/conform-proc.linux-6.1.txt"), "conform-proc");
}

#[test]
fn conform_ipc_matches_linux() {
    let run = run_sh("4,sockets=1,cores=2,threads=2", "cd /tmp && /bin/conform-ipc");
    check_conformance(&run, include_str!("../fixtures/conform-ipc.linux-6.1.txt"), "conform-ipc");
}

/// `conform-aio`: native AIO (io_setup, io_submit, io_getevents, io_pgetevents, io_cancel,
/// io_destroy). Two CPUs, as the fixture's peer: a ring's size depends on the CPU count.
#[test]
fn conform_aio_matches_linux() {
    let run = run_sh("2", "cd /tmp && /bin/conform-aio");
    run.check(run.report.exceptions.is_empty(), "a kernel EXCEPTION line");
    check_conformance(&run, include_str!("../fixtures/conform-aio.linux-6.1.txt"), "conform-aio");
}

/// Does `line` match `pattern`, where `%` stands for a run of digits (the ID / CPU / latency
/// fields of rt-tests' lines)?
fn matches_with_numbers(line: &str, pattern: &str) -> bool {
    let (mut l, mut p) = (line.as_bytes(), pattern.as_bytes());
    while let Some((&c, rest)) = p.split_first() {
        if c == b'%' {
            let n = l.iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                return false;
            }
            l = &l[n..];
        } else if l.first() == Some(&c) {
            l = &l[1..];
        } else {
            return false;
        }
        p = rest;
    }
    l.is_empty()
}

/// rt-tests' `pmqtest` (POSIX message queues; not its `-T`, whose sender waits for the sync
/// message twice and so hangs on Linux too) and `svsematest` (System V semaphores, threads and `-f` forked processes) run unmodified
/// and print the summary Linux's print: per pair the thread line (`#0: ID<tid>, P<prio>,
/// CPU<n>, I<interval>; #1: ID<tid>, P<prio>, CPU<n>, [TO 0, ]Cycles <loops>`) and the latency
/// line (`#1 -> #0, Min .., Cur .., Avg .., Max ..`). svsematest's `ftok` needs its own path
/// (`/usr/bin/svsematest`), as on Linux. Afterwards no semaphore set is left (util-linux `ipcs -s`: SEM_INFO, then SEM_STAT of each index, without /proc/sysvipc).
#[test]
fn debian_pmqtest_and_svsematest_run_unmodified() {
    let script = "pmqtest -l 100 -q; pmqtest -t 2 -p 80 -l 100 -q; \
                  /usr/bin/svsematest -l 100 -q; /usr/bin/svsematest -t 2 -p 80 -l 100 -q; /usr/bin/svsematest -f -l 50 -q; \
                  ipcs -s; echo sets=$(ipcs -s | grep -c 0x)";
    let run = boot(qemu().smp("4,sockets=1,cores=2,threads=2").initrd(initramfs()).args(format!("sh=\"{script}\" poweroff")));
    run.expect_exit(KernelExit::Success);
    let out = run.lines();
    let count = |pattern: &str| out.iter().filter(|l| matches_with_numbers(l, pattern)).count();
    let pmq = "#0: ID%, P0, CPU%, I1000; #1: ID%, P0, CPU%, TO 0, Cycles ";
    run.check(count(&format!("{pmq}100")) == 1, "pmqtest -l 100: the pair's line with 100 cycles");
    run.check(count("#0: ID%, P80, CPU%, I1000; #1: ID%, P80, CPU%, TO 0, Cycles 100") == 1, "pmqtest -t 2 -p 80: the first pair");
    run.check(
        out.iter().any(|l| l.starts_with("#2: ") && l.contains(", P79, ") && l.contains(", TO 0, Cycles ")),
        "pmqtest's second pair at 79",
    );
    let sv = "#0: ID%, P0, CPU%, I1000; #1: ID%, P0, CPU%, Cycles ";
    run.check(count(&format!("{sv}100")) == 1, "svsematest -l 100: the pair's line");
    run.check(count(&format!("{sv}50")) == 1, "svsematest -f: the forked pair's line");
    run.check(count("#0: ID%, P80, CPU%, I1000; #1: ID%, P80, CPU%, Cycles 100") == 1, "svsematest -t 2 -p 80: the first pair");
    let latency = |l: &String| {
        let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
        matches_with_numbers(&l, "#1 -> #0, Min %, Cur %, Avg %, Max %") || matches_with_numbers(&l, "#3 -> #2, Min %, Cur %, Avg %, Max %")
    };
    run.check(out.iter().filter(|l| latency(l)).count() == 7, "a latency line per pair: 1 + 2 + 1 + 2 + 1");
    run.check(!out.iter().any(|l| l.contains("could not") || l.contains("Could not") || l.contains("ERROR")), "no error from either");
    run.check(out.iter().any(|l| l == "sets=0"), "no semaphore set left");
}

#[test]
fn busybox_sh_runs_a_script_with_pipes_redirections_and_children() {
    let script = "echo hi from sh; ls -1 /etc; echo a > /tmp/f; echo b >> /tmp/f; cat /tmp/f | wc -l; \
                  mkdir -p /tmp/d/e && cd /tmp/d && pwd; (exit 4); echo status $?; \
                  dd if=/dev/zero of=/tmp/z bs=1k count=64 2>/dev/null; ls -l /tmp/z | awk '{print $5}'; \
                  sleep 0.05; kill -0 $$ && echo alive; uname -sm";
    let run = boot(qemu().smp("4,sockets=1,cores=2,threads=2").initrd(initramfs()).args(format!("sh=\"{script}\" poweroff")));
    run.expect_exit(KernelExit::Success);
    let out = run.lines();
    for want in ["hi from sh", "group", "passwd", "2", "/tmp/d", "status 4", "65536", "alive", "Linux x86_64"] {
        run.check(out.iter().any(|l| l == want), format!("expected a line `{want}`"));
    }
}

/// debugfs's `sched/features` and the `kernel.sched_features` sysctl are one set of flags;
/// tracefs's `trace_marker` refuses writes while the tracer is off (EBADF, as Linux's disabled
/// ring buffer); both are listed in `/proc/mounts`, where rt-tests look for them.
#[test]
fn debugfs_sched_features_and_tracefs_trace_marker() {
    let script = "f=/sys/kernel/debug/sched/features; cat $f; echo NO_HRTICK_DL > $f && cat $f; \
                  cat /proc/sys/kernel/sched_features; echo HRTICK_DL > $f; echo BOGUS > $f || echo bogus refused; \
                  echo HRTICK TTWU_QUEUE > $f || echo two refused; grep -c -E ' (debugfs|tracefs) ' /proc/mounts; \
                  echo x > /sys/kernel/debug/tracing/trace_marker || echo marker refused";
    let run = run_sh("2", script);
    let out = run.lines();
    for want in [
        "NO_HRTICK HRTICK_DL TTWU_QUEUE NO_RT_PUSH_IPI TIMER_KICK NO_SIS_UTIL WC_PULL ",
        "NO_HRTICK NO_HRTICK_DL TTWU_QUEUE NO_RT_PUSH_IPI TIMER_KICK NO_SIS_UTIL WC_PULL ",
        "NO_HRTICK NO_HRTICK_DL TTWU_QUEUE NO_RT_PUSH_IPI TIMER_KICK NO_SIS_UTIL WC_PULL",
        "bogus refused",
        "two refused",
        "2",
        "marker refused",
    ] {
        run.check(out.iter().any(|l| l == want), format!("expected a line `{want}`"));
    }
}

#[test]
fn sh_boot_option_exits_qemu_with_the_scripts_status() {
    let ok = boot(qemu().smp("1").initrd(initramfs()).args("sh=\"true\" poweroff"));
    ok.expect_exit(KernelExit::Success);
    let failed = boot(qemu().smp("1").initrd(initramfs()).args("sh=\"exit 3\" poweroff"));
    failed.expect_exit(KernelExit::Failure);
    failed.check(failed.lines().iter().any(|l| l == "cadence: sh= ended with status 3; poweroff"), "the status reported");
}

#[test]
fn faults_kill_the_program_with_linux_signals_and_the_kernel_stays_up() {
    let run = run_user(
        "2",
        "exec /bin/crash segv; exec /bin/crash kernel; exec /bin/crash ill; exec /bin/crash fpe; exec /bin/crash stack; exec /bin/hello",
    );
    let out = run.lines();
    for (what, status) in [("Segmentation fault", 139), ("Illegal instruction", 132), ("Floating point exception", 136)] {
        let line = format!("exec: /bin/crash: {what} (status {status})");
        run.check(out.contains(&line), format!("expected `{line}`"));
    }
    run.check(
        out.iter().filter(|l| l.starts_with("exec: /bin/crash: Segmentation fault")).count() == 3,
        "NULL, kernel address and stack overflow: SIGSEGV",
    );
    run.check(out.iter().any(|l| l.starts_with("hello from user space")), "a program runs after the crashes");
}

#[test]
fn syscall_table_doc_matches_the_dispatch_table() {
    let run = run_user("1", "syscalls");
    let got: Vec<String> = run.lines().into_iter().filter(|l| l.starts_with('|')).collect();
    let doc = include_str!("../../docs/design/syscalls.md");
    let want: Vec<&str> = doc.lines().filter(|l| l.starts_with('|')).collect();
    run.check(got == want, format!("docs/design/syscalls.md's table differs from the kernel's `syscalls`:\n{}", got.join("\n")));
}

/// Issue 35's acceptance command: Debian's own util-linux (dynamic: ld.so and libc from the
/// root filesystem), rt-tests' hackbench with 160 processes, and pipetest, unmodified.
#[test]
fn debian_chrt_taskset_hackbench_and_pipetest_run_unmodified() {
    let script = "uname -a; chrt -f 50 pipetest 20000 0 2; taskset -c 1 hackbench -p -g 4 -l 50; \
                  chrt -p $$; chrt -f 30 chrt -p 0; taskset -p $$; pipetest-dyn 500 0 0";
    let run = boot(qemu().smp("4,sockets=1,cores=2,threads=2").initrd(initramfs()).args(format!("sh=\"{script}\" poweroff")));
    run.expect_exit(KernelExit::Success);
    let out = run.lines();
    let has = |prefix: &str| out.iter().any(|l| l.starts_with(prefix));
    run.check(has("Linux cadence 6.1.0-cadence #1 SMP PREEMPT_DYNAMIC Cadence x86_64"), "uname -a");
    run.check(has("pipetest: cpus 0 and 2"), "pipetest pinned itself");
    run.check(has("pipetest: 20000 round trips in "), "pipetest's figure");
    run.check(has("Running in process mode with 4 groups using 40 file descriptors each (== 160 tasks)"), "hackbench's header");
    run.check(has("Time: "), "hackbench's time");
    run.check(out.iter().any(|l| l.ends_with("current scheduling policy: SCHED_OTHER")), "chrt -p of the shell");
    run.check(out.iter().any(|l| l.ends_with("current scheduling policy: SCHED_FIFO")), "chrt -f 30 then chrt -p 0");
    run.check(out.iter().any(|l| l.ends_with("current scheduling priority: 30")), "the FIFO priority");
    run.check(out.iter().any(|l| l.ends_with("current affinity mask: f")), "taskset -p");
    run.check(has("pipetest: 500 round trips in "), "the dynamically linked pipetest");
}

/// tracefs as Linux's: `set_event` and `events/*/enable` choose events (`O_TRUNC` clears,
/// `!` disables, EINVAL for unknown names), `tracing_on` records, `trace` shows the export's
/// text and `echo > trace` empties it, `per_cpu/cpuN/trace` add up to it, `trace_pipe` takes
/// what it shows, `trace_marker` is EBADF while off.
#[test]
fn tracefs_files() {
    let script = "cd /sys/kernel/tracing; echo on=$(cat tracing_on); \
                  echo sched_switch > set_event; echo sched:sched_wakeup >> set_event; echo '!sched_wakeup' >> set_event; cat set_event; \
                  echo 1 > events/sched/sched_wakeup/enable; echo sched=$(cat events/sched/enable) timer=$(cat events/timer/enable); \
                  echo bogus >> set_event || echo bogus refused; echo 2 > events/enable || echo 2 refused; \
                  echo m0 > trace_marker || echo marker refused while off; \
                  echo 1 > tracing_on; echo m1 > trace_marker; sleep 0.05; echo 0 > tracing_on; \
                  echo markers=$(grep -c 'tracing_mark_write: m1$' trace); \
                  grep -q 'sched_switch: prev_comm=.* ==> next_comm=' trace && echo has switches; \
                  grep -q 'sched_wakeup: comm=.* target_cpu=' trace && echo has wakeups; \
                  grep -q hrtimer_expire_entry trace || echo no timers; \
                  n=$(grep -vc '^#' trace); s=0; for d in per_cpu/cpu*; do s=$((s + $(grep -vc '^#' $d/trace))); done; \
                  [ $n -gt 2 ] && [ $n = $s ] && echo per-cpu adds up; \
                  timeout 1 cat trace_pipe > /tmp/tp; [ $(wc -l < /tmp/tp) = $n ] && echo pipe took all; \
                  echo left=$(grep -vc '^#' trace); \
                  echo 1 > tracing_on; echo m2 > trace_marker; echo 0 > tracing_on; echo > trace; echo cleared=$(grep -vc '^#' trace); \
                  echo 64 > buffer_size_kb; echo kb=$(cat buffer_size_kb); echo 0 > buffer_size_kb || echo size 0 refused; \
                  echo tracer=$(cat /sys/kernel/debug/tracing/current_tracer); true";
    let run = run_sh("2", script);
    let out = run.lines();
    let has = |want: &str| out.iter().any(|l| l == want);
    for want in [
        "on=0", "sched:sched_switch", "sched=X timer=0", "bogus refused", "2 refused", "marker refused while off", "markers=1",
        "has switches", "has wakeups", "no timers", "per-cpu adds up", "pipe took all", "left=0", "cleared=0", "kb=64", "size 0 refused",
        "tracer=nop",
    ] {
        run.check(has(want), format!("expected a line `{want}`"));
    }
}

/// debugfs `sched/debug` (a busy CPU's root `util_avg`), `/proc/schedstat` (version 15),
/// `/proc/interrupts`, `/proc/stat`'s user and system columns and `/proc/vmstat` in Linux's layouts, with the kernel's numbers: an exec'd FIFO 50 `sleep`
/// is listed by its comm with prio 49 (Linux's `p->prio`), as `/proc/PID/comm` names it.
#[test]
fn sched_debug_schedstat_interrupts_vmstat() {
    let script = "chrt -f 50 sleep 1 & sleep 0.3; echo comm=$(cat /proc/$!/comm); d=/sys/kernel/debug/sched/debug; head -1 $d; \
                  echo cpus=$(grep -c '^cpu#' $d) cfs=$(grep -c '^cfs_rq.[0-9].:/$' $d) rt=$(grep -c '^rt_rq' $d) dl=$(grep -c '^dl_rq' $d); \
                  grep -q '^  .sysctl_sched_base_slice  *: [0-9]*[.][0-9]*$' $d && echo has base slice; \
                  echo sleep prio=$(grep ' sleep ' $d | awk '{print $6}'); \
                  s=/proc/schedstat; head -1 $s; echo cpulines=$(grep -c '^cpu[0-9]' $s) fields=$(awk '/^cpu/ {print NF; exit}' $s) domains=$(grep -c '^domain0 3 ' $s); \
                  echo loc ticking=$(awk '/LOC:/ {print ($2 > 0 && $3 > 0)}' /proc/interrupts); \
                  grep -q '^nr_free_pages [1-9]' /proc/vmstat && echo vmstat ok; \
                  [ $(cat /sys/kernel/debug/sched/wakeup_granularity_ns) = $(cat /proc/sys/kernel/sched_wakeup_granularity_ns) ] && echo wakeup granularity ok; \
                  i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; dd if=/dev/zero of=/dev/null bs=65536 count=2000 2>/dev/null; \
                  taskset -c 1 sh -c 'while :; do :; done' & sp=$!; sleep 1; \
                  echo util1 $(awk '/^cfs_rq.1.:.$/ {on = 1} on && /[.]util_avg / {print ($3 > 900); exit}' $d); \
                  echo task util $(awk '/^se[.]avg[.]util_avg / {print ($3 > 900)}' /proc/$sp/sched); \
                  taskset -p -c 0 $sp > /dev/null; sleep 0.05; \
                  echo util0 moved $(awk '/^cfs_rq.0.:.$/ {on = 1} on && /[.]util_avg / {print ($3 > 850); exit}' $d); kill $sp; \
                  read up rest </proc/uptime; echo stat user,system $(awk '/^cpu / {print ($2 > 0) ($4 > 0)}' /proc/stat); \
                  echo stat cpus over uptime $(awk -v up=$up '/^cpu[0-9]/ {if ($2 + $4 + $5 > up * 100 + 2) bad++} END {print bad + 0}' /proc/stat); true";
    let run = run_sh("2", script);
    let out = run.lines();
    let has = |want: &str| out.iter().any(|l| l == want);
    for want in [
        "comm=sleep",
        "Sched Debug Version: v0.11, 6.1.0-cadence #1",
        "cpus=2 cfs=2 rt=2 dl=2",
        "has base slice",
        "sleep prio=49",
        "version 15",
        "cpulines=2 fields=10 domains=2",
        "loc ticking=1",
        "vmstat ok",
        "wakeup granularity ok",
        // Both columns filled: a shell loop is user time, dd's zeroing system time (the
        // system column was always 0, everything non-idle was user).
        "stat user,system 11",
        // A second of a CPU-bound task on CPU 1: its root queue's PELT utilization is near
        // 1024 (1 − y^1000 of it; Linux's `util_avg` in the same file).
        "util1 1",
        // The task's own signal (`/proc/PID/sched`), and it moves with the task: 50 ms after
        // it migrates to CPU 0, that CPU's utilization holds it (grown from 0 over 50 ms, it
        // would be 1 − y^50 ≈ 0.66 of it).
        "task util 1",
        "util0 moved 1",
        "stat cpus over uptime 0",
    ] {
        run.check(has(want), format!("expected a line `{want}`"));
    }
}

/// Issue 37: procps's `ps` and `top` (Debian 12's, dynamic: libproc2 and libsystemd from the
/// root filesystem) read `/proc` as on Linux: a SCHED_FIFO 50 task shows `FF 50 - 90` (cls,
/// rtprio, ni, pri = 39 - `stat`'s priority), the shell `TS - 0 19`; top's summary has Linux
/// 2.6.11+'s CPU line (with `st`, chosen by `kernel.osrelease`) and its tasks' sizes come from
/// `statm`. The expected lines are Linux 6.1's at the same topology.
#[test]
fn procps_ps_and_top_read_proc_as_on_linux() {
    let script = "chrt -f 50 sleep 30 & sleep 1; /bin/ps -eLo pid,tid,cls,rtprio,ni,pri,psr,stat,comm; \
                  /bin/ps -ef | head -1; /usr/bin/top -b -n 1; kill $!";
    let run = run_sh("4,sockets=1,cores=2,threads=2", script);
    let out = run.lines();
    let has = |want: &str| out.iter().any(|l| l == want);
    let fields = |l: &String| l.split_whitespace().map(String::from).collect::<Vec<String>>();
    run.check(has("  PID   TID CLS RTPRIO  NI PRI PSR STAT COMMAND"), "ps -eLo's header");
    let row = |comm: &str| out.iter().map(fields).find(|f| f.len() == 9 && f[8] == comm && f[0].parse::<u32>().is_ok());
    match row("sleep") {
        Some(f) => {
            run.check(f[0] == f[1], format!("sleep's pid and tid: {f:?}"));
            run.check(f[2..6] == ["FF", "50", "-", "90"], format!("sleep under chrt -f 50 is FF 50 - 90: {f:?}"));
            run.check(f[6].parse::<u32>().is_ok_and(|c| c < 4), format!("sleep's psr: {f:?}"));
            run.check(f[7] == "S", format!("sleep is sleeping: {f:?}"));
        }
        None => run.check(false, "a ps row for sleep"),
    }
    match row("sh") {
        Some(f) => run.check(f[2..6] == ["TS", "-", "0", "19"], format!("the shell is TS - 0 19: {f:?}")),
        None => run.check(false, "a ps row for sh"),
    }
    match row("ps") {
        Some(f) => run.check(f[7].starts_with('R'), format!("ps sees itself running: {f:?}")),
        None => run.check(false, "a ps row for ps"),
    }
    run.check(has("UID        PID  PPID  C STIME TTY          TIME CMD"), "ps -ef's header");
    let line = |prefix: &str, tail: &str| out.iter().any(|l| l.starts_with(prefix) && l.trim_end().ends_with(tail));
    run.check(line("top - ", ""), "top's first line");
    run.check(line("Tasks: ", " zombie"), "top's tasks line");
    run.check(line("%Cpu(s): ", " st"), "top's CPU line with st, as Linux 2.6.11+'s");
    run.check(line("MiB Mem :", " buff/cache"), "top's memory line");
    run.check(line("MiB Swap:", " avail Mem"), "top's swap line");
    run.check(has("  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND"), "top's task header");
    let top_row = |comm: &str| out.iter().map(fields).find(|f| f.len() == 12 && f[11] == comm && f[0].parse::<u32>().is_ok());
    match top_row("sleep") {
        Some(f) => run.check(f[2] == "-51" && f[3] == "0", format!("top's PR and NI of the FIFO 50 sleep: {f:?}")),
        None => run.check(false, "a top row for sleep"),
    }
    match top_row("top") {
        Some(f) => run.check(
            f[4].parse::<u64>().is_ok_and(|v| v > 0) && f[5].parse::<u64>().is_ok_and(|v| v > 0) && f[7] == "R",
            format!("top's own VIRT and RES (statm) and state: {f:?}"),
        ),
        None => run.check(false, "a top row for top"),
    }
}

/// cgroup v1's hierarchical quota check (`tests/scripts/cgroup-v1-quota.sh`): the lines are
/// Linux 6.1's, from the same script on the peer at the same topology.
#[test]
fn cgroup_v1_quota_hierarchy_matches_linux() {
    let run = run_sh("2", "sh /bin/cgroup-v1-quota.sh");
    let out: Vec<String> = run.lines().into_iter().filter(|l| l.contains(" rc=") || l.starts_with("quotas ")).collect();
    let linux = [
        "parent-50ms rc=0", "child-60ms rc=1", "child-40ms rc=0", "parent-30ms rc=1", "child-period-200ms rc=0", "child-period-50ms rc=1",
        "child-unlimited rc=0", "parent-30ms-again rc=0", "quotas 30000 -1 200000",
    ];
    run.check(out == linux, format!("Linux 6.1 printed {linux:?}, Cadence {out:?}"));
}

/// CPU hot-plug through sysfs (`tests/scripts/hotplug.sh`: `cpuN/online`, the online and
/// offline lists, a task pinned to the CPU taken offline, `nproc`, `taskset` onto it, bad
/// writes, the CPU back): every `hp:` line is the one Linux 6.12 printed on the peer at the same
/// topology (`tests/fixtures/hotplug.linux-6.12.txt`), and the pinned task's widened affinity is
/// said as Linux says it.
#[test]
fn cpu_hotplug_through_sysfs_matches_linux() {
    let run = run_sh("4,sockets=1,cores=2,threads=2", "sh /bin/hotplug.sh");
    let out: Vec<String> = run.lines().into_iter().filter(|l| l.starts_with("hp: ")).collect();
    let linux: Vec<&str> = include_str!("../fixtures/hotplug.linux-6.12.txt").lines().collect();
    for (i, want) in linux.iter().enumerate() {
        run.check(out.get(i).map(String::as_str) == Some(*want), format!("hp line {i}: Linux 6.12 `{want}`, Cadence {:?}", out.get(i)));
    }
    run.check(out.len() == linux.len(), format!("{} hp lines, Linux {}", out.len(), linux.len()));
    run.check(
        run.lines().iter().any(|l| l.starts_with("process ") && l.ends_with(" (sh) no longer affine to cpu3")),
        "the widened affinity said as Linux's select_fallback_rq",
    );
}

/// util-linux `lscpu` and `lscpu -e` read `/proc/cpuinfo` (CPUID's family, model, stepping,
/// flags, address sizes) and `cpuN/cache/indexM` (leaf 4) and print the fields Linux 6.1 prints
/// on the same QEMU CPU and topology, with the boot report's topology; `lscpu -e`'s rows are
/// Linux's, caches column included.
#[test]
fn lscpu_reads_cpuinfo_and_caches_as_on_linux() {
    let run = run_sh("4,sockets=1,cores=2,threads=2", "lscpu; lscpu -e");
    let out = run.lines();
    let field = |name: &str| out.iter().find_map(|l| l.trim_start().strip_prefix(name).map(|v| v.trim().to_string())).unwrap_or_default();
    run.check(out.iter().any(|l| l.contains("smp: 4 cpus online (1 packages, 2 cores, 2 threads per core)")), "the boot report");
    for (name, want) in [("Thread(s) per core:", "2"), ("Core(s) per socket:", "2"), ("Socket(s):", "1"), ("CPU(s):", "4")] {
        run.check(field(name) == want, format!("lscpu {name} {want} as the boot report, got {:?}", field(name)));
    }
    for name in ["Address sizes:", "CPU family:", "Model:", "Stepping:", "BogoMIPS:", "Flags:", "L1d:", "L1i:", "L2:", "L3:"] {
        run.check(!field(name).is_empty(), format!("lscpu prints {name}"));
    }
    run.check(field("Flags:").starts_with("fpu ") && field("Flags:").contains(" tsc "), "CPUID flags with Linux's names");
    for want in [
        "CPU NODE SOCKET CORE L1d:L1i:L2:L3 ONLINE",
        "  0    0      0    0 0:0:0:0          yes",
        // QEMU >= 9 reports the L1 caches shared by a core's SMT threads (QEMU 7.2: one per
        // thread, rows `1:1:0:0`, `2:2:1:0`, `3:3:1:0`); Linux 6.1 under QEMU 10.0.2 prints these.
        "  1    0      0    0 0:0:0:0          yes",
        "  2    0      0    1 1:1:1:0          yes",
        "  3    0      0    1 1:1:1:0          yes",
    ] {
        run.check(out.iter().any(|l| l == want), format!("lscpu -e row `{want}` (Linux 6.1's under QEMU 10)"));
    }
}

/// `bench cyclic` gives its threads the intervals Debian's cyclictest gives for the same
/// options: `-d` apart without a histogram, all at `-i` with `-h` (cyclictest: "distance is
/// ignored and set to 0, if histogram enabled").
#[test]
fn bench_cyclic_intervals_follow_cyclictest() {
    let run = run_user(
        "2",
        "bench cyclic -t2 -p80 -i1000 -d500 -l50; exec /usr/bin/cyclictest -t2 -p80 -i1000 -d500 -l50 -q; \
         bench cyclic -t2 -p80 -i1000 -l50 -h 100; exec /usr/bin/cyclictest -t2 -p80 -i1000 -l50 -h 100",
    );
    // Per command (the shell's prompt starts each), the interval of each thread's last `T:`
    // line (cyclictest without -q repeats its status lines).
    let mut runs: Vec<Vec<(String, u64)>> = Vec::new();
    for l in run.lines() {
        if l.starts_with("cadence> ") {
            runs.push(Vec::new());
        } else if let (Some(cur), Some(rest)) = (runs.last_mut(), l.trim_start().strip_prefix("T:")) {
            let thread = rest.split_whitespace().next().unwrap_or("").to_string();
            let Some(interval) = rest.split_whitespace().find_map(|w| w.strip_prefix("I:")).and_then(|v| v.parse().ok()) else { continue };
            cur.retain(|(t, _)| *t != thread);
            cur.push((thread, interval));
        }
    }
    let intervals: Vec<Vec<u64>> = runs.iter().filter(|r| !r.is_empty()).map(|r| r.iter().map(|&(_, i)| i).collect()).collect();
    // bench cyclic, cyclictest, then the same two with -h.
    run.check(
        intervals == [vec![1000, 1500], vec![1000, 1500], vec![1000, 1000], vec![1000, 1000]],
        format!("the threads' intervals: {intervals:?}"),
    );
}

/// Seed 001's four lines, verbatim (`tests/scripts/seed-001.sh`), make the shell's own cgroup
/// in a v1 cpu hierarchy; cgroup v2 on the same tree takes `+cpu`, `cpu.max`, `cpu.weight`
/// with Linux's errors; `mount(2)` and `umount2(2)` keep `/proc/mounts`.
#[test]
fn cgroupfs_seed_001_and_cgroup2_files() {
    let script = "sh /bin/seed-001.sh; c=/sys/fs/cgroup/v2; mkdir $c && mount -t cgroup2 none $c && echo +cpu > $c/cgroup.subtree_control; \
                  cat $c/cgroup.controllers; mkdir $c/g; cat $c/g/cpu.max $c/g/cpu.weight $c/g/cgroup.type; \
                  echo 50000 100000 > $c/g/cpu.max && cat $c/g/cpu.max; echo 500 > $c/g/cpu.max || echo small quota refused; \
                  echo 0 > $c/g/cpu.weight || echo weight 0 refused; echo -5 > $c/g/cpu.weight.nice && cat $c/g/cpu.weight.nice $c/g/cpu.weight; \
                  echo +memory > $c/cgroup.subtree_control || echo memory refused; mkdir $c/g || echo exists; \
                  echo 999999 > $c/g/cgroup.procs || echo no such pid; ls $c/user; rmdir $c/user || echo user busy; \
                  echo 1 > $c/g/cpu.idle && cat $c/g/cpu.idle; rmdir $c/g && echo g removed; \
                  mount -t nosuchfs none /tmp || echo nosuchfs refused; umount /tmp || echo tmp not a mount; \
                  umount $c && grep -c cgroup2 /proc/mounts; true";
    let run = run_sh("2", script);
    let out = run.lines();
    let has = |want: &str| out.iter().any(|l| l == want);
    run.check(out.iter().any(|l| l.starts_with("seed-001: shell ") && l.contains(" in 1:cpu:/user/")), "the shell in its own cgroup");
    run.check(out.iter().any(|l| l.starts_with("seed-001: tasks of user/")), "its tasks file");
    for want in [
        "seed-001: drwxrwxrwx /sys/fs/cgroup/cpu/user",
        "seed-001: mount: cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0",
        "cpu",
        "max 100000",
        "100",
        "domain",
        "50000 100000",
        "small quota refused",
        "weight 0 refused",
        "-5",
        "305",
        "memory refused",
        "exists",
        "no such pid",
        "user busy",
        "1",
        "g removed",
        "nosuchfs refused",
        "tmp not a mount",
        "0",
    ] {
        run.check(has(want), format!("expected a line `{want}`"));
    }
}

/// `/dev/ttyN` (4:N): a session leader that opens a virtual terminal for reading (here a
/// `setsid`'d shell's `exec </dev/tty2`) makes it its controlling terminal and, in tty
/// autogroup mode (the default), joins that vt's autogroup, the one the kernel shell's `ttys`
/// lists for it: the next session on tty2 gets the same group, one on tty3 another. Reads take
/// the lines typed into the vt (`type tty2 ...`), writes show as `[tty2] ...`. `tty_nr` in
/// `/proc/PID/stat` is Linux's `new_encode_dev(4, 2)`, 1026, as Linux 6.1 prints it on the
/// peer (`conform-tty`'s `tty_nr, /dev/tty2 the ctty`); a process that is not a session
/// leader gets no controlling terminal from its open (tty_nr 0).
#[test]
fn dev_ttyn_gives_a_setsid_process_its_vt_and_the_vts_autogroup() {
    let stat = "read -r a b c d e f nr rest </proc/$$/stat";
    let run = run_user(
        "2",
        &format!(
            "exec /bin/sh -c ': </dev/tty2'; type tty2 hello vt; \
             exec /usr/bin/setsid -w /bin/sh -c 'exec </dev/tty2 >/dev/tty2 2>&1; read line; echo got $line; {stat}; echo vt2 nr=$nr $(cat /proc/$$/autogroup); tty'; \
             exec /usr/bin/setsid -w /bin/sh -c 'exec </dev/tty2 >/dev/tty2; echo again $(cat /proc/$$/autogroup)'; \
             exec /usr/bin/setsid -w /bin/sh -c 'exec </dev/tty3 >/dev/tty3; {stat}; echo vt3 nr=$nr $(cat /proc/$$/autogroup)'; \
             exec /bin/sh -c 'exec </dev/tty4 >/dev/tty4; {stat}; echo not a leader nr=$nr'; \
             ttys; exec /bin/ls -l /dev/tty1 /dev/tty2 /dev/tty63"
        ),
    );
    let out = run.lines();
    let find = |prefix: &str| out.iter().find_map(|l| l.strip_prefix(prefix).map(str::to_string));
    run.check(find("[tty2] got ").as_deref() == Some("hello vt"), "the typed line read from /dev/tty2");
    let vt2 = find("[tty2] vt2 nr=1026 /autogroup-").unwrap_or_else(|| run.fail("tty_nr 1026 and an autogroup on tty2"));
    let group = vt2.strip_suffix(" nice 0").unwrap_or_else(|| run.fail("autogroup nice 0")).to_string();
    run.check(out.iter().any(|l| l == "[tty2] /dev/tty2"), "tty(1) names /dev/tty2");
    run.check(find("[tty2] again /autogroup-").as_deref() == Some(vt2.as_str()), "the next session on tty2 is in the same autogroup");
    let vt3 = find("[tty3] vt3 nr=1027 /autogroup-").unwrap_or_else(|| run.fail("tty_nr 1027 and an autogroup on tty3"));
    run.check(vt3 != vt2, "tty3 has an autogroup of its own");
    run.check(out.iter().any(|l| l == "[tty4] not a leader nr=0"), "no controlling tty for a process that is not a session leader");
    let listed = out.iter().find(|l| l.starts_with("tty2 ")).unwrap_or_else(|| run.fail("ttys lists tty2"));
    run.check(
        listed.split_whitespace().last() == Some(format!("/autogroup-{group}").as_str()),
        format!("ttys shows tty2's group: {listed}"),
    );
    for (name, minor) in [("tty1", 1), ("tty2", 2), ("tty63", 63)] {
        // devtmpfs's mode and Linux's numbers, as `ls -l /dev` shows on the peer.
        let want = format!("crw-------    1 root     root        4, {minor:>3} ");
        run.check(out.iter().any(|l| l.starts_with(&want) && l.ends_with(&format!("/dev/{name}"))), format!("ls -l /dev/{name}"));
    }
}

/// `/dev/vda` with a disk attached: `tests/scripts/dev-vda.sh` prints what Linux 6.1 printed
/// for the same script on the peer with a blank 64 MiB disk (the lines below): a block device
/// 254:0, BLKGETSIZE64, `dd` through the page cache (whole 1 MiB records, reads shortened at
/// the end, ENOSPC at and across it), sync, O_DIRECT, conv=fsync; and after the poweroff the
/// image holds what was written.
#[test]
fn dev_vda_reads_and_writes_the_disk_as_on_linux() {
    let disk = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../target/dev-vda-{}.img", std::process::id()));
    let _ = std::fs::remove_file(&disk);
    std::fs::File::create(&disk).and_then(|f| f.set_len(64 << 20)).expect("a 64 MiB image");
    let run = boot(qemu().smp("2").initrd(initramfs()).disk(&disk).args("sh=\"sh /bin/dev-vda.sh\" poweroff"));
    run.expect_exit(KernelExit::Success);
    let out: Vec<String> = run.lines().into_iter().filter(|l| l.starts_with("vda: ")).collect();
    let linux = [
        "vda: block special file brw------- fe:0 size=0 io=4096",
        "vda: size 67108864",
        "vda: zeros 8+0 records out",
        r"vda: 0000000  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0",
        "vda: *",
        r"vda: 0001000   h   e   l   l   o       v   d   a  \0  \0  \0  \0  \0  \0  \0",
        r"vda: 0001020  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0  \0",
        "vda: *",
        "vda: 0020000",
        "vda: read across the end 1048576",
        "vda: write at the end dd: error writing '/dev/vda': No space left on device",
        "vda: write across the end dd: error writing '/dev/vda': No space left on device",
        "vda: sync 0",
        "vda: O_DIRECT 1+0 records out",
        "vda: conv=fsync 0+1 records out",
    ];
    run.check(out == linux, format!("Linux 6.1 printed {linux:#?}, Cadence {out:#?}"));
    let image = std::fs::read(&disk).expect("the image");
    run.check(&image[512..521] == b"hello vda" && &image[1024..1030] == b"synced", "the writes reached the image");
    let _ = std::fs::remove_file(&disk);
}

/// `coresched-bench` (issue 38 item 5, `make bench-coresched-user`) gives its threads cookies
/// through `prctl(PR_SCHED_CORE)` and runs `bench coresched`'s workloads in every mode: with
/// the siblings online, modes off, on and pinned, each line with a throughput, forced idle
/// (`core_forceidle_sum` in `/proc/PID/task/TID/sched`) only with cookies; in a `nosmt` boot
/// `smt/control` says `off` (as Linux's) and the program runs mode nosmt, prctl answering ENODEV.
#[test]
fn coresched_bench_gives_cookies_through_prctl_and_runs_every_mode() {
    let field = |l: &str, k: &str| l.split_whitespace().find_map(|w| w.strip_prefix(k).map(str::to_string)).unwrap_or_default();
    let run = run_sh("4,sockets=1,cores=2,threads=2", "coresched-bench -d 1 && grep -c core_forceidle_sum /proc/self/sched");
    let out = run.lines();
    run.check(
        out.iter().any(|l| {
            l.starts_with("coresched-bench: online_cpus=4 cores=2 smt_control=on tasks_per_group=4 secs=1 modes=off,on,pinned prctl=ok")
        }),
        "the header: 4 CPUs, 2 cores, prctl works",
    );
    let runs: Vec<&String> = out.iter().filter(|l| l.starts_with("coresched: ")).collect();
    let mut want = Vec::new();
    for w in ["cpu", "pipe+cpu"] {
        for m in ["off", "on", "pinned"] {
            want.push(format!("mode={m} workload={w}"));
        }
    }
    run.check(runs.len() == 6, format!("six runs, got {runs:#?}"));
    for (l, w) in runs.iter().zip(&want) {
        run.check(l.starts_with(&format!("coresched: {w} ")), format!("`{w}` in order, got `{l}`"));
        run.check(field(l, "ops_per_s=").parse::<f64>().is_ok_and(|x| x > 0.0), format!("a throughput: `{l}`"));
        let fi: f64 = field(l, "forced_idle_pct=").parse().unwrap_or(-1.0);
        if w.starts_with("mode=on") {
            // A figure, not necessarily above 0: cookie-aware placement and idle polling may
            // keep the pair's core free of forced idle for a whole run (0.0, 0.2, 1.7 and 10.2%
            // in four runs of ad4a274). That forced idle is accounted is checked in-kernel
            // (`coresched_tests`, "forced idle was not accounted").
            run.check(fi >= 0.0, format!("a forced-idle figure with cookies: `{l}`"));
        } else {
            run.check(fi == 0.0, format!("no forced idle without cookies: `{l}`"));
        }
    }
    run.check(out.iter().any(|l| l == "1"), "/proc/self/sched has core_forceidle_sum");
    let run =
        boot(qemu().smp("4,sockets=1,cores=2,threads=2").initrd(initramfs()).args("nosmt sh=\"coresched-bench -d 1 -w cpu\" poweroff"));
    run.expect_exit(KernelExit::Success);
    let out = run.lines();
    run.check(
        out.iter().any(|l| {
            l.starts_with("coresched-bench: online_cpus=2 cores=2 smt_control=off tasks_per_group=2 secs=1 modes=nosmt prctl=ENODEV")
        }),
        "nosmt: 2 CPUs, smt/control off, prctl ENODEV",
    );
    let runs: Vec<&String> = out.iter().filter(|l| l.starts_with("coresched: ")).collect();
    run.check(
        runs.len() == 1 && runs[0].starts_with("coresched: mode=nosmt workload=cpu ops_per_s=") && runs[0].ends_with("forced_idle_pct=0.0"),
        format!("one nosmt run: {runs:#?}"),
    );
}
