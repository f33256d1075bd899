#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Stage the soft-RoCE test for the VM (tests/vm/run.sh -b DIR -s
# tests/net/vm-rxe.sh): tio_rxe_test, test_net with UCX's modules,
# iproute2's ip and rdma, perftest's
# ib_write_bw/ib_read_bw, ibv_devinfo, and the rxe verbs provider with its
# /etc/libibverbs.d entry (dlopened, so run.sh's ldd pass cannot find it;
# the guest script puts both where libibverbs looks). run.sh copies the
# shared libraries of every program here. Whatever the host lacks is left
# out; the guest script then skips and says what was missing.
# With ARGS, tio-bench comes too (with libtensorio-net and ucx_perftest)
# and the guest runs "tio-bench ARGS" after the test (the net suite's
# RDMA and verbs rows: docs/benchmarks.md).
# Usage: vm-stage.sh DIR [ARGS...]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: vm-stage.sh DIR [tio-bench ARGS...]}
shift
rm -rf "$out" && mkdir -p "$out/verbs"
t=$top/build/tests/net/tio_rxe_test
[ -x "$t" ] && cp "$t" "$out/"
for p in ip rdma ib_write_bw ib_read_bw ibv_devinfo; do
	f=$(command -v "$p" || PATH=/usr/sbin:/sbin:$PATH command -v "$p" || true)
	[ -n "$f" ] && cp "$f" "$out/"
done
prov=$(ls /usr/lib/*/libibverbs/librxe-rdmav*.so 2>/dev/null | head -1 || true)
if [ -n "$prov" ] && [ -e /etc/libibverbs.d/rxe.driver ]; then
	cp "$prov" "$out/verbs/"
	cp /etc/libibverbs.d/rxe.driver "$out/verbs/"
	dirname "$prov" >"$out/verbs/provider-dir"
fi
# The net layer's tests over verbs (test_net's verbs variant): the test,
# and UCX's dlopened transport modules (their libraries come through
# run.sh's ldd pass on the copy at the top; the guest puts them back).
ucxmod=$(dirname "$(ldconfig -p | grep -o '/[^ ]*/libucp.so.0$' | head -1)" 2>/dev/null)/ucx
# The test not for the bench's runs (ARGS given); the modules for both.
if [ -e "$ucxmod/libuct_ib.so.0" ]; then
	[ $# -eq 0 ] && [ -x "$top/build/tests/lib/test_net" ] &&
		cp "$top/build/tests/lib/test_net" "$out/"
	mkdir -p "$out/ucx"
	cp -L "$ucxmod"/libuct_*.so.0 "$out/ucx/"
	cp -L "$ucxmod/libuct_ib.so.0" "$out/"
	chmod +x "$out/libuct_ib.so.0"
	echo "$ucxmod" >"$out/ucx/module-dir"
fi
if [ $# -gt 0 ]; then
	cp "$top/build/bench/tio-bench" "$out/"
	# The net suite's verbs rows: libtensorio-net (dlopened by tio-bench
	# from its run path: the guest puts it there) and ucx_perftest.
	lib=$top/build/lib/libtensorio-net.so.0
	if [ -e "$lib" ]; then
		mkdir -p "$out/net"
		cp -L "$lib" "$out/net/"
		readelf -d "$top/build/bench/tio-bench" |
			sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]/\1/p' >"$out/net/lib-dir"
	fi
	f=$(command -v ucx_perftest || true)
	[ -n "$f" ] && cp "$f" "$out/"
	echo "$*" >"$out/bench-args"
fi
