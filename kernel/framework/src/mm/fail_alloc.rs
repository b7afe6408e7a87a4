//! Failure injection for the kernel's object allocations, like Linux's `failslab` /
//! `fail_page_alloc` (`Documentation/fault-injection/fault-injection.rst`), set by sysctl:
//!
//! * `debug.fail_alloc.probability`: percent of the calls that fail (0..=100; 0 = off);
//! * `debug.fail_alloc.interval`: only every Nth call may fail (≥ 1);
//! * `debug.fail_alloc.times`: how many failures are left (-1 = no limit; Linux's default 1);
//! * `debug.fail_alloc.verbose`: 0 silent, 1 (or Linux's 2) one line per failure;
//! * `debug.fail_alloc.injected` (read-only): failures forced so far;
//! * `debug.fail_alloc.sites`: the sites that may fail, comma-separated (a trailing `*` matches
//!   a prefix: `fault_*`); empty (the default) = every site. Like Linux's per-cache
//!   `failslab` attribute and `ignore-gfp-*`, it confines injection to the paths under test
//!   (a fuzzer or a test failing only user-memory paths).
//!
//! The decision is Linux's `should_fail_ex`: nothing when the probability is 0 or `times` is
//! 0; with an interval > 1 only every `interval`-th call is a candidate; a candidate fails with
//! the given probability; each failure decrements `times` unless it is -1.
//!
//! **Injection sites** are the allocations the kernel makes to create an object on behalf of a
//! command or an API call, each of which already returns `ENOMEM` (or the command's message)
//! when the memory really is not there: a task (`task`) and its kernel stack (`kernel_stack`)
//! in `spawn`; a task group (`task_group`, also behind autogroups and ttys); a core-scheduling
//! cookie (`sched_core_cookie`, `PR_SCHED_CORE_CREATE`); the tracer's rings (`trace_buffer`);
//! a user process's memory: a page brought in by a page fault or a kernel copy (`fault_anon`,
//! `fault_file`, `fault_cow`: the faulting thread's SIGBUS, a system call's EFAULT; see
//! `docs/design/user.md`), the address-space copy of a fork (`fork_mm`: ENOMEM), the new image
//! of an execve (`exec_mm`: ENOMEM before the point of no return, the old image runs on) and a
//! mapping's pages that mmap backs at once (`mmap_populate`: ENOMEM, nothing mapped).
//! Short-lived allocations inside a command (strings, argument vectors) are not sites: the
//! global allocator cannot return an error to them, so failing them could only panic.
//! Every site fails *before* it changes any state, so a failure leaks nothing; the chaos stress
//! (`chaos -f PERCENT`) checks that with injection on.

use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

static PROBABILITY: AtomicU32 = AtomicU32::new(0);
static INTERVAL: AtomicU64 = AtomicU64::new(1);
static TIMES: AtomicI64 = AtomicI64::new(1);
static VERBOSE: AtomicU32 = AtomicU32::new(1);
/// Calls that passed the other tests (Linux `attr->count`, for the interval).
static COUNT: AtomicU64 = AtomicU64::new(0);
static INJECTED: AtomicU64 = AtomicU64::new(0);
/// xorshift state (any non-zero seed; the sequence need not replay).
static RNG: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

/// `debug.fail_alloc.probability`: the percent (0..=100) of candidate calls that fail; 0 = off.
pub fn probability() -> u32 {
    PROBABILITY.load(Ordering::Relaxed)
}

/// Sets the probability in percent, clamped to 100 (the sysctl rejects larger values with EINVAL).
/// Any context; takes effect at the next [`should_fail`].
pub fn set_probability(p: u32) {
    PROBABILITY.store(p.min(100), Ordering::Relaxed);
}

/// `debug.fail_alloc.interval`: only every `interval`-th call is a candidate (≥ 1; 1 = every call).
pub fn interval() -> u64 {
    INTERVAL.load(Ordering::Relaxed)
}

/// Sets the interval (0 acts as 1). The call count it divides is reset only by [`Settings::apply`].
pub fn set_interval(n: u64) {
    INTERVAL.store(n.max(1), Ordering::Relaxed);
}

/// `debug.fail_alloc.times`: failures left to inject (-1 = no limit, 0 = none left).
pub fn times() -> i64 {
    TIMES.load(Ordering::Relaxed)
}

/// Sets the failures left (values below -1 act as -1, no limit).
pub fn set_times(n: i64) {
    TIMES.store(n.max(-1), Ordering::Relaxed);
}

/// `debug.fail_alloc.verbose`: 0 silent, anything else prints one `FAULT_INJECTION` line per failure.
pub fn verbose() -> u32 {
    VERBOSE.load(Ordering::Relaxed)
}

/// Sets the verbosity (see [`verbose`]).
pub fn set_verbose(v: u32) {
    VERBOSE.store(v, Ordering::Relaxed);
}

/// Failures forced since boot.
pub fn injected() -> u64 {
    INJECTED.load(Ordering::Relaxed)
}

/// Whether failures may be injected now (probability > 0 and `times` not used up).
pub fn active() -> bool {
    probability() > 0 && times() != 0
}

/// Bytes of `debug.fail_alloc.sites` kept.
pub const SITES_MAX: usize = 128;
/// `debug.fail_alloc.sites` (the bytes and their length).
static SITES: crate::sync::IrqLock<([u8; SITES_MAX], usize)> = crate::sync::IrqLock::new(([0; SITES_MAX], 0));

/// `debug.fail_alloc.sites`: the sites that may fail (comma-separated; empty = every site).
pub fn sites() -> alloc::string::String {
    let g = SITES.lock();
    alloc::string::String::from_utf8_lossy(&g.0[..g.1]).into_owned()
}

/// Sets the sites that may fail (see [`sites`]); `None` (and nothing set) if longer than
/// [`SITES_MAX`]. Spaces and a trailing newline are dropped.
pub fn set_sites(list: &str) -> Option<()> {
    let list = list.trim();
    if list.len() > SITES_MAX {
        return None;
    }
    let mut g = SITES.lock();
    g.0[..list.len()].copy_from_slice(list.as_bytes());
    g.1 = list.len();
    Some(())
}

/// Is `site` one of the sites that may fail?
fn site_selected(site: &str) -> bool {
    let g = SITES.lock();
    let list = &g.0[..g.1];
    list.is_empty()
        || list.split(|&b| b == b',').map(|s| s.trim_ascii()).any(|s| match s.strip_suffix(b"*") {
            Some(prefix) => site.as_bytes().starts_with(prefix),
            None => s == site.as_bytes(),
        })
}

/// Should the allocation at `site` fail? (Linux `should_fail`; see the module doc.)
#[track_caller]
pub fn should_fail(site: &'static str) -> bool {
    let p = probability();
    if p == 0 || times() == 0 || !site_selected(site) {
        return false;
    }
    let interval = interval();
    if interval > 1 && !(COUNT.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(interval) {
        return false;
    }
    if p <= (next_random() % 100) as u32 {
        return false;
    }
    // Take one of the remaining failures (another CPU may have taken the last one).
    let took = TIMES
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| match t {
            -1 => Some(-1),
            0 => None,
            t => Some(t - 1),
        })
        .is_ok();
    if !took {
        return false;
    }
    INJECTED.fetch_add(1, Ordering::Relaxed);
    if verbose() > 0 {
        crate::kprintln!(
            "FAULT_INJECTION: forcing a failure.\nname fail_alloc, interval {}, probability {}, space 0, times {}, site {}",
            interval,
            p,
            times(),
            site
        );
    }
    true
}

fn next_random() -> u64 {
    let mut x = RNG.load(Ordering::Relaxed);
    loop {
        let mut n = x ^ crate::time::uptime_ns();
        n ^= n >> 12;
        n ^= n << 25;
        n ^= n >> 27;
        let n = n | 1;
        match RNG.compare_exchange_weak(x, n, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return n.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11,
            Err(cur) => x = cur,
        }
    }
}

/// Injection settings, saved and restored around a test or a stress run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// See [`probability`].
    pub probability: u32,
    /// See [`interval`].
    pub interval: u64,
    /// See [`times`].
    pub times: i64,
    /// See [`verbose`].
    pub verbose: u32,
}

impl Settings {
    /// The settings in force now.
    pub fn current() -> Self {
        Settings { probability: probability(), interval: interval(), times: times(), verbose: verbose() }
    }

    /// Puts these settings in force (clamped like the setters) and restarts the interval's call
    /// count. Not atomic as a whole: a concurrent [`should_fail`] may see a mix of old and new.
    pub fn apply(self) {
        set_probability(self.probability);
        set_interval(self.interval);
        set_times(self.times);
        set_verbose(self.verbose);
        COUNT.store(0, Ordering::Relaxed);
    }
}
