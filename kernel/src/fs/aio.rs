//! Linux's native asynchronous I/O contexts (`fs/aio.c`): what `io_setup` makes, `io_submit`
//! completes into, `io_getevents` reads and `io_destroy` ends. The system calls are
//! `syscall::aio`; this module keeps the state of each context and the requests that wait.
//!
//! **The ring.** A context is its completion ring, as on Linux: pages the kernel allocates and
//! the process maps shared (the context id is the mapping's address), starting with Linux's
//! `struct aio_ring` header (`id`, `nr`, `head`, `tail`, `magic` = 0xa10a10a1, the feature
//! words, `header_length` = 32) followed by `nr` 32-byte `io_event`s, event `i` at byte
//! `32 * (i + 1)`. A completion writes its event at `tail` and moves `tail`; `io_getevents`
//! copies from `head` and moves `head`, so libaio's user-space check (`head == tail` for a zero
//! timeout) and programs that reap events from the ring themselves (moving `head`) see what
//! Linux shows. The kernel writes the ring through its own references to the pages, never
//! through the process's mapping, so a completion needs no address space. The sizes are
//! Linux's (`ioctx_alloc`, `aio_setup_ring`): `nr_events` becomes `max(nr_events, 4 × CPUs)
//! × 2`, plus 2, rounded up to whole pages (`io_setup(1)` with two CPUs: one page, 127
//! events). A ring slot is taken at submission and given back once its event is read, as
//! Linux's `reqs_available` without the per-CPU batches: a context accepts `nr - 1`
//! requests in flight or unread, where Linux may refuse a few earlier (slots parked on
//! other CPUs).
//!
//! **Lookup.** As Linux's `lookup_ioctx`, the caller reads the ring's `id` at the address it
//! was given (a bad address is not a context: EINVAL) and [`Table::lookup`] checks that slot
//! holds a live context mapped there. Contexts belong to an address space ([`Table`], beside
//! the process's memory): a fork's child has none, and they end with the address space (exit,
//! `execve`) as Linux's `exit_aio`.
//!
//! **Requests.** Reads, writes and syncs complete at submission (Linux does the same for
//! buffered files). `IOCB_CMD_POLL` completes at once if the file is ready, else waits in
//! [`PENDING`]: a kernel thread (`kworker/aio`, Linux's workqueue) sleeps on
//! `sched::wait::POLL`, which every readiness change wakes, and completes each request whose
//! file became ready. A waiting request is also on its context's active list, from which
//! `io_cancel` and `io_destroy` take it (its event then has `res` 0, as Linux's cancelled
//! poll). Whoever removes a request from the active list completes it, once.
//!
//! Lock order: a context's `ring_lock` (a sleeping mutex, held while events are copied to the
//! caller), then its `comp` spin lock; `PENDING` and a context's `active` list are never held
//! together.

use super::file::{Kind, OpenFile};
use crate::mm::page::PageRef;
use crate::sched::wait::{Mutex, WaitQueue, POLL};
use crate::sync::SpinLock;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// `struct aio_ring`'s `magic`.
pub const AIO_RING_MAGIC: u32 = 0xa10a_10a1;
/// `AIO_RING_COMPAT_FEATURES`.
const COMPAT_FEATURES: u32 = 1;
/// `sizeof(struct aio_ring)`: the header before the events.
const HEADER: usize = 32;
/// `sizeof(struct io_event)`.
pub const EVENT: usize = 32;
/// Bytes in a page.
const PAGE: usize = 4096;
/// Events per page (Linux's `AIO_EVENTS_PER_PAGE`); the first page holds one fewer, after the
/// header (`AIO_EVENTS_OFFSET`).
const PER_PAGE: usize = PAGE / EVENT;
/// Offsets of the header's fields.
const OFF_ID: usize = 0;
const OFF_HEAD: usize = 8;
const OFF_TAIL: usize = 12;

/// `POLLERR` and `POLLHUP`, which a poll request always waits for.
const POLLIN: u16 = 0x1;
const POLLPRI: u16 = 0x2;
const POLLOUT: u16 = 0x4;
const POLLERR: u16 = 0x8;
const POLLHUP: u16 = 0x10;
const POLLRDNORM: u16 = 0x40;
const POLLRDBAND: u16 = 0x80;
const POLLWRNORM: u16 = 0x100;
const POLLWRBAND: u16 = 0x200;

/// One completion (`struct io_event`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoEvent {
    /// The iocb's `aio_data`.
    pub data: u64,
    /// The iocb's user address.
    pub obj: u64,
    /// The result: bytes moved, a poll mask, or `-errno`.
    pub res: i64,
    /// Always 0.
    pub res2: i64,
}

impl IoEvent {
    fn bytes(&self) -> [u8; EVENT] {
        let mut b = [0u8; EVENT];
        b[..8].copy_from_slice(&self.data.to_le_bytes());
        b[8..16].copy_from_slice(&self.obj.to_le_bytes());
        b[16..24].copy_from_slice(&self.res.to_le_bytes());
        b[24..].copy_from_slice(&self.res2.to_le_bytes());
        b
    }
}

/// A context's sizes, from `io_setup`'s `nr_events` ([`geometry`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// What the caller asked for: its charge against `fs.aio-max-nr`.
    pub max_reqs: u32,
    /// Events the ring holds.
    pub nr_events: u32,
    /// Pages of the ring.
    pub pages: usize,
}

/// Linux's `ioctx_alloc` and `aio_setup_ring` sizes for `nr_events` on `cpus` CPUs: EINVAL past
/// 2^28 bytes of events, EAGAIN for a request past `aio_max_nr` (or whose doubling wraps to 0).
pub fn geometry(nr_events: u32, cpus: u32, aio_max_nr: u64) -> Result<Geometry, Errno> {
    let doubled = nr_events.max(cpus.saturating_mul(4)).wrapping_mul(2);
    if doubled as usize > 0x1000_0000 / EVENT {
        return Err(Errno::EINVAL);
    }
    if doubled == 0 || u64::from(nr_events) > aio_max_nr {
        return Err(Errno::EAGAIN);
    }
    let bytes = HEADER + EVENT * (doubled as usize + 2);
    let pages = bytes.div_ceil(PAGE);
    Ok(Geometry { max_reqs: nr_events, nr_events: ((PAGE * pages - HEADER) / EVENT) as u32, pages })
}

/// Gives `n` events back to `fs.aio-nr`.
fn uncharge(n: u32) {
    let _ = crate::sysctl::AIO_NR.fetch_update(Ordering::AcqRel, Ordering::Acquire, |nr| Some(nr.saturating_sub(u64::from(n))));
}

/// The completion side of a ring (Linux's `completion_lock` and what it guards).
struct Comp {
    /// The trusted tail (the ring's copy may be written by the process).
    tail: u32,
    /// Events completed since the last refill of `reqs_available` (Linux's `completed_events`).
    completed_events: u32,
    /// Ring slots free for new requests.
    reqs_available: u32,
}

/// One context (Linux's `struct kioctx`).
pub struct Kioctx {
    /// The ring's address in the process: the context id.
    pub user_id: u64,
    /// The mapping's length.
    pub mmap_size: u64,
    /// Charged to `fs.aio-nr`.
    max_reqs: u32,
    /// Events the ring holds.
    pub nr_events: u32,
    /// The ring's pages, page 0 first.
    pages: Vec<PageRef>,
    /// `io_destroy` or the address space's end took it out of its table.
    dead: AtomicBool,
    /// Calls using it now (Linux's `users` reference).
    users: AtomicUsize,
    /// Woken when `users` drops to 0.
    idle: WaitQueue,
    comp: SpinLock<Comp>,
    /// Serializes readers of the ring (Linux's `ring_lock`).
    ring_lock: Mutex<()>,
    /// `io_getevents` sleeps here: woken by each completion and by the context's end.
    wait: WaitQueue,
    /// Requests that wait and may be cancelled (Linux's `active_reqs`).
    active: Mutex<Vec<Arc<PollReq>>>,
}

impl Kioctx {
    /// A context over a new ring of `g`'s size mapped at `user_id`; ENOMEM without pages.
    pub fn new(g: Geometry, user_id: u64) -> Result<Arc<Kioctx>, Errno> {
        let mut pages = Vec::with_capacity(g.pages);
        for _ in 0..g.pages {
            pages.push(PageRef::alloc().ok_or(Errno::ENOMEM)?);
        }
        let header: [u32; 8] = [!0, g.nr_events, 0, 0, AIO_RING_MAGIC, COMPAT_FEATURES, 0, HEADER as u32];
        let mut bytes = [0u8; HEADER];
        for (i, w) in header.iter().enumerate() {
            bytes[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        pages[0].write_at(0, &bytes);
        Ok(Arc::new(Kioctx {
            user_id,
            mmap_size: (g.pages * PAGE) as u64,
            max_reqs: g.max_reqs,
            nr_events: g.nr_events,
            pages,
            dead: AtomicBool::new(false),
            users: AtomicUsize::new(0),
            idle: WaitQueue::new(),
            comp: SpinLock::new(Comp { tail: 0, completed_events: 0, reqs_available: g.nr_events - 1 }),
            ring_lock: Mutex::new(()),
            wait: WaitQueue::new(),
            active: Mutex::new(Vec::new()),
        }))
    }

    /// Charges the context's events to `fs.aio-nr` (EAGAIN past `fs.aio-max-nr`); its end
    /// gives them back.
    pub fn charge(&self) -> Result<(), Errno> {
        let max = crate::sysctl::AIO_MAX_NR.load(Ordering::Relaxed);
        crate::sysctl::AIO_NR
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |nr| nr.checked_add(u64::from(self.max_reqs)).filter(|&t| t <= max))
            .map(|_| ())
            .map_err(|_| Errno::EAGAIN)
    }

    /// The ring's pages, to map into the process.
    pub fn pages(&self) -> &[PageRef] {
        &self.pages
    }

    fn header_word(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        self.pages[0].read_at(off, &mut b);
        u32::from_le_bytes(b)
    }

    fn set_header_word(&self, off: usize, v: u32) {
        self.pages[0].write_at(off, &v.to_le_bytes());
    }

    /// Has it ended?
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Linux's `refill_reqs_available`: slots of events the process has read since go back.
    fn refill(&self, c: &mut Comp, head: u32) {
        let head = head % self.nr_events;
        let in_ring = if head <= c.tail { c.tail - head } else { self.nr_events - (head - c.tail) };
        let done = c.completed_events.saturating_sub(in_ring);
        if done == 0 {
            return;
        }
        c.completed_events -= done;
        c.reqs_available += done;
    }

    /// Takes a ring slot for a new request; false if the ring is full (the caller's EAGAIN).
    pub fn get_slot(&self) -> bool {
        let mut c = self.comp.lock();
        if c.reqs_available == 0 && c.completed_events > 0 {
            let head = self.header_word(OFF_HEAD);
            self.refill(&mut c, head);
        }
        if c.reqs_available == 0 {
            return false;
        }
        c.reqs_available -= 1;
        true
    }

    /// Gives back a slot whose request was refused.
    pub fn put_slot(&self) {
        self.comp.lock().reqs_available += 1;
    }

    /// Adds `ev` to the ring and wakes the readers (Linux's `aio_complete`).
    pub fn complete(&self, ev: IoEvent) {
        {
            let mut c = self.comp.lock();
            let pos = c.tail as usize + 1;
            self.pages[pos / PER_PAGE].write_at((pos % PER_PAGE) * EVENT, &ev.bytes());
            c.tail = (c.tail + 1) % self.nr_events;
            self.set_header_word(OFF_TAIL, c.tail);
            c.completed_events += 1;
            if c.completed_events > 1 {
                let head = self.header_word(OFF_HEAD);
                self.refill(&mut c, head);
            }
        }
        self.wait.wake_all();
    }

    /// Is there an event to read, or has the context ended? (What a reader waits for.)
    pub fn readable(&self) -> bool {
        let _c = self.comp.lock();
        self.header_word(OFF_HEAD) != self.header_word(OFF_TAIL) || self.is_dead()
    }

    /// Copies up to `max` events from the ring, oldest first, through `copy(index, bytes)`
    /// (the events `index..` of the caller's array, 32 bytes each), then moves the ring's
    /// head past them (Linux's `aio_read_events_ring`). A failed copy is returned and moves
    /// nothing: the events stay for a later call.
    pub fn read_events(&self, max: usize, mut copy: impl FnMut(usize, &[u8]) -> Result<(), Errno>) -> Result<usize, Errno> {
        let _reader = self.ring_lock.lock_uninterruptible();
        let (head, tail) = {
            let _c = self.comp.lock();
            (self.header_word(OFF_HEAD), self.header_word(OFF_TAIL))
        };
        if head == tail {
            return Ok(0);
        }
        let nr = self.nr_events as usize;
        let (mut head, tail) = (head as usize % nr, tail as usize % nr);
        let mut got = 0;
        let mut buf = Vec::new();
        while got < max && head != tail {
            let pos = head + 1;
            let (page, slot) = (pos / PER_PAGE, pos % PER_PAGE);
            let avail = (if head <= tail { tail } else { nr } - head).min(max - got).min(PER_PAGE - slot);
            buf.resize(avail * EVENT, 0);
            self.pages[page].read_at(slot * EVENT, &mut buf);
            copy(got, &buf)?;
            got += avail;
            head = (head + avail) % nr;
        }
        let _c = self.comp.lock();
        self.set_header_word(OFF_HEAD, head as u32);
        Ok(got)
    }

    /// Waits until [`readable`](Self::readable) or `deadline` (uptime ns; `None`: forever),
    /// interruptibly: `Ok(false)` at the deadline, `Err` for a signal.
    pub fn wait_readable(&self, deadline: Option<u64>) -> Result<bool, crate::sched::Interrupted> {
        match deadline {
            Some(d) => self.wait.wait_until_interruptible_deadline(|| self.readable(), d),
            None => self.wait.wait_until_interruptible(|| self.readable()).map(|()| true),
        }
    }

    /// Ends a context taken out of its table: its readers wake (EINVAL for those with no
    /// event), its charge goes back.
    fn kill(&self) -> bool {
        if self.dead.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.wait.wake_all();
        uncharge(self.max_reqs);
        true
    }

    /// After [`Table::kill`]: waits for the calls still using the context (an `io_submit`
    /// whose read waits for a pipe), then cancels its waiting requests (Linux's
    /// `free_ioctx_users`; `io_destroy` returns after it).
    pub fn drain(&self) {
        self.idle.wait_until_uninterruptible(|| self.users.load(Ordering::Acquire) == 0);
        self.cancel_all();
    }

    fn cancel_all(&self) {
        loop {
            let Some(req) = self.active.lock_uninterruptible().pop() else { break };
            req.finish(0);
        }
    }
}

/// A use of a live context by a system call (Linux's `users` reference): the context's end
/// waits for it to drop ([`Kioctx::drain`]).
pub struct CtxRef(Arc<Kioctx>);

impl CtxRef {
    /// The context itself.
    pub fn arc(&self) -> &Arc<Kioctx> {
        &self.0
    }
}

impl core::ops::Deref for CtxRef {
    type Target = Kioctx;
    fn deref(&self) -> &Kioctx {
        &self.0
    }
}

impl Drop for CtxRef {
    fn drop(&mut self) {
        if self.0.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.wake_all();
        }
    }
}

/// An address space's contexts, by id (Linux's `mm->ioctx_table`): dropped with the address
/// space, which ends them all.
pub struct Table {
    slots: Mutex<Vec<Option<Arc<Kioctx>>>>,
}

impl Default for Table {
    fn default() -> Table {
        Table::new()
    }
}

impl Table {
    /// An empty table.
    pub fn new() -> Table {
        Table { slots: Mutex::new(Vec::new()) }
    }

    /// Puts `ctx` in the lowest free slot and writes that id into its ring.
    pub fn add(&self, ctx: Arc<Kioctx>) {
        let mut slots = self.slots.lock_uninterruptible();
        let id = match slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                slots.push(None);
                slots.len() - 1
            }
        };
        ctx.set_header_word(OFF_ID, id as u32);
        slots[id] = Some(ctx);
    }

    /// The live context in slot `id` if it is mapped at `user_id` (the id its ring holds at
    /// the address the caller gave).
    pub fn lookup(&self, id: u32, user_id: u64) -> Option<CtxRef> {
        let slots = self.slots.lock_uninterruptible();
        let ctx = slots.get(id as usize)?.as_ref().filter(|c| c.user_id == user_id && !c.is_dead())?;
        ctx.users.fetch_add(1, Ordering::AcqRel);
        Some(CtxRef(ctx.clone()))
    }

    /// Takes `ctx` out of the table and ends it (Linux's `kill_ioctx`); false if it had ended
    /// already (another `io_destroy` won).
    pub fn kill(&self, ctx: &Arc<Kioctx>) -> bool {
        let mut slots = self.slots.lock_uninterruptible();
        if !ctx.kill() {
            return false;
        }
        for s in slots.iter_mut() {
            if s.as_ref().is_some_and(|c| Arc::ptr_eq(c, ctx)) {
                *s = None;
            }
        }
        true
    }
}

impl Drop for Table {
    /// The address space ended (exit, `execve`): every context ends, its waiting requests
    /// cancelled (Linux's `exit_aio`; no thread of it is left to use them).
    fn drop(&mut self) {
        let slots = core::mem::take(&mut *self.slots.lock_uninterruptible());
        for ctx in slots.into_iter().flatten() {
            ctx.kill();
            ctx.cancel_all();
        }
    }
}

// ---- the files requests work on ----

/// Has the file a `read_iter` (Linux's test in `aio_read`; EINVAL without)? Directories,
/// timerfds, message queues and `/dev/cpu_dma_latency` have only `read` or nothing.
pub fn has_read_iter(f: &OpenFile) -> bool {
    use super::vfs::Device;
    match &f.kind {
        Kind::Inode(i) => !i.is_dir(),
        Kind::TimerFd(_) | Kind::Mqueue(_) | Kind::Device(Device::CpuDmaLatency, _) => false,
        _ => true,
    }
}

/// Has the file a `write_iter` (EINVAL without)?
pub fn has_write_iter(f: &OpenFile) -> bool {
    has_read_iter(f)
}

/// May a request on the file carry RWF_NOWAIT? Linux 6.1's FMODE_NOWAIT: a block device
/// has it; tmpfs and ramfs files, pipes and sockets do not (pipes got it in 6.6).
pub fn nowait_ok(f: &OpenFile) -> bool {
    use super::vfs::Device;
    matches!(&f.kind, Kind::Device(Device::Vda, _))
}

/// The file's readiness as its `poll` method reports it (a file that has none is readable
/// and writable: Linux's `DEFAULT_POLLMASK`).
fn poll_mask(f: &OpenFile) -> u16 {
    let (r, w, hup, err) = super::file::poll(f);
    let mut m = 0;
    if r {
        m |= POLLIN | POLLRDNORM;
    }
    if w {
        m |= POLLOUT | POLLWRNORM;
    }
    if hup {
        m |= POLLHUP;
    }
    if err {
        m |= POLLERR;
    }
    m
}

/// Can a poll request on the file wait? Linux's `aio_poll` needs a `poll` method that waits
/// on exactly one queue: pipes, sockets, timerfds, message queues, pidfds and a generated pipe
/// (`trace_pipe`) do; a terminal waits on two (EINVAL unless ready at once), and a file without
/// `poll` is always `DEFAULT_POLLMASK`. A signalfd is ready for whoever polls it (its caller's
/// signals), which the worker that waits here is not: EINVAL unless ready at once (Linux waits
/// on the submitter's signal queue).
fn can_wait(f: &OpenFile) -> bool {
    match &f.kind {
        Kind::Pipe(_) | Kind::Socket(_) | Kind::TimerFd(_) | Kind::Mqueue(_) | Kind::PidFd(_) => true,
        Kind::SignalFd(_) => false,
        Kind::Gen(_, g, _) => g.is_pipe(),
        Kind::Inode(_) | Kind::Device(..) => false,
    }
}

/// What a waiting poll request's event says once its file is ready: the mask the waker
/// passed (Linux's `aio_poll_wake` completes with the wakeup's key, not the file's whole
/// state): a pipe's data `POLLIN | POLLRDNORM`, its room `POLLOUT | POLLWRNORM`, a socket's
/// data `POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND` and room `POLLOUT | POLLWRNORM |
/// POLLWRBAND`, a timerfd's expiry `POLLIN`; a wakeup without a key (a pipe's last writer or
/// reader closing, a message queue) completes with the file's state and the request's events.
fn woken_mask(f: &OpenFile, events: u16, now: u16) -> u16 {
    let keyed = |input: u16, output: u16| {
        if now & (POLLHUP | POLLERR) != 0 {
            now & events
        } else if now & POLLIN != 0 && events & (POLLIN | POLLRDNORM) != 0 {
            input
        } else if now & POLLOUT != 0 && events & (POLLOUT | POLLWRNORM) != 0 {
            output
        } else {
            now & events
        }
    };
    match &f.kind {
        Kind::Pipe(_) => keyed(POLLIN | POLLRDNORM, POLLOUT | POLLWRNORM),
        Kind::Socket(_) => keyed(POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND, POLLOUT | POLLWRNORM | POLLWRBAND),
        Kind::TimerFd(_) => POLLIN,
        _ => now & events,
    }
}

// ---- poll requests ----

/// An `IOCB_CMD_POLL` request waiting for its file.
pub struct PollReq {
    ctx: Arc<Kioctx>,
    file: Arc<OpenFile>,
    /// What it waits for, POLLERR and POLLHUP included.
    events: u16,
    data: u64,
    obj: u64,
}

impl PollReq {
    /// The event's mask if the file is ready for it now.
    fn ready(&self) -> Option<u16> {
        let now = poll_mask(&self.file);
        (now & self.events != 0).then(|| woken_mask(&self.file, self.events, now))
    }

    /// Completes the request with `res` once it is off its context's active list (whoever
    /// took it off calls this).
    fn finish(self: &Arc<Self>, res: u16) {
        PENDING.lock_uninterruptible().retain(|r| !Arc::ptr_eq(r, self));
        // The worker lets go of its copy of the list, and with it the file.
        kick_worker();
        self.ctx.complete(IoEvent { data: self.data, obj: self.obj, res: i64::from(res), res2: 0 });
    }

    /// Takes the request off its context's active list: true for the one caller that does.
    fn claim(self: &Arc<Self>) -> bool {
        let mut active = self.ctx.active.lock_uninterruptible();
        match active.iter().position(|r| Arc::ptr_eq(r, self)) {
            Some(i) => {
                active.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

/// Every waiting poll request, for the worker.
static PENDING: Mutex<Vec<Arc<PollReq>>> = Mutex::new(Vec::new());
/// Bumped whenever [`PENDING`] changes, so the worker looks at it again.
static GEN: AtomicU64 = AtomicU64::new(0);
/// The worker is started.
static WORKER: AtomicBool = AtomicBool::new(false);
/// The worker's task, to wake when [`PENDING`] changes (it sleeps on `POLL`, whose other
/// sleepers need not hear of it).
static WORKER_TASK: spin::Once<Arc<crate::sched::task::Task>> = spin::Once::new();

/// Tells the worker that [`PENDING`] changed.
fn kick_worker() {
    GEN.fetch_add(1, Ordering::AcqRel);
    if let Some(t) = WORKER_TASK.get() {
        crate::sched::wake_up(t);
    }
}

/// `IOCB_CMD_POLL` on `file` for `events` (Linux's `aio_poll`): completes at once with the
/// ready events, else waits (EINVAL if the file cannot: [`can_wait`]). The caller holds a ring
/// slot for it.
pub fn poll(ctx: &Arc<Kioctx>, file: Arc<OpenFile>, events: u16, data: u64, obj: u64) -> Result<(), Errno> {
    let events = events | POLLERR | POLLHUP;
    let now = poll_mask(&file) & events;
    if now != 0 {
        ctx.complete(IoEvent { data, obj, res: i64::from(now), res2: 0 });
        return Ok(());
    }
    if !can_wait(&file) {
        return Err(Errno::EINVAL);
    }
    let req = Arc::new(PollReq { ctx: ctx.clone(), file, events, data, obj });
    ctx.active.lock_uninterruptible().push(req.clone());
    PENDING.lock_uninterruptible().push(req);
    start_worker();
    kick_worker();
    Ok(())
}

/// `io_cancel` of the request at user address `obj`: true if it was waiting (its event,
/// `res` 0, is in the ring now: the caller's EINPROGRESS), false if no such request waits.
pub fn cancel(ctx: &Kioctx, obj: u64) -> bool {
    let req = {
        let mut active = ctx.active.lock_uninterruptible();
        match active.iter().position(|r| r.obj == obj) {
            Some(i) => active.swap_remove(i),
            None => return false,
        }
    };
    req.finish(0);
    true
}

fn start_worker() {
    if WORKER.swap(true, Ordering::AcqRel) {
        return;
    }
    let opts = crate::sched::task::SpawnOptions::new("kworker/aio")
        .kthread()
        .policy(cadence_sched::Policy::Normal, 0, 0)
        .affinity(crate::sched::possible_mask());
    match crate::sched::spawn(opts, || {
        worker();
        0
    }) {
        Ok(t) => {
            WORKER_TASK.call_once(|| t);
        }
        Err(_) => WORKER.store(false, Ordering::Release),
    }
}

/// The worker: completes each waiting request whose file became ready. It sleeps on `POLL`
/// (every readiness change wakes it) until a request is ready or the list changed.
fn worker() {
    loop {
        let gen = GEN.load(Ordering::Acquire);
        let reqs: Vec<Arc<PollReq>> = PENDING.lock_uninterruptible().clone();
        let mut done = false;
        for r in &reqs {
            if let Some(res) = r.ready() {
                if r.claim() {
                    r.finish(res);
                }
                done = true;
            }
        }
        if !done {
            POLL.wait_until(|| GEN.load(Ordering::Acquire) != gen || reqs.iter().any(|r| r.ready().is_some()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test_case]
    fn ring_sizes_are_linuxs() {
        // io_setup(1) and io_setup(100) on two CPUs, as the peer shows them.
        assert_eq!(geometry(1, 2, 65536), Ok(Geometry { max_reqs: 1, nr_events: 127, pages: 1 }));
        assert_eq!(geometry(100, 2, 65536).map(|g| (g.nr_events, g.pages)), Ok((255, 2)));
        assert_eq!(geometry(65536, 2, 65536).map(|g| g.nr_events), Ok(131199));
        assert_eq!(geometry(65537, 2, 65536), Err(Errno::EAGAIN));
        assert_eq!(geometry(0x8000_0000, 2, 65536), Err(Errno::EAGAIN));
        assert_eq!(geometry(4_194_305, 2, 65536), Err(Errno::EINVAL));
        assert_eq!(geometry(4_194_304, 2, 65536), Err(Errno::EAGAIN));
        assert_eq!(geometry(u32::MAX, 2, 65536), Err(Errno::EINVAL));
    }
}
