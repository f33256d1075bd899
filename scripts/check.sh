#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: every test suite, each printing TAP, summed into one line
#   N passed, N failed, N skipped
# Steps: build, library unit tests (plain and ASan+UBSan), checkpatch,
# and per kernel: W=1 module build, sparse, the kselftests in the VM.
# TIO_CHECK_KERNELS="rel ..." limits the kernels (default: scripts/kernels.sh).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# Each run logs into its own directory; build/check points at the latest.
mkdir -p build
find build -maxdepth 1 -name 'check.??????' -mmin +120 -exec rm -rf {} +
log=$(mktemp -d "$top/build/check.XXXXXX")
# (A real directory there, from older runs, would get the link inside it.)
[ -L build/check ] || rm -rf build/check
ln -sfn "$(basename "$log")" build/check
jobs=${JOBS:-$(nproc)}
pass=0 fail=0 skip=0

# step, tap: scripts/check-step.sh.
. "$top/scripts/check-step.sh"

# A build that must also be warning-free (the warnings go to the log).
nowarn() {
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	[ -n "$out" ] && echo "$out"
	[ $rc = 0 ] && ! grep -qE 'warning:|error:' <<<"$out"
}

step build tap "build (make all tests)" make -s -j"$jobs" all tests
step lib-unit scripts/run-dir.sh build/tests/lib
step lib-unit-asan bash -c "make -s -j$jobs -C lib SAN=1 &&
	make -s -j$jobs -C tests/lib SAN=1 && scripts/run-dir.sh build/tests/lib-san"
# The same unit tests under valgrind memcheck, and the multi-threaded ones
# under ThreadSanitizer (tests/fuzz/lib-checkers.sh).
step lib-valgrind tests/fuzz/lib-checkers.sh valgrind build/tests/lib
step lib-tsan bash -c "make -s -j$jobs -C lib TSAN=1 &&
	make -s -j$jobs -C tests/lib TSAN=1 && tests/fuzz/lib-checkers.sh tsan build/tests/lib-tsan"
# The library's libFuzzer targets from their corpora, with lib/ line coverage.
step lib-fuzz tests/fuzz/lib-checkers.sh libfuzz "${TIO_LIBFUZZ_SECS:-8}"
step bench-unit scripts/run-dir.sh build/tests/bench
step bench-cli tests/bench/test-tio-bench.sh
# Every host suite once, briefly; the driver suite runs in the VM step
# (build/kselftest/tio_bench_test).
step bench-fast build/bench/tio-bench --fast --tap --suite host,ffi,memory,io,gpu,sync,net
# The gpu rows skip above without a GPU: run every one on the tests' fake
# CUDA driver and fake HIP runtime (TIO_BENCH_GPU=rocm): that each works
# and that the device load is the file byte for byte, not a timing.
fixtures=$PWD/build/tests/lib/fixtures
step bench-gpu-fake bash -c "TIO_CUDA_LIBRARY=$fixtures/fake_cuda.so \
	build/bench/tio-bench --fast --tap --procs 1 --suite gpu &&
	TIO_BENCH_GPU=rocm TIO_HIP_LIBRARY=$fixtures/fake_hip.so \
	build/bench/tio-bench --fast --tap --procs 1 --suite gpu"
# The Python package: pytest on this machine's backend, and an offline pip
# install into a scratch directory (tests/install/test-python.sh).
step python bash -c "make -s python && TIO_TAP=1 PYTHONPATH=python \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests"
# The same under ASan+UBSan (extension and library; Python's own exit-time
# leaks are not ours: the tests check the library's counters instead).
step python-asan bash -c "make -s -C lib SAN=1 && make -s -C python SAN=1 &&
	ASAN_OPTIONS=detect_leaks=0 \
	LD_PRELOAD=\$(gcc -print-file-name=libasan.so):\$(gcc -print-file-name=libubsan.so) \
	TIO_TAP=1 PYTHONPATH=build/python-san /usr/bin/python3 -m pytest -q \
	-p no:cacheprovider --ignore=python/tests/test_leaks.py python/tests"
step python-install tests/install/test-python.sh
step bench-python build/bench/tio-bench --fast --tap --suite python
step abi tap "exported symbols match lib/libtensorio.map and lib/net/libtensorio-net.map" \
	scripts/check-abi.sh
# libtensorio loads no UCX; everything builds without UCX's headers.
step net-split tests/tools/test-net-split.sh
step layers tests/tools/test-check-layers.sh
# The driver's commands: the uapi header, kmod/tio_cmds.h, the library's
# command table and docs/uapi.md name the same ones; and the check fails
# when one of them does not.
step commands scripts/check-commands.sh
step commands-check tests/tools/test-check-commands.sh
# make check's own counting and its list of failures above the totals.
step check-step tests/tools/test-check-step.sh
step tioctl tests/tools/test-tioctl.sh
# The docs against the tree: quick starts, quoted figures, links, names.
step docs tests/tools/test-docs.sh
step licenses tap "every SPDX identifier has its text in LICENSES/" scripts/check-licenses.sh
step man tap "man3 pages from kernel-doc, no warnings, one per export" scripts/man.sh build/man
step install tests/install/test-install.sh
step dkms tests/install/test-dkms.sh
step checkpatch tap "checkpatch --strict kmod/ uapi/" \
	perl build/ksrc/scripts/checkpatch.pl --no-tree --strict --terse \
	--show-types -f $(ls kmod/*.[ch] uapi/linux/*.h | grep -v '\.mod\.c$')

for kver in ${TIO_CHECK_KERNELS:-$(scripts/kernels.sh)}; do
	step "kmod-$kver" tap "module builds on $kver with W=1, no warnings" \
		nowarn scripts/kmod.sh "$kver" W=1
	step "sparse-$kver" tap "sparse (C=2) clean on $kver" \
		nowarn scripts/kmod.sh "$kver" C=2
	step "vm-$kver" tests/vm/run.sh -k "$kver" \
		-m "build/kmod/$kver/kmod/tensorio.ko" -b build/kselftest -t 600
	# The library's tests of the layers that reach a backend (dev, file,
	# gpu) against the driver (TIO_BACKEND=kernel); ffi's never do. The
	# GPU tests run on the fake CUDA and HIP runtimes beside them.
	step "vm-lib-$kver" bash -c "rm -rf build/tests/lib-vm && mkdir -p build/tests/lib-vm &&
		cp -r build/tests/lib/test_dev_* build/tests/lib/test_file_* \
		build/tests/lib/test_gpu_* build/tests/lib/fixtures/fake_cuda.so \
		build/tests/lib/fixtures/fake_hip.so tests/fuzz/corpus/safetensors-bad \
		build/tests/lib-vm/ &&
		tests/vm/run.sh -k $kver -m build/kmod/$kver/kmod/tensorio.ko \
		-b build/tests/lib-vm -s tests/lib/vm-tests.sh -t 600"
	# RDMA verbs on tensorio buffers over soft-RoCE (rxe over a veth):
	# ibv_reg_mr on the mapping, RDMA WRITE/READ (tests/net/vm-rxe.sh).
	step "vm-rxe-$kver" bash -c "tests/net/vm-stage.sh build/rxe-vm &&
		TIO_VM_OPT_MODULES='loop crc32_generic veth rdma_rxe' \
		tests/vm/run.sh -k $kver -m build/kmod/$kver/kmod/tensorio.ko \
		-b build/rxe-vm -s tests/net/vm-rxe.sh -t 300"
	# The Python suites on the driver (numpy, no torch: see vm-stage.sh).
	step "vm-python-$kver" bash -c "python/tests/vm-stage.sh build/python-vm &&
		tests/vm/run.sh -k $kver -m build/kmod/$kver/kmod/tensorio.ko \
		-b build/python-vm -s python/tests/vm-tests.sh -t 900"
done

# The debug kernel (KASAN, lockdep, kmemleak, fault injection), built once
# and cached; TIO_CHECK_DEBUG=0 leaves it out.
if [ "${TIO_CHECK_DEBUG:-1}" = 1 ]; then
	dbg=$(tests/vm/build-debug-kernel.sh) || dbg=
	if [ -z "$dbg" ]; then
		step debug-kernel tap "debug kernel builds" false
	else
		step "kmod-$dbg" tap "module builds on $dbg with W=1, no warnings" \
			nowarn scripts/kmod.sh "$dbg" W=1
		step "vm-$dbg" tests/vm/run.sh -k "$dbg" \
			-m "build/kmod/$dbg/kmod/tensorio.ko" -b build/kselftest -t 900
		# Reliability (tests/fuzz): the driver fuzzer (libFuzzer on the
		# module's KCOV coverage, with its oracles) replays the corpus
		# tests/fuzz/corpus/kmod{,-crashes}, then fuzzes briefly (seed printed);
		# prints the kmod line coverage.
		step "fuzz-$dbg" tests/fuzz/run-fuzz.sh -k "$dbg" \
			-d "${TIO_FUZZ_SECS:-45}"
		# tests/fault: every allocation point of every path failed once.
		step "fault-$dbg" tests/fault/run-fault.sh -k "$dbg"
		# tests/stress: threads x mixed operations, children SIGKILLed.
		step "stress-$dbg" tests/stress/run-stress.sh -k "$dbg" -d 20
	fi
fi

step_totals
[ "$fail" = 0 ]
