#!/usr/bin/env bash
# Big machines on both kernels (issue 60), in one sitting, as Markdown tables:
#
#   tools/bench-topology.sh [PARTS] [BOOTS] [ROUNDS]      (make bench-topology)
#
# PARTS (default "boot domains idle messaging"), any of:
#   boot       Cadence boots and powers off at seed003 (-smp 224, 2 nodes) and x255 BOOTS times
#              each (default 10), at x1024 (1,024 vCPUs, x2APIC, 16 nodes) max(1, BOOTS*3/10)
#              times: the boot report must list every CPU (package lines) and `poweroff` must end
#              the run; guest boot time and host wall time per run.
#   domains    the five topologies of tools/topology.sh (flat smt4 2node 8node mesh) recorded on
#              Cadence and on Linux 6.12 (tools/topology-{cadence,linux}.sh, same QEMU flags) and
#              compared view by view (tools/topology-compare.py). LINUX=fixtures compares with the
#              recorded tests/fixtures/topology/linux-6.12 instead of booting the peer.
#   idle       x255 with one CPU-bound task: timer interrupts per second of each idle CPU
#              (/proc/interrupts LOC, two reads SECS apart, default 5), both kernels.
#   messaging  hackbench -p -g G -l LOOPS (rt-tests; G = 1 4 16 64) at MACHINES (default
#              "8node seed003"), both kernels, ROUNDS each (default 3), medians; the ratio
#              Cadence / Linux.
# Linux runs boot the peer (../shared/peer/run.sh) with PEER_APPEND (e.g. mitigations=off).
# Host wall time is printed beside every guest figure: the host has 2 cores, and a 1,024-vCPU
# machine takes minutes of it. Never run this beside another QEMU (times would be meaningless).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
parts=${1:-boot domains idle messaging}; boots=${2:-10}; rounds=${3:-3}
secs=${SECS:-5}; loops=${LOOPS:-200}
boot=$root/target/release/cadence-boot
kernel=$root/kernel/target/x86_64-unknown-none/release/cadence-kernel
initrd=$root/target/user/initramfs.cpio
. "$root/tools/peer-env.sh"
have_peer=1; peer_find || have_peer=0
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | xargs printf '%.0f'; }

. "$root/tools/topology-run.sh"
# cadence NAME MIB ARGS: boots Cadence on topology NAME with kernel ARGS; the console in $work/out.
cadence() { topology_cadence "$1" "$2" "$3" "$work/out"; }
# linux NAME CMD: runs CMD in the Linux 6.12 peer on topology NAME; its output in $work/out.
linux() { topology_linux "$1" "$work/out" "$2"; }

cpus_of() { "$root/tools/topology.sh" --smp "$1" | cut -d, -f1; }

if [[ " $parts " == *" boot "* ]]; then
  echo "## Boots (Cadence $(git -C "$root" rev-parse --short HEAD), $(qemu-system-x86_64 --version | head -n1))"
  echo
  echo "| machine | vCPUs | runs | report correct and poweroff clean | guest boot ms (median, max) | host wall s (median, max) |"
  echo "|---|---|---|---|---|---|"
  for spec in "seed003:$boots:1024" "x255:$boots:1024" "x1024:$(( boots * 3 / 10 > 0 ? boots * 3 / 10 : 1 )):2048"; do
    IFS=: read -r name n mib <<<"$spec"
    want=$(cpus_of "$name"); ok=0; ms=(); wall=()
    for _ in $(seq "$n"); do
      t=$(now); cadence "$name" "$mib" poweroff || true; w=$(since "$t")
      got=$(sed -n 's/^cadence: smp: \([0-9]*\) cpus online.*/\1/p' "$work/out")
      listed=$(sed -n 's/^cadence: package [0-9]* online: cpus \([^ ]*\) .*/\1/p' "$work/out" | tr ',' '\n' |
        awk -F- '{ n += ($2 == "" ? 1 : $2 - $1 + 1) } END { print n + 0 }')
      [ "$listed" = 0 ] && listed=$(grep -c '^cadence: cpu [0-9]* online' "$work/out" || true)
      if [ "$got" = "$want" ] && [ "$listed" = "$want" ] && grep -q '^cadence: poweroff' "$work/out" &&
         ! grep -q -E 'EXCEPTION|panic|soft lockup|hard LOCKUP' "$work/out"; then ok=$((ok + 1)); fi
      ms+=("$(sed -n 's/^cadence: boot ok in \([0-9]*\) ms/\1/p' "$work/out")"); wall+=("$w")
    done
    med() { printf '%s\n' "$@" | grep . | sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%s, %s", a[int((NR + 1) / 2)], a[NR]; else printf "-" }'; }
    echo "| $name | $want | $n | $ok/$n | $(med "${ms[@]}") | $(med "${wall[@]}") |"
  done
  echo
fi

if [[ " $parts " == *" domains "* ]]; then
  echo "## Domains, groups and NUMA files: Cadence against Linux 6.12 (same QEMU flags)"
  echo
  echo "| topology | CPUs | domains | flags | groups | nodes | lscpu | numactl | touch | Cadence host s | Linux host s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for name in flat smt4 2node 8node mesh; do
    t=$(now); "$root/tools/topology-cadence.sh" "$name" "$work/cad-$name" >/dev/null; wc=$(since "$t")
    if [ "${LINUX:-}" = fixtures ] || [ $have_peer = 0 ]; then lin=$root/tests/fixtures/topology/linux-6.12/$name; wl=recorded
    else t=$(now); "$root/tools/topology-linux.sh" "$name" "$work/lin-$name" >/dev/null; lin=$work/lin-$name; wl="$(since "$t") s"; fi
    row=$(python3 "$root/tools/topology-compare.py" "$lin" "$work/cad-$name" --name "$name" 2>"$work/diff-$name" || true)
    echo "$row $wc s | $wl |"
  done
  cat "$work"/diff-* >&2 || true
  echo
fi

# idle_rate OUT: LOC timer interrupts per second of each CPU between the two reads, then
# "median | CPUs at 2/s or more | highest" (the busy CPU and a timekeeping CPU tick).
idle_rate() {
  awk -v secs="$secs" '
    /^@@@ read/ { r++; next }
    /^ *LOC:/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) v[r, i - 1] = $i; n = i - 2 }
    END { for (c = 1; c <= n; c++) printf "%.2f\n", (v[2, c] - v[1, c]) / secs }' "$1" | sort -n |
    awk '{ a[NR] = $1; if ($1 >= 2) hi++ } END { if (NR) printf "%.1f | %d of %d | %.1f", a[int((NR + 1) / 2)], hi, NR, a[NR]; else printf "- | - | -" }'
}

if [[ " $parts " == *" idle "* ]]; then
  echo "## Idle CPUs' timer interrupts at x255 with one CPU-bound task (per second, over ${secs} s)"
  echo
  echo "| kernel | median CPU | CPUs at 2/s or more | highest | host wall s |"
  echo "|---|---|---|---|---|"
  probe="sh -c 'while :; do :; done' & sleep 2; echo '@@@ read'; cat /proc/interrupts; sleep $secs; echo '@@@ read'; cat /proc/interrupts; kill %1"
  t=$(now); cadence x255 1024 "sh=\"$probe\" poweroff"; w=$(since "$t")
  echo "| Cadence | $(idle_rate "$work/out") | $w |"
  if [ $have_peer = 1 ]; then
    t=$(now); linux x255 "$probe"; w=$(since "$t")
    echo "| Linux 6.12 | $(idle_rate "$work/out") | $w |"
  fi
  echo
fi

if [[ " $parts " == *" messaging "* ]]; then
  echo "## hackbench -p -l $loops (rt-tests): seconds, median of $rounds, one boot per kernel and machine"
  echo
  echo "| machine | groups | Cadence s | Linux 6.12 s | Cadence / Linux | host wall s (Cadence, Linux) |"
  echo "|---|---|---|---|---|---|"
  for name in ${MACHINES:-8node seed003}; do
    cmd=""
    for g in 1 4 16 64; do for r in $(seq "$rounds"); do cmd="$cmd echo @@@ $g; hackbench -p -g $g -l $loops 2>&1 | grep Time;"; done; done
    # A run that fails (a hackbench that could not start, the timeout) leaves its rows at `-`
    # and says so on stderr, instead of ending the script under `set -e` with no row at all.
    t=$(now); cadence "$name" 1024 "sh=\"$cmd\" poweroff" || echo "bench-topology: messaging: Cadence at $name exited $? (console: last lines below)" >&2
    wc=$(since "$t"); cp "$work/out" "$work/hb-cad"; grep -q '^cadence: poweroff' "$work/hb-cad" || tail -n 20 "$work/hb-cad" >&2
    if [ $have_peer = 1 ]; then t=$(now); linux "$name" "$cmd"; wl=$(since "$t"); cp "$work/out" "$work/hb-lin"; else : > "$work/hb-lin"; wl=-; fi
    for g in 1 4 16 64; do
      med() { awk -v g="$g" '/^@@@ / { on = ($2 == g); next } on && /^Time:/ { print $2 }' "$1" | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
      c=$(med "$work/hb-cad"); l=$(med "$work/hb-lin")
      ratio=$(if [ "$c" != - ] && [ "$l" != - ]; then echo "scale=2; $c / $l" | bc; else echo -; fi)
      echo "| $name | $g | $c | $l | $ratio | $wc, $wl |"
    done
  done
  echo
fi
