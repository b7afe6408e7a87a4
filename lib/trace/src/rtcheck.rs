//! The RT-guarantee checker over a trace (`trace check rt`): Linux's promise that on N CPUs the
//! N most important runnable RT tasks run (each within its affinity), checked by replaying
//! the scheduler events.
//!
//! # Input
//! Any events, in any order (they are replayed in timestamp order, ties in the given order);
//! only `sched_switch`, `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`,
//! `sched_process_exit`, `sched_pi_setprio`, `sched_set_affinity` and `sched_core_switch` are
//! used, plus the context column (`<idle>`/0) of the others. Also: the
//! CPU count (events of CPUs `>= ncpus` are ignored), an affinity lookup (pid → [`CpuMask`];
//! `None`, an unknown pid, means every CPU), the bound, and an optional end time.
//! Timestamps are truncated to microseconds first (the ftrace text's precision), so the kernel's
//! check of its rings and the host's check of the exported text agree exactly.
//!
//! # Replay
//! * Per CPU, what runs: the `next` task of its last `sched_switch` (pid, Linux prio).
//!   Importance: a lower prio number is more important; prio `< 100` is RT, fair tasks
//!   (`>= 100`) are below every RT task, the idle task (pid 0) is below everything.
//! * A task is **waiting** (runnable, not running anywhere) after a `sched_wakeup` /
//!   `sched_wakeup_new` (unless it is running on some CPU: a wakeup of a running task changes
//!   nothing) or after being switched out in state `R` (preempted; Linux's `R+` parses as `R`),
//!   and stops waiting when it is switched in or exits; switched out in any other state it is not
//!   runnable. `sched_migrate_task` only refreshes a known task's prio (a waiting task may run on
//!   any CPU of its affinity, whichever queue it sits on).
//! * A **violation** is a pair (waiting RT task W, CPU c in W's affinity whose running task is
//!   less important than W) that holds continuously for longer than the bound (strictly).
//!   Counted once per maximal interval **per (W, c) pair**: one RT task left waiting while two
//!   allowed CPUs run fair tasks is two violations; a CPU switching between two tasks, both
//!   less important than W, does not end the interval. Equal prio is not a violation (Linux
//!   does not preempt an RT task for an equal one).
//!
//! # Window
//! Rings overwrite their oldest events, so each CPU's events are complete only from its first
//! retained event on: the check covers the window from the latest of those first events to the
//! end (the last event, or `end_ns`), and `checked_ns` is the window's length (the whole trace
//! when nothing was lost). Before the window only `sched_switch` events are used, to know what
//! each CPU runs at the window's start (reliable: that CPU's own events are complete), and
//! `sched_set_affinity` events (an affinity set then still holds); a CPU
//! whose running task is still unknown (no switch seen yet) is never in a violation, unless an
//! event with the idle context shows it idle. Tasks are **unknown** until an event in the
//! window says what they are doing (a wakeup, a switch, an exit): events before the window may
//! be missing on other CPUs, so a task waiting since before the window and not seen in it is
//! ignored (missed, never falsely reported). Intervals open at the window's end are closed there.
//!
//! # Priority, affinity and core scheduling
//! `sched_pi_setprio` events (Cadence emits one for every priority change) update a task's
//! importance, waiting or running; `sched_set_affinity` events (Cadence) replace its affinity
//! from then on (before the first one: the lookup, fed by `# cadence-affinity:` lines). With
//! SMT siblings given ([`Options::with_smt`]) and `sched_core_switch` events, a pair (W, c) also
//! needs W's core cookie to be compatible with what c's siblings run: a sibling running a task
//! with another cookie that is at least as important as W keeps W off c by design (the
//! core-wide pick). Cookies are those of the latest `sched_core_switch` of each task and CPU.
//!
//! # SCHED_DEADLINE
//! Deadline tasks (Linux prio −1) are above every RT task, so the check covers them too: a
//! deadline task waiting while an allowed CPU idles or runs an RT or fair task is a violation
//! (the global-EDF push/pull promise that an idle CPU takes a waiting deadline task). Between
//! its `sched_dl_throttle` and its `sched_dl_replenish` a deadline task is out of the running
//! by design (CBS: its runtime is used up), not waiting; being switched in also ends that.
//! The trace has no deadlines, so two deadline tasks compare equal: EDF order among them is
//! not checked.
//!
//! # Limits
//! The trace carries no RT throttling: RT throttling (`kernel.sched_rt_runtime_us`) makes RT
//! tasks wait by design and is reported like any other wait. A Linux trace has neither
//! affinity lines nor Cadence's events (its `sched_pi_setprio` marks priority inheritance only). A wakeup recorded (on another CPU) a hair before the switch-out it follows may make the
//! replay see a running task woken, then sleeping: a missed wait, never a false one.
//!
//! Output: [`RtReport`], whose `Display` is the exact last line
//! `rt check: violations=<n> checked_ns=<n>`, and [`RtReport::write`] with the longest
//! intervals (at most [`MAX_WORST`]) above it.

use crate::event::{Event, EventKind, TaskInfo};
use crate::replay::{keep_worst, replay, Checker, Sched, Secs};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use cadence_sched::CpuMask;
use core::fmt;

/// Default bound: waits up to 100 µs are not violations.
pub const DEFAULT_BOUND_NS: u64 = 100_000;
/// Longest intervals kept in the report.
pub const MAX_WORST: usize = 10;

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// CPUs of the machine (events of CPUs `>= ncpus` are ignored).
    pub ncpus: u32,
    /// Intervals longer than this (ns) are violations.
    pub bound_ns: u64,
    /// End of the check (ns); the last event's time if `None`.
    pub end_ns: Option<u64>,
    /// SMT siblings of each CPU, by CPU id (itself included; empty or absent: none known):
    /// with core scheduling a task may wait because a sibling runs a more important task with
    /// another cookie.
    pub siblings: Vec<CpuMask>,
}

impl Options {
    pub fn new(ncpus: u32) -> Options {
        Options { ncpus, bound_ns: DEFAULT_BOUND_NS, end_ns: None, siblings: Vec::new() }
    }

    /// Sets the SMT sibling groups (each mask: the CPUs of one core).
    pub fn with_smt(mut self, groups: &[CpuMask]) -> Options {
        for g in groups {
            for c in g.iter() {
                if self.siblings.len() <= c {
                    self.siblings.resize(c + 1, CpuMask::EMPTY);
                }
                self.siblings[c] = *g;
            }
        }
        self
    }
}

/// One violation: `waiting` (an RT task allowed on `cpu`) waited for `duration_ns` from
/// `start_ns` on while `cpu` ran less important tasks (`running`: the one at the start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub cpu: u32,
    pub waiting: TaskInfo,
    pub running: TaskInfo,
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "violation: {} cpu {}: rt {}:{} (prio {}) waited {} us while {}:{} (prio {}) ran",
            Secs(self.start_ns),
            self.cpu,
            self.waiting.comm,
            self.waiting.pid,
            self.waiting.prio,
            self.duration_ns / 1000,
            self.running.comm,
            self.running.pid,
            self.running.prio
        )
    }
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RtReport {
    /// Intervals longer than the bound.
    pub violations: u64,
    /// Length of the checked window (ns).
    pub checked_ns: u64,
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub bound_ns: u64,
    /// The longest violations, longest first (ties: earliest first), at most [`MAX_WORST`].
    pub worst: Vec<Interval>,
}

impl RtReport {
    /// The longest intervals, one line each, then the final line (newline-terminated).
    pub fn write(&self, out: &mut impl fmt::Write) -> fmt::Result {
        for v in &self.worst {
            writeln!(out, "{}", v)?;
        }
        writeln!(out, "{}", self)
    }
}

impl fmt::Display for RtReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rt check: violations={} checked_ns={}", self.violations, self.checked_ns)
    }
}

/// Importance rank: lower is more important; idle below everything.
fn rank(t: &TaskInfo) -> i64 {
    if t.pid == 0 {
        i64::MAX
    } else {
        t.prio as i64
    }
}

/// An open (W, c) interval.
struct Open {
    since: u64,
    waiting: TaskInfo,
    running: TaskInfo,
}

/// The RT checker's state beside the shared replay's.
struct Rt {
    /// Core cookie of each task and of what each CPU runs (`sched_core_switch` events).
    task_cookie: BTreeMap<u32, u64>,
    cpu_cookie: BTreeMap<u32, u64>,
    siblings: Vec<CpuMask>,
    bound_ns: u64,
    /// Known waiting RT tasks.
    waiting_rt: BTreeSet<u32>,
    /// Deadline tasks throttled (between `sched_dl_throttle` and `sched_dl_replenish`).
    throttled: BTreeSet<u32>,
    /// Open intervals by (waiting pid, cpu).
    open: BTreeMap<(u32, u32), Open>,
    report: RtReport,
}

impl Rt {
    /// The other SMT siblings of `cpu`.
    fn siblings_of(&self, cpu: u32) -> impl Iterator<Item = u32> + '_ {
        let m = self.siblings.get(cpu as usize).copied().unwrap_or(CpuMask::EMPTY).without(cpu as usize);
        m.iter().map(|c| c as u32)
    }

    /// Could W (`pid`, importance `w_prio`) run on `cpu` under core scheduling? Not while a
    /// sibling runs a task with another cookie that is at least as important (the core-wide
    /// pick keeps that one and forces `cpu` idle or onto a matching task).
    fn core_allows(&self, s: &Sched<'_>, pid: u32, w_prio: i32, cpu: u32) -> bool {
        let cookie = self.task_cookie.get(&pid).copied().unwrap_or(0);
        self.siblings_of(cpu).all(|sib| match s.cpus.get(&sib) {
            Some(r) if r.pid != 0 => self.cpu_cookie.get(&sib).copied().unwrap_or(0) == cookie || rank(r) > w_prio as i64,
            _ => true,
        })
    }

    /// Does (W = `pid`, `cpu`) violate the guarantee now?
    fn holds(&self, s: &Sched<'_>, pid: u32, cpu: u32) -> bool {
        let Some(w) = s.tasks.get(&pid) else { return false };
        let Some(r) = s.cpus.get(&cpu) else { return false };
        w.waiting
            && pid != 0
            && w.info.prio < 100
            && !self.throttled.contains(&pid)
            && rank(r) > w.info.prio as i64
            && s.allowed(pid, cpu)
            && self.core_allows(s, pid, w.info.prio, cpu)
    }

    fn refresh_pair(&mut self, s: &Sched<'_>, pid: u32, cpu: u32, t: u64) {
        let holds = self.holds(s, pid, cpu);
        let is_open = self.open.contains_key(&(pid, cpu));
        if holds && !is_open {
            let (Some(w), Some(r)) = (s.tasks.get(&pid), s.cpus.get(&cpu)) else { return };
            self.open.insert((pid, cpu), Open { since: t, waiting: w.info, running: *r });
        } else if !holds && is_open {
            self.close(pid, cpu, t);
        }
    }

    fn close(&mut self, pid: u32, cpu: u32, t: u64) {
        let Some(o) = self.open.remove(&(pid, cpu)) else { return };
        let duration_ns = t.saturating_sub(o.since);
        if duration_ns <= self.bound_ns {
            return;
        }
        self.report.violations += 1;
        let v = Interval { start_ns: o.since, duration_ns, cpu, waiting: o.waiting, running: o.running };
        keep_worst(&mut self.report.worst, v, MAX_WORST, |w| (w.duration_ns, w.start_ns));
    }

    /// Re-evaluates every pair of task `pid`.
    fn refresh_task(&mut self, s: &Sched<'_>, pid: u32, t: u64) {
        for &c in s.cpus.keys() {
            self.refresh_pair(s, pid, c, t);
        }
    }

    /// Re-evaluates every pair of CPU `cpu`.
    fn refresh_cpu(&mut self, s: &Sched<'_>, cpu: u32, t: u64) {
        let waiting: Vec<u32> = self.waiting_rt.iter().copied().collect();
        for w in waiting {
            self.refresh_pair(s, w, cpu, t);
        }
    }

    /// What `cpu` runs decides what its SMT siblings may run: re-evaluate their pairs.
    fn refresh_siblings(&mut self, s: &Sched<'_>, cpu: u32, t: u64) {
        let sibs: Vec<u32> = self.siblings_of(cpu).collect();
        for sib in sibs {
            self.refresh_cpu(s, sib, t);
        }
    }

    fn core_switch(&mut self, cpu: u32, pid: u32, cookie: u64) {
        self.cpu_cookie.insert(cpu, cookie);
        if pid != 0 {
            self.task_cookie.insert(pid, cookie);
        }
    }
}

impl Checker for Rt {
    fn event(&mut self, s: &Sched<'_>, e: &Event, t: u64) {
        match e.kind {
            // Running, it is not throttled (even if the trace lost the replenishment).
            EventKind::Switch { next, .. } => {
                self.throttled.remove(&next.pid);
            }
            EventKind::CoreSwitch { pid, cookie, .. } => {
                self.core_switch(e.cpu, pid, cookie);
                self.refresh_siblings(s, e.cpu, t);
            }
            EventKind::Dl { task, replenish, .. } => {
                if replenish {
                    self.throttled.remove(&task.pid);
                } else {
                    self.throttled.insert(task.pid);
                }
                self.refresh_task(s, task.pid, t);
            }
            _ => {}
        }
    }

    fn event_before(&mut self, e: &Event) {
        if let EventKind::CoreSwitch { pid, cookie, .. } = e.kind {
            self.core_switch(e.cpu, pid, cookie);
        }
    }

    fn cpu_changed(&mut self, s: &Sched<'_>, cpu: u32, t: u64) {
        self.refresh_cpu(s, cpu, t);
        self.refresh_siblings(s, cpu, t);
    }

    fn task_changed(&mut self, s: &Sched<'_>, pid: u32, t: u64) {
        match s.tasks.get(&pid) {
            Some(k) if k.waiting && k.info.prio < 100 => self.waiting_rt.insert(pid),
            _ => self.waiting_rt.remove(&pid),
        };
        self.refresh_task(s, pid, t);
    }
}

/// Checks `events` (see the module docs) with `affinity` (pid → allowed CPUs; `None`: all).
/// Never fails and never panics: a trace that makes no sense gives a report that says so.
pub fn check<F: Fn(u32) -> Option<CpuMask>>(events: &[Event], opts: &Options, affinity: F) -> RtReport {
    let (mut r, _, w) = replay(events, opts.ncpus, opts.end_ns, &affinity, |w| Rt {
        task_cookie: BTreeMap::new(),
        cpu_cookie: BTreeMap::new(),
        siblings: opts.siblings.clone(),
        bound_ns: opts.bound_ns,
        waiting_rt: BTreeSet::new(),
        throttled: BTreeSet::new(),
        open: BTreeMap::new(),
        report: RtReport {
            checked_ns: w.end - w.start,
            window_start_ns: w.start,
            window_end_ns: w.end,
            bound_ns: opts.bound_ns,
            ..RtReport::default()
        },
    });
    let open: Vec<(u32, u32)> = r.open.keys().copied().collect();
    for (pid, cpu) in open {
        r.close(pid, cpu, w.end);
    }
    r.report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Comm;
    use crate::replay::test_util::{all, ev_at, sw, task, wake, US};
    use alloc::string::String;

    fn opts(ncpus: u32) -> Options {
        Options::new(ncpus)
    }

    /// CPU 0 runs RT pid 1 (prio 10), CPU 1 runs `cpu1` from t=0; RT pid 3 (prio 30) wakes at
    /// 100 us and is switched in on CPU 1 at `run_at`.
    fn scenario(cpu1: (u32, i32), run_at: u64) -> [Event; 4] {
        [
            sw(0, 0, (0, 120), b'R', (1, 10)),
            sw(0, 1, (0, 120), b'R', cpu1),
            wake(100 * US, 0, 1, (3, 30)),
            sw(run_at, 1, cpu1, b'R', (3, 30)),
        ]
    }

    #[test]
    fn no_violation_when_more_important_tasks_run() {
        let e = scenario((2, 20), 1000 * US);
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 0);
        assert_eq!(r.checked_ns, 1000 * US);
        // Equal prio is not a violation either.
        let r = check(&scenario((2, 30), 1000 * US), &opts(2), all);
        assert_eq!(r.violations, 0);
    }

    #[test]
    fn rt_task_waiting_while_a_cpu_runs_fair_is_a_violation() {
        let e = scenario((5, 120), 600 * US);
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1);
        assert_eq!(r.worst.len(), 1);
        let v = r.worst[0];
        assert_eq!((v.start_ns, v.duration_ns, v.cpu), (100 * US, 500 * US, 1));
        assert_eq!((v.waiting.pid, v.waiting.prio, v.running.pid, v.running.prio), (3, 30, 5, 120));
        assert_eq!(alloc::format!("{}", r), "rt check: violations=1 checked_ns=600000");
        let mut s = String::new();
        r.write(&mut s).unwrap();
        assert_eq!(
            s,
            "violation: 0.000100 cpu 1: rt t3:3 (prio 30) waited 500 us while t5:5 (prio 120) ran\n\
             rt check: violations=1 checked_ns=600000\n"
        );
        // The idle CPU counts too.
        let r = check(&scenario((0, 120), 600 * US), &opts(2), all);
        assert_eq!(r.violations, 1);
    }

    #[test]
    fn no_violation_when_the_waiting_task_is_pinned_elsewhere() {
        let e = scenario((5, 120), 600 * US);
        let pinned = |pid: u32| (pid == 3).then_some(CpuMask::single(0));
        assert_eq!(check(&e, &opts(2), pinned).violations, 0);
        let both = |pid: u32| (pid == 3).then_some(CpuMask::from_u64(0b11));
        assert_eq!(check(&e, &opts(2), both).violations, 1);
    }

    #[test]
    fn preempted_task_waits() {
        // RT pid 3 runs on CPU 0 and is preempted (R) by pid 1 at 100 us while CPU 1 runs
        // fair pid 5; pushed to CPU 1 at 400 us.
        let e = [
            sw(0, 0, (0, 120), b'R', (3, 30)),
            sw(0, 1, (0, 120), b'R', (5, 120)),
            sw(100 * US, 0, (3, 30), b'R', (1, 10)),
            sw(400 * US, 1, (5, 120), b'R', (3, 30)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1);
        assert_eq!(r.worst[0].duration_ns, 300 * US);
        // Linux's "R+" parses as 'R'; switched out sleeping it does not wait.
        let mut e2 = e;
        e2[2] = sw(100 * US, 0, (3, 30), b'S', (1, 10));
        assert_eq!(check(&e2, &opts(2), all).violations, 0);
    }

    #[test]
    fn intervals_up_to_the_bound_are_not_violations() {
        let e = scenario((5, 120), 150 * US); // 50 us wait
        assert_eq!(check(&e, &opts(2), all).violations, 0);
        let e = scenario((5, 120), 200 * US); // exactly 100 us: not longer than the bound
        assert_eq!(check(&e, &opts(2), all).violations, 0);
        let tight = Options { bound_ns: 10 * US, ..opts(2) };
        assert_eq!(check(&scenario((5, 120), 150 * US), &tight, all).violations, 1);
    }

    #[test]
    fn one_interval_per_pair_and_each_allowed_cpu_counts() {
        // RT pid 3 waits from 100 us to 900 us; CPU 0 switches between fair tasks meanwhile
        // (one interval), CPU 1 is idle until 500 us then runs RT pid 2 (prio 20).
        let e = [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            wake(100 * US, 1, 0, (3, 30)),
            sw(300 * US, 0, (5, 120), b'R', (7, 125)),
            sw(500 * US, 1, (0, 120), b'R', (2, 20)),
            sw(900 * US, 0, (7, 125), b'R', (3, 30)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 2);
        assert_eq!((r.worst[0].cpu, r.worst[0].duration_ns, r.worst[0].running.pid), (0, 800 * US, 5));
        assert_eq!((r.worst[1].cpu, r.worst[1].duration_ns, r.worst[1].running.pid), (1, 400 * US, 0));
        // Out of order input gives the same report.
        let mut rev = e;
        rev.reverse();
        assert_eq!(check(&rev, &opts(2), all), r);
        // An exit ends the wait; an open interval is closed at the end.
        let e = [sw(0, 0, (0, 120), b'R', (5, 120)), wake(100 * US, 0, 5, (3, 30))];
        let end = Options { end_ns: Some(1000 * US), ..opts(1) };
        let r = check(&e, &end, all);
        assert_eq!((r.violations, r.worst[0].duration_ns, r.checked_ns), (1, 900 * US, 1000 * US));
        let exit = Event { ts_ns: 150 * US, cpu: 0, comm: Comm::new("x"), pid: 5, kind: EventKind::Exit { task: task(3, 30) } };
        assert_eq!(check(&[e[0], e[1], exit], &end, all).violations, 0);
    }

    #[test]
    fn window_starts_after_ring_wrap() {
        // CPU 1's ring kept events from 1000 us on only; CPU 0's from 0. RT pid 4 woke at
        // 500 us (before the window) and is never seen again: unknown, ignored. CPU 0 runs
        // fair pid 5 from before the window (its own switch, reliable).
        let e = [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            wake(500 * US, 0, 5, (4, 20)),
            sw(1000 * US, 1, (9, 120), b'S', (2, 10)),
            wake(1500 * US, 1, 2, (3, 30)),
            sw(2000 * US, 0, (5, 120), b'R', (3, 30)),
        ];
        let pinned = |pid: u32| (pid == 3).then_some(CpuMask::single(0));
        let r = check(&e, &opts(2), pinned);
        assert_eq!((r.window_start_ns, r.window_end_ns, r.checked_ns), (1000 * US, 2000 * US, 1000 * US));
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        assert_eq!((r.worst[0].waiting.pid, r.worst[0].running.pid, r.worst[0].duration_ns), (3, 5, 500 * US));
        // Without the wrap (CPU 1 seen from 0 on) pid 4's wait counts too.
        let mut full = e.to_vec();
        full.insert(0, sw(0, 1, (0, 120), b'R', (9, 120)));
        let r = check(&full, &opts(2), pinned);
        assert_eq!(r.checked_ns, 2000 * US);
        assert!(r.worst.iter().any(|v| v.waiting.pid == 4), "{:?}", r.worst);
        // Events of CPUs outside the machine are ignored; nothing at all is an empty report.
        assert_eq!(check(&e, &opts(1), pinned).checked_ns, 2000 * US);
        assert_eq!(alloc::format!("{}", check(&[], &opts(4), all)), "rt check: violations=0 checked_ns=0");
    }

    #[test]
    fn exported_text_checks_the_same() {
        use crate::ftrace;
        let e = scenario((5, 120), 600 * US);
        let mut text = String::new();
        ftrace::write_header(&mut text, 4, 4, 2).unwrap();
        ftrace::write_affinity(&mut text, 3, CpuMask::single(0)).unwrap();
        for ev in &e {
            ftrace::write_event(&mut text, ev).unwrap();
        }
        let p = ftrace::parse_text(&text);
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        let pinned = |pid: u32| (pid == 3).then_some(CpuMask::single(0));
        assert_eq!(check(&p.events, &opts(2), |pid| p.affinity.get(&pid).copied()), check(&e, &opts(2), pinned));
        assert_eq!(check(&p.events, &opts(2), |pid| p.affinity.get(&pid).copied()).violations, 0);
    }

    #[test]
    fn a_priority_change_of_a_waiting_task_is_replayed() {
        // RT pid 3 waits while CPU 1 runs fair pid 5; at 150 us it is made fair (prio 120):
        // the 50 us before are within the bound, nothing after is a violation.
        let mut e = scenario((5, 120), 1000 * US).to_vec();
        e.insert(3, ev_at(150 * US, 0, EventKind::Prio { task: task(3, 120), old_prio: 30 }));
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 0, "{:?}", r.worst);
        // Made more important (but not above CPU 0's task) while waiting: one interval, which
        // the report shows with the prio it started with.
        let mut e = scenario((5, 120), 1000 * US).to_vec();
        e.insert(3, ev_at(150 * US, 0, EventKind::Prio { task: task(3, 15), old_prio: 30 }));
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1);
        assert_eq!(r.worst[0].waiting.prio, 30);
    }

    #[test]
    fn a_throttled_deadline_task_is_not_waiting() {
        // Deadline pid 3 (prio -1) is preempted on CPU 1 at 100 us, throttled (its runtime
        // used up), while CPU 1 runs fair pid 5; replenished at 700 us, it waits from then on
        // until it runs at 1000 us: 300 us, one violation (bound 0).
        let d = |ts, replenish| ev_at(ts, 1, EventKind::Dl { task: task(3, -1), runtime_ns: 0, deadline_ns: 0, replenish });
        let e = [
            sw(0, 0, (0, 120), b'R', (1, -1)),
            sw(0, 1, (0, 120), b'R', (3, -1)),
            d(100 * US, false),
            sw(100 * US, 1, (3, -1), b'R', (5, 120)),
            d(700 * US, true),
            sw(1000 * US, 1, (5, 120), b'R', (3, -1)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        assert_eq!((r.worst[0].start_ns, r.worst[0].duration_ns), (700 * US, 300 * US));
        // The replenishment lost: nothing counts until it runs again, and then it is no
        // longer throttled (preempted at 1100 us, it waits until the end, 1500 us).
        let r = check(
            &[e[0], e[1], e[2], e[3], e[5], sw(1100 * US, 1, (3, -1), b'R', (5, 120)), sw(1500 * US, 0, (1, -1), b'S', (0, 120))],
            &opts(2),
            all,
        );
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        assert_eq!((r.worst[0].start_ns, r.worst[0].duration_ns), (1100 * US, 400 * US));
        // Without the throttle it waits from 100 us.
        let r = check(&[e[0], e[1], e[3], e[5]], &opts(2), all);
        assert_eq!((r.violations, r.worst[0].start_ns), (1, 100 * US));
    }

    #[test]
    fn an_affinity_change_is_replayed() {
        // Pinned to CPU 0 (busy with a more important task) at 150 us: only 50 us count.
        let mut e = scenario((5, 120), 1000 * US).to_vec();
        e.insert(3, ev_at(150 * US, 0, EventKind::Affinity { task: task(3, 30), mask: 0b01, wide: false }));
        assert_eq!(check(&e, &opts(2), all).violations, 0);
        // Widened again at 400 us: waits from then on.
        e.insert(4, ev_at(400 * US, 0, EventKind::Affinity { task: task(3, 30), mask: 0b11, wide: false }));
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1);
        assert_eq!(r.worst[0].start_ns, 400 * US);
    }

    #[test]
    fn core_scheduling_keeps_an_incompatible_task_off_a_sibling() {
        // CPUs 0 and 1 are siblings. CPU 0 runs RT pid 1 (prio 10, cookie 0xa); CPU 1 is idle.
        // RT pid 3 (prio 30, cookie 0xb) waits: running it on CPU 1 would pair cookies 0xa and
        // 0xb, and pid 1 is more important, so it waits by design.
        let smt = [CpuMask::from_u64(0b11)];
        let e = [
            sw(0, 0, (0, 120), b'R', (1, 10)),
            ev_at(0, 0, EventKind::CoreSwitch { pid: 1, cookie: 0xa, forced: false }),
            sw(0, 1, (0, 120), b'S', (0, 120)),
            ev_at(0, 1, EventKind::CoreSwitch { pid: 3, cookie: 0xb, forced: false }),
            sw(10 * US, 1, (3, 30), b'S', (0, 120)),
            wake(100 * US, 1, 0, (3, 30)),
            sw(1000 * US, 1, (0, 120), b'R', (3, 30)),
        ];
        assert_eq!(check(&e, &opts(2).with_smt(&smt), all).violations, 0);
        // Without the topology (or with pid 1 less important) it is a violation.
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        let mut e2 = e.to_vec();
        e2[0] = sw(0, 0, (0, 120), b'R', (1, 120));
        // (Pid 1 is fair now: CPU 0 itself counts too, and CPU 1 no longer has an excuse.)
        assert_eq!(check(&e2, &opts(2).with_smt(&smt), all).violations, 2);
    }
}
