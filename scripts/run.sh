#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make run: the main job. Builds everything, boots the VM in measurement
# mode (TCG, -icount shift=0: the guest clock counts instructions) with the
# module and runs the "overhead" suite there (guest instructions per op),
# then its library rows on the user backend in the same VM; on the host,
# the library rows on the user backend, the "ffi" suite (ns per op) and
# the "host" suite (a syscall, an ioctl and io_uring NOPs in wall-clock ns:
# what the VM's instruction counts leave out). Each table shows the
# targets beside its rows; the run ends with every target's verdict and
# the line "targets: N met, M missed" (bench/targets.c holds the goals).
# Missed targets are a verdict: the exit status is 0 unless a step failed.
# Results in build/run/: overhead-vm.json, overhead-vm-user.json,
# overhead-host.json, ffi-host.json, host.json, and the picture
# overhead-batch.png (cost per command against batch size, each way into
# the kernel beside the user backend) with the suites' bar charts.
# make bench-report renders them into docs/results/run.md.
# KVER=release picks the kernel (default: the oldest supported series);
# TIO_RUN_ARGS adds tio-bench options to every run (e.g. --fast).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kver=${KVER:-$(scripts/kernels.sh | head -1)}
args=${TIO_RUN_ARGS:-}
commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
bin=build/bench/tio-bench
make -s -j"$(nproc)" all
scripts/kmod.sh "$kver"
out=build/run
stage=$out/bin
rm -rf "$stage" && mkdir -p "$stage"
rm -f "$out"/*.json "$out"/*.png "$out"/*.svg "$out"/*.dat "$out"/*.gp
cp build/tools/tioctl "$bin" "$stage/"
# Each JSON travels back on the console between markers naming its file.
cat >"$out/guest.sh" <<GUEST
#!/bin/sh
rc=0
./tioctl info
TIO_COMMIT=$commit ./tio-bench --suite overhead --json /tmp/overhead-vm.json $args || rc=1
echo
echo "# make run: overhead through libtensorio on the user backend, same VM (insn/op)"
TIO_COMMIT=$commit TIO_BACKEND=user ./tio-bench --suite overhead --case '*/lib,*/lib/*' \
	--json /tmp/overhead-vm-user.json $args || rc=1
for f in overhead-vm overhead-vm-user; do
	echo "TIO-BENCH-JSON-BEGIN \$f"
	cat /tmp/\$f.json
	echo TIO-BENCH-JSON-END
done
exit \$rc
GUEST

echo "# make run: overhead suite in the VM ($kver, -icount shift=0: insn/op)"
rc=0
tests/vm/run.sh -i -k "$kver" -m "build/kmod/$kver/kmod/tensorio.ko" \
	-b "$stage" -s "$out/guest.sh" -t 900 |
	awk -v dir="$out" '
		/^TIO-BENCH-JSON-BEGIN / { json = dir "/" $2 ".json"; printf "" > json; next }
		/^TIO-BENCH-JSON-END/ { json = ""; next }
		json != "" { print >> json; next }
		{ print; fflush() }' || rc=1

echo
echo "# make run: overhead through libtensorio on the host's user backend (ns/op)"
TIO_COMMIT=$commit TIO_BACKEND=user "$bin" --suite overhead \
	--case '*/lib' --json "$out/overhead-host.json" $args || rc=1
echo
echo "# make run: ffi suite on the host (ns/op)"
TIO_COMMIT=$commit "$bin" --suite ffi --json "$out/ffi-host.json" $args || rc=1
echo
echo "# make run: syscall, ioctl and io_uring costs on the host (wall-clock ns/op; $(uptime | sed 's/.*load/load/'))"
TIO_COMMIT=$commit "$bin" --suite host --json "$out/host.json" $args || rc=1

# Every table above, judged once more together; the picture from the JSON.
loads=()
for f in overhead-vm overhead-vm-user overhead-host ffi-host host; do
	if [ -s "$out/$f.json" ]; then
		loads+=(--load "$out/$f.json")
	else
		echo "# make run: no $out/$f.json (its step failed above)"
		rc=1
	fi
done
echo
echo "# make run: results in $out/ (JSON, overhead-batch.png); make bench-report renders them"
"$bin" --targets "${loads[@]}" --plot "$out" || rc=1
exit $rc
