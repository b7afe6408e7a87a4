//! Host helper for `make compare-rtapp` (tools/compare-rtapp.sh).
//!
//! ```text
//! rtapp-host check FILE...                     load each file; print "ok" or the error
//! rtapp-host peer-json FILE [-d SECONDS] [--logdir DIR] [--basename NAME]
//!                                              print the file rewritten for Linux's rt-app
//! rtapp-host threads FILE                      print the thread names (<task>-<idx>), one a line
//! rtapp-host summary [FILE...]                 summary lines from rt-app logs: each input is a
//!                                              concatenation of "== <path>" headers and log lines
//!                                              (stdin if no FILE)
//! ```
//! Exit status 0 on success, 1 on a load error, 2 on a usage error.

use cadence_rtapp::log::{Row, Summary};
use cadence_rtapp::{json, model, peer};
use std::io::Read;
use std::process::exit;

fn usage() -> ! {
    eprintln!("usage: rtapp-host check FILE... | peer-json FILE [-d S] [--logdir D] [--basename B] | threads FILE | summary [FILE...]");
    exit(2)
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("rtapp-host: {}: {}", path, e);
        exit(2)
    })
}

/// Thread name of a log file path `.../<basename>-<thread>-<idx>.log`.
fn thread_of(path: &str, basename: Option<&str>) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".log").unwrap_or(file);
    match basename.and_then(|b| stem.strip_prefix(b)).and_then(|s| s.strip_prefix('-')) {
        Some(s) => s.to_string(),
        None => stem.to_string(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else { usage() };
    match cmd.as_str() {
        "check" => {
            let mut bad = false;
            for f in &args[1..] {
                match model::load(&read(f)) {
                    Ok(w) => println!("{}: ok ({} threads)", f, w.nthreads()),
                    Err(e) => {
                        println!("{}: {}", f, e);
                        bad = true;
                    }
                }
            }
            exit(if bad { 1 } else { 0 })
        }
        "peer-json" => {
            let Some(f) = args.get(1) else { usage() };
            let (mut d, mut logdir, mut base) = (None, "/".to_string(), "rtapp".to_string());
            let mut i = 2;
            while i < args.len() {
                let Some(v) = args.get(i + 1).cloned() else { usage() };
                match args[i].as_str() {
                    "-d" => d = Some(v.parse::<i64>().unwrap_or_else(|_| usage())),
                    "--logdir" => logdir = v,
                    "--basename" => base = v,
                    _ => usage(),
                }
                i += 2;
            }
            let bytes = read(f);
            let doc = json::parse(&bytes).unwrap_or_else(|e| {
                eprintln!("{}: {}", f, e);
                exit(1)
            });
            if let Err(e) = model::from_value(&doc) {
                eprintln!("{}: {}", f, e);
                exit(1);
            }
            print!("{}", peer::rewrite(&doc, d, &logdir, &base));
        }
        "threads" => {
            let Some(f) = args.get(1) else { usage() };
            match model::load(&read(f)) {
                Ok(w) => {
                    for (n, _) in w.threads() {
                        println!("{}", n);
                    }
                }
                Err(e) => {
                    eprintln!("{}: {}", f, e);
                    exit(1)
                }
            }
        }
        "summary" => {
            let mut text = String::new();
            let mut basename = None;
            let mut files = Vec::new();
            let mut i = 1;
            while i < args.len() {
                if args[i] == "--basename" {
                    basename = args.get(i + 1).cloned();
                    i += 2;
                } else {
                    files.push(args[i].clone());
                    i += 1;
                }
            }
            if files.is_empty() {
                let _ = std::io::stdin().read_to_string(&mut text);
            }
            for f in &files {
                text.push_str(&String::from_utf8_lossy(&read(f)));
                text.push('\n');
            }
            let mut cur: Option<(String, Summary)> = None;
            let mut out = Vec::new();
            for line in text.lines() {
                if let Some(p) = line.strip_prefix("== ") {
                    if let Some(c) = cur.take() {
                        out.push(c);
                    }
                    cur = Some((thread_of(p.trim(), basename.as_deref()), Summary::default()));
                } else if let Some(r) = Row::parse(line) {
                    if let Some((_, s)) = cur.as_mut() {
                        s.add(&r);
                    }
                }
            }
            if let Some(c) = cur.take() {
                out.push(c);
            }
            // rt-app's thread order: by the index at the end of the name.
            out.sort_by_key(|(n, _)| n.rsplit('-').next().and_then(|i| i.parse::<u64>().ok()).unwrap_or(u64::MAX));
            for (n, s) in out {
                println!("{}", s.line(&n));
            }
        }
        _ => usage(),
    }
}
