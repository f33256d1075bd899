#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the debug kernel and run tio_stress for a bounded time:
#   run-stress.sh [-k KVER] [-d SECONDS] [-t THREADS]
# Passes when the survivors keep working, the counters return to zero, the
# module unloads and the kernel log and kmemleak stay clean.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver= dur=20 threads=4
while getopts "k:d:t:" o; do
	case $o in k) kver=$OPTARG ;; d) dur=$OPTARG ;; t) threads=$OPTARG ;; *) exit 2 ;; esac
done
[ -n "$kver" ] || kver=$("$top/tests/vm/build-debug-kernel.sh")
ko=$top/build/kmod/$kver/kmod/tensorio.ko
[ -e "$ko" ] || "$top/scripts/kmod.sh" "$kver" W=1 >/dev/null
make -s -C "$top/tests/fuzz"
make -s -C "$top/tests/stress"
script=$(mktemp /tmp/tio-stress-guest.XXXXXX)
trap 'rm -f "$script"' EXIT
cat >"$script" <<GUEST
. ./guest-lib.sh
tio_limits
rc=0
./tio_stress -d $dur -t $threads || rc=1
tio_counters_zero stress || rc=1
exit \$rc
GUEST
exec "$top/tests/vm/run.sh" -k "$kver" -m "$ko" -b "$top/build/reliability" \
	-s "$script" -t $((dur * 3 + 240))
