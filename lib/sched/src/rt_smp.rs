//! RT push/pull decisions (Linux kernel/sched/rt.c `push_rt_task`, `pull_rt_task`,
//! `find_lowest_rq`, the `rto_mask`), as pure functions the kernel applies under its
//! run-queue locks.
//!
//! Terms (per CPU, from its run queue):
//! * *running*: what the CPU runs, as a [`CpuPrio`] (idle, fair, or the RT priority).
//! * *waiting* RT task: queued, not running.
//! * *pushable*: waiting and migratable, i.e. allowed on more than one online CPU:
//!   `(affinity & online).count() > 1` ([`is_pushable`]; Linux `nr_cpus_allowed > 1`).
//! * *overloaded*: has a pushable task ([`rt_overloaded`]; Linux sets the CPU in
//!   `rd->rto_mask` when its pushable list becomes non-empty). Only overloaded CPUs are
//!   pull sources.
//! * *level*: what [`CpuPri`] holds for the CPU, `max(running, most important queued
//!   RT)` (see [`crate::cpupri`]).
//!
//! Decisions:
//! * [`push_candidate`]: from `src`, the most important pushable task `W` with
//!   `Rt(W) <= running(src)` whose `CpuPri::find` over `affinity & online - {src}` is
//!   non-empty, with its target (`CpuPri::find_lowest`: warm `prev`, then topology hint,
//!   then lowest id). A waiting task that beats `running(src)` is not pushed: `src` is
//!   about to switch to it (the kernel reschedules `src` instead, Linux's
//!   `resched_curr` in `push_rt_task`).
//!   **Difference from Linux**: Linux's `push_rt_task` gives up when the *top* pushable
//!   task has no target. Here the scan goes on to the next pushable task, because with
//!   affinities a less important task may be allowed on a CPU the top one is not (top
//!   `Rt(50)` allowed on `{0,1}` with CPU 1 at `Rt(60)`, next `Rt(40)` allowed on
//!   `{0,2}` with CPU 2 idle: Linux leaves CPU 2 idle while `Rt(40)` waits). Without
//!   this, the guarantee below fails.
//! * [`pull_candidate`]: for `this` CPU at level `this_highest`, over the overloaded
//!   sources, the most important waiting task `W` allowed on `this` with
//!   `W > this_highest` and `W <= running(src)` ([`should_pull`]: a task that beats its
//!   own CPU's running task is about to run there). Linux's `pull_rt_task` walks the
//!   sources one by one and may pull several tasks, each beating the level reached so
//!   far; choosing the best one directly ends in the same running task with fewer
//!   moves. After a pull `this` runs `W`; the kernel then pushes from `this` as after
//!   any switch.
//!
//! When the kernel applies them (the triggers the property test
//! `tests/rt_guarantee.rs` models):
//! * push from a CPU after an RT task is enqueued there and does not run (wakeup,
//!   migration in, a new task), after it switches tasks (the preempted task is now
//!   waiting), and after a waiting task's priority rises or its affinity changes
//!   (Linux does neither of the last two; without them a waiting task can stay below a
//!   less important CPU until the next event);
//! * pull on a CPU whose level drops (its running RT task blocks, is lowered, leaves
//!   the RT class or migrates away), before it picks its next task;
//! * each rule is repeated while it moves a task.
//!
//! Invariant (the RT guarantee): once no push and no pull applies, **no waiting RT task
//! `W` is allowed on a CPU `c` that runs something less important than `W`**. Indeed a
//! pair `(W on src, c)` violating it would let `push_candidate(src)` return a move (the
//! level of `c` equals its running priority because `c` runs its best queued task, and
//! `W <= running(src)` for a waiting task) and `pull_candidate(c)` return one too. This
//! pairwise property is what the kernel's RT trace checker checks. It implies:
//! * without affinity restrictions (every task allowed on all N online CPUs), the N
//!   most important runnable RT tasks (as a multiset of priorities) are the ones
//!   running, ties aside;
//! * with affinities, every CPU a waiting task may use runs something at least as
//!   important as it: no waiting task can be placed by preempting a less important
//!   one. This is a *stable* assignment, not necessarily one maximising the running
//!   priorities: `A = Rt(50)` allowed on `{0,1}` running on CPU 0, `B = Rt(40)` allowed
//!   on `{0}` waiting on CPU 0, CPU 1 idle satisfies it, while `A` on CPU 1 and `B` on
//!   CPU 0 would run both. Reaching that needs a chain of migrations (an augmenting
//!   path), which neither Linux nor Cadence performs.
//!
//! Every function here is total and allocation-free; returned CPUs are in the task's
//! affinity and online in the `CpuPri` passed in.

use crate::balance::{should_pull, CpuPrio};
use crate::cpumask::CpuMask;
use crate::cpupri::CpuPri;

/// A waiting (queued, not running) RT task as the push/pull decisions see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitingRt<K> {
    /// The kernel's handle for the task (e.g. its tid).
    pub key: K,
    /// User-visible RT priority, 0..=99, higher = more important.
    pub rt_priority: u8,
    /// CPUs the task may run on.
    pub affinity: CpuMask,
}

/// Move `key` from the pushing CPU to `dst_cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushMove<K> {
    /// The task to move.
    pub key: K,
    /// Its RT priority (so the kernel can re-check the target under both locks:
    /// the move is still valid iff `level(dst_cpu) < Rt(rt_priority)`).
    pub rt_priority: u8,
    /// Where it goes.
    pub dst_cpu: usize,
}

/// Move `key` from `src_cpu` to the pulling CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PullMove<K> {
    /// The task to move.
    pub key: K,
    /// Its RT priority.
    pub rt_priority: u8,
    /// Where it is queued now.
    pub src_cpu: usize,
}

/// One overloaded CPU offered to [`pull_candidate`].
#[derive(Clone, Debug)]
pub struct PullSource<W> {
    /// The source CPU.
    pub cpu: usize,
    /// What it runs.
    pub running: CpuPrio,
    /// Its waiting RT tasks (pushable ones suffice; others are filtered by affinity).
    pub waiting: W,
}

/// Linux `nr_cpus_allowed > 1` for a waiting task: may it run on another online CPU?
/// `false` for a running task (`is_running`): the running task is never pushed.
pub const fn is_pushable(affinity: CpuMask, online: CpuMask, is_running: bool) -> bool {
    !is_running && affinity.and_(online).count() > 1
}

/// A CPU with `nr_pushable` pushable tasks belongs in the RT-overload mask (Linux
/// `rt_set_overload` / `rt_clear_overload`): iff `nr_pushable > 0`.
pub const fn rt_overloaded(nr_pushable: usize) -> bool {
    nr_pushable > 0
}

/// What a CPU runs, for [`core_excluded`]: its [`CpuPrio`] and the core-scheduling cookie of
/// its running task (0: none; the idle task's cookie does not matter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running {
    /// What it runs.
    pub prio: CpuPrio,
    /// The running task's core cookie.
    pub cookie: u64,
}

/// Core scheduling (strict model: SMT siblings never run different cookies): the CPUs of
/// `candidates` on which a task with core cookie `cookie` cannot start now, because an SMT
/// sibling runs a task (not idle) of another cookie. There the task would wait: forced idle
/// if the sibling's task is the more important, else until the sibling has been made to
/// switch (an IPI, and as long as the host keeps that vCPU descheduled).
///
/// The kernel moves waiting RT tasks (push, pull, wakeup placement) only to CPUs outside
/// this set, while a CPU that cannot run its waiting task now counts as busy above every
/// task. The two rules together cannot hand a task back and forth: a task leaves a CPU
/// that cannot run it only for one that can. `siblings_of(c)`: `c`'s SMT siblings (itself
/// included); `running(s)`: what `s` runs.
pub fn core_excluded(
    cookie: u64,
    candidates: CpuMask,
    siblings_of: impl Fn(usize) -> CpuMask,
    running: impl Fn(usize) -> Running,
) -> CpuMask {
    candidates
        .iter()
        .filter(|&c| {
            siblings_of(c).without(c).iter().any(|s| {
                let r = running(s);
                r.prio != CpuPrio::Idle && r.cookie != cookie
            })
        })
        .collect()
}

/// The push from `src_cpu` (running `src_running`): the most important waiting task of
/// `waiting` that is pushable (allowed on another CPU online in `cpupri`), does not beat
/// `src_running`, and has a target, i.e. `cpupri.find(prio, affinity & online - {src})`
/// is non-empty; the target is `cpupri.find_lowest` of that with `prev_cpu = src_cpu`
/// and `topology_hint` (typically `src_cpu`'s cache siblings). Ties between equally
/// important tasks go to the first in `waiting` (pass them in run order, FIFO within a
/// level, as `RtPrioArray::iter` does). `None` if no waiting task can go anywhere.
/// Unlike Linux, a top task without a target does not stop the search (module docs).
pub fn push_candidate<K: Copy>(
    src_cpu: usize,
    src_running: CpuPrio,
    waiting: impl IntoIterator<Item = WaitingRt<K>>,
    cpupri: &CpuPri,
    topology_hint: Option<CpuMask>,
) -> Option<PushMove<K>> {
    let online = cpupri.online();
    let mut best: Option<PushMove<K>> = None;
    for w in waiting {
        if best.is_some_and(|b| w.rt_priority <= b.rt_priority)
            || CpuPrio::Rt(w.rt_priority) > src_running
            || !is_pushable(w.affinity, online, false)
        {
            continue;
        }
        let allowed = (w.affinity & online).without(src_cpu);
        if let Some(dst_cpu) = cpupri.find_lowest(w.rt_priority, allowed, src_cpu, topology_hint) {
            best = Some(PushMove { key: w.key, rt_priority: w.rt_priority, dst_cpu });
        }
    }
    best
}

/// The pull for `this_cpu`, whose level (`max(running, most important queued RT)`) is
/// `this_highest`: over `sources` (the overloaded CPUs; `this_cpu` itself is skipped),
/// the most important waiting task allowed on `this_cpu` for which
/// [`should_pull`]`(this_highest, source.running, prio)` holds. Ties go to the first
/// source, then the first task within it. `None` if nothing should move.
pub fn pull_candidate<K, W>(this_cpu: usize, this_highest: CpuPrio, sources: impl IntoIterator<Item = PullSource<W>>) -> Option<PullMove<K>>
where
    K: Copy,
    W: IntoIterator<Item = WaitingRt<K>>,
{
    let mut best: Option<PullMove<K>> = None;
    for src in sources {
        if src.cpu == this_cpu {
            continue;
        }
        for w in src.waiting {
            let better = best.is_none_or(|b| w.rt_priority > b.rt_priority);
            if better && w.affinity.contains(this_cpu) && should_pull(this_highest, src.running, w.rt_priority) {
                best = Some(PullMove { key: w.key, rt_priority: w.rt_priority, src_cpu: src.cpu });
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use CpuPrio::*;

    fn mask(cpus: &[usize]) -> CpuMask {
        cpus.iter().copied().collect()
    }

    fn w(key: u32, rt_priority: u8, affinity: &[usize]) -> WaitingRt<u32> {
        WaitingRt { key, rt_priority, affinity: mask(affinity) }
    }

    fn cpupri(levels: &[CpuPrio]) -> CpuPri {
        let mut cp = CpuPri::new(levels.len());
        for (cpu, &l) in levels.iter().enumerate() {
            cp.set(cpu, Some(l));
        }
        cp
    }

    /// CPUs 0,1 and 2,3 are SMT pairs.
    fn pairs(c: usize) -> CpuMask {
        mask(&[c & !1, c | 1])
    }

    #[test]
    fn core_excluded_is_a_sibling_running_another_cookie() {
        let run = |prio, cookie| Running { prio, cookie };
        // CPU 1 runs Rt(60) cookie 7; CPU 3 runs a fair task cookie 9; CPU 2 idle; CPU 0
        // runs a fair task cookie 7.
        let running = |c: usize| match c {
            0 => run(Fair, 7),
            1 => run(Rt(60), 7),
            3 => run(Fair, 9),
            _ => run(Idle, 0),
        };
        let all = mask(&[0, 1, 2, 3]);
        // Cookie 5: CPU 0 (sibling 1 runs cookie 7), CPU 1 (sibling 0 runs cookie 7) and
        // CPU 2 (sibling 3 runs cookie 9, a fair task: it too would have to switch first)
        // are excluded; CPU 3's sibling is idle.
        assert_eq!(core_excluded(5, all, pairs, running), mask(&[0, 1, 2]));
        // Cookie 7 shares the core with CPUs 0 and 1.
        assert_eq!(core_excluded(7, all, pairs, running), mask(&[2]));
        // Only candidates are reported; without SMT nothing is excluded.
        assert_eq!(core_excluded(5, mask(&[3]), pairs, running), mask(&[]));
        assert_eq!(core_excluded(5, all, |c| mask(&[c]), running), mask(&[]));
    }

    #[test]
    fn push_skips_top_task_without_target() {
        // The module-doc example: top Rt(50) may only use CPU 1 (at Rt(60)), Rt(40) may
        // use idle CPU 2.
        let cp = cpupri(&[Rt(70), Rt(60), Idle]);
        let got = push_candidate(0, Rt(70), [w(1, 50, &[0, 1]), w(2, 40, &[0, 2])], &cp, None);
        assert_eq!(got, Some(PushMove { key: 2, rt_priority: 40, dst_cpu: 2 }));
    }

    #[test]
    fn push_prefers_most_important_then_fifo() {
        let cp = cpupri(&[Rt(70), Fair, Idle, Rt(5)]);
        let all = [0, 1, 2, 3];
        let got = push_candidate(0, Rt(70), [w(1, 10, &all), w(2, 30, &all), w(3, 30, &all)], &cp, None);
        assert_eq!(got, Some(PushMove { key: 2, rt_priority: 30, dst_cpu: 2 }));
        // Topology hint picks among equally low CPUs.
        let cp = cpupri(&[Rt(70), Idle, Idle, Idle]);
        let got = push_candidate(0, Rt(70), [w(1, 10, &all)], &cp, Some(mask(&[0, 3])));
        assert_eq!(got.map(|m| m.dst_cpu), Some(3));
    }

    #[test]
    fn push_ignores_pinned_local_winners_and_offline() {
        let mut cp = cpupri(&[Rt(20), Idle, Idle]);
        // Pinned to the source.
        assert_eq!(push_candidate(0, Rt(20), [w(1, 10, &[0])], &cp, None), None);
        // Beats what the source runs: it will run there.
        assert_eq!(push_candidate(0, Rt(20), [w(1, 30, &[0, 1])], &cp, None), None);
        // Equal to the source's running task: it waits, so it is pushed.
        assert_eq!(push_candidate(0, Rt(20), [w(1, 20, &[0, 1])], &cp, None).map(|m| m.dst_cpu), Some(1));
        // Its only other CPU is offline: not pushable.
        cp.set(1, None);
        assert_eq!(push_candidate(0, Rt(20), [w(1, 10, &[0, 1])], &cp, None), None);
        // No CPU below its priority.
        let cp = cpupri(&[Rt(20), Rt(10), Rt(15)]);
        assert_eq!(push_candidate(0, Rt(20), [w(1, 10, &[0, 1, 2])], &cp, None), None);
        assert!(is_pushable(mask(&[0, 1]), mask(&[0, 1]), false));
        assert!(!is_pushable(mask(&[0, 1]), mask(&[0, 1]), true));
        assert!(rt_overloaded(1) && !rt_overloaded(0));
    }

    #[test]
    fn pull_rules() {
        let src = |cpu, running, waiting: Vec<WaitingRt<u32>>| PullSource { cpu, running, waiting };
        // CPU 0 just dropped to fair; CPU 1 runs Rt(50) with waiting 40 and 45 (45 not
        // allowed here); CPU 2 runs Rt(30) with waiting 35 (about to preempt: skipped).
        let sources = vec![src(1, Rt(50), vec![w(10, 40, &[0, 1]), w(11, 45, &[1, 2])]), src(2, Rt(30), vec![w(20, 35, &[0, 2])])];
        assert_eq!(pull_candidate(0, Fair, sources.clone()), Some(PullMove { key: 10, rt_priority: 40, src_cpu: 1 }));
        // Level already at Rt(40): nothing beats it.
        assert_eq!(pull_candidate(0, Rt(40), sources.clone()), None);
        // Sources equal to this CPU are skipped.
        assert_eq!(pull_candidate(1, Idle, sources[..1].to_vec()), None);
        // The best task wins even when a worse one comes first.
        let later_best = vec![src(1, Rt(50), vec![w(10, 40, &[0, 1])]), src(2, Rt(50), vec![w(20, 45, &[0, 2])])];
        assert_eq!(pull_candidate(0, Idle, later_best).map(|m| m.key), Some(20));
        // Ties: first source.
        let tie = vec![src(1, Rt(50), vec![w(10, 40, &[0, 1])]), src(2, Rt(50), vec![w(20, 40, &[0, 2])])];
        assert_eq!(pull_candidate(0, Idle, tie).map(|m| m.key), Some(10));
    }
}
