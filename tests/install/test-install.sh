#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make install into a temporary DESTDIR, then build and run a program with
# nothing but pkg-config's flags; the libdir default and override, ldconfig
# only for a real root, docs and man pages. TAP output.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/include/tap.sh"
prefix=/opt/tensorio
dest=$tmp/dest
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
libdir=$prefix/lib${multiarch:+/$multiarch}
ran=$tmp/ldconfig-ran
inst() { make -s -C "$top" install LDCONFIG="touch $ran" "$@"; }
echo "TAP version 13"
echo "1..20"
t "plain make installs nothing (no deps.sh, apt-get or install)" bash -c \
	"! make -n -B -C '$top' all | grep -E 'deps\.sh|apt-get|^install '"
t "make install into DESTDIR" inst DESTDIR="$dest" PREFIX="$prefix"
t "no ldconfig for a DESTDIR install" test ! -e "$ran"
t "library in the multiarch libdir ($libdir), soname and symlinks" test -n "$multiarch" -a \
	-e "$dest$libdir/libtensorio.so.0" -a -L "$dest$libdir/libtensorio.so" -a \
	-e "$dest$libdir/libtensorio.a" -a -e "$dest$prefix/include/linux/tensorio.h" -a \
	-e "$dest$libdir/libtensorio-tvmffi.so.0" -a -e "$dest$libdir/libtensorio-net.so.0" -a \
	-L "$dest$libdir/libtensorio-net.so" -a -e "$dest$libdir/libtensorio-net.a"
t "LIBDIR= overrides the libdir" bash -c "make -s -C '$top' install LDCONFIG=true \
	DESTDIR='$tmp/d2' PREFIX=$prefix LIBDIR=$prefix/lib64 >/dev/null &&
	test -e '$tmp/d2$prefix/lib64/libtensorio.so.0' -a ! -e '$tmp/d2$libdir'"
t "ldconfig after installing into the real root" bash -c \
	"make -s -C '$top' install LDCONFIG='touch $ran' PREFIX='$tmp/root' >/dev/null && test -e '$ran'"
t "man pages installed: man8, man4, man3 overview" test -e "$dest$prefix/share/man/man8/tioctl.8" -a \
	-e "$dest$prefix/share/man/man4/tensorio.4" -a -e "$dest$prefix/share/man/man3/libtensorio.3"
t "a man3 page for every exported function" bash -c '
	for s in $(sed -n "s/^[[:space:]]*\(tio_[a-z0-9_]*\);$/\1/p" "'"$top"'/lib/libtensorio.map" \
		   "'"$top"'/lib/net/libtensorio-net.map"); do
		test -s "'"$dest$prefix"'/share/man/man3/$s.3" || { echo "no man3 page for $s"; exit 1; }
	done
	man -l "'"$dest$prefix"'/share/man/man3/tio_buffer_alloc.3" 2>&1 >/dev/null | grep . && exit 1
	man -l "'"$dest$prefix"'/share/man/man3/tio_buffer_alloc.3" | grep -q "#include <tensorio/buffer.h>"'
t "every man3 page is named after the function it documents" bash -c '
	for p in "'"$dest$prefix"'"/share/man/man3/*.3; do
		n=$(basename "$p" .3)
		sed -n "/^\.SH NAME/{n;p;q}" "$p" | grep -q "^$n \\\\-" ||
			{ echo "$p: its NAME is not $n"; exit 1; }
	done'
t "tioctl and its bash completion installed" test -x "$dest$prefix/bin/tioctl" -a \
	-s "$dest$prefix/share/bash-completion/completions/tioctl"
t "docs and licence texts installed" test -s "$dest$prefix/share/doc/tensorio/README.md" -a \
	-s "$dest$prefix/share/doc/tensorio/CHANGELOG.md" -a -s "$dest$prefix/share/doc/tensorio/COPYING" -a \
	-s "$dest$prefix/share/doc/tensorio/LICENSES/preferred/LGPL-2.1" -a \
	-s "$dest$prefix/share/doc/tensorio/library.md"
t "CHANGELOG.md names every symbol version node" bash -c '
	for w in $(sed -n "s/^\(TENSORIO_[A-Z0-9_.]*\) {$/\1/p" "'"$top"'/lib/libtensorio.map" \
		   "'"$top"'/lib/net/libtensorio-net.map"); do
		grep -qF "\`$w\`" "'"$top"'/CHANGELOG.md" || { echo "CHANGELOG.md does not mention $w"; exit 1; }
	done'
cat >"$tmp/prog.c" <<'PROG'
#include <stdio.h>
#include <linux/tensorio.h>
#include <tensorio/tensor.h>
#include <tensorio/version.h>
int main(void)
{
	DLDataType f32 = { kDLFloat, 32, 1 };

	if (tio_version() != TIO_VERSION || tio_abi_version() != TIO_ABI_VERSION)
		return 1;
	printf("tensorio %u, uapi %u, %u bits\n", tio_version(), TIO_UAPI_VERSION, f32.bits);
	return 0;
}
PROG
export PKG_CONFIG_PATH=$dest$libdir/pkgconfig
t "pkg-config carries the include path without PKG_CONFIG_SYSROOT_DIR" bash -c \
	"pkg-config --cflags tensorio | grep -qw -- '-I$prefix/include'"
t "tensorio.pc names the DLPack header directory" bash -c \
	"test -e \"\$(pkg-config --variable=dlpack_includedir tensorio)/dlpack/dlpack.h\""
export PKG_CONFIG_SYSROOT_DIR=$dest
t "pkg-config knows tensorio in the staged root" pkg-config --exists tensorio
t "compile and link with pkg-config flags only" bash -c \
	"cc -std=c11 -Wall -Werror -o '$tmp/prog' '$tmp/prog.c' \$(pkg-config --cflags --libs tensorio)"
t "the program runs against the installed library" env \
	LD_LIBRARY_PATH="$dest$libdir" "$tmp/prog"
t "static link with pkg-config --static" bash -c \
	"cc -std=c11 -o '$tmp/prog-static' '$tmp/prog.c' \$(pkg-config --cflags tensorio) \
	 '$dest$libdir/libtensorio.a' \$(pkg-config --static --libs-only-l tensorio | sed 's/-ltensorio//') && '$tmp/prog-static'"
cat >"$tmp/prog-net.c" <<'PROG'
#include <tensorio/net.h>
int main(void)
{
	tio_net_worker_destroy(NULL);
	tio_net_rkey_destroy(NULL);
	return 0;
}
PROG
t "a net program links with pkg-config tensorio-net only" bash -c \
	"cc -std=c11 -Wall -Werror -o '$tmp/prog-net' '$tmp/prog-net.c' \$(pkg-config --cflags --libs tensorio-net)"
t "and runs against the installed libtensorio-net" env \
	LD_LIBRARY_PATH="$dest$libdir" "$tmp/prog-net"
exit $bad
