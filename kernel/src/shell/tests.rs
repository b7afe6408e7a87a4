//! In-kernel tests of the shell: line editor, parsers, command errors (Linux messages), and a
//! fuzz over odd inputs that must never panic. Commands that could change the test runner
//! (init, pid 1) are only pointed at a sleeper task these tests start, or at pids that do not
//! exist (>= 10^9).

use super::cmds::{getopt, parse_list, parse_mask};
use super::console::{Event, LineEditor};
use super::{capture, execute, split_line};
use crate::sched::task::SpawnOptions;
use crate::sched::{signal, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::CpuMask;
use core::sync::atomic::{AtomicBool, Ordering};

fn run(line: &str) -> (i32, String) {
    capture(|| execute(line))
}

fn feed(ed: &mut LineEditor, bytes: &[u8]) -> Vec<Event> {
    let mut out = String::new();
    bytes.iter().map(|&b| ed.feed(b, &mut out)).filter(|e| *e != Event::Pending).collect()
}

use crate::testing::Rng;

/// A sleeping task to aim commands at; stopped with the returned flag.
fn sleeper() -> (u32, Arc<AtomicBool>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let t = spawn(SpawnOptions::new("sleeper"), move || {
        while !s.load(Ordering::Relaxed) {
            crate::sched::sleep_ns(1_000_000);
        }
        0
    })
    .expect("spawn sleeper");
    (t.tid, stop)
}

#[test_case]
fn line_editor_edits_and_submits() {
    let mut ed = LineEditor::new();
    // Type "helx", backspace, "p", CR LF: one line "help" (the LF of CRLF ignored).
    assert_eq!(feed(&mut ed, b"helx\x7fp\r\n"), [Event::Line("help".into())]);
    // Cursor movement: "ps", Left, Left, insert "x" -> "xps"; Home/End sequences.
    assert_eq!(feed(&mut ed, b"ps\x1b[D\x1b[Dx\r"), [Event::Line("xps".into())]);
    assert_eq!(feed(&mut ed, b"ab\x1b[Hc\x1b[Fd\n"), [Event::Line("cabd".into())]);
    // Delete under the cursor, ^U clears, ^C abandons.
    assert_eq!(feed(&mut ed, b"abc\x1b[D\x1b[3~\r"), [Event::Line("ab".into())]);
    assert_eq!(feed(&mut ed, b"junk\x15ok\r"), [Event::Line("ok".into())]);
    assert_eq!(feed(&mut ed, b"nope\x03"), [Event::Interrupt]);
    assert_eq!(ed.line(), "");
}

#[test_case]
fn line_editor_history_walks_up_and_down() {
    let mut ed = LineEditor::new();
    feed(&mut ed, b"one\rtwo\rtwo\r\r");
    assert_eq!(ed.history(), ["one", "two"]);
    // Up twice from a draft -> "one".
    assert_eq!(feed(&mut ed, b"draft\x1b[A\x1b[A\r"), [Event::Line("one".into())]);
    // History is now one, two, one.
    assert_eq!(ed.history(), ["one", "two", "one"]);
    feed(&mut ed, b"draft\x1b[A\x1b[A");
    assert_eq!(ed.line(), "two");
    feed(&mut ed, b"\x1b[B");
    assert_eq!(ed.line(), "one");
    feed(&mut ed, b"\x1b[B");
    assert_eq!(ed.line(), "draft");
    // Up at the oldest entry stays there.
    feed(&mut ed, b"\x15\x1b[A\x1b[A\x1b[A\x1b[A\x1b[A");
    assert_eq!(ed.line(), "one");
}

#[test_case]
fn line_editor_survives_random_bytes() {
    let mut ed = LineEditor::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::new();
    for _ in 0..20_000 {
        let b = (rng.next_u64() & 0xff) as u8;
        out.clear();
        let _ = ed.feed(b, &mut out);
        assert!(ed.cursor() <= ed.line().len());
        assert!(ed.line().len() <= 1024);
    }
}

#[test_case]
fn splits_lists_and_background_jobs() {
    let s = split_line("a; b & c 'x;y' &; ;");
    let got: Vec<(&str, bool)> = s.iter().map(|(c, b)| (c.as_str(), *b)).collect();
    assert_eq!(got, [("a", false), ("b", true), ("c 'x;y'", true)]);
    assert!(split_line("  ;; & ").is_empty());
}

#[test_case]
fn parses_masks_and_lists() {
    assert_eq!(parse_mask("f"), Some(CpuMask::from_u64(0xf)));
    assert_eq!(parse_mask("0x3"), Some(CpuMask::from_u64(3)));
    assert_eq!(parse_mask("zz"), None);
    assert_eq!(parse_mask(""), None);
    assert_eq!(parse_mask("10000000000000000"), Some(CpuMask::single(64)), "masks wider than 64 bits");
    let past_the_last = alloc::format!("1{}", "0".repeat(cadence_sched::NR_CPUS / 4));
    assert_eq!(parse_mask(&past_the_last), None, "a CPU at NR_CPUS");
    assert_eq!(parse_list("0-2,5"), Some(CpuMask::from_u64(0b100111)));
    assert_eq!(parse_list("0-7:2"), Some(CpuMask::from_u64(0b0101_0101)));
    assert_eq!(parse_list("3-1"), None);
    assert_eq!(parse_list("64"), Some(CpuMask::single(64)));
    assert_eq!(parse_list(&alloc::format!("{}", cadence_sched::NR_CPUS)), None);
    assert_eq!(parse_list("0-3:0"), None);
    assert_eq!(parse_list(""), None);
    assert_eq!(CpuMask::from_u64(0b1011_0111).to_list(), "0-2,4-5,7");
    assert_eq!(CpuMask::from_u64(0).to_list(), "");
}

#[test_case]
fn getopt_handles_clusters_values_and_long_options() {
    let o = getopt("t", &["-cp", "0-1", "7"], "cp", "", &[]).unwrap();
    assert!(o.has('c') && o.has('p'));
    assert_eq!(o.rest, ["0-1", "7"]);
    let o = getopt("t", &["-n5", "--adjustment", "3", "x"], "", "n", &[("adjustment", 'n')]).unwrap();
    assert_eq!(o.value('n'), Some("3"));
    assert_eq!(o.rest, ["x"]);
    assert!(getopt("t", &["-z"], "a", "", &[]).is_err());
    assert!(getopt("t", &["-n"], "", "n", &[]).is_err());
    assert!(getopt("t", &["--bogus"], "", "", &[]).is_err());
    let o = getopt("t", &["--", "-x"], "x", "", &[]).unwrap();
    assert_eq!(o.rest, ["-x"]);
}

#[test_case]
fn commands_report_linux_errors() {
    let cases: &[(&str, i32, &str)] = &[
        ("chrt -p 1000000000", 1, "chrt: failed to get pid 1000000000's policy: No such process"),
        ("chrt -f -p 50 1000000000", 1, "chrt: failed to set pid 1000000000's policy: No such process"),
        ("chrt -f -p 100 1000000000", 1, "chrt: unsupported priority value for the policy: 100"),
        ("chrt -p abc", 2, "chrt: invalid PID argument: 'abc'"),
        ("chrt -x", 2, "chrt: invalid option -- 'x'"),
        ("chrt", 2, "usage: chrt"),
        ("chrt -d 0 ps", 1, "chrt: failed to set pid 0's policy: Invalid argument"),
        ("chrt -d -T 1000000 -P 10000000 5 ps", 1, "SCHED_DEADLINE needs 0"),
        ("chrt -d -T 20000000 -P 10000000 0 ps", 1, "Invalid argument"),
        ("chrt -f -T 1000000 10 ps", 2, "supported for SCHED_DEADLINE only"),
        ("chrt -d -T abc 0 ps", 2, "chrt: invalid runtime argument: 'abc'"),
        ("taskset -p zz 1000000000", 1, "taskset: failed to parse CPU mask: zz"),
        ("taskset -cp 9-1 1000000000", 1, "taskset: failed to parse CPU list: 9-1"),
        ("taskset -p 1000000000", 1, "taskset: failed to get pid 1000000000's affinity: No such process"),
        ("renice -n 5 -p 1000000000", 1, "renice: failed to get priority for 1000000000 (process ID): No such process"),
        ("renice", 2, "usage: renice"),
        ("kill -9 1000000000", 1, "kill: (1000000000) - No such process"),
        ("kill -FOO 1000000000", 1, "kill: FOO: invalid signal specification"),
        ("kill -s 65 1000000000", 1, "kill: 65: invalid signal specification"),
        ("kill abc", 1, "kill: abc: arguments must be process or job IDs"),
        ("kill %9", 1, "kill: %9: no such job"),
        ("sysctl kernel.nope", 1, "sysctl: cannot stat /proc/sys/kernel/nope: No such file or directory"),
        ("sysctl kernel.sched_base_slice_ns=1", 1, "sysctl: setting key \"kernel.sched_base_slice_ns\": Invalid argument"),
        ("sysctl -w kernel.sched_rr_timeslice_ms", 1, "must be of the form name=value"),
        ("nice -n x help", 2, "nice: invalid adjustment 'x'"),
        ("nice -n 5", 2, "nice: a command must be given with an adjustment"),
        ("sleep x", 2, "sleep: invalid time interval 'x'"),
        ("sleep 1 -1", 2, "sleep: invalid time interval '-1'"),
        ("sleep", 2, "sleep: missing operand"),
        ("bench nope", 2, "bench: unknown benchmark 'nope'"),
        ("bench cyclic -l abc", 2, "-l needs a number"),
        ("bench cyclic -x", 2, "unexpected argument '-x'"),
        ("bench pipe -l 10 -x", 2, "unexpected argument '-x' (bench pipe --help lists the options)"),
        ("bench cyclic -h 0", 2, "-h needs a number in 1..=100000, got '0'"),
        ("bench hackbench -g 0", 2, "-g needs a number"),
        ("sysctl debug.fail_alloc.probability=101", 1, "sysctl: setting key \"debug.fail_alloc.probability\": Invalid argument"),
        ("sysctl debug.fail_alloc.times=-2", 1, "sysctl: setting key \"debug.fail_alloc.times\": Invalid argument"),
        ("sysctl debug.fail_alloc.injected=3", 1, "sysctl: setting key \"debug.fail_alloc.injected\": Permission denied"),
        ("sysctl kernel.timer_advance_ns=500001", 1, "sysctl: setting key \"kernel.timer_advance_ns\": Invalid argument"),
        ("sysctl kernel.timer_advance_ns=-1", 1, "sysctl: setting key \"kernel.timer_advance_ns\": Invalid argument"),
        ("sysctl kernel.timer_advance_ns=1e5", 1, "sysctl: setting key \"kernel.timer_advance_ns\": Invalid argument"),
        ("sysctl debug.timer=0", 1, "sysctl: setting key \"debug.timer\": Permission denied"),
        ("sysctl kernel.sched_features=NO_TIMER_KICKS", 1, "sysctl: setting key \"kernel.sched_features\": Invalid argument"),
        ("chaos -f 101", 1, "chaos: -f: 101 is not a percentage (0..=100)"),
        ("bench hwlat -c 63", 2, "-c needs an online CPU, got '63'"),
        ("bench hwlat -W 100 -w 100", 2, "-w needs a number in 1..=99, got '100'"),
        ("bench pert -c 63", 2, "cpu 63 is not online"),
        ("bench wakeup-latency -i", 2, "option -i needs a value"),
        ("nosuch", 127, "nosuch: command not found"),
        ("ps \"unterminated", 2, "syntax error"),
        ("ps -Z", 2, "usage: ps"),
        ("trace bogus", 2, "usage: trace"),
    ];
    for (line, code, want) in cases {
        let (c, out) = run(line);
        assert!(out.contains(want), "'{}' printed {:?}, wanted {:?}", line, out, want);
        assert_eq!(c, *code, "'{}' returned {} ({:?})", line, c, out);
    }
}

/// `chrt -d` sets SCHED_DEADLINE with util-linux's options (on a task, and on a command it
/// runs), `chrt -p` shows the parameters, `ps` shows the class as `DLN`, and the bandwidth
/// goes back when the task leaves the class.
#[test_case]
fn chrt_deadline_sets_sched_deadline() {
    let (c, out) = run("chrt -d --sched-runtime 1000000 --sched-period 10000000 0 sleep 0.01");
    assert_eq!(c, 0, "{}", out);
    let (tid, stop) = sleeper();
    let (c, out) = run(&alloc::format!("chrt -d -T 2000000 -D 5000000 -P 20000000 -p 0 {tid}; chrt -p {tid}; ps"));
    assert_eq!(c, 0, "{}", out);
    assert!(out.contains(&alloc::format!("pid {tid}'s current scheduling policy: SCHED_DEADLINE")), "{}", out);
    assert!(out.contains(&alloc::format!("pid {tid}'s current runtime/deadline/period parameters: 2000000/5000000/20000000")), "{}", out);
    assert!(out.lines().any(|l| l.contains(" DLN ") && l.contains(&alloc::format!(" {tid} "))), "{}", out);
    assert_eq!(crate::sched::class::deadline::admitted().1, 1);
    let (c, out) = run(&alloc::format!("chrt -o -p 0 {tid}"));
    assert_eq!(c, 0, "{}", out);
    assert_eq!(crate::sched::class::deadline::admitted().1, 0, "the bandwidth went back");
    stop.store(true, Ordering::SeqCst);
    assert_eq!(wait(tid), Ok(0));
}

#[test_case]
fn commands_act_on_a_task() {
    let (tid, stop) = sleeper();
    let (c, out) = run(&alloc::format!("chrt -f -p 10 {tid}; chrt -p {tid}"));
    assert_eq!(c, 0, "{}", out);
    assert!(out.contains(&alloc::format!("pid {tid}'s current scheduling policy: SCHED_FIFO")), "{}", out);
    assert!(out.contains(&alloc::format!("pid {tid}'s current scheduling priority: 10")), "{}", out);
    let (c, out) = run(&alloc::format!("chrt -o -p 0 {tid}; renice -n 7 -p {tid}"));
    assert_eq!(c, 0, "{}", out);
    assert!(out.contains(&alloc::format!("{tid} (process ID) old priority 0, new priority 7")), "{}", out);
    let (c, out) = run(&alloc::format!("taskset -p 3 {tid}"));
    assert_eq!(c, 0, "{}", out);
    assert!(out.contains(&alloc::format!("pid {tid}'s new affinity mask: 3")), "{}", out);
    let (c, out) = run(&alloc::format!("taskset -cp 2 {tid}"));
    assert_eq!(c, 0, "{}", out);
    assert!(out.contains(&alloc::format!("pid {tid}'s new affinity list: 2")), "{}", out);
    // A mask naming only offline CPUs is EINVAL.
    let (c, out) = run(&alloc::format!("taskset -p 0x8000000000000000 {tid}"));
    assert_eq!(c, 1);
    assert!(out.contains(&alloc::format!("taskset: failed to set pid {tid}'s affinity: Invalid argument")), "{}", out);
    let (_, out) = run("ps");
    assert!(out.contains("sleeper") && out.starts_with("  PID   TID CLS"), "{}", out);
    // kill -STOP / -CONT / -0 succeed; the task is then stopped by the flag.
    assert_eq!(run(&alloc::format!("kill -STOP {tid}")).0, 0);
    assert_eq!(run(&alloc::format!("kill -CONT {tid}")).0, 0);
    assert_eq!(run(&alloc::format!("kill -0 {tid}")).0, 0);
    stop.store(true, Ordering::SeqCst);
    assert_eq!(wait(tid), Ok(0));
    let _ = signal::SIGKILL;
}

#[test_case]
fn background_jobs_run_and_are_reaped() {
    let (c, out) = run("sleep 20ms &");
    assert_eq!(c, 0);
    assert!(out.starts_with('[') && out.contains("] "), "{}", out);
    crate::sched::sleep_ns(60_000_000);
    let (_, out) = capture(super::reap_jobs);
    assert!(out.contains("Done") && out.contains("sleep 20ms"), "{}", out);
    // `jobs` reports a finished job once; the prompt's reap then has nothing to say.
    run("sleep 10ms &");
    crate::sched::sleep_ns(60_000_000);
    let (_, out) = run("jobs");
    assert!(out.contains("Done") && out.contains("sleep 10ms"), "{}", out);
    let (_, out) = capture(super::reap_jobs);
    assert!(!out.contains("Done"), "reported twice: {}", out);
    let (_, out) = run("sleep 5 &");
    let (c, _) = run("kill -9 %1");
    assert_eq!(c, 0, "{}", out);
    crate::sched::sleep_ns(20_000_000);
    let (_, out) = capture(super::reap_jobs);
    assert!(out.contains("Killed"), "{}", out);
}

#[test_case]
fn fuzzed_command_lines_never_panic() {
    let cmds = ["help", "ps", "chrt", "nice", "renice", "taskset", "kill", "sysctl", "jobs", "bench", "trace", "help"];
    let toks = [
        "-p", "-f", "-r", "-o", "-b", "-i", "-m", "-R", "-v", "-c", "-cp", "-pc", "-n", "-s", "-l", "-a", "-w", "-q", "-e", "-L", "-h",
        "--", "-", "--pid", "--max", "--priority", "--bogus=1", "1000000000", "4294967295", "4294967296", "18446744073709551616", "-1",
        "-20", "-99999", "99", "100", "abc", "0x", "0xzz", "f", "1-3", "0-99", "3-1", ",", ",,", "0-7:0", "%", "%1", "%x", "-KILL",
        "-SIGFOO", "-64", "-00x", "kernel.x=1", "kernel.sched_rr_timeslice_ms", "=", "==", "'", "\"", "'a b'", ";", "&", "é", "\u{7f}",
        "\t",
    ];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..1500 {
        let mut line = String::from(rng.pick(&cmds));
        for _ in 0..(rng.next_u64() % 6) {
            line.push(' ');
            line.push_str(rng.pick(&toks));
        }
        let (c, _) = run(&line);
        assert!(matches!(c, 0 | 1 | 2 | 127), "'{}' returned {}", line, c);
    }
    // Random printable garbage as whole lines.
    for _ in 0..500 {
        let n = rng.next_u64() % 40;
        // (No `&`: background jobs print to the console, outside the capture.)
        let line: String = (0..n).map(|_| (0x20 + (rng.next_u64() % 95) as u8) as char).filter(|&c| c != '&').collect();
        let _ = run(&line);
    }
    crate::sched::sleep_ns(20_000_000);
    let _ = capture(super::reap_jobs);
    // init (the test runner) is untouched.
    let me = crate::sched::api::sched_getattr(0).unwrap();
    assert_eq!(me.policy, cadence_sched::Policy::Normal);
}

#[test_case]
fn cyclic_and_hackbench_produce_results() {
    let r = crate::bench::latency::cyclic(crate::bench::latency::CyclicConfig {
        threads: 2,
        prio: 80,
        interval_us: 1000,
        distance_us: 500,
        loops: 50,
        duration_s: 0,
        affine: true,
        histogram_us: 0,
    })
    .expect("cyclic");
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].cycles, 50);
    assert!(r[0].min_us <= r[0].avg_us && r[0].avg_us <= r[0].max_us);
    let line = r[0].line(0);
    assert!(line.starts_with("T: 0 (") && line.contains(") P:80 I:1000 C:     50 Min:"), "{}", line);
    // --split: pinned threads on a quiet machine split (nearly) every cycle, and the parts of
    // a cycle add up to its latency, so their averages add up to about the average.
    for (i, t) in r.iter().enumerate() {
        assert!(t.split_cycles * 10 >= t.cycles * 8, "thread {}: {} of {} cycles split", i, t.split_cycles, t.cycles);
        let parts_us = t.split_avg_ns.iter().sum::<u64>() / 1000;
        assert!(
            parts_us + 2 >= t.min_us && parts_us <= t.max_us + 1,
            "thread {}: parts {} us, min {} max {}",
            i,
            parts_us,
            t.min_us,
            t.max_us
        );
        let split = t.split_line(i);
        assert!(
            split.starts_with(&alloc::format!("split T:{:2} cycles=", i)) && split.contains(" irq=") && split.contains(" switch>run="),
            "{}",
            split
        );
    }
    // cyclictest -h: one row per non-empty µs bucket, counts summing to the cycles.
    let cfg = crate::bench::latency::CyclicConfig {
        threads: 2,
        prio: 80,
        interval_us: 1000,
        distance_us: 500,
        loops: 30,
        duration_s: 0,
        affine: true,
        histogram_us: 100_000,
    };
    let (r, h) = crate::bench::latency::cyclic_with_histograms(cfg).expect("cyclic -h");
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].counts.iter().sum::<u64>() + h[0].overflows, r[0].cycles);
    let text = crate::bench::latency::histogram_text(&r, &h);
    assert!(text.starts_with("# Histogram\n") && text.contains("# Max Latencies:"), "{}", text);
    let rows: u64 = text
        .lines()
        .filter(|l| l.len() > 7 && l.as_bytes()[6] == b' ' && l[..6].bytes().all(|b| b.is_ascii_digit()))
        .map(|l| l.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()).expect("a count"))
        .sum();
    assert_eq!(rows, h[0].counts.iter().sum::<u64>(), "{}", text);
    let secs = crate::bench::hackbench::hackbench(1, 5, 4, 100).expect("hackbench");
    assert!(secs > 0.0);
    let w = crate::bench::latency::wakeup_latency(1, 5000, 0).expect("wakeup-latency");
    assert!(w.samples > 0 && w.samples + w.missed >= 150, "{:?}", w);
    // One CPU, 5 ms of every 50, for a second: prints one line, returns.
    crate::bench::hwlat::cmd_hwlat(&["-d", "1", "-W", "50", "-w", "5", "-c", "0"]).expect("hwlat");
}

#[test_case]
fn rr_timeslice_of_zero_or_less_resets_and_reads_back_the_default() {
    let (c, _) = run("sysctl -w kernel.sched_rr_timeslice_ms=25");
    assert_eq!(c, 0);
    assert!(run("sysctl kernel.sched_rr_timeslice_ms").1.contains("kernel.sched_rr_timeslice_ms = 25"));
    // Linux (`sched_rr_handler`): a value <= 0 restores RR_TIMESLICE (100 ms) and the file
    // then reads 100.
    let (c, _) = run("sysctl -w kernel.sched_rr_timeslice_ms=-5");
    assert_eq!(c, 0);
    let (_, out) = run("sysctl kernel.sched_rr_timeslice_ms");
    assert!(out.contains("kernel.sched_rr_timeslice_ms = 100"), "{}", out);
}
