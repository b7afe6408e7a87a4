//! The ftrace text format (`/sys/kernel/tracing/trace` of Linux 6.1), written and parsed.
//!
//! A trace is the header block of the `nop` tracer ([`write_header`]) followed by one line per
//! event in timestamp order ([`write_event`]):
//!
//! ```text
//!           <idle>-0       [001] d..2.  1234.567890: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pipe-ping next_pid=12 next_prio=120
//! ```
//!
//! i.e. `"%16s-%-7d [%03d] %s %5lu.%06lu: %s: %s"` (task column: the running task's comm, or
//! `<idle>` for pid 0; CPU; the five irqs-off/need-resched/hardirq/preempt-depth/
//! migrate-disable flags; seconds with microseconds; event name; fields). Field formats are
//! Linux's `TP_printk` ones:
//!
//! | event | fields |
//! |---|---|
//! | `sched_switch` | `prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d` |
//! | `sched_wakeup`, `sched_wakeup_new` | `comm=%s pid=%d prio=%d target_cpu=%03d` |
//! | `sched_migrate_task` | `comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d` |
//! | `sched_process_exit` | `comm=%s pid=%d prio=%d` |
//! | `hrtimer_expire_entry` | `hrtimer=%p function=%s now=%llu` (the pointer is always 0) |
//! | `ipi_raise` | `target_mask=%08x,%08x (%s)` (64-bit CPU mask, reason) |
//! | `sched_hrtick_start` (Cadence) | `delay_ns=%llu` |
//! | `sched_hrtick_fire` (Cadence) | `cpu=%03d` |
//! | `sched_core_force_idle` (Cadence) | `cpu=%d duration_ns=%llu` |
//! | `sched_core_switch` (Cadence) | `pid=%d cookie=%#llx forced=%d` (what the CPU runs after a switch) |
//! | `sched_pi_setprio` | `comm=%s pid=%d oldprio=%d newprio=%d` (Linux's format; Cadence emits it for every priority change) |
//! | `sched_set_affinity` (Cadence) | `comm=%s pid=%d prio=%d mask=%#llx` |
//! | `sched_dl_throttle`, `sched_dl_replenish` (Cadence) | `comm=%s pid=%d runtime=%lld deadline=%llu` (ns left; absolute deadline, ns since boot) |
//! | `sched_cfs_throttle`, `sched_cfs_unthrottle` (Cadence) | `group=%u cpu=%u` (task group id; the CPU whose queue of it) |
//!
//! Cadence adds, after the header and before the events, one comment line per task it knows the
//! CPU affinity of ([`write_affinity`]): `# cadence-affinity: pid=<n> mask=0x<hex>` (the union
//! of the masks the task had while tracing; trace-cmd and Perfetto skip `#` lines). [`parse_text`]
//! collects them into [`Parsed::affinity`]; a Linux trace has none (every CPU allowed).
//!
//! Parsing ([`parse_line`]) accepts what [`write_event`] writes (and Linux lines of the same
//! events): `parse_line(write_event(e)) == e` for any event whose timestamp is a whole number of
//! microseconds, whose task names have no leading/trailing spaces and do not contain
//! ` <next field>=`, and whose context comm is `<idle>` when its pid is 0. Lines of other events
//! parse as `Ok(None)`; malformed lines are errors, never panics.

use crate::event::{Comm, Event, EventKind, EventType, TaskInfo};
use alloc::collections::BTreeMap;
use cadence_sched::CpuMask;
use core::fmt::{self, Write};

/// Vector of the reschedule IPI (must match the kernel's `apic::RESCHEDULE_VECTOR`).
pub const RESCHEDULE_VECTOR: u8 = 0x21;
/// Vector of the call-function IPI (must match the kernel's `apic::CALL_FUNCTION_VECTOR`).
pub const CALL_FUNCTION_VECTOR: u8 = 0x22;

const IPI_REASONS: [(u8, &str); 2] = [(RESCHEDULE_VECTOR, "Rescheduling interrupts"), (CALL_FUNCTION_VECTOR, "Function call interrupts")];

/// The comm shown in the task column for pid 0.
pub const IDLE_COMM: &str = "<idle>";

/// Header of a `nop`-tracer trace; `entries`/`written` are Linux's
/// `entries-in-buffer/entries-written` (written − entries = events lost to overwriting).
pub fn write_header(out: &mut impl Write, entries: u64, written: u64, ncpus: u32) -> fmt::Result {
    out.write_str("# tracer: nop\n#\n")?;
    writeln!(out, "# entries-in-buffer/entries-written: {}/{}   #P:{}", entries, written, ncpus)?;
    out.write_str(concat!(
        "#\n",
        "#                                _-----=> irqs-off/BH-disabled\n",
        "#                               / _----=> need-resched\n",
        "#                              | / _---=> hardirq/softirq\n",
        "#                              || / _--=> preempt-depth\n",
        "#                              ||| / _-=> migrate-disable\n",
        "#                              |||| /     delay\n",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
        "#              | |         |   |||||     |         |\n",
    ))
}

/// Prefix of Cadence's affinity comment lines.
pub const AFFINITY_PREFIX: &str = "# cadence-affinity:";

/// One affinity comment line, newline included: `# cadence-affinity: pid=<n> mask=0x<hex>`
/// (the whole mask, most significant digit first, no leading zeros).
pub fn write_affinity(out: &mut impl Write, pid: u32, mask: CpuMask) -> fmt::Result {
    writeln!(out, "{} pid={} mask=0x{}", AFFINITY_PREFIX, pid, mask.to_hex_number())
}

/// A hex mask of any length (`f0`, or 300 digits for 1,200 CPUs) as a CPU set.
fn parse_hex_mask(hex: &str) -> Option<CpuMask> {
    if hex.is_empty() || hex.len() > cadence_sched::NR_CPUS / 4 + 16 {
        return None;
    }
    let mut words = alloc::vec::Vec::new();
    let mut end = hex.len();
    while end > 0 {
        let start = end.saturating_sub(16);
        words.push(u64::from_str_radix(hex.get(start..end)?, 16).ok()?);
        end = start;
    }
    Some(CpuMask::from_words(&words))
}

/// Parses an affinity comment line: `None` if the line is not one, `Some(Err)` if it is one
/// but malformed.
pub fn parse_affinity_line(line: &str) -> Option<Result<(u32, CpuMask), ParseError>> {
    let rest = line.trim().strip_prefix(AFFINITY_PREFIX)?;
    let parsed = (|| {
        let f = split_fields(rest.trim_start(), ["pid=", " mask="])?;
        let pid = num(f[0], "pid")?;
        let mask = f[1].strip_prefix("0x").and_then(parse_hex_mask).ok_or(ParseError::BadField("mask"))?;
        Ok((pid, mask))
    })();
    Some(parsed)
}

/// The latency-format flags column of an event (irqs are always off at Cadence's hooks; timer
/// expiry and hrtick firing run in hard-irq context; a `trace_marker` write comes from a task
/// with interrupts on and nothing held, as Linux shows it).
fn flags(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Print { .. } => ".....",
        EventKind::TimerExpire { .. } | EventKind::HrtickFire => "d.h1.",
        EventKind::Ipi { .. } => "d..1.",
        _ => "d..2.",
    }
}

/// One event as a trace line, newline included.
pub fn write_event(out: &mut impl Write, e: &Event) -> fmt::Result {
    let us = e.ts_ns / 1000;
    write!(
        out,
        "{:>16}-{:<7} [{:03}] {} {:>5}.{:06}: {}: ",
        e.comm,
        e.pid,
        e.cpu,
        flags(&e.kind),
        us / 1_000_000,
        us % 1_000_000,
        e.kind.event_type().name()
    )?;
    match &e.kind {
        EventKind::Switch { prev, prev_state, next } => write!(
            out,
            "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
            prev.comm,
            prev.pid,
            prev.prio,
            state_char(*prev_state),
            next.comm,
            next.pid,
            next.prio
        )?,
        EventKind::Wakeup { task, target_cpu, .. } => {
            write!(out, "comm={} pid={} prio={} target_cpu={:03}", task.comm, task.pid, task.prio, target_cpu)?
        }
        EventKind::Migrate { task, orig_cpu, dest_cpu } => {
            write!(out, "comm={} pid={} prio={} orig_cpu={} dest_cpu={}", task.comm, task.pid, task.prio, orig_cpu, dest_cpu)?
        }
        EventKind::Exit { task } => write!(out, "comm={} pid={} prio={}", task.comm, task.pid, task.prio)?,
        EventKind::TimerExpire { function, now_ns } => write!(out, "hrtimer=0000000000000000 function={} now={}", function, now_ns)?,
        EventKind::Ipi { target_cpu, vector } => {
            let mask = 1u64.checked_shl(*target_cpu).unwrap_or(0);
            write!(out, "target_mask={:08x},{:08x} (", mask >> 32, mask & 0xffff_ffff)?;
            match IPI_REASONS.iter().find(|(v, _)| v == vector) {
                Some((_, reason)) => out.write_str(reason)?,
                None => write!(out, "vector 0x{:02x}", vector)?,
            }
            out.write_str(")")?
        }
        EventKind::HrtickStart { delay_ns } => write!(out, "delay_ns={}", delay_ns)?,
        EventKind::HrtickFire => write!(out, "cpu={:03}", e.cpu)?,
        EventKind::CoreForceIdle { cpu, duration_ns } => write!(out, "cpu={} duration_ns={}", cpu, duration_ns)?,
        EventKind::CoreSwitch { pid, cookie, forced } => write!(out, "pid={} cookie={:#x} forced={}", pid, cookie, *forced as u8)?,
        EventKind::Prio { task, old_prio } => {
            write!(out, "comm={} pid={} oldprio={} newprio={}", task.comm, task.pid, old_prio, task.prio)?
        }
        EventKind::Affinity { task, mask, wide } => {
            write!(out, "comm={} pid={} prio={} mask={:#x}{}", task.comm, task.pid, task.prio, mask, if *wide { "+" } else { "" })?
        }
        EventKind::Dl { task, runtime_ns, deadline_ns, .. } => {
            write!(out, "comm={} pid={} runtime={} deadline={}", task.comm, task.pid, runtime_ns, deadline_ns)?
        }
        EventKind::Print { text } => write!(out, "{}", text)?,
        EventKind::CfsBandwidth { group, .. } => write!(out, "group={} cpu={}", group, e.cpu)?,
    }
    out.write_char('\n')
}

fn state_char(s: u8) -> char {
    if s.is_ascii_graphic() {
        s as char
    } else {
        '?'
    }
}

/// Why a line did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// No `<comm>-<pid> [<cpu>]` prefix.
    NoTaskColumn,
    /// No `<secs>.<frac>: ` timestamp.
    BadTimestamp,
    /// No `<name>: ` after the timestamp.
    NoEventName,
    /// A field of a known event is missing or malformed (its name).
    BadField(&'static str),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::NoTaskColumn => f.write_str("no TASK-PID [CPU] column"),
            ParseError::BadTimestamp => f.write_str("bad timestamp"),
            ParseError::NoEventName => f.write_str("no event name"),
            ParseError::BadField(name) => write!(f, "bad or missing field '{}'", name),
        }
    }
}

/// Parses the `# entries-in-buffer/entries-written: E/W   #P:N` header line.
pub fn parse_entries_line(line: &str) -> Option<(u64, u64, u32)> {
    let rest = line.strip_prefix("# entries-in-buffer/entries-written:")?.trim();
    let (counts, cpus) = rest.split_once("#P:")?;
    let (e, w) = counts.trim().split_once('/')?;
    Some((e.trim().parse().ok()?, w.trim().parse().ok()?, cpus.trim().parse().ok()?))
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Finds `<comm>-<pid> [<cpu>]`: returns (comm, pid, cpu, rest after `]`).
fn task_column(line: &str) -> Option<(&str, u32, u32, &str)> {
    let mut from = 0;
    while let Some(off) = line.get(from..)?.find('[') {
        let p = from + off;
        from = p + 1;
        let after = &line[p + 1..];
        let close = after.find(']')?;
        let cpu = &after[..close];
        if !is_digits(cpu) {
            continue;
        }
        let before = line[..p].trim_end();
        let Some((comm, pid)) = before.rsplit_once('-') else { continue };
        if !is_digits(pid) {
            continue;
        }
        let (Ok(pid), Ok(cpu)) = (pid.parse(), cpu.parse()) else { continue };
        return Some((comm.trim_start(), pid, cpu, &after[close + 1..]));
    }
    None
}

/// Parses `<secs>.<frac>` into ns (fraction: up to 9 digits used).
fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if !is_digits(secs) || !is_digits(frac) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let mut ns = 0u64;
    for i in 0..9 {
        ns = ns * 10 + frac.as_bytes().get(i).map_or(0, |b| (b - b'0') as u64);
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Splits `args` at the given separators (`seps[0]` must start `args`); returns the values.
fn split_fields<'a, const N: usize>(args: &'a str, seps: [&'static str; N]) -> Result<[&'a str; N], ParseError> {
    let mut out = [""; N];
    let mut rest = args.strip_prefix(seps[0]).ok_or(ParseError::BadField(seps[0]))?;
    for i in 0..N {
        if i + 1 < N {
            let at = rest.find(seps[i + 1]).ok_or(ParseError::BadField(seps[i + 1]))?;
            out[i] = &rest[..at];
            rest = &rest[at + seps[i + 1].len()..];
        } else {
            out[i] = rest.trim_end();
        }
    }
    Ok(out)
}

fn num<T: core::str::FromStr>(s: &str, name: &'static str) -> Result<T, ParseError> {
    s.trim().parse().map_err(|_| ParseError::BadField(name))
}

fn task(comm: &str, pid: &str, prio: &str) -> Result<TaskInfo, ParseError> {
    Ok(TaskInfo { comm: Comm::new(comm), pid: num(pid, "pid")?, prio: num(prio, "prio")? })
}

/// Parses one trace line: `Ok(None)` for blank and `#` lines and for events Cadence does not
/// know; `Err` for malformed lines.
pub fn parse_line(line: &str) -> Result<Option<Event>, ParseError> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() || line.trim_start().starts_with('#') {
        return Ok(None);
    }
    let (comm, pid, cpu, rest) = task_column(line).ok_or(ParseError::NoTaskColumn)?;
    // "<flags> <ts>: <name>: <args>" (flags optional, as without the irq-info option).
    let (head, tail) = rest.split_once(": ").ok_or(ParseError::BadTimestamp)?;
    let ts_ns = parse_ts(head.split_whitespace().last().unwrap_or("")).ok_or(ParseError::BadTimestamp)?;
    let (name, args) = match tail.split_once(": ") {
        Some((n, a)) => (n, a),
        None => (tail.strip_suffix(':').ok_or(ParseError::NoEventName)?, ""),
    };
    let Some(ty) = EventType::from_name(name.trim()) else { return Ok(None) };
    let kind = match ty {
        EventType::SchedSwitch => {
            let f = split_fields(
                args,
                ["prev_comm=", " prev_pid=", " prev_prio=", " prev_state=", " ==> next_comm=", " next_pid=", " next_prio="],
            )?;
            let state = f[3].bytes().next().ok_or(ParseError::BadField("prev_state"))?;
            EventKind::Switch { prev: task(f[0], f[1], f[2])?, prev_state: state, next: task(f[4], f[5], f[6])? }
        }
        EventType::SchedWakeup | EventType::SchedWakeupNew => {
            let f = split_fields(args, ["comm=", " pid=", " prio=", " target_cpu="])?;
            // Older kernels print "success=1 target_cpu=..": drop a success field if present.
            let prio = f[2].split(' ').next().unwrap_or("");
            EventKind::Wakeup { task: task(f[0], f[1], prio)?, target_cpu: num(f[3], "target_cpu")?, new: ty == EventType::SchedWakeupNew }
        }
        EventType::SchedMigrateTask => {
            let f = split_fields(args, ["comm=", " pid=", " prio=", " orig_cpu=", " dest_cpu="])?;
            EventKind::Migrate { task: task(f[0], f[1], f[2])?, orig_cpu: num(f[3], "orig_cpu")?, dest_cpu: num(f[4], "dest_cpu")? }
        }
        EventType::SchedProcessExit => {
            let f = split_fields(args, ["comm=", " pid=", " prio="])?;
            // Linux ≥ 6.x may append " group_dead=..".
            let prio = f[2].split(' ').next().unwrap_or("");
            EventKind::Exit { task: task(f[0], f[1], prio)? }
        }
        EventType::TimerExpire => {
            let f = split_fields(args, ["hrtimer=", " function=", " now="])?;
            EventKind::TimerExpire { function: Comm::new(f[1]), now_ns: num(f[2], "now")? }
        }
        EventType::Ipi => {
            let f = split_fields(args, ["target_mask=", " ("])?;
            let mut mask = 0u64;
            for c in f[0].chars().filter(|&c| c != ',') {
                let d = c.to_digit(16).ok_or(ParseError::BadField("target_mask"))? as u64;
                mask = mask.checked_mul(16).and_then(|m| m.checked_add(d)).ok_or(ParseError::BadField("target_mask"))?;
            }
            if mask == 0 {
                return Err(ParseError::BadField("target_mask"));
            }
            let reason = f[1].strip_suffix(')').ok_or(ParseError::BadField("reason"))?;
            let vector = match IPI_REASONS.iter().find(|(_, r)| *r == reason) {
                Some((v, _)) => *v,
                None => {
                    reason.strip_prefix("vector 0x").and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or(ParseError::BadField("reason"))?
                }
            };
            EventKind::Ipi { target_cpu: mask.trailing_zeros(), vector }
        }
        EventType::HrtickStart => {
            let f = split_fields(args, ["delay_ns="])?;
            EventKind::HrtickStart { delay_ns: num(f[0], "delay_ns")? }
        }
        EventType::HrtickFire => EventKind::HrtickFire,
        EventType::CoreForceIdle => {
            let f = split_fields(args, ["cpu=", " duration_ns="])?;
            EventKind::CoreForceIdle { cpu: num(f[0], "cpu")?, duration_ns: num(f[1], "duration_ns")? }
        }
        EventType::CoreSwitch => {
            let f = split_fields(args, ["pid=", " cookie=", " forced="])?;
            let cookie = f[1]
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .or_else(|| f[1].parse().ok())
                .ok_or(ParseError::BadField("cookie"))?;
            EventKind::CoreSwitch { pid: num(f[0], "pid")?, cookie, forced: num::<u32>(f[2], "forced")? != 0 }
        }
        EventType::PiSetprio => {
            let f = split_fields(args, ["comm=", " pid=", " oldprio=", " newprio="])?;
            EventKind::Prio { task: task(f[0], f[1], f[3])?, old_prio: num(f[2], "oldprio")? }
        }
        EventType::SetAffinity => {
            let f = split_fields(args, ["comm=", " pid=", " prio=", " mask="])?;
            let (hex, wide) = match f[3].strip_suffix('+') {
                Some(h) => (h, true),
                None => (f[3], false),
            };
            let mask = hex.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok()).ok_or(ParseError::BadField("mask"))?;
            EventKind::Affinity { task: task(f[0], f[1], f[2])?, mask, wide }
        }
        EventType::DlThrottle | EventType::DlReplenish => {
            let f = split_fields(args, ["comm=", " pid=", " runtime=", " deadline="])?;
            EventKind::Dl {
                task: task(f[0], f[1], "-1")?,
                runtime_ns: num(f[2], "runtime")?,
                deadline_ns: num(f[3], "deadline")?,
                replenish: ty == EventType::DlReplenish,
            }
        }
        EventType::Print => EventKind::Print { text: crate::event::Marker::new(args) },
        EventType::CfsThrottle | EventType::CfsUnthrottle => {
            let f = split_fields(args, ["group=", " cpu="])?;
            EventKind::CfsBandwidth { group: num(f[0], "group")?, throttled: ty == EventType::CfsThrottle }
        }
    };
    Ok(Some(Event { ts_ns, cpu, comm: Comm::new(comm), pid, kind }))
}

/// A parsed trace file.
#[derive(Default, Debug)]
pub struct Parsed {
    pub events: alloc::vec::Vec<Event>,
    /// From the header: (entries-in-buffer, entries-written, #P), if present.
    pub entries: Option<(u64, u64, u32)>,
    /// Malformed lines: (1-based line number, error).
    pub errors: alloc::vec::Vec<(usize, ParseError)>,
    /// From `# cadence-affinity:` lines: the CPUs each listed task may run on (a pid listed
    /// twice gets the union). Empty for a Linux trace.
    pub affinity: BTreeMap<u32, CpuMask>,
}

impl Parsed {
    /// Events lost to overwriting, per the header.
    pub fn lost(&self) -> u64 {
        self.entries.map_or(0, |(e, w, _)| w.saturating_sub(e))
    }
}

/// Parses a whole trace text (events in file order).
pub fn parse_text(text: &str) -> Parsed {
    let mut p = Parsed::default();
    for (i, line) in text.lines().enumerate() {
        if let Some(e) = parse_entries_line(line) {
            p.entries = Some(e);
            continue;
        }
        match parse_affinity_line(line) {
            Some(Ok((pid, mask))) => {
                let m = p.affinity.entry(pid).or_insert(CpuMask::EMPTY);
                *m = *m | mask;
                continue;
            }
            Some(Err(e)) => {
                p.errors.push((i + 1, e));
                continue;
            }
            None => {}
        }
        match parse_line(line) {
            Ok(Some(ev)) => p.events.push(ev),
            Ok(None) => {}
            Err(e) => p.errors.push((i + 1, e)),
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    fn t(comm: &str, pid: u32, prio: i32) -> TaskInfo {
        TaskInfo { comm: Comm::new(comm), pid, prio }
    }

    fn ev(ts_ns: u64, cpu: u32, comm: &str, pid: u32, kind: EventKind) -> Event {
        Event { ts_ns, cpu, comm: Comm::new(comm), pid, kind }
    }

    fn line(e: &Event) -> String {
        let mut s = String::new();
        write_event(&mut s, e).unwrap();
        s
    }

    #[test]
    fn switch_line_matches_linux() {
        let e = ev(
            1_234_567_890_123,
            1,
            "<idle>",
            0,
            EventKind::Switch { prev: t("swapper/1", 0, 120), prev_state: b'R', next: t("pipe-ping", 12, 120) },
        );
        assert_eq!(
            line(&e),
            "          <idle>-0       [001] d..2.  1234.567890: sched_switch: prev_comm=swapper/1 prev_pid=0 \
             prev_prio=120 prev_state=R ==> next_comm=pipe-ping next_pid=12 next_prio=120\n"
        );
    }

    #[test]
    fn other_lines_match_linux_fields() {
        let w = ev(5_000_001_000, 0, "pipe-pong", 13, EventKind::Wakeup { task: t("pipe-ping", 12, 120), target_cpu: 2, new: false });
        assert!(line(&w).ends_with("sched_wakeup: comm=pipe-ping pid=12 prio=120 target_cpu=002\n"));
        assert!(line(&w).starts_with("       pipe-pong-13      [000] d..2.     5.000001: "));
        let m = ev(1000, 3, "init", 1, EventKind::Migrate { task: t("rt", 7, 9), orig_cpu: 0, dest_cpu: 3 });
        assert!(line(&m).ends_with("sched_migrate_task: comm=rt pid=7 prio=9 orig_cpu=0 dest_cpu=3\n"));
        let x = ev(1000, 3, "rt", 7, EventKind::Exit { task: t("rt", 7, 9) });
        assert!(line(&x).ends_with("sched_process_exit: comm=rt pid=7 prio=9\n"));
        let i = ev(1000, 0, "init", 1, EventKind::Ipi { target_cpu: 33, vector: RESCHEDULE_VECTOR });
        assert!(line(&i).ends_with("ipi_raise: target_mask=00000002,00000000 (Rescheduling interrupts)\n"));
    }

    #[test]
    fn round_trip_every_kind() {
        let kinds = vec![
            EventKind::Switch { prev: t("a b", 5, 98), prev_state: b'S', next: t("swapper/0", 0, 120) },
            EventKind::Wakeup { task: t("x-y-z", 77, 139), target_cpu: 1, new: false },
            EventKind::Wakeup { task: t("new", 78, 100), target_cpu: 63, new: true },
            EventKind::Migrate { task: t("m", 9, 0), orig_cpu: 1, dest_cpu: 2 },
            EventKind::Exit { task: t("gone", 10, 120) },
            EventKind::TimerExpire { function: Comm::new("tick"), now_ns: 123_456_789 },
            EventKind::Ipi { target_cpu: 3, vector: CALL_FUNCTION_VECTOR },
            EventKind::Ipi { target_cpu: 63, vector: 0x40 },
            EventKind::HrtickStart { delay_ns: 750_000 },
            EventKind::HrtickFire,
            EventKind::CoreForceIdle { cpu: 1, duration_ns: 42 },
            EventKind::CoreSwitch { pid: 7, cookie: 0x2a, forced: false },
            EventKind::CoreSwitch { pid: 0, cookie: 0, forced: true },
            EventKind::Prio { task: t("chrt", 12, 120), old_prio: 49 },
            EventKind::Affinity { task: t("taskset", 13, 9), mask: 0xf0, wide: false },
            EventKind::Affinity { task: t("taskset", 13, 9), mask: 0x1, wide: true },
            EventKind::Dl { task: t("dl", 14, -1), runtime_ns: -1200, deadline_ns: 5_000_000_000, replenish: false },
            EventKind::Dl { task: t("dl", 14, -1), runtime_ns: 1_000_000, deadline_ns: 5_010_000_000, replenish: true },
            EventKind::Print { text: crate::event::Marker::new("start at 123 off=4 (period=9 next=10)\n") },
        ];
        for (i, k) in kinds.into_iter().enumerate() {
            let e = ev(987_654_321_000 + i as u64 * 1000, i as u32, "task-with-dash", 1234567, k);
            assert_eq!(parse_line(&line(&e)), Ok(Some(e)), "{}", line(&e));
        }
        let idle = ev(1000, 0, IDLE_COMM, 0, EventKind::HrtickFire);
        assert_eq!(parse_line(&line(&idle)), Ok(Some(idle)));
    }

    #[test]
    fn parses_linux_lines_and_skips_others() {
        let l = "  kworker/u8:2-123   [002] dN.3.  100.000002: sched_wakeup: comm=sh pid=9 prio=120 target_cpu=002";
        let e = parse_line(l).unwrap().unwrap();
        assert_eq!(e.ts_ns, 100_000_002_000);
        assert_eq!(e.comm.as_str(), "kworker/u8:2");
        assert_eq!(e.pid, 123);
        assert_eq!(e.cpu, 2);
        let s = "bash-1 [000] ..... 1.5: sched_switch: prev_comm=bash prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=2 next_prio=120";
        assert!(matches!(parse_line(s), Ok(Some(Event { kind: EventKind::Switch { prev_state: b'R', .. }, .. }))));
        assert_eq!(parse_line("bash-1 [000] ..... 1.000000: irq_handler_entry: irq=1 name=x"), Ok(None));
        assert_eq!(parse_line("# tracer: nop"), Ok(None));
        assert_eq!(parse_line(""), Ok(None));
    }

    #[test]
    fn malformed_lines_are_errors_not_panics() {
        for bad in [
            "garbage",
            "x-1 [000] ..... notatime: sched_switch: a",
            "x-1 [000] ..... 1.0: sched_switch: prev_comm=a",
            "x-1 [000] ..... 1.0: sched_wakeup: comm=a pid=z prio=1 target_cpu=1",
            "x-1 [000] ..... 1.0: ipi_raise: target_mask=zz (Rescheduling interrupts)",
            "x-1 [000] ..... 1.0: ipi_raise: target_mask=0 (Rescheduling interrupts)",
            "x-1 [000] ..... 1.0: ipi_raise: target_mask=1 (vector 0xzz)",
            "x-1 [000] ..... 99999999999999999999.0: sched_hrtick_fire: cpu=000",
            "-[]",
            "é-1 [é] é",
        ] {
            assert!(parse_line(bad).is_err(), "{}", bad);
        }
    }

    #[test]
    fn affinity_lines_round_trip_and_other_comments_are_ignored() {
        let mut s = String::new();
        write_header(&mut s, 0, 0, 4).unwrap();
        write_affinity(&mut s, 12, CpuMask::from_u64(0b1010)).unwrap();
        write_affinity(&mut s, 7, CpuMask::from_u64(u64::MAX)).unwrap();
        write_affinity(&mut s, 12, CpuMask::from_u64(0b0001)).unwrap();
        assert!(s.contains("\n# cadence-affinity: pid=12 mask=0xa\n"), "{}", s);
        s.push_str("# some other comment: pid=3 mask=0x1\n# cadence-affinity: pid=x mask=0x1\n");
        s.push_str("# cadence-affinity: pid=3 mask=12\n");
        let p = parse_text(&s);
        assert_eq!(p.affinity.len(), 2);
        assert_eq!(p.affinity.get(&12), Some(&CpuMask::from_u64(0b1011)), "a pid listed twice: the union");
        assert_eq!(p.affinity.get(&7), Some(&CpuMask::from_u64(u64::MAX)));
        assert_eq!(p.errors.iter().map(|e| e.1).collect::<vec::Vec<_>>(), vec![ParseError::BadField("pid"), ParseError::BadField("mask")]);
        assert_eq!(parse_line("# cadence-affinity: pid=1 mask=0x1"), Ok(None), "a comment to the line parser");
        assert!(parse_text("# tracer: nop\n").affinity.is_empty(), "a Linux trace has none");
    }

    #[test]
    fn header_round_trip() {
        let mut s = String::new();
        write_header(&mut s, 10, 15, 4).unwrap();
        assert!(s.starts_with("# tracer: nop\n#\n# entries-in-buffer/entries-written: 10/15   #P:4\n"));
        let p = parse_text(&s);
        assert_eq!(p.entries, Some((10, 15, 4)));
        assert_eq!(p.lost(), 5);
        assert!(p.events.is_empty() && p.errors.is_empty());
    }
}
