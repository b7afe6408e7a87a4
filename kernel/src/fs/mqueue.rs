//! POSIX message queues (Linux `ipc/mqueue.c`): named queues opened as fds by `mq_open`.
//!
//! The queue's state (messages by priority, waiters by task priority, hand-off) is
//! `cadence_ipc::mqueue`'s, behind one sleeping mutex per queue. A blocked sender or receiver
//! sleeps on a [`Waiter`] of its own: the peer that serves it (a receiver taking its message
//! in, a sender handing it one) takes it off the queue's list under the mutex, marks it done
//! and wakes it, so a waiter that times out or is interrupted at that moment still returns the
//! operation's result (it checks `done` first, as Linux's `wq_sleep` checks `STATE_READY`).
//!
//! **Names** live in one table (Linux's mqueue filesystem root, without `/dev/mqueue`): the
//! name `mq_open` gets is glibc's without the leading '/', and Linux's `lookup_one_len` rules
//! apply (empty ENOENT, '/' or `.`/`..` EACCES, over 255 bytes ENAMETOOLONG). A queue lives
//! while its name or an fd holds it; its bytes are charged to its creator's RLIMIT_MSGQUEUE
//! (per user, as Linux's `mq_bytes`) until then.
//!
//! **Notification** (`mq_notify`): one registered process per queue; a message into an empty
//! queue with no receiver waiting fires it once (SIGEV_SIGNAL: the signal with SI_MESGQ info,
//! sent by the caller of [`MessageQueue::send`]; SIGEV_NONE: nothing) and unregisters it.
//! Closing an fd of the queue drops the closing process's registration (`mqueue_flush_file`).
//!
//! Every change wakes `sched::wait::POLL` (readable with a message, writable with room).
//! Lock order: [`NAMES`] → a queue's mutex → [`BYTES`].

use crate::sched::wait::{Mutex, WaitQueue, POLL};
use crate::sync::IrqLock;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_ipc::mqueue::{self as mq, Attr, Msg, Queue, Received, Sent};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub use cadence_ipc::mqueue::MQ_PRIO_MAX;

/// `SIGEV_SIGNAL`.
pub const SIGEV_SIGNAL: i32 = 0;
/// `SIGEV_NONE`.
pub const SIGEV_NONE: i32 = 1;
/// `SIGEV_THREAD`.
pub const SIGEV_THREAD: i32 = 2;
/// A name's longest component (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// A sleeping sender or receiver.
pub struct Waiter {
    /// Set by the peer that served it (under the queue's mutex).
    done: AtomicBool,
    /// A receiver's message, put there by the sender that handed it over.
    msg: IrqLock<Option<Msg>>,
    queue: WaitQueue,
}

impl Waiter {
    fn new() -> Arc<Waiter> {
        Arc::new(Waiter { done: AtomicBool::new(false), msg: IrqLock::new(None), queue: WaitQueue::new() })
    }
}

/// A registered notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// SIGEV_NONE: registered, nothing is sent.
    None,
    /// SIGEV_SIGNAL: this signal (0: none, as Linux accepts) with this value.
    Signal {
        /// The signal.
        signo: u32,
        /// `sigev_value`.
        value: u64,
    },
}

/// A notification to send: to process `tgid`, signal `signo` with `value` (SI_MESGQ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fire {
    /// The registered process.
    pub tgid: u32,
    /// The signal.
    pub signo: u32,
    /// `si_value`.
    pub value: u64,
}

struct Inner {
    q: Queue<Arc<Waiter>>,
    /// The registered process and what it asked for.
    notify: Option<(u32, Notify)>,
}

/// One queue (what its name and open fds hold).
pub struct MessageQueue {
    inner: Mutex<Inner>,
    /// The user its bytes are charged to, and how many.
    uid: u32,
    charged: u64,
    /// An inode-like number for `fstat`.
    ino: u64,
    /// The name it was made with (`/proc/PID/fd` shows it).
    name: String,
}

/// The named queues.
static NAMES: Mutex<BTreeMap<String, Arc<MessageQueue>>> = Mutex::new(BTreeMap::new());
/// Bytes charged per user (Linux's `user_struct.mq_bytes`).
static BYTES: Mutex<BTreeMap<u32, u64>> = Mutex::new(BTreeMap::new());
/// Live queues (`mq_queues_count`), bounded by `fs.mqueue.queues_max` for the unprivileged.
static QUEUES: AtomicUsize = AtomicUsize::new(0);
static NEXT_INO: AtomicUsize = AtomicUsize::new(1);

impl Drop for MessageQueue {
    fn drop(&mut self) {
        let mut b = BYTES.lock_uninterruptible();
        if let Some(v) = b.get_mut(&self.uid) {
            *v = v.saturating_sub(self.charged);
            if *v == 0 {
                b.remove(&self.uid);
            }
        }
        QUEUES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Checks a name as Linux's `lookup_one_len` in the mqueue root does.
fn check_name(name: &str) -> Result<(), Errno> {
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    if name == "." || name == ".." || name.contains('/') {
        return Err(Errno::EACCES);
    }
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

/// Who opens: their user, whether they are privileged (CAP_SYS_RESOURCE: euid 0), and their
/// RLIMIT_MSGQUEUE.
#[derive(Clone, Copy, Debug)]
pub struct Opener {
    /// The user charged.
    pub uid: u32,
    /// May exceed the sysctl limits up to the hard ones.
    pub privileged: bool,
    /// RLIMIT_MSGQUEUE's soft limit.
    pub rlimit: u64,
}

/// `mq_open`'s lookup and creation (Linux's `do_mq_open` / `prepare_open`): the queue `name`
/// names, made with `attr` (or the defaults) under O_CREAT. ENOENT without O_CREAT, EEXIST with
/// O_CREAT|O_EXCL, EINVAL for an existing queue opened with O_ACCMODE 3 or bad attributes,
/// EMFILE past RLIMIT_MSGQUEUE, ENOSPC past `queues_max` (unprivileged).
pub fn open(name: &str, oflag: u32, attr: Option<Attr>, who: Opener) -> Result<Arc<MessageQueue>, Errno> {
    use super::file::{O_ACCMODE, O_CREAT, O_EXCL};
    check_name(name)?;
    let mut names = NAMES.lock_uninterruptible();
    if let Some(q) = names.get(name) {
        if oflag & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
            return Err(Errno::EEXIST);
        }
        if oflag & O_ACCMODE == O_ACCMODE {
            return Err(Errno::EINVAL);
        }
        return Ok(q.clone());
    }
    if oflag & O_CREAT == 0 {
        return Err(Errno::ENOENT);
    }
    if name.contains(super::vfs::UNREPRESENTABLE) {
        return Err(Errno::EINVAL);
    }
    if !who.privileged && QUEUES.load(Ordering::Relaxed) >= mq::DFLT_QUEUESMAX {
        return Err(Errno::ENOSPC);
    }
    let attr = mq::new_attr(attr, who.privileged)?;
    let charged = mq::charge(attr);
    {
        let mut b = BYTES.lock_uninterruptible();
        let used = b.get(&who.uid).copied().unwrap_or(0);
        match used.checked_add(charged) {
            Some(total) if total <= who.rlimit => {
                b.insert(who.uid, total);
            }
            _ => return Err(Errno::EMFILE),
        }
    }
    QUEUES.fetch_add(1, Ordering::Relaxed);
    let q = Arc::new(MessageQueue {
        inner: Mutex::new(Inner { q: Queue::new(attr), notify: None }),
        uid: who.uid,
        charged,
        ino: NEXT_INO.fetch_add(1, Ordering::Relaxed) as u64,
        name: String::from(name),
    });
    names.insert(String::from(name), q.clone());
    Ok(q)
}

/// `mq_unlink`: the name goes; open fds keep the queue.
pub fn unlink(name: &str) -> Result<(), Errno> {
    check_name(name)?;
    let q = NAMES.lock_uninterruptible().remove(name).ok_or(Errno::ENOENT)?;
    // Dropped outside the table's lock (the last reference gives the bytes back).
    drop(q);
    Ok(())
}

/// How a sleep for the queue ended.
fn sleep(w: &Waiter, deadline_ns: Option<u64>) -> Result<(), Errno> {
    let r = match deadline_ns {
        None => w.queue.wait_until_interruptible(|| w.done.load(Ordering::Acquire)).map(|_| true),
        Some(d) => w.queue.wait_until_interruptible_deadline(|| w.done.load(Ordering::Acquire), d),
    };
    match r {
        Ok(true) => Ok(()),
        Ok(false) => Err(Errno::ETIMEDOUT),
        Err(_) => Err(Errno::ERESTARTSYS),
    }
}

fn wake(w: &Waiter) {
    w.done.store(true, Ordering::Release);
    w.queue.wake_all();
}

/// Is process `tgid` still there?
fn alive(tgid: u32) -> bool {
    crate::sched::find(tgid).is_some_and(|t| !t.process.group.exited.load(Ordering::Acquire))
}

/// The calling task's priority as Linux's `task->prio` (waiters are served in that order).
fn my_prio() -> i32 {
    let me = crate::sched::current();
    crate::sched::class::of(&me).prio(&me)
}

impl MessageQueue {
    /// Its attributes.
    pub fn attr(&self) -> Attr {
        self.inner.lock_uninterruptible().q.attr()
    }

    /// (attributes, messages queued).
    pub fn getattr(&self) -> (Attr, usize) {
        let i = self.inner.lock_uninterruptible();
        (i.q.attr(), i.q.curmsgs())
    }

    /// An inode-like number for `fstat`.
    pub fn id(&self) -> u64 {
        self.ino
    }

    /// Its path in the mqueue filesystem, as `d_path` shows it.
    pub fn path(&self) -> String {
        alloc::format!("/{}", self.name)
    }

    /// Sends `data` at `prio` (size and priority checked by the caller): hands it to the best
    /// waiting receiver, queues it, or waits for room until `deadline_ns` (monotonic; ETIMEDOUT)
    /// or a signal (ERESTARTSYS); EAGAIN when full and `nonblock`. A notification to send, if
    /// this message fired one.
    pub fn send(&self, data: Vec<u8>, prio: u32, nonblock: bool, deadline_ns: Option<u64>) -> Result<Option<Fire>, Errno> {
        let w;
        {
            let mut i = self.inner.lock_uninterruptible();
            match i.q.send(Msg { data, prio }) {
                Sent::Handed(r, m) => {
                    drop(i);
                    *r.msg.lock() = Some(m);
                    wake(&r);
                    return Ok(None);
                }
                Sent::Queued { notify } => {
                    let fire = if notify { i.notify.take() } else { None };
                    drop(i);
                    POLL.wake_all();
                    return Ok(fire.and_then(|(tgid, n)| match n {
                        Notify::Signal { signo, value } if signo != 0 => Some(Fire { tgid, signo, value }),
                        _ => None,
                    }));
                }
                Sent::Full(m) => {
                    if nonblock {
                        return Err(Errno::EAGAIN);
                    }
                    w = Waiter::new();
                    i.q.wait_send(w.clone(), my_prio(), m);
                }
            }
        }
        if let Err(e) = sleep(&w, deadline_ns) {
            let mut i = self.inner.lock_uninterruptible();
            if i.q.cancel_send(|x| Arc::ptr_eq(x, &w)) {
                return Err(e);
            }
        }
        // A receiver took the message in (it woke `POLL`).
        Ok(None)
    }

    /// Receives the best message: at once, or waiting until `deadline_ns` (ETIMEDOUT) or a
    /// signal (ERESTARTSYS); EAGAIN when empty and `nonblock`. The buffer's size is checked
    /// by the caller.
    pub fn receive(&self, nonblock: bool, deadline_ns: Option<u64>) -> Result<Msg, Errno> {
        let w;
        {
            let mut i = self.inner.lock_uninterruptible();
            match i.q.receive() {
                Received::Got(m, sender) => {
                    drop(i);
                    if let Some(s) = sender {
                        wake(&s);
                    }
                    POLL.wake_all();
                    return Ok(m);
                }
                Received::Empty => {
                    if nonblock {
                        return Err(Errno::EAGAIN);
                    }
                    w = Waiter::new();
                    i.q.wait_receive(w.clone(), my_prio());
                }
            }
        }
        let r = sleep(&w, deadline_ns);
        if let Err(e) = r {
            let mut i = self.inner.lock_uninterruptible();
            if i.q.cancel_receive(|x| Arc::ptr_eq(x, &w)) {
                return Err(e);
            }
        }
        // Served: the sender left the message before marking it done.
        let m = w.msg.lock().take();
        m.ok_or(Errno::EINTR)
    }

    /// `mq_notify` by process `tgid`: `None` unregisters its own registration (another's is
    /// left alone, 0), `Some` registers (EBUSY if any process is registered).
    pub fn notify(&self, tgid: u32, req: Option<Notify>) -> Result<(), Errno> {
        let mut i = self.inner.lock_uninterruptible();
        match req {
            None => {
                if i.notify.is_some_and(|(t, _)| t == tgid) {
                    i.notify = None;
                }
                Ok(())
            }
            // An owner that exited without closing its fd (Linux flushes every fd at exit).
            Some(_) if i.notify.is_some_and(|(t, _)| alive(t)) => Err(Errno::EBUSY),
            Some(n) => {
                i.notify = Some((tgid, n));
                Ok(())
            }
        }
    }

    /// An fd of the queue is closed by process `tgid`: its registration goes.
    pub fn flush(&self, tgid: u32) {
        let mut i = self.inner.lock_uninterruptible();
        if i.notify.is_some_and(|(t, _)| t == tgid) {
            i.notify = None;
        }
    }

    /// What a `read` of the queue shows (Linux's `mqueue_read_file`).
    pub fn text(&self) -> String {
        let i = self.inner.lock_uninterruptible();
        let (notify, signo, pid) = match i.notify {
            Some((tgid, Notify::Signal { signo, .. })) => (SIGEV_SIGNAL, signo, tgid),
            Some((tgid, Notify::None)) => (SIGEV_NONE, 0, tgid),
            None => (0, 0, 0),
        };
        alloc::format!("QSIZE:{:<10} NOTIFY:{:<5} SIGNO:{:<5} NOTIFY_PID:{:<6}\n", i.q.bytes(), notify, signo, pid)
    }

    /// `poll`'s (readable, writable): a message queued, room for one.
    pub fn poll(&self) -> (bool, bool) {
        let i = self.inner.lock_uninterruptible();
        (i.q.curmsgs() > 0, (i.q.curmsgs() as i64) < i.q.attr().maxmsg)
    }
}
