//! The rt-app 1.0 workload model (`tutorial.txt` of the Debian `rt-app` package) and its
//! loader, [`load`]. Errors name the line and the key path (`tasks.thread0.priority`); a
//! workload that fails to load is never partially returned.
//!
//! Top level: `"tasks"` (required), `"global"`, `"resources"` (legacy, accepted and ignored:
//! resources are created from their uses, as rt-app does).
//!
//! `global`: `duration` (s, -1 = until every thread ends), `calibration` (`"CPUn"` or ns per
//! loop), `default_policy`, `pi_enabled`, `lock_pages`, `logdir`, `log_basename`, `log_size`
//! (MB, `"file"`, `"disable"`, `"auto"`), `ftrace`, `gnuplot`, `io_device`,
//! `mem_buffer_size`, `cumulative_slack`; `frag` (legacy AQuoSA key in the examples) is
//! accepted and ignored.
//!
//! A thread object: `instance`, `loop`, `policy` (`SCHED_OTHER`/`SCHED_NORMAL`, `SCHED_FIFO`,
//! `SCHED_RR`, `SCHED_BATCH`, `SCHED_IDLE`, `SCHED_DEADLINE`), `priority` (1..=99 for FIFO/RR,
//! a nice value -20..=19 for the others), `dl-runtime`/`dl-period`/`dl-deadline` (µs;
//! SCHED_DEADLINE needs all three: Debian's rt-app 1.0 takes a missing deadline as 0, which
//! `sched_setattr` refuses with EINVAL, so Cadence refuses it when loading), `cpus`, `delay`
//! (µs), then either `phases` (an
//! object of phase objects, run in file order) or the events of its single phase directly. A
//! phase object: `loop`, `cpus`, `policy`, `priority` and events (a phase cannot switch to
//! SCHED_DEADLINE: its parameters are the thread's).
//!
//! Loops as rt-app: with `phases`, the thread repeats the whole list `loop` times (default -1 =
//! forever) and each phase repeats `loop` times (default 1); without `phases`, the single
//! phase repeats `loop` times and the thread runs it once (or forever if `loop` is absent).
//!
//! Events are keys that start with an event name followed by nothing or decimal digits
//! (`run`, `run1`, `sleep12`); repeated keys are successive events in file order:
//! `run`, `runtime`, `sleep` (µs), `mem`, `iorun` (bytes), `timer {ref, period[, mode]}`,
//! `lock`/`unlock` (mutex name), `wait {ref, mutex}`, `signal`/`broad` (condition name),
//! `sync {ref, mutex}` (signal then wait), `suspend` (name; empty or bare = the thread's own
//! name, as workgen fills it), `resume` (name), `barrier` (name), `yield`. A timer ref that
//! starts with `unique` is private to each thread instance; others are shared.
//!
//! Resource checks ("undefined resources"): `unlock`, and the `mutex` of `wait`/`sync`, need a
//! `lock` of that mutex somewhere; `signal`/`broad`/`resume` need a `wait`/`sync`/`suspend` on
//! that name somewhere.
//!
//! Cadence extensions (thread level, not rt-app): `tty` (integer N: the thread's controlling
//! terminal is ttyN), `session` (boolean: each instance starts a new session), `group`
//! (string: the name of a manual scheduling group all instances join).

use crate::json::{self, Kind, Member, Value};
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

/// Most threads a workload may create (all instances of all tasks).
pub const MAX_THREADS: u32 = 256;
/// Longest single run/sleep/timer period accepted, µs (one hour).
pub const MAX_US: i64 = 3_600_000_000;
/// Highest CPU number `cpus` may name.
pub const MAX_CPU: i64 = 63;

/// A load error: line, key path, reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub line: u32,
    pub key: String,
    pub msg: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "line {}: {}", self.line, self.msg)
        } else {
            write!(f, "line {}: {}: {}", self.line, self.key, self.msg)
        }
    }
}

fn err<T>(line: u32, key: &str, msg: impl Into<String>) -> Result<T, Error> {
    Err(Error { line, key: key.into(), msg: msg.into() })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Other,
    Fifo,
    Rr,
    Batch,
    Idle,
    Deadline,
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        Some(match s {
            "SCHED_OTHER" | "SCHED_NORMAL" => Policy::Other,
            "SCHED_FIFO" => Policy::Fifo,
            "SCHED_RR" => Policy::Rr,
            "SCHED_BATCH" => Policy::Batch,
            "SCHED_IDLE" => Policy::Idle,
            "SCHED_DEADLINE" => Policy::Deadline,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }
    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
    /// Valid `priority` values: RT priority or nice.
    pub fn prio_range(self) -> (i32, i32) {
        if self.is_rt() {
            (1, 99)
        } else {
            (-20, 19)
        }
    }
    /// rt-app's default priority: 10 for RT, nice 0 otherwise.
    pub fn default_prio(self) -> i32 {
        if self.is_rt() {
            10
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// Measure ns per loop on this CPU.
    Cpu(u32),
    /// Use this many ns per loop.
    NsPerLoop(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSize {
    File,
    Disable,
    Auto,
    Mb(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Global {
    /// Seconds; -1 = until all threads end.
    pub duration: i64,
    pub calibration: Calibration,
    pub default_policy: Policy,
    pub pi_enabled: bool,
    pub lock_pages: bool,
    pub logdir: String,
    pub log_basename: String,
    pub log_size: LogSize,
    pub ftrace: bool,
    pub gnuplot: bool,
    pub io_device: String,
    pub mem_buffer_size: u64,
    pub cumulative_slack: bool,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            duration: -1,
            calibration: Calibration::Cpu(0),
            default_policy: Policy::Other,
            pi_enabled: false,
            lock_pages: false,
            logdir: "./".into(),
            log_basename: "rt-app".into(),
            log_size: LogSize::File,
            ftrace: false,
            gnuplot: false,
            io_device: "/dev/null".into(),
            mem_buffer_size: 4 * 1024 * 1024,
            cumulative_slack: false,
        }
    }
}

/// Index into [`Workload::resources`].
pub type ResId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ResKind {
    Mutex,
    /// A condition (wait/signal/broad/sync, and suspend/resume's).
    Cond,
    Timer,
    Barrier,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub name: String,
    pub kind: ResKind,
    /// Line of its first use.
    pub line: u32,
    /// Timers whose ref starts with `unique`: one per thread instance.
    pub unique: bool,
    /// Barriers: how many thread instances use it.
    pub users: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    Run {
        us: u64,
    },
    Runtime {
        us: u64,
    },
    Sleep {
        us: u64,
    },
    Mem {
        bytes: u64,
    },
    IoRun {
        bytes: u64,
    },
    Timer {
        timer: ResId,
        period_us: u64,
        absolute: bool,
    },
    Lock {
        mutex: ResId,
    },
    Unlock {
        mutex: ResId,
    },
    Wait {
        cond: ResId,
        mutex: ResId,
    },
    Signal {
        cond: ResId,
    },
    Broad {
        cond: ResId,
    },
    Sync {
        cond: ResId,
        mutex: ResId,
    },
    /// Waits on condition `cond` with the internal mutex `mutex` (both named after the target).
    Suspend {
        cond: ResId,
        mutex: ResId,
    },
    /// Broadcasts condition `cond` under `mutex`.
    Resume {
        cond: ResId,
        mutex: ResId,
    },
    Barrier {
        barrier: ResId,
    },
    Yield,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub key: String,
    pub line: u32,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub name: String,
    pub line: u32,
    /// -1 = forever.
    pub loops: i64,
    pub cpus: Option<Vec<u32>>,
    pub policy: Option<Policy>,
    pub priority: Option<i32>,
    pub events: Vec<Event>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub name: String,
    pub line: u32,
    pub instance: u32,
    /// -1 = forever.
    pub loops: i64,
    pub policy: Policy,
    pub priority: i32,
    pub cpus: Option<Vec<u32>>,
    pub delay_us: u64,
    pub phases: Vec<Phase>,
    /// Cadence extension: controlling terminal ttyN.
    pub tty: Option<u32>,
    /// Cadence extension: each instance starts a new session.
    pub session: bool,
    /// Cadence extension: manual scheduling group.
    pub group: Option<String>,
    /// SCHED_DEADLINE parameters (µs), with the defaults filled in; `None` for other policies.
    pub dl: Option<DlUs>,
}

/// A thread's `dl-runtime`, `dl-deadline`, `dl-period` (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlUs {
    pub runtime: u64,
    pub deadline: u64,
    pub period: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub global: Global,
    pub tasks: Vec<Task>,
    pub resources: Vec<Resource>,
}

impl Workload {
    /// Threads the workload creates.
    pub fn nthreads(&self) -> u32 {
        self.tasks.iter().map(|t| t.instance).sum()
    }

    /// Thread names as rt-app's log files name them (`<task>-<index>`), in creation order,
    /// with the index of their task.
    pub fn threads(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        for (ti, t) in self.tasks.iter().enumerate() {
            for _ in 0..t.instance {
                let idx = out.len();
                out.push((format!("{}-{}", t.name, idx), ti));
            }
        }
        out
    }

    /// Is any thread endless (so only `duration` stops the workload)?
    pub fn has_endless_thread(&self) -> bool {
        self.tasks.iter().any(|t| t.loops < 0 || t.phases.iter().any(|p| p.loops < 0))
    }
}

/// rt-app event names in rt-app's matching order (`runtime` before `run`).
pub const EVENTS: &[&str] = &[
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer", "suspend", "resume", "mem", "iorun", "yield",
    "barrier", "fork",
];

/// The event a key names: an event name followed by nothing or decimal digits.
pub fn event_name(key: &str) -> Option<&'static str> {
    EVENTS.iter().copied().find(|e| key.strip_prefix(e).is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit())))
}

/// Keys of `members` made unique as workgen does: a repeated key gets the smallest numeric
/// suffix (1, 2, ...) that no other key of the object uses.
pub fn unique_keys(members: &[Member]) -> Vec<String> {
    let mut used: BTreeSet<String> = members.iter().map(|m| m.key.clone()).collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::with_capacity(members.len());
    for m in members {
        if seen.insert(m.key.as_str()) {
            out.push(m.key.clone());
        } else {
            let mut n = 1u32;
            let mut k = format!("{}{}", m.key, n);
            while used.contains(&k) {
                n += 1;
                k = format!("{}{}", m.key, n);
            }
            used.insert(k.clone());
            out.push(k);
        }
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{}.{}", path, key)
    }
}

fn members<'a>(v: &'a Value, path: &str) -> Result<&'a [Member], Error> {
    match &v.kind {
        Kind::Object(m) => Ok(m),
        k => err(v.line, path, format!("expected an object, found {}", k.type_name())),
    }
}

fn int(v: &Value, path: &str) -> Result<i64, Error> {
    match v.kind {
        Kind::Int(i) => Ok(i),
        ref k => err(v.line, path, format!("expected an integer, found {}", k.type_name())),
    }
}

fn int_in(v: &Value, path: &str, min: i64, max: i64) -> Result<i64, Error> {
    let i = int(v, path)?;
    if i < min || i > max {
        return err(v.line, path, format!("{} is out of range {}..={}", i, min, max));
    }
    Ok(i)
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, Error> {
    match &v.kind {
        Kind::Str(s) => Ok(s),
        k => err(v.line, path, format!("expected a string, found {}", k.type_name())),
    }
}

fn name_str<'a>(v: &'a Value, path: &str) -> Result<&'a str, Error> {
    let s = string(v, path)?;
    if s.is_empty() {
        return err(v.line, path, "name must not be empty");
    }
    Ok(s)
}

fn boolean(v: &Value, path: &str) -> Result<bool, Error> {
    match v.kind {
        Kind::Bool(b) => Ok(b),
        ref k => err(v.line, path, format!("expected true or false, found {}", k.type_name())),
    }
}

fn not_bare(m: &Member, path: &str) -> Result<(), Error> {
    if m.bare {
        return err(m.line, path, "needs a value (\"key\" : value)");
    }
    Ok(())
}

/// Rejects a second occurrence of a non-event key.
/// The members of an object-valued event (`timer`, `wait`, `sync`), each with its path: every
/// key at most once, and each with a value.
fn event_members<'a>(v: &'a Value, path: &str) -> Result<Vec<(&'a Member, String)>, Error> {
    let mut once = Once::new();
    let mut out = Vec::new();
    for f in members(v, path)? {
        let fp = join(path, &f.key);
        once.check(f, &fp)?;
        not_bare(f, &fp)?;
        out.push((f, fp));
    }
    Ok(out)
}

struct Once(BTreeSet<String>);
impl Once {
    fn new() -> Self {
        Once(BTreeSet::new())
    }
    fn check(&mut self, m: &Member, path: &str) -> Result<(), Error> {
        if !self.0.insert(m.key.clone()) {
            return err(m.line, path, "duplicate key (only events may repeat)");
        }
        Ok(())
    }
}

fn cpus(v: &Value, path: &str) -> Result<Vec<u32>, Error> {
    let Kind::Array(items) = &v.kind else {
        return err(v.line, path, format!("expected an array of CPU numbers, found {}", v.kind.type_name()));
    };
    if items.is_empty() {
        return err(v.line, path, "empty CPU list");
    }
    let mut out = Vec::new();
    for it in items {
        let c = int_in(it, path, 0, MAX_CPU)? as u32;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

fn policy(v: &Value, path: &str) -> Result<Policy, Error> {
    let s = string(v, path)?;
    Policy::parse(s).ok_or_else(|| Error {
        line: v.line,
        key: path.into(),
        msg: format!("unknown policy '{}' (SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE)", s),
    })
}

fn check_prio(p: Policy, prio: i32, line: u32, path: &str) -> Result<(), Error> {
    let (lo, hi) = p.prio_range();
    if prio < lo || prio > hi {
        let what = if p.is_rt() { "an RT priority" } else { "a nice value" };
        return err(line, path, format!("{} for {} must be {} in {}..={}", prio, p.name(), what, lo, hi));
    }
    Ok(())
}

/// Builder state: resources by (kind, name), and uses to check at the end.
struct Ctx {
    resources: Vec<Resource>,
    /// (resource, line, key path) of uses that need a defining use elsewhere.
    needs: Vec<(ResId, u32, String, &'static str)>,
    /// Mutexes with a `lock` event; conditions with a waiter.
    locked: BTreeSet<ResId>,
    waited: BTreeSet<ResId>,
    /// Barriers used by the task being built.
    task_barriers: BTreeSet<ResId>,
}

impl Ctx {
    fn res(&mut self, kind: ResKind, name: &str, line: u32) -> ResId {
        if let Some(i) = self.resources.iter().position(|r| r.kind == kind && r.name == name) {
            return i;
        }
        self.resources.push(Resource {
            name: name.into(),
            kind,
            line,
            unique: kind == ResKind::Timer && name.starts_with("unique"),
            users: 0,
        });
        self.resources.len() - 1
    }
}

/// Loads a workload from the bytes of a JSON file.
pub fn load(input: &[u8]) -> Result<Workload, Error> {
    let doc = json::parse(input).map_err(|e| Error { line: e.line, key: String::new(), msg: e.msg })?;
    from_value(&doc)
}

/// Builds the workload from a parsed document.
pub fn from_value(doc: &Value) -> Result<Workload, Error> {
    let top = members(doc, "").map_err(|e| Error { msg: "the file must hold a JSON object with \"tasks\"".into(), ..e })?;
    let mut once = Once::new();
    let mut global = Global::default();
    let mut tasks_v = None;
    for m in top {
        once.check(m, &m.key)?;
        not_bare(m, &m.key)?;
        match m.key.as_str() {
            "global" => global = parse_global(&m.value)?,
            "tasks" => tasks_v = Some(m),
            "resources" => {
                members(&m.value, "resources")?;
            }
            k => return err(m.line, k, "unknown key (expected \"tasks\", \"global\" or \"resources\")"),
        }
    }
    let Some(tasks_m) = tasks_v else {
        return err(doc.line, "tasks", "missing: a workload needs a \"tasks\" object");
    };
    let tm = members(&tasks_m.value, "tasks")?;
    if tm.is_empty() {
        return err(tasks_m.line, "tasks", "no threads defined");
    }
    let mut ctx =
        Ctx { resources: Vec::new(), needs: Vec::new(), locked: BTreeSet::new(), waited: BTreeSet::new(), task_barriers: BTreeSet::new() };
    let names = unique_keys(tm);
    let mut tasks = Vec::new();
    let mut nthreads: u32 = 0;
    for (m, name) in tm.iter().zip(names) {
        let path = join("tasks", &m.key);
        not_bare(m, &path)?;
        ctx.task_barriers.clear();
        let t = parse_task(&name, m, &path, &global, &mut ctx)?;
        for &b in &ctx.task_barriers {
            if let Some(r) = ctx.resources.get_mut(b) {
                r.users += t.instance;
            }
        }
        nthreads = nthreads.saturating_add(t.instance);
        if nthreads > MAX_THREADS {
            return err(m.line, &join(&path, "instance"), format!("more than {} threads in the workload", MAX_THREADS));
        }
        tasks.push(t);
    }
    for (id, line, path, what) in &ctx.needs {
        let Some(r) = ctx.resources.get(*id) else { continue };
        let ok = match r.kind {
            ResKind::Mutex => ctx.locked.contains(id),
            ResKind::Cond => ctx.waited.contains(id),
            _ => true,
        };
        if !ok {
            return err(*line, path, format!("undefined resource: {} '{}'", what, r.name));
        }
    }
    Ok(Workload { global, tasks, resources: ctx.resources })
}

fn parse_global(v: &Value) -> Result<Global, Error> {
    let mut g = Global::default();
    let mut once = Once::new();
    for m in members(v, "global")? {
        let p = join("global", &m.key);
        once.check(m, &p)?;
        not_bare(m, &p)?;
        let v = &m.value;
        match m.key.as_str() {
            "duration" => g.duration = int_in(v, &p, -1, i64::from(u32::MAX))?,
            "calibration" => {
                g.calibration = match &v.kind {
                    Kind::Int(_) => Calibration::NsPerLoop(int_in(v, &p, 1, 1_000_000_000)? as u64),
                    Kind::Str(s) => match s.strip_prefix("CPU").and_then(|n| n.parse::<u32>().ok()) {
                        Some(c) if i64::from(c) <= MAX_CPU => Calibration::Cpu(c),
                        _ => return err(v.line, &p, format!("'{}' is neither \"CPUn\" nor ns per loop", s)),
                    },
                    k => return err(v.line, &p, format!("expected \"CPUn\" or an integer, found {}", k.type_name())),
                }
            }
            "default_policy" => g.default_policy = policy(v, &p)?,
            "pi_enabled" => g.pi_enabled = boolean(v, &p)?,
            "lock_pages" => g.lock_pages = boolean(v, &p)?,
            "ftrace" => g.ftrace = boolean(v, &p)?,
            "gnuplot" => g.gnuplot = boolean(v, &p)?,
            "cumulative_slack" => g.cumulative_slack = boolean(v, &p)?,
            "logdir" => g.logdir = string(v, &p)?.into(),
            "log_basename" => g.log_basename = string(v, &p)?.into(),
            "io_device" => g.io_device = string(v, &p)?.into(),
            "mem_buffer_size" => g.mem_buffer_size = int_in(v, &p, 1, 1 << 30)? as u64,
            "log_size" => {
                g.log_size = match &v.kind {
                    Kind::Int(_) => LogSize::Mb(int_in(v, &p, 0, 4096)? as u32),
                    Kind::Str(s) => match s.to_ascii_lowercase().as_str() {
                        "file" => LogSize::File,
                        "disable" => LogSize::Disable,
                        "auto" => LogSize::Auto,
                        _ => return err(v.line, &p, format!("'{}': expected MB, \"file\", \"disable\" or \"auto\"", s)),
                    },
                    k => return err(v.line, &p, format!("expected an integer or a string, found {}", k.type_name())),
                }
            }
            "frag" => {
                int(v, &p)?;
            }
            _ => return err(m.line, &p, "unknown key in global"),
        }
    }
    Ok(g)
}

const LEGACY: &[&str] = &["exec", "period", "deadline", "lock_order", "resources"];

fn parse_task(name: &str, m: &Member, path: &str, g: &Global, ctx: &mut Ctx) -> Result<Task, Error> {
    let obj = members(&m.value, path)?;
    let mut once = Once::new();
    let mut t = Task {
        name: name.into(),
        line: m.line,
        instance: 1,
        loops: -1,
        policy: g.default_policy,
        priority: 0,
        cpus: None,
        delay_us: 0,
        phases: Vec::new(),
        tty: None,
        session: false,
        group: None,
        dl: None,
    };
    let mut dl_keys: [Option<u64>; 3] = [None; 3];
    let mut prio: Option<(i32, u32, String)> = None;
    let mut loop_v: Option<i64> = None;
    let mut phases_m: Option<&Member> = None;
    let mut has_events = false;
    for c in obj {
        let p = join(path, &c.key);
        if let Some(ev) = event_name(&c.key) {
            if ev == "fork" {
                return err(c.line, &p, "event 'fork' is not supported");
            }
            has_events = true;
            continue;
        }
        once.check(c, &p)?;
        not_bare(c, &p)?;
        let v = &c.value;
        match c.key.as_str() {
            "instance" => t.instance = int_in(v, &p, 1, i64::from(MAX_THREADS))? as u32,
            "loop" => loop_v = Some(int_in(v, &p, -1, i64::from(u32::MAX))?),
            "policy" => t.policy = policy(v, &p)?,
            "priority" => prio = Some((int_in(v, &p, -1000, 1000)? as i32, v.line, p)),
            "cpus" => t.cpus = Some(cpus(v, &p)?),
            "delay" => t.delay_us = int_in(v, &p, 0, MAX_US)? as u64,
            "phases" => phases_m = Some(c),
            "dl-runtime" => dl_keys[0] = Some(int_in(v, &p, 0, MAX_US)? as u64),
            "dl-deadline" => dl_keys[1] = Some(int_in(v, &p, 0, MAX_US)? as u64),
            "dl-period" => dl_keys[2] = Some(int_in(v, &p, 0, MAX_US)? as u64),
            "tty" => t.tty = Some(int_in(v, &p, 0, 63)? as u32),
            "session" => t.session = boolean(v, &p)?,
            "group" => t.group = Some(name_str(v, &p)?.into()),
            k if LEGACY.contains(&k) => return err(c.line, &p, "legacy rt-app 0.x key (not in the rt-app 1.0 grammar)"),
            _ => return err(c.line, &p, "unknown key or event in a thread"),
        }
    }
    if let Some((pr, line, p)) = prio {
        check_prio(t.policy, pr, line, &p)?;
        t.priority = pr;
    } else {
        t.priority = t.policy.default_prio();
    }
    if loop_v == Some(0) {
        return err(m.line, &join(path, "loop"), "loop must be -1 (forever) or at least 1");
    }
    if t.policy == Policy::Deadline {
        let need = |i: usize, key: &str| {
            dl_keys[i].filter(|&v| v > 0).ok_or_else(|| Error {
                line: m.line,
                key: join(path, key),
                msg: format!("SCHED_DEADLINE needs {} (µs, > 0; rt-app 1.0 would pass 0, which sched_setattr refuses)", key),
            })
        };
        t.dl = Some(DlUs { runtime: need(0, "dl-runtime")?, deadline: need(1, "dl-deadline")?, period: need(2, "dl-period")? });
    }
    match phases_m {
        Some(pm) => {
            let pp = join(path, "phases");
            if has_events {
                return err(m.line, path, "events must be inside \"phases\" when a thread has phases");
            }
            let ph = members(&pm.value, &pp)?;
            if ph.is_empty() {
                return err(pm.line, &pp, "no phases");
            }
            for (c, pname) in ph.iter().zip(unique_keys(ph)) {
                let p = join(&pp, &c.key);
                not_bare(c, &p)?;
                let phase = parse_phase(&pname, &c.value, &p, &t, name, ctx, true)?;
                t.phases.push(phase);
            }
            t.loops = loop_v.unwrap_or(-1);
        }
        None => {
            let mut phase = parse_phase(name, &m.value, path, &t, name, ctx, false)?;
            phase.loops = loop_v.unwrap_or(1);
            t.loops = if loop_v.is_some() { 1 } else { -1 };
            t.phases.push(phase);
        }
    }
    Ok(t)
}

#[allow(clippy::too_many_arguments)]
fn parse_phase(pname: &str, v: &Value, path: &str, task: &Task, thread: &str, ctx: &mut Ctx, own_object: bool) -> Result<Phase, Error> {
    let obj = members(v, path)?;
    let mut ph = Phase { name: pname.into(), line: v.line, loops: 1, cpus: None, policy: None, priority: None, events: Vec::new() };
    let mut once = Once::new();
    let mut prio: Option<(i32, u32, String)> = None;
    for c in obj {
        let p = join(path, &c.key);
        if let Some(ev) = event_name(&c.key) {
            let kind = parse_event(ev, c, &p, thread, ctx)?;
            ph.events.push(Event { key: c.key.clone(), line: c.line, kind });
            continue;
        }
        if !own_object {
            continue; // thread-level keys were checked by parse_task
        }
        once.check(c, &p)?;
        not_bare(c, &p)?;
        let v = &c.value;
        match c.key.as_str() {
            "loop" => {
                let l = int_in(v, &p, -1, i64::from(u32::MAX))?;
                if l == 0 {
                    return err(v.line, &p, "loop must be -1 (forever) or at least 1");
                }
                ph.loops = l;
            }
            "cpus" => ph.cpus = Some(cpus(v, &p)?),
            "policy" => {
                let pol = policy(v, &p)?;
                if pol == Policy::Deadline {
                    return err(v.line, &p, "a phase cannot switch to SCHED_DEADLINE (set it on the thread, with dl-runtime)");
                }
                ph.policy = Some(pol);
            }
            "priority" => prio = Some((int_in(v, &p, -1000, 1000)? as i32, v.line, p)),
            k if LEGACY.contains(&k) => return err(c.line, &p, "legacy rt-app 0.x key (not in the rt-app 1.0 grammar)"),
            _ => return err(c.line, &p, "unknown key or event in a phase"),
        }
    }
    if let Some((pr, line, p)) = prio {
        check_prio(ph.policy.unwrap_or(task.policy), pr, line, &p)?;
        ph.priority = Some(pr);
    }
    if ph.events.is_empty() {
        return err(v.line, path, "no events (a phase needs at least one event)");
    }
    Ok(ph)
}

fn parse_event(ev: &str, c: &Member, p: &str, thread: &str, ctx: &mut Ctx) -> Result<EventKind, Error> {
    let v = &c.value;
    if c.bare && ev != "suspend" && ev != "yield" {
        return err(c.line, p, "needs a value (only \"suspend\" and \"yield\" may stand alone)");
    }
    let us = |v: &Value| int_in(v, p, 0, MAX_US).map(|i| i as u64);
    Ok(match ev {
        "run" => EventKind::Run { us: us(v)? },
        "runtime" => EventKind::Runtime { us: us(v)? },
        "sleep" => EventKind::Sleep { us: us(v)? },
        "mem" => EventKind::Mem { bytes: int_in(v, p, 0, 1 << 30)? as u64 },
        "iorun" => EventKind::IoRun { bytes: int_in(v, p, 0, 1 << 30)? as u64 },
        "yield" => {
            if !c.bare {
                string(v, p)?;
            }
            EventKind::Yield
        }
        "timer" => {
            let mut r = None;
            let mut period = None;
            let mut absolute = false;
            for (f, fp) in event_members(v, p)? {
                match f.key.as_str() {
                    "ref" => r = Some(name_str(&f.value, &fp)?),
                    "period" => period = Some(int_in(&f.value, &fp, 0, MAX_US)? as u64),
                    "mode" => {
                        absolute = match string(&f.value, &fp)? {
                            "relative" => false,
                            "absolute" => true,
                            s => return err(f.line, &fp, format!("'{}': expected \"relative\" or \"absolute\"", s)),
                        }
                    }
                    _ => return err(f.line, &fp, "unknown key in timer (ref, period, mode)"),
                }
            }
            let Some(r) = r else { return err(v.line, &join(p, "ref"), "missing") };
            let Some(period_us) = period else { return err(v.line, &join(p, "period"), "missing") };
            EventKind::Timer { timer: ctx.res(ResKind::Timer, r, c.line), period_us, absolute }
        }
        "lock" => {
            let m = ctx.res(ResKind::Mutex, name_str(v, p)?, c.line);
            ctx.locked.insert(m);
            EventKind::Lock { mutex: m }
        }
        "unlock" => {
            let m = ctx.res(ResKind::Mutex, name_str(v, p)?, c.line);
            ctx.needs.push((m, c.line, p.into(), "mutex never locked"));
            EventKind::Unlock { mutex: m }
        }
        "signal" | "broad" => {
            let cond = ctx.res(ResKind::Cond, name_str(v, p)?, c.line);
            ctx.needs.push((cond, c.line, p.into(), "nobody waits on"));
            if ev == "signal" {
                EventKind::Signal { cond }
            } else {
                EventKind::Broad { cond }
            }
        }
        "wait" | "sync" => {
            let mut r = None;
            let mut mx = None;
            for (f, fp) in event_members(v, p)? {
                match f.key.as_str() {
                    "ref" => r = Some((name_str(&f.value, &fp)?, f.line)),
                    "mutex" => mx = Some((name_str(&f.value, &fp)?, f.line, fp)),
                    _ => return err(f.line, &fp, format!("unknown key in {} (ref, mutex)", ev)),
                }
            }
            let Some((r, _)) = r else { return err(v.line, &join(p, "ref"), "missing") };
            let Some((mname, mline, mpath)) = mx else { return err(v.line, &join(p, "mutex"), "missing") };
            let cond = ctx.res(ResKind::Cond, r, c.line);
            let mutex = ctx.res(ResKind::Mutex, mname, mline);
            ctx.waited.insert(cond);
            ctx.needs.push((mutex, mline, mpath, "mutex never locked"));
            if ev == "wait" {
                EventKind::Wait { cond, mutex }
            } else {
                EventKind::Sync { cond, mutex }
            }
        }
        "suspend" => {
            let target = if c.bare { thread } else { string(v, p)? };
            let target = if target.is_empty() { thread } else { target };
            let cond = ctx.res(ResKind::Cond, target, c.line);
            let mutex = ctx.res(ResKind::Mutex, target, c.line);
            ctx.waited.insert(cond);
            ctx.locked.insert(mutex);
            EventKind::Suspend { cond, mutex }
        }
        "resume" => {
            let target = name_str(v, p)?;
            let cond = ctx.res(ResKind::Cond, target, c.line);
            let mutex = ctx.res(ResKind::Mutex, target, c.line);
            ctx.locked.insert(mutex);
            ctx.needs.push((cond, c.line, p.into(), "nobody suspends on"));
            EventKind::Resume { cond, mutex }
        }
        "barrier" => {
            let b = ctx.res(ResKind::Barrier, name_str(v, p)?, c.line);
            ctx.task_barriers.insert(b);
            EventKind::Barrier { barrier: b }
        }
        _ => return err(c.line, p, "unknown event"),
    })
}
