# SPDX-License-Identifier: GPL-2.0
# Sourced by shell test scripts: t NAME CMD... runs CMD and prints one TAP
# line (numbered by $n), the command's output as comments when it fails,
# and sets bad=1 then.
n=0 bad=0
t() {
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n $name"
	else
		echo "$out" | sed 's/^/# /'
		echo "not ok $n $name"
		bad=1
	fi
}
