//! The RT-VM seed's experiments (issue #14): `bench dirty` (Morton's dirty-throttle test) and
//! `bench alloc` (Love's reserve rule).
//!
//! # `bench dirty [-d WARMUP_S] [-n RUNS] [-v]`
//! Needs the disk, ideally as slow as a real one (`make bench-dirty` gives QEMU's
//! `throttling.bps-write=8388608`, as the peer's measurement; an emulated disk that keeps up
//! with the writer never engages the throttle). Sets `vm.dirty_bytes` 32 MiB and
//! `vm.dirty_background_bytes` 16 MiB (the peer's settings; restored afterwards), then:
//! * a background SCHED_OTHER task loops over `dd if=/dev/zero of=/dev/vda bs=1M count=B`
//!   with B = min(512 MiB, half the disk) from offset 0 (Morton's `while true; do dd ...
//!   count=512 conv=notrunc; done`), and runs WARMUP_S (default 5) seconds first (the
//!   flusher's bandwidth estimate, which starts at 100 MiB/s, settles on the disk's meanwhile);
//! * the timed writer dirties 16 MiB (`dd bs=1M count=16`: Morton's `bs=16M count=1` in
//!   pieces the heap likes; the throttle acts per page either way) after the background
//!   region, as SCHED_OTHER and as SCHED_FIFO 50, RUNS (default 5) times each, under each
//!   `vm.rt_dirty_throttle` mode, in rounds (round i runs every case once, in region i,
//!   written once before the round and written back before each clock starts), so every run
//!   dirties 16 MiB of cached clean pages and every case sees the same mix of conditions.
//!
//! One line per case, exactly:
//! `dirty: mode=<exempt|boost|off> policy=<other|fifo> p50_ms=<n> max_ms=<n> throttled_ms=<n>`
//! (`throttled_ms`: the median run's time paused by the throttle). `-v` also prints each run:
//! `dirty-run: round=<i> mode=<m> policy=<p> ms=<n> throttled_ms=<n>`.
//!
//! # `bench alloc [-n RUNS]`
//! Raises `vm.min_free_kbytes` so that half of `min` covers 4 MiB and a margin (restored
//! afterwards). Per run a hog takes frames as a normal task until its allocation fails (free
//! memory at `min`, reclaimable cache reclaimed on the way), then one task (SCHED_OTHER, or
//! SCHED_FIFO 50) allocates 4 MiB (1024 frames) and frees them; timed per task. One line per
//! case, exactly: `alloc: mode=<seed|linux|off> policy=<other|fifo> p50_ms=<n> max_ms=<n> failed=<n>`
//! (`failed`: allocations that failed, summed over the runs).

use super::{flag, opt, Args, Opt};
use crate::block::{pagecache, writeback};
use crate::mm::frame;
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn, wait};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::Policy;
use cadence_vm::dirty::RtDirty;
use cadence_vm::watermark::RtReserve;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const MIB: u64 = 1 << 20;
const FOREGROUND: u64 = 16 * MIB;

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn policy_name(p: Policy) -> &'static str {
    if p == Policy::Fifo {
        "fifo"
    } else {
        "other"
    }
}

/// Spawns a task with `policy` (FIFO at 50) running `f`.
fn spawn_as(name: &str, policy: Policy, f: impl FnOnce() -> i32 + Send + 'static) -> Result<crate::sched::task::Tid, String> {
    let prio = if policy == Policy::Fifo { 50 } else { 0 };
    spawn(SpawnOptions::new(name).policy(policy, prio, 0), f).map(|t| t.tid).map_err(|e| format!("cannot spawn {}: {:?}", name, e))
}

/// `bench dirty`'s options.
const DIRTY_OPTS: [Opt; 3] =
    [opt("-d", "S", "warm-up seconds (default 5)"), opt("-n", "RUNS", "runs (default 5)"), flag("-v", "print every run")];

/// `bench dirty`.
pub fn cmd_dirty(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("dirty", args, &DIRTY_OPTS)? else { return Ok(()) };
    let verbose = a.has("-v");
    let warmup_s = a.num("-d", 5, 0, 3600)?;
    let runs = a.num("-n", 5, 1, 100)?;
    let disk = pagecache::disk_bytes().map_err(|e| format!("/dev/vda: {}", e.strerror()))?;
    let background = (512 * MIB).min(disk / 2 / MIB * MIB);
    if background < 32 * MIB || background + runs * FOREGROUND > disk {
        return Err(format!("the disk ({} MiB) is too small for {} runs of 16 MiB after a 32 MiB background region", disk / MIB, runs));
    }
    let saved = (writeback::config(), writeback::rt_mode());
    let mut cfg = saved.0;
    let set = |cfg: &mut cadence_vm::dirty::DirtyConfig, n: &str, v: u64| cfg.set(n, v).map_err(|e| format!("{}", e));
    set(&mut cfg, "dirty_bytes", 32 * MIB)?;
    set(&mut cfg, "dirty_background_bytes", 16 * MIB)?;
    writeback::set_config(cfg);
    crate::kprintln!(
        "dirty: disk={}MiB background_loop={}MiB foreground={}MiB dirty_bytes=32MiB dirty_background_bytes=16MiB runs={} warmup_s={}",
        disk / MIB,
        background / MIB,
        FOREGROUND / MIB,
        runs,
        warmup_s
    );
    let stop = Arc::new(AtomicBool::new(false));
    let loops = Arc::new(AtomicU64::new(0));
    let (stop2, loops2) = (stop.clone(), loops.clone());
    let bg = spawn_as("dirty-bg", Policy::Normal, move || {
        let buf = alloc::vec![0u8; MIB as usize];
        while !stop2.load(Ordering::Relaxed) {
            let mut pos = 0;
            while pos < background && !stop2.load(Ordering::Relaxed) {
                if writeback::write(pos, &buf, false).is_err() {
                    return 1;
                }
                pos += MIB;
            }
            loops2.fetch_add(1, Ordering::Relaxed);
        }
        0
    });
    let result = match bg {
        Ok(bg) => {
            sched::sleep_ns(warmup_s * 1_000_000_000);
            let r = dirty_cases(background, runs, verbose);
            stop.store(true, Ordering::Relaxed);
            let code = wait(bg);
            if code != Ok(0) {
                crate::kprintln!("dirty: background writer ended with {:?}", code);
            }
            r
        }
        Err(e) => Err(e),
    };
    writeback::set_config(saved.0);
    writeback::set_rt_mode(saved.1);
    crate::kprintln!(
        "dirty: background loops={} writeback_bw_kBps={} (the flusher's estimate)",
        loops.load(Ordering::Relaxed),
        writeback::bandwidth() / 1000
    );
    result
}

/// The cases in rounds: round i runs every (mode, policy) once, in region i, so that no mode
/// meets only the conditions of one stretch of the run (the first cases after the warmup, or
/// those right after an exempt RT writer left the cache far over the limit).
fn dirty_cases(region0: u64, runs: u64, verbose: bool) -> Result<(), String> {
    const MODES: [RtDirty; 3] = [RtDirty::Exempt, RtDirty::Boost, RtDirty::Off];
    const POLICIES: [Policy; 2] = [Policy::Normal, Policy::Fifo];
    // (ms, throttled ms) per run, per case in MODES × POLICIES order.
    let mut results: [Vec<(u64, u64)>; 6] = Default::default();
    for run in 0..runs {
        // The round's region cached and clean before its first case, as it is for the others
        // (their writes find the pages in the cache): every case then dirties cached pages,
        // none pays for taking frames (the first case of a round did, 0.5 s more).
        let pos = region0 + run * FOREGROUND;
        let (_, r) = crate::shell::vm::dd_zero_to_disk(pos, FOREGROUND, MIB);
        r.map_err(|e| format!("pre-touch: {}", e.strerror()))?;
        for (m, mode) in MODES.into_iter().enumerate() {
            writeback::set_rt_mode(mode);
            for (p, policy) in POLICIES.into_iter().enumerate() {
                let pos = region0 + run * FOREGROUND;
                let (ms, thr) = dirty_run(pos, policy)?;
                if verbose {
                    crate::kprintln!(
                        "dirty-run: round={} mode={} policy={} ms={} throttled_ms={}",
                        run,
                        mode.name(),
                        policy_name(policy),
                        ms,
                        thr
                    );
                }
                results[m * POLICIES.len() + p].push((ms, thr));
            }
        }
    }
    for (m, mode) in MODES.into_iter().enumerate() {
        for (p, policy) in POLICIES.into_iter().enumerate() {
            let r = &results[m * POLICIES.len() + p];
            let (mut ms, mut thr): (Vec<u64>, Vec<u64>) = r.iter().copied().unzip();
            let max = ms.iter().copied().max().unwrap_or(0);
            crate::kprintln!(
                "dirty: mode={} policy={} p50_ms={} max_ms={} throttled_ms={}",
                mode.name(),
                policy_name(policy),
                median(&mut ms),
                max,
                median(&mut thr)
            );
        }
    }
    Ok(())
}

/// One timed 16 MiB write at `pos` by a new task of `policy`, from clean pages: (ms, ms
/// throttled).
fn dirty_run(pos: u64, policy: Policy) -> Result<(u64, u64), String> {
    // Start from clean pages (not timed).
    writeback::sync_range(pos / pagecache::PAGE, (pos + FOREGROUND) / pagecache::PAGE - 1)
        .map_err(|e| format!("sync: {}", e.strerror()))?;
    let prio = if policy == Policy::Fifo { 50 } else { 0 };
    let opts = SpawnOptions::new("dirty-fg").policy(policy, prio, 0);
    let fg = sched::spawn_result(opts, move || {
        let me = sched::current();
        let thr0 = me.dirty.throttled_ns.load(Ordering::Relaxed);
        let (ns, r) = crate::shell::vm::dd_zero_to_disk(pos, FOREGROUND, MIB);
        r.ok().map(|_| (ns, me.dirty.throttled_ns.load(Ordering::Relaxed) - thr0))
    })
    .map_err(|e| format!("cannot spawn dirty-fg: {:?}", e))?;
    match fg.join() {
        Ok(Some((ns, thr))) => Ok((ns / 1_000_000, thr / 1_000_000)),
        _ => Err(String::from("the timed writer failed")),
    }
}

/// `bench alloc`'s options.
const ALLOC_OPTS: [Opt; 1] = [opt("-n", "RUNS", "runs (default 5)")];

/// `bench alloc`.
pub fn cmd_alloc(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("alloc", args, &ALLOC_OPTS)? else { return Ok(()) };
    let runs = a.num("-n", 5, 1, 100)?;
    const PAGES: u64 = 1024; // 4 MiB
    let (wm0, kb0, sf0) = frame::watermarks();
    let mode0 = frame::rt_reserve();
    // Half of `min` covers the 4 MiB and a quarter more.
    let min_pages = wm0.min.max(2 * (PAGES + PAGES / 4));
    frame::set_watermarks(Some(min_pages * 4), None).map_err(|e| format!("{}", e))?;
    let wm = frame::watermarks().0;
    crate::kprintln!(
        "alloc: min_free_kbytes={} watermarks_pages min={} low={} high={} request={} pages runs={}",
        min_pages * 4,
        wm.min,
        wm.low,
        wm.high,
        PAGES,
        runs
    );
    let r = alloc_cases(runs, PAGES);
    frame::set_rt_reserve(mode0);
    let _ = frame::set_watermarks(Some(kb0), Some(sf0));
    r
}

fn alloc_cases(runs: u64, pages: u64) -> Result<(), String> {
    for mode in [RtReserve::Seed, RtReserve::Linux, RtReserve::Off] {
        frame::set_rt_reserve(mode);
        for policy in [Policy::Normal, Policy::Fifo] {
            let (mut ms, mut failed) = (Vec::new(), 0);
            for _ in 0..runs {
                // The measuring task first (its stack needs frames), waiting for the hog.
                let go = Arc::new(AtomicBool::new(false));
                let out = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
                let (go2, out2) = (go.clone(), out.clone());
                let tid = spawn_as("alloc-4m", policy, move || {
                    while !go2.load(Ordering::Acquire) {
                        sched::sleep_ns(1_000_000);
                    }
                    let mut got = Vec::with_capacity(pages as usize);
                    let t0 = crate::time::uptime_ns();
                    let mut fails = 0;
                    for _ in 0..pages {
                        match frame::alloc() {
                            Some(f) => got.push(f),
                            None => fails += 1,
                        }
                    }
                    out2.0.store(crate::time::uptime_ns() - t0, Ordering::Relaxed);
                    out2.1.store(fails, Ordering::Relaxed);
                    got.into_iter().for_each(frame::free);
                    0
                })?;
                // The hog: a normal task's allocations until one fails (free at `min`).
                let mut hog: Vec<u64> = Vec::new();
                hog.try_reserve(frame::free_frames() as usize).map_err(|_| String::from("no heap for the hog's list"))?;
                while let Some(f) = frame::alloc_as(cadence_vm::watermark::AllocContext::Task) {
                    hog.push(f);
                }
                go.store(true, Ordering::Release);
                let code = wait(tid);
                hog.into_iter().for_each(frame::free);
                if code != Ok(0) {
                    return Err(format!("the allocating task ended with {:?}", code));
                }
                ms.push(out.0.load(Ordering::Relaxed) / 1_000_000);
                failed += out.1.load(Ordering::Relaxed);
            }
            let max = ms.iter().copied().max().unwrap_or(0);
            crate::kprintln!(
                "alloc: mode={} policy={} p50_ms={} max_ms={} failed={}",
                mode.name(),
                policy_name(policy),
                median(&mut ms),
                max,
                failed
            );
        }
    }
    Ok(())
}
