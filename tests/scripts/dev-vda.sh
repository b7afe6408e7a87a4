#!/bin/sh
# /dev/vda as a block device file, on a blank 64 MiB disk: its type and numbers, BLKGETSIZE64,
# `dd` writes and reads through it (a read across the end is shortened, a write at or across
# it is ENOSPC), sync, O_DIRECT and conv=fsync. Every line starts with `vda: `; run on
# Cadence and on the Linux peer (`run.sh --disk IMG --file tests/scripts/dev-vda.sh
# 'sh /dev-vda.sh'`), the outputs are equal (tests/tests/user.rs holds Linux 6.1's).
stat -c 'vda: %F %A %t:%T size=%s io=%o' /dev/vda
echo "vda: size $(blockdev --getsize64 /dev/vda)"
echo "vda: zeros $(dd if=/dev/zero of=/dev/vda bs=1M count=8 2>&1 | grep 'records out')"
printf 'hello vda' | dd of=/dev/vda bs=512 seek=1 conv=notrunc 2>/dev/null
dd if=/dev/vda bs=4k count=2 2>/dev/null | od -c | sed 's/^/vda: /'
echo "vda: read across the end $(dd if=/dev/vda bs=1M skip=63 count=2 2>/dev/null | wc -c)"
echo "vda: write at the end $(dd if=/dev/zero of=/dev/vda bs=1M seek=64 count=1 2>&1 | head -1)"
echo "vda: write across the end $(dd if=/dev/zero of=/dev/vda bs=1M seek=63 count=2 2>&1 | head -1)"
sync
echo "vda: sync $?"
echo "vda: O_DIRECT $(dd if=/dev/vda of=/dev/null bs=512 skip=1 count=1 iflag=direct 2>&1 | grep 'records out')"
echo "vda: conv=fsync $(printf 'synced' | dd of=/dev/vda bs=512 seek=2 conv=fsync,notrunc 2>&1 | grep 'records out')"
