//! procfs at `/proc`: every file generated from the kernel's own tables at read time (the task
//! table, run queues, the sysctl table, the frame allocator), in Linux 6.1's formats, so that
//! procps, libnuma, rt-tests and shell scripts read here what they read on Linux.
//!
//! * `/proc/PID` for each process, `/proc/PID/task/TID` for each of its threads, with `stat`,
//!   `status`, `statm`, `sched`, `schedstat`, `comm`, `cmdline`, `autogroup` (read and written),
//!   `limits`, `cgroup`, `maps`, `oom_score`, `oom_score_adj` (rw), `exe`, `cwd`, `fd/`; `self` and `thread-self`.
//!   Other tids are found too (`/proc/TID` of a thread, unlisted, as on Linux).
//! * `/proc/{stat,uptime,loadavg,meminfo,cpuinfo,version,cmdline,mounts,filesystems}`.
//! * `/proc/sys/<dir>/<name>` for each entry of [`crate::sysctl::SYSCTLS`]: a read is the
//!   entry's `get`, a write its `set` (EINVAL for a bad value, as the `sysctl` command).
//!
//! What Cadence does not track reads as Linux's "nothing": `majflt` is 0; load averages come
//! from `sched::loadavg`. `stat`'s times are tick-sampled (`sched::rusage`).

use crate::fs::pseudo::{GenDir, Node, DIR, LNK, REG};
use crate::process::{self, Thread};
use crate::sched::task::{self, Task, TaskState, Tid};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use cadence_sched::Policy;
use core::fmt::Write;
use core::sync::atomic::Ordering;

/// Linux's `USER_HZ`: the clock ticks of `stat`'s times.
const USER_HZ: u64 = 100;

/// Nanoseconds as `USER_HZ` clock ticks.
fn ticks(ns: u64) -> u64 {
    ns / (1_000_000_000 / USER_HZ)
}

/// The `/proc` directory.
pub fn root() -> Node {
    Node::dir(ProcRoot)
}

struct ProcRoot;

/// The fixed entries of `/proc`, beside the pid directories.
const ROOT_NAMES: &[(&str, u32)] = &[
    ("cmdline", REG),
    ("cpuinfo", REG),
    ("filesystems", REG),
    ("interrupts", REG),
    ("loadavg", REG),
    ("meminfo", REG),
    ("mounts", LNK),
    ("schedstat", REG),
    ("self", LNK),
    ("stat", REG),
    ("sys", DIR),
    ("thread-self", LNK),
    ("uptime", REG),
    ("version", REG),
    ("vmstat", REG),
];

impl GenDir for ProcRoot {
    fn list(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = ROOT_NAMES.iter().map(|&(n, k)| (String::from(n), k)).collect();
        let mut pids: Vec<Tid> = task::all().iter().filter(|t| t.tid == t.process.tgid && visible(t)).map(|t| t.tid).collect();
        pids.extend(process::zombies());
        pids.sort_unstable();
        pids.dedup();
        out.extend(pids.into_iter().map(|p| (p.to_string(), DIR)));
        out
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        if let Ok(tid) = name.parse::<Tid>() {
            // Any live tid, as Linux's proc_pid_lookup (threads are found, not listed).
            if let Some(t) = task::find(tid).filter(|t| visible(t) && !t.process.group.exited.load(Ordering::Acquire)) {
                return Some(Node::dir(PidDir { tid: t.tid, thread: false }));
            }
            return process::zombie(tid).map(|_| Node::dir(ZombieDir { pid: tid }));
        }
        let me = crate::sched::current();
        Some(match name {
            "self" => Node::Link(me.process.tgid.to_string()),
            "thread-self" => Node::Link(format!("{}/task/{}", me.process.tgid, me.tid)),
            "mounts" => Node::Link(String::from("self/mounts")),
            "cmdline" => Node::ro(|| Ok(format!("{}\n", crate::cmdline::boot_line()))),
            "cpuinfo" => Node::ro(|| Ok(cpuinfo())),
            "filesystems" => Node::ro(|| {
                Ok(String::from("nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tcgroup\nnodev\tcgroup2\nnodev\tramfs\nnodev\tdebugfs\nnodev\ttracefs\n"))
            }),
            "interrupts" => Node::ro(|| Ok(interrupts())),
            "loadavg" => Node::ro(|| Ok(loadavg())),
            "meminfo" => Node::ro(|| Ok(meminfo())),
            "schedstat" => Node::ro(|| Ok(crate::sched::debug::schedstat(crate::fs::pseudo::cpumask_hex))),
            "stat" => Node::ro(|| Ok(stat())),
            "vmstat" => Node::ro(|| Ok(vmstat())),
            "sys" => Node::dir(SysDir { prefix: String::new() }),
            "uptime" => Node::ro(|| Ok(uptime())),
            "version" => {
                Node::ro(|| Ok(format!("Linux version {} (cadence) (rustc) {}\n", crate::sysctl::OSRELEASE, crate::sysctl::VERSION)))
            }
            _ => return None,
        })
    }
}

/// Is `t` a task `/proc` shows: alive, or a zombie its parent has not reaped?
fn visible(t: &Task) -> bool {
    if t.state() == TaskState::Dead && t.detached.load(Ordering::Relaxed) {
        return false;
    }
    let reaped =
        process::thread_of(t).and_then(|th| th.process.parent.as_ref().map(|p| p.record.reaped.load(Ordering::Acquire))).unwrap_or(false);
    !reaped
}

/// The live task `tid` (ESRCH once it is gone, as Linux's files of a dead task).
fn task_of(tid: Tid) -> Result<Arc<Task>, Errno> {
    task::find(tid).filter(|t| visible(t)).ok_or(Errno::ESRCH)
}

/// `/proc/PID` (`thread: false`, with `task/`) or `/proc/PID/task/TID`.
struct PidDir {
    tid: Tid,
    thread: bool,
}

const PID_NAMES: &[(&str, u32)] = &[
    ("autogroup", REG),
    ("cgroup", REG),
    ("cmdline", REG),
    ("comm", REG),
    ("cwd", LNK),
    ("exe", LNK),
    ("fd", DIR),
    ("limits", REG),
    ("maps", REG),
    ("mounts", REG),
    ("oom_score", REG),
    ("oom_score_adj", REG),
    ("sched", REG),
    ("schedstat", REG),
    ("stat", REG),
    ("statm", REG),
    ("status", REG),
    ("task", DIR),
];

impl GenDir for PidDir {
    fn list(&self) -> Vec<(String, u32)> {
        PID_NAMES.iter().filter(|&&(n, _)| !(self.thread && n == "task")).map(|&(n, k)| (String::from(n), k)).collect()
    }

    fn tgid_dir(&self) -> Option<u32> {
        (!self.thread).then_some(self.tid)
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let tid = self.tid;
        // `/proc/PID/stat` counts the whole process, `task/TID/stat` one thread (Linux's `whole`).
        let whole = !self.thread;
        if self.thread && name == "task" {
            return None;
        }
        let t = task_of(tid).ok()?;
        Some(match name {
            "autogroup" => Node::rw(
                move || crate::sched::autogroup::proc_autogroup(tid).map(|s| s + "\n"),
                move |v| crate::sched::autogroup::set_nice(tid, v.trim().parse::<i64>().map_err(|_| Errno::EINVAL)?),
            ),
            "cgroup" => Node::ro(move || Ok(crate::process::cgroupfs::proc_cgroup(&*task_of(tid)?))),
            "cmdline" => Node::ro(move || Ok(cmdline(&*task_of(tid)?))),
            "comm" => Node::rw(
                move || Ok(format!("{}\n", comm(&*task_of(tid)?))),
                move |v| {
                    let t = task_of(tid)?;
                    process::thread_of(&t).ok_or(Errno::EINVAL)?;
                    t.set_comm(v.strip_suffix('\n').unwrap_or(v).as_bytes());
                    Ok(())
                },
            ),
            "cwd" => Node::Link(
                process::thread_of(&t).map_or(String::from("/"), |th| crate::fs::vfs::path_of(&th.fs.cwd.lock_uninterruptible())),
            ),
            "exe" => Node::Link(user_mm(&t).map(|mm| mm.lock_uninterruptible().exe.clone()).unwrap_or_default()),
            "fd" => Node::Dir(0o500, alloc::sync::Arc::new(FdDir { tid })),
            "limits" => Node::ro(move || limits(tid)),
            "maps" => Node::ro(move || Ok(maps(&*task_of(tid)?))),
            "mounts" => Node::ro(|| Ok(crate::fs::mount::format())),
            "oom_score" => Node::ro(move || Ok(format!("{}\n", process::oom::score(tid)))),
            "oom_score_adj" => {
                let p = process::thread_of(&t).map(|th| th.process.clone());
                let q = p.clone();
                Node::rw(
                    move || Ok(format!("{}\n", p.as_ref().map_or(0, |p| p.oom_score_adj.load(Ordering::Relaxed)))),
                    move |v| match v.trim().parse::<i32>() {
                        Ok(n @ -1000..=1000) => {
                            if let Some(q) = &q {
                                q.oom_score_adj.store(n, Ordering::Relaxed);
                            }
                            Ok(())
                        }
                        _ => Err(Errno::EINVAL),
                    },
                )
            }
            "sched" => Node::ro(move || Ok(sched(&*task_of(tid)?))),
            "schedstat" => Node::ro(move || {
                let t = task_of(tid)?;
                let s = &t.stats;
                Ok(format!(
                    "{} {} {}\n",
                    s.sum_exec_runtime.load(Ordering::Relaxed),
                    s.wait_sum.load(Ordering::Relaxed),
                    s.wait_count.load(Ordering::Relaxed)
                ))
            }),
            "stat" => Node::ro(move || Ok(stat_of(&*task_of(tid)?, whole))),
            "statm" => Node::ro(move || Ok(statm(&*task_of(tid)?))),
            "status" => Node::ro(move || Ok(status(&*task_of(tid)?))),
            "task" => Node::dir(TaskDir { tgid: tid }),
            _ => return None,
        })
    }
}

/// `/proc/PID` of a zombie: what is left of it (Linux shows the same files, mostly empty).
struct ZombieDir {
    pid: Tid,
}

const ZOMBIE_NAMES: &[(&str, u32)] = &[("cmdline", REG), ("comm", REG), ("stat", REG), ("status", REG)];

impl GenDir for ZombieDir {
    fn list(&self) -> Vec<(String, u32)> {
        ZOMBIE_NAMES.iter().map(|&(n, k)| (String::from(n), k)).collect()
    }

    fn tgid_dir(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let pid = self.pid;
        let z = move || process::zombie(pid).ok_or(Errno::ESRCH);
        let name_of = |z: &process::Zombie| {
            let n = z.comm.iter().position(|&b| b == 0).unwrap_or(z.comm.len());
            String::from_utf8_lossy(&z.comm[..n]).into_owned()
        };
        Some(match name {
            "cmdline" => Node::ro(move || z().map(|_| String::new())),
            "comm" => Node::ro(move || z().map(|z| format!("{}\n", name_of(&z)))),
            "stat" => Node::ro(move || {
                let z = z()?;
                let mut s =
                    format!("{} ({}) Z {} {} {} 0 -1 4194308 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0 0", pid, name_of(&z), z.ppid, z.pgid, z.sid);
                s.push_str(" 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 ");
                s.push_str(&format!("{}\n", z.status));
                Ok(s)
            }),
            "status" => Node::ro(move || {
                let z = z()?;
                Ok(format!(
                    "Name:\t{}\nState:\tZ (zombie)\nTgid:\t{pid}\nNgid:\t0\nPid:\t{pid}\nPPid:\t{}\nThreads:\t1\n",
                    name_of(&z),
                    z.ppid
                ))
            }),
            _ => return None,
        })
    }
}

/// `/proc/PID/fd`: a link per open fd to what it is open on ([`crate::fs::file::OpenFile::proc_link`]).
/// Following a link opens that path again (Linux's links reach the open file itself: a pipe
/// or socket reopens only there).
struct FdDir {
    tid: Tid,
}

impl FdDir {
    fn table(&self) -> Option<alloc::sync::Arc<crate::sched::wait::Mutex<crate::fs::file::FdTable>>> {
        task_of(self.tid).ok().and_then(|t| process::thread_of(&t)).and_then(|th| th.files_if_live())
    }
}

impl GenDir for FdDir {
    fn list(&self) -> Vec<(String, u32)> {
        self.table().map_or(Vec::new(), |f| f.lock_uninterruptible().open_fds().into_iter().map(|fd| (fd.to_string(), LNK)).collect())
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let fd = name.parse::<u64>().ok()?;
        let file = self.table()?.lock_uninterruptible().get(fd).ok()?;
        Some(Node::Link(file.proc_link()))
    }
}

/// `/proc/PID/task`: the process's threads.
struct TaskDir {
    tgid: Tid,
}

impl GenDir for TaskDir {
    fn list(&self) -> Vec<(String, u32)> {
        task_of(self.tgid).map_or(Vec::new(), |t| t.process.group.members().into_iter().map(|m| (m.to_string(), DIR)).collect())
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let tid = name.parse::<Tid>().ok()?;
        let t = task_of(tid).ok()?;
        (t.process.tgid == self.tgid).then(|| Node::dir(PidDir { tid, thread: true }))
    }
}

/// The user-space address space of `t`'s process (none for kernel tasks).
fn user_mm(t: &Task) -> Option<Arc<crate::sched::wait::Mutex<process::mm::Mm>>> {
    process::thread_of(t).and_then(|th| th.mm_if_live())
}

/// The name `ps` shows: the task's comm (its creation name, then what exec and PR_SET_NAME set).
fn comm(t: &Task) -> String {
    t.comm_string()
}

fn cmdline(t: &Task) -> String {
    // Kernel tasks have none (an empty file, as Linux's kthreads).
    user_mm(t).map_or(String::new(), |mm| String::from_utf8_lossy(&mm.lock_uninterruptible().cmdline).into_owned())
}

/// The state letter and word of `status` and `stat`.
fn state(t: &Task) -> (char, &'static str) {
    // Ended as far as the parent can tell (its status is recorded): a zombie, though its
    // tasks may still be finishing their exit.
    if t.process.group.exited.load(Ordering::Acquire) {
        return ('Z', "zombie");
    }
    match t.state() {
        TaskState::Running => ('R', "running"),
        TaskState::Sleeping => ('S', "sleeping"),
        TaskState::Stopped => ('T', "stopped"),
        TaskState::Dead => ('Z', "zombie"),
    }
}

/// Linux's `task_prio`: `prio - MAX_RT_PRIO` of the priority the task runs at (a PI boost
/// included): -1 - rt_priority for RT, -101 for deadline, 20 + nice for fair.
fn task_prio(t: &Task) -> i32 {
    match t.class() {
        task::ClassId::Dl => -101,
        task::ClassId::Rt => -1 - i32::from(t.rt_priority()),
        _ => 20 + t.nice(),
    }
}

/// Linux's `new_encode_dev` of the process's controlling tty (0 = none).
fn tty_nr(t: &Task) -> u32 {
    let tty = t.process.group.tty.load(Ordering::Acquire);
    if tty == 0 {
        0
    } else if tty == crate::tty::CONSOLE {
        (5 << 8) | 1
    } else {
        (4 << 8) | tty
    }
}

/// An address space's sizes in bytes, from its VMAs as Linux's `mm` counters sort them
/// (`is_data_mapping`, `is_exec_mapping`, `VM_STACK`), and its resident pages.
#[derive(Default)]
struct VmCounts {
    total: u64,
    locked: u64,
    /// Private writable mappings other than the stack (`data_vm`).
    data: u64,
    /// The initial stack (`stack_vm`).
    stack: u64,
    /// Executable mappings of the program itself (`VmExe`, `statm`'s text).
    text: u64,
    /// Other executable, non-writable mappings: shared libraries (`VmLib`).
    lib: u64,
    /// Pages resident (Cadence keeps no file/anonymous split: all count as anonymous).
    rss_pages: u64,
    /// The most pages it has had resident (`VmHWM`).
    hiwater_pages: u64,
}

fn vm_counts(t: &Task) -> VmCounts {
    let Some(mm) = user_mm(t) else { return VmCounts::default() };
    let mm = mm.lock_uninterruptible();
    let mut c = VmCounts { rss_pages: mm.resident_pages(), hiwater_pages: mm.space.hiwater_pages(), ..VmCounts::default() };
    for v in mm.vmas() {
        let len = v.end - v.start;
        c.total += len;
        let stack = v.end == process::mm::STACK_TOP;
        if stack {
            c.stack += len;
        } else if v.prot.write && !v.shared {
            c.data += len;
        } else if v.prot.exec && !v.prot.write {
            let own = matches!(&v.backing, process::mm::Backing::File { inode, .. } if crate::fs::vfs::path_of(inode) == mm.exe);
            if own {
                c.text += len;
            } else {
                c.lib += len;
            }
        }
    }
    c.locked = mm.locked_pages() * process::mm::PAGE;
    c
}

/// `/proc/PID/statm`: Linux's `proc_pid_statm`, in pages: size resident shared text lib data dt
/// (`lib` and `dt` are 0 since Linux 2.6).
fn statm(t: &Task) -> String {
    let c = vm_counts(t);
    let p = process::mm::PAGE;
    format!("{} {} 0 {} 0 {} 0\n", c.total / p, c.rss_pages, c.text / p, (c.data + c.stack) / p)
}

/// `/proc/PID/stat` (`whole`: the process's CPU time and faults, its ended threads' included,
/// as Linux's `do_task_stat`) or `task/TID/stat`.
fn stat_of(t: &Task, whole: bool) -> String {
    let g = &t.process.group;
    let th = process::thread_of(t);
    let ppid = th.as_ref().map_or(t.parent, |th| process::ppid(&th.process));
    let tpgid = match crate::tty::get(g.tty.load(Ordering::Acquire)) {
        Some(tty) => tty.fg_pgrp.load(Ordering::Acquire) as i64,
        None => -1,
    };
    let flags: u32 = if t.kthread { 0x0020_0000 } else { 0x0040_0000 };
    let threads = g.len();
    let vm = vm_counts(t);
    let (vsize, rss) = (vm.total, vm.rss_pages);
    // Tick-sampled times and the fault counts: the process's (its ended threads' included)
    // or the thread's; the reaped children's in both (Linux's `do_task_stat`).
    let own = if whole { crate::sched::rusage::group_usage(g) } else { crate::sched::rusage::task_usage(t) };
    let kids = crate::sched::rusage::children_usage(g);
    let (blocked, pending) = (t.process.signals.blocked.load(Ordering::Relaxed), t.process.signals.pending.load(Ordering::Relaxed));
    let (ignored, caught) = th.as_ref().map_or((u64::MAX, 0), |th| sig_dispositions(th));
    let attr = t.attr();
    let rt_priority = if attr.policy.is_rt() { attr.rt_priority } else { 0 };
    let nice = if attr.policy.is_rt() || attr.policy == Policy::Deadline { 0 } else { attr.nice };
    let mut s = format!(
        "{} ({}) {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} 0 {} {} {} {} ",
        t.tid,
        comm(t),
        state(t).0,
        ppid,
        g.pgid.load(Ordering::Relaxed),
        g.sid.load(Ordering::Relaxed),
        tty_nr(t),
        tpgid,
        flags,
        own.minflt,
        kids.minflt,
        own.majflt,
        kids.majflt,
        ticks(own.utime_ns),
        ticks(own.stime_ns),
        ticks(kids.utime_ns),
        ticks(kids.stime_ns),
        task_prio(t),
        nice,
        threads,
        ticks(t.created_ns),
        vsize,
        rss,
        u64::MAX,
    );
    // startcode endcode startstack kstkesp kstkeip: 0 as Linux shows them to other users.
    // The signal fields: the first 31 signals only, as Linux's do_task_stat ("obsolete ...
    // must be decimal for Linux 2.0 compatibility": `sig[0] & 0x7fffffff`).
    let _ = writeln!(
        s,
        "0 0 0 0 0 {} {} {} {} 0 0 0 17 {} {} {} 0 0 0 0 0 0 0 0 0 0 {}",
        pending & 0x7fff_ffff,
        blocked & 0x7fff_ffff,
        ignored & 0x7fff_ffff,
        caught & 0x7fff_ffff,
        t.cpu(),
        rt_priority,
        attr.policy.raw(),
        if t.state() == TaskState::Dead { t.exit_code() } else { 0 },
    );
    s
}

/// (ignored, caught) signal masks of the process (bit n-1 for signal n).
fn sig_dispositions(th: &Thread) -> (u64, u64) {
    let actions = th.sighand.lock_uninterruptible();
    let (mut ign, mut cgt) = (0u64, 0u64);
    for (i, a) in actions.iter().enumerate().skip(1) {
        match a.handler {
            0 => {}
            1 => ign |= 1 << (i - 1),
            _ => cgt |= 1 << (i - 1),
        }
    }
    (ign, cgt)
}

fn status(t: &Task) -> String {
    let g = &t.process.group;
    let th = process::thread_of(t);
    let (st, word) = state(t);
    let ppid = th.as_ref().map_or(t.parent, |th| process::ppid(&th.process));
    let (uid, gid, groups) = th.as_ref().map_or(([0; 4], [0; 4], Vec::new()), |th| {
        let c = th.process.creds.lock_uninterruptible();
        (c.uid, c.gid, c.groups.clone())
    });
    let umask = th.as_ref().map_or(0o022, |th| th.fs.umask.load(Ordering::Relaxed));
    let (ignored, caught) = th.as_ref().map_or((u64::MAX, 0), |th| sig_dispositions(th));
    let fdsize = th.as_ref().and_then(|th| th.files_if_live()).map_or(0, |f| f.lock_uninterruptible().capacity());
    let mut s = String::new();
    let _ = write!(s, "Name:\t{}\nUmask:\t{:04o}\nState:\t{} ({})\n", comm(t), umask, st, word);
    let _ = write!(s, "Tgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t0\n", t.process.tgid, t.tid, ppid);
    let _ = write!(s, "Uid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\n", uid[0], uid[1], uid[2], uid[3], gid[0], gid[1], gid[2], gid[3]);
    let _ = write!(s, "FDSize:\t{}\nGroups:\t", fdsize);
    // Space-separated, and a space after the last (Linux's `task_state`).
    for (i, gr) in groups.iter().enumerate() {
        let _ = write!(s, "{}{}", if i > 0 { " " } else { "" }, gr);
    }
    s.push(' ');
    let _ = write!(
        s,
        "\nNStgid:\t{}\nNSpid:\t{}\nNSpgid:\t{}\nNSsid:\t{}\n",
        t.process.tgid,
        t.tid,
        g.pgid.load(Ordering::Relaxed),
        g.sid.load(Ordering::Relaxed)
    );
    if user_mm(t).is_some() {
        let c = vm_counts(t);
        let kb = |b: u64| b / 1024;
        let rss = c.rss_pages * 4;
        for (name, v) in [
            ("VmPeak", kb(c.total)),
            ("VmSize", kb(c.total)),
            ("VmLck", kb(c.locked)),
            ("VmPin", 0),
            ("VmHWM", c.hiwater_pages.max(c.rss_pages) * 4),
            ("VmRSS", rss),
            ("RssAnon", rss),
            ("RssFile", 0),
            ("RssShmem", 0),
            ("VmData", kb(c.data)),
            ("VmStk", kb(c.stack)),
            ("VmExe", kb(c.text)),
            ("VmLib", kb(c.lib)),
            ("VmPTE", 0),
            ("VmSwap", 0),
            ("HugetlbPages", 0),
        ] {
            let _ = writeln!(s, "{}:\t{:>8} kB", name, v);
        }
    }
    let _ = write!(s, "CoreDumping:\t0\nTHP_enabled:\t0\nThreads:\t{}\nSigQ:\t0/{}\n", g.len(), 4096);
    let pending = t.process.signals.pending.load(Ordering::Relaxed);
    let shared = g.pending.load(Ordering::Relaxed);
    let blocked = t.process.signals.blocked.load(Ordering::Relaxed);
    let _ = write!(
        s,
        "SigPnd:\t{:016x}\nShdPnd:\t{:016x}\nSigBlk:\t{:016x}\nSigIgn:\t{:016x}\nSigCgt:\t{:016x}\n",
        pending, shared, blocked, ignored, caught
    );
    let _ = write!(
        s,
        "CapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n"
    );
    let _ = write!(s, "NoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n");
    let _ = write!(s, "Speculation_Store_Bypass:\tvulnerable\nSpeculationIndirectBranch:\talways enabled\n");
    let mask = t.affinity();
    let _ = write!(s, "Cpus_allowed:\t{}\nCpus_allowed_list:\t{}\n", crate::fs::pseudo::cpumask_hex(mask), mask.to_list());
    // Linux prints the node mask at MAX_NUMNODES (1024 with Debian's NODES_SHIFT 10) bits:
    // libnuma sizes its node masks from this line's width.
    let _ = write!(s, "Mems_allowed:\t");
    for _ in 0..31 {
        s.push_str("00000000,");
    }
    s.push_str("00000001\nMems_allowed_list:\t0\n");
    let _ = write!(
        s,
        "voluntary_ctxt_switches:\t{}\nnonvoluntary_ctxt_switches:\t{}\n",
        t.stats.nr_voluntary_switches.load(Ordering::Relaxed),
        t.stats.nr_involuntary_switches.load(Ordering::Relaxed)
    );
    s
}

/// `/proc/PID/sched`: Linux's `proc_sched_show_task` layout (`%-45s:%21Ld`, and
/// `%-45s:%14Ld.%06ld` for times in ms), the fields Cadence keeps.
fn sched(t: &Task) -> String {
    let mut s = format!("{} ({}, #threads: {})\n", comm(t), t.tid, t.process.group.len());
    s.push_str("-------------------------------------------------------------------\n");
    let ms = |s: &mut String, name: &str, ns: u64| {
        let _ = writeln!(s, "{:<45}:{:>14}.{:06}", name, ns / 1_000_000, ns % 1_000_000);
    };
    let int = |s: &mut String, name: &str, v: i64| {
        let _ = writeln!(s, "{:<45}:{:>21}", name, v);
    };
    let fair = crate::sched::fair_snapshot(t);
    let st = &t.stats;
    ms(&mut s, "se.vruntime", fair.map_or(0, |f| f.0));
    ms(&mut s, "se.sum_exec_runtime", st.sum_exec_runtime.load(Ordering::Relaxed));
    int(&mut s, "se.nr_migrations", st.nr_migrations.load(Ordering::Relaxed) as i64);
    // Linux prints it with CONFIG_SCHED_CORE (and schedstats), last of the schedstat block:
    // the time this task ran while an SMT sibling was forced idle beside it.
    ms(&mut s, "core_forceidle_sum", t.core_forceidle_ns.load(Ordering::Relaxed));
    let (vol, invol) = (st.nr_voluntary_switches.load(Ordering::Relaxed), st.nr_involuntary_switches.load(Ordering::Relaxed));
    int(&mut s, "nr_switches", (vol + invol) as i64);
    int(&mut s, "nr_voluntary_switches", vol as i64);
    int(&mut s, "nr_involuntary_switches", invol as i64);
    int(&mut s, "se.load.weight", fair.map_or(0, |f| f.1 as i64) << 10);
    // PELT (`sched::pelt`), as of the task's last update, as Linux prints it. Linux's next
    // line, `se.avg.util_est`, is left out: util_est is not kept.
    let avg = crate::sched::pelt::task_avg(t);
    for (name, v) in [
        ("se.avg.load_sum", avg.load_sum),
        ("se.avg.runnable_sum", avg.runnable_sum),
        ("se.avg.util_sum", avg.util_sum),
        ("se.avg.load_avg", avg.load_avg),
        ("se.avg.runnable_avg", avg.runnable_avg),
        ("se.avg.util_avg", avg.util_avg),
        ("se.avg.last_update_time", avg.last_update_time),
    ] {
        int(&mut s, name, v as i64);
    }
    let attr = t.attr();
    int(&mut s, "policy", i64::from(attr.policy.raw()));
    int(&mut s, "prio", i64::from(task_prio(t) + 100));
    if let Some(dl) = attr.dl {
        int(&mut s, "dl.runtime", dl.runtime as i64);
        int(&mut s, "dl.deadline", dl.deadline as i64);
    }
    s
}

fn limits(tid: Tid) -> Result<String, Errno> {
    // Linux's `proc_pid_limits` rows, in RLIMIT order.
    const ROWS: [(&str, &str); 16] = [
        ("Max cpu time", "seconds"),
        ("Max file size", "bytes"),
        ("Max data size", "bytes"),
        ("Max stack size", "bytes"),
        ("Max core file size", "bytes"),
        ("Max resident set", "bytes"),
        ("Max processes", "processes"),
        ("Max open files", "files"),
        ("Max locked memory", "bytes"),
        ("Max address space", "bytes"),
        ("Max file locks", "locks"),
        ("Max pending signals", "signals"),
        ("Max msgqueue size", "bytes"),
        ("Max nice priority", ""),
        ("Max realtime priority", ""),
        ("Max realtime timeout", "us"),
    ];
    let t = task_of(tid)?;
    let lims = process::limits_of(t.process.tgid).ok_or(Errno::ESRCH)?;
    let lims = *lims.lock_uninterruptible();
    let mut s = format!("{:<25} {:<20} {:<20} {:<10}\n", "Limit", "Soft Limit", "Hard Limit", "Units");
    for (i, (name, unit)) in ROWS.iter().enumerate() {
        let v = |x: u64| if x == u64::MAX { String::from("unlimited") } else { x.to_string() };
        let (soft, hard) = lims[i];
        let _ = writeln!(s, "{:<25} {:<20} {:<20} {:<10}", name, v(soft), v(hard), unit);
    }
    Ok(s)
}

fn maps(t: &Task) -> String {
    let Some(mm) = user_mm(t) else { return String::new() };
    let mm = mm.lock_uninterruptible();
    let mut s = String::new();
    for v in mm.vmas() {
        let (offset, ino, path) = match &v.backing {
            process::mm::Backing::File { inode, offset, .. } => (*offset, inode.ino, crate::fs::vfs::path_of(inode)),
            process::mm::Backing::Anonymous => (0, 0, String::new()),
        };
        let path = if path.is_empty() && v.start == mm.brk_start && v.end <= mm.brk.max(v.end) && mm.brk > mm.brk_start {
            String::from("[heap]")
        } else if path.is_empty() && v.end == process::mm::STACK_TOP {
            String::from("[stack]")
        } else {
            path
        };
        let line = format!(
            "{:08x}-{:08x} {}{}{}{} {:08x} {} {}",
            v.start,
            v.end,
            if v.prot.read { 'r' } else { '-' },
            if v.prot.write { 'w' } else { '-' },
            if v.prot.exec { 'x' } else { '-' },
            if v.shared { 's' } else { 'p' },
            offset,
            if ino == 0 { "00:00" } else { "00:02" },
            ino
        );
        if path.is_empty() {
            let _ = writeln!(s, "{} ", line);
        } else {
            let _ = writeln!(s, "{:<72} {}", line, path);
        }
    }
    s
}

/// `/proc/mounts`: the file systems Cadence has, at their places.
fn uptime() -> String {
    let up = crate::time::uptime_ns();
    let idle = crate::sched::idle_ns_total();
    format!("{}.{:02} {}.{:02}\n", up / 1_000_000_000, (up / 10_000_000) % 100, idle / 1_000_000_000, (idle / 10_000_000) % 100)
}

fn loadavg() -> String {
    let all = task::all();
    let running = all.iter().filter(|t| t.state() == TaskState::Running).count();
    let [a, b, c] = crate::sched::loadavg();
    let f = |v: u64| {
        let (int, frac) = cadence_sched::loadavg::LoadAvg::format(v);
        format!("{}.{:02}", int, frac)
    };
    format!("{} {} {} {}/{} {}\n", f(a), f(b), f(c), running, all.len(), task::last_tid())
}

fn stat() -> String {
    let up = crate::time::uptime_ns();
    let mut lines = Vec::new();
    let (mut user_all, mut system_all, mut idle_all) = (0, 0, 0);
    // As Linux's `show_stat`: the total over every CPU, a line per CPU online.
    let online = crate::sched::online_mask();
    for c in crate::percpu::online_cpus() {
        let (user, system, idle) = crate::sched::cpu_times(c.cpu_id);
        user_all += ticks(user);
        system_all += ticks(system);
        idle_all += ticks(idle);
        if online.contains(c.cpu_id as usize) {
            lines.push(format!("cpu{} {} 0 {} {} 0 0 0 0 0 0\n", c.cpu_id, ticks(user), ticks(system), ticks(idle)));
        }
    }
    let switches: u64 = crate::percpu::online_cpus().map(|c| crate::sched::rq_of(c.cpu_id).nr_switches.load(Ordering::Relaxed)).sum();
    let all = task::all();
    let running = all.iter().filter(|t| t.state() == TaskState::Running).count();
    let boot = crate::time::realtime_ns().saturating_sub(up) / 1_000_000_000;
    let mut s = format!("cpu  {} 0 {} {} 0 0 0 0 0 0\n", user_all, system_all, idle_all);
    for l in lines {
        s.push_str(&l);
    }
    let _ = write!(
        s,
        "intr 0\nctxt {}\nbtime {}\nprocesses {}\nprocs_running {}\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
        switches,
        boot,
        task::last_tid(),
        running
    );
    s
}

fn meminfo() -> String {
    let total = crate::mm::frame::total_frames() * 4;
    let free = crate::mm::frame::free_frames() * 4;
    let mut s = String::new();
    for (name, v) in [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", free),
        ("Buffers", 0),
        ("Cached", crate::block::pagecache::counts().pages * 4),
        ("SwapCached", 0),
    ] {
        let _ = writeln!(s, "{:<16}{:>8} kB", format!("{}:", name), v);
    }
    let cache = crate::block::pagecache::counts();
    // Slab: the kernel heap in use (Cadence's one allocator for kernel objects, where Linux has
    // its slab caches); `make test-fuzz` compares it before and after a run.
    let slab = crate::mm::heap::used() as u64 / 1024;
    for (name, v) in [("SwapTotal", 0), ("SwapFree", 0), ("Dirty", cache.dirty * 4), ("Writeback", cache.writeback * 4), ("Slab", slab)] {
        let _ = writeln!(s, "{:<16}{:>8} kB", format!("{}:", name), v);
    }
    s
}

/// `/proc/cpuinfo`: Linux's `show_cpuinfo` fields, from CPUID (`arch::cpuid::identity`), the
/// topology and the TSC (`cpu MHz`; `bogomips` is Linux's `lpj`-based figure, twice the TSC MHz
/// with a TSC-calibrated delay loop). Flags are the CPUID bits with Linux's names, without the
/// synthetic ones Linux adds (`constant_tsc`, `nopl`, ...).
fn cpuinfo() -> String {
    let id = crate::arch::cpuid::identity();
    // The CPUs online (`sched::hotplug`), as Linux lists them.
    let online = crate::sched::online_mask();
    let cpus: Vec<_> = crate::percpu::online_cpus().filter(|c| online.contains(c.cpu_id as usize)).collect();
    let (_, _, cores, _) = crate::smp::topology_summary();
    let khz = crate::arch::tsc::hz() / 1000;
    let cache_kb = id.caches.iter().max_by_key(|c| c.level).map_or(0, |c| c.size() / 1024);
    let flags = id.flags.join(" ");
    let mut s = String::new();
    for c in &cpus {
        let siblings = cpus.iter().filter(|o| o.topology.package == c.topology.package).count();
        let _ = write!(
            s,
            "processor\t: {}\nvendor_id\t: {}\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: {}\nstepping\t: {}\n\
             microcode\t: 0x1\ncpu MHz\t\t: {}.{:03}\ncache size\t: {} KB\nphysical id\t: {}\nsiblings\t: {}\n\
             core id\t\t: {}\ncpu cores\t: {}\napicid\t\t: {}\ninitial apicid\t: {}\nfpu\t\t: yes\nfpu_exception\t: yes\n\
             cpuid level\t: {}\nwp\t\t: yes\nflags\t\t: {}\nbugs\t\t:\nbogomips\t: {}.{:02}\nclflush size\t: {}\n\
             cache_alignment\t: {}\naddress sizes\t: {} bits physical, {} bits virtual\npower management:\n\n",
            c.cpu_id,
            id.vendor,
            id.family,
            id.model,
            id.brand,
            id.stepping,
            khz / 1000,
            khz % 1000,
            cache_kb,
            c.topology.package,
            siblings,
            c.topology.core,
            cores,
            c.apic_id,
            c.apic_id,
            id.max_leaf,
            flags,
            khz * 2 / 1000,
            khz * 2 / 10 % 100,
            id.clflush,
            id.clflush,
            id.phys_bits,
            id.virt_bits
        );
    }
    s
}

/// `/proc/sys` and its subdirectories, made from the sysctl table's dotted names.
struct SysDir {
    /// The directory's dotted prefix (`""`, `"kernel."`, `"debug.fail_alloc."`).
    prefix: String,
}

impl GenDir for SysDir {
    fn list(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for e in crate::sysctl::list() {
            let Some(rest) = e.name.strip_prefix(self.prefix.as_str()) else { continue };
            let entry = match rest.split_once('.') {
                Some((dir, _)) => (String::from(dir), DIR),
                None => (String::from(rest), REG),
            };
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
        out.sort();
        out
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let full = format!("{}{}", self.prefix, name);
        if let Some(e) = crate::sysctl::find(&full).filter(|e| e.name == full) {
            let (get, set) = (e.get, e.set);
            return Some(Node::rw(move || Ok(format!("{}\n", get())), move |v| set(v.trim_end_matches('\n'))));
        }
        let sub = format!("{}.", full);
        crate::sysctl::list().any(|e| e.name.starts_with(sub.as_str())).then(|| Node::dir(SysDir { prefix: sub }))
    }
}

/// `/proc/interrupts`: Linux's layout (a `CPUn` header, one row per source, counts per CPU at
/// `%10u`) with the interrupts Cadence takes: COM1 (IRQ 4) and the virtio disk's line as
/// device rows, then the LAPIC timer (`LOC`), spurious vectors (`SPU`), reschedule (`RES`) and
/// call-function (`CAL`) IPIs.
fn interrupts() -> String {
    use crate::interrupts::IrqKind;
    let online = crate::sched::online_mask();
    let cpus: Vec<u32> = crate::percpu::online_cpus().map(|c| c.cpu_id).filter(|&c| online.contains(c as usize)).collect();
    let mut s = String::from("    ");
    for c in &cpus {
        let _ = write!(s, "       CPU{:<4}", c);
    }
    // Linux pads the header with the last column's spaces.
    s.truncate(s.trim_end().len());
    s.push_str("       \n");
    let row = |s: &mut String, label: &str, kind: IrqKind, what: &str| {
        let _ = write!(s, "{:>4}:", label);
        for &c in &cpus {
            let _ = write!(s, " {:>10}", crate::interrupts::count_of(c, kind));
        }
        let _ = writeln!(s, "   {}", what);
    };
    row(&mut s, "4", IrqKind::Com1, "IO-APIC   4-edge      ttyS0");
    if let Some(disk) = crate::drivers::virtio_blk::info() {
        let label = format!("{}", disk.gsi);
        row(&mut s, &label, IrqKind::VirtioBlk, &format!("IO-APIC {:>3}-fasteoi   virtio0", disk.gsi));
    }
    row(&mut s, "LOC", IrqKind::Timer, "Local timer interrupts");
    row(&mut s, "SPU", IrqKind::Unexpected, "Spurious interrupts");
    row(&mut s, "RES", IrqKind::Reschedule, "Rescheduling interrupts");
    row(&mut s, "CAL", IrqKind::CallFunction, "Function call interrupts");
    s
}

/// `/proc/vmstat`: Linux's `name value` lines for what Cadence's memory keeps (free frames,
/// the page cache's file, dirty and writeback pages); swap and fault counters are 0.
fn vmstat() -> String {
    let cache = crate::block::pagecache::counts();
    let mut s = String::new();
    for (name, v) in [
        ("nr_free_pages", crate::mm::frame::free_frames()),
        ("nr_inactive_anon", 0),
        ("nr_active_anon", 0),
        ("nr_inactive_file", cache.pages),
        ("nr_active_file", 0),
        ("nr_unevictable", 0),
        ("nr_dirty", cache.dirty),
        ("nr_writeback", cache.writeback),
        ("pgpgin", 0),
        ("pgpgout", 0),
        ("pswpin", 0),
        ("pswpout", 0),
        ("pgfault", 0),
        ("pgmajfault", 0),
    ] {
        let _ = writeln!(s, "{} {}", name, v);
    }
    s
}
