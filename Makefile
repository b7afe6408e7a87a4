# Cadence entry points. On a fresh machine with only rustup/cargo, git, make
# and gcc, `make run` and `make test` install what is missing (`setup`).
#
#   make setup                 pinned Rust toolchain, QEMU >= 9 (bookworm-backports) and OVMF (idempotent)
#   make kernel                release build of kernel/
#   make hot-layout            regenerate kernel/hot.ld (what a task switch touches, packed in few
#                              pages) from a pipetest run under tools/qemu-pageset.sh
#   make syscall-table         regenerate docs/design/syscalls.md's table from the kernel's `syscalls`
#   make initramfs             target/user/initramfs.cpio, the root filesystem: the Debian packages
#                              of tools/rootfs/packages.txt (busybox) and the C programs of tests/user
#                              (static, gcc) at /bin/NAME; `make run` boots with it
#   make rootfs-stress-ng      target/user/initramfs-stress-ng.cpio: the root filesystem and
#                              Debian's stress-ng (tools/rootfs/stress-ng.txt)
#   make run [SMP=8] [UEFI=1|0] [ARGS='poweroff ...'] [TRACE=file] [WORKLOAD='a b'] [TIMEOUT=s]
#            [FILES='a b']     host files copied into the root filesystem's / (as the peer's --file)
#            [ROOTFS=name]     a root filesystem variant: the base one plus tools/rootfs/NAME.txt's
#                              packages (stress-ng: Debian's stress-ng)
#            [VERBOSE=1]       also the bootloader's `INFO :` log (hidden by default)
#            [DISK=img|none]   virtio disk /dev/vda: DISK=img read-write (created as a 256 MiB
#                              sparse image when missing), none: no disk; default: the blank
#                              target/scratch-disk.img with snapshot=on (writes are dropped)
#            [DISK_OPTS=opts]  extra QEMU -drive options (throttling.bps-write=8388608: 8 MiB/s)
#   make test                  lint gates, host unit tests, in-kernel tests, QEMU scenario tests
#   make lint                  cargo fmt --check and clippy -D warnings (both workspaces)
#   make bench-user [ROUNDS=n] [SMP=spec]  user programs (syscall round trip, fork, pipetest) on
#                              Cadence and the Linux peer in one sitting, with ratios
#   make bench BENCH=name      boots with ARGS='run="bench NAME" poweroff' (no disk unless DISK=)
#   make test-stress           the core-scheduling stress with 1,000,000 switches
#   make test-wc-proof         the load balancer's work-conservation proof on every shape up to 8 CPUs
#   make test-repeat TEST=name N=n [SMP=spec] [DISK=img]  boots the matching in-kernel tests n
#                                   times (DISK: attach a virtio disk, for the blk tests)
#   make bench-coresched [SMP=spec] [SECS=n]  core scheduling's cost: an SMT boot and a nosmt boot
#   make bench-coresched-user [SMP=spec] [SECS=n] [ROUNDS=n] [LINUX=6.12]  the same from user space
#                                   (prctl cookies, tests/user/coresched-bench.c), Cadence and Linux
#   make bench-timer-storm [ROUNDS=n] [SMP=spec]  cyclictest idle and beside tests/user/timerstorm (1 ns
#                                   timers), same CPU and another, on Cadence and Linux 6.12 (issue 59)
#   make bench-topology [PARTS='boot domains idle messaging'] [BOOTS=10] [ROUNDS=3] [LINUX=fixtures]
#                                   big machines (seed 003's 224 vCPUs, 255, 1,024 with x2APIC), domains
#                                   and NUMA files against Linux 6.12 on five topologies, idle CPUs'
#                                   timer interrupts, hackbench; tables with host wall times (issue 60)
#   make bench-scale-cpus [MACHINES='flat 8node seed003 x255 x1024']  µs per switch and per pipe
#                                   wakeup as the CPU count grows (in-kernel bench scale and pipe)
#   make bench-balance [MACHINE=8node] [SCENARIOS='group pinned wakeup mixed hotplug'] [ROUNDS=3]
#                                   the wasted-cores scenarios on Cadence and Linux 6.12, each trace
#                                   checked by `trace check wc`: wasted fraction, longest violation,
#                                   completion times (issue 61)
#   make test-stress-ng [CLASSES='interrupt scheduler'] [SMPS='2 4,...'] [RUNS=3] [SECS=2] [LINUX=6.12|none]
#                                   Debian's stress-ng, every stressor of each class, on Cadence (RUNS
#                                   boots) and the Linux peer: a table, and failure on any stressor that
#                                   passes on Linux but not on Cadence, or any lockup report (nightly-sized)
#   make test-chaos [SEED=n] [OPS=n] [SMP=spec] [FAIL=percent] [FUZZ_SECS=n]  chaos stress (100000
#                                   ops, -smp 4 SMT; FAIL: that share of object allocations fail)
#   make compare [SITTINGS=n] [TRACED=n] [SMP=spec] [LINUX=6.1]  the same binaries on Cadence, Linux generic and
#                      PREEMPT_RT (6.12 by default): medians of 3 sittings, p50/p99/max, ratios, targets
#   make compare-inkernel [SITTINGS=n] [SMP=spec]  Cadence's in-kernel benchmark tasks beside Linux 6.1's programs
#   make compare-rtapp FILE=x.json [DURATION=s]  rt-app workload on Cadence and on the Linux peer
#   make compare-rttests [ROUNDS=n] [SMP=spec]  deadline_test, cyclicdeadline, oslat, signaltest, ptsematest,
#                                   sigwaittest on Cadence and the Linux peer, alternating boots
#   make rtapp-all [DURATION=s]  Debian's rt-app on every rt-app 1.0 example JSON (no ftrace), Cadence and the peer
#   make suite [SMP=spec] [LINUX=6.1] [SECS=n] [RTAPP_SECS=n] [OUT=dir]  the rt-tests programs and rt-app
#                   examples that give a verdict or a miss count on Cadence, Linux generic and PREEMPT_RT
#                   (6.12 by default) in one sitting: a table of pass / fail and their figures
#   make compare-bandwidth [ROUNDS=n] [SMP=spec]  cgroup v2 cpu.max "50000 100000" on 4 spinners: the
#                              group's share (cpu.stat, CPU times, loop counts) on Cadence and Linux
#   make compare-autogroup [ROUNDS=n] [SMP=spec]  seed 001 verbatim, and a hog beside a parallel load
#                              with autogroup on, off and Lennart's way, on Cadence and Linux
#   make compare-pi [ROUNDS=n] [SMP=spec]  priority inversion: a FIFO 90 thread's wait on a PI and a
#                                   plain mutex held by FIFO 10 under a FIFO 50 hog, Cadence and Linux
#   make bench-dirty [RUNS=n]  Morton's dirty-throttle test (`bench dirty`) on an 8 MiB/s disk
#   make bench-alloc [RUNS=n]  the RT page-allocator reserve test (`bench alloc`)
#   make compare-vm [RUNS=n] [SMP=spec]  the dirty-throttle test on Cadence and the Linux peer
#   make compare-group [SMP=spec]  group-scheduling overhead (nested vs root pipe) on Cadence and the Linux peer
#   make clean
#
# Host crates are built with --release everywhere so the bootloader crate's
# slow build script (nested `cargo install`s) runs only once.

SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
CHANNEL := $(shell sed -n 's/^channel *= *"\(.*\)".*/\1/p' '$(ROOT)/rust-toolchain.toml')
# A CARGO_TARGET_DIR in the environment would deadlock the bootloader crate's
# nested `cargo install` on our own build lock: always use ./target.
unexport CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR
CADENCE_BOOT := $(ROOT)/target/release/cadence-boot
KERNEL ?= $(ROOT)/kernel/target/x86_64-unknown-none/release/cadence-kernel

SMP ?=
UEFI ?=
VERBOSE ?=
ARGS ?=
TRACE ?=
WORKLOAD ?=
TIMEOUT ?=
BENCH ?=
DISK ?=
SCRATCH_DISK := $(ROOT)/target/scratch-disk.img
# 1: no default scratch disk (benchmarks: no device they did not ask for).
NO_SCRATCH ?=
# run's disk: DISK=img read-write, DISK=none none, else the scratch image under snapshot=on
# (QEMU opens it read-only and writes to a temporary overlay: it stays blank, and concurrent
# runs do not trip over QEMU's image lock).
DISK_OPT = $(if $(filter none,$(DISK)),,$(if $(DISK),--disk '$(DISK)',$(if $(filter 1,$(NO_SCRATCH)),,--scratch-disk '$(SCRATCH_DISK)')))
DISK_OPTS ?=
DISK_OPTS_OPT = $(if $(DISK_OPTS),$(if $(findstring --,$(DISK_OPT)),--disk-opts '$(DISK_OPTS)'))

# The kernel command line travels through the environment so that any quotes
# in it reach cadence-boot untouched.
export CADENCE_RUN_ARGS = $(ARGS)

.PHONY: test-wc-proof help setup kernel boot-tool initramfs rootfs-stress-ng test-stress-ng bench-timer-storm bench-topology bench-scale-cpus bench-balance syscall-table hot-layout run test lint test-stress test-repeat test-fuzz bench bench-user bench-coresched bench-coresched-user compare compare-inkernel compare-pi compare-rtapp rtapp-all compare-rttests suite compare-bandwidth compare-autogroup bench-dirty bench-alloc compare-vm compare-group clean

help:
	@sed -n '4,/^#   make clean/s/^# \{0,1\}//p' '$(ROOT)/Makefile'

setup:
	@set -e; \
	if [ -z "$(CHANNEL)" ]; then echo "setup: no channel in rust-toolchain.toml" >&2; exit 1; fi; \
	have=$$(rustup component list --installed --toolchain '$(CHANNEL)' 2>/dev/null || true); \
	if ! grep -q '^rust-src' <<<"$$have" || ! grep -q '^llvm-tools' <<<"$$have" \
	   || ! grep -q 'x86_64-unknown-none' <<<"$$have" || ! grep -q '^rustfmt' <<<"$$have" \
	   || ! grep -q '^clippy' <<<"$$have"; then \
	  echo "setup: installing Rust $(CHANNEL)"; \
	  rustup toolchain install '$(CHANNEL)' --profile minimal -c rust-src -c llvm-tools \
	    -c rustfmt -c clippy -t x86_64-unknown-none; \
	fi; \
	pkgs=; backports=; \
	qv=$$(qemu-system-x86_64 --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9]*\).*/\1/p'); \
	if [ -z "$$qv" ] || [ "$$qv" -lt 9 ]; then backports=qemu-system-x86; fi; \
	command -v gcc >/dev/null || pkgs="$$pkgs gcc"; \
	[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || pkgs="$$pkgs libc6-dev"; \
	[ -e /usr/share/ovmf/OVMF.fd ] || [ -e /usr/share/OVMF/OVMF_CODE.fd ] || pkgs="$$pkgs ovmf"; \
	sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	if [ -n "$$backports" ]; then \
	  echo "setup: installing QEMU >= 9 from bookworm-backports (x2APIC under TCG: more than 255 CPUs)"; \
	  src=/etc/apt/sources.list.d/bookworm-backports.sources; \
	  [ -e $$src ] || printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' \
	    'Suites: bookworm-backports' 'Components: main' \
	    'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | $$sudo tee $$src >/dev/null; \
	  $$sudo apt-get update -qq; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports qemu-system-x86; \
	fi; \
	if [ -n "$$pkgs" ]; then \
	  echo "setup: installing $$pkgs"; \
	  $$sudo apt-get update -qq; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs; \
	fi

kernel: setup
	cd '$(ROOT)/kernel' && cargo build --release

boot-tool: setup
	cd '$(ROOT)' && cargo build --release -p cadence-boot

# The user programs of the scenario tests and the initramfs holding them at /bin/<name>
# (cadence-boot writes the newc archive). hello, crash and pipetest are static glibc binaries
# (the static start-up path is tested); the others link glibc's shared libraries from the
# root filesystem's libc6 (and libgcc-s1, which pthread_exit unwinds through: rt-app and
# conform-thread abort without it): a static glibc program is ~750 KiB, and a BIOS boot
# loads the initramfs at ~0.7 MB/s under TCG (each static binary ~1 s; UEFI boots, the
# default with an initramfs when OVMF is installed, load it in about a second).
USER_SRCS := $(wildcard $(ROOT)/tests/user/*.c)
USER_BINS := $(patsubst $(ROOT)/tests/user/%.c,$(ROOT)/target/user/%,$(USER_SRCS)) $(ROOT)/target/user/pipetest-dyn
# Shell scripts of the experiments (seed 001, autogroup), installed in /bin beside them.
USER_SCRIPTS := $(wildcard $(ROOT)/tests/scripts/*.sh)
USER_STATIC := hello crash pipetest pipethr kaddr memload limits wcload
INITRAMFS := $(ROOT)/target/user/initramfs.cpio
$(ROOT)/target/user/%: $(ROOT)/tests/user/%.c $(ROOT)/tests/user/conform.h
	@mkdir -p '$(ROOT)/target/user'
	gcc -O2 $(if $(filter $*,$(USER_STATIC)),-static) -Wall -o '$@' '$<' $(if $(filter $*,$(USER_STATIC)),,-pthread)
# The fuzzer (static): its system-call list is generated from docs/design/syscalls.md's table
# (which a scenario test keeps equal to the kernel's dispatch table), never kept by hand.
$(ROOT)/target/user/fuzz-syscalls.h: $(ROOT)/docs/design/syscalls.md
	@mkdir -p '$(ROOT)/target/user'
	sed -n 's/^| \([0-9][0-9]*\) | `\([a-z0-9_]*\)` |.*/FUZZ_SYSCALL(\1, \2)/p' '$<' > '$@'
$(ROOT)/target/user/fuzz: $(ROOT)/tests/user/fuzz.c $(ROOT)/target/user/fuzz-syscalls.h
	gcc -O2 -static -Wall -I '$(ROOT)/target/user' -o '$@' '$<'
# pipetest also dynamic (glibc's ld.so from the root filesystem's libc6).
$(ROOT)/target/user/pipetest-dyn: $(ROOT)/tests/user/pipetest.c
	@mkdir -p '$(ROOT)/target/user'
	gcc -O2 -Wall -o '$@' '$<'
$(INITRAMFS): $(USER_BINS) $(USER_SCRIPTS) $(ROOT)/tools/rootfs/packages.txt $(ROOT)/tools/build-rootfs.sh | boot-tool
	'$(ROOT)/tools/build-rootfs.sh' '$(CADENCE_BOOT)' '$@' $(foreach b,$(USER_BINS) $(USER_SCRIPTS),'$(b)')
initramfs: boot-tool $(INITRAMFS)
# Root filesystem variants: the base archive followed by heavy third-party tools
# (tools/rootfs/NAME.txt), booted with `make run ROOTFS=NAME` and by the scenarios that need them.
ROOTFS ?=
VARIANT_INITRAMFS = $(ROOT)/target/user/initramfs-$(1).cpio
$(ROOT)/target/user/initramfs-%.cpio: $(ROOT)/tools/rootfs/%.txt $(INITRAMFS) $(ROOT)/tools/build-rootfs.sh | boot-tool
	'$(ROOT)/tools/build-rootfs.sh' --overlay '$<' '$(INITRAMFS)' '$(CADENCE_BOOT)' '$@'
rootfs-stress-ng: boot-tool $(call VARIANT_INITRAMFS,stress-ng)

# kernel/hot.ld from a profiled pipetest (tools/hot-layout.py, docs/guide/profiling.md), then
# the kernel linked with it.
hot-layout: kernel boot-tool initramfs
	rm -rf '$(ROOT)/target/qemu-pageset'
	CADENCE_QEMU='$(ROOT)/tools/qemu-pageset.sh' '$(CADENCE_BOOT)' run --kernel '$(KERNEL)' \
		--initrd '$(INITRAMFS)' --smp 1 --timeout 600 --args 'sh="pipetest 20000 0 0" poweroff' >/dev/null
	python3 '$(ROOT)/tools/hot-layout.py' '$(KERNEL)' > '$(ROOT)/target/hot.ld.new'
	mv '$(ROOT)/target/hot.ld.new' '$(ROOT)/kernel/hot.ld'
	cd '$(ROOT)/kernel' && cargo build --release
	python3 '$(ROOT)/tools/hot-layout.py' --check '$(KERNEL)'

syscall-table: kernel boot-tool
	python3 '$(ROOT)/tools/syscall-table.py' '$(CADENCE_BOOT)' '$(KERNEL)'

# FILES: a second newc archive after the root filesystem's (the kernel reads archives back to
# back, as Linux's initramfs does), so the cached image is not rebuilt for them.
FILES ?=
BASE_INITRD = $(if $(ROOTFS),$(call VARIANT_INITRAMFS,$(ROOTFS)),$(INITRAMFS))
RUN_INITRD = $(if $(FILES),$(ROOT)/target/user/run-initramfs.cpio,$(BASE_INITRD))
run: kernel boot-tool initramfs $(if $(ROOTFS),$(call VARIANT_INITRAMFS,$(ROOTFS)))
	$(if $(FILES),'$(CADENCE_BOOT)' initramfs -o '$(ROOT)/target/user/files.cpio' $(foreach f,$(FILES),'$(abspath $(f))=$(notdir $(f))') && cat '$(BASE_INITRD)' '$(ROOT)/target/user/files.cpio' > '$(RUN_INITRD)',true)
	'$(CADENCE_BOOT)' run --kernel '$(KERNEL)' --args "$$CADENCE_RUN_ARGS" --initrd '$(RUN_INITRD)' \
	  $(if $(filter 1 yes true,$(UEFI)),--uefi,$(if $(filter 0 no false,$(UEFI)),--bios)) $(if $(SMP),--smp '$(SMP)') \
	  $(if $(TRACE),--trace '$(TRACE)') $(foreach w,$(WORKLOAD),--workload '$(w)') \
	  $(if $(TIMEOUT),--timeout '$(TIMEOUT)') $(DISK_OPT) $(DISK_OPTS_OPT) $(if $(filter 1 yes true,$(VERBOSE)),--verbose)

bench: override ARGS = run="bench $(BENCH)" poweroff
bench: override NO_SCRATCH = 1
bench: run

ROUNDS ?= 3
bench-user: kernel boot-tool initramfs
	'$(ROOT)/tools/bench-user.sh' '$(ROUNDS)' '$(if $(SMP),$(SMP),4,sockets=1,cores=2,threads=2)'

compare-pi: kernel boot-tool initramfs
	'$(ROOT)/tools/compare-pi.sh' '$(ROUNDS)' '$(if $(SMP),$(SMP),4,sockets=1,cores=2,threads=2)'

SECS ?= 2
bench-coresched: kernel boot-tool
	'$(ROOT)/tools/bench-coresched.sh' '$(SMP)' '$(SECS)'
# The same workloads from user space (tests/user/coresched-bench.c), Cadence and the Linux peer.
bench-coresched-user: kernel boot-tool initramfs
	'$(ROOT)/tools/bench-coresched-user.sh' '$(SMP)' '$(SECS)' '$(ROUNDS)' '$(if $(LINUX),$(LINUX),6.12)'

SITTINGS ?= 3
TRACED ?= 1
LINUX ?= 6.12
# The same binaries and command lines on Cadence, Linux generic and PREEMPT_RT (tools/compare.sh).
compare: kernel boot-tool initramfs
	SMP='$(SMP)' SITTINGS='$(SITTINGS)' TRACED='$(TRACED)' LINUX='$(LINUX)' '$(ROOT)/tools/compare.sh'
# Cadence's in-kernel benchmark tasks beside Linux 6.1's programs (tools/compare-inkernel.sh).
compare-inkernel: kernel boot-tool
	DISK='$(if $(DISK),$(DISK),none)' SMP='$(SMP)' SITTINGS='$(SITTINGS)' TRACED='$(TRACED)' '$(ROOT)/tools/compare-inkernel.sh'

FILE ?=
DURATION ?= 2
# The rt-tests programs of issue 36 on Cadence and on the peer in one sitting.
compare-rttests: kernel boot-tool initramfs
	'$(ROOT)/tools/compare-rttests.sh' '$(ROUNDS)' '$(if $(SMP),$(SMP),4,sockets=1,cores=2,threads=2)'
compare-bandwidth: kernel boot-tool initramfs
	'$(ROOT)/tools/compare-bandwidth.sh' '$(ROUNDS)' '$(if $(SMP),$(SMP),4,sockets=1,cores=2,threads=2)'
compare-autogroup: kernel boot-tool initramfs
	'$(ROOT)/tools/compare-autogroup.sh' '$(ROUNDS)' '$(if $(SMP),$(SMP),4,sockets=1,cores=2,threads=2)'

# The rt-tests programs and rt-app examples with a verdict or a miss count, on Cadence, Linux
# generic and PREEMPT_RT in one sitting (tools/suite.sh; the rules for pass are in its header).
# SECS: the suite's own default (3) unless given (the 2 above is bench-coresched's).
SECS_SUITE = $(if $(filter command line environment,$(origin SECS)),$(SECS))
OUT ?=
suite: kernel boot-tool initramfs
	SMP='$(SMP)' LINUX='$(LINUX)' SECS='$(SECS_SUITE)' RTAPP_SECS='$(RTAPP_SECS)' OUT='$(OUT)' '$(ROOT)/tools/suite.sh'

# Debian's rt-app on every rt-app 1.0 example JSON without ftrace, on Cadence and on the peer.
rtapp-all: kernel boot-tool initramfs
	'$(ROOT)/tools/rtapp-all.sh' $(DURATION)

compare-rtapp: kernel boot-tool
	@test -n '$(FILE)' || { echo 'usage: make compare-rtapp FILE=x.json [DURATION=s]' >&2; exit 2; }
	DISK='$(if $(DISK),$(DISK),none)' '$(ROOT)/tools/compare-rtapp.sh' '$(FILE)' '$(DURATION)'

RUNS ?= 5
# The dirty test on a fresh 256 MiB image that writes 8 MiB/s (target/bench-dirty.img).
bench-dirty: kernel boot-tool
	rm -f '$(ROOT)/target/bench-dirty.img'
	'$(CADENCE_BOOT)' run --kernel '$(KERNEL)' $(if $(SMP),--smp '$(SMP)') --timeout 3600 \
	  --disk '$(ROOT)/target/bench-dirty.img' --disk-opts throttling.bps-write=8388608 \
	  --args 'run="bench dirty -v -n $(RUNS)" poweroff'

bench-alloc: kernel boot-tool
	'$(CADENCE_BOOT)' run --kernel '$(KERNEL)' $(if $(SMP),--smp '$(SMP)') --timeout 1200 \
	  --args 'run="bench alloc -n $(RUNS)" poweroff'

compare-vm: kernel boot-tool
	SMP='$(SMP)' '$(ROOT)/tools/compare-vm.sh' '$(RUNS)'

compare-group: kernel boot-tool
	$(if $(SMP),SMP='$(SMP)') KERNEL='$(KERNEL)' BOOT='$(CADENCE_BOOT)' '$(ROOT)/tools/compare-group.sh'

# The house rules as gates (part of `make test`): rustfmt (rustfmt.toml) and clippy with
# every warning an error and every unsafe block documented (`// SAFETY:`), in both workspaces;
# the framework's API docs without a warning (missing docs, broken links);
# no `unsafe` outside the framework crate (tools/check-unsafe.py); the kernel crate's layers
# (tools/check-layers.py, docs/design/layering.md); every doc reachable from README.md and no
# broken link (tools/check-doc-links.py).
CLIPPY_FLAGS = -D warnings -D clippy::undocumented_unsafe_blocks
lint: setup
	cd '$(ROOT)' && cargo fmt --all --check
	cd '$(ROOT)/kernel' && cargo fmt --all --check
	cd '$(ROOT)' && cargo clippy --release --workspace --all-targets -- $(CLIPPY_FLAGS)
	cd '$(ROOT)/kernel' && cargo clippy --release --workspace -- $(CLIPPY_FLAGS)
	cd '$(ROOT)/kernel' && cargo clippy --release --tests -- $(CLIPPY_FLAGS)
	cd '$(ROOT)/kernel' && RUSTDOCFLAGS='-D warnings' cargo doc --release -p cadence-framework --no-deps -q
	python3 '$(ROOT)/tools/check-unsafe.py'
	python3 '$(ROOT)/tools/check-layers.py'
	python3 '$(ROOT)/tools/check-doc-links.py'

# Runs all three suites even if one fails, then fails if any did. The in-kernel tests get a
# fresh virtio disk of their own (per make process, removed after), so shell::blk::tests run.
test: kernel initramfs
	@cd '$(ROOT)'; failed=; \
	step() { echo "+ $$*"; "$$@" || failed="$$failed [$$*]"; }; \
	step $(MAKE) -s lint; \
	step python3 tools/hot-layout.py --check '$(KERNEL)'; \
	step cargo test --release --workspace --exclude cadence-tests; \
	disk='$(ROOT)/target/test-disk-'$$$$.img; rm -f "$$disk"; \
	step env CADENCE_TEST_DISK="$$disk" CADENCE_TEST_TIMEOUT=$${CADENCE_TEST_TIMEOUT:-1800} bash -c 'cd kernel && cargo test'; \
	rm -f "$$disk"; \
	step cargo test --release -p cadence-tests --no-fail-fast; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed" >&2; exit 1; fi

# The exhaustive work-conservation check of cadence_sched::load_balance on every machine shape up
# to 8 CPUs (docs/design/balancing.md); make test runs the shapes up to 4 CPUs.
test-wc-proof:
	cd '$(ROOT)' && cargo test --release -p cadence-sched --test work_conservation work_conservation_full -- --ignored --nocapture

# The long stress runs (kernel option test_stress): the core-scheduling stress with 1,000,000
# switches instead of make test's 200,000 (~3 min under TCG), in a 1536 MiB guest (its checked trace copy);
# the setsid/exit/autogroup-toggle race with 100,000 children instead of 25,000.
test-stress: kernel
	cd '$(ROOT)/kernel' && CADENCE_TEST_TIMEOUT=$${CADENCE_TEST_TIMEOUT:-2400} CADENCE_TEST_MEMORY=$${CADENCE_TEST_MEMORY:-1536M} CADENCE_TEST_ARGS='test_stress test=stress' cargo test

# Big machines on both kernels (issue 60): boots at 224, 255 and 1,024 vCPUs, sched domains and
# NUMA files against Linux 6.12 on five topologies, idle CPUs' timer interrupts, hackbench.
# Long (an hour or more of host time at the defaults): never beside another QEMU.
PARTS ?= boot domains idle messaging
BOOTS ?= 10
bench-topology: kernel boot-tool initramfs
	'$(ROOT)/tools/bench-topology.sh' '$(PARTS)' '$(BOOTS)' '$(ROUNDS)'

# The switch and wakeup paths' cost at 4 to 255 (or 1,024) vCPUs (issue 60, item 7).
bench-scale-cpus: kernel boot-tool
	'$(ROOT)/tools/bench-scale-cpus.sh' '$(MACHINES)'

# The wasted-cores scenarios on both kernels (issue 61).
MACHINE ?= 8node
SCENARIOS ?= group pinned wakeup mixed hotplug
bench-balance: kernel boot-tool initramfs
	'$(ROOT)/tools/bench-balance.sh' '$(MACHINE)' '$(SCENARIOS)' '$(ROUNDS)'

bench-timer-storm: kernel boot-tool initramfs
	'$(ROOT)/tools/bench-timer-storm.sh' '$(ROUNDS)' '$(if $(SMP),$(SMP),2)'

# Debian's stress-ng class by class on Cadence and the Linux peer (tools/test-stress-ng.sh).
CLASSES ?=
SMPS ?=
test-stress-ng: kernel boot-tool rootfs-stress-ng
	CLASSES='$(CLASSES)' SMPS='$(SMPS)' RUNS='$(if $(filter command line environment,$(origin RUNS)),$(RUNS))' SECS='$(SECS_SUITE)' LINUX='$(if $(filter command line environment,$(origin LINUX)),$(LINUX))' '$(ROOT)/tools/test-stress-ng.sh'

# The chaos stress (tools/test-chaos.sh): random scheduler operations, then leak/invariant checks.
SEED ?=
OPS ?= 100000
TRACE_ENTRIES ?=
FAIL ?= 0
FUZZ_SECS ?= 600
test-chaos: kernel boot-tool
	FUZZ_SECS='$(FUZZ_SECS)' '$(ROOT)/tools/test-chaos.sh' '$(SEED)' '$(OPS)' '$(SMP)' '$(TRACE_ENTRIES)' '$(FAIL)'

# The system-call fuzzer (tools/test-fuzz.sh, tests/user/fuzz.c): SEED (random if empty),
# CALLS (100,000), SMP (4 SMT), PROCS (4), FAIL (failure injection percent, 0); its last line
# is `fuzz: seed= calls= procs= panics= leaks= hung= errno_unexpected=`.
CALLS ?=
PROCS ?=
test-fuzz: kernel boot-tool initramfs
	'$(ROOT)/tools/test-fuzz.sh' '$(SEED)' '$(CALLS)' '$(SMP)' '$(PROCS)' '$(FAIL)'

# A test that passed once is not a passing test: repeat the ones you touched.
TEST ?=
N ?= 10
test-repeat: kernel boot-tool
	CADENCE_TEST_DISK='$(DISK)' '$(ROOT)/tools/test-repeat.sh' '$(TEST)' '$(N)' '$(SMP)'

clean:
	cd '$(ROOT)' && cargo clean
	-cd '$(ROOT)/kernel' && cargo clean
