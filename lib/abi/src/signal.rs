//! Signals as Linux's x86_64 ABI has them: numbers, sets, default actions, `siginfo_t`, and the
//! frame a handler runs on (`struct rt_sigframe`: the return address, a `ucontext` with the
//! `sigcontext` registers and the signal mask, the `siginfo`, and the FPU state below it).
//! The kernel builds a frame with [`SigFrame::encode`] and reads one back in `rt_sigreturn`
//! with [`SigFrame::decode`]; both are pure, so the host tests them.
//!
//! Sources: Linux `arch/x86/include/uapi/asm/sigcontext.h`, `include/uapi/asm-generic/
//! siginfo.h`, `arch/x86/kernel/signal.c` (`get_sigframe`, `setup_rt_frame`,
//! `restore_sigcontext`), `kernel/signal.c` (`sig_kernel_*` tables).

/// Hangup.
pub const SIGHUP: u32 = 1;
/// Interrupt (^C).
pub const SIGINT: u32 = 2;
/// Quit (^\).
pub const SIGQUIT: u32 = 3;
/// Illegal instruction.
pub const SIGILL: u32 = 4;
/// Trace trap.
pub const SIGTRAP: u32 = 5;
/// Abort.
pub const SIGABRT: u32 = 6;
/// Bus error.
pub const SIGBUS: u32 = 7;
/// Floating-point exception.
pub const SIGFPE: u32 = 8;
/// Kill (cannot be caught, blocked or ignored).
pub const SIGKILL: u32 = 9;
/// User signal 1.
pub const SIGUSR1: u32 = 10;
/// Segmentation violation.
pub const SIGSEGV: u32 = 11;
/// User signal 2.
pub const SIGUSR2: u32 = 12;
/// Broken pipe.
pub const SIGPIPE: u32 = 13;
/// Alarm clock.
pub const SIGALRM: u32 = 14;
/// Termination.
pub const SIGTERM: u32 = 15;
/// Stack fault (unused on x86).
pub const SIGSTKFLT: u32 = 16;
/// Child stopped, continued or ended.
pub const SIGCHLD: u32 = 17;
/// Continue.
pub const SIGCONT: u32 = 18;
/// Stop (cannot be caught, blocked or ignored).
pub const SIGSTOP: u32 = 19;
/// Terminal stop (^Z).
pub const SIGTSTP: u32 = 20;
/// Background read from the terminal.
pub const SIGTTIN: u32 = 21;
/// Background write to the terminal.
pub const SIGTTOU: u32 = 22;
/// Urgent socket data.
pub const SIGURG: u32 = 23;
/// CPU time limit (RLIMIT_CPU, RLIMIT_RTTIME's soft limit).
pub const SIGXCPU: u32 = 24;
/// File size limit.
pub const SIGXFSZ: u32 = 25;
/// Virtual alarm clock.
pub const SIGVTALRM: u32 = 26;
/// Profiling alarm clock.
pub const SIGPROF: u32 = 27;
/// Window size change.
pub const SIGWINCH: u32 = 28;
/// I/O now possible.
pub const SIGIO: u32 = 29;
/// Power failure.
pub const SIGPWR: u32 = 30;
/// Bad system call.
pub const SIGSYS: u32 = 31;
/// The first real-time signal.
pub const SIGRTMIN: u32 = 32;
/// The last signal (`_NSIG`).
pub const SIGRTMAX: u32 = 64;

/// A set of signals as the kernel's `sigset_t` holds one: bit `n - 1` is signal `n`.
pub type SigSet = u64;

/// The set holding only `sig` (1..=64).
pub const fn sigbit(sig: u32) -> SigSet {
    1u64 << (sig - 1)
}

/// SIGKILL and SIGSTOP: never blocked, caught or ignored.
pub const UNBLOCKABLE: SigSet = sigbit(SIGKILL) | sigbit(SIGSTOP);

/// What a signal does when its disposition is `SIG_DFL` (Linux `kernel/signal.c`'s tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    /// End the process.
    Terminate,
    /// End the process (a core dump on Linux; Cadence writes none).
    Core,
    /// Nothing.
    Ignore,
    /// Stop the process.
    Stop,
    /// Continue a stopped process (what is done at sending time); else nothing.
    Continue,
}

/// The default action of `sig` (1..=64).
pub const fn default_action(sig: u32) -> DefaultAction {
    match sig {
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ | SIGSYS => DefaultAction::Core,
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ignore,
        SIGCONT => DefaultAction::Continue,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        _ => DefaultAction::Terminate,
    }
}

/// Signals whose default action stops the process.
pub const STOP_SIGNALS: SigSet = sigbit(SIGSTOP) | sigbit(SIGTSTP) | sigbit(SIGTTIN) | sigbit(SIGTTOU);

/// Signals a fault raises: dequeued before the others (Linux's `SYNCHRONOUS_MASK`).
pub const SYNCHRONOUS: SigSet = sigbit(SIGSEGV) | sigbit(SIGBUS) | sigbit(SIGILL) | sigbit(SIGTRAP) | sigbit(SIGFPE) | sigbit(SIGSYS);

/// The next signal to take from `pending` (the caller masked the blocked ones out): a
/// synchronous one first, then the lowest number, as Linux's `next_signal`.
pub fn next_signal(pending: SigSet) -> Option<u32> {
    if pending == 0 {
        return None;
    }
    let sync = pending & SYNCHRONOUS;
    let pick = if sync != 0 { sync } else { pending };
    Some(pick.trailing_zeros() + 1)
}

/// `sa_flags` bits.
pub mod sa {
    /// Do not send SIGCHLD when children stop or continue.
    pub const NOCLDSTOP: u64 = 1;
    /// Do not create zombies (children are reaped at once).
    pub const NOCLDWAIT: u64 = 2;
    /// The handler takes (sig, info, ucontext).
    pub const SIGINFO: u64 = 4;
    /// `sa_restorer` is valid (glibc always sets it on x86_64).
    pub const RESTORER: u64 = 0x0400_0000;
    /// Run the handler on the alternate stack.
    pub const ONSTACK: u64 = 0x0800_0000;
    /// Restart system calls the handler interrupted.
    pub const RESTART: u64 = 0x1000_0000;
    /// Do not block the signal during its handler.
    pub const NODEFER: u64 = 0x4000_0000;
    /// Reset the disposition to `SIG_DFL` on delivery.
    pub const RESETHAND: u64 = 0x8000_0000;
}

/// `si_code` values.
pub mod code {
    /// Sent by `kill`.
    pub const SI_USER: i32 = 0;
    /// Sent by the kernel.
    pub const SI_KERNEL: i32 = 0x80;
    /// Sent by `sigqueue` / `rt_sigqueueinfo`.
    pub const SI_QUEUE: i32 = -1;
    /// A POSIX timer expired.
    pub const SI_TIMER: i32 = -2;
    /// A message arrived on an empty POSIX message queue (`mq_notify`).
    pub const SI_MESGQ: i32 = -3;
    /// Sent by `tkill` / `tgkill`.
    pub const SI_TKILL: i32 = -6;
    /// SIGCHLD: the child exited.
    pub const CLD_EXITED: i32 = 1;
    /// SIGCHLD: the child was killed.
    pub const CLD_KILLED: i32 = 2;
    /// SIGCHLD: the child was killed and dumped core.
    pub const CLD_DUMPED: i32 = 3;
    /// SIGCHLD: the child stopped.
    pub const CLD_STOPPED: i32 = 5;
    /// SIGCHLD: the child continued.
    pub const CLD_CONTINUED: i32 = 6;
    /// SIGSEGV: address not mapped.
    pub const SEGV_MAPERR: i32 = 1;
    /// SIGSEGV: no permission for the access.
    pub const SEGV_ACCERR: i32 = 2;
    /// SIGBUS: nonexistent physical address (out of memory backing a page).
    pub const BUS_ADRERR: i32 = 2;
    /// SIGILL: illegal opcode.
    pub const ILL_ILLOPN: i32 = 2;
    /// SIGFPE: integer divide by zero.
    pub const FPE_INTDIV: i32 = 1;
    /// SIGTRAP: breakpoint.
    pub const TRAP_BRKPT: i32 = 1;
}

/// What `siginfo_t` carries, by the union member its `si_code` selects (x86_64 layout: signo,
/// errno, code at 0, 4, 8; the union at 16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigInfo {
    /// `si_signo`.
    pub signo: u32,
    /// `si_code`.
    pub code: i32,
    /// `si_errno`.
    pub errno: i32,
    /// The union's fields.
    pub fields: SigFields,
}

/// The union of `siginfo_t`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SigFields {
    /// Nothing (all zero).
    #[default]
    None,
    /// `kill`, `tkill`, `sigqueue`: the sender's pid and uid, and (for sigqueue) the value.
    Kill {
        /// `si_pid`.
        pid: u32,
        /// `si_uid`.
        uid: u32,
        /// `si_value` (sigqueue; 0 for kill).
        value: u64,
    },
    /// A POSIX timer: its id, overrun count and value.
    Timer {
        /// `si_tid` (the timer id).
        tid: i32,
        /// `si_overrun`.
        overrun: i32,
        /// `si_value`.
        value: u64,
    },
    /// SIGCHLD: the child's pid, uid, status (exit code or signal) and times.
    Child {
        /// `si_pid`.
        pid: u32,
        /// `si_uid`.
        uid: u32,
        /// `si_status`.
        status: i32,
        /// `si_utime` (clock ticks).
        utime: u64,
        /// `si_stime` (clock ticks).
        stime: u64,
    },
    /// A fault: the address.
    Fault {
        /// `si_addr`.
        addr: u64,
    },
}

/// Bytes in a `siginfo_t`.
pub const SIGINFO_SIZE: usize = 128;

impl SigInfo {
    /// The info of a signal sent by `kill` from `pid` (or by the kernel if `pid` is 0 and
    /// `code` is `SI_KERNEL`).
    pub const fn kill(signo: u32, code: i32, pid: u32) -> SigInfo {
        SigInfo { signo, code, errno: 0, fields: SigFields::Kill { pid, uid: 0, value: 0 } }
    }

    /// The 128 bytes user space reads.
    pub fn encode(&self) -> [u8; SIGINFO_SIZE] {
        let mut b = [0u8; SIGINFO_SIZE];
        put32(&mut b, 0, self.signo);
        put32(&mut b, 4, self.errno as u32);
        put32(&mut b, 8, self.code as u32);
        match self.fields {
            SigFields::None => {}
            SigFields::Kill { pid, uid, value } => {
                put32(&mut b, 16, pid);
                put32(&mut b, 20, uid);
                put64(&mut b, 24, value);
            }
            SigFields::Timer { tid, overrun, value } => {
                put32(&mut b, 16, tid as u32);
                put32(&mut b, 20, overrun as u32);
                put64(&mut b, 24, value);
            }
            SigFields::Child { pid, uid, status, utime, stime } => {
                put32(&mut b, 16, pid);
                put32(&mut b, 20, uid);
                put32(&mut b, 24, status as u32);
                put64(&mut b, 32, utime);
                put64(&mut b, 40, stime);
            }
            SigFields::Fault { addr } => put64(&mut b, 16, addr),
        }
        b
    }

    /// A `siginfo_t` from user space (`rt_sigqueueinfo`): the sender's fields as the `kill`
    /// member (pid, uid, value), which is how Linux copies an unknown code through.
    pub fn decode_queued(b: &[u8; SIGINFO_SIZE]) -> SigInfo {
        SigInfo {
            signo: get32(b, 0),
            errno: get32(b, 4) as i32,
            code: get32(b, 8) as i32,
            fields: SigFields::Kill { pid: get32(b, 16), uid: get32(b, 20), value: get64(b, 24) },
        }
    }

    /// The 128 bytes of the `struct signalfd_siginfo` a signalfd `read` returns for this info
    /// (Linux's `signalfd_copyinfo`): signo, errno and code, then the members of the union
    /// member [`siginfo_layout`] picks, read from `siginfo_t` as Linux reads them; the rest zero.
    pub fn encode_signalfd(&self) -> [u8; SIGNALFD_SIGINFO_SIZE] {
        let si = self.encode();
        let mut b = [0u8; SIGNALFD_SIGINFO_SIZE];
        put32(&mut b, ssi::SIGNO, self.signo);
        put32(&mut b, ssi::ERRNO, self.errno as u32);
        put32(&mut b, ssi::CODE, self.code as u32);
        // `siginfo_t`'s union members (x86_64): pid / tid / band / addr / call_addr at 16, uid /
        // overrun at 20, the value / status / fd / addr_lsb / syscall at 24, arch at 28, the
        // child's times at 32 and 40.
        match siginfo_layout(self.signo, self.code) {
            Layout::Kill => {
                put32(&mut b, ssi::PID, get32(&si, 16));
                put32(&mut b, ssi::UID, get32(&si, 20));
            }
            Layout::Timer => {
                put32(&mut b, ssi::TID, get32(&si, 16));
                put32(&mut b, ssi::OVERRUN, get32(&si, 20));
                put64(&mut b, ssi::PTR, get64(&si, 24));
                put32(&mut b, ssi::INT, get32(&si, 24));
            }
            Layout::Poll => {
                put32(&mut b, ssi::BAND, get32(&si, 16));
                put32(&mut b, ssi::FD, get32(&si, 24));
            }
            Layout::Fault => put64(&mut b, ssi::ADDR, get64(&si, 16)),
            Layout::FaultMceErr => {
                put64(&mut b, ssi::ADDR, get64(&si, 16));
                b[ssi::ADDR_LSB..ssi::ADDR_LSB + 2].copy_from_slice(&si[24..26]);
            }
            Layout::Child => {
                put32(&mut b, ssi::PID, get32(&si, 16));
                put32(&mut b, ssi::UID, get32(&si, 20));
                put32(&mut b, ssi::STATUS, get32(&si, 24));
                put64(&mut b, ssi::UTIME, get64(&si, 32));
                put64(&mut b, ssi::STIME, get64(&si, 40));
            }
            Layout::Rt => {
                put32(&mut b, ssi::PID, get32(&si, 16));
                put32(&mut b, ssi::UID, get32(&si, 20));
                put64(&mut b, ssi::PTR, get64(&si, 24));
                put32(&mut b, ssi::INT, get32(&si, 24));
            }
            Layout::Sys => {
                put64(&mut b, ssi::CALL_ADDR, get64(&si, 16));
                put32(&mut b, ssi::SYSCALL, get32(&si, 24));
                put32(&mut b, ssi::ARCH, get32(&si, 28));
            }
        }
        b
    }
}

/// Bytes in a `struct signalfd_siginfo`.
pub const SIGNALFD_SIGINFO_SIZE: usize = 128;

/// Offsets of `struct signalfd_siginfo`'s members (`include/uapi/linux/signalfd.h`).
pub mod ssi {
    #![allow(missing_docs)]
    pub const SIGNO: usize = 0;
    pub const ERRNO: usize = 4;
    pub const CODE: usize = 8;
    pub const PID: usize = 12;
    pub const UID: usize = 16;
    pub const FD: usize = 20;
    pub const TID: usize = 24;
    pub const BAND: usize = 28;
    pub const OVERRUN: usize = 32;
    pub const TRAPNO: usize = 36;
    pub const STATUS: usize = 40;
    pub const INT: usize = 44;
    pub const PTR: usize = 48;
    pub const UTIME: usize = 56;
    pub const STIME: usize = 64;
    pub const ADDR: usize = 72;
    pub const ADDR_LSB: usize = 80;
    pub const SYSCALL: usize = 84;
    pub const CALL_ADDR: usize = 88;
    pub const ARCH: usize = 96;
}

/// Which member of `siginfo_t`'s union an info uses (Linux's `enum siginfo_layout`, as far as
/// x86_64 has them; the fault variants signalfd treats alike are one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `kill`: pid, uid.
    Kill,
    /// A POSIX timer: tid, overrun, value.
    Timer,
    /// SIGPOLL's: band, fd.
    Poll,
    /// A fault: the address.
    Fault,
    /// A machine-check SIGBUS: the address and its least significant bit.
    FaultMceErr,
    /// SIGCHLD: pid, uid, status, times.
    Child,
    /// `sigqueue` and the other negative codes: pid, uid, value.
    Rt,
    /// SIGSYS (seccomp): call address, syscall, arch.
    Sys,
}

/// The union member of a signal's info with code `code` (Linux 6.1's `siginfo_layout`): a
/// code between SI_USER and SI_KERNEL (exclusive) is the signal's own (faults, SIGCHLD,
/// SIGPOLL, SIGSYS) up to its highest code, else SIGPOLL's up to `NSIGPOLL`; SI_TIMER is the
/// timer's, another negative code `Rt`; everything else `Kill`.
pub fn siginfo_layout(sig: u32, code: i32) -> Layout {
    const NSIGPOLL: i32 = 6;
    if code > code::SI_USER && code < code::SI_KERNEL {
        // The highest code of each signal with its own (NSIGILL, NSIGFPE, ...).
        let own = match sig {
            SIGILL => Some((11, Layout::Fault)),
            SIGFPE => Some((15, Layout::Fault)),
            SIGSEGV => Some((9, Layout::Fault)),
            SIGBUS => Some((5, Layout::Fault)),
            SIGTRAP => Some((6, Layout::Fault)),
            SIGCHLD => Some((6, Layout::Child)),
            SIGIO => Some((NSIGPOLL, Layout::Poll)),
            SIGSYS => Some((2, Layout::Sys)),
            _ => None,
        };
        match own {
            // BUS_MCEERR_AR, BUS_MCEERR_AO.
            Some((limit, _)) if code <= limit && sig == SIGBUS && (4..=5).contains(&code) => Layout::FaultMceErr,
            Some((limit, layout)) if code <= limit => layout,
            _ if code <= NSIGPOLL => Layout::Poll,
            _ => Layout::Kill,
        }
    } else if code == code::SI_TIMER {
        Layout::Timer
    } else if code == SI_SIGIO {
        Layout::Poll
    } else if code < 0 {
        Layout::Rt
    } else {
        Layout::Kill
    }
}

/// `si_code` of a SIGIO queued by the I/O layer.
const SI_SIGIO: i32 = -5;

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn get64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// `stack_t` (`sigaltstack`): base, flags, size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltStack {
    /// `ss_sp`.
    pub sp: u64,
    /// `ss_flags` (`SS_ONSTACK`, `SS_DISABLE`, `SS_AUTODISARM`).
    pub flags: u32,
    /// `ss_size`.
    pub size: u64,
}

/// `ss_flags`: the thread is running on the alternate stack.
pub const SS_ONSTACK: u32 = 1;
/// `ss_flags`: no alternate stack.
pub const SS_DISABLE: u32 = 2;
/// `ss_flags`: disarm the stack while a handler runs on it.
pub const SS_AUTODISARM: u32 = 1 << 31;
/// The smallest alternate stack `sigaltstack` accepts (x86_64 `MINSIGSTKSZ`).
pub const MINSIGSTKSZ: u64 = 2048;

impl AltStack {
    /// Bytes of a `stack_t`.
    pub const SIZE: usize = 24;

    /// The 24 bytes of a `stack_t`.
    pub fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        put64(&mut b, 0, self.sp);
        put32(&mut b, 8, self.flags);
        put64(&mut b, 16, self.size);
        b
    }

    /// A `stack_t` from its bytes.
    pub fn decode(b: &[u8; 24]) -> AltStack {
        AltStack { sp: get64(b, 0), flags: get32(b, 8), size: get64(b, 16) }
    }

    /// Is `sp` on this stack (Linux `on_sig_stack`: the top itself is not)?
    pub fn contains(&self, sp: u64) -> bool {
        self.flags & SS_DISABLE == 0 && self.size != 0 && sp > self.sp && sp - self.sp <= self.size
    }
}

/// The registers a signal frame saves (`struct sigcontext`'s general part).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigRegs {
    /// R8..R15.
    pub r8: u64,
    #[allow(missing_docs)]
    pub r9: u64,
    #[allow(missing_docs)]
    pub r10: u64,
    #[allow(missing_docs)]
    pub r11: u64,
    #[allow(missing_docs)]
    pub r12: u64,
    #[allow(missing_docs)]
    pub r13: u64,
    #[allow(missing_docs)]
    pub r14: u64,
    #[allow(missing_docs)]
    pub r15: u64,
    #[allow(missing_docs)]
    pub rdi: u64,
    #[allow(missing_docs)]
    pub rsi: u64,
    #[allow(missing_docs)]
    pub rbp: u64,
    #[allow(missing_docs)]
    pub rbx: u64,
    #[allow(missing_docs)]
    pub rdx: u64,
    #[allow(missing_docs)]
    pub rax: u64,
    #[allow(missing_docs)]
    pub rcx: u64,
    #[allow(missing_docs)]
    pub rsp: u64,
    #[allow(missing_docs)]
    pub rip: u64,
    /// RFLAGS.
    pub rflags: u64,
    /// The exception's error code (0 for a signal not from a fault).
    pub err: u64,
    /// The exception's vector.
    pub trapno: u64,
    /// CR2 of a page fault.
    pub cr2: u64,
}

/// Bytes of the FPU state (`fxsave`'s 512; no XSAVE state: Cadence keeps CR4.OSXSAVE off).
pub const FPSTATE_SIZE: u64 = 512;

/// `uc_flags`: the `ss` field of the sigcontext is valid, and sigreturn restores it strictly.
const UC_SIGCONTEXT_SS: u64 = 0x2;
const UC_STRICT_RESTORE_SS: u64 = 0x4;

/// The layout of `struct rt_sigframe` on x86_64: the return address at 0, the `ucontext` at 8
/// (flags, link, `uc_stack` at 16, `uc_mcontext` at 40, `uc_sigmask` at 296), the `siginfo`
/// at 312.
pub mod frame {
    /// `uc` in the frame.
    pub const UC: usize = 8;
    /// `uc.uc_stack`.
    pub const UC_STACK: usize = UC + 16;
    /// `uc.uc_mcontext`.
    pub const MCONTEXT: usize = UC + 40;
    /// `uc_mcontext.fpstate` (a pointer).
    pub const FPSTATE_PTR: usize = MCONTEXT + 184;
    /// `uc.uc_sigmask`.
    pub const SIGMASK: usize = UC + 296;
    /// `info`.
    pub const INFO: usize = UC + 304;
    /// The whole frame (before the FPU state, which is below it... above: see `SigFrame`).
    pub const SIZE: usize = INFO + super::SIGINFO_SIZE;
}

/// A signal frame as the kernel writes it and `rt_sigreturn` reads it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigFrame {
    /// Where the handler returns: `sa_restorer` (glibc's `__restore_rt`, which calls
    /// `rt_sigreturn`).
    pub restorer: u64,
    /// The interrupted registers.
    pub regs: SigRegs,
    /// The mask to restore.
    pub mask: SigSet,
    /// The alternate stack as it was.
    pub altstack: AltStack,
    /// Where the FPU state is (the frame's own copy, 64-byte aligned, above the frame).
    pub fpstate: u64,
    /// The signal's info.
    pub info: SigInfo,
}

/// Where a frame goes: `(frame address, fpstate address)` for a thread whose stack pointer
/// is `sp` (already switched to the alternate stack's top if the handler runs there), as
/// Linux's `get_sigframe`: below the 128-byte red zone, the FPU state 64-byte aligned, then
/// the frame so that the handler starts as if called (RSP + 8 16-byte aligned).
pub fn frame_placement(sp: u64) -> Option<(u64, u64)> {
    let sp = sp.checked_sub(128)?;
    let fpstate = sp.checked_sub(FPSTATE_SIZE)? & !63;
    let frame = (fpstate.checked_sub(frame::SIZE as u64)? & !15).checked_sub(8)?;
    Some((frame, fpstate))
}

impl SigFrame {
    /// The frame's bytes (`frame::SIZE`), to write at the frame address.
    pub fn encode(&self) -> [u8; frame::SIZE] {
        let mut b = [0u8; frame::SIZE];
        put64(&mut b, 0, self.restorer);
        put64(&mut b, frame::UC, UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
        b[frame::UC_STACK..frame::UC_STACK + 24].copy_from_slice(&self.altstack.encode());
        let r = &self.regs;
        let gprs =
            [r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax, r.rcx, r.rsp, r.rip, r.rflags];
        for (i, v) in gprs.iter().enumerate() {
            put64(&mut b, frame::MCONTEXT + 8 * i, *v);
        }
        // cs, gs, fs, ss: Linux's user selectors (__USER_CS, 0, 0, __USER_DS).
        let m = frame::MCONTEXT + 144;
        b[m..m + 2].copy_from_slice(&0x33u16.to_le_bytes());
        b[m + 6..m + 8].copy_from_slice(&0x2bu16.to_le_bytes());
        put64(&mut b, frame::MCONTEXT + 152, r.err);
        put64(&mut b, frame::MCONTEXT + 160, r.trapno);
        put64(&mut b, frame::MCONTEXT + 168, self.mask); // oldmask
        put64(&mut b, frame::MCONTEXT + 176, r.cr2);
        put64(&mut b, frame::FPSTATE_PTR, self.fpstate);
        put64(&mut b, frame::SIGMASK, self.mask);
        b[frame::INFO..frame::INFO + SIGINFO_SIZE].copy_from_slice(&self.info.encode());
        b
    }

    /// What `rt_sigreturn` restores from the frame's bytes (as the handler may have changed
    /// them): registers, mask, alternate stack and the FPU state's address. The restorer and
    /// info are not read back.
    pub fn decode(b: &[u8; frame::SIZE]) -> SigFrame {
        let g = |i: usize| get64(b, frame::MCONTEXT + 8 * i);
        let regs = SigRegs {
            r8: g(0),
            r9: g(1),
            r10: g(2),
            r11: g(3),
            r12: g(4),
            r13: g(5),
            r14: g(6),
            r15: g(7),
            rdi: g(8),
            rsi: g(9),
            rbp: g(10),
            rbx: g(11),
            rdx: g(12),
            rax: g(13),
            rcx: g(14),
            rsp: g(15),
            rip: g(16),
            rflags: g(17),
            err: get64(b, frame::MCONTEXT + 152),
            trapno: get64(b, frame::MCONTEXT + 160),
            cr2: get64(b, frame::MCONTEXT + 176),
        };
        let mut st = [0u8; 24];
        st.copy_from_slice(&b[frame::UC_STACK..frame::UC_STACK + 24]);
        SigFrame {
            restorer: get64(b, 0),
            regs,
            mask: get64(b, frame::SIGMASK),
            altstack: AltStack::decode(&st),
            fpstate: get64(b, frame::FPSTATE_PTR),
            info: SigInfo::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_actions_follow_linux_tables() {
        assert_eq!(default_action(SIGCHLD), DefaultAction::Ignore);
        assert_eq!(default_action(SIGWINCH), DefaultAction::Ignore);
        assert_eq!(default_action(SIGTSTP), DefaultAction::Stop);
        assert_eq!(default_action(SIGSEGV), DefaultAction::Core);
        assert_eq!(default_action(SIGUSR1), DefaultAction::Terminate);
        assert_eq!(default_action(SIGRTMIN), DefaultAction::Terminate);
        assert_eq!(default_action(SIGRTMAX), DefaultAction::Terminate);
        assert_eq!(default_action(SIGCONT), DefaultAction::Continue);
    }

    #[test]
    fn next_signal_takes_faults_first_then_the_lowest() {
        assert_eq!(next_signal(0), None);
        assert_eq!(next_signal(sigbit(SIGUSR1) | sigbit(SIGSEGV)), Some(SIGSEGV));
        assert_eq!(next_signal(sigbit(SIGUSR2) | sigbit(SIGINT)), Some(SIGINT));
        assert_eq!(next_signal(sigbit(SIGRTMAX)), Some(SIGRTMAX));
        assert_eq!(next_signal(sigbit(SIGRTMAX) | sigbit(SIGRTMIN)), Some(SIGRTMIN));
    }

    #[test]
    fn frame_offsets_are_linuxs() {
        // uc_mcontext at 40 in ucontext, sizeof(sigcontext) 256, uc_sigmask right after.
        assert_eq!(frame::MCONTEXT, 48);
        assert_eq!(frame::SIGMASK, 48 + 256);
        assert_eq!(frame::INFO, 8 + 304);
        assert_eq!(frame::SIZE, 440);
    }

    #[test]
    fn placement_is_aligned_below_the_red_zone() {
        let (f, fp) = frame_placement(0x7fff_ffff_e000).unwrap();
        assert_eq!(fp % 64, 0);
        assert!(fp + FPSTATE_SIZE <= 0x7fff_ffff_e000 - 128);
        assert_eq!((f + 8) % 16, 0);
        assert!(f + frame::SIZE as u64 <= fp);
        assert_eq!(frame_placement(100), None);
    }

    #[test]
    fn frames_round_trip() {
        let regs = SigRegs {
            r8: 8,
            r15: 15,
            rdi: 1,
            rax: 0xaa,
            rsp: 0x1000,
            rip: 0x4000,
            rflags: 0x246,
            err: 4,
            trapno: 14,
            cr2: 0xdead,
            ..Default::default()
        };
        let f = SigFrame {
            restorer: 0x401000,
            regs,
            mask: sigbit(SIGUSR1),
            altstack: AltStack { sp: 0x9000, flags: SS_DISABLE, size: 8192 },
            fpstate: 0x7000,
            info: SigInfo::kill(SIGUSR1, code::SI_USER, 42),
        };
        let b = f.encode();
        let back = SigFrame::decode(&b);
        assert_eq!(back.regs, f.regs);
        assert_eq!(back.mask, f.mask);
        assert_eq!(back.altstack, f.altstack);
        assert_eq!(back.fpstate, f.fpstate);
        assert_eq!(back.restorer, f.restorer);
        // si_signo, si_code and si_pid where glibc reads them.
        assert_eq!(get32(&b, frame::INFO), SIGUSR1);
        assert_eq!(get32(&b, frame::INFO + 16), 42);
    }

    #[test]
    fn siginfo_members_sit_at_linuxs_offsets() {
        let c = SigInfo {
            signo: SIGCHLD,
            code: code::CLD_EXITED,
            errno: 0,
            fields: SigFields::Child { pid: 7, uid: 0, status: 3, utime: 1, stime: 2 },
        };
        let b = c.encode();
        assert_eq!((get32(&b, 0), get32(&b, 8), get32(&b, 16), get32(&b, 24)), (SIGCHLD, 1, 7, 3));
        assert_eq!((get64(&b, 32), get64(&b, 40)), (1, 2));
        let q = SigInfo::decode_queued(
            &SigInfo { signo: 40, code: code::SI_QUEUE, errno: 0, fields: SigFields::Kill { pid: 5, uid: 0, value: 99 } }.encode(),
        );
        assert_eq!(q.fields, SigFields::Kill { pid: 5, uid: 0, value: 99 });
        let t = SigInfo { signo: 34, code: code::SI_TIMER, errno: 0, fields: SigFields::Timer { tid: 1, overrun: 2, value: 3 } }.encode();
        assert_eq!((get32(&t, 16), get32(&t, 20), get64(&t, 24)), (1, 2, 3));
    }

    #[test]
    fn siginfo_layouts_are_linuxs() {
        assert_eq!(siginfo_layout(SIGUSR1, code::SI_USER), Layout::Kill);
        assert_eq!(siginfo_layout(SIGUSR1, code::SI_KERNEL), Layout::Kill);
        assert_eq!(siginfo_layout(SIGRTMIN, code::SI_QUEUE), Layout::Rt);
        assert_eq!(siginfo_layout(SIGUSR1, code::SI_TKILL), Layout::Rt);
        assert_eq!(siginfo_layout(SIGALRM, code::SI_TIMER), Layout::Timer);
        assert_eq!(siginfo_layout(SIGCHLD, code::CLD_EXITED), Layout::Child);
        assert_eq!(siginfo_layout(SIGSEGV, code::SEGV_MAPERR), Layout::Fault);
        assert_eq!(siginfo_layout(SIGBUS, 4), Layout::FaultMceErr);
        assert_eq!(siginfo_layout(SIGSYS, 1), Layout::Sys);
        // A small positive code of a signal without codes of its own is SIGPOLL's.
        assert_eq!(siginfo_layout(SIGUSR1, 3), Layout::Poll);
        assert_eq!(siginfo_layout(SIGUSR1, 7), Layout::Kill);
        assert_eq!(siginfo_layout(SIGCHLD, 7), Layout::Kill);
        assert_eq!(siginfo_layout(SIGIO, -5), Layout::Poll);
    }

    #[test]
    fn signalfd_siginfo_is_filled_as_linuxs() {
        let q = SigInfo { signo: 34, code: code::SI_QUEUE, errno: 0, fields: SigFields::Kill { pid: 7, uid: 1000, value: 0x1_0000_002a } };
        let b = q.encode_signalfd();
        assert_eq!(b.len(), 128);
        assert_eq!((get32(&b, ssi::SIGNO), get32(&b, ssi::CODE) as i32), (34, code::SI_QUEUE));
        assert_eq!((get32(&b, ssi::PID), get32(&b, ssi::UID), get32(&b, ssi::INT)), (7, 1000, 42));
        assert_eq!(get64(&b, ssi::PTR), 0x1_0000_002a);
        // kill: pid and uid only.
        let k = SigInfo { signo: SIGUSR1, code: code::SI_USER, errno: 0, fields: SigFields::Kill { pid: 9, uid: 0, value: 5 } };
        let b = k.encode_signalfd();
        assert_eq!((get32(&b, ssi::PID), get32(&b, ssi::INT), get64(&b, ssi::PTR)), (9, 0, 0));
        let c = SigInfo {
            signo: SIGCHLD,
            code: code::CLD_KILLED,
            errno: 0,
            fields: SigFields::Child { pid: 3, uid: 0, status: 9, utime: 4, stime: 5 },
        };
        let b = c.encode_signalfd();
        assert_eq!((get32(&b, ssi::PID), get32(&b, ssi::STATUS), get64(&b, ssi::UTIME), get64(&b, ssi::STIME)), (3, 9, 4, 5));
        let t = SigInfo { signo: 40, code: code::SI_TIMER, errno: 0, fields: SigFields::Timer { tid: 2, overrun: 6, value: 77 } };
        let b = t.encode_signalfd();
        assert_eq!((get32(&b, ssi::TID), get32(&b, ssi::OVERRUN), get32(&b, ssi::INT), get64(&b, ssi::PTR)), (2, 6, 77, 77));
        let f = SigInfo { signo: SIGSEGV, code: code::SEGV_MAPERR, errno: 0, fields: SigFields::Fault { addr: 0xdead } };
        let b = f.encode_signalfd();
        assert_eq!((get64(&b, ssi::ADDR), get32(&b, ssi::PID)), (0xdead, 0));
    }

    #[test]
    fn altstack_containment_is_linuxs() {
        let s = AltStack { sp: 0x1000, flags: 0, size: 0x1000 };
        assert!(s.contains(0x2000));
        assert!(s.contains(0x1800));
        assert!(!s.contains(0x1000));
        assert!(!s.contains(0x2001));
        assert!(!AltStack { flags: SS_DISABLE, ..s }.contains(0x1800));
    }
}
