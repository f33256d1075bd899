#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# scripts/check-commands.sh passes on the tree and fails on a command that
# one of its lists lacks or names twice.
top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/scripts/check-commands.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A fresh copy of the three files and of the library's table, which a
# stand-in tioctl prints.
fresh() {
	rm -rf "$tmp/root" && mkdir -p "$tmp/root/uapi/linux" "$tmp/root/kmod" "$tmp/root/docs"
	cp "$top/uapi/linux/tensorio.h" "$tmp/root/uapi/linux/"
	cp "$top/kmod/tio_cmds.h" "$tmp/root/kmod/"
	cp "$top/docs/uapi.md" "$tmp/root/docs/"
	"$top/build/tools/tioctl" commands --json >"$tmp/root/lib.json"
	printf '#!/bin/sh\ncat %s\n' "$tmp/root/lib.json" >"$tmp/tioctl"
	chmod +x "$tmp/tioctl"
}

# expect N NAME STATUS FAILS PATTERN: the check on the copy exits STATUS,
# fails FAILS of its three lines and says PATTERN.
expect() {
	local n=$1 name=$2 status=$3 fails=$4 pat=$5 out rc
	out=$(TIOCTL=${TIOCTL:-$tmp/tioctl} "$check" "${ROOT:-$tmp/root}" 2>&1)
	rc=$?
	if [ "$rc" = "$status" ] && [ "$(grep -c '^not ok' <<<"$out")" = "$fails" ] &&
	   grep -q -- "$pat" <<<"$out"; then
		echo "ok $n $name"
	else
		echo "${out//$'\n'/$'\n'# }" | sed '1s/^/# /'
		echo "not ok $n $name (exit $rc, want $status)"
	fi
}

echo "TAP version 13"
echo "1..8"
ROOT=$top TIOCTL=$top/build/tools/tioctl expect 1 "the tree's lists agree" 0 0 "^ok 3 "
fresh
expect 2 "a copy of them agrees" 0 0 "^ok 3 "
sed -i '/^TIO_CMD(BUF_WAIT,/d' "$tmp/root/kmod/tio_cmds.h"
expect 3 "a command missing from kmod/tio_cmds.h fails" 1 1 "missing: BUF_WAIT"
fresh
sed -i 's/^\(TIO_CMD(FENCE_EMIT,.*\)/\1\n\1/' "$tmp/root/kmod/tio_cmds.h"
expect 4 "a command listed twice in kmod fails" 1 1 "named twice: FENCE_EMIT"
fresh
jq -c '[.[] | select(.name != "RING_SETUP")]' "$tmp/root/lib.json" >"$tmp/lib.json" &&
	mv "$tmp/lib.json" "$tmp/root/lib.json"
expect 5 "a command missing from the library's table fails" 1 1 "missing: RING_SETUP"
fresh
sed -i 's/^### TIO_IOC_FENCE_EXPORT/### Exporting a point/' "$tmp/root/docs/uapi.md"
expect 6 "a command without its docs/uapi.md heading fails" 1 1 "missing: FENCE_EXPORT"
fresh
sed -i 's|^#define TIO_IOC_RING_ENTER.*|&\n#define TIO_IOC_NEW_CMD\t_IOWR(TIO_IOC_MAGIC, 0x23, struct tio_info)|' \
	"$tmp/root/uapi/linux/tensorio.h"
expect 7 "a new uapi command that no list has fails all three" 1 3 "missing: NEW_CMD"
fresh
TIOCTL=/bin/false expect 8 "a tioctl that fails fails the library's line" 1 1 "commands failed"
