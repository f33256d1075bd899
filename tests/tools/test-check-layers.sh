#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# scripts/check-layers.sh passes on lib/src and fails on an upward include,
# with each public header's layer read from the header itself.
top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/scripts/check-layers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
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
	fi
}
copy() {
	rm -rf "$tmp/src" && cp -r "$top/lib/src" "$tmp/src"
}
headers() {
	rm -rf "$tmp/inc" && cp -r "$top/lib/include/tensorio" "$tmp/inc"
}
echo "TAP version 13"
echo "1..15"
t "lib/src and build/lib/obj keep their layers" 0 "" "$check" "$top/lib/src" "$top/build/lib/obj"
copy
sed -i '0,/#include/s|#include|#include "dev/dev_internal.h"\n#include|' "$tmp/src/ffi/any.c"
t "ffi/ including a dev/ header fails" 1 "ffi/any.c:.*ffi/ must not include dev/dev_internal.h" \
	"$check" "$tmp/src"
copy
sed -i '0,/#include/s|#include|#include <tensorio/buffer.h>\n#include|' "$tmp/src/ffi/any.c"
t "ffi/ including a public dev header fails" 1 "must not include buffer (layer dev/)" \
	"$check" "$tmp/src"
copy
sed -i '0,/#include/s|#include|#include "file/file_internal.h"\n#include|' "$tmp/src/gpu/gpu_core.c"
t "gpu/ including the file/ layer above it fails" 1 "gpu/ must not include file/file_internal.h" \
	"$check" "$tmp/src"
copy
sed -i '0,/#include/s|#include|#include <tensorio/net.h>\n#include|' "$tmp/src/dev/buffer.c"
t "dev/ including the net/ layer above it fails" 1 "dev/ must not include net (layer net/)" \
	"$check" "$tmp/src"
copy
rm -rf "$tmp/net" && cp -r "$top/lib/net" "$tmp/net"
sed -i '0,/#include/s|#include|#include "dev/dev_internal.h"\n#include|' "$tmp/net/rma.c"
t "lib/net including libtensorio's internals fails" 1 \
	"net/rma.c:.*include \"dev/dev_internal.h\" is not a header of net/" \
	env TIO_LAYERS_ABOVE="$tmp/net" "$check" "$tmp/src"
copy
echo 'int x;' >"$tmp/src/stray.c"
t "a source outside the layer folders fails" 1 "stray.c: not in a layer folder" \
	"$check" "$tmp/src"
# The link-level check: an ffi/ object calling into dev/.
mkdir -p "$tmp/obj/ffi" "$tmp/obj/dev"
echo 'int tio_up(void); int tio_f(void) { return tio_up(); }' |
	cc -x c -c -o "$tmp/obj/ffi/f.o" -
echo 'int tio_up(void) { return 1; }' | cc -x c -c -o "$tmp/obj/dev/d.o" -
copy
: >"$tmp/src/ffi/f.c"
: >"$tmp/src/dev/d.c"
t "an ffi/ object using a dev/ symbol fails" 1 "ffi/f.o uses tio_up from dev/d.o" \
	"$check" "$tmp/src" "$tmp/obj"
# A stale object of a file that moved away (an old build tree) is not checked.
copy
mkdir -p "$tmp/obj2"
cp "$tmp/obj/ffi/f.o" "$tmp/obj2/f.o"
t "a stale object without its source is ignored" 0 "" \
	"$check" "$tmp/src" "$tmp/obj2"
# A call cycle between two files of dev/ (a.c calls b.c, b.c calls a.c).
mkdir -p "$tmp/obj3/dev"
echo 'int tio_b(void); int tio_a(int x) { return x ? tio_b() : 0; }' |
	cc -x c -c -o "$tmp/obj3/dev/a.o" -
echo 'int tio_a(int); int tio_b(void) { return tio_a(0); }' | cc -x c -c -o "$tmp/obj3/dev/b.o" -
copy
: >"$tmp/src/dev/a.c"
: >"$tmp/src/dev/b.c"
t "two dev/ files calling each other fail, naming both" 1 \
	"dev/: files call each other in a cycle: dev/a.o dev/b.o" "$check" "$tmp/src" "$tmp/obj3"
t "... unless dev/ is not among the acyclic layers" 0 "" \
	env TIO_LAYERS_ACYCLIC=file "$check" "$tmp/src" "$tmp/obj3"
# Public headers: the layer is the header's own " * Layer:" line.
copy
headers
sed -i 's/^ \* Layer: dev .*/ * Layer: file/' "$tmp/inc/buffer.h"
t "a header's layer is read from the header" 1 "dev/dev_internal.h:.*dev/ must not include buffer (layer file/)" \
	env TIO_LAYERS_HEADERS="$tmp/inc" "$check" "$tmp/src"
headers
sed -i '/^ \* Layer: /d' "$tmp/inc/stream.h"
t "a public header naming no layer fails" 1 "<tensorio/stream.h>: its top comment names no layer" \
	env TIO_LAYERS_HEADERS="$tmp/inc" "$check" "$tmp/src"
headers
sed -i 's/^ \* Layer: .*/ * Layer: io/' "$tmp/inc/io.h"
t "a public header naming an unknown layer fails" 1 "<tensorio/io.h>: layer 'io' is none of" \
	env TIO_LAYERS_HEADERS="$tmp/inc" "$check" "$tmp/src"
headers
sed -i '0,/#include/s|#include|#include <tensorio/stream.h>\n#include|' "$tmp/inc/tensor.h"
t "an ffi public header including a dev header fails" 1 \
	"<tensorio/tensor.h>:.*ffi/ must not include <tensorio/stream.h> (layer dev/)" \
	env TIO_LAYERS_HEADERS="$tmp/inc" "$check" "$tmp/src"
