//! Rewrites a workload file for Linux's rt-app 1.0 (the Linux side of `make compare-rtapp`),
//! doing what workgen does plus the global overrides a measurement run needs:
//! * repeated keys get numeric suffixes ([`crate::model::unique_keys`]: `run`, `run1`, ...);
//! * a bare `"suspend"` gets the thread's name;
//! * comments and trailing commas disappear (strict JSON);
//! * `global`: `duration`, `logdir`, `log_basename` are set, `ftrace`/`gnuplot` turned off and
//!   `log_size` removed (Debian's rt-app 1.0 writes empty logs with `"log_size": "file"`; without
//!   the key it writes every row); everything else is kept;
//! * the Cadence extensions `tty`, `session`, `group` and the legacy `resources` are dropped.
//!
//! Contract: the input must have loaded with [`crate::model::from_value`]; the output then
//! describes the same threads (same names, same events in the same order).

use crate::json::{self, Kind, Member, Value};
use crate::model::unique_keys;
use alloc::string::String;
use alloc::vec::Vec;

const EXTENSIONS: &[&str] = &["tty", "session", "group"];

fn obj(members: Vec<Member>, line: u32) -> Value {
    Value { line, kind: Kind::Object(members) }
}

fn member(key: &str, kind: Kind) -> Member {
    Member { key: key.into(), line: 0, value: Value { line: 0, kind }, bare: false }
}

/// Events of a phase-like object, with unique keys and bare suspends filled.
fn rewrite_events(v: &Value, thread: &str, drop_ext: bool) -> Value {
    let Kind::Object(ms) = &v.kind else { return v.clone() };
    let keys = unique_keys(ms);
    let mut out = Vec::new();
    for (m, k) in ms.iter().zip(keys) {
        if drop_ext && EXTENSIONS.contains(&m.key.as_str()) {
            continue;
        }
        let mut m2 = m.clone();
        m2.key = k;
        if m.bare {
            m2.bare = false;
            m2.value = Value { line: m.line, kind: Kind::Str(thread.into()) };
        }
        out.push(m2);
    }
    obj(out, v.line)
}

/// The rt-app-ready document. `duration` overrides the global duration when given.
pub fn rewrite(doc: &Value, duration: Option<i64>, logdir: &str, basename: &str) -> String {
    let mut top = Vec::new();
    let Kind::Object(ms) = &doc.kind else { return String::new() };
    let mut global_in: &[Member] = &[];
    for m in ms {
        match m.key.as_str() {
            "tasks" => {
                let Kind::Object(tasks) = &m.value.kind else { continue };
                let names = unique_keys(tasks);
                let mut out = Vec::new();
                for (t, name) in tasks.iter().zip(names) {
                    let mut t2 = rewrite_events(&t.value, &name, true);
                    if let Kind::Object(tm) = &mut t2.kind {
                        for c in tm.iter_mut() {
                            if c.key == "phases" {
                                if let Kind::Object(ph) = &c.value.kind {
                                    let pk = unique_keys(ph);
                                    let ph2 = ph
                                        .iter()
                                        .zip(pk)
                                        .map(|(p, k)| Member {
                                            key: k,
                                            line: p.line,
                                            value: rewrite_events(&p.value, &name, false),
                                            bare: false,
                                        })
                                        .collect();
                                    c.value = obj(ph2, c.value.line);
                                }
                            }
                        }
                    }
                    out.push(Member { key: name, line: t.line, value: t2, bare: false });
                }
                top.push(Member { key: "tasks".into(), line: m.line, value: obj(out, m.value.line), bare: false });
            }
            "global" => {
                if let Kind::Object(g) = &m.value.kind {
                    global_in = g;
                }
            }
            _ => {}
        }
    }
    const OURS: &[&str] = &["duration", "logdir", "log_basename", "ftrace", "gnuplot", "log_size"];
    let mut g: Vec<Member> = global_in.iter().filter(|m| !OURS.contains(&m.key.as_str())).cloned().collect();
    let orig_duration = global_in.iter().find(|m| m.key == "duration").and_then(|m| match m.value.kind {
        Kind::Int(i) => Some(i),
        _ => None,
    });
    g.push(member("duration", Kind::Int(duration.or(orig_duration).unwrap_or(-1))));
    g.push(member("logdir", Kind::Str(logdir.into())));
    g.push(member("log_basename", Kind::Str(basename.into())));
    g.push(member("ftrace", Kind::Bool(false)));
    g.push(member("gnuplot", Kind::Bool(false)));
    top.push(Member { key: "global".into(), line: 0, value: obj(g, 0), bare: false });
    let mut s = String::new();
    json::write(&obj(top, 0), 0, &mut s);
    s.push('\n');
    s
}
