//! `cadence-abi`: the parts of Linux's user-space ABI that are formats and numbers, not
//! mechanism, so the host can test them: [`errno`] (values and names, x86_64
//! `asm-generic/errno*.h`), [`signal`] (numbers, default actions, `siginfo_t`, the
//! handler's frame), [`elf`] (the program headers `execve` loads), [`cpio`] (the newc
//! archive an initramfs is, read and written), [`stack`] (the initial stack of a new program:
//! argv, envp, auxv, AT_RANDOM's bytes).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod cpio;
pub mod elf;
pub mod errno;
pub mod signal;
pub mod stack;
