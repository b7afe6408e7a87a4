#!/usr/bin/env bash
# make bench-coresched [SMP=spec] [SECS=n]
#
# Core scheduling's cost, every row measured: boots Cadence twice with the same SMT topology
# (default -smp 4,sockets=1,cores=2,threads=2) and the same number of tasks per group (the
# topology's thread count): once with the siblings online (`bench coresched` modes off, on and
# pinned: thread 0 of each core only, siblings online and idle) and once with the `nosmt` boot
# option (siblings offline: mode nosmt). Prints both boots' lines, then one table normalized
# by the SMT boot's `off` run of each workload. Under TCG, SMT threads share no execution
# units, so this shows only the scheduling cost (docs/guide/benchmarks.md, *make bench-coresched*;
# docs/design/coresched.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
smp="${1:-}"; [[ -z "$smp" ]] && smp=4,sockets=1,cores=2,threads=2
secs="${2:-2}"
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-coresched: SECS must be a positive number" >&2; exit 2; }
[[ "$smp" == *threads=[2-9]* ]] || { echo "bench-coresched: SMP needs threads=2 or more (got '$smp')" >&2; exit 2; }
n=${smp%%,*}
out="$root/target/bench-coresched"; mkdir -p "$out"
boot() { # $1 = extra kernel options, $2 = output file
  "$root/target/release/cadence-boot" run --kernel "$root/kernel/target/x86_64-unknown-none/release/cadence-kernel" \
    --smp "$smp" --timeout "${TIMEOUT:-900}" --args "$1 run=\"bench coresched -d $secs -n $n\" poweroff" 2>&1 | tr -d '\r' > "$2" || true
  grep -a '^coresched: mode=' "$2" || { echo "bench-coresched: no coresched lines from the boot with '$1' (log: $2)" >&2; exit 1; }
}
echo "bench-coresched: -smp $smp, $n tasks per group, ${secs} s per run" >&2
boot "" "$out/smt.txt"
boot "nosmt" "$out/nosmt.txt"
awk '
  /^coresched: mode=/ {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    tp[f["workload"], f["mode"]] = f["throughput"]; fi[f["workload"], f["mode"]] = f["forced_idle_pct"]
    if (!(f["workload"] in seen)) { seen[f["workload"]] = 1; order[++nw] = f["workload"] }
  }
  END {
    printf "\n| workload | off (no cookies) | on | pinned (thread 0 of each core, siblings online) | nosmt boot | forced idle (on) |\n"
    printf "|---|---:|---:|---:|---:|---:|\n"
    for (k = 1; k <= nw; k++) {
      w = order[k]; base = tp[w, "off"]
      if (base <= 0 || tp[w, "nosmt"] == "") { print "bench-coresched: missing runs for " w > "/dev/stderr"; bad = 1; continue }
      printf "| %s | 1.00 | %.2f | %.2f | %.2f | %s%% |\n", w, tp[w, "on"] / base, tp[w, "pinned"] / base, tp[w, "nosmt"] / base, fi[w, "on"]
    }
    exit bad
  }' "$out/smt.txt" "$out/nosmt.txt"
