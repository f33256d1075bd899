#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make run: the main job. Builds everything, boots the VM in measurement
# mode (TCG, -icount shift=0: the guest clock counts instructions) with the
# module, runs the "overhead" suite there (guest instructions per op), then
# the "ffi" suite on the host (ns per op), and prints both tables with the
# targets beside them, the overhead suite's library rows on the host's
# user backend, and the "host" suite (a syscall, an ioctl and io_uring NOPs
# in wall-clock ns: what the VM's instruction counts leave out). Results:
# build/run/{overhead-vm,overhead-host,ffi-host,host}.json.
# KVER=release picks the kernel (default: the oldest supported series);
# TIO_RUN_ARGS adds tio-bench options to both runs (e.g. --fast).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kver=${KVER:-$(scripts/kernels.sh | head -1)}
args=${TIO_RUN_ARGS:-}
commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
make -s -j"$(nproc)" all
scripts/kmod.sh "$kver"
out=build/run
stage=$out/bin
rm -rf "$stage" && mkdir -p "$stage"
cp build/tools/tioctl build/bench/tio-bench "$stage/"
cat >"$out/guest.sh" <<GUEST
#!/bin/sh
./tioctl info
TIO_COMMIT=$commit ./tio-bench --suite overhead --json /tmp/overhead.json $args
rc=\$?
echo TIO-BENCH-JSON-BEGIN
cat /tmp/overhead.json
echo TIO-BENCH-JSON-END
exit \$rc
GUEST

echo "# make run: overhead suite in the VM ($kver, -icount shift=0: insn/op)"
rc=0
tests/vm/run.sh -i -k "$kver" -m "build/kmod/$kver/kmod/tensorio.ko" \
	-b "$stage" -s "$out/guest.sh" -t 600 |
	awk -v json="$out/overhead-vm.json" '
		/^TIO-BENCH-JSON-BEGIN/ { injson = 1; printf "" > json; next }
		/^TIO-BENCH-JSON-END/ { injson = 0; next }
		injson { print >> json; next }
		{ print; fflush() }' || rc=1

echo
echo "# make run: overhead through libtensorio on the host's user backend (ns/op)"
TIO_COMMIT=$commit TIO_BACKEND=user build/bench/tio-bench --suite overhead \
	--case '*/lib' --json "$out/overhead-host.json" $args || rc=1
echo
echo "# make run: ffi suite on the host (ns/op)"
TIO_COMMIT=$commit build/bench/tio-bench --suite ffi \
	--json "$out/ffi-host.json" $args || rc=1
echo
echo "# make run: syscall, ioctl and io_uring costs on the host (wall-clock ns/op; $(uptime | sed 's/.*load/load/'))"
TIO_COMMIT=$commit build/bench/tio-bench --suite host \
	--json "$out/host.json" $args || rc=1
echo
echo "# results: $out/overhead-vm.json, $out/overhead-host.json, $out/ffi-host.json, $out/host.json"
exit $rc
