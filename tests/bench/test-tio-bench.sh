#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tio-bench's command line: baselines on a fresh tree, paths checked before
# anything runs, faults that name the path, the JSON header (--fast, its
# sample count, the reference loop), a --fast comparison that judges and
# scales by the reference loop, the cmd suite's recipes, plots, the
# targets' verdicts and scripts/bench-report.sh on saved runs
# (fixtures/run/). TAP output. (No timing is asserted: the comparison
# logic itself is tested with synthetic samples in test_bench_stats.c.)
top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/build/bench/tio-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TIO_BENCH_BASELINES=$tmp/fresh/baselines
one=(--fast --suite ffi --case breakdown/c-indirect-call)
. "$top/tests/include/tap.sh"
echo "TAP version 13"
t "--save-baseline creates its directory on a fresh tree" 0 "baseline saved: $TIO_BENCH_BASELINES/b1.json" \
	"$bench" "${one[@]}" --save-baseline b1
t "the JSON header records --fast, the repeats and sample length it took; rows their sample count (jq)" 0 true \
	jq -e '.header.fast == true and .header.repeats == 10 and .header.procs == 1 and .header.min_samples == 5 and
	       .header.sample_target == 100000 and .results[0].n == 10 and
	       (.results[0].samples | length) == 10' "$TIO_BENCH_BASELINES/b1.json"
t "the JSON header records the reference loop: 3 samples before the case and 3 after (jq)" 0 true \
	jq -e '.header.reference.iters == 262144 and .header.reference.n == 6 and
	       (.header.reference.samples | length) == 6 and .header.reference.median > 0' \
	"$TIO_BENCH_BASELINES/b1.json"
t "--repeat N is recorded as N; no p99 in the JSON from fewer than 100 samples (jq)" 0 true \
	bash -c "'$bench' ${one[*]} --repeat 5 --json '$tmp/r5.json' >/dev/null &&
		 jq -e '.header.repeats == 5 and .results[0].n == 5 and .results[0].p99 == null' '$tmp/r5.json'"
t "a --fast run against itself compares clean, and is judged (a 95% interval)" 0 \
	"ok   ffi/breakdown/c-indirect-call: .* 95% CI" \
	"$bench" --load "$TIO_BENCH_BASELINES/b1.json" --baseline b1
t "... at scale 1 (the same reference loop)" 0 "scale 1.000" \
	"$bench" --load "$TIO_BENCH_BASELINES/b1.json" --baseline b1
t "a second --fast run is judged and shows the reference loop's scale (verdict not asserted)" 0 "judged" \
	bash -c "out=\$('$bench' ${one[*]} --baseline b1); grep -q 'reference loop (262144 multiply-adds.*scale [0-9.]*' <<<\"\$out\" &&
		 grep -q 'c-indirect-call: .* 95% CI' <<<\"\$out\" && echo judged"
t "--repeat 3: rows still reported, as too few to tell from noise" 0 \
	"c-indirect-call: .*10 and 3 samples: too few to tell from noise" "$bench" "${one[@]}" --repeat 3 --baseline b1
# Several processes per case: the harness re-executes itself per process.
t "--procs 2: the case runs in 2 processes of 5 samples; the JSON keeps each process's median (jq)" 0 true \
	bash -c "'$bench' ${one[*]} --repeat 5 --procs 2 --json '$tmp/p2.json' >/dev/null &&
		 jq -e '.format == \"tio-bench/2\" and .header.procs == 2 and .header.repeats == 5 and
			.results[0].n == 10 and (.results[0].process_medians | length) == 2 and
			(.results[0].process_medians | all(. > 0)) and .header.reference.n == 9' '$tmp/p2.json'"
t "--procs 2 runs in rounds: process 1 of every case, then process 2; rows after the last" 0 \
	"^# round 1 of 2: .*# round 2 of 2: process 2 of every case .rows as each case ends. call/int-1 .* call/int-2 " \
	bash -c "'$bench' --fast --suite ffi --case 'call/int-*' --repeat 2 --procs 2 | grep -E '^# round|^call' | tr '\n' ' '"
t "--procs 2 against itself: judged on the process medians" 0 \
	"ok   ffi/breakdown/c-indirect-call: .* over 2 and 2 processes, 95% CI .*process medians" \
	"$bench" --load "$tmp/p2.json" --baseline "$tmp/p2.json"
t "--procs 2 against a one-process baseline: judged within a process, and says so" 0 \
	"1 cases judged on their samples within one process" \
	"$bench" --load "$tmp/p2.json" --baseline b1
t "--procs 2 where no result file can be made: the case fails, naming the directory" 1 \
	"c-indirect-call .*FAILED: a result file for its process in $tmp/none: No such file" \
	env TMPDIR="$tmp/none" "$bench" "${one[@]}" --procs 2
t "--clock wall: plain wall-clock figures, said in the header" 0 "^# mode:     wall clock$" \
	"$bench" "${one[@]}" --repeat 1 --clock wall
if [ -r /proc/thread-self/schedstat ]; then
	t "--clock run (the default here): run-queue wait taken off, said in the header and the JSON" 0 true \
		bash -c "'$bench' ${one[*]} --repeat 1 --json '$tmp/clk.json' >'$tmp/clk.txt' &&
			 grep -q '^# mode:     wall clock less run-queue wait$' '$tmp/clk.txt' &&
			 jq -e '.header.mode == \"wall clock less run-queue wait\"' '$tmp/clk.json'"
else
	n=$((n + 1)); echo "ok $n # SKIP no /proc/thread-self/schedstat"
fi
t "--case takes comma-separated globs: the cases of each" 0 "^ffi/call/int-1 ffi/breakdown/c-indirect-call $" \
	bash -c "'$bench' --list --suite ffi --case 'breakdown/c-indirect-call,call/int-1' | awk '{ printf \"%s \", \$1 }'"
t "--clock other is refused" 2 "usage: tio-bench" "$bench" "${one[@]}" --clock cpu
t "--procs 0 is refused" 2 "--procs 0: 1 to 64" "$bench" "${one[@]}" --procs 0
t "--worker alone is refused" 2 "--worker needs --suite, --case and --json" "$bench" --worker
t "a full run (no --fast) records 3 processes per case by default (jq)" 0 true \
	bash -c "'$bench' --suite ffi --case breakdown/c-indirect-call --repeat 2 --json '$tmp/full.json' >/dev/null &&
		 jq -e '.header.procs == 3 and (.results[0].process_medians | length) == 3' '$tmp/full.json'"
t "a missing baseline names the path and the fault, before running" 2 \
	"baseline nope: $TIO_BENCH_BASELINES/nope.json: no such file" "$bench" "${one[@]}" --baseline nope
echo '{"results": ' >"$TIO_BENCH_BASELINES/bad.json"
t "a malformed baseline names the path and says not JSON" 2 "bad.json: not JSON" \
	"$bench" "${one[@]}" --baseline bad
echo '{"x": 1}' >"$TIO_BENCH_BASELINES/other.json"
t "a JSON file that is no result says so" 2 "other.json: not a tio-bench result" \
	"$bench" "${one[@]}" --baseline other
t "nothing ran before a path fault" 0 "refused before running" bash -c \
	"out=\$('$bench' ${one[*]} --baseline nope 2>&1); [ \$? = 2 ] && ! grep -q '== suite' <<<\"\$out\" &&
	 echo 'refused before running'"
t "an unwritable --json directory is refused before running" 2 "--json $tmp/none/x.json: cannot write in $tmp/none" \
	"$bench" "${one[@]}" --json "$tmp/none/x.json"
t "rows show the sample count and no p99 from 10 samples" 0 "c-indirect-call .* 10          - " \
	"$bench" "${one[@]}"
# The python suite's load rows write weights to a temporary directory:
# gone when tio-bench exits (Python is never finalised there).
mkdir "$tmp/pytmp"
pyout=$(TMPDIR=$tmp/pytmp "$bench" --fast --tap --suite python --case load/numpy-fromfile 2>&1)
if grep -q '^ok 1 - python/load/numpy-fromfile$' <<<"$pyout"; then
	t "the python suite leaves no temporary directory behind" 0 "^empty$" bash -c \
		"if ls -A '$tmp/pytmp' | grep -q .; then ls -A '$tmp/pytmp'; else echo empty; fi"
else
	n=$((n + 1)); echo "ok $n # SKIP python suite not runnable here (make python)"
fi
# Suite cmd has one row per command of the library's table, each with a recipe.
t "suite cmd: a row for every command tioctl lists" 0 "^same$" bash -c \
	"a=\$('$top/build/tools/tioctl' commands --json | jq -r '.[].name' | sort)
	 b=\$('$bench' --list --suite cmd | awk '{ sub(/^cmd\\//, \"\", \$1); print \$1 }' | sort)
	 [ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ] && echo same || diff <(echo \"\$a\") <(echo \"\$b\")"
t "suite cmd: no command lacks a recipe" 0 "^none$" bash -c \
	"'$bench' --list --suite cmd | grep 'no recipe' || echo none"
t "suite cmd runs on the user backend, every row measured or skipped with its reason" 0 "^ok$" bash -c \
	"out=\$(TIO_BACKEND=user '$bench' --fast --tap --suite cmd 2>&1) && ! grep -q '^not ok' <<<\"\$out\" && echo ok"
# Plots: one per question, GB/s for bytes moved, the target drawn.
cat >"$tmp/io.json" <<'JSON'
{"format": "tio-bench/1", "header": {"unit": "ns", "mode": "wall clock", "date": "d"},
 "results": [
  {"suite": "io", "case": "fio-io_uring", "status": "ok", "unit": "ns", "median": 1000000,
   "min": 990000, "max": 1010000, "bytes_per_op": 4194304, "ref": "fio-io_uring", "ratio": 1, "samples": [1000000]},
  {"suite": "io", "case": "read-pinned", "status": "ok", "unit": "ns", "median": 1100000,
   "min": 1000000, "max": 1200000, "bytes_per_op": 4194304, "ref": "fio-io_uring",
   "ratio": 1.1, "target_ratio": 1.11, "samples": [1100000]},
  {"suite": "io", "case": "safetensors/small", "status": "ok", "unit": "ns", "median": 5000000,
   "min": 5000000, "max": 5000000, "bytes_per_op": 67108864, "samples": [5000000]}]}
JSON
if command -v gnuplot >/dev/null; then
	t "--plot: the page-cache reads and the safetensors load are two plots" 0 "io-safetensors.svg" \
		bash -c "'$bench' --load '$tmp/io.json' --plot '$tmp/plots' >/dev/null && ls '$tmp/plots' && test -s '$tmp/plots/io.svg'"
	t "--plot: bytes moved are plotted in GB/s, fio as a peer, read-pinned's target drawn" 0 \
		'"read-pinned" 3.813 3.49525 4.1943 3.77865 0' cat "$tmp/plots/io.dat"
	t "--plot: fio is drawn as a peer" 0 '"fio-io_uring" 4.1943 .* NaN 1$' cat "$tmp/plots/io.dat"
	t "--plot: the GB/s axis says so" 0 "set ylabel 'GB/s" cat "$tmp/plots/io.gp"
else
	for i in 1 2 3 4; do n=$((n + 1)); echo "ok $n # SKIP no gnuplot"; done
fi
# Targets: one table (bench/targets.c), judged in every run, never a failure.
fix=$top/tests/bench/fixtures/run
t "--list-targets: every target names a case and a reference row that a suite registers" 0 \
	"^[0-9][0-9]* targets$" "$bench" --list-targets
t "a run records its row's target from the table in the JSON, judged (jq)" 0 true \
	bash -c "'$bench' --fast --suite ffi --case lookup/global --repeat 2 --json '$tmp/t.json' >/dev/null &&
		 jq -e '.results[0].target.goal == \"<= 10 ns\" and .results[0].target.against == null and
			(.results[0].target.verdict == \"met\" or .results[0].target.verdict == \"MISSED\") and
			.results[0].target.limit == 10' '$tmp/t.json'"
t "a run ends with its targets' verdict line" 0 "^targets: [01] met, [01] missed$" \
	bash -c "'$bench' --fast --suite ffi --case lookup/global --repeat 2 | tail -1"
t "a row whose reference has not run yet is judged at the end" 0 "judged at the end.*targets: 0 met, 0 missed" \
	bash -c "'$bench' --fast --suite ffi --case call/noop-0 --repeat 2 | tr '\n' ' '"
t "--targets --load of several runs: each run's targets, then the total; missed targets exit 0" 0 \
	"== targets of overhead-vm: .*overhead/info/ring/b64  *60.9 insn  *limit  *72.2  *met .*ffi/lookup/global  *16.5 ns  *limit  *10.0  *MISSED .*(1 more not judged: the row it is relative to did not run) targets: 6 met, 2 missed $" \
	bash -c "'$bench' --targets --load '$fix/overhead-vm.json' --load '$fix/overhead-vm-user.json' \
		 --load '$fix/ffi-host.json' | tr '\n' ' '"
t "--targets needs --load" 2 "usage: tio-bench" "$bench" --targets
t "--json takes one --load" 2 "take one --load" \
	"$bench" --load "$fix/ffi-host.json" --load "$fix/overhead-vm.json" --json "$tmp/x.json"
"$top/scripts/bench-report.sh" -o "$tmp/results" run "$fix/overhead-vm.json" \
	"$fix/overhead-vm-user.json" "$fix/ffi-host.json" >"$tmp/report.out" 2>&1
md=$tmp/results/run.md
t "bench-report renders saved runs into KIND.md" 0 "^bench-report: $md$" cat "$tmp/report.out"
t "... with each run's CPU model, cores, kernel, backend, commit and date from its JSON" 0 \
	"^| overhead-vm | AMD EPYC 7B13 | 1 | Linux 6.1.0-56-amd64 x86_64 | kernel (/dev/tensorio) | insn/op | 1261514 | 2026-11-27T10:00:00Z |$" \
	cat "$md"
t "... the verdict over every run" 0 "^targets: 6 met, 2 missed$" cat "$md"
t "... a target met, with its limit" 0 \
	"^| overhead-vm | overhead/info/ring/b64 | 60.9 insn | <= 0.10x info/ioctl | 72.2 | met | " cat "$md"
t "... a target missed" 0 "^| ffi-host | ffi/lookup/global | 16.5 ns | <= 10 ns | 10.0 | MISSED | " cat "$md"
t "... an offset goal: IncRef+DecRef against two atomics + 2 ns" 0 \
	"^| ffi-host | ffi/object/incref-decref | 12.4 ns | <= breakdown/atomic-inc-dec + 2 ns | 10.8 | MISSED | " cat "$md"
t "... a target whose reference did not run, not counted" 0 "^1 target is not judged: " cat "$md"
t "... and every table, a skipped row with its reason" 0 \
	"^| peer/tvm-ffi/call-noop-0 | skipped: TIO_BENCH_TVM_FFI does not name a libtvm_ffi.so |" cat "$md"
sed -e 's/"cpu": "AMD EPYC 7B13", "cpus": 2, //' -e 's/"cpu": "AMD EPYC 7B13",//; s/"cpus": 2,//' \
	"$fix/ffi-host.json" >"$tmp/old.json"
t "a JSON without the cpu fields: the CPU and its count come from the machine line" 0 \
	"^| old | AMD EPYC 7B13 | 2 | " bash -c \
	"'$top/scripts/bench-report.sh' -o '$tmp/results' old '$tmp/old.json' >/dev/null && cat '$tmp/results/old.md'"
t "bench-report without JSON says so" 2 "no JSON for 'nothing'" "$top/scripts/bench-report.sh" -o "$tmp/r" nothing
if command -v gnuplot >/dev/null; then
	t "--plot with several runs: the overhead picture, kernel paths against the user backend" 0 \
		"overhead-batch.png" bash -c "'$bench' --load '$fix/overhead-vm.json' --load '$fix/overhead-vm-user.json' \
			--targets --plot '$tmp/batch' >/dev/null && ls '$tmp/batch' && test -s '$tmp/batch/overhead-batch.png'"
	t "... the ring's line over batch sizes 1, 16, 64, 256" 0 "^# info ring 1 931.2 16 102.4 64 60.9 256 50.5  *$" \
		bash -c "sed -n '/^# info ring\$/,/^\$/p' '$tmp/batch/overhead-batch.dat' | tr '\n' ' '"
	t "... the user backend's line, from the user-backend run" 0 "^# info lib (user backend) 1 160 256 160  *$" \
		bash -c "sed -n '/^# info lib (user backend)\$/,/^\$/p' '$tmp/batch/overhead-batch.dat' | tr '\n' ' '"
else
	for i in 1 2 3; do n=$((n + 1)); echo "ok $n # SKIP no gnuplot"; done
fi
echo "1..$n"
exit $fail
