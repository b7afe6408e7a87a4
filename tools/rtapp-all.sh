#!/usr/bin/env bash
# `make rtapp-all`: Debian's rt-app 1.0 binary, unmodified, on every rt-app 1.0 example JSON
# of tests/fixtures/rtapp that does not need ftrace (the legacy 0.x files and the merge
# fragments are refused by rt-app 1.0 itself, and the "ftrace": true ones need tracefs), each
# for SECONDS (default 2), all in one boot of Cadence and then, if the peer is there, of
# Linux 6.1 with the same QEMU flags. Prints one line per file and kernel: rt-app's exit
# status, the number of per-thread logs it wrote, and its error lines.
#
#   tools/rtapp-all.sh [SECONDS] [SMP]        (defaults: 2, 4,sockets=1,cores=2,threads=2)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs="${1:-2}"; smp="${2:-4,sockets=1,cores=2,threads=2}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
(cd "$root" && cargo build --release -q -p cadence-rtapp --bin rtapp-host)
host="$root/target/release/rtapp-host"
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
files=()
for f in "$root"/tests/fixtures/rtapp/*.json; do
  n=$(basename "$f" .json)
  grep -q '"ftrace" *: *true' "$f" && continue
  # rt-app 1.0's grammar with duration SECONDS and the logs in /tmp (rtapp-host refuses the
  # legacy files, as rt-app 1.0 does).
  "$host" peer-json "$f" -d "$secs" --logdir /tmp --basename "$n" > "$out/rtj-$n.json" 2>/dev/null || { rm -f "$out/rtj-$n.json"; continue; }
  files+=("$out/rtj-$n.json=rtj-$n.json")
done
cat > "$out/run.sh" <<'SH'
cd /tmp
for j in /rtj-*.json; do
  n=${j#/rtj-}; n=${n%.json}
  rt-app "$j" > /tmp/out.txt 2>&1; rc=$?
  echo "RTAPP $n rc=$rc logs=$(ls /tmp/$n-*.log 2>/dev/null | wc -l) $(grep -E 'critical|error' /tmp/out.txt | sort -u | head -2 | tr '\n' ' ')"
  rm -f /tmp/*.log
done
SH
"$boot" initramfs -o "$out/files.cpio" "${files[@]}" "$out/run.sh=rtj-run.sh" > /dev/null
cat "$root/target/user/initramfs.cpio" "$out/files.cpio" > "$out/initrd.cpio"
echo "== Cadence (rt-app 1.0, $secs s each, -smp $smp)"
"$boot" run --kernel "$kernel" --initrd "$out/initrd.cpio" --smp "$smp" --timeout $(( ${#files[@]} * (secs * 20 + 30) + 120 )) \
  --args 'sh="sh /rtj-run.sh" poweroff' > "$out/cadence.out" 2>&1 || true
grep '^RTAPP' "$out/cadence.out" | tr -d '\r' || { echo "rtapp-all: no result on Cadence" >&2; tail -20 "$out/cadence.out" >&2; exit 1; }
. "$root/tools/peer-env.sh"
if peer_find; then
  echo "== Linux 6.1 (the same binary and files)"
  peer_files=(); for f in "${files[@]}"; do peer_files+=(--file "${f%%=*}"); done
  PEER_TIMEOUT=$(( ${#files[@]} * (secs * 20 + 30) + 300 )) "$PEER_RUN" --linux 6.1 --smp "$smp" "${peer_files[@]}" --file "$out/run.sh" \
    'mkdir -p /tmp; sh /run.sh' > "$out/linux.out" 2>&1 || true
  grep '^RTAPP' "$out/linux.out" | tr -d '\r' || { echo "(no result on Linux)"; tail -5 "$out/linux.out"; }
fi
