# SPDX-License-Identifier: GPL-2.0
# TAP helpers for the bash tests (sourced): counters n and fail, and
#   t NAME WANT PATTERN CMD...   CMD exits WANT and its output matches PATTERN
n=0 fail=0
t() {
	local name=$1 want=$2 pat=$3 out rc
	shift 3
	n=$((n + 1))
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && grep -q -- "$pat" <<<"$out"; then
		echo "ok $n $name"
	else
		sed 's/^/# /' <<<"$out"
		echo "not ok $n $name (exit $rc, want $want)"
		fail=1
	fi
}
