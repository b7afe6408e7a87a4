//! signalfd (Linux `fs/signalfd.c`): the signals of a mask, read from a file descriptor as
//! `struct signalfd_siginfo` records instead of being delivered.
//!
//! A signalfd holds only its mask. What it reads is always the *reader's*: `read` takes the
//! pending signals of the mask from the calling thread's queue, then its process's, with the
//! dequeue normal delivery uses (the process layer's, registered at boot with
//! [`set_dequeue`]: the files layer cannot reach the signal queues, which are the process
//! layer's), so a periodic POSIX timer behind a signal is re-armed as when a handler takes it.
//! `poll` is readable when a signal of the mask is pending for the poller. A signalfd shared
//! with a child (`fork`) reads the child's signals there, as on Linux.
//!
//! Sending a signal wakes the readers (one queue for every signalfd,
//! `sched::signal::SIGNALFD_READERS`) and `poll` (`sched::signal::signalfd_notify`); each
//! rechecks its own pending set. A reader sleeps interruptibly: a signal it does not block
//! ends the wait with ERESTARTSYS (EINTR after a handler without SA_RESTART), as Linux's
//! `signalfd_dequeue`. The signals of the mask are usually blocked, so that only the signalfd
//! takes them.

use crate::sched::signal::{current_pending, SIGNALFDS, SIGNALFD_READERS};
use crate::sched::wait::POLL;
use alloc::sync::Arc;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{SigInfo, SIGNALFD_SIGINFO_SIZE, UNBLOCKABLE};
use core::sync::atomic::{AtomicU64, Ordering};

/// Takes the first pending signal of a set from the calling thread (its own, then its
/// process's), with its info.
pub type Dequeue = fn(u64) -> Option<SigInfo>;

static DEQUEUE: spin::Once<Dequeue> = spin::Once::new();

/// Registers the process layer's dequeue (once, at boot).
pub fn set_dequeue(f: Dequeue) {
    DEQUEUE.call_once(|| f);
}

/// One signalfd (what the open file holds).
pub struct SignalFd {
    /// The signals it reads (never SIGKILL or SIGSTOP).
    mask: AtomicU64,
    id: u64,
}

/// Numbers for `fstat`'s inode field.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new signalfd of `mask` (SIGKILL and SIGSTOP dropped, as Linux's `do_signalfd4`).
pub fn create(mask: u64) -> Arc<SignalFd> {
    SIGNALFDS.fetch_add(1, Ordering::AcqRel);
    Arc::new(SignalFd { mask: AtomicU64::new(mask & !UNBLOCKABLE), id: NEXT_ID.fetch_add(1, Ordering::Relaxed) })
}

impl SignalFd {
    /// The signals it reads.
    pub fn mask(&self) -> u64 {
        self.mask.load(Ordering::Acquire)
    }

    /// `signalfd(fd, mask)` on an existing one: the mask is replaced, and readers and pollers
    /// look again.
    pub fn set_mask(&self, mask: u64) {
        self.mask.store(mask & !UNBLOCKABLE, Ordering::Release);
        SIGNALFD_READERS.wake_all();
        POLL.wake_all();
    }

    /// `read`: as many pending signals of the mask as whole records fit in `buf` (EINVAL under
    /// one), waiting for the first unless `nonblock` (EAGAIN); the later ones only if they are
    /// pending already.
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        let room = buf.len() / SIGNALFD_SIGINFO_SIZE;
        if room == 0 {
            return Err(Errno::EINVAL);
        }
        let dequeue = *DEQUEUE.get().ok_or(Errno::EINVAL)?;
        let mut n = 0;
        while n < room {
            match dequeue(self.mask()) {
                Some(info) => {
                    buf[n * SIGNALFD_SIGINFO_SIZE..(n + 1) * SIGNALFD_SIGINFO_SIZE].copy_from_slice(&info.encode_signalfd());
                    n += 1;
                }
                None if n > 0 => break,
                None if nonblock => return Err(Errno::EAGAIN),
                None => SIGNALFD_READERS.wait_until_interruptible(|| self.readable()).map_err(|_| Errno::ERESTARTSYS)?,
            }
        }
        Ok(n * SIGNALFD_SIGINFO_SIZE)
    }

    /// Is a signal of the mask pending for the calling thread (`poll`'s readable)?
    pub fn readable(&self) -> bool {
        current_pending(self.mask()) != 0
    }

    /// An inode-like number for `fstat`.
    pub fn id(&self) -> u64 {
        (1 << 60) | self.id
    }
}

impl Drop for SignalFd {
    fn drop(&mut self) {
        SIGNALFDS.fetch_sub(1, Ordering::AcqRel);
    }
}
