#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make run: build, boot the VM with the module and run the main job in it.
# KVER=release picks the kernel (default: the oldest supported series).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kver=${KVER:-$(scripts/kernels.sh | head -1)}
make -s -j"$(nproc)" all
scripts/kmod.sh "$kver"
stage=build/run/bin
rm -rf "$stage" && mkdir -p "$stage"
cp build/tools/tioctl "$stage/"
cat >build/run/guest.sh <<'GUEST'
#!/bin/sh
./tioctl info
GUEST
exec tests/vm/run.sh -k "$kver" -m "build/kmod/$kver/kmod/tensorio.ko" \
	-b "$stage" -s build/run/guest.sh -t 600
