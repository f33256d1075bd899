#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Guest script (tests/vm/run.sh -s, staged by tests/net/vm-stage.sh):
# soft-RoCE device rxe0 over a veth, then tio_rxe_test on it, and
# tio-bench where vm-stage.sh was given its arguments. Skips, saying why,
# where a piece is missing.
cd /tio/bin || exit 1
skip() {
	echo "ok 1 soft-RoCE RDMA on tensorio buffers # SKIP $*"
	exit 0
}
[ -x ./tio_rxe_test ] || skip "tio_rxe_test not built (no libibverbs-dev on the host)"
for p in ip rdma; do
	[ -x ./$p ] || skip "no iproute2 $p on the host"
done
[ -e verbs/rxe.driver ] || skip "no rxe verbs provider on the host (ibverbs-providers)"
grep -q '^rdma_rxe ' /proc/modules ||
	skip "kernel $(uname -r) has no rdma_rxe module"
mkdir -p /etc/libibverbs.d "$(cat verbs/provider-dir)"
cp verbs/rxe.driver /etc/libibverbs.d/
cp verbs/librxe-rdmav*.so "$(cat verbs/provider-dir)/"

./ip link set lo up
./ip link add veth0 type veth peer name veth1 || skip "no veth pair"
./ip addr add 10.77.0.1/24 dev veth0
./ip link set veth1 up
./ip link set veth0 up
./rdma link add rxe0 type rxe netdev veth0 || skip "rdma link add rxe0 failed"
# The port turns active and its IPv4 GID appears from a workqueue.
i=0
while [ $i -lt 100 ]; do
	./ibv_devinfo -d rxe0 -v 2>/dev/null | grep -q 'PORT_ACTIVE' &&
		./ibv_devinfo -d rxe0 -v 2>/dev/null | grep -q '::ffff:10.77.0.1' && break
	i=$((i + 1))
	sleep 0.1
done
echo "# vm: rxe0 over veth0 ($(./rdma link show rxe0/1 2>&1))"
rc=0
./tio_rxe_test || rc=1
if [ -e bench-args ]; then
	# The suite runs perftest from where Debian puts it.
	mkdir -p /usr/bin && cp ib_write_bw ib_read_bw /usr/bin/
	set -f	# the arguments are words, their globs tio-bench's
	# shellcheck disable=SC2046
	./tio-bench $(cat bench-args) || rc=1
	set +f
fi
./rdma link delete rxe0 || rc=1
./ip link delete veth0
exit $rc
