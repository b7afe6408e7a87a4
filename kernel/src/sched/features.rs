//! The scheduler's feature flags (Linux's `kernel/sched/features.h`, read and written through
//! `kernel.sched_features` and debugfs `sched/features`): one table, in the order the flags are
//! listed and numbered (`sched/debug`'s `.sysctl_sched_features` bit `i` is `FEATURES[i]`).

/// A feature: its name, how to read it, how to set it.
pub struct Feature {
    pub name: &'static str,
    pub get: fn() -> bool,
    pub set: fn(bool),
}

/// Every feature. The first six are Linux's names (`TIMER_KICK` is Cadence's, about QEMU's
/// timers); `WC_PULL` is Cadence's work-conservation pull (`load_balance::note_waiting`).
pub static FEATURES: &[Feature] = &[
    Feature { name: "HRTICK", get: super::hrtick::enabled, set: super::hrtick::set_enabled },
    Feature { name: "HRTICK_DL", get: super::hrtick::dl_enabled, set: super::hrtick::set_dl_enabled },
    Feature { name: "TTWU_QUEUE", get: super::ttwu_queue_enabled, set: super::set_ttwu_queue },
    Feature { name: "RT_PUSH_IPI", get: super::rt_push_ipi_enabled, set: super::set_rt_push_ipi },
    Feature { name: "TIMER_KICK", get: super::timer_kick_enabled, set: super::set_timer_kick },
    Feature { name: "SIS_UTIL", get: super::balance::sis_util_enabled, set: super::balance::set_sis_util },
    Feature { name: "WC_PULL", get: super::load_balance::wc_pull_enabled, set: super::load_balance::set_wc_pull },
];

/// The feature called `name`.
pub fn find(name: &str) -> Option<&'static Feature> {
    FEATURES.iter().find(|f| f.name == name)
}

/// The features on, one bit each in table order.
pub fn bits() -> u32 {
    FEATURES.iter().enumerate().fold(0, |m, (i, f)| m | (u32::from((f.get)()) << i))
}
