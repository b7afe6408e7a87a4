#!/usr/bin/env bash
# make test-repeat TEST=<substring> N=<n> [SMP=<spec>] [DISK=<img>]
#
# DISK (CADENCE_TEST_DISK for the runner): a raw image attached read-write as the virtio disk
# /dev/vda in every boot, created as a 256 MiB sparse file if missing (the blk tests skip
# without one).
# Builds the in-kernel test kernel once, then boots it N times with only the tests whose
# name contains <substring> (kernel option `test=`), each boot with its own timeout.
# Prints one line per run and finally, exactly:
#   repeat: <substring> <passed>/<n> passed smp=<spec>
# A run passes when the runner's combined last line is `kernel: <n≥1> passed, 0 failed`; a run
# with failures names them (the runner boots again past each failing test, so one run may
# report several).
# Logs of failed runs are kept in target/test-repeat/. Exits non-zero unless all passed.
# A substring that matches no test is an error (not "0 passed").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test_name="${1:-}"
n="${2:-}"
smp="${3:-}"
if [[ -z "$test_name" || ! "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: make test-repeat TEST=<substring> N=<n> [SMP=<spec>] [DISK=<img>]" >&2
  exit 2
fi
label="${smp:-4,sockets=1,cores=2,threads=2}"
logdir="$root/target/test-repeat"
mkdir -p "$logdir"
build_log="$logdir/build.log"
if ! (cd "$root/kernel" && cargo test --no-run) >"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "test-repeat: building the test kernel failed" >&2
  exit 1
fi
exe="$(sed -n 's/.*Executable .*(\(.*\))$/\1/p' "$build_log" | tail -n 1)"
if [[ -z "$exe" ]]; then
  echo "test-repeat: could not find the test kernel in cargo's output ($build_log)" >&2
  exit 1
fi
[[ "$exe" = /* ]] || exe="$root/kernel/$exe"

passed=0
for ((i = 1; i <= n; i++)); do
  log="$logdir/run-$i.log"
  start=$(date +%s)
  CADENCE_TEST_ARGS="test=$test_name ${CADENCE_TEST_ARGS:-}" CADENCE_TEST_SMP="$smp" \
    CADENCE_TEST_TIMEOUT="${CADENCE_TEST_TIMEOUT:-600}" \
    "$root/boot/runner.sh" "$exe" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  summary="$(grep -a -E '^kernel: [0-9]+ passed' "$log" | tail -n 1)"
  # The kernel rejects a filter that matches no test (`running 0 kernel tests`, then
  # `kernel: error: test=... matches no kernel test`), also one from CADENCE_TEST_ARGS.
  if grep -a -q '^running 0 kernel tests' "$log"; then
    echo "test-repeat: no kernel test name contains '$test_name'" >&2
    exit 2
  fi
  if err="$(grep -a -m 1 '^kernel: error: ' "$log")"; then
    echo "test-repeat: ${err#kernel: }" >&2
    exit 2
  fi
  if [[ $rc -eq 0 && "$summary" =~ ^kernel:\ [1-9][0-9]*\ passed,\ 0\ failed ]]; then
    passed=$((passed + 1))
    echo "run $i/$n: ok (${secs} s) $summary"
    rm -f "$log"
  else
    # The runner lists every failed test as `failed: <name>` (it reboots past each one).
    failed="$(grep -a -E '^failed: ' "$log" | sed 's/^failed: //' | tr '\n' ' ')"
    why="$(grep -a -E 'FAILED|panicked|timeout|error' "$log" | head -n 3 | tr '\n' ' ')"
    echo "run $i/$n: FAILED (${secs} s, exit $rc) ${summary:-no summary} ${failed:+failed: ${failed}}${why} [log: $log]"
  fi
done
echo "repeat: $test_name $passed/$n passed smp=$label"
[[ $passed -eq $n ]]
