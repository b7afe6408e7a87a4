//! Parser for the kernel's boot report on COM1.
//!
//! The kernel prints these lines (exact formats; numbers are decimal, MHz and
//! milliseconds may carry a fraction):
//!
//! ```text
//! cadence: cpu <n> online apic=<id> package=<p> core=<c> thread=<t>
//! cadence: cpu <n> smt-siblings [<n>, <n>, ...]
//! cadence: package <p> online: cpus <list> apic <list> (<c> cores, <t> threads per core)
//! cadence: smp: <N> cpus online (<P> packages, <C> cores, <T> threads per core)
//! cadence: tsc <mhz> MHz, lapic timer <mhz> MHz, hz <hz>
//! cadence: boot ok in <ms> ms
//! cadence: warning: <text>
//! cadence: EXCEPTION <text>
//! ```
//!
//! Machines of more than 64 CPUs print the `package` line (one per package) in place of the
//! per-CPU `online` and `smt-siblings` lines; `<list>` is Linux's CPU-list format (`0-3,8`).
//!
//! A line is recognised wherever `cadence: ` starts in it (bootloader noise
//! before it is ignored). Lines that start like a report line but do not
//! parse are kept in [`BootReport::malformed`] so tests can show them.

/// One `cadence: cpu <n> online ...` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuOnline {
    pub cpu: u32,
    pub apic: u32,
    pub package: u32,
    pub core: u32,
    pub thread: u32,
}

/// One `cadence: package <p> online: ...` line (machines of more than 64 CPUs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageOnline {
    pub package: u32,
    /// Logical CPU ids, increasing.
    pub cpus: Vec<u32>,
    /// APIC ids, increasing.
    pub apics: Vec<u32>,
    pub cores: u32,
    pub threads_per_core: u32,
}

/// The `cadence: smp: ...` summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmpSummary {
    pub cpus: u32,
    pub packages: u32,
    pub cores: u32,
    pub threads_per_core: u32,
}

/// The `cadence: tsc ...` line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub tsc_mhz: f64,
    pub lapic_mhz: f64,
    pub hz: u64,
}

/// Everything recognised in one run's COM1 output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BootReport {
    /// `cpu ... online` lines, in output order.
    pub cpus: Vec<CpuOnline>,
    /// `package <p> online: ...` lines, in output order.
    pub packages: Vec<PackageOnline>,
    /// `cpu <n> smt-siblings [...]` lines as (cpu, siblings including itself).
    pub smt_siblings: Vec<(u32, Vec<u32>)>,
    /// The last `smp:` summary line.
    pub smp: Option<SmpSummary>,
    /// The last `tsc` line.
    pub timing: Option<Timing>,
    /// Milliseconds from the last `boot ok in <ms> ms` line.
    pub boot_ms: Option<f64>,
    /// Text after `cadence: warning: `.
    pub warnings: Vec<String>,
    /// Full `cadence: EXCEPTION...` lines.
    pub exceptions: Vec<String>,
    /// Report-shaped lines (cpu/smp/tsc/boot ok) that did not parse.
    pub malformed: Vec<String>,
}

impl BootReport {
    /// Parses COM1 output. Never fails: unknown lines are ignored.
    pub fn parse(output: &str) -> BootReport {
        let mut r = BootReport::default();
        for raw in output.lines() {
            let Some(at) = raw.find("cadence: ") else {
                continue;
            };
            let line = raw[at..].trim_end();
            let rest = &line["cadence: ".len()..];
            let ok = if rest.starts_with("cpu ") && rest.contains(" smt-siblings ") {
                parse_siblings(rest).map(|s| r.smt_siblings.push(s)).is_some()
            } else if rest.starts_with("cpu ") {
                parse_cpu(rest).map(|c| r.cpus.push(c)).is_some()
            } else if rest.starts_with("package ") {
                parse_package(rest).map(|p| r.packages.push(p)).is_some()
            } else if rest.starts_with("smp:") {
                parse_smp(rest).map(|s| r.smp = Some(s)).is_some()
            } else if rest.starts_with("tsc ") {
                parse_timing(rest).map(|t| r.timing = Some(t)).is_some()
            } else if rest.starts_with("boot ok") {
                parse_boot_ok(rest).map(|ms| r.boot_ms = Some(ms)).is_some()
            } else if let Some(w) = rest.strip_prefix("warning: ") {
                r.warnings.push(w.to_string());
                true
            } else if rest.starts_with("EXCEPTION") {
                r.exceptions.push(line.to_string());
                true
            } else {
                true
            };
            if !ok {
                r.malformed.push(line.to_string());
            }
        }
        r
    }

    /// True when the `boot ok` line was seen.
    pub fn booted(&self) -> bool {
        self.boot_ms.is_some()
    }
}

/// Splits `s` into whitespace-separated words after checking that the
/// literal words of `pattern` match; `{}` in the pattern captures a word.
fn fields<'a>(s: &'a str, pattern: &str) -> Option<Vec<&'a str>> {
    let words: Vec<&str> = s.split_whitespace().collect();
    let pats: Vec<&str> = pattern.split_whitespace().collect();
    if words.len() != pats.len() {
        return None;
    }
    let mut caps = Vec::new();
    for (w, p) in words.iter().zip(&pats) {
        match p.split_once("{}") {
            Some((pre, post)) => {
                let v = w.strip_prefix(pre)?.strip_suffix(post)?;
                if v.is_empty() {
                    return None;
                }
                caps.push(v);
            }
            None if w == p => {}
            None => return None,
        }
    }
    Some(caps)
}

fn nums<T: std::str::FromStr>(caps: &[&str]) -> Option<Vec<T>> {
    caps.iter().map(|c| c.parse().ok()).collect()
}

fn parse_cpu(s: &str) -> Option<CpuOnline> {
    let caps = fields(s, "cpu {} online apic={} package={} core={} thread={}")?;
    let n: Vec<u32> = nums(&caps)?;
    Some(CpuOnline { cpu: n[0], apic: n[1], package: n[2], core: n[3], thread: n[4] })
}

fn parse_siblings(s: &str) -> Option<(u32, Vec<u32>)> {
    let (head, list) = s.split_once(" smt-siblings ")?;
    let cpu = fields(head, "cpu {}")?[0].parse().ok()?;
    let inner = list.trim().strip_prefix('[')?.strip_suffix(']')?;
    let ids = inner.split(',').map(|x| x.trim().parse().ok()).collect::<Option<Vec<u32>>>()?;
    Some((cpu, ids))
}

/// Linux's list format (`0-3,8`) as sorted ids; `None` if malformed or not increasing.
pub fn parse_id_list(s: &str) -> Option<Vec<u32>> {
    let mut out: Vec<u32> = Vec::new();
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => {
                let a = part.parse().ok()?;
                (a, a)
            }
        };
        if a > b || out.last().is_some_and(|&l| l >= a) {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

fn parse_package(s: &str) -> Option<PackageOnline> {
    let caps = fields(s, "package {} online: cpus {} apic {} ({} cores, {} threads per core)")?;
    Some(PackageOnline {
        package: caps[0].parse().ok()?,
        cpus: parse_id_list(caps[1])?,
        apics: parse_id_list(caps[2])?,
        cores: caps[3].parse().ok()?,
        threads_per_core: caps[4].parse().ok()?,
    })
}

fn parse_smp(s: &str) -> Option<SmpSummary> {
    let caps = fields(s, "smp: {} cpus online ({} packages, {} cores, {} threads per core)")?;
    let n: Vec<u32> = nums(&caps)?;
    Some(SmpSummary { cpus: n[0], packages: n[1], cores: n[2], threads_per_core: n[3] })
}

fn parse_timing(s: &str) -> Option<Timing> {
    let caps = fields(s, "tsc {} MHz, lapic timer {} MHz, hz {}")?;
    let mhz: Vec<f64> = nums(&caps[..2])?;
    Some(Timing { tsc_mhz: mhz[0], lapic_mhz: mhz[1], hz: caps[2].parse().ok()? })
}

fn parse_boot_ok(s: &str) -> Option<f64> {
    fields(s, "boot ok in {} ms")?[0].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
BIOS noise\r
[ INFO]: bootloader: jumping to kernel\r
cadence: cpu 0 online apic=0 package=0 core=0 thread=0\r
cadence: cpu 1 online apic=1 package=0 core=0 thread=1
cadence: cpu 2 online apic=2 package=0 core=1 thread=0
cadence: cpu 3 online apic=3 package=0 core=1 thread=1
cadence: smp: 4 cpus online (1 packages, 2 cores, 2 threads per core)
cadence: cpu 0 smt-siblings [0, 1]
cadence: cpu 3 smt-siblings [2, 3]
cadence: tsc 2893.5 MHz, lapic timer 1000 MHz, hz 100
cadence: warning: unknown option 'frobnicate'
cadence: boot ok in 412 ms
";

    #[test]
    fn parses_package_lines() {
        let r = BootReport::parse("cadence: package 1 online: cpus 112-223 apic 128-239 (28 cores, 4 threads per core)\ncadence: package 2 online: cpus 3-1 apic 0 (1 cores, 1 threads per core)\n");
        assert_eq!(r.packages.len(), 1);
        let p = &r.packages[0];
        assert_eq!((p.package, p.cpus.len(), p.apics[0], p.cores, p.threads_per_core), (1, 112, 128, 28, 4));
        assert_eq!(r.malformed.len(), 1, "a decreasing range is malformed");
        assert_eq!(parse_id_list("0-2,5"), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_id_list("5,1"), None);
        assert_eq!(parse_id_list(""), None);
    }

    #[test]
    fn parses_full_report() {
        let r = BootReport::parse(SAMPLE);
        assert_eq!(r.cpus.len(), 4);
        assert_eq!(r.cpus[1], CpuOnline { cpu: 1, apic: 1, package: 0, core: 0, thread: 1 });
        assert_eq!(r.smp, Some(SmpSummary { cpus: 4, packages: 1, cores: 2, threads_per_core: 2 }));
        assert_eq!(r.smt_siblings, vec![(0, vec![0, 1]), (3, vec![2, 3])]);
        assert_eq!(r.timing, Some(Timing { tsc_mhz: 2893.5, lapic_mhz: 1000.0, hz: 100 }));
        assert_eq!(r.boot_ms, Some(412.0));
        assert!(r.booted());
        assert_eq!(r.warnings, vec!["unknown option 'frobnicate'".to_string()]);
        assert!(r.exceptions.is_empty());
        assert!(r.malformed.is_empty(), "{:?}", r.malformed);
    }

    #[test]
    fn finds_lines_after_noise_and_collects_exceptions() {
        let out = "xx cadence: cpu 0 online apic=0 package=0 core=0 thread=0\n\
                   cadence: EXCEPTION page fault at 0xdead cr2=0x0\n";
        let r = BootReport::parse(out);
        assert_eq!(r.cpus.len(), 1);
        assert_eq!(r.exceptions, vec!["cadence: EXCEPTION page fault at 0xdead cr2=0x0".to_string()]);
        assert!(!r.booted());
    }

    #[test]
    fn malformed_lines_are_reported_not_parsed() {
        let out = "cadence: cpu x online apic=0 package=0 core=0 thread=0\n\
                   cadence: smp: 4 cpus online (1 packages, 2 cores)\n\
                   cadence: tsc fast MHz, lapic timer 1 MHz, hz 100\n\
                   cadence: boot ok in  ms\n\
                   cadence: cpu 1 smt-siblings [0, x]\n\
                   cadence: something else entirely\n";
        let r = BootReport::parse(out);
        assert!(r.cpus.is_empty() && r.smp.is_none() && r.timing.is_none() && r.boot_ms.is_none());
        assert!(r.smt_siblings.is_empty());
        assert_eq!(r.malformed.len(), 5);
    }

    #[test]
    fn empty_output() {
        assert_eq!(BootReport::parse(""), BootReport::default());
    }
}
