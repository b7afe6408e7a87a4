//! Shell commands for task groups, ttys, sessions and autogroup:
//!
//! * `group create NAME [WEIGHT]`, `group move PID NAME|/`, `group weight NAME W`,
//!   `group list`, `group destroy NAME` — manual groups (`cpu.weight` 1..=10000, default 100).
//! * `autogroup PID [NICE]` — like reading/writing `/proc/<pid>/autogroup`.
//! * `open ttyN` — open a virtual terminal and start a shell session on it; `ttys` lists ttys;
//!   `type ttyN TEXT` types a line into a tty (its shell runs it; output shows on the console);
//!   `close ttyN`.
//! * `spawn --tty N CMD...` — run CMD as the leader of a new session on ttyN (in the background);
//!   `setsid CMD...` — run CMD in a new session (and wait for it).
//!
//! Errors use Linux's `strerror` texts.

use super::cmds::strerror;
use super::{fail, usage_err, CmdResult, Error};
use crate::sched::autogroup;
use crate::sched::group::{self, GroupKind, ROOT_GROUP};
use crate::sched::task::{self, SpawnOptions, Tid};
use crate::shout;
use crate::tty;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

fn pid_arg(cmd: &str, s: Option<&&str>) -> Result<Tid, Error> {
    let s = s.ok_or(Error::Usage(None))?;
    s.parse::<Tid>().map_err(|_| usage_err(cmd, alloc::format!("invalid PID argument: '{}'", s)))
}

fn num_arg(cmd: &str, what: &str, s: Option<&&str>) -> Result<i64, Error> {
    let s = s.ok_or(Error::Usage(None))?;
    s.parse::<i64>().map_err(|_| usage_err(cmd, alloc::format!("invalid {}: '{}'", what, s)))
}

fn group_by_name(name: &str) -> Result<group::GroupId, Error> {
    if name == "/" || name == "root" {
        return Ok(ROOT_GROUP);
    }
    group::by_name(name).map(|g| g.id).ok_or_else(|| fail("group", alloc::format!("{}: no such group", name)))
}

pub fn cmd_group(args: &[&str]) -> CmdResult {
    let errno = |what: &str, e| fail("group", alloc::format!("{}: {}", what, strerror(e)));
    match args.first().copied() {
        Some("create") => {
            let name = args.get(1).ok_or(Error::Usage(None))?;
            let weight = match args.get(2) {
                Some(_) => num_arg("group", "weight", args.get(2))?,
                None => group::DEFAULT_WEIGHT as i64,
            };
            if !(1..=group::MAX_WEIGHT as i64).contains(&weight) {
                return Err(usage_err("group", alloc::format!("weight {} is outside 1..=10000", weight)));
            }
            let g = group::create(name, ROOT_GROUP, weight as u64, GroupKind::Manual).map_err(|e| errno(name, e))?;
            shout!("group {} created (weight {})", g.path(), g.weight());
            Ok(())
        }
        Some("move") => {
            let pid = pid_arg("group", args.get(1))?;
            let gid = group_by_name(args.get(2).ok_or(Error::Usage(None))?)?;
            if let (Some(t), Some(g)) = (task::find(pid), group::lookup(gid)) {
                if g.kind == GroupKind::Auto && t.policy().is_rt() {
                    return Err(fail("group", "RT tasks are never put in autogroups: Invalid argument"));
                }
            }
            group::move_task(pid, gid).map_err(|e| errno(&alloc::format!("move {}", pid), e))
        }
        Some("weight") => {
            let name = args.get(1).ok_or(Error::Usage(None))?;
            let w = num_arg("group", "weight", args.get(2))?;
            let gid = group_by_name(name)?;
            if gid == ROOT_GROUP {
                return Err(fail("group", "the root group's weight is fixed: Invalid argument"));
            }
            group::set_weight(gid, w.max(0) as u64).map_err(|e| errno(name, e))
        }
        Some("destroy") => {
            let name = args.get(1).ok_or(Error::Usage(None))?;
            let gid = group_by_name(name)?;
            if gid == ROOT_GROUP {
                return Err(fail("group", "cannot destroy the root group: Device or resource busy"));
            }
            group::destroy(gid).map_err(|e| errno(name, e))
        }
        Some("list") => {
            shout!("{:<22} {:>6} {:>6} {:>6} {:>8}", "GROUP", "WEIGHT", "SHARES", "TASKS", "KIND");
            shout!("{:<22} {:>6} {:>6} {:>6} {:>8}", "/", 100, 1024, "-", "root");
            for g in group::all() {
                let kind = match g.kind {
                    GroupKind::Auto => "auto",
                    GroupKind::Manual => "manual",
                    GroupKind::Root => "root",
                };
                shout!("{:<22} {:>6} {:>6} {:>6} {:>8}", g.path(), g.weight(), g.shares(), g.nr_tasks.load(Ordering::Relaxed), kind);
            }
            Ok(())
        }
        _ => Err(Error::Usage(None)),
    }
}

pub fn cmd_autogroup(args: &[&str]) -> CmdResult {
    let pid = pid_arg("autogroup", args.first())?;
    if let Some(n) = args.get(1) {
        let nice = n.parse::<i64>().map_err(|_| usage_err("autogroup", alloc::format!("invalid nice: '{}'", n)))?;
        autogroup::set_nice(pid, nice).map_err(|e| fail("autogroup", alloc::format!("{}: {}", pid, strerror(e))))?;
    }
    let s = autogroup::proc_autogroup(pid).map_err(|e| fail("autogroup", alloc::format!("{}: {}", pid, strerror(e))))?;
    shout!("{}", s);
    Ok(())
}

fn tty_arg(cmd: &str, s: Option<&&str>) -> Result<tty::TtyId, Error> {
    let s = s.ok_or(Error::Usage(None))?;
    tty::parse(s).ok_or_else(|| usage_err(cmd, alloc::format!("{}: no such tty (tty1..tty63)", s)))
}

/// A shell session on a virtual tty: reads lines from it and runs them.
fn tty_shell(id: tty::TtyId) -> i32 {
    tty::write(id, &alloc::format!("Cadence shell on tty{} (session {})", id, crate::sched::current_tid()));
    while let Some(line) = tty::read_line(id) {
        tty::write(id, &alloc::format!("cadence@tty{}> {}", id, line));
        if line.trim() == "exit" {
            break;
        }
        super::execute(&line);
    }
    0
}

pub fn cmd_open(args: &[&str]) -> CmdResult {
    let id = tty_arg("open", args.first())?;
    if tty::get(id).is_some_and(|t| t.session.load(Ordering::Acquire) != 0) {
        return Err(fail("open", alloc::format!("tty{} already has a session", id)));
    }
    let t = tty::spawn_on_tty(id, SpawnOptions::new("sh").stack_size(128 * 1024).detached(), move || tty_shell(id))
        .map_err(|e| fail("open", alloc::format!("tty{}: {}", id, strerror(e))))?;
    shout!("tty{}: shell session {}", id, t.tid);
    Ok(())
}

pub fn cmd_close(args: &[&str]) -> CmdResult {
    let id = tty_arg("close", args.first())?;
    tty::close(id).map_err(|e| fail("close", alloc::format!("tty{}: {}", id, strerror(e))))
}

pub fn cmd_type(args: &[&str]) -> CmdResult {
    let id = tty_arg("type", args.first())?;
    let text = args.get(1..).unwrap_or(&[]).join(" ");
    let mut bytes = text.into_bytes();
    bytes.push(b'\n');
    tty::input(id, &bytes).map_err(|e| fail("type", alloc::format!("tty{}: {}", id, strerror(e))))
}

pub fn cmd_ttys(_args: &[&str]) -> CmdResult {
    shout!("{:<6} {:>8} {:<20}", "TTY", "SESSION", "AUTOGROUP");
    for t in tty::all() {
        let ag = group::lookup(t.autogroup.load(Ordering::Relaxed)).map(|g| g.path()).unwrap_or_else(|| "-".into());
        shout!("{:<6} {:>8} {:<20}", t.name(), t.session.load(Ordering::Relaxed), ag);
    }
    shout!("autogroup: {} (mode {})", if autogroup::enabled() { "on" } else { "off" }, autogroup::mode_name());
    Ok(())
}

fn owned(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| String::from(*w)).collect()
}

pub fn cmd_spawn(args: &[&str]) -> CmdResult {
    let (id, rest) = match args {
        ["--tty", n, rest @ ..] if !rest.is_empty() => (tty_arg("spawn", Some(n))?, rest),
        _ => return Err(Error::Usage(None)),
    };
    let words = owned(rest);
    let name = String::from(rest[0]);
    let t = tty::spawn_on_tty(id, SpawnOptions::new(&name).stack_size(64 * 1024).detached(), move || {
        let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
        super::run_words(&w)
    })
    .map_err(|e| fail("spawn", alloc::format!("tty{}: {}", id, strerror(e))))?;
    shout!("[tty{}] {}", id, t.tid);
    Ok(())
}

pub fn cmd_setsid(args: &[&str]) -> CmdResult {
    if args.is_empty() {
        return Err(Error::Usage(None));
    }
    let words = owned(args);
    let t = crate::sched::spawn(SpawnOptions::new(args[0]).stack_size(64 * 1024), move || {
        if let Err(e) = tty::setsid() {
            shout!("setsid: failed to create a new session: {}", strerror(e));
            return 1;
        }
        let w: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
        super::run_words(&w)
    })
    .map_err(|_| fail("setsid", "Cannot allocate memory"))?;
    match task::wait(t.tid) {
        Ok(0) => Ok(()),
        _ => Err(Error::Failed(String::new())),
    }
}
