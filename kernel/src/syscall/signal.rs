//! Signal system calls (Linux `kernel/signal.c`, `arch/x86/kernel/signal.c`): dispositions,
//! masks, sending (`kill`, `tkill`, `tgkill`, `rt_sigqueueinfo`), waiting (`pause`,
//! `rt_sigsuspend`, `rt_sigtimedwait`), signalfd (`signalfd`, `signalfd4`: the file is
//! `fs::signalfd`), the alternate stack and `rt_sigreturn`, over `process::signal`.

use super::{ok, Outcome};
use crate::process::signal as psig;
use crate::process::{SigAction, Thread};
use crate::sched::task::Task;
use alloc::sync::Arc;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{code, sigbit, AltStack, SigInfo, SIGINFO_SIZE, UNBLOCKABLE};
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// Bytes of the kernel's `sigset_t`.
const SIGSET_SIZE: u64 = 8;

fn read_sigset(proc: &Thread, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 8];
    proc.read_user(addr, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn write_sigset(proc: &Thread, addr: u64, set: u64) -> Result<(), Errno> {
    proc.write_user(addr, &set.to_le_bytes())
}

/// `rt_sigaction(sig, act, oact, sigsetsize)`. EINVAL for a bad signal or size, or for a new
/// action on SIGKILL / SIGSTOP; SIG_IGN (and SIG_DFL of a signal ignored by default) discards
/// what is pending of it.
pub fn rt_sigaction(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let sig = a[0];
    if a[3] != SIGSET_SIZE || !(1..=64).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    let sig = sig as u32;
    if a[1] != 0 && sigbit(sig) & UNBLOCKABLE != 0 {
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let mut b = [0u8; 32];
        proc.read_user(a[1], &mut b)?;
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8"));
        Some(SigAction { handler: w(0), flags: w(1), restorer: w(2), mask: w(3) & !UNBLOCKABLE })
    } else {
        None
    };
    let old = {
        let mut acts = proc.sighand.lock_uninterruptible();
        let old = acts[sig as usize];
        if let Some(n) = new {
            acts[sig as usize] = n;
        }
        old
    };
    if let Some(n) = new {
        psig::update_ignored(&crate::sched::current(), sig, &n);
    }
    if a[2] != 0 {
        let mut b = [0u8; 32];
        for (i, w) in [old.handler, old.flags, old.restorer, old.mask].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        proc.write_user(a[2], &b)?;
    }
    ok(0)
}

/// Sets the calling thread's blocked mask (SIGKILL and SIGSTOP never blocked); signals of the
/// process it now blocks go to a thread that does not (Linux's `retarget_shared_pending`).
fn set_blocked(new: u64) {
    let me = crate::sched::current();
    let new = new & !UNBLOCKABLE;
    let old = me.process.signals.blocked.swap(new, Ordering::Relaxed);
    let newly = new & !old & me.process.group.pending.load(Ordering::Acquire);
    if newly != 0 {
        crate::sched::signal::for_each_member(&me.process.group, |m| {
            if m.tid != me.tid && m.process.signals.blocked.load(Ordering::Relaxed) & newly != newly {
                crate::sched::wake_up(m);
                crate::sched::kick_task(m);
            }
        });
    }
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`.
pub fn rt_sigprocmask(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const SIG_BLOCK: u64 = 0;
    const SIG_UNBLOCK: u64 = 1;
    const SIG_SETMASK: u64 = 2;
    if a[3] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let old = crate::sched::current().process.signals.blocked.load(Ordering::Relaxed);
    if a[1] != 0 {
        let set = read_sigset(proc, a[1])?;
        let new = match a[0] {
            SIG_BLOCK => old | set,
            SIG_UNBLOCK => old & !set,
            SIG_SETMASK => set,
            _ => return Err(Errno::EINVAL),
        };
        set_blocked(new);
    }
    if a[2] != 0 {
        write_sigset(proc, a[2], old)?;
    }
    ok(0)
}

/// `rt_sigpending(set, sigsetsize)`: the blocked signals pending for the thread or its
/// process. EINVAL if `sigsetsize` is over 8 (Linux copies `sigsetsize` bytes).
pub fn rt_sigpending(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] > SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let me = crate::sched::current();
    let pending = (me.process.signals.pending.load(Ordering::Acquire) | me.process.group.pending.load(Ordering::Acquire))
        & me.process.signals.blocked.load(Ordering::Relaxed);
    proc.write_user(a[0], &pending.to_le_bytes()[..a[1] as usize])?;
    ok(0)
}

/// Where `pause`, `rt_sigsuspend` and `rt_sigtimedwait` sleep: nothing wakes the queue
/// itself; a signal wakes the sleeping thread directly.
static PAUSED: crate::sched::wait::WaitQueue = crate::sched::wait::WaitQueue::new();

/// `pause()`: sleeps until a signal is taken; EINTR after its handler (restarted if the signal
/// had no handler and did not end the process).
pub fn pause(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    let _ = PAUSED.wait_until_interruptible(|| false);
    Err(Errno::ERESTARTNOHAND)
}

/// `rt_sigsuspend(mask, sigsetsize)`: `pause` with the mask replaced until a signal is taken
/// (the handler's frame keeps the old mask, which `rt_sigreturn` restores).
pub fn rt_sigsuspend(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let mask = read_sigset(proc, a[0])?;
    let me = crate::sched::current();
    let old = me.process.signals.blocked.swap(mask & !UNBLOCKABLE, Ordering::Relaxed);
    *proc.saved_mask.lock() = Some(old);
    let _ = PAUSED.wait_until_interruptible(|| false);
    Err(Errno::ERESTARTNOHAND)
}

/// `rt_sigtimedwait(set, info, timeout, sigsetsize)`: takes a pending signal of `set`
/// (SIGKILL and SIGSTOP excepted), waiting for one up to `timeout` (NULL: forever) with
/// `set` unblocked meanwhile. Returns the signal and writes its info; EAGAIN at the timeout,
/// EINTR if another signal comes.
pub fn rt_sigtimedwait(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[3] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let set = read_sigset(proc, a[0])? & !UNBLOCKABLE;
    let deadline = if a[2] != 0 { Some(crate::time::uptime_ns().saturating_add(super::time::read_timespec(proc, a[2])?)) } else { None };
    let me = crate::sched::current();
    let take = |proc: &Thread| -> Result<Option<u64>, Errno> {
        match psig::dequeue_from(proc, set) {
            Some((sig, info)) => {
                if a[1] != 0 {
                    proc.write_user(a[1], &info.encode())?;
                }
                Ok(Some(u64::from(sig)))
            }
            None => Ok(None),
        }
    };
    if let Some(sig) = take(proc)? {
        return ok(sig);
    }
    if deadline.is_some_and(|d| crate::time::uptime_ns() >= d) {
        return Err(Errno::EAGAIN);
    }
    let blocked = me.process.signals.blocked.load(Ordering::Relaxed);
    me.process.signals.blocked.store(blocked & !set, Ordering::Relaxed);
    let r = match deadline {
        Some(d) => PAUSED.wait_until_interruptible_deadline(|| false, d).map(|_| ()),
        None => PAUSED.wait_until_interruptible(|| false),
    };
    me.process.signals.blocked.store(blocked, Ordering::Relaxed);
    if let Some(sig) = take(proc)? {
        return ok(sig);
    }
    match r {
        Err(_) => Err(Errno::EINTR),
        Ok(()) => Err(Errno::EAGAIN),
    }
}

/// A process's first task, for `kill(pid)`: its thread group leader (any of its tasks'
/// tid reaches it, as Linux's `kill` of a thread's tid signals its process).
fn process_task(pid: u32) -> Option<Arc<Task>> {
    let t = crate::sched::task::find(pid)?;
    let leader = if t.process.tgid == t.tid { t } else { crate::sched::task::find(t.process.tgid).unwrap_or(t) };
    (!leader.is_idle && !leader.process.group.exited.load(Ordering::Acquire) && leader.state() != crate::sched::task::TaskState::Dead)
        .then_some(leader)
}

/// `kill(pid, sig)`: > 0 that process, 0 the caller's process group, -1 every process but
/// init and the caller, < -1 process group -pid. EINVAL for a bad signal, ESRCH if nobody
/// matched.
pub fn kill(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (pid, sig) = (a[0] as i32, a[1]);
    if !psig::valid(sig) {
        return Err(Errno::EINVAL);
    }
    let sig = sig as u32;
    let info = psig::info_from_me(sig, code::SI_USER);
    if pid > 0 {
        let t = process_task(pid as u32).ok_or(Errno::ESRCH)?;
        psig::send(&t, sig, info, true, false)?;
        return ok(0);
    }
    let me = crate::sched::current();
    let target_pgid = match pid {
        0 => Some(me.process.group.pgid.load(Ordering::Relaxed)),
        -1 => None,
        i32::MIN => return Err(Errno::ESRCH),
        p => Some(p.unsigned_abs()),
    };
    let mut hit = false;
    for t in crate::sched::task::all() {
        let g = &t.process.group;
        let in_group = target_pgid.is_none_or(|p| g.pgid.load(Ordering::Relaxed) == p);
        let skip = t.kthread
            || t.is_idle
            || g.exited.load(Ordering::Acquire)
            || t.state() == crate::sched::task::TaskState::Dead
            || (pid == -1 && (t.tid == 1 || t.process.tgid == me.process.tgid));
        if in_group && !skip && t.process.tgid == t.tid {
            hit = true;
            psig::send(&t, sig, info, true, false)?;
        }
    }
    if hit {
        ok(0)
    } else {
        Err(Errno::ESRCH)
    }
}

/// A live thread `tid` (of process `tgid`, if given).
fn thread_task(tgid: Option<u32>, tid: u32) -> Result<Arc<Task>, Errno> {
    crate::sched::task::find(tid)
        .filter(|t| !t.is_idle && t.state() != crate::sched::task::TaskState::Dead && !t.process.group.exited.load(Ordering::Acquire))
        .filter(|t| tgid.is_none_or(|g| t.process.tgid == g))
        .ok_or(Errno::ESRCH)
}

/// `tgkill(tgid, tid, sig)`: to thread `tid` of process `tgid`.
pub fn tgkill(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 || !psig::valid(a[2]) {
        return Err(Errno::EINVAL);
    }
    let t = thread_task(Some(a[0] as u32), a[1] as u32)?;
    psig::send(&t, a[2] as u32, psig::info_from_me(a[2] as u32, code::SI_TKILL), false, false)?;
    ok(0)
}

/// `tkill(tid, sig)`.
pub fn tkill(_: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] as i32 <= 0 || !psig::valid(a[1]) {
        return Err(Errno::EINVAL);
    }
    let t = thread_task(None, a[0] as u32)?;
    psig::send(&t, a[1] as u32, psig::info_from_me(a[1] as u32, code::SI_TKILL), false, false)?;
    ok(0)
}

/// The info `rt_sigqueueinfo` / `rt_tgsigqueueinfo` send: the caller's, with `si_signo` set;
/// EPERM if it claims to come from the kernel or `tkill` and targets another process (Linux
/// keeps processes from forging those).
fn queued_info(proc: &Thread, addr: u64, sig: u32, target_tgid: u32) -> Result<SigInfo, Errno> {
    let mut b = [0u8; SIGINFO_SIZE];
    proc.read_user(addr, &mut b)?;
    let mut info = SigInfo::decode_queued(&b);
    let me = crate::sched::current();
    if (info.code >= 0 || info.code == code::SI_TKILL) && target_tgid != me.process.tgid {
        return Err(Errno::EPERM);
    }
    info.signo = sig;
    Ok(info)
}

/// `rt_sigqueueinfo(tgid, sig, info)`: a signal with the caller's info to a process (EAGAIN if
/// its queue is full).
pub fn rt_sigqueueinfo(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if !psig::valid(a[1]) {
        return Err(Errno::EINVAL);
    }
    let t = process_task(a[0] as u32).filter(|_| a[0] as i32 > 0).ok_or(Errno::ESRCH)?;
    let info = queued_info(proc, a[2], a[1] as u32, t.process.tgid)?;
    psig::send(&t, a[1] as u32, info, true, true)?;
    ok(0)
}

/// `rt_tgsigqueueinfo(tgid, tid, sig, info)`: the same, to one thread.
pub fn rt_tgsigqueueinfo(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 || !psig::valid(a[2]) {
        return Err(Errno::EINVAL);
    }
    let t = thread_task(Some(a[0] as u32), a[1] as u32)?;
    let info = queued_info(proc, a[3], a[2] as u32, t.process.tgid)?;
    psig::send(&t, a[2] as u32, info, false, true)?;
    ok(0)
}

/// `signalfd4(fd, mask, sizemask, flags)` (Linux `fs/signalfd.c`): `fd` -1 makes a signalfd of
/// `mask` (SIGKILL and SIGSTOP left out silently), read-write as Linux's anonymous inode,
/// SFD_NONBLOCK and SFD_CLOEXEC (O_NONBLOCK, O_CLOEXEC) as asked; another `fd` must be a
/// signalfd, whose mask is replaced (EBADF if not open, EINVAL if not a signalfd). In Linux's
/// order: EINVAL unless `sizemask` is 8, EFAULT for the mask, EINVAL for other flags.
pub fn signalfd4(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    use crate::fs::file::{Kind, OpenFile, O_CLOEXEC, O_NONBLOCK, O_RDWR};
    if a[2] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let mask = read_sigset(proc, a[1])? & !UNBLOCKABLE;
    let flags = a[3] as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    // `int ufd`: the low 32 bits.
    if a[0] as i32 == -1 {
        let file = OpenFile::new(Kind::SignalFd(crate::fs::signalfd::create(mask)), O_RDWR | (flags & O_NONBLOCK));
        let table = super::fs::files(proc);
        let fd = table.lock_uninterruptible().install(file, flags & O_CLOEXEC != 0, proc.nofile())?;
        return ok(fd);
    }
    match &super::fs::fd_file(proc, a[0])?.kind {
        Kind::SignalFd(s) => s.set_mask(mask),
        _ => return Err(Errno::EINVAL),
    }
    ok(u64::from(a[0] as u32))
}

/// `signalfd(fd, mask, sizemask)`: `signalfd4` without flags.
pub fn signalfd(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    signalfd4(proc, ctx, [a[0], a[1], a[2], 0, 0, 0])
}

/// `sigaltstack(ss, old_ss)`: `old_ss` gets the stack as it was (SS_ONSTACK while running on
/// it, SS_DISABLE if none). EPERM to change it while on it, EINVAL for bad flags, ENOMEM for a
/// stack under MINSIGSTKSZ.
pub fn sigaltstack(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let sp = ctx.regs.rsp;
    let old = psig::altstack_of(proc, sp);
    if a[0] != 0 {
        let mut b = [0u8; AltStack::SIZE];
        proc.read_user(a[0], &mut b)?;
        psig::set_altstack(proc, sp, AltStack::decode(&b))?;
    }
    if a[1] != 0 {
        proc.write_user(a[1], &old.encode())?;
    }
    ok(0)
}

/// `rt_sigreturn()`: back to what the handler interrupted (a bad frame is SIGSEGV).
pub fn rt_sigreturn(proc: &Thread, ctx: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    if psig::sigreturn(proc, ctx).is_err() {
        let c = *ctx;
        psig::force_fault(proc, &c, cadence_abi::signal::SIGSEGV, 0, 13, 0);
    }
    Ok(Outcome::Restored)
}
