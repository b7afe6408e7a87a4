//! Command execution for `run="cmd1; cmd2"` (and, later, the interactive console shell).
//!
//! A command line is split into words (quotes group, as on the kernel command line);
//! the first word names the command. Unknown commands and bad arguments print a usage line
//! (`usage: ...`) or an error (`<cmd>: <reason>`), never panic. `execute` returns 0 on success.

use alloc::string::String;
use alloc::vec::Vec;

struct Command {
    name: &'static str,
    usage: &'static str,
    help: &'static str,
    run: fn(&[&str]) -> Result<(), String>,
}

const COMMANDS: &[Command] = &[
    Command { name: "help", usage: "help", help: "list commands", run: cmd_help },
    Command {
        name: "bench",
        usage: "bench pipe [-l LOOPS] | bench scale [-d MS] [-n N,N,...]",
        help: "run a benchmark",
        run: cmd_bench,
    },
    Command { name: "trace", usage: crate::trace::USAGE, help: "scheduler tracer", run: crate::trace::cmd_trace },
    Command { name: "poweroff", usage: "poweroff", help: "exit QEMU (success)", run: cmd_poweroff },
];

fn cmd_help(_: &[&str]) -> Result<(), String> {
    for c in COMMANDS {
        crate::kprintln!("  {:<10} {}  ({})", c.name, c.help, c.usage);
    }
    Ok(())
}

fn cmd_poweroff(_: &[&str]) -> Result<(), String> {
    crate::kprintln!("cadence: poweroff");
    crate::arch::qemu::exit(crate::arch::qemu::ExitCode::Success)
}

fn cmd_bench(args: &[&str]) -> Result<(), String> {
    match args.first().copied() {
        Some("pipe") => crate::bench::cmd_pipe(&args[1..]),
        Some("scale") => crate::bench::cmd_scale(&args[1..]),
        _ => Err(String::from("usage")),
    }
}

/// Runs one command line; returns 0 on success, 1 on error, 127 for an unknown command.
pub fn execute(line: &str) -> i32 {
    let words = match cadence_cmdline::split_words(line) {
        Ok(w) => w.into_iter().map(|(_, w)| w).collect::<Vec<String>>(),
        Err(e) => {
            crate::kprintln!("cadence: {}", e);
            return 1;
        }
    };
    let Some(name) = words.first() else { return 0 };
    let args: Vec<&str> = words[1..].iter().map(|s| s.as_str()).collect();
    let Some(cmd) = COMMANDS.iter().find(|c| c.name == name) else {
        crate::kprintln!("{}: command not found (try 'help')", name);
        return 127;
    };
    match (cmd.run)(&args) {
        Ok(()) => 0,
        Err(e) if e == "usage" => {
            crate::kprintln!("usage: {}", cmd.usage);
            1
        }
        Err(e) => {
            crate::kprintln!("{}: {}", cmd.name, e);
            crate::kprintln!("usage: {}", cmd.usage);
            1
        }
    }
}
