#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tioctl on the host, where no driver is loaded: clear errors, exit codes.
top=$(cd "$(dirname "$0")/../.." && pwd)
tioctl=$top/build/tools/tioctl
n=0 fail=0
t() {
	local name=$1 want=$2 pat=$3 out rc
	shift 3
	n=$((n + 1))
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && grep -q -- "$pat" <<<"$out"; then
		echo "ok $n $name"
	else
		sed 's/^/# /' <<<"$out"
		echo "not ok $n $name (exit $rc, want $want)"
		fail=1
	fi
}
echo "TAP version 13"
echo "1..5"
if [ -e /dev/tensorio ]; then
	for i in 1 2; do echo "ok $i # SKIP /dev/tensorio exists here"; done
	n=2
else
	t "info without the driver names the cause" 2 "is tensorio loaded" "$tioctl" info
	t "--json info without the driver exits 2" 2 "modprobe tensorio" "$tioctl" --json info
fi
t "help exits 0" 0 "usage: tioctl" "$tioctl" --help
t "no command exits 2" 2 "usage: tioctl" "$tioctl"
t "unknown option exits 2" 2 "unknown option" "$tioctl" --frobnicate info
exit $fail
