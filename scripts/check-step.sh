# SPDX-License-Identifier: GPL-2.0
# make check's step helpers, sourced by scripts/check.sh (and by
# tests/tools/test-check-step.sh). The caller sets $log, a directory for
# the steps' logs, and pass=0 fail=0 skip=0.

# step NAME CMD...: run CMD, show its output, count its TAP lines. A step
# that fails without saying "not ok" counts as one failure of its own.
step() {
	local name=$1 out=$log/$1.log rc p f s
	shift
	echo "# === $name"
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	p=$(grep -Ec '^ok( |$)' "$out" | head -1)
	s=$(grep -Ec '^ok( |$).*# (SKIP|skip)' "$out" | head -1)
	f=$(grep -Ec '^not ok( |$)' "$out" | head -1)
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $name exited with status $rc"
		f=1
	fi
	pass=$((pass + p - s)) skip=$((skip + s)) fail=$((fail + f))
	if [ "$f" != 0 ]; then
		grep -B3 --no-group-separator -E '^not ok( |$)' "$out" ||
			echo "not ok - $name exited with status $rc"
	fi | sed "s|^|$name: |" >>"$log/failed"
}

# tap NAME CMD...: one TAP line for a command that prints no TAP itself.
tap() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "ok - $name"
	else
		echo "$out" | sed 's/^/# /'
		echo "not ok - $name"
	fi
}

# The totals line, the failures first (each with the three lines before
# it): a log cut to its tail still names them.
step_totals() {
	if [ -s "$log/failed" ]; then
		echo "# failed:"
		sed 's/^/#   /' "$log/failed"
	fi
	echo "$pass passed, $fail failed, $skip skipped"
}
