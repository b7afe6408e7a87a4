#!/bin/sh
# QEMU with a virtual clock driven by the instruction count (`-icount shift=0`: one
# nanosecond per guest instruction; single-threaded TCG), so that a run is deterministic and
# a benchmark's time measures the instructions the guest executed, not how busy the host was
# or how TCG laid out its translated code. For comparing two builds of the kernel on the same
# workload (a change's cost per switch, say):
#   CADENCE_QEMU=tools/qemu-icount.sh target/release/cadence-boot run --kernel K \
#       --args 'run="bench pipe -g -l 20000" poweroff' --smp 1
# Instruction counts are not times: memory accesses, exits and helpers cost more under TCG
# than plain instructions, so quote wall-clock figures for results and use this to attribute.
exec "${QEMU:-qemu-system-x86_64}" "$@" -icount shift=0
