//! In-kernel tests of `framework::mm::paging` (they run in the kernel crate's harness).

#[test_case]
fn map_translate_unmap() {
    framework::selftest::map_translate_unmap();
}
