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
