//! The kernel command line: read from QEMU fw_cfg (`opt/cadence/cmdline`, written by the host
//! runner from `make run ARGS='...'`), tokenized by `cadence-cmdline`, turned into
//! [`BootOptions`].
//!
//! Every option is a [`BootParam`] (name, help, setter) in a table next to the code it sets;
//! [`PARAMS`] lists the tables and `cmdline -h` prints them. Bad input never stops the boot:
//! an unknown option prints `cadence: warning: unknown option '<name>'`, a bad value prints
//! `cadence: warning: <name>: <reason>` and keeps the default, and a malformed line (e.g. an
//! unterminated quote) is reported and ignored as a whole. (The test harness, after boot,
//! is stricter: a `test=NAME` that matches no test fails the test run; see `testing`.)

use alloc::string::{String, ToString};
use alloc::vec::Vec;

pub const FW_CFG_CMDLINE: &str = "opt/cadence/cmdline";
const MAX_CMDLINE: usize = 64 * 1024;

/// A deliberate CPU exception (the `test_fault=` option): the framework's.
pub use crate::arch::fault::Fault as TestFault;

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
    /// `sh="CMD"`: run CMD through `/bin/sh -c` as the first user process (after `run=`).
    pub sh: Option<String>,
    /// `kshell`: the kernel's shell on the console, not `/bin/sh`, when nothing else is asked.
    pub kshell: bool,
    /// Under `cargo test`: also run the long stress tests (`test_stress`).
    pub test_stress: bool,
    /// Keep SMT sibling threads offline (`nosmt`).
    pub nosmt: bool,
    /// Keep the LAPIC in xAPIC mode even if the CPU offers x2APIC (`nox2apic`).
    pub nox2apic: bool,
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
            sh: None,
            kshell: false,
            nosmt: false,
            nox2apic: false,
            test_stress: false,
            test_filters: Vec::new(),
            test_skip: 0,
            test_fail_demo: false,
            raw: String::new(),
        }
    }
}

/// Why an option's value was refused (printed as `cadence: warning: <name>: <reason>`).
pub type SetResult = Result<(), String>;

pub use cadence_cmdline::BootParam;

/// A boot option the boot code or the test harness reads: it fills a field of [`BootOptions`].
/// (A subsystem's option is a [`BootParam`] in a table next to its code, which sets the
/// subsystem's state at once; [`PARAMS`] lists those tables.)
pub struct CoreParam {
    /// `name`, or `name=VALUES` as help shows it; the name is what comes before `=`.
    pub usage: &'static str,
    /// One line for `cmdline -h`.
    pub help: &'static str,
    /// What the option does; `value` is what follows `=` (`None`: none given).
    pub set: fn(opts: &mut BootOptions, value: Option<&str>) -> SetResult,
}

impl CoreParam {
    /// The option's name (its usage up to `=`).
    pub fn name(&self) -> &'static str {
        cadence_cmdline::option_name(self.usage)
    }
}

/// The subsystems' boot options: one table per subsystem that has options, declared next to
/// its code (this module sits above them and collects them; they do not name it).
/// `sysctl.NAME=VALUE` is handled apart (any sysctl of `sysctl.rs`).
pub static PARAMS: &[&[BootParam]] = &[
    crate::sched::autogroup::BOOT_PARAMS,
    crate::sched::coresched::BOOT_PARAMS,
    crate::sched::hrtick::BOOT_PARAMS,
    crate::sched::nohz::BOOT_PARAMS,
];

/// Every option's (name, usage, help): [`CORE_PARAMS`], then [`PARAMS`].
fn all_params() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    CORE_PARAMS.iter().map(|p| (p.name(), p.usage, p.help)).chain(PARAMS.iter().flat_map(|t| t.iter()).map(|p| (p.name(), p.usage, p.help)))
}

/// The `sysctl.` prefix's help line (for [`help_lines`]).
const SYSCTL_HELP: (&str, &str) =
    ("sysctl.NAME=VALUE", "set a sysctl at boot, as Linux (e.g. sysctl.kernel.sched_features=RT_PUSH_IPI; quote values with spaces)");

/// `(usage, help)` of every option, for `cmdline -h`.
pub fn help_lines() -> impl Iterator<Item = (&'static str, &'static str)> {
    all_params().map(|(_, usage, help)| (usage, help)).chain(core::iter::once(SYSCTL_HELP))
}

/// Options the boot code and the test harness read (through [`BootOptions`]).
pub static CORE_PARAMS: &[CoreParam] = &[
    CoreParam {
        usage: "poweroff",
        help: "exit QEMU (success) when boot and run= commands are done",
        set: (|o, _| {
            o.poweroff = true;
            Ok(())
        }),
    },
    CoreParam {
        usage: "hz=N",
        help: "periodic tick rate, 10..=10000 (default 250)",
        set: (|o, v| {
            o.hz = parse_num(v, 10, 10_000)? as u32;
            Ok(())
        }),
    },
    CoreParam {
        usage: "maxcpus=N",
        help: "bring up at most N CPUs",
        set: (|o, v| {
            o.maxcpus = Some(parse_num(v, 1, crate::percpu::NR_CPUS as u64)? as u32);
            Ok(())
        }),
    },
    CoreParam {
        usage: "nosmt",
        help: "keep SMT sibling threads offline (one thread per core)",
        set: (|o, _| {
            o.nosmt = true;
            Ok(())
        }),
    },
    CoreParam {
        usage: "sched_verbose",
        help: "log every CPU's sched domains when built; list them in debugfs sched/domains",
        set: (|_, _| {
            crate::sched::topology::set_verbose(true);
            Ok(())
        }),
    },
    CoreParam {
        usage: "nox2apic",
        help: "keep the LAPIC in xAPIC mode (MMIO, 8-bit APIC ids: at most 255 CPUs)",
        set: (|o, _| {
            o.nox2apic = true;
            Ok(())
        }),
    },
    CoreParam {
        usage: "run=\"c1; c2\"",
        help: "commands to run at boot",
        set: (|o, v| {
            o.run = Some(v.ok_or("needs a value, e.g. run=\"cmd1; cmd2\"")?.to_string());
            Ok(())
        }),
    },
    CoreParam {
        usage: "sh=\"CMD\"",
        help: "run CMD through /bin/sh -c as the first user process, in its own session; with poweroff, exit QEMU with success exactly when its status is 0",
        set: (|o, v| {
            o.sh = Some(v.ok_or("needs a value, e.g. sh=\"uname -a\"")?.to_string());
            Ok(())
        }),
    },
    CoreParam {
        usage: "kshell",
        help: "the kernel's shell on the console instead of /bin/sh (the default when the root filesystem has no /bin/sh)",
        set: (|o, _| {
            o.kshell = true;
            Ok(())
        }),
    },
    CoreParam {
        usage: "test=NAME",
        help: "under cargo test: only kernel tests whose name contains NAME (repeatable: any of them); one matching no test fails the run",
        set: (|o, v| {
            let name = v.filter(|v| !v.is_empty()).ok_or("needs a NAME (a part of a test's name)")?;
            o.test_filters.push(name.to_string());
            Ok(())
        }),
    },
    CoreParam {
        usage: "test_skip=N",
        help: "under cargo test: skip the first N selected tests (the runner reboots with it after a failure)",
        set: (|o, v| {
            o.test_skip = parse_num(v, 0, 1_000_000)? as usize;
            Ok(())
        }),
    },
    CoreParam {
        usage: "test_stress",
        help: "under cargo test: also run the long stress tests",
        set: (|o, _| {
            o.test_stress = true;
            Ok(())
        }),
    },
    CoreParam {
        usage: "test_fail_demo",
        help: "under cargo test: make testing::tests::fail_demo_when_asked fail (shows the runner going on)",
        set: (|o, _| {
            o.test_fail_demo = true;
            Ok(())
        }),
    },
    CoreParam {
        usage: "test_fault=KIND",
        help: "provoke a fault: pagefault, gpf, ud, breakpoint, divide, stackoverflow",
        set: (|o, v| {
            o.test_fault = Some(match v {
                Some("pagefault") => TestFault::PageFault,
                Some("gpf") => TestFault::GeneralProtection,
                Some("ud") => TestFault::InvalidOpcode,
                Some("breakpoint") => TestFault::Breakpoint,
                Some("divide") => TestFault::DivideError,
                Some("stackoverflow") => TestFault::StackOverflow,
                other => {
                    return Err(alloc::format!(
                        "unknown kind '{}' (pagefault, gpf, ud, breakpoint, divide, stackoverflow)",
                        other.unwrap_or("")
                    ))
                }
            });
            Ok(())
        }),
    },
];

fn warn(msg: core::fmt::Arguments) {
    crate::kprintln!("cadence: warning: {}", msg);
}

/// A number in `min..=max`, or why not.
pub fn parse_num(value: Option<&str>, min: u64, max: u64) -> Result<u64, String> {
    let v = value.ok_or_else(|| alloc::format!("needs a value ({}..={})", min, max))?;
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(n) => Err(alloc::format!("{} is out of range {}..={}, ignored", n, min, max)),
        Err(_) => Err(alloc::format!("'{}' is not a number, ignored", v)),
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
        let (key, value) = (p.key.as_str(), p.value.as_deref());
        if let Some(name) = key.strip_prefix("sysctl.") {
            match (value, crate::sysctl::find(name)) {
                (_, None) => warn(format_args!("{}: unknown sysctl '{}', ignored", key, name)),
                (None, _) => warn(format_args!("{}: needs a value", key)),
                (Some(v), Some(_)) => opts.sysctls.push((name.to_string(), v.to_string())),
            }
            continue;
        }
        let set = if let Some(core) = CORE_PARAMS.iter().find(|b| b.name() == key) {
            (core.set)(&mut opts, value)
        } else if let Some(param) = PARAMS.iter().flat_map(|t| t.iter()).find(|b| b.name() == key) {
            (param.set)(value)
        } else {
            warn(format_args!("unknown option '{}'", key));
            continue;
        };
        if let Err(why) = set {
            warn(format_args!("{}: {}", key, why));
        }
    }
    opts
}

/// The line the kernel booted with (what [`read`] returned), for `cmdline`.
static BOOT_LINE: spin::Once<String> = spin::Once::new();

/// The line the kernel booted with (Linux `/proc/cmdline`).
pub fn boot_line() -> &'static str {
    BOOT_LINE.get().map_or("", |s| s.as_str())
}

/// Reads the command line from fw_cfg (empty if absent or not UTF-8, with a warning), once.
pub fn read() -> String {
    let line = read_fw_cfg();
    BOOT_LINE.call_once(|| line.clone());
    line
}

fn read_fw_cfg() -> String {
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
    fn every_option_has_one_table_entry_and_help() {
        let mut names: alloc::vec::Vec<&str> = super::all_params().map(|(name, _, _)| name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "an option is declared twice");
        for (usage, help) in super::help_lines() {
            assert!(!usage.is_empty() && !help.is_empty(), "{} has no help", usage);
        }
        // A subsystem's option goes through its table: a bad value warns and changes nothing.
        let o = super::parse("hrtick=2 autogroup=nope");
        assert!(o.sysctls.is_empty());
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
