#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzz the driver in the debug-kernel VM, guided by its KCOV coverage:
#   run-fuzz.sh [-k KVER | -v VARIANT] [-d SECONDS] [-s SEED] [-j JOBS] [-m] [-u] [-o DIR]
#   -v  the kernel when -k names none: debug (default; KASAN, lockdep,
#       kmemleak) or fuzz (its variant without them, several times faster:
#       tests/vm/build-debug-kernel.sh)
#   -d  seconds of fuzzing after the corpus replay (default 50; 0: replay only)
#   -s  libFuzzer's seed (default: random, printed)
#   -j  fuzzer processes side by side (default 2, the VM's vCPUs)
#   -m  minimise the corpus at the end (libFuzzer -merge=1) into DIR/corpus
#   -u  with -m: replace tests/fuzz/corpus/kmod by the minimised corpus
#       (tests/fuzz/corpus/kmod-crashes, inputs that once failed, stays)
#   -r  run these input files once each, every result traced (reproduce a
#       crash input), instead of fuzzing
#   -o  where results go (default build/fuzz/run): pcs, the line coverage
#       report (kmod-uncovered.txt), crash inputs, the guest's libFuzzer log
# TIO_FUZZ_FLAGS: more libFuzzer flags for the fuzzers.
# The module is built with KCOV instrumentation and debug info
# (build/kmod-kcov). The corpus in tests/fuzz/corpus/kmod and the inputs
# in tests/fuzz/corpus/kmod-crashes are replayed first, every input once.
# Passes when no oracle fired, the driver's counters return to zero, the
# module unloads and the kernel log and kmemleak stay clean (tests/vm/init).
# Prints the kmod line coverage and the inputs per second.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver= variant=debug dur=50 seed=0 merge=0 update=0 jobs=2 replay= out=$top/build/fuzz/run
while getopts "k:v:d:s:j:r:muo:" o; do
	case $o in
	k) kver=$OPTARG ;; v) variant=$OPTARG ;; d) dur=$OPTARG ;; s) seed=$OPTARG ;; j) jobs=$OPTARG ;; m) merge=1 ;;
	u) update=1 ;; o) out=$OPTARG ;; r) replay="$replay $OPTARG" ;; *) exit 2 ;;
	esac
done
[ -n "$kver" ] || kver=$("$top/tests/vm/build-debug-kernel.sh" "$variant")
[ "$seed" != 0 ] || seed=$(( $(od -An -N4 -tu4 /dev/urandom) % 2147483647 + 1 ))
kdir=${TIO_FUZZ_KMOD:-$top/build/kmod-kcov}
ko=$kdir/$kver/kmod/tensorio.ko
TIO_KMOD_OUT=$kdir "$top/scripts/kmod.sh" "$kver" KCOV_INSTRUMENT=y KCFLAGS=-g >/dev/null
make -s -C "$top/lib" >/dev/null
make -s -C "$top/tests/fuzz"

guest=$top/build/fuzz/guest
rm -rf "$guest"
mkdir -p "$guest/replay"
# shellcheck disable=SC2086
[ -z "$replay" ] || cp $replay "$guest/replay/"
rm -rf "$out"
mkdir -p "$guest/seed" "$out"
cp "$top/build/fuzz/tio_fuzz" "$top/tests/fuzz/guest-lib.sh" "$guest/"
"$top/tests/fuzz/kcov-lines.py" sections "$ko" >"$guest/kcov-sections"
cp "$top"/tests/fuzz/corpus/kmod/* "$top"/tests/fuzz/corpus/kmod-crashes/* \
	"$guest/seed/" 2>/dev/null || true
nseed=$(find "$guest/seed" -type f | wc -l)
if [ -n "$replay" ]; then
	cat >"$guest/run.sh" <<GUEST
. ./guest-lib.sh
tio_limits
echo 10 >/sys/module/tensorio/parameters/fence_timeout_ms
echo \$((1 << 20)) >/sys/module/tensorio/parameters/max_buf_size
TIO_FUZZ_TRACE=1 TIO_FUZZ_SECTIONS=./kcov-sections TIO_FUZZ_CHECK_EVERY=1 ./tio_fuzz ./replay/*
rc=\$?
tio_counters_zero replay || rc=1
exit \$rc
GUEST
	exec "$top/tests/vm/run.sh" -k "$kver" -m "$ko" -b "$guest" -s "$guest/run.sh" -t 600
fi
cat >"$guest/run.sh" <<GUEST
. ./guest-lib.sh
tio_limits
p=/sys/module/tensorio/parameters
# Short fence bounds: the fence oracle waits for visible points to expire.
echo 10 >\$p/fence_timeout_ms
echo \$((1 << 20)) >\$p/max_buf_size
export TIO_FUZZ_SECTIONS=./kcov-sections TIO_FUZZ_PROFILE=1
[ $jobs -gt 1 ] && export TIO_FUZZ_SHARED=1
mkdir -p /tmp/corpus /tmp/crash /tmp/min
rc=0
# One fuzzer per vCPU, sharing the corpus directory (each reloads the
# other's finds).
j=0
while [ \$j -lt $jobs ]; do
	TIO_FUZZ_COVER=/tmp/pcs.\$j ./tio_fuzz -seed=\$(($seed + \$j)) -max_total_time=$dur \\
		-runs=$([ "$dur" = 0 ] && echo 0 || echo -1) -max_len=512 -timeout=30 \\
		-rss_limit_mb=0 -malloc_limit_mb=0 -entropic_scale_per_exec_time=1 -reload=30 \\
		-print_final_stats=1 ${TIO_FUZZ_FLAGS:-} \\
		-artifact_prefix=/tmp/crash/ /tmp/corpus ./seed >/tmp/fuzz.\$j.log 2>&1 &
	eval pid\$j=\$!
	j=\$((j + 1))
done
j=0
while [ \$j -lt $jobs ]; do
	if ! eval wait \\\$pid\$j; then
		rc=1
		tail -60 /tmp/fuzz.\$j.log | sed "s/^/# job \$j: /"
	fi
	grep -E '^#[0-9]+ +INITED|^# fuzz:|^stat::' /tmp/fuzz.\$j.log |
		sed "s/^# fuzz: /# fuzz: job \$j: /; t; s/^/# fuzz: job \$j: /"
	j=\$((j + 1))
done
cat /tmp/fuzz.*.log | awk '/^# fuzz: [0-9]+ inputs in/ { n += \$3; s = \$6 > s ? \$6 : s }
	END { if (s) printf "# fuzz: %d inputs in %d s, %.0f/s ($jobs fuzzers, 2 vCPUs, TCG)\\n", n, s, n / s }'
if [ \$rc = 0 ]; then
	echo "ok - fuzz: corpus of $nseed inputs replayed, then fuzzed ${dur}s; no oracle fired (seed $seed)"
else
	echo "not ok - fuzz: an oracle fired or the fuzzer failed (seed $seed)"
fi
if [ $merge = 1 ] && [ \$rc = 0 ]; then
	timeout $((dur + 60)) ./tio_fuzz -merge=1 -max_len=1024 -timeout=30 -rss_limit_mb=0 /tmp/min ./seed /tmp/corpus \\
		>/tmp/merge.log 2>&1 || { tail -40 /tmp/merge.log | sed 's/^/# merge: /'; rc=1; }
	grep -E '^MERGE-OUTER: [0-9]+ new files' /tmp/merge.log | sed 's/^/# /'
fi
dump() {
	echo "TIO-FUZZ-\$1-BEGIN"
	tar -C "\$2" -czf - . | base64
	echo "TIO-FUZZ-\$1-END"
}
mkdir -p /tmp/pcsdir && cat /tmp/pcs.* 2>/dev/null | sort -u >/tmp/pcsdir/pcs
dump PCS /tmp/pcsdir
[ -n "\$(ls /tmp/crash)" ] && dump CRASH /tmp/crash
[ $merge = 1 ] && dump CORPUS /tmp/min
tio_counters_zero fuzz || rc=1
exit \$rc
GUEST

log=$out/console.log
# Boot, replay, fuzzing, the merge (bounded by the fuzzing's time), and
# KASAN-slowed teardown.
set +e
"$top/tests/vm/run.sh" -k "$kver" -m "$ko" -b "$guest" -s "$guest/run.sh" \
	-t $((dur * (2 + merge) + nseed / 50 + 300 + merge * 60)) | tee "$log" |
	sed -u '/^TIO-FUZZ-.*-BEGIN/,/^TIO-FUZZ-.*-END/d'
rc=${PIPESTATUS[0]}
set -e

# The guest's tarballs: TIO-FUZZ-NAME-BEGIN, base64, TIO-FUZZ-NAME-END.
undump() {
	mkdir -p "$2"
	sed -n "/^TIO-FUZZ-$1-BEGIN/,/^TIO-FUZZ-$1-END/p" "$log" | sed '1d;$d' |
		tr -d '\r' | base64 -d 2>/dev/null | tar -C "$2" -xzf - 2>/dev/null
}
undump PCS "$out" || true
undump CRASH "$out/crash" || true
[ -n "$(ls "$out/crash" 2>/dev/null)" ] && echo "# fuzz: crash inputs in $out/crash"
if [ -s "$out/pcs" ]; then
	"$top/tests/fuzz/kcov-lines.py" report "$ko" "$out/pcs" \
		--uncovered "$out/kmod-uncovered.txt"
	echo "# fuzz: lines not reached: $out/kmod-uncovered.txt"
fi
if [ "$merge" = 1 ]; then
	undump CORPUS "$out/corpus" || true
	echo "# fuzz: minimised corpus: $(find "$out/corpus" -type f | wc -l) inputs in $out/corpus"
	if [ "$update" = 1 ] && [ "$rc" = 0 ] && [ -n "$(ls "$out/corpus")" ]; then
		rm -rf "$top/tests/fuzz/corpus/kmod"
		cp -r "$out/corpus" "$top/tests/fuzz/corpus/kmod"
		echo "# fuzz: tests/fuzz/corpus/kmod updated"
	fi
fi
exit $rc
