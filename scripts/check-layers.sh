#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The library's layers depend one way only (docs/library.md):
#   ffi  <-  dev (dev/backend)  <-  gpu  <-  io
#                                <-  net (UCX)
# A file may include headers of its own layer and of the layers below it,
# never of a layer above it (io loads onto GPUs through gpu's API; gpu
# knows nothing of files). Public headers belong to the layer that
# implements them.
#   check-layers.sh [SRC]          check the sources under SRC (lib/src)
#   check-layers.sh [SRC] OBJDIR   also check the objects' undefined symbols
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$top/lib/src}
obj=${2:-}

# The layers a layer may use, itself included.
declare -A uses=(
	[ffi]="ffi"
	[dev]="ffi dev"
	[io]="ffi dev gpu io"
	[gpu]="ffi dev gpu"
	[net]="ffi dev net"
)
# Public headers (lib/include/tensorio/NAME.h) that are not the FFI core's.
declare -A public=(
	[batch]=dev [buffer]=dev [context]=dev [stream]=dev [pinned]=dev
	[io]=io [safetensors]=io
	[gpu]=gpu
	[net]=net
)

layer_of_path() {	# lib/src-relative path -> layer
	local l=${1%%/*}
	[ -n "${uses[$l]:-}" ] && echo "$l"
}

bad=0
complain() {
	echo "$1"
	bad=1
}

while IFS= read -r f; do
	rel=${f#"$src"/}
	me=$(layer_of_path "$rel") || { complain "$rel: not in a layer folder (${!uses[*]})"; continue; }
	while IFS= read -r line; do
		n=${line%%:*}
		inc=${line#*:}
		case $inc in
		*'<tensorio/'*)
			h=${inc#*<tensorio/}
			h=${h%%.h>*}
			to=${public[$h]:-ffi}
			;;
		*'"'*)
			h=${inc#*\"}
			h=${h%%\"*}
			to=$(layer_of_path "$h") ||
				{ complain "$rel:$n: include \"$h\" names no layer folder"; continue; }
			;;
		*) continue ;;
		esac
		[[ " ${uses[$me]} " == *" $to "* ]] ||
			complain "$rel:$n: $me/ must not include $h (layer $to/)"
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" |
		 sed 's/^\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*/\1:/')
done < <(find "$src" -name '*.[ch]' | sort)

# Link-level: no object refers to a symbol defined in a layer it may not use.
# Objects of the current sources only: a stale one of a moved file is not ours.
objects() {
	find "$obj" -name '*.o' | sort | while read -r o; do
		o=${o#"$obj"/}
		[ -f "$src/${o%.o}.c" ] && echo "$o"
	done
	return 0
}
if [ -n "$obj" ]; then
	defs=$(objects | while read -r o; do
		nm --defined-only "$obj/$o" | awk -v o="$o" '$2 ~ /[TDBR]/ { print $3, o }'
	done | sort)
	while read -r sym from to; do
		a=$(layer_of_path "$from") b=$(layer_of_path "$to")
		[[ " ${uses[$a]} " == *" $b "* ]] ||
			complain "$from uses $sym from $to ($a/ must not use $b/)"
	done < <(objects | while read -r o; do
		nm -u "$obj/$o" | awk -v o="$o" '{ print $2, o }'
	done | sort | join - <(echo "$defs"))
fi
[ $bad = 0 ]
