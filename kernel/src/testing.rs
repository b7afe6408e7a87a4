//! The in-kernel test harness (`#![feature(custom_test_frameworks)]`).
//!
//! `cargo test` (in `kernel/`) builds the kernel with every `#[test_case]` function; the runner in
//! `boot/` boots it under QEMU (4 CPUs, 2 cores × 2 threads). After full bring-up, `kernel_main`
//! calls [`run_tests`], which prints `test <name> ... ok` per test and closes with
//! `kernel: N passed, M failed`, then exits QEMU with success only if M is 0.
//!
//! A failing test panics; the panic handler calls [`report_panic`], which prints the test as
//! `FAILED` and the closing line (the remaining tests are counted as not run: a panicked kernel
//! cannot unwind), and the run exits with failure.

use core::sync::atomic::{AtomicUsize, Ordering};

static TOTAL: AtomicUsize = AtomicUsize::new(0);
static SKIPPED: AtomicUsize = AtomicUsize::new(0);
static SKIP_CURRENT: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
static STRESS: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Long stress tests run only with the `test_stress` kernel option (`make test-stress`).
pub fn stress_enabled() -> bool {
    STRESS.load(Ordering::SeqCst)
}

pub fn enable_stress() {
    STRESS.store(true, Ordering::SeqCst);
}

static LAST_SKIPPED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

fn last_was_skip() -> bool {
    LAST_SKIPPED.swap(false, Ordering::SeqCst)
}

/// Marks the running test as skipped (it must return right after).
pub fn skip(reason: &str) {
    crate::kprint!("({}) ", reason);
    SKIP_CURRENT.store(true, Ordering::SeqCst);
}
static PASSED: AtomicUsize = AtomicUsize::new(0);
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Something the harness can run and name.
pub trait Testable {
    fn name(&self) -> &'static str;
    fn run(&self);
}

impl<T: Fn()> Testable for T {
    fn name(&self) -> &'static str {
        let name = core::any::type_name::<T>();
        name.strip_prefix("cadence_kernel::").unwrap_or(name)
    }

    fn run(&self) {
        crate::kprint!("test {} ... ", self.name());
        let start = crate::time::uptime_ns();
        self();
        let ms = (crate::time::uptime_ns() - start) / 1_000_000;
        if SKIP_CURRENT.swap(false, Ordering::SeqCst) {
            LAST_SKIPPED.store(true, Ordering::SeqCst);
            crate::kprintln!("skipped");
        } else if ms >= 1000 {
            crate::kprintln!("ok ({} ms)", ms);
        } else {
            crate::kprintln!("ok");
        }
    }
}

static FILTER: spin::Once<alloc::string::String> = spin::Once::new();

/// Restricts the run to tests whose name contains `filter` (the `test=` option).
pub fn set_filter(filter: &str) {
    FILTER.call_once(|| filter.into());
}

pub fn run_tests(tests: &[&dyn Testable]) {
    let selected: alloc::vec::Vec<&&dyn Testable> =
        tests.iter().filter(|t| FILTER.get().is_none_or(|f| t.name().contains(f.as_str()))).collect();
    TOTAL.store(selected.len(), Ordering::SeqCst);
    crate::kprintln!("running {} kernel tests", selected.len());
    for (i, test) in selected.iter().enumerate() {
        RUNNING.store(i + 1, Ordering::SeqCst);
        let skipped_before = SKIPPED.load(Ordering::SeqCst);
        let was_skip = {
            test.run();
            last_was_skip()
        };
        if was_skip {
            SKIPPED.store(skipped_before + 1, Ordering::SeqCst);
        } else {
            PASSED.fetch_add(1, Ordering::SeqCst);
        }
    }
    let skipped = SKIPPED.load(Ordering::SeqCst);
    if skipped > 0 {
        crate::kprintln!("kernel: {} passed, 0 failed, {} skipped", PASSED.load(Ordering::SeqCst), skipped);
    } else {
        crate::kprintln!("kernel: {} passed, 0 failed", PASSED.load(Ordering::SeqCst));
    }
    crate::arch::qemu::exit(crate::arch::qemu::ExitCode::Success);
}

/// Called by the panic handler under `cargo test`.
pub fn report_panic() {
    if RUNNING.load(Ordering::SeqCst) == 0 {
        return; // panicked before the tests started: the panic line says it all
    }
    let passed = PASSED.load(Ordering::SeqCst);
    let not_run = TOTAL.load(Ordering::SeqCst).saturating_sub(passed + 1);
    crate::console::emergency_print(format_args!("FAILED\n"));
    crate::console::emergency_print(format_args!("kernel: {} passed, 1 failed ({} not run)\n", passed, not_run));
}

/// Deterministic pseudo-random numbers (xorshift64) for randomized in-kernel tests: the same
/// seed gives the same run, so a failure can be replayed.
pub struct Rng(pub u64);

impl Rng {
    /// The next value (never 0 for a non-zero seed).
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One of `xs`, uniformly (xs must not be empty).
    pub fn pick<'a, T: ?Sized>(&mut self, xs: &[&'a T]) -> &'a T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}
