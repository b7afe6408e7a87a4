//! The work-conservation checker over a trace (`trace check wc`): the invariant of "The Linux
//! Scheduler: a Decade of Wasted Cores" (Lozi et al., EuroSys 2016), *no CPU stays idle while a
//! task that may run on it waits runnable elsewhere*, for tasks of every class, checked by
//! replaying the scheduler events.
//!
//! # Input
//! Any events, in any order; `sched_switch`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_migrate_task`, `sched_process_exit`, `sched_pi_setprio` and `sched_set_affinity` are
//! used, plus the context column (`<idle>`/0) of the others. Also: the CPU count (events of
//! CPUs `>= ncpus` are ignored; the count is also the machine's capacity in the wasted
//! fractions), an affinity lookup (pid → [`CpuMask`]; `None`, an unknown pid, means every CPU),
//! the bound, and an optional end time. The replay is [`crate::rtcheck`]'s (the shared
//! `replay` module): timestamps truncated to microseconds, the same window, the same
//! waiting rule, the same affinity rule.
//!
//! # Replay
//! * A CPU is **idle** when the `next` of its last `sched_switch` is pid 0 (or, before any
//!   switch, when an event with the idle context shows it idle). A CPU whose state is unknown
//!   (no switch yet, no idle context) is never idle here: a CPU that records nothing at all in
//!   the window is counted in the capacity but never in a violation.
//! * A task is **waiting** (runnable, not running) after a `sched_wakeup` / `sched_wakeup_new`
//!   (unless it runs on some CPU) or after being switched out in state `R` / `R+`; it stops
//!   waiting when it is switched in, switched out in another state, or exits.
//! * A waiting task is **queued** on the CPU of its last `sched_wakeup` (`target_cpu`),
//!   `sched_migrate_task` (`dest_cpu`) or `R` switch-out. A task queued on an idle CPU is that
//!   CPU's next task, not one waiting *elsewhere*: the CPU is not free (its run queue is not
//!   empty, Lozi et al.'s definition of an idle core), and the task does not make other idle
//!   CPUs wasted. The time between such a wakeup and the switch is wakeup latency (the IPI,
//!   the vCPU's thread waking on the host), not lost work; Linux's traces do not even show it
//!   (a wakeup onto an idle CPU goes through that CPU's wake list, `TTWU_QUEUE`, and its
//!   `sched_wakeup` is recorded there once it runs: 77 µs median to the switch, against 2.4 ms
//!   from the waker's CPU for Cadence, which records it before the IPI, in the same scenario).
//! * CPU `c` is **wasted** while it is free (idle, nothing queued on it) and at least one known
//!   waiting task not queued on an idle CPU may run on it (its affinity contains `c`).
//!   Intervals are kept **per CPU**: a maximal interval during which `c` is wasted, whichever
//!   tasks wait meanwhile (one idle CPU and three tasks waiting for it is one interval, not
//!   three: the CPU time is counted once).
//! * A **violation** is such an interval longer than the bound (strictly; default 4 ms).
//!
//! # Output
//! [`WcReport`]:
//! * `violations`: the number of violations; `longest_us`: the longest one (µs).
//! * `wasted_permille`: the CPU time of the violations (each counted whole, not only its part
//!   beyond the bound), over the capacity `ncpus × checked_ns`, in thousandths; and
//!   `idle_waiting_permille`: the same for every interval, whatever its length (the bound not
//!   applied). Both are printed with three
//!   decimals, truncated (an exact integer computation: `1.234` is 1234 parts per million).
//!   Both are upper bounds of the work lost: one task waiting 5 ms while three CPUs it may use
//!   idle counts 15 ms, as each of the three failed the invariant (Lozi et al.'s per-core
//!   check), though one CPU would have sufficed.
//! * Each violation ([`Interval`]): its CPU, start and length, the task that had waited longest
//!   among those that could use the CPU when the interval began, and the most tasks that could
//!   use it waiting at once during the interval. The longest [`MAX_WORST`] are kept.
//!
//! [`WcReport::write`] prints the kept violations, a summary line
//! `wc: cpus=<n> bound_us=<n> wasted_us=<n> idle_waiting_us=<n> window=<s.us>..<s.us>`, and the
//! exact last line
//!
//! ```text
//! wc check: violations=<n> longest_us=<n> wasted_permille=<n.nnn> idle_waiting_permille=<n.nnn> checked_ns=<n>
//! ```
//!
//! # Window
//! As [`crate::rtcheck`]'s: rings lose their oldest events, so the check covers the window from
//! the latest of the CPUs' first retained events to the end; before it only what each CPU runs
//! and the affinities set are taken; tasks are unknown until an event in the window shows what they do (a task
//! waiting since before the window and not seen in it is missed, never falsely reported).
//! Intervals open at the window's end are closed there.
//!
//! # Limits
//! A Linux trace has no affinity lines: without them per-CPU kernel threads (`kworker/N:M`,
//! `ksoftirqd/N`...) count as free to run anywhere, and their waits behind a busy CPU as
//! violations of idle CPUs (`tools/capture-wc-trace.sh` adds the lines from
//! `/proc/PID/status`). Throttling (RT throttling, `cpu.max`, a throttled deadline task)
//! leaves tasks runnable but not eligible: the trace does not say so for Linux, and such
//! waits are reported like any other. Core scheduling's forced idle is reported too (an idle
//! CPU beside an incompatible cookie is an idle CPU). A wakeup recorded (on another CPU) a
//! hair before the switch-out it follows may make the replay see a running task woken, then
//! sleeping: a missed wait, never a false one.

use crate::event::{Event, EventKind, TaskInfo};
use crate::replay::{keep_worst, replay, Checker, Sched, Secs};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use cadence_sched::CpuMask;
use core::fmt;

/// Default bound: a CPU idle for up to 4 ms while a task waits is not a violation.
pub const DEFAULT_BOUND_NS: u64 = 4_000_000;
/// Longest intervals kept in the report.
pub const MAX_WORST: usize = crate::rtcheck::MAX_WORST;

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// CPUs of the machine (events of CPUs `>= ncpus` are ignored; the capacity is
    /// `ncpus × checked_ns`).
    pub ncpus: u32,
    /// Intervals longer than this (ns) are violations.
    pub bound_ns: u64,
    /// End of the check (ns); the last event's time if `None`.
    pub end_ns: Option<u64>,
}

impl Options {
    pub fn new(ncpus: u32) -> Options {
        Options { ncpus, bound_ns: DEFAULT_BOUND_NS, end_ns: None }
    }
}

/// One violation: `cpu` stayed idle for `duration_ns` from `start_ns` on while tasks that may
/// run on it waited: `waiting` (the one waiting longest when it began) and up to `most_waiting`
/// at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub cpu: u32,
    pub waiting: TaskInfo,
    pub most_waiting: u32,
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "violation: {} cpu {}: idle {} us while {}:{} (prio {}) waited ({} waiting at most)",
            Secs(self.start_ns),
            self.cpu,
            self.duration_ns / 1000,
            self.waiting.comm,
            self.waiting.pid,
            self.waiting.prio,
            self.most_waiting
        )
    }
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct WcReport {
    /// Intervals longer than the bound.
    pub violations: u64,
    /// The longest violation (ns; 0 without any).
    pub longest_ns: u64,
    /// CPU time of the violations (ns, each whole).
    pub wasted_ns: u64,
    /// CPU time of every interval, whatever its length (ns).
    pub idle_waiting_ns: u64,
    pub ncpus: u32,
    /// Length of the checked window (ns).
    pub checked_ns: u64,
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub bound_ns: u64,
    /// The longest violations, longest first (ties: earliest first), at most [`MAX_WORST`].
    pub worst: Vec<Interval>,
}

/// `part` over `whole` in parts per million (0 if `whole` is), truncated.
fn ppm(part: u64, whole: u128) -> u128 {
    (part as u128 * 1_000_000).checked_div(whole).unwrap_or(0)
}

/// Parts per million as permille with three decimals.
struct Permille(u128);

impl fmt::Display for Permille {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

impl WcReport {
    fn capacity(&self) -> u128 {
        self.ncpus as u128 * self.checked_ns as u128
    }

    /// The violations' CPU time over the capacity, in parts per million.
    pub fn wasted_ppm(&self) -> u128 {
        ppm(self.wasted_ns, self.capacity())
    }

    /// Every interval's CPU time over the capacity, in parts per million.
    pub fn idle_waiting_ppm(&self) -> u128 {
        ppm(self.idle_waiting_ns, self.capacity())
    }

    /// The longest violations, one line each, the summary line, then the final line
    /// (newline-terminated).
    pub fn write(&self, out: &mut impl fmt::Write) -> fmt::Result {
        for v in &self.worst {
            writeln!(out, "{}", v)?;
        }
        writeln!(
            out,
            "wc: cpus={} bound_us={} wasted_us={} idle_waiting_us={} window={}..{}",
            self.ncpus,
            self.bound_ns / 1000,
            self.wasted_ns / 1000,
            self.idle_waiting_ns / 1000,
            Secs(self.window_start_ns),
            Secs(self.window_end_ns)
        )?;
        writeln!(out, "{}", self)
    }
}

impl fmt::Display for WcReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wc check: violations={} longest_us={} wasted_permille={} idle_waiting_permille={} checked_ns={}",
            self.violations,
            self.longest_ns / 1000,
            Permille(self.wasted_ppm()),
            Permille(self.idle_waiting_ppm()),
            self.checked_ns
        )
    }
}

/// A known waiting task: since when, the CPUs it may run on (`None`: every CPU), the CPU it
/// is queued on (if known), and whether it is counted on the CPUs of `mask` (it is unless
/// queued on an idle CPU).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Waiter {
    since: u64,
    mask: Option<CpuMask>,
    on: Option<u32>,
    counted: bool,
}

/// An open interval of a CPU.
struct Open {
    since: u64,
    waiting: TaskInfo,
    most: u32,
}

/// The checker's state beside the shared replay's.
struct Wc {
    bound_ns: u64,
    waiting: BTreeMap<u32, Waiter>,
    /// Waiting tasks that may run anywhere (`mask` `None`).
    anywhere: u32,
    /// Per CPU, waiting tasks with a mask that holds it.
    pinned: BTreeMap<u32, u32>,
    /// CPUs known to be idle.
    idle: BTreeSet<u32>,
    /// The CPU each task was last queued on (by the events that say so).
    queued: BTreeMap<u32, u32>,
    /// Per CPU, the waiting tasks queued on it (an idle CPU with one is not free).
    queued_here: BTreeMap<u32, BTreeSet<u32>>,
    /// CPUs whose idleness or count the current event changed (refreshed once it is taken in
    /// whole: a switch that makes one task wait and another run changes no interval).
    dirty: BTreeSet<u32>,
    open: BTreeMap<u32, Open>,
    report: WcReport,
}

impl Wc {
    /// Waiting tasks that may run on `cpu`.
    fn count(&self, cpu: u32) -> u32 {
        self.anywhere + self.pinned.get(&cpu).copied().unwrap_or(0)
    }

    /// Adds (`add`) or removes a waiting task's count on the CPUs of `mask`.
    fn count_on(&mut self, mask: Option<CpuMask>, add: bool) {
        match mask {
            None if add => self.anywhere += 1,
            None => self.anywhere = self.anywhere.saturating_sub(1),
            Some(m) => {
                for c in m.iter() {
                    let n = self.pinned.entry(c as u32).or_insert(0);
                    *n = if add { *n + 1 } else { n.saturating_sub(1) };
                    if *n == 0 {
                        self.pinned.remove(&(c as u32));
                    }
                }
            }
        }
    }

    /// Is `cpu` idle with nothing queued on it?
    fn free(&self, cpu: u32) -> bool {
        self.idle.contains(&cpu) && self.queued_here.get(&cpu).is_none_or(|q| q.is_empty())
    }

    /// Marks the idle CPUs of `mask` for a refresh.
    fn dirty_idle(&mut self, mask: Option<CpuMask>) {
        let hit = |c: u32| mask.is_none_or(|m| m.contains(c as usize));
        self.dirty.extend(self.idle.iter().copied().filter(|&c| hit(c)));
    }

    /// Sets `pid`'s waiter entry (`None`: not waiting), moving its counts.
    fn set_waiter(&mut self, pid: u32, new: Option<Waiter>) {
        let old = self.waiting.get(&pid).copied();
        if old == new {
            return;
        }
        if let Some(o) = old {
            if o.counted {
                self.count_on(o.mask, false);
                self.dirty_idle(o.mask);
            }
            if let Some(c) = o.on {
                if let Some(q) = self.queued_here.get_mut(&c) {
                    q.remove(&pid);
                }
                self.dirty.insert(c);
            }
        }
        match new {
            Some(w) => {
                if w.counted {
                    self.count_on(w.mask, true);
                    self.dirty_idle(w.mask);
                }
                if let Some(c) = w.on {
                    self.queued_here.entry(c).or_default().insert(pid);
                    self.dirty.insert(c);
                }
                self.waiting.insert(pid, w);
            }
            None => {
                self.waiting.remove(&pid);
            }
        }
    }

    /// Opens, extends or closes `cpu`'s interval at `t`.
    fn refresh(&mut self, s: &Sched<'_>, cpu: u32, t: u64) {
        let n = if self.free(cpu) { self.count(cpu) } else { 0 };
        match self.open.get_mut(&cpu) {
            Some(o) if n > 0 => o.most = o.most.max(n),
            Some(_) => self.close(cpu, t),
            None if n > 0 => {
                // The task waiting longest among those that may use the CPU (ties: lowest pid).
                let first = self
                    .waiting
                    .iter()
                    .filter(|(_, w)| w.counted && w.mask.is_none_or(|m| m.contains(cpu as usize)))
                    .min_by_key(|(&pid, w)| (w.since, pid))
                    .and_then(|(pid, _)| s.tasks.get(pid));
                if let Some(k) = first {
                    self.open.insert(cpu, Open { since: t, waiting: k.info, most: n });
                }
            }
            None => {}
        }
    }

    fn close(&mut self, cpu: u32, t: u64) {
        let Some(o) = self.open.remove(&cpu) else { return };
        let duration_ns = t.saturating_sub(o.since);
        self.report.idle_waiting_ns += duration_ns;
        if duration_ns <= self.bound_ns {
            return;
        }
        self.report.violations += 1;
        self.report.wasted_ns += duration_ns;
        self.report.longest_ns = self.report.longest_ns.max(duration_ns);
        let v = Interval { start_ns: o.since, duration_ns, cpu, waiting: o.waiting, most_waiting: o.most };
        keep_worst(&mut self.report.worst, v, MAX_WORST, |w| (w.duration_ns, w.start_ns));
    }
}

impl Checker for Wc {
    fn window_started(&mut self, s: &Sched<'_>) {
        self.idle.extend(s.cpus.iter().filter(|(_, r)| r.pid == 0).map(|(&c, _)| c));
    }

    fn event(&mut self, _s: &Sched<'_>, e: &Event, _t: u64) {
        match e.kind {
            EventKind::Wakeup { task, target_cpu, .. } => {
                self.queued.insert(task.pid, target_cpu);
            }
            EventKind::Migrate { task, dest_cpu, .. } => {
                self.queued.insert(task.pid, dest_cpu);
            }
            EventKind::Switch { prev, prev_state: b'R', .. } => {
                self.queued.insert(prev.pid, e.cpu);
            }
            EventKind::Exit { task } => {
                self.queued.remove(&task.pid);
            }
            _ => {}
        }
    }

    fn cpu_changed(&mut self, s: &Sched<'_>, cpu: u32, _t: u64) {
        if s.cpus.get(&cpu).is_some_and(|r| r.pid == 0) {
            self.idle.insert(cpu);
        } else {
            self.idle.remove(&cpu);
        }
        self.dirty.insert(cpu);
        // The tasks queued here count elsewhere unless this CPU is idle (about to run one).
        let here: Vec<u32> = self.queued_here.get(&cpu).map(|q| q.iter().copied().collect()).unwrap_or_default();
        let idle = self.idle.contains(&cpu);
        for pid in here {
            if let Some(w) = self.waiting.get(&pid).copied() {
                self.set_waiter(pid, Some(Waiter { counted: !idle, ..w }));
            }
        }
    }

    fn task_changed(&mut self, s: &Sched<'_>, pid: u32, t: u64) {
        let waits = s.tasks.get(&pid).is_some_and(|k| k.waiting);
        if !waits {
            self.set_waiter(pid, None);
            return;
        }
        let since = self.waiting.get(&pid).map_or(t, |w| w.since);
        let on = self.queued.get(&pid).copied();
        let counted = !on.is_some_and(|c| self.idle.contains(&c));
        self.set_waiter(pid, Some(Waiter { since, mask: s.mask(pid), on, counted }));
    }

    fn event_done(&mut self, s: &Sched<'_>, t: u64) {
        while let Some(cpu) = self.dirty.pop_first() {
            self.refresh(s, cpu, t);
        }
    }
}

/// Checks `events` (see the module docs) with `affinity` (pid → allowed CPUs; `None`: all).
/// Never fails and never panics: a trace that makes no sense gives a report that says so.
pub fn check<F: Fn(u32) -> Option<CpuMask>>(events: &[Event], opts: &Options, affinity: F) -> WcReport {
    let (mut c, _, w) = replay(events, opts.ncpus, opts.end_ns, &affinity, |w| Wc {
        bound_ns: opts.bound_ns,
        waiting: BTreeMap::new(),
        anywhere: 0,
        pinned: BTreeMap::new(),
        idle: BTreeSet::new(),
        queued: BTreeMap::new(),
        queued_here: BTreeMap::new(),
        dirty: BTreeSet::new(),
        open: BTreeMap::new(),
        report: WcReport {
            ncpus: opts.ncpus,
            checked_ns: w.end - w.start,
            window_start_ns: w.start,
            window_end_ns: w.end,
            bound_ns: opts.bound_ns,
            ..WcReport::default()
        },
    });
    let open: Vec<u32> = c.open.keys().copied().collect();
    for cpu in open {
        c.close(cpu, w.end);
    }
    c.report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Comm, EventKind};
    use crate::replay::test_util::{all, ev_at, sw, task, wake, US};
    use alloc::string::{String, ToString};

    const MS: u64 = 1000 * US;

    fn opts(ncpus: u32) -> Options {
        Options::new(ncpus)
    }

    /// CPU 0 runs fair pid 5 from t=0; CPU 1 runs pid 6 until it sleeps at 0 (idle from then
    /// on); fair pid 3 wakes on CPU 0 at 1 ms and is switched in on CPU 1 at `run_at`.
    fn scenario(run_at: u64) -> [Event; 4] {
        [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            wake(MS, 0, 5, (3, 120)),
            sw(run_at, 1, (0, 120), b'R', (3, 120)),
        ]
    }

    #[test]
    fn an_idle_cpu_beside_a_waiting_task_is_a_violation() {
        let r = check(&scenario(7 * MS), &opts(2), all);
        assert_eq!((r.violations, r.longest_ns, r.wasted_ns, r.idle_waiting_ns, r.checked_ns), (1, 6 * MS, 6 * MS, 6 * MS, 7 * MS));
        let v = r.worst[0];
        assert_eq!((v.cpu, v.start_ns, v.duration_ns, v.waiting.pid, v.most_waiting), (1, MS, 6 * MS, 3, 1));
        // 6 ms of 2 CPUs x 7 ms: 428.571...
        let mut s = String::new();
        r.write(&mut s).unwrap();
        assert_eq!(
            s,
            "violation: 0.001000 cpu 1: idle 6000 us while t3:3 (prio 120) waited (1 waiting at most)\n\
             wc: cpus=2 bound_us=4000 wasted_us=6000 idle_waiting_us=6000 window=0.000000..0.007000\n\
             wc check: violations=1 longest_us=6000 wasted_permille=428.571 idle_waiting_permille=428.571 checked_ns=7000000\n"
        );
        // An RT task is no different, nor a new one.
        let mut e = scenario(7 * MS);
        e[2] = Event { kind: EventKind::Wakeup { task: task(3, 10), target_cpu: 0, new: true }, ..e[2] };
        assert_eq!(check(&e, &opts(2), all).violations, 1);
    }

    #[test]
    fn a_task_that_may_not_use_the_idle_cpu_is_no_violation() {
        let pinned = |pid: u32| (pid == 3).then_some(CpuMask::single(0));
        let r = check(&scenario(7 * MS), &opts(2), pinned);
        assert_eq!((r.violations, r.idle_waiting_ns), (0, 0));
        let both = |pid: u32| (pid == 3).then_some(CpuMask::from_u64(0b11));
        assert_eq!(check(&scenario(7 * MS), &opts(2), both).violations, 1);
        // Pinned to CPU 0 by a sched_set_affinity event at 2 ms: only 1 ms counts.
        let mut e = scenario(8 * MS).to_vec();
        e.insert(3, ev_at(2 * MS, 0, EventKind::Affinity { task: task(3, 120), mask: 0b01, wide: false }));
        let r = check(&e, &opts(2), all);
        assert_eq!((r.violations, r.idle_waiting_ns), (0, MS));
        // Widened again at 3 ms: idle-while-waiting from then on, a new interval.
        e.insert(4, ev_at(3 * MS, 0, EventKind::Affinity { task: task(3, 120), mask: 0b11, wide: false }));
        let r = check(&e, &opts(2), all);
        assert_eq!((r.violations, r.worst[0].start_ns, r.worst[0].duration_ns, r.idle_waiting_ns), (1, 3 * MS, 5 * MS, 6 * MS));
    }

    /// An affinity set before the window (CPU 1's first event comes later than CPU 0's) still
    /// holds in it: task 3, pinned to CPU 0 at 0.5 ms, is not waiting for CPU 1.
    #[test]
    fn an_affinity_set_before_the_window_holds_in_it() {
        let e = [
            ev_at(MS / 2, 0, EventKind::Affinity { task: task(3, 120), mask: 0b01, wide: false }),
            sw(MS / 2, 0, (0, 120), b'R', (5, 120)),
            sw(MS, 1, (6, 120), b'S', (0, 120)),
            wake(2 * MS, 0, 5, (3, 120)),
            sw(9 * MS, 1, (0, 120), b'R', (7, 120)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!((r.violations, r.idle_waiting_ns), (0, 0));
    }

    #[test]
    fn waits_up_to_the_bound_are_not_violations_but_count_as_idle_waiting() {
        let r = check(&scenario(4 * MS), &opts(2), all); // 3 ms
        assert_eq!((r.violations, r.wasted_ns, r.idle_waiting_ns), (0, 0, 3 * MS));
        assert_eq!(
            r.to_string(),
            "wc check: violations=0 longest_us=0 wasted_permille=0.000 idle_waiting_permille=375.000 checked_ns=4000000"
        );
        assert_eq!(check(&scenario(5 * MS), &opts(2), all).violations, 0, "exactly the bound");
        assert_eq!(check(&scenario(5 * MS + US), &opts(2), all).violations, 1);
        let tight = Options { bound_ns: 100 * US, ..opts(2) };
        assert_eq!(check(&scenario(2 * MS), &tight, all).violations, 1);
    }

    #[test]
    fn no_violation_while_every_cpu_is_busy() {
        let mut e = scenario(7 * MS);
        e[1] = sw(0, 1, (0, 120), b'R', (6, 120));
        e[3] = sw(7 * MS, 1, (6, 120), b'R', (3, 120));
        let r = check(&e, &opts(2), all);
        assert_eq!((r.violations, r.idle_waiting_ns), (0, 0));
        // A CPU whose state is unknown (no event at all: CPU 2) is never idle here, but it is
        // capacity.
        let r3 = check(&e, &opts(3), all);
        assert_eq!((r3.violations, r3.ncpus, r3.checked_ns), (0, 3, 7 * MS));
        let r3 = check(&scenario(7 * MS), &opts(3), all);
        assert_eq!((r3.violations, r3.wasted_ppm()), (1, 285_714), "6 ms of 3 CPUs x 7 ms");
    }

    #[test]
    fn preempted_tasks_wait_and_sleeping_ones_do_not() {
        // Pid 3 runs on CPU 0, preempted (R) by pid 1 at 1 ms while CPU 1 idles; CPU 1 takes
        // it at 7 ms.
        let e = [
            sw(0, 0, (0, 120), b'R', (3, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            sw(MS, 0, (3, 120), b'R', (1, 120)),
            sw(7 * MS, 1, (0, 120), b'R', (3, 120)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!((r.violations, r.worst[0].duration_ns), (1, 6 * MS));
        let mut e2 = e;
        e2[2] = sw(MS, 0, (3, 120), b'S', (1, 120));
        assert_eq!(check(&e2, &opts(2), all).idle_waiting_ns, 0);
        // Waking a running task does not make it wait.
        let e3 = [e[0], e[1], wake(MS, 1, 0, (3, 120)), sw(7 * MS, 0, (3, 120), b'S', (0, 120))];
        assert_eq!(check(&e3, &opts(2), all).idle_waiting_ns, 0);
    }

    #[test]
    fn intervals_are_per_cpu_not_per_task() {
        // Two tasks wait from 1 ms and 2 ms while CPU 1 idles (one interval, 2 waiting at most);
        // CPU 2 idles too (its own interval); at 7 ms CPU 1 takes pid 3 (pid 4 still waits:
        // CPU 1 stays busy, CPU 2's interval goes on), at 8 ms CPU 2 takes pid 4.
        let e = [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            sw(0, 2, (7, 120), b'S', (0, 120)),
            wake(MS, 0, 5, (3, 120)),
            wake(2 * MS, 0, 5, (4, 120)),
            sw(7 * MS, 1, (0, 120), b'R', (3, 120)),
            sw(8 * MS, 2, (0, 120), b'R', (4, 120)),
        ];
        let r = check(&e, &opts(3), all);
        assert_eq!(r.violations, 2);
        let w: Vec<_> = r.worst.iter().map(|v| (v.cpu, v.start_ns, v.duration_ns, v.waiting.pid, v.most_waiting)).collect();
        assert_eq!(w, [(2, MS, 7 * MS, 3, 2), (1, MS, 6 * MS, 3, 2)]);
        assert_eq!((r.wasted_ns, r.longest_ns), (13 * MS, 7 * MS));
        // Out of order input gives the same report.
        let mut rev = e;
        rev.reverse();
        assert_eq!(check(&rev, &opts(3), all), r);
    }

    #[test]
    fn a_switch_that_swaps_the_waiting_task_keeps_the_interval() {
        // CPU 1 idles from 0; pid 3 waits from 1 ms; at 3 ms CPU 0 switches from pid 5
        // (preempted: now waiting) to pid 3: still one task waiting, one interval to 9 ms.
        let e = [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            wake(MS, 0, 5, (3, 120)),
            sw(3 * MS, 0, (5, 120), b'R', (3, 120)),
            sw(9 * MS, 1, (0, 120), b'R', (5, 120)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        assert_eq!((r.worst[0].duration_ns, r.worst[0].waiting.pid, r.worst[0].most_waiting), (8 * MS, 3, 1));
    }

    #[test]
    fn an_exit_ends_the_wait_and_open_intervals_close_at_the_end() {
        let e = [sw(0, 0, (0, 120), b'R', (5, 120)), sw(0, 1, (6, 120), b'S', (0, 120)), wake(MS, 0, 5, (3, 120))];
        let end = Options { end_ns: Some(10 * MS), ..opts(2) };
        let r = check(&e, &end, all);
        assert_eq!((r.violations, r.worst[0].duration_ns, r.checked_ns), (1, 9 * MS, 10 * MS));
        let exit = Event { ts_ns: 2 * MS, cpu: 0, comm: Comm::new("x"), pid: 5, kind: EventKind::Exit { task: task(3, 120) } };
        let r = check(&[e[0], e[1], e[2], exit], &end, all);
        assert_eq!((r.violations, r.idle_waiting_ns), (0, MS));
    }

    #[test]
    fn the_window_starts_after_ring_wrap() {
        // CPU 1's ring kept events from 10 ms on only; CPU 0's from 0. Pid 4 woke at 5 ms
        // (before the window) and is never seen again: unknown, ignored. CPU 0 idles from
        // before the window (its own switch, reliable); pid 3 wakes at 11 ms and waits for CPU 0
        // until 20 ms.
        let e = [
            sw(0, 0, (8, 120), b'S', (0, 120)),
            // Queued on busy CPU 1 (on idle CPU 0 it would be CPU 0's next task, not waiting).
            Event { kind: EventKind::Wakeup { task: task(4, 120), target_cpu: 1, new: false }, ..wake(5 * MS, 0, 0, (4, 120)) },
            sw(10 * MS, 1, (9, 120), b'S', (2, 120)),
            wake(11 * MS, 1, 2, (3, 120)),
            sw(20 * MS, 0, (0, 120), b'R', (3, 120)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!((r.window_start_ns, r.window_end_ns, r.checked_ns), (10 * MS, 20 * MS, 10 * MS));
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        assert_eq!((r.worst[0].cpu, r.worst[0].waiting.pid, r.worst[0].duration_ns), (0, 3, 9 * MS));
        // Without the wrap (CPU 1 seen from 0 on) pid 4's wait counts from 5 ms.
        let mut full = e.to_vec();
        full.insert(0, sw(0, 1, (0, 120), b'R', (9, 120)));
        let r = check(&full, &opts(2), all);
        assert_eq!(r.checked_ns, 20 * MS);
        assert_eq!((r.violations, r.worst[0].waiting.pid, r.worst[0].duration_ns), (1, 4, 15 * MS));
        // A CPU first seen idle through an event's context (no switch yet).
        let e = [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            wake(MS, 0, 5, (3, 120)),
            ev_at(MS, 1, EventKind::HrtickFire),
            Event { pid: 0, ..ev_at(2 * MS, 1, EventKind::HrtickFire) },
            sw(9 * MS, 1, (0, 120), b'R', (3, 120)),
        ];
        let r = check(&e, &opts(2), all);
        assert_eq!((r.violations, r.worst[0].start_ns, r.worst[0].duration_ns), (1, 2 * MS, 7 * MS));
        // Nothing at all is an empty report.
        assert_eq!(
            check(&[], &opts(4), all).to_string(),
            "wc check: violations=0 longest_us=0 wasted_permille=0.000 idle_waiting_permille=0.000 checked_ns=0"
        );
    }

    /// A wakeup onto an idle CPU (`target_cpu` idle) is that CPU's next task: however late
    /// the CPU switches to it (the IPI, a vCPU descheduled by the host), neither it nor another
    /// idle CPU is wasted meanwhile. Once the CPU runs something else, the task waits behind it.
    #[test]
    fn a_task_queued_on_an_idle_cpu_is_not_waiting_elsewhere() {
        let idle_target = |ts: u64, cpu: u32, target: u32, pid: u32| Event {
            kind: EventKind::Wakeup { task: task(pid, 120), target_cpu: target, new: false },
            ..wake(ts, cpu, 5, (pid, 120))
        };
        // CPU 0 runs pid 5; CPUs 1 and 2 idle; pid 3 woken onto CPU 1 at 1 ms, run at 9 ms.
        let e = [
            sw(0, 0, (0, 120), b'R', (5, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            sw(0, 2, (7, 120), b'S', (0, 120)),
            idle_target(MS, 0, 1, 3),
            sw(9 * MS, 1, (0, 120), b'R', (3, 120)),
        ];
        let r = check(&e, &opts(3), all);
        assert_eq!((r.violations, r.idle_waiting_ns), (0, 0), "{:?}", r.worst);
        // CPU 1 runs pid 4 instead at 2 ms (woken onto it too): pid 3 now waits behind it, and
        // CPU 2 is wasted from 2 ms to 9 ms.
        let e2 = [e[0], e[1], e[2], e[3], idle_target(MS, 0, 1, 4), sw(2 * MS, 1, (0, 120), b'R', (4, 120)), e[4]];
        let e2 = [e2[0], e2[1], e2[2], e2[3], e2[4], e2[5], sw(9 * MS, 2, (0, 120), b'R', (3, 120))];
        let r = check(&e2, &opts(3), all);
        assert_eq!(r.violations, 1, "{:?}", r.worst);
        assert_eq!((r.worst[0].cpu, r.worst[0].start_ns, r.worst[0].duration_ns, r.worst[0].waiting.pid), (2, 2 * MS, 7 * MS, 3));
        // Migrated at 3 ms from idle CPU 1 to busy CPU 0: waiting there, CPUs 1 and 2 wasted
        // until CPU 2 takes it at 9 ms (CPU 1: 3..9 ms as well).
        let mig = ev_at(3 * MS, 1, EventKind::Migrate { task: task(3, 120), orig_cpu: 1, dest_cpu: 0 });
        let e3 = [e[0], e[1], e[2], e[3], mig, sw(9 * MS, 2, (0, 120), b'R', (3, 120))];
        let r = check(&e3, &opts(3), all);
        assert_eq!(r.violations, 2, "{:?}", r.worst);
        assert!(r.worst.iter().all(|v| (v.start_ns, v.duration_ns) == (3 * MS, 6 * MS)), "{:?}", r.worst);
        // Preempted (R) on CPU 0 while CPU 1 idles: queued on a busy CPU, waiting.
        let e4 = [
            sw(0, 0, (0, 120), b'R', (3, 120)),
            sw(0, 1, (6, 120), b'S', (0, 120)),
            sw(MS, 0, (3, 120), b'R', (5, 120)),
            sw(7 * MS, 1, (0, 120), b'R', (3, 120)),
        ];
        assert_eq!(check(&e4, &opts(2), all).violations, 1);
    }

    #[test]
    fn the_longest_are_kept() {
        // Pid 3 wakes and is taken by idle CPU 1 again and again, waiting 5, 6, ... 20 ms.
        let mut e = alloc::vec![sw(0, 0, (0, 120), b'R', (5, 120)), sw(0, 1, (6, 120), b'S', (0, 120))];
        let mut t = 0;
        for i in 0..16 {
            e.push(wake(t + MS, 0, 5, (3, 120)));
            e.push(sw(t + MS + (5 + i) * MS, 1, (0, 120), b'R', (3, 120)));
            e.push(sw(t + MS + (5 + i) * MS + US, 1, (3, 120), b'S', (0, 120)));
            t += (7 + i) * MS;
        }
        let r = check(&e, &opts(2), all);
        assert_eq!(r.violations, 16);
        assert_eq!(r.worst.len(), MAX_WORST);
        assert_eq!(r.worst.iter().map(|v| v.duration_ns / MS).collect::<Vec<_>>(), (11..=20).rev().collect::<Vec<_>>());
        assert_eq!(r.longest_ns, 20 * MS);
        assert_eq!(r.wasted_ns, (5..=20).sum::<u64>() * MS);
    }
}
