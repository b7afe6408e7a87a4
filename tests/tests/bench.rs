//! Benchmarks as workloads: they run to completion on small task stacks (hackbench's tasks
//! have 16 KiB, so a scheduler path whose frame grew shows up here as a double fault on the
//! stack's guard page), and the scheduler's hot paths allocate nothing with interrupts off
//! while they run (`trace atomic-alloc`, see `kernel/src/mm/atomic_alloc.rs`).

use cadence_boot::KernelExit;
use cadence_tests::{boot, qemu, Run};

/// Boots `smp` with `cmds` and checks a clean run with every command's output present.
fn run_benches(smp: &str) -> Run {
    let cmds = "bench hackbench -g 4 -l 50; bench pipe -l 2000; bench hackbench -g 8 -l 20; trace atomic-alloc";
    let run = boot(qemu().smp(smp).args(format!(r#"run="{cmds}" poweroff"#)));
    run.expect_exit(KernelExit::Success);
    run.check(run.report.exceptions.is_empty(), "unexpected EXCEPTION line");
    let out = &run.outcome.output;
    run.check(out.lines().filter(|l| l.starts_with("Time: ")).count() == 2, "expected two hackbench `Time:` lines");
    run.check(out.lines().filter(|l| l.starts_with("pipetest: ")).count() == 2, "expected two `pipetest:` lines");
    run.check(
        out.lines().any(|l| l.trim() == "atomic-alloc: total=0 sites=0"),
        "expected `atomic-alloc: total=0 sites=0` (no heap allocation with interrupts off)",
    );
    run
}

#[test]
fn benchmarks_complete_without_atomic_allocations_smp4() {
    run_benches("4");
}

#[test]
fn benchmarks_complete_without_atomic_allocations_smt() {
    run_benches("4,sockets=1,cores=2,threads=2");
}

/// The value of `key=` in `line` (a `deadline*:` line), as a number.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('='))).and_then(|v| v.parse().ok())
}

/// `bench deadline`: every line in its format, each set's missed jobs classified exactly once
/// (the causes add up to the misses), and the ideal schedule of each set missing nothing. How
/// many jobs miss depends on how busy the host is: not checked here (docs/guide/benchmarks.md, `bench deadline`).
#[test]
fn deadline_bench_reports_every_set_and_classifies_each_miss() {
    let run = boot(qemu().smp("2").args(r#"run="bench deadline -d 1 -v" poweroff"#));
    run.expect_exit(KernelExit::Success);
    run.check(run.report.exceptions.is_empty(), "unexpected EXCEPTION line");
    let out = &run.outcome.output;
    let sets: Vec<&str> = out.lines().filter(|l| l.starts_with("deadline: util_pct=")).collect();
    let overrun: Vec<&str> = out.lines().filter(|l| l.starts_with("deadline-overrun: ")).collect();
    let causes: Vec<&str> = out.lines().filter(|l| l.starts_with("deadline-steal: ")).collect();
    let models: Vec<&str> = out.lines().filter(|l| l.starts_with("deadline-model: ")).collect();
    run.check(sets.len() == 3 && overrun.len() == 1, "expected 3 `deadline:` lines and one `deadline-overrun:` line");
    run.check(causes.len() == 4 && models.len() == 4, "expected a `deadline-steal:` and a `deadline-model:` line per run");
    for line in &sets {
        let ok = ["tasks", "jobs", "missed", "max_lateness_us", "throttled"].iter().all(|k| field(line, k).is_some());
        run.check(ok && field(line, "jobs") > Some(0), format!("malformed set line: {line}"));
    }
    let missed = sets.iter().map(|l| field(l, "missed")).chain(overrun.iter().map(|l| field(l, "others_missed")));
    for (line, missed) in causes.iter().zip(missed) {
        let keys =
            ["missed_with_steal", "missed_after_late_job", "missed_server_short", "missed_with_host_delay_elsewhere", "missed_other"];
        let sum: Option<u64> = keys.iter().map(|k| field(line, k)).sum();
        let sum = sum.map(|s| s + field(line, "unclassified").unwrap_or(0));
        run.check(sum.is_some() && sum == missed, format!("causes do not add up to {missed:?} missed: {line}"));
    }
    for line in &models {
        run.check(field(line, "missed") == Some(0), format!("ideal global EDF missed a deadline: {line}"));
    }
    let over = overrun.first().copied().unwrap_or("");
    run.check(field(over, "throttled") > Some(0), format!("the overrunning task was never throttled: {over}"));
}
