//! The interactive shell on COM1: prompt `cadence> `, a line editor, history.
//!
//! [`run`] starts the shell task (`sh`), which blocks in `console::read_byte` while waiting for
//! input (the COM1 receive interrupt wakes it) and runs each line with `shell::execute`; init
//! restarts it if it exits (e.g. killed).
//!
//! [`LineEditor`] is pure (bytes in, terminal output out) so tests can drive it. Keys (VT100 /
//! xterm sequences as terminals send them): printable ASCII inserts at the cursor; Backspace
//! (0x7f or ^H) deletes left; Delete (`ESC [ 3 ~`) and ^D delete under the cursor; ← → (`ESC [ D/C`)
//! move; Home/End (`ESC [ H/F`, `ESC [ 1~/4~`, `ESC O H/F`, ^A/^E); ↑ ↓ (`ESC [ A/B`, ^P/^N) walk
//! the history (last 64 distinct lines); ^U clears the line; ^C abandons it (prints `^C`);
//! Enter (CR or LF; the LF of a CRLF is ignored) submits. Lines are limited to 1024 bytes; other
//! control bytes and non-ASCII bytes are ignored.

use alloc::string::String;
use alloc::vec::Vec;

pub const PROMPT: &str = "cadence> ";
const MAX_LINE: usize = 1024;
const MAX_HISTORY: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Esc {
    None,
    Start,
    Csi,
    /// `ESC [ <digit>`: waiting for `~`.
    CsiNum(u8),
    Ss3,
}

/// What a fed byte produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// Nothing to act on yet (output may still have been produced).
    Pending,
    /// A complete line (without the newline).
    Line(String),
    /// ^C: the line was abandoned.
    Interrupt,
}

pub struct LineEditor {
    buf: Vec<u8>,
    cursor: usize,
    history: Vec<String>,
    /// Position while walking the history (== history.len() when editing a new line).
    hist_pos: usize,
    /// The new line being edited before walking into the history.
    saved: Vec<u8>,
    esc: Esc,
    last_cr: bool,
}

impl Default for LineEditor {
    fn default() -> Self {
        Self::new()
    }
}

impl LineEditor {
    pub fn new() -> Self {
        LineEditor { buf: Vec::new(), cursor: 0, history: Vec::new(), hist_pos: 0, saved: Vec::new(), esc: Esc::None, last_cr: false }
    }

    pub fn line(&self) -> &str {
        core::str::from_utf8(&self.buf).unwrap_or("")
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Redraws the whole line (prompt included) and puts the cursor back.
    fn redraw(&self, out: &mut String) {
        out.push('\r');
        out.push_str(PROMPT);
        out.push_str(self.line());
        out.push_str("\x1b[K");
        let back = self.buf.len() - self.cursor;
        if back > 0 {
            out.push_str(&alloc::format!("\x1b[{}D", back));
        }
    }

    fn set_line(&mut self, bytes: Vec<u8>, out: &mut String) {
        self.buf = bytes;
        self.cursor = self.buf.len();
        self.redraw(out);
    }

    fn history_move(&mut self, up: bool, out: &mut String) {
        if up {
            if self.hist_pos == 0 {
                return;
            }
            if self.hist_pos == self.history.len() {
                self.saved = self.buf.clone();
            }
            self.hist_pos -= 1;
            let l = self.history[self.hist_pos].as_bytes().to_vec();
            self.set_line(l, out);
        } else {
            if self.hist_pos >= self.history.len() {
                return;
            }
            self.hist_pos += 1;
            let l = if self.hist_pos == self.history.len() {
                core::mem::take(&mut self.saved)
            } else {
                self.history[self.hist_pos].as_bytes().to_vec()
            };
            self.set_line(l, out);
        }
    }

    fn finish(&mut self) -> String {
        let line = String::from(self.line());
        self.buf.clear();
        self.cursor = 0;
        self.saved.clear();
        let t = line.trim();
        if !t.is_empty() && self.history.last().map(|s| s.as_str()) != Some(t) {
            if self.history.len() == MAX_HISTORY {
                self.history.remove(0);
            }
            self.history.push(String::from(t));
        }
        self.hist_pos = self.history.len();
        line
    }

    fn key(&mut self, k: u8, out: &mut String) -> Event {
        match k {
            b'A' => self.history_move(true, out),
            b'B' => self.history_move(false, out),
            b'C' => {
                if self.cursor < self.buf.len() {
                    self.cursor += 1;
                    out.push_str("\x1b[C");
                }
            }
            b'D' => {
                if self.cursor > 0 {
                    self.cursor -= 1;
                    out.push_str("\x1b[D");
                }
            }
            b'H' => {
                self.cursor = 0;
                self.redraw(out);
            }
            b'F' => {
                self.cursor = self.buf.len();
                self.redraw(out);
            }
            _ => {}
        }
        Event::Pending
    }

    /// Feeds one input byte; terminal output (echo, redraws) is appended to `out`.
    pub fn feed(&mut self, b: u8, out: &mut String) -> Event {
        let after_cr = core::mem::replace(&mut self.last_cr, false);
        match self.esc {
            Esc::Start => {
                self.esc = match b {
                    b'[' => Esc::Csi,
                    b'O' => Esc::Ss3,
                    _ => Esc::None,
                };
                return Event::Pending;
            }
            Esc::Csi => {
                self.esc = Esc::None;
                if b.is_ascii_digit() {
                    self.esc = Esc::CsiNum(b);
                    return Event::Pending;
                }
                return self.key(b, out);
            }
            Esc::CsiNum(n) => {
                self.esc = Esc::None;
                if b == b'~' {
                    match n {
                        b'1' | b'7' => return self.key(b'H', out),
                        b'4' | b'8' => return self.key(b'F', out),
                        b'3' => self.delete_at_cursor(out),
                        _ => {}
                    }
                } else if b.is_ascii_digit() || b == b';' {
                    // Longer sequences (e.g. `ESC [ 1 ; 5 C`): swallow until the final byte.
                    self.esc = Esc::CsiNum(b'0');
                }
                return Event::Pending;
            }
            Esc::Ss3 => {
                self.esc = Esc::None;
                return self.key(b, out);
            }
            Esc::None => {}
        }
        match b {
            0x1b => self.esc = Esc::Start,
            b'\r' => {
                self.last_cr = true;
                out.push_str("\r\n");
                return Event::Line(self.finish());
            }
            b'\n' => {
                if after_cr {
                    return Event::Pending;
                }
                out.push_str("\r\n");
                return Event::Line(self.finish());
            }
            0x03 => {
                out.push_str("^C\r\n");
                self.buf.clear();
                self.cursor = 0;
                self.hist_pos = self.history.len();
                return Event::Interrupt;
            }
            0x7f | 0x08 => {
                if self.cursor > 0 {
                    self.cursor -= 1;
                    self.buf.remove(self.cursor);
                    self.redraw(out);
                }
            }
            0x04 => self.delete_at_cursor(out),
            0x01 => return self.key(b'H', out),
            0x05 => return self.key(b'F', out),
            0x02 => return self.key(b'D', out),
            0x06 => return self.key(b'C', out),
            0x10 => return self.key(b'A', out),
            0x0e => return self.key(b'B', out),
            0x15 => {
                self.buf.clear();
                self.cursor = 0;
                self.redraw(out);
            }
            0x0c => {
                out.push_str("\x1b[H\x1b[2J");
                self.redraw(out);
            }
            0x20..=0x7e if self.buf.len() < MAX_LINE => {
                self.buf.insert(self.cursor, b);
                self.cursor += 1;
                if self.cursor == self.buf.len() {
                    out.push(b as char);
                } else {
                    self.redraw(out);
                }
            }
            _ => {}
        }
        Event::Pending
    }

    fn delete_at_cursor(&mut self, out: &mut String) {
        if self.cursor < self.buf.len() {
            self.buf.remove(self.cursor);
            self.redraw(out);
        }
    }
}

/// Writes terminal output raw (no LF → CRLF translation beyond what `out` already holds).
fn emit(out: &str) {
    if !out.is_empty() {
        crate::kprint!("{}", out);
    }
}

/// The shell loop: prompt, read a line, run it. Never returns.
pub fn shell_main() -> i32 {
    let mut ed = LineEditor::new();
    crate::kprintln!("cadence: shell on COM1; type 'help'");
    loop {
        super::reap_jobs();
        crate::kprint!("{}", PROMPT);
        loop {
            let b = crate::console::read_byte();
            let mut out = String::new();
            let ev = ed.feed(b, &mut out);
            emit(&out);
            match ev {
                Event::Pending => continue,
                Event::Interrupt => break,
                Event::Line(l) => {
                    super::execute(&l);
                    break;
                }
            }
        }
    }
}

/// Starts the shell task and restarts it whenever it exits (the caller, init, never returns).
pub fn run() -> ! {
    loop {
        let opts = crate::sched::task::SpawnOptions::new("sh").stack_size(128 * 1024);
        match crate::sched::spawn(opts, shell_main) {
            Ok(t) => {
                let code = crate::sched::task::wait(t.tid).unwrap_or(-1);
                crate::kprintln!("\ncadence: shell exited ({}), restarting", code);
            }
            Err(e) => {
                crate::kprintln!("cadence: cannot start the shell: {:?}", e);
                crate::sched::sleep_ns(1_000_000_000);
            }
        }
    }
}
