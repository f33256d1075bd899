#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The net layer is a library of its own (lib/net, libtensorio-net): only
# programs that link it load UCX. libtensorio needs no UCX library, a
# program on libtensorio alone loads none, and the whole tree builds with
# no UCX header reachable (libtensorio-net then fails every call with
# EOPNOTSUPP). TAP output.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/include/tap.sh"
lib=$top/build/lib
echo "TAP version 13"
echo "1..6"
t "libtensorio.so.0 has no UCX library among its NEEDED entries" bash -c \
	"readelf -d '$lib/libtensorio.so.0' | grep NEEDED | grep -E 'libuc[pstm]' && exit 1 || true"
t "nor anywhere in its dependency tree (ldd)" bash -c \
	"ldd '$lib/libtensorio.so.0' | grep -E 'libuc[pstm]' && exit 1 || true"
t "libtensorio-net.so.0 is the one that needs UCX" bash -c \
	"! pkg-config --exists ucx || readelf -d '$lib/libtensorio-net.so.0' | grep -q 'NEEDED.*libucp'"

# A program on libtensorio alone: no UCX object in its address space.
cat >"$tmp/core.c" <<'PROG'
#include <stdio.h>
#include <string.h>
#include <tensorio/version.h>
int main(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f || !tio_version())
		return 2;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/libucs") || strstr(line, "/libucp") || strstr(line, "/libucm")) {
			fputs(line, stdout);
			return 1;
		}
	return 0;
}
PROG
t "a program linked with libtensorio alone maps no UCX library" bash -c \
	"cc -std=c11 -Wall -Werror -I'$top/lib/include' -I'$top/uapi' -o '$tmp/core' '$tmp/core.c' \
	 -L'$lib' -Wl,-rpath,'$lib' -ltensorio && '$tmp/core'"

# No UCX header reachable: a poisoned ucp/ucs/uct/ucm first on the path.
for d in ucp/api ucs/type uct/api ucm/api; do
	mkdir -p "$tmp/poison/$d"
done
for h in ucp/api/ucp.h ucs/type/status.h uct/api/uct.h ucm/api/ucm.h; do
	echo '#error "UCX header included"' >"$tmp/poison/$h"
done
t "the libraries build with no UCX header (make -C lib UCX=)" \
	env CFLAGS="-O0 -I$tmp/poison" nice -n 5 make -s -j"${JOBS:-2}" -C "$top/lib" \
	O="$tmp/lib" UCX=
cat >"$tmp/stub.c" <<'PROG'
#include <errno.h>
#include <stdio.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/net.h>
int main(void)
{
	tio_net_worker_t *w;

	if (tio_net_worker_create(&w) != -1 || tio_errno() != EOPNOTSUPP)
		return 1;
	puts(tio_error_message(tio_error_peek_raised()));
	return 0;
}
PROG
t "libtensorio-net without UCX fails its calls with EOPNOTSUPP, saying why" 0 "built without UCX" \
	bash -c "cc -std=c11 -Wall -Werror -I'$top/lib/include' -I'$top/uapi' -o '$tmp/stub' '$tmp/stub.c' \
	 -L'$tmp/lib' -Wl,-rpath,'$tmp/lib' -ltensorio-net -ltensorio && '$tmp/stub'"
exit $bad
