//! SMT core scheduling (Linux 5.14+ `kernel/sched/core_sched.c` and the core-wide part of
//! `pick_next_task` in `kernel/sched/core.c`): cookies, the `PR_SCHED_CORE` prctl, the
//! core-wide pick, forced-idle accounting, and a checker for recorded traces.
//!
//! Everything here is pure: the kernel takes snapshots under its locks (tasks, run-queue
//! candidates, trace events), asks, and applies the answer. No clock, no locks, no `unsafe`.
//!
//! # Security property
//! Core scheduling promises that tasks which do not trust each other never run on sibling
//! hyperthreads of one core at the same time. Trust is a *cookie*: tasks with equal cookies
//! trust each other. Cookie 0 ([`CookieId::NONE`]) is the default of every task and of
//! kernel threads. The idle task trusts everything and is trusted by everything.
//!
//! Following `Documentation/admin-guide/hw-vuln/core-scheduling.rst` ("Tasks outside the
//! group also don't trust tasks within"), and Linux's `cookie_equals`/`cookie_match`, which
//! compare cookies for equality with only the idle task exempt, **a task with a non-zero
//! cookie must not run beside any task with a different cookie, cookie 0 included**. Two
//! cookie-0 tasks may share a core. This is the rule [`pick_core`] enforces and the
//! default ([`CheckModel::Strict`]) rule [`check_trace`] verifies; the weaker "different
//! non-zero cookies" rule of the issue text is available as [`CheckModel::NonZeroOnly`].
//!
//! # `prctl(PR_SCHED_CORE, cmd, pid, pidtype, uaddr)` ([`validate_prctl`], [`sched_core_share_pid`])
//! Checks in Linux 6.x order (`sched_core_share_pid`):
//! 1. `ENODEV` if the machine has no SMT (`!static_branch_likely(&sched_smt_present)`);
//! 2. `EINVAL` if `pidtype > PIDTYPE_PGID`, `cmd >= PR_SCHED_CORE_MAX`, `pid < 0`, or
//!    `cmd != GET && uaddr != 0` (one combined test);
//! 3. `ESRCH` if `pid != 0` names no task (`pid == 0` is the caller);
//! 4. `EPERM` if the caller may not ptrace-read the target (`PTRACE_MODE_READ_REALCREDS`);
//! 5. `EINVAL` for GET unless `pidtype == PIDTYPE_PID` and `uaddr & 7 == 0`, and for
//!    SHARE_FROM unless `pidtype == PIDTYPE_PID`;
//! 6. for CREATE: `ENOMEM` if the new cookie cannot be allocated (`sched_core_alloc_cookie`;
//!    [`sched_core_share_pid_with`] lets the kernel fail it, for failure injection);
//! 7. for a TGID/PGID scope: `EPERM` if any member fails the access check — nothing is
//!    changed then (Linux checks every member before setting any).
//!
//! GET with `uaddr == 0` passes all of these (Linux only tests `uaddr & 7`); Linux then fails
//! in `put_user` with `EFAULT`. That store is the kernel's copy-out, not policy, so
//! [`sched_core_share_pid`] returns the value and the kernel reports `EFAULT` (14) if it
//! cannot store it. Raw arguments are truncated as C does: `cmd` to `unsigned int`, `pid`
//! to `pid_t` (`i32`), `pidtype` to the (unsigned) `enum pid_type`.
//!
//! Command semantics (over a snapshot of [`TaskInfo`]s):
//! * GET: [`CookieId::value`] of the target's cookie (0 for none; equal for equal cookies).
//! * CREATE: one new cookie for every task in the target's scope (the thread, its thread
//!   group, or its process group).
//! * SHARE_TO: the caller's cookie (possibly 0, which clears) to every task in the scope.
//! * SHARE_FROM: the target thread's cookie to the caller.
//!
//! # Cookie lifetimes ([`CookieRegistry`])
//! Linux allocates a refcounted object per cookie and frees it when the last task drops it.
//! Here ids are handed out monotonically and never reused (a stale id can never match a new
//! group); each live id has a refcount = number of tasks holding it (+ transient references
//! of an operation in flight). Contract for the kernel: `fork` → [`CookieRegistry::fork`]
//! (child inherits the parent's cookie, also kept across exec), exit →
//! [`CookieRegistry::exit`]. [`sched_core_share_pid`] has already moved the refcounts for
//! the assignments it returns; the kernel must write every returned cookie into its task
//! (under the task's run-queue lock, dequeuing/enqueuing it from any cookie index, and
//! rescheduling it if it is running), and must not touch the refcounts again.
//! Invariant: `refcount(c) == number of tasks whose cookie is c` between operations;
//! [`CookieRegistry::enabled`] (Linux `sched_core_enabled`) is true iff some cookie lives.
//!
//! # Core-wide pick ([`pick_core`])
//! Linux `pick_next_task` with core scheduling enabled, over one core's snapshot:
//! 1. each sibling's best candidate (highest [`Rank`]); the core-wide maximum `max` is the
//!    best of these, ties going to the first sibling in wrap order from the calling CPU
//!    (`for_each_cpu_wrap` + strict `prio_less`);
//! 2. the core cookie is `max`'s cookie;
//! 3. each sibling keeps its best candidate if its cookie equals the core cookie, else it
//!    runs its best candidate with that cookie, else idle. Idle on a sibling with runnable
//!    candidates is *forced idle*.
//!
//! Semantic choice: Linux searches its per-rq core tree (which indexes only cookied tasks)
//! in step 3, so under a cookie-0 `max` a sibling whose best task is cookied is forced idle
//! even if it also holds a runnable cookie-0 task. Cadence searches all candidates, so a
//! sibling is forced idle *only* if none of its candidates is compatible. Both are equally
//! safe; Cadence's keeps more SMT throughput.
//!
//! The candidates a sibling offers: its runnable tasks, each class's in the order the CPU
//! would run them (deadline by deadline, RT by priority then FIFO, fair by the hierarchical
//! EEVDF pick: `fair_group::for_each_candidate`, whose first is the CPU's own pick), kept
//! in a [`CandidateList`] as the best task of each cookie. That is all the pick needs, for
//! up to the list's room in distinct cookies per sibling (the kernel's: 24).
//!
//! Proven by tests and proptests below: every selected task has the core cookie; `max`
//! always runs; each sibling runs its best compatible candidate; a sibling is forced idle
//! iff it had candidates and none compatible. The idle task is implicit (candidates never
//! include it); kernel threads are ordinary cookie-0 candidates, as in Linux.
//!
//! Fast path ([`core_wide_pick_needed`]): as Linux's `need_sync`, a CPU whose core has no
//! cookie in force and no forced-idle sibling may pick locally when its own best task has
//! cookie 0; cores without cookies then pay one comparison.
//!
//! # Forced-idle accounting ([`forceidle_charge`], [`account_forceidle`])
//! Linux `__sched_core_account_forceidle`: while `count` siblings are forced idle and
//! `occupation` siblings run a (non-idle) task, each interval of `delta` ns is charged to
//! every running task on the core as `delta * count / occupation` (just `delta` when both
//! are 1), so the charges add up to the forced-idle CPU time. Tasks run with the core
//! cookie, so they are the ones that caused the idling.
//!
//! # Trace checker ([`check_trace`])
//! Input: time-ordered events "CPU `c` starts running a task with cookie `k` / idles /
//! is forced idle", the SMT sibling groups and an end time. Output: every maximal interval
//! in which two siblings ran conflicting tasks, the checked time and the forced-idle time.
//! Its summary line (`Display` of [`CheckReport`]) is exactly
//! `coresched check: violations=<n> checked_ns=<n> forced_idle_ns=<n>`.
//! A CPU's state is unknown (never a violation) before its first event. Events at one
//! timestamp are applied together, so a switch recorded on two CPUs at the same instant is
//! not an overlap. Note for the kernel: a sibling kicked by IPI that records its switch
//! *after* the picking CPU records its own shows a short real overlap; to report zero, the
//! sibling must leave its incompatible task before the picker starts the new one.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;

use crate::cpumask::{CpuMask, NR_CPUS};
use crate::errno::Errno;

/// `prctl` option number of core scheduling (include/uapi/linux/prctl.h).
pub const PR_SCHED_CORE: i32 = 62;
/// Read the target's cookie value into `*uaddr`.
pub const PR_SCHED_CORE_GET: u32 = 0;
/// Give the target scope a new cookie.
pub const PR_SCHED_CORE_CREATE: u32 = 1;
/// Push the caller's cookie to the target scope.
pub const PR_SCHED_CORE_SHARE_TO: u32 = 2;
/// Pull the target's cookie to the caller.
pub const PR_SCHED_CORE_SHARE_FROM: u32 = 3;
/// One past the last command.
pub const PR_SCHED_CORE_MAX: u32 = 4;
/// Scope: one thread (`PR_SCHED_CORE_SCOPE_THREAD`).
pub const PIDTYPE_PID: u32 = 0;
/// Scope: the thread group (`PR_SCHED_CORE_SCOPE_THREAD_GROUP`).
pub const PIDTYPE_TGID: u32 = 1;
/// Scope: the process group (`PR_SCHED_CORE_SCOPE_PROCESS_GROUP`).
pub const PIDTYPE_PGID: u32 = 2;

// ---------------------------------------------------------------------------------------
// Cookies
// ---------------------------------------------------------------------------------------

/// A core-scheduling cookie. `CookieId::NONE` (0) is the default, trusted cookie.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CookieId(pub u64);

impl CookieId {
    /// No cookie: the default of every task and kernel thread.
    pub const NONE: CookieId = CookieId(0);

    /// `true` for [`CookieId::NONE`].
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// What `PR_SCHED_CORE_GET` reports: 0 for no cookie, otherwise a non-zero scramble of
    /// the id (Linux hashes the cookie pointer so the value reveals no kernel address).
    /// A bijection of `u64` fixing 0 (the splitmix64 finalizer), so equal cookies give equal
    /// values, different cookies different values, and only `NONE` gives 0.
    pub const fn value(self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Live cookies and their reference counts (Linux `struct sched_core_cookie` +
/// `sched_core_get/put`). See the module docs for the contract.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CookieRegistry {
    next: u64,
    refs: BTreeMap<u64, u64>,
}

impl CookieRegistry {
    /// No live cookies; the first one created is `CookieId(1)`.
    pub const fn new() -> Self {
        CookieRegistry { next: 1, refs: BTreeMap::new() }
    }

    /// A new cookie with refcount 1 (the creator's reference; Linux
    /// `sched_core_alloc_cookie`). Ids are never reused. `ENOMEM` if the id space is
    /// exhausted (after 2^64 - 1 cookies).
    pub fn create(&mut self) -> Result<CookieId, Errno> {
        let id = self.next;
        if id == 0 {
            return Err(Errno::ENOMEM);
        }
        self.next = id.wrapping_add(1);
        self.refs.insert(id, 1);
        Ok(CookieId(id))
    }

    /// Takes a reference (`sched_core_get_cookie`). `NONE` is not counted. `EINVAL` if the
    /// cookie is not live (a kernel bug: a freed cookie must never be handed out again).
    pub fn get(&mut self, c: CookieId) -> Result<CookieId, Errno> {
        if c.is_none() {
            return Ok(c);
        }
        match self.refs.get_mut(&c.0) {
            Some(n) => {
                *n += 1;
                Ok(c)
            }
            None => Err(Errno::EINVAL),
        }
    }

    /// Drops a reference (`sched_core_put_cookie`); returns `true` if that freed the cookie.
    /// `NONE` is a no-op. `EINVAL` if the cookie is not live.
    pub fn put(&mut self, c: CookieId) -> Result<bool, Errno> {
        if c.is_none() {
            return Ok(false);
        }
        let n = self.refs.get_mut(&c.0).ok_or(Errno::EINVAL)?;
        *n -= 1;
        if *n == 0 {
            self.refs.remove(&c.0);
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Replaces a task's cookie `old` by `new`: takes `new`, then drops `old` (so
    /// `old == new` never frees). Linux `__sched_core_set`.
    pub fn set(&mut self, old: CookieId, new: CookieId) -> Result<(), Errno> {
        self.get(new)?;
        self.put(old).map(|_| ())
    }

    /// A child inherits its parent's cookie (`sched_core_fork`); returns the child's cookie.
    pub fn fork(&mut self, parent: CookieId) -> Result<CookieId, Errno> {
        self.get(parent)
    }

    /// A task exits (`sched_core_free`); returns `true` if that freed its cookie.
    pub fn exit(&mut self, c: CookieId) -> Result<bool, Errno> {
        self.put(c)
    }

    /// References held on `c` (0 if not live; always 0 for `NONE`).
    pub fn refcount(&self, c: CookieId) -> u64 {
        self.refs.get(&c.0).copied().unwrap_or(0)
    }

    /// `c` is `NONE` or live.
    pub fn is_live(&self, c: CookieId) -> bool {
        c.is_none() || self.refs.contains_key(&c.0)
    }

    /// Number of live cookies.
    pub fn live(&self) -> usize {
        self.refs.len()
    }

    /// Core scheduling is in force (Linux `sched_core_enabled`: some cookie exists).
    pub fn enabled(&self) -> bool {
        !self.refs.is_empty()
    }

    /// `PR_SCHED_CORE_GET`'s value for `c` ([`CookieId::value`]).
    pub fn get_value(&self, c: CookieId) -> u64 {
        c.value()
    }
}

// ---------------------------------------------------------------------------------------
// prctl
// ---------------------------------------------------------------------------------------

/// A `PR_SCHED_CORE` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// `PR_SCHED_CORE_GET`.
    Get,
    /// `PR_SCHED_CORE_CREATE`.
    Create,
    /// `PR_SCHED_CORE_SHARE_TO`.
    ShareTo,
    /// `PR_SCHED_CORE_SHARE_FROM`.
    ShareFrom,
}

impl Cmd {
    /// From the raw number; `EINVAL` for anything `>= PR_SCHED_CORE_MAX`.
    pub const fn from_raw(cmd: u32) -> Result<Cmd, Errno> {
        match cmd {
            PR_SCHED_CORE_GET => Ok(Cmd::Get),
            PR_SCHED_CORE_CREATE => Ok(Cmd::Create),
            PR_SCHED_CORE_SHARE_TO => Ok(Cmd::ShareTo),
            PR_SCHED_CORE_SHARE_FROM => Ok(Cmd::ShareFrom),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Linux's name, e.g. `"PR_SCHED_CORE_SHARE_TO"`.
    pub const fn name(self) -> &'static str {
        match self {
            Cmd::Get => "PR_SCHED_CORE_GET",
            Cmd::Create => "PR_SCHED_CORE_CREATE",
            Cmd::ShareTo => "PR_SCHED_CORE_SHARE_TO",
            Cmd::ShareFrom => "PR_SCHED_CORE_SHARE_FROM",
        }
    }
}

/// The scope a command applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidType {
    /// One thread.
    Pid,
    /// Every thread of the target's thread group.
    Tgid,
    /// Every thread of every process in the target's process group.
    Pgid,
}

impl PidType {
    /// From the raw number; `EINVAL` for anything `> PIDTYPE_PGID`.
    pub const fn from_raw(t: u32) -> Result<PidType, Errno> {
        match t {
            PIDTYPE_PID => Ok(PidType::Pid),
            PIDTYPE_TGID => Ok(PidType::Tgid),
            PIDTYPE_PGID => Ok(PidType::Pgid),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// A request that passed [`validate_prctl`] (the checks Linux makes before looking the
/// target up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrctlReq {
    /// The command.
    pub cmd: Cmd,
    /// Target thread id; 0 = the caller. Never negative.
    pub pid: i32,
    /// The scope.
    pub scope: PidType,
    /// User address for GET (0 for the other commands).
    pub uaddr: u64,
}

impl PrctlReq {
    /// The checks Linux makes after finding the target and checking access (step 5 of the
    /// module docs): GET needs `PIDTYPE_PID` and an 8-byte-aligned `uaddr`; SHARE_FROM needs
    /// `PIDTYPE_PID`. Otherwise `EINVAL`.
    pub const fn check_cmd(&self) -> Result<(), Errno> {
        match self.cmd {
            Cmd::Get if !matches!(self.scope, PidType::Pid) || self.uaddr & 7 != 0 => Err(Errno::EINVAL),
            Cmd::ShareFrom if !matches!(self.scope, PidType::Pid) => Err(Errno::EINVAL),
            _ => Ok(()),
        }
    }
}

/// Steps 1–2 of the module docs on the raw prctl arguments (`arg2..arg5`), truncated as C
/// does. `ENODEV` without SMT, then `EINVAL` for an unknown type or command, a negative pid,
/// or a non-zero `uaddr` with a command other than GET.
pub fn validate_prctl(arg2: u64, arg3: u64, arg4: u64, arg5: u64, smt_present: bool) -> Result<PrctlReq, Errno> {
    if !smt_present {
        return Err(Errno::ENODEV);
    }
    let (cmd, pid, ty, uaddr) = (arg2 as u32, arg3 as u32 as i32, arg4 as u32, arg5);
    if ty > PIDTYPE_PGID || cmd >= PR_SCHED_CORE_MAX || pid < 0 || (cmd != PR_SCHED_CORE_GET && uaddr != 0) {
        return Err(Errno::EINVAL);
    }
    Ok(PrctlReq { cmd: Cmd::from_raw(cmd)?, pid, scope: PidType::from_raw(ty)?, uaddr })
}

/// All `EINVAL`/`ENODEV` checks at once, for a target known to exist and be accessible
/// (e.g. `pid == 0`): [`validate_prctl`] then [`PrctlReq::check_cmd`].
pub fn validate_prctl_full(arg2: u64, arg3: u64, arg4: u64, arg5: u64, smt_present: bool) -> Result<Cmd, Errno> {
    let req = validate_prctl(arg2, arg3, arg4, arg5, smt_present)?;
    req.check_cmd()?;
    Ok(req.cmd)
}

/// What the kernel knows about a task, for the prctl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// Thread id (Linux `pid`).
    pub tid: i32,
    /// Thread-group id (the process id).
    pub tgid: i32,
    /// Process-group id.
    pub pgid: i32,
    /// Current cookie.
    pub cookie: CookieId,
}

/// One cookie change for the kernel to apply: `tid`'s cookie goes from `old` to `new`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieAssignment {
    /// The task.
    pub tid: i32,
    /// Its cookie in the snapshot.
    pub old: CookieId,
    /// Its new cookie.
    pub new: CookieId,
}

/// Result of a successful `PR_SCHED_CORE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrctlOutcome {
    /// GET: the value to store at `uaddr` (as a `u64`).
    Get {
        /// The cookie value ([`CookieId::value`]).
        value: u64,
        /// Where to store it (may be 0: the store then fails with `EFAULT`).
        uaddr: u64,
    },
    /// CREATE / SHARE_TO / SHARE_FROM: the changes to apply, in snapshot order; tasks whose
    /// cookie does not change are left out. Refcounts already account for them.
    Assign(Vec<CookieAssignment>),
}

/// The whole `prctl(PR_SCHED_CORE, arg2, arg3, arg4, arg5)` over a snapshot `tasks` (every
/// task the caller's pid namespace sees), with the caller `current` (a tid in `tasks`;
/// `ESRCH` if missing) and
/// the access check `may_access(target)` (`ptrace_may_access(.., PTRACE_MODE_READ_REALCREDS)`;
/// pass `|_| true` while Cadence has no users). Errors in Linux's order (module docs).
/// On success the registry's refcounts already reflect the returned assignments.
pub fn sched_core_share_pid(
    reg: &mut CookieRegistry,
    tasks: &[TaskInfo],
    current: i32,
    args: [u64; 4],
    smt_present: bool,
    may_access: impl Fn(&TaskInfo) -> bool,
) -> Result<PrctlOutcome, Errno> {
    sched_core_share_pid_with(reg, tasks, current, args, smt_present, may_access, || true)
}

/// [`sched_core_share_pid`], asking `may_alloc()` where CREATE allocates its cookie (after
/// every argument and access check, as Linux allocates): `false` fails it with `ENOMEM`.
pub fn sched_core_share_pid_with(
    reg: &mut CookieRegistry,
    tasks: &[TaskInfo],
    current: i32,
    args: [u64; 4],
    smt_present: bool,
    may_access: impl Fn(&TaskInfo) -> bool,
    may_alloc: impl FnOnce() -> bool,
) -> Result<PrctlOutcome, Errno> {
    let [arg2, arg3, arg4, arg5] = args;
    let req = validate_prctl(arg2, arg3, arg4, arg5, smt_present)?;
    let find = |tid: i32| tasks.iter().find(|t| t.tid == tid);
    let me = *find(current).ok_or(Errno::ESRCH)?;
    let target = if req.pid == 0 { me } else { *find(req.pid).ok_or(Errno::ESRCH)? };
    if !may_access(&target) {
        return Err(Errno::EPERM);
    }
    req.check_cmd()?;

    let cookie = match req.cmd {
        Cmd::Get => return Ok(PrctlOutcome::Get { value: target.cookie.value(), uaddr: req.uaddr }),
        Cmd::ShareFrom => {
            let mut out = Vec::new();
            if me.cookie != target.cookie {
                reg.set(me.cookie, target.cookie)?;
                out.push(CookieAssignment { tid: me.tid, old: me.cookie, new: target.cookie });
            }
            return Ok(PrctlOutcome::Assign(out));
        }
        Cmd::Create if !may_alloc() => return Err(Errno::ENOMEM),
        Cmd::Create => reg.create()?,
        Cmd::ShareTo => reg.get(me.cookie)?,
    };

    let in_scope = |t: &TaskInfo| match req.scope {
        PidType::Pid => t.tid == target.tid,
        PidType::Tgid => t.tgid == target.tgid,
        PidType::Pgid => t.pgid == target.pgid,
    };
    let result = if tasks.iter().filter(|t| in_scope(t)).all(&may_access) {
        let mut out = Vec::new();
        let mut err = None;
        for t in tasks.iter().filter(|t| in_scope(t) && t.cookie != cookie) {
            if let Err(e) = reg.set(t.cookie, cookie) {
                err = Some(e);
                break;
            }
            out.push(CookieAssignment { tid: t.tid, old: t.cookie, new: cookie });
        }
        match err {
            None => Ok(PrctlOutcome::Assign(out)),
            Some(e) => {
                // Undo (only reachable with a snapshot holding dead cookies).
                for a in out.iter().rev() {
                    let _ = reg.set(a.new, a.old);
                }
                Err(e)
            }
        }
    } else {
        Err(Errno::EPERM)
    };
    // Drop the operation's own reference (CREATE's initial one, SHARE_TO's clone).
    reg.put(cookie)?;
    result
}

// ---------------------------------------------------------------------------------------
// Core-wide pick
// ---------------------------------------------------------------------------------------

/// Importance of a runnable task, comparable across the siblings of a core: greater is more
/// important. Every RT task beats every fair task; among RT tasks the higher
/// `rt_priority` (1..=99) wins; among fair tasks the *smaller* `key` wins. The kernel supplies
/// a fair key comparable across siblings (Linux `cfs_prio_less` compares vruntimes shifted by
/// each queue's `min_vruntime_fi`, e.g. `vruntime - min_vruntime` of the task's queue).
/// The idle task has no rank: it is never a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rank {
    /// Fair class (SCHED_NORMAL / BATCH / IDLE); smaller `key` = more important.
    Fair {
        /// Cross-sibling comparable virtual-time key.
        key: i64,
    },
    /// Real-time class; greater `rt_priority` = more important.
    Rt {
        /// User-visible priority 1..=99 (0 allowed for PI boosting).
        rt_priority: u8,
    },
    /// Deadline class, above RT; an earlier absolute `deadline` (ns, wrapping clock) = more
    /// important.
    Dl {
        /// Absolute deadline.
        deadline: u64,
    },
}

impl Rank {
    /// Class order: fair < RT < deadline.
    fn class(&self) -> u8 {
        match self {
            Rank::Fair { .. } => 0,
            Rank::Rt { .. } => 1,
            Rank::Dl { .. } => 2,
        }
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Rank::Rt { rt_priority: a }, Rank::Rt { rt_priority: b }) => a.cmp(b),
            (Rank::Fair { key: a }, Rank::Fair { key: b }) => b.cmp(a),
            // Earlier deadline first, on a wrapping clock (Linux `dl_time_before`).
            (Rank::Dl { deadline: a }, Rank::Dl { deadline: b }) => (b.wrapping_sub(*a) as i64).cmp(&0),
            _ => self.class().cmp(&other.class()),
        }
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A runnable task offered to the core-wide pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<T> {
    /// The kernel's handle for the task.
    pub task: T,
    /// Its importance.
    pub rank: Rank,
    /// Its cookie.
    pub cookie: CookieId,
}

/// One sibling's candidates for [`pick_core`], at most `N` (fixed storage: the kernel fills it
/// under run-queue locks). Offered **best first** (non-increasing rank: each class's tasks in
/// the order the CPU would run them, classes from the highest), it keeps only the first
/// candidate of each cookie: the pick needs of a sibling only its best candidate overall and
/// its best of the core cookie, both of which are a best of some cookie. So [`pick_core`]
/// over this list chooses as over every candidate offered, as long as they carry at most `N`
/// distinct cookies (proptest `candidate_list_picks_as_the_full_list`); past that, later
/// cookies are left out and a sibling may be forced idle although a task of the core cookie
/// was runnable there ([`CandidateList::dropped`] counts them).
#[derive(Clone, Copy, Debug)]
pub struct CandidateList<T, const N: usize> {
    items: [Candidate<T>; N],
    len: usize,
    dropped: usize,
}

impl<T: Copy + Default, const N: usize> Default for CandidateList<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default, const N: usize> CandidateList<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        let none = Candidate { task: T::default(), rank: Rank::Fair { key: i64::MAX }, cookie: CookieId::NONE };
        CandidateList { items: [none; N], len: 0, dropped: 0 }
    }
}

impl<T: Copy, const N: usize> CandidateList<T, N> {
    /// Empties the list.
    pub fn clear(&mut self) {
        self.len = 0;
        self.dropped = 0;
    }

    /// Offers the next candidate (no better than any offered before). Kept if it is the first
    /// of its cookie and there is room. False once the list is full (the caller may stop:
    /// nothing later can be kept).
    pub fn offer(&mut self, c: Candidate<T>) -> bool {
        if self.items[..self.len].iter().any(|x| x.cookie == c.cookie) {
            return true;
        }
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = c;
                self.len += 1;
                true
            }
            None => {
                self.dropped += 1;
                false
            }
        }
    }

    /// Candidates left out for want of room (a cookie beyond the first `N`).
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

impl<T, const N: usize> AsRef<[Candidate<T>]> for CandidateList<T, N> {
    fn as_ref(&self) -> &[Candidate<T>] {
        &self.items[..self.len]
    }
}

/// What one sibling is to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick<T> {
    /// Run this task.
    Task(T),
    /// Nothing runnable: the idle task.
    Idle,
    /// Runnable tasks but none compatible with the core cookie: the idle task, forced.
    ForceIdle,
}

/// The answer of [`pick_core`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorePick<T> {
    /// One entry per sibling, in input order.
    pub picks: Vec<Pick<T>>,
    /// The core cookie (`max`'s cookie; `NONE` if nothing is runnable).
    pub cookie: CookieId,
    /// Index of the sibling whose best task is the core-wide maximum.
    pub max: Option<usize>,
    /// Siblings forced idle (Linux `core_forceidle_count`).
    pub forceidle_count: u32,
    /// Siblings running a task (Linux `core_forceidle_occupation`).
    pub occupation: u32,
}

/// Index of the best candidate (first of equals), if any.
fn best<T>(c: &[Candidate<T>], ok: impl Fn(&Candidate<T>) -> bool) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, x) in c.iter().enumerate() {
        if ok(x) && best.is_none_or(|b| x.rank > c[b].rank) {
            best = Some(i);
        }
    }
    best
}

/// Core-wide selection for one core (module docs). `siblings[i]` holds the runnable tasks
/// of the core's `i`-th CPU, in any order (equal ranks: earlier wins); `this` is the index of
/// the CPU calling `schedule()`, which wins ties for `max`. Out-of-range `this` counts as 0.
pub fn pick_core<T: Copy, S: AsRef<[Candidate<T>]>>(siblings: &[S], this: usize) -> CorePick<T> {
    let mut picks = alloc::vec![Pick::Idle; siblings.len()];
    let s = pick_core_into(siblings, this, &mut picks);
    CorePick { picks, cookie: s.cookie, max: s.max, forceidle_count: s.forceidle_count, occupation: s.occupation }
}

/// [`CorePick`] without the picks (they go to the caller's slice: see [`pick_core_into`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorePickSummary {
    /// As [`CorePick::cookie`].
    pub cookie: CookieId,
    /// As [`CorePick::max`].
    pub max: Option<usize>,
    /// As [`CorePick::forceidle_count`].
    pub forceidle_count: u32,
    /// As [`CorePick::occupation`].
    pub occupation: u32,
}

/// [`pick_core`] without allocating (the kernel calls it with run-queue locks held): sibling
/// `i`'s pick goes to `picks[i]`. Siblings beyond `picks.len()` still count for the core
/// cookie but get no pick, so the caller passes a slice at least `siblings.len()` long.
pub fn pick_core_into<T: Copy, S: AsRef<[Candidate<T>]>>(siblings: &[S], this: usize, picks: &mut [Pick<T>]) -> CorePickSummary {
    let n = siblings.len();
    let this = if this < n { this } else { 0 };
    let mut max: Option<(usize, Rank, CookieId)> = None;
    for i in (this..n).chain(0..this) {
        let c = siblings[i].as_ref();
        if let Some(b) = best(c, |_| true) {
            if max.is_none_or(|(_, r, _)| c[b].rank > r) {
                max = Some((i, c[b].rank, c[b].cookie));
            }
        }
    }
    let cookie = max.map_or(CookieId::NONE, |(_, _, k)| k);
    let (mut forceidle_count, mut occupation) = (0, 0);
    for (s, out) in siblings.iter().zip(picks.iter_mut()) {
        let c = s.as_ref();
        *out = match best(c, |x| x.cookie == cookie) {
            Some(b) => {
                occupation += 1;
                Pick::Task(c[b].task)
            }
            None if c.is_empty() => Pick::Idle,
            None => {
                forceidle_count += 1;
                Pick::ForceIdle
            }
        };
    }
    CorePickSummary { cookie, max: max.map(|(i, _, _)| i), forceidle_count, occupation }
}

/// Linux's `need_sync` fast path: `false` when a CPU may skip the core-wide pick and just run
/// its own best task — no cookie is in force on the core (`core_cookie` is `NONE`), no
/// sibling is forced idle, and the local best task has no cookie (or there is none).
pub fn core_wide_pick_needed(core_cookie: CookieId, core_forceidle_count: u32, local_best: Option<CookieId>) -> bool {
    !core_cookie.is_none() || core_forceidle_count != 0 || local_best.is_some_and(|c| !c.is_none())
}

// ---------------------------------------------------------------------------------------
// Forced-idle accounting
// ---------------------------------------------------------------------------------------

/// The time charged to *each* running task for `delta_ns` of forced idle with
/// `forceidle_count` siblings forced idle and `occupation` siblings running tasks (Linux
/// `__sched_core_account_forceidle`): `delta` if both are 1, else
/// `delta * forceidle_count / occupation`; 0 if either is 0.
pub fn forceidle_charge(delta_ns: u64, forceidle_count: u32, occupation: u32) -> u64 {
    if forceidle_count == 0 || occupation == 0 {
        return 0;
    }
    if forceidle_count == 1 && occupation == 1 {
        return delta_ns;
    }
    let v = delta_ns as u128 * forceidle_count as u128 / occupation as u128;
    v.min(u64::MAX as u128) as u64
}

/// One stretch of time during which a core's forced-idle state did not change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceIdleSpan<T> {
    /// Start (ns).
    pub start_ns: u64,
    /// End (ns); spans with `end_ns <= start_ns` charge nothing.
    pub end_ns: u64,
    /// Number of siblings forced idle.
    pub forceidle_count: u32,
    /// Tasks running on the other siblings (the occupation is `running.len()`).
    pub running: Vec<T>,
}

/// Charges every span to its running tasks ([`forceidle_charge`]); returns the total per
/// task, sorted by task. The total charged for a span is `forceidle_count * delta` up to
/// rounding down.
pub fn account_forceidle<T: Ord + Copy>(spans: &[ForceIdleSpan<T>]) -> Vec<(T, u64)> {
    let mut acc: BTreeMap<T, u64> = BTreeMap::new();
    for s in spans {
        let delta = s.end_ns.saturating_sub(s.start_ns);
        let each = forceidle_charge(delta, s.forceidle_count, s.running.len() as u32);
        if each == 0 {
            continue;
        }
        for &t in &s.running {
            let e = acc.entry(t).or_insert(0);
            *e = e.saturating_add(each);
        }
    }
    acc.into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// Trace checker
// ---------------------------------------------------------------------------------------

/// What a CPU starts doing at an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuState {
    /// Runs a task with this cookie (kernel threads: `NONE`).
    Task(CookieId),
    /// Runs the idle task with nothing runnable.
    Idle,
    /// Runs the idle task although tasks are runnable (core scheduling forced it).
    ForcedIdle,
}

/// One trace event: from `time_ns` on, `cpu` is in `state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Timestamp (ns), non-decreasing along the trace.
    pub time_ns: u64,
    /// Logical CPU id (< 64).
    pub cpu: usize,
    /// New state.
    pub state: CpuState,
}

/// Which pairs of running tasks the checker flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckModel {
    /// Any two different cookies (cookie 0 beside a non-zero cookie included): the trust
    /// model of core-scheduling.rst and what [`pick_core`] guarantees. Default.
    #[default]
    Strict,
    /// Only two different non-zero cookies.
    NonZeroOnly,
}

/// A maximal interval in which siblings `cpu_a < cpu_b` ran tasks with the conflicting
/// cookies `cookie_a`, `cookie_b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Start (ns).
    pub start_ns: u64,
    /// End (ns), exclusive.
    pub end_ns: u64,
    /// Lower CPU id.
    pub cpu_a: usize,
    /// Higher CPU id.
    pub cpu_b: usize,
    /// `cpu_a`'s cookie.
    pub cookie_a: CookieId,
    /// `cpu_b`'s cookie.
    pub cookie_b: CookieId,
}

/// What [`check_trace`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Every violation, ordered by start time, then CPU pair.
    pub violations: Vec<Violation>,
    /// Length of the checked window: from the first event to the end time (0 if none).
    pub checked_ns: u64,
    /// CPU time spent forced idle within the window, summed over CPUs.
    pub forced_idle_ns: u64,
    /// Switches checked: the trace events within the window (a caller compares it with the
    /// switches it made, to know how much of its run the window covers).
    pub switches: u64,
}

impl fmt::Display for CheckReport {
    /// Exactly `coresched check: violations=<n> checked_ns=<n> forced_idle_ns=<n>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "coresched check: violations={} checked_ns={} forced_idle_ns={}",
            self.violations.len(),
            self.checked_ns,
            self.forced_idle_ns
        )
    }
}

fn conflict(a: Option<CpuState>, b: Option<CpuState>, model: CheckModel) -> Option<(CookieId, CookieId)> {
    match (a?, b?) {
        (CpuState::Task(x), CpuState::Task(y)) if x != y => match model {
            CheckModel::Strict => Some((x, y)),
            CheckModel::NonZeroOnly if !x.is_none() && !y.is_none() => Some((x, y)),
            CheckModel::NonZeroOnly => None,
        },
        _ => None,
    }
}

/// [`check_trace_with`] under [`CheckModel::Strict`].
pub fn check_trace(events: &[TraceEvent], smt_groups: &[CpuMask], end_ns: u64) -> Result<CheckReport, Errno> {
    check_trace_with(events, smt_groups, end_ns, CheckModel::Strict)
}

/// Walks `events` (non-decreasing `time_ns`, else `EINVAL`; CPU ids < `NR_CPUS`, else `EINVAL`)
/// up to `end_ns` (later events are ignored) and reports, for every pair of CPUs in one
/// group of `smt_groups` (disjoint, else `EINVAL`), each maximal interval in which both ran
/// tasks whose cookies conflict under `model`. Adjacent stretches with the same pair and
/// cookies merge into one violation.
pub fn check_trace_with(events: &[TraceEvent], smt_groups: &[CpuMask], end_ns: u64, model: CheckModel) -> Result<CheckReport, Errno> {
    let mut group_of = alloc::vec![usize::MAX; NR_CPUS];
    for (g, m) in smt_groups.iter().enumerate() {
        for cpu in m.iter() {
            if group_of[cpu] != usize::MAX {
                return Err(Errno::EINVAL);
            }
            group_of[cpu] = g;
        }
    }
    let mut last = 0;
    for e in events {
        if e.time_ns < last || e.cpu >= NR_CPUS {
            return Err(Errno::EINVAL);
        }
        last = e.time_ns;
    }

    let mut state: alloc::vec::Vec<Option<CpuState>> = alloc::vec![None; NR_CPUS];
    let mut since = alloc::vec![0u64; NR_CPUS];
    // Open violation per (cpu_a, cpu_b): (start, cookie_a, cookie_b).
    let mut open: BTreeMap<(usize, usize), (u64, CookieId, CookieId)> = BTreeMap::new();
    let mut report = CheckReport::default();
    let start = match events.first() {
        Some(e) if e.time_ns < end_ns => e.time_ns,
        _ => return Ok(report),
    };
    report.checked_ns = end_ns - start;
    report.switches = events.len() as u64;

    let mut i = 0;
    while i < events.len() && events[i].time_ns < end_ns {
        let t = events[i].time_ns;
        let mut changed = CpuMask::EMPTY;
        while i < events.len() && events[i].time_ns == t {
            let e = events[i];
            if state[e.cpu] == Some(CpuState::ForcedIdle) {
                report.forced_idle_ns += t - since[e.cpu];
            }
            state[e.cpu] = Some(e.state);
            since[e.cpu] = t;
            changed = changed.with(e.cpu);
            i += 1;
        }
        for cpu in changed.iter() {
            let Some(group) = smt_groups.get(group_of[cpu]) else { continue };
            for other in group.without(cpu).iter() {
                let (a, b) = if cpu < other { (cpu, other) } else { (other, cpu) };
                let now = conflict(state[a], state[b], model);
                let cur = open.get(&(a, b)).copied();
                match (cur, now) {
                    (Some((_, x, y)), Some((p, q))) if (x, y) == (p, q) => {}
                    (cur, now) => {
                        if let Some((s, x, y)) = cur {
                            open.remove(&(a, b));
                            if s < t {
                                report.violations.push(Violation { start_ns: s, end_ns: t, cpu_a: a, cpu_b: b, cookie_a: x, cookie_b: y });
                            }
                        }
                        if let Some((p, q)) = now {
                            open.insert((a, b), (t, p, q));
                        }
                    }
                }
            }
        }
    }
    for ((a, b), (s, x, y)) in open {
        report.violations.push(Violation { start_ns: s, end_ns, cpu_a: a, cpu_b: b, cookie_a: x, cookie_b: y });
    }
    for cpu in 0..NR_CPUS {
        if state[cpu] == Some(CpuState::ForcedIdle) {
            report.forced_idle_ns += end_ns - since[cpu];
        }
    }
    report.violations.sort_by_key(|v| (v.start_ns, v.cpu_a, v.cpu_b, v.end_ns));
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    // ---- prctl -------------------------------------------------------------------------

    const ME: i32 = 100;

    fn task(tid: i32, tgid: i32, pgid: i32) -> TaskInfo {
        TaskInfo { tid, tgid, pgid, cookie: CookieId::NONE }
    }

    /// The selftest's world: the caller (100) leads process group 100 with 3 child processes
    /// of 3 extra threads each; process 900 lives in another process group.
    fn world() -> Vec<TaskInfo> {
        let mut v = vec![task(ME, ME, ME)];
        for p in [200, 300, 400] {
            v.push(task(p, p, ME));
            for t in 1..=3 {
                v.push(task(p + t, p, ME));
            }
        }
        v.push(task(900, 900, 900));
        v.push(task(901, 900, 900));
        v
    }

    struct Sys {
        reg: CookieRegistry,
        tasks: Vec<TaskInfo>,
        denied: Vec<i32>,
    }

    impl Sys {
        fn new() -> Self {
            Sys { reg: CookieRegistry::new(), tasks: world(), denied: vec![] }
        }
        fn prctl(&mut self, cmd: u64, pid: i64, ty: u64, uaddr: u64) -> Result<PrctlOutcome, Errno> {
            let denied = self.denied.clone();
            let out =
                sched_core_share_pid(&mut self.reg, &self.tasks, ME, [cmd, pid as u64, ty, uaddr], true, |t| !denied.contains(&t.tid))?;
            if let PrctlOutcome::Assign(a) = &out {
                for x in a {
                    let t = self.tasks.iter_mut().find(|t| t.tid == x.tid).unwrap();
                    assert_eq!(t.cookie, x.old);
                    t.cookie = x.new;
                }
            }
            self.check_refcounts();
            Ok(out)
        }
        fn ok(&mut self, cmd: u32, pid: i32, ty: u32) {
            self.prctl(cmd as u64, pid as i64, ty as u64, 0).unwrap();
        }
        /// `get_cs_cookie(pid)` of the selftest.
        fn get(&mut self, pid: i32) -> u64 {
            match self.prctl(PR_SCHED_CORE_GET as u64, pid as i64, PIDTYPE_PID as u64, 0x1000).unwrap() {
                PrctlOutcome::Get { value, uaddr } => {
                    assert_eq!(uaddr, 0x1000);
                    value
                }
                o => panic!("{o:?}"),
            }
        }
        /// Invariant: each live cookie's refcount is the number of tasks holding it.
        fn check_refcounts(&self) {
            let mut count: BTreeMap<u64, u64> = BTreeMap::new();
            for t in &self.tasks {
                if !t.cookie.is_none() {
                    *count.entry(t.cookie.0).or_default() += 1;
                }
            }
            assert_eq!(self.reg.live(), count.len(), "{:?} vs {count:?}", self.reg);
            for (c, n) in count {
                assert_eq!(self.reg.refcount(CookieId(c)), n);
            }
        }
    }

    #[test]
    fn constants_match_linux() {
        assert_eq!(PR_SCHED_CORE, 62);
        assert_eq!(
            [PR_SCHED_CORE_GET, PR_SCHED_CORE_CREATE, PR_SCHED_CORE_SHARE_TO, PR_SCHED_CORE_SHARE_FROM, PR_SCHED_CORE_MAX],
            [0, 1, 2, 3, 4]
        );
        assert_eq!([PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID], [0, 1, 2]);
        assert_eq!(Cmd::from_raw(2), Ok(Cmd::ShareTo));
        assert_eq!(Cmd::ShareFrom.name(), "PR_SCHED_CORE_SHARE_FROM");
        assert_eq!(PidType::from_raw(3), Err(Errno::EINVAL));
    }

    #[test]
    fn create_fails_with_enomem_where_it_allocates() {
        let mut reg = CookieRegistry::new();
        let no = || false;
        // Argument and lookup errors come first, as in Linux.
        assert_eq!(sched_core_share_pid_with(&mut reg, &world(), ME, [1, 0, 3, 0], true, |_| true, no), Err(Errno::EINVAL));
        assert_eq!(sched_core_share_pid_with(&mut reg, &world(), ME, [1, 9999, 0, 0], true, |_| true, no), Err(Errno::ESRCH));
        assert_eq!(sched_core_share_pid_with(&mut reg, &world(), ME, [1, 0, 0, 0], true, |_| true, no), Err(Errno::ENOMEM));
        assert_eq!(reg.live(), 0, "nothing allocated");
        // Only CREATE allocates.
        assert!(sched_core_share_pid_with(&mut reg, &world(), ME, [0, 0, 0, 8], true, |_| true, no).is_ok());
    }

    #[test]
    fn enodev_without_smt_comes_first() {
        assert_eq!(validate_prctl(1, 0, 0, 0, false), Err(Errno::ENODEV));
        assert_eq!(validate_prctl(99, u64::MAX, 7, 3, false), Err(Errno::ENODEV));
        let mut reg = CookieRegistry::new();
        let r = sched_core_share_pid(&mut reg, &world(), ME, [1, 0, 0, 0], false, |_| true);
        assert_eq!(r, Err(Errno::ENODEV));
        assert_eq!(reg.live(), 0);
    }

    #[test]
    fn einval_before_lookup() {
        // Unknown command (PR_SCHED_CORE_MAX, as the selftest), unknown type, negative pid,
        // non-zero uaddr (selftest: SHARE_TO PGID with uaddr 1).
        assert_eq!(validate_prctl(4, 0, 2, 0, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl(1, 0, 3, 0, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl(1, -1i64 as u64, 0, 0, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl(2, 0, 2, 1, true), Err(Errno::EINVAL));
        for cmd in [1, 2, 3] {
            assert_eq!(validate_prctl(cmd, 0, 0, 8, true), Err(Errno::EINVAL));
        }
        // C truncation: cmd is unsigned int, pid is pid_t.
        assert_eq!(validate_prctl((1 << 32) | 1, 0, 0, 0, true).unwrap().cmd, Cmd::Create);
        assert_eq!(validate_prctl(1, 0xffff_ffff, 0, 0, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl(1, 0x1_0000_0000 | 5, 0, 0, true).unwrap().pid, 5);
        let mut s = Sys::new();
        // These fail with EINVAL even though pid 12345 does not exist.
        assert_eq!(s.prctl(4, 12345, 0, 0), Err(Errno::EINVAL));
        assert_eq!(s.prctl(1, 12345, 0, 1), Err(Errno::EINVAL));
        assert_eq!(s.prctl(2, 0, 2, 1), Err(Errno::EINVAL));
        assert_eq!(s.reg.live(), 0);
    }

    #[test]
    fn get_and_share_from_scope_checks_come_after_lookup_and_access() {
        let mut s = Sys::new();
        // GET/SHARE_FROM with a group scope: ESRCH wins for a missing task...
        assert_eq!(s.prctl(0, 12345, 1, 8), Err(Errno::ESRCH));
        assert_eq!(s.prctl(3, 12345, 2, 0), Err(Errno::ESRCH));
        // ...EPERM for a denied one...
        s.denied = vec![200];
        assert_eq!(s.prctl(0, 200, 1, 8), Err(Errno::EPERM));
        assert_eq!(s.prctl(3, 200, 1, 0), Err(Errno::EPERM));
        // ...and EINVAL for an accessible one.
        assert_eq!(s.prctl(0, 300, 1, 8), Err(Errno::EINVAL));
        assert_eq!(s.prctl(0, 300, 2, 8), Err(Errno::EINVAL));
        assert_eq!(s.prctl(3, 300, 1, 0), Err(Errno::EINVAL));
        assert_eq!(s.prctl(3, 300, 2, 0), Err(Errno::EINVAL));
        // GET: uaddr must be 8-byte aligned; 0 passes (the copy-out gives EFAULT).
        for bad in [1, 2, 4, 7, 0x1004] {
            assert_eq!(s.prctl(0, 0, 0, bad), Err(Errno::EINVAL));
        }
        assert_eq!(s.prctl(0, 0, 0, 0), Ok(PrctlOutcome::Get { value: 0, uaddr: 0 }));
        assert_eq!(validate_prctl_full(0, 0, 0, 0, true), Ok(Cmd::Get));
        assert_eq!(validate_prctl_full(0, 0, 0, 4, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl_full(0, 0, 1, 8, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl_full(3, 0, 2, 0, true), Err(Errno::EINVAL));
        assert_eq!(validate_prctl_full(2, 0, 2, 0, true), Ok(Cmd::ShareTo));
        assert_eq!(validate_prctl_full(1, 0, 1, 0, true), Ok(Cmd::Create));
        // ESRCH for missing targets of every command.
        for cmd in [0, 1, 2, 3] {
            assert_eq!(s.prctl(cmd, 777, 0, 0), Err(Errno::ESRCH));
        }
        assert_eq!(s.reg.live(), 0);
    }

    /// tools/testing/selftests/sched/cs_prctl_test.c, step by step.
    #[test]
    fn cs_prctl_test_port() {
        let mut s = Sys::new();
        // Cookies start at 0.
        assert_eq!(s.get(0), 0);
        assert!(s.tasks.iter().all(|t| t.cookie.is_none()));

        // CREATE over the process group reaches every member, threads included.
        s.ok(PR_SCHED_CORE_CREATE, 0, PIDTYPE_PGID);
        let pg = s.get(0);
        assert_ne!(pg, 0);
        for tid in [200, 201, 203, 300, 302, 400, 401] {
            assert_eq!(s.get(tid), pg);
        }
        assert_eq!(s.get(900), 0, "other process groups are untouched");
        assert_eq!(s.reg.refcount(s.tasks[0].cookie), 13);

        // CREATE over a thread group: one new cookie for all its threads.
        let pid = 300;
        s.ok(PR_SCHED_CORE_CREATE, pid, PIDTYPE_TGID);
        let tg = s.get(pid);
        assert_ne!(tg, 0);
        assert_ne!(tg, pg);
        for tid in [301, 302, 303] {
            assert_eq!(s.get(tid), tg);
        }
        assert_eq!(s.get(0), pg);
        assert_eq!(s.get(200), pg);

        // SHARE_TO the process leader only (PIDTYPE_PID).
        s.ok(PR_SCHED_CORE_SHARE_TO, pid, PIDTYPE_PID);
        assert_eq!(s.get(pid), s.get(0));
        assert_ne!(s.get(pid), 0);
        assert_ne!(s.get(pid), s.get(301));

        // SHARE_FROM a thread to the caller.
        s.ok(PR_SCHED_CORE_SHARE_FROM, 301, PIDTYPE_PID);
        assert_eq!(s.get(0), s.get(301));
        assert_ne!(s.get(pid), s.get(301));

        // SHARE_TO the caller's whole process group (including itself).
        s.ok(PR_SCHED_CORE_SHARE_TO, 0, PIDTYPE_PGID);
        assert_eq!(s.get(0), s.get(pid));
        assert_ne!(s.get(pid), 0);
        assert_eq!(s.get(pid), s.get(301));
        assert_eq!(s.get(200), tg);
        // The process-group cookie lost all its tasks and was freed.
        assert_eq!(s.reg.live(), 1);

        // Invalid command and non-zero uaddr.
        assert_eq!(s.prctl(PR_SCHED_CORE_MAX as u64, 0, PIDTYPE_PGID as u64, 0), Err(Errno::EINVAL));
        assert_eq!(s.prctl(PR_SCHED_CORE_SHARE_TO as u64, 0, PIDTYPE_PGID as u64, 1), Err(Errno::EINVAL));
    }

    #[test]
    fn share_to_with_cookie_zero_clears_and_frees() {
        let mut s = Sys::new();
        s.ok(PR_SCHED_CORE_CREATE, 200, PIDTYPE_TGID);
        assert_eq!(s.reg.live(), 1);
        assert!(s.reg.enabled());
        s.ok(PR_SCHED_CORE_SHARE_TO, 200, PIDTYPE_TGID);
        assert_eq!(s.get(201), 0);
        assert_eq!(s.reg.live(), 0);
        assert!(!s.reg.enabled());
        // No-op changes are not returned.
        assert_eq!(s.prctl(2, 200, 1, 0), Ok(PrctlOutcome::Assign(vec![])));
        assert_eq!(s.prctl(3, 901, 0, 0), Ok(PrctlOutcome::Assign(vec![])));
    }

    #[test]
    fn create_pid_scope_touches_one_thread_and_returns_assignments() {
        let mut s = Sys::new();
        let out = s.prctl(1, 202, 0, 0).unwrap();
        let c = s.tasks.iter().find(|t| t.tid == 202).unwrap().cookie;
        assert_eq!(out, PrctlOutcome::Assign(vec![CookieAssignment { tid: 202, old: CookieId::NONE, new: c }]));
        assert_eq!(s.get(201), 0);
        assert_eq!(s.get(200), 0);
        // Two CREATEs give different cookies.
        s.ok(1, 201, 0);
        assert_ne!(s.get(201), s.get(202));
    }

    #[test]
    fn eperm_on_any_group_member_changes_nothing() {
        let mut s = Sys::new();
        s.ok(PR_SCHED_CORE_CREATE, 900, PIDTYPE_PID);
        let before = s.tasks.clone();
        let reg_before = s.reg.clone();
        s.denied = vec![303];
        for cmd in [1, 2] {
            assert_eq!(s.prctl(cmd, 300, 1, 0), Err(Errno::EPERM));
            assert_eq!(s.prctl(cmd, 0, 2, 0), Err(Errno::EPERM));
        }
        assert_eq!(s.tasks, before);
        assert_eq!(s.reg.live(), reg_before.live());
        // A denied target fails before anything.
        s.denied = vec![900];
        assert_eq!(s.prctl(2, 900, 0, 0), Err(Errno::EPERM));
        assert_eq!(s.prctl(0, 900, 0, 0), Err(Errno::EPERM));
        // The caller can always act on itself unless the check says otherwise.
        s.denied = vec![];
        s.ok(3, 900, 0);
        assert_eq!(s.get(0), s.get(900));
    }

    #[test]
    fn registry_refcounts_fork_exit_and_values() {
        let mut r = CookieRegistry::new();
        let a = r.create().unwrap();
        assert_eq!(a, CookieId(1));
        assert_eq!(r.refcount(a), 1);
        let child = r.fork(a).unwrap();
        assert_eq!((child, r.refcount(a)), (a, 2));
        assert_eq!(r.fork(CookieId::NONE), Ok(CookieId::NONE));
        assert_eq!(r.refcount(CookieId::NONE), 0);
        assert_eq!(r.exit(a), Ok(false));
        assert_eq!(r.exit(a), Ok(true));
        assert!(!r.is_live(a) && r.is_live(CookieId::NONE));
        assert_eq!(r.get(a), Err(Errno::EINVAL));
        assert_eq!(r.put(a), Err(Errno::EINVAL));
        assert_eq!(r.set(CookieId::NONE, a), Err(Errno::EINVAL));
        // Ids are never reused.
        let b = r.create().unwrap();
        assert_eq!(b, CookieId(2));
        r.set(b, b).unwrap();
        assert_eq!(r.refcount(b), 1);
        assert_eq!(r.get_value(CookieId::NONE), 0);
        assert_ne!(r.get_value(b), 0);
        assert_ne!(r.get_value(b), b.0);
        assert_eq!(r.get_value(b), CookieId(2).value());
    }

    proptest! {
        #[test]
        fn cookie_values_are_injective_and_zero_only_for_none(a in any::<u64>(), b in any::<u64>()) {
            prop_assert_eq!(CookieId(a).value() == CookieId(b).value(), a == b);
            prop_assert_eq!(CookieId(a).value() == 0, a == 0);
        }

        /// Random prctl sequences from random callers keep refcounts exact and never leave a
        /// task with a dead cookie.
        #[test]
        fn prctl_sequences_keep_refcounts(ops in prop::collection::vec((0u64..5, 0usize..20, 0u64..4, 0u64..3), 1..40)) {
            let mut reg = CookieRegistry::new();
            let mut tasks = world();
            for (cmd, who, ty, uaddr) in ops {
                let n = tasks.len();
                let me = tasks[who % n].tid;
                let target = if who % 3 == 0 { 0 } else { tasks[(who * 7) % n].tid };
                let uaddr = [0, 8, 3][uaddr as usize];
                if let Ok(PrctlOutcome::Assign(a)) =
                    sched_core_share_pid(&mut reg, &tasks, me, [cmd, target as u64, ty, uaddr], true, |t| t.tid != 401)
                {
                    for x in a {
                        tasks.iter_mut().find(|t| t.tid == x.tid).unwrap().cookie = x.new;
                    }
                }
                let mut count: BTreeMap<u64, u64> = BTreeMap::new();
                for t in &tasks {
                    prop_assert!(reg.is_live(t.cookie));
                    if !t.cookie.is_none() {
                        *count.entry(t.cookie.0).or_default() += 1;
                    }
                }
                prop_assert_eq!(reg.live(), count.len());
                for (c, k) in count {
                    prop_assert_eq!(reg.refcount(CookieId(c)), k);
                }
            }
        }
    }

    // ---- core-wide pick ----------------------------------------------------------------

    fn fair(task: u32, key: i64, cookie: u64) -> Candidate<u32> {
        Candidate { task, rank: Rank::Fair { key }, cookie: CookieId(cookie) }
    }
    fn rt(task: u32, rt_priority: u8, cookie: u64) -> Candidate<u32> {
        Candidate { task, rank: Rank::Rt { rt_priority }, cookie: CookieId(cookie) }
    }

    #[test]
    fn rank_order() {
        assert!(Rank::Rt { rt_priority: 1 } > Rank::Fair { key: i64::MIN });
        assert!(Rank::Rt { rt_priority: 50 } > Rank::Rt { rt_priority: 49 });
        assert!(Rank::Dl { deadline: u64::MAX } > Rank::Rt { rt_priority: 99 });
        assert!(Rank::Dl { deadline: 10 } > Rank::Dl { deadline: 20 });
        assert!(Rank::Dl { deadline: u64::MAX - 5 } > Rank::Dl { deadline: 5 }, "wrapping: MAX-5 is before 5");
        assert!(Rank::Fair { key: -5 } > Rank::Fair { key: 3 });
        assert_eq!(Rank::Fair { key: 3 }.cmp(&Rank::Fair { key: 3 }), Ordering::Equal);
    }

    #[test]
    fn no_cookies_everyone_runs_their_best() {
        let p = pick_core(&[vec![fair(1, 10, 0), fair(2, 5, 0)], vec![fair(3, 100, 0)]], 0);
        assert_eq!(p.picks, vec![Pick::Task(2), Pick::Task(3)]);
        assert_eq!((p.cookie, p.max, p.forceidle_count, p.occupation), (CookieId::NONE, Some(0), 0, 2));
    }

    #[test]
    fn sibling_runs_matching_task_or_is_forced_idle() {
        // max is cookie 7 on cpu 0; cpu 1's best is cookie 9 but it also has a cookie-7 task.
        let p = pick_core(&[vec![rt(1, 10, 7)], vec![fair(2, 0, 9), fair(3, 50, 7)]], 1);
        assert_eq!(p.picks, vec![Pick::Task(1), Pick::Task(3)]);
        assert_eq!(p.cookie, CookieId(7));
        // Without it, cpu 1 is forced idle.
        let p = pick_core(&[vec![rt(1, 10, 7)], vec![fair(2, 0, 9)], vec![]], 1);
        assert_eq!(p.picks, vec![Pick::Task(1), Pick::ForceIdle, Pick::Idle]);
        assert_eq!((p.max, p.forceidle_count, p.occupation), (Some(0), 1, 1));
        // Cookie 0 is not trusted by cookied tasks, nor the reverse.
        let p = pick_core(&[vec![fair(1, 0, 0)], vec![fair(2, 5, 3)]], 0);
        assert_eq!(p.picks, vec![Pick::Task(1), Pick::ForceIdle]);
        let p = pick_core(&[vec![fair(1, 0, 3)], vec![fair(2, 5, 0)]], 0);
        assert_eq!(p.picks, vec![Pick::Task(1), Pick::ForceIdle]);
    }

    #[test]
    fn cookie_zero_max_finds_cookie_zero_tasks_deeper_in_the_queue() {
        // Cadence's choice (Linux would force cpu 1 idle: its core tree has no cookie-0 tasks).
        let p = pick_core(&[vec![rt(1, 5, 0)], vec![fair(2, 0, 4), fair(3, 9, 0)]], 0);
        assert_eq!(p.picks, vec![Pick::Task(1), Pick::Task(3)]);
        assert_eq!(p.forceidle_count, 0);
    }

    #[test]
    fn ties_go_to_the_calling_cpu_then_wrap_order() {
        let s = [vec![fair(1, 5, 1)], vec![fair(2, 5, 2)], vec![fair(3, 5, 3)]];
        for this in 0..3 {
            let p = pick_core(&s, this);
            assert_eq!(p.max, Some(this));
            assert_eq!(p.cookie, CookieId(this as u64 + 1));
            assert_eq!(p.forceidle_count, 2);
        }
        // Out-of-range caller counts as 0; within a CPU the first of equals wins.
        assert_eq!(pick_core(&s, 9).max, Some(0));
        assert_eq!(pick_core(&[vec![fair(1, 5, 0), fair(2, 5, 0)]], 0).picks, vec![Pick::Task(1)]);
    }

    #[test]
    fn nothing_runnable() {
        let p = pick_core::<u32, Vec<Candidate<u32>>>(&[vec![], vec![]], 0);
        assert_eq!(p.picks, vec![Pick::Idle, Pick::Idle]);
        assert_eq!((p.cookie, p.max, p.forceidle_count, p.occupation), (CookieId::NONE, None, 0, 0));
        assert!(pick_core::<u32, &[Candidate<u32>]>(&[], 0).picks.is_empty());
    }

    #[test]
    fn fast_path() {
        assert!(!core_wide_pick_needed(CookieId::NONE, 0, None));
        assert!(!core_wide_pick_needed(CookieId::NONE, 0, Some(CookieId::NONE)));
        assert!(core_wide_pick_needed(CookieId::NONE, 0, Some(CookieId(1))));
        assert!(core_wide_pick_needed(CookieId(1), 0, Some(CookieId::NONE)));
        assert!(core_wide_pick_needed(CookieId::NONE, 1, None));
    }

    fn candidate() -> impl Strategy<Value = Candidate<u32>> {
        (
            any::<u32>(),
            prop_oneof![
                (-20i64..20).prop_map(|key| Rank::Fair { key }),
                (0u8..4).prop_map(|rt_priority| Rank::Rt { rt_priority }),
                (0u64..4).prop_map(|deadline| Rank::Dl { deadline })
            ],
            0u64..4,
        )
            .prop_map(|(task, rank, c)| Candidate { task, rank, cookie: CookieId(c) })
    }

    fn core() -> impl Strategy<Value = (Vec<Vec<Candidate<u32>>>, usize)> {
        (prop::collection::vec(prop::collection::vec(candidate(), 0..5), 1..5), 0usize..5)
    }

    proptest! {
        #[test]
        fn pick_invariants((sib, this) in core()) {
            let p = pick_core(&sib, this);
            prop_assert_eq!(p.picks.len(), sib.len());
            let all: Vec<&Candidate<u32>> = sib.iter().flatten().collect();
            // Compatibility: every selected task carries the core cookie.
            for (i, pk) in p.picks.iter().enumerate() {
                match *pk {
                    Pick::Task(t) => {
                        let c = sib[i].iter().find(|c| c.task == t).unwrap();
                        prop_assert_eq!(c.cookie, p.cookie);
                        // It is the best compatible candidate of its CPU.
                        prop_assert!(sib[i].iter().filter(|x| x.cookie == p.cookie).all(|x| x.rank <= c.rank));
                    }
                    // Forced idle only with runnable but incompatible candidates.
                    Pick::ForceIdle => prop_assert!(!sib[i].is_empty() && sib[i].iter().all(|x| x.cookie != p.cookie)),
                    Pick::Idle => prop_assert!(sib[i].is_empty()),
                }
            }
            prop_assert_eq!(p.forceidle_count as usize, p.picks.iter().filter(|x| **x == Pick::ForceIdle).count());
            prop_assert_eq!(p.occupation as usize, p.picks.iter().filter(|x| matches!(x, Pick::Task(_))).count());
            // The highest-priority runnable task runs (one of the top rank, on its CPU).
            match p.max {
                None => prop_assert!(all.is_empty()),
                Some(m) => {
                    let top = all.iter().map(|c| c.rank).max().unwrap();
                    let Pick::Task(t) = p.picks[m] else { return Err(TestCaseError::fail("max not running")) };
                    let c = sib[m].iter().find(|c| c.task == t).unwrap();
                    prop_assert_eq!(c.rank, top);
                    prop_assert_eq!(c.cookie, p.cookie);
                    // Ties go to the first CPU in wrap order from `this`.
                    let n = sib.len();
                    let start = if this < n { this } else { 0 };
                    let first = (start..n).chain(0..start).find(|&i| sib[i].iter().any(|c| c.rank == top)).unwrap();
                    prop_assert_eq!(m, first);
                }
            }
            // Without any cookie, nobody is ever forced idle.
            if all.iter().all(|c| c.cookie.is_none()) {
                prop_assert_eq!(p.forceidle_count, 0);
            }
        }
    }

    proptest! {
        /// Offered best first, a list of the best task per cookie picks as the full lists do
        /// while there is room for every cookie.
        #[test]
        fn candidate_list_picks_as_the_full_list((mut sib, this) in core()) {
            for s in sib.iter_mut() {
                s.sort_by_key(|c| core::cmp::Reverse(c.rank)); // stable: equal ranks keep their order
            }
            let lists: Vec<CandidateList<u32, 4>> = sib
                .iter()
                .map(|s| {
                    let mut l = CandidateList::new();
                    for &c in s {
                        prop_assert!(l.offer(c), "4 cookies fit in 4");
                    }
                    Ok(l)
                })
                .collect::<Result<_, TestCaseError>>()?;
            let (full, kept) = (pick_core(&sib, this), pick_core(&lists, this));
            prop_assert_eq!(full, kept);
            // Past its room a list says so.
            let mut small: CandidateList<u32, 1> = CandidateList::new();
            for c in sib.iter().flatten() {
                small.offer(*c);
            }
            let cookies: alloc::collections::BTreeSet<_> = sib.iter().flatten().map(|c| c.cookie).collect();
            prop_assert_eq!(small.as_ref().len(), cookies.len().min(1));
            prop_assert_eq!(small.dropped() > 0, cookies.len() > 1);
        }
    }

    // ---- forced-idle accounting --------------------------------------------------------

    #[test]
    fn forceidle_charge_matches_linux_scaling() {
        assert_eq!(forceidle_charge(100, 1, 1), 100);
        assert_eq!(forceidle_charge(100, 2, 1), 200);
        assert_eq!(forceidle_charge(100, 1, 2), 50);
        assert_eq!(forceidle_charge(100, 3, 2), 150);
        assert_eq!(forceidle_charge(100, 0, 1), 0);
        assert_eq!(forceidle_charge(100, 1, 0), 0);
        assert_eq!(forceidle_charge(u64::MAX, 4, 1), u64::MAX);
    }

    #[test]
    fn account_forceidle_charges_the_running_tasks() {
        let spans = [
            ForceIdleSpan { start_ns: 0, end_ns: 1000, forceidle_count: 1, running: vec![7u32] },
            ForceIdleSpan { start_ns: 1000, end_ns: 1600, forceidle_count: 2, running: vec![7, 8] },
            ForceIdleSpan { start_ns: 2000, end_ns: 1900, forceidle_count: 1, running: vec![9] },
            ForceIdleSpan { start_ns: 2000, end_ns: 2500, forceidle_count: 1, running: vec![] },
        ];
        assert_eq!(account_forceidle(&spans), vec![(7, 1600), (8, 600)]);
    }

    proptest! {
        #[test]
        fn accounting_conserves_forced_idle_time(delta in 0u64..1_000_000_000, count in 1u32..4, occ in 1u32..4) {
            let running: Vec<u32> = (0..occ).collect();
            let got = account_forceidle(&[ForceIdleSpan { start_ns: 5, end_ns: 5 + delta, forceidle_count: count, running }]);
            let total: u64 = got.iter().map(|x| x.1).sum();
            let want = delta * count as u64;
            prop_assert!(total <= want && want - total < occ as u64);
        }
    }

    // ---- checker -----------------------------------------------------------------------

    fn ev(time_ns: u64, cpu: usize, state: CpuState) -> TraceEvent {
        TraceEvent { time_ns, cpu, state }
    }
    fn tk(c: u64) -> CpuState {
        CpuState::Task(CookieId(c))
    }
    fn pairs() -> Vec<CpuMask> {
        vec![CpuMask::from_u64(0b0011), CpuMask::from_u64(0b1100)]
    }

    #[test]
    fn empty_trace_and_summary_line() {
        let r = check_trace(&[], &pairs(), 100).unwrap();
        assert_eq!(r, CheckReport::default());
        assert_eq!(alloc::format!("{r}"), "coresched check: violations=0 checked_ns=0 forced_idle_ns=0");
        let r = CheckReport {
            violations: vec![Violation { start_ns: 0, end_ns: 1, cpu_a: 0, cpu_b: 1, cookie_a: CookieId(1), cookie_b: CookieId(2) }],
            checked_ns: 5,
            forced_idle_ns: 3,
            switches: 2,
        };
        assert_eq!(alloc::format!("{r}"), "coresched check: violations=1 checked_ns=5 forced_idle_ns=3");
    }

    #[test]
    fn finds_overlap_of_different_cookies() {
        let e = [ev(100, 0, tk(1)), ev(110, 1, tk(2)), ev(130, 1, CpuState::Idle), ev(140, 2, tk(3))];
        let r = check_trace(&e, &pairs(), 200).unwrap();
        assert_eq!(
            r.violations,
            vec![Violation { start_ns: 110, end_ns: 130, cpu_a: 0, cpu_b: 1, cookie_a: CookieId(1), cookie_b: CookieId(2) }]
        );
        assert_eq!((r.checked_ns, r.forced_idle_ns), (100, 0));
    }

    #[test]
    fn cookie_zero_beside_a_cookie_is_a_violation_only_when_strict() {
        let e = [ev(0, 0, tk(0)), ev(0, 1, tk(5)), ev(10, 1, CpuState::ForcedIdle)];
        let r = check_trace(&e, &pairs(), 50).unwrap();
        assert_eq!(r.violations.len(), 1);
        assert_eq!((r.violations[0].cookie_a, r.violations[0].cookie_b), (CookieId(0), CookieId(5)));
        assert_eq!((r.violations[0].start_ns, r.violations[0].end_ns), (0, 10));
        assert_eq!(r.forced_idle_ns, 40);
        let r = check_trace_with(&e, &pairs(), 50, CheckModel::NonZeroOnly).unwrap();
        assert!(r.violations.is_empty());
        // Two equal cookies, two zeros, idle, and non-siblings are all fine.
        let e = [ev(0, 0, tk(4)), ev(0, 1, tk(4)), ev(0, 2, tk(0)), ev(0, 3, tk(0)), ev(5, 3, CpuState::Idle), ev(6, 2, tk(9))];
        assert!(check_trace(&e, &pairs(), 50).unwrap().violations.is_empty());
    }

    #[test]
    fn simultaneous_switches_merge_and_split() {
        // Both switch at t=10: no overlap.
        let e = [ev(0, 0, tk(1)), ev(0, 1, tk(1)), ev(10, 0, tk(2)), ev(10, 1, tk(2))];
        assert!(check_trace(&e, &pairs(), 20).unwrap().violations.is_empty());
        // Same cookies across a task switch merge; a cookie change splits.
        let e = [ev(0, 0, tk(1)), ev(0, 1, tk(2)), ev(5, 1, tk(2)), ev(8, 1, tk(3)), ev(12, 0, tk(3))];
        let r = check_trace(&e, &pairs(), 20).unwrap();
        let spans: Vec<_> = r.violations.iter().map(|v| (v.start_ns, v.end_ns, v.cookie_b.0)).collect();
        assert_eq!(spans, vec![(0, 8, 2), (8, 12, 3)]);
        // Open at the end: closed at end_ns; events at or after end_ns are ignored.
        let e = [ev(0, 2, tk(1)), ev(3, 3, tk(2)), ev(30, 3, CpuState::Idle)];
        let r = check_trace(&e, &pairs(), 30).unwrap();
        assert_eq!((r.violations[0].start_ns, r.violations[0].end_ns, r.violations[0].cpu_a), (3, 30, 2));
    }

    #[test]
    fn three_threads_per_core_report_every_pair() {
        let e = [ev(0, 0, tk(1)), ev(0, 1, tk(2)), ev(0, 2, tk(3))];
        let r = check_trace(&e, &[CpuMask::from_u64(0b111)], 10).unwrap();
        let p: Vec<_> = r.violations.iter().map(|v| (v.cpu_a, v.cpu_b)).collect();
        assert_eq!(p, vec![(0, 1), (0, 2), (1, 2)]);
    }

    #[test]
    fn bad_input() {
        assert_eq!(check_trace(&[ev(5, 0, tk(1)), ev(4, 1, tk(1))], &pairs(), 10), Err(Errno::EINVAL));
        assert_eq!(check_trace(&[ev(5, NR_CPUS, tk(1))], &pairs(), 10), Err(Errno::EINVAL));
        assert_eq!(check_trace(&[], &[CpuMask::from_u64(0b11), CpuMask::from_u64(0b110)], 10), Err(Errno::EINVAL));
        // CPUs outside every group are tracked for forced idle only.
        let r = check_trace(&[ev(0, 9, CpuState::ForcedIdle), ev(0, 8, tk(1))], &pairs(), 10).unwrap();
        assert_eq!((r.violations.len(), r.forced_idle_ns), (0, 10));
    }

    /// Brute force: per-ns conflict time per pair, and forced-idle ns.
    fn brute(events: &[TraceEvent], groups: &[CpuMask], end: u64, model: CheckModel) -> (BTreeMap<(usize, usize), u64>, u64) {
        let mut conflicts = BTreeMap::new();
        let mut fi = 0;
        for t in 0..end {
            let mut st: [Option<CpuState>; 8] = [None; 8];
            for e in events.iter().filter(|e| e.time_ns <= t) {
                st[e.cpu] = Some(e.state);
            }
            fi += st.iter().filter(|s| **s == Some(CpuState::ForcedIdle)).count() as u64;
            for g in groups {
                for a in g.iter() {
                    for b in g.iter().filter(|&b| b > a) {
                        if conflict(st[a], st[b], model).is_some() {
                            *conflicts.entry((a, b)).or_insert(0) += 1;
                        }
                    }
                }
            }
        }
        (conflicts, fi)
    }

    fn trace() -> impl Strategy<Value = Vec<TraceEvent>> {
        let state = prop_oneof![(0u64..3).prop_map(tk), Just(CpuState::Idle), Just(CpuState::ForcedIdle)];
        prop::collection::vec((0u64..3, 0usize..6, state), 0..30).prop_map(|v| {
            let mut t = 0;
            v.into_iter()
                .map(|(dt, cpu, state)| {
                    t += dt;
                    ev(t, cpu, state)
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn checker_matches_brute_force(events in trace(), end in 0u64..70, strict in any::<bool>()) {
            let groups = [CpuMask::from_u64(0b11), CpuMask::from_u64(0b11100)];
            let model = if strict { CheckModel::Strict } else { CheckModel::NonZeroOnly };
            let r = check_trace_with(&events, &groups, end, model).unwrap();
            let (want, fi) = brute(&events, &groups, end, model);
            let mut got: BTreeMap<(usize, usize), u64> = BTreeMap::new();
            for v in &r.violations {
                prop_assert!(v.start_ns < v.end_ns && v.end_ns <= end && v.cpu_a < v.cpu_b);
                prop_assert!(conflict(Some(CpuState::Task(v.cookie_a)), Some(CpuState::Task(v.cookie_b)), model).is_some());
                *got.entry((v.cpu_a, v.cpu_b)).or_insert(0) += v.end_ns - v.start_ns;
            }
            prop_assert_eq!(got, want);
            prop_assert_eq!(r.forced_idle_ns, fi);
            let first = events.first().map(|e| e.time_ns).filter(|&t| t < end);
            prop_assert_eq!(r.checked_ns, first.map_or(0, |t| end - t));
            // Sorted; violations of one pair never overlap, and touch only if cookies differ.
            for w in r.violations.windows(2) {
                prop_assert!(w[0].start_ns <= w[1].start_ns);
            }
            for (i, a) in r.violations.iter().enumerate() {
                for b in r.violations.iter().skip(i + 1).filter(|b| (b.cpu_a, b.cpu_b) == (a.cpu_a, a.cpu_b)) {
                    prop_assert!(a.end_ns <= b.start_ns);
                    if a.end_ns == b.start_ns {
                        prop_assert!((a.cookie_a, a.cookie_b) != (b.cookie_a, b.cookie_b));
                    }
                }
            }
        }

        /// End to end: a core running `pick_core` at every scheduling point produces traces
        /// with zero violations, and its forced-idle time is what the picks said.
        #[test]
        fn pick_driven_traces_have_no_violations(steps in prop::collection::vec((core(), 1u64..50), 1..30)) {
            let mut events = Vec::new();
            let mut t = 0;
            let mut fi_expected = 0;
            for ((mut sib, this), dt) in steps {
                sib.resize(2, vec![]);
                sib.truncate(2);
                let p = pick_core(&sib, this);
                for (cpu, pk) in p.picks.iter().enumerate() {
                    let state = match *pk {
                        Pick::Task(task) => CpuState::Task(sib[cpu].iter().find(|c| c.task == task).unwrap().cookie),
                        Pick::Idle => CpuState::Idle,
                        Pick::ForceIdle => CpuState::ForcedIdle,
                    };
                    events.push(ev(t, cpu, state));
                }
                fi_expected += p.forceidle_count as u64 * dt;
                t += dt;
            }
            let r = check_trace(&events, &[CpuMask::from_u64(0b11)], t).unwrap();
            prop_assert!(r.violations.is_empty(), "{:?}", r.violations);
            prop_assert_eq!(r.forced_idle_ns, fi_expected);
            prop_assert_eq!(r.checked_ns, t);
        }
    }
}
