//! `bench hackbench [-g GROUPS] [-l LOOPS] [-f FDS] [-s DATASIZE] [-p] [-P]`: rt-tests hackbench
//! in pipe mode. Each group has FDS receivers (default 20), each reading from its own pipe, and
//! FDS senders that each write LOOPS messages (default 100) of DATASIZE bytes (default 100) to
//! every receiver of the group; GROUPS defaults to 10. All tasks are created and ready before the
//! clock starts; the time runs until the last task has finished. Output, as hackbench prints it:
//!
//! ```text
//! Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)
//! Each sender will pass 100 messages of 100 bytes
//! Time: 1.234
//! ```
//!
//! (`-p` pipe mode is the only mode and `-P` process mode is the only mode: both accepted.)
//! Runs longer than 5 s print `hackbench: <done>/<tasks> tasks done` every 5 s.

use super::{flag, opt, Args, Opt};
use crate::sched::pipe::{pipe, PipeWriter};
use crate::sched::task::SpawnOptions;
use crate::sched::wait::WaitQueue;
use crate::sched::{self, spawn, wait};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Start {
    go: AtomicBool,
    ready: AtomicUsize,
    done: AtomicUsize,
    total: usize,
    /// Set when the run is over (ends the progress helper).
    over: AtomicBool,
    wq: WaitQueue,
}

/// Runs hackbench; returns the elapsed seconds.
pub fn hackbench(groups: usize, loops: usize, fds: usize, datasize: usize) -> Result<f64, String> {
    let total = groups * fds * 2;
    let start = Arc::new(Start {
        go: AtomicBool::new(false),
        ready: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        total,
        over: AtomicBool::new(false),
        wq: WaitQueue::new(),
    });
    let mut tids = Vec::new();
    let mut failure = None;
    'spawn: for _ in 0..groups {
        let mut writers: Vec<Arc<PipeWriter>> = Vec::new();
        for _ in 0..fds {
            let (r, w) = pipe();
            writers.push(Arc::new(w));
            let st = start.clone();
            let expect = fds * loops * datasize;
            let t = spawn(SpawnOptions::new("hackbench-rx").stack_size(16 * 1024), move || {
                let mut buf = [0u8; 512];
                let size = datasize.min(buf.len());
                st.ready.fetch_add(1, Ordering::AcqRel);
                st.wq.wait_until(|| st.go.load(Ordering::Acquire));
                let mut got = 0;
                while got < expect {
                    let n = r.read(&mut buf[..size]);
                    if n == 0 {
                        break;
                    }
                    got += n;
                }
                if st.done.fetch_add(1, Ordering::AcqRel) + 1 == st.total {
                    st.wq.wake_all();
                }
                if got == expect {
                    0
                } else {
                    1
                }
            });
            match t {
                Ok(t) => tids.push(t.tid),
                Err(e) => {
                    failure = Some(alloc::format!("cannot start a receiver: {:?}", e));
                    break 'spawn;
                }
            }
        }
        for _ in 0..fds {
            let ws = writers.clone();
            let st = start.clone();
            let t = spawn(SpawnOptions::new("hackbench-tx").stack_size(16 * 1024), move || {
                let data = [0x5au8; 512];
                let size = datasize.min(data.len());
                st.ready.fetch_add(1, Ordering::AcqRel);
                st.wq.wait_until(|| st.go.load(Ordering::Acquire));
                let mut ok = true;
                for _ in 0..loops {
                    for w in &ws {
                        ok &= w.write(&data[..size]).is_ok();
                    }
                }
                drop(ws);
                if st.done.fetch_add(1, Ordering::AcqRel) + 1 == st.total {
                    st.wq.wake_all();
                }
                if ok {
                    0
                } else {
                    1
                }
            });
            match t {
                Ok(t) => tids.push(t.tid),
                Err(e) => {
                    failure = Some(alloc::format!("cannot start a sender: {:?}", e));
                    break 'spawn;
                }
            }
        }
        // The senders hold the only write ends now: receivers see end-of-stream if they die.
        drop(writers);
    }
    if failure.is_none() {
        let deadline = crate::time::uptime_ns() + 30_000_000_000;
        while start.ready.load(Ordering::Acquire) < tids.len() && crate::time::uptime_ns() < deadline {
            sched::sleep_ns(1_000_000);
        }
    }
    let t0 = crate::time::uptime_ns();
    let progress = {
        let st = start.clone();
        spawn(SpawnOptions::new("hackbench-progress").stack_size(16 * 1024).detached(), move || {
            let mut secs = 0;
            while !st.over.load(Ordering::Acquire) {
                sched::sleep_ns(1_000_000_000);
                secs += 1;
                let done = st.done.load(Ordering::Acquire);
                if secs % 5 == 0 && done < st.total {
                    crate::kprintln!("hackbench: {}/{} tasks done", done, st.total);
                }
            }
            0
        })
    };
    start.go.store(true, Ordering::Release);
    start.wq.wake_all();
    if let Some(f) = failure {
        start.over.store(true, Ordering::Release);
        // Let the tasks that did start finish (receivers of a group without senders see EOF).
        for t in tids {
            let _ = wait(t);
        }
        crate::mm::stack::reclaim();
        return Err(f);
    }
    // The last task to finish wakes us; a helper prints progress on long runs.
    start.wq.wait_until(|| start.done.load(Ordering::Acquire) >= total);
    let secs = (crate::time::uptime_ns() - t0) as f64 / 1e9;
    start.over.store(true, Ordering::Release);
    let _ = progress;
    let mut bad = 0;
    for t in tids {
        if wait(t).unwrap_or(1) != 0 {
            bad += 1;
        }
    }
    crate::mm::stack::reclaim();
    if bad > 0 {
        return Err(alloc::format!("{} tasks failed (short read or broken pipe)", bad));
    }
    Ok(secs)
}

/// `bench hackbench`'s options.
const OPTS: [Opt; 6] = [
    opt("-g", "GROUPS", "groups of senders and receivers (default 10)"),
    opt("-l", "LOOPS", "messages each sender sends each receiver (default 100)"),
    opt("-f", "FDS", "senders and receivers per group (default 20)"),
    opt("-s", "DATASIZE", "bytes per message (default 100)"),
    flag("-p", "pipes (the only mode: accepted as hackbench's)"),
    flag("-P", "processes (Cadence runs tasks: accepted)"),
];

pub fn cmd_hackbench(args: &[&str]) -> Result<(), String> {
    let Some(a) = Args::parse("hackbench", args, &OPTS)? else { return Ok(()) };
    let groups = a.num("-g", 10, 1, 100)? as usize;
    let loops = a.num("-l", 100, 1, 10_000_000)? as usize;
    let fds = a.num("-f", 20, 1, 100)? as usize;
    let size = a.num("-s", 100, 1, 512)? as usize;
    crate::kprintln!(
        "Running in process mode with {} groups using {} file descriptors each (== {} tasks)",
        groups,
        fds * 2,
        groups * fds * 2
    );
    crate::kprintln!("Each sender will pass {} messages of {} bytes", loops, size);
    let secs = hackbench(groups, loops, fds, size)?;
    crate::kprintln!("Time: {:.3}", secs);
    Ok(())
}
