#!/bin/sh
# fuzz-run.sh SEED CALLS PROCS FAIL [SUBSET [TRACE]]: the guest half of `make test-fuzz`
# (tools/test-fuzz.sh reads what it prints). A warm-up run of the fuzzer (what the first run
# of a program makes stays for the boot: /tmp's entries, file pages), the baseline, the run
# (with FAIL percent of the kernel's failure-injection sites failing, debug.fail_alloc, which
# the fuzzer sets), a
# wait until no user process but this shell is left, the second measurement, and a census of
# what is left (processes, mounts, /tmp) to name a leak's holder.
#
# Measurements and counts use the shell's builtins only (read, case, arithmetic): a measuring
# pipeline (grep | sed) would count its own processes' pages and page tables, which vary by
# tens of frames with the moment it reads, and a counting subshell would count itself.
# SUBSET and TRACE (slot:generation, whose calls the fuzzer prints) are `-` when not given.
seed=$1 calls=$2 procs=$3 fail=${4:-0} subset=${5:--} trace=${6:--}
[ "$subset" = - ] && subset=
[ "$trace" = - ] && trace=

mem() {
    while read -r k v u; do
        case $k in MemFree: | Slab:) echo "fuzz-mem: $k $v $u" ;; esac
    done </proc/meminfo
}
settle() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
    sleep 1
}
# left: the user processes other than this shell (a kernel task's statm is all zeros).
count_left() {
    left=0
    for d in /proc/[0-9]*; do
        [ "${d#/proc/}" = "$$" ] && continue
        read -r size rest 2>/dev/null <"$d/statm" || continue
        [ "$size" = 0 ] || left=$((left + 1))
    done
}
wait_reaped() {
    n=0
    while [ $n -lt 600 ]; do
        count_left
        [ $left = 0 ] && break
        sleep 0.1
        n=$((n + 1))
    done
    echo "fuzz-left: $left"
    [ $left = 0 ] && return
    for d in /proc/[0-9]*; do
        [ "${d#/proc/}" = "$$" ] && continue
        read -r size rest 2>/dev/null <"$d/statm" || continue
        [ "$size" = 0 ] && continue
        read -r st 2>/dev/null <"$d/stat" && echo "fuzz-left-stat: $st"
        while read -r k v; do
            case $k in State: | Threads: | SigPnd: | ShdPnd: | SigBlk: | SigIgn: | SigCgt:) echo "fuzz-left-status: $k $v" ;; esac
        done 2>/dev/null <"$d/status"
    done
}

/bin/fuzz $((seed + 1)) $((procs * 50)) "$procs" >/dev/null
wait_reaped >/dev/null
settle
echo "fuzz-mem: before"
mem
# FUZZ_FAIL: the fuzzer turns failure injection on once it runs, and off before it ends (a
# shell that cannot fork would end this script).
FUZZ_FAIL=$fail FUZZ_TRACE=$trace /bin/fuzz "$seed" "$calls" "$procs" $subset
wait_reaped >/dev/null
# What the fuzzer mounted (mount(2) with random arguments does mount, on its scratch
# directories) is named and unmounted lazily (with any tree mounted inside it), last mounted
# first, then what it could not remove of its
# scratch tree (or made outside it) is named and removed: a program's mounts and files are not
# the kernel's leak.
pass=0
while [ $pass -lt 4 ]; do
    targets=
    while read -r src dst rest; do
        case $dst in /tmp/*) targets="$dst $targets" ;; esac
    done </proc/mounts
    [ -z "$targets" ] && break
    for t in $targets; do
        echo "fuzz-umount: $t"
        umount -l "$t" 2>&1 | head -n 2 | sed 's/^/fuzz-umount: /'
    done
    pass=$((pass + 1))
done
for f in /tmp/* /tmp/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    echo "fuzz-tmp-left: $f"
    ls -laR "$f" 2>&1 | head -n 20 | sed 's/^/fuzz-tmp-left: /'
    rm -rf "$f" 2>&1 | head -n 5 | sed 's/^/fuzz-tmp-left: rm: /'
done
wait_reaped
settle
echo "fuzz-mem: after"
mem
for d in /proc/[0-9]*; do
    read -r c 2>/dev/null <"$d/comm" && echo "fuzz-proc: ${d#/proc/} $c"
done
while read -r l; do echo "fuzz-mount: $l"; done </proc/mounts
echo "fuzz-tmp:" /tmp/* /tmp/.[!.]*
