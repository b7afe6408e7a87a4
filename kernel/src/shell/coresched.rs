//! `coresched`: the PR_SCHED_CORE interface from the console (util-linux `coresched` in spirit):
//!
//! * `coresched get PID` — the cookie value (0 = none);
//! * `coresched create PID [--type pid|tgid|pgid]` — a new cookie for the task / thread group /
//!   process group;
//! * `coresched share-to PID [--type pid|tgid|pgid]` — give the shell's cookie to the target scope;
//! * `coresched share-from PID` — take the target's cookie;
//! * `coresched stat` — forced-idle time per CPU and core, and per cookied task.

use super::cmds::strerror;
use super::{fail, usage_err, CmdResult, Error};
use crate::sched::coresched;
use crate::shout;
use cadence_sched::core_sched::{
    PIDTYPE_PGID, PIDTYPE_PID, PIDTYPE_TGID, PR_SCHED_CORE_CREATE, PR_SCHED_CORE_GET, PR_SCHED_CORE_SHARE_FROM, PR_SCHED_CORE_SHARE_TO,
};
use core::sync::atomic::Ordering;

fn parse_type(args: &[&str]) -> Result<u32, Error> {
    match args {
        [] => Ok(PIDTYPE_PID),
        ["--type", t] | ["-t", t] => match *t {
            "pid" => Ok(PIDTYPE_PID),
            "tgid" => Ok(PIDTYPE_TGID),
            "pgid" => Ok(PIDTYPE_PGID),
            other => Err(usage_err("coresched", alloc::format!("unknown type '{}' (pid, tgid, pgid)", other))),
        },
        _ => Err(Error::Usage(None)),
    }
}

pub fn cmd_coresched(args: &[&str]) -> CmdResult {
    let Some(&sub) = args.first() else { return Err(Error::Usage(None)) };
    if sub == "stat" {
        return stat();
    }
    let pid_s = args.get(1).ok_or(Error::Usage(None))?;
    let pid = pid_s.parse::<u32>().map_err(|_| usage_err("coresched", alloc::format!("invalid PID argument: '{}'", pid_s)))?;
    let rest = args.get(2..).unwrap_or(&[]);
    let (cmd, name) = match sub {
        "get" => (PR_SCHED_CORE_GET, "PR_SCHED_CORE_GET"),
        "create" => (PR_SCHED_CORE_CREATE, "PR_SCHED_CORE_CREATE"),
        "share-to" => (PR_SCHED_CORE_SHARE_TO, "PR_SCHED_CORE_SHARE_TO"),
        "share-from" => (PR_SCHED_CORE_SHARE_FROM, "PR_SCHED_CORE_SHARE_FROM"),
        _ => return Err(Error::Usage(None)),
    };
    let ty = parse_type(rest)?;
    // GET stores the value at uaddr in Linux; the shell passes an aligned dummy address.
    let uaddr = if cmd == PR_SCHED_CORE_GET { 8 } else { 0 };
    match coresched::prctl(cmd as u64, pid as u64, ty as u64, uaddr) {
        Ok(v) if cmd == PR_SCHED_CORE_GET => {
            shout!("pid {}'s core scheduling cookie: {:#x}", pid, v);
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) => Err(fail("coresched", alloc::format!("{} failed for pid {}: {}", name, pid, strerror(e)))),
    }
}

fn stat() -> CmdResult {
    shout!(
        "core scheduling: {} (kernel.sched_core), smt {}",
        if coresched::enabled() { "on" } else { "off" },
        if coresched::smt_present() { "present" } else { "absent" }
    );
    shout!("cookied tasks started without the core-wide check: {} (must be 0)", coresched::unchecked_picks());
    shout!(
        "candidate lists out of room (more than {} cookies queued on one CPU): {}",
        coresched::MAX_COOKIES_PER_CPU,
        coresched::dropped_candidates()
    );
    shout!("tasks taken by forced-idle CPUs for their sibling's cookie: {}", coresched::steals());
    let mut seen = cadence_sched::CpuMask::EMPTY;
    for cpu in crate::percpu::online_cpus() {
        let sib = coresched::siblings(cpu.cpu_id);
        if sib.intersects(seen) {
            continue;
        }
        seen = seen | sib;
        let mut total = 0;
        for c in sib.iter() {
            let ns =
                crate::percpu::get(c as u32).map(|p| crate::sched::rq_of(p.cpu_id).forced_idle_ns.load(Ordering::Relaxed)).unwrap_or(0);
            total += ns;
            shout!("cpu {}: forced idle {} us", c, ns / 1000);
        }
        shout!("core {:?}: forced idle {} us", sib.iter().collect::<alloc::vec::Vec<_>>(), total / 1000);
    }
    for t in crate::sched::task::all() {
        let c = t.core_cookie.load(Ordering::Relaxed);
        if c != 0 {
            shout!(
                "pid {} ({}): cookie {:#x}, forced idle charged {} us",
                t.tid,
                t.name,
                c,
                t.core_forceidle_ns.load(Ordering::Relaxed) / 1000
            );
        }
    }
    Ok(())
}
