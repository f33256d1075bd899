#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per operation of tvmffi-peer's rows, counted by callgrind:
# the machine's load does not change them. For each operation, runs with
# N and 2N calls differ by N operations; the tio_ row runs in every run,
# so a runtime's count is its run's difference less the tio_-only one.
#   bench/tvmffi-icount.sh PEER N LABEL=LIB...
set -euo pipefail
peer=$1 n=$2
shift 2
ir() {	# ir OP CALLS [LABEL=LIB]: the run's instruction count
	local out
	out=$(mktemp)
	valgrind --tool=callgrind --callgrind-out-file="$out" "$peer" -r 1 -o "$1" -n "$2" \
		"${@:3}" >/dev/null 2>&1
	sed -n 's/^summary: //p' "$out"
	rm -f "$out"
}
printf '# instructions per operation (callgrind, %d calls)\n%-4s %10s' "$n" op "tio_ API"
for rt in "$@"; do printf ' %12s' "${rt%%=*}"; done
printf '\n'
for op in 0 1 2 3 4 5 6; do
	base=$(( $(ir $op $((2 * n))) - $(ir $op $n) ))
	printf '%-4s %10.1f' $op "$(echo "$base / $n" | bc -l)"
	for rt in "$@"; do
		d=$(( $(ir $op $((2 * n)) "$rt") - $(ir $op $n "$rt") - base ))
		printf ' %12.1f' "$(echo "$d / $n" | bc -l)"
	done
	printf '\n'
done
