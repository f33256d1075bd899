#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make gpu-bundle: everything make gpu-check runs, in one directory that
# runs on a GPU machine without building anything there (a stock Ubuntu
# 24.04 with the vendor's driver, Python with torch and safetensors; no
# liburing, json-c, libdw or fio):
#   run.sh            the check (scripts/gpu-check.sh): run.sh OUTDIR
#   report.py         its report (scripts/gpu-report.py)
#   bin/              tio-bench, tioctl, the GPU test programs, the tests'
#                     fake CUDA and HIP runtimes and the fixture module
#                     beside them
#   lib/              libtensorio and every shared library the programs
#                     need but the C library's own (copied from this
#                     machine, debug sections stripped)
#   python/           the peers: st_gpu_peer.py, st_save_peer.py
#   fio.tar.xz        Debian's fio and its libraries (unpacked by run.sh;
#                     cached in build/gpu-bundle-cache, it takes a minute)
#   MANIFEST          what is in it, and the commit it was built from
#   scripts/gpu-bundle.sh [DIR]   (default build/gpu-bundle; make all tests first)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/gpu-bundle}
cache=$top/build/gpu-bundle-cache
tests=(test_gpu_cuda test_gpu_fence test_gpu_hip test_dev_doorbell test_file_gpu_load
       test_file_gpu_save)
progs=("$top/build/bench/tio-bench" "$top/build/tools/tioctl")
for t in "${tests[@]}"; do
	progs+=("$top/build/tests/lib/$t")
done
for f in "${progs[@]}" "$top/build/lib/libtensorio.so.0" \
	 "$top/build/tests/lib/fixtures/fake_cuda.so" "$top/build/tests/lib/fixtures/fake_hip.so" \
	 "$top/build/tests/lib/fixtures/fixture_module.so"; do
	[ -e "$f" ] || { echo "gpu-bundle: no $f (make all tests)" >&2; exit 2; }
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/python" "$cache"
cp "${progs[@]}" "$top/build/tests/lib/fixtures/fake_cuda.so" \
	"$top/build/tests/lib/fixtures/fake_hip.so" \
	"$top/build/tests/lib/fixtures/fixture_module.so" "$out/bin/"
cp "$top/scripts/gpu-check.sh" "$out/run.sh"
cp "$top/scripts/gpu-report.py" "$out/report.py"
cp "$top/bench/python/st_gpu_peer.py" "$top/bench/python/st_save_peer.py" "$out/python/"

# Shared libraries: what ldd resolves, but the C library's own (the
# target's are newer and compatible) and the GPU vendors' (loaded there).
libs_of() {
	ldd "$@" 2>/dev/null | awk '$3 ~ /^\// { print $3 }' | sort -u |
		grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux[^/]*)\.so' || true
}
for l in $(libs_of "$out"/bin/* "$top/build/lib/libtensorio.so.0") "$top/build/lib/libtensorio.so.0"; do
	cp -L "$l" "$out/lib/"
done
for f in "$out"/lib/* "$out"/bin/*; do
	strip --strip-debug "$f" 2>/dev/null || true
done
# For a build of the Python package there (-ltensorio).
ln -s libtensorio.so.0 "$out/lib/libtensorio.so"

# fio and its libraries: large, so compressed, and made once.
if [ -x /usr/bin/fio ]; then
	if [ ! -s "$cache/fio.tar.xz" ] || [ /usr/bin/fio -nt "$cache/fio.tar.xz" ]; then
		rm -rf "$cache/fio"
		mkdir -p "$cache/fio/lib"
		cp /usr/bin/fio "$cache/fio/"
		for l in $(libs_of /usr/bin/fio); do
			cp -L "$l" "$cache/fio/lib/"
		done
		strip --strip-debug "$cache"/fio/lib/* 2>/dev/null || true
		tar -C "$cache" -cf - fio | xz -6 -T0 >"$cache/fio.tar.xz.tmp"
		mv "$cache/fio.tar.xz.tmp" "$cache/fio.tar.xz"
		rm -rf "$cache/fio"
	fi
	cp "$cache/fio.tar.xz" "$out/"
fi

{
	echo "tensorio gpu-check bundle, $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "built on $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m)"
	(cd "$out" && find . -type f | sort)
} >"$out/MANIFEST"
echo "gpu-bundle: $out ($(du -sh "$out" | cut -f1))"
