#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# check-commands.sh [ROOT]: the driver's commands are those of the uapi
# header (ROOT/uapi/linux/tensorio.h); three lists must name each of them
# exactly once, and nothing else:
#   ROOT/kmod/tio_cmds.h  the driver's rows, TIO_CMD(NAME, ...)
#   the library           its command table, tio_command_info(), as
#                         "tioctl commands --json" lists it ($TIOCTL,
#                         default build/tools/tioctl: make all)
#   ROOT/docs/uapi.md     the command reference: one heading per command
# One TAP line per list: a command added in one place and forgotten in
# another fails. ROOT defaults to the source tree.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$top}
tioctl=${TIOCTL:-$top/build/tools/tioctl}

uapi=$(sed -nE 's/^#define[[:space:]]+TIO_IOC_([A-Z0-9_]+)[[:space:]]+_IO.*/\1/p' \
	"$root/uapi/linux/tensorio.h" | sort)
n=0 rc=0

# check WHAT: the names on stdin against the uapi's, each exactly once.
check() {
	local what=$1 got diff
	got=$(sort)
	diff=$(diff <(echo "$uapi") <(echo "$got") | grep '^[<>]' |
		sed 's/^</# missing:/; s/^>/# not in the uapi, or named twice:/')
	n=$((n + 1))
	if [ -n "$uapi" ] && [ -z "$diff" ]; then
		echo "ok $n - $what names every TIO_IOC_ command once"
	else
		echo "$diff"
		echo "not ok $n - $what names every TIO_IOC_ command once"
		rc=1
	fi
}

echo "1..3"
check "kmod/tio_cmds.h" < <(sed -nE 's/^TIO_CMD\(([A-Z0-9_]+),.*/\1/p' "$root/kmod/tio_cmds.h")
if lib=$("$tioctl" commands --json 2>&1); then
	check "the library's command table" < <(jq -r '.[].name' <<<"$lib")
else
	echo "$lib" | sed 's/^/# /'
	n=$((n + 1)) rc=1
	echo "not ok $n - the library's command table: $tioctl commands failed"
fi
check "docs/uapi.md's headings" < <(grep -E '^#+ ' "$root/docs/uapi.md" |
	grep -oE 'TIO_IOC_[A-Z0-9_]+' | sed 's/^TIO_IOC_//')
exit $rc
