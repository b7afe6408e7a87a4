//! The x87/SSE state of user threads (`fxsave` / `fxrstor`, 512 bytes).
//!
//! The kernel is soft-float (`x86_64-unknown-none`): its code never touches the x87, MMX or
//! SSE registers, so while a CPU is in the kernel they still hold the state of the last user
//! thread that ran there. The context switch saves that state into the outgoing user thread's
//! [`FxArea`] and loads the incoming one's (eager switching, as Linux since 4.x); a kernel task
//! switched to in between saves and loads nothing. CR4.OSXSAVE stays clear, so user code sees
//! no AVX (CPUID.1:ECX.OSXSAVE = 0) and 512 bytes hold all of its state.

use ::x86_64::registers::control::{Cr0, Cr0Flags, Cr4, Cr4Flags};

/// Linux's initial x87 control word: all exceptions masked, 64-bit precision, round to nearest.
pub const INIT_FCW: u16 = 0x37f;
/// Linux's initial MXCSR: all SSE exceptions masked, round to nearest.
pub const INIT_MXCSR: u32 = 0x1f80;
/// MXCSR bits a program may set (Linux's default `mxcsr_feature_mask` without DAZ: bits 0–15;
/// `fxrstor` faults on any other).
const MXCSR_VALID: u32 = 0xffff;

/// Enables the x87 and SSE for user code on this CPU: CR0.MP on, CR0.EM and CR0.TS off,
/// CR4.OSFXSR and CR4.OSXMMEXCPT on, CR4.OSXSAVE and CR4.FSGSBASE off (user code must not be
/// able to write the GS base: the entry code trusts it, see `entry`).
pub fn init_this_cpu() {
    let mut cr0 = Cr0::read();
    cr0.insert(Cr0Flags::MONITOR_COPROCESSOR | Cr0Flags::NUMERIC_ERROR);
    cr0.remove(Cr0Flags::EMULATE_COPROCESSOR | Cr0Flags::TASK_SWITCHED);
    let mut cr4 = Cr4::read();
    cr4.insert(Cr4Flags::OSFXSR | Cr4Flags::OSXMMEXCPT_ENABLE);
    cr4.remove(Cr4Flags::OSXSAVE | Cr4Flags::FSGSBASE);
    // SAFETY: the bits changed only enable the FPU and SSE (which the soft-float kernel never
    // uses) and disable OSXSAVE and FSGSBASE (which it does not use either); paging,
    // protection and every other bit are kept as read.
    unsafe {
        Cr0::write(cr0);
        Cr4::write(cr4);
    }
}

/// The MXCSR bits this CPU accepts: `fxsave`'s MXCSR_MASK field, or 0xffbf if it reports 0
/// (Intel SDM 11.6.6), within [`MXCSR_VALID`].
fn mxcsr_mask() -> u32 {
    static MASK: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
    let m = MASK.load(core::sync::atomic::Ordering::Relaxed);
    if m != 0 {
        return m;
    }
    let mut probe = FxArea([0; 512]);
    // The caller's own registers are saved (not changed): `save` only reads them.
    probe.save();
    let reported = u32::from_le_bytes(probe.0[28..32].try_into().expect("4 bytes"));
    let m = if reported == 0 { 0xffbf } else { reported } & MXCSR_VALID;
    MASK.store(m, core::sync::atomic::Ordering::Relaxed);
    m
}

/// One thread's x87/MMX/SSE registers in `fxsave`'s format.
#[derive(Clone)]
#[repr(C, align(16))]
pub struct FxArea([u8; 512]);

impl FxArea {
    /// The state a new program starts with (Linux's `fpstate_init_fxstate`): FCW 0x37f, MXCSR
    /// 0x1f80, every register zero.
    pub fn initial() -> FxArea {
        let mut a = FxArea([0; 512]);
        a.0[0..2].copy_from_slice(&INIT_FCW.to_le_bytes());
        a.0[24..28].copy_from_slice(&INIT_MXCSR.to_le_bytes());
        a.0[28..32].copy_from_slice(&MXCSR_VALID.to_le_bytes());
        a
    }

    /// The state as `fxsave` lays it out (a signal frame's FPU state).
    pub fn bytes(&self) -> &[u8; 512] {
        &self.0
    }

    /// A state from user memory (`rt_sigreturn`): MXCSR bits this CPU does not have are
    /// cleared, so that loading it cannot fault (Linux masks with `mxcsr_feature_mask` too).
    pub fn from_user(bytes: &[u8; 512]) -> FxArea {
        let mut a = FxArea(*bytes);
        let mxcsr = u32::from_le_bytes(a.0[24..28].try_into().expect("4 bytes")) & mxcsr_mask();
        a.0[24..28].copy_from_slice(&mxcsr.to_le_bytes());
        a
    }

    /// Saves this CPU's registers here.
    pub fn save(&mut self) {
        // SAFETY: `fxsave` writes exactly 512 bytes to a 16-byte aligned address: `self` is
        // both (the type's size and alignment); it reads registers only.
        unsafe { core::arch::asm!("fxsave64 [{}]", in(reg) self.0.as_mut_ptr(), options(nostack, preserves_flags)) };
    }

    /// Loads this CPU's registers from here.
    pub fn restore(&self) {
        // SAFETY: `fxrstor` reads 512 aligned bytes (the type's size and alignment). Its only
        // fault is a reserved MXCSR bit set: every `FxArea` comes from `initial` or `save`
        // (the CPU's own valid state), so none has one.
        unsafe { core::arch::asm!("fxrstor64 [{}]", in(reg) self.0.as_ptr(), options(nostack, preserves_flags)) };
    }
}
