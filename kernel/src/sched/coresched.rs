//! SMT core scheduling (Linux 5.14's `CONFIG_SCHED_CORE`): tasks carry cookies, and SMT
//! siblings never run tasks with different cookies at the same time.
//!
//! **Cookies**: `Task::core_cookie` holds a [`CookieId`] from the global [`COOKIES`] registry
//! (refcounted; 0 = no cookie, what kernel threads and the idle task have). Inherited at spawn,
//! released at exit. Set with [`prctl`] (`PR_SCHED_CORE` GET / CREATE / SHARE_TO / SHARE_FROM
//! over PIDTYPE_PID / TGID / PGID, Linux's checks and errno, in `cadence_sched::core_sched`).
//!
//! **Core-wide pick**: while cookies are in play on a core (`kernel.sched_core=1` and a task
//! with a cookie is queued on one of the core's CPUs — [`active`]), every
//! `schedule()` on that core locks *all* the siblings' run queues and picks for the whole core
//! (`cadence_sched::core_sched::pick_core`): the core-wide highest-priority task, then for each
//! sibling its best task with the same cookie, or forced idle. Siblings whose current task no
//! longer fits get a reschedule IPI.
//!
//! **The invariant** ("no two siblings run tasks with different cookies", the strict model of
//! Documentation/admin-guide/hw-vuln/core-scheduling.rst; the idle task matches everything):
//! a CPU switches to a task only after checking, with every sibling's run-queue lock held,
//! that each sibling's *current* task is idle or has the same cookie. If one does not, the CPU
//! runs idle (forced) meanwhile, marks itself waiting and kicks that sibling; the sibling's next
//! switch kicks the waiter back. A sibling's current task can change only in its own
//! `schedule()`, which (on an active core) needs our lock too; on a core that looks inactive a
//! CPU may pick alone, but whoever makes the core active by starting a cookied task checks the
//! others' current tasks first, and a running cookied task keeps its core active (it is
//! counted in `nr_cookied` without a gap, see [`active`]). So an overlap never starts.
//! Picking alone never starts a cookied task ([`check_alone_pick`] counts it if it did).
//!
//! **Lock order** (extends `sched`'s): the run-queue locks of a core's siblings are taken in
//! ascending CPU id ([`lock_core`]); a CPU holding only its own lock releases it before taking
//! the core's. The cookie registry (a `SpinLock`: interrupts stay on) comes before a task's
//! `params` lock ([`exit`]) and is never taken under a lock that interrupt handlers take.
//!
//! **Forced idle** is accounted per CPU (`Rq::forced_idle_ns`, shown by `coresched stat`) and
//! charged to the cookied tasks that ran on the siblings meanwhile
//! (`Task::core_forceidle_ns`, Linux's `forceidle_sum`), and traced (`sched_core_force_idle`).

use super::rqlock::RqGuard;
use super::task::{Task, Tid};
use super::{rq_of, set_need_resched, RqInner};
use crate::percpu::{self, PerCpu};
use crate::sync::SpinLock;
use alloc::sync::Arc;
use alloc::vec::Vec;
use arrayvec::ArrayVec;
use cadence_cmdline::BootParam;
use cadence_sched::core_sched::{self as policy, Candidate, CookieId, CookieRegistry, Pick, PrctlOutcome, Rank};
use cadence_sched::{CpuMask, Errno};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The cookie registry. A [`SpinLock`]: no interrupt handler touches cookies, and `prctl`
/// allocates under it (its task lists, the registry's entries), which must not happen with
/// interrupts off (`mm::atomic_alloc`'s contract; `bench coresched` counted 133 such
/// allocations while this was an `IrqLock`). Because it leaves interrupts on, it is taken
/// *before* any lock an interrupt handler takes (a task's `params`: [`exit`]), never under one.
pub static COOKIES: SpinLock<CookieRegistry> = SpinLock::new(CookieRegistry::new());
/// Live cookies (lock-free copy of the registry's count).
static LIVE: AtomicU64 = AtomicU64::new(0);
/// `kernel.sched_core`.
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Distinct cookies a CPU offers the core-wide pick (`CandidateList`'s room): the best task
/// of each, over all classes. More cookies than this on one CPU at once may force a sibling
/// idle although a compatible task was runnable there (counted: [`dropped_candidates`]).
pub const MAX_COOKIES_PER_CPU: usize = 24;

/// Most SMT threads per core that core scheduling handles (a core with more has it off: its
/// CPUs count as having no siblings, see [`siblings`]).
pub const MAX_SMT: usize = 8;

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// `kernel.sched_core=0|1` (boot: `nosmt_sched` turns it off).
/// Boot options (`cmdline`).
pub static BOOT_PARAMS: &[BootParam] = &[BootParam {
    usage: "nosmt_sched",
    help: "start with core scheduling off (kernel.sched_core=0)",
    set: |_| {
        set_enabled(false);
        Ok(())
    },
}];

pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
    // Re-evaluate every CPU: waiting or forced-idle CPUs may run again.
    for cpu in percpu::online_cpus() {
        set_need_resched(cpu.cpu_id);
    }
}

fn sync_live(reg: &CookieRegistry) {
    LIVE.store(reg.live() as u64, Ordering::SeqCst);
}

/// Are cookies in play anywhere (a switch then kicks siblings waiting for it)?
pub fn cookies_exist() -> bool {
    LIVE.load(Ordering::Relaxed) > 0
}

/// The SMT siblings of `cpu` (itself included).
pub fn siblings(cpu: u32) -> CpuMask {
    let sib = super::balance::smt_siblings(cpu).unwrap_or(CpuMask::single(cpu as usize)) & super::online_mask();
    if sib.count() > MAX_SMT as u32 {
        CpuMask::single(cpu as usize)
    } else {
        sib
    }
}

/// Does any online CPU have an SMT sibling? (prctl fails with ENODEV otherwise.)
pub fn smt_present() -> bool {
    percpu::online_cpus().any(|c| siblings(c.cpu_id).count() > 1)
}

/// Must `schedule()` on `cpu` pick for the whole core?
///
/// Lock-free: it reads the siblings' queued-cookie counts (`Rq::nr_cookied`) without their
/// locks. That is sound because a running cookied task is always counted on its CPU — even
/// while `requeue_locked` takes it off and back on its queue (it holds an extra count) — so a
/// CPU that sees 0 everywhere has no cookied task running beside it. (Not `LIVE`: the
/// registry may drop a cookie before the tasks holding it have been switched off it.)
pub fn active(cpu: &PerCpu) -> bool {
    if !enabled() {
        return false;
    }
    let sib = siblings(cpu.cpu_id);
    sib.count() > 1 && sib.iter().any(|c| rq_of(c as u32).nr_cookied.load(Ordering::SeqCst) > 0)
}

/// The run-queue guards of a core's other siblings (at most [`MAX_SMT`] − 1, no heap).
pub type SiblingGuards = ArrayVec<(u32, RqGuard<'static, RqInner>), MAX_SMT>;

/// Locks every sibling's run queue of `cpu`'s core, in ascending CPU order. Returns this CPU's
/// guard; the others' go to `others` (empty on entry). Interrupts must already be disabled.
#[inline(never)]
pub fn lock_core(cpu: u32, others: &mut SiblingGuards) -> RqGuard<'static, RqInner> {
    let mut mine = None;
    for c in siblings(cpu).iter() {
        let c = c as u32;
        let g = rq_of(c).lock.lock();
        if c == cpu {
            mine = Some(g);
        } else {
            // `siblings` never names more than MAX_SMT CPUs: this cannot fail.
            let _ = others.try_push((c, g));
        }
    }
    mine.unwrap_or_else(|| rq_of(cpu).lock.lock())
}

/// `core_cookie_pending` when no change is pending.
pub const NO_PENDING: u64 = u64::MAX;

/// The cookie the scheduler uses for `t` now.
pub fn cookie_of(t: &Task) -> CookieId {
    CookieId(t.core_cookie.load(Ordering::Acquire))
}

/// The cookie `t` has as far as `prctl` is concerned (a pending change counts).
pub fn logical_cookie(t: &Task) -> CookieId {
    match t.core_cookie_pending.load(Ordering::Acquire) {
        NO_PENDING => cookie_of(t),
        c => CookieId(c),
    }
}

/// Does `t` (the running task of its CPU) have a cookie change waiting?
pub fn has_pending(t: &Task) -> bool {
    t.core_cookie_pending.load(Ordering::Acquire) != NO_PENDING
}

/// Applies `prev`'s pending cookie change (in `schedule()`, its CPU's — and, with SMT, its
/// core's — run-queue locks held), keeping the queued-cookie count right. True if it changed.
///
/// The effective cookie is written *before* the pending one is cleared: a `prctl` reading the
/// task's logical cookie ([`logical_cookie`], under the registry lock but not ours) in between
/// must see the new cookie, which holds the task's reference. Clearing first let it read the
/// old one (whose reference had moved) and drop it a second time, leaking the new one.
pub(super) fn apply_pending(prev: &Task, cpu: u32) -> bool {
    let new = prev.core_cookie_pending.load(Ordering::Acquire);
    if new == NO_PENDING {
        return false;
    }
    let old = prev.core_cookie.swap(new, Ordering::AcqRel);
    // A `prctl` since the load recorded a newer change (and moved the reference on): it stays
    // pending, for the next switch.
    let _ = prev.core_cookie_pending.compare_exchange(new, NO_PENDING, Ordering::AcqRel, Ordering::Acquire);
    if prev.is_on_rq() && !prev.is_idle {
        let n = &rq_of(cpu).nr_cookied;
        if old != 0 {
            n.fetch_sub(1, Ordering::SeqCst);
        }
        if new != 0 {
            n.fetch_add(1, Ordering::SeqCst);
        }
    }
    old != new
}

/// Candidates of one CPU for the core-wide pick: the best task of each cookie
/// (`cadence_sched::core_sched::CandidateList`, in fixed storage: the pick runs under run-queue
/// locks, no heap).
pub type CandList = policy::CandidateList<Tid, MAX_COOKIES_PER_CPU>;

/// The candidate lists of [`pick`], one per sibling: ~10 KiB, too much for the stack of a
/// `schedule()` called from an interrupt's exit on a 16 KiB task stack. One set per run queue
/// (`RqInner::core_lists`), allocated at boot.
pub fn new_core_lists() -> alloc::boxed::Box<[CandList]> {
    alloc::vec![CandList::new(); MAX_SMT].into_boxed_slice()
}

/// Candidate lists that ran out of room (see [`MAX_COOKIES_PER_CPU`]).
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// How many times a CPU's candidate list ran out of room in a core-wide pick (0 unless more
/// than [`MAX_COOKIES_PER_CPU`] cookies were queued on one CPU at once); `coresched stat`
/// shows it.
pub fn dropped_candidates() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Runnable tasks of one run queue into `out`, best first (`CandidateList::offer`'s
/// contract): deadline tasks by absolute deadline, RT by priority then FIFO, fair tasks in
/// the order this CPU's fair class would run them (`fair_group::for_each_candidate_at`, keys
/// comparable across siblings).
///
/// `forced`: a sibling of the core is forced idle now. The fair keys are then relative to
/// the root queue's `V` as it was at the first pick of the forced-idle stretch
/// (`RqInner::core_fi_v`, Linux's `min_vruntime_fi` in `cfs_prio_less`), otherwise to `V`
/// now. A fixed base lets the waiting cookie catch up: what runs on the busy sibling pushes
/// its keys up. With `V` now the running task's key stays under a slice while a lone task
/// waiting on the forced-idle sibling keeps its whole slice and lost every pick: a pipe task
/// woken on the sibling of a CPU running a CPU hog of another cookie waited 70 to 190 ms
/// (`coresched-bench`'s pipe+cpu, traced; docs/results/2026-12-05-coresched-user.md).
fn candidates(g: &mut RqInner, out: &mut CandList, forced: bool) {
    out.clear();
    let base = if forced {
        if g.core_fi_v.is_none() {
            g.core_fi_v = cadence_sched::fair_group::root_avg_vruntime(&*g);
        }
        g.core_fi_v
    } else {
        g.core_fi_v = None;
        None
    };
    let g = &*g;
    // Offers a task (gone from the table: skipped); false once the list is full.
    let mut offer = |tid: Tid, rank: Rank| g.tasks.get(&tid).is_none_or(|t| out.offer(Candidate { task: tid, rank, cookie: cookie_of(t) }));
    let dl = g.dl.iter().map(|(deadline, tid)| (tid, Rank::Dl { deadline }));
    let rt = g.rt.iter().filter(|_| !g.rt_bw.throttled).map(|(tid, prio)| (tid, Rank::Rt { rt_priority: prio }));
    if dl.chain(rt).all(|(tid, rank)| offer(tid, rank)) {
        cadence_sched::fair_group::for_each_candidate_at(g, base, |key, rank| match key {
            super::SeKey::Task(tid) => offer(tid, Rank::Fair { key: rank }),
            super::SeKey::Group(_) => true,
        });
    }
    if out.dropped() > 0 {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

fn compatible(a: &Task, cookie: CookieId) -> bool {
    a.is_idle || cookie_of(a) == cookie
}

/// The core-wide pick for `cpu` (all sibling locks held). Returns the task this CPU runs
/// (its idle task when forced idle or waiting) and whether it is *forced* idle.
#[inline(never)]
pub(super) fn pick(cpu: u32, g: &mut RqInner, others: &mut [(u32, RqGuard<'static, RqInner>)]) -> (Arc<Task>, bool) {
    let idle = g.idle.clone().expect("idle task exists");
    // Siblings in CPU order, with this CPU's index.
    let mut order: ArrayVec<u32, MAX_SMT> = others.iter().map(|(c, _)| *c).collect();
    let _ = order.try_push(cpu);
    order.sort_unstable();
    let this = order.iter().position(|&c| c == cpu).unwrap_or(0);
    // Taken out of the run queue for the pick (a pointer move) and put back at the end.
    let mut lists = core::mem::take(&mut g.core_lists);
    if lists.len() < MAX_SMT {
        lists = new_core_lists(); // lost to a panic in an earlier pick: cannot happen
    }
    // Is the core forced idle now (from an earlier pick)? Then the fair keys count from
    // the stretch's snapshot (see `candidates`).
    let forced = g.forced_since != 0 || others.iter().any(|(_, og)| og.forced_since != 0);
    for (list, &c) in lists.iter_mut().zip(order.iter()) {
        if c == cpu {
            candidates(g, list, forced);
        } else if let Some((_, og)) = others.iter_mut().find(|(o, _)| *o == c) {
            candidates(og, list, forced);
        } else {
            list.clear();
        }
    }
    let n = order.len();
    let mut picks = [Pick::Idle; MAX_SMT];
    policy::pick_core_into(&lists[..n], this, &mut picks[..n]);
    g.core_lists = lists;
    // Each CPU's pick learns how full the core is to be (for `steal_cookie_task`), and
    // siblings whose current task no longer fits the core's choice must reschedule.
    let occupation = picks[..n].iter().filter(|p| matches!(p, Pick::Task(_))).count() as u8;
    // The core's cookie now: every task picked has it (0 if none was).
    let mut core_cookie = 0;
    for (i, &c) in order.iter().enumerate() {
        let q: &mut RqInner = if c == cpu {
            &mut *g
        } else if let Some((_, og)) = others.iter_mut().find(|(o, _)| *o == c) {
            &mut *og
        } else {
            continue;
        };
        let wanted = match picks[i] {
            Pick::Task(tid) => {
                if let Some(t) = q.tasks.get(&tid) {
                    t.core_occupation.store(occupation, Ordering::Relaxed);
                    core_cookie = cookie_of(t).0;
                }
                tid
            }
            _ => {
                q.idle_occupation = occupation;
                0
            }
        };
        let curr_tid = q.curr.as_ref().map(|t| if t.is_idle { 0 } else { t.tid }).unwrap_or(0);
        if c != cpu && (curr_tid != wanted || rq_of(c).core_wait.load(Ordering::Relaxed)) {
            set_need_resched(c);
        }
    }
    for &c in &order {
        rq_of(c).core_cookie.store(core_cookie, Ordering::Release);
    }
    let mine = match picks[this] {
        Pick::Task(tid) => g.tasks.get(&tid).cloned(),
        Pick::Idle => return (idle, false),
        Pick::ForceIdle => return (idle, true),
    };
    let Some(next) = mine else { return (idle, true) };
    // The invariant: start `next` only if every sibling's current task fits its cookie.
    let cookie = cookie_of(&next);
    let mut wait = false;
    for (c, og) in others.iter() {
        if let Some(cur) = &og.curr {
            if !compatible(cur, cookie) {
                wait = true;
                set_need_resched(*c);
            }
        }
    }
    rq_of(cpu).core_wait.store(wait, Ordering::Relaxed);
    if wait {
        (idle, true)
    } else {
        (next, false)
    }
}

/// Cookied tasks a CPU started while picking alone (should stay 0: see [`check_alone_pick`]).
static UNCHECKED_PICKS: AtomicU64 = AtomicU64::new(0);

/// `schedule()` picked `next` on `cpu` without the core's locks. That is only sound if `next`
/// has no cookie (a queued cookied task makes its core [`active`]); a violation means the
/// queued-cookie counts are wrong. Counted, shown by `coresched stat`, asserted by the tests.
pub(super) fn check_alone_pick(cpu: u32, next: &Task) {
    if !next.is_idle && cookie_of(next) != CookieId::NONE && enabled() && siblings(cpu).count() > 1 {
        UNCHECKED_PICKS.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many times a cookied task was started without the core-wide check (0 unless a bug).
pub fn unchecked_picks() -> u64 {
    UNCHECKED_PICKS.load(Ordering::Relaxed)
}

/// Kicks siblings of `cpu` that wait for it to leave an incompatible task.
pub(super) fn kick_waiters(cpu: u32) {
    for c in siblings(cpu).iter() {
        let c = c as u32;
        if c != cpu && rq_of(c).core_wait.load(Ordering::Relaxed) {
            set_need_resched(c);
        }
    }
}

/// Forced idle ends (or continues) at `now` on `cpu`: account and trace it, charging the
/// cookied tasks that ran on the siblings meanwhile.
pub(super) fn account_forced_idle(cpu: u32, g: &mut RqInner, others: Option<&[(u32, RqGuard<'static, RqInner>)]>, now: u64) {
    if g.forced_since == 0 {
        return;
    }
    let d = now.saturating_sub(g.forced_since);
    g.forced_since = 0;
    rq_of(cpu).forced_idle_ns.fetch_add(d, Ordering::Relaxed);
    crate::trace::sched_core_force_idle(cpu, d);
    if let Some(others) = others {
        let running = || others.iter().filter_map(|(_, og)| og.curr.as_ref()).filter(|t| !t.is_idle && cookie_of(t) != CookieId::NONE);
        let occupation = running().count() as u32;
        for t in running() {
            t.core_forceidle_ns.fetch_add(policy::forceidle_charge(d, 1, occupation.max(1)), Ordering::Relaxed);
        }
    }
}

// ----- filling a forced-idle CPU ------------------------------------------------------------------

/// Tasks [`steal_cookie_task`] moved to a forced-idle CPU.
static STEALS: AtomicU64 = AtomicU64::new(0);

/// How many tasks forced-idle CPUs have taken from other CPUs' queues (`coresched stat`).
pub fn steals() -> u64 {
    STEALS.load(Ordering::Relaxed)
}

/// Linux's `sched_core_balance` (`steal_cookie_task`, `try_steal_cookie`): `this` is forced
/// idle while a sibling runs a task with cookie C, so it takes a fair task with cookie C that
/// waits on another CPU's queue (siblings first, then the other CPUs in turn), which then runs
/// at once beside it. True if one moved (`this` is then asked to reschedule).
///
/// Without it a core stayed half idle for as long as its CPUs' queues held different cookies:
/// the load balancer counts tasks, not cookies, so two CPU-bound groups of 4 threads on
/// `-smp 4` SMT settled with one cookie per CPU about as often as not (`coresched-bench cpu`:
/// 21% forced idle; docs/results/2026-12-05-coresched-user.md).
///
/// Called from the idle loop with no lock held. The locks are tried, never waited for (a
/// forced-idle CPU may be woken for an RT task meanwhile), and at most
/// [`NR_MIGRATE_SCAN`](super::balance::NR_MIGRATE_SCAN) tasks of each CPU are looked at.
/// Only fair tasks move: RT tasks have their own placement (`balance::rt_placement_mask`),
/// which already keeps them off CPUs whose sibling runs another cookie.
pub fn steal_cookie_task(this: u32) -> bool {
    if !enabled() || !cookies_exist() {
        return false;
    }
    let sibs = siblings(this);
    if sibs.count() < 2 || !percpu::get(this).is_some_and(active) {
        return false;
    }
    // The core's cookie: what a sibling runs (one cookie at a time on a core).
    let Some(cookie) =
        sibs.iter().map(|c| c as u32).filter(|&c| c != this).map(|c| rq_of(c).curr_cookie.load(Ordering::Acquire)).find(|&c| c != 0)
    else {
        return false;
    };
    let others = super::online_mask() & !CpuMask::single(this as usize);
    let n = percpu::nr_cpus();
    // Siblings first (their waiting tasks of the cookie run beside them here), then the rest
    // from the next CPU on, as Linux walks its domains outwards.
    let order = (1..n).map(|i| (this + i) % n);
    let order = order.clone().filter(|c| sibs.contains(*c as usize)).chain(order.filter(|c| !sibs.contains(*c as usize)));
    for src_cpu in order.filter(|c| others.contains(*c as usize)) {
        if rq_of(this).need_resched.load(Ordering::Acquire) {
            return false;
        }
        if try_steal_cookie(this, src_cpu, CookieId(cookie)) {
            STEALS.fetch_add(1, Ordering::Relaxed);
            set_need_resched(this);
            return true;
        }
    }
    false
}

/// One source CPU for [`steal_cookie_task`]: under both run-queue locks, `this` must still be
/// forced idle with a sibling running `cookie`, and a fair task of `cookie` waiting on
/// `src_cpu` and allowed on `this` moves, unless it last ran in a fuller core than `this`'s
/// (Linux's `core_occupation` rule): a task taken from a core where it ran beside a sibling
/// of its cookie fills this one but leaves that one half idle, and `coresched-bench
/// pipe+cpu`, whose pipe task waits on a forced-idle CPU for the core to turn to its cookie,
/// lost a third of its round trips to CPU hogs taken in front of it that way (on / off 0.27
/// without the steal, 0.17 with it and without this rule).
fn try_steal_cookie(this: u32, src_cpu: u32, cookie: CookieId) -> bool {
    use super::balance::{movable, move_task, NR_MIGRATE_SCAN};
    use super::task::ClassId;
    let (dst_rq, src_rq) = (rq_of(this), rq_of(src_cpu));
    let Some(mut guards) = super::rqlock::try_lock_two(&dst_rq.lock, this, &src_rq.lock, src_cpu) else {
        return false;
    };
    let (dst, src) = guards.pair();
    let idle_now = dst.curr.as_ref().is_some_and(|c| c.is_idle);
    if !idle_now || dst.forced_since == 0 || super::reserve::room(dst) == 0 {
        return false;
    }
    let cursor = src.balance_cursor;
    let found = src
        .tasks
        .range_from(&cursor)
        .chain(src.tasks.range_before(&cursor))
        .take(NR_MIGRATE_SCAN)
        .map(|(_, t)| t)
        .find(|t| {
            t.class() == ClassId::Fair
                && cookie_of(t) == cookie
                && t.core_occupation.load(Ordering::Relaxed) <= dst.idle_occupation
                && movable(src, t, this)
        })
        .cloned();
    let Some(task) = found else { return false };
    move_task(src, dst, &task);
    super::update_counts(src_rq, src);
    super::update_counts(dst_rq, dst);
    true
}

// ----- cookies on tasks -------------------------------------------------------------------------

/// A new task inherits its parent's cookie.
pub fn fork(child: &Task, parent: &Task) {
    // Both reads under the registry lock, which `prctl` holds from reading cookies to recording
    // its assignments. The child is in the task table already, so a racing `prctl` (a TGID or
    // PGID scope) may have given it a pending cookie, with a reference: that assignment wins
    // and the child takes no second reference (the chaos stress found the leak: the inherited
    // reference was overwritten when the pending cookie was applied).
    // (Applied already, by `apply` on a task that is not running yet, or still pending.)
    let mut reg = COOKIES.lock();
    if child.core_cookie_pending.load(Ordering::Acquire) != NO_PENDING || child.core_cookie.load(Ordering::Acquire) != 0 {
        return;
    }
    let c = logical_cookie(parent);
    if c != CookieId::NONE {
        if let Ok(c) = reg.fork(c) {
            child.core_cookie.store(c.0, Ordering::Release);
        }
    }
}

/// A task exited: drop its cookie reference (the pending one if a change is pending: the
/// registry moved the task's reference to it). Under the registry lock, which `prctl` holds
/// from reading cookies to recording its assignments, and under the task's `params` lock,
/// which [`apply`] holds while it moves the pending cookie to the effective one, so each
/// reference is dropped once. The caller takes both, the registry's first ([`COOKIES`]):
/// `params` is also taken in interrupt handlers (timer and IPI wakeups) and the registry lock
/// leaves interrupts on, so a CPU holding the registry may take an interrupt that spins on
/// `params`; were `params` taken first, another CPU could hold it with interrupts off while
/// spinning on the registry.
pub fn exit(reg: &mut CookieRegistry, t: &Task) {
    t.core_exited.store(true, Ordering::Release);
    let pending = t.core_cookie_pending.swap(NO_PENDING, Ordering::AcqRel);
    let effective = t.core_cookie.swap(0, Ordering::AcqRel);
    let c = CookieId(if pending != NO_PENDING { pending } else { effective });
    if c != CookieId::NONE {
        let _ = reg.exit(c);
        sync_live(reg);
    }
}

/// Makes `t`'s pending cookie (recorded by `prctl`) effective and reschedules its core. A task
/// that is not running changes at once (requeued, so counts and the core-wide pick see it); a
/// running one changes at its next `schedule()` (`apply_pending`), under the core's locks — so
/// a cookie never changes under a sibling that runs an incompatible task. Idempotent, and
/// order-independent when several `prctl`s race: it applies whatever is pending now.
fn apply(t: &Arc<Task>) {
    let _params = t.params.lock();
    if t.core_exited.load(Ordering::Acquire) {
        return; // `exit` dropped whatever was pending
    }
    let cpu = super::with_task_rq(t, |g, now| {
        if !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, t)) {
            // Effective first, then clear pending (see `apply_pending`).
            let new = t.core_cookie_pending.load(Ordering::Acquire);
            if new != NO_PENDING {
                super::requeue_locked(g, t, now, |_| t.core_cookie.store(new, Ordering::Release));
                let _ = t.core_cookie_pending.compare_exchange(new, NO_PENDING, Ordering::AcqRel, Ordering::Acquire);
            }
        }
        g.cpu
    });
    for c in siblings(cpu).iter() {
        set_need_resched(c as u32);
    }
}

/// `prctl(PR_SCHED_CORE, cmd, pid, pidtype, uaddr)` for the calling task. GET returns the
/// cookie's value (Linux stores it at `uaddr`: a non-zero, 8-byte aligned address is required,
/// 0 gives EFAULT); the other commands return 0.
pub fn prctl(cmd: u64, pid: u64, pidtype: u64, uaddr: u64) -> Result<u64, Errno> {
    let _defer = super::signal::DeferFatal::new();
    let me = super::current();
    let tasks: Vec<Arc<Task>> = super::task::all().into_iter().filter(|t| t.state() != super::task::TaskState::Dead).collect();
    // Cookies are read, the registry changed and the assignments recorded (as pending) under
    // the registry lock: a task exiting meanwhile (`exit`, same lock) either is left out here
    // or drops exactly the reference this assigned it.
    let (outcome, assigned) = {
        let mut reg = COOKIES.lock();
        let live: Vec<&Arc<Task>> = tasks.iter().filter(|t| !t.core_exited.load(Ordering::Acquire)).collect();
        let infos: Vec<policy::TaskInfo> = live
            .iter()
            .map(|t| policy::TaskInfo {
                tid: t.tid as i32,
                tgid: t.process.tgid as i32,
                pgid: t.process.group.pgid.load(Ordering::Relaxed) as i32,
                cookie: logical_cookie(t),
            })
            .collect();
        // CREATE's allocation is a failure-injection site, asked where the policy allocates.
        let may_alloc = || !crate::mm::fail_alloc::should_fail("sched_core_cookie");
        let r = policy::sched_core_share_pid_with(
            &mut reg,
            &infos,
            me.tid as i32,
            [cmd, pid, pidtype, uaddr],
            smt_present(),
            |_| true,
            may_alloc,
        );
        sync_live(&reg);
        let outcome = r?;
        let mut assigned: Vec<Arc<Task>> = Vec::new();
        if let PrctlOutcome::Assign(list) = &outcome {
            for a in list {
                if let Some(t) = live.iter().find(|t| t.tid as i32 == a.tid) {
                    t.core_cookie_pending.store(a.new.0, Ordering::Release);
                    assigned.push((*t).clone());
                }
            }
        }
        (outcome, assigned)
    };
    match outcome {
        PrctlOutcome::Get { value, uaddr } => {
            if uaddr == 0 {
                Err(Errno::EFAULT)
            } else {
                Ok(value)
            }
        }
        PrctlOutcome::Assign(_) => {
            for t in &assigned {
                apply(t);
            }
            Ok(0)
        }
    }
}
