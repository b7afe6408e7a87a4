//! The in-kernel test runner behind `cadence-boot runner` (the cargo runner of `cd kernel &&
//! cargo test`): boots the test kernel as often as needed so that one failing test does not hide
//! the ones after it, and reports every failure.
//!
//! # Contract with the kernel's harness (`kernel/src/testing.rs`)
//!
//! The harness numbers the tests the `test=` filters select, 0.., in a fixed order (the same ELF
//! and the same filters give the same numbering on every boot), and prints on COM1:
//!
//! ```text
//! running <N> kernel tests[, from #<S> on (test_skip=<S>)]
//! test-start <index> <name>            before each test (own line)
//! test <name> ... ok|skipped|FAILED    the human line (`skipped` is read from it)
//! kernel: <P> passed, 0 failed[, <K> skipped]         all tests of this boot returned
//! kernel: <P> passed, 1 failed[, <K> skipped] (<R> not run)   a test panicked
//! kernel: error: <message>             bad test options (a filter matching no test, ...)
//! ```
//!
//! and takes `test_skip=<S>` (the last one on the line wins): run only the tests numbered S and
//! later. A line is recognised wherever its marker (`test-start `, `kernel: `, `running `)
//! starts in it, so noise before it (another CPU's half line) does not hide it; `\r` is ignored.
//!
//! # The runner's loop ([`Suite`])
//!
//! Boot 1 uses the command line as given. A boot *fails* when the kernel does not both print
//! its all-returned closing line and exit with success: a panic (`FAILED`), a failure exit
//! (e.g. an exception), QEMU exiting without an exit code (triple fault), a QEMU error, or the
//! per-boot timeout. The failed test is the last `test-start` of that boot (a hang or a timeout
//! counts against the test that was running); the tests started before it in that boot passed
//! (or skipped themselves). If tests remain, the next boot gets the same command line plus
//! `test_skip=<failed index + 1>`. Every boot must start exactly at the index asked for, so the
//! index grows with every boot and there are at most as many boots as tests (also enforced).
//!
//! A failure outside any test (the kernel dies before its first test, or after its closing
//! line) is listed as `<boot B: ...>` instead of a test name, and ends the run: the remaining
//! tests are counted as not run. A `kernel: error:` line (e.g. `test=NAME` matching no test)
//! is not a test failure but an error of the whole run ([`Suite::error`]); then there is no
//! closing `kernel: N passed, M failed` line at all, so nothing can mistake it for a pass.
//!
//! # The summary ([`Suite::summary`])
//!
//! ```text
//! runner: <B> boot(s), <T> tests[, test_skip used after failures]
//! failures:                             only if M > 0
//! failed: <name>                        one per failure, in test order
//!     boot <b>: <why>                   the panic/exception line, timeout, ...
//! kernel: <N> passed, <M> failed[, <K> skipped][, <R> not run]
//! ```
//!
//! The last line is the combined result over all boots and the last `passed, ... failed` line
//! of the whole output (CI reads it). The run succeeds iff M is 0 and there was no error.

use crate::KernelExit;
use std::fmt::Write as _;
use std::time::Duration;

/// What one boot printed that matters to the runner (see the module docs for the lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootLog {
    /// `running <N> kernel tests`: how many tests the filters select (including the ones
    /// `test_skip` passes over).
    pub selected: Option<usize>,
    /// `test-start <index> <name>` lines, in output order.
    pub started: Vec<(usize, String)>,
    /// Names whose human line ends in `skipped`.
    pub skipped: Vec<String>,
    /// The all-returned closing line (`kernel: <P> passed, 0 failed...`) appeared.
    pub completed: bool,
    /// Text after `kernel: error: `.
    pub errors: Vec<String>,
    /// The first `cadence: PANIC` (with the message line after it) or `cadence: EXCEPTION`
    /// line: why the boot died.
    pub crash: Option<String>,
}

/// Parses one boot's COM1 output. Never fails: unrecognised lines are ignored.
pub fn parse_boot(output: &str) -> BootLog {
    let mut log = BootLog::default();
    let lines: Vec<&str> = output.lines().map(|l| l.trim_end_matches('\r')).collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = after(line, "test-start ") {
            let mut words = rest.split_whitespace();
            if let (Some(Ok(index)), Some(name)) = (words.next().map(str::parse::<usize>), words.next()) {
                log.started.push((index, name.to_string()));
            }
        } else if let Some(rest) = after(line, "kernel: ") {
            if let Some(msg) = rest.strip_prefix("error: ") {
                log.errors.push(msg.trim().to_string());
            } else if let Some((passed, tail)) = rest.split_once(" passed, ") {
                if passed.trim().parse::<usize>().is_ok() && tail.starts_with("0 failed") {
                    log.completed = true;
                }
            }
        } else if let Some(rest) = after(line, "running ") {
            if let Some((n, _)) = rest.split_once(" kernel tests") {
                if let Ok(n) = n.trim().parse::<usize>() {
                    log.selected = Some(n);
                }
            }
        } else if log.crash.is_none() {
            if let Some(at) = line.find("cadence: PANIC") {
                let mut crash = line[at..].trim_end().to_string();
                // Rust's panic text is `panicked at FILE:LINE:COL:` then the message line.
                if crash.ends_with(':') {
                    if let Some(next) = lines.get(i + 1).filter(|l| !l.trim().is_empty()) {
                        crash.push(' ');
                        crash.push_str(next.trim());
                    }
                }
                log.crash = Some(crash);
            } else if let Some(at) = line.find("cadence: EXCEPTION") {
                log.crash = Some(line[at..].trim_end().to_string());
            }
        }
        if let Some(name) = skipped_name(line) {
            log.skipped.push(name.to_string());
        }
    }
    log
}

/// The text after the first `marker` in `line`, if any.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

/// `test <name> ... [anything] skipped` → name.
fn skipped_name(line: &str) -> Option<&str> {
    let rest = after(line, "test ")?;
    let (name, result) = rest.split_once(" ... ")?;
    (result.trim_end().ends_with("skipped") && !name.contains(' ')).then_some(name)
}

/// One failure in the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The test's name, or `<boot B: ...>` for a failure outside any test.
    pub name: String,
    /// The boot (1-based) it happened in.
    pub boot: usize,
    /// Why: the panic or exception line, the timeout, the exit.
    pub reason: String,
}

/// The state of a multi-boot run; see the module docs. Feed it with [`Suite::record`] while
/// [`Suite::next_cmdline`] says there is another boot to do.
#[derive(Debug, Clone)]
pub struct Suite {
    args: String,
    timeout: Option<Duration>,
    /// Tests selected (from the first boot's `running` line).
    total: Option<usize>,
    /// Index the next boot must start at (`None` before the first boot: whatever the user's
    /// own `test_skip`, if any, says).
    next: Option<usize>,
    boots: usize,
    passed: usize,
    skipped: usize,
    not_run: usize,
    failures: Vec<Failure>,
    error: Option<String>,
    done: bool,
}

impl Suite {
    /// A run of the test kernel with command line `args`; `timeout` is the per-boot limit (only
    /// used in messages).
    pub fn new(args: &str, timeout: Option<Duration>) -> Suite {
        Suite {
            args: args.trim().to_string(),
            timeout,
            total: None,
            next: None,
            boots: 0,
            passed: 0,
            skipped: 0,
            not_run: 0,
            failures: Vec::new(),
            error: None,
            done: false,
        }
    }

    /// The command line of the next boot, or `None` when the run is over.
    pub fn next_cmdline(&self) -> Option<String> {
        if self.done {
            return None;
        }
        Some(match self.next {
            None => self.args.clone(),
            Some(skip) if self.args.is_empty() => format!("test_skip={skip}"),
            Some(skip) => format!("{} test_skip={skip}", self.args),
        })
    }

    /// Tests passed over all boots.
    pub fn passed(&self) -> usize {
        self.passed
    }

    /// The failures, in test order.
    pub fn failures(&self) -> &[Failure] {
        &self.failures
    }

    /// Tests that skipped themselves.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Tests never reached (a boot died outside any test).
    pub fn not_run(&self) -> usize {
        self.not_run
    }

    /// Boots so far.
    pub fn boots(&self) -> usize {
        self.boots
    }

    /// An error of the whole run (the kernel rejected the test options), if any.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// True when every test that ran passed (or skipped itself) and nothing went wrong.
    pub fn success(&self) -> bool {
        self.done && self.error.is_none() && self.failures.is_empty() && self.not_run == 0
    }

    /// Accounts for one boot that ended with `exit` after printing `output`. Returns a line to
    /// show after the boot's output (why the next boot happens), if any.
    pub fn record(&mut self, exit: KernelExit, output: &str) -> Option<String> {
        if self.done {
            return None;
        }
        self.boots += 1;
        let boot = self.boots;
        let log = parse_boot(output);
        if let Some(n) = log.selected {
            match self.total {
                None => self.total = Some(n),
                Some(t) if t != n => return self.stop_outside(boot, format!("the kernel selected {n} tests, {t} in boot 1")),
                Some(_) => {}
            }
        }
        if !log.errors.is_empty() {
            let msg = format!("the kernel rejected the test options '{}': {}", self.args, log.errors.join("; "));
            self.abort(msg);
            return None;
        }
        if self.total == Some(0) {
            self.abort("the kernel selected no tests (and did not say why)".into());
            return None;
        }
        // Every boot starts where it was asked to, and indices count up by one.
        let mut expect = self.next;
        for (index, name) in &log.started {
            if expect.is_some_and(|e| e != *index) {
                let want = expect.unwrap_or(0);
                return self.stop_outside(
                    boot,
                    format!(
                        "test #{index} {name} started where #{want} was expected \
                         (does the kernel take test_skip=?)"
                    ),
                );
            }
            expect = Some(index + 1);
        }
        if let (Some(total), Some(end)) = (self.total, expect) {
            if end > total {
                return self.stop_outside(boot, format!("test #{} is past the {total} selected tests", end - 1));
            }
        }
        let skipped_here = |name: &str| log.skipped.iter().any(|s| s == name);
        let count_returned = |s: &mut Suite, tests: &[(usize, String)]| {
            for (_, name) in tests {
                if skipped_here(name) {
                    s.skipped += 1;
                } else {
                    s.passed += 1;
                }
            }
        };

        if log.completed && exit == KernelExit::Success {
            count_returned(self, &log.started);
            self.done = true;
            // A kernel that says it is done before the end leaves tests unaccounted for.
            if let (Some(total), Some(end)) = (self.total, expect) {
                if end < total {
                    self.not_run += total - end;
                }
            }
            return None;
        }
        let why = self.exit_reason(exit, &log);
        match log.started.split_last() {
            Some(((index, name), before)) if !log.completed => {
                count_returned(self, before);
                self.failures.push(Failure { name: name.clone(), boot, reason: why });
                let next = index + 1;
                self.next = Some(next);
                match self.total {
                    // Each boot starts past the previous one's first test, so at most `total`
                    // boots happen; the explicit bound only guards against a confused kernel.
                    Some(total) if next < total && self.boots < total => Some(format!(
                        "runner: test #{index} {name} failed in boot {boot}; booting again from \
                         test #{next} (test_skip={next})"
                    )),
                    Some(total) if next < total => self.stop_outside(boot, format!("{boot} boots for {total} tests: giving up")),
                    _ => {
                        self.done = true;
                        None
                    }
                }
            }
            _ => {
                // Nothing started, or everything returned: not any test's failure.
                count_returned(self, &log.started);
                let at = if log.completed {
                    "after its last test".to_string()
                } else {
                    match expect {
                        Some(e) => format!("before test #{e}"),
                        None => "before its first test".to_string(),
                    }
                };
                self.next = expect.or(self.next);
                self.stop_outside(boot, format!("failed {at}: {why}"))
            }
        }
    }

    /// Ends the run with an error of the whole run (see [`Suite::error`]).
    pub fn abort(&mut self, error: String) {
        self.error = Some(error);
        self.done = true;
    }

    /// Records a failure outside any test (listed as `<boot B>`) and ends the run; the tests
    /// from `self.next` on were not reached.
    fn stop_outside(&mut self, boot: usize, reason: String) -> Option<String> {
        self.failures.push(Failure { name: format!("<boot {boot}>"), boot, reason });
        if let Some(total) = self.total {
            self.not_run = total.saturating_sub(self.next.unwrap_or(0));
        }
        self.done = true;
        None
    }

    /// Describes how a failed boot ended.
    fn exit_reason(&self, exit: KernelExit, log: &BootLog) -> String {
        let crash = log.crash.clone();
        match exit {
            KernelExit::Timeout => {
                let secs = self.timeout.map_or(0.0, |t| t.as_secs_f64());
                match crash {
                    Some(c) => format!("timeout after {secs} s (after {c})"),
                    None => format!("timeout after {secs} s"),
                }
            }
            KernelExit::Failure => crash.unwrap_or_else(|| "kernel reported failure".into()),
            KernelExit::NoExit => {
                let base = "QEMU exited without a kernel exit code (triple fault, reset or quit)";
                match crash {
                    Some(c) => format!("{base} after {c}"),
                    None => base.into(),
                }
            }
            KernelExit::Success => "kernel exited with success before its tests returned".into(),
            KernelExit::Other(code) => format!("QEMU exited with status {code}"),
        }
    }

    /// The closing block (see the module docs); empty lines never appear. With an error, the
    /// block ends with `runner: error: ...` and has no `kernel: N passed` line.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let total = self.total.map_or_else(|| "? ".into(), |t| format!("{t} "));
        let _ = write!(s, "runner: {} boot{}, {}tests", self.boots, if self.boots == 1 { "" } else { "s" }, total);
        if self.boots > 1 {
            s.push_str(", test_skip used after failures");
        }
        s.push('\n');
        if !self.failures.is_empty() {
            s.push_str("failures:\n");
            for f in &self.failures {
                let _ = writeln!(s, "failed: {}", f.name);
                let _ = writeln!(s, "    boot {}: {}", f.boot, f.reason);
            }
        }
        if let Some(e) = &self.error {
            let _ = writeln!(s, "runner: error: {e}");
            return s;
        }
        let _ = write!(s, "kernel: {} passed, {} failed", self.passed, self.failures.len());
        if self.skipped > 0 {
            let _ = write!(s, ", {} skipped", self.skipped);
        }
        if self.not_run > 0 {
            let _ = write!(s, ", {} not run", self.not_run);
        }
        s.push('\n');
        s
    }
}

/// Runs the whole suite: boots with `boot(cmdline)` (which returns how the boot ended and its
/// COM1 output, and is expected to have shown that output already) until [`Suite`] is done,
/// writing the runner's own lines and the summary to `out`. `Err` when a boot could not be
/// started at all (QEMU missing, ...): the suite is then ended with that as its error (so the
/// summary, still written, has no result line).
pub fn run_suite<B, W>(suite: &mut Suite, mut boot: B, out: &mut W) -> crate::Result<()>
where
    B: FnMut(&str) -> crate::Result<(KernelExit, String)>,
    W: std::io::Write,
{
    while let Some(cmdline) = suite.next_cmdline() {
        let (exit, output) = match boot(&cmdline) {
            Ok(r) => r,
            Err(e) => {
                suite.abort(format!("could not boot the test kernel: {e}"));
                let _ = out.write_all(suite.summary().as_bytes());
                let _ = out.flush();
                return Err(e);
            }
        };
        if let Some(note) = suite.record(exit, &output) {
            let _ = writeln!(out, "{note}");
            let _ = out.flush();
        }
    }
    let _ = out.write_all(suite.summary().as_bytes());
    let _ = out.flush();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output of a boot that runs tests `from..` of `names`, the one at `fail` (if any) panicking.
    fn boot_output(names: &[&str], from: usize, fail: Option<usize>) -> String {
        let mut s = String::from("BIOS noise\r\ncadence: boot ok in 12 ms\r\n");
        if from == 0 {
            s += &format!("running {} kernel tests\r\n", names.len());
        } else {
            s += &format!("running {} kernel tests, from #{from} on (test_skip={from})\r\n", names.len());
        }
        let mut passed = 0;
        for (i, name) in names.iter().enumerate().skip(from) {
            s += &format!("test-start {i} {name}\r\ntest {name} ... ");
            if fail == Some(i) {
                s += "FAILED\r\n";
                s += &format!("kernel: {passed} passed, 1 failed ({} not run)\r\n", names.len() - i - 1);
                s += "cadence: PANIC on cpu 2: panicked at src/x.rs:1:2:\r\nboom\r\n";
                return s;
            }
            s += "ok\r\n";
            passed += 1;
        }
        s += &format!("kernel: {passed} passed, 0 failed\r\n");
        s
    }

    /// Runs a suite against a fake kernel; `fail_at` lists failing indices with how the boot
    /// ends. Returns the suite, the command lines used and everything written to `out`.
    fn simulate(
        names: &[&str],
        args: &str,
        mut end: impl FnMut(&str, usize) -> Option<(KernelExit, Option<usize>)>,
    ) -> (Suite, Vec<String>, String) {
        let mut suite = Suite::new(args, Some(Duration::from_secs(300)));
        let mut cmdlines = Vec::new();
        let mut out = Vec::new();
        let result = run_suite(
            &mut suite,
            |cmdline: &str| {
                cmdlines.push(cmdline.to_string());
                let from =
                    cmdline.split_whitespace().filter_map(|w| w.strip_prefix("test_skip=")).next_back().map_or(0, |v| v.parse().unwrap());
                Ok(match end(cmdline, from) {
                    None => (KernelExit::Success, boot_output(names, from, None)),
                    Some((exit, fail)) => {
                        let mut o = boot_output(names, from, fail);
                        if fail.is_none() {
                            // Dies at the first test without a closing line.
                            o = o.split("ok\r\n").next().unwrap().to_string();
                        }
                        (exit, o)
                    }
                })
            },
            &mut out,
        );
        assert!(result.is_ok());
        (suite, cmdlines, String::from_utf8(out).unwrap())
    }

    const NAMES: [&str; 5] = ["a::one", "a::two", "b::three", "b::four", "c::five"];

    #[test]
    fn all_pass_in_one_boot() {
        let (suite, cmdlines, out) = simulate(&NAMES, "test=x", |_, _| None);
        assert_eq!(cmdlines, ["test=x"]);
        assert!(suite.success());
        assert_eq!(out, "runner: 1 boot, 5 tests\nkernel: 5 passed, 0 failed\n");
    }

    #[test]
    fn continues_after_each_failure() {
        let (suite, cmdlines, out) = simulate(&NAMES, " test=x ", |_, from| match from {
            0 => Some((KernelExit::Failure, Some(1))),
            2 => Some((KernelExit::Failure, Some(3))),
            _ => None,
        });
        assert_eq!(cmdlines, ["test=x", "test=x test_skip=2", "test=x test_skip=4"]);
        assert!(!suite.success());
        let names: Vec<&str> = suite.failures().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a::two", "b::four"]);
        assert_eq!(suite.failures()[0].reason, "cadence: PANIC on cpu 2: panicked at src/x.rs:1:2: boom");
        assert!(out.contains("runner: test #1 a::two failed in boot 1; booting again from test #2 (test_skip=2)\n"));
        assert!(out.ends_with(
            "runner: 3 boots, 5 tests, test_skip used after failures\nfailures:\nfailed: a::two\n    \
             boot 1: cadence: PANIC on cpu 2: panicked at src/x.rs:1:2: boom\nfailed: b::four\n    \
             boot 2: cadence: PANIC on cpu 2: panicked at src/x.rs:1:2: boom\n\
             kernel: 3 passed, 2 failed\n"
        ));
    }

    #[test]
    fn last_test_failing_needs_no_reboot() {
        let (suite, cmdlines, out) = simulate(&NAMES, "", |_, _| Some((KernelExit::Failure, Some(4))));
        assert_eq!(cmdlines, [""]);
        assert_eq!(suite.passed(), 4);
        assert!(out.ends_with("kernel: 4 passed, 1 failed\n"));
    }

    #[test]
    fn every_test_failing_takes_one_boot_each() {
        let (suite, cmdlines, out) = simulate(&NAMES, "", |_, from| Some((KernelExit::Failure, Some(from))));
        assert_eq!(cmdlines.len(), NAMES.len());
        assert_eq!(cmdlines[1], "test_skip=1");
        assert_eq!(suite.failures().len(), 5);
        assert!(out.ends_with("kernel: 0 passed, 5 failed\n"));
    }

    #[test]
    fn timeout_and_triple_fault_blame_the_running_test() {
        let (suite, _, out) = simulate(&NAMES, "", |_, from| match from {
            0 => Some((KernelExit::Timeout, None)),
            1 => Some((KernelExit::NoExit, None)),
            _ => None,
        });
        let f = suite.failures();
        assert_eq!((f[0].name.as_str(), f[0].reason.as_str()), ("a::one", "timeout after 300 s"));
        assert_eq!(f[1].name, "a::two");
        assert!(f[1].reason.contains("triple fault"));
        assert!(out.ends_with("kernel: 3 passed, 2 failed\n"));
    }

    #[test]
    fn exception_line_is_the_reason() {
        let out = "running 2 kernel tests\ntest-start 0 a\ntest a ... \
                   cadence: EXCEPTION page fault vector=14 error=0x0 rip=0x1 cr2=0x2 cpu=1\n";
        let mut suite = Suite::new("", None);
        let note = suite.record(KernelExit::Failure, out);
        assert!(note.is_some_and(|n| n.contains("test_skip=1")));
        assert!(suite.failures()[0].reason.starts_with("cadence: EXCEPTION page fault"));
    }

    #[test]
    fn boot_dying_before_the_first_test_is_not_a_test_failure() {
        let mut suite = Suite::new("test=a", None);
        suite.record(KernelExit::Failure, &boot_output(&NAMES, 0, Some(1)));
        assert_eq!(suite.next_cmdline().as_deref(), Some("test=a test_skip=2"));
        suite.record(KernelExit::Timeout, "running 5 kernel tests, from #2 on\n");
        assert_eq!(suite.next_cmdline(), None);
        assert_eq!(suite.failures()[1].name, "<boot 2>");
        assert_eq!(suite.failures()[1].reason, "failed before test #2: timeout after 0 s");
        assert_eq!(suite.not_run(), 3);
        assert!(suite.summary().ends_with("kernel: 1 passed, 2 failed, 3 not run\n"));

        let mut early = Suite::new("", None);
        early.record(KernelExit::Failure, "cadence: PANIC on cpu 0: panicked at a.rs:1:1:\nno heap\n");
        assert_eq!(early.failures()[0].reason, "failed before its first test: cadence: PANIC on cpu 0: panicked at a.rs:1:1: no heap");
        assert!(early.summary().ends_with(
            "failed: <boot 1>\n    boot 1: failed before its first test: \
             cadence: PANIC on cpu 0: panicked at a.rs:1:1: no heap\nkernel: 0 passed, 1 failed\n"
        ));
    }

    #[test]
    fn failure_after_the_closing_line_counts() {
        let mut suite = Suite::new("", None);
        suite.record(KernelExit::NoExit, &boot_output(&NAMES[..2], 0, None));
        assert_eq!(suite.passed(), 2);
        assert_eq!(suite.failures()[0].name, "<boot 1>");
        assert!(suite.failures()[0].reason.starts_with("failed after its last test: QEMU exited"));
        assert!(!suite.success());
    }

    #[test]
    fn kernel_error_line_is_a_run_error_without_a_result_line() {
        let mut suite = Suite::new("test=nope", None);
        suite.record(KernelExit::Failure, "running 0 kernel tests\r\nkernel: error: test=nope matches no kernel test\r\n");
        assert_eq!(suite.next_cmdline(), None);
        assert!(!suite.success());
        let s = suite.summary();
        assert!(s.contains("runner: error: the kernel rejected the test options 'test=nope': test=nope matches no kernel test"));
        assert!(!s.contains("passed"));
    }

    #[test]
    fn kernel_ignoring_test_skip_stops_the_run() {
        let mut suite = Suite::new("", None);
        suite.record(KernelExit::Failure, &boot_output(&NAMES, 0, Some(0)));
        // The "kernel" starts from 0 again instead of 1.
        suite.record(KernelExit::Failure, &boot_output(&NAMES, 0, Some(0)));
        assert_eq!(suite.next_cmdline(), None);
        assert_eq!(suite.boots(), 2);
        assert_eq!(suite.failures()[1].name, "<boot 2>");
        assert!(suite.failures()[1].reason.contains("where #1 was expected"));
        assert_eq!(suite.not_run(), 4);
    }

    #[test]
    fn skipped_tests_are_counted_from_their_line() {
        let out = "running 3 kernel tests\ntest-start 0 a\ntest a ... (needs 4 cpus) skipped\n\
                   test-start 1 b\ntest b ... ok (1200 ms)\ntest-start 2 c\ntest c ... ok\n\
                   kernel: 2 passed, 0 failed, 1 skipped\n";
        let mut suite = Suite::new("", None);
        assert_eq!(suite.record(KernelExit::Success, out), None);
        assert!(suite.success());
        assert_eq!(suite.skipped(), 1);
        assert!(suite.summary().ends_with("kernel: 2 passed, 0 failed, 1 skipped\n"));
    }

    #[test]
    fn parse_tolerates_noise_and_ignores_junk() {
        let log = parse_boot(
            "xxrunning 4 kernel tests\r\nnoise test-start 3 m::t\r\ntest-start x bad\r\n\
             test-start 7\r\nkernel: 1 passed, 1 failed (2 not run)\r\n",
        );
        assert_eq!(log.selected, Some(4));
        assert_eq!(log.started, [(3, "m::t".to_string())]);
        assert!(!log.completed);
        assert_eq!(parse_boot("").started, []);
    }

    #[test]
    fn a_boot_that_cannot_start_ends_the_run_without_a_result_line() {
        let mut suite = Suite::new("", None);
        let mut boots = 0;
        let mut out = Vec::new();
        let result = run_suite(
            &mut suite,
            |_: &str| {
                boots += 1;
                if boots == 1 {
                    Ok((KernelExit::Failure, boot_output(&NAMES, 0, Some(0))))
                } else {
                    Err(crate::Error::new("qemu-system-x86_64 not found"))
                }
            },
            &mut out,
        );
        assert!(result.is_err());
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("failed: a::one\n"));
        assert!(out.ends_with("runner: error: could not boot the test kernel: qemu-system-x86_64 not found\n"));
        assert!(!out.contains(" passed, "));
    }

    #[test]
    fn user_test_skip_is_kept_on_the_first_boot() {
        let (suite, cmdlines, out) = simulate(&NAMES, "test_skip=3", |c, from| {
            assert!(c.starts_with("test_skip=3"));
            (from == 3).then_some((KernelExit::Failure, Some(3)))
        });
        assert_eq!(cmdlines, ["test_skip=3", "test_skip=3 test_skip=4"]);
        assert_eq!(suite.failures()[0].name, "b::four");
        assert!(out.ends_with("kernel: 1 passed, 1 failed\n"));
    }
}
