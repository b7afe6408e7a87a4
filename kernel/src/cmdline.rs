//! The kernel command line: read from QEMU fw_cfg (`opt/cadence/cmdline`, written by the host
//! runner from `make run ARGS='...'`), tokenized by `cadence-cmdline`, turned into
//! [`BootOptions`].
//!
//! Every option is listed in [`OPTIONS`] with its help text. Bad input never stops the boot:
//! an unknown option prints `cadence: warning: unknown option '<name>'`, a bad value prints
//! `cadence: warning: <name>: <reason>` and keeps the default, and a malformed line (e.g. an
//! unterminated quote) is reported and ignored as a whole. (The test harness, after boot,
//! is stricter: a `test=NAME` that matches no test fails the test run; see `testing`.)

use alloc::string::{String, ToString};
use alloc::vec::Vec;

pub const FW_CFG_CMDLINE: &str = "opt/cadence/cmdline";
const MAX_CMDLINE: usize = 64 * 1024;

/// Which fault `test_fault=` provokes (to check the exception path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestFault {
    PageFault,
    GeneralProtection,
    InvalidOpcode,
    Breakpoint,
    DivideError,
    StackOverflow,
}

/// Options parsed from the command line.
#[derive(Clone, Debug)]
pub struct BootOptions {
    /// `sysctl.NAME=VALUE` settings, applied in order once the scheduler runs
    /// ([`apply_sysctls`]; Linux ≥ 5.8 takes the same `sysctl.` prefix).
    pub sysctls: Vec<(String, String)>,
    /// Exit QEMU with success once boot and any `run=` commands are done.
    pub poweroff: bool,
    /// Periodic tick rate (`hz=`, 10..=10000, default 250).
    pub hz: u32,
    /// Bring up at most this many CPUs (`maxcpus=`, ≥ 1).
    pub maxcpus: Option<u32>,
    pub test_fault: Option<TestFault>,
    /// Commands to run at boot (`run="cmd1; cmd2"`).
    pub run: Option<String>,
    /// Under `cargo test`: also run the long stress tests (`test_stress`).
    pub test_stress: bool,
    /// Keep SMT sibling threads offline (`nosmt`).
    pub nosmt: bool,
    /// Under `cargo test`: run only kernel tests whose name contains one of these (`test=NAME`,
    /// repeatable; empty: all tests). A filter that matches no test fails the run.
    pub test_filters: Vec<String>,
    /// Under `cargo test`: skip the first N selected tests (`test_skip=N`, the last one wins).
    /// The host runner reboots with it after a failing test; see `testing`.
    pub test_skip: usize,
    /// Under `cargo test`: make `testing::tests::fail_demo_when_asked` fail (`test_fail_demo`).
    pub test_fail_demo: bool,
    /// The raw line, for `cat /proc/cmdline`-style display.
    pub raw: String,
}

impl Default for BootOptions {
    fn default() -> Self {
        Self {
            sysctls: Vec::new(),
            poweroff: false,
            hz: 250,
            maxcpus: None,
            test_fault: None,
            run: None,
            nosmt: false,
            test_stress: false,
            test_filters: Vec::new(),
            test_skip: 0,
            test_fail_demo: false,
            raw: String::new(),
        }
    }
}

/// Known options: (name, help).
pub const OPTIONS: &[(&str, &str)] = &[
    ("poweroff", "exit QEMU (success) when boot and run= commands are done"),
    ("hz=N", "periodic tick rate, 10..=10000 (default 250)"),
    ("maxcpus=N", "bring up at most N CPUs"),
    ("nosmt", "keep SMT sibling threads offline (one thread per core)"),
    ("nosmt_sched", "start with core scheduling off (kernel.sched_core=0)"),
    ("noautogroup", "start with autogroup off (kernel.sched_autogroup_enabled=0)"),
    ("autogroup=tty|session", "autogroup per tty (default, the seed) or per session (mainline)"),
    ("hrtick=0|1", "preempt exactly at slice end with one-shot timers (default 0, as Linux)"),
    ("sysctl.NAME=VALUE", "set a sysctl at boot, as Linux (e.g. sysctl.kernel.sched_features=RT_PUSH_IPI; quote values with spaces)"),
    ("run=\"c1; c2\"", "commands to run at boot"),
    (
        "test=NAME",
        "under cargo test: only kernel tests whose name contains NAME (repeatable: any of them); one matching no test fails the run",
    ),
    ("test_skip=N", "under cargo test: skip the first N selected tests (the runner reboots with it after a failure)"),
    ("test_stress", "under cargo test: also run the long stress tests"),
    ("test_fail_demo", "under cargo test: make testing::tests::fail_demo_when_asked fail (shows the runner going on)"),
    ("test_fault=KIND", "provoke a fault: pagefault, gpf, ud, breakpoint, divide, stackoverflow"),
];

fn warn(msg: core::fmt::Arguments) {
    crate::kprintln!("cadence: warning: {}", msg);
}

fn parse_num(key: &str, value: Option<&str>, min: u64, max: u64) -> Option<u64> {
    let Some(v) = value else {
        warn(format_args!("{}: needs a value ({}..={})", key, min, max));
        return None;
    };
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Some(n),
        Ok(n) => {
            warn(format_args!("{}: {} is out of range {}..={}, ignored", key, n, min, max));
            None
        }
        Err(_) => {
            warn(format_args!("{}: '{}' is not a number, ignored", key, v));
            None
        }
    }
}

/// Applies the `sysctl.NAME=VALUE` boot settings, warning about each rejected one.
pub fn apply_sysctls(opts: &BootOptions) {
    for (name, value) in &opts.sysctls {
        if let Err(e) = crate::sysctl::set(name, value) {
            let why = e.map(|e| e.strerror()).unwrap_or("rejected");
            warn(format_args!("sysctl.{}={}: {}, ignored", name, value, why));
        }
    }
}

/// Parses a command line, printing a warning line for each problem.
pub fn parse(line: &str) -> BootOptions {
    let mut opts = BootOptions { raw: line.to_string(), ..Default::default() };
    let params = match cadence_cmdline::parse(line) {
        Ok(p) => p,
        Err(e) => {
            warn(format_args!("malformed command line ({}); ignoring it", e));
            return opts;
        }
    };
    for p in params {
        let value = p.value.as_deref();
        match p.key.as_str() {
            "poweroff" => opts.poweroff = true,
            "hz" => {
                if let Some(n) = parse_num("hz", value, 10, 10_000) {
                    opts.hz = n as u32;
                }
            }
            "maxcpus" => opts.maxcpus = parse_num("maxcpus", value, 1, crate::percpu::MAX_CPUS as u64).map(|n| n as u32),
            "run" => match value {
                Some(v) => opts.run = Some(v.to_string()),
                None => warn(format_args!("run: needs a value, e.g. run=\"cmd1; cmd2\"")),
            },
            "nosmt_sched" => crate::sched::coresched::set_enabled(false),
            "nosmt" => opts.nosmt = true,
            "noautogroup" => crate::sched::autogroup::set_boot_default(false),
            "autogroup" => match value.map(crate::sched::autogroup::set_mode) {
                Some(Ok(())) => {}
                _ => warn(format_args!("autogroup: needs tty or session")),
            },
            "hrtick" => match value {
                Some("0") => crate::sched::hrtick::set_enabled(false),
                Some("1") => crate::sched::hrtick::set_enabled(true),
                _ => warn(format_args!("hrtick: needs 0 or 1")),
            },
            k if k.starts_with("sysctl.") => {
                let name = &k["sysctl.".len()..];
                match (value, crate::sysctl::find(name)) {
                    (_, None) => warn(format_args!("{}: unknown sysctl '{}', ignored", k, name)),
                    (None, _) => warn(format_args!("{}: needs a value", k)),
                    (Some(v), Some(_)) => opts.sysctls.push((name.to_string(), v.to_string())),
                }
            }
            "test_stress" => opts.test_stress = true,
            "test" => match value {
                Some(v) if !v.is_empty() => opts.test_filters.push(v.to_string()),
                _ => warn(format_args!("test: needs a NAME (a part of a test's name)")),
            },
            "test_skip" => {
                if let Some(n) = parse_num("test_skip", value, 0, 1_000_000) {
                    opts.test_skip = n as usize;
                }
            }
            "test_fail_demo" => opts.test_fail_demo = true,
            "test_fault" => {
                opts.test_fault = match value {
                    Some("pagefault") => Some(TestFault::PageFault),
                    Some("gpf") => Some(TestFault::GeneralProtection),
                    Some("ud") => Some(TestFault::InvalidOpcode),
                    Some("breakpoint") => Some(TestFault::Breakpoint),
                    Some("divide") => Some(TestFault::DivideError),
                    Some("stackoverflow") => Some(TestFault::StackOverflow),
                    other => {
                        warn(format_args!(
                            "test_fault: unknown kind '{}' (pagefault, gpf, ud, breakpoint, divide, stackoverflow)",
                            other.unwrap_or("")
                        ));
                        None
                    }
                }
            }
            other => warn(format_args!("unknown option '{}'", other)),
        }
    }
    opts
}

/// Reads the command line from fw_cfg (empty if absent or not UTF-8, with a warning).
pub fn read() -> String {
    match crate::arch::fwcfg::read_named(FW_CFG_CMDLINE, MAX_CMDLINE) {
        Some(bytes) => match String::from_utf8(bytes) {
            Ok(s) => s.trim_end_matches(['\0', '\n', '\r']).to_string(),
            Err(_) => {
                warn(format_args!("command line is not UTF-8; ignoring it"));
                String::new()
            }
        },
        None => String::new(),
    }
}

/// Splits the `run=` value into commands.
pub fn run_commands(opts: &BootOptions) -> Vec<String> {
    opts.run.as_deref().map(cadence_cmdline::split_commands).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test_case]
    fn parses_known_options_and_survives_bad_ones() {
        let o = super::parse("hz=1000 poweroff maxcpus=2 run=\"a; b\" bogus hz=abc hz=5");
        assert!(o.poweroff);
        assert_eq!(o.hz, 1000);
        assert_eq!(o.maxcpus, Some(2));
        assert_eq!(super::run_commands(&o), ["a", "b"]);
        let bad = super::parse("run=\"unterminated");
        assert!(bad.run.is_none() && !bad.poweroff);
        assert_eq!(super::parse("test_fault=nope").test_fault, None);
    }

    #[test_case]
    fn test_options_accumulate_and_last_skip_wins() {
        let o = super::parse("test=a test_skip=7 test=b test= test_fail_demo test_skip=3");
        assert_eq!(o.test_filters, ["a", "b"]);
        assert_eq!(o.test_skip, 3);
        assert!(o.test_fail_demo);
        let d = super::parse("test_skip=x");
        assert!(d.test_filters.is_empty() && d.test_skip == 0 && !d.test_fail_demo);
    }
}
