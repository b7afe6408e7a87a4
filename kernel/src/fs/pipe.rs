//! Pipes for processes (Linux `fs/pipe.c`): up to 64 KiB of buffer (Linux's 16 pages), taken
//! from the heap as data comes in and given back once the pipe is drained (Linux allocates a
//! pipe's pages on write and frees them on read: an idle pipe costs its small struct, so a
//! program holding thousands of pipes does not hold thousands of 64 KiB buffers; a write that
//! finds no memory is ENOMEM), writes of at most [`PIPE_BUF`] bytes atomic, EOF once every write end is closed, EPIPE (and SIGPIPE, by
//! the caller) once every read end is. Readers and writers sleep on the pipe's wait queue; a
//! signal ends the wait (ERESTARTSYS: EINTR or a restart, as the signal's handler says; or the
//! count moved so far). Every change also wakes
//! `sched::wait::POLL`, where `poll` and `select` sleep.

use crate::sched::wait::WaitQueue;
use crate::sync::SpinLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use cadence_abi::errno::Errno;

/// The buffer's size.
pub const PIPE_CAPACITY: usize = 65536;
/// Writes of at most this many bytes are atomic (POSIX `PIPE_BUF`).
pub const PIPE_BUF: usize = 4096;

/// Under a `SpinLock`: no interrupt handler reads or writes a pipe (an `IrqLock`'s `sti` at
/// each release ends QEMU's translation block, several times per pipe round trip).
struct State {
    buf: VecDeque<u8>,
    readers: u32,
    writers: u32,
}

/// A pipe's shared part.
pub struct Pipe {
    state: SpinLock<State>,
    waiters: WaitQueue,
}

/// Which end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The read end.
    Read,
    /// The write end.
    Write,
}

/// One end, counted while it lives (an open file holds it).
pub struct PipeEnd {
    pipe: Arc<Pipe>,
    side: Side,
}

/// A new pipe's (read end, write end), its buffer empty (taken as data comes in). `Result` for
/// its callers' sake: it no longer fails.
pub fn new() -> Result<(PipeEnd, PipeEnd), Errno> {
    let pipe = Arc::new(Pipe { state: SpinLock::new(State { buf: VecDeque::new(), readers: 1, writers: 1 }), waiters: WaitQueue::new() });
    Ok((PipeEnd { pipe: pipe.clone(), side: Side::Read }, PipeEnd { pipe, side: Side::Write }))
}

fn wake(p: &Pipe) {
    p.waiters.wake_all();
    crate::sched::wait::POLL.wake_all();
}

/// A write found no reader: the caller sends SIGPIPE and answers EPIPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken;

impl PipeEnd {
    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// An inode-like number for `fstat` (the pipe's address: the same for both ends).
    pub fn id(&self) -> u64 {
        Arc::as_ptr(&self.pipe) as u64 >> 4
    }

    /// Reads up to `buf.len()` bytes: what is there, else waits for a writer (0 at EOF).
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut s = self.pipe.state.lock();
                if !s.buf.is_empty() {
                    let n = buf.len().min(s.buf.len());
                    for (i, b) in s.buf.drain(..n).enumerate() {
                        buf[i] = b;
                    }
                    if s.buf.is_empty() && s.buf.capacity() > PIPE_BUF {
                        // Drained: give the buffer back, keeping a page's worth (Linux keeps
                        // one page, `tmp_page`) for the next small write.
                        s.buf.shrink_to(PIPE_BUF);
                    }
                    drop(s);
                    wake(&self.pipe);
                    return Ok(n);
                }
                if s.writers == 0 {
                    return Ok(0);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let p = &self.pipe;
            p.waiters
                .wait_until_interruptible(|| {
                    let s = p.state.lock();
                    !s.buf.is_empty() || s.writers == 0
                })
                .map_err(|_| Errno::ERESTARTSYS)?;
        }
    }

    /// Writes `data`: all of it, waiting for room (at most [`PIPE_BUF`] bytes go in at once,
    /// uninterleaved). `Err(Ok(Broken))` without readers; `Err(Err(EINTR/EAGAIN))` if nothing
    /// was written before a signal or a full non-blocking pipe; else the count written.
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Result<Broken, Errno>> {
        let mut done = 0;
        while done < data.len() {
            let need = if data.len() - done <= PIPE_BUF { data.len() - done } else { 1 };
            {
                let mut s = self.pipe.state.lock();
                if s.readers == 0 {
                    return if done > 0 { Ok(done) } else { Err(Ok(Broken)) };
                }
                let room = PIPE_CAPACITY - s.buf.len();
                if room >= need {
                    let n = room.min(data.len() - done);
                    // Room in the buffer, in powers of two up to the pipe's capacity.
                    let want = (s.buf.len() + n).next_power_of_two().clamp(PIPE_BUF, PIPE_CAPACITY);
                    let more = want.saturating_sub(s.buf.len());
                    if s.buf.capacity() < s.buf.len() + n && s.buf.try_reserve_exact(more).is_err() {
                        // Linux's pipe_write: ENOMEM when no page can be had.
                        return if done > 0 { Ok(done) } else { Err(Err(Errno::ENOMEM)) };
                    }
                    s.buf.extend(&data[done..done + n]);
                    done += n;
                    drop(s);
                    wake(&self.pipe);
                    continue;
                }
            }
            if nonblock {
                return if done > 0 { Ok(done) } else { Err(Err(Errno::EAGAIN)) };
            }
            let p = &self.pipe;
            let waited = p.waiters.wait_until_interruptible(|| {
                let s = p.state.lock();
                s.readers == 0 || PIPE_CAPACITY - s.buf.len() >= need
            });
            if waited.is_err() {
                return if done > 0 { Ok(done) } else { Err(Err(Errno::ERESTARTSYS)) };
            }
        }
        Ok(done)
    }

    /// `poll`'s view: (readable, writable, hung up, error).
    pub fn poll(&self) -> (bool, bool, bool, bool) {
        let s = self.pipe.state.lock();
        match self.side {
            Side::Read => (!s.buf.is_empty(), false, s.writers == 0, false),
            Side::Write => (false, s.readers > 0 && PIPE_CAPACITY - s.buf.len() >= PIPE_BUF, false, s.readers == 0),
        }
    }

    /// Bytes waiting (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.pipe.state.lock().buf.len()
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        {
            let mut s = self.pipe.state.lock();
            match self.side {
                Side::Read => s.readers -= 1,
                Side::Write => s.writers -= 1,
            }
        }
        wake(&self.pipe);
    }
}
