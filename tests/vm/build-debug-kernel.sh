#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the debug kernel (tinyconfig + tests/vm/debug.config) from Debian's
# linux-source-6.1 and install it into the deps cache as if it were an
# unpacked Debian kernel: kernels/<release>/{boot/vmlinuz-<release>,
# lib/modules/<release>/{kernel,build}}. Cached by the fragment's and the
# source's hash, which also ends the release name (-tio-debug-<hash>), so
# kernels of two fragments never share a name; prints the release. The
# build tree (debug-build-<hash>, the modules' build directory) is kept
# with the two most recent others.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorio}
frag=$top/tests/vm/debug.config
tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -1)
key=$( (cat "$frag"; stat -c '%s %Y' "$tarball") | sha256sum | cut -c1-12)
src=$cache/debug-build-$key
stamp=$cache/debug-$key.release

mkdir -p "$cache"
# Several checkouts may share the cache: one build at a time, and a
# waiter uses what the first one built.
exec 9>"$cache/debug.lock"
flock 9
if [ -e "$stamp" ] && [ -e "$src/.release" ]; then
	cat "$stamp"
	exit 0
fi
log=$cache/debug-$key.log
echo "debug kernel: building in $src (log $log, several minutes)" >&2
{
	# shellcheck disable=SC2012
	ls -dt "$cache"/debug-build-* 2>/dev/null | tail -n +3 | xargs -r rm -rf
	rm -rf "$src"
	mkdir -p "$src"
	tar -xf "$tarball" -C "$src" --strip-components=1
	cd "$src"
	export LOCALVERSION=-$key
	make tinyconfig
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make olddefconfig
	# Every requested option must have survived dependency resolution.
	missing=$(grep -E '^CONFIG_[A-Z0-9_]+=' "$frag" | while IFS= read -r l; do
		case $l in *=n) grep -qxF "# ${l%=n} is not set" .config || echo "$l" ;;
		*) grep -qxF "$l" .config || echo "$l" ;; esac
	done)
	[ -z "$missing" ] || { echo "debug kernel: options lost: $missing"; exit 1; }
	make -j"$(nproc)" bzImage modules
	make -s kernelrelease >"$src/.release"
} >"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
rel=$(cat "$src/.release")
dst=$cache/kernels/$rel
rm -rf "$dst" && mkdir -p "$dst/boot"
cp "$src/arch/x86/boot/bzImage" "$dst/boot/vmlinuz-$rel"
make -s -C "$src" LOCALVERSION="-$key" modules_install INSTALL_MOD_PATH="$dst" INSTALL_MOD_STRIP=1 >>"$log" 2>&1
ln -sfn "$src" "$dst/lib/modules/$rel/build"
echo "$rel" >"$stamp"
echo "$rel"
