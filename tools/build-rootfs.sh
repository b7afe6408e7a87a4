#!/usr/bin/env bash
# Builds Cadence's root filesystem as a newc cpio (the bootloader's ramdisk):
#   the Debian packages of tools/rootfs/packages.txt (downloaded once into target/rootfs/debs,
#   or taken from the Linux peer's cache $PEER when it has the same file), unpacked;
#   busybox's applets as symlinks to /bin/busybox; the project's test programs (target/user) in
#   /bin; /etc/passwd and /etc/group with root.
#
#   tools/build-rootfs.sh CADENCE_BOOT OUT.cpio USER_BIN...
#
# A variant adds heavy third-party tools without growing the archive every test boots:
#
#   tools/build-rootfs.sh --overlay LIST BASE.cpio CADENCE_BOOT OUT.cpio
#
# unpacks only the packages of LIST (tools/rootfs/NAME.txt, same format) into a second archive
# and writes OUT as BASE followed by it (the kernel reads archives back to back, as Linux's
# initramfs does; a file in both is the overlay's). `make rootfs-stress-ng` is one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
overlay=; base=
if [ "${1:-}" = --overlay ]; then overlay="${2:?--overlay needs LIST}"; base="${3:?--overlay needs BASE.cpio}"; shift 3; fi
boot="${1:?usage: build-rootfs.sh [--overlay LIST BASE.cpio] CADENCE_BOOT OUT.cpio USER_BIN...}"; out="${2:?}"; shift 2
debs="$root/target/rootfs/debs"; peer="${PEER:-/tmp/peer}"
mkdir -p "$debs"
command -v dpkg-deb >/dev/null || { echo "build-rootfs: dpkg-deb missing (Debian's dpkg package)" >&2; exit 1; }

# The .deb files of package list $1 (downloaded when missing), one path a line.
debs_of() {
  local spec name version file
  while read -r spec; do
    case "$spec" in ''|'#'*) continue;; esac
    name="${spec%%=*}"; version="${spec#*=}"
    # amd64, or all for architecture-independent packages (ncurses-base's terminfo).
    file="${name}_${version//:/%3a}_amd64.deb"
    [ -s "$debs/$file" ] || [ ! -s "$debs/${file%_amd64.deb}_all.deb" ] || file="${file%_amd64.deb}_all.deb"
    if [ ! -s "$debs/$file" ]; then
      if [ -s "$peer/$file" ]; then cp "$peer/$file" "$debs/"
      else (cd "$debs" && apt-get download -q "$name=$version" >/dev/null) \
        || { echo "build-rootfs: cannot download $name=$version (apt-get download)" >&2; exit 1; }
        [ -s "$debs/$file" ] || file="${file%_amd64.deb}_all.deb"
      fi
    fi
    echo "$debs/$file"
  done < "$1"
}

# Not needed to run programs: documentation, locales, character-set converters.
prune() {
  rm -rf "$1"/usr/share/{doc,man,locale,lintian,bash-completion,zsh} "$1/usr/lib/x86_64-linux-gnu/gconv"
}

if [ -n "$overlay" ]; then
  tree="$root/target/rootfs/$(basename "$overlay" .txt)"
  list=$(debs_of "$overlay")
  rm -rf "$tree"; mkdir -p "$tree"
  while read -r d; do dpkg-deb -x "$d" "$tree"; done <<<"$list"
  prune "$tree"
  "$boot" initramfs -o "$out.overlay" --dir "$tree"
  cat "$base" "$out.overlay" > "$out"; rm -f "$out.overlay"
  exit 0
fi

tree="$root/target/rootfs/root"
list=$(debs_of "$root/tools/rootfs/packages.txt")
rm -rf "$tree"; mkdir -p "$tree"/{bin,sbin,etc,tmp,root,proc,sys,dev,usr/bin,usr/sbin}
while read -r d; do dpkg-deb -x "$d" "$tree"; done <<<"$list"
# Every applet as a link to busybox where the package has none, as `busybox --install -s` does.
if [ -x "$tree/bin/busybox" ]; then
  "$tree/bin/busybox" --list-full | while read -r app; do
    [ -e "$tree/$app" ] || [ -L "$tree/$app" ] || { mkdir -p "$(dirname "$tree/$app")"; ln -s /bin/busybox "$tree/$app"; }
  done
fi
for b in "$@"; do cp "$b" "$tree/bin/"; done
echo 'root:x:0:0:root:/root:/bin/sh' > "$tree/etc/passwd"
echo 'root:x:0:' > "$tree/etc/group"
prune "$tree"
"$boot" initramfs -o "$out" --dir "$tree"
