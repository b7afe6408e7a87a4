//! Launching the kernel under QEMU.
//!
//! [`Qemu`] is a builder for one QEMU run. Every run uses TCG and these flags:
//!
//! ```text
//! -accel tcg -cpu max,vendor=GenuineIntel -smp 4,sockets=1,cores=2,threads=2 -m 512M
//! -serial stdio -display none -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04
//! -drive if=none,id=boot,format=raw,file=IMG,snapshot=on
//! -device ahci,id=ahci -device ide-hd,drive=boot,bus=ahci.0,bootindex=0
//! ```
//!
//! plus OVMF for UEFI, `-fw_cfg name=opt/cadence/cmdline,file=TMP` for a
//! non-empty kernel command line (the string is written verbatim to a private
//! temp file, so quotes, commas and spaces survive), `-serial file:TRACE` for
//! a trace port (COM2), `-fw_cfg name=opt/cadence/workload/<basename>,file=ABS`
//! per workload, `-drive file=DISK,format=raw,if=virtio,cache=writeback` for a
//! disk ([`Qemu::disk`]: the kernel's `/dev/vda`; a missing file is created as a
//! sparse raw image of [`DISK_SIZE`] bytes; [`Qemu::scratch_disk`] adds
//! `snapshot=on`) and then any pass-through arguments.
//!
//! `cache=writeback` (QEMU's default, stated so it cannot drift): the guest
//! sees a volatile write cache, QEMU offers `VIRTIO_BLK_F_FLUSH`, and a guest
//! flush is an `fdatasync` of the image on the host; completed writes are in
//! the host's page cache, so they survive QEMU being killed, and flushed ones
//! survive a host crash.
//!
//! A run either inherits stdio ([`Qemu::run`], used by the CLI), captures
//! COM1 through a pipe ([`Qemu::run_capture`], used by tests), or both copies
//! COM1 live to our stdout and captures it ([`Qemu::run_streaming`], used by
//! the test runner), or lets a driver type into COM1 while it is captured
//! ([`Qemu::run_driven`], used by the console fuzz). All enforce the optional timeout by stopping QEMU
//! (SIGTERM, then SIGKILL after 3 s) and report [`KernelExit::Timeout`]. All
//! print the QEMU command line to stderr.
//!
//! Environment: `CADENCE_QEMU` overrides the QEMU binary, `CADENCE_OVMF`
//! names a combined OVMF image to use instead of the detected one.

use crate::image::Firmware;
use crate::{Error, Result};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Default `-smp` value: one package, two cores, two threads per core.
pub const DEFAULT_SMP: &str = "4,sockets=1,cores=2,threads=2";
/// Default `-m` value.
pub const DEFAULT_MEMORY: &str = "512M";

/// Longest fw_cfg file name QEMU accepts (56 bytes including the NUL).
const FW_CFG_MAX_NAME: usize = 55;
const WORKLOAD_PREFIX: &str = "opt/cadence/workload/";

/// Size of a disk image [`Qemu::disk`] creates: 256 MiB (sparse).
pub const DISK_SIZE: u64 = 256 << 20;

/// Creates `path` as a sparse raw image of [`DISK_SIZE`] bytes (and its parent
/// directories) unless it exists; an existing file is left as it is. Safe against
/// concurrent callers: the image is sized under a private name and then linked in
/// place, so nobody sees it half-made and the first one wins.
pub fn ensure_disk(path: &Path) -> Result<()> {
    if path.exists() {
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    // Unique per process and call (threads of one test binary create images too).
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}-{n}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let made =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&tmp).and_then(|f| f.set_len(DISK_SIZE)).and_then(|()| {
            match std::fs::hard_link(&tmp, path) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                r => r,
            }
        });
    let _ = std::fs::remove_file(&tmp);
    made.map_err(|e| Error::new(format!("cannot create disk image {}: {e}", path.display())))
}

/// How a run ended, from the kernel's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelExit {
    /// The kernel wrote 0x10 to the debug-exit port (QEMU status 33).
    Success,
    /// The kernel wrote 0x11 to the debug-exit port (QEMU status 35).
    Failure,
    /// QEMU exited 0: triple fault (with `-no-reboot`), reset or `quit`,
    /// i.e. the kernel never reported a result. Not a success.
    NoExit,
    /// The run hit its timeout and QEMU was stopped.
    Timeout,
    /// Any other QEMU status (QEMU errors, other debug-exit values);
    /// 128 + signal number when QEMU was killed by a signal.
    Other(i32),
}

impl KernelExit {
    fn from_status(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(33), _) => KernelExit::Success,
            (Some(35), _) => KernelExit::Failure,
            (Some(0), _) => KernelExit::NoExit,
            (Some(code), _) => KernelExit::Other(code),
            (None, Some(sig)) => KernelExit::Other(128 + sig),
            (None, None) => KernelExit::Other(-1),
        }
    }

    /// The exit status `cadence-boot` uses for this outcome: 0 success,
    /// 1 failure, 2 no kernel exit code, 124 timeout, otherwise QEMU's status.
    pub fn exit_code(self) -> i32 {
        match self {
            KernelExit::Success => 0,
            KernelExit::Failure => 1,
            KernelExit::NoExit => 2,
            KernelExit::Timeout => 124,
            KernelExit::Other(code) => code,
        }
    }
}

/// Result of a captured run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How the run ended.
    pub exit: KernelExit,
    /// Everything the kernel wrote to COM1 (lossily decoded as UTF-8).
    pub output: String,
    /// QEMU's own stderr (warnings, errors).
    pub stderr: String,
    /// Wall-clock time of the QEMU run (excluding image building).
    pub elapsed: Duration,
}

/// Where the UEFI firmware lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ovmf {
    /// A combined code+vars image, passed with `-bios`.
    Combined(PathBuf),
    /// Split images: code is mapped read-only, a private copy of vars writable.
    Split { code: PathBuf, vars: PathBuf },
}

/// Finds OVMF: `$CADENCE_OVMF`, then Debian's `/usr/share/ovmf/OVMF.fd`, then
/// split `/usr/share/OVMF/OVMF_CODE*.fd` + `OVMF_VARS*.fd` images.
pub fn find_ovmf() -> Result<Ovmf> {
    if let Some(path) = std::env::var_os("CADENCE_OVMF") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(Ovmf::Combined(path))
        } else {
            Err(Error::new(format!("CADENCE_OVMF={} is not a file", path.display())))
        };
    }
    for combined in ["/usr/share/ovmf/OVMF.fd", "/usr/share/qemu/OVMF.fd"] {
        if Path::new(combined).is_file() {
            return Ok(Ovmf::Combined(combined.into()));
        }
    }
    for (code, vars) in [
        ("/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"),
        ("/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"),
    ] {
        if Path::new(code).is_file() && Path::new(vars).is_file() {
            return Ok(Ovmf::Split { code: code.into(), vars: vars.into() });
        }
    }
    Err(Error::new(
        "UEFI firmware (OVMF) not found in /usr/share/ovmf or /usr/share/OVMF; \
         install it with `apt-get install ovmf` (or `make setup`), or set CADENCE_OVMF=<OVMF.fd>",
    ))
}

/// Builder for one QEMU run of a kernel ELF. See the module docs.
#[derive(Debug, Clone)]
pub struct Qemu {
    kernel: PathBuf,
    /// `None`: chosen at boot ([`Qemu::firmware`]).
    firmware: Option<Firmware>,
    smp: String,
    memory: String,
    args: String,
    timeout: Option<Duration>,
    trace: Option<PathBuf>,
    workloads: Vec<PathBuf>,
    initrd: Option<PathBuf>,
    disk: Option<PathBuf>,
    disk_snapshot: bool,
    disk_opts: Option<String>,
    extra: Vec<OsString>,
    interactive: bool,
    /// For [`Qemu::run`]: drop the bootloader's `INFO :` log from the output.
    quiet_bootloader: bool,
    echo: bool,
}

impl Qemu {
    /// A run of `kernel` with the default flags and firmware ([`Qemu::firmware`]), no command
    /// line and no timeout.
    pub fn new(kernel: impl Into<PathBuf>) -> Self {
        Qemu {
            kernel: kernel.into(),
            firmware: None,
            smp: DEFAULT_SMP.into(),
            memory: DEFAULT_MEMORY.into(),
            args: String::new(),
            timeout: None,
            trace: None,
            workloads: Vec::new(),
            initrd: None,
            disk: None,
            disk_snapshot: false,
            disk_opts: None,
            extra: Vec::new(),
            interactive: false,
            quiet_bootloader: false,
            echo: false,
        }
    }

    /// Boots through UEFI (OVMF) when `yes`, through BIOS when not (instead of the default,
    /// [`Qemu::firmware`]).
    pub fn uefi(mut self, yes: bool) -> Self {
        self.firmware = Some(if yes { Firmware::Uefi } else { Firmware::Bios });
        self
    }

    /// The firmware this run boots through: the one asked for, else UEFI when there is an
    /// initramfs and OVMF is installed, else BIOS. Why: the BIOS stage of the `bootloader`
    /// crate reads the ramdisk through int 13h, about 0.7 MB/s under TCG (the 19 MB root
    /// filesystem took 28 s of a 36 s boot), where OVMF loads it in about a second.
    pub fn firmware(&self) -> Firmware {
        self.firmware.unwrap_or_else(|| if self.initrd.is_some() && find_ovmf().is_ok() { Firmware::Uefi } else { Firmware::Bios })
    }

    /// Replaces the `-smp` value (any QEMU spec, e.g. `8` or `4,cores=2,threads=2`).
    pub fn smp(mut self, spec: impl Into<String>) -> Self {
        self.smp = spec.into();
        self
    }

    /// Replaces the `-m` value.
    pub fn memory(mut self, size: impl Into<String>) -> Self {
        self.memory = size.into();
        self
    }

    /// Sets the kernel command line (passed verbatim through fw_cfg).
    pub fn args(mut self, cmdline: impl Into<String>) -> Self {
        self.args = cmdline.into();
        self
    }

    /// Sets (or, with `None`, removes) the run's timeout.
    pub fn timeout(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.timeout = limit.into();
        self
    }

    /// Adds COM2 as a serial port written to `file`.
    pub fn trace(mut self, file: impl Into<PathBuf>) -> Self {
        self.trace = Some(file.into());
        self
    }

    /// Boots with `file` (a newc cpio archive) as the bootloader's ramdisk: the kernel's
    /// initramfs.
    pub fn initrd(mut self, file: impl Into<PathBuf>) -> Self {
        self.initrd = Some(file.into());
        self
    }

    /// Adds a workload file, visible to the kernel as
    /// `opt/cadence/workload/<basename>`.
    pub fn workload(mut self, file: impl Into<PathBuf>) -> Self {
        self.workloads.push(file.into());
        self
    }

    /// Attaches `path` as a virtio disk (`/dev/vda` in the kernel), creating a
    /// sparse [`DISK_SIZE`] image there if it does not exist. Writes go to the
    /// file (no snapshot): two runs cannot share one image at once (QEMU's
    /// image lock refuses the second).
    pub fn disk(mut self, path: impl Into<PathBuf>) -> Self {
        self.disk = Some(path.into());
        self.disk_snapshot = false;
        self
    }

    /// Extra QEMU `-drive` options for the disk (e.g. `throttling.bps-write=8388608`).
    pub fn disk_opts(mut self, opts: impl Into<String>) -> Self {
        self.disk_opts = Some(opts.into());
        self
    }

    /// Like [`disk`](Self::disk), but with `snapshot=on`: QEMU opens the image
    /// read-only and sends the guest's writes to a temporary overlay that is
    /// dropped at exit. The image stays as it was (a blank scratch stays
    /// blank), and any number of runs can share it at once.
    pub fn scratch_disk(mut self, path: impl Into<PathBuf>) -> Self {
        self.disk = Some(path.into());
        self.disk_snapshot = true;
        self
    }

    /// Appends a raw QEMU argument.
    pub fn qemu_arg(mut self, arg: impl Into<OsString>) -> Self {
        self.extra.push(arg.into());
        self
    }

    /// For [`Qemu::run`]: let QEMU read our stdin (typing into COM1).
    /// Otherwise QEMU's stdin is /dev/null.
    pub fn interactive(mut self, yes: bool) -> Self {
        self.interactive = yes;
        self
    }

    /// For [`Qemu::run`]: leave out the bootloader's `INFO :` log (some 30 lines before the
    /// kernel's first), see [`BootloaderFilter`]. `make run` does unless `VERBOSE=1`.
    pub fn quiet_bootloader(mut self, yes: bool) -> Self {
        self.quiet_bootloader = yes;
        self
    }

    /// For [`Qemu::run_capture`]: also copy COM1 output live to our stderr.
    pub fn echo(mut self, yes: bool) -> Self {
        self.echo = yes;
        self
    }

    /// The kernel command line.
    pub fn cmdline(&self) -> &str {
        &self.args
    }

    /// Builds (or reuses) the disk image and assembles the QEMU command.
    /// The returned [`Prepared`] owns the temp files the command refers to.
    fn prepare(&self) -> Result<Prepared> {
        let firmware = self.firmware();
        let image = crate::image::disk_image_with(&self.kernel, firmware, self.initrd.as_deref())?;
        let ovmf = match firmware {
            Firmware::Uefi => Some(find_ovmf()?),
            Firmware::Bios => None,
        };
        let workloads = self.checked_workloads()?;
        let tmp = TempDir::new()?;
        let qemu = std::env::var_os("CADENCE_QEMU").unwrap_or_else(|| "qemu-system-x86_64".into());

        let mut args: Vec<OsString> = Vec::new();
        let mut push = |parts: &[&OsStr]| args.extend(parts.iter().map(|p| p.to_os_string()));
        for a in ["-accel", "tcg", "-cpu", "max,vendor=GenuineIntel", "-smp"] {
            push(&[a.as_ref()]);
        }
        push(&[self.smp.as_ref(), "-m".as_ref(), self.memory.as_ref()]);
        // Interactive: QEMU's monitor multiplexer on stdio, so ^C, ^Z and ^\\ reach the
        // guest's terminal (Ctrl-A X quits QEMU) instead of signalling QEMU itself.
        let serial = if self.interactive { "mon:stdio" } else { "stdio" };
        for a in ["-serial", serial, "-display", "none", "-no-reboot", "-device"] {
            push(&[a.as_ref()]);
        }
        push(&["isa-debug-exit,iobase=0xf4,iosize=0x04".as_ref()]);
        match &ovmf {
            None => {}
            Some(Ovmf::Combined(fd)) => push(&["-bios".as_ref(), fd.as_os_str()]),
            Some(Ovmf::Split { code, vars }) => {
                let vars_copy = tmp.path.join("OVMF_VARS.fd");
                std::fs::copy(vars, &vars_copy)
                    .map_err(|e| Error::new(format!("cannot copy {} to {}: {e}", vars.display(), vars_copy.display())))?;
                push(&["-drive".as_ref(), &opt("if=pflash,format=raw,readonly=on,file=", code)]);
                push(&["-drive".as_ref(), &opt("if=pflash,format=raw,file=", &vars_copy)]);
            }
        }
        // snapshot=on: writes go to a throwaway overlay, so parallel runs can share
        // the cached image (otherwise QEMU refuses: "Failed to get \"write\" lock").
        // On an AHCI port, not the default IDE one: the firmware reads the boot image by DMA
        // there, by port I/O (a TCG exit per word) on IDE, which took 15 of a BIOS boot's
        // 18 host seconds with the 5 MiB kernel image (6 s on AHCI; UEFI with the
        // initramfs: 4.3 s instead of 6.8 s). The kernel has no AHCI driver and ignores it.
        let mut drive = opt("if=none,id=boot,format=raw,file=", &image);
        drive.push(",snapshot=on");
        push(&["-drive".as_ref(), &drive]);
        for a in ["-device", "ahci,id=ahci", "-device", "ide-hd,drive=boot,bus=ahci.0,bootindex=0"] {
            push(&[a.as_ref()]);
        }
        if !self.args.is_empty() {
            let file = tmp.path.join("cmdline");
            std::fs::write(&file, self.args.as_bytes()).map_err(|e| Error::new(format!("cannot write {}: {e}", file.display())))?;
            push(&["-fw_cfg".as_ref(), &opt("name=opt/cadence/cmdline,file=", &file)]);
        }
        if let Some(trace) = &self.trace {
            let mut spec = OsString::from("file:");
            spec.push(trace);
            push(&["-serial".as_ref(), &spec]);
        }
        for (name, path) in &workloads {
            let mut spec = OsString::from(format!("name={WORKLOAD_PREFIX}{name},"));
            spec.push(opt("file=", path));
            push(&["-fw_cfg".as_ref(), &spec]);
        }
        if let Some(disk) = &self.disk {
            ensure_disk(disk)?;
            let mut spec = opt("file=", disk);
            spec.push(",format=raw,if=virtio,cache=writeback");
            if self.disk_snapshot {
                spec.push(",snapshot=on");
            }
            if let Some(o) = &self.disk_opts {
                spec.push(",");
                spec.push(o);
            }
            push(&["-drive".as_ref(), &spec]);
        }
        args.extend(self.extra.iter().cloned());

        let display =
            std::iter::once(qemu.as_os_str()).chain(args.iter().map(|a| a.as_os_str())).map(shell_quote).collect::<Vec<_>>().join(" ");
        let mut command = Command::new(&qemu);
        command.args(&args);
        Ok(Prepared { command, display, qemu: qemu.to_string_lossy().into_owned(), _tmp: tmp })
    }

    /// Validates workloads: existing files with distinct, short-enough names.
    fn checked_workloads(&self) -> Result<Vec<(String, PathBuf)>> {
        let mut out: Vec<(String, PathBuf)> = Vec::new();
        for path in &self.workloads {
            let abs = std::fs::canonicalize(path).map_err(|e| Error::new(format!("workload {}: {e}", path.display())))?;
            if !abs.is_file() {
                return Err(Error::new(format!("workload {} is not a regular file", path.display())));
            }
            let name = abs
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| !n.contains(','))
                .ok_or_else(|| Error::new(format!("workload {}: name must be UTF-8 without commas", path.display())))?
                .to_string();
            if WORKLOAD_PREFIX.len() + name.len() > FW_CFG_MAX_NAME {
                return Err(Error::new(format!(
                    "workload name '{name}' is too long for fw_cfg (at most {} bytes)",
                    FW_CFG_MAX_NAME - WORKLOAD_PREFIX.len()
                )));
            }
            if out.iter().any(|(n, _)| *n == name) {
                return Err(Error::new(format!("two workloads are named '{name}'")));
            }
            out.push((name, abs));
        }
        Ok(out)
    }

    /// Runs QEMU with inherited stdout/stderr (COM1 appears live on stdout).
    pub fn run(&self) -> Result<KernelExit> {
        let mut prepared = self.prepare()?;
        eprintln!("cadence-boot: {}", prepared.display);
        let stdin = if self.interactive { Stdio::inherit() } else { Stdio::null() };
        prepared.command.stdin(stdin);
        if self.quiet_bootloader {
            prepared.command.stdout(Stdio::piped());
        }
        let mut child = prepared.spawn()?;
        // COM1 through the filter, byte by byte as it comes (a prompt has no newline).
        let copier = child.stdout.take().map(|mut pipe| {
            thread::spawn(move || {
                let mut filter = BootloaderFilter::default();
                let mut buf = [0u8; 4096];
                let mut out = std::io::stdout();
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let kept = filter.feed(&buf[..n]);
                    if out.write_all(&kept).and_then(|_| out.flush()).is_err() {
                        break;
                    }
                }
            })
        });
        let (exit, _) = wait_with_timeout(&mut child, self.timeout)?;
        if let Some(c) = copier {
            let _ = c.join();
        }
        Ok(exit)
    }

    /// Runs QEMU with COM1 captured through a pipe and stdin from /dev/null.
    pub fn run_capture(&self) -> Result<Outcome> {
        let mut prepared = self.prepare()?;
        eprintln!("cadence-boot: {}", prepared.display);
        prepared.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = prepared.spawn()?;
        let echo = if self.echo { Echo::Stderr } else { Echo::None };
        let out = child.stdout.take().map(|s| collect(s, echo));
        let err = child.stderr.take().map(|s| collect(s, Echo::None));
        let (exit, elapsed) = wait_with_timeout(&mut child, self.timeout)?;
        let join = |h: Option<thread::JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
        };
        Ok(Outcome { exit, output: join(out), stderr: join(err), elapsed })
    }

    /// Runs QEMU with stdin from /dev/null, COM1 copied live to our stdout *and* captured
    /// (in [`Outcome::output`]), and QEMU's stderr inherited ([`Outcome::stderr`] is empty).
    pub fn run_streaming(&self) -> Result<Outcome> {
        let mut prepared = self.prepare()?;
        eprintln!("cadence-boot: {}", prepared.display);
        prepared.command.stdin(Stdio::null()).stdout(Stdio::piped());
        let mut child = prepared.spawn()?;
        let out = child.stdout.take().map(|s| collect(s, Echo::Stdout));
        let (exit, elapsed) = wait_with_timeout(&mut child, self.timeout)?;
        let output = out.and_then(|h| h.join().ok()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        Ok(Outcome { exit, output, stderr: String::new(), elapsed })
    }
}

impl Qemu {
    /// Runs QEMU with COM1's input from `driver` and its output captured: `driver` gets a
    /// [`Console`] to type into and to wait on while the kernel runs. When the driver returns,
    /// QEMU's stdin is closed and the run ends as usual (the kernel's exit, or the timeout,
    /// which counts from the start). The driver's error, if any, is returned with the outcome.
    pub fn run_driven<T>(&self, driver: impl FnOnce(&mut Console) -> Result<T>) -> Result<(Outcome, Result<T>)> {
        let mut prepared = self.prepare()?;
        eprintln!("cadence-boot: {}", prepared.display);
        prepared.command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = prepared.spawn()?;
        let transcript = Arc::new(Mutex::new(Vec::new()));
        let reader = child.stdout.take().map(|pipe| {
            let transcript = transcript.clone();
            let echo = if self.echo { Echo::Stderr } else { Echo::None };
            thread::spawn(move || pump(pipe, echo, |chunk| transcript.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(chunk)))
        });
        let err = child.stderr.take().map(|s| collect(s, Echo::None));
        let start = Instant::now();
        let stdin = child.stdin.take();
        let mut console = Console { stdin, transcript: transcript.clone(), start, timeout: self.timeout, pid: child.id() };
        let driven = driver(&mut console);
        drop(console.stdin.take());
        let left = self.timeout.map(|t| t.saturating_sub(start.elapsed()));
        let (exit, _) = wait_with_timeout(&mut child, left)?;
        if let Some(r) = reader {
            let _ = r.join();
        }
        let output = String::from_utf8_lossy(&transcript.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
        let stderr = err.and_then(|h| h.join().ok()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        Ok((Outcome { exit, output, stderr, elapsed: start.elapsed() }, driven))
    }
}

/// COM1 of a [`Qemu::run_driven`] run: what the driver types, and what the kernel wrote.
pub struct Console {
    stdin: Option<std::process::ChildStdin>,
    transcript: Arc<Mutex<Vec<u8>>>,
    start: Instant,
    timeout: Option<Duration>,
    pid: u32,
}

impl Console {
    /// Kills QEMU at once (SIGKILL: a power cut; the guest gets no chance to write anything).
    pub fn kill_qemu(&mut self) -> Result<()> {
        let status = Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status()
            .map_err(|e| Error::new(format!("cannot run kill: {e}")))?;
        if !status.success() {
            return Err(Error::new(format!("kill -KILL {} failed ({status})", self.pid)));
        }
        Ok(())
    }

    /// Types `bytes` into COM1 (blocks while QEMU does not take them).
    pub fn send(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| Error::new("COM1 input is closed"))?;
        stdin.write_all(bytes).and_then(|_| stdin.flush()).map_err(|e| Error::new(format!("cannot type into COM1 (QEMU gone?): {e}")))
    }

    /// Bytes the kernel has written to COM1 so far.
    pub fn len(&self) -> usize {
        self.transcript.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Nothing written yet?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The output from byte `from` on, lossily decoded.
    pub fn output_since(&self, from: usize) -> String {
        let t = self.transcript.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&t[from.min(t.len())..]).into_owned()
    }

    /// Waits until the output from byte `from` on contains `needle`; returns the offset just
    /// past it. Fails after `limit` (or when the run's own timeout passes) with what came.
    pub fn wait_for(&self, needle: &str, from: usize, limit: Duration) -> Result<usize> {
        let until = Instant::now() + limit;
        loop {
            {
                let t = self.transcript.lock().unwrap_or_else(|e| e.into_inner());
                let hay = &t[from.min(t.len())..];
                if let Some(i) = hay.windows(needle.len().max(1)).position(|w| w == needle.as_bytes()) {
                    return Ok(from + i + needle.len());
                }
            }
            if Instant::now() >= until || self.timeout.is_some_and(|t| self.start.elapsed() >= t) {
                return Err(Error::new(format!("no {needle:?} on COM1 within {} s", limit.as_secs())));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A ready-to-spawn QEMU command and the temp files it refers to.
struct Prepared {
    command: Command,
    display: String,
    qemu: String,
    _tmp: TempDir,
}

impl Prepared {
    fn spawn(&mut self) -> Result<Child> {
        self.command.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::new(format!("{} not found; install it with `apt-get install qemu-system-x86` (or `make setup`)", self.qemu))
            } else {
                Error::new(format!("cannot start {}: {e}", self.qemu))
            }
        })
    }
}

/// Where [`collect`] copies what it reads, as it reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Echo {
    None,
    Stderr,
    Stdout,
}

/// Reads a pipe to the end on a thread, optionally echoing each chunk (write errors, e.g. a
/// closed stdout, are ignored: the capture goes on).
fn collect(pipe: impl Read + Send + 'static, echo: Echo) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut all = Vec::new();
        pump(pipe, echo, |chunk| all.extend_from_slice(chunk));
        all
    })
}

/// Reads `pipe` to the end, echoing each chunk as `echo` says and handing it to `sink`.
fn pump(mut pipe: impl Read, echo: Echo, mut sink: impl FnMut(&[u8])) {
    let mut buf = [0u8; 4096];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
            Ok(n) => {
                match echo {
                    Echo::None => {}
                    Echo::Stderr => {
                        let _ = std::io::stderr().write_all(&buf[..n]);
                    }
                    Echo::Stdout => {
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(&buf[..n]);
                        let _ = out.flush();
                    }
                }
                sink(&buf[..n]);
            }
        }
    }
}

/// Waits for QEMU, stopping it when `timeout` passes.
fn wait_with_timeout(child: &mut Child, timeout: Option<Duration>) -> Result<(KernelExit, Duration)> {
    let start = Instant::now();
    let werr = |e: std::io::Error| Error::new(format!("waiting for QEMU failed: {e}"));
    loop {
        if let Some(status) = child.try_wait().map_err(werr)? {
            return Ok((KernelExit::from_status(status), start.elapsed()));
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            stop(child);
            return Ok((KernelExit::Timeout, start.elapsed()));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM (lets QEMU restore the terminal), then SIGKILL after 3 s.
fn stop(child: &mut Child) {
    // Our own child's pid, not reaped yet.
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `prefix` + `path` with commas doubled, as QEMU's option parser wants.
fn opt(prefix: &str, path: &Path) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(path.to_string_lossy().replace(',', ",,"));
    s
}

/// Quotes an argument for display in a POSIX shell.
fn shell_quote(arg: &OsStr) -> String {
    let s = arg.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_=,./:+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A private temp directory, removed on drop.
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new() -> Result<Self> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!("cadence-boot-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&path).map_err(|e| Error::new(format!("cannot create {}: {e}", path.display())))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_mapping() {
        use std::os::unix::process::ExitStatusExt;
        let st = |code: i32| ExitStatus::from_raw(code << 8);
        assert_eq!(KernelExit::from_status(st(33)), KernelExit::Success);
        assert_eq!(KernelExit::from_status(st(35)), KernelExit::Failure);
        assert_eq!(KernelExit::from_status(st(0)), KernelExit::NoExit);
        assert_eq!(KernelExit::from_status(st(1)), KernelExit::Other(1));
        assert_eq!(KernelExit::from_status(ExitStatus::from_raw(9)), KernelExit::Other(137));
        assert_eq!(KernelExit::NoExit.exit_code(), 2);
        assert_eq!(KernelExit::Timeout.exit_code(), 124);
    }

    #[test]
    fn disk_is_created_sparse_once_and_attached() {
        let dir = TempDir::new().unwrap();
        let img = dir.path.join("sub/disk.img");
        ensure_disk(&img).unwrap();
        assert_eq!(std::fs::metadata(&img).unwrap().len(), DISK_SIZE);
        std::fs::write(&img, b"kept").unwrap();
        ensure_disk(&img).unwrap();
        assert_eq!(std::fs::read(&img).unwrap(), b"kept");
        let q = Qemu::new("/nonexistent-kernel").disk(&img);
        assert_eq!(q.disk.as_deref(), Some(img.as_path()));
        assert!(!q.disk_snapshot);
        let q = Qemu::new("/nonexistent-kernel").scratch_disk(&img);
        assert!(q.disk_snapshot);
        // Concurrent creators: every one succeeds, one image of the right size, no leftovers.
        let shared = dir.path.join("shared.img");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let p = shared.clone();
                std::thread::spawn(move || ensure_disk(&p))
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        assert_eq!(std::fs::metadata(&shared).unwrap().len(), DISK_SIZE);
        assert_eq!(std::fs::read_dir(&dir.path).unwrap().count(), 2, "sub/, shared.img and nothing else");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("-smp".as_ref()), "-smp");
        assert_eq!(shell_quote("a b".as_ref()), "'a b'");
        assert_eq!(shell_quote("it's".as_ref()), r"'it'\''s'");
        assert_eq!(opt("file=", Path::new("/a,b")), OsString::from("file=/a,,b"));
    }
}

/// Drops the bootloader's log from the start of COM1's output: its `INFO : ` lines, and the
/// indented lines and closing `}` of a multi-line one (`Elf file loaded at Pointer {`). At the
/// first line that is neither, it passes everything through, unbuffered, for good.
#[derive(Debug, Default)]
pub struct BootloaderFilter {
    passing: bool,
    /// The line being read while still filtering.
    line: Vec<u8>,
    /// Inside a multi-line `INFO :` record (its first line ended with `{`).
    in_record: bool,
}

impl BootloaderFilter {
    /// What of `bytes` to print.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        if self.passing {
            return bytes.to_vec();
        }
        let mut out = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            self.line.push(b);
            if b != b'\n' {
                // A partial line that cannot be the bootloader's: pass it and the rest now.
                if !self.could_be_bootloader() {
                    self.passing = true;
                    out.append(&mut self.line);
                    out.extend_from_slice(&bytes[i + 1..]);
                    return out;
                }
                continue;
            }
            let line = core::mem::take(&mut self.line);
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end();
            if text.starts_with("INFO : ") {
                self.in_record = text.ends_with('{');
            } else if self.in_record && (text.starts_with(' ') || text == "}") {
                self.in_record = text != "}";
            } else if text.is_empty() {
                // A blank line before the kernel's first: not worth showing.
            } else {
                self.passing = true;
                out.extend_from_slice(&line);
                out.extend_from_slice(&bytes[i + 1..]);
                return out;
            }
        }
        out
    }

    /// Can the partial line read so far still turn out to be the bootloader's?
    fn could_be_bootloader(&self) -> bool {
        const INFO: &[u8] = b"INFO : ";
        let l: &[u8] = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        let n = l.len().min(INFO.len());
        l[..n] == INFO[..n] || (self.in_record && (l.first() == Some(&b' ') || l == b"}"))
    }
}

#[cfg(test)]
mod bootloader_filter_tests {
    use super::BootloaderFilter;

    #[test]
    fn drops_the_bootloader_log_and_passes_the_rest() {
        let log = "INFO : Framebuffer info: x\r\nINFO : Elf file loaded at Pointer {\n    addr: 0x1,\n    metadata: 3,\n}\nINFO : Jumping\n[    0.06] cpu0: memory\ncadence> ";
        let mut f = BootloaderFilter::default();
        // Fed in pieces, split anywhere.
        let out: Vec<u8> = log.as_bytes().chunks(5).flat_map(|c| f.feed(c)).collect();
        assert_eq!(String::from_utf8(out).unwrap(), "[    0.06] cpu0: memory\ncadence> ");
    }

    #[test]
    fn a_kernel_without_bootloader_lines_passes_untouched() {
        let mut f = BootloaderFilter::default();
        assert_eq!(f.feed(b"cad"), b"cad");
        assert_eq!(f.feed(b"ence\nINFO : later lines pass too\n"), b"ence\nINFO : later lines pass too\n");
    }
}
