//! Per-CPU data, reached through the GS base.
//!
//! Each CPU owns one leaked [`PerCpu`]; IA32_GS_BASE points at it and its first field points at
//! itself, so `mov reg, gs:[0]` yields `&PerCpu` without an MSR read. [`cpu_id`] is safe to call
//! before the per-CPU area exists (it returns 0, the BSP). All CPUs' areas are also listed in
//! a table (indexed by logical CPU id, read through [`get`] and [`online_cpus`]) for cross-CPU
//! work such as IPIs and load balancing.
//!
//! [`PerCpu`] holds only what identifies a CPU, its bring-up and IPI state, and its
//! preemption count (touched by every lock, so kept one GS load away). A subsystem's
//! per-CPU data belongs to that subsystem, as a [`PerCpuVar`] it declares (Linux
//! `DEFINE_PER_CPU`): the scheduler's run queues (`sched`), the timer queues (`timer`), the
//! TLB flush records (`mm::tlb`). The bring-up code (`smp::init_cpu_data`) creates each
//! CPU's instances before the CPU's area is listed, so every listed CPU has them.

use crate::arch::cpuid::Topology;
use crate::arch::msr::{self, Msr};
use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};

/// Most CPUs the build handles (Linux's `NR_CPUS`: `cadence_sched::cpumask::NR_CPUS`, 1,024
/// unless the build sets `CADENCE_NR_CPUS`).
pub use cadence_sched::cpumask::NR_CPUS;

/// One CPU's identity, bring-up state, IPI requests and preemption count (reached through the
/// GS base: [`current`]).
#[repr(C)]
pub struct PerCpu {
    /// Points at this struct (read via `gs:[0]`). Must stay the first field.
    self_ptr: *const PerCpu,
    /// Logical CPU id: 0 is the BSP, APs are numbered in MADT order.
    pub cpu_id: u32,
    /// Its local APIC's id (the IPI destination).
    pub apic_id: u32,
    /// Its (package, core, thread) from CPUID.
    pub topology: Topology,
    /// Set once the CPU has finished bring-up.
    pub online: AtomicBool,
    /// Preemption-disable depth of the code running on this CPU (`preempt::preempt_disable`;
    /// 0: preemptible). Here rather than in the scheduler's run queue for the same reason as
    /// Linux's `pcpu_hot.preempt_count`: every lock and unlock reads or writes it, and this
    /// struct is one GS load away.
    pub preempt_count: AtomicU32,
    /// A preemption point on this CPU has work: the kernel asked for its `preempt_point`
    /// upcall (a reschedule, a refill). Without it a lock release that brings the count to 0
    /// skips the upcall ([`crate::preempt`]).
    pub(crate) preempt_work: AtomicBool,
    /// Requests from other CPUs, handled by the call-function IPI (bits of `IPI_REQ_*`).
    pub ipi_requests: AtomicU32,
    /// The kernel stack pointer a trap from user mode starts below: the running user task's
    /// `user::execute` frame (also in the TSS's RSP0). Read by the `syscall` entry, which has
    /// no other stack; written by `execute` and by the context switch (`user::switch_user_state`).
    pub(crate) user_rsp0: AtomicU64,
    /// The `syscall` entry's scratch slot for the user stack pointer (interrupts off there).
    pub(crate) user_rsp_scratch: AtomicU64,
    /// This CPU's TSS (its RSP0 is written on every entry to user mode and every switch).
    pub(crate) tss: AtomicPtr<::x86_64::structures::tss::TaskStateSegment>,
    /// Is the running task a user thread (its user state is switched: `user`)?
    pub(crate) user_task: AtomicBool,
    /// The timer interrupt being handled came from user mode (the tick's user/system
    /// accounting: [`crate::interrupts::timer_from_user`]).
    pub(crate) timer_from_user: AtomicBool,
    /// This CPU's NUMA node (Linux's per-CPU `numa_node`, `numa_node_id()`): the node the
    /// frame allocator takes from first. 0 until the kernel, which reads the SRAT, sets it.
    pub numa_node: AtomicU16,
}

/// `ipi_requests` bit: re-program the LAPIC timer (a remote CPU armed an earlier timer).
pub const IPI_REQ_TIMER: u32 = 1 << 0;
/// `ipi_requests` bit: flush the TLB (kernel stack slots were unmapped).
pub const IPI_REQ_TLB: u32 = 1 << 1;
/// `ipi_requests` bit: push waiting RT tasks (a CPU whose level dropped asks, `RT_PUSH_IPI`).
pub const IPI_REQ_RT_PUSH: u32 = 1 << 2;

// SAFETY: `self_ptr` only ever points at the (immutable-address, leaked) struct itself; all
// mutable state is atomic.
unsafe impl Sync for PerCpu {}
// SAFETY: as above; the raw pointer is never used to mutate non-atomic fields.
unsafe impl Send for PerCpu {}

/// Every CPU's per-CPU area, by logical id (null until that CPU is set up).
static CPUS: [AtomicPtr<PerCpu>; NR_CPUS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; NR_CPUS];
static NR_CPU_IDS: AtomicU32 = AtomicU32::new(0);
/// True once the BSP has installed its GS base (before that, `cpu_id()` is 0).
static GS_READY: AtomicBool = AtomicBool::new(false);

/// A per-CPU variable owned by the subsystem that declares it (Linux `DEFINE_PER_CPU`): one
/// `T` per CPU, created by [`PerCpuVar::init`] when the CPU is brought up and never freed.
/// Reached by CPU id ([`PerCpuVar::get`]) or for the calling CPU ([`PerCpuVar::this`]).
pub struct PerCpuVar<T: 'static> {
    slots: [AtomicPtr<T>; NR_CPUS],
}

impl<T: Sync + 'static> Default for PerCpuVar<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Sync + 'static> PerCpuVar<T> {
    /// No CPU's instance yet (each is created by [`PerCpuVar::init`] at its CPU's bring-up).
    pub const fn new() -> Self {
        PerCpuVar { slots: [const { AtomicPtr::new(core::ptr::null_mut()) }; NR_CPUS] }
    }

    /// Creates CPU `cpu`'s instance (leaked: it lives as long as the kernel). Once per CPU,
    /// by the bring-up code, before the CPU's area is listed; a second call, or a CPU id out
    /// of range, keeps what was there and returns `None`.
    pub fn init(&self, cpu: u32, value: T) -> Option<&'static T> {
        let slot = self.slots.get(cpu as usize)?;
        let ptr = Box::into_raw(Box::new(value));
        match slot.compare_exchange(core::ptr::null_mut(), ptr, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: `ptr` is the leaked box just stored; it is never freed.
            Ok(_) => Some(unsafe { &*ptr }),
            Err(_) => {
                // SAFETY: `ptr` came from `Box::into_raw` above and was not published.
                drop(unsafe { Box::from_raw(ptr) });
                None
            }
        }
    }

    /// CPU `cpu`'s instance, if created.
    #[inline]
    pub fn get(&self, cpu: u32) -> Option<&'static T> {
        let ptr = self.slots.get(cpu as usize)?.load(Ordering::Acquire);
        // SAFETY: non-null slots hold leaked boxes (`init`), never freed.
        (!ptr.is_null()).then(|| unsafe { &*ptr })
    }

    /// The instances created so far, with their CPU ids (CPUs `0..nr_possible()`).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &'static T)> + '_ {
        (0..nr_possible() as usize).filter_map(|cpu| self.get(cpu as u32).map(|t| (cpu, t)))
    }

    /// The calling CPU's instance. Call only once this CPU's area is active (everything after
    /// its bring-up's first steps): the bring-up code creates every CPU's instances before
    /// the CPU runs (`smp::init_cpu_data`, then `activate`). Two loads (the run queue is
    /// reached this way several times per switch, so no check beyond a debug assertion).
    #[inline]
    pub fn this(&self) -> &'static T {
        // `NR_CPUS` is a power of two and ids are below it: the mask only drops the bounds
        // check.
        let ptr = self.slots[current().cpu_id as usize & (NR_CPUS - 1)].load(Ordering::Relaxed);
        debug_assert!(!ptr.is_null(), "per-CPU variable used before its CPU's bring-up created it");
        // SAFETY: this CPU's slot was filled (`init`, a leaked box never freed) before this
        // CPU's area was activated: by the BSP before it started this AP, whose start is
        // ordered after the store, or by the BSP for itself before its own `activate`.
        unsafe { &*ptr }
    }
}

const _: () = assert!(NR_CPUS.is_power_of_two());

/// Allocates (and leaks) a per-CPU area for `cpu_id`, not yet active anywhere. The BSP makes one
/// per AP and hands it to the AP, which activates it first thing.
pub fn new_area(cpu_id: u32, apic_id: u32) -> *mut PerCpu {
    Box::into_raw(Box::new(PerCpu {
        self_ptr: core::ptr::null(),
        cpu_id,
        apic_id,
        topology: Topology::default(),
        online: AtomicBool::new(false),
        preempt_count: AtomicU32::new(0),
        preempt_work: AtomicBool::new(false),
        ipi_requests: AtomicU32::new(0),
        user_rsp0: AtomicU64::new(0),
        user_rsp_scratch: AtomicU64::new(0),
        tss: AtomicPtr::new(core::ptr::null_mut()),
        user_task: AtomicBool::new(false),
        timer_from_user: AtomicBool::new(false),
        numa_node: AtomicU16::new(0),
    }))
}

/// Makes `area` this CPU's per-CPU area: fills in the topology, points GS base at it and lists it.
///
/// # Safety
/// `area` must come from [`new_area`], be used by no other CPU, and be activated exactly once.
pub unsafe fn activate(area: *mut PerCpu, topology: Topology) -> &'static PerCpu {
    // SAFETY: per the contract, we have exclusive access to a live, leaked area.
    let area = unsafe { &mut *area };
    area.self_ptr = area as *const PerCpu;
    area.topology = topology;
    area.apic_id = topology.apic_id;
    // SAFETY: `area` is leaked (lives forever) and starts with its self pointer, as `current`
    // expects; each CPU activates only its own area.
    unsafe { msr::write(Msr::GsBase, area as *const PerCpu as u64) };
    CPUS[area.cpu_id as usize].store(area as *mut PerCpu, Ordering::Release);
    NR_CPU_IDS.fetch_max(area.cpu_id + 1, Ordering::AcqRel);
    GS_READY.store(true, Ordering::Release);
    area
}

/// Creates and activates the per-CPU area of the calling CPU (the BSP).
pub fn install(cpu_id: u32, apic_id: u32, topology: Topology) -> &'static PerCpu {
    let area = new_area(cpu_id, apic_id);
    // SAFETY: freshly allocated, used by this CPU only, activated once.
    unsafe { activate(area, topology) }
}

/// This CPU's id read from the GS base MSR: safe even on an AP whose area is not active yet
/// (returns `None` then). For the exception and panic paths.
pub fn cpu_id_checked() -> Option<u32> {
    let base = msr::read(Msr::GsBase);
    // SAFETY: a non-zero GS base is only ever set to a live, leaked PerCpu by `activate`.
    (base != 0).then(|| unsafe { (*(base as *const PerCpu)).cpu_id })
}

/// This CPU's per-CPU area.
#[inline]
pub fn current() -> &'static PerCpu {
    let ptr: *const PerCpu;
    // SAFETY: callers run after `install` on this CPU (APs install before anything else; the
    // BSP right after the heap); gs:[0] then holds the area's address.
    unsafe { core::arch::asm!("mov {}, gs:[0]", out(reg) ptr, options(nostack, readonly, preserves_flags)) };
    // SAFETY: the area is leaked and never freed.
    unsafe { &*ptr }
}

/// Adds one to this CPU's `preempt_count` in a single instruction ([`crate::preempt`]). Only
/// its own CPU writes a count, so a plain add (no `lock`) is atomic against what can run
/// here, an interrupt on this CPU; other CPUs only read it.
#[inline]
pub(crate) fn preempt_count_inc_this_cpu() {
    // SAFETY: as in `current`, GS holds this CPU's area; `preempt_count` is an `AtomicU32` at this offset in it (`repr(C)`).
    unsafe {
        core::arch::asm!(
            "add dword ptr gs:[{off}], 1",
            off = const core::mem::offset_of!(PerCpu, preempt_count),
            options(nostack)
        )
    };
}

/// Has any CPU installed its per-CPU area (so `current()` works on set-up CPUs)?
pub fn gs_ready() -> bool {
    GS_READY.load(Ordering::Acquire)
}

/// This CPU's logical id (0 before per-CPU setup).
#[inline]
pub fn cpu_id() -> u32 {
    if GS_READY.load(Ordering::Acquire) {
        current().cpu_id
    } else {
        0
    }
}

/// The per-CPU area of CPU `id`, if it exists.
pub fn get(id: u32) -> Option<&'static PerCpu> {
    let ptr = CPUS.get(id as usize)?.load(Ordering::Acquire);
    // SAFETY: non-null entries point at leaked, never-freed areas.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// Number of CPU slots in use (ids `0..nr_cpus()`).
pub fn nr_cpus() -> u32 {
    NR_CPU_IDS.load(Ordering::Acquire)
}

/// See [`nr_possible`].
static NR_POSSIBLE: AtomicU32 = AtomicU32::new(1);

/// CPUs this boot may bring up (Linux's `nr_cpu_ids`): the processors the firmware lists,
/// within `maxcpus=` and [`NR_CPUS`]; set once before the boot CPU's per-CPU data is made, so
/// per-CPU data made at each CPU's bring-up can be sized for the whole machine. 1 before that.
pub fn nr_possible() -> u32 {
    NR_POSSIBLE.load(Ordering::Acquire)
}

/// Sets [`nr_possible`] (boot, before the APs start).
pub(crate) fn set_nr_possible(n: u32) {
    NR_POSSIBLE.store(n.clamp(1, NR_CPUS as u32), Ordering::Release);
}

/// Iterates the CPUs that completed bring-up.
pub fn online_cpus() -> impl Iterator<Item = &'static PerCpu> {
    (0..nr_cpus()).filter_map(get).filter(|c| c.online.load(Ordering::Acquire))
}

/// Per-CPU data reached only by its own CPU with interrupts off ([`IrqLocal::with`]): scratch
/// space too large for the stack of code that runs in interrupt context (the scheduler's
/// balancing decisions). One `T` per CPU, created at the CPU's bring-up ([`IrqLocal::init`],
/// sized then for the machine) and never freed.
pub struct IrqLocal<T: 'static> {
    slots: PerCpuVar<IrqSlot<T>>,
}

struct IrqSlot<T> {
    value: core::cell::UnsafeCell<T>,
    /// Is the slot borrowed? (A nested `with` on the same CPU would alias it.)
    busy: AtomicBool,
}

// SAFETY: a slot is only reached by its own CPU with interrupts off, one borrow at a time
// (`with` checks `busy`), so no two contexts ever access it at once.
unsafe impl<T: Send> Sync for IrqSlot<T> {}

impl<T: Send + 'static> Default for IrqLocal<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + 'static> IrqLocal<T> {
    /// No CPU's `T` yet.
    pub const fn new() -> Self {
        Self { slots: PerCpuVar::new() }
    }

    /// Creates CPU `cpu`'s `T` (bring-up, as [`PerCpuVar::init`]).
    pub fn init(&self, cpu: u32, value: T) {
        self.slots.init(cpu, IrqSlot { value: core::cell::UnsafeCell::new(value), busy: AtomicBool::new(false) });
    }

    /// Runs `f` on this CPU's `T`, interrupts off meanwhile. Panics if `f` calls `with` on the
    /// same `IrqLocal` again.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let was = crate::irqflags::save();
        let slot = self.slots.this();
        assert!(!slot.busy.swap(true, Ordering::Relaxed), "IrqLocal::with re-entered");
        // SAFETY: interrupts are off and the slot is this CPU's own; `busy` (set above, checked
        // to be clear) makes this the only borrow.
        let r = f(unsafe { &mut *slot.value.get() });
        slot.busy.store(false, Ordering::Relaxed);
        crate::irqflags::restore(was);
        r
    }
}
