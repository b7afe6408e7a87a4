//! QEMU's fw_cfg interface (legacy I/O ports: selector 0x510, data 0x511), used to read files
//! the host passes with `-fw_cfg name=opt/cadence/...,file=...`: the kernel command line and,
//! later, workloads. Big-endian directory at selector 0x19 (`FW_CFG_FILE_DIR`): a u32 count,
//! then 64-byte entries `{u32 size, u16 select, u16 reserved, char name[56]}`.

use ::x86_64::instructions::port::Port;
use alloc::string::String;
use alloc::vec::Vec;

const SEL_SIGNATURE: u16 = 0x0000;
const SEL_FILE_DIR: u16 = 0x0019;

/// One file in the fw_cfg directory.
#[derive(Clone, Debug)]
pub struct FwCfgFile {
    /// The name the host gave it, e.g. `opt/cadence/cmdline` (at most 56 bytes, lossy UTF-8).
    pub name: String,
    /// Its length in bytes.
    pub size: u32,
    /// The selector key that makes the data port read this file.
    pub select: u16,
}

fn select(key: u16) {
    // SAFETY: 0x510 is QEMU's fw_cfg selector port; on other machines the write is ignored.
    unsafe { Port::<u16>::new(0x510).write(key) }
}

fn read_bytes(buf: &mut [u8]) {
    let mut data = Port::<u8>::new(0x511);
    for b in buf {
        // SAFETY: 0x511 is the fw_cfg data port; reads advance within the selected item.
        *b = unsafe { data.read() };
    }
}

/// Is the fw_cfg device present (signature "QEMU")?
pub fn present() -> bool {
    select(SEL_SIGNATURE);
    let mut sig = [0u8; 4];
    read_bytes(&mut sig);
    &sig == b"QEMU"
}

/// Lists the fw_cfg files (empty without fw_cfg).
pub fn files() -> Vec<FwCfgFile> {
    let mut out = Vec::new();
    if !present() {
        return out;
    }
    select(SEL_FILE_DIR);
    let mut count = [0u8; 4];
    read_bytes(&mut count);
    let count = u32::from_be_bytes(count).min(4096);
    for _ in 0..count {
        let mut entry = [0u8; 64];
        read_bytes(&mut entry);
        let size = u32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]]);
        let select = u16::from_be_bytes([entry[4], entry[5]]);
        let name_bytes = &entry[8..];
        let len = name_bytes.iter().position(|&b| b == 0).unwrap_or(name_bytes.len());
        let name = String::from_utf8_lossy(&name_bytes[..len]).into_owned();
        out.push(FwCfgFile { name, size, select });
    }
    out
}

/// Reads a whole file (at most `limit` bytes).
pub fn read_file(file: &FwCfgFile, limit: usize) -> Vec<u8> {
    let mut buf = alloc::vec![0u8; (file.size as usize).min(limit)];
    select(file.select);
    read_bytes(&mut buf);
    buf
}

/// Finds and reads the file called `name`.
pub fn read_named(name: &str, limit: usize) -> Option<Vec<u8>> {
    files().into_iter().find(|f| f.name == name).map(|f| read_file(&f, limit))
}
