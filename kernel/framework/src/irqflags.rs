//! The interrupt flag, with the irqsoff tracer's hooks (Linux `include/linux/irqflags.h`:
//! `local_irq_disable/enable/save/restore` calling `trace_hardirqs_off/on`).
//!
//! Every place the kernel turns interrupts off or on goes through these functions, so the
//! irqsoff tracer ([`crate::trace::irqsoff`]) sees each interrupts-off section: it begins where
//! interrupts go from on to off (or where an interrupt handler is entered, the CPU having
//! cleared the flag) and ends where they go back on (or where a handler returns). The sites
//! are `#[track_caller]` locations, resolved to `file:line:column` at build time; lock
//! functions that disable interrupts are `#[track_caller]` too, so the site is their caller.
//!
//! With the tracer stopped each hook costs one per-CPU store (the current section's start site,
//! kept for [`crate::mm::atomic_alloc`]) and one relaxed atomic load.

use core::panic::Location;
use x86_64::instructions::interrupts;

/// Are interrupts enabled on this CPU?
#[inline]
pub fn are_enabled() -> bool {
    interrupts::are_enabled()
}

/// Disables interrupts (Linux `local_irq_disable`).
#[inline]
#[track_caller]
pub fn disable() {
    let was = interrupts::are_enabled();
    interrupts::disable();
    if was {
        crate::trace::irqsoff::off(Location::caller());
    }
}

/// Enables interrupts (Linux `local_irq_enable`).
#[inline]
#[track_caller]
pub fn enable() {
    crate::trace::irqsoff::on(Location::caller());
    interrupts::enable();
}

/// Disables interrupts and returns whether they were enabled (Linux `local_irq_save`).
#[inline]
#[track_caller]
pub fn save() -> bool {
    let was = interrupts::are_enabled();
    interrupts::disable();
    if was {
        crate::trace::irqsoff::off(Location::caller());
    }
    was
}

/// Re-enables interrupts if `was_enabled` (Linux `local_irq_restore`).
#[inline]
#[track_caller]
pub fn restore(was_enabled: bool) {
    if was_enabled {
        crate::trace::irqsoff::on(Location::caller());
        interrupts::enable();
    }
}

/// Like [`restore`], naming `site` (where the section began: a lock's caller) as its end.
#[inline]
pub fn restore_at(was_enabled: bool, site: &'static Location<'static>) {
    if was_enabled {
        crate::trace::irqsoff::on(site);
        interrupts::enable();
    }
}

/// Like [`save`], naming `site` as the section's start.
#[inline]
pub fn save_at(site: &'static Location<'static>) -> bool {
    let was = interrupts::are_enabled();
    interrupts::disable();
    if was {
        crate::trace::irqsoff::off(site);
    }
    was
}

/// `sti; hlt` back to back (the idle loop's wait): a wakeup interrupt cannot slip in between.
#[inline]
#[track_caller]
pub fn enable_and_hlt() {
    crate::trace::irqsoff::on(Location::caller());
    interrupts::enable_and_hlt();
}

/// An interrupt handler begins (the CPU cleared the interrupt flag on entry).
#[inline]
#[track_caller]
pub fn hardirq_enter() {
    crate::trace::irqsoff::off(Location::caller());
}

/// An interrupt handler returns (`iret` restores the interrupt flag).
#[inline]
#[track_caller]
pub fn hardirq_exit() {
    crate::trace::irqsoff::on(Location::caller());
}
