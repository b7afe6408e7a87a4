//! The CMOS real-time clock (MC146818, ports 0x70/0x71): the wall-clock time at boot, which
//! CLOCK_REALTIME starts from (Linux's `mach_get_cmos_time`). QEMU's RTC runs in UTC.

use ::x86_64::instructions::port::Port;

/// Reads CMOS register `reg` (NMI left enabled).
fn cmos(reg: u8) -> u8 {
    // SAFETY: ports 0x70 (index) and 0x71 (data) are the CMOS; reading a clock register has
    // no side effect. Called once at boot, on the boot CPU, with nothing else using the CMOS.
    unsafe {
        Port::<u8>::new(0x70).write(reg & 0x7f);
        Port::<u8>::new(0x71).read()
    }
}

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian; Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the Unix epoch by the RTC, or `None` if it reads as nonsense (no RTC).
pub fn unix_seconds() -> Option<u64> {
    // Wait out an update in progress (register A bit 7), then read until two reads agree.
    let read = || {
        for _ in 0..1_000_000 {
            if cmos(0x0a) & 0x80 == 0 {
                break;
            }
        }
        [cmos(0x00), cmos(0x02), cmos(0x04), cmos(0x07), cmos(0x08), cmos(0x09), cmos(0x32)]
    };
    let mut r = read();
    for _ in 0..5 {
        let again = read();
        if again == r {
            break;
        }
        r = again;
    }
    let status_b = cmos(0x0b);
    let bcd = status_b & 0x04 == 0;
    let conv = |v: u8| if bcd { (v & 0x0f) + (v >> 4) * 10 } else { v };
    let (sec, min) = (conv(r[0]) as u64, conv(r[1]) as u64);
    let hour_raw = r[2];
    let mut hour = conv(hour_raw & 0x7f) as u64;
    if status_b & 0x02 == 0 && hour_raw & 0x80 != 0 {
        hour = (hour % 12) + 12; // 12-hour mode, PM
    }
    let (day, month) = (conv(r[3]) as u32, conv(r[4]) as u32);
    let century = match conv(r[6]) {
        c @ 19..=21 => c as i64,
        _ => 20,
    };
    let year = century * 100 + conv(r[5]) as i64;
    if !(1..=31).contains(&day) || !(1..=12).contains(&month) || sec > 59 || min > 59 || hour > 23 || year < 1970 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days as u64 * 86_400 + hour * 3600 + min * 60 + sec)
}
