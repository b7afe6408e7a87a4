//! In-kernel tests of `framework::arch::context` (they run in the kernel crate's harness).

#[test_case]
fn new_task_frame_layout() {
    framework::selftest::new_task_frame_layout();
}
