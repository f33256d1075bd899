#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tioctl against the loaded driver (run in the VM, next to ./tioctl).
n=0
fail=0
t() {	# t NAME CMD...: one TAP line
	name=$1
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n $name"
	else
		echo "$out" | sed 's/^/# /'
		echo "not ok $n $name"
		fail=1
	fi
}
has() {	# has PATTERN CMD...: CMD succeeds and prints PATTERN
	pat=$1
	shift
	out=$("$@" 2>&1) || { echo "$out"; return 1; }
	echo "$out" | grep -q -- "$pat" || { echo "$out"; echo "no '$pat'"; return 1; }
}
status() {	# status N CMD...: CMD exits with N
	want=$1
	shift
	"$@" >/dev/null 2>&1
	[ $? = "$want" ]
}
echo "TAP version 13"
echo "1..10"
t "info names the uapi version" has "uapi version   1.0" ./tioctl info
t "info lists the module parameters" has "param max_buf_size" ./tioctl info
t "info --json" has '"uapi_version": "1.0"' ./tioctl --json info
t "stat shows module-wide counters" has "^files " ./tioctl stat
t "stat shows per-command counters" has "^command" ./tioctl stat
t "stat --json" has '"global": {' ./tioctl --json stat
t "stat --watch 1 --count 2 refreshes twice" sh -c \
	'[ "$(./tioctl --watch 1 --count 2 stat | grep -c "^files ")" = 2 ]'
t "unknown command exits 2" status 2 ./tioctl bogus
t "extra arguments exit 2" status 2 ./tioctl info extra
t "bad --watch exits 2" status 2 ./tioctl --watch 0 stat
exit $fail
