//! Terminals, sessions and process groups.
//!
//! * ttys: `ttyS0` (id [`CONSOLE`], COM1, always open) and virtual terminals `tty1..tty63`
//!   opened on demand ([`open`]). Each has a line discipline: bytes written to its input
//!   ([`input`]) are edited canonically (backspace erases, a newline completes a line) and
//!   readers get whole lines ([`read_line`], blocking). Output from a virtual tty goes to the
//!   console prefixed `[ttyN] `.
//! * Sessions and process groups follow POSIX: [`setsid`] makes the caller the leader of a new
//!   session and process group, without a controlling tty (EPERM if it already leads a process
//!   group); [`setpgid`] moves a task to a process group of its own session; a session leader
//!   that opens a tty with no session acquires it as its controlling tty ([`acquire`]).
//!   Children inherit session, process group and tty.
//! * Autogroup (see `sched::autogroup`): in tty mode a tty's autogroup is created when the tty
//!   is opened and a task joins it when the tty becomes its controlling tty (or by inheritance);
//!   in session mode `setsid` creates the autogroup.

use crate::sched::task::{self, Task, TaskState, Tid};
use crate::sched::wait::WaitQueue;
use crate::sched::{autogroup, current};
use crate::sync::IrqLock;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::Errno;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

pub type TtyId = u32;
/// The console, `ttyS0`.
pub const CONSOLE: TtyId = 64;
pub const MAX_VT: TtyId = 63;

pub struct Tty {
    pub id: TtyId,
    /// Controlling session (0 = none).
    pub session: AtomicU32,
    /// Foreground process group (0 = none): the signal keys' target, `TIOCSPGRP`'s.
    pub fg_pgrp: AtomicU32,
    /// Its autogroup in tty mode (0 = none).
    pub autogroup: AtomicU32,
    edit: IrqLock<String>,
    /// Completed lines, each with its newline (a user read may take part of one).
    lines: IrqLock<VecDeque<String>>,
    readable: WaitQueue,
    closed: AtomicBool,
}

impl Tty {
    pub fn name(&self) -> String {
        if self.id == CONSOLE {
            "ttyS0".into()
        } else {
            alloc::format!("tty{}", self.id)
        }
    }
}

static TTYS: IrqLock<BTreeMap<TtyId, Arc<Tty>>> = IrqLock::new(BTreeMap::new());

/// Parses `tty3`, `3`, `ttyS0`.
pub fn parse(name: &str) -> Option<TtyId> {
    if name == "ttyS0" || name == "console" {
        return Some(CONSOLE);
    }
    let n = name.strip_prefix("tty").unwrap_or(name).parse::<u32>().ok()?;
    (1..=MAX_VT).contains(&n).then_some(n)
}

pub fn get(id: TtyId) -> Option<Arc<Tty>> {
    TTYS.lock().get(&id).cloned()
}

pub fn all() -> Vec<Arc<Tty>> {
    TTYS.lock().values().cloned().collect()
}

/// Opens (creating if needed) tty `id`; in tty autogroup mode a new tty gets its autogroup.
pub fn open(id: TtyId) -> Result<Arc<Tty>, Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    if !(1..=MAX_VT).contains(&id) && id != CONSOLE {
        return Err(Errno::EINVAL);
    }
    if let Some(t) = get(id) {
        return Ok(t);
    }
    if crate::mm::fail_alloc::should_fail("tty") {
        return Err(Errno::ENOMEM);
    }
    let ag = if autogroup::session_mode() { 0 } else { autogroup::create(1)?.id };
    let tty = Arc::new(Tty {
        id,
        session: AtomicU32::new(0),
        fg_pgrp: AtomicU32::new(0),
        autogroup: AtomicU32::new(ag),
        edit: IrqLock::new(String::new()),
        lines: IrqLock::new(VecDeque::new()),
        readable: WaitQueue::new(),
        closed: AtomicBool::new(false),
    });
    let mut ttys = TTYS.lock();
    if let Some(existing) = ttys.get(&id) {
        let existing = existing.clone();
        drop(ttys);
        autogroup::put(ag);
        return Ok(existing);
    }
    ttys.insert(id, tty.clone());
    Ok(tty)
}

/// Closes a virtual tty: readers get end-of-file, its tty-mode autogroup loses the tty's
/// reference (and goes once no task uses it). EINVAL for the console, ENODEV if not open.
pub fn close(id: TtyId) -> Result<(), Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    if id == CONSOLE {
        return Err(Errno::EINVAL);
    }
    let tty = TTYS.lock().remove(&id).ok_or(Errno::ENODEV)?;
    tty.closed.store(true, Ordering::Release);
    tty.readable.wake_all();
    autogroup::put(tty.autogroup.swap(0, Ordering::AcqRel));
    Ok(())
}

/// Feeds bytes to a tty's line discipline (as if typed).
pub fn input(id: TtyId, bytes: &[u8]) -> Result<(), Errno> {
    let tty = get(id).ok_or(Errno::ENODEV)?;
    let mut completed = false;
    {
        let mut edit = tty.edit.lock();
        for &b in bytes {
            match b {
                b'\r' | b'\n' => {
                    let mut line = core::mem::take(&mut *edit);
                    line.push('\n');
                    tty.lines.lock().push_back(line);
                    completed = true;
                }
                0x08 | 0x7f => {
                    edit.pop();
                }
                b if b.is_ascii() && !b.is_ascii_control() => edit.push(b as char),
                _ => {}
            }
        }
    }
    if completed {
        tty.readable.wake_all();
        // `poll` on a `/dev/ttyN` file waits there.
        crate::sched::wait::POLL.wake_all();
    }
    Ok(())
}

/// Reads one line without its newline (blocking); `None` at end of file (tty closed).
pub fn read_line(id: TtyId) -> Option<String> {
    let tty = get(id)?;
    let mut line = None;
    tty.readable.wait_until(|| {
        line = tty.lines.lock().pop_front();
        line.is_some() || tty.closed.load(Ordering::Acquire)
    });
    line.map(|mut l| {
        if l.ends_with('\n') {
            l.pop();
        }
        l
    })
}

/// Is a completed line waiting on tty `id` (or is it closed: a read returns at once)?
pub fn line_ready(id: TtyId) -> bool {
    get(id).is_none_or(|t| !t.lines.lock().is_empty() || t.closed.load(Ordering::Acquire))
}

/// A user `read` of a virtual tty (canonical, as Linux's `n_tty`): up to `buf.len()` bytes of
/// the first completed line, newline included; the rest of a line stays for the next read.
/// 0 at end of file (the tty was closed); EAGAIN if `nonblock` and no line is complete;
/// ERESTARTSYS if a signal ends the wait.
pub fn read_bytes(id: TtyId, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    let Some(tty) = get(id) else { return Ok(0) };
    loop {
        {
            let mut lines = tty.lines.lock();
            if let Some(line) = lines.pop_front() {
                let n = line.len().min(buf.len());
                buf[..n].copy_from_slice(&line.as_bytes()[..n]);
                if n < line.len() {
                    // Lines hold ASCII only (`input`), so any byte offset is a boundary.
                    lines.push_front(String::from(&line[n..]));
                }
                return Ok(n);
            }
        }
        if tty.closed.load(Ordering::Acquire) {
            return Ok(0);
        }
        if nonblock {
            return Err(Errno::EAGAIN);
        }
        tty.readable
            .wait_until_interruptible(|| !tty.lines.lock().is_empty() || tty.closed.load(Ordering::Acquire))
            .map_err(|_| Errno::ERESTARTSYS)?;
    }
}

/// Writes text to a tty (virtual ttys show on the console with a `[ttyN] ` prefix).
pub fn write(id: TtyId, text: &str) {
    if id == CONSOLE {
        crate::kprint!("{}", text);
    } else {
        for line in text.lines() {
            crate::kprintln!("[tty{}] {}", id, line);
        }
    }
}

fn task_of(pid: Tid) -> Result<Arc<Task>, Errno> {
    let t = if pid == 0 { Some(current()) } else { task::find(pid) };
    t.filter(|t| !t.is_idle && t.state() != TaskState::Dead).ok_or(Errno::ESRCH)
}

/// `setsid()`: the caller leads a new session and process group, without a controlling tty.
/// EPERM if it already leads a process group. In session autogroup mode it gets a new
/// autogroup; in tty mode it leaves its tty's autogroup.
pub fn setsid() -> Result<Tid, Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    let me = current();
    if me.process.group.pgid.load(Ordering::Acquire) == me.tid {
        return Err(Errno::EPERM);
    }
    me.process.group.sid.store(me.tid, Ordering::Release);
    me.process.group.pgid.store(me.tid, Ordering::Release);
    me.process.group.tty.store(0, Ordering::Release);
    let ag = if autogroup::session_mode() { autogroup::create(0).map(|g| g.id).unwrap_or(0) } else { 0 };
    autogroup::assign(&me, ag);
    Ok(me.tid)
}

/// `setpgid(pid, pgid)`: pgid 0 means "pid itself". EINVAL for a negative pgid, ESRCH for no
/// such task, EPERM for a session leader or a target group in another session.
pub fn setpgid(pid: Tid, pgid: i64) -> Result<(), Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let t = task_of(pid)?;
    let pgid = if pgid == 0 { t.tid } else { pgid as Tid };
    let sid = t.process.group.sid.load(Ordering::Acquire);
    if sid == t.tid {
        return Err(Errno::EPERM);
    }
    if pgid != t.tid
        && !task::all()
            .iter()
            .any(|o| o.process.group.pgid.load(Ordering::Acquire) == pgid && o.process.group.sid.load(Ordering::Acquire) == sid)
    {
        return Err(Errno::EPERM);
    }
    t.process.group.pgid.store(pgid, Ordering::Release);
    Ok(())
}

pub fn getsid(pid: Tid) -> Result<Tid, Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    Ok(task_of(pid)?.process.group.sid.load(Ordering::Acquire))
}

pub fn getpgid(pid: Tid) -> Result<Tid, Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    Ok(task_of(pid)?.process.group.pgid.load(Ordering::Acquire))
}

/// The calling session leader opens tty `id` and, if the tty has no session, acquires it as
/// its controlling tty (and, in tty mode, joins its autogroup). EPERM if not a session leader
/// or the tty belongs to another session.
pub fn acquire(id: TtyId) -> Result<(), Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    let me = current();
    let tty = open(id)?;
    if me.process.group.sid.load(Ordering::Acquire) != me.tid {
        return Err(Errno::EPERM);
    }
    match tty.session.compare_exchange(0, me.tid, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(s) if s == me.tid => {}
        Err(_) => return Err(Errno::EPERM),
    }
    me.process.group.tty.store(id, Ordering::Release);
    if !autogroup::session_mode() {
        autogroup::assign(&me, tty.autogroup.load(Ordering::Acquire));
    }
    Ok(())
}

/// In tty autogroup mode, the caller joins virtual terminal `tty`'s autogroup, as a task
/// whose controlling tty it became (the console's sessions keep the group they have: the
/// kernel shell and the boot's first process run there).
fn join_autogroup(me: &Arc<Task>, tty: &Tty) {
    if !autogroup::session_mode() && tty.id != CONSOLE {
        autogroup::assign(me, tty.autogroup.load(Ordering::Acquire));
    }
}

/// The calling process opened virtual terminal `id`'s device file (`/dev/ttyN`): the tty is
/// opened (created on first use), and, as Linux's `tty_open_proc_set_tty`, a session leader
/// without a controlling terminal that opened it for reading and without O_NOCTTY
/// (`noctty`) makes it its controlling terminal if no session has it, with its process group
/// in the foreground, joining its autogroup in tty mode.
pub fn open_file(id: TtyId, noctty: bool, readable: bool) -> Result<(), Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    let tty = open(id)?;
    let me = current();
    let g = &me.process.group;
    let sid = g.sid.load(Ordering::Acquire);
    if noctty || !readable || sid != me.process.tgid || g.tty.load(Ordering::Acquire) != 0 {
        return Ok(());
    }
    if tty.session.compare_exchange(0, sid, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return Ok(());
    }
    g.tty.store(id, Ordering::Release);
    tty.fg_pgrp.store(g.pgid.load(Ordering::Acquire), Ordering::Release);
    join_autogroup(&me, &tty);
    Ok(())
}

/// A task exited: a session leader's tty becomes free for another session, and its
/// foreground process group gets SIGHUP and SIGCONT (Linux's `disassociate_ctty`).
pub fn task_exit(t: &Task) {
    let id = t.process.group.tty.load(Ordering::Acquire);
    if id != 0 && t.process.group.sid.load(Ordering::Acquire) == t.tid {
        if let Some(tty) = get(id) {
            if tty.session.compare_exchange(t.tid, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                let fg = tty.fg_pgrp.swap(0, Ordering::AcqRel);
                if fg != 0 && t.process.is_user() {
                    crate::sched::signal::kill_pgrp(fg, crate::sched::signal::SIGHUP);
                    crate::sched::signal::kill_pgrp(fg, crate::sched::signal::SIGCONT);
                }
            }
        }
    }
}

/// `TIOCSCTTY`: the calling session leader makes tty `id` its controlling terminal, with its
/// process group in the foreground. EPERM if it is not a session leader, already has another
/// one, or the tty is another session's (unless `steal`, root's privilege).
pub fn set_controlling(id: TtyId, steal: bool) -> Result<(), Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    let me = current();
    let g = &me.process.group;
    let sid = g.sid.load(Ordering::Acquire);
    let have = g.tty.load(Ordering::Acquire);
    if have == id && get(id).is_some_and(|t| t.session.load(Ordering::Acquire) == sid) {
        return Ok(());
    }
    if sid != me.process.tgid || have != 0 {
        return Err(Errno::EPERM);
    }
    let tty = open(id)?;
    match tty.session.compare_exchange(0, sid, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(other) if steal => {
            for t in task::all() {
                let tg = &t.process.group;
                if tg.sid.load(Ordering::Acquire) == other && tg.tty.load(Ordering::Acquire) == id {
                    tg.tty.store(0, Ordering::Release);
                }
            }
            tty.session.store(sid, Ordering::Release);
        }
        Err(_) => return Err(Errno::EPERM),
    }
    g.tty.store(id, Ordering::Release);
    tty.fg_pgrp.store(g.pgid.load(Ordering::Acquire), Ordering::Release);
    join_autogroup(&me, &tty);
    Ok(())
}

/// `TIOCNOTTY`: the calling process gives up its controlling terminal; a session leader's
/// whole session does, and its foreground group gets SIGHUP and SIGCONT.
pub fn drop_controlling() -> Result<(), Errno> {
    let _defer = crate::sched::signal::DeferFatal::new();
    let me = current();
    let g = &me.process.group;
    let id = g.tty.load(Ordering::Acquire);
    if id == 0 {
        return Err(Errno::ENOTTY);
    }
    let sid = g.sid.load(Ordering::Acquire);
    if sid != me.process.tgid {
        g.tty.store(0, Ordering::Release);
        return Ok(());
    }
    if let Some(tty) = get(id) {
        let fg = tty.fg_pgrp.swap(0, Ordering::AcqRel);
        if fg != 0 {
            crate::sched::signal::kill_pgrp(fg, crate::sched::signal::SIGHUP);
            crate::sched::signal::kill_pgrp(fg, crate::sched::signal::SIGCONT);
        }
        let _ = tty.session.compare_exchange(sid, 0, Ordering::AcqRel, Ordering::Acquire);
    }
    for t in task::all() {
        let tg = &t.process.group;
        if tg.sid.load(Ordering::Acquire) == sid {
            tg.tty.store(0, Ordering::Release);
        }
    }
    Ok(())
}

/// Does process group `pgid` exist in session `sid` (0: in any session)?
pub fn pgrp_in_session(pgid: Tid, sid: Tid) -> bool {
    task::all().iter().any(|t| {
        let g = &t.process.group;
        !t.is_idle
            && t.state() != TaskState::Dead
            && g.pgid.load(Ordering::Acquire) == pgid
            && (sid == 0 || g.sid.load(Ordering::Acquire) == sid)
    })
}

/// Spawns `f` as the leader of a new session on tty `id` (like `setsid` + opening the tty):
/// the shell's `spawn --tty N`.
pub fn spawn_on_tty(
    id: TtyId,
    opts: crate::sched::task::SpawnOptions,
    f: impl FnOnce() -> i32 + Send + 'static,
) -> Result<Arc<Task>, Errno> {
    open(id)?;
    crate::sched::spawn(opts, move || {
        if setsid().is_err() || acquire(id).is_err() {
            return 1;
        }
        f()
    })
    .map_err(|_| Errno::ENOMEM)
}
