//! Work conservation of the hierarchical load balancer (`cadence_sched::load_balance`),
//! checked by exhaustive state-space exploration (issue 61, item 6; Ipanema's "concurrent
//! work conservation", EuroSys 2020). docs/design/balancing.md states the model and results.
//!
//! **Machine.** Every topology shape of 2 to 8 CPUs whose domains have at most 3 levels
//! ([`shapes`]: nodes, LLCs per node, cores per LLC, SMT threads, NUMA distance tables), built
//! by `SchedDomains::build` exactly as the kernel builds them.
//!
//! **Tasks.** CPU hogs of weight 1024 (nice 0) with an affinity from a family of masks
//! ([`task_types`]). Tasks with equal affinity and weight are interchangeable (the balancer
//! never looks at a task's identity), so a CPU holds a multiset: its running task and its
//! waiting ones. What the balancer reads of a CPU is PELT's steady state for hogs:
//! `nr_running = h_nr_running` = its tasks, `load` = the sum of their weights (the
//! instantaneous-weight choice), `util` = 1024 if it has a task, `runnable` = 1024 per task,
//! `capacity` = 1024, a task's util its share of the CPU (1024 / tasks), never cache hot.
//!
//! **Events**, in every interleaving:
//! * wake: a task of any type becomes runnable on a CPU of its mask (its previous CPU: the
//!   worst placement for the balancer), if that CPU holds fewer than 3 tasks and the machine
//!   fewer than the task bound. Initial blocked tasks may have had any previous CPU, so this
//!   covers every wakeup; a fork (a child with the parent's mask on the parent's CPU) is such
//!   a wakeup too;
//! * block: the running task sleeps; the CPU runs any one of its waiting tasks, or, left
//!   with none, balances newly idle at once (`sched_balance_newidle`);
//! * preempt: the CPU switches to any one of its waiting tasks (which task runs matters: a
//!   running task cannot be pulled);
//! * balance: a CPU runs `sched_balance_rq` at one of its levels, as idle or busy. Intervals
//!   are abstracted away: any level may be due at any moment, which covers every timing of
//!   every CPU (busy CPUs' longer intervals included), and `should_we_balance` failing at a
//!   lower level of the same pass only skips levels a pass might not have reached anyway.
//!   The order `detach_tasks` sees the waiting tasks in is chosen both ways. An active
//!   balance runs at once (the stopper), and a CPU it leaves without tasks balances newly
//!   idle.
//!
//! State: every CPU's tasks, every domain's `nr_balance_failed` (saturated where further
//! failures change nothing) and every `sgc->imbalance` flag. Breadth-first search with a
//! visited set reaches every state.
//!
//! **Property** (work conservation over two balance intervals). For every reachable state
//! and every idle CPU `c` beside a waiting task allowed on `c` (a "wasted" CPU), no
//! execution of balance steps alone (no wake, block or preempt: nothing "affecting it")
//! keeps `c` wasted while every CPU idle at its start (and still idle) runs its balance at
//! every one of its levels twice. Busy CPUs may balance or not, in any order. Checked by a
//! search over (state, counts of each idle CPU's balances per level, 0..=2) from every
//! wasted state; a balance that leaves the state unchanged can be repeated and counts twice.
//!
//! `make test` runs the shapes of up to 4 CPUs (`work_conservation_small`); all shapes up to
//! 8 CPUs run under `#[ignore]` (`make test-wc-proof`). Both with Linux's logic as written
//! (which fails: the counterexample is printed) and with Cadence's idle fallback (which
//! holds).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::time::Instant;

use cadence_sched::load_balance::{
    sched_balance_newidle, sched_balance_rq, ActiveBalance, CpuIdleType, CpuStats, LbConfig, LbEnv, LbRunQueues, LbShared, LbTask,
    LbTopology, SdState, Verdict,
};
use cadence_sched::topology::{CpuTopo, MachineTopology, NodeDistances, SchedDomains};
use cadence_sched::CpuMask;

/// Tasks a wakeup may bring a CPU to.
const WAKE_BOUND: usize = 3;
/// Slots per CPU in a state (balancing may pile up more than `WAKE_BOUND`).
const MAXQ: usize = 8;
const MAXCPU: usize = 8;
const MAXLVL: usize = 3;
/// Nice 19: with one weight every load decision is the same up to rounding whatever the
/// weight, and a small one keeps the range where `nr_balance_failed` matters short.
const TASK_WEIGHT: u64 = 15;

/// A task type: its affinity (bit per CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TaskType {
    mask: u8,
}

/// One state. `q[c][0]` is CPU c's running task (type code, 0 = idle), `q[c][1..]` its
/// waiting tasks, sorted, zeros last.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct State {
    q: [[u8; MAXQ]; MAXCPU],
    nbf: [u8; MAXCPU * MAXLVL],
    imb: u64,
}

impl State {
    fn empty() -> State {
        State { q: [[0; MAXQ]; MAXCPU], nbf: [0; MAXCPU * MAXLVL], imb: 0 }
    }
    fn nr(&self, c: usize) -> usize {
        self.q[c].iter().filter(|&&t| t != 0).count()
    }
    fn waiting(&self, c: usize) -> impl Iterator<Item = u8> + '_ {
        self.q[c][1..].iter().copied().filter(|&t| t != 0)
    }
    fn total(&self, n: usize) -> usize {
        (0..n).map(|c| self.nr(c)).sum()
    }
    fn normalize(&mut self, c: usize) {
        let w = &mut self.q[c][1..];
        w.sort_unstable_by_key(|&t| if t == 0 { u8::MAX } else { t });
    }
    /// Adds a task of type `code` to CPU `c`: it runs if `c` was idle.
    fn push(&mut self, c: usize, code: u8) {
        if self.q[c][0] == 0 {
            self.q[c][0] = code;
        } else {
            let slot = self.q[c][1..].iter().position(|&t| t == 0).expect("MAXQ tasks on a CPU");
            self.q[c][1 + slot] = code;
            self.normalize(c);
        }
    }
    fn remove_waiting(&mut self, c: usize, code: u8) {
        let k = 1 + self.q[c][1..].iter().position(|&t| t == code).expect("waiting task");
        self.q[c][k] = 0;
        self.normalize(c);
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Wake { cpu: usize, ty: u8 },
    Block { cpu: usize, next: u8 },
    Preempt { cpu: usize, next: u8 },
    Balance { cpu: usize, level: usize, order: usize, failed: u8 },
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Event::Wake { cpu, ty } => write!(f, "wake type {ty} on cpu{cpu}"),
            Event::Block { cpu, next: 0 } => write!(f, "cpu{cpu}'s task blocks, cpu{cpu} balances newly idle"),
            Event::Block { cpu, next } => write!(f, "cpu{cpu}'s task blocks, cpu{cpu} runs type {next}"),
            Event::Preempt { cpu, next } => write!(f, "cpu{cpu} switches to type {next}"),
            Event::Balance { cpu, level, order, failed } => {
                write!(
                    f,
                    "cpu{cpu} balances domain{level} (nr_balance_failed {failed}, waiting tasks {})",
                    if order == 0 { "ascending" } else { "descending" }
                )
            }
        }
    }
}

struct Model {
    name: String,
    n: usize,
    topo: LbTopology,
    cfg: LbConfig,
    shared: LbShared,
    types: Vec<TaskType>,
    max_tasks: usize,
    levels: Vec<usize>,
    /// Per (cpu, level): `nr_balance_failed` beyond this changes nothing: above
    /// `cache_nice_tries + 2` an active balance is due either way, and `shr_bound` has shifted
    /// a task's load out (its util always fits: a local group with spare capacity has an idle
    /// CPU, so at least 1024 to take).
    nbf_cap: [u8; MAXCPU * MAXLVL],
    /// `nr_balance_failed` is not kept: every balance may find any value (0 to the cap). An
    /// over-approximation (every real sequence of values is one of them) that keeps it out of
    /// the state; newly idle balances and newly idle CPUs' counters then read 0.
    any_failed: bool,
}

/// The balancer's view of one state while a balance step runs.
struct Exec<'m> {
    m: &'m Model,
    st: State,
    /// 0: waiting tasks examined in ascending type order; 1: descending.
    order: usize,
    newidle: Vec<usize>,
    /// Counters the stopper reset (applied after the balancer's own updates).
    resets: Vec<usize>,
    /// Active balances asked for, run after the pass (the stopper).
    pushes: Vec<(usize, usize)>,
}

impl Exec<'_> {
    /// `active_load_balance_cpu_stop` on `src` for `dst`: the stopper preempts the running
    /// task and detaches the first task from the tail allowed on `dst` (a waiting one if any,
    /// else the one that ran), if `src` still has two (the stopper counts as one).
    fn stopper(&mut self, src: usize, dst: usize) {
        let curr = self.st.q[src][0];
        if curr == 0 || src == dst {
            return;
        }
        if let Some(w) = self.tail_first(src).into_iter().find(|&w| self.mask(w).contains(dst)) {
            self.st.remove_waiting(src, w);
            self.st.push(dst, w);
        } else if self.mask(curr).contains(dst) {
            let next = self.tail_first(src).first().copied();
            self.st.q[src][0] = 0;
            if let Some(next) = next {
                self.st.remove_waiting(src, next);
                self.st.q[src][0] = next;
            } else {
                self.newidle.push(src);
            }
            self.st.push(dst, curr);
        } else {
            return;
        }
        // "Active balancing done, reset the failure counter" of the target's lowest domain
        // spanning the source.
        if let Some(l) = self.m.topo.domains().domains(dst).iter().position(|sd| sd.span.contains(src)) {
            self.resets.push(dst * MAXLVL + l);
        }
    }

    fn tail_first(&self, c: usize) -> Vec<u8> {
        let mut w: Vec<u8> = self.st.waiting(c).collect();
        if self.order == 1 {
            w.reverse();
        }
        w
    }
    fn mask(&self, code: u8) -> CpuMask {
        CpuMask::from_u64(u64::from(self.m.types[code as usize - 1].mask))
    }
}

impl LbRunQueues for Exec<'_> {
    fn cpu_stats(&self, cpu: usize) -> CpuStats {
        let nr = self.st.nr(cpu) as u32;
        CpuStats {
            nr_running: nr,
            h_nr_running: nr,
            idle: nr == 0,
            load: TASK_WEIGHT * u64::from(nr),
            util: if nr > 0 { 1024 } else { 0 },
            runnable: 1024 * u64::from(nr),
            capacity: 1024,
        }
    }

    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        let (src, dst) = (env.src_cpu(), env.dst_cpu());
        let nr = self.st.nr(src) as u32;
        if !env.detach_start(nr) {
            return 0;
        }
        let share = 1024 / u64::from(nr.max(1));
        // cfs_tasks from the tail: the waiting tasks, then the running one (picked last, so
        // at the head).
        let mut list: Vec<(u8, bool)> = self.tail_first(src).into_iter().map(|t| (t, false)).collect();
        list.push((self.st.q[src][0], true));
        let mut moved = 0;
        for (code, running) in list {
            let mask = self.mask(code);
            let t = LbTask {
                cpus_allowed: &mask,
                running,
                cache_hot: false,
                throttled: false,
                per_cpu_kthread: false,
                sched_delayed: false,
                load: TASK_WEIGHT,
                util: share,
            };
            let v = env.consider(&t);
            if matches!(v, Verdict::Detach | Verdict::DetachStop) {
                self.st.remove_waiting(src, code);
                self.st.push(dst, code);
                moved += 1;
            }
            if matches!(v, Verdict::Stop | Verdict::DetachStop) {
                break;
            }
        }
        moved
    }

    fn active_balance(&mut self, src: usize, dst: usize) -> ActiveBalance {
        let curr = self.st.q[src][0];
        if curr == 0 || !self.mask(curr).contains(dst) {
            return ActiveBalance::CurrPinned;
        }
        // The stopper runs once this balance pass is over (`stop_one_cpu_nowait`).
        self.pushes.push((src, dst));
        ActiveBalance::Started
    }

    fn pull_waiting(&mut self, dst: usize, span: CpuMask) -> bool {
        let mut best: Option<(usize, u8)> = None;
        for c in span.without(dst).iter() {
            let Some(w) = self.tail_first(c).into_iter().find(|&w| self.mask(w).contains(dst)) else { continue };
            if best.is_none_or(|(b, _)| self.st.nr(c) > self.st.nr(b)) {
                best = Some((c, w));
            }
        }
        let Some((src, w)) = best else { return false };
        self.st.remove_waiting(src, w);
        self.st.push(dst, w);
        true
    }
}

impl Model {
    fn new(
        name: String,
        machine: &MachineTopology,
        types: Vec<TaskType>,
        max_tasks: usize,
        idle_fallback: bool,
        any_failed: bool,
    ) -> Model {
        let n = machine.nr_cpus();
        let topo = LbTopology::new(SchedDomains::build(machine));
        let mut cfg = LbConfig::new(n, 250);
        cfg.idle_fallback = idle_fallback;
        let shared = LbShared::new(&topo);
        assert!(topo.nr_sgc() <= 64);
        let levels = (0..n).map(|c| topo.domains().domains(c).len()).collect::<Vec<_>>();
        let bits = 64 - TASK_WEIGHT.leading_zeros();
        let mut nbf_cap = [0u8; MAXCPU * MAXLVL];
        for c in 0..n {
            for (l, sd) in topo.domains().domains(c).iter().enumerate() {
                nbf_cap[c * MAXLVL + l] = (sd.cache_nice_tries + 3).max(bits) as u8;
            }
        }
        Model { name, n, topo, cfg, shared, types, max_tasks, levels, nbf_cap, any_failed }
    }

    fn wasted(&self, st: &State, c: usize) -> bool {
        st.nr(c) == 0 && (0..self.n).any(|d| st.waiting(d).any(|w| self.types[w as usize - 1].mask & (1 << c) != 0))
    }

    fn load_shared(&self, st: &State) {
        for k in 0..self.topo.nr_sgc() {
            self.shared.set_imbalance(k, st.imb & (1 << k) != 0);
        }
    }

    fn store_shared(&self, st: &mut State) {
        st.imb = self.shared.snapshot().enumerate().fold(0, |a, (k, b)| a | (u64::from(b) << k));
    }

    fn states_of(&self, st: &State, cpu: usize) -> Vec<SdState> {
        (0..self.levels[cpu])
            .map(|l| SdState {
                balance_interval: self.topo.domains().domains(cpu)[l].min_interval,
                nr_balance_failed: u32::from(st.nbf[cpu * MAXLVL + l]),
                last_balance: 0,
                stats: Default::default(),
            })
            .collect()
    }

    fn save_states(&self, st: &mut State, cpu: usize, states: &[SdState], resets: &mut Vec<usize>) {
        for (l, s) in states.iter().enumerate() {
            let k = cpu * MAXLVL + l;
            st.nbf[k] = s.nr_balance_failed.min(u32::from(self.nbf_cap[k])) as u8;
        }
        for k in resets.drain(..) {
            st.nbf[k] = 0;
        }
    }

    /// Newly idle balance of `cpu` (and of every CPU an active balance empties meanwhile).
    /// Newly idle balance of `cpu`; `failed` (any-value mode) is its counters' value. CPUs an
    /// active balance empties later read theirs from the state (0 in that mode).
    fn run_newidle(&self, ex: &mut Exec<'_>, cpu: usize, failed: Option<u8>) {
        if ex.st.nr(cpu) != 0 {
            return;
        }
        let overloaded = (0..self.n).any(|d| ex.st.nr(d) >= 2);
        let mut states = self.states_of(&ex.st, cpu);
        if let Some(f) = failed {
            for (l, s) in states.iter_mut().enumerate() {
                s.nr_balance_failed = u32::from(f.min(self.nbf_cap[cpu * MAXLVL + l]));
            }
        }
        sched_balance_newidle(&self.topo, &self.cfg, &self.shared, cpu, overloaded, &mut states, ex);
        if !self.any_failed {
            let mut st = ex.st.clone();
            self.save_states(&mut st, cpu, &states, &mut ex.resets);
            ex.st.nbf = st.nbf;
        }
    }

    fn with_exec(&self, st: &State, order: usize, f: impl FnOnce(&mut Exec<'_>)) -> State {
        self.load_shared(st);
        let mut ex = Exec { m: self, st: st.clone(), order, newidle: Vec::new(), resets: Vec::new(), pushes: Vec::new() };
        f(&mut ex);
        let mut out = ex.st;
        self.store_shared(&mut out);
        out
    }

    fn balance(&self, st: &State, cpu: usize, level: usize, order: usize, failed: Option<u8>) -> State {
        self.with_exec(st, order, |ex| {
            let idle = if ex.st.nr(cpu) == 0 { CpuIdleType::Idle } else { CpuIdleType::NotIdle };
            let mut states = self.states_of(&ex.st, cpu);
            if let Some(f) = failed {
                states[level].nr_balance_failed = u32::from(f);
            }
            sched_balance_rq(&self.topo, &self.cfg, &self.shared, cpu, level, idle, &mut states[level], ex);
            let top = level + 1 == self.levels[cpu];
            if top && self.cfg.idle_fallback {
                let span = self.topo.domains().domains(cpu)[level].span;
                cadence_sched::load_balance::idle_fallback(&self.cfg, cpu, idle, span, ex);
            }
            if failed.is_none() {
                let mut s = ex.st.clone();
                self.save_states(&mut s, cpu, &states, &mut ex.resets);
                ex.st.nbf = s.nbf;
            }
            self.settle(ex);
        })
    }

    /// Runs the stoppers asked for, then the newly idle balances of the CPUs they emptied,
    /// until none is left.
    fn settle(&self, ex: &mut Exec<'_>) {
        let mut rounds = 0;
        loop {
            rounds += 1;
            assert!(rounds <= 4 * self.n + 4, "{}: active balances do not settle:{}", self.name, self.show(&ex.st));
            if let Some((src, dst)) = (!ex.pushes.is_empty()).then(|| ex.pushes.remove(0)) {
                ex.stopper(src, dst);
                let mut s = ex.st.clone();
                for k in ex.resets.drain(..) {
                    s.nbf[k] = 0;
                }
                ex.st.nbf = s.nbf;
                continue;
            }
            let Some(c) = ex.newidle.pop() else { break };
            self.run_newidle(ex, c, None);
        }
    }

    fn orders(&self, st: &State) -> usize {
        // Both orders matter only where some CPU waits with two different types.
        if (0..self.n).any(|c| {
            let w: Vec<u8> = st.waiting(c).collect();
            w.windows(2).any(|p| p[0] != p[1])
        }) {
            2
        } else {
            1
        }
    }

    fn successors(&self, st: &State, out: &mut Vec<(State, Event)>) {
        out.clear();
        let total = st.total(self.n);
        for cpu in 0..self.n {
            if total < self.max_tasks && st.nr(cpu) < WAKE_BOUND {
                for (k, t) in self.types.iter().enumerate() {
                    if t.mask & (1 << cpu) != 0 {
                        let mut s = st.clone();
                        s.push(cpu, k as u8 + 1);
                        out.push((s, Event::Wake { cpu, ty: k as u8 + 1 }));
                    }
                }
            }
            let curr = st.q[cpu][0];
            if curr != 0 {
                let mut nexts: Vec<u8> = st.waiting(cpu).collect();
                nexts.dedup();
                if nexts.is_empty() {
                    let fs: Vec<Option<u8>> = if self.any_failed {
                        (0..=self.nbf_cap.iter().copied().max().unwrap_or(0)).map(Some).collect()
                    } else {
                        vec![None]
                    };
                    for order in 0..self.orders(st) {
                        for &f in &fs {
                            let mut s = st.clone();
                            s.q[cpu][0] = 0;
                            let s = self.with_exec(&s, order, |ex| {
                                self.run_newidle(ex, cpu, f);
                                self.settle(ex);
                            });
                            out.push((s, Event::Block { cpu, next: 0 }));
                        }
                    }
                }
                for &next in &nexts {
                    let mut s = st.clone();
                    s.remove_waiting(cpu, next);
                    s.q[cpu][0] = next;
                    out.push((s.clone(), Event::Block { cpu, next }));
                    if next != curr {
                        s.push(cpu, curr);
                        out.push((s, Event::Preempt { cpu, next }));
                    }
                }
            }
        }
        self.balance_successors(st, out);
    }

    fn balance_successors(&self, st: &State, out: &mut Vec<(State, Event)>) {
        let orders = self.orders(st);
        for cpu in 0..self.n {
            for level in 0..self.levels[cpu] {
                for order in 0..orders {
                    if self.any_failed {
                        let first = out.len();
                        for f in 0..=self.nbf_cap[cpu * MAXLVL + level] {
                            let s = self.balance(st, cpu, level, order, Some(f));
                            if !out[first..].iter().any(|(t, _)| *t == s) {
                                out.push((s, Event::Balance { cpu, level, order, failed: f }));
                            }
                        }
                    } else {
                        let failed = st.nbf[cpu * MAXLVL + level];
                        out.push((self.balance(st, cpu, level, order, None), Event::Balance { cpu, level, order, failed }));
                    }
                }
            }
        }
    }

    fn show(&self, st: &State) -> String {
        let mut s = String::new();
        for c in 0..self.n {
            let name = |code: u8| {
                let m = self.types[code as usize - 1].mask;
                if m == ((1u16 << self.n) - 1) as u8 {
                    "*".to_string()
                } else {
                    format!("{{{}}}", CpuMask::from_u64(u64::from(m)).to_list())
                }
            };
            let run = if st.q[c][0] == 0 { "idle".to_string() } else { name(st.q[c][0]) };
            let wait: Vec<String> = st.waiting(c).map(name).collect();
            let _ = write!(s, " cpu{c}:[{run}{}{}]", if wait.is_empty() { "" } else { " | " }, wait.join(" "));
        }
        let nbf: Vec<String> = (0..self.n)
            .flat_map(|c| (0..self.levels[c]).map(move |l| (c, l)))
            .filter(|&(c, l)| st.nbf[c * MAXLVL + l] != 0)
            .map(|(c, l)| format!("cpu{c}/{l}={}", st.nbf[c * MAXLVL + l]))
            .collect();
        if !nbf.is_empty() {
            let _ = write!(s, " nr_balance_failed {}", nbf.join(","));
        }
        if st.imb != 0 {
            let _ = write!(s, " sgc_imbalance {:#x}", st.imb);
        }
        s
    }
}

/// A window's steps.
type Window = Vec<(Event, State)>;
/// A machine's domains per CPU: span, groups (span and balance mask), flags.
type Signature = Vec<Vec<(u64, Vec<u64>, u32)>>;

/// The result of one model's exploration.
struct Report {
    states: usize,
    wasted_states: usize,
    counterexample: Option<String>,
}

/// Coverage: 2 bits per (cpu, level), the balances run so far (0..=2) in a window.
fn cov_get(cov: u64, k: usize) -> u64 {
    (cov >> (2 * k)) & 3
}
fn cov_set(cov: u64, k: usize, v: u64) -> u64 {
    (cov & !(3 << (2 * k))) | (v << (2 * k))
}

impl Model {
    /// Marks what a window from `x` no longer needs: CPUs that are busy, and (cpu, level)
    /// pairs of idle CPUs whose balance leaves `x` unchanged (repeatable at will).
    fn saturate(&self, x: &State, cov: u64, selfloops: &[usize]) -> u64 {
        let mut cov = cov;
        for c in 0..self.n {
            for l in 0..self.levels[c] {
                let k = c * MAXLVL + l;
                if x.nr(c) != 0 || selfloops.contains(&k) {
                    cov = cov_set(cov, k, 2);
                }
            }
        }
        cov
    }

    fn complete(&self, cov: u64) -> bool {
        (0..self.n).all(|c| (0..self.levels[c]).all(|l| cov_get(cov, c * MAXLVL + l) == 2))
    }

    /// Searches balance-only executions from `s0` keeping `c` wasted until every idle CPU
    /// balanced each level twice. Returns the window's events if one exists.
    fn window(&self, s0: &State, c: usize, memo: &mut HashMap<State, Vec<(State, Event)>>) -> Option<Vec<(Event, State)>> {
        let mut seen: HashSet<(State, u64)> = HashSet::new();
        let mut stack: Vec<(State, u64, Window)> = vec![(s0.clone(), 0, Vec::new())];
        while let Some((x, cov, path)) = stack.pop() {
            let succ = memo
                .entry(x.clone())
                .or_insert_with(|| {
                    let mut v = Vec::new();
                    self.balance_successors(&x, &mut v);
                    v
                })
                .clone();
            let selfloops: Vec<usize> = succ
                .iter()
                .filter(|(y, _)| *y == x)
                .map(|(_, e)| match e {
                    Event::Balance { cpu, level, .. } => cpu * MAXLVL + level,
                    _ => unreachable!(),
                })
                .collect();
            let cov = self.saturate(&x, cov, &selfloops);
            if self.complete(cov) {
                return Some(path);
            }
            if !seen.insert((x.clone(), cov)) {
                continue;
            }
            for (y, e) in succ {
                if y == x || !self.wasted(&y, c) {
                    continue;
                }
                let Event::Balance { cpu, level, .. } = e else { unreachable!() };
                let k = cpu * MAXLVL + level;
                let ncov = if x.nr(cpu) == 0 { cov_set(cov, k, (cov_get(cov, k) + 1).min(2)) } else { cov };
                let mut p = path.clone();
                p.push((e, y.clone()));
                stack.push((y, ncov, p));
            }
        }
        None
    }

    fn explore(&self) -> Report {
        let mut index: HashMap<State, u32> = HashMap::new();
        let mut nodes: Vec<(State, u32, Option<Event>)> = Vec::new();
        let init = State::empty();
        index.insert(init.clone(), 0);
        nodes.push((init, 0, None));
        let mut queue = VecDeque::from([0u32]);
        let mut succ = Vec::new();
        while let Some(i) = queue.pop_front() {
            let st = nodes[i as usize].0.clone();
            self.successors(&st, &mut succ);
            for (s, e) in succ.drain(..) {
                if !index.contains_key(&s) {
                    let j = nodes.len() as u32;
                    index.insert(s.clone(), j);
                    nodes.push((s, i, Some(e)));
                    queue.push_back(j);
                }
            }
        }
        if std::env::var_os("WC_VERBOSE").is_some() {
            eprintln!("  {}: {} states reached", self.name, nodes.len());
        }
        let mut memo = HashMap::new();
        let mut wasted_states = 0;
        for (i, (st, _, _)) in nodes.iter().enumerate() {
            for c in 0..self.n {
                if !self.wasted(st, c) {
                    continue;
                }
                wasted_states += 1;
                if let Some(window) = self.window(st, c, &mut memo) {
                    return Report { states: nodes.len(), wasted_states, counterexample: Some(self.trace(&nodes, i, c, &window)) };
                }
            }
        }
        Report { states: nodes.len(), wasted_states, counterexample: None }
    }

    fn trace(&self, nodes: &[(State, u32, Option<Event>)], i: usize, c: usize, window: &[(Event, State)]) -> String {
        let mut steps = Vec::new();
        let mut k = i;
        while let (st, parent, Some(e)) = &nodes[k] {
            steps.push((*e, st.clone()));
            k = *parent as usize;
        }
        steps.reverse();
        let mut s = format!("{}: cpu{c} stays idle beside a task it may run\n", self.name);
        for (k, sd) in self.topo.domains().domains(c).iter().enumerate() {
            let groups: Vec<String> = self.topo.domains().groups_of(sd).map(|g| format!("{{{}}}", g.span.to_list())).collect();
            let _ = writeln!(s, "  cpu{c} domain{k} {} span {} groups {}", sd.name, sd.span.to_list(), groups.join(","));
        }
        for (e, st) in &steps {
            let _ = writeln!(s, "  {e}:{}", self.show(st));
        }
        let _ = writeln!(s, "  wasted; then, balancing only (each idle CPU twice at every level, the rest repeat without effect):");
        for (e, st) in window {
            let _ = writeln!(s, "  {e}:{}", self.show(st));
        }
        s
    }
}

/// One machine shape.
struct Shape {
    name: String,
    machine: MachineTopology,
}

/// Every shape of 2..=8 CPUs with at most 3 domain levels: 1–4 nodes (for 3 and 4 nodes every
/// distance table from {20, 30} up to renumbering), 1–2 LLCs (packages) per node, 1–4 cores
/// per LLC, 1–2 threads per core; shapes whose domains coincide are kept once.
fn shapes(max_cpus: usize) -> Vec<Shape> {
    let mut out: Vec<Shape> = Vec::new();
    let mut seen: Vec<Signature> = Vec::new();
    for nodes in 1..=4usize {
        let tables: Vec<Vec<u8>> = match nodes {
            1 | 2 => vec![Vec::new()],
            _ => {
                let pairs: Vec<(usize, usize)> = (0..nodes).flat_map(|a| (a + 1..nodes).map(move |b| (a, b))).collect();
                (0..1u32 << pairs.len())
                    .map(|bits| {
                        let mut t = vec![10u8; nodes * nodes];
                        for (k, &(a, b)) in pairs.iter().enumerate() {
                            let d = if bits >> k & 1 == 1 { 30 } else { 20 };
                            t[a * nodes + b] = d;
                            t[b * nodes + a] = d;
                        }
                        t
                    })
                    .collect()
            }
        };
        for table in tables {
            let dist = if nodes <= 2 { NodeDistances::without_slit(nodes) } else { NodeDistances::try_from_matrix(nodes, &table).unwrap() };
            for llcs in 1..=2u32 {
                for cores in 1..=4u32 {
                    for threads in 1..=2u32 {
                        let n = nodes * (llcs * cores * threads) as usize;
                        if !(2..=max_cpus).contains(&n) {
                            continue;
                        }
                        let mut cpus = Vec::new();
                        for node in 0..nodes as u32 {
                            for l in 0..llcs {
                                for c in 0..cores {
                                    for t in 0..threads {
                                        let package = node * llcs + l;
                                        cpus.push(CpuTopo { package, core: c, thread: t, llc: package, l2: None, node });
                                    }
                                }
                            }
                        }
                        let Ok(machine) = MachineTopology::new(cpus, dist.clone()) else { continue };
                        let d = SchedDomains::build(&machine);
                        if (0..n).any(|c| d.domains(c).len() > MAXLVL) {
                            continue;
                        }
                        let sig: Vec<Vec<(u64, Vec<u64>, u32)>> = (0..n)
                            .map(|c| {
                                d.domains(c)
                                    .iter()
                                    .map(|sd| {
                                        (
                                            sd.span.low_u64(),
                                            d.groups_of(sd).map(|g| g.span.low_u64() | g.balance_mask.low_u64() << 8).collect(),
                                            sd.flags.bits(),
                                        )
                                    })
                                    .collect()
                            })
                            .collect();
                        if seen.contains(&sig) {
                            continue;
                        }
                        seen.push(sig);
                        let t = if nodes >= 3 { format!(" slit {:?}", table) } else { String::new() };
                        out.push(Shape {
                            name: format!("{nodes} node(s) x {llcs} LLC x {cores} core(s) x {threads} thread(s){t}"),
                            machine,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The affinity family for `n` CPUs, most telling first (a scope keeps the first few): every
/// CPU; CPU 0 alone; CPU 0 and the first CPU outside its lowest group (a mask across groups,
/// as in fair.c's `sg_imbalanced` example); CPU 0's lowest group; the last CPU alone; then
/// every other single CPU, group span and crossing pair. For up to 3 CPUs, every mask.
fn task_types(d: &SchedDomains) -> Vec<TaskType> {
    let n = d.nr_cpus();
    let all = ((1u16 << n) - 1) as u8;
    let lowest = |c: usize| d.domains(c).first().map_or(CpuMask::single(c), |sd| d.group(sd.groups[0]).span);
    let mut masks: Vec<u8> = vec![all, 1];
    if let Some(b) = (1..n).find(|&b| !lowest(0).contains(b)) {
        masks.push(1 | 1 << b);
    }
    masks.push(lowest(0).low_u64() as u8);
    masks.push(1 << (n - 1));
    if n <= 3 {
        masks.extend(1..all);
    } else {
        masks.extend((0..n).map(|c| 1u8 << c));
        for c in 0..n {
            for sd in d.domains(c) {
                masks.extend(d.groups_of(sd).map(|g| g.span.low_u64() as u8));
            }
        }
        for a in 0..n {
            for b in a + 1..n {
                if !lowest(a).contains(b) {
                    masks.push(1 << a | 1 << b);
                }
            }
        }
    }
    let mut seen = Vec::new();
    masks.retain(|m| {
        !seen.contains(m) && {
            seen.push(*m);
            true
        }
    });
    masks.into_iter().map(|mask| TaskType { mask }).collect()
}

/// Runs every shape of up to `max_cpus` CPUs with at most `tasks(n)` runnable tasks and the
/// affinity family limited to `max_types` (the first ones: every CPU, single CPUs, spans,
/// crossing pairs). Returns the counterexamples found and a summary.
fn run(max_cpus: usize, tasks: impl Fn(usize) -> usize, max_types: usize, idle_fallback: bool, any_failed: bool) -> (Vec<String>, String) {
    run_shapes(max_cpus, std::env::var("WC_SHAPE").ok(), tasks, max_types, idle_fallback, any_failed)
}

fn run_shapes(
    max_cpus: usize,
    filter: Option<String>,
    tasks: impl Fn(usize) -> usize,
    max_types: usize,
    idle_fallback: bool,
    any_failed: bool,
) -> (Vec<String>, String) {
    let start = Instant::now();
    let mut failures = Vec::new();
    let mut summary = String::new();
    let (mut total_states, mut total_wasted) = (0, 0);
    let shapes: Vec<Shape> = shapes(max_cpus).into_iter().filter(|s| filter.as_ref().is_none_or(|f| s.name.contains(f.as_str()))).collect();
    for shape in &shapes {
        let n = shape.machine.nr_cpus();
        let d = SchedDomains::build(&shape.machine);
        let mut types = task_types(&d);
        types.truncate(max_types);
        let t0 = Instant::now();
        let m = Model::new(shape.name.clone(), &shape.machine, types, tasks(n), idle_fallback, any_failed);
        let r = m.explore();
        total_states += r.states;
        total_wasted += r.wasted_states;
        eprintln!(
            "{:<60} {} CPUs {} types {} tasks: {} states, {} wasted, {:.2}s",
            shape.name,
            n,
            m.types.len(),
            m.max_tasks,
            r.states,
            r.wasted_states,
            t0.elapsed().as_secs_f64()
        );
        let _ = writeln!(
            summary,
            "{:<60} {} CPUs {} types {} tasks: {} states, {} wasted, {:.2}s{}",
            shape.name,
            n,
            m.types.len(),
            m.max_tasks,
            r.states,
            r.wasted_states,
            t0.elapsed().as_secs_f64(),
            if r.counterexample.is_some() { " COUNTEREXAMPLE" } else { "" }
        );
        if let Some(c) = r.counterexample {
            failures.push(c);
        }
    }
    let _ = writeln!(
        summary,
        "{} shapes, {total_states} states, {total_wasted} wasted (state, CPU) pairs checked, {:.1}s",
        shapes.len(),
        start.elapsed().as_secs_f64()
    );
    (failures, summary)
}

/// Linux's logic as written leaves an idle CPU beside a waiting task it may run on some
/// small machine: the counterexample is printed (docs/design/balancing.md explains it).
#[test]
fn linux_as_written_is_not_work_conserving() {
    let (failures, summary) = run_shapes(3, Some("1 node(s) x 1 LLC x 3 core(s)".into()), |n| n + 1, 8, false, false);
    println!("{summary}");
    assert!(!failures.is_empty(), "expected a counterexample");
    println!("{}", failures[0]);
}

/// With Cadence's idle fallback the property holds on every shape of up to 4 CPUs.
#[test]
fn work_conservation_small() {
    let (failures, summary) = run(4, |n| n + 1, 2, true, true);
    println!("{summary}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every shape of up to 8 CPUs (`make test-wc-proof`).
#[test]
#[ignore]
fn work_conservation_full() {
    let (failures, summary) = run(8, |n| (n + 1).min(6), 3, true, true);
    println!("{summary}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A chosen scope from the environment: `WC_CPUS`, `WC_TASKS` (beyond the CPUs), `WC_TYPES`,
/// `WC_LINUX` (set: Linux as written).
#[test]
#[ignore]
fn work_conservation_scope() {
    let var = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let extra = var("WC_TASKS", 1);
    let max = var("WC_MAX_TASKS", 99);
    let (failures, summary) = run(
        var("WC_CPUS", 4),
        |n| (n + extra).min(max),
        var("WC_TYPES", 6),
        std::env::var_os("WC_LINUX").is_none(),
        std::env::var_os("WC_EXACT").is_none(),
    );
    println!("{summary}");
    for f in &failures {
        println!("{f}");
    }
    assert!(failures.is_empty());
}

/// Shapes are distinct and within bounds.
#[test]
fn shapes_enumerated() {
    let s = shapes(8);
    assert!(s.len() > 10, "{}", s.len());
    for shape in &s {
        let d = SchedDomains::build(&shape.machine);
        assert!((0..shape.machine.nr_cpus()).all(|c| d.domains(c).len() <= MAXLVL));
    }
}
