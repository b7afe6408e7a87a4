//! In-kernel tests of `framework::timer` (they run in the kernel crate's harness).

use core::sync::atomic::{AtomicU64, Ordering};

static FIRED_AT: AtomicU64 = AtomicU64::new(0);

fn record(_cpu: u32, _data: u64) {
    FIRED_AT.store(crate::time::uptime_ns(), Ordering::SeqCst);
}

#[test_case]
fn oneshot_timer_fires_after_its_deadline() {
    FIRED_AT.store(0, Ordering::SeqCst);
    let cpu = crate::percpu::cpu_id();
    let at = crate::time::uptime_ns() + 1_500_000;
    framework::timer::arm(cpu, at, record, 0).expect("armed");
    let give_up = at + 200_000_000;
    while FIRED_AT.load(Ordering::SeqCst) == 0 && crate::time::uptime_ns() < give_up {
        core::hint::spin_loop();
    }
    let fired = FIRED_AT.load(Ordering::SeqCst);
    assert!(fired >= at, "fired at {} before its deadline {}", fired, at);
}

#[test_case]
fn cancelled_timer_does_not_fire() {
    FIRED_AT.store(0, Ordering::SeqCst);
    let cpu = crate::percpu::cpu_id();
    let id = framework::timer::arm(cpu, crate::time::uptime_ns() + 1_000_000, record, 0).expect("armed");
    assert!(framework::timer::cancel(cpu, id));
    assert!(!framework::timer::cancel(cpu, id));
    crate::time::delay_us(3_000);
    assert_eq!(FIRED_AT.load(Ordering::SeqCst), 0);
}
