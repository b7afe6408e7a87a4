//! Event records.
//!
//! An [`Event`] is `Copy`, fixed-size and self-contained: every task it mentions is a
//! [`TaskInfo`] holding the name inline ([`Comm`], at most 15 bytes of UTF-8, NUL-padded to 16
//! like Linux's `TASK_COMM_LEN`), the Linux pid (Cadence's tid; 0 for a CPU's idle task) and the
//! Linux prio (`99 - rt_priority` for SCHED_FIFO/RR, `120 + nice` for fair policies, 120 for
//! idle). The RT/fair split of the reports is derived from the prio (`< 100` is RT), exactly as
//! it can be from a Linux trace.

use core::fmt;

/// Bytes of a task name, NUL included (Linux `TASK_COMM_LEN`).
pub const COMM_LEN: usize = 16;

/// A task name stored inline: at most `COMM_LEN - 1` bytes of UTF-8, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Comm {
    bytes: [u8; COMM_LEN],
}

impl Comm {
    /// `s` truncated to 15 bytes at a character boundary (like Linux truncates `comm`).
    pub fn new(s: &str) -> Comm {
        let mut end = s.len().min(COMM_LEN - 1);
        while end > 0 && !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; COMM_LEN];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        Comm { bytes }
    }

    /// `prefix` followed by the decimal `n` (e.g. `swapper/3`), truncated like [`Comm::new`].
    pub fn with_number(prefix: &str, n: u32) -> Comm {
        let mut c = Comm::new(prefix);
        let mut len = c.len();
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        let mut v = n;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for &d in &digits[i..] {
            if len >= COMM_LEN - 1 {
                break;
            }
            c.bytes[len] = d;
            len += 1;
        }
        c
    }

    pub fn len(&self) -> usize {
        self.bytes.iter().position(|&b| b == 0).unwrap_or(COMM_LEN)
    }

    pub fn is_empty(&self) -> bool {
        self.bytes[0] == 0
    }

    /// The name (never fails: the bytes are always a UTF-8 prefix cut at a boundary).
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len()]).unwrap_or("?")
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// A task as an event records it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct TaskInfo {
    pub comm: Comm,
    /// Linux pid = Cadence tid (0: idle).
    pub pid: u32,
    /// Linux prio: 0..=98 RT (99 - rt_priority), 100..=139 fair (120 + nice), 120 idle.
    pub prio: i32,
}

impl TaskInfo {
    /// Is this an RT task (by its Linux prio)?
    pub fn is_rt(&self) -> bool {
        self.prio < 100
    }
}

/// Linux prio of an RT task.
pub fn rt_prio(rt_priority: u8) -> i32 {
    99 - rt_priority as i32
}

/// Linux prio of a fair task.
pub fn fair_prio(nice: i32) -> i32 {
    120 + nice
}

/// Event types; each has one bit in the enable mask (`1 << type as u32`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum EventType {
    SchedSwitch = 0,
    SchedWakeup = 1,
    SchedWakeupNew = 2,
    SchedMigrateTask = 3,
    SchedProcessExit = 4,
    TimerExpire = 5,
    Ipi = 6,
    HrtickStart = 7,
    HrtickFire = 8,
    CoreForceIdle = 9,
    /// Cadence: what a CPU runs after a switch, for the core-scheduling checker.
    CoreSwitch = 10,
    /// A task's priority changed (Linux's `sched_pi_setprio` format; Cadence emits it for
    /// every priority change: `sched_setattr`, nice, RLIMIT_RTTIME demotion).
    PiSetprio = 11,
    /// Cadence: a task's CPU affinity changed.
    SetAffinity = 12,
    /// Cadence: a SCHED_DEADLINE task used up its runtime and waits for its next period.
    DlThrottle = 13,
    /// Cadence: a throttled SCHED_DEADLINE task's replenishment timer gave it a new runtime.
    DlReplenish = 14,
    /// A write to tracefs's `trace_marker` (Linux's `print` event, shown as
    /// `tracing_mark_write: <text>`).
    Print = 15,
    /// Cadence: a task group's queue on a CPU ran out of its `cpu.max` quota and left its
    /// parent queue (Linux has no tracepoint here; `throttle_cfs_rq`).
    CfsThrottle = 16,
    /// Cadence: a throttled group queue got runtime again (`unthrottle_cfs_rq`).
    CfsUnthrottle = 17,
}

impl EventType {
    pub const ALL: [EventType; 18] = [
        EventType::SchedSwitch,
        EventType::SchedWakeup,
        EventType::SchedWakeupNew,
        EventType::SchedMigrateTask,
        EventType::SchedProcessExit,
        EventType::TimerExpire,
        EventType::Ipi,
        EventType::HrtickStart,
        EventType::HrtickFire,
        EventType::CoreForceIdle,
        EventType::CoreSwitch,
        EventType::PiSetprio,
        EventType::SetAffinity,
        EventType::DlThrottle,
        EventType::DlReplenish,
        EventType::Print,
        EventType::CfsThrottle,
        EventType::CfsUnthrottle,
    ];

    /// Mask with every event enabled.
    pub const ALL_MASK: u32 = (1 << 18) - 1;

    pub fn bit(self) -> u32 {
        1 << self as u32
    }

    /// The event's name in the ftrace text (and in `trace events`).
    pub fn name(self) -> &'static str {
        match self {
            EventType::SchedSwitch => "sched_switch",
            EventType::SchedWakeup => "sched_wakeup",
            EventType::SchedWakeupNew => "sched_wakeup_new",
            EventType::SchedMigrateTask => "sched_migrate_task",
            EventType::SchedProcessExit => "sched_process_exit",
            EventType::TimerExpire => "hrtimer_expire_entry",
            EventType::Ipi => "ipi_raise",
            EventType::HrtickStart => "sched_hrtick_start",
            EventType::HrtickFire => "sched_hrtick_fire",
            EventType::CoreForceIdle => "sched_core_force_idle",
            EventType::CoreSwitch => "sched_core_switch",
            EventType::PiSetprio => "sched_pi_setprio",
            EventType::SetAffinity => "sched_set_affinity",
            EventType::DlThrottle => "sched_dl_throttle",
            EventType::DlReplenish => "sched_dl_replenish",
            EventType::Print => "tracing_mark_write",
            EventType::CfsThrottle => "sched_cfs_throttle",
            EventType::CfsUnthrottle => "sched_cfs_unthrottle",
        }
    }

    /// The event's system (its directory under tracefs `events/`, and the `system:` of
    /// `set_event`): Linux's for its events (`sched`, `timer`, `ipi`, `ftrace` for the
    /// marker's `print`); `sched` for Cadence's own scheduler events.
    pub fn system(self) -> &'static str {
        match self {
            EventType::TimerExpire => "timer",
            EventType::Ipi => "ipi",
            EventType::Print => "ftrace",
            _ => "sched",
        }
    }

    pub fn from_name(name: &str) -> Option<EventType> {
        EventType::ALL.iter().copied().find(|e| e.name() == name)
    }
}

/// What happened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EventKind {
    /// `prev` (leaving in state `prev_state`: b'R', b'S', b'T', b'Z'...) → `next`.
    Switch {
        prev: TaskInfo,
        prev_state: u8,
        next: TaskInfo,
    },
    /// `task` made runnable on `target_cpu`; `new`: first wakeup of a new task.
    Wakeup {
        task: TaskInfo,
        target_cpu: u32,
        new: bool,
    },
    Migrate {
        task: TaskInfo,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    Exit {
        task: TaskInfo,
    },
    /// A timer of this CPU fired: `function` names the handler, `now_ns` is the time the
    /// timer queue compared its expiry against (Linux's `now=` field).
    TimerExpire {
        function: Comm,
        now_ns: u64,
    },
    /// This CPU sent interrupt `vector` to `target_cpu`.
    Ipi {
        target_cpu: u32,
        vector: u8,
    },
    HrtickStart {
        delay_ns: u64,
    },
    HrtickFire,
    /// CPU `cpu` was forced idle by core scheduling for `duration_ns`.
    CoreForceIdle {
        cpu: u32,
        duration_ns: u64,
    },
    /// After a switch this CPU runs task `pid` with core cookie `cookie` (`pid` 0: idle;
    /// `forced`: idle although tasks are runnable, i.e. forced idle by core scheduling).
    CoreSwitch {
        pid: u32,
        cookie: u64,
        forced: bool,
    },
    /// `task`'s priority changed from `old_prio` to `task.prio` (Linux prio numbers).
    Prio {
        task: TaskInfo,
        old_prio: i32,
    },
    /// `task` may now run on `mask` (CPUs 0..63; `wide`: on some CPU above 63 too, which a
    /// fixed-size event does not carry: a reader takes the task's whole mask from elsewhere).
    Affinity {
        task: TaskInfo,
        mask: u64,
        wide: bool,
    },
    /// SCHED_DEADLINE `task` was throttled (`replenish` false: runtime used up) or replenished
    /// (`replenish` true), with `runtime_ns` left and absolute `deadline_ns` after it.
    Dl {
        task: TaskInfo,
        runtime_ns: i64,
        deadline_ns: u64,
        replenish: bool,
    },
    /// A user program wrote `text` to `trace_marker`.
    Print {
        text: Marker,
    },
    /// Task group `group`'s queue on this CPU was throttled (`throttled`) or unthrottled.
    CfsBandwidth {
        group: u32,
        throttled: bool,
    },
}

/// Bytes of a `trace_marker` text a record keeps (a record is fixed-size: longer writes are
/// cut at a character boundary).
pub const MARKER_LEN: usize = 40;

/// A `trace_marker` text stored inline: at most [`MARKER_LEN`] bytes of UTF-8, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Marker {
    bytes: [u8; MARKER_LEN],
}

impl Marker {
    /// `s` without a trailing newline, cut to [`MARKER_LEN`] bytes at a character boundary.
    pub fn new(s: &str) -> Marker {
        let s = s.strip_suffix('\n').unwrap_or(s);
        let mut end = s.len().min(MARKER_LEN);
        while end > 0 && !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; MARKER_LEN];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        Marker { bytes }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        let n = self.bytes.iter().position(|&b| b == 0).unwrap_or(MARKER_LEN);
        core::str::from_utf8(&self.bytes[..n]).unwrap_or("")
    }
}

impl fmt::Display for Marker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EventKind {
    pub fn event_type(&self) -> EventType {
        match self {
            EventKind::Switch { .. } => EventType::SchedSwitch,
            EventKind::Wakeup { new: false, .. } => EventType::SchedWakeup,
            EventKind::Wakeup { new: true, .. } => EventType::SchedWakeupNew,
            EventKind::Migrate { .. } => EventType::SchedMigrateTask,
            EventKind::Exit { .. } => EventType::SchedProcessExit,
            EventKind::TimerExpire { .. } => EventType::TimerExpire,
            EventKind::Ipi { .. } => EventType::Ipi,
            EventKind::HrtickStart { .. } => EventType::HrtickStart,
            EventKind::HrtickFire => EventType::HrtickFire,
            EventKind::CoreForceIdle { .. } => EventType::CoreForceIdle,
            EventKind::CoreSwitch { .. } => EventType::CoreSwitch,
            EventKind::Prio { .. } => EventType::PiSetprio,
            EventKind::Affinity { .. } => EventType::SetAffinity,
            EventKind::Dl { replenish: false, .. } => EventType::DlThrottle,
            EventKind::Dl { replenish: true, .. } => EventType::DlReplenish,
            EventKind::Print { .. } => EventType::Print,
            EventKind::CfsBandwidth { throttled: true, .. } => EventType::CfsThrottle,
            EventKind::CfsBandwidth { throttled: false, .. } => EventType::CfsUnthrottle,
        }
    }
}

/// One trace record: when, where, in whose context (`comm`/`pid` of the task running on `cpu`,
/// the ftrace `TASK-PID` column; `<idle>`/0 for the idle task), and what.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Event {
    /// Nanoseconds since boot.
    pub ts_ns: u64,
    pub cpu: u32,
    pub comm: Comm,
    pub pid: u32,
    pub kind: EventKind,
}

impl Event {
    /// A placeholder (fills unused ring-buffer slots).
    pub const EMPTY: Event = Event { ts_ns: 0, cpu: 0, comm: Comm { bytes: [0; COMM_LEN] }, pid: 0, kind: EventKind::HrtickFire };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_truncates_at_char_boundary() {
        assert_eq!(Comm::new("pipe-ping").as_str(), "pipe-ping");
        assert_eq!(Comm::new("0123456789abcdefgh").as_str(), "0123456789abcde");
        // 'é' is 2 bytes: 14 ASCII + 'é' would need 16 bytes, so it is dropped.
        assert_eq!(Comm::new("01234567890123é").as_str(), "01234567890123");
        assert_eq!(Comm::with_number("swapper/", 3).as_str(), "swapper/3");
        assert_eq!(Comm::with_number("swapper/", 4_000_000_000).as_str(), "swapper/4000000");
        assert!(Comm::new("").is_empty());
    }

    #[test]
    fn event_names_round_trip() {
        for e in EventType::ALL {
            assert_eq!(EventType::from_name(e.name()), Some(e));
            assert_eq!(EventType::ALL_MASK & e.bit(), e.bit());
        }
        assert_eq!(EventType::from_name("nope"), None);
    }
}
