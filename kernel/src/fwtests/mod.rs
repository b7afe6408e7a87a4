//! In-kernel tests of the framework crate's APIs. The framework is a library, and the custom
//! test harness collects `#[test_case]`s of the crate under test only, so they live here,
//! one file per framework module, and reach the framework through its public API.

mod arch_context;
mod arch_cpuid;
mod arch_pci;
mod arch_uaccess;
mod mm_atomic_alloc;
mod mm_fail_alloc;
mod mm_frame;
mod mm_heap;
mod mm_paging;
mod mm_stack;
mod percpu;
mod timer;
