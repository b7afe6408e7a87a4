//! The scheduling commands, mirroring the Linux tools' syntax and messages:
//!
//! | command | tool | output |
//! |---|---|---|
//! | `ps` | procps `ps -eLo pid,tid,cls,rtprio,ni,psr,stat,time,comm` | one header line, one line per task |
//! | `chrt` | util-linux | `pid N's current scheduling policy: SCHED_FIFO` / `... priority: 50`; `chrt -m` min/max table |
//! | `nice`, `renice` | coreutils / util-linux | `N (process ID) old priority A, new priority B` |
//! | `taskset` | util-linux | `pid N's current affinity mask: f` (`list: 0-3` with `-c`), then `new ...` |
//! | `kill` | procps / bash | errors `kill: (N) - No such process`, `kill: X: invalid signal specification` |
//! | `sysctl` | procps | `name = value` |
//! | `sleep MS` | (milliseconds, unlike coreutils) | |
//!
//! Errors use `strerror` text for the errno the scheduler API returned. Commands that run
//! another command (`chrt PRIO cmd`, `nice -n N cmd`, `taskset MASK cmd`) run it in a new task
//! with the requested attributes and wait for it. pid 1 (init) ignores signals, like Linux's
//! init without handlers.

use super::{fail, usage_err, CmdResult, Error};
use crate::sched::api;
use crate::sched::task::{self, policy_name, SpawnOptions, Tid};
use crate::shout;
use alloc::string::String;
use alloc::vec::Vec;
use cadence_sched::{CpuMask, Errno, Policy, ValidAttr};

/// `strerror(errno)` as glibc words it (`Errno::strerror`).
pub fn strerror(e: Errno) -> &'static str {
    e.strerror()
}

/// Short options parsed getopt-style with a leading `+` (stop at the first non-option):
/// clusters (`-cp`), option values glued or separate (`-n5`, `-n 5`), `--` ends options,
/// long options mapped through `long`.
pub struct Opts<'a> {
    pub flags: Vec<(char, Option<&'a str>)>,
    pub rest: Vec<&'a str>,
}

impl<'a> Opts<'a> {
    pub fn has(&self, c: char) -> bool {
        self.flags.iter().any(|(f, _)| *f == c)
    }
    pub fn value(&self, c: char) -> Option<&'a str> {
        self.flags.iter().rev().find(|(f, _)| *f == c).and_then(|(_, v)| *v)
    }
}

pub fn getopt<'a>(cmd: &str, args: &[&'a str], flags: &str, with_value: &str, long: &[(&str, char)]) -> Result<Opts<'a>, Error> {
    let mut o = Opts { flags: Vec::new(), rest: Vec::new() };
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(name) = a.strip_prefix("--") {
            let (name, val) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (name, None),
            };
            let &(_, c) =
                long.iter().find(|(l, _)| *l == name).ok_or_else(|| usage_err(cmd, alloc::format!("unrecognized option '{}'", a)))?;
            if with_value.contains(c) {
                let v = match val {
                    Some(v) => v,
                    None => {
                        i += 1;
                        *args.get(i).ok_or_else(|| usage_err(cmd, alloc::format!("option '{}' requires an argument", a)))?
                    }
                };
                o.flags.push((c, Some(v)));
            } else {
                o.flags.push((c, None));
            }
            i += 1;
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            break;
        }
        let body = &a[1..];
        for (pos, c) in body.char_indices() {
            if with_value.contains(c) {
                let glued = &body[pos + c.len_utf8()..];
                let v = if !glued.is_empty() {
                    glued
                } else {
                    i += 1;
                    *args.get(i).ok_or_else(|| usage_err(cmd, alloc::format!("option requires an argument -- '{}'", c)))?
                };
                o.flags.push((c, Some(v)));
                break;
            } else if flags.contains(c) {
                o.flags.push((c, None));
            } else {
                return Err(usage_err(cmd, alloc::format!("invalid option -- '{}'", c)));
            }
        }
        i += 1;
    }
    o.rest = args[i.min(args.len())..].to_vec();
    Ok(o)
}

fn parse_pid(cmd: &str, s: &str) -> Result<Tid, Error> {
    match s.parse::<i64>() {
        Ok(n) if (0..=u32::MAX as i64).contains(&n) => Ok(n as Tid),
        _ => Err(usage_err(cmd, alloc::format!("invalid PID argument: '{}'", s))),
    }
}

/// Runs `words` as a command in a new task with the given attributes and waits for it.
fn run_with(name_hint: &str, words: &[&str], attr: Option<ValidAttr>, affinity: Option<CpuMask>) -> CmdResult {
    let owned: Vec<String> = words.iter().map(|w| String::from(*w)).collect();
    let mut opts = SpawnOptions::new(words.first().copied().unwrap_or(name_hint)).stack_size(64 * 1024);
    opts.attr = attr;
    opts.affinity = affinity;
    let t = crate::sched::spawn(opts, move || {
        let w: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
        super::run_words(&w)
    })
    .map_err(|e| {
        fail(
            name_hint,
            alloc::format!(
                "failed to execute {}: {}",
                words.first().unwrap_or(&""),
                match e {
                    crate::sched::SpawnError::NoMemory => "Cannot allocate memory",
                    crate::sched::SpawnError::BadAffinity => "Invalid argument",
                    crate::sched::SpawnError::Busy => "Device or resource busy",
                    crate::sched::SpawnError::Again => "Resource temporarily unavailable",
                }
            ),
        )
    })?;
    match task::wait(t.tid) {
        Ok(0) => Ok(()),
        // The command printed its own error.
        _ => Err(Error::Failed(String::new())),
    }
}

// ----- ps ------------------------------------------------------------------------------------

/// ps's CLS column.
pub fn class_abbrev(p: Policy) -> &'static str {
    match p {
        Policy::Normal => "TS",
        Policy::Fifo => "FF",
        Policy::RR => "RR",
        Policy::Batch => "B",
        Policy::Idle => "IDL",
        Policy::Deadline => "DLN",
    }
}

pub fn ps(args: &[&str]) -> CmdResult {
    for a in args {
        if !a.starts_with('-') || a.len() < 2 || !a[1..].chars().all(|c| matches!(c, 'e' | 'L' | 'A' | 'f' | 'l')) {
            return Err(usage_err("ps", alloc::format!("unsupported option '{}'", a)));
        }
    }
    shout!("  PID   TID CLS RTPRIO  NI PSR S    TIME(ms)  THR(ms) {:<14} COMMAND", "GROUP");
    for t in task::all() {
        let st = t.state();
        if st == task::TaskState::Dead && t.detached.load(core::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        let p = t.policy();
        let (rtprio, ni) = if p.is_rt() {
            (alloc::format!("{}", t.rt_priority()), String::from("-"))
        } else {
            (String::from("-"), alloc::format!("{}", t.nice()))
        };
        let ns = t.stats.sum_exec_runtime.load(core::sync::atomic::Ordering::Relaxed);
        let thr = t.dirty.throttled_ns.load(core::sync::atomic::Ordering::Relaxed);
        shout!(
            "{:>5} {:>5} {:<3} {:>6} {:>3} {:>3} {} {:>11} {:>8} {:<14} {}{}",
            t.process.tgid,
            t.tid,
            class_abbrev(p),
            rtprio,
            ni,
            t.cpu(),
            st.letter(),
            alloc::format!("{}.{:03}", ns / 1_000_000, (ns / 1000) % 1000),
            thr / 1_000_000,
            crate::sched::group::task_group_path(&t),
            t.name,
            if t.watchdog.demotions.load(core::sync::atomic::Ordering::Relaxed) > 0 { " (demoted by RT watchdog)" } else { "" }
        );
    }
    Ok(())
}

// ----- chrt ----------------------------------------------------------------------------------

fn policy_from_flags(o: &Opts) -> Option<Policy> {
    let mut p = None;
    for (c, _) in &o.flags {
        p = match c {
            'f' => Some(Policy::Fifo),
            'r' => Some(Policy::RR),
            'o' => Some(Policy::Normal),
            'b' => Some(Policy::Batch),
            'i' => Some(Policy::Idle),
            'd' => Some(Policy::Deadline),
            _ => p,
        };
    }
    p
}

fn show_policy(pid: Tid) -> CmdResult {
    let a = api::sched_getattr(pid).map_err(|e| fail("chrt", alloc::format!("failed to get pid {}'s policy: {}", pid, strerror(e))))?;
    let shown = if pid == 0 { crate::sched::current_tid() } else { pid };
    let reset = if a.reset_on_fork { "|SCHED_RESET_ON_FORK" } else { "" };
    shout!("pid {}'s current scheduling policy: {}{}", shown, policy_name(a.policy), reset);
    shout!("pid {}'s current scheduling priority: {}", shown, a.rt_priority);
    if let Some(dl) = a.dl {
        shout!("pid {}'s current runtime/deadline/period parameters: {}/{}/{}", shown, dl.runtime, dl.deadline, dl.period);
    }
    Ok(())
}

pub fn chrt(args: &[&str]) -> CmdResult {
    let long = [
        ("fifo", 'f'),
        ("rr", 'r'),
        ("other", 'o'),
        ("batch", 'b'),
        ("idle", 'i'),
        ("deadline", 'd'),
        ("sched-runtime", 'T'),
        ("sched-period", 'P'),
        ("sched-deadline", 'D'),
        ("pid", 'p'),
        ("max", 'm'),
        ("reset-on-fork", 'R'),
        ("verbose", 'v'),
        ("all-tasks", 'a'),
        ("help", 'h'),
    ];
    let o = getopt("chrt", args, "frobidpmRvah", "TPD", &long)?;
    if o.has('h') {
        return Err(Error::Usage(None));
    }
    if o.has('m') {
        for p in [Policy::Normal, Policy::Fifo, Policy::RR, Policy::Batch, Policy::Idle, Policy::Deadline] {
            let min = api::sched_get_priority_min(p.raw()).unwrap_or(0);
            let max = api::sched_get_priority_max(p.raw()).unwrap_or(0);
            shout!("{} min/max priority\t: {}/{}", policy_name(p), min, max);
        }
        return Ok(());
    }
    let policy = policy_from_flags(&o);
    let reset = o.has('R');
    // util-linux: --sched-runtime/--sched-period/--sched-deadline (ns) go with --deadline.
    let ns = |c: char, name: &str| -> Result<u64, Error> {
        match o.value(c) {
            None => Ok(0),
            Some(v) => v.parse::<u64>().map_err(|_| usage_err("chrt", alloc::format!("invalid {} argument: '{}'", name, v))),
        }
    };
    let dl = (ns('T', "runtime")?, ns('D', "deadline")?, ns('P', "period")?);
    if policy != Some(Policy::Deadline) && dl != (0, 0, 0) {
        return Err(usage_err("chrt", String::from("--sched-{runtime,deadline,period} options are supported for SCHED_DEADLINE only")));
    }
    if policy == Some(Policy::Deadline) {
        return chrt_deadline(&o, dl, reset);
    }
    let parse_prio = |s: &str| -> Result<i32, Error> {
        s.parse::<i32>().map_err(|_| usage_err("chrt", alloc::format!("invalid priority argument: '{}'", s)))
    };
    let check_range = |p: Policy, prio: i32| -> CmdResult {
        let min = api::sched_get_priority_min(p.raw()).unwrap_or(0);
        let max = api::sched_get_priority_max(p.raw()).unwrap_or(0);
        if prio < min || prio > max {
            return Err(fail("chrt", alloc::format!("unsupported priority value for the policy: {} (see --max for valid range)", prio)));
        }
        Ok(())
    };
    if o.has('p') {
        match o.rest.as_slice() {
            [pid] if policy.is_none() && !reset => show_policy(parse_pid("chrt", pid)?),
            [pid] => {
                // A policy without a priority: util-linux uses 0 (valid for the non-RT policies).
                let pid = parse_pid("chrt", pid)?;
                set_policy(pid, policy.unwrap_or(Policy::RR), 0, reset, &check_range, o.has('v'))
            }
            [prio, pid] => {
                let prio = parse_prio(prio)?;
                let pid = parse_pid("chrt", pid)?;
                set_policy(pid, policy.unwrap_or(Policy::RR), prio, reset, &check_range, o.has('v'))
            }
            _ => Err(Error::Usage(None)),
        }
    } else {
        match o.rest.as_slice() {
            [prio, cmd @ ..] if !cmd.is_empty() => {
                let prio = parse_prio(prio)?;
                let p = policy.unwrap_or(Policy::RR);
                check_range(p, prio)?;
                let attr = ValidAttr {
                    policy: p,
                    nice: api::getpriority(0).unwrap_or(0),
                    rt_priority: prio as u8,
                    custom_slice_ns: None,
                    reset_on_fork: reset,
                    dl: None,
                };
                run_with("chrt", cmd, Some(attr), None)
            }
            _ => Err(Error::Usage(None)),
        }
    }
}

/// `chrt -d --sched-runtime NS [--sched-deadline NS] [--sched-period NS] 0 CMD` (or `-p 0
/// PID`): SCHED_DEADLINE through `sched_setattr`; the deadline defaults to the period and the
/// period to the deadline, as util-linux does.
fn chrt_deadline(o: &Opts, (runtime, deadline, period): (u64, u64, u64), reset: bool) -> CmdResult {
    let deadline = if deadline == 0 { period } else { deadline };
    let attr = cadence_sched::SchedAttr {
        policy: Policy::Deadline.raw(),
        nice: api::getpriority(0).unwrap_or(0),
        slice_ns: runtime,
        deadline_ns: deadline,
        period_ns: period,
        flags: if reset { cadence_sched::consts::SCHED_FLAG_RESET_ON_FORK } else { 0 },
        ..Default::default()
    };
    let prio_ok = |p: &str| p.parse::<i32>().map(|v| v == 0).unwrap_or(false);
    if o.has('p') {
        let [prio, pid] = o.rest.as_slice() else { return Err(Error::Usage(None)) };
        if !prio_ok(prio) {
            return Err(fail("chrt", String::from("unsupported priority value for the policy: SCHED_DEADLINE needs 0")));
        }
        let pid = parse_pid("chrt", pid)?;
        api::sched_setattr(pid, &attr).map_err(|e| fail("chrt", alloc::format!("failed to set pid {}'s policy: {}", pid, strerror(e))))?;
        if o.has('v') {
            show_policy(pid)?;
        }
        return Ok(());
    }
    match o.rest.as_slice() {
        [prio, cmd @ ..] if !cmd.is_empty() => {
            if !prio_ok(prio) {
                return Err(fail("chrt", String::from("unsupported priority value for the policy: SCHED_DEADLINE needs 0")));
            }
            let valid = attr.validate().map_err(|e| fail("chrt", alloc::format!("failed to set pid 0's policy: {}", strerror(e))))?;
            run_with("chrt", cmd, Some(valid), None)
        }
        _ => Err(Error::Usage(None)),
    }
}

fn set_policy(pid: Tid, p: Policy, prio: i32, reset: bool, check_range: &dyn Fn(Policy, i32) -> CmdResult, verbose: bool) -> CmdResult {
    check_range(p, prio)?;
    let r = if reset {
        api::sched_getattr(pid).and_then(|cur| {
            api::sched_setattr(
                pid,
                &cadence_sched::SchedAttr {
                    policy: p.raw(),
                    nice: cur.nice,
                    rt_priority: prio as u32,
                    flags: cadence_sched::consts::SCHED_FLAG_RESET_ON_FORK,
                    ..Default::default()
                },
            )
        })
    } else {
        api::sched_setscheduler(pid, p.raw(), prio)
    };
    r.map_err(|e| fail("chrt", alloc::format!("failed to set pid {}'s policy: {}", pid, strerror(e))))?;
    if verbose {
        show_policy(pid)?;
    }
    Ok(())
}

// ----- nice / renice -------------------------------------------------------------------------

pub fn nice(args: &[&str]) -> CmdResult {
    // Legacy `nice -N cmd` / `nice --N cmd`.
    let (adj, rest): (Option<&str>, &[&str]) = match args.first() {
        Some(a) if a.len() > 1 && a.starts_with('-') && a[1..].trim_start_matches('-').parse::<i64>().is_ok() && !a.starts_with("-n") => {
            // `-N` is +N, `--N` is -N: both drop the first dash.
            (Some(&a[1..]), &args[1..])
        }
        _ => {
            let o = getopt("nice", args, "h", "n", &[("adjustment", 'n'), ("help", 'h')])?;
            if o.has('h') {
                return Err(Error::Usage(None));
            }
            let rest_start = args.len() - o.rest.len();
            (o.value('n'), &args[rest_start..])
        }
    };
    let cur = api::getpriority(0).unwrap_or(0);
    if rest.is_empty() {
        if adj.is_some() {
            return Err(usage_err("nice", "a command must be given with an adjustment"));
        }
        shout!("{}", cur);
        return Ok(());
    }
    let adj = match adj {
        None => 10,
        Some(s) => s.parse::<i64>().map_err(|_| usage_err("nice", alloc::format!("invalid adjustment '{}'", s)))?,
    };
    let mut attr = api::sched_getattr(0).map_err(|e| fail("nice", strerror(e)))?;
    attr.nice = cadence_sched::attr::nice_after_increment(cur, adj);
    run_with("nice", rest, Some(attr), None)
}

pub fn renice(args: &[&str]) -> CmdResult {
    let mut prio: Option<i64> = None;
    let mut pids = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        match a {
            "-n" | "--priority" => {
                i += 1;
                let v = args.get(i).ok_or(Error::Usage(None))?;
                prio = Some(v.parse().map_err(|_| usage_err("renice", alloc::format!("invalid priority '{}'", v)))?);
            }
            "-p" | "--pid" => {}
            "-g" | "-u" | "--pgrp" | "--user" => {
                return Err(usage_err("renice", "only process IDs (-p) are supported"));
            }
            "-h" | "--help" => return Err(Error::Usage(None)),
            _ if prio.is_none() => {
                prio = Some(a.parse().map_err(|_| usage_err("renice", alloc::format!("invalid priority '{}'", a)))?);
            }
            _ => pids.push(parse_pid("renice", a)?),
        }
        i += 1;
    }
    let (Some(prio), false) = (prio, pids.is_empty()) else { return Err(Error::Usage(None)) };
    let mut failed = false;
    for pid in pids {
        let old = match api::getpriority(pid) {
            Ok(o) => o,
            Err(e) => {
                failed = true;
                shout!("renice: failed to get priority for {} (process ID): {}", pid, strerror(e));
                continue;
            }
        };
        if let Err(e) = api::setpriority(pid, prio) {
            shout!("renice: failed to set priority for {} (process ID): {}", pid, strerror(e));
            failed = true;
            continue;
        }
        let new = api::getpriority(pid).unwrap_or(old);
        shout!("{} (process ID) old priority {}, new priority {}", pid, old, new);
    }
    // Messages were printed per pid.
    if failed {
        Err(Error::Failed(String::new()))
    } else {
        Ok(())
    }
}

// ----- taskset -------------------------------------------------------------------------------

/// Parses a hex mask (`f`, `0x3`, `ff,ffffffff`) into a CPU mask (bits past `NR_CPUS` must
/// be 0).
pub fn parse_mask(s: &str) -> Option<CpuMask> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    let h: Vec<u8> = h.bytes().filter(|&c| c != b',').collect();
    if h.is_empty() {
        return None;
    }
    let mut m = CpuMask::EMPTY;
    for (i, &d) in h.iter().rev().enumerate() {
        let v = (d as char).to_digit(16)?;
        for bit in 0..4 {
            if v & (1 << bit) != 0 {
                let cpu = 4 * i + bit;
                if cpu >= cadence_sched::NR_CPUS {
                    return None;
                }
                m = m.with(cpu);
            }
        }
    }
    Some(m)
}

/// Parses a CPU list (`0-3,5`, `0-7:2`) into a mask.
pub fn parse_list(s: &str) -> Option<CpuMask> {
    let mut m = CpuMask::EMPTY;
    for part in s.split(',') {
        let (range, stride) = match part.split_once(':') {
            Some((r, st)) => (r, st.parse::<usize>().ok().filter(|&x| x > 0)?),
            None => (part, 1),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let a = range.parse::<usize>().ok()?;
                (a, a)
            }
        };
        if a > b || b >= cadence_sched::NR_CPUS {
            return None;
        }
        let mut c = a;
        while c <= b {
            m = m.with(c);
            c += stride;
        }
    }
    Some(m)
}

pub fn taskset(args: &[&str]) -> CmdResult {
    let o = getopt("taskset", args, "pcah", "", &[("pid", 'p'), ("cpu-list", 'c'), ("all-tasks", 'a'), ("help", 'h')])?;
    if o.has('h') {
        return Err(Error::Usage(None));
    }
    let list = o.has('c');
    let parse = |s: &str| -> Result<CpuMask, Error> {
        if list {
            parse_list(s).ok_or_else(|| fail("taskset", alloc::format!("failed to parse CPU list: {}", s)))
        } else {
            parse_mask(s).ok_or_else(|| fail("taskset", alloc::format!("failed to parse CPU mask: {}", s)))
        }
    };
    let show = |pid: Tid, m: CpuMask, what: &str| {
        if list {
            shout!("pid {}'s {} affinity list: {}", pid, what, m.to_list());
        } else {
            shout!("pid {}'s {} affinity mask: {}", pid, what, m.to_hex_number());
        }
    };
    if o.has('p') {
        let (mask, pid) = match o.rest.as_slice() {
            [pid] => (None, parse_pid("taskset", pid)?),
            [m, pid] => (Some(parse(m)?), parse_pid("taskset", pid)?),
            _ => return Err(Error::Usage(None)),
        };
        let shown = if pid == 0 { crate::sched::current_tid() } else { pid };
        let cur = api::sched_getaffinity(pid)
            .map_err(|e| fail("taskset", alloc::format!("failed to get pid {}'s affinity: {}", shown, strerror(e))))?;
        show(shown, cur, "current");
        if let Some(m) = mask {
            api::sched_setaffinity(pid, m)
                .map_err(|e| fail("taskset", alloc::format!("failed to set pid {}'s affinity: {}", shown, strerror(e))))?;
            let new = api::sched_getaffinity(pid).unwrap_or(m);
            show(shown, new, "new");
        }
        return Ok(());
    }
    match o.rest.as_slice() {
        [m, cmd @ ..] if !cmd.is_empty() => {
            let m = parse(m)?;
            if (m & crate::sched::online_mask()).is_empty() {
                return Err(fail("taskset", "failed to set pid 0's affinity: Invalid argument"));
            }
            run_with("taskset", cmd, None, Some(m))
        }
        _ => Err(Error::Usage(None)),
    }
}

// ----- kill ----------------------------------------------------------------------------------

fn parse_signal(s: &str) -> Option<u32> {
    crate::sched::signal::parse(&s.to_ascii_uppercase())
}

pub fn kill(args: &[&str]) -> CmdResult {
    if args.first() == Some(&"-l") || args.first() == Some(&"-L") {
        if let Some(n) = args.get(1) {
            let sig = n.parse::<u32>().ok().filter(|&s| crate::sched::signal::name(s).is_some());
            let sig = sig.ok_or_else(|| fail("kill", alloc::format!("{}: invalid signal specification", n)))?;
            shout!("{}", crate::sched::signal::name(sig).unwrap_or("?"));
            return Ok(());
        }
        let names: Vec<String> = (1..=crate::sched::signal::SIGMAX)
            .filter_map(|s| crate::sched::signal::name(s).map(|n| alloc::format!("{:>2}) SIG{}", s, n)))
            .collect();
        shout!("{}", names.join(" "));
        return Ok(());
    }
    let mut sig = crate::sched::signal::SIGTERM;
    let mut rest = args;
    match args.first() {
        Some(&"-s") | Some(&"-n") => {
            let s = args.get(1).ok_or(Error::Usage(None))?;
            sig = parse_signal(s).ok_or_else(|| fail("kill", alloc::format!("{}: invalid signal specification", s)))?;
            rest = &args[2..];
        }
        Some(a) if a.starts_with('-') && a.len() > 1 && *a != "--" => {
            let s = &a[1..];
            sig = parse_signal(s).ok_or_else(|| fail("kill", alloc::format!("{}: invalid signal specification", s)))?;
            rest = &args[1..];
        }
        Some(&"--") => rest = &args[1..],
        _ => {}
    }
    if rest.first() == Some(&"--") {
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return Err(Error::Usage(None));
    }
    let mut status = Ok(());
    for a in rest {
        let pid = if let Some(j) = a.strip_prefix('%') {
            match j.parse::<u32>().ok().and_then(super::job_tid) {
                Some(t) => t,
                None => {
                    shout!("kill: {}: no such job", a);
                    status = Err(Error::Failed(String::new()));
                    continue;
                }
            }
        } else {
            match a.parse::<i64>() {
                Ok(n) if (1..=u32::MAX as i64).contains(&n) => n as Tid,
                Ok(n) if n <= 0 => {
                    // Process groups (0, -PGID) and "everyone" (-1) are not supported.
                    shout!("kill: ({}) - Operation not supported", a);
                    status = Err(Error::Failed(String::new()));
                    continue;
                }
                _ => {
                    shout!("kill: {}: arguments must be process or job IDs", a);
                    status = Err(Error::Failed(String::new()));
                    continue;
                }
            }
        };
        if pid == 1 && crate::sched::task::find(1).is_some() {
            // init has no handlers: Linux drops signals to it.
            continue;
        }
        if let Err(e) = crate::sched::signal::kill(pid, sig) {
            shout!("kill: ({}) - {}", pid, strerror(e));
            status = Err(Error::Failed(String::new()));
        }
    }
    // Errors were printed per pid; an empty Failed message prints nothing more.
    status.map_err(|_| Error::Failed(String::new()))
}

// ----- sysctl --------------------------------------------------------------------------------

pub fn sysctl(args: &[&str]) -> CmdResult {
    let o = getopt("sysctl", args, "aAnqwXh", "", &[("all", 'a'), ("values", 'n'), ("quiet", 'q'), ("write", 'w'), ("help", 'h')])?;
    if o.has('h') {
        return Err(Error::Usage(None));
    }
    let values_only = o.has('n');
    let quiet = o.has('q');
    let print = |name: &str, v: &str| {
        if values_only {
            shout!("{}", v);
        } else {
            shout!("{} = {}", name, v);
        }
    };
    if o.has('a') || o.has('A') || o.has('X') {
        if !o.rest.is_empty() {
            return Err(Error::Usage(None));
        }
        for s in crate::sysctl::list() {
            print(s.name, &(s.get)());
        }
        return Ok(());
    }
    if o.rest.is_empty() {
        return Err(Error::Usage(None));
    }
    let mut status = Ok(());
    for arg in &o.rest {
        let key_of = |n: &str| String::from(n.trim()).replace('/', ".");
        if let Some((name, value)) = arg.split_once('=') {
            let name = key_of(name);
            match crate::sysctl::set(&name, value.trim()) {
                Ok(()) => {
                    if !quiet {
                        print(&name, value.trim());
                    }
                }
                Err(None) => {
                    shout!("sysctl: cannot stat /proc/sys/{}: No such file or directory", name.replace('.', "/"));
                    status = Err(Error::Failed(String::new()));
                }
                Err(Some(e)) => {
                    shout!("sysctl: setting key \"{}\": {}", name, strerror(e));
                    status = Err(Error::Failed(String::new()));
                }
            }
        } else if o.has('w') {
            shout!("sysctl: \"{}\" must be of the form name=value", arg);
            status = Err(Error::Failed(String::new()));
        } else {
            let name = key_of(arg);
            match crate::sysctl::get(&name) {
                Some(v) => print(&name, &v),
                None => {
                    shout!("sysctl: cannot stat /proc/sys/{}: No such file or directory", name.replace('.', "/"));
                    status = Err(Error::Failed(String::new()));
                }
            }
        }
    }
    status
}

// ----- sleep ---------------------------------------------------------------------------------

/// `sleep NUMBER[SUFFIX]...` as coreutils: seconds by default, fractions allowed, suffixes
/// `s`, `m`, `h`, `d` and Cadence's `ms`, `us`; several operands add up.
pub fn sleep(args: &[&str]) -> CmdResult {
    if args.is_empty() {
        return Err(usage_err("sleep", "missing operand"));
    }
    let mut total: u64 = 0;
    for a in args {
        total = cadence_cmdline::parse_duration_ns(a)
            .and_then(|ns| total.checked_add(ns))
            .ok_or_else(|| usage_err("sleep", alloc::format!("invalid time interval '{}'", a)))?;
    }
    crate::sched::sleep_ns(total);
    Ok(())
}
