//! In-kernel tests of `framework::mm::heap` (they run in the kernel crate's harness).

use alloc::boxed::Box;
use alloc::vec::Vec;

#[test_case]
fn heap_alloc_and_free_returns_to_baseline() {
    let before = framework::mm::heap::used();
    {
        let v: Vec<u64> = (0..10_000).collect();
        assert_eq!(v.iter().sum::<u64>(), 49_995_000);
        let b = Box::new([7u8; 4096]);
        assert_eq!(b[4095], 7);
    }
    assert_eq!(framework::mm::heap::used(), before);
}

#[test_case]
fn many_small_allocations() {
    let mut v = Vec::new();
    for i in 0..1000 {
        v.push(Box::new(i));
    }
    assert_eq!(*v[999], 999);
}
