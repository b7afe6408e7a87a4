//! Memory and disk commands a Linux user knows: `dd`, `sync`, `free`, `vmstat`.
//!
//! | command | output |
//! |---|---|
//! | `dd if=/dev/zero\|/dev/vda of=/dev/vda\|/dev/null [bs=N] [count=N] [seek=N] [skip=N] [oflag=sync] [conv=notrunc\|fsync\|fdatasync] [status=none\|noxfer]` | GNU dd's summary: `N+M records in`, `N+M records out`, `B bytes (17 MB, 16 MiB) copied, 0.0152584 s, 1.1 GB/s` |
//! | `sync` | nothing (errors as `sync: error syncing '/dev/vda': <strerror>`) |
//! | `free [-b\|-k\|-m\|-g]` | procps's `total used free shared buff/cache available` (KiB by default) |
//! | `vmstat [DELAY [COUNT]]` | one line per DELAY seconds: `r b free buff cache` (KiB) as vmstat, then `dirty wback` (KiB), `bi bo` (KiB/s), `in cs` (/s) and `thr` (ms throttled by the dirty throttle per second, all tasks) |
//!
//! dd goes through the page cache (Linux's buffered block-device I/O) and the dirty throttle;
//! `oflag=sync` writes each block back and flushes the disk before the next (`O_SYNC`),
//! `conv=fsync`/`fdatasync` once at the end. Sizes take GNU's suffixes (`c` 1, `w` 2, `b` 512,
//! `k`/`K`/`KiB` 1024, `kB` 1000, `M`/`MiB`, `MB`, `G`/`GiB`, `GB`); a block is at most 64 MiB.
//! A write past the disk's end writes what fits (a partial record, as a short write counts in
//! GNU dd), then fails with `No space left on device`; errors name the device as
//! `dd: /dev/vda: <strerror>` and the record counts follow, as GNU prints them after an I/O
//! error (not after a failed open: without a disk only the error is printed); the exit status
//! is then 1. `conv=fsync` syncs before the summary, inside the timed span.

use super::{fail, usage_err, CmdResult, Error};
use crate::block::{pagecache, writeback};
use crate::drivers::virtio_blk::{self, BlkError, NAME};
use crate::mm::frame;
use crate::shout;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The largest `bs=` (the block is one heap buffer).
pub const MAX_BS: u64 = 64 << 20;

/// Parses a GNU size (`16M`, `4k`, `512`, `1MB`).
pub fn parse_size(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match suffix {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        "k" | "K" | "KiB" => 1 << 10,
        "kB" | "KB" => 1000,
        "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        "G" | "GiB" => 1 << 30,
        "GB" => 1_000_000_000,
        "T" | "TiB" => 1 << 40,
        "TB" => 1_000_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// GNU's human-readable size: the largest prefix the value reaches, one decimal below 10,
/// rounded to nearest (`17 MB`, `16 MiB`, `1.0 kB`, `512 B`).
pub fn human(value: u128, base: u128, units: &[&str; 7]) -> String {
    let mut k = 0;
    let mut scale = 1u128;
    while k + 1 < units.len() && value >= scale * base {
        scale *= base;
        k += 1;
    }
    let tenths = (value * 10 + scale / 2) / scale;
    if tenths < 100 && k > 0 {
        return format!("{}.{} {}", tenths / 10, tenths % 10, units[k]);
    }
    let whole = (value + scale / 2) / scale;
    if whole >= base && k + 1 < units.len() {
        return format!("1.0 {}", units[k + 1]);
    }
    format!("{} {}", whole, units[k])
}

const SI: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
const IEC: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// `%g` of `ns` as seconds (6 significant digits, trailing zeros dropped; exponent form below
/// 0.0001 s, as printf).
pub fn seconds_g(ns: u64) -> String {
    if ns == 0 {
        return String::from("0");
    }
    let digits = |v: u64| v.to_string().len() as i32;
    let mut d = digits(ns);
    let mut r = ns;
    if d > 6 {
        let p = 10u64.pow((d - 6) as u32);
        r = (ns + p / 2) / p;
        if digits(r) > 6 {
            r /= 10;
            d += 1;
        }
    }
    let s = r.to_string();
    // The value is s × 10^(d − len(s)) ns; the decimal exponent of its first digit:
    let exp10 = d - 1 - 9;
    if exp10 < -4 {
        let mut mant = String::from(&s[..1]);
        let rest = s[1..].trim_end_matches('0');
        if !rest.is_empty() {
            mant.push('.');
            mant.push_str(rest);
        }
        return format!("{}e-{:02}", mant, -exp10);
    }
    let int_digits = exp10 + 1;
    let mut out = if int_digits <= 0 {
        let mut o = String::from("0.");
        for _ in 0..-int_digits {
            o.push('0');
        }
        o.push_str(&s);
        o
    } else {
        let mut full = s.clone();
        while (full.len() as i32) < int_digits {
            full.push('0');
        }
        let (a, b) = full.split_at(int_digits as usize);
        format!("{}.{}", a, b)
    };
    if out.contains('.') {
        while out.ends_with('0') {
            out.pop();
        }
        if out.ends_with('.') {
            out.pop();
        }
    }
    out
}

/// dd's transfer line: `B bytes (SI, IEC) copied, S s, R/s` (GNU coreutils).
pub fn dd_summary(bytes: u64, ns: u64) -> String {
    let secs = seconds_g(ns);
    let rate = if ns == 0 {
        String::from("Infinity B/s")
    } else {
        format!("{}/s", human(u128::from(bytes) * 1_000_000_000 / u128::from(ns), 1000, &SI))
    };
    if bytes < 1000 {
        let plural = if bytes == 1 { "byte" } else { "bytes" };
        format!("{} {} copied, {} s, {}", bytes, plural, secs, rate)
    } else if bytes < 1024 {
        format!("{} bytes ({}) copied, {} s, {}", bytes, human(bytes.into(), 1000, &SI), secs, rate)
    } else {
        format!("{} bytes ({}, {}) copied, {} s, {}", bytes, human(bytes.into(), 1000, &SI), human(bytes.into(), 1024, &IEC), secs, rate)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    Zero,
    Disk,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Null,
    Disk,
}

/// What `dd` did, for its summary and for benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct DdStats {
    pub full_in: u64,
    pub part_in: u64,
    pub full_out: u64,
    pub part_out: u64,
    pub bytes: u64,
    pub ns: u64,
}

struct DdArgs {
    input: Input,
    output: Output,
    bs: u64,
    count: Option<u64>,
    seek: u64,
    skip: u64,
    osync: bool,
    fsync: bool,
    quiet: bool,
    noxfer: bool,
}

fn dd_number(s: &str) -> Result<u64, Error> {
    parse_size(s).ok_or_else(|| Error::Failed(format!("dd: invalid number: '{}'", s)))
}

fn dd_args(args: &[&str]) -> Result<DdArgs, Error> {
    let mut a = DdArgs {
        input: Input::Zero,
        output: Output::Null,
        bs: 512,
        count: None,
        seek: 0,
        skip: 0,
        osync: false,
        fsync: false,
        quiet: false,
        noxfer: false,
    };
    let (mut have_if, mut have_of) = (false, false);
    for arg in args {
        let Some((k, v)) = arg.split_once('=') else {
            return Err(usage_err("dd", format!("unrecognized operand '{}'", arg)));
        };
        match k {
            "if" => {
                have_if = true;
                a.input = match v {
                    "/dev/zero" => Input::Zero,
                    NAME => Input::Disk,
                    _ => return Err(fail("dd", format!("failed to open '{}': No such file or directory", v))),
                }
            }
            "of" => {
                have_of = true;
                a.output = match v {
                    "/dev/null" => Output::Null,
                    NAME => Output::Disk,
                    _ => return Err(fail("dd", format!("failed to open '{}': No such file or directory", v))),
                }
            }
            "bs" | "ibs" | "obs" => {
                let n = dd_number(v)?;
                if n == 0 {
                    return Err(fail("dd", format!("invalid number: '{}'", v)));
                }
                if n > MAX_BS {
                    return Err(fail(
                        "dd",
                        format!("memory exhausted by input buffer of size {} bytes ({})", n, human(n.into(), 1024, &IEC)),
                    ));
                }
                a.bs = n;
            }
            "count" => a.count = Some(dd_number(v)?),
            "seek" | "oseek" => a.seek = dd_number(v)?,
            "skip" | "iseek" => a.skip = dd_number(v)?,
            "oflag" => {
                for f in v.split(',') {
                    match f {
                        "sync" | "dsync" => a.osync = true,
                        _ => return Err(fail("dd", format!("invalid output flag: '{}'", f))),
                    }
                }
            }
            "conv" => {
                for f in v.split(',') {
                    match f {
                        "notrunc" => {}
                        "fsync" | "fdatasync" => a.fsync = true,
                        _ => return Err(fail("dd", format!("invalid conversion: '{}'", f))),
                    }
                }
            }
            "status" => match v {
                "none" => a.quiet = true,
                "noxfer" => a.noxfer = true,
                "progress" => {}
                _ => return Err(fail("dd", format!("invalid status level: '{}'", v))),
            },
            _ => return Err(usage_err("dd", format!("unrecognized operand '{}'", arg))),
        }
    }
    if !have_if || !have_of {
        return Err(usage_err("dd", "if= and of= are required (if=/dev/zero|/dev/vda, of=/dev/vda|/dev/null)"));
    }
    Ok(a)
}

fn dev_err(e: BlkError) -> String {
    format!("dd: {}: {}", NAME, e.strerror())
}

/// Why a dd run stopped early: the message, and whether the device was opened (GNU prints
/// the record counts after an I/O error, not after a failed open).
struct DdError {
    msg: String,
    opened: bool,
}

/// Runs one dd transfer (and its final sync for `conv=fsync`, timed with it, as GNU does).
fn dd_run(a: &DdArgs) -> (DdStats, Result<(), DdError>) {
    let mut st = DdStats::default();
    let t0 = crate::time::uptime_ns();
    let opened = a.input == Input::Zero && a.output == Output::Null || pagecache::disk_bytes().is_ok();
    let mut result = dd_copy(a, &mut st).map_err(|msg| DdError { msg, opened });
    if result.is_ok() && a.fsync && a.output == Output::Disk {
        if let Err(e) = writeback::sync() {
            result = Err(DdError { msg: format!("dd: fsync failed for '{}': {}", NAME, e.strerror()), opened: true });
        }
    }
    st.ns = crate::time::uptime_ns() - t0;
    (st, result)
}

fn dd_copy(a: &DdArgs, st: &mut DdStats) -> Result<(), String> {
    let size = if a.input == Input::Disk || a.output == Output::Disk { pagecache::disk_bytes().map_err(dev_err)? } else { 0 };
    let mut buf: Vec<u8> = Vec::new();
    buf.try_reserve_exact(a.bs as usize)
        .map_err(|_| format!("dd: memory exhausted by input buffer of size {} bytes ({})", a.bs, human(a.bs.into(), 1024, &IEC)))?;
    buf.resize(a.bs as usize, 0);
    let bs = a.bs;
    let mut i = 0u64;
    loop {
        if a.count.is_some_and(|c| i >= c) || crate::sched::signal::current_fatal_pending() {
            return Ok(());
        }
        // Input.
        let n = match a.input {
            Input::Zero => bs,
            Input::Disk => {
                let pos = a.skip.checked_add(i).and_then(|b| b.checked_mul(bs)).unwrap_or(u64::MAX);
                if pos >= size {
                    return Ok(());
                }
                let n = bs.min(size - pos);
                pagecache::read(pos, &mut buf[..n as usize]).map_err(dev_err)?;
                n
            }
        };
        if n == bs {
            st.full_in += 1;
        } else {
            st.part_in += 1;
        }
        // Output.
        if a.output == Output::Disk {
            let pos = a.seek.checked_add(i).and_then(|b| b.checked_mul(bs)).unwrap_or(u64::MAX);
            let room = size.saturating_sub(pos).min(n);
            if room > 0 {
                writeback::write(pos, &buf[..room as usize], a.osync).map_err(dev_err)?;
                st.bytes += room;
                if room == bs {
                    st.full_out += 1;
                } else {
                    st.part_out += 1;
                }
            }
            if room < n {
                return Err(dev_err(BlkError::NoSpace));
            }
        } else {
            st.bytes += n;
            if n == bs {
                st.full_out += 1;
            } else {
                st.part_out += 1;
            }
        }
        if a.input == Input::Disk && n < bs {
            return Ok(());
        }
        i += 1;
    }
}

/// `dd` from a benchmark: `bytes` from /dev/zero to the disk at `pos`, in `bs` blocks; the
/// time it took (ns) and the first error.
pub fn dd_zero_to_disk(pos: u64, bytes: u64, bs: u64) -> (u64, Result<(), BlkError>) {
    let buf = alloc::vec![0u8; bs as usize];
    let t0 = crate::time::uptime_ns();
    let mut done = 0;
    let mut result = Ok(());
    while done < bytes && !crate::sched::signal::current_fatal_pending() {
        let n = bs.min(bytes - done);
        if let Err(e) = writeback::write(pos + done, &buf[..n as usize], false) {
            result = Err(e);
            break;
        }
        done += n;
    }
    (crate::time::uptime_ns() - t0, result)
}

pub fn cmd_dd(args: &[&str]) -> CmdResult {
    let a = dd_args(args)?;
    let (st, result) = dd_run(&a);
    if let Err(e) = &result {
        shout!("{}", e.msg);
        if !e.opened {
            return Err(Error::Failed(String::new()));
        }
    }
    if !a.quiet {
        shout!("{}+{} records in", st.full_in, st.part_in);
        shout!("{}+{} records out", st.full_out, st.part_out);
        if !a.noxfer {
            shout!("{}", dd_summary(st.bytes, st.ns));
        }
    }
    result.map_err(|_| Error::Failed(String::new()))
}

pub fn cmd_sync(args: &[&str]) -> CmdResult {
    if let Some(a) = args.first() {
        return Err(usage_err("sync", format!("extra operand '{}' (only the disk is synced)", a)));
    }
    match writeback::sync() {
        Ok(()) | Err(BlkError::NoDevice) => Ok(()),
        Err(e) => Err(fail("sync", format!("error syncing '{}': {}", NAME, e.strerror()))),
    }
}

/// Memory as `free` and `vmstat` see it, in KiB.
struct Mem {
    total: u64,
    free: u64,
    cache: u64,
    dirty: u64,
    writeback: u64,
    available: u64,
}

fn mem() -> Mem {
    let kib = frame::FRAME_SIZE / 1024;
    let c = pagecache::counts();
    let free = frame::free_frames();
    let low = frame::watermarks().0.low;
    // Linux's MemAvailable, simplified: free above `low` plus the clean cache.
    let clean = c.pages.saturating_sub(c.dirty + c.writeback);
    Mem {
        total: frame::total_frames() * kib,
        free: free * kib,
        cache: c.pages * kib,
        dirty: c.dirty * kib,
        writeback: c.writeback * kib,
        available: (free.saturating_sub(low) + clean) * kib,
    }
}

pub fn cmd_free(args: &[&str]) -> CmdResult {
    let mut shift = 0u32; // KiB → unit: 0 KiB, 10 MiB, 20 GiB; bytes handled apart
    let mut bytes = false;
    for a in args {
        match *a {
            "-k" | "--kibi" => shift = 0,
            "-m" | "--mebi" => shift = 10,
            "-g" | "--gibi" => shift = 20,
            "-b" | "--bytes" => bytes = true,
            _ => return Err(usage_err("free", format!("invalid option -- '{}'", a.trim_start_matches('-')))),
        }
    }
    let m = mem();
    let unit = |kib: u64| if bytes { kib * 1024 } else { kib >> shift };
    let used = m.total.saturating_sub(m.free + m.cache);
    shout!("{:<7}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}", "", "total", "used", "free", "shared", "buff/cache", "available");
    shout!(
        "{:<7}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
        "Mem:",
        unit(m.total),
        unit(used),
        unit(m.free),
        0,
        unit(m.cache),
        unit(m.available)
    );
    shout!("{:<7}{:>12}{:>12}{:>12}", "Swap:", 0, 0, 0);
    Ok(())
}

/// Cumulative counters vmstat turns into rates.
#[derive(Clone, Copy)]
struct Counters {
    pages_in: u64,
    pages_out: u64,
    interrupts: u64,
    switches: u64,
    throttled_ns: u64,
    at: u64,
}

fn counters() -> Counters {
    let (pages_in, pages_out, _) = pagecache::io_counters();
    let (mut ticks, mut switches) = (0, 0);
    for c in crate::percpu::online_cpus() {
        ticks += crate::sched::rq_of(c.cpu_id).ticks.load(core::sync::atomic::Ordering::Relaxed);
        switches += crate::sched::rq_of(c.cpu_id).nr_switches.load(core::sync::atomic::Ordering::Relaxed);
    }
    Counters {
        pages_in,
        pages_out,
        interrupts: ticks + virtio_blk::counters().0,
        switches,
        throttled_ns: writeback::throttled_ns_total(),
        at: crate::time::uptime_ns(),
    }
}

pub fn cmd_vmstat(args: &[&str]) -> CmdResult {
    let num = |s: &str| s.parse::<u64>().map_err(|_| usage_err("vmstat", format!("invalid number '{}'", s)));
    let (delay, count) = match args {
        [] => (0, 1),
        [d] => (num(d)?, u64::MAX),
        [d, c] => (num(d)?, num(c)?),
        _ => return Err(Error::Usage(None)),
    };
    if !args.is_empty() && delay == 0 {
        return Err(usage_err("vmstat", "delay must be positive integer"));
    }
    shout!("procs ------------memory------------ --dirty pages-- ---io--- -system-- throttle");
    shout!(" r  b    free    buff   cache   dirty   wback      bi     bo   in   cs  thr");
    // The first line averages since boot, as vmstat's does.
    let mut prev = Counters { pages_in: 0, pages_out: 0, interrupts: 0, switches: 0, throttled_ns: 0, at: 0 };
    let mut shown = 0;
    while shown < count {
        if shown > 0 {
            crate::sched::sleep_ns(delay.saturating_mul(1_000_000_000));
        }
        let now = counters();
        let m = mem();
        let secs_x1000 = ((now.at - prev.at) / 1_000_000).max(1);
        let per_s = |d: u64| d * 1000 / secs_x1000;
        let running: u32 = crate::percpu::online_cpus()
            .map(|c| crate::sched::rq_of(c.cpu_id).nr_running.load(core::sync::atomic::Ordering::Relaxed))
            .sum();
        shout!(
            "{:>2} {:>2} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>4} {:>4} {:>4}",
            running,
            0,
            m.free,
            0,
            m.cache,
            m.dirty,
            m.writeback,
            per_s((now.pages_in - prev.pages_in) * 4),
            per_s((now.pages_out - prev.pages_out) * 4),
            per_s(now.interrupts - prev.interrupts),
            per_s(now.switches - prev.switches),
            per_s((now.throttled_ns - prev.throttled_ns) / 1_000_000)
        );
        prev = now;
        shown += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test_case]
    fn dd_numbers_and_summary_match_gnu() {
        assert_eq!(parse_size("16M"), Some(16 << 20));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("1MB"), Some(1_000_000));
        assert_eq!(parse_size("2b"), Some(1024));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("1Q"), None);
        assert_eq!(seconds_g(15_258_400), "0.0152584");
        assert_eq!(seconds_g(1_500_000_000), "1.5");
        assert_eq!(seconds_g(123_456_789_000), "123.457");
        assert_eq!(seconds_g(12_000), "1.2e-05");
        assert_eq!(dd_summary(16 << 20, 15_258_400), "16777216 bytes (17 MB, 16 MiB) copied, 0.0152584 s, 1.1 GB/s");
        assert_eq!(dd_summary(512, 1_000_000), "512 bytes copied, 0.001 s, 512 kB/s");
        assert_eq!(dd_summary(1000, 1_000_000_000), "1000 bytes (1.0 kB) copied, 1 s, 1.0 kB/s");
    }
}
