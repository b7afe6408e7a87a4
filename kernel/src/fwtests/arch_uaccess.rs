//! In-kernel tests of `framework::arch::uaccess` (they run in the kernel crate's harness).

#[test_case]
fn user_copy_stops_at_the_first_unreachable_byte() {
    framework::selftest::user_copy_stops_at_the_first_unreachable_byte();
}
