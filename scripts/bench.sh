#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: every benchmark suite this machine can run, written to
# bench/results/<UTC date>/:
#   host.{json,md}, plots-host/   host, ffi, memory, io, sync, python on the host
#                                 (ns/op), and overhead (library rows: user
#                                 backend)
#   vm-<kernel>.{json,md}, plots-vm-<kernel>/
#                                 overhead, memory and sync in the VM under
#                                 -icount shift=0 (guest insn/op), once per
#                                 supported kernel (6.12 adds the dma-heap
#                                 and udmabuf peers)
#   vm-rdma-<kernel>.txt          the net suite's RDMA and verbs rows over
#                                 soft-RoCE in the same VM mode
#                                 (tests/net/vm-rxe.sh)
# TIO_BENCH_VM=0 skips the VM; KVER="rel ..." picks kernels; TIO_BENCH_ARGS adds
# tio-bench options (e.g. --fast, --baseline NAME) to every run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bin=build/bench/tio-bench
args=${TIO_BENCH_ARGS:-}
commit=${TIO_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
out=bench/results/$(date -u +%Y-%m-%dT%H%M%SZ)
mkdir -p "$out"
rc=0

echo "# make bench: host suites (ns/op) -> $out"
TIO_COMMIT=$commit "$bin" --suite host,ffi,memory,io,overhead,gpu,sync,python,net --json "$out/host.json" \
	--md "$out/host.md" --plot "$out/plots-host" $args || rc=1

for kver in ${KVER:-$(scripts/kernels.sh)}; do
	[ "${TIO_BENCH_VM:-1}" != 0 ] || break
	scripts/kmod.sh "$kver"
	stage=build/bench/vm
	rm -rf "$stage" && mkdir -p "$stage"
	cp "$bin" "$stage/"
	cat >build/bench/vm-guest.sh <<GUEST
#!/bin/sh
TIO_COMMIT=$commit ./tio-bench --suite overhead,memory,sync --json /tmp/vm.json $args
rc=\$?
echo TIO-BENCH-JSON-BEGIN
cat /tmp/vm.json
echo TIO-BENCH-JSON-END
exit \$rc
GUEST
	echo "# make bench: overhead and memory in the VM ($kver, insn/op)"
	json=$out/vm-$kver.json
	tests/vm/run.sh -i -k "$kver" -m "build/kmod/$kver/kmod/tensorio.ko" \
		-b "$stage" -s build/bench/vm-guest.sh -t 900 |
		awk -v json="$json" '
			/^TIO-BENCH-JSON-BEGIN/ { injson = 1; printf "" > json; next }
			/^TIO-BENCH-JSON-END/ { injson = 0; next }
			injson { print >> json; next }
			{ print; fflush() }' || rc=1
	if [ -s "$json" ]; then
		"$bin" --load "$json" --md "$out/vm-$kver.md" \
			--plot "$out/plots-vm-$kver" >/dev/null || rc=1
	else
		echo "# make bench: no results came back from the $kver VM"
		rc=1
	fi
	# The net suite's RDMA rows over soft-RoCE (tests/net/vm-rxe.sh):
	# RDMA WRITE/READ of tensorio buffers beside ib_write_bw/ib_read_bw,
	# and put/get through libtensorio-net over rc_verbs beside ucx_perftest.
	echo "# make bench: net RDMA and verbs rows over soft-RoCE in the VM ($kver, insn/op)"
	# shellcheck disable=SC2086 # $args are words
	tests/net/vm-stage.sh build/bench/rxe --suite net --case '*rdma*,*verbs*' $args &&
		TIO_VM_OPT_MODULES='loop crc32_generic veth rdma_rxe' \
		tests/vm/run.sh -i -k "$kver" -m "build/kmod/$kver/kmod/tensorio.ko" \
		-b build/bench/rxe -s tests/net/vm-rxe.sh -t 900 |
		tee "$out/vm-rdma-$kver.txt" || rc=1
done
echo "# make bench: results in $out"
ls "$out"
exit $rc
