#!/usr/bin/env bash
# Morton's dirty-throttle test (the RT-VM seed, issue #14) on Cadence and on the Linux peer, in
# the same QEMU configuration, one after the other, then side by side.
#   tools/compare-vm.sh [RUNS]                  (make compare-vm [RUNS=5] [SMP=spec])
#
# Both: -m 1G, SMP (default 4,sockets=1,cores=2,threads=2), a fresh 256 MiB raw image as
# /dev/vda with QEMU's throttling.bps-write=8388608 (8 MiB/s: an emulated disk that keeps up
# with the writer never engages the throttle), vm.dirty_bytes 32 MiB,
# vm.dirty_background_bytes 16 MiB, a background SCHED_OTHER loop of `dd bs=1M count=128` to
# /dev/vda from offset 0 (5 s head start), then RUNS timed 16 MiB writes (`dd bs=1M count=16`
# after the background region, run i at region i) per case: SCHED_OTHER and SCHED_FIFO 50 (on
# Cadence under each vm.rt_dirty_throttle mode, in rounds of one run per case, each region
# written back first; on Linux the OTHER runs, then the FIFO runs, as a region rewritten while
# still dirty would not be dirtied again).
# * Cadence: `bench dirty -n RUNS` (kernel tasks writing through the page cache; every
#   vm.rt_dirty_throttle mode; each run's region written back before its clock starts).
# * Linux 6.1 (generic): busybox `dd` processes (and `chrt -f 50 dd`), timed with
#   /proc/uptime (10 ms resolution; busybox's dd prints no time); Linux has one rule (RT
#   tasks: limits +25%, like Cadence's `boost`); regions are not synced first (a global
#   `sync` would also drain the background writer's pages).
# Raw outputs stay in target/compare-vm/. PEER (default /tmp/peer) and PEER_DIR locate the peer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "compare-vm: RUNS must be a positive number" >&2; exit 2; }
smp=${SMP:-4,sockets=1,cores=2,threads=2}
. "$root/tools/peer-env.sh"
peer_find || { echo "compare-vm: no Linux peer (set PEER_DIR)" >&2; exit 2; }
out=$root/target/compare-vm
mkdir -p "$out"
throttle=throttling.bps-write=8388608
fresh() { rm -f "$1"; truncate -s 256M "$1"; }

echo "compare-vm: Cadence, bench dirty -n $runs (SMP=$smp, 1 GiB, 8 MiB/s disk)..." >&2
fresh "$out/cadence.img"
"$root/target/release/cadence-boot" run --kernel "$root/kernel/target/x86_64-unknown-none/release/cadence-kernel" \
  --smp "$smp" --memory 1G --disk "$out/cadence.img" --disk-opts "$throttle" --timeout $((runs * 300 + 300)) \
  --args "run=\"bench dirty -n $runs\" poweroff" > "$out/cadence.out" 2>&1 || true
grep -a '^dirty: mode=' "$out/cadence.out" > "$out/cadence.sum" || true

echo "compare-vm: Linux 6.1, the same test with dd processes..." >&2
fresh "$out/linux.img"
script="sysctl -w vm.dirty_bytes=33554432 >/dev/null; sysctl -w vm.dirty_background_bytes=16777216 >/dev/null
( while true; do dd if=/dev/zero of=/dev/vda bs=1M count=128 conv=notrunc 2>/dev/null; done ) &
bg=\$!
sleep 5
for p in other fifo; do
  i=0
  while [ \$i -lt $runs ]; do
    seek=\$((128 + i * 16))
    t0=\$(cut -d' ' -f1 /proc/uptime)
    if [ \$p = fifo ]; then chrt -f 50 dd if=/dev/zero of=/dev/vda bs=1M count=16 seek=\$seek conv=notrunc 2>/dev/null
    else dd if=/dev/zero of=/dev/vda bs=1M count=16 seek=\$seek conv=notrunc 2>/dev/null; fi
    t1=\$(cut -d' ' -f1 /proc/uptime)
    echo \"peer-dd: policy=\$p start=\$t0 end=\$t1\"
    i=\$((i + 1))
  done
done
kill \$bg"
DISK_OPTS=$throttle PEER_TIMEOUT=$((runs * 300 + 600)) "$PEER_RUN" --smp "$smp" \
  --disk "$out/linux.img" "$script" > "$out/linux.out" 2>&1 || true
# busybox dd prints no time: each write is timed by /proc/uptime before and after (10 ms
# resolution).
awk '
  /^peer-dd: policy=/ { split($2, p, "="); split($3, a, "="); split($4, b, "="); ms[p[2]] = ms[p[2]] " " int((b[2] - a[2]) * 1000 + 0.5) }
  END {
    for (pol in ms) {
      n = split(substr(ms[pol], 2), v, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      printf "dirty: mode=linux policy=%s p50_ms=%d max_ms=%d throttled_ms=-\n", pol, v[int(n / 2) + 1], v[n]
    }
  }' "$out/linux.out" | sort -r > "$out/linux.sum"

echo "== cadence (bench dirty -n $runs)"
if [ -s "$out/cadence.sum" ]; then grep -a '^dirty: ' "$out/cadence.out"; else echo "(no result; see $out/cadence.out)"; fi
echo "== linux 6.1 (dd processes)"
if [ -s "$out/linux.sum" ]; then cat "$out/linux.sum"; else echo "(no result; see $out/linux.out)"; fi
echo "== side by side: p50_ms of the 16 MiB write (cadence: kernel tasks; linux: dd processes)"
awk '
  FNR == 1 { side++ }
  /^dirty: mode=/ { delete a; for (i = 2; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] }
    p50[a["mode"], a["policy"]] = a["p50_ms"] }
  END {
    printf "%-8s %10s %10s %10s | %10s\n", "policy", "exempt", "boost", "off", "linux"
    for (k = 1; k <= 2; k++) { pol = (k == 1) ? "other" : "fifo"
      printf "%-8s", pol
      split("exempt boost off linux", m, " ")
      for (i = 1; i <= 4; i++) printf " %10s%s", ((m[i], pol) in p50) ? p50[m[i], pol] : "-", (i == 3) ? " |" : ""
      printf "\n" }
    printf "%-8s", "fifo/oth"
    for (i = 1; i <= 4; i++) { f = p50[m[i], "fifo"]; o = p50[m[i], "other"]
      printf " %10s%s", (o > 0 && f != "") ? sprintf("%.3f", f / o) : "-", (i == 3) ? " |" : "" }
    printf "\n"
    if (p50["linux", "fifo"] > 0 && p50["exempt", "fifo"] != "")
      printf "cadence exempt fifo / linux fifo: %.3f\n", p50["exempt", "fifo"] / p50["linux", "fifo"]
  }' "$out/cadence.sum" "$out/linux.sum"
