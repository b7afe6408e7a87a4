//! Files. Today: the initramfs the bootloader loaded (`initramfs`), read-only, enough to
//! `exec` programs from it. The VFS with a writable ramfs root, devices and pipes comes next
//! (issue 35, step 4).

pub mod initramfs;
