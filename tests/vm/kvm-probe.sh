#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Does KVM actually boot a kernel here? Nested KVM can hang at kernel entry,
# so boot the image with no initramfs and wait for its first console line.
# The answer is cached per host.
set -u
cache=${TIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorio}
stamp=$cache/kvm-probe
[ -r /dev/kvm ] && [ -w /dev/kvm ] || exit 1
if [ ! -e "$stamp" ]; then
	mkdir -p "$cache"
	out=$(timeout -k 2 10 qemu-system-x86_64 -accel kvm -cpu host -m 256M \
		-nodefaults -nographic -no-reboot -serial stdio -kernel "$1" \
		-append "console=ttyS0 panic=-1" </dev/null 2>/dev/null | head -c 4096)
	case $out in *"Linux version"*) echo yes ;; *) echo no ;; esac >"$stamp"
fi
[ "$(cat "$stamp")" = yes ]
