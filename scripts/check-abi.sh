#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The shared and the static library export exactly the symbols listed in
# their version map: libtensorio (lib/libtensorio.map) and libtensorio-net
# (lib/net/libtensorio-net.map); libtensorio needs no UCX.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

# check_lib NAME MAP: build/lib/NAME.so and NAME.a against MAP.
check_lib() {
	local so=$top/build/lib/$1.so a=$top/build/lib/$1.a map=$2
	local want have want_v have_v have_a bad
	want=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$map" | sort)
	have=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { sub(/@.*/, "", $3); print $3 }' | sort)
	if [ "$want" != "$have" ]; then
		diff <(echo "$want") <(echo "$have") | sed 's/^</listed, not exported:/; s/^>/exported, not listed:/'
		exit 1
	fi
	# Each symbol carries the version node the map lists it under.
	want_v=$(awk '/^[A-Za-z_][A-Za-z0-9_.]* *{/ { node = $1 }
		/^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;$/ { s = $1; sub(/;/, "", s); print s "@@" node }' \
		"$map" | sort)
	have_v=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ && $3 ~ /@@/ { print $3 }' | sort)
	if [ "$want_v" != "$have_v" ]; then
		diff <(echo "$want_v") <(echo "$have_v") | sed 's/^</listed, not so versioned:/; s/^>/exported with:/'
		exit 1
	fi
	# The static library: its global defined symbols, the same list.
	have_a=$(nm --defined-only --extern-only "$a" | awk 'NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print $3 }' | sort -u)
	if [ "$want" != "$have_a" ]; then
		diff <(echo "$want") <(echo "$have_a") | sed 's/^</listed, not in the .a:/; s/^>/global in the .a, not listed:/'
		exit 1
	fi
	# No symbol leaks out of our namespaces.
	bad=$(grep -vE '^(tio_|__tvm_ffi_)' <<<"$have" || true)
	[ -z "$bad" ] || { echo "$1: symbols outside tio_*: $bad"; exit 1; }
}
check_lib libtensorio "$top/lib/libtensorio.map"
check_lib libtensorio-net "$top/lib/net/libtensorio-net.map"
# libtensorio-net exports the net layer only (tio_net_*).
bad=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$top/lib/net/libtensorio-net.map" |
      grep -v '^tio_net_' || true)
[ -z "$bad" ] || { echo "libtensorio-net.map lists symbols outside tio_net_*: $bad"; exit 1; }
# Only libtensorio-net loads UCX: libtensorio needs none of its libraries.
bad=$(readelf -d "$top/build/lib/libtensorio.so.0" | sed -n 's/.*(NEEDED).*\[\(libuc[a-z]*\.so[^]]*\)\]/\1/p')
[ -z "$bad" ] || { echo "libtensorio.so.0 needs UCX: $bad"; exit 1; }
# libtensorio-tvmffi exports the TVM FFI entry points and nothing else.
compat=$(nm -D --defined-only "$top/build/lib/libtensorio-tvmffi.so.0" |
	 awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
bad=$(grep -vE '^TVMFFI[A-Za-z]+$' <<<"$compat" || true)
[ -n "$compat" ] && [ -z "$bad" ] || { echo "libtensorio-tvmffi exports: ${bad:-nothing}"; exit 1; }
