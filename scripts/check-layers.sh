#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The library's layers depend one way only (docs/library.md):
#   ffi  <-  dev (dev/backend)  <-  gpu  <-  file         libtensorio
#   libtensorio's public API  <-  lib/net (UCX), lib/tvmffi  libraries on it
# A file may include headers of its own layer and of the layers below it,
# never of a layer above it (file loads onto GPUs through gpu's API; gpu
# knows nothing of files). Public headers belong to the layer that
# implements them, which each states in its top comment (" * Layer: dev");
# <tensorio/net.h> is net's, libtensorio-net's, which libtensorio never
# includes. A public header includes only headers of its own layer and
# below. The libraries built on libtensorio include its public headers
# and their own, never its internal ones.
#   check-layers.sh [SRC]          check the sources under SRC (lib/src)
#   check-layers.sh [SRC] OBJDIR   also check the objects' undefined symbols
#   TIO_LAYERS_HEADERS=DIR         the public headers (lib/include/tensorio)
#   TIO_LAYERS_ABOVE="DIR ..."     the libraries on libtensorio to check
#                                  (default lib/net lib/tvmffi)
#   TIO_LAYERS_ACYCLIC="L ..."     layers checked for call cycles between
#                                  their files (default dev file)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$top/lib/src}
obj=${2:-}
above=${TIO_LAYERS_ABOVE-$top/lib/net $top/lib/tvmffi}
headers=${TIO_LAYERS_HEADERS:-$top/lib/include/tensorio}

# The layers a layer may use, itself included.
declare -A uses=(
	[ffi]="ffi"
	[dev]="ffi dev"
	[file]="ffi dev gpu file"
	[gpu]="ffi dev gpu"
)
# Layers whose files must not call each other in a cycle (object check):
# each file then reads as using only the ones below it.
acyclic=${TIO_LAYERS_ACYCLIC-dev file}

layer_of_path() {	# lib/src-relative path -> layer
	local l=${1%%/*}
	[ -n "${uses[$l]:-}" ] && echo "$l"
}

bad=0
complain() {
	echo "$1"
	bad=1
}

# Each public header's layer, from its " * Layer: NAME" line: one of the
# layers, or net (libtensorio-net, on all of them).
declare -A hdr_uses=([net]="${!uses[*]} net")
for l in "${!uses[@]}"; do
	hdr_uses[$l]=${uses[$l]}
done
declare -A public=()
for h in "$headers"/*.h; do
	n=$(basename "$h" .h)
	l=$(awk '/^ \*\// { exit } /^ \* Layer: / { print $3; exit }' "$h")
	if [ -z "$l" ]; then
		complain "<tensorio/$n.h>: its top comment names no layer (\" * Layer: NAME\")"
	elif [ -z "${hdr_uses[$l]:-}" ]; then
		complain "<tensorio/$n.h>: layer '$l' is none of: ${!hdr_uses[*]}"
	else
		public[$n]=$l
	fi
done

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
			to=${public[$h]:-}
			[ -n "$to" ] || { complain "$rel:$n: <tensorio/$h.h> is no public header of a layer"; continue; }
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

# Public headers: only headers of their own layer and below.
for f in "$headers"/*.h; do
	me=${public[$(basename "$f" .h)]:-}
	[ -n "$me" ] || continue
	while IFS= read -r line; do
		n=${line%%:*}
		h=${line#*<tensorio/}
		h=${h%%.h>*}
		to=${public[$h]:-}
		if [ -z "$to" ]; then
			complain "<tensorio/$(basename "$f")>:$n: <tensorio/$h.h> is no public header of a layer"
		elif [[ " ${hdr_uses[$me]} " != *" $to "* ]]; then
			complain "<tensorio/$(basename "$f")>:$n: $me/ must not include <tensorio/$h.h> (layer $to/)"
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*<tensorio/' "$f" || true)
done

# The libraries on libtensorio: public headers, system headers and their
# own folder's headers only.
for dir in $above; do
	while IFS= read -r f; do
		rel=${f#"$top"/}
		while IFS= read -r line; do
			n=${line%%:*}
			inc=${line#*:}
			case $inc in
			'"'*)
				h=${inc#\"}
				h=${h%%\"*}
				[ -e "$(dirname "$f")/$h" ] && [[ $h != */* ]] ||
					complain "$rel:$n: include \"$h\" is not a header of $(basename "$dir")/ (libtensorio's internals are off limits: use its public API)"
				;;
			esac
		done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" |
			 sed 's/^\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*/\1:/')
	done < <(find "$dir" -name '*.[ch]' | sort)
done

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

	# Inside the layers in $acyclic, no files call each other in a cycle
	# (dev/: table <- backends <- context <- objects <- calls <- batches).
	for l in $acyclic; do
		loop=$(objects | { grep "^$l/" || true; } | while read -r o; do
			nm -u "$obj/$o" | awk -v o="$o" '{ print $2, o }'
		done | sort | join - <(awk -v l="$l/" 'index($2, l) == 1' <<<"$defs") |
			awk '$2 != $3 { print $2, $3 }' | sort -u |
			{ tsort 2>&1 >/dev/null || true; } |
			sed -n 's/^tsort: \(.*\.o\)$/\1/p' | awk '!seen[$0]++' | paste -sd' ')
		[ -z "$loop" ] || complain "$l/: files call each other in a cycle: $loop"
	done
fi
[ $bad = 0 ]
