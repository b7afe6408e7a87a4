//! Helpers for Cadence's whole-system scenario tests (`tests/tests/*.rs`).
//!
//! * The kernel under test is `$CADENCE_KERNEL`, or else the release build
//!   `kernel/target/x86_64-unknown-none/release/cadence-kernel` of this repo;
//!   a missing kernel fails the test with a hint to run `make kernel`.
//! * At most `$CADENCE_TEST_QEMUS` (default 2) QEMUs run at once in one test
//!   binary, whatever `--test-threads` is: TCG is CPU-bound and the machine
//!   small. Each run has a timeout (`$CADENCE_SCENARIO_TIMEOUT` seconds,
//!   default 300).
//! * The in-kernel *test* kernel (for scenarios of the test runner, see
//!   [`test_kernel`]) is `$CADENCE_TEST_KERNEL`, or else built (or found up to
//!   date) by `cargo test --no-run` in `kernel/`, as `make test-repeat` does.
//! * The user-program scenarios boot with [`initramfs`] (`make initramfs` builds it).
//! * `CADENCE_TEST_ECHO=1` copies each run's COM1 output live to stderr.
//! * [`Run::fail`] panics with the QEMU command's outcome and full COM1
//!   output, so a failing assertion shows what the kernel said.
//! * A soft-lockup, hard-lockup or hung-task report in a run's output fails the
//!   scenario that booted it ([`boot`]; [`boot_allowing_lockups`] for one that
//!   provokes them on purpose): no user program may lock a CPU up or starve a task.
#![forbid(unsafe_code)]

use cadence_boot::{BootReport, KernelExit, Outcome, Qemu};
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub use cadence_boot;

/// Path of the kernel ELF under test (panics with a hint when it is missing).
pub fn kernel() -> PathBuf {
    let path = match std::env::var_os("CADENCE_KERNEL") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernel/target/x86_64-unknown-none/release/cadence-kernel"),
    };
    if !path.is_file() {
        panic!("kernel ELF {} not found: run `make kernel` first (or set CADENCE_KERNEL=<elf>)", path.display());
    }
    path
}

/// Path of the in-kernel test kernel (`cd kernel && cargo test` builds it): `$CADENCE_TEST_KERNEL`,
/// or else the executable `cargo test --no-run` in `kernel/` reports (building it if needed,
/// once per test binary). Panics with cargo's output when that fails.
pub fn test_kernel() -> PathBuf {
    static ELF: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let found = ELF.get_or_init(|| {
        if let Some(p) = std::env::var_os("CADENCE_TEST_KERNEL") {
            let p = PathBuf::from(p);
            return if p.is_file() { Ok(p) } else { Err(format!("CADENCE_TEST_KERNEL={} is not a file", p.display())) };
        }
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernel");
        // As in boot/runner.sh: the kernel has its own workspace and target; none of the
        // outer cargo's target settings may leak in.
        let out = std::process::Command::new("cargo")
            .args(["test", "--no-run"])
            .current_dir(&dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .output()
            .map_err(|e| format!("cannot run cargo in {}: {e}", dir.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("building the test kernel failed:\n{stderr}"));
        }
        // `  Executable unittests src/main.rs (target/.../deps/cadence_kernel-<hash>)`
        let exe = stderr
            .lines()
            .filter(|l| l.trim_start().starts_with("Executable "))
            .filter_map(|l| l.trim_end().strip_suffix(')')?.rsplit_once('(').map(|(_, p)| p))
            .next_back()
            .ok_or_else(|| format!("no `Executable` line in cargo's output:\n{stderr}"))?;
        Ok(dir.join(exe))
    });
    match found {
        Ok(p) => p.clone(),
        Err(e) => panic!("{e}"),
    }
}

/// The initramfs of the user-program scenarios (`make initramfs`): `$CADENCE_INITRAMFS`, or
/// else `target/user/initramfs.cpio` of this repo; missing, the test fails with the hint.
pub fn initramfs() -> PathBuf {
    let path = match std::env::var_os("CADENCE_INITRAMFS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/user/initramfs.cpio"),
    };
    if !path.is_file() {
        panic!("initramfs {} not found: run `make initramfs` first (or set CADENCE_INITRAMFS=<cpio>)", path.display());
    }
    path
}

/// A QEMU builder for the kernel under test with the scenario timeout set.
pub fn qemu() -> Qemu {
    qemu_for(kernel())
}

/// [`qemu`] for another kernel ELF (e.g. [`test_kernel`]).
pub fn qemu_for(elf: PathBuf) -> Qemu {
    let secs = std::env::var("CADENCE_SCENARIO_TIMEOUT").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let echo = std::env::var_os("CADENCE_TEST_ECHO").is_some_and(|v| v == "1");
    Qemu::new(elf).timeout(Duration::from_secs(secs)).echo(echo)
}

/// Counting semaphore bounding concurrent QEMUs.
struct Slots {
    free: Mutex<usize>,
    cv: Condvar,
}

static SLOTS: Slots = Slots { free: Mutex::new(usize::MAX), cv: Condvar::new() };

struct SlotGuard;

impl SlotGuard {
    fn acquire() -> SlotGuard {
        let mut free = SLOTS.free.lock().unwrap_or_else(|e| e.into_inner());
        if *free == usize::MAX {
            *free = std::env::var("CADENCE_TEST_QEMUS").ok().and_then(|v| v.parse().ok()).filter(|&n: &usize| n > 0).unwrap_or(2);
        }
        while *free == 0 {
            free = SLOTS.cv.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        SlotGuard
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        *SLOTS.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        SLOTS.cv.notify_one();
    }
}

/// One finished scenario: the raw outcome and its parsed boot report.
pub struct Run {
    pub outcome: Outcome,
    pub report: BootReport,
}

impl Run {
    /// Panics with `msg` followed by the exit and the complete COM1 output.
    pub fn fail(&self, msg: impl std::fmt::Display) -> ! {
        panic!(
            "{msg}\n--- exit: {:?} after {:.1} s\n--- COM1 output:\n{}\n--- QEMU stderr:\n{}",
            self.outcome.exit,
            self.outcome.elapsed.as_secs_f64(),
            self.outcome.output,
            self.outcome.stderr
        )
    }

    /// Fails unless `cond` holds.
    pub fn check(&self, cond: bool, msg: impl std::fmt::Display) {
        if !cond {
            self.fail(msg)
        }
    }

    /// The COM1 output's lines, without their carriage returns.
    pub fn lines(&self) -> Vec<String> {
        self.outcome.output.lines().map(|l| l.trim_end_matches('\r').to_string()).collect()
    }

    /// Fails unless the kernel exited the given way.
    pub fn expect_exit(&self, want: KernelExit) {
        self.check(self.outcome.exit == want, format!("expected kernel exit {want:?}"));
    }
}

/// Runs `f` (which boots QEMU its own way) in a free QEMU slot.
pub fn with_slot<T>(f: impl FnOnce() -> T) -> T {
    let _slot = SlotGuard::acquire();
    f()
}

/// Boots `q` (waiting for a free QEMU slot) and parses the output; fails if the kernel
/// reported a lockup or a hung task ([`lockup_reports`]).
pub fn boot(q: Qemu) -> Run {
    let run = boot_allowing_lockups(q);
    let reports = lockup_reports(&run.outcome.output);
    if !reports.is_empty() {
        run.fail(format!("the kernel reported a lockup or a hung task:\n{}", reports.join("\n")));
    }
    run
}

/// [`boot`] without the lockup check, for a scenario that provokes a report on purpose.
pub fn boot_allowing_lockups(q: Qemu) -> Run {
    let _slot = SlotGuard::acquire();
    match q.run_capture() {
        Ok(outcome) => Run { report: BootReport::parse(&outcome.output), outcome },
        Err(e) => panic!("could not run QEMU: {e}"),
    }
}

/// The lines of `output` in which the kernel's detectors report a soft lockup, a hard lockup
/// or a hung task (Linux's report lines: `watchdog: BUG: soft lockup - CPU#..`, `watchdog:
/// Watchdog detected hard LOCKUP on cpu ..`, `INFO: task ..:.. blocked for more than ..`).
pub fn lockup_reports(output: &str) -> Vec<&str> {
    output
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| {
            l.contains("watchdog: BUG: soft lockup")
                || l.contains("Watchdog detected hard LOCKUP")
                || (l.contains("INFO: task ") && l.contains(" blocked for more than "))
        })
        .collect()
}
