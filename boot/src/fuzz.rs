//! Console fuzz: random input into Cadence's shell over COM1 (`cadence-boot fuzz-console`,
//! `make test-chaos`'s second part, a short run in `make test`).
//!
//! A seeded generator ([`Fuzzer`]) makes *bursts* of input, each one of:
//! random bytes (every value 0–255), escape sequences (CSI with random parameters, SS3,
//! truncated ones), runs of NULs, 10,000-byte lines, ^C storms, editing keys (backspace, ^U,
//! ^A/^E, arrows, Delete) over random text, control and high bytes, and *command lines*: real
//! command names with random, mostly invalid arguments (bad numbers, unknown flags, unbalanced
//! quotes, `&`, `;`), so the argument parsers' error paths run too. `blk` is among them: with a
//! disk attached (`--scratch-disk`, as `make test-chaos` and `make test` do) its reads, fills
//! and verifies reach the virtio driver, and ^C storms interrupt them between batches.
//!
//! Command lines leave out what would end the session for reasons that are not bugs:
//! `poweroff`, `kill` (a SIGSTOP to the shell stops it, as on Linux), `sleep`, `bench`,
//! `chaos`, `trace dump`, and sysctl writes of values a sysctl accepts (a real name gets
//! only invalid values: `debug.fail_alloc.probability=100` would make the final checks fail
//! by design). Random bytes can still form anything; at 256^-9 for `poweroff\r`, that is noise.
//!
//! Contract of a run ([`run`]): every [`PROBE_EVERY`] bursts the driver checks that the shell
//! still answers (`^C`, then `echo fuzz-alive-N`, whose *output line* must appear within
//! [`PROBE_LIMIT`]; retried, since bytes typed while a command runs may be dropped by the
//! kernel's receive ring). At the end `echo` and `ps` must answer, then `poweroff` must exit
//! with success, and the output must hold no `cadence: PANIC`, `cadence: EXCEPTION` or
//! `shell exited` line. The final line, exactly:
//!
//! ```text
//! console-fuzz: seed=<n> seconds=<n> bursts=<n> bytes=<n> probes=<n> result=<ok|FAILED: why>
//! ```

use crate::{Console, Error, KernelExit, Outcome, Qemu, Result};
use std::time::{Duration, Instant};

/// Bursts between two liveness probes.
pub const PROBE_EVERY: u64 = 25;
/// How long one probe may take to answer (TCG, a command's output still printing).
pub const PROBE_LIMIT: Duration = Duration::from_secs(20);
/// Attempts per probe.
const PROBE_TRIES: u32 = 4;

/// xorshift64*: small, seeded, reproducible.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// Commands the generator types, with argument words it likes for each.
const COMMANDS: &[(&str, &[&str])] = &[
    ("echo", &["hello", "-n", "-e", "\\x41", "$HOME", "a;b"]),
    ("help", &["ps", "chrt", "nosuch", "bench", "-x"]),
    ("ps", &["-e", "-L", "-x", "aux", "--", "-eL"]),
    ("chrt", &["-p", "-f", "-r", "-o", "-b", "-i", "-R", "-m", "-d", "99", "0", "100", "-1"]),
    ("nice", &["-n", "-20", "19", "40", "-", "--", "-5"]),
    ("renice", &["-n", "-p", "19", "-21", "+5", "x"]),
    ("taskset", &["-p", "-c", "-cp", "0", "0x0", "ff", "0-3", "3-0", ",", "0-999"]),
    ("jobs", &["-l", "%1"]),
    ("sysctl", &["-a", "-n", "-q", "-w", "kernel.sched_features", "kernel.nosuch"]),
    ("prlimit", &["--pid", "--rttime=", "--rttime=1:0", "unlimited", "--nofile"]),
    ("group", &["create", "move", "weight", "destroy", "/", "g", "0", "262145"]),
    ("coresched", &["get", "create", "share-to", "share-from", "stat", "--type", "pgid", "tid"]),
    ("trace", &["report", "check", "rt", "wc", "coresched", "-b", "events", "irqsoff", "stop", "clear"]),
    // The virtio disk (a scratch image under `make test-chaos`; without one every call is
    // ENODEV): counts run from in range to past the end and overflowing.
    // 4 KiB blocks, 512-byte sectors: a 256 MiB scratch image has 65,536 and 524,288.
    ("blk", &["info", "read", "fill", "verify", "0", "7", "64", "65536", "65537", "524287", "524288", "-1"]),
    ("nosuch-command", &["x"]),
];

/// Argument words for any command: numbers that are out of range, not numbers, or edge cases.
const WORDS: &[&str] = &[
    "0", "1", "-1", "2", "7", "4294967295", "4294967296", "-2147483649", "18446744073709551616", "0x", "0x10", "1e3", "1.5", "-0", "+", "",
    "\"", "'", "\"unterminated", "'a b", "\\", "&", ";", "|", ">", "<", "$", "%", "%99", "--", "-", "-h", "--help", "-zz", "NaN", "inf",
    "\u{e9}", "\u{1f600}",
];

/// Real sysctl names, given only values none of them accepts.
const SYSCTLS: &[&str] = &[
    "kernel.sched_rr_timeslice_ms", "kernel.sched_rt_runtime_us", "kernel.sched_autogroup_enabled", "kernel.sched_core",
    "debug.fail_alloc.probability", "kernel.watchdog_thresh",
];
/// (No spaces: the shell would split `NAME=1 2` into a valid write and a word.)
const BAD_VALUES: &[&str] = &["", "abc", "1x", "0x", "99999999999999999999999", "--", "-", "1.5.2"];

/// One kind of burst (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    RandomBytes,
    Escapes,
    Nuls,
    LongLine,
    CtrlCStorm,
    Editing,
    ControlAndHigh,
    CommandLine,
}

/// Bursts of input from a seed.
pub struct Fuzzer {
    rng: Rng,
}

impl Fuzzer {
    pub fn new(seed: u64) -> Self {
        Fuzzer { rng: Rng::new(seed) }
    }

    /// The next burst and its kind. Command lines come most often (they reach the most code).
    pub fn burst(&mut self) -> (Kind, Vec<u8>) {
        let r = &mut self.rng;
        let kind = match r.below(16) {
            0 | 1 => Kind::RandomBytes,
            2 | 3 => Kind::Escapes,
            4 => Kind::Nuls,
            5 => Kind::LongLine,
            6 => Kind::CtrlCStorm,
            7 | 8 => Kind::Editing,
            9 => Kind::ControlAndHigh,
            _ => Kind::CommandLine,
        };
        let mut out = Vec::new();
        match kind {
            Kind::RandomBytes => {
                for _ in 0..1 + r.below(256) {
                    out.push(r.next_u64() as u8);
                }
            }
            Kind::Escapes => {
                for _ in 0..1 + r.below(8) {
                    // Each round starts with ESC, then a random tail (clippy's same_item_push
                    // misses the tail pushed by the match).
                    out.extend_from_slice(b"\x1b");
                    match r.below(5) {
                        0 => {} // a lone ESC
                        1 => out.push(b'['),
                        2 => out.extend_from_slice(&[b'O', r.next_u64() as u8]),
                        _ => {
                            out.push(b'[');
                            for _ in 0..r.below(6) {
                                out.extend_from_slice(r.below(1000).to_string().as_bytes());
                                if r.below(2) == 0 {
                                    out.push(b';');
                                }
                            }
                            out.push(*r.pick(b"ABCDHF~mJKnR@PX"));
                        }
                    }
                }
                if r.below(2) == 0 {
                    out.push(b'\r');
                }
            }
            Kind::Nuls => out.resize(1 + r.below(500) as usize, 0),
            Kind::LongLine => {
                for _ in 0..10_000 {
                    out.push(b' ' + r.below(95) as u8);
                }
                out.push(b'\r');
            }
            Kind::CtrlCStorm => out.resize(100 + r.below(1900) as usize, 0x03),
            Kind::Editing => {
                const KEYS: &[&[u8]] = &[
                    b"\x7f", b"\x08", b"\x15", b"\x01", b"\x05", b"\x02", b"\x06", b"\x04", b"\x0c", b"\x10", b"\x0e", b"\x1b[A",
                    b"\x1b[B", b"\x1b[C", b"\x1b[D", b"\x1b[3~", b"\x1b[1~", b"\x1b[4~", b"\x1b[1;5C",
                ];
                for _ in 0..1 + r.below(40) {
                    if r.below(2) == 0 {
                        out.extend_from_slice(r.pick(KEYS));
                    } else {
                        out.push(b' ' + r.below(95) as u8);
                    }
                }
                out.push(if r.below(2) == 0 { 0x03 } else { b'\r' });
            }
            Kind::ControlAndHigh => {
                for _ in 0..1 + r.below(64) {
                    let b = if r.below(2) == 0 { r.below(0x20) as u8 } else { 0x80 | r.next_u64() as u8 };
                    // Keep ^C and CR rare here (they have bursts of their own).
                    out.push(if b == 0x03 || b == b'\r' { 0 } else { b });
                }
                out.push(b'\r');
            }
            Kind::CommandLine => {
                out.extend_from_slice(self.command_line().as_bytes());
                let r = &mut self.rng;
                out.extend_from_slice(match r.below(4) {
                    0 => b"\n",
                    1 => b"\r\n",
                    _ => b"\r",
                });
            }
        }
        (kind, out)
    }

    /// One command line (without its line end): a command, its words and any words.
    pub fn command_line(&mut self) -> String {
        let r = &mut self.rng;
        let (cmd, likes) = *r.pick(COMMANDS);
        let mut line = String::from(cmd);
        if cmd == "sysctl" && r.below(2) == 0 {
            line.push(' ');
            if r.below(2) == 0 {
                line.push_str("-w ");
            }
            line.push_str(r.pick(SYSCTLS));
            line.push('=');
            line.push_str(r.pick(BAD_VALUES));
            return line;
        }
        if cmd == "blk" && r.below(2) == 0 {
            // Half the time well formed, so requests reach the disk (random words almost never
            // give `fill`/`verify` exactly two numbers): sectors and counts at the edges of a
            // 256 MiB image (524,288 sectors, 65,536 blocks) and past them. No `&`: ^C must
            // reach a long fill or verify.
            match r.below(3) {
                0 => line.push_str(&format!(" read {}", r.pick(&[0u64, 7, 524_287, 524_288]))),
                k => {
                    let sub = if k == 1 { "fill" } else { "verify" };
                    line.push_str(&format!(" {sub} {} {}", r.below(5), r.pick(&[0u64, 1, 16, 256, 65_536, 65_537])));
                }
            }
            return line;
        }
        for _ in 0..r.below(6) {
            line.push(' ');
            let w = if r.below(2) == 0 { *r.pick(likes) } else { *r.pick(WORDS) };
            line.push_str(w);
        }
        match r.below(10) {
            0 => line.push_str(" &"),
            1 => line.push_str("; echo x"),
            _ => {}
        }
        line
    }
}

/// What [`run`] did.
#[derive(Debug, Default)]
pub struct Summary {
    pub bursts: u64,
    pub bytes: u64,
    pub probes: u64,
}

/// Checks that the shell answers: `^C`, then `echo MARK` until MARK's output line appears.
fn probe(con: &mut Console, mark: &str) -> Result<()> {
    for _ in 0..PROBE_TRIES {
        // Let a command's output finish and the receive ring drain, then a clean line.
        std::thread::sleep(Duration::from_millis(300));
        let from = con.len();
        con.send(b"\x03")?;
        con.send(format!("echo {mark}\r").as_bytes())?;
        // The output line, not the echo of the typed one (which follows the prompt).
        if con.wait_for(&format!("\n{mark}\r"), from, PROBE_LIMIT).is_ok() {
            return Ok(());
        }
    }
    Err(Error::new(format!("the shell did not answer `echo {mark}` in {PROBE_TRIES} tries")))
}

/// Lines of `output` that show the kernel failing.
pub fn failure_lines(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|l| l.contains("cadence: PANIC") || l.contains("cadence: EXCEPTION") || l.contains("shell exited"))
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

/// The end of a [`run`].
pub struct Finished {
    /// No failure found.
    pub ok: bool,
    /// The final line (see the module doc).
    pub line: String,
    /// QEMU's outcome, with the whole COM1 transcript.
    pub outcome: Outcome,
}

/// Boots `qemu`, fuzzes the shell for `seconds`, checks it still answers, powers off; `Err`
/// only if QEMU could not run.
pub fn run(qemu: &Qemu, seed: u64, seconds: u64) -> Result<Finished> {
    let mut summary = Summary::default();
    let (outcome, driven) = qemu.run_driven(|con| {
        con.wait_for("cadence> ", 0, Duration::from_secs(120))?;
        let mut fuzz = Fuzzer::new(seed);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(seconds) {
            let (_, bytes) = fuzz.burst();
            con.send(&bytes)?;
            summary.bursts += 1;
            summary.bytes += bytes.len() as u64;
            if summary.bursts.is_multiple_of(PROBE_EVERY) {
                summary.probes += 1;
                probe(con, &format!("fuzz-alive-{}", summary.probes))?;
            }
        }
        probe(con, "fuzz-done")?;
        let from = con.len();
        con.send(b"ps\r")?;
        con.wait_for("COMMAND", from, PROBE_LIMIT).map_err(|e| Error::new(format!("`ps` did not answer: {e}")))?;
        con.wait_for("cadence> ", from, PROBE_LIMIT)?;
        con.send(b"poweroff\r")?;
        Ok(())
    })?;
    let mut why = Vec::new();
    if let Err(e) = driven {
        why.push(e.to_string());
    }
    let bad = failure_lines(&outcome.output);
    if let Some(first) = bad.first() {
        why.push(format!("{} failure line(s), first: {first}", bad.len()));
    }
    if outcome.exit != KernelExit::Success {
        why.push(format!("the kernel's exit was {:?}, not a clean poweroff", outcome.exit));
    }
    let result = if why.is_empty() { String::from("ok") } else { format!("FAILED: {}", why.join("; ")) };
    let line = format!(
        "console-fuzz: seed={seed} seconds={seconds} bursts={} bytes={} probes={} result={result}",
        summary.bursts, summary.bytes, summary.probes
    );
    Ok(Finished { ok: why.is_empty(), line, outcome })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_input() {
        let (mut a, mut b) = (Fuzzer::new(7), Fuzzer::new(7));
        for _ in 0..200 {
            assert_eq!(a.burst(), b.burst());
        }
        let mut c = Fuzzer::new(8);
        assert!((0..20).any(|_| a.burst() != c.burst()));
    }

    #[test]
    fn every_kind_comes_up_and_long_lines_are_long() {
        let mut f = Fuzzer::new(1);
        let mut seen = Vec::new();
        for _ in 0..2000 {
            let (k, bytes) = f.burst();
            assert!(!bytes.is_empty());
            if k == Kind::LongLine {
                assert_eq!(bytes.len(), 10_001);
            }
            if !seen.contains(&k) {
                seen.push(k);
            }
        }
        assert_eq!(seen.len(), 8, "{seen:?}");
    }

    #[test]
    fn blk_requests_are_often_well_formed() {
        let mut f = Fuzzer::new(5);
        let lines: Vec<String> = (0..20_000).map(|_| f.command_line()).filter(|l| l.starts_with("blk ")).collect();
        let formed = |sub: &str, args: usize| {
            lines
                .iter()
                .filter(|l| {
                    let w: Vec<&str> = l.split(' ').collect();
                    w.len() == 2 + args && w[1] == sub && w[2..].iter().all(|a| a.parse::<u64>().is_ok())
                })
                .count()
        };
        assert!(formed("read", 1) > 50 && formed("fill", 2) > 50 && formed("verify", 2) > 50, "{lines:?}");
    }

    #[test]
    fn command_lines_leave_out_session_enders() {
        let mut f = Fuzzer::new(3);
        for _ in 0..5000 {
            let line = f.command_line();
            let first = line.split(' ').next().unwrap();
            assert!(!["poweroff", "kill", "sleep", "bench", "chaos"].contains(&first), "{line}");
            assert!(!line.contains("dump"), "{line}");
            if let Some((name, value)) = line.strip_prefix("sysctl ").and_then(|l| l.rsplit_once('=')) {
                assert!(SYSCTLS.iter().any(|s| name.ends_with(s)), "{line}");
                assert!(value.parse::<i64>().is_err(), "{line}: a value a sysctl could take");
            }
        }
    }

    #[test]
    fn failure_lines_are_found() {
        let out = "cadence> ps\r\n  PID\r\ncadence: PANIC on cpu 1: x\r\ncadence: shell exited (-1), restarting\r\n";
        assert_eq!(failure_lines(out).len(), 2);
        assert!(failure_lines("cadence> echo EXCEPTION\r\nEXCEPTION\r\n").is_empty());
    }
}
