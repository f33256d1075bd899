#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Guest script (tests/vm/run.sh -s, staged by tests/net/vm-stage.sh):
# soft-RoCE devices rxe0 and rxe1 on the two ends of a veth pair (rxe0
# alone, said as a skip, where that setup fails), then tio_rxe_test
# between them, and
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

# Wait until rxe device $1's port is active with IPv4 GID $2 (the port
# turns active and the GID appears from a workqueue).
rxe_ready() {
	i=0
	while [ $i -lt 100 ]; do
		./ibv_devinfo -d "$1" -v 2>/dev/null | grep -q 'PORT_ACTIVE' &&
			./ibv_devinfo -d "$1" -v 2>/dev/null | grep -q "::ffff:$2" && return 0
		i=$((i + 1))
		sleep 0.1
	done
	return 1
}

# The index of device $1's IPv4 (::ffff:a.b.c.d) GID, for UCX.
gid_index() {
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		grep -qs '^0000:0000:0000:0000:0000:ffff:' "$g" && { basename "$g"; return; }
	done
	echo 1
}

# Two devices, rxe0 on veth0 (10.77.0.1) and rxe1 on veth1 (10.77.0.2),
# both in this namespace (rxe's UDP socket lives only in the initial one).
# Each address is local, so a plain lookup would loop a packet through lo;
# rules on the output device (rxe routes with the flow's oif set to its
# netdev) send it out of its own veth end instead, ahead of the local
# table, and accept_local with rp_filter off lets the other end take a
# packet whose source is a local address.
two() {
	for k in all veth0 veth1; do
		echo 1 >/proc/sys/net/ipv4/conf/$k/accept_local || return 1
		echo 0 >/proc/sys/net/ipv4/conf/$k/rp_filter || return 1
	done
	./ip addr add 10.77.0.1/32 dev veth0 &&
		./ip addr add 10.77.0.2/32 dev veth1 &&
		./ip link set veth0 up && ./ip link set veth1 up &&
		./ip route add 10.77.0.2/32 dev veth0 table 100 &&
		./ip route add 10.77.0.1/32 dev veth1 table 101 &&
		./ip rule add pref 100 oif veth0 lookup 100 &&
		./ip rule add pref 101 oif veth1 lookup 101 &&
		./ip rule add pref 1000 lookup local &&
		./ip rule del pref 0 lookup local || return 1
	./rdma link add rxe0 type rxe netdev veth0 || return 1
	./rdma link add rxe1 type rxe netdev veth1 || return 1
	rxe_ready rxe0 10.77.0.1 || return 1
	rxe_ready rxe1 10.77.0.2 || return 1
	return 0
}

if two; then
	export TIO_RDMA_DEV=rxe0 TIO_RDMA_DEV2=rxe1
	echo "# vm: rxe0 over veth0 ($(./rdma link show rxe0/1 2>&1)), rxe1 over veth1 ($(./rdma link show rxe1/1 2>&1))"
else
	# One device that loops back to itself: said, not silent.
	echo "ok 1 two rxe devices on a veth pair # SKIP setup failed ($(./ip rule 2>&1 | tr '\n' ';')), QP A and B on rxe0 alone"
	./rdma link delete rxe1 2>/dev/null
	./rdma link delete rxe0 2>/dev/null
	./ip link delete veth0
	./ip link add veth0 type veth peer name veth1 || skip "no veth pair"
	./ip addr add 10.77.0.10/24 dev veth0
	./ip link set veth1 up
	./ip link set veth0 up
	./rdma link add rxe0 type rxe netdev veth0 || skip "rdma link add rxe0 failed"
	rxe_ready rxe0 10.77.0.10
	export TIO_RDMA_DEV=rxe0
	echo "# vm: rxe0 over veth0 ($(./rdma link show rxe0/1 2>&1))"
fi
rc=0
./tio_rxe_test || rc=1
# The net layer over verbs: test_net's verbs variant alone, rxe0 to rxe0
# (UCX 1.13 checks UD packets' destination GID, which over rxe fails
# every connection: docs/net.md).
if [ -e ucx/module-dir ]; then
	mkdir -p "$(cat ucx/module-dir)"
	cp ucx/libuct_*.so.0 "$(cat ucx/module-dir)/"
fi
if [ -x ./test_net ]; then
	TIO_TEST_NET_ONLY=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1 \
		UCX_IB_GID_INDEX=$(gid_index rxe0) UCX_UD_VERBS_ETH_DGID_CHECK=n \
		./test_net || rc=1
else
	echo "ok 1 net layer over verbs # SKIP test_net not staged (no uct_ib module on the host, or the bench's run)"
fi
# The RDMA traffic went through the pair, not through lo.
st=/sys/class/net
echo "# vm: veth0 tx $(cat $st/veth0/statistics/tx_packets) rx $(cat $st/veth0/statistics/rx_packets) packets, veth1 tx $(cat $st/veth1/statistics/tx_packets) rx $(cat $st/veth1/statistics/rx_packets), lo tx $(cat $st/lo/statistics/tx_packets)"
if [ -e bench-args ]; then
	# The suite runs perftest from where Debian puts it.
	mkdir -p /usr/bin && cp ib_write_bw ib_read_bw /usr/bin/
	[ -x ucx_perftest ] && cp ucx_perftest /usr/bin/
	# libtensorio-net where tio-bench's run path finds it (dlopen).
	[ -e net/lib-dir ] && mkdir -p "$(cat net/lib-dir)" &&
		cp net/libtensorio-net.so.0 "$(cat net/lib-dir)/"
	set -f	# the arguments are words, their globs tio-bench's
	# shellcheck disable=SC2046
	TIO_RDMA_DEV2='' ./tio-bench $(cat bench-args) || rc=1
	set +f
fi
[ -n "${TIO_RDMA_DEV2:-}" ] && { ./rdma link delete rxe1 || rc=1; }
./rdma link delete rxe0 || rc=1
./ip link delete veth0
exit $rc
