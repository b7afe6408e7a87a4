//! An in-kernel pipe: a bounded byte stream with blocking `read` and `write` (POSIX pipe
//! semantics: a read returns what is available, at least one byte, blocking while empty; a
//! write blocks while full and completes fully; read returns 0 at end of stream once the write
//! side is closed and drained; writing to a pipe without readers fails with EPIPE).
//! This is what the ping-pong benchmark uses.

use super::wait::WaitQueue;
use crate::sync::SpinLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;

/// Linux's default pipe capacity is 16 pages; one page is plenty for ping-pong.
pub const PIPE_CAPACITY: usize = 4096;

/// Errors (Linux errno names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeError {
    /// No reader left (EPIPE).
    BrokenPipe,
}

struct State {
    buf: VecDeque<u8>,
    readers: usize,
    writers: usize,
}

pub struct Pipe {
    /// No interrupt handler touches a pipe: a [`SpinLock`], interrupts stay on.
    state: SpinLock<State>,
    readable: WaitQueue,
    writable: WaitQueue,
}

/// Read end.
pub struct PipeReader(Arc<Pipe>);
/// Write end.
pub struct PipeWriter(Arc<Pipe>);

/// Creates a pipe: (read end, write end).
pub fn pipe() -> (PipeReader, PipeWriter) {
    let p = Arc::new(Pipe {
        state: SpinLock::new(State { buf: VecDeque::with_capacity(PIPE_CAPACITY), readers: 1, writers: 1 }),
        readable: WaitQueue::new(),
        writable: WaitQueue::new(),
    });
    (PipeReader(p.clone()), PipeWriter(p))
}

impl PipeReader {
    /// Reads at least one byte (blocking), at most `buf.len()`; 0 = end of stream.
    pub fn read(&self, buf: &mut [u8]) -> usize {
        if buf.is_empty() {
            return 0;
        }
        let p = &self.0;
        let mut n = 0;
        p.readable.wait_until(|| {
            let mut s = p.state.lock();
            if s.buf.is_empty() {
                return s.writers == 0;
            }
            // One copy per contiguous part of the ring (a byte at a time was the pipe's
            // largest cost under `bench hackbench`).
            n = s.buf.len().min(buf.len());
            let (front, back) = s.buf.as_slices();
            let from_front = front.len().min(n);
            buf[..from_front].copy_from_slice(&front[..from_front]);
            buf[from_front..n].copy_from_slice(&back[..n - from_front]);
            s.buf.drain(..n);
            true
        });
        if n > 0 {
            p.writable.wake_one();
        }
        n
    }
}

impl PipeWriter {
    /// Writes all of `data`, blocking while the pipe is full.
    pub fn write(&self, data: &[u8]) -> Result<usize, PipeError> {
        let p = &self.0;
        let mut done = 0;
        let mut broken = false;
        while done < data.len() && !broken {
            p.writable.wait_until(|| {
                let mut s = p.state.lock();
                if s.readers == 0 {
                    broken = true;
                    return true;
                }
                let room = PIPE_CAPACITY - s.buf.len();
                if room == 0 {
                    return false;
                }
                let take = room.min(data.len() - done);
                s.buf.extend(&data[done..done + take]);
                done += take;
                true
            });
            p.readable.wake_one();
        }
        if broken && done == 0 {
            Err(PipeError::BrokenPipe)
        } else {
            Ok(done)
        }
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        self.0.state.lock().readers -= 1;
        self.0.writable.wake_all();
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.0.state.lock().writers -= 1;
        self.0.readable.wake_all();
    }
}
