#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a Debian kernel under QEMU with a busybox initramfs, load tensorio
# (and vgem with its dependencies), run a guest script, unload the module
# and check the kernel log. The guest's result becomes our exit status.
#
#   run.sh -k KVER -m tensorio.ko [-b BINDIR] [-s SCRIPT] [-i] [-t SECS]
#
#   -k KVER    kernel release (looked up in /boot, then the deps cache)
#   -K FILE    kernel image to boot instead (modules still from KVER)
#   -m FILE    tensorio.ko built for that kernel
#   -b DIR     directory copied to /tio/bin (with shared libraries)
#   -s FILE    guest script run as "sh FILE" (default: /tio/bin/run-tests.sh)
#   -i         measurement mode: TCG with -icount shift=0
#   -t SECS    overall timeout (default 300)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${TIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorio}
kver= kimg= module= bindir= script= icount=0 tmo=300
while getopts "k:K:m:b:s:it:" o; do
	case $o in
	k) kver=$OPTARG ;; K) kimg=$OPTARG ;; m) module=$OPTARG ;;
	b) bindir=$OPTARG ;; s) script=$OPTARG ;; i) icount=1 ;;
	t) tmo=$OPTARG ;; *) exit 2 ;;
	esac
done
[ -n "$kver" ] && [ -n "$module" ] || { echo "usage: see $0" >&2; exit 2; }

root=/
[ -d "/lib/modules/$kver/kernel" ] || root=$cache/kernels/$kver
moddir=$root/lib/modules/$kver
[ -n "$kimg" ] || kimg=$root/boot/vmlinuz-$kver
for f in "$kimg" "$moddir/kernel" "$module"; do
	[ -e "$f" ] || { echo "vm: missing $f (run scripts/deps.sh)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/tio-vm.XXXXXX)
qpid=
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

ird=$work/root
mkdir -p "$ird"/{bin,dev,proc,sys,tmp,var/tmp,run,tio/mods,tio/bin}
cp /bin/busybox "$ird/bin/busybox"
cp "$here/init" "$ird/init"
cp "$module" "$ird/tio/tensorio.ko"

# Kernel modules the tests need, dependencies first.
declare -A seen=()
add_mod() {
	local name=$1 path dep
	[ -n "${seen[$name]:-}" ] && return 0
	seen[$name]=1
	path=$(find "$moddir/kernel" -name "$name.ko*" | head -1)
	[ -n "$path" ] || { echo "vm: no module $name for $kver" >&2; return 1; }
	for dep in $(modinfo -F depends "$path" | tr , ' '); do
		add_mod "$dep"
	done
	case $path in
	*.xz) xz -dc "$path" >"$ird/tio/mods/$name.ko" ;;
	*.zst) zstd -qdc "$path" >"$ird/tio/mods/$name.ko" ;;
	*) cp "$path" "$ird/tio/mods/$name.ko" ;;
	esac
	echo "$name" >>"$ird/tio/mods/order"
}
for m in ${TIO_VM_MODULES:-vgem}; do add_mod "$m"; done
# Wanted where the kernel has them (tests skip without): loop for O_DIRECT.
for m in ${TIO_VM_OPT_MODULES:-loop}; do add_mod "$m" 2>/dev/null || true; done

# Test binaries and the shared libraries they need.
if [ -n "$bindir" ]; then
	cp -a "$bindir"/. "$ird/tio/bin/"
	for f in "$ird"/tio/bin/*; do
		[ -x "$f" ] && [ -f "$f" ] || continue
		# Scripts are not dynamic executables: nothing to copy.
		{ ldd "$f" 2>/dev/null || true; } | grep -o '/[^ ]*' |
		while read -r lib; do
			mkdir -p "$ird$(dirname "$lib")"
			cp -nL "$lib" "$ird$lib"
		done || true
	done
fi
[ -n "$script" ] && cp "$script" "$ird/tio/run.sh"
[ -e "$ird/tio/run.sh" ] || cp "$here/run-tests.sh" "$ird/tio/run.sh"

(cd "$ird" && find . | cpio -o -H newc --quiet) >"$work/initrd"

accel=(-accel tcg -cpu max)
smp=2
# icount runs one vCPU: with two, secondary CPU bring-up stalls for minutes.
[ "$icount" = 1 ] && accel=(-accel tcg,thread=single -cpu max -icount shift=0) && smp=1
if [ "$icount" = 0 ] && [ "${TIO_VM_ACCEL:-auto}" != tcg ] && \
   "$here/kvm-probe.sh" "$kimg"; then
	accel=(-accel kvm -cpu host)
fi

# no_timer_check: on a loaded TCG host the IO-APIC timer check can miss
# its ticks and panic the boot ("IO-APIC + timer doesn't work").
append="console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init no_timer_check"
append+=" tio.icount=$icount"
echo "# vm: kernel $kver (${accel[*]})"
# A kernel that dies before our init runs ran nothing of ours: under
# multi-threaded TCG, Debian's kernels now and then take an int3 oops while
# patching their own text early in boot. Such a boot is tried once more.
for try in 1 2; do
	: >"$work/console"	# exists before tail opens it
	timeout --foreground -k 5 "$tmo" qemu-system-x86_64 "${accel[@]}" \
		-m 1G -smp "$smp" -nodefaults -nographic -no-reboot -serial stdio \
		-kernel "$kimg" -initrd "$work/initrd" -append "$append" \
		</dev/null >"$work/console" 2>&1 &
	qpid=$!
	tail -n +1 -f --pid="$qpid" "$work/console" | tr -d '\r' |
		sed -u 's/\x1bc//g; s/\x1b\[[0-9;?]*[a-zA-Z]//g; /^SeaBIOS/d; s/^Booting from ROM\.\.//' &
	tpid=$!
	qrc=0
	wait "$qpid" || qrc=$?
	qpid=
	wait "$tpid" 2>/dev/null || true
	[ "$try" = 1 ] && [ "$qrc" != 124 ] && ! grep -q 'vm: init started' "$work/console" ||
		break
	echo "# vm: the kernel died before init started (nothing of ours ran); booting again"
done

rc=$(tr -d '\r' <"$work/console" | sed -n 's/^TIO-VM-EXIT: \([0-9]*\)$/\1/p' | tail -1)
if [ -z "$rc" ]; then
	[ "$qrc" = 124 ] && echo "not ok - vm $kver timed out after ${tmo}s" ||
		echo "not ok - vm $kver died before reporting (qemu rc $qrc)"
	exit 1
fi
exit "$rc"
