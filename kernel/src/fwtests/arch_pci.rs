//! In-kernel tests of `framework::arch::pci` (they run in the kernel crate's harness).

#[test_case]
fn host_bridge_is_found_on_bus_0() {
    framework::selftest::host_bridge_is_found_on_bus_0();
}
