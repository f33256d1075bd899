#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tioctl against the loaded driver (run in the VM, next to ./tioctl).
n=0
fail=0
# The signal/wait checks below must see the signaller's error, not a
# deadline: on a loaded TCG host (the debug kernel) the sequence can take
# longer than the default 10 s bound, so lift it for this script.
param=/sys/module/tensorio/parameters/fence_timeout_ms
old_bound=$(cat $param)
echo 60000 >$param
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
json() {	# json FILTER CMD...: CMD succeeds and prints JSON that jq -e FILTER accepts
	filter=$1
	shift
	out=$("$@" 2>/tmp/json.err) || { cat /tmp/json.err; echo "$out"; return 1; }
	echo "$out" | ./jq -e "$filter" >/dev/null || { echo "$out"; echo "jq -e '$filter' fails"; return 1; }
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
echo "1..29"
t "info names the uapi version" has "uapi version   1.4" ./tioctl info
t "info lists the module parameters" has "param max_buf_size" ./tioctl info
t "info --json" has '"uapi_version": "1.4"' ./tioctl --json info
t "stat shows module-wide counters" has "^files " ./tioctl stat
t "stat shows per-command counters" has "^command" ./tioctl stat
t "stat --json" has '"global": {' ./tioctl --json stat
t "info --json shape (jq)" json '.backend == "kernel" and (.uapi_version | type) == "string" and
	(.features | type) == "array" and (.max_buf_size | type) == "number" and
	(.parameters | type) == "object"' ./tioctl --json info
t "info --json after the command" json '.backend == "kernel"' ./tioctl info --json
t "stat --json shape (jq)" json '(.global | type) == "object" and (.files | type) == "array" and
	(.commands | type) == "array" and (.commands[0] | has("command"))' ./tioctl stat --json
t "signal --json shape (jq)" json '(.pid | type) == "number" and (.fd | type) == "number" and
	(.seqno | type) == "number"' ./tioctl signal --json
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
	while ! grep -q "fd" "$out" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
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
t "ls lists the held buffer with its descriptor" has "buffer  alloc size=4096 exported dtype=uint8 offset=0 shape=64x64" ./tioctl ls
t "ls --json shape (jq): the dtype by name, extents as numbers" json \
	'[.[] | select(.type == "buffer" and .exported == true)][0] | .kind == "alloc" and
	 .size == 4096 and .dtype == "uint8" and .shape == [64, 64] and (.handle | type) == "number"' \
	./tioctl --json ls
t "import --json shape (jq)" json '.dtype == "uint8" and .shape == [64, 64] and .kind == "import"' \
	./tioctl import --json "$pid:$fd"
t "import PID:FD from another process keeps the descriptor" has "shape   64x64" ./tioctl import "$pid:$fd"
t "import of a non-dma-buf fd fails (exit 1)" status 1 ./tioctl import "$pid:0"
release

hold /tmp/signal.out ./tioctl signal --error 5 --hold
t "wait times out while the point is unsignalled (exit 1)" status 1 ./tioctl wait "$pid:$fd" --timeout 10
# The waiter must not keep the holder's fifo open.
./tioctl wait --json "$pid:$fd" >/tmp/wait.out 2>&1 3>&- &
waiter=$!
# Release only once the waiter has imported the point (its stream shows).
i=0
while [ "$(./tioctl ls | grep -c ' stream ')" -lt 2 ] && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
release
wait $waiter
wrc=$?
t "wait sees the signaller's error (exit 1, EIO; JSON shape by jq)" sh -c \
	"cat /tmp/wait.out; [ $wrc = 1 ] && ./jq -e '.status == -5 and (.error | type) == \"string\"' /tmp/wait.out"
# A process holding a 1 MiB buffer: stat shows its file's pinned memory.
hold /tmp/pinned.out ./tioctl export 1048576 --hold
t "stat shows a holder's pinned memory (VmPin)" json \
	"[.files[] | select(.pid == $pid and .pinned_vm_bytes >= 1048576)] | length == 1" \
	./tioctl --json stat
release
# A process that loaded a file through the pinned cache (one miss) and
# holds it: stat shows its cache's counters, in JSON and in text.
hdr='{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
{ printf "$(printf '\\%03o' ${#hdr} 0 0 0 0 0 0 0)"; printf '%s' "$hdr"; head -c 16 /dev/zero; } >/tmp/pc.safetensors
rm -f /tmp/hold.fifo
mkfifo /tmp/hold.fifo
./tioctl load-safetensors /tmp/pc.safetensors --hold </tmp/hold.fifo >/tmp/pc.out 2>&1 &
holder=$!
exec 3>/tmp/hold.fifo
i=0
while ! grep -q "tensors" /tmp/pc.out && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
t "stat shows a holder's pinned-cache counters (JSON)" json \
	"[.files[] | select(.pid == $holder and .pinned_cache.misses >= 1 and
	  (.pinned_cache.hits | type) == \"number\" and .pinned_cache.bytes_in_use >= 16 and
	  .pinned_cache.enabled == true)] | length == 1" ./tioctl --json stat
t "... and in text" has "pinned_cache_misses *[1-9]" ./tioctl stat
release
t "--version exits 0" has "tioctl 0.1.0" ./tioctl --version
t "a missing operand exits 2" status 2 ./tioctl import
t "a zero size exits 2" status 2 ./tioctl alloc 0
echo "$old_bound" >$param
exit $fail
