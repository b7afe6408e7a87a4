//! In-kernel tests of `framework::mm::frame` (they run in the kernel crate's harness).

#[test_case]
fn alloc_returns_zeroed_frames() {
    framework::selftest::alloc_returns_zeroed_frames();
}

#[test_case]
fn alloc_free_restores_count() {
    let before = framework::mm::frame::free_frames();
    let a = framework::mm::frame::alloc().expect("frame");
    let b = framework::mm::frame::alloc().expect("frame");
    assert_ne!(a, b);
    assert_eq!(a % framework::mm::frame::FRAME_SIZE, 0);
    assert_eq!(framework::mm::frame::free_frames(), before - 2);
    framework::mm::frame::free(a);
    framework::mm::frame::free(b);
    framework::mm::frame::free(b); // double free is ignored, not corrupting the count
    assert_eq!(framework::mm::frame::free_frames(), before);
}

/// A `Frame` comes zeroed and aligned, is its owner's to write, and goes back to the
/// allocator when dropped or freed.
#[test_case]
fn owned_frames_are_zeroed_writable_and_freed_on_drop() {
    use framework::mm::frame::{self, Frame, FRAME_SIZE};
    let before = frame::free_frames();
    let mut a = Frame::alloc().expect("frame");
    let b = Frame::alloc().expect("frame");
    assert_ne!(a.phys(), b.phys());
    assert_eq!(a.phys() % FRAME_SIZE, 0);
    assert_eq!(frame::free_frames(), before - 2);
    assert_eq!(a.bytes().len(), FRAME_SIZE as usize);
    assert!(a.bytes().iter().all(|&x| x == 0), "frame {:#x} handed out dirty", a.phys());
    a.bytes_mut().fill(0x5a);
    assert!(a.bytes().iter().all(|&x| x == 0x5a));
    assert!(b.bytes().iter().all(|&x| x == 0), "a write to one frame reached another");
    drop(b);
    assert_eq!(frame::free_frames(), before - 1);
    a.free();
    assert_eq!(frame::free_frames(), before);
}

/// The watermarks placed just above what is free: a task's allocation fails, an RT
/// task's succeeds under `seed` and `linux` and fails under `off`, an atomic one dips
/// deepest; `alloc` finds the context itself (an RT task spawned for it).
#[test_case]
fn rt_tasks_dip_into_the_reserve_as_vm_rt_alloc_reserve_says() {
    use crate::sched::task::SpawnOptions;
    use alloc::sync::Arc;
    use cadence_vm::watermark::{AllocContext::*, RtReserve};
    use core::sync::atomic::{AtomicU8, Ordering};
    let (wm0, kb0, sf0) = framework::mm::frame::watermarks();
    let mode0 = framework::mm::frame::rt_reserve();
    // 0: wait, 1: allocate, 2: allocated, 3: failed.
    let state = Arc::new(AtomicU8::new(0));
    let s2 = state.clone();
    let rt = crate::sched::spawn(SpawnOptions::new("wm-rt").policy(cadence_sched::Policy::Fifo, 10, 0), move || {
        while s2.load(Ordering::Acquire) == 0 {
            crate::sched::sleep_ns(1_000_000);
        }
        let r = framework::mm::frame::alloc();
        if let Some(f) = r {
            framework::mm::frame::free(f);
        }
        s2.store(if r.is_some() { 2 } else { 3 }, Ordering::Release);
        0
    })
    .expect("spawn the RT task");
    // min = free + 4096 pages (16 MiB, more than anything frees meanwhile): a task is below
    // min; min/2 (the RT reserve) and 3/8 of min (atomic) stay below free while more than
    // 4096 pages are free.
    let free = framework::mm::frame::free_frames();
    assert!(free > 3 * 4096, "the test wants more than 48 MiB of free frames");
    framework::mm::frame::set_watermarks(Some((free + 4096) * 4), None).expect("min_free_kbytes");
    let try_as = |ctx| framework::mm::frame::alloc_as(ctx).map(framework::mm::frame::free).is_some();
    let task = try_as(Task);
    let task_auto = framework::mm::frame::alloc().map(framework::mm::frame::free).is_some();
    let mut rt_by_mode = [false; 3];
    for (i, mode) in [RtReserve::Seed, RtReserve::Linux, RtReserve::Off].into_iter().enumerate() {
        framework::mm::frame::set_rt_reserve(mode);
        rt_by_mode[i] = try_as(RtTask);
    }
    let atomic = try_as(Atomic);
    framework::mm::frame::set_rt_reserve(RtReserve::Seed);
    state.store(1, Ordering::Release);
    let rt_auto = loop {
        match state.load(Ordering::Acquire) {
            2 => break true,
            3 => break false,
            _ => crate::sched::sleep_ns(1_000_000),
        }
    };
    framework::mm::frame::set_watermarks(Some(kb0), Some(sf0)).expect("restore");
    framework::mm::frame::set_rt_reserve(mode0);
    assert_eq!(crate::sched::wait(rt.tid), Ok(0));
    assert_eq!(framework::mm::frame::watermarks().0, wm0);
    assert!(!task && !task_auto, "a task allocated below min");
    assert_eq!(rt_by_mode, [true, true, false], "RT task under seed, linux, off");
    assert!(atomic, "atomic context under its reserve");
    assert!(rt_auto, "alloc() from an RT task did not use the RT reserve");
    assert!(framework::mm::frame::set_watermarks(None, Some(0)).is_err() && framework::mm::frame::watermarks().0 == wm0);
}

#[test_case]
fn contiguous_allocation() {
    let before = framework::mm::frame::free_frames();
    let p = framework::mm::frame::alloc_contiguous(16).expect("16 contiguous frames");
    assert_eq!(framework::mm::frame::free_frames(), before - 16);
    for i in 0..16 {
        framework::mm::frame::free(p + i * framework::mm::frame::FRAME_SIZE);
    }
    assert_eq!(framework::mm::frame::free_frames(), before);
}
