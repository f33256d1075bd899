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
echo "1..17"
t "info names the uapi version" has "uapi version   1.1" ./tioctl info
t "info lists the module parameters" has "param max_buf_size" ./tioctl info
t "info --json" has '"uapi_version": "1.1"' ./tioctl --json info
t "stat shows module-wide counters" has "^files " ./tioctl stat
t "stat shows per-command counters" has "^command" ./tioctl stat
t "stat --json" has '"global": {' ./tioctl --json stat
t "stat --watch 1 --count 2 refreshes twice" sh -c \
	'[ "$(./tioctl --watch 1 --count 2 stat | grep -c "^files ")" = 2 ]'
t "unknown command exits 2" status 2 ./tioctl bogus
t "extra arguments exit 2" status 2 ./tioctl info extra
t "bad --watch exits 2" status 2 ./tioctl --watch 0 stat

# hold OUT CMD...: run a --hold command in the background until "release";
# its standard output goes to OUT.
hold() {
	out=$1
	shift
	rm -f /tmp/hold.fifo
	mkfifo /tmp/hold.fifo
	"$@" </tmp/hold.fifo >"$out" 2>&1 &
	holder=$!
	exec 3>/tmp/hold.fifo
	i=0
	while ! grep -q "fd" "$out" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	pid=$(sed -n 's/^pid *\([0-9]*\).*/\1/p' "$out" | head -1)
	fd=$(sed -n 's/.*fd *\([0-9]*\).*/\1/p' "$out" | head -1)
}
release() {
	exec 3>&-
	wait $holder
}

t "alloc with a descriptor" has "shape   64x64" ./tioctl alloc 4K --dtype uint8 --shape 64x64
t "alloc refuses a descriptor that does not fit (exit 1)" status 1 \
	./tioctl alloc 4K --dtype float32 --shape 64x64

hold /tmp/export.out ./tioctl export 4K --dtype uint8 --shape 64x64 --hold
t "ls lists the held buffer with its descriptor" has "buffer  alloc size=4096 exported dtype=1:8:1 offset=0 shape=64x64" ./tioctl ls
t "import PID:FD from another process keeps the descriptor" has "shape   64x64" ./tioctl import "$pid:$fd"
t "import of a non-dma-buf fd fails (exit 1)" status 1 ./tioctl import "$pid:0"
release

hold /tmp/signal.out ./tioctl signal --error 5 --hold
t "wait times out while the point is unsignalled (exit 1)" status 1 ./tioctl wait "$pid:$fd" --timeout 10
# The waiter must not keep the holder's fifo open.
./tioctl wait "$pid:$fd" >/tmp/wait.out 2>&1 3>&- &
waiter=$!
# Release only once the waiter has imported the point (its stream shows).
i=0
while [ "$(./tioctl ls | grep -c ' stream ')" -lt 2 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
release
wait $waiter
wrc=$?
t "wait sees the signaller's error (exit 1, EIO)" sh -c \
	"cat /tmp/wait.out; [ $wrc = 1 ] && grep -q 'status -5' /tmp/wait.out"
exit $fail
