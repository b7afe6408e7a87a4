#!/usr/bin/env bash
# make test-chaos [SEED=n] [OPS=n] [SMP=spec] [TRACE_ENTRIES=n] [FAIL=percent]
#
# Boots Cadence and runs the chaos stress (kernel/src/chaos.rs): random scheduler operations
# from a seeded RNG on every CPU, then leak and invariant checks. Prints the kernel's output
# and fails unless the final line,
#   chaos: seed=<n> ops=<n> smp=<n> violations=<n> leaks=<n> lost_wakeups=<n> errors_unexpected=<n>
# shows every count at 0. A failure replays with the printed seed: make test-chaos SEED=<n>.
# FAIL=P turns on failure injection (debug.fail_alloc) for P% of the kernel's object
# allocations while the workers run (chaos -f P).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seed="${1:-}"; ops="${2:-100000}"; smp="${3:-}"; [[ -z "$smp" ]] && smp=4,sockets=1,cores=2,threads=2; entries="${4:-200000}"; fail="${5:-0}"
[[ -z "$seed" ]] && seed=$(( (RANDOM << 15 | RANDOM) ))
for v in "$seed" "$ops" "$entries" "$fail"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "test-chaos: SEED, OPS, TRACE_ENTRIES and FAIL must be numbers" >&2; exit 2; }
done
(( fail <= 100 )) || { echo "test-chaos: FAIL is a percentage (0..100)" >&2; exit 2; }
log="$root/target/test-chaos.log"
mkdir -p "$root/target"
"$root/target/release/cadence-boot" run --kernel "$root/kernel/target/x86_64-unknown-none/release/cadence-kernel" \
  --smp "$smp" --timeout "${TIMEOUT:-3600}" \
  --args "run=\"chaos -s $seed -n $ops -b $entries -f $fail\" poweroff" 2>&1 | tr -d '\r' | tee "$log" | grep -a '^chaos: '
final="$(grep -a -E '^chaos: seed=[0-9]+ ops=' "$log" | tail -n 1)"
if [[ -z "$final" ]]; then
  echo "test-chaos: no final line (log: $log)" >&2
  exit 1
fi
if [[ "$final" =~ violations=0\ leaks=0\ lost_wakeups=0\ errors_unexpected=0$ ]]; then
  exit 0
fi
echo "test-chaos: FAILED (replay: make test-chaos SEED=$seed OPS=$ops SMP=$smp FAIL=$fail; log: $log)" >&2
exit 1
