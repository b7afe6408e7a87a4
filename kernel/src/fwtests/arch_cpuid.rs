//! In-kernel tests of `framework::arch::cpuid` (they run in the kernel crate's harness).

#[test_case]
fn topology_decoding_smt2_core2() {
    framework::selftest::topology_decoding_smt2_core2();
}
