//! rt-app's per-thread log rows and the one-line summary Cadence prints for each thread.
//!
//! A row is one execution of one phase (rt-app 1.0 `log_timing`), all times in µs:
//! `idx perf run period start end rel_st slack c_duration c_period wu_lat`, printed with
//! rt-app's format `"%4d %8lu %8lu %8lu %15llu %15llu %15llu %10ld %10lu %10lu %10lu"`.
//!
//! The summary (`rtapp: thread=<name> runs=<n> missed=<n> wu_lat_avg_us=<n> wu_lat_max_us=<n>
//! slack_min_us=<n>`) is computed from rows only, so the same code summarises Cadence's rows
//! and the rows of Linux rt-app's log files:
//! * `runs`: rows (phase executions);
//! * `missed`: rows of phases with a timer (`c_period > 0`) whose `slack` is negative;
//! * `wu_lat_avg_us`: mean `wu_lat` over rows with a timer (0 if none), rounded down;
//! * `wu_lat_max_us`: largest `wu_lat` over all rows;
//! * `slack_min_us`: smallest `slack` over rows with a timer (0 if none).

use alloc::format;
use alloc::string::String;

/// Column header line of rt-app's log files.
pub const HEADER: &str =
    "#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat";

/// One log row (µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Row {
    pub idx: u32,
    pub perf: u64,
    pub run: u64,
    pub period: u64,
    pub start: u64,
    pub end: u64,
    pub rel_st: u64,
    pub slack: i64,
    pub c_duration: u64,
    pub c_period: u64,
    pub wu_lat: u64,
}

impl Row {
    /// The row as rt-app prints it.
    pub fn format(&self) -> String {
        format!(
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}",
            self.idx,
            self.perf,
            self.run,
            self.period,
            self.start,
            self.end,
            self.rel_st,
            self.slack,
            self.c_duration,
            self.c_period,
            self.wu_lat
        )
    }

    /// Parses a data line (`None` for comments, headers and anything malformed).
    pub fn parse(line: &str) -> Option<Row> {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            return None;
        }
        let mut it = line.split_ascii_whitespace();
        let mut u = || it.next().and_then(|w| w.parse::<u64>().ok());
        let idx = u32::try_from(u()?).ok()?;
        let (perf, run, period, start, end, rel_st) = (u()?, u()?, u()?, u()?, u()?, u()?);
        let slack = it.next()?.parse::<i64>().ok()?;
        let mut u = || it.next().and_then(|w| w.parse::<u64>().ok());
        let (c_duration, c_period, wu_lat) = (u()?, u()?, u()?);
        if it.next().is_some() {
            return None;
        }
        Some(Row { idx, perf, run, period, start, end, rel_st, slack, c_duration, c_period, wu_lat })
    }
}

/// `# Policy : SCHED_OTHER priority : 0`, the first line of an rt-app log.
pub fn policy_header(policy: &str, priority: i32) -> String {
    format!("# Policy : {} priority : {}", policy, priority)
}

/// Running summary of one thread's rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub runs: u64,
    pub missed: u64,
    pub timed: u64,
    pub wu_lat_sum: u64,
    pub wu_lat_max: u64,
    pub slack_min: Option<i64>,
}

impl Summary {
    pub fn add(&mut self, r: &Row) {
        self.runs += 1;
        self.wu_lat_max = self.wu_lat_max.max(r.wu_lat);
        if r.c_period > 0 {
            self.timed += 1;
            self.wu_lat_sum = self.wu_lat_sum.saturating_add(r.wu_lat);
            if r.slack < 0 {
                self.missed += 1;
            }
            self.slack_min = Some(self.slack_min.map_or(r.slack, |m| m.min(r.slack)));
        }
    }

    pub fn wu_lat_avg(&self) -> u64 {
        self.wu_lat_sum.checked_div(self.timed).unwrap_or(0)
    }

    /// The summary line for thread `name`.
    pub fn line(&self, name: &str) -> String {
        format!(
            "rtapp: thread={} runs={} missed={} wu_lat_avg_us={} wu_lat_max_us={} slack_min_us={}",
            name,
            self.runs,
            self.missed,
            self.wu_lat_avg(),
            self.wu_lat_max,
            self.slack_min.unwrap_or(0)
        )
    }
}
