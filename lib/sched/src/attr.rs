//! Scheduling policies and attributes: `sched_setattr(2)` / `sched_setscheduler(2)`
//! parameter validation with Linux's errno semantics (kernel/sched/syscalls.c).
//!
//! Validation order and results ([`SchedAttr::validate`]):
//! 1. unknown policy -> `EINVAL`;
//! 2. flag bits outside `SCHED_FLAG_ALL` -> `EINVAL`;
//! 3. `rt_priority > 99` -> `EINVAL`; FIFO/RR need `1..=99`, fair and deadline policies need
//!    `0` -> `EINVAL`; SCHED_DEADLINE's runtime/deadline/period failing
//!    [`DlParams::check`](crate::deadline::DlParams::check) (Linux `__checkparam_dl`) -> `EINVAL`;
//! 4. nice outside `-20..=19` -> `EINVAL` (see below);
//! 5. util-clamp flags -> `EOPNOTSUPP` (Linux without CONFIG_UCLAMP_TASK);
//!    `SCHED_FLAG_RECLAIM` on SCHED_DEADLINE -> `EOPNOTSUPP` (Cadence has no GRUB reclaiming:
//!    Linux would accept it, and ignoring it would run the task without what it asked for).
//!    SCHED_DEADLINE keeps `SCHED_FLAG_DL_OVERRUN` in its parameters
//!    ([`DlParams::flags`](crate::deadline::DlParams::flags)); other policies ignore both
//!    deadline flags, as Linux.
//!
//! A non-zero `slice_ns` (`sched_attr.sched_runtime`) on a fair policy requests a custom
//! slice, clamped to `[0.1 ms, 100 ms]` exactly like Linux `__setscheduler_params`;
//! `0` means "use the base slice". It is ignored for RT policies.
//!
//! Nice range — strict vs. lenient: Cadence's `validate()` rejects an out-of-range nice
//! with `EINVAL`. Linux's `sched_setattr` is lenient: `sched_copy_attr` clamps
//! `sched_nice` into range *before* validation (an "XXX" comment there questions it), and
//! `setpriority(2)`/`nice(2)` clamp too. A syscall layer that wants bit-for-bit Linux
//! behaviour applies [`clamp_nice`] to the raw value before calling `validate()`.
//!
//! Permission checks (`EPERM`) are separate: [`check_permission`] mirrors Linux
//! `user_check_sched_setscheduler` given the caller's credentials and rlimits.

use crate::consts::*;
use crate::errno::Errno;
use crate::weight::{nice_to_weight, WEIGHT_IDLEPRIO};

/// Shortest custom slice (Linux: `NSEC_PER_MSEC / 10`).
pub const SCHED_SLICE_MIN_NS: u64 = NSEC_PER_MSEC / 10;
/// Longest custom slice (Linux: `NSEC_PER_MSEC * 100`).
pub const SCHED_SLICE_MAX_NS: u64 = NSEC_PER_MSEC * 100;

/// A scheduling policy Cadence implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// SCHED_NORMAL (SCHED_OTHER): EEVDF fair class.
    Normal,
    /// SCHED_FIFO: real-time, runs until it blocks or yields.
    Fifo,
    /// SCHED_RR: real-time with a round-robin timeslice.
    RR,
    /// SCHED_BATCH: fair class, never preempts on wakeup.
    Batch,
    /// SCHED_IDLE: fair class with weight 3, preempted by any non-idle waker.
    Idle,
    /// SCHED_DEADLINE: EDF with CBS bandwidth (`crate::deadline`).
    Deadline,
}

impl Policy {
    /// Parses a policy number; unknown numbers give `EINVAL`.
    pub const fn from_raw(raw: i32) -> Result<Policy, Errno> {
        match raw {
            SCHED_NORMAL => Ok(Policy::Normal),
            SCHED_FIFO => Ok(Policy::Fifo),
            SCHED_RR => Ok(Policy::RR),
            SCHED_BATCH => Ok(Policy::Batch),
            SCHED_IDLE => Ok(Policy::Idle),
            SCHED_DEADLINE => Ok(Policy::Deadline),
            _ => Err(Errno::EINVAL),
        }
    }

    /// The Linux policy number.
    pub const fn raw(self) -> i32 {
        match self {
            Policy::Normal => SCHED_NORMAL,
            Policy::Fifo => SCHED_FIFO,
            Policy::RR => SCHED_RR,
            Policy::Batch => SCHED_BATCH,
            Policy::Idle => SCHED_IDLE,
            Policy::Deadline => SCHED_DEADLINE,
        }
    }

    /// FIFO or RR (Linux `rt_policy`).
    pub const fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::RR)
    }

    /// NORMAL, BATCH or IDLE: scheduled by the EEVDF fair class.
    pub const fn is_fair(self) -> bool {
        matches!(self, Policy::Normal | Policy::Batch | Policy::Idle)
    }

    /// SCHED_DEADLINE (Linux `dl_policy`).
    pub const fn is_deadline(self) -> bool {
        matches!(self, Policy::Deadline)
    }

    /// Linux's name, e.g. `"SCHED_RR"`.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Normal => "SCHED_NORMAL",
            Policy::Fifo => "SCHED_FIFO",
            Policy::RR => "SCHED_RR",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }
}

/// Raw, unvalidated attributes as received from user space (`struct sched_attr` subset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    /// `sched_policy`.
    pub policy: i32,
    /// `sched_nice` (fair policies).
    pub nice: i32,
    /// `sched_priority` (RT policies: 1..=99; fair: must be 0).
    pub rt_priority: u32,
    /// `sched_runtime`: for fair policies the requested slice in ns (0 = base slice); for
    /// SCHED_DEADLINE the runtime per period.
    pub slice_ns: u64,
    /// `sched_deadline` (SCHED_DEADLINE: the relative deadline, ns).
    pub deadline_ns: u64,
    /// `sched_period` (SCHED_DEADLINE: the period, ns; 0 = the deadline).
    pub period_ns: u64,
    /// `sched_flags` (`SCHED_FLAG_*`).
    pub flags: u64,
}

/// Attributes that passed [`SchedAttr::validate`]; every field is in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidAttr {
    /// The policy.
    pub policy: Policy,
    /// Nice value, `-20..=19` (kept for RT tasks too, as Linux keeps `static_prio`).
    pub nice: i32,
    /// `1..=99` for RT policies, 0 otherwise.
    pub rt_priority: u8,
    /// Custom fair slice, already clamped to `[SCHED_SLICE_MIN_NS, SCHED_SLICE_MAX_NS]`.
    pub custom_slice_ns: Option<u64>,
    /// SCHED_FLAG_RESET_ON_FORK was set.
    pub reset_on_fork: bool,
    /// SCHED_DEADLINE's parameters (checked, period filled in); `None` for other policies.
    pub dl: Option<crate::deadline::DlParams>,
}

impl Default for ValidAttr {
    /// SCHED_NORMAL, nice 0: what `init` and reset-on-fork children get.
    fn default() -> Self {
        ValidAttr { policy: Policy::Normal, nice: 0, rt_priority: 0, custom_slice_ns: None, reset_on_fork: false, dl: None }
    }
}

impl SchedAttr {
    /// Validates with Linux's rules (see the module docs for the exact order).
    pub fn validate(&self) -> Result<ValidAttr, Errno> {
        let policy = Policy::from_raw(self.policy)?;
        if self.flags & !SCHED_FLAG_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        if self.rt_priority > MAX_USER_RT_PRIO as u32 {
            return Err(Errno::EINVAL);
        }
        if policy.is_rt() != (self.rt_priority != 0) {
            return Err(Errno::EINVAL);
        }
        if !(MIN_NICE..=MAX_NICE).contains(&self.nice) {
            return Err(Errno::EINVAL);
        }
        if self.flags & SCHED_FLAG_UTIL_CLAMP != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let dl = if policy.is_deadline() {
            let p =
                crate::deadline::DlParams { runtime: self.slice_ns, deadline: self.deadline_ns, period: self.period_ns, flags: self.flags };
            let p = p.check()?;
            if self.flags & SCHED_FLAG_RECLAIM != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            Some(p)
        } else {
            None
        };
        let custom_slice_ns = (policy.is_fair() && self.slice_ns != 0).then(|| self.slice_ns.clamp(SCHED_SLICE_MIN_NS, SCHED_SLICE_MAX_NS));
        Ok(ValidAttr {
            policy,
            nice: self.nice,
            rt_priority: self.rt_priority as u8,
            custom_slice_ns,
            reset_on_fork: self.flags & SCHED_FLAG_RESET_ON_FORK != 0,
            dl,
        })
    }

    /// Applies SCHED_FLAG_KEEP_POLICY / SCHED_FLAG_KEEP_PARAMS against the task's
    /// `current` attributes, as Linux `sched_setattr` does before validation.
    pub fn resolve_keep(&self, current: &ValidAttr) -> SchedAttr {
        let mut a = *self;
        if a.flags & SCHED_FLAG_KEEP_POLICY != 0 {
            a.policy = current.policy.raw();
        }
        if a.flags & SCHED_FLAG_KEEP_PARAMS != 0 {
            a.nice = current.nice;
            a.rt_priority = current.rt_priority as u32;
            a.slice_ns = current.custom_slice_ns.unwrap_or(0);
            if let Some(dl) = current.dl {
                (a.slice_ns, a.deadline_ns, a.period_ns) = (dl.runtime, dl.deadline, dl.period);
                a.flags = (a.flags & !SCHED_FLAG_DL_OVERRUN) | dl.flags;
            }
        }
        a
    }
}

impl ValidAttr {
    /// Fair-class load weight: `nice_to_weight(nice)`, or `WEIGHT_IDLEPRIO` for SCHED_IDLE.
    /// (Meaningless for RT policies, which the fair class never sees.)
    pub const fn weight(&self) -> u64 {
        match self.policy {
            Policy::Idle => WEIGHT_IDLEPRIO,
            _ => nice_to_weight(self.nice),
        }
    }

    /// Linux `normal_prio` of these attributes.
    pub const fn prio(&self) -> i32 {
        normal_prio(self.policy, self.nice, self.rt_priority)
    }
}

/// Clamps a nice value into `[-20, 19]`: the lenient path of `setpriority(2)`, `nice(2)`
/// and (in Linux) `sched_setattr(2)`. Accepts `i64` so user-supplied ints never overflow.
pub const fn clamp_nice(nice: i64) -> i32 {
    if nice < MIN_NICE as i64 {
        MIN_NICE
    } else if nice > MAX_NICE as i64 {
        MAX_NICE
    } else {
        nice as i32
    }
}

/// Target nice of `nice(2)`: `increment` is clamped to `±NICE_WIDTH`, the sum to the
/// nice range. Lowering nice (negative increment) still needs [`can_nice`].
pub const fn nice_after_increment(current_nice: i32, increment: i64) -> i32 {
    let inc = if increment < -(NICE_WIDTH as i64) {
        -(NICE_WIDTH as i64)
    } else if increment > NICE_WIDTH as i64 {
        NICE_WIDTH as i64
    } else {
        increment
    };
    clamp_nice(current_nice as i64 + inc)
}

/// `sched_get_priority_max(2)`: 99 for FIFO/RR, 0 for the others (SCHED_DEADLINE included),
/// `EINVAL` for unknown policies.
pub const fn sched_get_priority_max(policy: i32) -> Result<i32, Errno> {
    match policy {
        SCHED_FIFO | SCHED_RR => Ok(MAX_USER_RT_PRIO),
        SCHED_NORMAL | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// `sched_get_priority_min(2)`: 1 for FIFO/RR, 0 for the others, `EINVAL` if unknown.
pub const fn sched_get_priority_min(policy: i32) -> Result<i32, Errno> {
    match policy {
        SCHED_FIFO | SCHED_RR => Ok(1),
        SCHED_NORMAL | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// Linux `__normal_prio`: deadline −1, RT `99 - rt_priority` (0 = most important), fair
/// `120 + nice`.
pub const fn normal_prio(policy: Policy, nice: i32, rt_priority: u8) -> i32 {
    if policy.is_deadline() {
        MAX_DL_PRIO - 1
    } else if policy.is_rt() {
        MAX_RT_PRIO - 1 - rt_priority as i32
    } else {
        nice_to_prio(nice)
    }
}

/// The value `/proc/<pid>/stat` shows (Linux `task_prio`): `prio - 100`, i.e. `-2..=-100`
/// for RT priorities 1..=99, −101 for deadline tasks and the nice value for fair tasks.
pub const fn task_prio(prio: i32) -> i32 {
    prio - MAX_RT_PRIO
}

/// What the caller of a scheduling syscall is allowed to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedCreds {
    /// Caller has CAP_SYS_NICE (bypasses every check below).
    pub cap_sys_nice: bool,
    /// Caller's euid matches the target's uid or euid (Linux `check_same_owner`).
    pub same_owner: bool,
    /// Target's RLIMIT_NICE soft limit (`1..=40` scale, see `nice_to_rlimit`).
    pub rlimit_nice: u64,
    /// Target's RLIMIT_RTPRIO soft limit.
    pub rlimit_rtprio: u64,
}

/// Linux `can_nice`: may a task with `rlimit_nice` lower its nice to `nice`?
pub const fn can_nice(nice: i32, rlimit_nice: u64, cap_sys_nice: bool) -> bool {
    let want = nice_to_rlimit(nice);
    cap_sys_nice || (want >= 0 && want as u64 <= rlimit_nice)
}

/// Linux `user_check_sched_setscheduler`: `EPERM` unless the change from `current` to
/// `new` is allowed for an unprivileged caller, or the caller has CAP_SYS_NICE.
pub fn check_permission(current: &ValidAttr, new: &ValidAttr, creds: &SchedCreds) -> Result<(), Errno> {
    if creds.cap_sys_nice {
        return Ok(());
    }
    let nice_ok = |nice: i32| can_nice(nice, creds.rlimit_nice, false);
    let denied = (new.policy.is_fair() && new.nice < current.nice && !nice_ok(new.nice))
        || (new.policy.is_rt()
            && ((new.policy != current.policy && creds.rlimit_rtprio == 0)
                || (new.rt_priority > current.rt_priority
                    && new.rt_priority as u64 > creds.rlimit_rtprio)))
        // SCHED_IDLE counts as nice 20: leaving it needs the rlimit for the current nice.
        || (current.policy == Policy::Idle && new.policy != Policy::Idle && !nice_ok(current.nice))
        || !creds.same_owner
        || (current.reset_on_fork && !new.reset_on_fork);
    if denied {
        Err(Errno::EPERM)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(policy: i32, nice: i32, rt_priority: u32) -> SchedAttr {
        SchedAttr { policy, nice, rt_priority, ..SchedAttr::default() }
    }

    #[test]
    fn policy_round_trip() {
        for p in [Policy::Normal, Policy::Fifo, Policy::RR, Policy::Batch, Policy::Idle, Policy::Deadline] {
            assert_eq!(Policy::from_raw(p.raw()), Ok(p));
        }
        assert_eq!(Policy::from_raw(4), Err(Errno::EINVAL));
        assert!(Policy::Deadline.is_deadline() && !Policy::Deadline.is_fair() && !Policy::Deadline.is_rt());
        assert_eq!(Policy::from_raw(-1), Err(Errno::EINVAL));
        assert_eq!(Policy::from_raw(7), Err(Errno::EINVAL));
        assert_eq!(Policy::RR.name(), "SCHED_RR");
        assert!(Policy::Fifo.is_rt() && Policy::Batch.is_fair());
    }

    #[test]
    fn valid_attrs() {
        let v = attr(SCHED_FIFO, 0, 1).validate().unwrap();
        assert_eq!((v.policy, v.rt_priority), (Policy::Fifo, 1));
        assert_eq!(attr(SCHED_RR, 0, 99).validate().unwrap().rt_priority, 99);
        let v = attr(SCHED_NORMAL, -20, 0).validate().unwrap();
        assert_eq!((v.nice, v.weight(), v.prio()), (-20, 88761, 100));
        assert_eq!(attr(SCHED_BATCH, 19, 0).validate().unwrap().weight(), 15);
        assert_eq!(attr(SCHED_IDLE, 0, 0).validate().unwrap().weight(), WEIGHT_IDLEPRIO);
        let v = SchedAttr { flags: SCHED_FLAG_RESET_ON_FORK, ..attr(SCHED_NORMAL, 0, 0) };
        assert!(v.validate().unwrap().reset_on_fork);
        // Deadline-only flags are accepted and ignored for other policies, as in Linux.
        let v = SchedAttr { flags: SCHED_FLAG_RECLAIM | SCHED_FLAG_DL_OVERRUN, ..attr(SCHED_NORMAL, 0, 0) };
        assert!(v.validate().is_ok());
    }

    #[test]
    fn every_errno_case() {
        // Unknown / unsupported policy.
        assert_eq!(attr(4, 0, 0).validate(), Err(Errno::EINVAL));
        assert_eq!(attr(-1, 0, 0).validate(), Err(Errno::EINVAL));
        // SCHED_DEADLINE without parameters, with a priority, or with bad parameters
        // (`__checkparam_dl`; the cases are in `deadline`'s tests).
        assert_eq!(attr(SCHED_DEADLINE, 0, 0).validate(), Err(Errno::EINVAL));
        let dl = |runtime, deadline, period| SchedAttr {
            slice_ns: runtime,
            deadline_ns: deadline,
            period_ns: period,
            ..attr(SCHED_DEADLINE, 0, 0)
        };
        assert_eq!(SchedAttr { rt_priority: 1, ..dl(1_000_000, 10_000_000, 0) }.validate(), Err(Errno::EINVAL));
        assert_eq!(dl(20_000_000, 10_000_000, 0).validate(), Err(Errno::EINVAL), "runtime > deadline");
        assert_eq!(dl(1_000_000, 10_000_000, 5_000_000).validate(), Err(Errno::EINVAL), "deadline > period");
        assert_eq!(dl(1000, 10_000_000, 0).validate(), Err(Errno::EINVAL), "runtime under 1024 ns");
        let v = dl(1_000_000, 10_000_000, 0).validate().unwrap();
        let p = crate::deadline::DlParams { runtime: 1_000_000, deadline: 10_000_000, period: 10_000_000, flags: 0 };
        assert_eq!((v.policy, v.dl, v.prio(), v.custom_slice_ns), (Policy::Deadline, Some(p), -1, None));
        // KEEP_PARAMS keeps the deadline parameters.
        let kept = SchedAttr { flags: SCHED_FLAG_KEEP_PARAMS, ..attr(SCHED_DEADLINE, 0, 0) }.resolve_keep(&v);
        assert_eq!(kept.validate().unwrap().dl, Some(p));
        // DL_OVERRUN is kept with the parameters (and by KEEP_PARAMS); RECLAIM (GRUB) is not
        // implemented: EOPNOTSUPP rather than a task run without it.
        let o = SchedAttr { flags: SCHED_FLAG_DL_OVERRUN | SCHED_FLAG_RESET_ON_FORK, ..dl(1_000_000, 10_000_000, 0) }.validate().unwrap();
        assert_eq!(o.dl, Some(crate::deadline::DlParams { flags: SCHED_FLAG_DL_OVERRUN, ..p }));
        let kept = SchedAttr { flags: SCHED_FLAG_KEEP_PARAMS, ..attr(SCHED_DEADLINE, 0, 0) }.resolve_keep(&o);
        assert_eq!(kept.validate().unwrap().dl, o.dl);
        let cleared = SchedAttr { flags: SCHED_FLAG_KEEP_PARAMS | SCHED_FLAG_DL_OVERRUN, ..attr(SCHED_DEADLINE, 0, 0) }.resolve_keep(&v);
        assert_eq!(cleared.validate().unwrap().dl, Some(p), "KEEP_PARAMS keeps the flags too");
        assert_eq!(SchedAttr { flags: SCHED_FLAG_RECLAIM, ..dl(1_000_000, 10_000_000, 0) }.validate(), Err(Errno::EOPNOTSUPP));
        // Bad parameters come first (Linux checks them before the flags' support).
        assert_eq!(SchedAttr { flags: SCHED_FLAG_RECLAIM, ..dl(20_000_000, 10_000_000, 0) }.validate(), Err(Errno::EINVAL));
        // Unknown flag bits.
        let a = SchedAttr { flags: 0x80, ..attr(SCHED_NORMAL, 0, 0) };
        assert_eq!(a.validate(), Err(Errno::EINVAL));
        // RT priority out of range / missing.
        assert_eq!(attr(SCHED_FIFO, 0, 0).validate(), Err(Errno::EINVAL));
        assert_eq!(attr(SCHED_RR, 0, 100).validate(), Err(Errno::EINVAL));
        assert_eq!(attr(SCHED_FIFO, 0, u32::MAX).validate(), Err(Errno::EINVAL));
        // Fair policy with an RT priority.
        for p in [SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE] {
            assert_eq!(attr(p, 0, 1).validate(), Err(Errno::EINVAL));
            assert_eq!(attr(p, 0, 100).validate(), Err(Errno::EINVAL));
        }
        // Nice out of range (Cadence-strict; Linux clamps, see clamp_nice).
        assert_eq!(attr(SCHED_NORMAL, -21, 0).validate(), Err(Errno::EINVAL));
        assert_eq!(attr(SCHED_NORMAL, 20, 0).validate(), Err(Errno::EINVAL));
        assert_eq!(attr(SCHED_FIFO, 20, 10).validate(), Err(Errno::EINVAL));
        // Util clamp unsupported.
        let a = SchedAttr { flags: SCHED_FLAG_UTIL_CLAMP_MIN, ..attr(SCHED_NORMAL, 0, 0) };
        assert_eq!(a.validate(), Err(Errno::EOPNOTSUPP));
        let a = SchedAttr { flags: SCHED_FLAG_UTIL_CLAMP_MAX, ..attr(SCHED_NORMAL, 0, 0) };
        assert_eq!(a.validate(), Err(Errno::EOPNOTSUPP));
        // Order: an invalid policy wins over bad flags / priorities.
        let a = SchedAttr { flags: u64::MAX, ..attr(9, 99, 500) };
        assert_eq!(a.validate(), Err(Errno::EINVAL));
    }

    #[test]
    fn custom_slice_clamped() {
        let s = |ns| SchedAttr { slice_ns: ns, ..attr(SCHED_NORMAL, 0, 0) }.validate().unwrap().custom_slice_ns;
        assert_eq!(s(0), None);
        assert_eq!(s(1), Some(SCHED_SLICE_MIN_NS));
        assert_eq!(s(3_000_000), Some(3_000_000));
        assert_eq!(s(u64::MAX), Some(SCHED_SLICE_MAX_NS));
        let rt = SchedAttr { slice_ns: 5, ..attr(SCHED_FIFO, 0, 5) };
        assert_eq!(rt.validate().unwrap().custom_slice_ns, None);
    }

    #[test]
    fn keep_flags() {
        let cur = attr(SCHED_RR, 0, 42).validate().unwrap();
        let a = SchedAttr { flags: SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS, ..attr(SCHED_NORMAL, 5, 0) };
        let v = a.resolve_keep(&cur).validate().unwrap();
        assert_eq!((v.policy, v.rt_priority), (Policy::RR, 42));
    }

    #[test]
    fn nice_clamping() {
        assert_eq!(clamp_nice(-100), -20);
        assert_eq!(clamp_nice(100), 19);
        assert_eq!(clamp_nice(i64::MIN), -20);
        assert_eq!(clamp_nice(3), 3);
        assert_eq!(nice_after_increment(0, i64::MAX), 19);
        assert_eq!(nice_after_increment(10, -5), 5);
        assert_eq!(nice_after_increment(-20, i64::MIN), -20);
    }

    #[test]
    fn priority_ranges() {
        assert_eq!(sched_get_priority_max(SCHED_FIFO), Ok(99));
        assert_eq!(sched_get_priority_min(SCHED_RR), Ok(1));
        for p in [SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE] {
            assert_eq!(sched_get_priority_max(p), Ok(0));
            assert_eq!(sched_get_priority_min(p), Ok(0));
        }
        assert_eq!(sched_get_priority_max(4), Err(Errno::EINVAL));
        assert_eq!(sched_get_priority_min(-7), Err(Errno::EINVAL));
    }

    #[test]
    fn prio_numbering() {
        assert_eq!(normal_prio(Policy::Fifo, 0, 99), 0);
        assert_eq!(normal_prio(Policy::RR, 0, 1), 98);
        assert_eq!(normal_prio(Policy::Normal, 0, 0), 120);
        assert_eq!(normal_prio(Policy::Batch, 19, 0), 139);
        assert_eq!(task_prio(0), -100);
        assert_eq!(task_prio(98), -2);
        assert_eq!(task_prio(125), 25);
    }

    #[test]
    fn permissions() {
        let user = SchedCreds { same_owner: true, ..SchedCreds::default() };
        let normal = ValidAttr::default();
        let v = |a: SchedAttr| a.validate().unwrap();
        // Raising nice is always fine; lowering needs RLIMIT_NICE or CAP_SYS_NICE.
        assert_eq!(check_permission(&normal, &v(attr(SCHED_NORMAL, 5, 0)), &user), Ok(()));
        assert_eq!(check_permission(&normal, &v(attr(SCHED_NORMAL, -5, 0)), &user), Err(Errno::EPERM));
        let rl = SchedCreds { rlimit_nice: nice_to_rlimit(-5) as u64, ..user };
        assert_eq!(check_permission(&normal, &v(attr(SCHED_NORMAL, -5, 0)), &rl), Ok(()));
        let cap = SchedCreds { cap_sys_nice: true, ..SchedCreds::default() };
        assert_eq!(check_permission(&normal, &v(attr(SCHED_NORMAL, -20, 0)), &cap), Ok(()));
        // RT needs RLIMIT_RTPRIO.
        assert_eq!(check_permission(&normal, &v(attr(SCHED_FIFO, 0, 10)), &user), Err(Errno::EPERM));
        let rt = SchedCreds { rlimit_rtprio: 10, ..user };
        assert_eq!(check_permission(&normal, &v(attr(SCHED_FIFO, 0, 10)), &rt), Ok(()));
        assert_eq!(check_permission(&normal, &v(attr(SCHED_FIFO, 0, 11)), &rt), Err(Errno::EPERM));
        // An RT task may always lower its own priority.
        let fifo50 = v(attr(SCHED_FIFO, 0, 50));
        assert_eq!(check_permission(&fifo50, &v(attr(SCHED_FIFO, 0, 20)), &user), Ok(()));
        // Leaving SCHED_IDLE needs the rlimit for the current nice.
        let idle = v(attr(SCHED_IDLE, 0, 0));
        assert_eq!(check_permission(&idle, &normal, &user), Err(Errno::EPERM));
        let rl0 = SchedCreds { rlimit_nice: nice_to_rlimit(0) as u64, ..user };
        assert_eq!(check_permission(&idle, &normal, &rl0), Ok(()));
        // Other owners, and clearing reset-on-fork, need privilege.
        assert_eq!(check_permission(&normal, &normal, &SchedCreds::default()), Err(Errno::EPERM));
        let rof = ValidAttr { reset_on_fork: true, ..normal };
        assert_eq!(check_permission(&rof, &normal, &user), Err(Errno::EPERM));
        assert_eq!(check_permission(&rof, &rof, &user), Ok(()));
    }
}
