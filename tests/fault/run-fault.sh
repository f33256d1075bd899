#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the debug kernel and fail every allocation point of every allocating
# driver path (tio_fault): run-fault.sh [-k KVER]. Passes when every call
# fails cleanly, the counters return to zero, the module unloads and the
# kernel log and kmemleak stay clean.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver=
while getopts "k:" o; do
	case $o in k) kver=$OPTARG ;; *) exit 2 ;; esac
done
[ -n "$kver" ] || kver=$("$top/tests/vm/build-debug-kernel.sh")
ko=$top/build/kmod/$kver/kmod/tensorio.ko
[ -e "$ko" ] || "$top/scripts/kmod.sh" "$kver" W=1 >/dev/null
make -s -C "$top/tests/fuzz"
make -s -C "$top/tests/fault"
script=$(mktemp /tmp/tio-fault-guest.XXXXXX)
trap 'rm -f "$script"' EXIT
cat >"$script" <<'GUEST'
. ./guest-lib.sh
tio_limits
rc=0
./tio_fault || rc=1
tio_counters_zero fault || rc=1
exit $rc
GUEST
exec "$top/tests/vm/run.sh" -k "$kver" -m "$ko" -b "$top/build/reliability" \
	-s "$script" -t 600
