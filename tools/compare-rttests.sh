#!/usr/bin/env bash
# `make compare-rttests`: the rt-tests programs of issue 36 beside Linux 6.1, in one sitting:
# the same Debian binaries and arguments on Cadence and on the peer (same QEMU flags, TCG),
# alternating boots, ROUNDS rounds. Prints each program's summary lines per round and kernel.
#
#   tools/compare-rttests.sh [ROUNDS] [SMP]      (defaults: 1, 4,sockets=1,cores=2,threads=2)
#
# What differs: Linux 6.1 is Debian's generic (cloud) kernel with PREEMPT_DYNAMIC; it has
# tracefs mounted, so deadline_test and cyclicdeadline write their per-period debug lines to
# trace_marker there and to the serial console on Cadence (no tracefs yet), which costs
# Cadence console time inside the measured periods. Cadence makes a syscall for every
# clock_gettime (no vDSO); Linux under TCG reads the clock through the vDSO.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-1}"; smp="${2:-4,sockets=1,cores=2,threads=2}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
. "$root/tools/peer-env.sh"
peer_find || { echo "compare-rttests: no Linux peer (../shared/peer/run.sh)" >&2; exit 1; }
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
cat > "$out/rtt.sh" <<'SH'
cd /tmp
echo "== deadline_test -i 10000"; deadline_test -i 10000 2>&1 | grep -E "^\[|missed|nr_periods|max_time"
echo "== cyclicdeadline -i 10000 -D 5 -q"; cyclicdeadline -i 10000 -D 5 -q 2>&1 | grep -E "^T:"
echo "== oslat -D 5"; oslat -D 5 2>&1 | grep -E "Maximum|Average"
echo "== signaltest -l 1000 -q"; signaltest -l 1000 -q 2>&1 | grep -E "^T:"
echo "== ptsematest -a -t -p99 -i100 -d25 -l1000 -q"; ptsematest -a -t -p99 -i100 -d25 -l1000 -q 2>&1 | grep -E "^#[0-9]+ ->"
echo "== sigwaittest -a -t -p99 -i100 -d25 -l1000 -q"; sigwaittest -a -t -p99 -i100 -d25 -l1000 -q 2>&1 | grep -E "^#[0-9]+ ->"
echo "== end"
SH
"$boot" initramfs -o "$out/files.cpio" "$out/rtt.sh=rtt.sh" > /dev/null
cat "$root/target/user/initramfs.cpio" "$out/files.cpio" > "$out/initrd.cpio"
for r in $(seq 1 "$rounds"); do
  "$boot" run --kernel "$kernel" --initrd "$out/initrd.cpio" --smp "$smp" --timeout 900 --args 'sh="sh /rtt.sh" poweroff' > "$out/c.$r" 2>&1 \
    || { echo "compare-rttests: Cadence run $r failed" >&2; tail -20 "$out/c.$r" >&2; exit 1; }
  PEER_TIMEOUT=900 "$PEER_RUN" --linux 6.1 --smp "$smp" --file "$out/rtt.sh" "sh /rtt.sh" > "$out/l.$r" 2>&1 \
    || { echo "compare-rttests: Linux run $r failed" >&2; tail -20 "$out/l.$r" >&2; exit 1; }
  for side in c l; do
    echo "=== round $r: $([ $side = c ] && echo Cadence || echo 'Linux 6.1')"
    # Only the summaries: on Cadence deadline_test's and cyclicdeadline's per-period lines
    # reach the console around the pipe (they are trace_marker writes on Linux).
    sed -n '/^== deadline_test/,/^== end/p' "$out/$side.$r" | tr -d '\r' \
      | grep -E '^== [a-z]|^\[[0-9]+\]$|missed|nr_periods|max_time|^T:|Maximum|Average|^#[0-9]+ ->' | grep -v '^== end'
  done
done
