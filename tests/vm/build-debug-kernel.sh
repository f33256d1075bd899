#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
#   build-debug-kernel.sh [debug|fuzz]
# Build the debug kernel (tinyconfig + tests/vm/debug.config) from Debian's
# linux-source-6.1, or its fuzz variant (the same with tests/vm/fuzz.config
# on top: KCOV without KASAN, lockdep and kmemleak), and install it into
# the deps cache as if it were an unpacked Debian kernel:
# kernels/<release>/{boot/vmlinuz-<release>, lib/modules/<release>/{kernel,
# build}}. Cached by the fragments' and the source's hash, which also ends
# the release name (-tio-debug-<hash>, -tio-fuzz-<hash>), so kernels of two
# fragments never share a name; prints the release. The build tree
# (<variant>-build-<hash>, the modules' build directory) is kept with the
# most recent other one of its variant.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorio}
variant=${1:-debug}
case $variant in
debug) frags=("$top/tests/vm/debug.config") ;;
fuzz) frags=("$top/tests/vm/debug.config" "$top/tests/vm/fuzz.config") ;;
*) echo "usage: $0 [debug|fuzz]" >&2; exit 2 ;;
esac
tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -1)
key=$( (cat "${frags[@]}"; stat -c '%s %Y' "$tarball") | sha256sum | cut -c1-12)
src=$cache/$variant-build-$key
stamp=$cache/$variant-$key.release

mkdir -p "$cache"
# Several checkouts may share the cache: one build at a time, and a
# waiter uses what the first one built.
exec 9>"$cache/debug.lock"
flock 9
if [ -e "$stamp" ] && [ -e "$src/.release" ]; then
	cat "$stamp"
	exit 0
fi
log=$cache/$variant-$key.log
echo "$variant kernel: building in $src (log $log, several minutes)" >&2
{
	# shellcheck disable=SC2012
	ls -dt "$cache/$variant"-build-* 2>/dev/null | tail -n +2 | xargs -r rm -rf
	rm -rf "$src"
	mkdir -p "$src"
	tar -xf "$tarball" -C "$src" --strip-components=1
	cd "$src"
	export LOCALVERSION=-$key
	make tinyconfig
	scripts/kconfig/merge_config.sh -m .config "${frags[@]}"
	make olddefconfig
	# Every requested option (the last fragment's word on it) must have
	# survived dependency resolution; one turned off may also be gone.
	missing=$(grep -hE '^CONFIG_[A-Z0-9_]+=' "${frags[@]}" |
		awk -F= '{ v[$1] = $0; if (!($1 in o)) o[$1] = ++n; k[o[$1]] = $1 }
			END { for (i = 1; i <= n; i++) print v[k[i]] }' |
		while IFS= read -r l; do
		case $l in *=n) ! grep -qE "^${l%=n}=" .config || echo "$l" ;;
		*) grep -qxF "$l" .config || echo "$l" ;; esac
	done)
	[ -z "$missing" ] || { echo "$variant kernel: options lost: $missing"; exit 1; }
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
