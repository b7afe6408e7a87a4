//! Signals of user processes: sending with their info ([`send`]), taking them on the way back
//! to user mode ([`before_user`]: handlers, default actions, group stops and exits, system
//! call restarts), the handler's frame and `rt_sigreturn` ([`sigreturn`]), and what a parent
//! is told when a child stops, continues or ends ([`notify_parent_exit`]).
//!
//! **Where the state is.** The pending bits are the scheduler's (`sched::process`: the
//! thread's and the process's), so that sending wakes the right thread and every
//! interruptible wait ends for a signal it does not block; each bit's info (`siginfo_t`) is
//! queued here, on the [`Thread`] or the [`Process`]: one entry per pending standard signal,
//! one per instance of a real-time signal (Linux's `sigpending` lists). A sender queues the
//! info first and then sets the bit; the thread that takes a signal takes its first entry and
//! clears the bit when no entry of that signal is left, both under the queue's lock, so a bit
//! is never set without its entries being findable. A signal sent without info (the kernel
//! shell's `kill`, the RT watchdog, the terminal's keys) is taken with `SI_KERNEL`, as
//! Linux's privileged kernel sends.
//!
//! **The frame** is Linux's `rt_sigframe` (`cadence_abi::signal`): the return address
//! (`sa_restorer`, glibc's `__restore_rt`, which calls `rt_sigreturn`), the `ucontext` with the
//! interrupted registers and mask, the `siginfo`, and the `fxsave` FPU state above it; the
//! handler starts with RDI = signal, RSI = &info, RDX = &ucontext and a clean FPU state.
//!
//! **Restarts** follow Linux's `arch/x86/kernel/signal.c`: a system call that a signal
//! interrupted returns one of the kernel-internal `ERESTART*` codes; if a handler runs,
//! ERESTARTSYS restarts with SA_RESTART and is EINTR without, ERESTARTNOHAND and
//! ERESTART_RESTARTBLOCK are EINTR, ERESTARTNOINTR restarts; if none runs, every one
//! restarts (the last through `restart_syscall`).

use super::{thread_of, Process, SigAction, Thread, SIG_DFL, SIG_IGN};
use crate::sched::task::{Task, TaskState, Tid};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_abi::signal::{
    self as abi, code, default_action, frame, frame_placement, next_signal, sa, sigbit, AltStack, DefaultAction, SigFields, SigFrame,
    SigInfo, SigRegs, SIGCHLD, SIGCONT, SIGRTMIN, SIGSTOP, SS_AUTODISARM, SS_DISABLE, SS_ONSTACK, UNBLOCKABLE,
};
use core::sync::atomic::{AtomicU64, Ordering};
use framework::user::{self, FxArea, UserContext};

/// Queued instances a process or thread may hold (Linux's RLIMIT_SIGPENDING counts per user,
/// 63,704 by default; a bounded queue per receiver keeps a flood from exhausting the heap).
const MAX_QUEUED: usize = 1024;

/// `restart_syscall`'s number.
const NR_RESTART_SYSCALL: u64 = 219;

/// RFLAGS bits a handler starts without: TF, DF, RF (Linux's `setup_rt_frame`).
const HANDLER_CLEARS_RFLAGS: u64 = 0x100 | 0x400 | 0x1_0000;

/// The signal a user exception raises (Linux `arch/x86/kernel/traps.c`).
pub fn signal_of(vector: u8) -> i32 {
    match vector {
        0 | 16 | 19 => super::SIGFPE,
        1 | 3 => super::SIGTRAP,
        6 => super::SIGILL,
        17 => super::SIGBUS,
        _ => super::SIGSEGV,
    }
}

/// Sends `sig` with `info` to the task `target` (a thread of a user process, or a kernel task),
/// to the thread alone or to its whole process. `sigqueue`: a queued real-time signal may be
/// refused (EAGAIN) when the receiver's queue is full; other sends then set the bit without
/// info, as Linux's `kill` does. Signal 0 sends nothing.
pub fn send(target: &Arc<Task>, sig: u32, info: SigInfo, whole_process: bool, sigqueue: bool) -> Result<(), Errno> {
    if sig == 0 {
        return Ok(());
    }
    if sig > 64 {
        return Err(Errno::EINVAL);
    }
    let b = sigbit(sig);
    if let Some(th) = thread_of(target) {
        let group = &target.process.group;
        let ignored = group.ignored.load(Ordering::Relaxed) & b != 0 && target.process.signals.blocked.load(Ordering::Relaxed) & b == 0;
        if !ignored && b & UNBLOCKABLE == 0 {
            let queue = if whole_process { &th.process.sigqueue } else { &th.sigqueue };
            let mut q = crate::sync::lock_with_room(queue, 1, |q| q);
            if sig >= SIGRTMIN {
                if q.len() < MAX_QUEUED {
                    q.push(info);
                } else if sigqueue {
                    return Err(Errno::EAGAIN);
                }
            } else if !q.iter().any(|i| i.signo == sig) {
                q.push(info);
            }
        }
    }
    let queued = if whole_process { crate::sched::signal::send_process(target, sig) } else { crate::sched::signal::send(target, sig) };
    if !queued {
        if let Some(th) = thread_of(target) {
            // Discarded (ignored meanwhile): its info goes too unless the bit is still set.
            let (queue, bits) = if whole_process {
                (&th.process.sigqueue, &target.process.group.pending)
            } else {
                (&th.sigqueue, &target.process.signals.pending)
            };
            let mut q = queue.lock();
            if bits.load(Ordering::Acquire) & b == 0 {
                q.retain(|i| i.signo != sig);
            }
        }
    }
    Ok(())
}

/// Takes the first entry of `sig` from `queue`, clearing its bit in `bits` when none is left.
fn take(queue: &crate::sync::IrqLock<Vec<SigInfo>>, bits: &AtomicU64, sig: u32) -> SigInfo {
    let mut q = queue.lock();
    let info = q.iter().position(|i| i.signo == sig).map(|i| q.remove(i));
    if !q.iter().any(|i| i.signo == sig) {
        bits.fetch_and(!sigbit(sig), Ordering::AcqRel);
    }
    info.unwrap_or(SigInfo::kill(sig, code::SI_KERNEL, 0))
}

/// The next signal the calling thread takes, among those it does not block (its own first,
/// then its process's), with its info.
fn dequeue(t: &Thread, me: &Task, blocked: u64) -> Option<(u32, SigInfo)> {
    let blocked = blocked & !UNBLOCKABLE;
    take_first(t, me, !blocked)
}

/// Takes the first pending signal of `set` (not blocked or blocked alike: `rt_sigtimedwait`),
/// with its info.
pub fn dequeue_from(t: &Thread, set: u64) -> Option<(u32, SigInfo)> {
    take_first(t, &crate::sched::current(), set)
}

/// What a signalfd of `set` reads (`fs::signalfd`, which `kernel_main` gives this): the calling
/// thread's first pending signal of `set`, as [`dequeue_from`] takes it. None outside a user
/// thread.
pub fn signalfd_dequeue(set: u64) -> Option<SigInfo> {
    let me = crate::sched::current();
    let t = thread_of(&me)?;
    take_first(&t, &me, set & !UNBLOCKABLE).map(|(_, info)| info)
}

/// The first pending signal of `set`, the thread's own before its process's, with its info; a
/// periodic timer behind it is re-armed now (`timers::on_dequeue`).
fn take_first(t: &Thread, me: &Task, set: u64) -> Option<(u32, SigInfo)> {
    let own = &me.process.signals.pending;
    let (sig, mut info) = if let Some(sig) = next_signal(own.load(Ordering::Acquire) & set) {
        (sig, take(&t.sigqueue, own, sig))
    } else {
        let shared = &me.process.group.pending;
        let sig = next_signal(shared.load(Ordering::Acquire) & set)?;
        (sig, take(&t.process.sigqueue, shared, sig))
    };
    if sig == abi::SIGALRM || info.code == code::SI_TIMER {
        super::timers::on_dequeue(me.process.tgid, sig, &mut info);
    }
    Some((sig, info))
}

/// The calling process ends with wait status `status` (`exit_group`, a fatal signal): the
/// first call sets it, and every thread leaves at its next return to user mode.
pub fn group_exit(status: i32) {
    let me = crate::sched::current();
    crate::sched::signal::exit_group(&me, status);
}

/// A fault's signal for the calling thread (Linux's `force_sig_fault`): blocked or ignored,
/// it is unblocked and its disposition reset, so it is taken now and kills unless a handler
/// catches it. A fatal one is reported on the console, as before handlers existed.
pub fn force_fault(t: &Thread, ctx: &UserContext, sig: u32, addr: u64, vector: u8, error: u64) {
    let me = crate::sched::current();
    let b = sigbit(sig);
    {
        let mut acts = t.sighand.lock_uninterruptible();
        let blocked = me.process.signals.blocked.load(Ordering::Relaxed) & b != 0;
        if acts[sig as usize].handler == SIG_IGN || blocked {
            acts[sig as usize] = SigAction::default();
            me.process.group.ignored.fetch_and(!b, Ordering::Relaxed);
            me.process.signals.blocked.fetch_and(!b, Ordering::Relaxed);
        }
        if acts[sig as usize].handler == SIG_DFL {
            let what = if vector == 14 {
                alloc::format!(" at {:#x} (rip {:#x}, {})", addr, ctx.regs.rip, if error & 2 != 0 { "write" } else { "read" })
            } else {
                alloc::format!(" (vector {}, rip {:#x})", vector, ctx.regs.rip)
            };
            crate::kprintln!("cadence: pid {}: {}{}", me.tid, super::signal_name(sig as i32), what);
        }
    }
    let code = match (sig, vector) {
        (11, 14) if error & 1 != 0 => code::SEGV_ACCERR,
        (11, 14) => code::SEGV_MAPERR,
        (7, _) => code::BUS_ADRERR,
        (4, _) => code::ILL_ILLOPN,
        (8, _) => code::FPE_INTDIV,
        (5, _) => code::TRAP_BRKPT,
        _ => code::SI_KERNEL,
    };
    let fields =
        if code == code::SI_KERNEL { SigFields::None } else { SigFields::Fault { addr: if vector == 14 { addr } else { ctx.regs.rip } } };
    let info = SigInfo { signo: sig, code, errno: 0, fields };
    let _ = send(&me, sig, info, false, false);
}

/// Before the calling thread returns to user mode: acts on its signals (module doc).
/// `syscall` is the number of the system call it returns from, if any (for restarts).
/// Returns true if the thread must end (its process is ending).
pub fn before_user(t: &Thread, ctx: &mut UserContext, syscall: Option<u64>) -> bool {
    let me = crate::sched::current();
    let group = me.process.group.clone();
    let mut restart = syscall.filter(|_| Errno::from_code(-(ctx.regs.rax as i64) as i32).is_some_and(|e| e.is_restart()));
    let mut delivered = false;
    loop {
        if group.must_leave(me.tid) {
            return true;
        }
        if group.continued.load(Ordering::Acquire)
            && group.continued.swap(false, Ordering::AcqRel)
            && t.process.stop_reported.swap(false, Ordering::AcqRel)
        {
            notify_parent_event(&t.process, me.process.tgid, Event::Continued);
        }
        if group.stop_signal.load(Ordering::Acquire) != 0 {
            park(t, &me);
            continue;
        }
        if !crate::sched::signal::interrupted(&me) {
            break;
        }
        let blocked = me.process.signals.blocked.load(Ordering::Relaxed);
        let Some((sig, info)) = dequeue(t, &me, blocked) else { break };
        let act = t.sighand.lock_uninterruptible()[sig as usize];
        if act.handler == SIG_IGN {
            continue;
        }
        if act.handler == SIG_DFL {
            match default_action(sig) {
                DefaultAction::Ignore | DefaultAction::Continue => continue,
                DefaultAction::Stop => {
                    if sig != SIGSTOP && pgrp_orphaned(&me) {
                        continue;
                    }
                    start_group_stop(t, &me, sig);
                    continue;
                }
                DefaultAction::Terminate | DefaultAction::Core => {
                    crate::sched::signal::exit_group(&me, sig as i32);
                    return true;
                }
            }
        }
        // A handler.
        if let Some(nr) = restart.take() {
            restart_for_handler(ctx, nr, act.flags);
        }
        let saved = t.saved_mask.lock().take();
        let mask_in_frame = saved.unwrap_or(blocked);
        if setup_frame(t, ctx, sig, info, &act, mask_in_frame).is_err() {
            // No room for the frame (or no restorer): Linux's `force_sigsegv`.
            crate::kprintln!("cadence: pid {}: bad signal frame for signal {} (rip {:#x})", me.tid, sig, ctx.regs.rip);
            crate::sched::signal::exit_group(&me, abi::SIGSEGV as i32);
            return true;
        }
        if act.flags & sa::RESETHAND != 0 {
            t.sighand.lock_uninterruptible()[sig as usize] = SigAction::default();
            if matches!(default_action(sig), DefaultAction::Ignore | DefaultAction::Continue) && sig != SIGSTOP {
                me.process.group.ignored.fetch_or(sigbit(sig), Ordering::Relaxed);
            }
        }
        let mut new_mask = blocked | act.mask;
        if act.flags & sa::NODEFER == 0 {
            new_mask |= sigbit(sig);
        }
        me.process.signals.blocked.store(new_mask & !UNBLOCKABLE, Ordering::Relaxed);
        delivered = true;
    }
    if let Some(nr) = restart {
        restart_without_handler(ctx, nr);
    }
    if !delivered {
        if let Some(old) = t.saved_mask.lock().take() {
            me.process.signals.blocked.store(old, Ordering::Relaxed);
        }
    }
    false
}

/// The restart rules when a handler runs (module doc).
fn restart_for_handler(ctx: &mut UserContext, nr: u64, flags: u64) {
    let r = &mut ctx.regs;
    match Errno::from_code(-(r.rax as i64) as i32) {
        Some(Errno::ERESTART_RESTARTBLOCK | Errno::ERESTARTNOHAND) => r.rax = Errno::EINTR.to_return(),
        Some(Errno::ERESTARTSYS) if flags & sa::RESTART == 0 => r.rax = Errno::EINTR.to_return(),
        Some(Errno::ERESTARTSYS | Errno::ERESTARTNOINTR) => {
            r.rax = nr;
            r.rip -= 2;
        }
        _ => {}
    }
}

/// The restart rules when no handler runs.
fn restart_without_handler(ctx: &mut UserContext, nr: u64) {
    let r = &mut ctx.regs;
    match Errno::from_code(-(r.rax as i64) as i32) {
        Some(Errno::ERESTARTNOHAND | Errno::ERESTARTSYS | Errno::ERESTARTNOINTR) => {
            r.rax = nr;
            r.rip -= 2;
        }
        Some(Errno::ERESTART_RESTARTBLOCK) => {
            r.rax = NR_RESTART_SYSCALL;
            r.rip -= 2;
        }
        _ => {}
    }
}

/// Writes the handler's frame and points the registers at the handler (module doc).
fn setup_frame(t: &Thread, ctx: &mut UserContext, sig: u32, info: SigInfo, act: &SigAction, mask: u64) -> Result<(), Errno> {
    if act.flags & sa::RESTORER == 0 {
        return Err(Errno::EFAULT);
    }
    let alt = *t.altstack.lock();
    let sp = ctx.regs.rsp;
    let on_alt = alt.contains(sp);
    let use_alt = act.flags & sa::ONSTACK != 0 && alt.flags & SS_DISABLE == 0 && alt.size != 0 && !on_alt;
    let top = if use_alt { alt.sp + alt.size } else { sp };
    let (frame_at, fp_at) = frame_placement(top).ok_or(Errno::EFAULT)?;
    let saved_alt = AltStack {
        flags: if alt.flags & SS_DISABLE != 0 {
            SS_DISABLE
        } else if on_alt {
            SS_ONSTACK
        } else {
            0
        } | (alt.flags & SS_AUTODISARM),
        ..alt
    };
    let r = &ctx.regs;
    let regs = SigRegs {
        r8: r.r8,
        r9: r.r9,
        r10: r.r10,
        r11: r.r11,
        r12: r.r12,
        r13: r.r13,
        r14: r.r14,
        r15: r.r15,
        rdi: r.rdi,
        rsi: r.rsi,
        rbp: r.rbp,
        rbx: r.rbx,
        rdx: r.rdx,
        rax: r.rax,
        rcx: r.rcx,
        rsp: r.rsp,
        rip: r.rip,
        rflags: r.rflags,
        err: if r.vector < 32 { r.error } else { 0 },
        trapno: if r.vector < 32 { r.vector } else { 0 },
        cr2: 0,
    };
    let f = SigFrame { restorer: act.restorer, regs, mask, altstack: saved_alt, fpstate: fp_at, info };
    let fx = user::fpu_snapshot();
    {
        let mm = t.mm_ref();
        mm.write(fp_at, fx.bytes())?;
        mm.write(frame_at, &f.encode())?;
    }
    if use_alt && alt.flags & SS_AUTODISARM != 0 {
        *t.altstack.lock() = AltStack { sp: 0, flags: SS_DISABLE, size: 0 };
    }
    let r = &mut ctx.regs;
    r.rip = act.handler;
    r.rsp = frame_at;
    r.rdi = u64::from(sig);
    r.rsi = frame_at + frame::INFO as u64;
    r.rdx = frame_at + frame::UC as u64;
    r.rax = 0;
    r.rflags &= !HANDLER_CLEARS_RFLAGS;
    user::set_fpu(&FxArea::initial());
    Ok(())
}

/// `rt_sigreturn()`: restores what the handler's frame saved (registers, mask, alternate
/// stack, FPU state). A frame that cannot be read is Linux's `badframe`: SIGSEGV.
pub fn sigreturn(t: &Thread, ctx: &mut UserContext) -> Result<(), Errno> {
    // A sleep a handler interrupted is not continued by a later `restart_syscall` (Linux's
    // restore_sigcontext: "Always make any pending restarted system calls return -EINTR").
    t.restart.lock().take();
    let frame_at = ctx.regs.rsp.wrapping_sub(8);
    let mut bytes = [0u8; frame::SIZE];
    let mut fx = [0u8; 512];
    let f = {
        let mm = t.mm_ref();
        mm.read(frame_at, &mut bytes)?;
        let f = SigFrame::decode(&bytes);
        if f.fpstate != 0 {
            mm.read(f.fpstate, &mut fx)?;
        }
        f
    };
    let r = &mut ctx.regs;
    let g = &f.regs;
    (r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15) = (g.r8, g.r9, g.r10, g.r11, g.r12, g.r13, g.r14, g.r15);
    (r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax, r.rcx, r.rsp, r.rip) = (g.rdi, g.rsi, g.rbp, g.rbx, g.rdx, g.rax, g.rcx, g.rsp, g.rip);
    // `execute` keeps only the flags user code may set.
    r.rflags = g.rflags;
    let me = crate::sched::current();
    me.process.signals.blocked.store(f.mask & !UNBLOCKABLE, Ordering::Relaxed);
    // Linux's `restore_altstack`: errors other than EFAULT are ignored.
    let _ = set_altstack(t, ctx.regs.rsp, f.altstack);
    if f.fpstate != 0 {
        user::set_fpu(&FxArea::from_user(&fx));
    } else {
        user::set_fpu(&FxArea::initial());
    }
    Ok(())
}

/// `sigaltstack`'s change: EPERM while running on the current one, EINVAL for bad flags,
/// ENOMEM for a stack under MINSIGSTKSZ.
pub fn set_altstack(t: &Thread, sp: u64, new: AltStack) -> Result<(), Errno> {
    let mut cur = t.altstack.lock();
    if cur.contains(sp) {
        return Err(Errno::EPERM);
    }
    let mode = new.flags & !SS_AUTODISARM;
    if mode != 0 && mode != SS_DISABLE && mode != SS_ONSTACK {
        return Err(Errno::EINVAL);
    }
    if mode == SS_DISABLE {
        *cur = AltStack { sp: 0, flags: SS_DISABLE, size: 0 };
    } else {
        if new.size < abi::MINSIGSTKSZ {
            return Err(Errno::ENOMEM);
        }
        *cur = AltStack { sp: new.sp, flags: new.flags & SS_AUTODISARM, size: new.size };
    }
    Ok(())
}

/// What `sigaltstack` reports as the current stack for a thread at `sp`.
pub fn altstack_of(t: &Thread, sp: u64) -> AltStack {
    let cur = *t.altstack.lock();
    let flags = if cur.flags & SS_DISABLE != 0 {
        SS_DISABLE
    } else if cur.contains(sp) {
        SS_ONSTACK
    } else {
        0
    };
    AltStack { flags: flags | (cur.flags & SS_AUTODISARM), ..cur }
}

/// Is the calling process's process group orphaned (no member's parent in another group of
/// the same session)? Stop signals from the terminal do not stop such a group (POSIX). This
/// looks at the calling process's own parent.
fn pgrp_orphaned(me: &Task) -> bool {
    let Some(t) = thread_of(me) else { return true };
    let Some(p) = &t.process.parent else { return true };
    let g = &me.process.group;
    match crate::sched::task::find(p.pid) {
        Some(parent) => {
            let pg = &parent.process.group;
            !(pg.sid.load(Ordering::Relaxed) == g.sid.load(Ordering::Relaxed)
                && pg.pgid.load(Ordering::Relaxed) != g.pgid.load(Ordering::Relaxed))
        }
        None => true,
    }
}

/// Starts a group stop by `sig` (if none is under way): every thread parks at its next check.
fn start_group_stop(_t: &Thread, me: &Arc<Task>, sig: u32) {
    let group = &me.process.group;
    if group.stop_signal.compare_exchange(0, sig, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        crate::sched::signal::for_each_member(group, |m| {
            if m.tid != me.tid {
                crate::sched::wake_up(m);
                crate::sched::kick_task(m);
            }
        });
    }
}

/// Parks the calling thread in its process's group stop until SIGCONT (or SIGKILL); the last
/// thread to park tells the parent.
fn park(t: &Thread, me: &Arc<Task>) {
    let group = &me.process.group;
    let process = &t.process;
    // Stopped before the parent hears of it (Linux's `do_signal_stop` sets TASK_STOPPED
    // before `do_notify_parent_cldstop`): a parent that reads /proc after `waitid` sees 'T'.
    me.set_state(TaskState::Stopped);
    let stopped = process.stopped.fetch_add(1, Ordering::AcqRel) + 1;
    if stopped >= process.live.load(Ordering::Acquire) && !process.stop_reported.swap(true, Ordering::AcqRel) {
        let sig = group.stop_signal.load(Ordering::Acquire);
        if sig != 0 {
            notify_parent_event(process, me.process.tgid, Event::Stopped(sig));
        }
    }
    loop {
        me.set_state(TaskState::Stopped);
        if group.stop_signal.load(Ordering::Acquire) == 0 || group.exit_status().is_some() {
            break;
        }
        crate::sched::schedule();
    }
    me.set_state(TaskState::Running);
    process.stopped.fetch_sub(1, Ordering::AcqRel);
}

/// What a parent hears of a child.
#[derive(Clone, Copy)]
enum Event {
    Stopped(u32),
    Continued,
}

/// SIGCHLD to the parent process of `process` (pid `pid`) with `info`, unless its disposition
/// discards it.
fn signal_parent(parent: Tid, sig: u32, info: SigInfo) {
    if sig == 0 {
        return;
    }
    if let Some(p) = crate::sched::task::find(parent) {
        let _ = send(&p, sig, info, true, false);
    }
}

/// Tells the parent that the process stopped or continued: its record (for `wait4` with
/// WUNTRACED / WCONTINUED) and SIGCHLD, unless the parent's SIGCHLD has SA_NOCLDSTOP.
fn notify_parent_event(process: &Process, pid: Tid, ev: Event) {
    let Some(p) = &process.parent else { return };
    {
        let mut st = p.record.state.lock();
        match ev {
            Event::Stopped(sig) => {
                st.stopped = Some(sig);
                st.continued = false;
            }
            Event::Continued => {
                st.stopped = None;
                st.continued = true;
            }
        }
    }
    p.family.changed.wake_all();
    let nocldstop = p.sighand.upgrade().is_some_and(|h| h.lock_uninterruptible()[SIGCHLD as usize].flags & sa::NOCLDSTOP != 0);
    if !nocldstop {
        let (c, status) = match ev {
            Event::Stopped(sig) => (code::CLD_STOPPED, sig as i32),
            Event::Continued => (code::CLD_CONTINUED, SIGCONT as i32),
        };
        signal_parent(
            p.pid,
            SIGCHLD,
            SigInfo { signo: SIGCHLD, code: c, errno: 0, fields: SigFields::Child { pid, uid: 0, status, utime: 0, stime: 0 } },
        );
    }
}

/// Tells the parent that the process ended with wait status `status`: its record (or none,
/// if the parent ignores SIGCHLD or set SA_NOCLDWAIT: Linux reaps such a child at once) and
/// its exit signal.
pub fn notify_parent_exit(process: &Process, pid: Tid, status: i32) {
    let Some(p) = &process.parent else { return };
    let act = p.sighand.upgrade().map(|h| h.lock_uninterruptible()[SIGCHLD as usize]);
    // A parent that is gone cannot wait either (init reaps orphans on Linux).
    let autoreap = act.is_none() || (p.exit_signal == SIGCHLD && act.is_some_and(|a| a.handler == SIG_IGN || a.flags & sa::NOCLDWAIT != 0));
    {
        // Under the parent's children lock, against the parent ending meanwhile (`orphaned`).
        let mut children = p.family.children.lock_uninterruptible();
        if autoreap || p.family.orphaned.load(Ordering::Acquire) {
            super::reaped(&p.record);
            children.retain(|r| !Arc::ptr_eq(r, &p.record));
        } else {
            p.record.state.lock().exit = Some(status);
        }
    }
    // The signal before the wake-up, as Linux's `do_notify_parent` (signal, then
    // `__wake_up_parent`): a parent sleeping in `wait` returns with SIGCHLD already pending, so
    // its handler runs before `wait`'s return is seen (conform-signal's "SIGCHLD handler ran"
    // read 0 one run in five with the wake-up first).
    let (c, st) = if status & 0x7f != 0 { (code::CLD_KILLED, status & 0x7f) } else { (code::CLD_EXITED, (status >> 8) & 0xff) };
    // The process's own times in clock ticks, its ended threads' included (Linux's
    // `do_notify_parent`: the leader's and `signal->utime`, not the children's).
    let (utime, stime) = crate::sched::cputimer::times(&crate::sched::current().process.group);
    let (utime, stime) = (crate::sched::rusage::clock_t(utime), crate::sched::rusage::clock_t(stime));
    signal_parent(
        p.pid,
        p.exit_signal,
        SigInfo { signo: p.exit_signal, code: c, errno: 0, fields: SigFields::Child { pid, uid: 0, status: st, utime, stime } },
    );
    p.family.changed.wake_all();
}

/// Ends every other thread of the calling process before an `execve` replaces its memory
/// (Linux's `de_thread`), and waits until they are gone. If the process is ending meanwhile,
/// the caller leaves at its next check.
pub fn end_other_threads(t: &Thread, me: &Arc<Task>) {
    let group = &me.process.group;
    if t.process.live.load(Ordering::Acquire) <= 1 {
        return;
    }
    group.exec_tid.store(me.tid, Ordering::Release);
    crate::sched::signal::for_each_member(group, |m| {
        if m.tid != me.tid {
            let _ = m.transition(TaskState::Stopped, TaskState::Sleeping);
            crate::sched::wake_up(m);
            crate::sched::kick_task(m);
        }
    });
    t.process.all_gone.wait_until_uninterruptible(|| t.process.live.load(Ordering::Acquire) <= 1 || group.exit_status().is_some());
    group.exec_tid.store(0, Ordering::Release);
}

/// `execve`'s part for signals: handlers go back to SIG_DFL (ignored signals stay ignored),
/// and the ignored set follows (default-ignore signals are ignored again).
pub fn reset_handlers_for_exec(t: &Thread, me: &Task) {
    let mut acts = t.sighand.lock_uninterruptible();
    let mut ignored = 0;
    for (sig, act) in acts.iter_mut().enumerate().skip(1) {
        if act.handler > SIG_IGN {
            *act = SigAction::default();
        } else {
            act.flags = 0;
            act.mask = 0;
        }
        let sig = sig as u32;
        let dfl_ignores = matches!(default_action(sig), DefaultAction::Ignore | DefaultAction::Continue);
        if act.handler == SIG_IGN || (act.handler == SIG_DFL && dfl_ignores) {
            ignored |= sigbit(sig);
        }
    }
    me.process.group.ignored.store(ignored, Ordering::Relaxed);
}

/// The ignored set after `rt_sigaction` changed `sig` to `act`.
pub fn update_ignored(me: &Task, sig: u32, act: &SigAction) {
    let dfl_ignores = matches!(default_action(sig), DefaultAction::Ignore | DefaultAction::Continue);
    let b = sigbit(sig);
    if act.handler == SIG_IGN || (act.handler == SIG_DFL && dfl_ignores) {
        me.process.group.ignored.fetch_or(b, Ordering::Relaxed);
        // Pending instances are discarded (Linux's `do_sigaction`).
        if let Some(t) = thread_of(me) {
            let mut q = t.process.sigqueue.lock();
            q.retain(|i| i.signo != sig);
            me.process.group.pending.fetch_and(!b, Ordering::AcqRel);
        }
        crate::sched::signal::for_each_member(&me.process.group, |m| {
            if let Some(t) = thread_of(m) {
                let mut q = t.sigqueue.lock();
                q.retain(|i| i.signo != sig);
                m.process.signals.pending.fetch_and(!b, Ordering::AcqRel);
            }
        });
    } else {
        me.process.group.ignored.fetch_and(!b, Ordering::Relaxed);
    }
}

/// Is `sig` a valid signal for the `kill` family (0..=64)?
pub fn valid(sig: u64) -> bool {
    sig <= 64
}

/// The info of a signal sent by the calling process with `kill` (`SI_USER`) or `tgkill`
/// (`SI_TKILL`): its pid and real uid (Linux's `prepare_kill_siginfo`).
pub fn info_from_me(sig: u32, c: i32) -> SigInfo {
    let me = crate::sched::current();
    let uid = thread_of(&me).map_or(0, |t| t.process.creds.lock_uninterruptible().uid[0]);
    SigInfo { fields: SigFields::Kill { pid: me.process.tgid, uid, value: 0 }, ..SigInfo::kill(sig, c, 0) }
}
