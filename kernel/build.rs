//! Links the kernel with its hot layout (kernel/hot.ld, written by `make hot-layout`): the code
//! and statics a task switch touches, packed in few pages (docs/guide/profiling.md).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-link-arg=-T{dir}/hot.ld");
    println!("cargo:rerun-if-changed=hot.ld");
}
