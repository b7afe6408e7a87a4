//! The short console fuzz of `make test` (`make test-chaos` runs it for 10 minutes): random
//! bytes, escape sequences, NULs, 10,000-byte lines, ^C storms and command lines with bad
//! arguments typed into the shell over COM1 (`cadence_boot::fuzz`), then `echo` and `ps` must
//! answer, `poweroff` must exit cleanly and no panic, exception or shell restart may appear.
//! A blank scratch disk is attached under `snapshot=on` (as `make run`'s), so the fuzzed `blk`
//! commands reach the virtio driver and the image stays blank.

use cadence_tests::{qemu, with_slot};

#[test]
fn shell_survives_random_input_and_still_answers() {
    let seconds = std::env::var("CADENCE_FUZZ_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let scratch = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/scratch-disk.img");
    let q = qemu().scratch_disk(scratch);
    let f = with_slot(|| cadence_tests::cadence_boot::fuzz::run(&q, 1, seconds)).expect("could not run QEMU");
    if !f.ok {
        panic!("{}\n--- exit: {:?}\n--- COM1 output (last 20000 bytes):\n{}", f.line, f.outcome.exit, {
            let o = &f.outcome.output;
            let mut cut = o.len().saturating_sub(20_000);
            while !o.is_char_boundary(cut) {
                cut += 1;
            }
            o[cut..].to_string()
        });
    }
    println!("{}", f.line);
}
