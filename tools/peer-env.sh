# Sourced by the scripts that run the Linux peer (compare.sh, compare-group.sh, compare-pi.sh,
# compare-rtapp.sh, compare-vm.sh, bench-user.sh), after they set `root`: finds the peer's
# run.sh and exports PEER, the peer's build directory (default /tmp/peer).
#
#   peer_find || { echo "me: no Linux peer" >&2; exit 2; }
#
# sets PEER_RUN to the first that exists of: $PEER_RUN, $PEER_DIR/run.sh,
# $root/../shared/peer/run.sh, /work/shared/peer/run.sh; returns 1 if none does.
export PEER=${PEER:-/tmp/peer}
peer_find() {
  local c
  for c in "${PEER_RUN:-}" "${PEER_DIR:+$PEER_DIR/run.sh}" "$root/../shared/peer/run.sh" /work/shared/peer/run.sh; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      PEER_RUN=$c
      return 0
    fi
  done
  return 1
}
