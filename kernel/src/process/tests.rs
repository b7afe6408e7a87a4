//! Ring 3 through `framework::user`: system calls, exceptions, the kernel half out of reach,
//! and a user thread's registers (FPU and FS base included) surviving preemption.

use crate::mm::page::PageRef;
use crate::mm::vm::{Prot, VmSpace};
use crate::sched::task::SpawnOptions;
use crate::sched::{self, spawn_result};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use framework::task::Switchable;
use framework::user::{self, Exception, ReturnReason, UserContext};

const CODE: u64 = 0x40_0000;
const STACK_TOP: u64 = 0x7fff_0000_0000;

/// A fresh address space with `code` at [`CODE`] (read + execute) and one stack page below
/// [`STACK_TOP`], loaded for the calling task (made a user thread).
fn user_space(code: &[u8]) -> Arc<VmSpace> {
    let vm = VmSpace::new().expect("address space");
    let page = PageRef::alloc().expect("code page");
    page.write_at(0, code);
    assert!(vm.map(CODE, page, Prot::RX).expect("map code").is_none());
    vm.map(STACK_TOP - 4096, PageRef::alloc().expect("stack page"), Prot::RW).expect("map stack");
    let me = sched::current();
    me.task_context().enable_user();
    assert!(me.task_context().set_vm_space(Some(vm.clone())).is_none());
    vm
}

/// Runs `f` in a new task and returns its result (the task's user state goes with it).
fn in_task<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    match spawn_result(SpawnOptions::new(name), f).expect("spawn").join() {
        Ok(v) => v,
        Err(e) => panic!("{} did not finish: {:?}", name, e),
    }
}

#[test_case]
fn ring3_syscall_returns_its_number_then_ud2_is_an_exception() {
    let (first, second, regs, frames) = in_task("ring3", || {
        let free_before = crate::mm::frame::free_frames();
        // mov eax, 39 ; syscall ; ud2
        let vm = user_space(&[0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0x0f, 0x0b]);
        let mut ctx = UserContext::new(CODE, STACK_TOP);
        ctx.regs.rbx = 0x1234_5678;
        let first = user::execute(&mut ctx);
        let regs = ctx.regs;
        let second = user::execute(&mut ctx);
        sched::current().task_context().set_vm_space(None);
        drop(vm);
        (first, second, (regs, ctx.regs), (free_before, crate::mm::frame::free_frames()))
    });
    assert_eq!(first, ReturnReason::Syscall);
    let (at_syscall, at_ud2) = regs;
    assert_eq!(at_syscall.rax, 39, "the syscall number");
    assert_eq!(at_syscall.rbx, 0x1234_5678, "registers kept");
    assert_eq!(at_syscall.rcx, CODE + 7, "syscall's return address in rcx");
    assert_eq!(at_syscall.rip, CODE + 7);
    assert_eq!(second, ReturnReason::Exception(Exception { vector: 6, error: 0, addr: 0 }));
    assert_eq!(at_ud2.rip, CODE + 7, "#UD at the ud2");
    assert_eq!(at_ud2.cs, 0x33);
    assert_eq!(frames.1, frames.0, "the address space's frames and tables are back");
}

#[test_case]
fn user_faults_name_the_address_and_the_kernel_half_is_out_of_reach() {
    // mov rax, [addr] (moffs64) ; ud2
    let load = |addr: u64| {
        let mut code = alloc::vec![0x48, 0xa1];
        code.extend_from_slice(&addr.to_le_bytes());
        code.extend_from_slice(&[0x0f, 0x0b]);
        code
    };
    let kernel_addr = crate::mm::phys_offset() + 0x10_0000;
    let cases: Vec<(u64, u8)> = alloc::vec![(0x1234, 14), (kernel_addr, 14), (0x8000_0000_0000_0000, 13)];
    for (addr, vector) in cases {
        let code = load(addr);
        let got = in_task("fault", move || {
            let vm = user_space(&code);
            let mut ctx = UserContext::new(CODE, STACK_TOP);
            let r = user::execute(&mut ctx);
            sched::current().task_context().set_vm_space(None);
            drop(vm);
            (r, ctx.regs.rip)
        });
        let ReturnReason::Exception(e) = got.0 else { panic!("load from {:#x}: {:?}", addr, got.0) };
        assert_eq!(e.vector, vector, "load from {:#x}", addr);
        assert_eq!(got.1, CODE, "the faulting instruction");
        if vector == 14 {
            assert_eq!(e.addr, addr, "cr2");
            assert!(e.error & 4 != 0, "a user-mode fault");
            // Present (a protection fault) only for the kernel's page.
            assert_eq!(e.error & 1 != 0, addr == kernel_addr, "error {:#x} for {:#x}", e.error, addr);
        }
    }
    // A kernel address is not entered at all.
    let r = in_task("badrip", || {
        let vm = user_space(&[0x0f, 0x0b]);
        let mut ctx = UserContext::new(0xffff_8000_0000_0000, STACK_TOP);
        let r = user::execute(&mut ctx);
        sched::current().task_context().set_vm_space(None);
        drop(vm);
        r
    });
    assert_eq!(r, ReturnReason::Exception(Exception { vector: 13, error: 0, addr: 0 }));
}

#[test_case]
fn user_registers_fpu_and_fs_base_survive_preemption() {
    // movq xmm0, rdi ; 1: dec rsi ; jnz 1b ; movq rax, xmm0 ; syscall ; ud2
    const SPIN: [u8; 19] =
        [0x66, 0x48, 0x0f, 0x6e, 0xc7, 0x48, 0xff, 0xce, 0x75, 0xfb, 0x66, 0x48, 0x0f, 0x7e, 0xc0, 0x0f, 0x05, 0x0f, 0x0b];
    let cpu = crate::percpu::cpu_id();
    let mut handles = Vec::new();
    for i in 0..3u64 {
        let value = 0x1111_0000_0000 * (i + 1) + i;
        let opts = SpawnOptions::new("fpu").pin(cpu);
        handles.push(
            spawn_result(opts, move || {
                let vm = user_space(&SPIN);
                user::set_fs_base(0x7000_0000 + i * 0x1000).expect("fs base");
                let mut ctx = UserContext::new(CODE, STACK_TOP);
                ctx.regs.rdi = value;
                ctx.regs.rsi = 20_000_000;
                ctx.regs.r12 = value ^ 0xffff;
                let r = user::execute(&mut ctx);
                let fs = user::fs_base();
                let me = sched::current();
                me.task_context().set_vm_space(None);
                drop(vm);
                let preempted = me.stats.nr_involuntary_switches.load(Ordering::Relaxed);
                (r, ctx.regs.rax, ctx.regs.r12, fs, preempted, value, i)
            })
            .expect("spawn"),
        );
    }
    let mut preemptions = 0;
    for h in handles {
        let (r, rax, r12, fs, preempted, value, i) = h.join().expect("fpu task");
        assert_eq!(r, ReturnReason::Syscall);
        assert_eq!(rax, value, "xmm0 kept across preemption");
        assert_eq!(r12, value ^ 0xffff, "general registers kept");
        assert_eq!(fs, 0x7000_0000 + i * 0x1000, "FS base kept");
        preemptions += preempted;
    }
    assert!(preemptions > 0, "the spinning user threads were preempted (else this test proves nothing)");
}

#[test_case]
fn a_fatal_signal_ends_a_spinning_or_sleeping_process_and_frees_its_memory() {
    use crate::process::mm::{Backing, Mm, Vma};
    use crate::sched::signal::{self, SIGKILL, SIGTERM};
    // jmp $ (spin in ring 3); or: mov eax, 35 (nanosleep) ; lea rdi, [rip+ts] ; xor esi, esi ;
    // syscall ; ud2 ; ts: {1000 s, 0}
    const SPIN: [u8; 2] = [0xeb, 0xfe];
    let sleep: Vec<u8> = {
        let mut c = alloc::vec![0xb8, 35, 0, 0, 0, 0x48, 0x8d, 0x3d, 7, 0, 0, 0, 0x31, 0xf6, 0x0f, 0x05, 0x0f, 0x0b, 0x90];
        c.extend_from_slice(&1000u64.to_le_bytes());
        c.extend_from_slice(&0u64.to_le_bytes());
        c
    };
    for (code, sig) in [(SPIN.to_vec(), SIGKILL), (sleep, SIGTERM)] {
        let free_before = crate::mm::frame::free_frames();
        let h = spawn_result(SpawnOptions::new("victim"), move || {
            let _defer = signal::DeferFatal::new();
            let mut mm = Mm::new().expect("mm");
            mm.insert(Vma::new(CODE, CODE + 4096, Prot::RX, Backing::Anonymous, false));
            mm.insert(Vma::new(STACK_TOP - 4096, STACK_TOP, Prot::RW, Backing::Anonymous, false));
            let page = PageRef::alloc().expect("code page");
            page.write_at(0, &code);
            mm.space.map(CODE, page, Prot::RX).expect("map code");
            crate::process::run_loaded(mm, UserContext::new(CODE, STACK_TOP))
        })
        .expect("spawn");
        sched::sleep_ns(30_000_000);
        signal::kill(h.tid, sig).expect("kill");
        let status = h.join().expect("the process ends by returning, not by dying in place");
        assert_eq!(status, 128 + sig as i32, "killed by {}", sig);
        // Its task's stack may still be cached; its address space and pages are not.
        let leaked = free_before.saturating_sub(crate::mm::frame::free_frames());
        assert!(leaked <= 64, "{} frames not returned after the kill", leaked);
    }
}

#[test_case]
fn next_held_skips_absent_tables_and_finds_prot_none_pages() {
    let vm = VmSpace::new().expect("address space");
    let (a, b, c) = (0x1000_0000u64, 0x2000_0000_0000u64, 0x7fff_ffff_e000u64);
    for va in [a, b, c] {
        assert!(vm.map(va, PageRef::alloc().expect("page"), Prot::RW).expect("map").is_none());
    }
    vm.protect(b, Prot::NONE);
    // The whole of user space, in four steps: absent tables cost nothing.
    assert_eq!(vm.next_held(0, u64::MAX), Some(a));
    assert_eq!(vm.next_held(a + 1, u64::MAX), Some(b), "a PROT_NONE page is held");
    assert_eq!(vm.next_held(b + 4096, u64::MAX), Some(c));
    assert_eq!(vm.next_held(c + 4096, u64::MAX), None);
    assert_eq!(vm.next_held(a + 4096, b), None, "the end is exclusive");
    assert_eq!(vm.next_held(u64::MAX - 10, u64::MAX), None, "no wrap");
    drop(vm.unmap(b));
    assert_eq!(vm.next_held(a + 4096, u64::MAX), Some(c));
}

#[test_case]
fn mlock_state_splits_vmas_counts_locked_pages_and_stops_at_a_hole() {
    use crate::process::mm::{Backing, Lock, Mm, Vma, PAGE};
    use cadence_abi::errno::Errno;
    let mut mm = Mm::new().expect("address space");
    let a = 0x1000_0000u64;
    mm.insert(Vma::new(a, a + 16 * PAGE, Prot::RW, Backing::Anonymous, false));
    mm.insert(Vma::new(a + 20 * PAGE, a + 24 * PAGE, Prot::RW, Backing::Anonymous, false));
    mm.set_lock(a + 4 * PAGE, a + 8 * PAGE, Lock::Locked).expect("mapped");
    assert_eq!(mm.locked_pages(), 4);
    assert_eq!(mm.vmas().count(), 4, "split at both ends");
    assert_eq!(mm.total_pages(), 20);
    assert_eq!(mm.locked_pages_in(a, a + 6 * PAGE), 2);
    // Across the hole: locked up to it, then ENOMEM (Linux's apply_vma_lock_flags).
    assert_eq!(mm.set_lock(a + 12 * PAGE, a + 22 * PAGE, Lock::Locked), Err(Errno::ENOMEM));
    assert_eq!(mm.locked_pages(), 8);
    assert_eq!(mm.set_lock(a + 16 * PAGE, a + 17 * PAGE, Lock::Locked), Err(Errno::ENOMEM), "nothing mapped at the start");
    assert_eq!(mm.locked_pages(), 8);
    assert_eq!(mm.fork().expect("fork").locked_pages(), 0, "a fork's VMAs are not locked");
    mm.unmap_range(a + 6 * PAGE, a + 14 * PAGE);
    assert_eq!(mm.locked_pages(), 4, "unmapped locked pages leave the count");
    mm.set_lock_all(Lock::Unlocked);
    assert_eq!(mm.locked_pages(), 0);
}

#[test_case]
fn user_copies_to_present_pages_do_not_wait_for_the_mm_lock() {
    // An RT thread's clock_gettime must not wait behind another thread of its process that
    // holds the `mm` lock (cyclictest's main thread populating a stack: issue 38's 800 ms).
    use crate::process::mm::{Backing, Mm, Vma, PAGE};
    use crate::process::MmRef;
    use core::sync::atomic::{AtomicBool, AtomicU32};
    let a = 0x1000_0000u64;
    let mut mm = Mm::new().expect("address space");
    mm.insert(Vma::new(a, a + 2 * PAGE, Prot::RW, Backing::Anonymous, false));
    mm.fault(a, true).expect("first page present");
    let mm = MmRef::new(mm);
    let done = Arc::new(AtomicBool::new(false));
    let held = mm.mm().lock();
    let (copier_mm, copier_done) = (mm.clone(), done.clone());
    let copier = spawn_result(SpawnOptions::new("copier"), move || {
        copier_mm.write(a + 8, b"cadence").expect("write");
        let mut back = [0u8; 7];
        copier_mm.read(a + 8, &mut back).expect("read");
        let old = copier_mm.atomic_u32(a, |w: &AtomicU32| w.swap(7, Ordering::AcqRel)).expect("atomic");
        copier_done.store(true, Ordering::Release);
        // The second page is not there: this copy waits for the lock, then faults it in.
        copier_mm.write(a + PAGE, b"x").expect("write after the fault");
        (back, old)
    })
    .expect("spawn");
    let deadline = crate::time::uptime_ns() + 2_000_000_000;
    while !done.load(Ordering::Acquire) && crate::time::uptime_ns() < deadline {
        sched::sleep_ns(1_000_000);
    }
    let finished_under_the_lock = done.load(Ordering::Acquire);
    drop(held);
    let (back, old) = copier.join().expect("copier finished");
    assert!(finished_under_the_lock, "copies to present pages waited for the mm lock");
    assert_eq!(&back, b"cadence");
    assert_eq!(old, 0);
    let mut b = [0u8; 1];
    mm.read(a + PAGE, &mut b).expect("read the faulted page");
    assert_eq!(&b, b"x");
    assert_eq!(mm.atomic_u32(a + 2, |w: &AtomicU32| w.load(Ordering::Relaxed)), Err(cadence_abi::errno::Errno::EINVAL), "misaligned");
}

#[test_case]
fn populating_a_mapping_lets_other_threads_take_the_mm_lock_between_batches() {
    // mmap/brk/mlockall under MCL_FUTURE populate after the call's lock, a batch at a time:
    // another thread's fault waits for one batch, not for the whole range (cyclictest's main
    // thread populating an 8 MiB stack beside its RT threads). Errors end it quietly.
    populate_in_batches(
        |mm, from, to| {
            crate::process::mm::populate_after_map(mm, from, to);
            Ok(())
        },
        Ok(()),
    );
}

#[test_case]
fn mlock_populates_in_batches_and_reports_an_inaccessible_part() {
    // mlock() populates after its lock too (Linux's do_mlock: __mm_populate after
    // mmap_write_unlock), but the call reports what stopped it: a PROT_NONE part is ENOMEM.
    populate_in_batches(crate::process::mm::populate_mlocked, Err(cadence_abi::errno::Errno::ENOMEM));
}

/// A locked VMA of 16 batches, then 4 pages locked on fault and 4 inaccessible ones, populated
/// by `populate` on another CPU: this task takes the lock while it runs (between two batches,
/// never after the whole range), the locked VMA ends up present, the other two untouched, and
/// `populate` returns `want`.
fn populate_in_batches(
    populate: fn(&crate::sched::wait::Mutex<crate::process::mm::Mm>, u64, u64) -> Result<(), cadence_abi::errno::Errno>,
    want: Result<(), cadence_abi::errno::Errno>,
) {
    use crate::process::mm::{Backing, Lock, Mm, Vma, PAGE, POPULATE_BATCH_PAGES};
    use core::sync::atomic::AtomicBool;
    let pages = 16 * POPULATE_BATCH_PAGES;
    let a = 0x2000_0000u64;
    let mut mm = Mm::new().expect("address space");
    mm.insert(Vma { lock: Lock::Locked, ..Vma::new(a, a + pages * PAGE, Prot::RW, Backing::Anonymous, false) });
    // Locked on fault, and inaccessible: skipped.
    mm.insert(Vma { lock: Lock::OnFault, ..Vma::new(a + pages * PAGE, a + (pages + 4) * PAGE, Prot::RW, Backing::Anonymous, false) });
    mm.insert(Vma::new(a + (pages + 4) * PAGE, a + (pages + 8) * PAGE, Prot::NONE, Backing::Anonymous, false));
    let mm = Arc::new(crate::sched::wait::Mutex::new(mm));
    let done = Arc::new(AtomicBool::new(false));
    let me = framework::percpu::cpu_id();
    let other = (me + 1) % framework::percpu::nr_cpus();
    let (pop_mm, pop_done) = (mm.clone(), done.clone());
    let populator = spawn_result(SpawnOptions::new("populate").pin(other), move || {
        let got = populate(&pop_mm, a, a + (pages + 8) * PAGE);
        pop_done.store(true, Ordering::Release);
        got
    })
    .expect("spawn");
    let mut taken_between = None;
    if other != me {
        // Wait for a batch under way, then for the lock, as a faulting thread would.
        while !mm.is_locked() && !done.load(Ordering::Acquire) {
            core::hint::spin_loop();
        }
        let g = mm.lock();
        let present = (0..pages).filter(|p| g.space.query(a + p * PAGE).is_some()).count() as u64;
        taken_between = Some((done.load(Ordering::Acquire), present));
    }
    let got = populator.join().expect("populator finished");
    assert_eq!(got, want, "what the populating returned");
    if let Some((finished, present)) = taken_between {
        assert!(!finished && present < pages, "the lock was had only after the whole range ({present} of {pages} pages in)");
        assert!(present.is_multiple_of(POPULATE_BATCH_PAGES), "taken in the middle of a batch: {present} pages in");
    }
    let g = mm.lock();
    let present = |from: u64, n: u64| (from..from + n).filter(|p| g.space.query(a + p * PAGE).is_some()).count() as u64;
    assert_eq!(present(0, pages), pages, "every page of the locked VMA is in");
    assert_eq!(present(pages, 8), 0, "locked-on-fault and inaccessible VMAs are left alone");
}
