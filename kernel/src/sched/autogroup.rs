//! Autogroup: a task group made automatically per tty (the seed, Galbraith's "automated per
//! tty task groups") or per session (mainline Linux, one group per `setsid()`).
//!
//! * Mode (boot `autogroup=tty|session`, default `tty`): in `tty` mode each tty gets an
//!   autogroup when it is opened (freed with the tty once no task uses it); a task joins the
//!   autogroup of its controlling tty. In `session` mode `setsid()` makes a new autogroup.
//!   Children inherit their parent's autogroup either way.
//! * On by default; `noautogroup` at boot; `kernel.sched_autogroup_enabled=0|1` at run time.
//!   Toggling moves, at once, every *queued* fair task whose group changes (sleeping tasks
//!   pick their group when they next wake, because a task's queue is chosen at enqueue from the
//!   flag): O(runnable tasks), one run-queue lock per CPU.
//! * Only fair tasks: RT tasks are scheduled as if in the root group (never in an autogroup).
//! * A task in a manual group (`group move`) is not in its autogroup (like Linux, where
//!   autogroup applies only to tasks in the root cgroup).
//! * Per-group nice (`/proc/<pid>/autogroup`): [`proc_autogroup`] reads
//!   `/autogroup-<id> nice <n>`; [`set_nice`] sets the group's shares to that nice's weight.
//! * Lifetime: `TaskGroup::nr_tasks` counts member tasks, plus one for the tty that owns a
//!   tty-mode group; the group is destroyed when that count reaches zero (no use-after-free:
//!   everything holds `Arc`s, and a group leaves the registry before its per-CPU queues go).

use super::group::{self, GroupId, GroupKind, ROOT_GROUP};
use super::task::{Task, Tid};
use alloc::string::String;
use alloc::sync::Arc;
use cadence_cmdline::BootParam;
use cadence_sched::Errno;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(true);
/// false = tty mode (default), true = session mode.
static SESSION_MODE: AtomicBool = AtomicBool::new(false);
static SEQ: AtomicU32 = AtomicU32::new(1);

/// `kernel.sched_autogroup_enabled`.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub fn session_mode() -> bool {
    SESSION_MODE.load(Ordering::Relaxed)
}

/// Boot option `autogroup=tty|session`.
/// Boot options (`cmdline`): autogroup's boot default and its mode.
pub static BOOT_PARAMS: &[BootParam] = &[
    BootParam {
        usage: "noautogroup",
        help: "start with autogroup off (kernel.sched_autogroup_enabled=0)",
        set: |_| {
            set_boot_default(false);
            Ok(())
        },
    },
    BootParam {
        usage: "autogroup=tty|session",
        help: "autogroup per tty (default, the seed) or per session (mainline)",
        set: |v| set_mode(v.unwrap_or("")).map_err(|_| "needs tty or session".into()),
    },
];

pub fn set_mode(mode: &str) -> Result<(), Errno> {
    match mode {
        "tty" => SESSION_MODE.store(false, Ordering::Relaxed),
        "session" => SESSION_MODE.store(true, Ordering::Relaxed),
        _ => return Err(Errno::EINVAL),
    }
    Ok(())
}

pub fn mode_name() -> &'static str {
    if session_mode() {
        "session"
    } else {
        "tty"
    }
}

/// Boot option `noautogroup`: just the flag (no task exists yet).
pub fn set_boot_default(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Turns autogroup on or off and moves every queued fair task whose group changes. Returns
/// (tasks moved, ns the switch took).
pub fn set_enabled(on: bool) -> (usize, u64) {
    // One pass, not preempted half-way (the seed's lesson: the switch must be quick).
    let _no_preempt = super::preempt_disable();
    let start = crate::time::uptime_ns();
    ENABLED.store(on, Ordering::SeqCst);
    let mut moved = 0;
    for cpu in crate::percpu::online_cpus() {
        let mut g = super::rq_of(cpu.cpu_id).lock.lock();
        let now = crate::time::uptime_ns();
        super::update_curr(&mut g, now);
        let movers: alloc::vec::Vec<Arc<Task>> = g
            .tasks
            .values()
            .filter(|t| t.class() == super::task::ClassId::Fair)
            .filter(|t| super::class::effective_group(t) != t.se_group.load(Ordering::Relaxed))
            .cloned()
            .collect();
        for t in &movers {
            super::requeue_locked(&mut g, t, now, |_| {});
        }
        moved += movers.len();
        drop(g);
        if !movers.is_empty() {
            super::set_need_resched(cpu.cpu_id);
        }
    }
    (moved, crate::time::uptime_ns() - start)
}

/// Makes a new autogroup (counting `initial_refs` references).
pub fn create(initial_refs: u32) -> Result<Arc<group::TaskGroup>, Errno> {
    let name = alloc::format!("autogroup-{}", SEQ.fetch_add(1, Ordering::Relaxed));
    let tg = group::create(&name, ROOT_GROUP, group::DEFAULT_WEIGHT, GroupKind::Auto)?;
    tg.nr_tasks.store(initial_refs, Ordering::Release);
    Ok(tg)
}

/// Drops one reference; destroys the autogroup when none is left.
pub fn put(gid: GroupId) {
    if gid == ROOT_GROUP {
        return;
    }
    if let Some(tg) = group::lookup(gid) {
        if tg.nr_tasks.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = group::destroy(gid);
        }
    }
}

/// Moves task `t` (caller must not hold its `params` lock) to autogroup `gid` (0 = none), adjusting
/// references and requeueing it if it is queued.
pub fn assign(t: &Arc<Task>, gid: GroupId) {
    if gid != ROOT_GROUP {
        group::join(gid);
    }
    let old = t.autogroup.swap(gid, Ordering::AcqRel);
    if old == gid {
        put(gid); // undo the extra join
        return;
    }
    if t.is_on_rq() && t.class() == super::task::ClassId::Fair {
        let _params = t.params.lock();
        super::with_task_rq(t, |g, now| {
            if t.is_on_rq() {
                super::requeue_locked(g, t, now, |_| {});
            }
        });
    }
    put(old);
}

/// A child inherits its parent's autogroup (called at spawn).
pub fn inherit(child: &Task, parent: &Task) {
    let gid = parent.autogroup.load(Ordering::Acquire);
    if gid != ROOT_GROUP && group::lookup(gid).is_some() {
        group::join(gid);
        child.autogroup.store(gid, Ordering::Release);
    }
}

/// A task exited: drop its autogroup reference.
pub fn exit(t: &Task) {
    let gid = t.autogroup.swap(ROOT_GROUP, Ordering::AcqRel);
    put(gid);
}

fn autogroup_of(tid: Tid) -> Result<Arc<group::TaskGroup>, Errno> {
    let t = super::task::find(tid).ok_or(Errno::ESRCH)?;
    let gid = t.autogroup.load(Ordering::Acquire);
    group::lookup(gid).ok_or(Errno::ESRCH)
}

/// `/proc/<pid>/autogroup`: `/autogroup-<id> nice <n>`. ESRCH if the task has none.
pub fn proc_autogroup(tid: Tid) -> Result<String, Errno> {
    let tg = autogroup_of(tid)?;
    Ok(alloc::format!("/{} nice {}", tg.name, tg.nice.load(Ordering::Relaxed)))
}

/// Writing a nice to `/proc/<pid>/autogroup`: the group's shares become that nice's weight.
/// EINVAL outside −20..19.
pub fn set_nice(tid: Tid, nice: i64) -> Result<(), Errno> {
    if !(cadence_sched::consts::MIN_NICE as i64..=cadence_sched::consts::MAX_NICE as i64).contains(&nice) {
        return Err(Errno::EINVAL);
    }
    let tg = autogroup_of(tid)?;
    tg.nice.store(nice as i32, Ordering::Relaxed);
    group::set_shares(tg.id, cadence_sched::weight::nice_to_weight(nice as i32) as u64)
}
