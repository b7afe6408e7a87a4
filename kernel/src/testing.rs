//! The in-kernel test harness (`#![feature(custom_test_frameworks)]`).
//!
//! `cargo test` (in `kernel/`) builds the kernel with every `#[test_case]` function; the runner in
//! `boot/` boots it under QEMU (4 CPUs, 2 cores × 2 threads). After full bring-up, init calls
//! [`configure`] with the command line's test options and then [`run_tests`].
//!
//! # Selection and numbering
//!
//! The selected tests are those whose name contains one of the `test=NAME` filters (all tests
//! without a filter), in the order the compiler hands them over (sorted by name), numbered from
//! 0: the same ELF and the same filters give the same numbers on every boot. `test_skip=N`
//! passes over tests 0 to N−1. A filter that matches no test, or a `test_skip` past the last
//! test, is an error: the harness prints `kernel: error: <why>` and exits QEMU with failure
//! (never a "0 passed" success).
//!
//! # Output (parsed by the host runner, `boot/src/harness.rs`; keep the two in step)
//!
//! ```text
//! running <N> kernel tests[, from #<S> on (test_skip=<S>)]
//! test-start <index> <name>                        before each test, on its own line
//! test <name> ... ok [(<ms> ms)] | (<reason>) skipped | FAILED
//! kernel: <P> passed, 0 failed[, <K> skipped]      then QEMU exits with success
//! ```
//!
//! A failing test panics; the panic handler calls [`report_panic`], which prints the test as
//! `FAILED` and `kernel: <P> passed, 1 failed[, <K> skipped] (<R> not run)` (a panicked kernel
//! cannot unwind, so the rest of this boot's tests do not run), and the boot exits with failure.
//! The counts cover this boot only. The host runner then boots again with `test_skip=<index+1>`
//! and prints the failures and the totals over all boots.
//!
//! `test_fail_demo` makes `testing::tests::fail_demo_when_asked` panic, to show that mechanism.

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
        let bad_enqueues = crate::sched::bad_enqueues();
        self();
        // An invariant no test may break, whatever it tests: `on_rq` as every enqueue expects
        // it (else, e.g., a task was put on a second run queue).
        let bad_enqueues = crate::sched::bad_enqueues() - bad_enqueues;
        assert!(bad_enqueues == 0, "{} enqueues found on_rq wrong during this test", bad_enqueues);
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

static FILTERS: spin::Once<alloc::vec::Vec<alloc::string::String>> = spin::Once::new();
static SKIP_FIRST: AtomicUsize = AtomicUsize::new(0);
static FAIL_DEMO: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Takes the test options from the command line (`test=`, `test_skip=`, `test_stress`,
/// `test_fail_demo`); init calls it once, before [`run_tests`].
pub fn configure(opts: &crate::cmdline::BootOptions) {
    FILTERS.call_once(|| opts.test_filters.clone());
    SKIP_FIRST.store(opts.test_skip, Ordering::SeqCst);
    if opts.test_stress {
        enable_stress();
    }
    FAIL_DEMO.store(opts.test_fail_demo, Ordering::SeqCst);
}

/// Whether `test_fail_demo` was given.
pub fn fail_demo_enabled() -> bool {
    FAIL_DEMO.load(Ordering::SeqCst)
}

/// Ends a run whose options make no sense: `kernel: error: ...`, exit with failure.
fn reject(msg: core::fmt::Arguments) -> ! {
    crate::kprintln!("kernel: error: {}", msg);
    crate::arch::qemu::exit(crate::arch::qemu::ExitCode::Failure)
}

/// The custom test framework's runner: see the module docs for selection and output.
pub fn run_tests(tests: &[&dyn Testable]) {
    let filters = FILTERS.get().map(|f| f.as_slice()).unwrap_or(&[]);
    let matches = |t: &&dyn Testable, f: &alloc::string::String| t.name().contains(f.as_str());
    let selected: alloc::vec::Vec<&&dyn Testable> =
        tests.iter().filter(|t| filters.is_empty() || filters.iter().any(|f| matches(t, f))).collect();
    let skip = SKIP_FIRST.load(Ordering::SeqCst);
    TOTAL.store(selected.len(), Ordering::SeqCst);
    if skip == 0 {
        crate::kprintln!("running {} kernel tests", selected.len());
    } else {
        crate::kprintln!("running {} kernel tests, from #{} on (test_skip={})", selected.len(), skip, skip);
    }
    for f in filters {
        if !tests.iter().any(|t| matches(t, f)) {
            reject(format_args!("test={} matches no kernel test (names look like sched::tests::...)", f));
        }
    }
    if skip >= selected.len() {
        reject(format_args!("test_skip={} skips all {} selected tests", skip, selected.len()));
    }
    for (i, test) in selected.iter().enumerate().skip(skip) {
        RUNNING.store(i + 1, Ordering::SeqCst);
        crate::kprintln!("test-start {} {}", i, test.name());
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

/// Called by the panic handler under `cargo test`: marks the running test `FAILED` and prints
/// this boot's counts (see the module docs).
pub fn report_panic() {
    let running = RUNNING.load(Ordering::SeqCst);
    if running == 0 {
        return; // panicked before the tests started: the panic line says it all
    }
    let passed = PASSED.load(Ordering::SeqCst);
    let skipped = SKIPPED.load(Ordering::SeqCst);
    // `running` is the failing test's index + 1: the tests after it do not run.
    let not_run = TOTAL.load(Ordering::SeqCst).saturating_sub(running);
    crate::console::emergency_print(format_args!("FAILED\n"));
    if skipped > 0 {
        crate::console::emergency_print(format_args!("kernel: {} passed, 1 failed, {} skipped ({} not run)\n", passed, skipped, not_run));
    } else {
        crate::console::emergency_print(format_args!("kernel: {} passed, 1 failed ({} not run)\n", passed, not_run));
    }
}

/// Deterministic pseudo-random numbers (xorshift64) for randomized in-kernel tests: the same
/// seed gives the same run, so a failure can be replayed.
pub struct Rng(pub u64);

impl Rng {
    /// The next value (never 0 for a non-zero seed).
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One of `xs`, uniformly (xs must not be empty).
    pub fn pick<'a, T: ?Sized>(&mut self, xs: &[&'a T]) -> &'a T {
        xs[(self.next_u64() % xs.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    //! The harness's own tests, quick on purpose: `test=testing::tests` selects these three
    //! (numbered in name order, as every selection: 0 `deterministic_rng_...`,
    //! 1 `fail_demo_when_asked`, 2 `rng_pick_...`), and with `test_fail_demo` the middle one
    //! fails: the runner's demo (see the module docs and `tests/tests/boot.rs`).
    use super::Rng;

    #[test_case]
    fn deterministic_rng_replays_its_seed() {
        let (mut a, mut b) = (Rng(42), Rng(42));
        for _ in 0..100 {
            let x = a.next_u64();
            assert_eq!(x, b.next_u64());
            assert_ne!(x, 0);
        }
    }

    /// Passes, unless the kernel option `test_fail_demo` is set: then it panics, so a test run
    /// shows the runner reporting it and going on with the next test in a new boot.
    #[test_case]
    fn fail_demo_when_asked() {
        if super::fail_demo_enabled() {
            panic!("test_fail_demo: this test fails on purpose (kernel option test_fail_demo)");
        }
    }

    #[test_case]
    fn rng_pick_reaches_every_item() {
        let items = ["a", "b", "c"];
        let mut rng = Rng(7);
        let mut seen = [false; 3];
        for _ in 0..200 {
            let got = rng.pick(&items);
            let i = items.iter().position(|x| *x == got).expect("pick returned a foreign item");
            seen[i] = true;
        }
        assert_eq!(seen, [true; 3]);
    }
}
