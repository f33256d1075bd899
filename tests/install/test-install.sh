#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make install into a temporary DESTDIR, then build and run a program with
# nothing but pkg-config's flags. TAP output.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/include/tap.sh"
prefix=/opt/tensorio
dest=$tmp/dest
export PKG_CONFIG_PATH=$dest$prefix/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
echo "TAP version 13"
echo "1..6"
t "make install into DESTDIR" make -s -C "$top" install DESTDIR="$dest" PREFIX="$prefix"
t "soname and symlinks installed" test -e "$dest$prefix/lib/libtensorio.so.0" -a \
	-L "$dest$prefix/lib/libtensorio.so" -a -e "$dest$prefix/include/linux/tensorio.h" -a \
	-e "$dest$prefix/lib/libtensorio-tvmffi.so.0"
t "man pages installed" test -e "$dest$prefix/share/man/man8/tioctl.8" -a \
	-e "$dest$prefix/share/man/man4/tensorio.4" -a -e "$dest$prefix/share/man/man3/libtensorio.3"
cat >"$tmp/prog.c" <<'PROG'
#include <stdio.h>
#include <linux/tensorio.h>
#include <tensorio/version.h>
int main(void)
{
	if (tio_version() != TIO_VERSION || tio_abi_version() != TIO_ABI_VERSION)
		return 1;
	printf("tensorio %u, uapi %u\n", tio_version(), TIO_UAPI_VERSION);
	return 0;
}
PROG
t "pkg-config knows tensorio" pkg-config --exists tensorio
t "compile and link with pkg-config flags" bash -c \
	"cc -std=c11 -Wall -Werror -o '$tmp/prog' '$tmp/prog.c' \$(pkg-config --cflags --libs tensorio)"
t "the program runs against the installed library" env \
	LD_LIBRARY_PATH="$dest$prefix/lib" "$tmp/prog"
exit $bad
