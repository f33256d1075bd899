#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kmod lines the kselftests reach, and with the fuzzer's:
#   cover-kselftests.sh [-k KVER] [-p PCS]
# Builds the module with gcov (GCOV_PROFILE=y, build/kmod-gcov), runs the
# kselftests (build/kselftest) with it in the debug-kernel VM, copies the
# module's gcda files out of debugfs and turns them into the lines that ran
# (gcov), written to build/fuzz/kselftest-lines.txt ("FILE:LINE"). Then
# prints the kmod line coverage of the kselftests alone and, with the PCs
# of a fuzz run (-p, default build/fuzz/run/pcs), of both together, both
# over the lines of the fuzzer's KCOV build (tests/fuzz/kcov-lines.py).
# gcov counts every context (interrupts, workqueues, timers, RCU), where
# KCOV sees only the fuzzer's own tasks.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kver= pcs=$top/build/fuzz/run/pcs
while getopts "k:p:" o; do
	case $o in k) kver=$OPTARG ;; p) pcs=$OPTARG ;; *) exit 2 ;; esac
done
[ -n "$kver" ] || kver=$("$top/tests/vm/build-debug-kernel.sh")
gdir=$top/build/kmod-gcov
TIO_KMOD_OUT=$gdir "$top/scripts/kmod.sh" "$kver" GCOV_PROFILE=y >/dev/null
kdir=$top/build/kmod-kcov
TIO_KMOD_OUT=$kdir "$top/scripts/kmod.sh" "$kver" KCOV_INSTRUMENT=y KCFLAGS=-g >/dev/null
make -s -C "$top" tests >/dev/null
obj=$gdir/$kver/kmod
out=$top/build/fuzz
mkdir -p "$out"
script=$(mktemp /tmp/tio-cover-guest.XXXXXX)
trap 'rm -f "$script"' EXIT
# The VM's kselftest script (tests/vm/run-tests.sh), then the gcov data.
{
	sed '/^exit /d' "$top/tests/vm/run-tests.sh"
	cat <<GUEST
# debugfs reports size 0: copy with cat, then one tarball on the console.
mkdir -p /tmp/gcda
for f in /sys/kernel/debug/gcov$obj/*.gcda; do cat "\$f" >/tmp/gcda/\${f##*/}; done
echo "TIO-GCOV-BEGIN"
tar -C /tmp/gcda -czf - . | base64
echo "TIO-GCOV-END"
exit \$rc
GUEST
} >"$script"
log=$out/kselftest-gcov.log
set +e
"$top/tests/vm/run.sh" -k "$kver" -m "$obj/tensorio.ko" -b "$top/build/kselftest" \
	-s "$script" -t 1200 >"$log" 2>&1
vmrc=$?
set -e
grep -E '^(not )?ok ' "$log" | grep -c '^ok' | sed 's/^/# kselftests: /; s/$/ passed/'
[ $vmrc = 0 ] || echo "# kselftests: the VM run failed (status $vmrc, log $log)"
rm -f "$obj"/*.gcda
sed -n '/^TIO-GCOV-BEGIN/,/^TIO-GCOV-END/p' "$log" | sed '1d;$d' | tr -d '\r' |
	base64 -d | tar -C "$obj" -xzf -
# gcov's JSON: every line of kmod/ with a count.
(cd "$obj" && gcov -j -o . ./*.gcda >/dev/null 2>&1)
python3 - "$obj" >"$out/kselftest-lines.txt" <<'PY'
import glob, gzip, json, os, sys
seen = set()
for f in glob.glob(os.path.join(sys.argv[1], '*.gcov.json.gz')):
    for src in json.load(gzip.open(f))['files']:
        if os.path.basename(os.path.dirname(src['file'])) != 'kmod':
            continue
        for ln in src['lines']:
            if ln['count'] > 0:
                seen.add('%s:%d' % (os.path.basename(src['file']), ln['line_number']))
print('\n'.join(sorted(seen)))
PY
ko=$kdir/$kver/kmod/tensorio.ko
: >"$out/empty.pcs"
echo "# kselftests alone (gcov):"
"$top/tests/fuzz/kcov-lines.py" report "$ko" "$out/empty.pcs" --also "$out/kselftest-lines.txt" \
	--uncovered "$out/kselftest-uncovered.txt"
if [ -s "$pcs" ]; then
	echo "# the fuzzer ($pcs, KCOV) and the kselftests (gcov) together:"
	"$top/tests/fuzz/kcov-lines.py" report "$ko" "$pcs" --also "$out/kselftest-lines.txt" \
		--uncovered "$out/together-uncovered.txt"
fi
