#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-report: render a run's JSON files (tio-bench --json) into
# docs/results/KIND.md: where each ran (CPU model, cores, kernel, backend),
# the commit and date the JSON records, every target's verdict with the
# line "targets: N met, M missed", and every table. The docs quote
# figures from these files only; rerun this after a run, never edit them.
#
#   scripts/bench-report.sh [-o DIR] [-r] [KIND [FILE.json...]]
#     KIND run    build/run/*.json (make run; default), with its picture
#                 build/run/overhead-batch.png copied beside the report
#     KIND bench  the newest bench/results/<date>/*.json (make bench)
#     KIND gpu    build/gpu-check/gpu.json and gpu-load.json (make
#                 gpu-check; or the FILEs of a bundle's run), the report.md
#                 beside them appended
#     KIND SUITE  a tio-bench suite run on the host: build/results/SUITE.json
#                 ($TIO_RESULTS_JSON/SUITE.json when that is set)
#     KIND other  the FILEs given
#     -o DIR      write DIR/KIND.md instead of docs/results/KIND.md
#     -r          run the SUITE first: tio-bench --suite SUITE --json
#                 build/results/SUITE.json (TIO_BENCH_ARGS adds options;
#                 the commit recorded is TIO_COMMIT, else git describe's)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${TIO_BENCH:-$top/build/bench/tio-bench}
dir=$top/docs/results
runit=
while [ $# -gt 0 ]; do
	case $1 in
	-o) dir=$2; shift 2 ;;
	-r) runit=1; shift ;;
	*) break ;;
	esac
done
kind=${1:-run}
[ $# -gt 0 ] && shift
files=("$@")
case $kind in
run | bench | gpu)
	[ -z "$runit" ] || { echo "bench-report: -r runs a suite; for '$kind' use make ${kind/gpu/gpu-check}" >&2; exit 2; }
	;;&
run)
	if [ ${#files[@]} = 0 ]; then
		for f in overhead-vm overhead-vm-user overhead-host ffi-host host; do
			[ -s "$top/build/run/$f.json" ] && files+=("$top/build/run/$f.json")
		done
	fi
	title="make run: the driver's command paths and the FFI (make run; make bench-report)"
	;;
bench)
	if [ ${#files[@]} = 0 ]; then
		last=$(ls -d "$top"/bench/results/*/ 2>/dev/null | sort | tail -1)
		[ -n "$last" ] && files=("$last"*.json)
	fi
	title="make bench: every suite (make bench; make bench-report KIND=bench)"
	;;
gpu)
	if [ ${#files[@]} = 0 ]; then
		for f in gpu gpu-load; do
			[ -s "$top/build/gpu-check/$f.json" ] && files+=("$top/build/gpu-check/$f.json")
		done
	fi
	title="make gpu-check: the GPU paths on a GPU (make gpu-check; make bench-report KIND=gpu)"
	;;
*)
	jdir=${TIO_RESULTS_JSON:-$top/build/results}
	json=$jdir/$kind.json
	if [ -n "$runit" ]; then
		[ -x "$bin" ] || { echo "bench-report: no $bin (make)" >&2; exit 2; }
		mkdir -p "$jdir"
		commit=${TIO_COMMIT:-$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)}
		# shellcheck disable=SC2086 # TIO_BENCH_ARGS is a list of options
		TIO_COMMIT=$commit "$bin" --suite "$kind" --json "$json" ${TIO_BENCH_ARGS:-}
	fi
	title="tio-bench: $kind"
	if [ ${#files[@]} = 0 ] && [ -s "$json" ]; then
		files=("$json")
		title="tio-bench --suite $kind (scripts/bench-report.sh -r $kind)"
	fi
	;;
esac
if [ ${#files[@]} = 0 ] || [ ! -e "${files[0]}" ]; then
	echo "bench-report: no JSON for '$kind' (make run, make bench, -r SUITE, or name the files)" >&2
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
