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
# Then the console fuzz (cadence-boot fuzz-console, boot/src/fuzz.rs): FUZZ_SECS (default 600)
# seconds of random input into the shell over COM1 in a second boot with the same -smp and a
# blank scratch disk under snapshot=on (so the fuzzed `blk` commands reach the driver), after
# which echo and ps must answer and poweroff must be clean; FUZZ_SECS=0 skips it. Its final
# line is `console-fuzz: seed=<n> seconds=<n> bursts=<n> bytes=<n> probes=<n> result=ok`.
# TRACE_ENTRIES (records per CPU ring) defaults to OPS x 5 / CPUs (at least 200,000, at most
# 4,194,304): a run records about 4.7 events per operation over all CPUs (1,000,000 operations
# at -smp 4: 4.73 million), so the checked window covers the whole run (the issue asks for at
# least 90%; the kernel prints the share). The guest gets 512 MiB plus 480 bytes per record,
# or MEMORY=: the heap is half the memory, and holds the 88-byte records in the rings, their
# sorted copy for the checkers and the checkers' own state (about 0.4 of the rings).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seed="${1:-}"; ops="${2:-100000}"; smp="${3:-}"; [[ -z "$smp" ]] && smp=4,sockets=1,cores=2,threads=2; entries="${4:-}"; fail="${5:-0}"
[[ -z "$seed" ]] && seed=$(( (RANDOM << 15 | RANDOM) ))
[[ "$ops" =~ ^[0-9]+$ ]] || { echo "test-chaos: OPS must be a number" >&2; exit 2; }
ncpus="${smp%%,*}"; [[ "$ncpus" =~ ^[0-9]+$ ]] && (( ncpus > 0 )) || ncpus=4
if [[ -z "$entries" ]]; then
  entries=$(( ops * 5 / ncpus )); (( entries < 200000 )) && entries=200000; (( entries > 4194304 )) && entries=4194304
fi
memory="${MEMORY:-$(( 512 + entries * ncpus * 480 / 1048576 ))M}"
for v in "$seed" "$ops" "$entries" "$fail"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "test-chaos: SEED, OPS, TRACE_ENTRIES and FAIL must be numbers" >&2; exit 2; }
done
(( fail <= 100 )) || { echo "test-chaos: FAIL is a percentage (0..100)" >&2; exit 2; }
log="$root/target/test-chaos.log"
mkdir -p "$root/target"
"$root/target/release/cadence-boot" run --kernel "$root/kernel/target/x86_64-unknown-none/release/cadence-kernel" \
  --smp "$smp" --memory "$memory" --timeout "${TIMEOUT:-3600}" \
  --args "run=\"chaos -s $seed -n $ops -b $entries -f $fail\" poweroff" 2>&1 | tr -d '\r' | tee "$log" | grep -a '^chaos: '
final="$(grep -a -E '^chaos: seed=[0-9]+ ops=' "$log" | tail -n 1)"
if [[ -z "$final" ]]; then
  echo "test-chaos: no final line (log: $log)" >&2
  exit 1
fi
# Both parts run whatever the first gave (a harness reports every failure); the exit status
# is non-zero if either failed.
status=0
if ! [[ "$final" =~ violations=0\ leaks=0\ lost_wakeups=0\ errors_unexpected=0$ ]]; then
  echo "test-chaos: FAILED (replay: make test-chaos SEED=$seed OPS=$ops SMP=$smp FAIL=$fail; log: $log)" >&2
  status=1
fi
fuzz_secs="${FUZZ_SECS:-600}"
[[ "$fuzz_secs" =~ ^[0-9]+$ ]] || { echo "test-chaos: FUZZ_SECS must be a number of seconds" >&2; exit 2; }
(( fuzz_secs == 0 )) && exit "$status"
"$root/target/release/cadence-boot" fuzz-console --kernel "$root/kernel/target/x86_64-unknown-none/release/cadence-kernel" \
  --smp "$smp" --seconds "$fuzz_secs" --seed "$seed" --log "$root/target/console-fuzz.log" \
  --scratch-disk "$root/target/scratch-disk.img" 2>/dev/null \
  || { echo "test-chaos: console fuzz FAILED (replay: target/release/cadence-boot fuzz-console --kernel kernel/target/x86_64-unknown-none/release/cadence-kernel --smp $smp --scratch-disk target/scratch-disk.img --seed $seed --seconds $fuzz_secs; transcript: target/console-fuzz.log)" >&2; exit 1; }
exit "$status"
