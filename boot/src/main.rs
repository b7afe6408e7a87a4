//! `cadence-boot`: build disk images for the Cadence kernel and boot them in QEMU.
//!
//! ```text
//! cadence-boot run --kernel ELF [--uefi|--bios] [--smp SPEC] [--memory SIZE] [--args STR]
//!                  [--timeout SECS] [--trace FILE] [--workload FILE]... [--initrd CPIO] [--disk IMG]
//!                  [--scratch-disk IMG] [--disk-opts OPTS] [--qemu-arg ARG]... [--verbose]
//! cadence-boot runner ELF [IGNORED...]      # cargo runner for the kernel's tests
//! cadence-boot image --kernel ELF [--uefi] -o OUT
//! cadence-boot trace report FILE [--svg OUT]  # tracer report of a COM2 ftrace capture
//! cadence-boot trace check coresched FILE [--smt 0,1:2,3]  # core-scheduling checker
//! cadence-boot trace check rt FILE [-b US] [--smt 0,1:2,3]   # RT-guarantee checker (exit 1 on violations)
//! cadence-boot trace check wc FILE [-b US] [--cpus N]        # work-conservation checker (exit 1 on violations)
//! cadence-boot plot cyclic OUT.svg LABEL=FILE[,FILE...]...  # cyclictest -h histograms, overlaid
//! cadence-boot plot wakeup OUT.svg LABEL=TRACE[,TRACE...]... # RT wakeup->switch, from traces
//! cadence-boot fuzz-console --kernel ELF [--smp SPEC] [--seconds N] [--seed N] [--log FILE]
//!                          [--disk IMG | --scratch-disk IMG]
//!                                        # random input into the shell (cadence_boot::fuzz)
//! ```
//!
//! Exit status of `run`: 0 kernel success (QEMU 33), 1 kernel failure (QEMU 35),
//! 2 QEMU exited 0 without a kernel exit code (triple fault, reset, quit),
//! 124 timeout, 3 could not run (missing kernel, QEMU, OVMF, ...), 64 bad
//! usage; any other QEMU status is passed through.
//!
//! `runner` boots the test kernel once, and again after each failing test
//! from the test after it (`test_skip=`; see `cadence_boot::harness`), then
//! prints the failures and `kernel: N passed, M failed` over all boots. Its
//! exit status: 0 iff no test failed (M = 0), 1 if one did (a panic, an
//! exception, a triple fault, a timeout all count) or the kernel rejected the
//! test options (`test=NAME` matching no test), 3 could not run, 64 bad usage.
//!
//! Timeouts: `run` defaults to 600 s, except that an interactive session
//! (stdin is a terminal and the command line lacks `poweroff`) has none;
//! `--timeout 0` disables it. `runner` defaults to 300 s per boot
//! (`CADENCE_TEST_TIMEOUT` overrides) and takes the kernel command line from
//! `CADENCE_TEST_ARGS` (and the `-smp` spec from `CADENCE_TEST_SMP`, if set;
//! the guest's memory from `CADENCE_TEST_MEMORY`, QEMU's `-m` syntax, if set;
//! a virtio disk from `CADENCE_TEST_DISK`, created if missing).
//!
//! `--disk IMG` attaches a raw image as a virtio-blk disk, `cache=writeback`;
//! a missing IMG is created as a 256 MiB sparse file. `--scratch-disk IMG` does
//! the same with `snapshot=on`: the guest's writes go to a temporary overlay,
//! IMG is never written, and concurrent runs can share it (what `make run`
//! attaches without `DISK=`). `--disk-opts OPTS` appends QEMU `-drive` options to
//! either, e.g. `throttling.bps-write=8388608` for a disk that writes 8 MiB/s (the
//! peer's `DISK_OPTS`).
#![forbid(unsafe_code)]

use cadence_boot::harness::{run_suite, Suite};
use cadence_boot::{build_image, Firmware, KernelExit, Qemu};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "\
usage: cadence-boot run --kernel ELF [--uefi|--bios] [--smp SPEC] [--memory SIZE] [--args STR]
                        [--timeout SECS] [--trace FILE] [--workload FILE]... [--initrd CPIO] [--disk IMG]
                        [--scratch-disk IMG] [--disk-opts OPTS] [--qemu-arg ARG]... [--verbose]
       cadence-boot runner ELF [IGNORED...]
       cadence-boot image --kernel ELF [--uefi] -o OUT
       cadence-boot initramfs -o OUT [--dir DIR] [HOST=GUEST...]
       cadence-boot trace report FILE [--svg OUT]
       cadence-boot trace check coresched FILE [--smt 0,1:2,3]
       cadence-boot trace check rt FILE [-b US] [--smt 0,1:2,3]
       cadence-boot trace check wc FILE [-b US] [--cpus N]
       cadence-boot plot cyclic|wakeup OUT.svg LABEL=FILE[,FILE...]...
       cadence-boot fuzz-console --kernel ELF [--smp SPEC] [--seconds N] [--seed N] [--log FILE] [--timeout SECS]
                                   [--disk IMG | --scratch-disk IMG]";

/// How `main` ends: a status plus an optional message for stderr.
struct Exit(u8, Option<String>);

fn usage(msg: impl std::fmt::Display) -> Exit {
    Exit(64, Some(format!("{msg}\n{USAGE}")))
}

fn main() -> ExitCode {
    let args: Vec<String> = match std::env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(a) => a,
        Err(bad) => return finish(usage(format!("argument {bad:?} is not valid UTF-8"))),
    };
    let result = match args.first().map(String::as_str) {
        Some("run") => cmd_run(&args[1..]),
        Some("runner") => cmd_runner(&args[1..]),
        Some("image") => cmd_image(&args[1..]),
        Some("initramfs") => cmd_initramfs(&args[1..]),
        Some("trace") => cmd_trace(&args[1..]),
        Some("plot") => cmd_plot(&args[1..]),
        Some("fuzz-console") => cmd_fuzz_console(&args[1..]),
        Some("-h" | "--help" | "help") => Exit(0, Some(USAGE.into())),
        Some(other) => usage(format!("unknown subcommand '{other}'")),
        None => usage("missing subcommand"),
    };
    finish(result)
}

fn finish(Exit(code, msg): Exit) -> ExitCode {
    if let Some(msg) = msg {
        if code == 0 {
            println!("{msg}");
        } else {
            eprintln!("cadence-boot: {msg}");
        }
    }
    ExitCode::from(code)
}

/// Parsed `--flag value` / `--flag=value` options.
#[derive(Default)]
struct Opts {
    kernel: Option<PathBuf>,
    /// `--uefi` (true) or `--bios` (false); `None`: `Qemu::firmware`'s choice.
    uefi: Option<bool>,
    smp: Option<String>,
    memory: Option<String>,
    args: Option<String>,
    timeout: Option<Option<Duration>>,
    trace: Option<PathBuf>,
    workloads: Vec<PathBuf>,
    initrd: Option<PathBuf>,
    disk: Option<PathBuf>,
    scratch_disk: Option<PathBuf>,
    disk_opts: Option<String>,
    qemu_args: Vec<String>,
    out: Option<PathBuf>,
    verbose: bool,
}

fn parse_opts(argv: &[String], allowed: &[&str]) -> Result<Opts, Exit> {
    let mut o = Opts::default();
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if !allowed.contains(&flag) {
            return Err(usage(format!("unexpected argument '{arg}'")));
        }
        if flag == "--uefi" || flag == "--bios" || flag == "--verbose" {
            if inline.is_some() {
                return Err(usage(format!("{flag} takes no value")));
            }
            match flag {
                "--uefi" => o.uefi = Some(true),
                "--bios" => o.uefi = Some(false),
                _ => o.verbose = true,
            }
            continue;
        }
        let value = match inline.or_else(|| it.next().cloned()) {
            Some(v) => v,
            None => return Err(usage(format!("{flag} needs a value"))),
        };
        match flag {
            "--kernel" => o.kernel = Some(value.into()),
            "--smp" if value.is_empty() => return Err(usage("--smp needs a non-empty QEMU -smp spec")),
            "--smp" => o.smp = Some(value),
            "--memory" => o.memory = Some(value),
            "--args" => o.args = Some(value),
            "--timeout" => o.timeout = Some(parse_timeout(&value)?),
            "--trace" => o.trace = Some(value.into()),
            "--workload" => o.workloads.push(value.into()),
            "--initrd" => o.initrd = Some(value.into()),
            "--disk" if value.is_empty() => return Err(usage("--disk needs a file")),
            "--disk" => o.disk = Some(value.into()),
            "--scratch-disk" if value.is_empty() => return Err(usage("--scratch-disk needs a file")),
            "--scratch-disk" => o.scratch_disk = Some(value.into()),
            "--disk-opts" => o.disk_opts = Some(value),
            "--qemu-arg" => o.qemu_args.push(value),
            "-o" | "--output" => o.out = Some(value.into()),
            _ => unreachable!("flag {flag} allowed but not handled"),
        }
    }
    Ok(o)
}

/// `--disk IMG` (read-write) or `--scratch-disk IMG` (snapshot=on): at most one of them.
fn attach_disk(q: Qemu, disk: Option<PathBuf>, scratch: Option<PathBuf>) -> Result<Qemu, Exit> {
    match (disk, scratch) {
        (Some(_), Some(_)) => Err(usage("--disk and --scratch-disk exclude each other")),
        (Some(d), None) => Ok(q.disk(d)),
        (None, Some(d)) => Ok(q.scratch_disk(d)),
        (None, None) => Ok(q),
    }
}

/// Seconds (integer or fraction); 0 means no timeout.
fn parse_timeout(v: &str) -> Result<Option<Duration>, Exit> {
    match v.parse::<f64>() {
        Ok(0.0) => Ok(None),
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(usage(format!("--timeout wants a number of seconds, got '{v}'"))),
    }
}

fn cmd_run(argv: &[String]) -> Exit {
    let flags = [
        "--kernel", "--uefi", "--bios", "--smp", "--memory", "--args", "--timeout", "--trace", "--workload", "--initrd", "--disk",
        "--scratch-disk", "--disk-opts", "--qemu-arg", "--verbose",
    ];
    let o = match parse_opts(argv, &flags) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let Some(kernel) = o.kernel else {
        return usage("run needs --kernel ELF");
    };
    if o.disk_opts.is_some() && o.disk.is_none() && o.scratch_disk.is_none() {
        return usage("--disk-opts needs --disk or --scratch-disk");
    }
    let args = o.args.unwrap_or_default();
    let interactive = std::io::stdin().is_terminal();
    let powers_off = args.split_whitespace().any(|w| w == "poweroff");
    let default = (!interactive || powers_off).then(|| Duration::from_secs(600));
    let timeout = o.timeout.unwrap_or(default);
    // The bootloader's ~30 `INFO :` lines only with --verbose (`make run VERBOSE=1`).
    let mut q = Qemu::new(kernel).args(args).timeout(timeout).interactive(interactive).quiet_bootloader(!o.verbose);
    if let Some(uefi) = o.uefi {
        q = q.uefi(uefi);
    }
    if let Some(smp) = o.smp {
        q = q.smp(smp);
    }
    if let Some(m) = o.memory {
        q = q.memory(m);
    }
    if let Some(t) = o.trace {
        q = q.trace(t);
    }
    if let Some(r) = o.initrd {
        q = q.initrd(r);
    }
    for w in o.workloads {
        q = q.workload(w);
    }
    let mut q = match attach_disk(q, o.disk, o.scratch_disk) {
        Ok(q) => q,
        Err(e) => return e,
    };
    if let Some(d) = o.disk_opts {
        q = q.disk_opts(d);
    }
    for a in o.qemu_args {
        q = q.qemu_arg(a);
    }
    boot(&q, timeout)
}

/// `fuzz-console`: exit 0 iff the final line says `result=ok` (1 otherwise, 3 if QEMU could
/// not run).
fn cmd_fuzz_console(argv: &[String]) -> Exit {
    let (mut seconds, mut seed, mut log) = (60u64, None, None::<PathBuf>);
    let mut rest = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--log" {
            match it.next() {
                Some(f) => log = Some(f.into()),
                None => return usage("--log needs a file"),
            }
            continue;
        }
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let target = match flag {
            "--seconds" => &mut seconds,
            "--seed" => seed.get_or_insert(0),
            _ => {
                rest.push(a.clone());
                continue;
            }
        };
        match inline.or_else(|| it.next().cloned()).map(|v| v.parse::<u64>()) {
            Some(Ok(v)) => *target = v,
            _ => return usage(format!("{flag} needs a whole number")),
        }
    }
    let o = match parse_opts(&rest, &["--kernel", "--smp", "--timeout", "--disk", "--scratch-disk"]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let Some(kernel) = o.kernel else {
        return usage("fuzz-console needs --kernel ELF");
    };
    let seed = seed.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(1));
    println!("console-fuzz: seed={seed} (replay with --seed {seed})");
    let timeout = o.timeout.unwrap_or(Some(Duration::from_secs(seconds + 600)));
    let mut q = Qemu::new(kernel).timeout(timeout);
    if let Some(uefi) = o.uefi {
        q = q.uefi(uefi);
    }
    if let Some(smp) = o.smp {
        q = q.smp(smp);
    }
    let q = match attach_disk(q, o.disk, o.scratch_disk) {
        Ok(q) => q,
        Err(e) => return e,
    };
    match cadence_boot::fuzz::run(&q, seed, seconds) {
        Ok(f) => {
            if !f.ok || log.is_some() {
                let log = log.unwrap_or_else(|| std::env::temp_dir().join(format!("console-fuzz-{seed}.log")));
                if std::fs::write(&log, &f.outcome.output).is_ok() {
                    eprintln!("cadence-boot: COM1 transcript in {}", log.display());
                }
            }
            println!("{}", f.line);
            Exit(if f.ok { 0 } else { 1 }, None)
        }
        Err(e) => Exit(3, Some(e.to_string())),
    }
}

fn cmd_runner(argv: &[String]) -> Exit {
    let Some(kernel) = argv.first() else {
        return usage("runner needs the kernel ELF path");
    };
    if argv.len() > 1 {
        eprintln!("cadence-boot: note: ignoring test-harness arguments {:?}", &argv[1..]);
    }
    let timeout = match std::env::var("CADENCE_TEST_TIMEOUT") {
        Ok(v) => match parse_timeout(&v) {
            Ok(t) => t,
            Err(_) => return Exit(64, Some(format!("CADENCE_TEST_TIMEOUT='{v}' is not a number of seconds"))),
        },
        Err(_) => Some(Duration::from_secs(300)),
    };
    let args = std::env::var("CADENCE_TEST_ARGS").unwrap_or_default();
    let mut q = Qemu::new(kernel).timeout(timeout);
    // An optional setting: unset and blank are the same.
    let setting = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    // `make test-repeat SMP=spec` boots the test kernel with another topology.
    if let Some(spec) = setting("CADENCE_TEST_SMP") {
        q = q.smp(spec);
    }
    // `make test-stress`: the long stress's trace and its checked copy need more than the default.
    if let Some(size) = setting("CADENCE_TEST_MEMORY") {
        q = q.memory(size);
    }
    // A virtio disk for the kernel's blk tests (they skip without one).
    match std::env::var_os("CADENCE_TEST_DISK") {
        Some(d) if !d.is_empty() => q = q.disk(PathBuf::from(d)),
        _ => {}
    }
    // One boot per failing test: see `cadence_boot::harness`.
    let mut suite = Suite::new(&args, timeout);
    let boot_once = |cmdline: &str| {
        let outcome = q.clone().args(cmdline).run_streaming()?;
        Ok((outcome.exit, outcome.output))
    };
    if let Err(e) = run_suite(&mut suite, boot_once, &mut std::io::stdout()) {
        return Exit(3, Some(e.to_string()));
    }
    match suite.error() {
        Some(e) => Exit(1, Some(e.to_string())),
        None if suite.success() => Exit(0, None),
        None => {
            let n = suite.failures().len();
            let s = if n == 1 { "" } else { "s" };
            Exit(1, Some(format!("{n} kernel test failure{s} (listed above)")))
        }
    }
}

fn cmd_image(argv: &[String]) -> Exit {
    let o = match parse_opts(argv, &["--kernel", "--uefi", "-o", "--output"]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let (Some(kernel), Some(out)) = (o.kernel, o.out) else {
        return usage("image needs --kernel ELF and -o OUT");
    };
    let fw = if o.uefi == Some(true) { Firmware::Uefi } else { Firmware::Bios };
    match build_image(&kernel, fw, &out) {
        Ok(()) => Exit(0, Some(format!("{}", out.display()))),
        Err(e) => Exit(3, Some(e.to_string())),
    }
}

/// Adds everything under `dir` to `w` (paths relative to it; symlinks kept as links, modes
/// as the host has them), in sorted order so archives are reproducible.
fn add_tree(w: &mut cadence_abi::cpio::Writer, dir: &std::path::Path, prefix: &str) -> std::io::Result<()> {
    use cadence_abi::cpio::{S_IFDIR, S_IFLNK, S_IFREG};
    use std::os::unix::fs::PermissionsExt;
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        let meta = std::fs::symlink_metadata(e.path())?;
        let perm = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(e.path())?;
            w.add(&name, S_IFLNK | 0o777, target.to_string_lossy().as_bytes());
        } else if meta.is_dir() {
            w.add(&name, S_IFDIR | perm, &[]);
            add_tree(w, &e.path(), &format!("{name}/"))?;
        } else if meta.is_file() {
            w.add(&name, S_IFREG | perm, &std::fs::read(e.path())?);
        }
    }
    Ok(())
}

/// `initramfs -o OUT [--dir DIR] [HOST=GUEST...]`: a newc cpio archive holding the tree under
/// DIR, and each host file at its guest path (directories on the way made, mode 0755 for files
/// the host has executable).
fn cmd_initramfs(argv: &[String]) -> Exit {
    use cadence_abi::cpio::{Writer, S_IFDIR, S_IFREG};
    use std::os::unix::fs::PermissionsExt;
    let (mut out, mut files, mut dirs_in) = (None, Vec::new(), Vec::new());
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" => out = it.next().cloned(),
            "--dir" => match it.next() {
                Some(d) => dirs_in.push(d.clone()),
                None => return usage("initramfs: --dir needs DIR"),
            },
            spec => match spec.split_once('=') {
                Some((host, guest)) if !guest.is_empty() => files.push((host.to_string(), guest.trim_start_matches('/').to_string())),
                _ => return usage(format!("initramfs: '{spec}' is not HOST=GUEST")),
            },
        }
    }
    let Some(out) = out else { return usage("initramfs needs -o OUT") };
    let mut w = Writer::new();
    for d in &dirs_in {
        if let Err(e) = add_tree(&mut w, std::path::Path::new(d), "") {
            return Exit(3, Some(format!("initramfs: cannot read {d}: {e}")));
        }
    }
    let mut dirs = std::collections::BTreeSet::new();
    for (host, guest) in &files {
        let data = match std::fs::read(host) {
            Ok(d) => d,
            Err(e) => return Exit(3, Some(format!("initramfs: cannot read {host}: {e}"))),
        };
        let mut prefix = String::new();
        for part in guest.split('/').collect::<Vec<_>>().split_last().map(|(_, d)| d.to_vec()).unwrap_or_default() {
            prefix = if prefix.is_empty() { part.to_string() } else { format!("{prefix}/{part}") };
            if dirs.insert(prefix.clone()) {
                w.add(&prefix, S_IFDIR | 0o755, &[]);
            }
        }
        let exec = std::fs::metadata(host).map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false);
        w.add(guest, S_IFREG | if exec { 0o755 } else { 0o644 }, &data);
    }
    match std::fs::write(&out, w.finish()) {
        Ok(()) => Exit(0, None),
        Err(e) => Exit(3, Some(format!("initramfs: cannot write {out}: {e}"))),
    }
}

/// Runs QEMU with inherited stdio and maps the outcome to our exit status.
fn boot(q: &Qemu, timeout: Option<Duration>) -> Exit {
    let exit = match q.run() {
        Ok(exit) => exit,
        Err(e) => return Exit(3, Some(e.to_string())),
    };
    let code = exit.exit_code().clamp(0, 255) as u8;
    let msg = match exit {
        KernelExit::Success => None,
        KernelExit::Failure => Some("kernel reported failure".to_string()),
        KernelExit::NoExit => Some("QEMU exited without a kernel exit code (triple fault, reset or quit)".to_string()),
        KernelExit::Timeout => Some(format!("timeout after {} s", timeout.map_or(0.0, |t| t.as_secs_f64()))),
        KernelExit::Other(c) => Some(format!("QEMU exited with status {c}")),
    };
    Exit(code, msg)
}

/// `trace report FILE [--svg OUT]`: prints the report the kernel's `trace report` prints,
/// computed from the ftrace text captured from COM2; `--svg` also draws the histogram.
fn cmd_trace(argv: &[String]) -> Exit {
    if argv.first().map(String::as_str) == Some("check") {
        return cmd_trace_check(&argv[1..]);
    }
    let (file, svg) = match argv {
        [r, f] if r == "report" => (f, None),
        [r, f, s, out] if r == "report" && s == "--svg" => (f, Some(out)),
        [r, s, out, f] if r == "report" && s == "--svg" => (f, Some(out)),
        _ => return usage(TRACE_USAGE),
    };
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return Exit(3, Some(format!("{file}: {e}"))),
    };
    let r = cadence_boot::trace::analyze_text(&String::from_utf8_lossy(&bytes));
    for (line, err) in r.errors.iter().take(5) {
        eprintln!("cadence-boot: {file}:{line}: {err} (line skipped)");
    }
    if r.errors.len() > 5 {
        eprintln!("cadence-boot: {file}: {} more malformed lines skipped", r.errors.len() - 5);
    }
    print!("{}", cadence_boot::trace::report_text(&r.report));
    if let Some(out) = svg {
        let title = format!("wakeup latency: {} wakeups, {file}", r.report.all.count);
        if let Err(e) = std::fs::write(out, cadence_boot::trace::histogram_svg(&r.report.hist, &title)) {
            return Exit(3, Some(format!("{out}: {e}")));
        }
    }
    Exit(0, None)
}

/// What `trace` takes.
const TRACE_USAGE: &str =
    "trace wants: report FILE [--svg OUT] | check coresched FILE [--smt 0,1:2,3] | check rt FILE [-b US] [--smt 0,1:2,3] | check wc FILE [-b US] [--cpus N]";

/// `trace check coresched FILE [--smt GROUPS]`: the core-scheduling checker on an exported trace.
fn cmd_trace_check(argv: &[String]) -> Exit {
    match argv.first().map(String::as_str) {
        Some("rt") => return cmd_trace_check_rt(&argv[1..]),
        Some("wc") => return cmd_trace_check_wc(&argv[1..]),
        _ => {}
    }
    let (file, smt) = match argv {
        [c, f] if c == "coresched" => (f, None),
        [c, f, s, g] if c == "coresched" && s == "--smt" => (f, Some(g.as_str())),
        _ => return usage(TRACE_USAGE),
    };
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return Exit(3, Some(format!("{file}: {e}"))),
    };
    match cadence_boot::trace::check_coresched_text(&String::from_utf8_lossy(&bytes), smt) {
        Ok((r, errors)) => {
            if !errors.is_empty() {
                eprintln!("cadence-boot: {file}: {} malformed lines skipped", errors.len());
            }
            for v in r.violations.iter().take(10) {
                println!(
                    "violation: {}..{} ns cpus {} and {} cookies {:#x} and {:#x}",
                    v.start_ns, v.end_ns, v.cpu_a, v.cpu_b, v.cookie_a.0, v.cookie_b.0
                );
            }
            println!("{r}");
            Exit(if r.violations.is_empty() { 0 } else { 1 }, None)
        }
        Err(e) => Exit(3, Some(e)),
    }
}

/// `trace check rt FILE [-b US] [--smt 0,1:2,3]`: the RT-guarantee checker on an exported trace
/// (exit 1 when it finds violations, like `check coresched`). `--smt` gives the SMT sibling
/// groups, so that waits core scheduling imposes are not counted (none by default).
fn cmd_trace_check_rt(argv: &[String]) -> Exit {
    let (mut file, mut bound, mut smt) = (None, None, None);
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-b" => bound = it.next(),
            "--smt" => smt = it.next().map(|s| s.as_str()),
            _ if file.is_none() => file = Some(a),
            _ => return usage("trace wants: check rt FILE [-b US] [--smt 0,1:2,3]"),
        }
    }
    let Some(file) = file else { return usage("trace wants: check rt FILE [-b US] [--smt 0,1:2,3]") };
    let bound_ns = match bound.map(|us| cadence_boot::trace::parse_bound_us(us)) {
        None => cadence_trace::rtcheck::DEFAULT_BOUND_NS,
        Some(Ok(ns)) => ns,
        Some(Err(e)) => return usage(e),
    };
    let smt = match smt.map(cadence_boot::trace::parse_smt) {
        None => Vec::new(),
        Some(Ok(g)) => g,
        Some(Err(e)) => return usage(e),
    };
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return Exit(3, Some(format!("{file}: {e}"))),
    };
    let (r, errors) = cadence_boot::trace::check_rt_text(&String::from_utf8_lossy(&bytes), bound_ns, &smt);
    if !errors.is_empty() {
        eprintln!("cadence-boot: {file}: {} malformed lines skipped", errors.len());
    }
    let mut out = String::new();
    let _ = r.write(&mut out);
    print!("{out}");
    Exit(if r.violations == 0 { 0 } else { 1 }, None)
}

/// `trace check wc FILE [-b US] [--cpus N]`: the work-conservation checker on an exported trace
/// (exit 1 when it finds violations, like `check rt`). `--cpus` gives the machine's CPU count
/// when the trace's header does not (a CPU that records nothing is still capacity).
fn cmd_trace_check_wc(argv: &[String]) -> Exit {
    const WANTS: &str = "trace wants: check wc FILE [-b US] [--cpus N]";
    let (mut file, mut bound, mut cpus) = (None, None, None);
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-b" => bound = Some(it.next()),
            "--cpus" => cpus = Some(it.next()),
            _ if file.is_none() && !a.starts_with('-') => file = Some(a),
            _ => return usage(WANTS),
        }
    }
    let Some(file) = file else { return usage(WANTS) };
    let bound_ns = match bound {
        None => cadence_trace::wccheck::DEFAULT_BOUND_NS,
        Some(None) => return usage(WANTS),
        Some(Some(us)) => match cadence_boot::trace::parse_bound_us(us) {
            Ok(ns) => ns,
            Err(e) => return usage(e),
        },
    };
    let cpus = match cpus {
        None => None,
        Some(None) => return usage(WANTS),
        Some(Some(n)) => match cadence_boot::trace::parse_cpus(n) {
            Ok(n) => Some(n),
            Err(e) => return usage(e),
        },
    };
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return Exit(3, Some(format!("{file}: {e}"))),
    };
    let (r, errors) = cadence_boot::trace::check_wc_text(&String::from_utf8_lossy(&bytes), bound_ns, cpus);
    if !errors.is_empty() {
        eprintln!("cadence-boot: {file}: {} malformed lines skipped", errors.len());
    }
    let mut out = String::new();
    let _ = r.write(&mut out);
    print!("{out}");
    Exit(if r.violations == 0 { 0 } else { 1 }, None)
}

/// `plot cyclic|wakeup OUT.svg LABEL=FILE[,FILE...]...`: one series per label, the files of a
/// label (sittings) summed; see `cadence_boot::plot`.
fn cmd_plot(argv: &[String]) -> Exit {
    use cadence_boot::plot;
    let (kind, out, specs) = match argv {
        [k, out, specs @ ..] if (k == "cyclic" || k == "wakeup") && !specs.is_empty() => (k.as_str(), out, specs),
        _ => return usage("plot wants: cyclic|wakeup OUT.svg LABEL=FILE[,FILE...]..."),
    };
    let mut series = Vec::new();
    for spec in specs {
        let Some((label, files)) = spec.split_once('=') else {
            return usage(format!("'{spec}' is not LABEL=FILE[,FILE...]"));
        };
        let mut d = plot::Distribution { label: label.to_string(), ..Default::default() };
        for file in files.split(',') {
            let text = match std::fs::read(file) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => return Exit(1, Some(format!("plot: cannot read {file}: {e}"))),
            };
            let one = if kind == "cyclic" {
                match plot::parse_cyclictest_hist(&text) {
                    Ok(d) => d,
                    Err(e) => return Exit(1, Some(format!("plot: {file}: {e}"))),
                }
            } else {
                plot::wakeup_distribution(&text)
            };
            d.merge(&one);
        }
        series.push(d);
    }
    let (title, x) = if kind == "cyclic" {
        ("cyclictest latency (timer expiry to task running)", "latency (µs)")
    } else {
        ("RT wakeup → switch latency (scheduler traces)", "wakeup to switch (µs)")
    };
    match plot::draw(out, title, x, &series) {
        Ok(()) => Exit(0, Some(format!("plot: wrote {out}"))),
        Err(e) => Exit(1, Some(format!("plot: {out}: {e}"))),
    }
}
