#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run every test_* program in a directory; fail if any failed.
rc=0
for t in "$1"/test_*; do
	[ -x "$t" ] || continue
	echo "# $t"
	"$t" || rc=1
done
exit $rc
