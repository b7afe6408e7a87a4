//! cgroupfs: the task groups (`sched::group`) as Linux's cgroup file systems, cgroup v2
//! (`mount -t cgroup2`) and the v1 `cpu` controller (`mount -t cgroup -o cpu`).
//!
//! Both views show **one tree**, the scheduler's: a directory per manual group (the shell's
//! `group create` makes one too), `mkdir` creates a group, `rmdir` destroys it (EBUSY while it
//! has tasks or child groups), and every file reads or writes the group's own fields (shares,
//! `idle`, the bandwidth pool) or its members. Nothing is copied: autogroups are not cgroups
//! and stay out of the tree, as on Linux (a task in a non-root cgroup does not use its
//! autogroup: `class::fair::effective_group`).
//!
//! | file (v2) | file (v1) | what |
//! |---|---|---|
//! | `cgroup.procs` | `cgroup.procs` | processes with a thread in the group; a write moves a whole process |
//! | `cgroup.threads` | `tasks` | threads; v1 `tasks` moves one thread, v2 threads need threaded groups (EOPNOTSUPP) |
//! | `cpu.weight`, `cpu.weight.nice` | `cpu.shares` | the group's shares (1..=10000 → ERANGE; nice −20..19; shares clamped to 2..=262144) |
//! | `cpu.max`, `cpu.max.burst` | `cpu.cfs_quota_us`, `cpu.cfs_period_us`, `cpu.cfs_burst_us` | bandwidth (`sched::bandwidth`) |
//! | `cpu.stat` | `cpu.stat` | usage and throttling statistics |
//! | `cpu.idle` | `cpu.idle` | 0/1: the group weighs as SCHED_IDLE |
//! | `cgroup.controllers`, `cgroup.subtree_control`, `cgroup.type`, `cgroup.events`, `cgroup.stat`, `cgroup.max.*` | `cgroup.clone_children`, `notify_on_release`, `release_agent`, `cgroup.sane_behavior` | Linux's |
//!
//! v2's `cpu.*` interface files (but `cpu.stat`) appear in a group once its parent enables the
//! controller (`echo +cpu > cgroup.subtree_control`), and a non-root group with processes
//! cannot enable it, nor take processes once it has (EBUSY: "no internal processes").

use crate::fs::pseudo::{GenDir, Node, DIR, REG};
use crate::sched::group::{self, GroupId, GroupKind, ROOT_GROUP};
use crate::sched::task::{self, Task, TaskState, Tid};
use crate::sync::SpinLock;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_sched::cfs_bandwidth::{Limit, MAX_RUNTIME_NS};
use cadence_sched::weight::{MAX_SHARES, MIN_SHARES, NICE_0_LOAD, SCHED_PRIO_TO_WEIGHT};
use core::sync::atomic::{AtomicBool, Ordering};

/// Groups whose `cgroup.subtree_control` has `cpu` (v2).
static SUBTREE_CPU: SpinLock<BTreeSet<GroupId>> = SpinLock::new(BTreeSet::new());
/// Directory modes set by `mkdir` and `chmod` (default 0755).
static MODES: SpinLock<BTreeMap<GroupId, u32>> = SpinLock::new(BTreeMap::new());

/// The controllers of the v1 hierarchy (`cpu` or `cpu,cpuacct`) once one was mounted: Linux's
/// hierarchy 1 in `/proc/PID/cgroup`. Kept after an unmount, as Linux keeps a hierarchy that
/// still has child cgroups (one tree here, so always).
static V1_CONTROLLERS: SpinLock<Option<&'static str>> = SpinLock::new(None);
/// cgroup2 was mounted once (Linux's sticky `cgrp_dfl_visible`): `/proc/PID/cgroup` lists `0::`.
static V2_VISIBLE: AtomicBool = AtomicBool::new(false);

/// A new mount of the v1 hierarchy with `controllers`: its root, or EBUSY if the hierarchy
/// exists with other controllers (Linux's answer to options that do not match it).
pub fn mount_v1(controllers: &'static str) -> Result<Node, Errno> {
    let mut c = V1_CONTROLLERS.lock();
    match *c {
        Some(existing) if existing != controllers => return Err(Errno::EBUSY),
        _ => *c = Some(controllers),
    }
    Ok(root(false))
}

/// A new mount of cgroup2: its root.
pub fn mount_v2() -> Node {
    V2_VISIBLE.store(true, Ordering::Relaxed);
    root(true)
}

/// `/proc/PID/cgroup` of `t` (Linux's `proc_cgroup_show`): `1:<controllers>:<path>` once a v1
/// hierarchy exists, then `0::<path>` once cgroup2 was mounted; empty before either. Linux's
/// v1 and v2 hierarchies place a task apart; Cadence's one tree gives both lines one path.
pub fn proc_cgroup(t: &Task) -> String {
    let path = group::cgroup_path(t);
    let mut s = String::new();
    if let Some(c) = *V1_CONTROLLERS.lock() {
        s.push_str(&format!("1:{c}:{path}\n"));
    }
    if V2_VISIBLE.load(Ordering::Relaxed) {
        s.push_str(&format!("0::{path}\n"));
    }
    s
}

/// The root of a cgroup file system: v2 (`cgroup2`) or v1 with the `cpu` controller.
fn root(v2: bool) -> Node {
    Node::Dir(0o755, Arc::new(CgDir { gid: ROOT_GROUP, v2 }))
}

struct CgDir {
    gid: GroupId,
    v2: bool,
}

fn mode_of(gid: GroupId) -> u32 {
    MODES.lock().get(&gid).copied().unwrap_or(0o755)
}

fn cpu_enabled_below(gid: GroupId) -> bool {
    SUBTREE_CPU.lock().contains(&gid)
}

/// The group's parent (the root's: itself).
fn parent_of(gid: GroupId) -> GroupId {
    group::lookup(gid).map_or(ROOT_GROUP, |g| g.parent)
}

/// Is `gid` a cgroup (the root or a live manual group)?
fn is_cgroup(gid: GroupId) -> bool {
    gid == ROOT_GROUP || group::lookup(gid).is_some_and(|g| g.kind == GroupKind::Manual)
}

impl CgDir {
    fn names(&self) -> Vec<&'static str> {
        let root = self.gid == ROOT_GROUP;
        if self.v2 {
            let mut n = alloc::vec!["cgroup.controllers", "cgroup.max.depth", "cgroup.max.descendants", "cgroup.procs", "cgroup.stat"];
            n.extend(["cgroup.subtree_control", "cgroup.threads", "cpu.stat"]);
            if !root {
                n.extend(["cgroup.events", "cgroup.type"]);
                if cpu_enabled_below(parent_of(self.gid)) {
                    n.extend(["cpu.idle", "cpu.max", "cpu.max.burst", "cpu.weight", "cpu.weight.nice"]);
                }
            }
            n
        } else {
            let mut n = alloc::vec!["cgroup.clone_children", "cgroup.procs", "cpu.cfs_burst_us", "cpu.cfs_period_us", "cpu.cfs_quota_us"];
            n.extend(["cpu.idle", "cpu.shares", "cpu.stat", "notify_on_release", "tasks"]);
            if root {
                n.extend(["cgroup.sane_behavior", "release_agent"]);
            }
            n
        }
    }

    fn file(&self, name: &str) -> Option<Node> {
        let gid = self.gid;
        let v2 = self.v2;
        Some(match name {
            "cgroup.procs" => Node::rw(move || Ok(list(members(gid, true))), move |v| attach(gid, v, Attach::Process { v2 })),
            "cgroup.threads" => Node::rw(move || Ok(list(members(gid, false))), move |v| attach(gid, v, Attach::V2Thread)),
            "tasks" => Node::rw(move || Ok(list(members(gid, false))), move |v| attach(gid, v, Attach::V1Thread)),
            "cgroup.controllers" => {
                Node::ro(move || Ok(String::from(if gid == ROOT_GROUP || cpu_enabled_below(parent_of(gid)) { "cpu\n" } else { "\n" })))
            }
            "cgroup.subtree_control" => {
                Node::rw(move || Ok(String::from(if cpu_enabled_below(gid) { "cpu\n" } else { "\n" })), move |v| subtree_control(gid, v))
            }
            "cgroup.type" => Node::rw(
                || Ok(String::from("domain\n")),
                |v| match v.trim() {
                    "domain" => Ok(()),
                    "threaded" => Err(Errno::EOPNOTSUPP),
                    _ => Err(Errno::EINVAL),
                },
            ),
            "cgroup.events" => Node::ro(move || Ok(format!("populated {}\nfrozen 0\n", u8::from(populated(gid))))),
            "cgroup.stat" => Node::ro(move || Ok(format!("nr_descendants {}\nnr_dying_descendants 0\n", descendants(gid).len() - 1))),
            "cgroup.max.depth" | "cgroup.max.descendants" => Node::ro(|| Ok(String::from("max\n"))),
            "cpu.stat" => Node::ro(move || Ok(cpu_stat(gid, v2))),
            "cpu.weight" => Node::rw(
                move || Ok(format!("{}\n", group::lookup(gid).map_or(group::DEFAULT_WEIGHT, |g| g.weight()))),
                move |v| {
                    let w: u64 = v.trim().parse().map_err(|_| Errno::EINVAL)?;
                    if !(1..=group::MAX_WEIGHT).contains(&w) {
                        return Err(Errno::ERANGE);
                    }
                    // Linux's DIV_ROUND_CLOSEST(weight × 1024, 100).
                    group::set_shares(gid, (w * NICE_0_LOAD + 50) / 100)
                },
            ),
            "cpu.weight.nice" => Node::rw(
                move || Ok(format!("{}\n", nice_of(group::lookup(gid).map_or(NICE_0_LOAD, |g| g.shares())))),
                move |v| {
                    let nice: i64 = v.trim().parse().map_err(|_| Errno::EINVAL)?;
                    if !(-20..=19).contains(&nice) {
                        return Err(Errno::ERANGE);
                    }
                    group::set_shares(gid, u64::from(SCHED_PRIO_TO_WEIGHT[(nice + 20) as usize]))
                },
            ),
            "cpu.shares" => Node::rw(
                move || Ok(format!("{}\n", group::lookup(gid).map_or(NICE_0_LOAD, |g| g.shares()))),
                move |v| {
                    let s: u64 = v.trim().parse().map_err(|_| Errno::EINVAL)?;
                    if gid == ROOT_GROUP {
                        return Err(Errno::EINVAL);
                    }
                    group::set_shares(gid, s.clamp(MIN_SHARES, MAX_SHARES))
                },
            ),
            "cpu.idle" => Node::rw(
                move || Ok(format!("{}\n", u8::from(group::lookup(gid).is_some_and(|g| g.idle.load(Ordering::Relaxed))))),
                move |v| {
                    let idle: i64 = v.trim().parse().map_err(|_| Errno::EINVAL)?;
                    if gid == ROOT_GROUP || !(0..=1).contains(&idle) {
                        return Err(Errno::EINVAL);
                    }
                    group::set_idle(gid, idle == 1)
                },
            ),
            "cpu.max" => Node::rw(
                move || {
                    let l = crate::sched::bandwidth::limit(gid);
                    Ok(match l.quota_ns {
                        None => format!("max {}\n", l.period_ns / 1000),
                        Some(q) => format!("{} {}\n", q / 1000, l.period_ns / 1000),
                    })
                },
                move |v| {
                    let l = crate::sched::bandwidth::limit(gid);
                    let mut words = v.split_whitespace();
                    let quota = match words.next().ok_or(Errno::EINVAL)? {
                        "max" => None,
                        q => Some(us_to_ns(q.parse().map_err(|_| Errno::EINVAL)?)?),
                    };
                    let period = match words.next() {
                        Some(p) => us_to_ns(p.parse().map_err(|_| Errno::EINVAL)?)?,
                        None => l.period_ns,
                    };
                    if words.next().is_some() {
                        return Err(Errno::EINVAL);
                    }
                    set_limit(gid, quota, period, l.burst_ns)
                },
            ),
            "cpu.max.burst" | "cpu.cfs_burst_us" => Node::rw(
                move || Ok(format!("{}\n", crate::sched::bandwidth::limit(gid).burst_ns / 1000)),
                move |v| {
                    let l = crate::sched::bandwidth::limit(gid);
                    set_limit(gid, l.quota_ns, l.period_ns, us_to_ns(v.trim().parse().map_err(|_| Errno::EINVAL)?)?)
                },
            ),
            "cpu.cfs_quota_us" => Node::rw(
                move || Ok(format!("{}\n", crate::sched::bandwidth::limit(gid).quota_ns.map_or(-1, |q| (q / 1000) as i64))),
                move |v| {
                    let l = crate::sched::bandwidth::limit(gid);
                    let q: i64 = v.trim().parse().map_err(|_| Errno::EINVAL)?;
                    let quota = if q < 0 { None } else { Some(us_to_ns(q as u64)?) };
                    set_limit_v1(gid, quota, l.period_ns, l.burst_ns)
                },
            ),
            "cpu.cfs_period_us" => Node::rw(
                move || Ok(format!("{}\n", crate::sched::bandwidth::limit(gid).period_ns / 1000)),
                move |v| {
                    let l = crate::sched::bandwidth::limit(gid);
                    set_limit_v1(gid, l.quota_ns, us_to_ns(v.trim().parse().map_err(|_| Errno::EINVAL)?)?, l.burst_ns)
                },
            ),
            "cgroup.clone_children" | "notify_on_release" => Node::rw(
                || Ok(String::from("0\n")),
                |v| match v.trim() {
                    "0" => Ok(()),
                    // Cadence has no release notification nor cpuset to clone.
                    "1" => Err(Errno::EOPNOTSUPP),
                    _ => Err(Errno::EINVAL),
                },
            ),
            "cgroup.sane_behavior" => Node::ro(|| Ok(String::from("0\n"))),
            "release_agent" => Node::rw(|| Ok(String::from("\n")), |_| Err(Errno::EOPNOTSUPP)),
            _ => return None,
        })
    }
}

impl GenDir for CgDir {
    fn list(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self.names().into_iter().map(|n| (String::from(n), REG)).collect();
        out.extend(children(self.gid).into_iter().map(|(n, _)| (n, DIR)));
        out
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        if !is_cgroup(self.gid) {
            return None; // removed while open
        }
        if self.names().contains(&name) {
            return self.file(name);
        }
        let id = group::child_named(self.gid, name).filter(|&id| is_cgroup(id))?;
        Some(Node::Dir(mode_of(id), Arc::new(CgDir { gid: id, v2: self.v2 })))
    }

    /// A new group, as Linux's `cgroup_mkdir` (EEXIST is answered by the VFS first).
    fn mkdir(&self, name: &str, perm: u32) -> Result<Node, Errno> {
        if !is_cgroup(self.gid) {
            return Err(Errno::ENOENT);
        }
        let tg = group::create(name, self.gid, group::DEFAULT_WEIGHT, GroupKind::Manual).map_err(|e| match e {
            Errno::EBUSY => Errno::EEXIST, // an autogroup's name
            e => e,
        })?;
        MODES.lock().insert(tg.id, perm);
        Ok(Node::Dir(perm, Arc::new(CgDir { gid: tg.id, v2: self.v2 })))
    }

    fn rmdir(&self, name: &str) -> Result<(), Errno> {
        let id = group::child_named(self.gid, name).filter(|&id| is_cgroup(id)).ok_or(Errno::ENOENT)?;
        group::destroy(id)?;
        MODES.lock().remove(&id);
        SUBTREE_CPU.lock().remove(&id);
        Ok(())
    }

    fn create_error(&self) -> Errno {
        Errno::EPERM
    }

    fn set_mode(&self, perm: u32) -> Result<(), Errno> {
        if self.gid != ROOT_GROUP {
            MODES.lock().insert(self.gid, perm);
        }
        Ok(())
    }
}

/// The cgroup children of `gid` (autogroups are not cgroups).
fn children(gid: GroupId) -> Vec<(String, GroupId)> {
    group::children(gid).into_iter().filter(|&(_, id)| is_cgroup(id)).collect()
}

/// `gid` and every cgroup below it.
fn descendants(gid: GroupId) -> Vec<GroupId> {
    group::subtree(gid, is_cgroup)
}

fn alive(t: &Task) -> bool {
    !t.is_idle && t.state() != TaskState::Dead
}

/// The threads (`processes`: the distinct processes) whose cgroup is `gid`, ascending.
fn members(gid: GroupId, processes: bool) -> Vec<Tid> {
    let mut ids: Vec<Tid> = task::all()
        .iter()
        .filter(|t| alive(t) && t.group.load(Ordering::Acquire) == gid)
        .map(|t| if processes { t.process.tgid } else { t.tid })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn list(ids: Vec<Tid>) -> String {
    ids.iter().map(|id| format!("{}\n", id)).collect()
}

fn populated(gid: GroupId) -> bool {
    let groups = descendants(gid);
    task::all().iter().any(|t| alive(t) && groups.contains(&t.group.load(Ordering::Acquire)))
}

/// How a write to a membership file moves tasks.
#[derive(Clone, Copy)]
enum Attach {
    /// `cgroup.procs`: the whole process of the thread named.
    Process { v2: bool },
    /// v2 `cgroup.threads`: one thread (within a threaded subtree only).
    V2Thread,
    /// v1 `tasks`: one thread.
    V1Thread,
}

/// Moves the task (or process) a membership file was written with into `gid`. `0` is the
/// writer. EINVAL: not a number, or a kernel task; ESRCH: no such task; EBUSY: a v2 group
/// that distributes the controller to children ("no internal processes").
fn attach(gid: GroupId, text: &str, how: Attach) -> Result<(), Errno> {
    let pid: i64 = text.trim().parse().map_err(|_| Errno::EINVAL)?;
    if pid < 0 || pid > i64::from(u32::MAX) {
        return Err(Errno::EINVAL);
    }
    let tid = if pid == 0 { crate::sched::current_tid() } else { pid as Tid };
    let t = task::find(tid).filter(|t| alive(t)).ok_or(Errno::ESRCH)?;
    if t.process.user.get().is_none() {
        return Err(Errno::EINVAL); // a kernel task, as Linux's kthreads
    }
    if !is_cgroup(gid) {
        return Err(Errno::ENODEV);
    }
    match how {
        Attach::V2Thread => {
            return if t.group.load(Ordering::Acquire) == gid { Ok(()) } else { Err(Errno::EOPNOTSUPP) };
        }
        Attach::Process { v2: true } if gid != ROOT_GROUP && cpu_enabled_below(gid) => return Err(Errno::EBUSY),
        _ => {}
    }
    let threads: Vec<Tid> = match how {
        Attach::Process { .. } => {
            let tgid = t.process.tgid;
            task::all().iter().filter(|o| alive(o) && o.process.tgid == tgid).map(|o| o.tid).collect()
        }
        _ => alloc::vec![tid],
    };
    for tid in threads {
        match group::move_task(tid, gid) {
            Ok(()) | Err(Errno::ESRCH) => {} // a thread that exited meanwhile
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `cgroup.subtree_control`: `+cpu` / `-cpu` words.
fn subtree_control(gid: GroupId, text: &str) -> Result<(), Errno> {
    let mut enable = None;
    for word in text.split_whitespace() {
        enable = Some(match word {
            "+cpu" => true,
            "-cpu" => false,
            _ if word.starts_with(['+', '-']) => return Err(Errno::ENOENT), // a controller Cadence lacks
            _ => return Err(Errno::EINVAL),
        });
    }
    let Some(enable) = enable else { return Ok(()) };
    let available = gid == ROOT_GROUP || cpu_enabled_below(parent_of(gid));
    if enable && !available {
        return Err(Errno::ENOENT);
    }
    if enable && gid != ROOT_GROUP && !members(gid, false).is_empty() {
        return Err(Errno::EBUSY);
    }
    if !enable && children(gid).iter().any(|&(_, c)| cpu_enabled_below(c)) {
        return Err(Errno::EBUSY);
    }
    let mut set = SUBTREE_CPU.lock();
    if enable {
        set.insert(gid);
    } else {
        set.remove(&gid);
    }
    Ok(())
}

/// µs from a file to ns (EINVAL past what fits).
fn us_to_ns(us: u64) -> Result<u64, Errno> {
    us.checked_mul(1000).filter(|&ns| ns <= MAX_RUNTIME_NS.saturating_mul(2)).ok_or(Errno::EINVAL)
}

fn set_limit(gid: GroupId, quota_ns: Option<u64>, period_ns: u64, burst_ns: u64) -> Result<(), Errno> {
    if gid == ROOT_GROUP {
        return Err(Errno::EINVAL);
    }
    crate::sched::bandwidth::set_limit(gid, Limit::new(quota_ns, period_ns, burst_ns)?)
}

/// [`set_limit`] through the v1 files (`cpu.cfs_quota_us`, `cpu.cfs_period_us`), which first
/// check the hierarchy as Linux's v1 does (`cfs_bandwidth::v1_ratio_below`): the group's new
/// ratio against the ratio in force above it, then every descendant's against the new ratios
/// in force above them. EINVAL, and nothing changed, if one exceeds.
fn set_limit_v1(gid: GroupId, quota_ns: Option<u64>, period_ns: u64, burst_ns: u64) -> Result<(), Errno> {
    use cadence_sched::cfs_bandwidth::v1_ratio_below;
    let new = Limit::new(quota_ns, period_ns, burst_ns)?;
    let mut ancestors = Vec::new();
    let mut up = group::lookup(gid).map_or(ROOT_GROUP, |g| g.parent);
    // Bounded by the depth limit.
    while up != ROOT_GROUP && ancestors.len() <= cadence_sched::fair_group::MAX_GROUP_DEPTH {
        ancestors.push(up);
        up = group::lookup(up).map_or(ROOT_GROUP, |g| g.parent);
    }
    let mut above = None;
    for &a in ancestors.iter().rev() {
        above = v1_ratio_below(above, crate::sched::bandwidth::limit(a).ratio())?;
    }
    let mine = v1_ratio_below(above, new.ratio())?;
    let mut stack: Vec<(GroupId, Option<u64>)> = group::children(gid).into_iter().map(|(_, c)| (c, mine)).collect();
    while let Some((g, above)) = stack.pop() {
        let r = v1_ratio_below(above, crate::sched::bandwidth::limit(g).ratio())?;
        stack.extend(group::children(g).into_iter().map(|(_, c)| (c, r)));
    }
    set_limit(gid, quota_ns, period_ns, burst_ns)
}

/// `cpu.weight.nice`: the nice whose weight is nearest the group's shares (Linux's
/// `cpu_weight_nice_read_s64`).
fn nice_of(shares: u64) -> i64 {
    let w = shares as i64;
    let mut last = (i64::from(SCHED_PRIO_TO_WEIGHT[0]) - w).abs();
    let mut prio = 1;
    while prio < 40 {
        let delta = (w - i64::from(SCHED_PRIO_TO_WEIGHT[prio])).abs();
        if delta >= last {
            break;
        }
        last = delta;
        prio += 1;
    }
    prio as i64 - 1 - 20
}

fn cpu_stat(gid: GroupId, v2: bool) -> String {
    let st = crate::sched::bandwidth::stat(gid);
    if !v2 {
        return format!(
            "nr_periods {}\nnr_throttled {}\nthrottled_time {}\nnr_bursts {}\nburst_time {}\n",
            st.nr_periods, st.nr_throttled, st.throttled_ns, st.nr_bursts, st.burst_ns
        );
    }
    let usage = st.usage_ns / 1000;
    let mut out = format!("usage_usec {}\nuser_usec {}\nsystem_usec 0\n", usage, usage);
    if gid != ROOT_GROUP && cpu_enabled_below(parent_of(gid)) {
        out.push_str(&format!(
            "nr_periods {}\nnr_throttled {}\nthrottled_usec {}\nnr_bursts {}\nburst_usec {}\n",
            st.nr_periods,
            st.nr_throttled,
            st.throttled_ns / 1000,
            st.nr_bursts,
            st.burst_ns / 1000
        ));
    }
    out
}
