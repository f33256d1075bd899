# SPDX-License-Identifier: GPL-2.0
# TAP helpers for the bash tests (sourced). Counters: n (tests run), and
# bad and fail (the same flag under two names), set to 1 by a failure.
#   t NAME CMD...                CMD exits 0
#   t NAME WANT PATTERN CMD...   CMD exits WANT (a number) and its output
#                                matches PATTERN (grep)
# A failure prints the command's output as "# " comments.
n=0 bad=0 fail=0
t() {
	local name=$1 want=0 pat= out rc
	shift
	if [ $# -ge 3 ] && [[ $1 =~ ^[0-9]+$ ]]; then
		want=$1 pat=$2
		shift 2
	fi
	n=$((n + 1))
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && { [ -z "$pat" ] || grep -q -- "$pat" <<<"$out"; }; then
		echo "ok $n $name"
	else
		sed 's/^/# /' <<<"$out"
		echo "not ok $n $name (exit $rc, want $want)"
		bad=1 fail=1
	fi
}
