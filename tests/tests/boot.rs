//! Boot scenarios: the kernel comes up on several CPU topologies (BIOS and
//! UEFI), reports them correctly, powers off on `poweroff`, fails cleanly on
//! an injected fault and survives bad command-line options. The last two
//! scenarios boot the in-kernel *test* kernel through the test runner
//! (`cadence_boot::harness`): it goes on after a failing test and reports
//! every failure, and a filter that matches no test is an error.
//!
//! Topologies as QEMU 7.2 builds them: `-smp N` alone gives 1 socket with N
//! cores of 1 thread (QEMU >= 6.2 prefers cores over sockets); with
//! `threads=2` the APIC id is `core << 1 | thread`, so SMT siblings have
//! thread ids 0 and 1 on the same core.

use cadence_boot::harness::{run_suite, Suite};
use cadence_boot::KernelExit;
use cadence_tests::{boot, qemu, qemu_for, test_kernel, Run};
use std::collections::{BTreeMap, BTreeSet};

/// Asserts a successful boot that reported `cpus` CPUs as `packages`
/// packages x `cores` cores x `threads` threads per core.
fn assert_topology(run: &Run, cpus: u32, packages: u32, cores: u32, threads: u32) {
    run.expect_exit(KernelExit::Success);
    let r = &run.report;
    run.check(r.malformed.is_empty(), format!("malformed report lines: {:?}", r.malformed));
    run.check(r.exceptions.is_empty(), "unexpected EXCEPTION line");
    run.check(r.cpus.len() == cpus as usize, format!("expected {cpus} `cpu ... online` lines"));

    let ids: BTreeSet<u32> = r.cpus.iter().map(|c| c.cpu).collect();
    run.check(ids == (0..cpus).collect(), "cpu numbers must be 0..N, each once");
    let apics: BTreeSet<u32> = r.cpus.iter().map(|c| c.apic).collect();
    run.check(apics.len() == cpus as usize, "APIC ids must be distinct");

    let mut per_core: BTreeMap<(u32, u32), BTreeSet<u32>> = BTreeMap::new();
    for c in &r.cpus {
        run.check(c.package < packages, format!("cpu {} package id out of range", c.cpu));
        run.check(c.thread < threads, format!("cpu {} thread id out of range", c.cpu));
        let fresh = per_core.entry((c.package, c.core)).or_default().insert(c.thread);
        run.check(fresh, format!("cpu {} duplicates a package/core/thread triple", c.cpu));
    }
    run.check(per_core.len() == (packages * cores) as usize, format!("expected {} distinct cores", packages * cores));
    let all_threads: BTreeSet<u32> = (0..threads).collect();
    for (core, t) in &per_core {
        run.check(*t == all_threads, format!("core {core:?} must have thread ids 0..{threads}"));
    }

    // Optional `cpu <n> smt-siblings [...]` lines must agree with the topology.
    for (cpu, siblings) in &r.smt_siblings {
        let Some(me) = r.cpus.iter().find(|c| c.cpu == *cpu) else { run.fail(format!("smt-siblings line for unknown cpu {cpu}")) };
        let want: BTreeSet<u32> = r.cpus.iter().filter(|c| (c.package, c.core) == (me.package, me.core)).map(|c| c.cpu).collect();
        let got: BTreeSet<u32> = siblings.iter().copied().collect();
        run.check(got == want, format!("cpu {cpu}: smt siblings {got:?}, expected {want:?}"));
    }

    let smp = r.smp.unwrap_or_else(|| run.fail("no `cadence: smp:` summary line"));
    run.check(smp.cpus == cpus, "smp summary: wrong cpu count");
    run.check(smp.packages == packages, "smp summary: wrong package count");
    run.check(smp.cores == cores * packages || smp.cores == cores, "smp summary: wrong core count");
    run.check(smp.threads_per_core == threads, "smp summary: wrong threads per core");

    let t = r.timing.unwrap_or_else(|| run.fail("no `cadence: tsc` line"));
    run.check(t.tsc_mhz > 0.0 && t.lapic_mhz > 0.0 && t.hz > 0, "tsc line has zero values");
    run.check(r.booted(), "no `cadence: boot ok` line");
}

#[test]
fn boots_one_cpu() {
    let run = boot(qemu().smp("1").args("poweroff"));
    assert_topology(&run, 1, 1, 1, 1);
}

#[test]
fn boots_two_cpus() {
    let run = boot(qemu().smp("2").args("poweroff"));
    assert_topology(&run, 2, 1, 2, 1);
}

#[test]
fn boots_smt_topology() {
    let run = boot(qemu().smp("4,sockets=1,cores=2,threads=2").args("poweroff"));
    assert_topology(&run, 4, 1, 2, 2);
}

/// Beyond 64 CPUs (issue 60): x2APIC mode, per-CPU data sized at boot, and one boot-report
/// line per package instead of one per CPU. The only boot of more than 64 CPUs in `make test`
/// (bigger machines are `make bench-topology`).
#[test]
fn boots_96_cpus_in_two_packages() {
    let run = boot(qemu().smp("96,sockets=2,cores=24,threads=2").memory("1G").args("poweroff"));
    run.expect_exit(KernelExit::Success);
    let r = &run.report;
    run.check(r.malformed.is_empty(), format!("malformed report lines: {:?}", r.malformed));
    run.check(r.cpus.is_empty() && r.smt_siblings.is_empty(), "no per-CPU lines beyond 64 CPUs");
    run.check(r.packages.len() == 2, format!("expected 2 package lines, got {}", r.packages.len()));
    let mut cpus = BTreeSet::new();
    let mut apics = BTreeSet::new();
    for (i, p) in r.packages.iter().enumerate() {
        run.check(p.package == i as u32, format!("package lines in order: {} at {i}", p.package));
        run.check(p.cpus.len() == 48 && p.apics.len() == 48, format!("package {}: 48 CPUs", p.package));
        run.check(p.cores == 24 && p.threads_per_core == 2, format!("package {}: 24 cores of 2 threads", p.package));
        cpus.extend(p.cpus.iter().copied());
        apics.extend(p.apics.iter().copied());
    }
    run.check(cpus == (0..96).collect(), "CPU ids 0..96, each in one package");
    run.check(apics.len() == 96, "APIC ids distinct");
    let smp = r.smp.unwrap_or_else(|| run.fail("no `cadence: smp:` summary line"));
    run.check((smp.cpus, smp.packages, smp.cores, smp.threads_per_core) == (96, 2, 48, 2), format!("smp summary {smp:?}"));
    run.check(run.lines().iter().any(|l| l.contains(", x2apic, ")), "x2APIC mode (QEMU >= 9 offers it under TCG)");
}

#[test]
fn boots_eight_cpus() {
    let run = boot(qemu().smp("8").args("poweroff"));
    assert_topology(&run, 8, 1, 8, 1);
}

#[test]
fn boots_uefi() {
    let run = boot(qemu().uefi(true).args("poweroff"));
    assert_topology(&run, 4, 1, 2, 2);
}

#[test]
fn page_fault_fails_with_exception_report() {
    // `poweroff` too, so a kernel that ignores test_fault ends quickly (and fails here).
    let run = boot(qemu().smp("1").args("test_fault=pagefault poweroff"));
    run.expect_exit(KernelExit::Failure);
    run.check(!run.report.exceptions.is_empty(), "no `cadence: EXCEPTION` line");
}

#[test]
fn unknown_option_warns_and_boots() {
    let run = boot(qemu().smp("1").args("poweroff no_such_option=1"));
    run.expect_exit(KernelExit::Success);
    run.check(run.report.booted(), "no `cadence: boot ok` line");
    run.check(
        run.report.warnings.iter().any(|w| w.contains("no_such_option")),
        "expected a `cadence: warning:` line naming no_such_option",
    );
}

#[test]
fn malformed_option_value_warns_and_boots() {
    // (A malformed *line*, e.g. an unterminated quote, is ignored as a whole by
    // the kernel, `poweroff` included, so a bad value is used here instead.)
    let run = boot(qemu().smp("1").args("poweroff hz=notanumber"));
    run.expect_exit(KernelExit::Success);
    run.check(run.report.booted(), "no `cadence: boot ok` line");
    run.check(run.report.warnings.iter().any(|w| w.contains("hz")), "expected a `cadence: warning:` line about hz");
}

/// Runs the in-kernel test suite with kernel options `args` through the multi-boot runner, as
/// `cd kernel && cargo test` does (2 CPUs, no runner timeout: the scenario timeout applies per
/// boot), then hands `check` the finished suite, each boot's command line and the runner's own
/// output; panics with all of that and every boot's COM1 output when `check` fails.
fn run_test_kernel(args: &str, check: impl FnOnce(&Suite, &[String], &str) -> Result<(), String>) {
    let elf = test_kernel();
    let mut suite = Suite::new(args, None);
    let mut cmdlines = Vec::new();
    let mut logs = String::new();
    let mut out = Vec::new();
    let result = run_suite(
        &mut suite,
        |cmdline: &str| {
            cmdlines.push(cmdline.to_string());
            let run = boot(qemu_for(elf.clone()).smp("2").args(cmdline));
            logs += &format!("--- boot {} ({cmdline}): {:?}\n{}\n", cmdlines.len(), run.outcome.exit, run.outcome.output);
            Ok((run.outcome.exit, run.outcome.output))
        },
        &mut out,
    );
    let out = String::from_utf8_lossy(&out).into_owned();
    if let Err(e) = result.map_err(|e| e.to_string()).and_then(|()| check(&suite, &cmdlines, &out)) {
        panic!("{e}\n--- runner output:\n{out}{logs}");
    }
}

#[test]
fn test_runner_goes_on_after_a_failing_test() {
    // `testing::tests` selects three quick tests; #1, fail_demo_when_asked, fails on purpose.
    run_test_kernel("test=testing::tests test_fail_demo", |suite, cmdlines, out| {
        let failed: Vec<&str> = suite.failures().iter().map(|f| f.name.as_str()).collect();
        if failed != ["testing::tests::fail_demo_when_asked"] {
            return Err(format!("expected only the demo test to fail, got {failed:?}"));
        }
        if !suite.failures()[0].reason.contains("fails on purpose") {
            return Err("the failure should quote the demo's panic message".into());
        }
        if cmdlines.len() != 2 || !cmdlines[1].ends_with(" test_skip=2") {
            return Err(format!("expected a second boot with test_skip=2, got {cmdlines:?}"));
        }
        let want = "failures:\nfailed: testing::tests::fail_demo_when_asked\n";
        if !out.contains(want) || !out.ends_with("\nkernel: 2 passed, 1 failed\n") {
            return Err(format!("expected `{want}` and a last line `kernel: 2 passed, 1 failed`"));
        }
        Ok(())
    });
}

#[test]
fn test_filter_matching_nothing_is_an_error() {
    run_test_kernel("test=no_such_kernel_test", |suite, cmdlines, out| {
        let error = suite.error().unwrap_or("");
        if cmdlines.len() != 1 || !error.contains("test=no_such_kernel_test matches no kernel test") {
            return Err(format!("expected one boot and the kernel's error, got {error:?}"));
        }
        if suite.success() || out.contains(" passed, ") {
            return Err("a filter matching nothing must fail without a `passed` line".into());
        }
        Ok(())
    });
}
