//! Native asynchronous I/O (Linux `fs/aio.c`): `io_setup`, `io_destroy`, `io_submit`,
//! `io_cancel`, `io_getevents`, `io_pgetevents`, with Linux 6.1's checks in its order
//! (`tests/user/conform-aio.c`). The contexts, their rings and the requests that wait are
//! `fs::aio`'s; here are the arguments, the process's mapping of each ring, and the reads,
//! writes and syncs themselves, which complete at submission (as Linux's do for buffered
//! files): the event is in the ring when `io_submit` returns. A file-descriptor-less design:
//! the context id is the ring's address in the process.

use super::fs::{access_ok, fd_file, pwrite_from, read_into, reads_whole, write_from_with, CHUNK, IOV_MAX, MAX_RW};
use super::{ok, Outcome};
use crate::fs::aio::{self, CtxRef, IoEvent, Kioctx, EVENT};
use crate::fs::file::{self, Kind, OpenFile, O_APPEND};
use crate::mm::vm::Prot;
use crate::process::mm::{Backing, Vma, PAGE};
use crate::process::Thread;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// `IOCB_CMD_*`.
const CMD_PREAD: u16 = 0;
const CMD_PWRITE: u16 = 1;
const CMD_FSYNC: u16 = 2;
const CMD_FDSYNC: u16 = 3;
const CMD_POLL: u16 = 5;
const CMD_PREADV: u16 = 7;
const CMD_PWRITEV: u16 = 8;
/// `aio_flags`: signal the eventfd `aio_resfd` at completion.
const IOCB_FLAG_RESFD: u32 = 1;
/// `aio_flags`: `aio_reqprio` is an I/O priority.
const IOCB_FLAG_IOPRIO: u32 = 2;
/// `RWF_*` (Linux's `RWF_SUPPORTED`).
const RWF_NOWAIT: u32 = 0x8;
const RWF_APPEND: u32 = 0x10;
const RWF_SUPPORTED: u32 = 0x1f;
/// `struct iocb`'s size and the offset of `aio_key`, which the kernel writes.
const IOCB: usize = 64;
const AIO_KEY: u64 = 8;
/// Linux's `KTIME_SEC_MAX`: a timeout of this many seconds or more is none.
const KTIME_SEC_MAX: i64 = i64::MAX / 1_000_000_000;

/// A `struct iocb` as read from the caller.
struct Iocb {
    data: u64,
    rw_flags: u32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

impl Iocb {
    fn parse(b: &[u8; IOCB]) -> Iocb {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8"));
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        Iocb {
            data: u64_at(0),
            rw_flags: u32_at(12),
            opcode: u16::from_le_bytes([b[16], b[17]]),
            reqprio: i16::from_le_bytes([b[18], b[19]]),
            fildes: u32_at(20),
            buf: u64_at(24),
            nbytes: u64_at(32),
            offset: u64_at(40) as i64,
            reserved2: u64_at(48),
            flags: u32_at(56),
            resfd: u32_at(60),
        }
    }
}

/// The number of CPUs Linux would call possible (the ring's size depends on it).
fn possible_cpus() -> u32 {
    crate::percpu::nr_cpus().max(1)
}

/// Linux's `lookup_ioctx`: the `id` in the ring at `ctx_id`, if readable, names a live context
/// of the caller's address space mapped there.
fn lookup(proc: &Thread, ctx_id: u64) -> Option<CtxRef> {
    let mut id = [0u8; 4];
    proc.read_user(ctx_id, &mut id).ok()?;
    proc.mm_ref().aio().lookup(u32::from_le_bytes(id), ctx_id)
}

/// A new context whose ring is mapped into the caller at a free address (Linux's
/// `aio_setup_ring`: the ring file mapped shared, read-write); ENOMEM without pages, without
/// room, or past RLIMIT_AS.
fn new_ring(proc: &Thread, g: aio::Geometry) -> Result<Arc<Kioctx>, Errno> {
    let mm_arc = proc.mm();
    let mut mm = mm_arc.lock_uninterruptible();
    let len = g.pages as u64 * PAGE;
    let start = mm.free_range(len)?;
    if !super::mm::may_expand_vm(proc, &mm, start, len) {
        return Err(Errno::ENOMEM);
    }
    let ctx = Kioctx::new(g, start)?;
    mm.insert(Vma::new(start, start + len, Prot::RW, Backing::Anonymous, true));
    for (i, page) in ctx.pages().iter().enumerate() {
        if mm.space.map(start + i as u64 * PAGE, page.clone(), Prot::RW).is_err() {
            mm.unmap_range(start, start + len);
            return Err(Errno::ENOMEM);
        }
    }
    Ok(ctx)
}

/// Unmaps whatever is mapped where `ctx`'s ring was (Linux's `vm_munmap` in `kill_ioctx`).
fn unmap_ring(proc: &Thread, ctx: &Kioctx) {
    proc.mm().lock_uninterruptible().unmap_range(ctx.user_id, ctx.user_id + ctx.mmap_size);
}

/// Ends a context the caller found ([`lookup`]): EINVAL if another call ended it first.
fn destroy(proc: &Thread, c: CtxRef) -> Result<(), Errno> {
    let ctx = c.arc().clone();
    if !proc.mm_ref().aio().kill(&ctx) {
        return Err(Errno::EINVAL);
    }
    unmap_ring(proc, &ctx);
    drop(c);
    ctx.drain();
    Ok(())
}

/// `io_setup(nr_events, ctxp)`: `*ctxp` must be 0 (EINVAL, as `nr_events` 0); sizes and
/// limits as [`aio::geometry`]; the new ring's address is stored in `*ctxp`.
pub fn io_setup(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (nr, ctxp) = (a[0] as u32, a[1]);
    let mut old = [0u8; 8];
    proc.read_user(ctxp, &mut old)?;
    if u64::from_le_bytes(old) != 0 || nr == 0 {
        return Err(Errno::EINVAL);
    }
    let g = aio::geometry(nr, possible_cpus(), crate::sysctl::AIO_MAX_NR.load(Ordering::Relaxed))?;
    let ctx = new_ring(proc, g)?;
    if let Err(e) = ctx.charge() {
        unmap_ring(proc, &ctx);
        return Err(e);
    }
    let table = proc.mm_ref().aio().clone();
    table.add(ctx.clone());
    if proc.write_user(ctxp, &ctx.user_id.to_le_bytes()).is_err() {
        if table.kill(&ctx) {
            unmap_ring(proc, &ctx);
            ctx.drain();
        }
        return Err(Errno::EFAULT);
    }
    ok(0)
}

/// `io_destroy(ctx)`: ends the context, cancelling what waits, once the calls using it are
/// done; EINVAL for anything that is not a live context of the caller.
pub fn io_destroy(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let c = lookup(proc, a[0]).ok_or(Errno::EINVAL)?;
    destroy(proc, c)?;
    ok(0)
}

/// `io_submit(ctx, nr, iocbpp)`: submits up to `nr` (at most the ring's size) iocbs in order,
/// stopping at the first refused: how many were submitted, or that one's error if none was.
pub fn io_submit(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let nr = a[1] as i64;
    if nr < 0 {
        return Err(Errno::EINVAL);
    }
    let c = lookup(proc, a[0]).ok_or(Errno::EINVAL)?;
    let nr = nr.min(i64::from(c.nr_events)) as u64;
    let mut done = 0u64;
    let mut err = None;
    while done < nr {
        let mut p = [0u8; 8];
        let r = proc.read_user(a[2].wrapping_add(done * 8), &mut p).and_then(|()| submit_one(proc, &c, u64::from_le_bytes(p)));
        if let Err(e) = r {
            err = Some(e);
            break;
        }
        done += 1;
    }
    match (done, err) {
        (0, Some(e)) => Err(e),
        _ => ok(done),
    }
}

/// One iocb (Linux's `io_submit_one`): EFAULT, EINVAL for `aio_reserved2` or a negative
/// `aio_nbytes`, EAGAIN with the ring full, then the request's own checks.
fn submit_one(proc: &Thread, c: &CtxRef, user_iocb: u64) -> Result<(), Errno> {
    let mut raw = [0u8; IOCB];
    proc.read_user(user_iocb, &mut raw)?;
    let cb = Iocb::parse(&raw);
    if cb.reserved2 != 0 || (cb.nbytes as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    if !c.get_slot() {
        return Err(Errno::EAGAIN);
    }
    let r = start(proc, c, user_iocb, &cb);
    if r.is_err() {
        c.put_slot();
    }
    r
}

/// Linux's `__io_submit_one`: the file (EBADF), the eventfd, `aio_key`, then the opcode.
fn start(proc: &Thread, c: &CtxRef, user_iocb: u64, cb: &Iocb) -> Result<(), Errno> {
    let f = fd_file(proc, u64::from(cb.fildes))?;
    if cb.flags & IOCB_FLAG_RESFD != 0 {
        // `eventfd_ctx_fdget`: EBADF for no file; Cadence has no eventfd, so any file is
        // EINVAL, as Linux answers for one that is not an eventfd.
        fd_file(proc, u64::from(cb.resfd))?;
        return Err(Errno::EINVAL);
    }
    proc.write_user(user_iocb.wrapping_add(AIO_KEY), &0u32.to_le_bytes())?;
    let event = |res: i64| IoEvent { data: cb.data, obj: user_iocb, res, res2: 0 };
    let res = match cb.opcode {
        CMD_PREAD | CMD_PREADV => read(proc, &f, cb, cb.opcode == CMD_PREADV)?,
        CMD_PWRITE | CMD_PWRITEV => write(proc, &f, cb, cb.opcode == CMD_PWRITEV)?,
        CMD_FSYNC | CMD_FDSYNC => {
            if cb.buf != 0 || cb.offset != 0 || cb.nbytes != 0 || cb.rw_flags != 0 || !file::has_fsync(&f) {
                return Err(Errno::EINVAL);
            }
            result(file::fsync(&f).map(|()| 0))
        }
        CMD_POLL => {
            if cb.buf > 0xffff || cb.offset != 0 || cb.nbytes != 0 || cb.rw_flags != 0 {
                return Err(Errno::EINVAL);
            }
            return aio::poll(c.arc(), f, cb.buf as u16, cb.data, user_iocb);
        }
        _ => return Err(Errno::EINVAL),
    };
    c.complete(event(res));
    Ok(())
}

/// An operation's result as an event's `res`: the count, or `-errno` (a wait a signal
/// interrupted is EINTR: the request cannot be restarted, Linux's `aio_rw_done`).
fn result(r: Result<u64, Errno>) -> i64 {
    match r {
        Ok(n) => n as i64,
        Err(e) if e.is_restart() => -i64::from(Errno::EINTR.code()),
        Err(e) => -i64::from(e.code()),
    }
}

/// What `aio_prep_rw` accepts: the I/O priority (Linux's `ioprio_check_cap`, 6.1 with its
/// level and hint fields: class none with a level, or an unknown class, is EINVAL; real-time
/// needs root, EPERM) and `aio_rw_flags` (EOPNOTSUPP for an unknown flag, or RWF_NOWAIT on a
/// file without FMODE_NOWAIT). Returns (nowait, append).
fn prep_rw(proc: &Thread, f: &OpenFile, cb: &Iocb) -> Result<(bool, bool), Errno> {
    if cb.flags & IOCB_FLAG_IOPRIO != 0 {
        let prio = i32::from(cb.reqprio);
        let (class, level) = ((prio >> 13) & 7, prio & 7);
        match class {
            1 if proc.process.creds.lock_uninterruptible().uid[1] != 0 => return Err(Errno::EPERM),
            1..=3 => {}
            0 if level == 0 => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    if cb.rw_flags & !RWF_SUPPORTED != 0 || (cb.rw_flags & RWF_NOWAIT != 0 && !aio::nowait_ok(f)) {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok((cb.rw_flags & RWF_NOWAIT != 0, cb.rw_flags & RWF_APPEND != 0))
}

/// The user buffers of a read or write (Linux's `aio_setup_rw`): one range, its length cut to
/// MAX_RW_COUNT and then `access_ok`; or an iovec array of `aio_nbytes` (as 32 bits)
/// entries: EINVAL past UIO_MAXIOV, EFAULT, EINVAL for a negative length, EFAULT for a range
/// `access_ok` refuses; the total cut to MAX_RW_COUNT.
fn segments(proc: &Thread, cb: &Iocb, vectored: bool) -> Result<Vec<(u64, u64)>, Errno> {
    if !vectored {
        let len = cb.nbytes.min(MAX_RW);
        access_ok(cb.buf, len)?;
        return Ok(alloc::vec![(cb.buf, len)]);
    }
    let nr = u64::from(cb.nbytes as u32);
    if nr == 0 {
        return Ok(Vec::new());
    }
    if nr > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let raw = proc.read_user_vec(cb.buf, nr as usize * 16)?;
    let iov: Vec<(u64, u64)> = raw
        .chunks(16)
        .map(|v| (u64::from_le_bytes(v[..8].try_into().expect("8")), u64::from_le_bytes(v[8..].try_into().expect("8"))))
        .collect();
    if iov.iter().any(|&(_, len)| (len as i64) < 0) {
        return Err(Errno::EINVAL);
    }
    let mut total = 0u64;
    let mut out = Vec::with_capacity(iov.len());
    for (base, len) in iov {
        access_ok(base, len)?;
        let len = len.min(MAX_RW - total);
        total += len;
        out.push((base, len));
    }
    Ok(out)
}

/// Linux's `rw_verify_area` for the iocb's offset, whatever the file: a negative offset, or
/// one plus the count past `loff_t`, is EINVAL.
fn verify_area(offset: i64, count: u64) -> Result<(), Errno> {
    if offset < 0 || (offset as u64).checked_add(count).is_none_or(|end| end > i64::MAX as u64) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// `IOCB_CMD_PREAD` / `PREADV` (Linux's `aio_read`): the checks, then the read, whose result
/// is the event's. A file that seeks is read at `aio_offset`; a stream (pipe, socket,
/// terminal) from where it is.
fn read(proc: &Thread, f: &Arc<OpenFile>, cb: &Iocb, vectored: bool) -> Result<i64, Errno> {
    let (nowait, _) = prep_rw(proc, f, cb)?;
    if !f.may_read() {
        return Err(Errno::EBADF);
    }
    if !aio::has_read_iter(f) {
        return Err(Errno::EINVAL);
    }
    let segs = segments(proc, cb, vectored)?;
    verify_area(cb.offset, segs.iter().map(|s| s.1).sum())?;
    let (seek, whole) = (f.seekable(), reads_whole(f));
    let nonblock = nowait || f.nonblock();
    let mut total = 0u64;
    for (base, len) in segs {
        if len == 0 {
            continue;
        }
        let at = cb.offset as u64 + total;
        let r = if seek {
            read_into(proc, base, len, whole, |b, done| file::pread(f, b, at + done))
        } else {
            read_into(proc, base, len, whole, |b, _| file::read_with(f, b, nonblock))
        };
        match r {
            Ok(n) => {
                total += n;
                if n < if whole { len } else { len.min(CHUNK as u64) } {
                    break;
                }
            }
            Err(e) if total == 0 => return Ok(result(Err(e))),
            Err(_) => break,
        }
    }
    Ok(total as i64)
}

/// `IOCB_CMD_PWRITE` / `PWRITEV` (Linux's `aio_write`): as [`read`]; O_APPEND or RWF_APPEND
/// writes a regular file at its end.
fn write(proc: &Thread, f: &Arc<OpenFile>, cb: &Iocb, vectored: bool) -> Result<i64, Errno> {
    let (nowait, append) = prep_rw(proc, f, cb)?;
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    if !aio::has_write_iter(f) {
        return Err(Errno::EINVAL);
    }
    let segs = segments(proc, cb, vectored)?;
    verify_area(cb.offset, segs.iter().map(|s| s.1).sum())?;
    let mut at = cb.offset as u64;
    if let Kind::Inode(i) = &f.kind {
        if append || f.flags.load(Ordering::Relaxed) & O_APPEND != 0 {
            at = i.size();
        }
    }
    let (seek, nonblock) = (f.seekable(), nowait || f.nonblock());
    let mut total = 0u64;
    for (base, len) in segs {
        if len == 0 {
            continue;
        }
        let r = if seek { pwrite_from(proc, f, base, len, at + total) } else { write_from_with(proc, f, base, len, nonblock) };
        match r {
            Ok(n) => {
                total += n;
                if n < len {
                    break;
                }
            }
            Err(e) if total == 0 => return Ok(result(Err(e))),
            Err(_) => break,
        }
    }
    Ok(total as i64)
}

/// How long `io_getevents` may wait.
#[derive(Clone, Copy)]
enum Wait {
    /// No timeout (NULL, or one Linux's `ktime` arithmetic makes infinite).
    Forever,
    /// A zero timeout: look once.
    Never,
    /// Until this uptime (ns).
    Until(u64),
}

/// The relative timeout at `addr` as Linux reads it (`get_timespec64`, `timespec64_to_ktime`,
/// then a relative hrtimer): the nanoseconds are not checked; a zero timeout looks once; a
/// negative one is no timeout at all (`ktime_add_safe` saturates), as is one of
/// `KTIME_SEC_MAX` seconds or more.
fn timeout(proc: &Thread, addr: u64) -> Result<Wait, Errno> {
    if addr == 0 {
        return Ok(Wait::Forever);
    }
    let mut b = [0u8; 16];
    proc.read_user(addr, &mut b)?;
    let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
    let nsec = i64::from_le_bytes(b[8..].try_into().expect("8"));
    if sec >= KTIME_SEC_MAX {
        return Ok(Wait::Forever);
    }
    let ns = sec.wrapping_mul(1_000_000_000).wrapping_add(nsec);
    Ok(match ns {
        0 => Wait::Never,
        ns if ns < 0 => Wait::Forever,
        ns => crate::time::uptime_ns().checked_add(ns as u64).map_or(Wait::Forever, Wait::Until),
    })
}

/// Linux's `do_io_getevents` and `read_events`: EINVAL for a bad context or `min_nr` outside
/// `0..=nr`; reads events until `min_nr` are had, the wait ends (timeout, signal: what was
/// read, maybe 0) or the context ends (EINVAL if nothing was read). A copy that faults is
/// EFAULT if nothing was read.
fn getevents(proc: &Thread, ctx_id: u64, min_nr: i64, nr: i64, events: u64, wait: Wait) -> Result<u64, Errno> {
    let c = lookup(proc, ctx_id).ok_or(Errno::EINVAL)?;
    if min_nr > nr || min_nr < 0 {
        return Err(Errno::EINVAL);
    }
    let (min_nr, nr) = (min_nr as u64, nr as u64);
    let mut got = 0u64;
    let mut timed_out = false;
    loop {
        let max = (nr - got).min(usize::MAX as u64) as usize;
        let base = events.wrapping_add(got.wrapping_mul(EVENT as u64));
        match c.read_events(max, |i, bytes| proc.write_user(base.wrapping_add((i * EVENT) as u64), bytes)) {
            Ok(n) => got += n as u64,
            Err(e) if got == 0 => return Err(e),
            Err(_) => return Ok(got),
        }
        if c.is_dead() {
            return if got == 0 { Err(Errno::EINVAL) } else { Ok(got) };
        }
        if got >= min_nr || timed_out {
            return Ok(got);
        }
        let r = match wait {
            Wait::Never => return Ok(got),
            Wait::Forever => c.wait_readable(None),
            Wait::Until(d) => c.wait_readable(Some(d)),
        };
        match r {
            Ok(true) => {}
            // One more look after the deadline, as Linux's wait checks its condition first.
            Ok(false) => timed_out = true,
            Err(_) => return Ok(got),
        }
    }
}

/// Is a signal pending that the caller does not block (Linux's `signal_pending`)?
fn signal_pending() -> bool {
    crate::sched::signal::interrupted(&crate::sched::current())
}

/// `io_getevents(ctx, min_nr, nr, events, timeout)`: EINTR when a signal ended a wait that
/// read nothing (never restarted, whatever SA_RESTART says).
pub fn io_getevents(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let wait = timeout(proc, a[4])?;
    let n = getevents(proc, a[0], a[1] as i64, a[2] as i64, a[3], wait)?;
    if n == 0 && signal_pending() {
        return Err(Errno::EINTR);
    }
    ok(n)
}

/// `io_pgetevents(ctx, min_nr, nr, events, timeout, usig)`: `usig` points to `{ const
/// sigset_t *sigmask; size_t sigsetsize; }`; the mask is in force during the call, as
/// `ppoll`'s, and a signal that ended a wait that read nothing is ERESTARTNOHAND (EINTR after a
/// handler). With a signal pending at the end the old mask comes back after its handler.
pub fn io_pgetevents(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let wait = timeout(proc, a[4])?;
    let (mask_addr, size) = if a[5] != 0 {
        let mut b = [0u8; 16];
        proc.read_user(a[5], &mut b)?;
        (u64::from_le_bytes(b[..8].try_into().expect("8")), u64::from_le_bytes(b[8..].try_into().expect("8")))
    } else {
        (0, 0)
    };
    let me = crate::sched::current();
    let old = if mask_addr != 0 {
        if size != 8 {
            return Err(Errno::EINVAL);
        }
        let mut b = [0u8; 8];
        proc.read_user(mask_addr, &mut b)?;
        let mask = u64::from_le_bytes(b) & !cadence_abi::signal::UNBLOCKABLE;
        Some(me.process.signals.blocked.swap(mask, Ordering::Relaxed))
    } else {
        None
    };
    let r = getevents(proc, a[0], a[1] as i64, a[2] as i64, a[3], wait);
    let interrupted = crate::sched::signal::interrupted(&me);
    if let Some(old) = old {
        if interrupted {
            *proc.saved_mask.lock() = Some(old);
        } else {
            me.process.signals.blocked.store(old, Ordering::Relaxed);
        }
    }
    match r {
        Ok(0) if interrupted => Err(Errno::ERESTARTNOHAND),
        r => ok(r?),
    }
}

/// `io_cancel(ctx, iocb, result)`: EFAULT if `iocb->aio_key` cannot be read, EINVAL unless it
/// is 0 (what `io_submit` wrote), EINVAL for a bad context or an iocb that does not wait
/// (every read, write and sync is done by then); a waiting POLL is cancelled: its event, with
/// `res` 0, goes to the ring and the answer is EINPROGRESS. `result` is not used (Linux's
/// neither).
pub fn io_cancel(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mut key = [0u8; 4];
    proc.read_user(a[1].wrapping_add(AIO_KEY), &mut key)?;
    if u32::from_le_bytes(key) != 0 {
        return Err(Errno::EINVAL);
    }
    let c = lookup(proc, a[0]).ok_or(Errno::EINVAL)?;
    if aio::cancel(&c, a[1]) {
        Err(Errno::EINPROGRESS)
    } else {
        Err(Errno::EINVAL)
    }
}
