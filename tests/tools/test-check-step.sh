#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# scripts/check-step.sh: make check's counting of TAP lines, and the list
# of failures it prints again just above its totals, each with the three
# lines before it (what a log cut to its tail still shows).
top=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
pass=0 fail=0 skip=0
. "$top/scripts/check-step.sh"
{
	step one bash -c 'echo "ok 1 - a"; echo "ok 2 - b # SKIP why"; echo "# why it broke"; echo "not ok 3 - c"'
	step two bash -c 'exit 3'
	step three bash -c 'echo "ok 1 - d"'
	step_totals
} >"$log/out" 2>&1
tail -7 "$log/out" >"$log/tail"
cat >"$log/want" <<'WANT'
# failed:
#   one: ok 1 - a
#   one: ok 2 - b # SKIP why
#   one: # why it broke
#   one: not ok 3 - c
#   two: not ok - two exited with status 3
2 passed, 2 failed, 1 skipped
WANT
echo "1..2"
rc=0
if cmp -s "$log/want" "$log/tail"; then
	echo "ok 1 - the failures again, each named by its step, then the totals"
else
	diff "$log/want" "$log/tail" | sed 's/^/# /'
	echo "not ok 1 - the failures again, each named by its step, then the totals"
	rc=1
fi
: >"$log/failed"
pass=1 fail=0 skip=0
if [ "$(step_totals)" = "1 passed, 0 failed, 0 skipped" ]; then
	echo "ok 2 - no failures: the totals alone"
else
	echo "not ok 2 - no failures: the totals alone"
	rc=1
fi
exit $rc
