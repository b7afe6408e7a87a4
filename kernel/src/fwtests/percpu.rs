//! In-kernel tests of `framework::percpu` (they run in the kernel crate's harness).

#[test_case]
fn gs_base_points_at_this_cpu() {
    let me = framework::percpu::current();
    assert_eq!(me.cpu_id, framework::percpu::cpu_id());
    assert_eq!(me.apic_id, crate::arch::apic::id());
    assert!(core::ptr::eq(me, framework::percpu::get(me.cpu_id).expect("listed")));
}
