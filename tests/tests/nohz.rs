//! Tickless idle (Linux's NO_HZ_IDLE, issue 60's idle-interrupt target): at `-smp 8` with one
//! CPU-bound task, the idle CPUs take fewer than 2 local timer interrupts a second
//! (`/proc/interrupts`' LOC line read twice, a second apart, as on Linux); booted with
//! `nohz=off` the same CPUs take about `hz` (250) a second, so the scenario shows it measures.
//!
//! The spinner is pinned to CPU 7 and the measuring shell to CPU 0 (`taskset`), so CPUs 1-6
//! run nothing of the test's: they are held to the target; CPU 0 wakes for the shell's sleeps
//! and commands and is only printed.

use cadence_boot::KernelExit;
use cadence_tests::{boot, initramfs, qemu};

/// The guest's script: spinner on CPU 7, this shell on CPU 0, then uptime and LOC twice.
const SCRIPT: &str = "taskset -c 7 sh -c 'while :; do :; done' & spin=$!; taskset -p -c 0 $$ >/dev/null; sleep 1; \
                      cat /proc/uptime; grep LOC /proc/interrupts; sleep 1; cat /proc/uptime; grep LOC /proc/interrupts; kill $spin";

const CPUS: usize = 8;
const BUSY: usize = 7;
const HZ: f64 = 250.0;

/// (uptime s, LOC per CPU) at each of the two readings.
fn readings(lines: &[String]) -> Option<[(f64, Vec<u64>); 2]> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.trim_start().strip_prefix("LOC:") else { continue };
        let counts: Vec<u64> = rest.split_whitespace().take(CPUS).map(|w| w.parse().ok()).collect::<Option<_>>()?;
        let up: f64 = lines.get(i.checked_sub(1)?)?.split_whitespace().next()?.parse().ok()?;
        out.push((up, counts));
    }
    out.try_into().ok()
}

/// Boots with `extra` options and returns the local timer interrupts per second of each CPU.
fn loc_rates(extra: &str) -> (cadence_tests::Run, Vec<f64>) {
    let run = boot(qemu().smp(CPUS.to_string()).initrd(initramfs()).args(format!("{extra} sh=\"{SCRIPT}\" poweroff")));
    run.expect_exit(KernelExit::Success);
    let Some([(t0, a), (t1, b)]) = readings(&run.lines()) else { run.fail("no two uptime + LOC readings") };
    let secs = t1 - t0;
    run.check(secs > 0.5 && a.len() == CPUS && b.len() == CPUS, format!("readings {secs} s apart, {} and {} CPUs", a.len(), b.len()));
    let rates = a.iter().zip(&b).map(|(x, y)| y.saturating_sub(*x) as f64 / secs).collect();
    (run, rates)
}

#[test]
fn idle_cpus_take_under_two_timer_interrupts_a_second() {
    let (run, rates) = loc_rates("");
    eprintln!("nohz: LOC per second by CPU: {rates:.1?}");
    // The spinner's CPU ticks (a vCPU the host does not run skips ticks: a quarter of hz).
    run.check(rates[BUSY] >= HZ / 4.0, format!("the busy CPU {BUSY} took {:.1} timer interrupts a second: {rates:.1?}", rates[BUSY]));
    for (cpu, &r) in rates.iter().enumerate().filter(|&(c, _)| c != 0 && c != BUSY) {
        run.check(r < 2.0, format!("idle CPU {cpu} took {r:.1} timer interrupts a second (target < 2): {rates:.1?}"));
    }
}

#[test]
fn with_nohz_off_idle_cpus_tick_at_hz() {
    let (run, rates) = loc_rates("nohz=off");
    eprintln!("nohz=off: LOC per second by CPU: {rates:.1?}");
    for (cpu, &r) in rates.iter().enumerate() {
        run.check(r >= HZ / 4.0, format!("with nohz=off CPU {cpu} took only {r:.1} timer interrupts a second: {rates:.1?}"));
    }
}

#[test]
fn readings_parse_uptime_and_loc() {
    let lines: Vec<String> = [
        "12.50 80.00",
        " LOC:         27          1          0          3        256          5          3          0   Local timer interrupts",
        "13.50 87.00",
        " LOC:         27          2          0          3        508          7          4          0   Local timer interrupts",
    ]
    .map(String::from)
    .to_vec();
    let [(t0, a), (t1, b)] = readings(&lines).expect("two readings");
    assert_eq!((t0, t1), (12.5, 13.5));
    assert_eq!(a[4], 256);
    assert_eq!(b[1], 2);
    assert!(readings(&lines[..2]).is_none(), "one reading is not enough");
}
