//! `cadence-boot trace report FILE [--svg OUT]`: the kernel tracer's report, computed on the
//! host from the ftrace text the kernel streamed over COM2 (`make run TRACE=FILE`).
//!
//! Parsing, the analysis and the report text come from `cadence-trace`, the code the kernel's
//! `trace report` runs, so for the same trace both print the same report (timestamps are
//! microseconds in the text and the analysis truncates the kernel's to microseconds too).
//! The SVG is a hand-written bar chart of the log2 wakeup-latency histogram.

use cadence_trace::ftrace::{self, ParseError};
use cadence_trace::report::{self, Histogram, Report};
use std::fmt::Write;

/// A report computed from trace text, with the lines that did not parse (1-based line number).
pub struct TraceReport {
    pub report: Report,
    pub errors: Vec<(usize, ParseError)>,
}

/// Parses ftrace text (events in file order, as the kernel writes them: merged by time) and
/// analyzes it; lost events come from the `entries-in-buffer/entries-written` header line.
pub fn analyze_text(text: &str) -> TraceReport {
    let parsed = ftrace::parse_text(text);
    let report = report::analyze(&parsed.events, parsed.lost());
    TraceReport { report, errors: parsed.errors }
}

/// An `--smt` spec: sibling groups separated by `:`, CPUs by `,` (e.g. `0,1:2,3`).
pub fn parse_smt(spec: &str) -> Result<Vec<cadence_sched::CpuMask>, String> {
    spec.split(':')
        .map(|g| {
            g.split(',')
                .map(|c| c.trim().parse::<usize>().ok().filter(|&c| c < 64))
                .collect::<Option<cadence_sched::CpuMask>>()
                .ok_or_else(|| format!("bad --smt group '{g}' (want e.g. 0,1:2,3)"))
        })
        .collect()
}

/// `cadence-boot trace check coresched FILE [--smt 0,1:2,3]`: the kernel's
/// `trace check coresched` on an exported trace. SMT groups default to pairs (0-1, 2-3, …,
/// QEMU's `threads=2` numbering) over the CPUs the trace shows. Returns the report and the
/// malformed lines.
pub fn check_coresched_text(
    text: &str,
    smt: Option<&str>,
) -> Result<(cadence_sched::core_sched::CheckReport, Vec<(usize, ParseError)>), String> {
    let parsed = ftrace::parse_text(text);
    let groups = match smt {
        Some(spec) => parse_smt(spec)?,
        None => {
            let ncpus = parsed.events.iter().map(|e| e.cpu as usize + 1).max().unwrap_or(0);
            cadence_trace::coresched::pairs(ncpus)
        }
    };
    let end = parsed.events.iter().map(|e| e.ts_ns).max();
    let r = cadence_trace::coresched::check(&parsed.events, &groups, end).map_err(|e| format!("cannot check: {e}"))?;
    Ok((r, parsed.errors))
}

/// Largest `-b` of `trace check rt` and `trace check wc` (µs): a minute, as the kernel's.
pub const MAX_BOUND_US: u64 = 60_000_000;

/// Parses the `-b US` of `trace check rt` and `trace check wc` into ns.
pub fn parse_bound_us(us: &str) -> Result<u64, String> {
    match us.parse::<u64>() {
        Ok(n) if n <= MAX_BOUND_US => Ok(n * 1000),
        _ => Err(format!("-b needs a bound in microseconds in 0..={MAX_BOUND_US}, got '{us}'")),
    }
}

/// `cadence-boot trace check rt FILE [-b US]`: the kernel's `trace check rt` on an exported
/// trace, with the affinities of its `# cadence-affinity:` lines (none in a Linux trace: every
/// task may use every CPU). The CPU count is the header's `#P` (or the highest CPU seen + 1),
/// the end the last event. Returns the report and the malformed lines.
pub fn check_rt_text(
    text: &str,
    bound_ns: u64,
    smt: &[cadence_sched::CpuMask],
) -> (cadence_trace::rtcheck::RtReport, Vec<(usize, ParseError)>) {
    let parsed = ftrace::parse_text(text);
    let ncpus = trace_cpus(&parsed);
    let opts = cadence_trace::rtcheck::Options {
        bound_ns,
        end_ns: parsed.events.iter().map(|e| e.ts_ns).max(),
        ..cadence_trace::rtcheck::Options::new(ncpus)
    }
    .with_smt(smt);
    let r = cadence_trace::rtcheck::check(&parsed.events, &opts, |pid| parsed.affinity.get(&pid).copied());
    (r, parsed.errors)
}

/// The CPU count of a trace: the header's `#P` (never fewer than the highest CPU seen + 1),
/// else the highest CPU seen + 1.
fn trace_cpus(parsed: &ftrace::Parsed) -> u32 {
    let seen = parsed.events.iter().map(|e| e.cpu.saturating_add(1)).max().unwrap_or(0);
    parsed.entries.map_or(seen, |(_, _, p)| p.max(seen))
}

/// Parses the `--cpus N` of `trace check wc` (N >= 1).
pub fn parse_cpus(n: &str) -> Result<u32, String> {
    match n.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("--cpus needs a CPU count of at least 1, got '{n}'")),
    }
}

/// `cadence-boot trace check wc FILE [-b US] [--cpus N]`: the work-conservation checker
/// (`cadence_trace::wccheck`) on an exported trace (Cadence's or Linux's), with the affinities
/// of its `# cadence-affinity:` lines (none: every task may use every CPU). The CPU count is
/// `cpus` if given (events of CPUs beyond it are ignored), else the header's `#P`, else the
/// highest CPU seen + 1: a CPU that records no event is still capacity (the denominator of the
/// wasted fractions), so a Linux trace without its header wants `--cpus`. The end is the
/// last event. Returns the report and the malformed lines.
pub fn check_wc_text(text: &str, bound_ns: u64, cpus: Option<u32>) -> (cadence_trace::wccheck::WcReport, Vec<(usize, ParseError)>) {
    let parsed = ftrace::parse_text(text);
    let opts = cadence_trace::wccheck::Options {
        bound_ns,
        end_ns: parsed.events.iter().map(|e| e.ts_ns).max(),
        ..cadence_trace::wccheck::Options::new(cpus.unwrap_or_else(|| trace_cpus(&parsed)))
    };
    let r = cadence_trace::wccheck::check(&parsed.events, &opts, |pid| parsed.affinity.get(&pid).copied());
    (r, parsed.errors)
}

/// The report text (identical to the kernel's `trace report`).
pub fn report_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = r.write(&mut s);
    s
}

/// `ns` in the largest unit that keeps it whole-ish: `512ns`, `4us`, `2ms`, `1s`.
fn human_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    for (div, unit) in UNITS {
        if ns >= div {
            let v = ns as f64 / div as f64;
            return if v >= 10.0 { format!("{:.0}{}", v, unit) } else { format!("{:.1}{}", v, unit) };
        }
    }
    format!("{}ns", ns)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An SVG bar chart of `hist` (one bar per log2 bucket from the first to the last non-empty
/// one, labelled with the bucket's lower bound, the count above each bar).
pub fn histogram_svg(hist: &Histogram, title: &str) -> String {
    let (first, last) = hist.span().unwrap_or((0, 0));
    let n = last - first + 1;
    let (bar_w, gap, left, top, plot_h) = (40.0, 8.0, 60.0, 50.0, 300.0);
    let width = left + n as f64 * (bar_w + gap) + 20.0;
    let height = top + plot_h + 70.0;
    let peak = hist.buckets[first..=last].iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{left}" y="25" font-size="15">{}</text>"#, xml_escape(title));
    let base = top + plot_h;
    let _ = writeln!(s, r#"<line x1="{left}" y1="{base}" x2="{:.0}" y2="{base}" stroke="black"/>"#, width - 10.0);
    let _ = writeln!(s, r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="black"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="15" y="{:.0}" transform="rotate(-90 15 {:.0})" text-anchor="middle">wakeups</text>"#,
        top + plot_h / 2.0,
        top + plot_h / 2.0
    );
    for (k, i) in (first..=last).enumerate() {
        let c = hist.buckets[i];
        let h = (c as f64 / peak * plot_h).max(if c > 0 { 1.0 } else { 0.0 });
        let x = left + gap / 2.0 + k as f64 * (bar_w + gap);
        let _ = writeln!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="{bar_w}" height="{h:.1}" fill="#4878d0"><title>[{}, {}) ns: {}</title></rect>"##,
            base - h,
            Histogram::lower(i),
            Histogram::upper(i),
            c
        );
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{c}</text>"#, x + bar_w / 2.0, base - h - 4.0);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x + bar_w / 2.0,
            base + 15.0,
            human_ns(Histogram::lower(i))
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.0}" y="{:.0}" text-anchor="middle">wakeup latency (log2 buckets, lower bound)</text>"#,
        left + (width - left) / 2.0,
        base + 40.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> String {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures").join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The host's report of the recorded trace is, line for line, what the kernel printed.
    #[test]
    fn recorded_trace_reports_like_the_kernel() {
        let r = analyze_text(&fixture("trace-pipe-200.txt"));
        assert!(r.errors.is_empty(), "{:?}", &r.errors[..r.errors.len().min(5)]);
        assert!(r.report.all.count > 0);
        let kernel = fixture("trace-pipe-200.report.txt");
        assert_eq!(report_text(&r.report), kernel);
    }

    /// A trace captured on the Linux peer (Debian 6.1 PREEMPT_RT, `-smp 4`, tracefs events
    /// sched_wakeup, sched_waking, sched_wakeup_new, sched_switch; `chrt -f 50 pipetest 100 0 2`)
    /// reads with the same analysis: Linux's 7-column flags, its header and `sched_waking`
    /// (not used by the report) are accepted, and RT and fair wakeups are told apart by prio.
    #[test]
    fn linux_ftrace_reads_with_the_same_analysis() {
        let text = fixture("linux-6.1-rt-pipetest.txt");
        let r = analyze_text(&text);
        assert!(r.errors.is_empty(), "{:?}", &r.errors[..r.errors.len().min(5)]);
        let lines = text.lines().filter(|l| !l.starts_with('#')).count() as u64;
        let waking = text.lines().filter(|l| l.contains(" sched_waking: ")).count() as u64;
        assert_eq!(r.report.events, lines - waking, "every event but sched_waking is used");
        assert!(r.report.rt.count > 0 && r.report.fair.count > 0, "RT (pipetest, FIFO 50) and fair wakeups");
        assert!(report_text(&r.report).starts_with("trace: "));
    }

    #[test]
    fn svg_has_a_bar_per_bucket() {
        let r = analyze_text(&fixture("trace-pipe-200.txt"));
        let svg = histogram_svg(&r.report.hist, "wakeup latency");
        let (first, last) = r.report.hist.span().expect("samples");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<rect x=").count(), last - first + 1);
        // Empty histogram: still a valid document.
        let empty = histogram_svg(&Histogram::default(), "a<b");
        assert!(empty.contains("a&lt;b") && empty.ends_with("</svg>\n"));
    }

    #[test]
    fn garbage_is_reported_not_fatal() {
        let r = analyze_text("# tracer: nop\nnot a trace line\n\u{0}\u{1}-[]\n");
        assert_eq!(r.errors.len(), 2);
        assert_eq!(r.report.events, 0);
    }

    #[test]
    fn rt_check_of_text_uses_the_affinity_lines() {
        // RT pid 3 (prio 9) waits 500 us on CPU 0 while CPU 1 idles.
        let text = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 4/4   #P:2
# cadence-affinity: pid=3 mask=0x1
          <idle>-0       [000] d..2.     1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt-a next_pid=2 next_prio=5
          <idle>-0       [001] d..2.     1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=burn next_pid=4 next_prio=120
            rt-a-2       [000] d..2.     1.000100: sched_wakeup: comm=rt-b pid=3 prio=9 target_cpu=000
            burn-4       [001] d..2.     1.000600: sched_switch: prev_comm=burn prev_pid=4 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let (r, errors) = check_rt_text(text, 100_000, &[]);
        assert!(errors.is_empty());
        assert_eq!(r.to_string(), "rt check: violations=0 checked_ns=600000", "pid 3 may only use CPU 0");
        let unpinned = text.replace("# cadence-affinity: pid=3 mask=0x1\n", "");
        let (r, _) = check_rt_text(&unpinned, 100_000, &[]);
        assert_eq!(r.to_string(), "rt check: violations=1 checked_ns=600000");
        assert_eq!(r.worst[0].to_string(), "violation: 1.000100 cpu 1: rt rt-b:3 (prio 9) waited 500 us while burn:4 (prio 120) ran");
        assert_eq!(check_rt_text(&unpinned, 500_000, &[]).0.violations, 0);
        assert_eq!(parse_bound_us("250"), Ok(250_000));
        assert!(parse_bound_us("x").is_err() && parse_bound_us("-1").is_err() && parse_bound_us("60000001").is_err());
    }

    fn wc_text(text: &str, bound_ns: u64, cpus: Option<u32>) -> String {
        let (r, errors) = check_wc_text(text, bound_ns, cpus);
        assert!(errors.is_empty(), "{:?}", &errors[..errors.len().min(5)]);
        let mut out = String::new();
        let _ = r.write(&mut out);
        out
    }

    #[test]
    fn wc_check_of_text_uses_the_header_the_affinity_lines_and_cpus() {
        // CPU 1 idles from 1.000000; fair pid 3 (allowed on CPUs 0 and 1) waits on busy CPU 0
        // from 1.001000 to 1.008000. CPU 2 and 3 record nothing (the header says #P:4).
        let text = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 4/4   #P:4
# cadence-affinity: pid=3 mask=0x3
          <idle>-0       [000] d..2.     1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=burn next_pid=2 next_prio=120
            idle-9       [001] d..2.     1.000000: sched_switch: prev_comm=idle prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
            burn-2       [000] d..2.     1.001000: sched_wakeup: comm=sh pid=3 prio=120 target_cpu=000
            burn-2       [000] d..2.     1.008000: sched_switch: prev_comm=burn prev_pid=2 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=3 next_prio=120
";
        assert_eq!(
            wc_text(text, cadence_trace::wccheck::DEFAULT_BOUND_NS, None),
            "violation: 1.001000 cpu 1: idle 7000 us while sh:3 (prio 120) waited (1 waiting at most)\n\
             wc: cpus=4 bound_us=4000 wasted_us=7000 idle_waiting_us=7000 window=1.000000..1.008000\n\
             wc check: violations=1 longest_us=7000 wasted_permille=218.750 idle_waiting_permille=218.750 checked_ns=8000000\n"
        );
        // 7 ms of 2 CPUs x 8 ms without the header; CPU 1 ignored with --cpus 1.
        let headless = text.replace("# entries-in-buffer/entries-written: 4/4   #P:4\n", "");
        assert!(
            wc_text(&headless, 4_000_000, None).ends_with(" wasted_permille=437.500 idle_waiting_permille=437.500 checked_ns=8000000\n")
        );
        assert!(wc_text(text, 4_000_000, Some(1))
            .ends_with("wc check: violations=0 longest_us=0 wasted_permille=0.000 idle_waiting_permille=0.000 checked_ns=8000000\n"));
        // Pinned to CPU 0: nothing; a longer bound: not a violation, still idle-waiting time.
        let pinned = text.replace("mask=0x3", "mask=0x1");
        assert!(wc_text(&pinned, 4_000_000, None).starts_with("wc: cpus=4 bound_us=4000 wasted_us=0 idle_waiting_us=0 "));
        assert!(wc_text(text, 7_000_000, None).starts_with("wc: cpus=4 bound_us=7000 wasted_us=0 idle_waiting_us=7000 "));
        assert_eq!(parse_cpus("8"), Ok(8));
        assert!(parse_cpus("0").is_err() && parse_cpus("-1").is_err() && parse_cpus("x").is_err());
    }

    /// `tools/capture-wc-trace.sh tests/fixtures/linux-6.12-wc.txt`: Debian's Linux 6.12 (EEVDF)
    /// on the peer at `-smp 4`, six busybox `sh` counting loops (more hogs than CPUs, ending one
    /// by one) and two sleepers (4 ms `usleep` naps); events sched_switch, sched_wakeup,
    /// sched_wakeup_new, sched_migrate_task, sched_process_exit; affinity lines for the tasks
    /// alive at the end with a narrower Cpus_allowed (the per-CPU kernel threads). Linux left
    /// CPU 2 idle for 5.7 ms while a sleeper's shell it had woken on busy CPU 0 waited there.
    #[test]
    fn linux_6_12_trace_checks_work_conservation() {
        let text = fixture("linux-6.12-wc.txt");
        assert!(text.len() < 300_000);
        assert!(ftrace::parse_text(&text).affinity.len() > 4, "per-CPU kernel threads are pinned");
        assert_eq!(
            wc_text(&text, cadence_trace::wccheck::DEFAULT_BOUND_NS, None),
            "violation: 3.876042 cpu 2: idle 5620 us while sh:194 (prio 120) waited (2 waiting at most)\n\
             wc: cpus=4 bound_us=4000 wasted_us=5620 idle_waiting_us=14711 window=3.581714..4.074358\n\
             wc check: violations=1 longest_us=5620 wasted_permille=2.851 idle_waiting_permille=7.465 checked_ns=492644000\n"
        );
        // Without the affinity lines the pinned threads' waits count as idle-waiting time too.
        let unpinned: String = text.lines().filter(|l| !l.starts_with("# cadence-affinity:")).map(|l| format!("{l}\n")).collect();
        assert!(wc_text(&unpinned, 4_000_000, None).ends_with(" idle_waiting_permille=10.479 checked_ns=492644000\n"));
        // The RT check of the same trace: no RT task ever waited.
        assert_eq!(check_rt_text(&text, 100_000, &[]).0.to_string(), "rt check: violations=0 checked_ns=492644000");
    }

    /// The 6.1 PREEMPT_RT pipetest trace (see `linux_ftrace_reads_with_the_same_analysis`): its
    /// `rcuc/N` threads are per-CPU but the trace has no affinity lines, so their waits behind
    /// busy CPUs count (a Linux trace's limit, documented). The 15 violations counted before
    /// tasks queued on idle CPUs were told apart were mostly `rcu_preempt` woken onto idle
    /// CPU 0 and run there 4.6 ms later, continuing intervals that other waits had begun.
    #[test]
    fn linux_6_1_trace_checks_work_conservation() {
        let out = wc_text(&fixture("linux-6.1-rt-pipetest.txt"), cadence_trace::wccheck::DEFAULT_BOUND_NS, None);
        assert_eq!(out.lines().filter(|l| l.starts_with("violation: ")).count(), 1);
        assert!(
            out.ends_with(
                "wc check: violations=1 longest_us=5900 wasted_permille=14.116 idle_waiting_permille=161.718 checked_ns=104487000\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn human_units() {
        assert_eq!(human_ns(512), "512ns");
        assert_eq!(human_ns(2048), "2.0us");
        assert_eq!(human_ns(131072), "131us");
        assert_eq!(human_ns(1 << 30), "1.1s");
    }
}
