#!/usr/bin/env bash
# Records Cadence's view of one of tools/topology.sh's machines, as tools/topology-linux.sh
# records Linux 6.12's: boots the kernel with that topology's QEMU flags and `sched_verbose`,
# runs the same tools/topology/probe.sh, and splits its output into the same files:
#
#   tools/topology-cadence.sh NAME OUTDIR
#
# The kernel logs its domains and groups on the console at boot with sched_verbose, as Linux
# logs them in dmesg: sched-domains-dmesg.txt comes from the console (Cadence has no dmesg).
# Needs `make kernel boot-tool initramfs`. MIB (default 1024, as the peer) sizes the guest;
# TIMEOUT (default 900 s) bounds the boot. Prints the host wall time. x1024 boots through the
# BIOS path (SeaBIOS): OVMF had not reached the kernel after 6 minutes at 1,024 vCPUs, SeaBIOS
# hands over in about a minute; FIRMWARE=uefi|bios overrides.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 NAME OUTDIR   (NAME: $("$root/tools/topology.sh" --list | tr '\n' ' '))" >&2; exit 2; }
name=$1; out=$2; mib=${MIB:-1024}
boot=$root/target/release/cadence-boot
kernel=$root/kernel/target/x86_64-unknown-none/release/cadence-kernel
initrd=$root/target/user/initramfs.cpio
for f in "$boot" "$kernel" "$initrd"; do
  [ -e "$f" ] || { echo "topology-cadence: $f missing: make kernel boot-tool initramfs" >&2; exit 2; }
done
mapfile -t extra < <("$root/tools/topology.sh" "$name" "$mib")
smp=$("$root/tools/topology.sh" --smp "$name")
qargs=(); for a in "${extra[@]}"; do qargs+=(--qemu-arg="$a"); done

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$boot" initramfs -o "$work/files.cpio" "$root/tools/topology/probe.sh=probe.sh" >/dev/null
cat "$initrd" "$work/files.cpio" > "$work/initrd.cpio"
start=$(date +%s.%N)
set +e
fw=${FIRMWARE:-$([ "$name" = x1024 ] && echo bios || echo uefi)}
"$boot" run --"$fw" --kernel "$kernel" --initrd "$work/initrd.cpio" --smp "$smp" --memory "${mib}M" \
  --args 'sched_verbose sh="sh /probe.sh" poweroff' --timeout "${TIMEOUT:-900}" "${qargs[@]}" \
  2>/dev/null | tr -d '\r' > "$work/raw"
rc=$?
set -e
wall=$(echo "$(date +%s.%N) - $start" | bc)
if ! grep -q '^@@@ end$' "$work/raw"; then
  echo "topology-cadence: $name: the probe did not finish (rc=$rc, ${wall%.*} s); the console:" >&2
  tail -n 40 "$work/raw" >&2; exit 1
fi
mkdir -p "$out"
# The probe's sections (after the shell started), and the boot log's domains.
awk -v dir="$work/split" 'BEGIN { system("mkdir -p " dir) }
  /^@@@ / { f = dir "/" $2; next }
  /^cadence: poweroff/ { f = "" }
  f != "" { print > f }' "$work/raw"
rm -f "$work/split/end" "$work/split/"*.base64
grep -E '^CPU[0-9]+ attaching|^ +domain-[0-9]+:|^ +groups:' "$work/raw" > "$work/split/sched-domains-dmesg.txt" || true
cp "$work/split/"* "$out/"
{
  echo "topology: $name (tools/topology.sh $name $mib)"
  echo "recorded by: tools/topology-cadence.sh $name OUTDIR at $(git -C "$root" rev-parse --short HEAD)"
  echo "qemu extra: ${extra[*]}"
  echo "qemu: $(qemu-system-x86_64 --version | head -n 1)"
  printf 'host wall time: %.0f s (boot, probe and poweroff; the host has %s CPUs)\n' "$wall" "$(nproc)"
} > "$out/command.txt"
printf 'topology-cadence: %s: %s files in %s, %.0f s\n' "$name" "$(ls "$out" | wc -l)" "$out" "$wall"
