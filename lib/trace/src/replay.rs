//! The scheduler-state replay the trace checkers share ([`crate::rtcheck`], [`crate::wccheck`]):
//! the checked window, the event order, what each CPU runs, which tasks wait, each task's
//! affinity. A checker keeps its own state and sees the shared one through [`Checker`]'s hooks,
//! called after each change.
//!
//! # Rules (every checker's)
//! * Timestamps are truncated to microseconds (the ftrace text's precision) first; events are
//!   replayed in timestamp order, ties in the given order; events of CPUs `>= ncpus` are ignored.
//! * **Window**: rings overwrite their oldest events, so each CPU's events are complete only
//!   from its first retained event on. The window runs from the latest of those first events
//!   to the end (the last event, or the caller's end). Before it only `sched_switch` events
//!   (what each CPU runs: reliable, that CPU's own events are complete) and events with the idle
//!   context (`<idle>`/0: the CPU is idle, if nothing else is known yet) are used.
//! * **CPUs**: what runs on a CPU is the `next` of its last `sched_switch`; a CPU with no
//!   switch yet is unknown unless an event with the idle context shows it idle.
//! * **Tasks** are unknown until an event in the window says what they are doing. A task is
//!   **waiting** (runnable, not running) after a `sched_wakeup` / `sched_wakeup_new` (unless it
//!   runs on some CPU: waking a running task changes nothing) or after being switched out in
//!   state `R` (Linux's `R+` parses as `R`); it stops when it is switched in, switched out in
//!   another state, or exits. `sched_migrate_task` and `sched_pi_setprio` refresh a known
//!   task's prio (and that of the CPUs running it).
//! * **Affinity**: the caller's lookup (pid → mask; `None`: every CPU), fed by the
//!   `# cadence-affinity:` lines, until a `sched_set_affinity` event replaces it.

use crate::event::{Comm, Event, EventKind, TaskInfo};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use cadence_sched::CpuMask;
use core::fmt;

/// `ns` truncated to a whole microsecond.
pub(crate) fn trunc(ns: u64) -> u64 {
    ns / 1000 * 1000
}

/// A time as the ftrace text shows it: `<seconds>.<microseconds>`.
pub(crate) struct Secs(pub u64);

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0 / 1000;
        write!(f, "{}.{:06}", us / 1_000_000, us % 1_000_000)
    }
}

/// The idle task of `cpu`.
pub(crate) fn idle(cpu: u32) -> TaskInfo {
    TaskInfo { comm: Comm::with_number("swapper/", cpu), pid: 0, prio: 120 }
}

/// Inserts `v` into `worst` (longest first, ties earliest first) if it is among the `max`
/// longest; `key` gives (duration, start).
pub(crate) fn keep_worst<T>(worst: &mut Vec<T>, v: T, max: usize, key: impl Fn(&T) -> (u64, u64)) {
    let rank = |x: &T| {
        let (d, s) = key(x);
        (d, core::cmp::Reverse(s))
    };
    let at = worst.iter().position(|w| rank(w) < rank(&v)).unwrap_or(worst.len());
    if at < max {
        worst.insert(at, v);
        worst.truncate(max);
    }
}

/// A task whose state the window has shown.
pub(crate) struct Known {
    pub info: TaskInfo,
    pub waiting: bool,
}

/// The shared state: what each CPU runs, the known tasks, the affinities.
pub(crate) struct Sched<'a> {
    affinity: &'a dyn Fn(u32) -> Option<CpuMask>,
    /// Affinities set by `sched_set_affinity` events (they override `affinity`).
    affinity_set: BTreeMap<u32, CpuMask>,
    /// What each CPU runs (CPUs not yet known are absent).
    pub cpus: BTreeMap<u32, TaskInfo>,
    pub tasks: BTreeMap<u32, Known>,
}

/// What a checker adds to the replay. The state hooks run after the shared state changed.
pub(crate) trait Checker {
    /// The window begins: `s` holds what the CPUs run (as far as known) and no task yet.
    fn window_started(&mut self, _s: &Sched<'_>) {}
    /// Every event in the window, after its idle context (if any) made its CPU known and before
    /// the shared state takes the event in.
    fn event(&mut self, _s: &Sched<'_>, _e: &Event, _t: u64) {}
    /// Every event before the window.
    fn event_before(&mut self, _e: &Event) {}
    /// What `cpu` runs was set (`s.cpus[cpu]`).
    fn cpu_changed(&mut self, s: &Sched<'_>, cpu: u32, t: u64);
    /// Task `pid`'s state (`s.tasks[pid]`) or affinity was set.
    fn task_changed(&mut self, s: &Sched<'_>, pid: u32, t: u64);
    /// The shared state took in the whole event (one event may change several CPUs and tasks:
    /// a switch changes what its CPU runs and two tasks).
    fn event_done(&mut self, _s: &Sched<'_>, _t: u64) {}
}

impl Sched<'_> {
    /// May `pid` run on `cpu`?
    pub fn allowed(&self, pid: u32, cpu: u32) -> bool {
        self.mask(pid).is_none_or(|m| m.contains(cpu as usize))
    }

    /// The CPUs `pid` may run on (`None`: every CPU).
    pub fn mask(&self, pid: u32) -> Option<CpuMask> {
        match self.affinity_set.get(&pid) {
            Some(m) => Some(*m),
            None => (self.affinity)(pid),
        }
    }

    pub fn is_running(&self, pid: u32) -> bool {
        self.cpus.values().any(|r| r.pid == pid)
    }

    fn set_cpu(&mut self, cpu: u32, running: TaskInfo, t: u64, c: &mut impl Checker) {
        self.cpus.insert(cpu, running);
        c.cpu_changed(self, cpu, t);
    }

    fn set_task(&mut self, info: TaskInfo, waiting: bool, t: u64, c: &mut impl Checker) {
        if info.pid == 0 {
            return;
        }
        self.tasks.insert(info.pid, Known { info, waiting });
        c.task_changed(self, info.pid, t);
    }

    /// A known task's new info (prio), its waiting state kept.
    fn refresh_known(&mut self, info: TaskInfo, t: u64, c: &mut impl Checker) {
        if let Some(k) = self.tasks.get(&info.pid) {
            let waiting = k.waiting;
            self.set_task(info, waiting, t, c);
        }
    }

    /// One event inside the window, at (truncated) time `t`.
    fn apply(&mut self, e: &Event, t: u64, c: &mut impl Checker) {
        if e.pid == 0 && !self.cpus.contains_key(&e.cpu) {
            self.set_cpu(e.cpu, idle(e.cpu), t, c);
        }
        c.event(self, e, t);
        match e.kind {
            EventKind::Switch { prev, prev_state, next } => {
                self.set_cpu(e.cpu, next, t, c);
                self.set_task(prev, prev_state == b'R', t, c);
                self.set_task(next, false, t, c);
            }
            EventKind::Wakeup { task, .. } => {
                let waiting = !self.is_running(task.pid);
                self.set_task(task, waiting, t, c);
            }
            EventKind::Migrate { task, .. } => self.refresh_known(task, t, c),
            EventKind::Exit { task } => self.set_task(task, false, t, c),
            EventKind::Prio { task, .. } => {
                self.refresh_known(task, t, c);
                // What a CPU runs has a new importance too.
                let on: Vec<u32> = self.cpus.iter().filter(|(_, r)| r.pid == task.pid).map(|(&cpu, _)| cpu).collect();
                for cpu in on {
                    self.set_cpu(cpu, task, t, c);
                }
            }
            EventKind::Affinity { task, mask, wide } => {
                self.set_affinity(task.pid, mask, wide);
                c.task_changed(self, task.pid, t);
            }
            _ => {}
        }
        c.event_done(self, t);
    }

    /// One event before the window: only what its CPU runs.
    /// A `sched_set_affinity` event: `pid`'s mask from now on. A mask reaching past CPU 63 is
    /// not in the event: the caller's affinity (the task's mask now) stands in for it.
    fn set_affinity(&mut self, pid: u32, mask: u64, wide: bool) {
        if wide {
            self.affinity_set.remove(&pid);
        } else {
            self.affinity_set.insert(pid, CpuMask::from_u64(mask));
        }
    }

    fn apply_before(&mut self, e: &Event, c: &mut impl Checker) {
        c.event_before(e);
        match e.kind {
            EventKind::Switch { next, .. } => {
                self.cpus.insert(e.cpu, next);
            }
            // Cadence's echo of a switch: its context says nothing more.
            EventKind::CoreSwitch { .. } => {}
            // An affinity set before the window still holds in it (a hog pinned at its start,
            // its CPU's ring's first event later than another's: the mixed scenario of
            // tests/scripts/wasted-cores.sh counted it as allowed everywhere).
            EventKind::Affinity { task, mask, wide } => self.set_affinity(task.pid, mask, wide),
            _ if e.pid == 0 => {
                self.cpus.entry(e.cpu).or_insert_with(|| idle(e.cpu));
            }
            _ => {}
        }
    }
}

/// The checked window (truncated ns): `start..=end`.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    pub start: u64,
    pub end: u64,
}

/// Replays `events` (see the module docs) up to `end_ns` (the last event if `None`): `make`
/// builds the checker for the window. Returns the checker, the final state and the window.
pub(crate) fn replay<'a, C: Checker>(
    events: &[Event],
    ncpus: u32,
    end_ns: Option<u64>,
    affinity: &'a dyn Fn(u32) -> Option<CpuMask>,
    make: impl FnOnce(Window) -> C,
) -> (C, Sched<'a>, Window) {
    let mine = |e: &&Event| e.cpu < ncpus;
    let mut first: BTreeMap<u32, u64> = BTreeMap::new();
    let mut last = None::<u64>;
    for e in events.iter().filter(mine) {
        let t = trunc(e.ts_ns);
        first.entry(e.cpu).and_modify(|f| *f = (*f).min(t)).or_insert(t);
        last = Some(last.map_or(t, |l: u64| l.max(t)));
    }
    let start = first.values().copied().max().unwrap_or(0);
    let end = end_ns.map(trunc).or(last).unwrap_or(0).max(start);
    let w = Window { start, end };
    let mut c = make(w);
    let mut s = Sched { affinity, affinity_set: BTreeMap::new(), cpus: BTreeMap::new(), tasks: BTreeMap::new() };
    let in_order = events.iter().filter(mine).is_sorted_by_key(|e| trunc(e.ts_ns));
    if in_order {
        run(&mut s, &mut c, events.iter().filter(mine), w);
    } else {
        let mut sorted: Vec<&Event> = events.iter().filter(mine).collect();
        sorted.sort_by_key(|e| trunc(e.ts_ns)); // stable: ties keep the given order
        run(&mut s, &mut c, sorted.into_iter(), w);
    }
    (c, s, w)
}

fn run<'e>(s: &mut Sched<'_>, c: &mut impl Checker, events: impl Iterator<Item = &'e Event>, w: Window) {
    let mut started = false;
    for e in events {
        let t = trunc(e.ts_ns);
        if t > w.end {
            break;
        }
        if t < w.start {
            s.apply_before(e, c);
        } else {
            if !started {
                started = true;
                c.window_started(s);
            }
            s.apply(e, t, c);
        }
    }
}

/// Events for the checkers' tests.
#[cfg(test)]
pub(crate) mod test_util {
    use crate::event::{Comm, Event, EventKind, TaskInfo};
    use cadence_sched::CpuMask;

    pub const US: u64 = 1000;

    /// Task `pid` (`t<pid>`; `swapper` for 0) with Linux prio `prio`.
    pub fn task(pid: u32, prio: i32) -> TaskInfo {
        let comm = if pid == 0 { Comm::new("swapper") } else { Comm::with_number("t", pid) };
        TaskInfo { comm, pid, prio }
    }

    /// A `sched_switch` on `cpu` from `prev` (pid, prio; leaving in `state`) to `next`.
    pub fn sw(ts: u64, cpu: u32, prev: (u32, i32), state: u8, next: (u32, i32)) -> Event {
        let prev = task(prev.0, prev.1);
        Event {
            ts_ns: ts,
            cpu,
            comm: prev.comm,
            pid: prev.pid,
            kind: EventKind::Switch { prev, prev_state: state, next: task(next.0, next.1) },
        }
    }

    /// A `sched_wakeup` of `w` (pid, prio) recorded on `cpu` in the context of pid `ctx`.
    pub fn wake(ts: u64, cpu: u32, ctx: u32, w: (u32, i32)) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            comm: Comm::new("waker"),
            pid: ctx,
            kind: EventKind::Wakeup { task: task(w.0, w.1), target_cpu: cpu, new: false },
        }
    }

    /// Any other event on `cpu` (context pid 99).
    pub fn ev_at(ts: u64, cpu: u32, kind: EventKind) -> Event {
        Event { ts_ns: ts, cpu, comm: Comm::new("x"), pid: 99, kind }
    }

    /// The affinity lookup that knows no task (every CPU allowed).
    pub fn all(_: u32) -> Option<CpuMask> {
        None
    }
}
