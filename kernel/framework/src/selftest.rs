//! The framework's own in-kernel tests: the ones that need `unsafe` or private items (task
//! frame layout, CPUID decoding, PCI config space, raw page contents). The kernel crate's
//! harness runs each through a one-line `#[test_case]` in `kernel/src/fwtests`; they panic on
//! failure, like every test.
#![allow(missing_docs)]

use crate::arch::context::{cadence_task_entry, Context};
use crate::arch::cpuid::{bits_for, decode, Topology};
use crate::arch::pci::PortIoCam;
use crate::mm::stack::KernelStack;
use virtio_drivers::transport::pci::bus::DeviceFunction;
use x86_64::structures::paging::PageTableFlags;

/// `new_task_frame_layout` (kernel/src/fwtests/arch_context.rs).
pub fn new_task_frame_layout() {
    let stack = crate::mm::stack::KernelStack::allocate(4096).expect("stack");
    extern "C" fn never(_: u64) -> ! {
        loop {
            core::hint::spin_loop();
        }
    }
    // SAFETY: a fresh stack we own.
    let ctx = unsafe { Context::new_task(stack.top(), never, 77) };
    assert_eq!(ctx.rsp, stack.top() - 64);
    // SAFETY: reading back what new_task wrote.
    let words = unsafe { core::slice::from_raw_parts(ctx.rsp as *const u64, 8) };
    assert_eq!(words[3], 77, "r12 = argument");
    assert_eq!(words[2], never as *const () as u64, "r13 = start function");
    assert_eq!(words[6], cadence_task_entry as *const () as u64);
}

/// `topology_decoding_smt2_core2` (kernel/src/fwtests/arch_cpuid.rs).
pub fn topology_decoding_smt2_core2() {
    // apic id 3 with 1 SMT bit and 1 core bit: package 0, core 1, thread 1.
    assert_eq!(decode(3, 1, 2), Topology { apic_id: 3, package: 0, core: 1, thread: 1 });
    assert_eq!(decode(4, 1, 2), Topology { apic_id: 4, package: 1, core: 0, thread: 0 });
    // no SMT, no core bits: every CPU is its own package.
    assert_eq!(decode(5, 0, 0), Topology { apic_id: 5, package: 5, core: 0, thread: 0 });
    assert_eq!(bits_for(1), 0);
    assert_eq!(bits_for(2), 1);
    assert_eq!(bits_for(3), 2);
}

/// `host_bridge_is_found_on_bus_0` (kernel/src/fwtests/arch_pci.rs).
pub fn host_bridge_is_found_on_bus_0() {
    // SAFETY: QEMU's PC machines implement mechanism #1; the test only reads.
    let cam = unsafe { PortIoCam::new() };
    let id = cam.read(DeviceFunction { bus: 0, device: 0, function: 0 }, 0);
    // i440fx (8086:1237) under `pc`, Q35's MCH (8086:29c0) under `q35`.
    assert_eq!(id & 0xffff, 0x8086, "vendor of 00:00.0: {:#x}", id);
}

/// `map_translate_unmap` (kernel/src/fwtests/mm_paging.rs).
pub fn map_translate_unmap() {
    let virt = 0xffff_d000_0000_0000u64;
    let frame = crate::mm::frame::alloc().expect("frame");
    crate::mm::paging::map_page(virt, frame, PageTableFlags::WRITABLE).expect("map");
    assert_eq!(crate::mm::paging::translate(virt + 0x123), Some(frame + 0x123));
    assert_eq!(crate::mm::paging::map_page(virt, frame, PageTableFlags::WRITABLE), Err(crate::mm::paging::MapError::AlreadyMapped));
    // SAFETY: just mapped writable to a frame we own.
    unsafe { (virt as *mut u64).write_volatile(0xdead_beef) };
    assert_eq!(crate::mm::paging::unmap_page(virt), Ok(frame));
    assert_eq!(crate::mm::paging::translate(virt), None);
    assert_eq!(crate::mm::paging::unmap_page(virt), Err(crate::mm::paging::MapError::NotMapped));
    crate::mm::frame::free(frame);
}

/// `alloc_returns_zeroed_frames` (kernel/src/fwtests/mm_frame.rs).
pub fn alloc_returns_zeroed_frames() {
    // Dirty a frame, give it back, and check that every frame handed out after it is zero
    // (the allocator moves on, so take frames until the dirtied one comes back or 64 went).
    let dirty = crate::mm::frame::alloc().expect("frame");
    let view = |f: u64| crate::mm::phys_to_virt(f) as *mut u64;
    // SAFETY: `dirty` is ours until freed; it is mapped writable at `phys_to_virt`.
    unsafe { core::ptr::write_bytes(view(dirty) as *mut u8, 0xa5, crate::mm::frame::FRAME_SIZE as usize) };
    crate::mm::frame::free(dirty);
    let mut taken = alloc::vec::Vec::new();
    for _ in 0..64 {
        let f = crate::mm::frame::alloc().expect("frame");
        // SAFETY: `f` was just allocated to us; 512 words fill the frame.
        let words = unsafe { core::slice::from_raw_parts(view(f), 512) };
        assert!(words.iter().all(|&w| w == 0), "frame {:#x} handed out dirty", f);
        taken.push(f);
        if f == dirty {
            break;
        }
    }
    taken.into_iter().for_each(crate::mm::frame::free);
}

/// `stacks_are_mapped_guarded_and_freed` (kernel/src/fwtests/mm_stack.rs).
pub fn stacks_are_mapped_guarded_and_freed() {
    let frames_before = crate::mm::frame::free_frames();
    let s = KernelStack::allocate(16 * 1024).expect("stack");
    assert_eq!(s.size(), 16 * 1024);
    assert!(crate::mm::paging::translate(s.bottom()).is_some());
    assert!(crate::mm::paging::translate(s.top() - 8).is_some());
    assert!(crate::mm::paging::translate(s.bottom() - 8).is_none(), "guard page must be unmapped");
    // SAFETY: inside the mapped stack.
    unsafe { ((s.top() - 8) as *mut u64).write_volatile(42) };
    let base = s.bottom();
    drop(s);
    // A dropped stack is cached, mapped, and handed out again for the same size.
    let again = KernelStack::allocate(16 * 1024).expect("stack");
    assert_eq!(again.bottom(), base);
    drop(again);
    let s2 = KernelStack::allocate(8 * 1024).expect("stack");
    drop(s2);
    crate::mm::stack::reclaim();
    assert_eq!(crate::mm::stack::cached(), 0);
    assert!(crate::mm::paging::translate(base).is_none());
    // Page-table frames created for the region stay; data frames come back.
    assert!(crate::mm::frame::free_frames() + 8 >= frames_before);
    assert_eq!(KernelStack::allocate(10 << 20).err(), Some(crate::mm::stack::StackError::TooLarge));
}

/// `user_copy_stops_at_the_first_unreachable_byte` (kernel/src/fwtests/arch_uaccess.rs): the
/// user-copy routine's fixup, on kernel pages next to unmapped ones (a stack's top, below the
/// next slot's guard): every byte up to the first unmapped one is copied, and the count of the
/// rest comes back, from the `rep movsq` part (redone byte by byte) and the `rep movsb` part.
pub fn user_copy_stops_at_the_first_unreachable_byte() {
    use crate::arch::uaccess::copy_user;
    let s = KernelStack::allocate(16 * 1024).expect("stack");
    let top = s.top();
    assert!(crate::mm::paging::translate(top - 1).is_some());
    assert!(crate::mm::paging::translate(top).is_none(), "the next slot's guard lies above a small stack");
    let mut buf = [0u8; 64];
    for (i, b) in (0u8..).zip(1..=32) {
        // SAFETY: inside the mapped stack we own.
        unsafe { ((top - 32 + i as u64) as *mut u8).write_volatile(b) };
    }
    // SAFETY: `buf` is ours and at least `len` long; the other side is the stack's last
    // bytes, then the unmapped page above, whose faults the fixup takes (so for each call).
    let left = unsafe { copy_user(buf.as_mut_ptr(), (top - 13) as *const u8, 40) };
    assert_eq!(left, 27, "a read stops at the unmapped page (the movsq part faulted)");
    assert_eq!(&buf[..13], &[20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]);
    // SAFETY: as above.
    let left = unsafe { copy_user(buf.as_mut_ptr(), (top - 3) as *const u8, 5) };
    assert_eq!(left, 2, "the movsb part faulted");
    // SAFETY: as above, writing into the stack's last bytes.
    let left = unsafe { copy_user((top - 6) as *mut u8, [7u8; 20].as_ptr(), 20) };
    assert_eq!(left, 14, "a write stops at the unmapped page");
    // SAFETY: as above.
    assert_eq!(unsafe { ((top - 6) as *const [u8; 6]).read_volatile() }, [7; 6]);
    // SAFETY: as above; nothing to copy.
    assert_eq!(unsafe { copy_user(buf.as_mut_ptr(), top as *const u8, 0) }, 0);
    // SAFETY: as above, all mapped.
    assert_eq!(unsafe { copy_user(buf.as_mut_ptr(), (top - 64) as *const u8, 64) }, 0);
    assert_eq!(buf[63], 7);
}
