#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The library's unit tests under a dynamic checker (TAP from the tests):
#   lib-checkers.sh valgrind DIR   every test_* under valgrind memcheck
#                                  (errors and definite leaks fail a test)
#   lib-checkers.sh tsan DIR       the multi-threaded test_* programs of a
#                                  TSAN=1 build (any report fails a test)
#   lib-checkers.sh libfuzz SECS   each libFuzzer target (dtype, device,
#                                  safetensors, batch) for SECS seconds from
#                                  its corpus, built with clang's source-based
#                                  coverage: prints the line coverage of
#                                  lib/src they reached together, and writes
#                                  the per-file table and the lines not
#                                  reached to build/fuzz-lib-cov/
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mode=$1 dir=$2
rc=0
case $mode in
valgrind)
	command -v valgrind >/dev/null || { echo "ok - valgrind # SKIP not installed"; exit 0; }
	for t in "$dir"/test_*; do
		[ -x "$t" ] || continue
		echo "# valgrind $t"
		valgrind -q --error-exitcode=99 --leak-check=full \
			--suppressions="$top/tests/fuzz/valgrind.supp" \
			--errors-for-leak-kinds=definite --show-leak-kinds=definite \
			--child-silent-after-fork=no "$t" || rc=1
	done
	;;
tsan)
	# Only programs that start threads (test_net*: libtensorio-net's
	# progress thread; saves' writers; GPU fences: the fake CUDA driver's
	# stream threads run host functions and memory writes); ASLR off, as
	# the TSan runtime of Debian 12 needs on kernels with high mmap entropy.
	for src in $(grep -l -e pthread_create -e '"net_test.h"' \
		     -e tio_safetensors_load_device -e tio_safetensors_save_async \
		     -e tio_safetensors_save_opts -e tio_gpu_stream_record_fence \
		     "$top"/tests/lib/test_*.c); do
		t=$dir/$(basename "$src" .c)
		[ -x "$t" ] || continue
		echo "# tsan $t"
		TSAN_OPTIONS="exitcode=66 halt_on_error=1 suppressions=$top/tests/fuzz/tsan.supp ${TSAN_OPTIONS:-}" \
			setarch "$(uname -m)" -R "$t" || rc=1
	done
	;;
libfuzz)
	# DIR: seconds per target. Corpora grow in build/fuzz-lib-cov/corpus-*.
	make -s -C "$top/tests/fuzz" libfuzz COV=1 || exit 1
	fz=$top/build/fuzz-lib-cov
	rm -f "$fz"/*.profraw
	for t in dtype device safetensors batch; do
		c=$fz/corpus-$t log=$fz/$t.log
		mkdir -p "$c"
		if LLVM_PROFILE_FILE="$fz/$t.profraw" "$fz/fuzz_$t" -max_total_time="$dir" \
			-print_final_stats=1 "$c" "$top/tests/fuzz/corpus/$t" >"$log" 2>&1; then
			echo "ok - libFuzzer $t: $(sed -n 's/^stat::number_of_executed_units: //p' "$log") inputs in ${dir}s"
		else
			grep -E 'ERROR|SUMMARY|Test unit written' "$log" | sed 's/^/# /'
			echo "not ok - libFuzzer $t (log $log)"
			rc=1
		fi
	done
	"$top/tests/fuzz/lib-cover.sh" "$fz" || rc=1
	;;
*)
	echo "usage: $0 valgrind|tsan|libfuzz DIR|SECS" >&2
	exit 2
	;;
esac
exit $rc
