//! The console (`ttyS0`, `/dev/console`) as a terminal for user processes: Linux's `n_tty`
//! line discipline over COM1 — termios, canonical input with its editing keys, echo, the
//! signal keys, non-canonical reads with VMIN / VTIME, output processing — and the job-control
//! checks of `drivers/tty/tty_jobctrl.c` (a background read stops its process group with
//! SIGTTIN; the foreground group is the one `TIOCSPGRP` named).
//!
//! **Who reads COM1.** The kernel shell reads the UART's bytes itself. While a user process
//! has the console open ([`opened`] / [`closed`] count the open files), the line discipline
//! owns the input instead: a kernel thread (`kworker/tty`) takes each byte as it arrives and
//! processes it at once, as Linux's `flush_to_ldisc` does — so ^C reaches a program that is
//! not reading, echo appears while it computes, and the keys are seen in the order typed.
//! When the last user file closes, the kernel shell reads raw bytes again.
//!
//! **Locks.** The discipline's state is behind one sleeping mutex (its users are tasks: the
//! worker and readers); echo and output go to COM1 through the framework's console lock, which
//! is taken inside it (order: discipline → console). Signals go out after the mutex is
//! released.

use crate::sched::wait::{Mutex, WaitQueue};
use crate::tty::{self, CONSOLE};
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// `c_iflag` bits.
pub mod iflag {
    /// Strip the eighth bit.
    pub const ISTRIP: u32 = 0o40;
    /// NL → CR on input.
    pub const INLCR: u32 = 0o100;
    /// Ignore CR.
    pub const IGNCR: u32 = 0o200;
    /// CR → NL on input.
    pub const ICRNL: u32 = 0o400;
    /// ^S / ^Q flow control (the keys are taken, output is not stopped).
    pub const IXON: u32 = 0o2000;
}

/// `c_oflag` bits.
pub mod oflag {
    /// Process output.
    pub const OPOST: u32 = 1;
    /// NL → CR NL on output.
    pub const ONLCR: u32 = 4;
}

/// `c_lflag` bits.
pub mod lflag {
    /// The signal keys send signals.
    pub const ISIG: u32 = 1;
    /// Canonical (line) input.
    pub const ICANON: u32 = 2;
    /// Echo input.
    pub const ECHO: u32 = 0o10;
    /// ERASE erases the character on the screen.
    pub const ECHOE: u32 = 0o20;
    /// KILL erases the line (a newline after it, without ECHOKE).
    pub const ECHOK: u32 = 0o40;
    /// Echo NL even without ECHO.
    pub const ECHONL: u32 = 0o100;
    /// Do not flush the input at a signal key.
    pub const NOFLSH: u32 = 0o200;
    /// Background writes stop the process group (SIGTTOU).
    pub const TOSTOP: u32 = 0o400;
    /// Echo control characters as `^X`.
    pub const ECHOCTL: u32 = 0o1000;
    /// KILL erases the line on the screen.
    pub const ECHOKE: u32 = 0o4000;
    /// The extended keys (WERASE, LNEXT, REPRINT).
    pub const IEXTEN: u32 = 0o100000;
}

/// `c_cc` indices.
pub mod cc {
    #![allow(missing_docs)]
    pub const VINTR: usize = 0;
    pub const VQUIT: usize = 1;
    pub const VERASE: usize = 2;
    pub const VKILL: usize = 3;
    pub const VEOF: usize = 4;
    pub const VTIME: usize = 5;
    pub const VMIN: usize = 6;
    pub const VSTART: usize = 8;
    pub const VSTOP: usize = 9;
    pub const VSUSP: usize = 10;
    pub const VEOL: usize = 11;
    pub const VREPRINT: usize = 12;
    pub const VWERASE: usize = 14;
    pub const VLNEXT: usize = 15;
    pub const VEOL2: usize = 16;
}

/// The kernel's `struct termios` (`TCGETS`: four flag words, the line discipline, 19 control
/// characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Termios {
    /// `c_iflag`.
    pub iflag: u32,
    /// `c_oflag`.
    pub oflag: u32,
    /// `c_cflag`.
    pub cflag: u32,
    /// `c_lflag`.
    pub lflag: u32,
    /// `c_line`.
    pub line: u8,
    /// `c_cc`.
    pub cc: [u8; 19],
}

impl Termios {
    /// Bytes of the structure.
    pub const SIZE: usize = 36;

    /// Linux's `tty_std_termios`: ICRNL|IXON, OPOST|ONLCR, B38400|CS8|CREAD|HUPCL,
    /// ISIG|ICANON|ECHO|ECHOE|ECHOK|ECHOCTL|ECHOKE|IEXTEN, `INIT_C_CC`.
    pub const fn standard() -> Termios {
        Termios {
            iflag: 0o2400,
            oflag: 0o5,
            cflag: 0o2277,
            lflag: 0o105073,
            line: 0,
            cc: [3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26, 0, 18, 15, 23, 22, 0, 0, 0],
        }
    }

    /// The 36 bytes `TCGETS` copies out.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (i, w) in [self.iflag, self.oflag, self.cflag, self.lflag].iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        b[16] = self.line;
        b[17..36].copy_from_slice(&self.cc);
        b
    }

    /// A termios from `TCSETS`'s bytes.
    pub fn decode(b: &[u8]) -> Termios {
        let w = |i: usize| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
        let mut cc = [0u8; 19];
        cc.copy_from_slice(&b[17..36]);
        Termios { iflag: w(0), oflag: w(1), cflag: w(2), lflag: w(3), line: b[16], cc }
    }
}

/// Input a line discipline holds at most (Linux's `N_TTY_BUF_SIZE`).
const BUF_SIZE: usize = 4096;

/// The discipline's state.
struct Ldisc {
    termios: Termios,
    /// Completed lines (canonical mode): each ends with its NL/EOL, or nothing for one that
    /// VEOF ended (an empty one is end of file to a reader).
    lines: VecDeque<Vec<u8>>,
    /// The line being edited (canonical), or every byte typed (non-canonical).
    edit: Vec<u8>,
    /// The next byte is taken literally (VLNEXT).
    literal: bool,
    /// Window size (rows, columns, x pixels, y pixels).
    winsize: [u16; 4],
}

static LDISC: Mutex<Ldisc> =
    Mutex::new(Ldisc { termios: Termios::standard(), lines: VecDeque::new(), edit: Vec::new(), literal: false, winsize: [0, 0, 0, 0] });

/// Readers waiting for input.
static READERS: WaitQueue = WaitQueue::new();
/// Open user files of the console.
static USERS: AtomicU32 = AtomicU32::new(0);
/// The worker is started.
static WORKER: AtomicBool = AtomicBool::new(false);

/// A user file of the console was opened: the discipline takes the input from now on.
pub fn opened() {
    USERS.fetch_add(1, Ordering::AcqRel);
    if !WORKER.swap(true, Ordering::AcqRel) {
        let started = crate::sched::spawn(crate::sched::task::SpawnOptions::new("kworker/tty").kthread(), || {
            worker();
            0
        });
        if started.is_err() {
            WORKER.store(false, Ordering::Release);
        }
    }
    crate::console::input_arrived();
}

/// A user file of the console was closed.
pub fn closed() {
    USERS.fetch_sub(1, Ordering::AcqRel);
}

/// Does the discipline own the input now?
fn active() -> bool {
    USERS.load(Ordering::Acquire) > 0
}

/// The worker: each byte as it arrives (module doc).
fn worker() {
    loop {
        crate::console::wait_for_input(active);
        let mut bytes = [0u8; 64];
        let mut n = 0;
        while n < bytes.len() && active() {
            match framework::console::pop_input() {
                Some(b) => {
                    bytes[n] = b;
                    n += 1;
                }
                None => break,
            }
        }
        if n > 0 {
            receive(&bytes[..n]);
        }
    }
}

/// Output as the terminal's settings process it (ONLCR).
fn put(t: &Termios, data: &[u8]) {
    if t.oflag & oflag::OPOST != 0 && t.oflag & oflag::ONLCR != 0 && data.contains(&b'\n') {
        let mut out = Vec::with_capacity(data.len() + 8);
        for &b in data {
            if b == b'\n' {
                out.push(b'\r');
            }
            out.push(b);
        }
        framework::console::write_raw(&out);
    } else {
        framework::console::write_raw(data);
    }
}

/// Echoes `b` as ECHOCTL shows control characters.
fn echo_char(t: &Termios, b: u8) {
    if t.lflag & lflag::ECHOCTL != 0 && (b < 0x20 || b == 0x7f) && b != b'\t' && b != b'\n' {
        put(t, &[b'^', b ^ 0x40]);
    } else {
        put(t, &[b]);
    }
}

/// Erases `n` characters on the screen (ECHOE), each as wide as it was echoed.
fn echo_erase(t: &Termios, erased: &[u8]) {
    if t.lflag & lflag::ECHO == 0 {
        return;
    }
    for &b in erased.iter().rev() {
        let w = if t.lflag & lflag::ECHOCTL != 0 && (b < 0x20 || b == 0x7f) && b != b'\t' { 2 } else { 1 };
        for _ in 0..w {
            if t.lflag & lflag::ECHOE != 0 {
                put(t, b"\x08 \x08");
            } else {
                echo_char(t, t.cc[cc::VERASE]);
            }
        }
    }
}

/// Processes typed bytes (Linux's `n_tty_receive_char`): signals after the lock is released.
pub fn receive(bytes: &[u8]) {
    let mut signals: Vec<u32> = Vec::new();
    let mut wake = false;
    {
        let mut l = LDISC.lock_uninterruptible();
        for &raw in bytes {
            let t = l.termios;
            let mut b = raw;
            if t.iflag & iflag::ISTRIP != 0 {
                b &= 0x7f;
            }
            if l.literal {
                l.literal = false;
                push_char(&mut l, b, &t);
                wake |= t.lflag & lflag::ICANON == 0;
                continue;
            }
            if b == b'\r' {
                if t.iflag & iflag::IGNCR != 0 {
                    continue;
                }
                if t.iflag & iflag::ICRNL != 0 {
                    b = b'\n';
                }
            } else if b == b'\n' && t.iflag & iflag::INLCR != 0 {
                b = b'\r';
            }
            let is = |i: usize| t.cc[i] != 0 && t.cc[i] == b;
            if t.lflag & lflag::ISIG != 0 && (is(cc::VINTR) || is(cc::VQUIT) || is(cc::VSUSP)) {
                let sig = if is(cc::VINTR) {
                    2
                } else if is(cc::VQUIT) {
                    3
                } else {
                    20
                };
                if t.lflag & lflag::NOFLSH == 0 {
                    l.lines.clear();
                    l.edit.clear();
                }
                if t.lflag & lflag::ECHO != 0 {
                    echo_char(&t, b);
                    if t.lflag & lflag::ICANON != 0 {
                        put(&t, b"\n");
                    }
                }
                signals.push(sig);
                continue;
            }
            if t.iflag & iflag::IXON != 0 && (is(cc::VSTART) || is(cc::VSTOP)) {
                continue;
            }
            if t.lflag & lflag::ICANON != 0 {
                if is(cc::VERASE) {
                    if let Some(c) = l.edit.pop() {
                        echo_erase(&t, &[c]);
                    }
                    continue;
                }
                if is(cc::VKILL) {
                    let gone = core::mem::take(&mut l.edit);
                    if t.lflag & lflag::ECHOKE != 0 {
                        echo_erase(&t, &gone);
                    } else if t.lflag & lflag::ECHOK != 0 && t.lflag & lflag::ECHO != 0 {
                        echo_char(&t, b);
                        put(&t, b"\n");
                    }
                    continue;
                }
                if t.lflag & lflag::IEXTEN != 0 && is(cc::VWERASE) {
                    let mut gone = Vec::new();
                    while l.edit.last().is_some_and(|c| c.is_ascii_whitespace()) {
                        gone.push(l.edit.pop().expect("checked"));
                    }
                    while l.edit.last().is_some_and(|c| !c.is_ascii_whitespace()) {
                        gone.push(l.edit.pop().expect("checked"));
                    }
                    gone.reverse();
                    echo_erase(&t, &gone);
                    continue;
                }
                if t.lflag & lflag::IEXTEN != 0 && is(cc::VREPRINT) {
                    if t.lflag & lflag::ECHO != 0 {
                        echo_char(&t, b);
                        put(&t, b"\n");
                        let e = l.edit.clone();
                        put(&t, &e);
                    }
                    continue;
                }
                if is(cc::VEOF) {
                    let line = core::mem::take(&mut l.edit);
                    l.lines.push_back(line);
                    wake = true;
                    continue;
                }
                if b == b'\n' || is(cc::VEOL) || is(cc::VEOL2) {
                    if t.lflag & (lflag::ECHO | lflag::ECHONL) != 0 {
                        echo_char(&t, b);
                    }
                    let mut line = core::mem::take(&mut l.edit);
                    line.push(b);
                    l.lines.push_back(line);
                    wake = true;
                    continue;
                }
            }
            if t.lflag & lflag::IEXTEN != 0 && is(cc::VLNEXT) {
                l.literal = true;
                if t.lflag & lflag::ECHO != 0 && t.lflag & lflag::ICANON != 0 {
                    put(&t, b"^\x08");
                }
                continue;
            }
            push_char(&mut l, b, &t);
            wake |= t.lflag & lflag::ICANON == 0;
        }
    }
    if wake {
        READERS.wake_all();
        crate::sched::wait::POLL.wake_all();
    }
    for sig in signals {
        let pgrp = tty::get(CONSOLE).map_or(0, |c| c.fg_pgrp.load(Ordering::Acquire));
        if pgrp != 0 {
            crate::sched::signal::kill_pgrp(pgrp, sig);
        }
    }
}

/// One ordinary byte into the edit buffer (dropped past [`BUF_SIZE`]), echoed.
fn push_char(l: &mut Ldisc, b: u8, t: &Termios) {
    let queued: usize = l.lines.iter().map(Vec::len).sum::<usize>() + l.edit.len();
    if queued >= BUF_SIZE - 1 {
        return;
    }
    l.edit.push(b);
    if t.lflag & lflag::ECHO != 0 {
        echo_char(t, b);
    }
}

/// Is a read ready without waiting (a line in canonical mode, a byte otherwise)?
pub fn readable() -> bool {
    let l = LDISC.lock_uninterruptible();
    if l.termios.lflag & lflag::ICANON != 0 {
        !l.lines.is_empty()
    } else {
        !l.edit.is_empty()
    }
}

/// Bytes a read could take now (`FIONREAD`).
pub fn available() -> usize {
    let l = LDISC.lock_uninterruptible();
    if l.termios.lflag & lflag::ICANON != 0 {
        l.lines.iter().map(Vec::len).sum()
    } else {
        l.edit.len()
    }
}

/// Takes what a read may take now: canonical, up to one line (an empty VEOF line: 0 bytes,
/// end of file); otherwise up to `buf.len()` bytes. `None` if nothing is there.
fn take(l: &mut Ldisc, buf: &mut [u8]) -> Option<usize> {
    if l.termios.lflag & lflag::ICANON != 0 {
        let line = l.lines.front_mut()?;
        let n = line.len().min(buf.len());
        buf[..n].copy_from_slice(&line[..n]);
        line.drain(..n);
        if line.is_empty() {
            l.lines.pop_front();
        }
        Some(n)
    } else {
        if l.edit.is_empty() {
            return None;
        }
        let n = l.edit.len().min(buf.len());
        buf[..n].copy_from_slice(&l.edit[..n]);
        l.edit.drain(..n);
        Some(n)
    }
}

/// Job control for a read or a write by the calling process (Linux's `__tty_check_change`):
/// only for a process whose controlling terminal this is; a background process group gets
/// `sig` (SIGTTIN / SIGTTOU) and the call restarts once it is continued, or EIO if the
/// signal is ignored or blocked (a write just proceeds then).
fn job_check(sig: u32) -> Result<(), Errno> {
    let me = crate::sched::current();
    let g = &me.process.group;
    if g.tty.load(Ordering::Acquire) != CONSOLE {
        return Ok(());
    }
    let Some(c) = tty::get(CONSOLE) else { return Ok(()) };
    let fg = c.fg_pgrp.load(Ordering::Acquire);
    let mine = g.pgid.load(Ordering::Acquire);
    if fg == 0 || fg == mine {
        return Ok(());
    }
    let bit = cadence_abi::signal::sigbit(sig);
    let ignored = g.ignored.load(Ordering::Relaxed) & bit != 0 || me.process.signals.blocked.load(Ordering::Relaxed) & bit != 0;
    if ignored {
        return if sig == 21 { Err(Errno::EIO) } else { Ok(()) };
    }
    crate::sched::signal::kill_pgrp(mine, sig);
    Err(Errno::ERESTARTSYS)
}

/// `TIOCSPGRP`'s check: a background caller gets SIGTTOU, unless it ignores or blocks it.
pub fn check_foreground_change() -> Result<(), Errno> {
    job_check(22)
}

/// `read` of the console by a user process (module doc). `nonblock`: O_NONBLOCK;
/// `job_control`: opened as `/dev/tty` (Linux does not stop readers of `/dev/console`).
pub fn read(buf: &mut [u8], nonblock: bool, job_control: bool) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(0);
    }
    if job_control {
        job_check(21)?;
    }
    let (canon, vmin, vtime) = {
        let l = LDISC.lock_uninterruptible();
        let t = l.termios;
        (t.lflag & lflag::ICANON != 0, t.cc[cc::VMIN] as usize, t.cc[cc::VTIME] as u64)
    };
    if canon || vmin > 0 && vtime == 0 {
        let want = if canon { 1 } else { vmin.min(buf.len()) };
        loop {
            {
                let mut l = LDISC.lock_uninterruptible();
                let have = if canon { usize::from(!l.lines.is_empty()) } else { l.edit.len() };
                if have >= want || (canon && have > 0) {
                    return Ok(take(&mut l, buf).unwrap_or(0));
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            READERS.wait_until_interruptible(readable_enough(canon, want)).map_err(|_| Errno::ERESTARTSYS)?;
        }
    }
    // VMIN = 0: wait up to VTIME tenths of a second for any byte (none: return what is there);
    // VMIN > 0 with VTIME: the first byte without a limit, then VTIME for more.
    if let Some(n) = take(&mut LDISC.lock_uninterruptible(), buf) {
        return Ok(n);
    }
    if nonblock {
        return Err(Errno::EAGAIN);
    }
    if vmin == 0 && vtime == 0 {
        return Ok(0);
    }
    let deadline = crate::time::uptime_ns() + vtime * 100_000_000;
    let got = if vmin == 0 {
        READERS.wait_until_interruptible_deadline(readable_enough(false, 1), deadline).map_err(|_| Errno::ERESTARTSYS)?
    } else {
        READERS.wait_until_interruptible(readable_enough(false, 1)).map_err(|_| Errno::ERESTARTSYS)?;
        true
    };
    if !got {
        return Ok(0);
    }
    Ok(take(&mut LDISC.lock_uninterruptible(), buf).unwrap_or(0))
}

fn readable_enough(canon: bool, want: usize) -> impl FnMut() -> bool {
    move || {
        let Some(l) = LDISC.try_lock() else { return true };
        if canon {
            !l.lines.is_empty()
        } else {
            l.edit.len() >= want
        }
    }
}

/// `write` to the console by a user process: output processing (ONLCR), and SIGTTOU for a
/// background process group with TOSTOP (`job_control`: opened as `/dev/tty`).
pub fn write(data: &[u8], job_control: bool) -> Result<usize, Errno> {
    let t = LDISC.lock_uninterruptible().termios;
    if job_control && t.lflag & lflag::TOSTOP != 0 {
        job_check(22)?;
    }
    put(&t, data);
    Ok(data.len())
}

/// The console's termios (`TCGETS`).
pub fn termios() -> Termios {
    LDISC.lock_uninterruptible().termios
}

/// Sets the termios (`TCSETS*`); `flush` drops typed input (TCSETSF). Switching between
/// canonical and non-canonical mode carries the typed bytes over.
pub fn set_termios(new: Termios, flush: bool) -> Result<(), Errno> {
    job_check(22).or_else(|e| if e == Errno::EIO { Ok(()) } else { Err(e) })?;
    let mut l = LDISC.lock_uninterruptible();
    let was_canon = l.termios.lflag & lflag::ICANON != 0;
    l.termios = new;
    if flush {
        l.lines.clear();
        l.edit.clear();
    }
    let canon = new.lflag & lflag::ICANON != 0;
    if was_canon && !canon {
        let mut all: Vec<u8> = l.lines.drain(..).flatten().collect();
        all.append(&mut l.edit);
        l.edit = all;
    }
    drop(l);
    READERS.wake_all();
    crate::sched::wait::POLL.wake_all();
    Ok(())
}

/// Drops typed input (`TCFLSH` with TCIFLUSH or TCIOFLUSH).
pub fn flush_input() {
    let mut l = LDISC.lock_uninterruptible();
    l.lines.clear();
    l.edit.clear();
}

/// The window size (`TIOCGWINSZ`): rows, columns, x and y pixels.
pub fn winsize() -> [u16; 4] {
    LDISC.lock_uninterruptible().winsize
}

/// Sets the window size (`TIOCSWINSZ`); a change sends SIGWINCH to the foreground group.
pub fn set_winsize(w: [u16; 4]) {
    let changed = {
        let mut l = LDISC.lock_uninterruptible();
        let changed = l.winsize != w;
        l.winsize = w;
        changed
    };
    if changed {
        let pgrp = tty::get(CONSOLE).map_or(0, |c| c.fg_pgrp.load(Ordering::Acquire));
        if pgrp != 0 {
            crate::sched::signal::kill_pgrp(pgrp, 28);
        }
    }
}
