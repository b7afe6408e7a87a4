//! The virtio disk (`/dev/vda`, issue #14's data-safety check): what `blk fill` wrote and
//! flushed before a poweroff is read back intact by the next boot on the same image, a wrong
//! seed shows as mismatches, a fill past the end is refused before anything is written, what
//! was synced survives QEMU being killed (with unsynced writes to other blocks in the page
//! cache), and a boot without a disk says so. Every boot has the scenario timeout
//! (`$CADENCE_SCENARIO_TIMEOUT`, see `cadence_tests`). Images are named after this process, so
//! overlapping runs of the test do not share (or lock each other out of) an image.

use cadence_boot::KernelExit;
use cadence_tests::{boot, qemu, Run};
use std::path::PathBuf;

/// `target/<stem>-<pid>.<ext>`, unique to this test process.
fn scratch(stem: &str, ext: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../target/{stem}-{}.{ext}", std::process::id()))
}

fn run_with_disk(disk: &PathBuf, commands: &str) -> Run {
    let run = boot(qemu().disk(disk).args(format!(r#"run="{commands}" poweroff"#)));
    run.check(!run.outcome.output.contains("cadence: PANIC") && !run.outcome.output.contains("cadence: EXCEPTION"), "the kernel panicked");
    run.check(run.outcome.output.contains("virtio-blk: /dev/vda at "), "no virtio-blk probe line");
    run.expect_exit(KernelExit::Success);
    run
}

fn lines<'a>(run: &'a Run, prefix: &str) -> Vec<&'a str> {
    run.outcome.output.lines().map(str::trim_end).filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn filled_blocks_survive_a_poweroff_and_bad_requests_are_refused() {
    let disk = scratch("blk-scenario", "img");
    let _ = std::fs::remove_file(&disk);

    let first = run_with_disk(&disk, "blk info; blk fill 7 256");
    first.check(
        lines(&first, "/dev/vda: 524288 sectors, 268435456 bytes (256 MiB), read-only 0").len() == 1,
        "expected `blk info` of a fresh 256 MiB image",
    );
    first.check(
        lines(&first, "blk: wrote 256 blocks (1048576 bytes) and flushed /dev/vda").len() == 1,
        "expected the fill to report 256 blocks written and flushed",
    );

    let second = run_with_disk(&disk, "blk verify 7 256; blk verify 8 16; blk fill 1 999999; blk verify 7 256");
    let verified = lines(&second, "blk: verified ");
    second.check(
        verified
            == [
                "blk: verified 256 blocks, 0 mismatches", "blk: verified 16 blocks, 16 mismatches",
                "blk: verified 256 blocks, 0 mismatches",
            ],
        format!("verify lines: {verified:?}"),
    );
    second.check(
        lines(&second, "blk: /dev/vda: ") == ["blk: /dev/vda: No space left on device"],
        "expected `blk fill 1 999999` to fail with ENOSPC (and nothing written: the last verify)",
    );
    let _ = std::fs::remove_file(&disk);
}

/// A power cut: QEMU is killed (SIGKILL) after a synced fill and an unsynced `dd` to other
/// blocks; the next boot on the image finds every synced block intact.
#[test]
fn synced_blocks_survive_qemu_being_killed_without_sync() {
    let disk = scratch("blk-kill", "img");
    let _ = std::fs::remove_file(&disk);
    let q = qemu().disk(&disk).args(r#"run="blk fill 9 128; dd if=/dev/zero of=/dev/vda bs=64k count=64 seek=32; echo unsynced-written""#);
    let (outcome, driven) = cadence_tests::with_slot(|| {
        q.run_driven(|con| {
            // At a line's start: the command line and the command's echo contain it too.
            con.wait_for("\nunsynced-written", 0, std::time::Duration::from_secs(240))?;
            con.kill_qemu()
        })
        .expect("could not run QEMU")
    });
    let out = &outcome.output;
    assert!(driven.is_ok(), "the first boot did not get to the kill: {:?}\n{out}", driven.err());
    assert!(out.contains("blk: wrote 128 blocks (524288 bytes) and flushed /dev/vda"), "no synced fill:\n{out}");
    assert!(out.contains("64+0 records out"), "the unsynced dd did not complete:\n{out}");
    assert!(!out.contains("cadence: poweroff"), "the kernel powered off instead of being killed:\n{out}");

    let second = run_with_disk(&disk, "blk verify 9 128");
    second.check(lines(&second, "blk: verified ") == ["blk: verified 128 blocks, 0 mismatches"], "synced blocks did not survive the kill");
    let _ = std::fs::remove_file(&disk);
}

#[test]
fn without_a_disk_blk_says_no_such_device() {
    let run = boot(qemu().args(r#"run="blk info; blk fill 7 1; blk verify 7 1" poweroff"#));
    run.check(lines(&run, "blk: /dev/vda: No such device").len() == 3, "expected three `blk: /dev/vda: No such device` lines");
    run.expect_exit(KernelExit::Success);
}

/// QEMU's `blkdebug` fails every read and write with EIO: each command reports it, the
/// kernel goes on (and the requests still completed by interrupt). The fill's page stays in
/// the cache, clean, after its failed write-back (as in Linux); dropping the cache makes the
/// reads go to the device.
#[test]
fn device_errors_are_eio_and_the_kernel_goes_on() {
    let (conf, img) = (scratch("blk-eio", "conf"), scratch("blk-eio", "img"));
    std::fs::create_dir_all(conf.parent().expect("target dir")).expect("target dir");
    std::fs::write(&conf, "[inject-error]\nevent = \"write_aio\"\nerrno = \"5\"\n\n[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\n")
        .expect("blkdebug config");
    cadence_boot::ensure_disk(&img).expect("disk image");
    let drive = format!("file=blkdebug:{}:{},format=raw,if=virtio,werror=report,rerror=report", conf.display(), img.display());
    let run = boot(
        qemu()
            .qemu_arg("-drive")
            .qemu_arg(drive)
            .args(r#"run="blk fill 1 1; sysctl vm.drop_caches=3; blk verify 1 1; blk read 0; echo still-alive" poweroff"#),
    );
    run.check(
        lines(&run, "blk: /dev/vda: ") == ["blk: /dev/vda: Input/output error"; 3],
        format!("expected three EIO lines, got {:?}", lines(&run, "blk: /dev/vda: ")),
    );
    run.check(lines(&run, "still-alive").len() == 1, "the shell did not go on");
    run.expect_exit(KernelExit::Success);
    let _ = std::fs::remove_file(&img);
    let _ = std::fs::remove_file(&conf);
}
