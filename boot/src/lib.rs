//! Host-side boot tooling for the Cadence kernel.
//!
//! This crate turns a kernel ELF (built for `x86_64-unknown-none` against
//! `bootloader_api` 0.11) into a bootable disk image and runs it under QEMU.
//! It is used three ways:
//!
//! * the `cadence-boot` binary (`run`, `runner`, `image`, `trace`, `plot`, `fuzz-console`
//!   subcommands; see
//!   `main.rs`),
//! * `boot/runner.sh`, the cargo runner for the kernel's in-kernel tests (which
//!   reboots after a failing test and reports every failure: [`harness`]),
//! * the `cadence-tests` crate, which boots whole scenarios through [`Qemu`]
//!   and checks the serial output with [`BootReport`].
//!
//! # Contracts with the kernel
//!
//! * COM1 is the console; it is wired to QEMU's stdout (`-serial stdio`).
//! * The kernel ends a run by writing to the `isa-debug-exit` port 0xf4:
//!   `0x10` means success (QEMU exits 33), `0x11` failure (QEMU exits 35).
//!   Any other way out (triple fault with `-no-reboot`, reset, `quit`) makes
//!   QEMU exit 0, which is reported as [`KernelExit::NoExit`] and is *not* a
//!   success.
//! * The kernel command line is the raw contents of the fw_cfg file
//!   `opt/cadence/cmdline` (no NUL terminator; absent when the line is empty).
//! * Workloads are fw_cfg files `opt/cadence/workload/<basename>`.
//! * `--trace FILE` adds COM2 as a second serial port written to FILE.
//! * `--disk IMG` attaches IMG as a virtio-blk disk (the kernel's `/dev/vda`).
#![forbid(unsafe_code)]

mod error;
pub mod fuzz;
pub mod harness;
mod image;
pub mod plot;
mod qemu;
mod report;
pub mod trace;

pub use error::{Error, Result};
pub use image::{build_image, disk_image, Firmware};
pub use qemu::{ensure_disk, find_ovmf, Console, KernelExit, Outcome, Ovmf, Qemu, DEFAULT_MEMORY, DEFAULT_SMP, DISK_SIZE};
pub use report::{BootReport, CpuOnline, SmpSummary, Timing};
