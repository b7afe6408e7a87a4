//! `cadence-boot plot`: latency distributions of several kernels, overlaid on one log–log SVG
//! (the `plotters` crate, SVG backend), for `make compare`'s pictures.
//!
//! * `plot cyclic OUT.svg LABEL=FILE[,FILE...]...`: cyclictest `-h` histograms (Cadence's
//!   `bench cyclic -h US` prints the same format). Every line `NNNNNN c0 c1 ...` is a 1 µs
//!   bucket with one count per thread (rows that are all zero may be missing, as newer
//!   rt-tests omit them); `# Histogram Overflows: o0 o1 ...` counts the samples beyond the
//!   last bucket. Threads, and the files given for one label (sittings), are summed.
//! * `plot wakeup OUT.svg LABEL=TRACE[,TRACE...]...`: the RT wakeup→switch latencies of ftrace
//!   text captures (Cadence's COM2 export or Linux's tracefs), from the same analysis as
//!   `trace report`.
//!
//! Each series is re-binned into [`BINS_PER_DECADE`] logarithmic bins and drawn as the share
//! of its samples per bin, so runs with different sample counts compare; the legend gives the
//! sample count, the median and the samples beyond the histogram (overflows).

use plotters::prelude::*;

/// Logarithmic bins per factor of ten of latency.
pub const BINS_PER_DECADE: u32 = 10;

/// One kernel's latency distribution: (latency in µs, count) pairs plus the samples beyond the
/// histogram's range.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Distribution {
    pub label: String,
    pub counts: Vec<(f64, u64)>,
    pub overflows: u64,
}

impl Distribution {
    /// Samples inside the histogram.
    pub fn samples(&self) -> u64 {
        self.counts.iter().map(|&(_, n)| n).sum()
    }

    /// The median latency (µs) of the samples inside the histogram (overflows count as above
    /// every bucket), or `None` when the median is an overflow or there are no samples.
    pub fn median_us(&self) -> Option<f64> {
        let total = self.samples() + self.overflows;
        let mut sorted = self.counts.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut seen = 0;
        for (us, n) in sorted {
            seen += n;
            if seen * 2 >= total && total > 0 {
                return Some(us);
            }
        }
        None
    }

    /// Adds another distribution's samples (another sitting of the same kernel).
    pub fn merge(&mut self, other: &Distribution) {
        self.counts.extend_from_slice(&other.counts);
        self.overflows += other.overflows;
    }
}

/// Parses cyclictest's `-h` output (other lines around it are ignored).
pub fn parse_cyclictest_hist(text: &str) -> Result<Distribution, String> {
    let mut d = Distribution::default();
    let mut rows = 0;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("# Histogram Overflows:") {
            for w in rest.split_whitespace() {
                d.overflows += w.parse::<u64>().map_err(|_| format!("bad overflow count '{w}' in '{line}'"))?;
            }
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if first.len() != 6 || !first.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let us: u64 = first.parse().map_err(|_| format!("bad bucket in '{line}'"))?;
        let mut n = 0u64;
        for w in words {
            n += w.parse::<u64>().map_err(|_| format!("bad count '{w}' in '{line}'"))?;
        }
        rows += 1;
        if n > 0 {
            d.counts.push((us as f64, n));
        }
    }
    if rows == 0 {
        return Err(String::from("no histogram rows (cyclictest -h output expected)"));
    }
    Ok(d)
}

/// The RT wakeup→switch latencies (µs) of an ftrace text capture.
pub fn wakeup_distribution(trace_text: &str) -> Distribution {
    let r = crate::trace::analyze_text(trace_text);
    let mut d = Distribution::default();
    for &ns in &r.report.rt_samples {
        d.counts.push((ns as f64 / 1000.0, 1));
    }
    d
}

/// Re-bins into logarithmic bins: (bin centre in µs, share of all samples incl. overflows).
/// Latencies under 1 µs go to the first bin.
pub fn log_bins(d: &Distribution) -> Vec<(f64, f64)> {
    let total = (d.samples() + d.overflows) as f64;
    if total == 0.0 {
        return Vec::new();
    }
    let mut bins: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    for &(us, n) in &d.counts {
        let b = (us.max(1.0).log10() * BINS_PER_DECADE as f64).floor() as i64;
        *bins.entry(b).or_default() += n;
    }
    bins.into_iter()
        .map(|(b, n)| {
            let centre = 10f64.powf((b as f64 + 0.5) / BINS_PER_DECADE as f64);
            (centre, n as f64 / total)
        })
        .collect()
}

/// Draws the distributions on one log–log chart into `out` (SVG).
pub fn draw(out: &str, title: &str, x_desc: &str, series: &[Distribution]) -> Result<(), String> {
    let binned: Vec<Vec<(f64, f64)>> = series.iter().map(log_bins).collect();
    let xmax = binned.iter().flatten().map(|p| p.0).fold(10.0, f64::max) * 1.5;
    let ymin = binned.iter().flatten().map(|p| p.1).fold(1.0, f64::min).max(1e-7) / 2.0;
    let root = SVGBackend::new(out, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((1f64..xmax).log_scale(), (ymin..1f64).log_scale())
        .map_err(|e| e.to_string())?;
    chart.configure_mesh().x_desc(x_desc).y_desc("share of samples per bin").draw().map_err(|e| e.to_string())?;
    for (i, (d, points)) in series.iter().zip(&binned).enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let median = d.median_us().map(|m| format!("{m:.0} µs")).unwrap_or_else(|| String::from("beyond range"));
        let label = format!("{} (n={}, median {}, overflows {})", d.label, d.samples() + d.overflows, median, d.overflows);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINUX_HIST: &str = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000013 000000\t000001\n000014 000004\t000002\n000015 000010\t000000\n# Total: 000000014 000000003\n# Min Latencies: 00014 00013\n# Avg Latencies: 00014 00013\n# Max Latencies: 00076 00014\n# Histogram Overflows: 00002 00001\n# Histogram Overflow at cycle number:\n# Thread 0: 00005 00009\n# Thread 1: 00003\nT: 0 ( 1234) P:90 I:1000 C:   1000 Min:     14 Act:   15 Avg:   14 Max:      76\n";

    #[test]
    fn parses_cyclictest_histograms_summing_threads() {
        let d = parse_cyclictest_hist(LINUX_HIST).unwrap();
        assert_eq!(d.counts, vec![(13.0, 1), (14.0, 6), (15.0, 10)]);
        assert_eq!(d.overflows, 3);
        assert_eq!(d.samples(), 17);
        assert_eq!(d.median_us(), Some(15.0));
        assert!(parse_cyclictest_hist("T: 0 ( 1) P:90 I:1000 C: 1 Min: 1 Act: 1 Avg: 1 Max: 1").is_err());
        assert!(parse_cyclictest_hist("# Histogram\n000001 00x001\n").is_err());
    }

    #[test]
    fn log_bins_are_shares_and_sum_with_overflows_to_one() {
        let d = Distribution { label: "x".into(), counts: vec![(1.0, 1), (10.0, 2), (100.0, 3), (1000.0, 3)], overflows: 1 };
        let bins = log_bins(&d);
        assert_eq!(bins.len(), 4);
        let sum: f64 = bins.iter().map(|b| b.1).sum();
        assert!((sum - 0.9).abs() < 1e-9, "{sum}");
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(log_bins(&Distribution::default()).is_empty());
    }

    #[test]
    fn draws_a_valid_svg_with_a_legend_per_series() {
        let a = parse_cyclictest_hist(LINUX_HIST).unwrap();
        let b = Distribution { label: String::from("Cadence"), counts: vec![(5.0, 10), (50.0, 5), (500.0, 1)], overflows: 0 };
        let a = Distribution { label: String::from("Linux <6.1>"), ..a };
        let path = std::env::temp_dir().join(format!("cadence-plot-{}.svg", std::process::id()));
        draw(path.to_str().unwrap(), "cyclictest", "latency (µs)", &[b, a]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("Cadence (n=16") && svg.contains("Linux &lt;6.1&gt; (n=20"), "legend missing");
    }
}
