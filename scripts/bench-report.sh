#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-report: render a run's JSON files (tio-bench --json) into
# docs/results/KIND.md: where each ran (CPU model, cores, kernel, backend),
# the commit and date the JSON records, every target's verdict with the
# line "targets: N met, M missed", and every table. The docs quote
# figures from these files only; rerun this after a run, never edit them.
#
#   scripts/bench-report.sh [-o DIR] [KIND [FILE.json...]]
#     KIND run    build/run/*.json (make run; default), with its picture
#                 build/run/overhead-batch.png copied beside the report
#     KIND bench  the newest bench/results/<date>/*.json (make bench)
#     KIND gpu    build/gpu-check/gpu.json and gpu-load.json (make
#                 gpu-check; or the FILEs of a bundle's run), the report.md
#                 beside them appended
#     KIND other  the FILEs given
#     -o DIR      write DIR/KIND.md instead of docs/results/KIND.md
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TIO_BENCH:-$top/build/bench/tio-bench}
dir=$top/docs/results
if [ "${1:-}" = -o ]; then
	dir=$2
	shift 2
fi
kind=${1:-run}
[ $# -gt 0 ] && shift
files=("$@")
case $kind in
run)
	if [ ${#files[@]} = 0 ]; then
		for f in overhead-vm overhead-vm-user overhead-host ffi-host host; do
			[ -s "$top/build/run/$f.json" ] && files+=("$top/build/run/$f.json")
		done
	fi
	title="make run: the driver's command paths and the FFI"
	;;
bench)
	if [ ${#files[@]} = 0 ]; then
		last=$(ls -d "$top"/bench/results/*/ 2>/dev/null | sort | tail -1)
		[ -n "$last" ] && files=("$last"*.json)
	fi
	title="make bench: every suite"
	;;
gpu)
	if [ ${#files[@]} = 0 ]; then
		for f in gpu gpu-load; do
			[ -s "$top/build/gpu-check/$f.json" ] && files+=("$top/build/gpu-check/$f.json")
		done
	fi
	title="make gpu-check: the GPU paths on a GPU"
	;;
*)
	title="tio-bench: $kind"
	;;
esac
if [ ${#files[@]} = 0 ] || [ ! -e "${files[0]}" ]; then
	echo "bench-report: no JSON for '$kind' (run make $kind first, or name the files)" >&2
	exit 2
fi
[ -x "$bin" ] || { echo "bench-report: no $bin (make)" >&2; exit 2; }
mkdir -p "$dir"
loads=()
for f in "${files[@]}"; do
	loads+=(--load "$f")
done
md=$dir/$kind.md
"$bin" --targets "${loads[@]}" --md "$md" --title "$title" >/dev/null
if [ "$kind" = gpu ] && [ -s "$(dirname "${files[0]}")/report.md" ]; then
	# The parts (tests, peers, the save) and the figures, as gpu-check wrote them.
	printf '\n## gpu-check\n\n' >>"$md"
	sed -e '1{/^# /d}' -e 's/^## /### /' "$(dirname "${files[0]}")/report.md" >>"$md"
fi
if [ "$kind" = run ] && [ -s "$top/build/run/overhead-batch.png" ]; then
	cp "$top/build/run/overhead-batch.png" "$dir/run-overhead-batch.png"
	printf '\n## Picture\n\n![cost per command against batch size](run-overhead-batch.png)\n' >>"$md"
fi
echo "bench-report: $md"
