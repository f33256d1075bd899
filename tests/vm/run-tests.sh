#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Default guest script: every kselftest binary in /tio/bin, in name order.
rc=0
for t in ./tio_*_test; do
	[ -x "$t" ] || continue
	echo "# vm: $t"
	"$t" || rc=1
done
exit $rc
