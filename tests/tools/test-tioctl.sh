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
echo "1..12"
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

# The library's verbs on the user backend (no driver needed).
export TIO_BACKEND=user
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t "alloc on the user backend" 0 "backend user" "$tioctl" alloc 64K --dtype float32 --shape 4x4096
t "alloc refuses a descriptor that does not fit" 1 "BUF_ALLOC" "$tioctl" alloc 4K --dtype float32 --shape 64x64
t "alloc refuses a malformed dtype (usage, exit 2)" 2 "not a dtype" "$tioctl" alloc 4K --dtype flaot32
hdr='{"b":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},"a":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}}'
{ printf "$(printf '\\x%02x' ${#hdr} 0 0 0 0 0 0 0)"; printf '%s' "$hdr"; head -c 24 /dev/zero; } >"$tmp/ok.safetensors"
t "load-safetensors lists every tensor" 0 "b  *float32 *2x2 offset [0-9]* bytes 16" "$tioctl" load-safetensors "$tmp/ok.safetensors"
head -c 60 "$tmp/ok.safetensors" >"$tmp/short.safetensors"
t "load-safetensors rejects a truncated file" 1 "short.safetensors" "$tioctl" load-safetensors "$tmp/short.safetensors"
# No progress bar unless stderr is a terminal.
t "load-safetensors is quiet on a pipe" 0 "^0$" sh -c "'$tioctl' load-safetensors '$tmp/ok.safetensors' 2>&1 >/dev/null | wc -c"
if command -v script >/dev/null; then
	t "load-safetensors shows progress on a terminal" 0 "100%" script -qec "'$tioctl' load-safetensors '$tmp/ok.safetensors'" /dev/null
else
	n=$((n + 1)); echo "ok $n # SKIP no script(1)"
fi
exit $fail
