//! `cadence-sched`: the scheduling *policy* of the Cadence kernel.
//!
//! Pure data structures and decisions, no hardware access, no `unsafe`, no clock: time
//! always comes in as `now_ns` / `delta_ns: u64`. Semantics, names and constants follow
//! Linux's scheduler (kernel/sched/fair.c EEVDF from 6.6 on, rt.c, core.c, syscalls.c).
//! The kernel wraps these types in per-CPU run queues behind its `SchedClass` trait.
//!
//! * [`errno`], [`consts`]: Linux errno values, policy numbers, priority constants.
//! * [`weight`]: nice → weight tables, `calc_delta_fair`, group shares.
//! * [`attr`]: `Policy`, `sched_setattr` validation and permission checks.
//! * [`eevdf`]: the fair run queue (`FairRq`).
//! * [`fair_group`]: the fair class's walks over a group hierarchy (pick, switch, matching
//!   level for wakeup preemption, lazy charging, group entity propagation).
//! * [`rt`]: the real-time priority array (`RtPrioArray`) and SCHED_RR timeslices.
//! * [`rt_bandwidth`]: RT throttling (`sched_rt_runtime_us` per `sched_rt_period_us`).
//! * [`cpumask`], [`balance`]: CPU sets and SMP placement / balancing decisions.
//! * [`cpupri`]: per-priority-level CPU masks (Linux cpupri) for RT placement.
//! * [`rt_smp`]: RT push/pull decisions and the RT guarantee they maintain.
//! * [`arena`]: ordered maps and sets (AVL trees in an arena) with capacity reserved outside
//!   locks (the run queues' storage: O(log n), no allocation under a run-queue lock).
//! * [`timeline`]: the fair class's deadline-ordered, min-vruntime-augmented tree (the
//!   O(log n) EEVDF pick).
//! * [`timerq`]: timer-queue ordering (the kernel's per-CPU timers, tick, sleeps, hrtick).
//! * [`deadline`]: SCHED_DEADLINE policy: parameter checks, admission control, CBS, `cpudl`.
//! * [`edf_model`]: an exact ideal global-EDF schedule of periodic task sets (what a
//!   deadline measurement is compared with).
//! * [`pi`]: priority inheritance chains (Linux's rt_mutex): waiters by priority, owners
//!   boosted down the chain, EDEADLK on a cycle.
//! * [`core_sched`]: SMT core scheduling: cookies, `PR_SCHED_CORE`, the core-wide pick,
//!   forced-idle accounting and the trace checker.
//! * [`load_balance`]: Linux 6.12's hierarchical fair load balancer over [`topology`]'s domains
//!   (`find_busiest_group`, `calculate_imbalance`, `detach_tasks`, ...), plus an idle fallback.
//! * [`topology`]: scheduling domains and groups as Linux 6.12 builds them on x86 (SMT, CLS,
//!   MC, PKG, NODE, NUMA levels from CPUID/SRAT/SLIT facts), with the `/proc/schedstat` and
//!   debugfs text Linux prints for them.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod arena;
pub mod attr;
pub mod balance;
pub mod cfs_bandwidth;
pub mod consts;
pub mod core_sched;
pub mod cpumask;
pub mod cpupri;
pub mod cputimer;
pub mod deadline;
pub mod edf_model;
pub mod eevdf;
pub mod errno;
pub mod fair_group;
pub mod haltpoll;
pub mod load_balance;
pub mod loadavg;
pub mod lockup;
pub mod pelt;
pub mod pi;
pub mod rt;
pub mod rt_bandwidth;
pub mod rt_smp;
pub mod timeline;
pub mod timerq;
pub mod topology;
pub mod weight;

pub use attr::{Policy, SchedAttr, ValidAttr};
pub use cpumask::{AtomicCpuMask, CpuMask, SeqCpuMask, NR_CPUS};
pub use cpupri::CpuPri;
pub use eevdf::{FairEntity, FairRq, FairStorage, FairTunables};
pub use errno::Errno;
pub use rt::RtPrioArray;
pub use topology::{CpuTopo, MachineTopology, NodeDistances, SchedDomain, SchedDomains, SchedGroup, SdFlags};
