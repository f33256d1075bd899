#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The line coverage of lib/src reached by the libFuzzer targets of DIR
# (built with COV=1, each run with LLVM_PROFILE_FILE=DIR/<target>.profraw):
#   lib-cover.sh DIR
# Prints "# fuzz: lib line coverage NN.N% (A of B lines)"; writes the
# per-file table to DIR/lib-coverage.txt and the lines not reached to
# DIR/lib-uncovered.txt. Counts the files of lib/src that the targets link.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$1
ls "$dir"/*.profraw >/dev/null 2>&1 || { echo "# fuzz: no profiles in $dir"; exit 1; }
llvm-profdata-14 merge -sparse "$dir"/*.profraw -o "$dir/lib.profdata"
bins=(fuzz_dtype fuzz_device fuzz_safetensors fuzz_batch)
objs=("$dir/${bins[0]}")
for b in "${bins[@]:1}"; do objs+=(-object "$dir/$b"); done
llvm-cov-14 report -instr-profile="$dir/lib.profdata" "${objs[@]}" \
	"$top/lib/src" >"$dir/lib-coverage.txt"
llvm-cov-14 show -instr-profile="$dir/lib.profdata" "${objs[@]}" \
	-show-line-counts -format=text "$top/lib/src" |
	awk '/^\/.*:$/ { f = $0; next } /^ *[0-9]+\| *0\|/ { print f " " $0 }' \
	>"$dir/lib-uncovered.txt"
# TOTAL ... Lines Missed Cover ...: the columns after the regions and functions.
awk '$1 == "TOTAL" { n = $8; miss = $9;
	printf "# fuzz: lib line coverage %.1f%% (%d of %d lines)\n", 100 * (n - miss) / n, n - miss, n }' \
	"$dir/lib-coverage.txt"
