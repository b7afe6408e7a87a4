#!/usr/bin/env bash
# Builds Cadence's root filesystem as a newc cpio (the bootloader's ramdisk):
#   the Debian packages of tools/rootfs/packages.txt (downloaded once into target/rootfs/debs,
#   or taken from the Linux peer's cache $PEER when it has the same file), unpacked;
#   busybox's applets as symlinks to /bin/busybox; the project's test programs (target/user) in
#   /bin; /etc/passwd and /etc/group with root.
#
#   tools/build-rootfs.sh CADENCE_BOOT OUT.cpio USER_BIN...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
boot="${1:?usage: build-rootfs.sh CADENCE_BOOT OUT.cpio USER_BIN...}"; out="${2:?}"; shift 2
debs="$root/target/rootfs/debs"; tree="$root/target/rootfs/root"; peer="${PEER:-/tmp/peer}"
mkdir -p "$debs"
command -v dpkg-deb >/dev/null || { echo "build-rootfs: dpkg-deb missing (Debian's dpkg package)" >&2; exit 1; }
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
    fi
  fi
done < "$root/tools/rootfs/packages.txt"
rm -rf "$tree"; mkdir -p "$tree"/{bin,sbin,etc,tmp,root,proc,sys,dev,usr/bin,usr/sbin}
for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$tree"; done
# Every applet as a link to busybox where the package has none, as `busybox --install -s` does.
if [ -x "$tree/bin/busybox" ]; then
  "$tree/bin/busybox" --list-full | while read -r app; do
    [ -e "$tree/$app" ] || [ -L "$tree/$app" ] || { mkdir -p "$(dirname "$tree/$app")"; ln -s /bin/busybox "$tree/$app"; }
  done
fi
for b in "$@"; do cp "$b" "$tree/bin/"; done
echo 'root:x:0:0:root:/root:/bin/sh' > "$tree/etc/passwd"
echo 'root:x:0:' > "$tree/etc/group"
# Not needed to run programs: documentation, locales, character-set converters.
rm -rf "$tree"/usr/share/{doc,man,locale,lintian,bash-completion,zsh} "$tree/usr/lib/x86_64-linux-gnu/gconv"
"$boot" initramfs -o "$out" --dir "$tree"
