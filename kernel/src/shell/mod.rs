//! The Cadence shell: command execution for `run="cmd1; cmd2"` and the interactive console
//! (`cadence> ` on COM1, see [`console`]).
//!
//! Grammar: a line is a list of commands separated by `;`; a command ending in `&` runs in the
//! background (a spawned task named after the command; the shell prints `[<job>] <tid>` and,
//! at a later prompt, `[<job>]+  Done                    <command>`). Words are split as on the
//! kernel command line (`"` and `'` group, quotes removed); the first word names the command.
//!
//! Contract: nothing typed can panic the kernel. Unknown commands print
//! `<name>: command not found`, bad arguments print the Linux tool's message (util-linux /
//! procps / coreutils wording, errno as `strerror` text, e.g.
//! `chrt: failed to set pid 99's policy: Invalid argument`) followed by a `usage: ...` line.
//! [`execute`] returns the exit status: 0 success, 1 error, 2 usage error, 127 unknown command.
//!
//! Output of the shell's own commands goes through [`print`] (macro `shout!`), which tests can
//! capture per task ([`capture`]); benchmarks print straight to the console.

pub mod blk;
pub mod cmds;
pub mod console;
pub mod coresched;
pub mod groups;
#[cfg(test)]
mod tests;
pub mod vm;

use crate::sched::task::{SpawnOptions, Tid};
use crate::sync::IrqLock;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad usage: print the command's usage line (after the message, if any).
    Usage(Option<String>),
    /// A runtime failure: print the message (already prefixed with the command's name).
    Failed(String),
}

pub type CmdResult = Result<(), Error>;

/// `Error::Usage` with a message `"<cmd>: <msg>"`.
pub fn usage_err(cmd: &str, msg: impl core::fmt::Display) -> Error {
    Error::Usage(Some(alloc::format!("{}: {}", cmd, msg)))
}

/// `Error::Failed` with a message `"<cmd>: <msg>"`.
pub fn fail(cmd: &str, msg: impl core::fmt::Display) -> Error {
    Error::Failed(alloc::format!("{}: {}", cmd, msg))
}

pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub help: &'static str,
    pub run: fn(&[&str]) -> CmdResult,
}

pub const COMMANDS: &[Command] = &[
    Command { name: "help", usage: "help [COMMAND]", help: "list commands", run: cmd_help },
    Command { name: "ps", usage: "ps [-e] [-L]", help: "list tasks (PID=thread group, TID, class, rtprio, nice, cpu, state, runtime)", run: cmds::ps },
    Command {
        name: "chrt",
        usage: "chrt -p PID | chrt [-f|-r|-o|-b|-i] [-R] -p PRIO PID | chrt [-f|-r|-o|-b|-i] PRIO COMMAND... | chrt -m",
        help: "show or set a task's scheduling policy and priority",
        run: cmds::chrt,
    },
    Command {
        name: "nice",
        usage: "nice [-n N | -N] [COMMAND...]",
        help: "print the shell's niceness, or run a command with an adjusted niceness (default +10)",
        run: cmds::nice,
    },
    Command { name: "renice", usage: "renice [-n] PRIORITY [-p] PID...", help: "set the niceness of tasks", run: cmds::renice },
    Command {
        name: "taskset",
        usage: "taskset -p [MASK] PID | taskset -cp [LIST] PID | taskset [-c] MASK|LIST COMMAND...",
        help: "show or set CPU affinity",
        run: cmds::taskset,
    },
    Command { name: "kill", usage: "kill [-s SIG | -SIG] PID|%JOB... | kill -l", help: "send a signal (default TERM)", run: cmds::kill },
    Command {
        name: "sysctl",
        usage: "sysctl [-n] NAME... | sysctl [-w] NAME=VALUE... | sysctl -a",
        help: "read or write tunables (Linux names)",
        run: cmds::sysctl,
    },
    Command {
        name: "cmdline",
        usage: "cmdline [-h]",
        help: "print the boot command line (Linux /proc/cmdline), or with -h every boot option",
        run: cmd_cmdline,
    },
    Command { name: "echo", usage: "echo [WORD...]", help: "print the words", run: cmd_echo },
    Command { name: "syscalls", usage: "syscalls", help: "print the system call table (docs/design/syscalls.md is this output)", run: cmd_syscalls },
    Command { name: "exec", usage: "exec PATH [ARG...]", help: "run a program from the initramfs as a user process and wait for it", run: cmd_exec },
    Command {
        name: "sleep",
        usage: "sleep NUMBER[s|ms|us|m|h|d]...",
        help: "sleep for the sum of the intervals (seconds by default, as coreutils; 0.5, 20ms)",
        run: cmds::sleep,
    },
    Command { name: "jobs", usage: "jobs", help: "list background jobs", run: cmd_jobs },
    Command {
        name: "bench",
        usage: "bench pipe|scale|slice|autogroup|coresched|cyclic|hackbench|hwlat|pert|wakeup-latency|dirty|alloc [OPTIONS] (bench NAME --help for options)",
        help: "run a benchmark",
        run: cmd_bench,
    },
    Command {
        name: "prlimit",
        usage: "prlimit --pid PID [--rttime=SOFT[:HARD]]  (µs or 'unlimited')",
        help: "show or set RLIMIT_RTTIME of a task",
        run: |a| adapt("prlimit", crate::sched::rt_limits::cmd_prlimit(a)),
    },
    Command {
        name: "chaos",
        usage: "chaos [-s SEED] [-n OPS] [-b TRACE_ENTRIES] [-f FAIL_PERCENT]",
        help: "the chaos stress: random scheduler operations, then leak and invariant checks",
        run: |a| adapt("chaos", crate::chaos::cmd_chaos(a)),
    },
    Command { name: "trace", usage: crate::trace::USAGE, help: "scheduler tracer", run: |a| adapt("trace", crate::trace::cmd_trace(a)) },
    Command { name: "poweroff", usage: "poweroff", help: "exit QEMU (success)", run: cmd_poweroff },
    Command {
        name: "group",
        usage: "group create NAME [WEIGHT] | group move PID NAME|/ | group weight NAME W | group list | group destroy NAME",
        help: "manual task groups (cpu.weight 1..=10000, default 100)",
        run: groups::cmd_group,
    },
    Command { name: "autogroup", usage: "autogroup PID [NICE]", help: "show or set a task's autogroup nice", run: groups::cmd_autogroup },
    Command { name: "open", usage: "open ttyN", help: "open a virtual terminal with a shell session", run: groups::cmd_open },
    Command { name: "close", usage: "close ttyN", help: "close a virtual terminal", run: groups::cmd_close },
    Command { name: "type", usage: "type ttyN TEXT...", help: "type a line into a tty", run: groups::cmd_type },
    Command { name: "ttys", usage: "ttys", help: "list ttys, their sessions and autogroups", run: groups::cmd_ttys },
    Command { name: "spawn", usage: "spawn --tty N COMMAND...", help: "run a command as a new session on ttyN", run: groups::cmd_spawn },
    Command { name: "setsid", usage: "setsid COMMAND...", help: "run a command in a new session", run: groups::cmd_setsid },
    Command {
        name: "coresched",
        usage: "coresched get|create|share-to|share-from PID [--type pid|tgid|pgid] | coresched stat",
        help: "SMT core-scheduling cookies (PR_SCHED_CORE)",
        run: coresched::cmd_coresched,
    },
    Command {
        name: "blk",
        usage: "blk info | blk read SECTOR | blk fill SEED COUNT | blk verify SEED COUNT",
        help: "the virtio disk /dev/vda: size, a sector's bytes, write or check a seeded pattern of 4 KiB blocks",
        run: blk::cmd_blk,
    },
    Command {
        name: "dd",
        usage: "dd if=/dev/zero|/dev/vda of=/dev/vda|/dev/null [bs=N] [count=N] [seek=N] [skip=N] [oflag=sync] [conv=fsync] [status=none|noxfer]",
        help: "copy blocks through the page cache (GNU dd's summary)",
        run: vm::cmd_dd,
    },
    Command { name: "sync", usage: "sync", help: "write back the disk's dirty pages and flush it", run: vm::cmd_sync },
    Command { name: "free", usage: "free [-b|-k|-m|-g]", help: "memory: total, used, free, buff/cache, available", run: vm::cmd_free },
    Command {
        name: "vmstat",
        usage: "vmstat [DELAY [COUNT]]",
        help: "memory, dirty pages, disk I/O, context switches and dirty-throttle time",
        run: vm::cmd_vmstat,
    },
    Command { name: "ls", usage: "ls /workloads", help: "list workload files", run: |a| adapt("ls", crate::rtapp::cmd_ls(a)) },
    Command {
        name: "rtapp",
        usage: "rtapp <workload> [-d SECONDS] [-q]",
        help: "run an rt-app JSON workload",
        run: |a| adapt("rtapp", crate::rtapp::cmd_rtapp(a)),
    },
];

// ----- output (capturable) -----------------------------------------------------------------

/// Per-task output capture (tests): while a task's tid is registered here, its `shout!`
/// output is appended to the string instead of printed.
static CAPTURE: IrqLock<Vec<(Tid, String)>> = IrqLock::new(Vec::new());

#[doc(hidden)]
pub fn print(args: core::fmt::Arguments) {
    let tid = crate::sched::current_tid();
    {
        let mut c = CAPTURE.lock();
        if let Some((_, s)) = c.iter_mut().find(|(t, _)| *t == tid) {
            let _ = s.write_fmt(args);
            return;
        }
    }
    framework::console::_print(args);
}

/// Prints a line through [`print`].
#[macro_export]
macro_rules! shout {
    () => ($crate::shell::print(format_args!("\n")));
    ($($arg:tt)*) => ($crate::shell::print(format_args!("{}\n", format_args!($($arg)*))));
}

/// Runs `f` with the calling task's `shout!` output captured; returns its result and the text.
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, String) {
    let tid = crate::sched::current_tid();
    CAPTURE.lock().push((tid, String::new()));
    let r = f();
    let mut c = CAPTURE.lock();
    let i = c.iter().position(|(t, _)| *t == tid).unwrap_or(0);
    let out = if c.is_empty() { String::new() } else { c.remove(i).1 };
    (r, out)
}

// ----- built-in commands -----------------------------------------------------------------------

fn cmd_help(args: &[&str]) -> CmdResult {
    if let Some(name) = args.first() {
        let c = COMMANDS
            .iter()
            .find(|c| c.name == *name)
            .ok_or_else(|| usage_err("help", alloc::format!("no help topics match '{}'", name)))?;
        shout!("{}: {}\nusage: {}", c.name, c.help, c.usage);
        return Ok(());
    }
    shout!("Cadence shell. Commands (`cmd &` runs in the background, `a; b` runs both):");
    for c in COMMANDS {
        shout!("  {:<9} {}", c.name, c.help);
    }
    shout!("`help COMMAND` shows its usage. Line editing: <- -> Home End, Up/Down history, ^U ^C.");
    Ok(())
}

fn cmd_cmdline(args: &[&str]) -> CmdResult {
    match args {
        [] => shout!("{}", crate::cmdline::boot_line()),
        ["-h"] => {
            for (usage, help) in crate::cmdline::help_lines() {
                shout!("  {:<24} {}", usage, help);
            }
        }
        _ => return Err(Error::Usage(None)),
    }
    Ok(())
}

fn cmd_echo(args: &[&str]) -> CmdResult {
    shout!("{}", args.join(" "));
    Ok(())
}

/// `syscalls`: the dispatch table as the Markdown table `docs/design/syscalls.md` holds, then
/// the ENOSYS answers given since boot.
fn cmd_syscalls(_: &[&str]) -> CmdResult {
    shout!("| nr | name | status |");
    shout!("|---|---|---|");
    for e in crate::syscall::TABLE {
        match e.status {
            crate::syscall::Status::Implemented => shout!("| {} | `{}` | implemented |", e.nr, e.name),
            crate::syscall::Status::Partial(what) => shout!("| {} | `{}` | partial: {} |", e.nr, e.name, what),
        }
    }
    shout!("| other | | ENOSYS |");
    for (nr, n) in crate::syscall::unknown_counts() {
        shout!("syscalls: ENOSYS answered {} times to number {}", n, nr);
    }
    Ok(())
}

/// `exec PATH [ARG...]`: runs the program (argv[0] = PATH) and reports how it ended as a
/// shell does; an error starting it is the shell's `PATH: <errno name>`.
fn cmd_exec(args: &[&str]) -> CmdResult {
    let Some(&path) = args.first() else { return Err(usage_err("exec", "missing PATH")) };
    let argv = args.iter().map(|a| alloc::string::String::from(*a)).collect();
    match crate::process::spawn(path, argv) {
        Ok(0) => Ok(()),
        Ok(status) if status > 128 => {
            Err(fail("exec", alloc::format!("{}: {} (status {})", path, crate::process::signal_name(status - 128), status)))
        }
        Ok(status) => Err(fail("exec", alloc::format!("{}: exit status {}", path, status))),
        Err(e) => Err(fail("exec", alloc::format!("{}: {}", path, e.name()))),
    }
}

fn cmd_poweroff(_: &[&str]) -> CmdResult {
    crate::kprintln!("cadence: poweroff");
    crate::arch::qemu::exit(crate::arch::qemu::ExitCode::Success)
}

/// Adapts a `Result<(), String>` command body (`"usage"` = bad usage) to [`CmdResult`].
pub fn adapt(cmd: &str, r: Result<(), String>) -> CmdResult {
    r.map_err(|e| if e == "usage" { Error::Usage(None) } else { fail(cmd, e) })
}

fn cmd_bench(args: &[&str]) -> CmdResult {
    let rest = args.get(1..).unwrap_or(&[]);
    let r = match args.first().copied() {
        Some("pipe") => crate::bench::cmd_pipe(rest),
        Some("scale") => crate::bench::cmd_scale(rest),
        Some("slice") => crate::bench::slice::cmd_slice(rest),
        Some("autogroup") => crate::bench::autogroup::cmd_autogroup(rest),
        Some("coresched") => crate::bench::coresched::cmd_coresched(rest),
        Some("cyclic") => crate::bench::latency::cmd_cyclic(rest),
        Some("wakeup-latency") => crate::bench::latency::cmd_wakeup_latency(rest),
        Some("pert") => crate::bench::latency::cmd_pert(rest),
        Some("hackbench") => crate::bench::hackbench::cmd_hackbench(rest),
        Some("hwlat") => crate::bench::hwlat::cmd_hwlat(rest),
        Some("dirty") => crate::bench::vm::cmd_dirty(rest),
        Some("alloc") => crate::bench::vm::cmd_alloc(rest),
        Some("deadline") => crate::bench::deadline::cmd_deadline(rest),
        Some(other) => return Err(usage_err("bench", alloc::format!("unknown benchmark '{}'", other))),
        None => return Err(Error::Usage(None)),
    };
    r.map_err(|e| if e == "usage" { Error::Usage(None) } else { usage_err("bench", e) })
}

// ----- jobs ------------------------------------------------------------------------------------

struct Job {
    id: u32,
    tid: Tid,
    line: String,
}

static JOBS: IrqLock<Vec<Job>> = IrqLock::new(Vec::new());

/// Tid of background job `%n`.
pub fn job_tid(id: u32) -> Option<Tid> {
    JOBS.lock().iter().find(|j| j.id == id).map(|j| j.tid)
}

fn cmd_jobs(args: &[&str]) -> CmdResult {
    if !args.is_empty() {
        return Err(Error::Usage(None));
    }
    // Finished jobs are reported (and forgotten) here, as bash does, so the prompt does not
    // report them a second time.
    reap_jobs();
    let jobs: Vec<(u32, Tid, String)> = JOBS.lock().iter().map(|j| (j.id, j.tid, j.line.clone())).collect();
    for (id, tid, line) in jobs {
        let state = match crate::sched::task::find(tid).map(|t| t.state()) {
            Some(crate::sched::task::TaskState::Stopped) => "Stopped",
            // Ended since the reap above: the prompt's reap reports it, once.
            Some(crate::sched::task::TaskState::Dead) | None => continue,
            _ => "Running",
        };
        shout!("[{}]  {:<24}{} &  (tid {})", id, state, line, tid);
    }
    Ok(())
}

/// Reaps finished background jobs and reports them as bash does (`[1]+  Done   cmd`).
pub fn reap_jobs() {
    let done: Vec<Job> = {
        let mut jobs = JOBS.lock();
        let mut done = Vec::new();
        let mut i = 0;
        while i < jobs.len() {
            let dead = crate::sched::task::find(jobs[i].tid).is_none_or(|t| t.state() == crate::sched::task::TaskState::Dead);
            if dead {
                done.push(jobs.remove(i));
            } else {
                i += 1;
            }
        }
        done
    };
    for j in done {
        let status = match crate::sched::task::wait(j.tid) {
            Ok(0) => String::from("Done"),
            Ok(137) => String::from("Killed"),
            Ok(143) => String::from("Terminated"),
            Ok(130) => String::from("Interrupt"),
            Ok(c) => alloc::format!("Exit {}", c),
            Err(_) => String::from("Done"),
        };
        shout!("[{}]+  {:<24}{}", j.id, status, j.line);
    }
}

fn spawn_background(line: &str) -> i32 {
    let owned = String::from(line);
    let name = line.split_whitespace().next().unwrap_or("job");
    let name = if name.len() > 15 { &name[..15] } else { name };
    match crate::sched::spawn(SpawnOptions::new(name).stack_size(64 * 1024), move || run_one(&owned)) {
        Ok(t) => {
            let mut jobs = JOBS.lock();
            let id = jobs.iter().map(|j| j.id).max().unwrap_or(0) + 1;
            jobs.push(Job { id, tid: t.tid, line: String::from(line) });
            drop(jobs);
            shout!("[{}] {}", id, t.tid);
            0
        }
        Err(e) => {
            shout!(
                "cadence: fork: {}",
                match e {
                    crate::sched::SpawnError::NoMemory => "Cannot allocate memory",
                    crate::sched::SpawnError::BadAffinity => "Invalid argument",
                    crate::sched::SpawnError::Busy => "Device or resource busy",
                    crate::sched::SpawnError::Again => "Resource temporarily unavailable",
                }
            );
            1
        }
    }
}

// ----- execution -------------------------------------------------------------------------------

/// Splits a line into `(command, background)` pairs on `;` and `&` outside quotes.
pub fn split_line(line: &str) -> Vec<(String, bool)> {
    cadence_cmdline::split_command_list(line, true)
}

/// Runs one command line (possibly `a; b &`); returns the status of the last command.
pub fn execute(line: &str) -> i32 {
    let mut status = 0;
    for (cmd, bg) in split_line(line) {
        status = if bg { spawn_background(&cmd) } else { run_one(&cmd) };
    }
    status
}

/// Runs one command (no `;` or `&` handling).
pub fn run_one(line: &str) -> i32 {
    let words = match cadence_cmdline::split_words(line) {
        Ok(w) => w.into_iter().map(|(_, w)| w).collect::<Vec<String>>(),
        Err(e) => {
            shout!("cadence: syntax error: {}", e);
            return 2;
        }
    };
    let args: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
    run_words(&args)
}

/// Runs a command given as words.
pub fn run_words(words: &[&str]) -> i32 {
    let Some(name) = words.first() else { return 0 };
    let Some(cmd) = COMMANDS.iter().find(|c| c.name == *name) else {
        shout!("{}: command not found (try 'help')", name);
        return 127;
    };
    match (cmd.run)(&words[1..]) {
        Ok(()) => 0,
        Err(Error::Usage(msg)) => {
            if let Some(m) = msg {
                shout!("{}", m);
            }
            shout!("usage: {}", cmd.usage);
            2
        }
        Err(Error::Failed(m)) => {
            if !m.is_empty() {
                shout!("{}", m);
            }
            1
        }
    }
}
