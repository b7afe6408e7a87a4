//! Run-time tunables under Linux's sysctl names (`sysctl kernel.sched_rr_timeslice_ms=10`).
//!
//! Each entry reads its value as text and parses writes itself, returning Linux's errno on bad
//! input (EINVAL for unparsable or out-of-range values). Subsystems add their entries to
//! [`SYSCTLS`]; the shell's `sysctl` command only calls [`get`], [`set`] and [`list`].

use alloc::format;
use alloc::string::String;
use cadence_sched::Errno;
use core::sync::atomic::{AtomicU64, Ordering};

pub struct Sysctl {
    pub name: &'static str,
    pub help: &'static str,
    pub get: fn() -> String,
    pub set: fn(&str) -> Result<(), Errno>,
}

fn parse_i64(v: &str) -> Result<i64, Errno> {
    v.trim().parse::<i64>().map_err(|_| Errno::EINVAL)
}

fn parse_u64_range(v: &str, min: u64, max: u64) -> Result<u64, Errno> {
    match parse_i64(v)? {
        n if n >= min as i64 && n as u64 <= max => Ok(n as u64),
        _ => Err(Errno::EINVAL),
    }
}

/// A boolean sysctl's value: exactly `0` or `1` (Linux `proc_dointvec_minmax` 0..=1), else EINVAL.
fn parse_bool(v: &str) -> Result<bool, Errno> {
    match v.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(Errno::EINVAL),
    }
}

/// The system's names as `uname(2)` reports them (`utsname`'s fields): Linux's name and a 6.1
/// release, because programs choose features by them (procps reads `kernel.osrelease`).
pub const OSTYPE: &str = "Linux";
pub const HOSTNAME: &str = "cadence";
pub const OSRELEASE: &str = "6.1.0-cadence";
pub const VERSION: &str = "#1 SMP PREEMPT_DYNAMIC Cadence";
pub const DOMAINNAME: &str = "(none)";

/// `fs.aio-nr`: the events `io_setup` asked for in every live AIO context (Linux's `aio_nr`;
/// `fs::aio` charges and gives back).
pub static AIO_NR: AtomicU64 = AtomicU64::new(0);
/// `fs.aio-max-nr`: what `fs.aio-nr` may reach (Linux's default, 65536); `io_setup` past it
/// is EAGAIN.
pub static AIO_MAX_NR: AtomicU64 = AtomicU64::new(0x10000);

/// A write to a read-only entry: EACCES, as Linux's 0444 sysctl files answer even root.
fn read_only(_: &str) -> Result<(), Errno> {
    Err(Errno::EACCES)
}

pub static SYSCTLS: &[Sysctl] = &[
    Sysctl {
        name: "fs.aio-max-nr",
        help: "the most AIO events all io_setup contexts together may ask for (fs.aio-nr); io_setup past it is EAGAIN",
        get: || format!("{}", AIO_MAX_NR.load(Ordering::Relaxed)),
        set: |v| {
            // Linux's proc_doulongvec_minmax: an unsigned long, no bounds; a sign is EINVAL.
            AIO_MAX_NR.store(v.trim().parse::<u64>().map_err(|_| Errno::EINVAL)?, Ordering::Relaxed);
            Ok(())
        },
    },
    Sysctl {
        name: "fs.aio-nr",
        help: "the AIO events the live io_setup contexts asked for (read-only)",
        get: || format!("{}", AIO_NR.load(Ordering::Relaxed)),
        set: read_only,
    },
    Sysctl {
        name: "debug.kernel_stack_slots",
        help: "kernel-stack slots handed out at the peak (read-only): the stack region's page tables, one frame per 8 slots, stay once made",
        get: || format!("{}", crate::mm::stack::region_slots()),
        set: read_only,
    },
    Sysctl {
        name: "debug.fail_alloc.probability",
        help: "percent of object allocations (tasks, stacks, groups, ttys, cookies, trace rings, user pages, fork/exec address spaces, mmap populate) made to fail with ENOMEM (0..=100)",
        get: || format!("{}", crate::mm::fail_alloc::probability()),
        set: |v| {
            crate::mm::fail_alloc::set_probability(parse_u64_range(v, 0, 100)? as u32);
            Ok(())
        },
    },
    Sysctl {
        name: "debug.fail_alloc.interval",
        help: "only every Nth candidate allocation may fail (>= 1)",
        get: || format!("{}", crate::mm::fail_alloc::interval()),
        set: |v| {
            crate::mm::fail_alloc::set_interval(parse_u64_range(v, 1, u32::MAX as u64)?);
            Ok(())
        },
    },
    Sysctl {
        name: "debug.fail_alloc.times",
        help: "failures left to inject (-1 = no limit; default 1, as Linux)",
        get: || format!("{}", crate::mm::fail_alloc::times()),
        set: |v| match parse_i64(v)? {
            n if n >= -1 => {
                crate::mm::fail_alloc::set_times(n);
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        },
    },
    Sysctl {
        name: "debug.fail_alloc.verbose",
        help: "0: silent; 1 or 2: print a FAULT_INJECTION line per forced failure",
        get: || format!("{}", crate::mm::fail_alloc::verbose()),
        set: |v| {
            crate::mm::fail_alloc::set_verbose(parse_u64_range(v, 0, 2)? as u32);
            Ok(())
        },
    },
    Sysctl {
        name: "debug.fail_alloc.sites",
        help: "the sites that may fail, comma-separated, `*` ending a prefix (e.g. fault_*,fork_mm); empty = every site",
        get: crate::mm::fail_alloc::sites,
        set: |v| crate::mm::fail_alloc::set_sites(v).ok_or(Errno::EINVAL),
    },
    Sysctl {
        name: "debug.fail_alloc.injected",
        help: "failures forced since boot (read-only)",
        get: || format!("{}", crate::mm::fail_alloc::injected()),
        set: |_| Err(Errno::EACCES),
    },
    Sysctl { name: "kernel.ostype", help: "the system's name, as uname -s (read-only)", get: || String::from(OSTYPE), set: read_only },
    Sysctl {
        name: "kernel.osrelease",
        help: "the release, as uname -r (read-only; procps picks its formats by it)",
        get: || String::from(OSRELEASE),
        set: read_only,
    },
    Sysctl { name: "kernel.version", help: "the build, as uname -v (read-only)", get: || String::from(VERSION), set: read_only },
    Sysctl {
        name: "kernel.watchdog_thresh",
        help: "soft/hard lockup reported after twice this many seconds (0..=60; 0 = off)",
        get: || format!("{}", crate::sched::lockup::watchdog_thresh_s()),
        set: |v| {
            crate::sched::lockup::set_watchdog_thresh_s(parse_u64_range(v, 0, 60)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.softlockup_panic",
        help: "1: a soft or hard lockup report panics (default 1 under cargo test, else 0)",
        get: || format!("{}", crate::sched::lockup::lockup_panic() as u8),
        set: |v| {
            crate::sched::lockup::set_lockup_panic(parse_bool(v)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.hung_task_panic",
        help: "1: a hung-task report panics (default 1 under cargo test, else 0)",
        get: || format!("{}", crate::sched::lockup::hung_panic() as u8),
        set: |v| {
            crate::sched::lockup::set_hung_panic(parse_bool(v)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.threads-max",
        help: "tasks fork may make (1..=0x3fffffff; the default: an eighth of memory in 16 KiB stacks)",
        get: || format!("{}", crate::sched::task::max_threads()),
        set: |v| crate::sched::task::set_max_threads(parse_u64_range(v, 0, u64::MAX)?),
    },
    Sysctl {
        name: "kernel.hung_task_timeout_secs",
        help: "report tasks woken or runnable but not run, or past their sleep timer, this long (s; 0 = off)",
        get: || format!("{}", crate::sched::lockup::hung_task_timeout_s()),
        set: |v| {
            crate::sched::lockup::set_hung_task_timeout_s(parse_u64_range(v, 0, 86_400)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_rr_timeslice_ms",
        help: "SCHED_RR quantum in ms (<= 0 resets to 100)",
        get: || format!("{}", crate::sched::rr_timeslice_ms()),
        set: |v| {
            crate::sched::set_rr_timeslice_ms(parse_i64(v)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_base_slice_ns",
        help: "EEVDF base slice in ns (100000..=100000000)",
        get: || format!("{}", crate::sched::fair_tunables().base_slice_ns),
        set: |v| {
            crate::sched::set_base_slice_ns(parse_u64_range(v, 100_000, 100_000_000)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_wakeup_granularity_ns",
        help: "a waking task preempts only when ahead by this much (0..=1000000000; 0 = off)",
        get: || format!("{}", crate::sched::fair_tunables().wakeup_granularity_ns),
        set: |v| {
            crate::sched::set_wakeup_granularity_ns(parse_u64_range(v, 0, 1_000_000_000)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.timer_advance_ns",
        help: "each CPU fires its timer up to this early, as early as its timer interrupts have come late (adaptive, as KVM's lapic_timer_advance_ns), and waits for the timer in the interrupt (0..=500000; 0 = off)",
        get: || format!("{}", crate::timer::advance_limit()),
        set: |v| {
            crate::timer::set_advance_limit(parse_u64_range(v, 0, crate::timer::MAX_ADVANCE_NS)?);
            Ok(())
        },
    },
    Sysctl {
        name: "debug.timer",
        help: "per CPU (read-only): the timer advance now (ns), the time early interrupts waited for their timer (µs), the timer interrupts the CPU raised itself (TIMER_KICK), the timer interrupts that gave up catching up and the longest of them (µs; Linux's nr_hangs, max_hang_time)",
        get: || {
            let mut out = String::new();
            for cpu in crate::sched::online_mask().iter() {
                let cpu = cpu as u32;
                let waited_us = crate::timer::advance_wait_ns(cpu) / 1000;
                let (hangs, max_hang_ns) = crate::timer::hangs(cpu);
                out += &format!(
                    "cpu{cpu} advance_ns={} waited_us={waited_us} kicks={} hangs={hangs} max_hang_us={} ",
                    crate::timer::advance(cpu),
                    crate::timer::kicks(cpu),
                    max_hang_ns / 1000
                );
            }
            out.trim_end().into()
        },
        set: read_only,
    },
    Sysctl {
        name: "debug.nohz",
        help: "tickless idle (read-only): nohz on or off (boot nohz=), the CPU with the timekeeping duty, the CPUs idle with their tick stopped, the idle-balance kicks sent; per CPU tick_stopped, idle_calls (halts that tried to stop the tick), idle_sleeps (times it stopped), ticks_skipped, ilb (idle balances run when kicked) and ilb_moved (those that moved a task), as Linux's /proc/timer_list",
        get: crate::sched::nohz::debug_text,
        set: read_only,
    },
    Sysctl {
        name: "kernel.sched_idle_poll_ns",
        help: "ceiling of idle CPUs' adaptive poll before halting, as Linux's guest_halt_poll_ns (0..=10000000, default 200000; 0 = halt at once)",
        get: || format!("{}", crate::sched::idle_poll_ns()),
        set: |v| {
            crate::sched::set_idle_poll_ns(parse_u64_range(v, 0, 10_000_000)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_core",
        help: "SMT core scheduling: 1 on, 0 off (cookies are kept)",
        get: || format!("{}", crate::sched::coresched::enabled() as u8),
        set: |v| {
            crate::sched::coresched::set_enabled(parse_bool(v)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_autogroup_enabled",
        help: "autogroup: 1 on, 0 off (moves every runnable fair task at once)",
        get: || format!("{}", crate::sched::autogroup::enabled() as u8),
        set: |v| {
            crate::sched::autogroup::set_enabled(parse_bool(v)?);
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_features",
        help: "scheduler features, Linux-style (a read lists them all: sched::features::FEATURES); NO_<name> turns one off",
        get: || {
            let names: alloc::vec::Vec<String> = crate::sched::features::FEATURES
                .iter()
                .map(|f| if (f.get)() { String::from(f.name) } else { format!("NO_{}", f.name) })
                .collect();
            names.join(" ")
        },
        // Like writing `/sys/kernel/debug/sched/features`: one or more names, each applied.
        set: |v| {
            let mut changes = alloc::vec::Vec::new();
            for word in v.split_whitespace() {
                let (name, on) = match word.strip_prefix("NO_") {
                    Some(n) => (n, false),
                    None => (word, true),
                };
                changes.push((crate::sched::features::find(name).ok_or(Errno::EINVAL)?, on));
            }
            if changes.is_empty() {
                return Err(Errno::EINVAL);
            }
            for (f, on) in changes {
                (f.set)(on);
            }
            Ok(())
        },
    },
    Sysctl {
        name: "kernel.sched_rt_period_us",
        help: "RT throttling period in µs (1..=2147483647, >= runtime)",
        get: || format!("{}", crate::sched::rt_limits::rt_period_us()),
        set: |v| crate::sched::rt_limits::set_rt_period_us(parse_i64(v)?),
    },
    Sysctl {
        name: "kernel.sched_rt_runtime_us",
        help: "RT runtime per period in µs (-1 = no throttling, else 0..=period)",
        get: || format!("{}", crate::sched::rt_limits::rt_runtime_us()),
        set: |v| crate::sched::rt_limits::set_rt_runtime_us(parse_i64(v)?),
    },
    Sysctl {
        name: "kernel.sched_rt_watchdog_action",
        help: "what the RLIMIT_RTTIME soft limit does: demote or signal",
        get: || String::from(crate::sched::rt_limits::watchdog_action_name()),
        set: |v| crate::sched::rt_limits::set_watchdog_action(v),
    },
    Sysctl {
        name: "vm.min_free_kbytes",
        help: "kB kept free: the min watermark; low and high follow (0..=2147483647; default int_sqrt(kB × 16))",
        get: || format!("{}", crate::mm::frame::watermarks().1),
        set: |v| crate::mm::frame::set_watermarks(Some(parse_u64_range(v, 0, i32::MAX as u64)?), None).map_err(|_| Errno::EINVAL),
    },
    Sysctl {
        name: "vm.watermark_scale_factor",
        help: "gap between the watermarks in 1/10000 of memory (1..=3000, default 10)",
        get: || format!("{}", crate::mm::frame::watermarks().2),
        set: |v| crate::mm::frame::set_watermarks(None, Some(parse_u64_range(v, 1, 3000)?)).map_err(|_| Errno::EINVAL),
    },
    Sysctl {
        name: "vm.rt_alloc_reserve",
        help: "reserve RT tasks may use: seed (half of low and min, 2003), linux (half of min), off",
        get: || String::from(crate::mm::frame::rt_reserve().name()),
        set: |v| {
            crate::mm::frame::set_rt_reserve(cadence_vm::watermark::RtReserve::parse(v.trim()).map_err(|_| Errno::EINVAL)?);
            Ok(())
        },
    },
    Sysctl {
        name: "vm.dirty_ratio",
        help: "% of dirtyable memory a writer may dirty before it is paused (0..=100; setting it clears vm.dirty_bytes)",
        get: || dirty_get("dirty_ratio"),
        set: |v| dirty_set("dirty_ratio", v),
    },
    Sysctl {
        name: "vm.dirty_bytes",
        help: "bytes a writer may dirty before it is paused (>= 8192; setting it clears vm.dirty_ratio)",
        get: || dirty_get("dirty_bytes"),
        set: |v| dirty_set("dirty_bytes", v),
    },
    Sysctl {
        name: "vm.dirty_background_ratio",
        help: "% of dirtyable memory above which the flusher writes in the background (0..=100)",
        get: || dirty_get("dirty_background_ratio"),
        set: |v| dirty_set("dirty_background_ratio", v),
    },
    Sysctl {
        name: "vm.dirty_background_bytes",
        help: "bytes above which the flusher writes in the background (>= 1)",
        get: || dirty_get("dirty_background_bytes"),
        set: |v| dirty_set("dirty_background_bytes", v),
    },
    Sysctl {
        name: "vm.dirty_expire_centisecs",
        help: "age (1/100 s) after which dirty data is written by the flusher's periodic pass",
        get: || dirty_get("dirty_expire_centisecs"),
        set: |v| dirty_set("dirty_expire_centisecs", v),
    },
    Sysctl {
        name: "vm.dirty_writeback_centisecs",
        help: "the flusher's period (1/100 s; 0: no periodic pass)",
        get: || dirty_get("dirty_writeback_centisecs"),
        set: |v| dirty_set("dirty_writeback_centisecs", v),
    },
    Sysctl {
        name: "vm.rt_dirty_throttle",
        help: "RT writers over the dirty limit: exempt (never paused, 2003 seed), boost (limits +25%, Linux), off",
        get: || String::from(crate::block::writeback::rt_mode().name()),
        set: |v| {
            crate::block::writeback::set_rt_mode(cadence_vm::dirty::RtDirty::parse(v.trim()).map_err(|_| Errno::EINVAL)?);
            Ok(())
        },
    },
    Sysctl {
        name: "vm.drop_caches",
        help: "write 1: free every clean page-cache page (dirty pages stay; run sync first); 2: free the kernel's \
               reclaimable object caches (the cache of dead tasks' kernel stacks, Linux's slab objects); 3: both; 4: \
               nothing (Linux's bit that silences its log line)",
        get: || String::from("0"),
        set: |v| {
            // Linux: 1..=4 (proc_dointvec_minmax), bit 0 the page cache, bit 1 slab objects.
            let bits = parse_u64_range(v, 1, 4)?;
            if bits & 1 != 0 {
                crate::block::pagecache::drop_clean();
            }
            if bits & 2 != 0 {
                crate::mm::stack::reclaim();
            }
            Ok(())
        },
    },
];

fn dirty_get(name: &str) -> String {
    format!("{}", crate::block::writeback::get(name).unwrap_or(0))
}

fn dirty_set(name: &str, v: &str) -> Result<(), Errno> {
    let n = parse_u64_range(v, 0, i64::MAX as u64)?;
    crate::block::writeback::set(name, n).map_err(|_| Errno::EINVAL)
}

/// Looks an entry up by its name (`kernel.x` or `kernel/x`, as `sysctl` accepts).
pub fn find(name: &str) -> Option<&'static Sysctl> {
    let name = name.replace('/', ".");
    SYSCTLS.iter().find(|s| s.name == name)
}

/// Reads a sysctl. ENOENT-like lookup failures are EINVAL-free: `None` means unknown.
pub fn get(name: &str) -> Option<String> {
    find(name).map(|s| (s.get)())
}

/// Writes a sysctl: `Err(None)` unknown name, `Err(Some(errno))` bad value.
pub fn set(name: &str, value: &str) -> Result<(), Option<Errno>> {
    let s = find(name).ok_or(None)?;
    (s.set)(value).map_err(Some)
}

/// Every sysctl, in table order.
pub fn list() -> impl Iterator<Item = &'static Sysctl> {
    SYSCTLS.iter()
}
