#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tioctl on the host, where no driver is loaded: every exit code of
# tioctl(8) with its message, and the JSON of the user backend's commands
# parsed by jq. (tests/kselftest/tio_tioctl_test.sh covers the driver's.)
top=$(cd "$(dirname "$0")/../.." && pwd)
tioctl=$top/build/tools/tioctl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/include/tap.sh"
# j NAME FILTER CMD...: CMD exits 0 and its stdout is JSON that jq -e FILTER accepts
j() {
	local name=$1 filter=$2 out rc
	shift 2
	n=$((n + 1))
	out=$("$@" 2>"$tmp/err")
	rc=$?
	if [ "$rc" = 0 ] && jq -e "$filter" >/dev/null 2>&1 <<<"$out"; then
		echo "ok $n $name"
	else
		sed 's/^/# /' <<<"$out" "$tmp/err"
		echo "not ok $n $name (exit $rc; jq -e '$filter')"
		fail=1
	fi
}
# quiet NAME CMD...: CMD exits 2 and writes nothing to stdout
quiet() {
	local name=$1 out rc
	shift
	n=$((n + 1))
	out=$("$@" 2>/dev/null)
	rc=$?
	if [ "$rc" = 2 ] && [ -z "$out" ]; then
		echo "ok $n $name"
	else
		sed 's/^/# /' <<<"$out"
		echo "not ok $n $name (exit $rc, stdout above)"
		fail=1
	fi
}
echo "TAP version 13"

if [ -e /dev/tensorio ]; then
	for i in 1 2 3 4 5; do echo "ok $i # SKIP /dev/tensorio exists here"; done
	n=5
else
	t "info without the driver names the cause (exit 2)" 2 "is tensorio loaded" "$tioctl" info
	t "--json info without the driver exits 2" 2 "modprobe tensorio" "$tioctl" --json info
	quiet "--json info without the driver prints nothing" "$tioctl" --json info
	quiet "--json stat without the driver prints nothing and exits 2" "$tioctl" --json stat
	quiet "ls --json without the driver prints nothing and exits 2" "$tioctl" ls --json
fi

# Exit 0 and 2 for the command line itself.
t "--help exits 0" 0 "usage: tioctl" "$tioctl" --help
t "--help and usage lines end without a trailing blank" 0 "^0$" sh -c \
	"{ '$tioctl' --help; '$tioctl' info extra; } 2>&1 | grep -c ' \$'; true"
t "--version exits 0 and names the versions" 0 "^tioctl [0-9.]* (libtensorio [0-9.]*, uapi [0-9.]*)" "$tioctl" --version
t "no command exits 2" 2 "usage: tioctl" "$tioctl"
t "unknown command exits 2" 2 "unknown command 'bogus'" "$tioctl" bogus
t "unknown option exits 2" 2 "unrecognized option" "$tioctl" --frobnicate info
t "unknown command option exits 2" 2 "unrecognized option" "$tioctl" alloc 4K --frobnicate
t "missing operand exits 2" 2 "missing operand" "$tioctl" alloc
t "extra operand exits 2" 2 "unexpected 'extra'" "$tioctl" alloc 4K extra
t "option without its value exits 2" 2 "requires an argument" "$tioctl" alloc 4K --dtype
t "--watch 0 exits 2" 2 "positive number" "$tioctl" --watch 0 stat
t "stat --count x exits 2" 2 "positive number" "$tioctl" stat --count x

# The library's commands on the user backend (no driver needed).
export TIO_BACKEND=user
t "alloc 0 exits 2 (usage)" 2 "at least 1 byte" "$tioctl" alloc 0
t "alloc -5 exits 2 (usage) and says the size is bad" 2 "bad size '-5': a size is a positive number" "$tioctl" alloc -5
t "export -1M too" 2 "bad size '-1M'" "$tioctl" export -1M
t "alloc of a malformed size exits 2" 2 "bad size" "$tioctl" alloc 12Q
t "alloc of a malformed dtype exits 2" 2 "not a dtype" "$tioctl" alloc 4K --dtype flaot32
t "--shape without --dtype exits 2" 2 "needs --dtype" "$tioctl" alloc 4K --shape 2x2
t "a malformed shape exits 2" 2 "bad --shape" "$tioctl" alloc 4K --dtype int8 --shape 2xx
t "alloc on the user backend (exit 0, dtype by name)" 0 "dtype   float32" \
	"$tioctl" alloc 64K --dtype float32 --shape 4x4096
t "a descriptor that does not fit exits 1 (the library refused)" 1 "BUF_ALLOC" \
	"$tioctl" alloc 4K --dtype float32 --shape 64x64
j "alloc --json shape (jq)" '.backend == "user" and .kind == "alloc" and .size == 65536 and
	.dtype == "float32" and .shape == [4, 4096] and (.handle | type) == "number" and
	(.pid | type) == "number"' "$tioctl" --json alloc 64K --dtype float32 --shape 4x4096
j "--json after the command, lanes in the dtype name" '.dtype == "int8x4" and .shape == [16]' \
	"$tioctl" alloc 64 --dtype int8x4 --shape 16 --json
j "--json between the options" '.dtype == "bfloat16"' "$tioctl" alloc 4K --json --dtype bfloat16

# What the user backend lacks: exit 2, naming it.
if [ -w /dev/udmabuf ]; then
	echo "ok $((n + 1)) # SKIP /dev/udmabuf exists here"
	n=$((n + 1))
else
	t "export on the user backend names /dev/udmabuf (exit 2)" 2 "/dev/udmabuf" "$tioctl" export 4K
fi
t "signal on the user backend names sync_file (exit 2)" 2 "no sync_file" "$tioctl" signal
t "wait on the user backend names sync_file (exit 2)" 2 "no sync_file" "$tioctl" wait 0
t "a malformed fd exits 2" 2 "bad fd" "$tioctl" import 1:x
t "another process's fd that cannot be had exits 1" 1 "pidfd_open" "$tioctl" import 999999999:3
quiet "TIO_BACKEND=kernel without the driver exits 2 (no usable backend)" \
	env TIO_BACKEND=kernel "$tioctl" --json alloc 4K
t "... and says why" 2 "TIO_BACKEND=kernel forced" env TIO_BACKEND=kernel "$tioctl" alloc 4K
t "an unknown TIO_BACKEND exits 2" 2 "unknown backend" env TIO_BACKEND=gpu "$tioctl" alloc 4K

# safetensors: names needing JSON escapes survive a round trip.
hdr='{"b":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},"a\"q\nl":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}}'
{ printf "$(printf '\\x%02x' ${#hdr} 0 0 0 0 0 0 0)"; printf '%s' "$hdr"; head -c 24 /dev/zero; } >"$tmp/ok.safetensors"
t "load-safetensors lists every tensor" 0 "b  *float32 *2x2 offset [0-9]* bytes 16" \
	"$tioctl" load-safetensors "$tmp/ok.safetensors"
j "load-safetensors --json shape (jq), a name with a quote and a newline" \
	'(.tensors | length) == 2 and (.load_ms | type) == "number" and
	 ([.tensors[].name] | sort) == ["a\"q\nl", "b"] and
	 (.tensors[] | select(.name == "b") | del(.offset)) == {"name": "b", "dtype": "float32",
	   "shape": [2, 2], "bytes": 16} and ([.tensors[].offset | type] | unique) == ["number"]' "$tioctl" load-safetensors --json "$tmp/ok.safetensors"
head -c 60 "$tmp/ok.safetensors" >"$tmp/short.safetensors"
t "load-safetensors rejects a truncated file (exit 1)" 1 "short.safetensors" "$tioctl" load-safetensors "$tmp/short.safetensors"
t "load-safetensors of a missing file exits 1 (ENOENT)" 1 "ENOENT" "$tioctl" load-safetensors "$tmp/none"
t "load-safetensors --hold lists, then holds until stdin ends" 0 "^held 2 tensors" sh -c \
	"(sleep 0.2; echo) | { '$tioctl' load-safetensors --hold '$tmp/ok.safetensors' | tail -1 | sed 's/^/held /'; }"
t "load-safetensors --hold with --json after the file" 0 '"name": "b"' sh -c \
	"'$tioctl' load-safetensors '$tmp/ok.safetensors' --hold --json </dev/null"
# No progress bar unless stderr is a terminal.
t "load-safetensors is quiet on a pipe" 0 "^0$" sh -c "'$tioctl' load-safetensors '$tmp/ok.safetensors' 2>&1 >/dev/null | wc -c"
if command -v script >/dev/null; then
	t "load-safetensors shows progress on a terminal" 0 "100%" script -qec "'$tioctl' load-safetensors '$tmp/ok.safetensors'" /dev/null
else
	n=$((n + 1)); echo "ok $n # SKIP no script(1)"
fi
quiet "a failed --json command prints no partial JSON" "$tioctl" --json signal
# reshard: through the save engine, to shards and back, the same bytes.
t "reshard to shards names the index" 0 "2 tensors, .* to 2 files: .*/s/m.safetensors.index.json" \
	sh -c "mkdir -p '$tmp/s' && '$tioctl' reshard '$tmp/ok.safetensors' '$tmp/s/m.safetensors' --max-shard-size 16"
t "reshard writes NAME-0000k-of-0000N shards" 0 "^m-00001-of-00002.safetensors m-00002-of-00002.safetensors m.safetensors.index.json$" \
	sh -c "ls -A '$tmp/s' | paste -sd' '"
j "reshard --json back into one file (jq)" '.tensors == 2 and .bytes == 24 and .files == 1 and
	(.save_ms | type) == "number" and (.direct | type) == "boolean"' \
	"$tioctl" reshard --json "$tmp/s/m.safetensors.index.json" "$tmp/back.safetensors"
t "reshard: one file, then shards and back, the same bytes" 0 "" sh -c \
	"'$tioctl' reshard '$tmp/ok.safetensors' '$tmp/one.safetensors' >/dev/null && cmp '$tmp/one.safetensors' '$tmp/back.safetensors'"
t "reshard of a missing file exits 1 (ENOENT)" 1 "ENOENT" "$tioctl" reshard "$tmp/none" "$tmp/x.safetensors"
t "reshard into a missing directory exits 1, naming it" 1 "opening the directory of .*/nodir/x.safetensors" \
	"$tioctl" reshard "$tmp/ok.safetensors" "$tmp/nodir/x.safetensors"
t "reshard with a bad size exits 2" 2 "bad size" "$tioctl" reshard "$tmp/ok.safetensors" "$tmp/y" --max-shard-size lots
t "reshard without DST exits 2" 2 "missing operand" "$tioctl" reshard "$tmp/ok.safetensors"

# tioctl commands lists the library's command table: exactly the uapi's commands.
uapi_cmds=$(sed -n 's/^#define TIO_IOC_\([A-Z_]*\)[[:space:]]*_IO.*/\1/p' "$top/uapi/linux/tensorio.h" | sort | paste -sd' ')
t "commands --json names every command of the uapi header, and no other" 0 "^$uapi_cmds\$" \
	bash -c "'$tioctl' commands --json | jq -r '.[].name' | sort | paste -sd' '"
j "commands --json: sizes, globals, flags (jq)" '.[0].name == "INFO" and .[0].global == "tio.driver.info" and
	.[0].payload_size > 0 and (map(select(.waits)) | map(.name) | sort) == ["BUF_WAIT", "FENCE_WAIT"] and
	(map(select(.name == "BUF_ALLOC"))[0] | .nargs == 1 and .nargs_max == 2)' "$tioctl" commands --json
t "commands lists the table" 0 "^BUF_ALLOC .*tio.buffer.alloc$" "$tioctl" commands
t "commands takes no operand (exit 2)" 2 "unexpected 'x'" "$tioctl" commands x

# The bash completion completes commands, options and dtype names.
t "bash completion: commands" 0 "^alloc$" bash -c \
	"source '$top/tools/tioctl.bash-completion'; COMP_WORDS=(tioctl al); COMP_CWORD=1; _tioctl; printf '%s\n' \"\${COMPREPLY[@]}\""
t "bash completion: dtype names" 0 "^bfloat16$" bash -c \
	"source '$top/tools/tioctl.bash-completion'; COMP_WORDS=(tioctl alloc 4K --dtype bf); COMP_CWORD=4; _tioctl; printf '%s\n' \"\${COMPREPLY[@]}\""
echo "1..$n"
exit $fail
