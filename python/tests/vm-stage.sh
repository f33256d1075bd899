#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Stage the Python suites for the test VM (tests/vm/run.sh -b DIR): the
# interpreter and a pruned standard library, pytest and numpy (torch, at
# ~1 GiB with libtorch, does not fit a 1 GiB guest: its tests skip there),
# the in-tree tensorio package with libtensorio, the tests, and every
# shared library all of it needs. Usage: vm-stage.sh DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: vm-stage.sh DIR}
rm -rf "$out" && mkdir -p "$out/py/lib" "$out/py/site" "$out/libs"
py=/usr/bin/python3.11
cp "$py" "$out/python3"
tar -C /usr/lib -cf - --exclude='python3.11/test' --exclude='python3.11/idlelib' \
	--exclude='python3.11/tkinter' --exclude='python3.11/ensurepip' \
	--exclude='python3.11/lib2to3' --exclude='python3.11/turtledemo' \
	--exclude='python3.11/config-3.11-*' --exclude='python3.11/pydoc_data' \
	--exclude='python3.11/unittest/test' python3.11 | tar -C "$out/py/lib" -xf -
dist=/usr/lib/python3/dist-packages
for p in _pytest pytest pluggy iniconfig packaging py py.py attr attrs numpy; do
	cp -a "$dist/$p" "$out/py/site/"
done
rm -rf "$out/py/site/numpy/tests" "$out/py/site/numpy/"*/tests
cp -a "$top/python/tensorio" "$out/py/site/"
# No torch in the guest: its accelerator would only drag libtorch in.
rm -f "$out/py/site/tensorio/_torch_accel"*
cp -L "$top/build/lib/libtensorio.so.0" "$out/libs/"
cp -a "$top/python/tests" "$out/tests"
[ -e "$top/build/tests/lib/fixtures/fixture_module.so" ] &&
	mkdir -p "$out/fixtures" && cp "$top/build/tests/lib/fixtures/fixture_module.so" \
		"$top/build/tests/lib/fixtures/fake_hip.so" \
		"$top/build/tests/lib/fixtures/fake_cuda.so" "$out/fixtures/"
# Shared libraries of every extension module (run.sh copies only those
# of the top-level programs).
find "$out" -name '*.so*' -type f | while read -r so; do
	ldd "$so" 2>/dev/null | grep -o '/[^ ]*' || true
done | sort -u | while read -r lib; do
	case $lib in */libtensorio.so*) continue ;; esac
	cp -nL "$lib" "$out/libs/" 2>/dev/null || true
done
cp "$top/python/tests/vm-tests.sh" "$out/run-python-tests.sh"
