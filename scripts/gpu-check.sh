#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make gpu-check, and the run.sh of make gpu-bundle: everything that needs
# a GPU, on the machine's real driver, in under four minutes, from the
# bundle (scripts/gpu-bundle.sh: nothing is built here but the Python
# package, where it can be). One timestamped line per part; each part's
# output goes to OUTDIR/logs/PART.log. The parts, most needed first:
#   env         the machine, the GPU and its driver (CUDA: libcuda.so.1, or
#               TIO_CUDA_LIBRARY; ROCm: /dev/kfd and libamdhip64)
#   tests       the GPU test programs on that driver (the HIP ones on the
#               tests' fake HIP runtime where no AMD GPU is)
#   bench       tio-bench's gpu rows: calls, copies, stream <-> fence
#   checkpoint  a Llama-shaped bf16 checkpoint (st_gpu_peer.py --make) in
#               TIO_GPU_CHECK_DIR (default /var/tmp/tio-gpu-check, a disk)
#   disk        fio's O_DIRECT read of it, cold: the disk's figure
#   load        tio-bench's load rows: disk -> GPU, cold and warm, beside
#               the safetensors library loading the same file
#   save        GPU saves beside safetensors' save_file (st_save_peer.py)
#   python      the Python package built here and its GPU tests, where
#               the interpreter's headers and a compiler are
#   kernel      the GPU tests again on the kernel backend, where
#               /dev/tensorio is
# Then OUTDIR/summary.json and OUTDIR/report.md (report.py), beside
# tio-bench's OUTDIR/gpu.json and gpu-load.json (scripts/bench-report.sh
# gpu renders them into docs/results/gpu.md), their .md tables, and
# gpu-save.json, disk.json.
#
#   run.sh OUTDIR
# Environment: TIO_CUDA_LIBRARY (a driver to use instead: the tests' fake
# one checks this script without a GPU), TIO_GPU_CHECK_DIR,
# TIO_GPU_CHECK_BUDGET (seconds for the parts, default 210: a part gets at
# most what is left, one with under 15 s left is skipped and says so),
# TIO_GPU_CHECK_FAST=1 (short rows, small files), PYTHON (python3),
# TIO_GPU_CHECK_LAYERS (4: a 2.2 GB checkpoint).
# Exit status: 0 when every part that ran passed, the tests and the gpu
# rows among them, on a GPU driver; 1 when a part failed, the tests or
# the rows did not run, or no GPU driver was found; 2 for a bad command
# line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
work=${TIO_GPU_CHECK_DIR:-/var/tmp/tio-gpu-check}
budget=${TIO_GPU_CHECK_BUDGET:-210}
fast=${TIO_GPU_CHECK_FAST:-0}
py=${PYTHON:-python3}
start=$(date +%s)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$here/bin:$PATH"
rm -f "$out/parts.tsv" "$out/env.tsv"
mkdir -p "$work" 2>/dev/null || work=$(mktemp -d /tmp/tio-gpu-check.XXXXXX)
# A part timed out leaves its files: the checkpoint, tio-bench's own.
trap 'rm -rf "$work/ckpt" "$work/fio" "$work/python" "$work"/tio-bench-gpu-load.*' EXIT

elapsed() { echo $(($(date +%s) - start)); }
say() { printf '[%s +%3ss] %s\n' "$(date +%H:%M:%S)" "$(elapsed)" "$*"; }
env_kv() { printf '%s\t%s\n' "$1" "$2" >>"$out/env.tsv"; }

# part NAME LIMIT CMD...: run CMD (output to logs/NAME.log) for at most
# LIMIT seconds, less when the budget is nearly spent; record its status
# (its exit status, and its TAP lines when it prints some).
part() {
	local name=$1 limit=$2 left t0 rc p f s status note log=$out/logs/$1.log
	shift 2
	left=$((budget - $(elapsed)))
	[ "$limit" -gt "$left" ] && limit=$left
	if [ "$limit" -lt 15 ]; then
		say "$name: skipped, the time budget ($budget s) is spent"
		printf '%s\tskip\t0\t0\t0\t0\tno time left\n' "$name" >>"$out/parts.tsv"
		return
	fi
	say "$name ..."
	t0=$(date +%s)
	# A function of this script, in a shell of its own that timeout can end.
	timeout -k 5 "$limit" bash -c '"$@"' "$name" "$@" >"$log" 2>&1 </dev/null
	rc=$?
	p=$(grep -Ec '^ok( |$)' "$log")
	s=$(grep -Ec '^ok( |$).*# (SKIP|skip)' "$log")
	f=$(grep -Ec '^not ok( |$)' "$log")
	note=$(grep -E '^(note|skip): ' "$log" | tail -1 | cut -d' ' -f2-)
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		status=fail note="timed out after ${limit}s"
	elif [ $rc = 77 ]; then
		status=skip
	elif [ $rc != 0 ] || [ "$f" != 0 ]; then
		status=fail
		[ -n "$note" ] || note=$(grep -E '^not ok' "$log" | head -3 | tr '\n' ';')
		[ -n "$note" ] || note=$(grep -v '^[[:space:]]*$' "$log" | tail -1 | cut -c1-160)
	else
		status=pass
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$status" $(($(date +%s) - t0)) \
		$((p - s)) "$f" "$s" "$note" >>"$out/parts.tsv"
	say "$name: $status${note:+ ($note)}$([ "$p$f" != 00 ] && echo ", $((p - s)) passed, $f failed, $s skipped")"
}

# --- env: which GPU, which driver ---------------------------------------
vendor=none mode=real
cuda_lib=${TIO_CUDA_LIBRARY:-}
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
if [ -z "$cuda_lib" ]; then
	if "$ldconfig" -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		cuda_lib=libcuda.so.1
	else
		for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 \
			 /usr/local/cuda/lib64 /usr/lib/wsl/lib; do
			[ -e "$d/libcuda.so.1" ] && cuda_lib=$d/libcuda.so.1 && break
		done
	fi
fi
[ -n "$cuda_lib" ] && vendor=cuda
case $cuda_lib in *fake_cuda*) mode=fake ;; esac
if [ $vendor = none ] && [ -e /dev/kfd ] && "$ldconfig" -p 2>/dev/null | grep -q libamdhip64; then
	vendor=rocm
fi
# The tests must not fall back to the fake driver: name the real one.
export TIO_CUDA_LIBRARY=${cuda_lib:-libcuda.so.1}
if [ $vendor = rocm ]; then
	export TIO_BENCH_GPU=rocm
fi
env_check() {
	echo "note: vendor $vendor, driver library ${cuda_lib:-none} ($mode)"
	uname -a
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus $(nproc)"
	command -v nvidia-smi >/dev/null &&
		nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max \
			--format=csv,noheader
	"$py" -c 'import sys; print("python", sys.version.split()[0])' 2>&1
	"$py" -c 'import torch, safetensors; print("torch", torch.__version__, "safetensors", safetensors.__version__)' 2>&1 | tail -1
	echo "scratch $work on $(stat -f -c %T "$work")"
	[ $vendor != none ] || { echo "note: no GPU driver: no libcuda.so.1, no ROCm"; exit 1; }
	# A driver without a usable GPU would only skip every test and row.
	probe=$("$here/bin/tio-bench" --suite gpu --case stream/query --fast --procs 1 --tap 2>&1)
	echo "$probe" | grep -E '^(not )?ok'
	if ! echo "$probe" | grep -qE '^ok [0-9]+ - gpu/stream/query$'; then
		echo "note: no usable GPU: $(echo "$probe" | grep -oE '# SKIP .*|^not ok.*' | head -1)"
		exit 1
	fi
}
export here out work fast py vendor mode cuda_lib
export -f env_check
part env 20 env_check
env_kv vendor "$vendor"
env_kv mode "$mode"
env_kv driver "${cuda_lib:-none}"
env_kv cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
env_kv cpus "$(nproc)"
env_kv kernel "$(uname -r)"
command -v nvidia-smi >/dev/null &&
	env_kv gpu "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
env_kv start "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
env_kv bundle "$(head -1 "$here/MANIFEST" 2>/dev/null)"

# --- tests ---------------------------------------------------------------
run_tests() {
	local t rc=0

	cd "$work" || return 1
	for t in test_gpu_cuda test_gpu_fence test_gpu_hip test_dev_doorbell \
		 test_file_gpu_load test_file_gpu_save; do
		[ -x "$here/bin/$t" ] || continue
		echo "# $t"
		"$here/bin/$t" || rc=1
	done
	return $rc
}
export -f run_tests
part tests 80 run_tests

# --- bench: the gpu suite's calls, copies and fences --------------------
# bench_rows NAME CASES: tio-bench's gpu rows into OUTDIR/NAME.json, .md
bench_rows() {
	local opts=(--procs 1 --repeat 3)

	[ "$fast" = 1 ] && opts=(--fast --procs 1)
	cd "$work" || return 1
	TIO_BENCH_ST_FILE=$ckpt TIO_BENCH_DIR=$work TIO_BENCH_PYTHON=$py \
	TIO_BENCH_ST_PEER=$here/python/st_gpu_peer.py \
		"$here/bin/tio-bench" --suite gpu --case "$2" "${opts[@]}" --tap \
		--json "$out/$1.json" --md "$out/$1.md" \
		--title "make gpu-check: $vendor ($mode driver)"
}
run_bench() {
	bench_rows gpu 'call/*,stream/*,h2d/*,d2h/*,fence/*'
}
export ckpt=
export -f bench_rows run_bench
part bench 60 run_bench

# --- checkpoint, disk ----------------------------------------------------
ckpt=
make_ckpt() {
	local layers=${TIO_GPU_CHECK_LAYERS:-4} shape=()

	[ "$fast" = 1 ] && layers=1 shape=(--hidden 512 --inter 1024 --vocab 4096)
	case $(stat -f -c %T "$work") in
	tmpfs|ramfs) echo "skip: $work is in memory: set TIO_GPU_CHECK_DIR to a disk"; return 77 ;;
	esac
	mkdir -p "$work/ckpt"
	"$py" "$here/python/st_gpu_peer.py" --make --layers "$layers" "${shape[@]}" \
		"$work/ckpt/model.safetensors" || {
		echo "skip: no checkpoint from torch (the load rows write their own file)"
		return 77
	}
}
export -f make_ckpt
part checkpoint 60 make_ckpt
[ -s "$work/ckpt/model.safetensors" ] && ckpt=$work/ckpt/model.safetensors

disk_read() {
	local fio=$work/fio/fio size bs

	[ -n "$ckpt" ] || { echo "skip: no checkpoint to read"; return 77; }
	[ -s "$here/fio.tar.xz" ] || { echo "skip: no fio in the bundle"; return 77; }
	if command -v xz >/dev/null; then
		xz -dc "$here/fio.tar.xz" | tar -C "$work" -xf - || return 1
	else
		"$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			"$here/fio.tar.xz" "$work" || return 1
	fi
	size=$(stat -c %s "$ckpt")
	bs=16M
	[ "$size" -lt $((256 << 20)) ] && bs=1M
	"$py" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.fdatasync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$ckpt"
	LD_LIBRARY_PATH=$work/fio/lib "$fio" --name=disk --filename="$ckpt" --readonly \
		--rw=read --bs=$bs --direct=1 --ioengine=libaio --iodepth=8 \
		--size=$((size >> 20 << 20)) --output-format=json \
		--output="$out/disk.json" || return 1
	echo "note: fio O_DIRECT $bs reads, depth 8, $(grep -m1 '"bw_bytes"' "$out/disk.json" | tr -dc 0-9) B/s"
}
export ckpt
export -f disk_read
part disk 30 disk_read

# --- load: disk -> GPU beside the safetensors library ------------------
run_load() {
	bench_rows gpu-load 'load/*'
}
export -f run_load
part load 110 run_load

# --- save ----------------------------------------------------------------
run_save() {
	local gib=1 rounds=2

	[ "$fast" = 1 ] && gib=1 rounds=1
	[ $vendor = cuda ] || { echo "skip: the save peer drives CUDA through torch"; return 77; }
	TIO_LIB=$here/lib/libtensorio.so.0 "$py" "$here/python/st_save_peer.py" --gpu \
		--gib $gib --rounds $rounds "$work" >"$out/gpu-save.json" || {
		rm -f "$out/gpu-save.json"
		return 1
	}
}
export -f run_save
part save 70 run_save

# --- python: the package built here, where it can be -------------------
run_python() {
	local top=$here/../.. inc

	[ -f "$top/python/Makefile" ] || { echo "skip: no source tree beside the bundle"; return 77; }
	inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
	[ -f "$inc/Python.h" ] || { echo "skip: no Python.h for $py: the package cannot be built"; return 77; }
	command -v cc >/dev/null && command -v make >/dev/null ||
		{ echo "skip: no compiler or make here"; return 77; }
	# A package of its own in the scratch directory: the tree's stays as it is.
	mkdir -p "$work/python/pkg/tensorio"
	cp "$top"/python/tensorio/*.py "$work/python/pkg/tensorio/"
	make -s -j"$(nproc)" -C "$top/python" PYTHON="$py" LIBO="$here/lib" \
		O="$work/python" PKG="$work/python/pkg/tensorio" TORCH_ACCEL=0 || return 1
	"$py" -c 'import pytest' 2>/dev/null || { echo "skip: built; no pytest to run its tests"; return 77; }
	TIO_TAP=1 PYTHONPATH=$work/python/pkg TIO_PY_FIXTURES=$here/bin "$py" -m pytest -q -p no:cacheprovider \
		"$top/python/tests/test_safetensors.py" "$top/python/tests/test_stream.py" \
		"$top/python/tests/test_dlpack.py" -k "gpu or doorbell or torch"
}
export -f run_python
part python 45 run_python

# --- kernel backend ------------------------------------------------------
run_kernel() {
	[ -c /dev/tensorio ] || { echo "skip: no /dev/tensorio (the module is not loaded here)"; return 77; }
	TIO_BACKEND=kernel run_tests
}
export -f run_kernel
part kernel 60 run_kernel

# --- the report ----------------------------------------------------------
env_kv seconds "$(elapsed)"
rc=0
grep -q "	fail	" "$out/parts.tsv" && rc=1
# The tests and the gpu suite must have run: a check without them failed.
for p in tests bench load; do
	grep -q "^$p	pass	" "$out/parts.tsv" || rc=1
done
[ $vendor = none ] && rc=1
if ! "$py" "$here/report.py" "$out" "$rc" >"$out/logs/report.log" 2>&1; then
	# No Python: the parts as they are.
	cp "$out/parts.tsv" "$out/report.md"
	printf '{"exit": %d, "report": "report.py failed: see logs/report.log"}\n' "$rc" \
		>"$out/summary.json"
fi
say "done: exit $rc; $out/report.md, $out/summary.json"
exit $rc
