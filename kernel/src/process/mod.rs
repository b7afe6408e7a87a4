//! User processes: a kernel task that runs a user thread through `framework::user`
//! ([`run`]), with its memory ([`mm`]) loaded from an ELF file ([`exec`]) and its system calls
//! dispatched by `crate::syscall`.
//!
//! Today a process is one thread started from the kernel (the shell's `exec`); fork, execve,
//! wait, files and signals follow in the next steps of issue 35.

pub mod exec;
pub mod mm;

use crate::sched::task::SpawnOptions;
use crate::sched::wait::Mutex;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicU32, AtomicU64};
use framework::task::Switchable;
use framework::user::{self, ReturnReason, UserContext};

/// A process (one thread today).
pub struct Process {
    /// Its memory.
    pub mm: Mutex<mm::Mm>,
    /// `set_tid_address`'s pointer (cleared and woken at exit, once threads exist).
    pub clear_child_tid: AtomicU64,
    /// Which of fds 0, 1, 2 (the console) are open (bit n: fd n). The fd table comes with
    /// the VFS.
    pub console_fds: AtomicU32,
}

/// How a thread's run ended.
enum Exit {
    /// `exit` / `exit_group` with this status.
    Status(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// Linux's SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP.
pub const SIGILL: i32 = 4;
/// Trace trap (int3).
pub const SIGTRAP: i32 = 5;
/// Bus error.
pub const SIGBUS: i32 = 7;
/// Floating-point exception.
pub const SIGFPE: i32 = 8;
/// Segmentation violation.
pub const SIGSEGV: i32 = 11;

/// The signal a user exception raises (Linux `arch/x86/kernel/traps.c`).
fn signal_of(vector: u8) -> i32 {
    match vector {
        0 | 16 | 19 => SIGFPE,
        1 | 3 => SIGTRAP,
        6 => SIGILL,
        17 => SIGBUS,
        _ => SIGSEGV,
    }
}

/// Runs the thread until it exits.
fn user_loop(proc: &Process, mut ctx: UserContext) -> Exit {
    loop {
        if let Some(sig) = fatal_signal() {
            return Exit::Signal(sig);
        }
        match user::execute(&mut ctx) {
            ReturnReason::Syscall => {
                if let Some(status) = crate::syscall::dispatch(proc, &mut ctx) {
                    return Exit::Status(status);
                }
            }
            ReturnReason::Exception(e) if e.vector == 14 => {
                let write = e.error & 2 != 0;
                let fixed = proc.mm.lock_uninterruptible().fault(e.addr, write);
                if let Err(err) = fixed {
                    let sig = if err == Errno::ENOMEM { SIGBUS } else { SIGSEGV };
                    crate::kprintln!(
                        "cadence: pid {}: {} at {:#x} (rip {:#x}, {})",
                        crate::sched::current().tid,
                        signal_name(sig),
                        e.addr,
                        ctx.regs.rip,
                        if write { "write" } else { "read" }
                    );
                    return Exit::Signal(sig);
                }
            }
            ReturnReason::Exception(e) => {
                let sig = signal_of(e.vector);
                crate::kprintln!(
                    "cadence: pid {}: {} (vector {}, rip {:#x})",
                    crate::sched::current().tid,
                    signal_name(sig),
                    e.vector,
                    ctx.regs.rip
                );
                return Exit::Signal(sig);
            }
            ReturnReason::Interrupted => {}
        }
    }
}

/// The shell's name for a signal's death (bash's `strsignal` words).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGILL => "Illegal instruction",
        SIGTRAP => "Trace/breakpoint trap",
        SIGBUS => "Bus error",
        SIGFPE => "Floating point exception",
        SIGSEGV => "Segmentation fault",
        _ => "Killed",
    }
}

/// Starts `path` (from the initramfs) as a process with `argv`, waits for it, and returns its
/// wait status as a shell reports it: the exit status, or 128 + the signal that killed it.
pub fn run(path: &str, argv: Vec<String>) -> Result<i32, Errno> {
    let path = String::from(path);
    let load_error = Arc::new(Mutex::new(None::<Errno>));
    let err_slot = load_error.clone();
    let name: String = path.rsplit('/').next().unwrap_or("a.out").chars().take(15).collect();
    let handle = crate::sched::spawn_result(SpawnOptions::new(&name), move || {
        // The whole life of a process defers fatal signals at interrupt exit: the run loop acts
        // on them (user_event_pending brings the thread back from user mode), so its memory
        // is freed on the way out instead of leaked with the task's stack.
        let _defer = crate::sched::signal::DeferFatal::new();
        let argv_bytes: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let envp: [&[u8]; 3] = [b"HOME=/", b"PATH=/sbin:/usr/sbin:/bin:/usr/bin", b"TERM=linux"];
        let loaded = match exec::load(&path, &argv_bytes, &envp) {
            Ok(l) => l,
            Err(e) => {
                *err_slot.lock_uninterruptible() = Some(e);
                return -1;
            }
        };
        run_loaded(loaded.mm, UserContext::new(loaded.entry, loaded.sp))
    })
    .map_err(|_| Errno::EAGAIN)?;
    let status = handle.join().map_err(|_| Errno::ECHILD)?;
    if let Some(e) = *load_error.lock_uninterruptible() {
        return Err(e);
    }
    Ok(status)
}

/// Runs a loaded program in the calling task (which becomes its thread) until it ends; its
/// wait status as a shell reports it (the exit status, or 128 + the signal that killed it).
/// The caller holds a `DeferFatal` for the task's life (see `run`).
pub fn run_loaded(mm: mm::Mm, ctx: UserContext) -> i32 {
    let me = crate::sched::current();
    me.task_context().enable_user();
    me.task_context().set_vm_space(Some(mm.space.clone()));
    let proc = Process { mm: Mutex::new(mm), clear_child_tid: AtomicU64::new(0), console_fds: AtomicU32::new(0b111) };
    let exit = user_loop(&proc, ctx);
    // The space goes before the process's memory: no CPU has it loaded when it is freed.
    me.task_context().set_vm_space(None);
    drop(proc);
    match exit {
        Exit::Status(s) => s & 0xff,
        Exit::Signal(sig) => 128 + sig,
    }
}

/// The framework asks, after an interrupt in user mode, whether the running thread should come
/// back to the kernel: a fatal signal (the only kind processes take so far: handlers come with
/// user space II). Interrupts off.
pub fn user_event_pending() -> bool {
    crate::sched::signal::current_fatal_pending()
}

/// The fatal signal pending for the calling task, if any.
fn fatal_signal() -> Option<i32> {
    let me = crate::sched::current();
    let p = me.process.signals.pending.load(core::sync::atomic::Ordering::Acquire);
    crate::sched::signal::fatal_pending(&me)
        .then(|| (1..64).find(|&s| p & (1u64 << s) != 0 && crate::sched::signal::is_fatal(s as u32)).unwrap_or(9))
}

#[cfg(test)]
mod tests;
