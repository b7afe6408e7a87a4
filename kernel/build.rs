//! Links the functions a task switch runs next to each other at the start of `.text`, in the
//! order `hot-functions.txt` lists them (lld's `--symbol-ordering-file`).
//!
//! Why: under QEMU TCG every CR3 write flushes the soft TLB, so each code page a switch touches
//! costs a page walk again; spread over the whole text the pipe round trip touched 55 code
//! pages, packed about half as many ([results](../docs/results/2026-12-06-pipe-tcg-costs.md)).
//! On hardware it is the iTLB and i-cache locality that profile-guided function ordering buys.
//!
//! The file lists mangled names (`tools/qemu-pageset.py --order` writes it from a profile of
//! `pipetest`); a name the build no longer has is skipped silently, so a stale list costs
//! only speed. Regenerate it after large changes to the switch path (docs/guide/profiling.md).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let list = std::path::Path::new(&dir).join("hot-functions.txt");
    println!("cargo:rerun-if-changed=hot-functions.txt");
    println!("cargo:rerun-if-changed=build.rs");
    if list.exists() {
        println!("cargo:rustc-link-arg-bins=--symbol-ordering-file={}", list.display());
        println!("cargo:rustc-link-arg-bins=--no-warn-symbol-ordering");
    }
}
