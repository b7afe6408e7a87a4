#!/usr/bin/env bash
# `make test-stress-ng [CLASSES='interrupt scheduler'] [SMPS='2 4,sockets=1,cores=2,threads=2']
#                      [RUNS=3] [SECS=2] [LINUX=6.12]`
#
# Debian's stress-ng (the root filesystem variant, tools/rootfs/stress-ng.txt) on Cadence and on
# the Linux peer with the same binary and options: every stressor of each class, one at a time,
# SECS seconds each, with --verify (tests/scripts/stress-ng-class.sh, the guest half). Each size
# of SMPS boots Linux once per class and Cadence RUNS times. Prints a table per class and size,
# one row per stressor: Linux's verdict, then Cadence's per run (pass, fail or skip, with
# stress-ng's exit status for a fail), then
#   test-stress-ng: CLASS smp=SPEC runs=N linux_pass=A cadence_pass_all=B regressions=C lockups=D
# Exit status non-zero when any stressor that passed on Linux did not pass in every Cadence
# run, when a Cadence run reported a soft lockup, hard lockup or hung task, or when a run never
# finished (issue 59's guard: a user program must never lock a CPU up). LINUX=none runs Cadence
# only and counts every stressor that did not pass. Logs: target/test-stress-ng/.
#
# Nightly-sized: the interrupt class is ~27 stressors and the scheduler class ~50, so the
# defaults take about 40 minutes of host time; `make test` keeps the short reproducer
# (tests/tests/storm.rs).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
classes="${CLASSES:-interrupt scheduler}"
smps="${SMPS:-2 4,sockets=1,cores=2,threads=2}"
runs="${RUNS:-3}"; secs="${SECS:-2}"; linux="${LINUX:-6.12}"
boot="$root/target/release/cadence-boot"
kernel="${KERNEL:-$root/kernel/target/x86_64-unknown-none/release/cadence-kernel}"
initrd="$root/target/user/initramfs-stress-ng.cpio"
logs="$root/target/test-stress-ng"; mkdir -p "$logs"
[ -f "$initrd" ] || { echo "test-stress-ng: $initrd missing (make rootfs-stress-ng)" >&2; exit 2; }
if [ "$linux" != none ]; then
  . "$root/tools/peer-env.sh"
  peer_find || { echo "test-stress-ng: no Linux peer (../shared/peer/run.sh); LINUX=none for Cadence alone" >&2; exit 2; }
  # The peer takes single files: the variant's tree as one tar, unpacked over its root.
  tar -C "$root/target/rootfs/stress-ng" -cf "$logs/stress-ng.tar" .
fi
failed=0
for class in $classes; do
  for smp in $smps; do
    tag="$class-smp${smp%%,*}"
    # Generous: a stressor takes SECS plus its set-up and tear-down.
    limit=$((120 + 60 * (secs + 6)))
    [ "$class" = scheduler ] && limit=$((limit * 2))
    if [ "$linux" != none ]; then
      PEER_TIMEOUT=$limit "$PEER_RUN" --linux "$linux" --smp "$smp" --file "$logs/stress-ng.tar" \
        --file "$root/tests/scripts/stress-ng-class.sh" \
        "tar -xf /stress-ng.tar -C / && sh /stress-ng-class.sh $class $secs" > "$logs/$tag.linux.log" 2>&1
    fi
    for r in $(seq 1 "$runs"); do
      start=$(date +%s)
      # The peer's memory (run.sh's -m 1024): stressors that fill /tmp or fork heavily meet
      # the same limits on both kernels.
      "$boot" run --kernel "$kernel" --initrd "$initrd" --smp "$smp" --memory 1024M --timeout "$limit" \
        --args "sh=\"stress-ng-class.sh $class $secs\" poweroff" > "$logs/$tag.cadence.$r.log" 2>&1
      echo "test-stress-ng: $tag run $r: $(( $(date +%s) - start )) s host time" >&2
    done
    python3 - "$logs" "$tag" "$class" "$smp" "$runs" "$linux" <<'PY' || failed=1
import re, sys
logs, tag, cls, smp, runs, linux = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
row = re.compile(r"stress-ng-class: (\S+) (\S+) (pass|fail|skip) rc=(\d+)")
lock = re.compile(r"watchdog: BUG: soft lockup|Watchdog detected hard LOCKUP|INFO: task .* blocked for more than")
def read(path):
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return {}, False, []
    res = {}
    for m in row.finditer(text):
        if m.group(1) == cls:
            res[m.group(2)] = m.group(3) + ("" if m.group(3) != "fail" else "(%s)" % m.group(4))
    return res, f"stress-ng-class: {cls} done" in text, [l for l in text.splitlines() if lock.search(l)]
lin, lin_done, _ = read(f"{logs}/{tag}.linux.log") if linux != "none" else ({}, True, [])
cad = [read(f"{logs}/{tag}.cadence.{r}.log") for r in range(1, runs + 1)]
names = sorted(set(lin) | {n for c in cad for n in c[0]})
print(f"== stress-ng --class {cls} (--seq style, {runs} Cadence run(s)), -smp {smp}")
print("%-16s %-10s %s" % ("stressor", "linux" if linux != "none" else "", "  ".join("cadence#%d" % (r + 1) for r in range(runs))))
regress = 0
for n in names:
    l = lin.get(n, "-")
    cs = [c[0].get(n, "missing") for c in cad]
    bad = (l == "pass" or linux == "none") and any(c != "pass" for c in cs)
    regress += bad
    print("%-16s %-10s %s%s" % (n, l if linux != "none" else "", "  ".join("%-9s" % c for c in cs), "   <- not as Linux" if bad else ""))
lockups = sum(len(c[2]) for c in cad)
unfinished = sum(1 for c in cad if not c[1]) + (0 if lin_done else 1)
for r, c in enumerate(cad, 1):
    for l in c[2]:
        print(f"cadence#{r}: {l}")
    if not c[1]:
        print(f"cadence#{r}: did not finish (see {logs}/{tag}.cadence.{r}.log)")
if not lin_done:
    print(f"linux: did not finish (see {logs}/{tag}.linux.log)")
lp = sum(1 for v in lin.values() if v == "pass")
ca = sum(1 for n in names if all(c[0].get(n) == "pass" for c in cad))
print(f"test-stress-ng: {cls} smp={smp} runs={runs} linux_pass={lp if linux != 'none' else '-'} cadence_pass_all={ca} "
      f"regressions={regress} lockups={lockups} unfinished={unfinished}")
sys.exit(1 if regress or lockups or unfinished else 0)
PY
  done
done
exit $failed
