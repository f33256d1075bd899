#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what tensorio needs from Debian's packages, fetch the test kernels
# and extract checkpatch.pl, kernel-doc and the kselftest headers into
# build/ksrc. Only make deps, check, run, bench and fuzz run it.
# Idempotent; fast when nothing is missing. As non-root, prints the one
# apt-get command to run instead of running it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${TIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorio}
ksrc=$top/build/ksrc

pkgs=(build-essential pkg-config kmod cpio xz-utils busybox-static
      qemu-system-x86 liburing-dev libdrm-dev libdlpack-dev libdw-dev libunwind-dev
      libjson-c-dev dpkg-dev jq sparse gnuplot-nox fio linux-headers-amd64
      linux-source-6.1 dkms flex bison bc libelf-dev libssl-dev
      valgrind clang libclang-rt-14-dev llvm-14 libamdhip64-dev
      python3-dev python3-setuptools python3-pip python3-pytest python3-numpy
      python3-torch libtorch-dev pybind11-dev
      libucx-dev ucx-utils
      libibverbs-dev ibverbs-providers ibverbs-utils perftest iproute2)

missing=()
declare -A have
while read -r name status; do
	have[$name]=$status
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${pkgs[@]}" 2>/dev/null || true)
for p in "${pkgs[@]}"; do
	[ "${have[$p]:-}" = installed ] || missing+=("$p")
done

# The newest 6.12 headers: resolved only when none are installed yet.
if ! compgen -G '/usr/src/linux-headers-6.12.*-amd64' >/dev/null; then
	[ "$(id -u)" = 0 ] && apt-get update -qq
	h612=$(apt-cache depends linux-headers-6.12-amd64 2>/dev/null |
	       awk '/Depends: linux-headers-6.12.*-amd64$/ {print $2; exit}')
	[ -n "$h612" ] || { echo "deps: no linux-headers-6.12 in apt" >&2; exit 1; }
	missing+=("$h612")
fi

if [ ${#missing[@]} -gt 0 ]; then
	cmd="apt-get install -y --no-install-recommends ${missing[*]}"
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages; run as root:" >&2
		echo "  apt-get update && $cmd" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ] \
		|| apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $cmd >/dev/null
fi

# Test kernels that are not installed in /boot (the 6.1 image is normally
# not): download the image package and unpack it into the cache only.
fetch_kernel() {
	local ver=$1 pkg dir
	[ -e "/boot/vmlinuz-$ver" ] && [ -d "/lib/modules/$ver/kernel" ] && return 0
	dir=$cache/kernels/$ver
	[ -e "$dir/.done" ] && return 0
	for pkg in "linux-image-$ver-unsigned" "linux-image-$ver"; do
		apt-cache show "$pkg" >/dev/null 2>&1 && break
	done
	echo "deps: fetching $pkg into $dir"
	rm -rf "$dir" && mkdir -p "$dir/deb"
	(cd "$dir/deb" && apt-get download -qq -o APT::Sandbox::User=root "$pkg")
	dpkg-deb -x "$dir"/deb/*.deb "$dir"
	rm -rf "$dir/deb"
	touch "$dir/.done"
}
for h in /usr/src/linux-headers-*-amd64; do
	[ -e "$h/Module.symvers" ] && fetch_kernel "${h#/usr/src/linux-headers-}"
done

# checkpatch.pl and the kselftest headers, from Debian's linux-source-6.1.
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -1)
if [ -n "$tarball" ] && { [ ! -e "$ksrc/.done" ] || [ "$tarball" -nt "$ksrc/.done" ] ||
			  [ ! -e "$ksrc/scripts/kernel-doc" ]; }; then
	echo "deps: extracting checkpatch, kernel-doc and kselftest headers from $tarball"
	rm -rf "$ksrc" && mkdir -p "$ksrc"
	tar -xf "$tarball" -C "$ksrc" --strip-components=1 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/kernel-doc \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h
	touch "$ksrc/.done"
fi
exit 0
