#!/usr/bin/env bash
# make bench-coresched-user [SMP=spec] [SECS=n] [ROUNDS=n] [LINUX=6.12]
#
# Core scheduling's cost from user space (issue 38 item 5): our tests/user/coresched-bench.c
# (threads that get their cookies through prctl(PR_SCHED_CORE); the workloads and cookie setup
# of the in-kernel `bench coresched`) on Cadence and on the Linux peer, alternating boots, with
# the same SMT topology (default -smp 4,sockets=1,cores=2,threads=2) and tasks per group (the
# topology's thread count). Each round:
#   Cadence, siblings online: modes off, on, pinned (thread 0 of each core, siblings idle);
#   Cadence, `nosmt` boot: mode nosmt (siblings offline);
#   Linux (../shared/peer/run.sh --linux LINUX): modes off, on, pinned, then
#     `echo off > /sys/devices/system/cpu/smt/control` (Linux's run-time `nosmt`: the siblings
#     go offline; run.sh passes no kernel arguments) and mode nosmt. Debian's kernels have no
#     CONFIG_SCHED_CORE: prctl answers EINVAL and the program reports mode on as error=EINVAL.
# Every boot runs each workload's modes REPS (default 2) times in turn (coresched-bench -r),
# so the host's drifting load weighs on every mode alike. Prints each round's lines, then one table per kernel normalized by its own SMT `off` run
# (medians over the rounds), and the issue's two ratios: cookies on / off for `cpu` (target
# >= 0.9), cookies on / one task per core for `pipe+cpu` (target >= 0.5; against the nosmt
# boot and against pinned). Under TCG the SMT threads share no execution units and every vCPU
# is a host thread (docs/guide/benchmarks.md, *make bench-coresched-user*).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
smp="${1:-}"; [[ -z "$smp" ]] && smp=4,sockets=1,cores=2,threads=2
secs="${2:-2}"; rounds="${3:-1}"; linux="${4:-6.12}"
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-coresched-user: SECS must be a positive number" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-coresched-user: ROUNDS must be a positive number" >&2; exit 2; }
[[ "$smp" == *threads=[2-9]* ]] || { echo "bench-coresched-user: SMP needs threads=2 or more (got '$smp')" >&2; exit 2; }
n=${smp%%,*}
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
initrd="$root/target/user/initramfs.cpio"
. "$root/tools/peer-env.sh"
peer=1
peer_find || { echo "bench-coresched-user: no Linux peer (../shared/peer/run.sh): Cadence only" >&2; peer=0; }
out="$root/target/bench-coresched-user"; rm -rf "$out"; mkdir -p "$out"
reps="${REPS:-2}"
cmd="coresched-bench -d $secs -n $n -r $reps"
lines() { grep -a -E '^coresched(-bench)?: ' "$1" || true; }
cadence() { # $1 = extra kernel options, $2 = output file
  "$boot" run --kernel "$kernel" --initrd "$initrd" --smp "$smp" --timeout "${TIMEOUT:-900}" \
    --args "$1 sh=\"$cmd\" poweroff" 2>&1 | tr -d '\r' > "$2" || true
  grep -aq '^coresched: mode=' "$2" || { echo "bench-coresched-user: no coresched lines from Cadence with '$1' (log: $2)" >&2; exit 1; }
}
echo "bench-coresched-user: -smp $smp, $n tasks per group, ${secs} s per run, $reps runs per mode and boot, $rounds round(s), Linux $linux" >&2
for r in $(seq 1 "$rounds"); do
  cadence "" "$out/cadence-smt.$r"
  cadence "nosmt" "$out/cadence-nosmt.$r"
  echo "round $r, Cadence:"; lines "$out/cadence-smt.$r"; lines "$out/cadence-nosmt.$r"
  if [ "$peer" = 1 ]; then
    "$PEER_RUN" --linux "$linux" --smp "$smp" --file "$root/target/user/coresched-bench" \
      "uname -r; cd / && PATH=/:\$PATH; $cmd; echo off > /sys/devices/system/cpu/smt/control && echo smt_control=\$(cat /sys/devices/system/cpu/smt/control) online=\$(cat /sys/devices/system/cpu/online) && $cmd -m nosmt" \
      > "$out/linux.$r" 2>&1 || { echo "bench-coresched-user: Linux run $r failed" >&2; tail -20 "$out/linux.$r" >&2; exit 1; }
    grep -aq '^coresched: mode=nosmt' "$out/linux.$r" || { echo "bench-coresched-user: no nosmt run on Linux (log: $out/linux.$r)" >&2; exit 1; }
    echo "round $r, Linux $(grep -a -m1 -E "^[0-9]+\.[0-9]+" "$out/linux.$r"):"; lines "$out/linux.$r"
  fi
done
python3 - "$out" "$rounds" "$peer" <<'PY'
import re, statistics, sys
d, rounds, peer = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def runs(paths):
    v = {}
    for p in paths:
        for m in re.finditer(r"^coresched: mode=(\S+) workload=(\S+) ops_per_s=(\S+) normalized=\S+ forced_idle_pct=(\S+)(?: error=(\S+))?", open(p, errors="replace").read(), re.M):
            mode, w, ops, fi, err = m.groups()
            e = v.setdefault((w, mode), {"ops": [], "fi": [], "err": None})
            if err:
                e["err"] = err
            else:
                e["ops"].append(float(ops))
                if fi != "n/a":
                    e["fi"].append(float(fi))
    return v
sides = [("Cadence", runs([f"{d}/cadence-smt.{r}" for r in range(1, rounds + 1)] + [f"{d}/cadence-nosmt.{r}" for r in range(1, rounds + 1)]))]
if peer:
    series = "linux"
    m = re.search(r"^(\d+\.\d+\S*)$", open(f"{d}/linux.1", errors="replace").read(), re.M)
    sides.append((f"Linux {m.group(1) if m else ''}".strip(), runs([f"{d}/linux.{r}" for r in range(1, rounds + 1)])))
names = {"cpu": "two CPU-bound groups (`cpu`)", "pipe+cpu": "pipe pair beside a CPU group (`pipe+cpu`)"}
def med(v, w, mode):
    e = v.get((w, mode))
    return statistics.median(e["ops"]) if e and e["ops"] else None
def cell(v, w, mode, base):
    e = v.get((w, mode))
    if e and e["err"] and not e["ops"]:
        return e["err"]
    x = med(v, w, mode)
    return "–" if x is None or not base else f"{x / base:.2f}"
print(f"\n| kernel | workload | off (no cookies) | on (cookies) | pinned (thread 0 of each core) | nosmt | forced idle (on) |")
print("|---|---|---:|---:|---:|---:|---:|")
for side, v in sides:
    for w in ["cpu", "pipe+cpu"]:
        base = med(v, w, "off")
        e = v.get((w, "on"))
        fi = f"{statistics.median(e['fi']):.1f}%" if e and e["fi"] else "n/a"
        print(f"| {side} | {names[w]} | {'1.00' if base else '–'} | {cell(v, w, 'on', base)} | {cell(v, w, 'pinned', base)} | {cell(v, w, 'nosmt', base)} | {fi} |")
print("\n| kernel | cpu: on / off (target >= 0.9) | pipe+cpu: on / nosmt (target >= 0.5) | pipe+cpu: on / pinned | pipe+cpu: pinned / nosmt |")
print("|---|---:|---:|---:|---:|")
def ratio(v, w, a, b, target=None):
    x, y = med(v, w, a), med(v, w, b)
    if x is None or y is None or not y:
        e = v.get((w, a))
        return f"n/a ({e['err']})" if e and e["err"] else "n/a"
    r = x / y
    return f"{r:.2f}" + ("" if target is None else (" ok" if r >= target else " **below**"))
for side, v in sides:
    print(f"| {side} | {ratio(v, 'cpu', 'on', 'off', 0.9)} | {ratio(v, 'pipe+cpu', 'on', 'nosmt', 0.5)} | {ratio(v, 'pipe+cpu', 'on', 'pinned', 0.5)} | {ratio(v, 'pipe+cpu', 'pinned', 'nosmt')} |")
print(f"\nmedians of every run ({rounds} round(s) of alternating boots, each mode several times per boot); each kernel's columns divided by its own SMT boot's off run")
PY
