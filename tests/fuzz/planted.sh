#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Show that each oracle of the driver fuzzer catches a bug planted for it:
#   planted.sh [-k KVER] [-d SECONDS] [NAME...]
# For each tests/fuzz/planted/NAME.patch (all by default): kmod/ and uapi/
# copied to a scratch directory, the patch applied there, the module built
# with KCOV, then run-fuzz.sh with that module for up to SECONDS (default
# 300) from the committed corpus. TAP: ok when the fuzzer failed with the
# oracle the patch names ("Oracle: NAME"), with how long it took. Results
# in build/fuzz/planted/NAME/. Not part of make check (minutes per bug).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver= dur=300
while getopts "k:d:" o; do
	case $o in k) kver=$OPTARG ;; d) dur=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ -n "$kver" ] || kver=$("$top/tests/vm/build-debug-kernel.sh")
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(cd "$top/tests/fuzz/planted" && ls *.patch | sed 's/\.patch$//'))
echo "1..${#names[@]}"
rc=0 i=0
mkdir -p "$top/build/fuzz/planted"
for name in "${names[@]}"; do
	i=$((i + 1))
	patch=$top/tests/fuzz/planted/$name.patch
	want=$(sed -n 's/^Oracle: //p' "$patch")
	out=$top/build/fuzz/planted/$name
	scratch=$(mktemp -d /tmp/tio-planted.XXXXXX)
	cp -r "$top/kmod" "$top/uapi" "$scratch/"
	rm -f "$scratch"/kmod/*.o "$scratch"/kmod/*.ko "$scratch"/kmod/*.mod*
	if ! patch -s -d "$scratch" -p1 <"$patch"; then
		echo "not ok $i - planted $name: the patch does not apply"
		rc=1
		continue
	fi
	t0=$(date +%s)
	TIO_KMOD_SRC=$scratch TIO_FUZZ_KMOD=$scratch/build \
		"$top/tests/fuzz/run-fuzz.sh" -k "$kver" -d "$dur" -o "$out" \
		>"$out.log" 2>&1 || true
	t=$(($(date +%s) - t0))
	got=$(sed -n 's/.*# fuzz: ORACLE \([a-z]*\):.*/\1/p' "$out.log" | head -1)
	inputs=$(sed -n 's/.*stat::number_of_executed_units: *//p' "$out.log" | head -1)
	if [ "$got" = "$want" ]; then
		echo "ok $i - planted $name: the $want oracle fired after ${inputs:-?} inputs (${t}s with the VM)"
		grep -m1 "# fuzz: ORACLE" "$out.log" | sed 's/^.*# fuzz:/# fuzz:/'
	else
		echo "not ok $i - planted $name: expected the $want oracle, got '${got:-none}' (log $out.log)"
		rc=1
	fi
	rm -rf "$scratch"
done
exit $rc
