# Booting both kernels on a machine of tools/topology.sh, for the bench scripts (sourced:
# `. tools/topology-run.sh`; needs $root, the checkout).
#
#   topology_cadence NAME MIB ARGS OUT [INITRD]   Cadence with kernel ARGS on topology NAME in a
#                                                 MIB MiB guest; its console (no CRs) in OUT;
#                                                 returns cadence-boot's status. INITRD: default
#                                                 target/user/initramfs.cpio ("none": no initramfs)
#   topology_linux NAME OUT CMD [RUN.SH ARGS...]  CMD in the Linux 6.12 peer on topology NAME
#                                                 (1024 MiB; PEER_APPEND applies); its output in OUT
#
# TIMEOUT / PEER_TIMEOUT bound each boot (default 1500 s). x1024 boots through SeaBIOS: OVMF
# takes many minutes to bring its 1,023 APs up and down.

topology_cadence() {
  local name=$1 mib=$2 args=$3 out=$4 initrd=${5:-$root/target/user/initramfs.cpio} q=() a extra
  mapfile -t extra < <("$root/tools/topology.sh" "$name" "$mib")
  for a in "${extra[@]}"; do q+=(--qemu-arg="$a"); done
  local fw=uefi; [ "$name" = x1024 ] && fw=bios
  local rd=(--initrd "$initrd"); [ "$initrd" = none ] && rd=()
  local rc=0
  "$root/target/release/cadence-boot" run --"$fw" --kernel "$root/kernel/target/x86_64-unknown-none/release/cadence-kernel" \
    "${rd[@]}" --smp "$("$root/tools/topology.sh" --smp "$name")" --memory "${mib}M" --args "$args" \
    --timeout "${TIMEOUT:-1500}" "${q[@]}" 2>/dev/null | tr -d '\r' > "$out" || rc=$?
  return $rc
}

topology_linux() {
  local name=$1 out=$2 cmd=$3
  shift 3
  QEMU_EXTRA="$("$root/tools/topology.sh" --words "$name" 1024)" PEER_TIMEOUT=${PEER_TIMEOUT:-1500} \
    "$PEER_RUN" --linux 6.12 --smp "$("$root/tools/topology.sh" --smp "$name")" "$@" "$cmd" > "$out" 2>/dev/null || true
}
