//! The RT guarantee, tested on a model SMP system, plus `CpuPri` unit and property tests.
//!
//! Model: 1..=8 online CPUs (the `CpuPri` always describes 8, so CPUs beyond the model
//! are offline and any affinity bit for them must be ignored). Each CPU has an
//! `RtPrioArray` of queued RT tasks and a count of runnable fair tasks, and runs the head
//! of its most important RT level, else fair work, else idle (`Idle < Fair < Rt(_)`).
//! The kernel's rules, exactly as `cadence_sched::rt_smp` documents them, are applied:
//! * a waking or new task is queued on `CpuPri::find_lowest` from its previous CPU (hint:
//!   the previous CPU's cache pair), else on its previous CPU if allowed, else on its
//!   first allowed CPU;
//! * a task whose CPU leaves its affinity is migrated to an allowed CPU (an arbitrary
//!   one, as Linux's stopper does, not a priority-aware choice);
//! * after every queue change the CPU's level `max(running, best queued RT)` goes to
//!   `CpuPri::set`. A push is queued on a CPU when an RT task is enqueued there, when it
//!   switches tasks, and when one of its waiting tasks is raised or has its affinity
//!   changed; a pull is queued on a CPU whose level drops;
//! * "settle" runs the queued pushes (each repeated while it moves a task) and pulls
//!   until none is left, bounded by `MAX_SETTLE_ROUNDS` (convergence is asserted).
//!
//! After every operation and settle the test asserts the pairwise RT guarantee (the one
//! the kernel's RT trace checker checks): **no waiting RT task `W` is allowed on a CPU
//! that runs something less important than `W`**. Combined with push/pull (each
//! violating pair is exactly a push or pull that applies) this means: without affinity
//! restrictions, the N most important runnable RT tasks run on the N CPUs (checked
//! directly by `rt_guarantee_full_affinity_runs_top_n`); with affinities, every CPU a
//! waiting task may use runs something at least as important, a stable assignment that
//! is not always the priority-maximal one (`stable_assignment_is_not_maximal_under_affinity`
//! shows the gap, which neither Linux nor Cadence closes).

use cadence_sched::balance::{find_lowest_rq, CpuPrio};
use cadence_sched::cpupri::{cpu_level, CpuPri};
use cadence_sched::rt_smp::{is_pushable, pull_candidate, push_candidate, rt_overloaded, PullMove, PullSource, PushMove, WaitingRt};
use cadence_sched::{CpuMask, RtPrioArray};
use proptest::prelude::*;
use CpuPrio::*;

/// CPUs the `CpuPri` of the model describes (online ones are `0..ncpus`).
const MODEL_CPUS: usize = 8;
/// Bound on settle rounds (one round = one push or pull attempt that ran).
const MAX_SETTLE_ROUNDS: usize = 10_000;

fn mask(cpus: &[usize]) -> CpuMask {
    cpus.iter().copied().collect()
}

fn cpupri_of(levels: &[Option<CpuPrio>]) -> CpuPri {
    let mut cp = CpuPri::new(levels.len());
    for (cpu, &l) in levels.iter().enumerate() {
        cp.set(cpu, l);
    }
    cp
}

// ---------------------------------------------------------------------------------
// CpuPri unit tests
// ---------------------------------------------------------------------------------

#[test]
fn cpupri_find_orders_idle_fair_rt() {
    let mut cp = cpupri_of(&[Some(Rt(3)), Some(Fair), Some(Idle), Some(Rt(1)), Some(Fair), Some(Idle)]);
    let all = CpuMask::all(6);
    assert_eq!(cp.find(50, all), mask(&[2, 5]));
    cp.set(2, Some(Rt(10)));
    cp.set(5, Some(Fair));
    assert_eq!(cp.find(50, all), mask(&[1, 4, 5]));
    for cpu in [1, 4, 5] {
        cp.set(cpu, Some(Rt(7)));
    }
    // Lowest RT level first.
    assert_eq!(cp.find(50, all), mask(&[3]));
    cp.set(3, Some(Rt(20)));
    assert_eq!(cp.find(50, all), mask(&[0]));
    // Strictly below the task: equal priority is not a target.
    assert_eq!(cp.find(3, all), CpuMask::EMPTY);
    assert_eq!(cp.find(4, all), mask(&[0]));
    // Rt(0) (PI boost level) is above fair and idle.
    let cp = cpupri_of(&[Some(Rt(0)), Some(Fair)]);
    assert_eq!(cp.find(1, CpuMask::all(2)), mask(&[1]));
    assert_eq!(cp.find(0, CpuMask::all(2)), mask(&[1]));
    assert_eq!(cp.find(0, mask(&[0])), CpuMask::EMPTY);
}

#[test]
fn cpupri_find_respects_affinity() {
    let cp = cpupri_of(&[Some(Idle), Some(Fair), Some(Rt(5)), Some(Idle)]);
    assert_eq!(cp.find(10, mask(&[1, 2])), mask(&[1]));
    assert_eq!(cp.find(10, mask(&[2])), mask(&[2]));
    assert_eq!(cp.find(10, mask(&[0, 2, 3])), mask(&[0, 3]));
    assert_eq!(cp.find(10, CpuMask::EMPTY), CpuMask::EMPTY);
    assert_eq!(cp.find_lowest(10, mask(&[1, 2]), 2, None), Some(1));
    assert_eq!(cp.find_lowest(5, mask(&[2]), 2, None), None);
}

#[test]
fn cpupri_offline_never_returned() {
    let mut cp = cpupri_of(&[Some(Rt(9)), None, Some(Fair), None]);
    let all = CpuMask::all(64);
    assert_eq!(cp.find(50, all), mask(&[2]));
    assert_eq!(cp.online(), mask(&[0, 2]));
    // Going offline removes a CPU from its level.
    cp.set(2, None);
    assert_eq!(cp.find(50, all), mask(&[0]));
    cp.set(0, None);
    assert_eq!(cp.find(99, all), CpuMask::EMPTY);
    assert_eq!(cp.find_lowest(99, all, 1, Some(all)), None);
    // A fresh CpuPri is all offline.
    let fresh = CpuPri::new(64);
    assert_eq!((fresh.find(99, all), fresh.online()), (CpuMask::EMPTY, CpuMask::EMPTY));
    // CPUs past ncpus cannot be brought online.
    let mut small = CpuPri::new(2);
    small.set(5, Some(Idle));
    assert_eq!((small.get(5), small.find(99, all)), (None, CpuMask::EMPTY));
    cp.verify().unwrap();
    small.verify().unwrap();
}

#[test]
fn cpupri_set_get_round_trip() {
    let mut cp = CpuPri::new(64);
    let levels = [Idle, Fair, Rt(0), Rt(1), Rt(50), Rt(99)];
    for cpu in 0..64 {
        let l = levels[cpu % levels.len()];
        cp.set(cpu, Some(l));
        assert_eq!(cp.get(cpu), Some(l));
    }
    assert_eq!(cp.online(), CpuMask::all(64));
    // 64 CPUs over 6 levels: 11 each for the first four, 10 for Rt(50) and Rt(99).
    assert_eq!(cp.cpus_at(Rt(99)).count(), 10);
    assert_eq!(cp.get(63), Some(Rt(1)));
    cp.set(63, Some(Idle));
    assert_eq!((cp.get(63), cp.cpus_at(Rt(1)).count(), cp.cpus_at(Idle).count()), (Some(Idle), 10, 12));
    cp.set(63, None);
    assert_eq!(cp.get(63), None);
    assert_eq!(cp.get(64), None);
    // Setting the same level twice is a no-op.
    let before = cp.clone();
    cp.set(0, Some(Idle));
    assert_eq!(cp, before);
    cp.verify().unwrap();
}

#[test]
fn cpupri_find_lowest_prefers_prev_then_hint() {
    let cp = cpupri_of(&[Some(Idle), Some(Rt(5)), Some(Idle), Some(Idle), Some(Fair)]);
    let all = CpuMask::all(5);
    // prev at the lowest level wins.
    assert_eq!(cp.find_lowest(10, all, 3, None), Some(3));
    assert_eq!(cp.find_lowest(10, all, 3, Some(mask(&[2]))), Some(3));
    // prev not at the lowest level: the hint, then the lowest id.
    assert_eq!(cp.find_lowest(10, all, 4, Some(mask(&[2, 3, 4]))), Some(2));
    assert_eq!(cp.find_lowest(10, all, 4, Some(mask(&[1, 4]))), Some(0));
    assert_eq!(cp.find_lowest(10, all, 4, None), Some(0));
    // A fair prev loses to an idle CPU even with the hint pointing at prev.
    assert_eq!(cp.find_lowest(10, mask(&[3, 4]), 4, Some(mask(&[4]))), Some(3));
}

// ---------------------------------------------------------------------------------
// The model SMP system
// ---------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    Sleeping { prev_cpu: usize },
    Queued { cpu: usize },
}

#[derive(Clone, Debug)]
struct Task {
    rt_priority: u8,
    /// Affinity as the user set it: may name offline CPUs (which must be ignored).
    requested: CpuMask,
    state: TaskState,
}

struct Smp {
    ncpus: usize,
    online: CpuMask,
    rqs: Vec<RtPrioArray<usize>>,
    nr_fair: Vec<u8>,
    /// RT task each CPU ran at its last refresh (to detect switches).
    running: Vec<Option<usize>>,
    /// Level each CPU last gave to `cpupri` (to detect drops).
    levels: Vec<CpuPrio>,
    cpupri: CpuPri,
    tasks: Vec<Task>,
    push_pending: CpuMask,
    pull_pending: CpuMask,
    pull_first: bool,
}

/// The "cache pair" of `cpu`: `{cpu & !1, cpu | 1}`, the topology hint for placement.
fn cache_pair(cpu: usize) -> CpuMask {
    CpuMask::single(cpu & !1).with(cpu | 1)
}

#[derive(Clone, Debug)]
enum Op {
    New { rt_priority: u8, affinity: u8, cpu: usize },
    Wake(usize),
    Sleep(usize),
    BlockRunning(usize),
    SetPrio(usize, u8),
    SetAffinity { task: usize, affinity: u8, dst_choice: usize },
    SetFair(usize, u8),
}

impl Smp {
    fn new(ncpus: usize, pull_first: bool) -> Smp {
        let mut s = Smp {
            ncpus,
            online: CpuMask::all(ncpus),
            rqs: (0..ncpus).map(|_| RtPrioArray::new()).collect(),
            nr_fair: vec![0; ncpus],
            running: vec![None; ncpus],
            levels: vec![Idle; ncpus],
            cpupri: CpuPri::new(MODEL_CPUS),
            tasks: Vec::new(),
            push_pending: CpuMask::EMPTY,
            pull_pending: CpuMask::EMPTY,
            pull_first,
        };
        for cpu in 0..ncpus {
            s.cpupri.set(cpu, Some(Idle));
        }
        s
    }

    fn effective(&self, key: usize) -> CpuMask {
        self.tasks[key].requested & self.online
    }

    /// What `cpu` runs: its best RT level, else fair, else idle.
    fn running_prio(&self, cpu: usize) -> CpuPrio {
        match self.rqs[cpu].highest_prio() {
            Some(p) => Rt(p),
            None if self.nr_fair[cpu] > 0 => Fair,
            None => Idle,
        }
    }

    /// After any change to `cpu`'s queue: detect a switch (queue a push), recompute the
    /// level (queue a pull if it dropped) and publish it to `cpupri`.
    fn refresh(&mut self, cpu: usize) {
        let run = self.rqs[cpu].pick_highest();
        if run != self.running[cpu] {
            self.running[cpu] = run;
            self.push_pending = self.push_pending.with(cpu);
        }
        let level = cpu_level(self.running_prio(cpu), self.rqs[cpu].highest_prio());
        if level < self.levels[cpu] {
            self.pull_pending = self.pull_pending.with(cpu);
        }
        self.levels[cpu] = level;
        self.cpupri.set(cpu, Some(level));
    }

    fn enqueue(&mut self, key: usize, cpu: usize) {
        self.rqs[cpu].enqueue(key, self.tasks[key].rt_priority, false).unwrap();
        self.tasks[key].state = TaskState::Queued { cpu };
        self.push_pending = self.push_pending.with(cpu);
        self.refresh(cpu);
    }

    fn dequeue(&mut self, key: usize) -> usize {
        let TaskState::Queued { cpu } = self.tasks[key].state else { panic!("task {key} not queued") };
        self.rqs[cpu].dequeue(key).unwrap();
        self.tasks[key].state = TaskState::Sleeping { prev_cpu: cpu };
        self.refresh(cpu);
        cpu
    }

    fn migrate(&mut self, key: usize, dst: usize) {
        self.dequeue(key);
        self.enqueue(key, dst);
    }

    fn is_waiting(&self, key: usize) -> bool {
        matches!(self.tasks[key].state, TaskState::Queued { cpu } if self.running[cpu] != Some(key))
    }

    /// Waiting tasks of `cpu` in run order, with their requested (unmasked) affinity.
    fn waiting(&self, cpu: usize) -> Vec<WaitingRt<usize>> {
        self.rqs[cpu]
            .iter()
            .filter(|&(k, _)| self.running[cpu] != Some(k))
            .map(|(key, rt_priority)| WaitingRt { key, rt_priority, affinity: self.tasks[key].requested })
            .collect()
    }

    /// The overloaded CPUs other than `this`, with their pushable tasks.
    fn pull_sources(&self, this: usize) -> Vec<PullSource<Vec<WaitingRt<usize>>>> {
        (0..self.ncpus)
            .filter(|&c| c != this)
            .map(|cpu| {
                let pushable: Vec<_> = self.waiting(cpu).into_iter().filter(|w| is_pushable(w.affinity, self.online, false)).collect();
                PullSource { cpu, running: self.running_prio(cpu), waiting: pushable }
            })
            .filter(|s| rt_overloaded(s.waiting.len()))
            .collect()
    }

    fn push_decision(&self, src: usize) -> Option<PushMove<usize>> {
        push_candidate(src, self.running_prio(src), self.waiting(src), &self.cpupri, Some(cache_pair(src)))
    }

    fn pull_decision(&self, this: usize) -> Option<PullMove<usize>> {
        pull_candidate(this, self.levels[this], self.pull_sources(this))
    }

    fn try_push(&mut self, src: usize) -> Result<bool, TestCaseError> {
        let Some(mv) = self.push_decision(src) else { return Ok(false) };
        prop_assert!(
            self.is_waiting(mv.key) && self.tasks[mv.key].state == TaskState::Queued { cpu: src },
            "push of a task not waiting on CPU {}",
            src
        );
        prop_assert_eq!(mv.rt_priority, self.tasks[mv.key].rt_priority);
        prop_assert!(mv.dst_cpu != src && self.effective(mv.key).contains(mv.dst_cpu), "bad push {:?}", mv);
        prop_assert!(self.levels[mv.dst_cpu] < Rt(mv.rt_priority));
        prop_assert!(Rt(mv.rt_priority) <= self.running_prio(src));
        self.migrate(mv.key, mv.dst_cpu);
        Ok(true)
    }

    fn try_pull(&mut self, this: usize) -> Result<bool, TestCaseError> {
        let Some(mv) = self.pull_decision(this) else { return Ok(false) };
        prop_assert!(
            self.is_waiting(mv.key) && self.tasks[mv.key].state == TaskState::Queued { cpu: mv.src_cpu },
            "pull of a task not waiting on its source: {:?}",
            mv
        );
        prop_assert!(mv.src_cpu != this && self.effective(mv.key).contains(this), "bad pull {:?}", mv);
        prop_assert!(Rt(mv.rt_priority) > self.levels[this]);
        prop_assert!(Rt(mv.rt_priority) <= self.running_prio(mv.src_cpu));
        self.migrate(mv.key, this);
        Ok(true)
    }

    /// Runs queued pushes and pulls until none is left.
    fn settle(&mut self) -> Result<usize, TestCaseError> {
        let mut rounds = 0;
        loop {
            let pull = self.pull_pending.first();
            let push = self.push_pending.first();
            let (is_pull, cpu) = match (pull, push) {
                (Some(c), _) if self.pull_first || push.is_none() => (true, c),
                (_, Some(c)) => (false, c),
                (None, None) => return Ok(rounds),
                (Some(_), None) => unreachable!(),
            };
            if is_pull {
                self.pull_pending = self.pull_pending.without(cpu);
            } else {
                self.push_pending = self.push_pending.without(cpu);
            }
            loop {
                rounds += 1;
                prop_assert!(rounds < MAX_SETTLE_ROUNDS, "push/pull did not converge");
                let moved = if is_pull { self.try_pull(cpu)? } else { self.try_push(cpu)? };
                if !moved {
                    break;
                }
            }
        }
    }

    fn wake(&mut self, key: usize) -> Result<(), TestCaseError> {
        let TaskState::Sleeping { prev_cpu } = self.tasks[key].state else { return Ok(()) };
        let (prio, requested, allowed) = (self.tasks[key].rt_priority, self.tasks[key].requested, self.effective(key));
        // The requested mask may name offline CPUs: CpuPri must never return them.
        let target = self.cpupri.find_lowest(prio, requested, prev_cpu, Some(cache_pair(prev_cpu)));
        if let Some(t) = target {
            prop_assert!(allowed.contains(t), "wakeup target {} offline or not allowed", t);
        }
        let cpu = target.or_else(|| allowed.contains(prev_cpu).then_some(prev_cpu)).or_else(|| allowed.first());
        self.enqueue(key, cpu.unwrap());
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let n = self.ncpus;
        match *op {
            Op::New { rt_priority, affinity, cpu } => {
                let mut requested = CpuMask::from_u64(u64::from(affinity));
                if (requested & self.online).is_empty() {
                    requested = self.online;
                }
                self.tasks.push(Task { rt_priority, requested, state: TaskState::Sleeping { prev_cpu: cpu % n } });
                self.wake(self.tasks.len() - 1)?;
            }
            Op::Wake(i) => {
                let sleeping: Vec<usize> =
                    (0..self.tasks.len()).filter(|&k| matches!(self.tasks[k].state, TaskState::Sleeping { .. })).collect();
                if !sleeping.is_empty() {
                    self.wake(sleeping[i % sleeping.len()])?;
                }
            }
            Op::Sleep(i) => {
                let queued: Vec<usize> =
                    (0..self.tasks.len()).filter(|&k| matches!(self.tasks[k].state, TaskState::Queued { .. })).collect();
                if !queued.is_empty() {
                    self.dequeue(queued[i % queued.len()]);
                }
            }
            Op::BlockRunning(cpu) => {
                if let Some(k) = self.running[cpu % n] {
                    self.dequeue(k);
                }
            }
            Op::SetPrio(i, prio) => {
                if self.tasks.is_empty() {
                    return Ok(());
                }
                let key = i % self.tasks.len();
                let old = self.tasks[key].rt_priority;
                self.tasks[key].rt_priority = prio;
                if let TaskState::Queued { cpu } = self.tasks[key].state {
                    self.rqs[cpu].change_prio(key, prio).unwrap();
                    self.refresh(cpu);
                    if prio > old && self.is_waiting(key) {
                        self.push_pending = self.push_pending.with(cpu);
                    }
                }
            }
            Op::SetAffinity { task, affinity, dst_choice } => {
                if self.tasks.is_empty() {
                    return Ok(());
                }
                let key = task % self.tasks.len();
                let requested = CpuMask::from_u64(u64::from(affinity));
                let allowed = requested & self.online;
                if allowed.is_empty() {
                    return Ok(()); // sched_setaffinity: EINVAL
                }
                self.tasks[key].requested = requested;
                if let TaskState::Queued { cpu } = self.tasks[key].state {
                    if !allowed.contains(cpu) {
                        let dst = allowed.iter().nth(dst_choice % allowed.count() as usize).unwrap();
                        self.migrate(key, dst);
                    } else if self.is_waiting(key) {
                        self.push_pending = self.push_pending.with(cpu);
                    }
                }
            }
            Op::SetFair(cpu, nr) => {
                self.nr_fair[cpu % n] = nr;
                self.refresh(cpu % n);
            }
        }
        Ok(())
    }

    /// The pairwise RT guarantee plus bookkeeping consistency, after settling.
    fn check(&self) -> Result<(), TestCaseError> {
        prop_assert_eq!(self.cpupri.verify(), Ok(()));
        prop_assert!(self.push_pending.is_empty() && self.pull_pending.is_empty());
        for cpu in 0..MODEL_CPUS {
            let expected = (cpu < self.ncpus).then(|| self.running_prio(cpu));
            prop_assert_eq!(self.cpupri.get(cpu), expected, "cpupri out of date on CPU {}", cpu);
        }
        for key in (0..self.tasks.len()).filter(|&k| self.is_waiting(k)) {
            let w = Rt(self.tasks[key].rt_priority);
            for c in self.effective(key).iter() {
                prop_assert!(
                    self.running_prio(c) >= w,
                    "waiting task {} ({:?}) allowed on CPU {} running {:?}",
                    key,
                    w,
                    c,
                    self.running_prio(c)
                );
            }
        }
        // Equivalently: no push and no pull applies anywhere.
        for cpu in 0..self.ncpus {
            prop_assert_eq!(self.push_decision(cpu), None);
            prop_assert_eq!(self.pull_decision(cpu), None);
        }
        Ok(())
    }

    /// Without affinity restrictions: the running RT priorities are the top N.
    fn check_top_n(&self) -> Result<(), TestCaseError> {
        let queued = || self.tasks.iter().filter(|t| matches!(t.state, TaskState::Queued { .. }));
        prop_assert!(queued().all(|t| t.requested & self.online == self.online));
        let mut running: Vec<u8> = (0..self.ncpus).filter_map(|c| self.rqs[c].highest_prio()).collect();
        let mut all: Vec<u8> = queued().map(|t| t.rt_priority).collect();
        running.sort_unstable_by(|a, b| b.cmp(a));
        all.sort_unstable_by(|a, b| b.cmp(a));
        all.truncate(self.ncpus);
        prop_assert_eq!(running, all);
        Ok(())
    }
}

fn rt_priority() -> impl Strategy<Value = u8> {
    // Few distinct values make ties common; 0 is the PI-boost level.
    prop_oneof![1u8..=4, 0u8..=99]
}

fn op(full_affinity: bool) -> impl Strategy<Value = Op> {
    // Overlapping small masks (pairs, singles) make affinity conflicts common.
    let affinity = if full_affinity {
        Just(0xffu8).boxed()
    } else {
        prop_oneof![
            Just(0xffu8),
            any::<u8>(),
            (0u8..8, 0u8..8).prop_map(|(a, b)| (1u8 << a) | (1u8 << b)),
            (0u8..3, 0u8..3).prop_map(|(a, b)| (1u8 << a) | (1u8 << b)),
        ]
        .boxed()
    };
    let idx = 0usize..64;
    let cpu = 0usize..MODEL_CPUS;
    let set_affinity = (idx.clone(), affinity.clone(), idx.clone()).prop_map(|(task, affinity, dst_choice)| Op::SetAffinity {
        task,
        affinity,
        dst_choice,
    });
    prop_oneof![
        3 => (rt_priority(), affinity, cpu.clone()).prop_map(|(rt_priority, affinity, cpu)| Op::New { rt_priority, affinity, cpu }),
        3 => idx.clone().prop_map(Op::Wake),
        2 => idx.clone().prop_map(Op::Sleep),
        2 => cpu.clone().prop_map(Op::BlockRunning),
        2 => (idx, rt_priority()).prop_map(|(i, p)| Op::SetPrio(i, p)),
        2 => set_affinity,
        1 => (cpu, 0u8..3).prop_map(|(c, n)| Op::SetFair(c, n)),
    ]
}

fn run_model(ncpus: usize, pull_first: bool, ops: &[Op], full_affinity: bool) -> Result<(), TestCaseError> {
    let mut smp = Smp::new(ncpus, pull_first);
    for op in ops {
        smp.apply(op)?;
        smp.settle()?;
        smp.check()?;
        if full_affinity {
            smp.check_top_n()?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random wakeups, sleeps, priority and affinity changes on 1..=8 CPUs: after push
    /// and pull settle, no waiting RT task may use a CPU running something less important.
    #[test]
    fn rt_guarantee_holds_after_every_op(
        ncpus in 1usize..=MODEL_CPUS, pull_first in any::<bool>(), ops in prop::collection::vec(op(false), 1..=60),
    ) {
        run_model(ncpus, pull_first, &ops, false)?;
    }

    /// Every task allowed everywhere: the N most important runnable RT tasks run.
    #[test]
    fn rt_guarantee_full_affinity_runs_top_n(
        ncpus in 1usize..=MODEL_CPUS, pull_first in any::<bool>(), ops in prop::collection::vec(op(true), 1..=60),
    ) {
        run_model(ncpus, pull_first, &ops, true)?;
    }

    /// `CpuPri::find` picks the same level as `balance::find_lowest_rq`, returns every
    /// allowed online CPU of it, and `find_lowest` without a hint picks the same CPU.
    #[test]
    fn cpupri_find_agrees_with_find_lowest_rq(
        snapshot in prop::collection::vec(
            prop::option::weighted(0.85, prop_oneof![Just(Idle), Just(Fair), (0u8..100).prop_map(Rt), (0u8..4).prop_map(Rt)]),
            1..=64,
        ),
        task_prio in 0u8..100, affinity in any::<u64>(), prev in 0usize..70, hint in any::<u64>(),
    ) {
        let cp = cpupri_of(&snapshot);
        let online: CpuMask = (0..snapshot.len()).filter(|&c| snapshot[c].is_some()).collect();
        prop_assert_eq!(cp.online(), online);
        // find_lowest_rq has no notion of offline: mask the affinity, fill offline slots.
        let dense: Vec<CpuPrio> = snapshot.iter().map(|l| l.unwrap_or(Idle)).collect();
        let affinity = CpuMask::from_u64(affinity);
        let found = cp.find(task_prio, affinity);
        let reference = find_lowest_rq(task_prio, affinity & online, prev, &dense);
        match reference {
            None => prop_assert!(found.is_empty()),
            Some(c) => {
                let level = dense[c];
                let expected: CpuMask = (affinity & online).iter().filter(|&i| dense[i] == level).collect();
                prop_assert_eq!(found, expected);
            }
        }
        prop_assert!(found.is_subset_of(affinity & online));
        prop_assert_eq!(cp.find_lowest(task_prio, affinity, prev, None), reference);
        let with_hint = cp.find_lowest(task_prio, affinity, prev, Some(CpuMask::from_u64(hint)));
        prop_assert_eq!(with_hint.is_some(), reference.is_some());
        if let Some(c) = with_hint {
            prop_assert!(found.contains(c));
            if !found.contains(prev) && !(found & CpuMask::from_u64(hint)).is_empty() {
                prop_assert!(CpuMask::from_u64(hint).contains(c));
            }
        }
    }

    /// Random `set` sequences keep the invariants and read back like a plain array.
    #[test]
    fn cpupri_set_get_random(
        ncpus in 1usize..=64,
        sets in prop::collection::vec((0usize..70, prop::option::of(prop_oneof![Just(Idle), Just(Fair), (0u8..=255).prop_map(Rt)])), 0..200),
    ) {
        let mut cp = CpuPri::new(ncpus);
        let mut shadow = [None; 70];
        for &(cpu, level) in &sets {
            cp.set(cpu, level);
            if cpu < ncpus {
                shadow[cpu] = level.map(|l| match l { Rt(p) => Rt(p.min(99)), other => other });
            }
            prop_assert_eq!(cp.verify(), Ok(()));
        }
        for (cpu, &expected) in shadow.iter().enumerate() {
            prop_assert_eq!(cp.get(cpu), expected);
        }
        let online: CpuMask = (0..70).filter(|&c| shadow[c].is_some()).collect();
        prop_assert_eq!(cp.online(), online);
    }
}

// ---------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------

/// The limit of the pairwise guarantee under affinity: `A = Rt(50)` on `{0,1}` runs on
/// CPU 0, `B = Rt(40)` pinned to CPU 0 waits, CPU 1 is idle. No push or pull applies
/// (B may not use CPU 1; CPU 1 cannot pull A, which is running), yet running A on CPU 1
/// and B on CPU 0 would run both.
#[test]
fn stable_assignment_is_not_maximal_under_affinity() {
    let mut cp = CpuPri::new(2);
    cp.set(0, Some(Rt(50)));
    cp.set(1, Some(Idle));
    let b = WaitingRt { key: 'B', rt_priority: 40, affinity: mask(&[0]) };
    assert_eq!(push_candidate(0, Rt(50), [b], &cp, None), None);
    let sources = [PullSource { cpu: 0, running: Rt(50), waiting: [b] }];
    assert_eq!(pull_candidate(1, Idle, sources), None);
    // A could go to CPU 1, but the running task is never pushed.
    assert_eq!(cp.find_lowest(50, mask(&[0, 1]).without(0), 0, None), Some(1));
}

/// A wakeup that preempts starts a push chain: the preempted task moves to the next
/// lowest CPU, which preempts there, and so on.
#[test]
fn preemption_push_chain() {
    let mut smp = Smp::new(3, false);
    let all = 0b111;
    for (prio, cpu) in [(30, 0), (20, 1), (10, 2)] {
        smp.apply(&Op::New { rt_priority: prio, affinity: all, cpu }).unwrap();
        smp.settle().unwrap();
    }
    assert_eq!(smp.running, [Some(0), Some(1), Some(2)]);
    // A pinned Rt(40) on CPU 0 displaces 30, which displaces 10 (the lowest).
    smp.apply(&Op::New { rt_priority: 40, affinity: 0b001, cpu: 0 }).unwrap();
    smp.settle().unwrap();
    smp.check().unwrap();
    let mut running: Vec<u8> = (0..3).filter_map(|c| smp.rqs[c].highest_prio()).collect();
    running.sort_unstable();
    assert_eq!(running, [20, 30, 40]);
    assert!(smp.is_waiting(2));
    // The Rt(40) blocks: CPU 0 drops and pulls Rt(10) back.
    smp.apply(&Op::BlockRunning(0)).unwrap();
    smp.settle().unwrap();
    smp.check().unwrap();
    assert!((0..4).filter(|&k| k != 3).all(|k| !smp.is_waiting(k)));
}

/// Why a push continues past a top task without a target (Linux's `push_rt_task` gives
/// up there): CPU 0 runs `Rt(70)` with waiting `A = Rt(50)` on `{0,1}` (CPU 1 runs
/// `Rt(60)`) and `B = Rt(10)` on `{0,2}` (CPU 2 runs `Rt(20)`). Raising B to 40 must
/// push it to CPU 2 although A, the top pushable task, can go nowhere.
#[test]
fn push_continues_past_top_task_without_target() {
    let mut smp = Smp::new(3, false);
    let ops = [
        Op::New { rt_priority: 70, affinity: 0b001, cpu: 0 },
        Op::New { rt_priority: 60, affinity: 0b010, cpu: 1 },
        Op::New { rt_priority: 20, affinity: 0b100, cpu: 2 },
        Op::New { rt_priority: 50, affinity: 0b011, cpu: 0 },
        Op::New { rt_priority: 10, affinity: 0b101, cpu: 0 },
    ];
    for op in &ops {
        smp.apply(op).unwrap();
        smp.settle().unwrap();
        smp.check().unwrap();
    }
    assert_eq!(smp.tasks[3].state, TaskState::Queued { cpu: 0 });
    assert_eq!(smp.tasks[4].state, TaskState::Queued { cpu: 0 });
    assert!(smp.is_waiting(3) && smp.is_waiting(4));
    smp.apply(&Op::SetPrio(4, 40)).unwrap();
    smp.settle().unwrap();
    smp.check().unwrap();
    assert_eq!(smp.tasks[4].state, TaskState::Queued { cpu: 2 });
    assert_eq!(smp.running, [Some(0), Some(1), Some(4)]);
}
