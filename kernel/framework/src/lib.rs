//! Cadence's framework: everything that touches the hardware or needs `unsafe`, behind safe
//! APIs, beneath the kernel crate (which is `#![deny(unsafe_code)]`). The shape is that of
//! Asterinas's OSTD: the kernel above builds the scheduler, task groups, the block layer, the
//! shell and the benchmarks from what this crate guarantees, and the framework calls up into
//! the kernel only through the [`upcalls::Upcalls`] the kernel registers once at boot.
//!
//! Modules:
//! - [`arch`]: x86_64 descriptor tables, the IDT, APICs, MSRs, the TSC, the SMP trampoline,
//!   QEMU's firmware interfaces, the kernel-task context switch;
//! - [`percpu`]: GS-based per-CPU areas and subsystem-owned [`percpu::PerCpuVar`]s;
//! - [`irqflags`], [`sync`], [`preempt`]: the interrupt flag, interrupt-safe and
//!   preemption-disabling locks, the preemption count;
//! - [`time`], [`timer`], [`interrupts`]: the clock, per-CPU timer queues, interrupt dispatch
//!   and IPIs;
//! - [`console`], [`platform`], [`smp`], [`panic`](mod@panic): COM1, ACPI discovery, AP bring-up, the
//!   panic handler;
//! - [`mm`]: frames, the heap, page tables, kernel stacks, TLB shootdowns, the
//!   atomic-allocation detector and failure injection;
//! - [`trace`]: the per-CPU trace rings and the irqsoff tracer;
//! - [`virtio_hal`]: the `virtio-drivers` HAL over [`mm`];
//! - [`virtio_blk`]: the virtio-blk disk's hardware half (discovery, interrupt acknowledge,
//!   request submission through DMA buffers), under the kernel's `drivers::virtio_blk`;
//! - [`user`]: user mode for the kernel's tasks (`execute`, the user thread's registers,
//!   FPU state and address space), over the entry code in `arch::x86_64::entry`;
//! - [`upcalls`]: what the kernel registers for the framework to call.
//!
//! Lock order and the contracts of each API are stated in each module's documentation and in
//! `docs/design/layering.md`.
#![no_std]
#![feature(abi_x86_interrupt)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

extern crate alloc;

pub mod arch;
pub mod console;
pub mod interrupts;
pub mod irqflags;
pub mod mm;
pub mod panic;
pub mod percpu;
pub mod platform;
pub mod preempt;
#[doc(hidden)]
pub mod selftest;
pub mod smp;
pub mod sync;
pub mod task;
pub mod time;
pub mod timer;
pub mod trace;
pub mod upcalls;
pub mod user;
pub mod virtio_blk;
pub mod virtio_hal;
