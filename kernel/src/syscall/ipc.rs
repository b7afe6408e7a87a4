//! IPC system calls: POSIX message queues (Linux `ipc/mqueue.c`: `mq_open`, `mq_unlink`,
//! `mq_timedsend`, `mq_timedreceive`, `mq_notify`, `mq_getsetattr`, over `fs::mqueue`) and
//! System V semaphores (`ipc/sem.c`: `semget`, `semop`, `semtimedop`, `semctl`, over
//! `process::sem`). Arguments are checked in Linux's order, so a call with several bad
//! arguments gets Linux's errno.

use super::fs::{fd_file, files, user_path};
use super::{ok, Outcome};
use crate::fs::file::{Kind, OpenFile, O_NONBLOCK};
use crate::fs::mqueue::{self, Fire, MessageQueue, Notify, Opener, MQ_PRIO_MAX};
use crate::process::sem::{self, Caller, Get};
use crate::process::Thread;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{code, SigFields, SigInfo};
use cadence_ipc::mqueue::Attr;
use cadence_ipc::sem::{SemBuf, SEMOPM};
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// RLIMIT_MSGQUEUE.
const RLIMIT_MSGQUEUE: usize = 12;
/// `sizeof(struct mq_attr)`.
const MQ_ATTR_SIZE: usize = 64;
/// `sizeof(struct sigevent)`.
const SIGEVENT_SIZE: usize = 64;
/// `NOTIFY_COOKIE_LEN`: what SIGEV_THREAD's `sival_ptr` points to.
const NOTIFY_COOKIE_LEN: usize = 32;

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// An absolute CLOCK_REALTIME timeout (`prepare_timeout`) as a monotonic deadline: EFAULT,
/// EINVAL for a negative second or nanoseconds outside [0, 1e9).
fn abs_timeout(proc: &Thread, addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let t = super::time::read_timespec(proc, addr)?;
    Ok(Some(super::time::realtime_to_monotonic(t)))
}

/// The message queue open at `fd` (EBADF for none, or another kind of file).
fn mq_of(proc: &Thread, fd: u64) -> Result<(Arc<OpenFile>, Arc<MessageQueue>), Errno> {
    let f = fd_file(proc, fd)?;
    let q = match &f.kind {
        Kind::Mqueue(q) => q.clone(),
        _ => return Err(Errno::EBADF),
    };
    Ok((f, q))
}

/// `mq_open(name, oflag, mode, attr)`: the name without glibc's leading '/'. The fd is
/// close-on-exec whatever `oflag` says (Linux's `get_unused_fd_flags(O_CLOEXEC)`); O_NONBLOCK
/// and the access mode come from `oflag`; `attr` is read (EFAULT) before anything else.
pub fn mq_open(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let oflag = a[1] as u32;
    let attr = if a[3] != 0 {
        let b = proc.read_user_vec(a[3], MQ_ATTR_SIZE)?;
        Some(Attr { maxmsg: i64_at(&b, 8), msgsize: i64_at(&b, 16) })
    } else {
        None
    };
    let name = user_path(proc, a[0], false)?;
    let who = {
        let creds = proc.process.creds.lock_uninterruptible();
        let rlimit = proc.process.rlimits.lock_uninterruptible()[RLIMIT_MSGQUEUE].0;
        Opener { uid: creds.uid[0], privileged: creds.uid[1] == 0, rlimit }
    };
    // Linux takes the fd first: EMFILE before the name's errors, and no queue made for it.
    let limit = proc.nofile();
    let table = files(proc);
    if !table.lock_uninterruptible().has_free(limit) {
        return Err(Errno::EMFILE);
    }
    let q = mqueue::open(&name, oflag, attr, who)?;
    let file = OpenFile::new(Kind::Mqueue(q), oflag & (crate::fs::file::O_ACCMODE | O_NONBLOCK));
    let fd = table.lock_uninterruptible().install(file, true, limit)?;
    ok(fd)
}

/// `mq_unlink(name)`.
pub fn mq_unlink(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let name = user_path(proc, a[0], false)?;
    mqueue::unlink(&name)?;
    ok(0)
}

/// Sends an `mq_notify` signal (SI_MESGQ, the sender's pid and uid, the registered value) to
/// the registered process, if it is still there.
fn fire(proc: &Thread, f: Fire) {
    let Some(leader) = crate::sched::find(f.tgid).filter(|t| !t.process.group.exited.load(Ordering::Acquire)) else {
        return;
    };
    let pid = crate::sched::current().process.tgid;
    let uid = proc.process.creds.lock_uninterruptible().uid[0];
    let info = SigInfo { signo: f.signo, code: code::SI_MESGQ, errno: 0, fields: SigFields::Kill { pid, uid, value: f.value } };
    let _ = crate::process::signal::send(&leader, f.signo, info, true, false);
}

/// `mq_timedsend(mqdes, msg_ptr, msg_len, msg_prio, abs_timeout)`: the timeout (EFAULT,
/// EINVAL), the priority (EINVAL), the fd (EBADF, also without write access), the size
/// (EMSGSIZE), the message (EFAULT); then the send (EAGAIN, ETIMEDOUT, a signal).
pub fn mq_timedsend(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = abs_timeout(proc, a[4])?;
    let prio = a[3] as u32;
    if prio >= MQ_PRIO_MAX {
        return Err(Errno::EINVAL);
    }
    let (f, q) = mq_of(proc, a[0])?;
    if !f.writable() || f.flags.load(Ordering::Relaxed) & crate::fs::file::O_ACCMODE == 3 {
        return Err(Errno::EBADF);
    }
    if a[2] > q.attr().msgsize as u64 {
        return Err(Errno::EMSGSIZE);
    }
    let data = proc.read_user_vec(a[1], a[2] as usize)?;
    if let Some(fire_it) = q.send(data, prio, f.nonblock(), deadline)? {
        fire(proc, fire_it);
    }
    ok(0)
}

/// `mq_timedreceive(mqdes, msg_ptr, msg_len, msg_prio, abs_timeout)`: the timeout, the fd
/// (EBADF, also without read access), the buffer's size (EMSGSIZE below `mq_msgsize`); the
/// message's length. A message is taken even if copying it out faults (EFAULT), as Linux's.
pub fn mq_timedreceive(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = abs_timeout(proc, a[4])?;
    let (f, q) = mq_of(proc, a[0])?;
    if !f.may_read() {
        return Err(Errno::EBADF);
    }
    if a[2] < q.attr().msgsize as u64 {
        return Err(Errno::EMSGSIZE);
    }
    let m = q.receive(f.nonblock(), deadline)?;
    if a[3] != 0 {
        proc.write_user(a[3], &m.prio.to_le_bytes())?;
    }
    proc.write_user(a[1], &m.data)?;
    ok(m.data.len() as u64)
}

/// `mq_notify(mqdes, sevp)`: SIGEV_NONE and SIGEV_SIGNAL register the caller's process
/// (EBUSY if one is), NULL unregisters it. SIGEV_THREAD needs a netlink socket, which Cadence
/// has none of: its cookie and fd are checked as Linux does (EFAULT, EBADF, ENOTSOCK; a socket
/// that is not netlink EINVAL). EINVAL for another `sigev_notify` or a signal above 64.
pub fn mq_notify(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let req = if a[1] != 0 {
        let b = proc.read_user_vec(a[1], SIGEVENT_SIZE)?;
        let (value, signo, notify) = (i64_at(&b, 0) as u64, u32_at(&b, 8) as i32, u32_at(&b, 12) as i32);
        match notify {
            mqueue::SIGEV_NONE => Some(Notify::None),
            mqueue::SIGEV_SIGNAL if (0..=64).contains(&signo) => Some(Notify::Signal { signo: signo as u32, value }),
            mqueue::SIGEV_THREAD => {
                proc.read_user_vec(value, NOTIFY_COOKIE_LEN)?;
                let sock = fd_file(proc, signo as u32 as u64)?;
                return Err(if matches!(sock.kind, Kind::Socket(_)) { Errno::EINVAL } else { Errno::ENOTSOCK });
            }
            _ => return Err(Errno::EINVAL),
        }
    } else {
        None
    };
    let (_, q) = mq_of(proc, a[0])?;
    q.notify(crate::sched::current().process.tgid, req)?;
    ok(0)
}

/// `mq_getsetattr(mqdes, newattr, oldattr)`: the new flags (EFAULT; EINVAL for any but
/// O_NONBLOCK), the fd (EBADF); the old attributes with the fd's O_NONBLOCK, then the new
/// O_NONBLOCK set on the open file (the other fields are ignored, as Linux).
pub fn mq_getsetattr(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let new = if a[1] != 0 { Some(i64_at(&proc.read_user_vec(a[1], MQ_ATTR_SIZE)?, 0)) } else { None };
    if new.is_some_and(|fl| fl & !i64::from(O_NONBLOCK) != 0) {
        return Err(Errno::EINVAL);
    }
    let (f, q) = mq_of(proc, a[0])?;
    let (attr, cur) = q.getattr();
    let mut old = [0u8; MQ_ATTR_SIZE];
    let flags = u64::from(f.flags.load(Ordering::Relaxed) & O_NONBLOCK);
    for (i, v) in [flags, attr.maxmsg as u64, attr.msgsize as u64, cur as u64].into_iter().enumerate() {
        old[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    if let Some(fl) = new {
        if fl != 0 {
            f.flags.fetch_or(O_NONBLOCK, Ordering::Relaxed);
        } else {
            f.flags.fetch_and(!O_NONBLOCK, Ordering::Relaxed);
        }
    }
    if a[2] != 0 {
        proc.write_user(a[2], &old)?;
    }
    ok(0)
}

/// The caller, for `process::sem`.
fn caller(proc: &Thread) -> Caller {
    Caller { creds: proc.process.creds.lock_uninterruptible().clone(), tgid: crate::sched::current().process.tgid }
}

/// `semget(key, nsems, semflg)`.
pub fn semget(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let id = sem::semget(a[0] as i32, a[1] as i32, a[2] as i32, &caller(proc))?;
    ok(id as u64)
}

/// `semop(semid, sops, nsops)`: `semtimedop` without a timeout.
pub fn semop(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    semtimedop(proc, ctx, [a[0], a[1], a[2], 0, 0, 0])
}

/// `semtimedop(semid, sops, nsops, timeout)` (Linux's `ksys_semtimedop`): the timeout pointer
/// (EFAULT), the count and id (EINVAL, E2BIG past SEMOPM), the operations (EFAULT), the
/// timeout's value (EINVAL); a relative timeout ends the wait with EAGAIN.
pub fn semtimedop(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let ts = if a[3] != 0 { Some(proc.read_user_vec(a[3], 16)?) } else { None };
    let (id, nsops) = (a[0] as i32, a[2] as u32);
    if nsops < 1 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if nsops > SEMOPM as u32 {
        return Err(Errno::E2BIG);
    }
    let raw = proc.read_user_vec(a[1], nsops as usize * 6)?;
    let ops: Vec<SemBuf> = raw.chunks_exact(6).map(|c| SemBuf::from_bytes(c.try_into().expect("6 bytes"))).collect();
    let deadline = match ts {
        Some(b) => Some(crate::time::uptime_ns().saturating_add(super::time::parse_timespec(&b)?)),
        None => None,
    };
    sem::semop(id, ops, deadline, &caller(proc))?;
    ok(0)
}

const IPC_RMID: u64 = 0;
const IPC_SET: u64 = 1;
const IPC_STAT: u64 = 2;
const IPC_INFO: u64 = 3;
const GETPID: u64 = 11;
const GETVAL: u64 = 12;
const GETALL: u64 = 13;
const GETNCNT: u64 = 14;
const GETZCNT: u64 = 15;
const SETVAL: u64 = 16;
const SETALL: u64 = 17;
const SEM_STAT: u64 = 18;
const SEM_INFO: u64 = 19;
const SEM_STAT_ANY: u64 = 20;
/// `sizeof(struct semid64_ds)` on x86_64.
const SEMID_DS_SIZE: usize = 104;

/// `struct semid64_ds` (x86_64): `ipc64_perm` (key, uid, gid, cuid, cgid, mode, seq), then
/// `sem_otime`, `sem_ctime`, `sem_nsems` with unused words between.
fn encode_semid_ds(s: &sem::Stat) -> [u8; SEMID_DS_SIZE] {
    let mut b = [0u8; SEMID_DS_SIZE];
    let p = &s.perm;
    for (i, v) in [p.key as u32, p.uid, p.gid, p.cuid, p.cgid, p.mode].into_iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    b[24..26].copy_from_slice(&s.seq.to_le_bytes());
    b[48..56].copy_from_slice(&s.otime.to_le_bytes());
    b[64..72].copy_from_slice(&s.ctime.to_le_bytes());
    b[80..88].copy_from_slice(&(s.nsems as u64).to_le_bytes());
    b
}

/// `semctl(semid, semnum, cmd, arg)` (Linux's `ksys_semctl`, IPC_64 layouts; a `cmd` with the
/// IPC_64 bit is EINVAL on x86_64, as there).
pub fn semctl(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (id, num, cmd, arg) = (a[0] as i32, a[1] as i32, a[2] as u32 as u64, a[3]);
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let who = caller(proc);
    match cmd {
        IPC_INFO | SEM_INFO => {
            let (fields, max_idx) = sem::info(cmd == SEM_INFO);
            let mut b = [0u8; 40];
            for (i, v) in fields.into_iter().enumerate() {
                b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
            }
            proc.write_user(arg, &b)?;
            ok(max_idx.max(0) as u64)
        }
        IPC_STAT | SEM_STAT | SEM_STAT_ANY => {
            let s = sem::stat(id, cmd != IPC_STAT, cmd == SEM_STAT_ANY, &who)?;
            proc.write_user(arg, &encode_semid_ds(&s))?;
            ok(if cmd == IPC_STAT { 0 } else { s.id as u64 })
        }
        GETALL => {
            let vals = sem::get_all(id, &who)?;
            let b: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            proc.write_user(arg, &b)?;
            ok(0)
        }
        SETALL => {
            let n = sem::nsems(id, &who)?;
            let b = proc.read_user_vec(arg, n * 2)?;
            let vals: Vec<u16> = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            sem::set_all(id, &vals, &who)?;
            ok(0)
        }
        GETVAL | GETPID | GETNCNT | GETZCNT => {
            let what = match cmd {
                GETVAL => Get::Val,
                GETPID => Get::Pid,
                GETNCNT => Get::Ncnt,
                _ => Get::Zcnt,
            };
            ok(sem::get(id, num, what, &who)? as u64)
        }
        SETVAL => {
            sem::set_val(id, num, arg as i32, &who)?;
            ok(0)
        }
        IPC_SET => {
            let b = proc.read_user_vec(arg, SEMID_DS_SIZE)?;
            sem::set_perm(id, u32_at(&b, 4), u32_at(&b, 8), u32_at(&b, 20), &who)?;
            ok(0)
        }
        IPC_RMID => {
            sem::remove(id, &who)?;
            ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}
