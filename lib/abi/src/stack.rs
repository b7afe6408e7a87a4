//! A new program's initial stack (Linux `fs/binfmt_elf.c` `create_elf_tables`, and the x86_64
//! psABI §3.4.1): from the top down, the executable's path, the argument and environment
//! strings, the platform string, AT_RANDOM's 16 bytes; then, 16-byte aligned at the stack
//! pointer, `argc`, the `argv` pointers and a NULL, the `envp` pointers and a NULL, and the
//! auxiliary vector ending in `AT_NULL`.

use alloc::vec::Vec;

/// End of the auxiliary vector.
pub const AT_NULL: u64 = 0;
/// The program headers' address.
pub const AT_PHDR: u64 = 3;
/// Size of one program header.
pub const AT_PHENT: u64 = 4;
/// Number of program headers.
pub const AT_PHNUM: u64 = 5;
/// Page size.
pub const AT_PAGESZ: u64 = 6;
/// The interpreter's load address (0 without one).
pub const AT_BASE: u64 = 7;
/// Flags (0).
pub const AT_FLAGS: u64 = 8;
/// The program's entry point.
pub const AT_ENTRY: u64 = 9;
/// Real uid.
pub const AT_UID: u64 = 11;
/// Effective uid.
pub const AT_EUID: u64 = 12;
/// Real gid.
pub const AT_GID: u64 = 13;
/// Effective gid.
pub const AT_EGID: u64 = 14;
/// The platform string's address.
pub const AT_PLATFORM: u64 = 15;
/// CPUID.1:EDX.
pub const AT_HWCAP: u64 = 16;
/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
pub const AT_CLKTCK: u64 = 17;
/// Secure mode (0).
pub const AT_SECURE: u64 = 23;
/// The address of 16 random bytes (glibc's stack protector and pointer guard: required).
pub const AT_RANDOM: u64 = 25;
/// The second word of hardware capabilities.
pub const AT_HWCAP2: u64 = 26;
/// The executable's path as `execve` was given it.
pub const AT_EXECFN: u64 = 31;
/// The minimal signal stack size.
pub const AT_MINSIGSTKSZ: u64 = 51;

/// Most bytes of strings and pointers the initial stack may hold (Linux allows a quarter of
/// RLIMIT_STACK, 2 MiB by default; more is E2BIG).
pub const MAX_ARG_BYTES: usize = 2 << 20;

/// The stack a new program starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialStack {
    /// The initial stack pointer (16-byte aligned, pointing at `argc`).
    pub sp: u64,
    /// The bytes from `sp` up to the stack top.
    pub bytes: Vec<u8>,
}

/// Too many or too long arguments and environment strings (E2BIG).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooBig;

/// Builds the stack below `top` (module doc). `auxv` holds the entries that do not point into
/// the stack; `AT_RANDOM`, `AT_PLATFORM` and `AT_EXECFN` are added, pointing at their bytes.
pub fn build(
    top: u64,
    argv: &[&[u8]],
    envp: &[&[u8]],
    execfn: &[u8],
    auxv: &[(u64, u64)],
    random: [u8; 16],
) -> Result<InitialStack, TooBig> {
    let strings: usize = argv.iter().chain(envp).map(|s| s.len() + 1).sum::<usize>() + execfn.len() + 1;
    if strings > MAX_ARG_BYTES || argv.len() + envp.len() > MAX_ARG_BYTES / 8 {
        return Err(TooBig);
    }
    // Strings, laid out downward from `top`; remembered by address.
    let mut p = top - 8; // Linux leaves the top word 0 (the end marker).
    let mut placed: Vec<(u64, &[u8])> = Vec::new();
    let put = |p: &mut u64, bytes: &[u8]| -> u64 {
        *p -= bytes.len() as u64 + 1;
        *p
    };
    let execfn_at = put(&mut p, execfn);
    placed.push((execfn_at, execfn));
    let mut env_at = Vec::with_capacity(envp.len());
    for e in envp.iter().rev() {
        let at = put(&mut p, e);
        placed.push((at, e));
        env_at.push(at);
    }
    env_at.reverse();
    let mut arg_at = Vec::with_capacity(argv.len());
    for a in argv.iter().rev() {
        let at = put(&mut p, a);
        placed.push((at, a));
        arg_at.push(at);
    }
    arg_at.reverse();
    let platform: &[u8] = b"x86_64";
    let platform_at = put(&mut p, platform);
    placed.push((platform_at, platform));
    p &= !15;
    p -= 16;
    let random_at = p;
    // The pointer tables.
    let mut aux: Vec<(u64, u64)> = auxv.iter().copied().filter(|&(k, _)| k != AT_NULL).collect();
    aux.push((AT_RANDOM, random_at));
    aux.push((AT_PLATFORM, platform_at));
    aux.push((AT_EXECFN, execfn_at));
    aux.push((AT_NULL, 0));
    let words = 1 + argv.len() + 1 + envp.len() + 1 + 2 * aux.len();
    let sp = (p - 8 * words as u64) & !15;
    let mut bytes = alloc::vec![0u8; (top - sp) as usize];
    let mut w = |addr: u64, data: &[u8]| {
        let at = (addr - sp) as usize;
        bytes[at..at + data.len()].copy_from_slice(data);
    };
    for (at, s) in &placed {
        w(*at, s);
    }
    w(random_at, &random);
    let mut table = Vec::with_capacity(words);
    table.push(argv.len() as u64);
    table.extend(&arg_at);
    table.push(0);
    table.extend(&env_at);
    table.push(0);
    for (k, v) in aux {
        table.push(k);
        table.push(v);
    }
    for (i, word) in table.iter().enumerate() {
        w(sp + 8 * i as u64, &word.to_le_bytes());
    }
    Ok(InitialStack { sp, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(s: &InitialStack, addr: u64) -> u64 {
        let at = (addr - s.sp) as usize;
        u64::from_le_bytes(s.bytes[at..at + 8].try_into().unwrap())
    }

    fn string(s: &InitialStack, addr: u64) -> Vec<u8> {
        let at = (addr - s.sp) as usize;
        s.bytes[at..].iter().take_while(|&&b| b != 0).copied().collect()
    }

    #[test]
    fn argv_envp_and_auxv_are_where_the_abi_says() {
        let top = 0x7fff_ffff_f000;
        let s =
            build(top, &[b"/bin/hello", b"a b"], &[b"HOME=/"], b"/bin/hello", &[(AT_PAGESZ, 4096), (AT_ENTRY, 0x401000)], [7; 16]).unwrap();
        assert_eq!(s.sp % 16, 0);
        assert_eq!(s.sp + s.bytes.len() as u64, top);
        assert_eq!(word(&s, s.sp), 2);
        assert_eq!(string(&s, word(&s, s.sp + 8)), b"/bin/hello");
        assert_eq!(string(&s, word(&s, s.sp + 16)), b"a b");
        assert_eq!(word(&s, s.sp + 24), 0);
        assert_eq!(string(&s, word(&s, s.sp + 32)), b"HOME=/");
        assert_eq!(word(&s, s.sp + 40), 0);
        let mut aux = s.sp + 48;
        let mut found = alloc::collections::BTreeMap::new();
        loop {
            let (k, v) = (word(&s, aux), word(&s, aux + 8));
            found.insert(k, v);
            aux += 16;
            if k == AT_NULL {
                break;
            }
        }
        assert_eq!(found[&AT_PAGESZ], 4096);
        assert_eq!(found[&AT_ENTRY], 0x401000);
        let r = found[&AT_RANDOM];
        assert_eq!(&s.bytes[(r - s.sp) as usize..(r - s.sp) as usize + 16], &[7; 16]);
        assert_eq!(string(&s, found[&AT_PLATFORM]), b"x86_64");
        assert_eq!(string(&s, found[&AT_EXECFN]), b"/bin/hello");
    }

    #[test]
    fn too_much_is_e2big() {
        let big = alloc::vec![b'x'; MAX_ARG_BYTES];
        assert_eq!(build(0x7fff_0000_0000, &[&big], &[], b"x", &[], [0; 16]), Err(TooBig));
    }
}
