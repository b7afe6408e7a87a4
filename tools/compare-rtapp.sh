#!/usr/bin/env bash
# Runs one rt-app JSON workload on Cadence and on the Linux peer and prints the per-thread
# summary lines of both, then a side-by-side table.
#   tools/compare-rtapp.sh FILE [SECONDS]        (make compare-rtapp FILE=x.json [DURATION=2])
# Cadence (no disk unless DISK=img is given): `make run WORKLOAD=FILE ARGS='run="rtapp <file> -d SECONDS -q" poweroff'` (summaries
# printed by the kernel). Linux: the file rewritten for rt-app 1.0 by `rtapp-host peer-json`
# (workgen's unique keys, duration SECONDS, logs in /), run with the peer's run.sh; the same
# summary is computed on the host from rt-app's own log files (`rtapp-host summary`).
# Raw outputs stay in target/compare-rtapp/<file>/. PEER (default /tmp/peer) and PEER_DIR
# (default ../shared/peer or /work/shared/peer) locate the peer; SMP is passed to both sides.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:?usage: compare-rtapp.sh FILE [SECONDS]}
secs=${2:-2}
[ -f "$file" ] || { echo "compare-rtapp: no file $file" >&2; exit 2; }
abs=$(cd "$(dirname "$file")" && pwd)/$(basename "$file")
name=$(basename "$file")
. "$root/tools/peer-env.sh"
peer_find || { echo "compare-rtapp: no Linux peer (set PEER_DIR)" >&2; exit 2; }
smp=${SMP:-4,sockets=1,cores=2,threads=2}

(cd "$root" && cargo build --release -q -p cadence-rtapp --bin rtapp-host)
host=$root/target/release/rtapp-host
"$host" check "$abs" >/dev/null || { "$host" check "$abs"; exit 1; }

out=$root/target/compare-rtapp/$name
mkdir -p "$out"

echo "compare-rtapp: $name for $secs s on Cadence (SMP=$smp)..." >&2
make -s -C "$root" run DISK="${DISK:-none}" SMP="$smp" WORKLOAD="$abs" TIMEOUT=$((secs * 20 + 120)) \
  ARGS="run=\"rtapp $name -d $secs -q\" poweroff" > "$out/cadence.out" 2>&1 || true
grep '^rtapp: thread=' "$out/cadence.out" > "$out/cadence.sum" || true

echo "compare-rtapp: $name for $secs s on Linux (rt-app 1.0)..." >&2
"$host" peer-json "$abs" -d "$secs" --logdir / --basename rtapp > "$out/peer.json"
cp "$out/peer.json" "$out/rtapp-peer.json"
PEER_TIMEOUT=$((secs * 20 + 300)) "$PEER_RUN" --smp "$smp" \
  --file "$out/rtapp-peer.json" \
  'rt-app /rtapp-peer.json > /rt-app.out 2>&1; echo "rt-app rc=$?"; grep -E "critical|error" /rt-app.out; for f in /rtapp-*.log; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done' \
  > "$out/peer.out" 2>&1 || true
"$host" summary --basename rtapp "$out/peer.out" > "$out/peer.sum" || true

echo "== cadence ($name, $secs s)"
if [ -s "$out/cadence.sum" ]; then cat "$out/cadence.sum"; else echo "(no summary; see $out/cadence.out)"; grep -E 'rtapp|EXCEPTION|panic' "$out/cadence.out" | head -5; fi
echo "== linux ($name, $secs s, rt-app 1.0 on Linux 6.1)"
if [ -s "$out/peer.sum" ]; then cat "$out/peer.sum"; else echo "(no summary; see $out/peer.out)"; grep -E 'rt-app|critical|error' "$out/peer.out" | head -5; fi
echo "== side by side (cadence | linux)"
awk '
  function kv(line, a,   n, i, f, p) { n = split(line, f, " "); for (i = 2; i <= n; i++) { split(f[i], p, "="); a[p[1]] = p[2] } }
  FNR == 1 { side++ }
  /^rtapp: thread=/ { delete a; kv($0, a); t = a["thread"]; if (!(t in seen)) { seen[t] = 1; order[++n] = t }
    v[side, t] = sprintf("%6s %6s %8s %8s %9s", a["runs"], a["missed"], a["wu_lat_avg_us"], a["wu_lat_max_us"], a["slack_min_us"]) }
  END {
    printf "%-24s %6s %6s %8s %8s %9s | %6s %6s %8s %8s %9s\n", "thread", "runs", "missed", "wu_avg", "wu_max", "slack_min", "runs", "missed", "wu_avg", "wu_max", "slack_min"
    for (i = 1; i <= n; i++) { t = order[i]
      c = ((1, t) in v) ? v[1, t] : sprintf("%41s", "-"); l = ((2, t) in v) ? v[2, t] : sprintf("%41s", "-")
      printf "%-24s %s | %s\n", t, c, l }
  }' "$out/cadence.sum" "$out/peer.sum"
echo "(raw outputs: $out)"
