#!/usr/bin/env bash
# The "wasted cores" scenarios (issue 61; Lozi et al., EuroSys 2016) on Cadence and Linux 6.12,
# in one sitting, as a Markdown table:
#
#   tools/bench-balance.sh [MACHINE] [SCENARIOS] [ROUNDS]      (make bench-balance)
#
# MACHINE (default 8node: 64 vCPUs, 8 nodes, tools/topology.sh). SCENARIOS (default
# "group pinned wakeup mixed hotplug", tests/scripts/wasted-cores.sh): each boots both kernels ROUNDS
# times (default 1), runs the scenario with the scheduler's events traced, and checks the trace
# with `cadence-boot trace check wc` (the same checker for both kernels): the wasted fraction in
# ‰ (`wasted_permille`: CPU time idle while a task allowed there waited, in intervals longer
# than 4 ms, over CPUs × the trace's window), the longest
# violation (over 4 ms: issue 61's bound) and their count, and the load's completion time
# (wcload's elapsed_ms). Medians over the rounds. `hotplug` takes CPUs offline and back
# (one in each of two nodes) before its load, outside the trace.
#
# Host wall time per boot is printed beside the guest's figures (64 vCPUs on 2 host cores).
# Never run this beside another QEMU. Raw consoles stay in target/bench-balance/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
machine=${1:-8node}
scenarios=${2:-group pinned wakeup mixed hotplug}
rounds=${3:-1}
boot=$root/target/release/cadence-boot
. "$root/tools/peer-env.sh"
have_peer=1; peer_find || have_peer=0
. "$root/tools/topology-run.sh"
out=$root/target/bench-balance
mkdir -p "$out"
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | xargs printf '%.0f'; }
ncpus=$("$root/tools/topology.sh" --smp "$machine" | cut -d, -f1)

# Per machine: JOBS (one per CPU), the two-node CPU list two hops apart, the loaded node.
case $machine in
  8node) jobs=64; two_nodes=0-7,32-39; one_node=0-7; cycled=9,41 ;;   # nodes 0 and 4: distance 28
  2node) jobs=8; two_nodes=0-7; one_node=0-3; cycled=5 ;;
  *) jobs=$ncpus; two_nodes=0-$((ncpus - 1)); one_node=0-$((ncpus / 2 - 1)); cycled=$((ncpus - 1)) ;;
esac
args_of() {
  case $1 in
    group|mixed) echo "$1 $jobs" ;;
    pinned) echo "pinned $((jobs / 4)) $two_nodes" ;;
    wakeup) echo "wakeup $jobs $one_node $((jobs / 2))" ;;
    hotplug) echo "hotplug $jobs $cycled" ;;
  esac
}

# check FILE: the checker's summary of the trace in console FILE ("-" if none).
check() {
  local f=$1 t=$1.trace
  sed -n '/^wc-trace-begin/,/^wc-trace-end/p' "$f" | sed '1d;$d' > "$t"
  [ -s "$t" ] || { echo "-"; return; }
  "$boot" trace check wc "$t" --cpus "$ncpus" 2>/dev/null | tail -n 1 || true
}
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<< "$2" | head -n1; }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }

echo "## Wasted cores at $machine ($ncpus vCPUs; Cadence $(git -C "$root" rev-parse --short HEAD), Linux 6.12, $(qemu-system-x86_64 --version | head -n1), $rounds round(s))"
echo
echo "| scenario | kernel | load completion ms | wasted ‰ | longest violation µs | violations > 4 ms | host wall s |"
echo "|---|---|---|---|---|---|---|"
for s in $scenarios; do
  a=$(args_of "$s")
  for k in Cadence Linux; do
    [ $k = Linux ] && [ $have_peer = 0 ] && continue
    el=(); wf=(); lo=(); nv=(); hw=()
    for r in $(seq "$rounds"); do
      f=$out/$s-$k-$r.out
      t=$(now)
      if [ $k = Cadence ]; then
        topology_cadence "$machine" 1024 "sh=\"sh /bin/wasted-cores.sh $a\" poweroff" "$f" || true
      else
        topology_linux "$machine" "$f" "sh /wasted-cores.sh $a" \
          --file "$root/tests/scripts/wasted-cores.sh" --file "$root/target/user/wcload"
      fi
      hw+=("$(since "$t")")
      sum=$(check "$f")
      el+=("$(sed -n 's/^wcload: \(build\|wake\) .*elapsed_ms=\([0-9]*\).*/\2/p' "$f" | head -n1)")
      wf+=("$(field wasted_permille "$sum")"); lo+=("$(field longest_us "$sum")"); nv+=("$(field violations "$sum")")
    done
    echo "| $s | $k | $(echo "${el[*]}" | median) | $(echo "${wf[*]}" | median) | $(echo "${lo[*]}" | median) | $(echo "${nv[*]}" | median) | $(echo "${hw[*]}" | median) |"
  done
done
