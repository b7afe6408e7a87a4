//! In-kernel tests of `framework::mm::stack` (they run in the kernel crate's harness).

#[test_case]
fn stacks_are_mapped_guarded_and_freed() {
    framework::selftest::stacks_are_mapped_guarded_and_freed();
}
