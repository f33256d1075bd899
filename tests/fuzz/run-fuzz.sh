#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the (debug) kernel and fuzz the driver for a bounded time:
#   run-fuzz.sh [-k KVER] [-d SECONDS] [-s SEED] [-t THREADS]
# KVER defaults to the debug kernel. Passes when the fuzzer's processes
# finish, the driver's counters return to zero, the module unloads and the
# kernel log (KASAN, lockdep, WARN) and kmemleak stay clean (tests/vm/init).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver= dur=50 seed=0 threads=3
while getopts "k:d:s:t:" o; do
	case $o in
	k) kver=$OPTARG ;; d) dur=$OPTARG ;; s) seed=$OPTARG ;; t) threads=$OPTARG ;;
	*) exit 2 ;;
	esac
done
[ -n "$kver" ] || kver=$("$top/tests/vm/build-debug-kernel.sh")
[ "$seed" != 0 ] || seed=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
case $seed in 0x*) ;; *) seed=0x$seed ;; esac
ko=$top/build/kmod/$kver/kmod/tensorio.ko
[ -e "$ko" ] || "$top/scripts/kmod.sh" "$kver" W=1 >/dev/null
make -s -C "$top/tests/fuzz"
script=$(mktemp /tmp/tio-fuzz-guest.XXXXXX)
trap 'rm -f "$script"' EXIT
cat >"$script" <<GUEST
. ./guest-lib.sh
tio_limits
rc=0
./tio_fuzz -s $seed -d $dur -t $threads -p 2 || rc=1
tio_counters_zero fuzz || rc=1
exit \$rc
GUEST
# Boot plus KASAN-slowed teardown: allow three times the fuzzing time.
exec "$top/tests/vm/run.sh" -k "$kver" -m "$ko" -b "$top/build/reliability" \
	-s "$script" -t $((dur * 3 + 240))
