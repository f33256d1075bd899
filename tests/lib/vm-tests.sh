#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest script (tests/vm/run.sh -s): the library's tests that reach a
# backend (test_dev_*, test_file_*, test_gpu_*: scripts/check.sh copies
# them to /tio/bin) against the driver, TIO_BACKEND=kernel so that a
# missing driver fails loudly.
rc=0
export TIO_BACKEND=kernel
cd /tmp || exit 1
for t in /tio/bin/test_*; do
	[ -x "$t" ] || continue
	echo "# vm: $t"
	"$t" || rc=1
done
exit $rc
