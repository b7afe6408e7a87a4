//! tracefs at `/sys/kernel/tracing` (and `/sys/kernel/debug/tracing`): Linux's files over the
//! scheduler tracer (`crate::trace`), so that `echo 1 > tracing_on`, `cat trace`,
//! `cat trace_pipe` and the rt-tests' and rt-app's `trace_marker` writes work as on Linux.
//!
//! | file | read | write |
//! |---|---|---|
//! | `tracing_on` | `1` while recording | `0` stops, a non-zero number records (rings made at the first) |
//! | `trace` | the trace: `nop` header, then the events (the COM2 export's text) | opening with `O_TRUNC` (`echo > trace`) empties the rings |
//! | `trace_pipe` | takes the events not yet taken (blocks until there are; `O_NONBLOCK`: EAGAIN) | — |
//! | `trace_marker` | EINVAL | a `tracing_mark_write` event (EBADF while not recording) |
//! | `set_event` | the enabled events, `system:event` per line | `[!][system:]event`, `system:*`, `*:*` per word; `O_TRUNC` disables all first; EINVAL for an unknown name |
//! | `events/enable`, `events/S/enable`, `events/S/E/enable` | `0`, `1`, `X` (mixed) | `0` or `1` |
//! | `available_events` | every event, `system:event` | — |
//! | `buffer_size_kb` | KiB per CPU ring | new empty rings of that size (EINVAL for 0, ENOMEM if they do not fit) |
//! | `buffer_total_size_kb` | KiB of all rings | — |
//! | `per_cpu/cpuN/trace`, `per_cpu/cpuN/stats` | CPU N's events; its ring's counts | — |
//! | `current_tracer`, `available_tracers` | `nop` | `nop` (EINVAL for another tracer) |
//!
//! One enable mask serves these files and the shell's `trace events`. Where Cadence differs:
//! it boots with the tracer stopped (`tracing_on` 0: the hooks then cost one load and a
//! branch) and every event enabled (the shell's default): write `tracing_on` to record, and
//! `set_event` or `events/enable` first to choose. The marker's `ftrace:print` event is not in
//! the mask these files show or change: as on Linux, a marker is recorded whenever tracing is on.

use super::pseudo::{Fixed, GenFile, Node};
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_trace::EventType;

/// The events tracefs lists and switches (all but the marker's).
fn events() -> impl Iterator<Item = EventType> {
    EventType::ALL.into_iter().filter(|e| *e != EventType::Print)
}

/// The systems of [`events`], in first-appearance order.
fn systems() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in events() {
        if !out.contains(&e.system()) {
            out.push(e.system());
        }
    }
    out
}

/// Sets the enable bits of `bits` on or off, leaving the others (and the marker's) alone.
fn switch(bits: u32, on: bool) {
    let mask = crate::trace::event_mask();
    crate::trace::set_event_mask(if on { mask | bits } else { mask & !bits });
}

fn bits_of(pred: impl Fn(EventType) -> bool) -> u32 {
    events().filter(|e| pred(*e)).fold(0, |m, e| m | e.bit())
}

/// An `enable` file over the events of `bits`: reads `0`, `1` or `X` (some on), takes `0`/`1`.
fn enable_file(bits: u32) -> Node {
    Node::rw(
        move || {
            let on = crate::trace::event_mask() & bits;
            Ok(String::from(if on == 0 {
                "0\n"
            } else if on == bits {
                "1\n"
            } else {
                "X\n"
            }))
        },
        move |v| {
            let on = match v.trim() {
                "0" => false,
                "1" => true,
                _ => return Err(Errno::EINVAL),
            };
            switch(bits, on);
            Ok(())
        },
    )
}

/// The events one `set_event` word names (`event`, `system:event`, `system:`, `system:*`,
/// `*:*`, `*`); none is EINVAL.
fn named(word: &str) -> Result<u32, Errno> {
    let (system, event) = match word.split_once(':') {
        Some((s, e)) => (s, if e.is_empty() { "*" } else { e }),
        None => ("*", word),
    };
    let bits = bits_of(|e| (system == "*" || e.system() == system) && (event == "*" || e.name() == event));
    if bits == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(bits)
}

/// A write to `set_event`: each word enables the events it names, or disables them with `!`.
/// Every word is checked before any takes effect.
fn set_event(text: &str) -> Result<(), Errno> {
    let mut changes = Vec::new();
    for word in text.split_whitespace() {
        let (on, name) = match word.strip_prefix('!') {
            Some(n) => (false, n),
            None => (true, word),
        };
        changes.push((named(name)?, on));
    }
    for (bits, on) in changes {
        switch(bits, on);
    }
    Ok(())
}

/// Reads a decimal number as Linux's `kstrtoul_from_user` (surrounding blanks allowed).
fn number(v: &str) -> Result<u64, Errno> {
    v.trim().parse::<u64>().map_err(|_| Errno::EINVAL)
}

/// KiB of one CPU's ring (of the rings a first `tracing_on` would make, before there are any).
fn ring_kb() -> usize {
    let entries = match crate::trace::entries() {
        0 => crate::trace::DEFAULT_ENTRIES,
        n => n,
    };
    entries * crate::trace::RECORD_BYTES / 1024
}

fn buffer_size_kb(v: &str) -> Result<(), Errno> {
    let kb = number(v)?;
    if kb == 0 {
        return Err(Errno::EINVAL);
    }
    let entries = usize::try_from(kb.saturating_mul(1024).div_ceil(crate::trace::RECORD_BYTES as u64)).unwrap_or(usize::MAX).max(16);
    if entries > crate::trace::MAX_ENTRIES {
        return Err(Errno::ENOMEM);
    }
    crate::trace::resize(entries).map_err(|e| {
        crate::kprintln!("tracefs: buffer_size_kb: {}", e);
        Errno::ENOMEM
    })
}

/// How long a `trace_pipe` reader sleeps between looks at the rings (writers, which run with
/// interrupts off and locks held, cannot wake it).
const PIPE_POLL_NS: u64 = 10_000_000;

fn trace_pipe(max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
    loop {
        let text = crate::trace::take_text(max).map_err(|_| Errno::ENOMEM)?;
        if !text.is_empty() || max == 0 {
            return Ok(text.into_bytes());
        }
        if nonblock {
            return Err(Errno::EAGAIN);
        }
        crate::sched::sleep_until_interruptible(crate::time::uptime_ns() + PIPE_POLL_NS).map_err(|_| Errno::ERESTARTSYS)?;
    }
}

fn text_or_enomem(r: Result<String, String>) -> Result<String, Errno> {
    r.map_err(|e| {
        crate::kprintln!("tracefs: {}", e);
        Errno::ENOMEM
    })
}

/// `events/`: `enable`, and per system `enable` and per event `enable`.
fn events_dir() -> Node {
    let mut top: Vec<(String, Node)> = alloc::vec![(String::from("enable"), enable_file(bits_of(|_| true)))];
    for system in systems() {
        let mut dir: Vec<(String, Node)> = alloc::vec![(String::from("enable"), enable_file(bits_of(|e| e.system() == system)))];
        for e in events().filter(|e| e.system() == system) {
            dir.push((
                String::from(e.name()),
                Node::Dir(0o755, Arc::new(Fixed(alloc::vec![(String::from("enable"), enable_file(e.bit()))]))),
            ));
        }
        dir.sort_by(|a, b| a.0.cmp(&b.0));
        top.push((String::from(system), Node::Dir(0o755, Arc::new(Fixed(dir)))));
    }
    top.sort_by(|a, b| a.0.cmp(&b.0));
    Node::Dir(0o755, Arc::new(Fixed(top)))
}

fn per_cpu_dir() -> Node {
    let cpus = crate::percpu::online_cpus().map(|c| c.cpu_id).collect::<Vec<_>>();
    let dirs = cpus
        .into_iter()
        .map(|cpu| {
            let files = alloc::vec![
                (String::from("stats"), Node::ro(move || text_or_enomem(crate::trace::cpu_stats(cpu)))),
                (String::from("trace"), Node::ro(move || text_or_enomem(crate::trace::text(Some(cpu))))),
            ];
            (format!("cpu{cpu}"), Node::Dir(0o755, Arc::new(Fixed(files))))
        })
        .collect();
    Node::Dir(0o755, Arc::new(Fixed(dirs)))
}

/// The tracefs root (mounted at `/sys/kernel/tracing` at boot).
pub fn root() -> Node {
    let file = |mode: u32, f: GenFile| Node::File(mode, Arc::new(f));
    let entries: Vec<(String, Node)> = alloc::vec![
        (String::from("available_events"), Node::ro(|| Ok(events().map(|e| format!("{}:{}\n", e.system(), e.name())).collect())),),
        (String::from("available_tracers"), Node::text(String::from("nop\n"))),
        (String::from("buffer_size_kb"), Node::rw(|| Ok(format!("{}\n", ring_kb())), buffer_size_kb)),
        (String::from("buffer_total_size_kb"), Node::ro(|| Ok(format!("{}\n", ring_kb() * crate::percpu::nr_cpus() as usize))),),
        (
            String::from("current_tracer"),
            Node::rw(|| Ok(String::from("nop\n")), |v| if v.trim() == "nop" { Ok(()) } else { Err(Errno::EINVAL) }),
        ),
        (String::from("events"), events_dir()),
        (String::from("per_cpu"), per_cpu_dir()),
        (
            String::from("set_event"),
            file(
                0o644,
                GenFile::new(
                    || {
                        let mask = crate::trace::event_mask();
                        Ok(events().filter(|e| mask & e.bit() != 0).map(|e| format!("{}:{}\n", e.system(), e.name())).collect())
                    },
                    Some(alloc::boxed::Box::new(set_event)),
                )
                .on_truncate(|| switch(bits_of(|_| true), false)),
            ),
        ),
        (
            String::from("trace"),
            file(
                0o644,
                GenFile::new(|| text_or_enomem(crate::trace::text(None)), Some(alloc::boxed::Box::new(|_: &str| Ok(()))))
                    .on_truncate(crate::trace::clear),
            ),
        ),
        (String::from("trace_marker"), Node::wo(|text| if crate::trace::print(text) { Ok(()) } else { Err(Errno::EBADF) }),),
        (String::from("trace_pipe"), file(0o444, GenFile::pipe(trace_pipe))),
        (
            String::from("tracing_on"),
            Node::rw(
                || Ok(String::from(if crate::trace::running() { "1\n" } else { "0\n" })),
                |v| {
                    if number(v)? == 0 {
                        crate::trace::stop();
                        Ok(())
                    } else {
                        crate::trace::resume().map_err(|e| {
                            crate::kprintln!("tracefs: tracing_on: {}", e);
                            Errno::ENOMEM
                        })
                    }
                },
            ),
        ),
    ];
    Node::Dir(0o700, Arc::new(Fixed(entries)))
}
