#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build tensorio.ko for one kernel release in build/kmod/<release>/, a tree
# of links to the sources, so several kernels' objects never mix.
#   kmod.sh RELEASE [make arguments...]   (e.g. W=1, C=2)
# TIO_KMOD_OUT=DIR builds in DIR/<release>/ instead (the fuzzer's and the
# coverage run's instrumented builds), TIO_KMOD_SRC=DIR from the kmod/ and
# uapi/ of another tree (tests/fuzz/planted.sh). Prints the build's
# output; exits non-zero on failure.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kver=$1
shift
cache=${TIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorio}
kdir=/usr/src/linux-headers-$kver
[ -d "/lib/modules/$kver/build" ] && kdir=/lib/modules/$kver/build
# Kernels built by the project (the debug kernel) live in the deps cache.
[ -d "$kdir" ] || kdir=$cache/kernels/$kver/lib/modules/$kver/build
out=${TIO_KMOD_OUT:-$top/build/kmod}/$kver
mkdir -p "$out"
# One build per tree at a time: concurrent runs would relink each other's.
exec 9>"$out.lock"
flock 9
# Refresh the links (sources may have come or gone since the last build).
find "$out" -type l -delete
mkdir -p "$out/kmod" "$out/uapi/linux"
ln -s "$top/Kbuild" "$out/Kbuild"
src=${TIO_KMOD_SRC:-$top}
for f in "$src"/kmod/Kbuild "$src"/kmod/*.[ch] "$src"/uapi/linux/*.h; do
	case $f in *.mod.c) continue ;; esac
	ln -s "$f" "$out/${f#"$src"/}"
done
make -s -C "$kdir" M="$out" CONFIG_DEBUG_INFO_BTF_MODULES= "$@" modules
