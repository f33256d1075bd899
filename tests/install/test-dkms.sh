#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# dkms add + build (no install) for each supported kernel, in a private DKMS
# tree so the machine's own is left alone. TAP output.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/tensorio-$ver" "$tmp/tree"
cp -r "$top/Kbuild" "$top/dkms.conf" "$top/kmod" "$top/uapi" "$tmp/src/tensorio-$ver/"
find "$tmp/src" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' \) -delete
dk() { dkms "$@" --dkmstree "$tmp/tree" --sourcetree "$tmp/src" -m tensorio -v "$ver"; }
kernels=$("$top/scripts/kernels.sh")
echo "TAP version 13"
echo "1..$(($(wc -w <<<"$kernels") + 1))"
n=1 bad=0
if out=$(dk add 2>&1); then echo "ok 1 dkms add"; else echo "$out" | sed 's/^/# /'; echo "not ok 1 dkms add"; bad=1; fi
for k in $kernels; do
	n=$((n + 1))
	if out=$(dk build -k "$k" 2>&1) && compgen -G "$tmp/tree/tensorio/$ver/$k/*/module/tensorio.ko*" >/dev/null; then
		echo "ok $n dkms build for $k"
	else
		echo "$out" | sed 's/^/# /'
		echo "not ok $n dkms build for $k"
		bad=1
	fi
done
exit $bad
