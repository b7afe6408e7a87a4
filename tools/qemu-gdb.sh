#!/bin/sh
# QEMU with its gdbstub on $GDB_PORT (default 1234), for tools/guest-profile.py:
#   CADENCE_QEMU=tools/qemu-gdb.sh make run ...
exec "${QEMU:-qemu-system-x86_64}" "$@" -gdb "tcp:127.0.0.1:${GDB_PORT:-1234}"
