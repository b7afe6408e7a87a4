//! The short fuzz of `make test` (issue 39): `tools/test-fuzz.sh` (what `make test-fuzz` runs)
//! with two fixed seeds, 20,000 system calls each by 4 processes, one at `-smp 4` SMT and one
//! at `-smp 2` with 5% of the kernel's failure-injection sites failing (`debug.fail_alloc`).
//! Each must end with `panics=0 leaks=0 hung=0 errno_unexpected=0`: the kernel stayed up,
//! every process was reaped, frames and heap came back to their baselines, no hung task, and
//! every errno is one Linux's man page lists for its call. A failure prints the replay command
//! and the log. The long runs are `make test-fuzz CALLS=1000000 SMP=4` (and `SMP=8`).

use cadence_tests::{initramfs, kernel, with_slot};
use std::path::PathBuf;
use std::process::Command;

fn fuzz(seed: u64, calls: u64, smp: &str, fail: u32) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let log = root.join(format!("target/test-fuzz-{seed}.log"));
    let out = with_slot(|| {
        Command::new(root.join("tools/test-fuzz.sh"))
            .args([seed.to_string(), calls.to_string(), smp.to_string(), "4".to_string(), fail.to_string()])
            .env("CADENCE_KERNEL", kernel())
            .env("CADENCE_INITRAMFS", initramfs())
            .env("LOG", &log)
            .output()
            .expect("run tools/test-fuzz.sh")
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    let want = format!("fuzz: seed={seed} calls={calls} procs=4 panics=0 leaks=0 hung=0 errno_unexpected=0");
    assert!(
        out.status.success() && last == want,
        "the fuzz run ended `{last}`, not `{want}`\n--- its lines:\n{stdout}\n--- stderr:\n{}\n--- log: {}",
        String::from_utf8_lossy(&out.stderr),
        log.display()
    );
}

#[test]
fn syscall_fuzz_leaves_no_panic_leak_hang_or_unexpected_errno() {
    fuzz(20261205, 20000, "4,sockets=1,cores=2,threads=2", 0);
}

#[test]
fn syscall_fuzz_with_failing_allocations_leaves_no_panic_leak_hang_or_unexpected_errno() {
    fuzz(39, 20000, "2", 5);
}
