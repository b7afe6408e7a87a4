//! Host tests: every example workload of the rt-app package loads (or, for the legacy
//! fragments, fails with a precise error); error cases name key and line; the parser and the
//! loader never panic on arbitrary or mutated input.

use cadence_rtapp::json::{self, Kind};
use cadence_rtapp::log::{Row, Summary};
use cadence_rtapp::model::{self, EventKind, Policy, ResKind};
use proptest::prelude::*;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/rtapp")
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    v
}

fn fixture(name: &str) -> model::Workload {
    model::load(&std::fs::read(dir().join(name)).unwrap()).unwrap_or_else(|e| panic!("{}: {}", name, e))
}

#[test]
fn deadline_threads_carry_their_parameters() {
    let w = fixture("deadline.json");
    let dl = |name: &str| w.tasks.iter().find(|t| t.name == name).and_then(|t| t.dl);
    assert_eq!(dl("dl10"), Some(model::DlUs { runtime: 3000, deadline: 10000, period: 10000 }));
    assert_eq!(dl("dl20"), Some(model::DlUs { runtime: 5000, deadline: 15000, period: 20000 }));
    assert_eq!(dl("hog"), None);
    let e = load_str("{\"tasks\": {\"t\": {\"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 500, \"dl-period\": 1000, \"run\": 1}}}")
        .unwrap_err();
    assert_eq!(e.key, "tasks.t.dl-deadline", "{}", e);
}

fn load_str(s: &str) -> Result<model::Workload, model::Error> {
    model::load(s.as_bytes())
}

#[test]
fn all_examples_load() {
    let f = fixtures();
    assert!(f.len() >= 20, "fixtures missing: {}", f.len());
    for (name, bytes) in &f {
        let r = model::load(bytes);
        let legacy = name.starts_with("merge-") || name.starts_with("legacy-");
        match (legacy, r) {
            (false, Ok(w)) => assert!(w.nthreads() >= 1, "{}", name),
            (false, Err(e)) => panic!("{} should load: {}", name, e),
            (true, Ok(_)) => panic!("{} uses the 0.x grammar and should be refused", name),
            (true, Err(e)) => assert!(e.msg.contains("legacy") || e.key == "tasks", "{}: {}", name, e),
        }
    }
    // The acceptance list of issue 8, by name.
    for n in [
        "mp3-short.json", "mp3-long.json", "video-short.json", "video-long.json", "browser-short.json", "browser-long.json",
        "spreading-tasks.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain((1..=8).map(|i| format!("tutorial-example{}.json", i)))
    {
        fixture(&n);
    }
}

#[test]
fn duplicate_keys_are_successive_events() {
    let w = fixture("tutorial-example5.json");
    let t0 = &w.tasks[0];
    assert_eq!(t0.priority, -19);
    assert_eq!(t0.cpus, Some(vec![0]));
    assert_eq!(t0.loops, 1);
    assert_eq!(t0.phases.len(), 2);
    let p1 = &t0.phases[1];
    assert_eq!(p1.loops, 8);
    let kinds: Vec<&str> = p1.events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(kinds, ["lock", "run", "signal", "run", "unlock", "run", "resume", "timer"]);
    assert!(matches!(p1.events[5].kind, EventKind::Run { us: 100000 }));
    // thread1: no phases, loop 3 → one phase looping 3 times, the thread runs it once.
    let t1 = &w.tasks[1];
    assert_eq!((t1.loops, t1.phases.len(), t1.phases[0].loops), (1, 1, 3));
    assert_eq!(t1.phases[0].events.len(), 8);
}

#[test]
fn bare_suspend_takes_the_thread_name() {
    let w = fixture("video-short.json");
    let sf = w.tasks.iter().find(|t| t.name == "surfaceflinger").unwrap();
    let EventKind::Suspend { cond, .. } = sf.phases[0].events[0].kind else { panic!() };
    assert_eq!(w.resources[cond].name, "surfaceflinger");
    assert_eq!(w.resources[cond].kind, ResKind::Cond);
}

#[test]
fn numbered_events_and_barriers() {
    let w = fixture("tutorial-example7.json");
    let ev: Vec<&str> = w.tasks[0].phases[0].events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(ev[0], "runtime1");
    assert!(matches!(w.tasks[0].phases[0].events[0].kind, EventKind::Runtime { us: 1000 }));
    let b = w.resources.iter().find(|r| r.name == "FIRST").unwrap();
    assert_eq!((b.kind, b.users), (ResKind::Barrier, 2));
}

#[test]
fn unique_timers_and_instances() {
    let w = fixture("tutorial-example3.json");
    assert_eq!(w.nthreads(), 12);
    let names: Vec<String> = w.threads().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names[0], "thread0-0");
    assert_eq!(names[11], "thread0-11");
    let EventKind::Timer { timer, period_us, absolute } = w.tasks[0].phases[0].events[1].kind else { panic!() };
    assert!(w.resources[timer].unique && period_us == 30000 && !absolute);
}

#[test]
fn duplicate_phase_names_are_kept() {
    let w = fixture("spreading-tasks.json");
    let names: Vec<&str> = w.tasks[1].phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["light1", "heavy1", "light2", "heavy11"]);
    assert_eq!(w.global.duration, 60);
}

#[test]
fn global_fields() {
    let w = fixture("cpufreq-dvfs.json");
    assert_eq!(w.global.calibration, model::Calibration::NsPerLoop(128));
    assert_eq!(w.global.log_size, model::LogSize::Mb(2));
    assert_eq!(w.tasks[0].policy, Policy::Fifo);
    assert_eq!(w.tasks[0].priority, 10);
    let w = fixture("cpufreq-calibration.json");
    assert_eq!(w.tasks[0].policy, Policy::Fifo);
}

fn err_of(s: &str) -> model::Error {
    load_str(s).expect_err("should fail")
}

#[test]
fn errors_name_key_and_line() {
    let e = err_of("{\n \"tasks\": {\n  \"t\": {\n   \"run\": 10,\n   \"sleeep\": 5\n  }\n }\n}");
    assert_eq!((e.line, e.key.as_str()), (5, "tasks.t.sleeep"));
    let e = err_of("{\"tasks\": {\"t\": {\"policy\": \"SCHED_FIFO\",\n\"priority\": 120, \"run\": 1}}}");
    assert_eq!((e.line, e.key.as_str()), (2, "tasks.t.priority"));
    assert!(e.msg.contains("1..=99"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"priority\": -21, \"run\": 1}}}");
    assert!(e.msg.contains("nice"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 1,\n\"unlock\": \"m\"}}}");
    assert_eq!((e.line, e.key.as_str()), (2, "tasks.t.unlock"));
    assert!(e.msg.contains("undefined"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 1, \"resume\": \"nobody\"}}}");
    assert!(e.msg.contains("undefined"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"run\": \"ten\"}}}");
    assert!(e.key == "tasks.t.run" && e.msg.contains("integer"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 1}}, \"global\": {\"default_policy\": \"SCHED_FOO\"}}");
    assert_eq!(e.key, "global.default_policy");
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 1}}, \"global\": {\"durration\": 1}}");
    assert_eq!(e.key, "global.durration");
    let e = err_of("{\"tasks\": {\"t\": {\"loop\": 1, \"loop\": 2, \"run\": 1}}}");
    assert!(e.msg.contains("duplicate"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"loop\": 1}}}");
    assert!(e.msg.contains("no events"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"timer\": {\"ref\": \"a\"}}}}");
    assert_eq!(e.key, "tasks.t.timer.period");
    let e = err_of("{\"tasks\": {\"t\": {\"cpus\": [0, 64], \"run\": 1}}}");
    assert_eq!(e.key, "tasks.t.cpus");
    let e = err_of("{\"tasks\": {\"t\": {\"policy\": \"SCHED_DEADLINE\", \"run\": 1}}}");
    assert!(e.msg.contains("dl-runtime"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"phases\": {\"p\": {\"policy\": \"SCHED_DEADLINE\", \"run\": 1}}}}}");
    assert!(e.msg.contains("phase cannot switch"), "{}", e);
    let e = err_of("{\"tasks\": {\"t\": {\"fork\": \"x\"}}}");
    assert!(e.msg.contains("fork"));
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 1,}},\n\"oops\": 3}");
    assert_eq!((e.line, e.key.as_str()), (2, "oops"));
    // Syntax errors carry the line.
    let e = err_of("{\n\"tasks\": {\n\"t\": {\"run\": 1 \"sleep\": 2}}}");
    assert_eq!(e.line, 3);
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 99999999999999999999}}}");
    assert!(e.msg.contains("range"), "{}", e);
    assert_eq!(err_of("").line, 1);
    assert!(err_of("[1,2]").msg.contains("object"));
    let e = err_of("{\"tasks\": {\"t\": {\"run\": 1}}} /* x");
    assert!(e.msg.contains("comment"));
}

#[test]
fn extensions() {
    let w = load_str("{\"tasks\": {\"t\": {\"tty\": 2, \"session\": true, \"group\": \"g1\", \"instance\": 3, \"run\": 1}}}").unwrap();
    assert_eq!((w.tasks[0].tty, w.tasks[0].session, w.tasks[0].group.as_deref()), (Some(2), true, Some("g1")));
    assert!(err_of("{\"tasks\": {\"t\": {\"tty\": \"x\", \"run\": 1}}}").key == "tasks.t.tty");
}

#[test]
fn json_details() {
    let v = json::parse(b"{\"a\": \"\\u00e9\\ud83d\\ude00\", \"b\": [1, -2.5e3, true, null], // c\n \"a\": 1,}").unwrap();
    let Kind::Object(m) = &v.kind else { panic!() };
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].value.kind, Kind::Str("é😀".into()));
    assert_eq!(m[2].key, "a");
    assert_eq!(m[2].line, 2);
    assert!(json::parse(b"{\"a\": tru}").is_err());
    assert!(json::parse(b"{\"a\": \"\\ud800\"}").is_err());
    assert!(json::parse(b"\xff").is_err());
    let deep = "[".repeat(100) + &"]".repeat(100);
    assert!(json::parse(deep.as_bytes()).unwrap_err().msg.contains("nesting"));
}

#[test]
fn peer_rewrite_is_strict_and_equivalent() {
    for (name, bytes) in fixtures() {
        let doc = json::parse(&bytes).unwrap();
        let Ok(w) = model::from_value(&doc) else { continue };
        let out = cadence_rtapp::peer::rewrite(&doc, Some(2), "/", "rtapp");
        let doc2 = json::parse(out.as_bytes()).unwrap_or_else(|e| panic!("{}: {}\n{}", name, e, out));
        // No duplicate keys, no bare members anywhere.
        fn check(v: &json::Value) {
            if let Kind::Object(m) = &v.kind {
                let mut keys: Vec<&str> = m.iter().map(|m| m.key.as_str()).collect();
                keys.sort();
                keys.dedup();
                assert_eq!(keys.len(), m.len());
                for x in m {
                    assert!(!x.bare);
                    check(&x.value);
                }
            }
        }
        check(&doc2);
        assert!(!out.contains("/*"));
        let w2 = model::from_value(&doc2).unwrap_or_else(|e| panic!("{}: {}", name, e));
        assert_eq!(w2.global.duration, 2);
        assert_eq!(w.threads(), w2.threads());
        for (a, b) in w.tasks.iter().zip(&w2.tasks) {
            assert_eq!(a.phases.len(), b.phases.len());
            for (pa, pb) in a.phases.iter().zip(&b.phases) {
                let ka: Vec<_> = pa.events.iter().map(|e| model::event_name(&e.key)).collect();
                let kb: Vec<_> = pb.events.iter().map(|e| model::event_name(&e.key)).collect();
                assert_eq!(ka, kb, "{}", name);
            }
        }
    }
}

#[test]
fn log_rows_and_summary() {
    let line =
        "   0    25906    15307    97345        10927568        11024913           16591      79155      10000     100000       2801";
    let r = Row::parse(line).unwrap();
    assert_eq!(r.format(), line);
    assert_eq!(r.slack, 79155);
    let mut s = Summary::default();
    s.add(&r);
    s.add(&Row { slack: -5, c_period: 100, wu_lat: 1, ..r });
    s.add(&Row { slack: 0, c_period: 0, wu_lat: 9000, ..r });
    assert_eq!(s.line("t-0"), "rtapp: thread=t-0 runs=3 missed=1 wu_lat_avg_us=1401 wu_lat_max_us=9000 slack_min_us=-5");
    assert!(Row::parse("#idx perf").is_none());
    assert!(Row::parse("1 2 3").is_none());
}

fn mutate(base: &[u8], ops: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut v = base.to_vec();
    for &(pos, byte, op) in ops {
        if v.is_empty() {
            v.push(byte);
            continue;
        }
        let p = pos % v.len();
        match op % 4 {
            0 => v[p] = byte,
            1 => {
                v.remove(p);
            }
            2 => v.insert(p, byte),
            _ => v.truncate(p),
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = model::load(&bytes);
    }

    #[test]
    fn never_panics_on_json_ish(s in "[{}\\[\\]\",:0-9a-z \\-\n/*.]{0,300}") {
        let _ = model::load(s.as_bytes());
    }

    #[test]
    fn never_panics_on_mutated_examples(
        which in 0usize..64,
        ops in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8),
    ) {
        let f = fixtures();
        let (_, base) = &f[which % f.len()];
        let m = mutate(base, &ops);
        if let Ok(doc) = json::parse(&m) {
            if model::from_value(&doc).is_ok() {
                let _ = cadence_rtapp::peer::rewrite(&doc, Some(1), "/", "x");
            }
        }
    }
}
