#!/usr/bin/env bash
# QEMU with the pageset plugin (tools/qemu-pageset/pageset.c): what each task switch costs QEMU's
# soft TLB and jump cache. Use as CADENCE_QEMU (docs/guide/profiling.md):
#
#   CADENCE_QEMU=$PWD/tools/qemu-pageset.sh target/release/cadence-boot run --kernel K --smp 1 \
#       --args 'sh="pipetest 20000 0 0" poweroff'
#   tools/qemu-pageset.py K
#
# PAGESET_SKIP CR3 writes before instrumenting (default 3000: past boot and the shell),
# PAGESET_MAX windows recorded (default 20000), PAGESET_OUT the output directory
# (default target/qemu-pageset), PAGESET_WORDS=kernel to record every upper-half data address, not
# only the statics. Builds the plugin with the host's cc on first use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${PAGESET_OUT:-$root/target/qemu-pageset}
mkdir -p "$out"
so=$out/pageset.so
src=$root/tools/qemu-pageset/pageset.c
if [ ! -f "$so" ] || [ "$src" -nt "$so" ] || [ "$root/tools/qemu-pageset/plugin-api.h" -nt "$so" ]; then
  cc -O2 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -o "$so" "$src" >&2
fi
exec "${QEMU:-qemu-system-x86_64}" "$@" -plugin "$so,skip=${PAGESET_SKIP:-3000},max=${PAGESET_MAX:-20000},out=$out${PAGESET_WORDS:+,words=$PAGESET_WORDS}"
