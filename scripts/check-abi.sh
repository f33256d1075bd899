#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The shared and the static library export exactly the symbols listed in
# libtensorio.map.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
so=$top/build/lib/libtensorio.so
want=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$top/lib/libtensorio.map" | sort)
have=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { sub(/@.*/, "", $3); print $3 }' | sort)
if [ "$want" != "$have" ]; then
	diff <(echo "$want") <(echo "$have") | sed 's/^</listed, not exported:/; s/^>/exported, not listed:/'
	exit 1
fi
# Each symbol carries the version node the map lists it under.
want_v=$(awk '/^[A-Za-z_][A-Za-z0-9_.]* *{/ { node = $1 }
	/^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;$/ { s = $1; sub(/;/, "", s); print s "@@" node }' \
	"$top/lib/libtensorio.map" | sort)
have_v=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ && $3 ~ /@@/ { print $3 }' | sort)
if [ "$want_v" != "$have_v" ]; then
	diff <(echo "$want_v") <(echo "$have_v") | sed 's/^</listed, not so versioned:/; s/^>/exported with:/'
	exit 1
fi
# The static library: its global defined symbols, the same list.
a=$top/build/lib/libtensorio.a
have_a=$(nm --defined-only --extern-only "$a" | awk 'NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print $3 }' | sort -u)
if [ "$want" != "$have_a" ]; then
	diff <(echo "$want") <(echo "$have_a") | sed 's/^</listed, not in the .a:/; s/^>/global in the .a, not listed:/'
	exit 1
fi
# No symbol leaks out of our namespaces.
bad=$(grep -vE '^(tio_|__tvm_ffi_)' <<<"$have" || true)
[ -z "$bad" ] || { echo "symbols outside tio_*: $bad"; exit 1; }
# libtensorio-tvmffi exports the TVM FFI entry points and nothing else.
compat=$(nm -D --defined-only "$top/build/lib/libtensorio-tvmffi.so.0" |
	 awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
bad=$(grep -vE '^TVMFFI[A-Za-z]+$' <<<"$compat" || true)
[ -n "$compat" ] && [ -z "$bad" ] || { echo "libtensorio-tvmffi exports: ${bad:-nothing}"; exit 1; }
