#!/usr/bin/env bash
# Cargo runner for the kernel (see .cargo/config.toml): boots the ELF given by
# cargo in QEMU via `cadence-boot runner`, again after each failing in-kernel
# test (from the next test, kernel option test_skip=), and ends with the
# failures and `kernel: N passed, M failed` over all boots. Exit 0 only if no
# test failed. Env: CADENCE_TEST_ARGS (kernel command line), CADENCE_TEST_TIMEOUT
# (seconds per boot, default 300), CADENCE_TEST_SMP (QEMU -smp spec).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/target/release/cadence-boot"
[[ -x "$bin" ]] || echo "runner.sh: building cadence-boot (first time takes a few minutes)..." >&2
# Build from the root so kernel/.cargo/config.toml (target = x86_64-unknown-none)
# does not apply; quiet and a no-op when up to date. CARGO_TARGET_DIR must not
# leak in: the bootloader build script's nested `cargo install` would then wait
# for our own build lock forever.
(cd "$root" && env -u CARGO_BUILD_TARGET -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR \
    cargo build --quiet --release -p cadence-boot --manifest-path "$root/Cargo.toml") >&2
exec "$bin" runner "$@"
