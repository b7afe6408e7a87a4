//! The virtual terminals as device files (`/dev/tty1` .. `/dev/tty63`, character devices 4:N
//! as on Linux) over the kernel's virtual ttys (`crate::tty`): opening one opens that tty (a
//! session leader may acquire it as its controlling terminal, [`crate::tty::open_file`]),
//! reads take its completed lines, writes go to its output (the console, each line prefixed
//! `[ttyN] `), and the terminal ioctls see a termios and a window size of its own.
//!
//! The vt's line discipline is the kernel's simple canonical one (`tty::input`: backspace
//! erases, a newline completes a line; no echo, no signal keys), so the termios is stored and
//! reported (`TCGETS` gives back what `TCSETS` set, as a program restoring its terminal
//! expects) without changing how input is edited.
//!
//! **Locks.** [`STATE`] is a sleeping mutex taken alone (nothing is called under it).

use super::console::Termios;
use crate::sched::wait::Mutex;
use crate::tty::{self, TtyId};
use alloc::collections::BTreeMap;
use alloc::string::String;
use cadence_abi::errno::Errno;

/// A vt's terminal settings.
#[derive(Clone, Copy)]
struct VtState {
    termios: Termios,
    /// Rows, columns, x and y pixels.
    winsize: [u16; 4],
}

/// The size Linux's VGA text console gives each vt (80 × 25), which the peer's `TIOCGWINSZ`
/// reports on the same QEMU machine.
const VGA_WINSIZE: [u16; 4] = [25, 80, 0, 0];

/// `IUTF8` (`c_iflag`): Linux's vt driver sets it in each vt's initial termios
/// (`default_utf8`), on top of `tty_std_termios`.
const IUTF8: u32 = 0o40000;

const DEFAULT: VtState = VtState { termios: vt_termios(), winsize: VGA_WINSIZE };

/// A vt's initial termios.
const fn vt_termios() -> Termios {
    let mut t = Termios::standard();
    t.iflag |= IUTF8;
    t
}

/// Settings of the vts a program changed (the others have [`DEFAULT`]).
static STATE: Mutex<BTreeMap<TtyId, VtState>> = Mutex::new(BTreeMap::new());

fn state(id: TtyId) -> VtState {
    STATE.lock_uninterruptible().get(&id).copied().unwrap_or(DEFAULT)
}

fn update(id: TtyId, f: impl FnOnce(&mut VtState)) {
    let mut m = STATE.lock_uninterruptible();
    f(m.entry(id).or_insert(DEFAULT));
}

/// `read` of `/dev/ttyN` (see `tty::read_bytes`).
pub fn read(id: TtyId, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(0);
    }
    tty::read_bytes(id, buf, nonblock)
}

/// `write` to `/dev/ttyN`: the vt's output path (invalid UTF-8 shows as U+FFFD).
pub fn write(id: TtyId, data: &[u8]) -> usize {
    tty::write(id, &String::from_utf8_lossy(data));
    data.len()
}

/// Is a read ready without waiting (`poll`)?
pub fn readable(id: TtyId) -> bool {
    tty::line_ready(id)
}

/// The vt's termios (`TCGETS`).
pub fn termios(id: TtyId) -> Termios {
    state(id).termios
}

/// Sets the vt's termios (`TCSETS*`; module doc: recorded, not applied).
pub fn set_termios(id: TtyId, t: Termios) {
    update(id, |s| s.termios = t);
}

/// The vt's window size (`TIOCGWINSZ`).
pub fn winsize(id: TtyId) -> [u16; 4] {
    state(id).winsize
}

/// Sets the window size (`TIOCSWINSZ`); a change sends SIGWINCH to the foreground group.
pub fn set_winsize(id: TtyId, w: [u16; 4]) {
    let mut changed = false;
    update(id, |s| {
        changed = s.winsize != w;
        s.winsize = w;
    });
    if changed {
        let pgrp = tty::get(id).map_or(0, |t| t.fg_pgrp.load(core::sync::atomic::Ordering::Acquire));
        if pgrp != 0 {
            crate::sched::signal::kill_pgrp(pgrp, 28);
        }
    }
}
