//! The initramfs: the newc cpio archive the bootloader loaded as its ramdisk
//! (`cadence-boot --initrd`), unpacked at boot into a table of paths. Files keep their bytes
//! where the bootloader put them (no copy); symbolic links are followed as Linux's path walk
//! does (at most [`MAX_SYMLINKS`] in one lookup, else ELOOP).

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use cadence_abi::cpio::{self, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use cadence_abi::errno::Errno;
use spin::Once;

/// Most symbolic links one lookup follows (Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINKS: u32 = 40;

/// One file of the archive.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    /// `st_mode`.
    pub mode: u32,
    /// Its bytes (a symlink's: the target).
    pub data: &'static [u8],
}

static FILES: Once<BTreeMap<String, Node>> = Once::new();

/// Unpacks `archive` (once, at boot). Returns the number of entries, or the archive's error.
pub fn init(archive: &'static [u8]) -> Result<usize, cpio::CpioError> {
    let entries = cpio::parse(archive)?;
    let mut map = BTreeMap::new();
    map.insert(String::from("/"), Node { mode: S_IFDIR | 0o755, data: &[] });
    for e in entries {
        let name = e.name.trim_start_matches("./").trim_start_matches('/');
        if name.is_empty() || name == "." {
            continue;
        }
        let path = normalize(&alloc::format!("/{}", name));
        map.insert(path, Node { mode: e.mode, data: e.data });
    }
    let n = map.len() - 1;
    FILES.call_once(|| map);
    Ok(n)
}

/// `path` with `.`, `..` and repeated `/` resolved (absolute).
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut s = String::from("/");
    s.push_str(&parts.join("/"));
    s
}

/// Looks `path` up (absolute; relative paths start at `/`), following symbolic links, also
/// in the last component. ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG as Linux.
pub fn lookup(path: &str) -> Result<Node, Errno> {
    let files = FILES.get().ok_or(Errno::ENOENT)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= 4096 {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut pending: String = normalize(path);
    let mut links = 0;
    'walk: loop {
        // Walk component by component so links in the middle resolve too.
        let comps: Vec<String> = pending.split('/').filter(|c| !c.is_empty()).map(|c| c.to_string()).collect();
        let mut at = String::from("/");
        for (i, c) in comps.iter().enumerate() {
            let next = if at == "/" { alloc::format!("/{}", c) } else { alloc::format!("{}/{}", at, c) };
            let node = files.get(&next).ok_or(Errno::ENOENT)?;
            if node.mode & S_IFMT == S_IFLNK {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Errno::ELOOP);
                }
                let target = core::str::from_utf8(node.data).map_err(|_| Errno::ENOENT)?;
                let base = if target.starts_with('/') { String::new() } else { at.clone() };
                let rest = comps[i + 1..].join("/");
                pending = normalize(&alloc::format!("{}/{}/{}", base, target, rest));
                continue 'walk;
            }
            if i + 1 < comps.len() && node.mode & S_IFMT != S_IFDIR {
                return Err(Errno::ENOTDIR);
            }
            at = next;
        }
        return files.get(&at).copied().ok_or(Errno::ENOENT);
    }
}

/// A regular file's bytes (EACCES for anything else, as `execve` answers a directory).
pub fn regular_file(path: &str) -> Result<&'static [u8], Errno> {
    let node = lookup(path)?;
    if node.mode & S_IFMT != S_IFREG {
        return Err(Errno::EACCES);
    }
    Ok(node.data)
}
