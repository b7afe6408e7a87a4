//! A POSIX message queue's state (Linux `ipc/mqueue.c`), without locks or sleeping: the kernel
//! holds the queue's lock around every call and sleeps on what a waiter `W` stands for.
//!
//! **Order.** Messages leave highest priority first, FIFO within a priority (Linux's rbtree of
//! per-priority lists). Blocked receivers and senders wait in their task's priority order, the
//! most important first (Linux's `wq_add`, by `task->prio`: lower is more important), FIFO
//! among equals.
//!
//! **Hand-off.** A send that finds a receiver waiting gives the message straight to the best
//! one (`pipelined_send`): the queue stays empty and no other receiver can take it first. A
//! receive from a full queue with senders waiting moves the best sender's message into the
//! room it made (`pipelined_receive`). Either way the waiter is off the list when the caller
//! wakes it, so a waiter that times out or is interrupted at the same moment still finds its
//! operation done (the kernel checks that first).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// Priorities are below this (`MQ_PRIO_MAX`).
pub const MQ_PRIO_MAX: u32 = 32768;
/// `fs.mqueue.msg_max` and `msg_default`'s defaults (`DFLT_MSGMAX`, `DFLT_MSG`).
pub const DFLT_MSGMAX: i64 = 10;
/// `fs.mqueue.msgsize_max` and `msgsize_default`'s defaults (`DFLT_MSGSIZEMAX`).
pub const DFLT_MSGSIZEMAX: i64 = 8192;
/// The most messages a privileged (CAP_SYS_RESOURCE) creator may ask for (`HARD_MSGMAX`).
pub const HARD_MSGMAX: i64 = 65536;
/// The largest message size a privileged creator may ask for (`HARD_MSGSIZEMAX`).
pub const HARD_MSGSIZEMAX: i64 = 16 * 1024 * 1024;
/// `fs.mqueue.queues_max`'s default: queues an unprivileged user may create.
pub const DFLT_QUEUESMAX: usize = 256;
/// `sizeof(struct msg_msg)` on x86_64: what each message slot is charged besides its bytes.
const MSG_MSG_SIZE: u64 = 48;
/// `sizeof(struct posix_msg_tree_node)` on x86_64.
const TREE_NODE_SIZE: u64 = 48;

/// A queue's fixed attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// `mq_maxmsg`.
    pub maxmsg: i64,
    /// `mq_msgsize`.
    pub msgsize: i64,
}

/// The attributes of a new queue (`mqueue_get_inode`): the defaults without `asked`; EINVAL
/// for a count or size not positive, or above the sysctl limits (the hard limits for a
/// `privileged` creator, Linux's CAP_SYS_RESOURCE).
pub fn new_attr(asked: Option<Attr>, privileged: bool) -> Result<Attr, Errno> {
    let a = asked.unwrap_or(Attr { maxmsg: DFLT_MSGMAX, msgsize: DFLT_MSGSIZEMAX });
    if a.maxmsg <= 0 || a.msgsize <= 0 {
        return Err(Errno::EINVAL);
    }
    let (max, size) = if privileged { (HARD_MSGMAX, HARD_MSGSIZEMAX) } else { (DFLT_MSGMAX, DFLT_MSGSIZEMAX) };
    if a.maxmsg > max || a.msgsize > size {
        return Err(Errno::EINVAL);
    }
    Ok(a)
}

/// What a queue charges its creator's RLIMIT_MSGQUEUE (Linux's `mq_bytes`: each message slot's
/// `msg_msg` and size, and a tree node per priority that could be in use).
pub fn charge(a: Attr) -> u64 {
    let (n, size) = (a.maxmsg as u64, a.msgsize as u64);
    n * MSG_MSG_SIZE + n.min(u64::from(MQ_PRIO_MAX)) * TREE_NODE_SIZE + n * size
}

/// Waiters in priority order: the first is the most important (lowest `prio`), the oldest of
/// its priority.
struct Waiters<T> {
    list: VecDeque<(i32, T)>,
}

impl<T> Waiters<T> {
    const fn new() -> Self {
        Waiters { list: VecDeque::new() }
    }

    fn add(&mut self, prio: i32, t: T) {
        let at = self.list.iter().position(|(p, _)| *p > prio).unwrap_or(self.list.len());
        self.list.insert(at, (prio, t));
    }

    fn first(&mut self) -> Option<T> {
        self.list.pop_front().map(|(_, t)| t)
    }

    fn remove(&mut self, mut is: impl FnMut(&T) -> bool) -> Option<T> {
        let i = self.list.iter().position(|(_, t)| is(t))?;
        self.list.remove(i).map(|(_, t)| t)
    }
}

/// A message and its priority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    /// The bytes.
    pub data: Vec<u8>,
    /// Its priority.
    pub prio: u32,
}

/// What a send did.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent<W> {
    /// Queued; `notify`: the queue went from empty to one message, and a registered
    /// notification fires (Linux's `__do_notify`).
    Queued {
        /// The notification fires.
        notify: bool,
    },
    /// Handed to this waiting receiver (taken off its list): wake it.
    Handed(W, Msg),
    /// The queue is full: the message comes back (wait, or EAGAIN).
    Full(Msg),
}

/// What a receive did.
#[derive(Debug, PartialEq, Eq)]
pub enum Received<W> {
    /// This message; a waiting sender whose message took its place (off its list): wake it.
    Got(Msg, Option<W>),
    /// Nothing queued (wait, or EAGAIN).
    Empty,
}

/// One queue.
pub struct Queue<W> {
    attr: Attr,
    msgs: BTreeMap<u32, VecDeque<Vec<u8>>>,
    count: usize,
    bytes: usize,
    receivers: Waiters<W>,
    senders: Waiters<(W, Msg)>,
}

impl<W> Queue<W> {
    /// An empty queue with these attributes.
    pub const fn new(attr: Attr) -> Self {
        Queue { attr, msgs: BTreeMap::new(), count: 0, bytes: 0, receivers: Waiters::new(), senders: Waiters::new() }
    }

    /// Its attributes.
    pub fn attr(&self) -> Attr {
        self.attr
    }

    /// Messages queued (`mq_curmsgs`).
    pub fn curmsgs(&self) -> usize {
        self.count
    }

    /// Bytes queued.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Priorities with a message queued (each is one tree node on Linux).
    pub fn priorities(&self) -> usize {
        self.msgs.len()
    }

    fn insert(&mut self, m: Msg) {
        self.count += 1;
        self.bytes += m.data.len();
        self.msgs.entry(m.prio).or_default().push_back(m.data);
    }

    /// Sends `m` (its size already checked against `mq_msgsize`): to the best waiting
    /// receiver, else into the queue, else [`Sent::Full`].
    pub fn send(&mut self, m: Msg) -> Sent<W> {
        if self.count as i64 >= self.attr.maxmsg {
            return Sent::Full(m);
        }
        if let Some(r) = self.receivers.first() {
            return Sent::Handed(r, m);
        }
        self.insert(m);
        Sent::Queued { notify: self.count == 1 }
    }

    /// Receives the best message, refilling from the best waiting sender.
    pub fn receive(&mut self) -> Received<W> {
        let Some(mut top) = self.msgs.last_entry() else { return Received::Empty };
        let prio = *top.key();
        let data = top.get_mut().pop_front().expect("no empty priority list is kept");
        if top.get().is_empty() {
            top.remove();
        }
        self.count -= 1;
        self.bytes -= data.len();
        let woken = self.senders.first().map(|(w, m)| {
            self.insert(m);
            w
        });
        Received::Got(Msg { data, prio }, woken)
    }

    /// Queues a receiver of task priority `prio` (after [`Queue::receive`] found nothing).
    pub fn wait_receive(&mut self, w: W, prio: i32) {
        self.receivers.add(prio, w);
    }

    /// Queues a sender with its message (after [`Queue::send`] found the queue full).
    pub fn wait_send(&mut self, w: W, prio: i32, m: Msg) {
        self.senders.add(prio, (w, m));
    }

    /// Takes the waiting receiver `is` matches off its list (a timeout or a signal): false if
    /// it is not there, i.e. a sender handed it a message already.
    pub fn cancel_receive(&mut self, is: impl FnMut(&W) -> bool) -> bool {
        self.receivers.remove(is).is_some()
    }

    /// Takes the waiting sender `is` matches off its list: false if a receiver already moved
    /// its message into the queue.
    pub fn cancel_send(&mut self, mut is: impl FnMut(&W) -> bool) -> bool {
        self.senders.remove(|(w, _)| is(w)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn msg(b: u8, prio: u32) -> Msg {
        Msg { data: vec![b], prio }
    }

    #[test]
    fn attributes_as_linux() {
        assert_eq!(new_attr(None, false), Ok(Attr { maxmsg: 10, msgsize: 8192 }));
        assert_eq!(new_attr(Some(Attr { maxmsg: 0, msgsize: 1 }), true), Err(Errno::EINVAL));
        assert_eq!(new_attr(Some(Attr { maxmsg: 1, msgsize: -1 }), true), Err(Errno::EINVAL));
        assert_eq!(new_attr(Some(Attr { maxmsg: 11, msgsize: 1 }), false), Err(Errno::EINVAL));
        assert_eq!(new_attr(Some(Attr { maxmsg: 11, msgsize: 1 }), true), Ok(Attr { maxmsg: 11, msgsize: 1 }));
        assert_eq!(new_attr(Some(Attr { maxmsg: 65537, msgsize: 1 }), true), Err(Errno::EINVAL));
        assert_eq!(new_attr(Some(Attr { maxmsg: 1, msgsize: 16 << 20 }), true), Ok(Attr { maxmsg: 1, msgsize: 16 << 20 }));
        // Ten default queues fit RLIMIT_MSGQUEUE's 819200 bytes only nine times.
        assert_eq!(charge(Attr { maxmsg: 10, msgsize: 8192 }), 82_880);
    }

    #[test]
    fn highest_priority_first_fifo_within() {
        let mut q: Queue<u32> = Queue::new(Attr { maxmsg: 10, msgsize: 8 });
        assert_eq!(q.send(msg(1, 0)), Sent::Queued { notify: true });
        assert_eq!(q.send(msg(2, 5)), Sent::Queued { notify: false });
        assert_eq!(q.send(msg(3, 5)), Sent::Queued { notify: false });
        assert_eq!(q.send(msg(4, 1)), Sent::Queued { notify: false });
        let order: Vec<u8> = core::iter::from_fn(|| match q.receive() {
            Received::Got(m, None) => Some(m.data[0]),
            _ => None,
        })
        .collect();
        assert_eq!(order, vec![2, 3, 4, 1]);
        assert_eq!(q.curmsgs(), 0);
    }

    #[test]
    fn a_send_hands_the_message_to_the_most_important_receiver() {
        let mut q: Queue<&str> = Queue::new(Attr { maxmsg: 2, msgsize: 8 });
        q.wait_receive("nice0-first", 120);
        q.wait_receive("fifo50", 49);
        q.wait_receive("nice0-second", 120);
        q.wait_receive("fifo90", 9);
        assert_eq!(q.send(msg(1, 0)), Sent::Handed("fifo90", msg(1, 0)));
        assert_eq!(q.send(msg(2, 0)), Sent::Handed("fifo50", msg(2, 0)));
        assert!(q.cancel_receive(|w| *w == "nice0-second"));
        assert!(!q.cancel_receive(|w| *w == "fifo90"), "already served");
        assert_eq!(q.send(msg(3, 0)), Sent::Handed("nice0-first", msg(3, 0)));
        assert_eq!(q.curmsgs(), 0);
    }

    #[test]
    fn a_receive_from_a_full_queue_takes_in_the_best_sender() {
        let mut q: Queue<&str> = Queue::new(Attr { maxmsg: 1, msgsize: 8 });
        assert_eq!(q.send(msg(1, 3)), Sent::Queued { notify: true });
        assert_eq!(q.send(msg(2, 0)), Sent::Full(msg(2, 0)));
        q.wait_send("low", 130, msg(2, 0));
        q.wait_send("high", 10, msg(3, 0));
        assert_eq!(q.receive(), Received::Got(msg(1, 3), Some("high")));
        assert_eq!(q.receive(), Received::Got(msg(3, 0), Some("low")));
        assert_eq!(q.receive(), Received::Got(msg(2, 0), None));
        assert_eq!(q.receive(), Received::Empty);
        assert!(!q.cancel_send(|w| *w == "low"));
    }

    proptest! {
        /// Whatever the sends, receives return the messages sorted by priority (descending),
        /// in send order within one, and the counts stay within the attributes.
        #[test]
        fn receive_order_is_priority_then_fifo(prios in proptest::collection::vec(0u32..4, 0..30)) {
            let mut q: Queue<()> = Queue::new(Attr { maxmsg: 64, msgsize: 8 });
            for (i, &p) in prios.iter().enumerate() {
                let sent = matches!(q.send(Msg { data: vec![i as u8], prio: p }), Sent::Queued { .. });
                prop_assert!(sent);
            }
            let mut want: Vec<(u32, usize)> = prios.iter().enumerate().map(|(i, &p)| (p, i)).collect();
            want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (p, i) in want {
                prop_assert_eq!(q.receive(), Received::Got(Msg { data: vec![i as u8], prio: p }, None));
            }
            prop_assert_eq!(q.receive(), Received::Empty);
            prop_assert_eq!(q.bytes(), 0);
        }
    }
}
