#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# pip install --no-build-isolation ./python, offline (--no-index), into a
# scratch directory; then the installed package, away from the tree, must
# import with its own copy of libtensorio and work. TAP output.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$top/python/build" "$top"/python/*.egg-info' EXIT
. "$top/tests/include/tap.sh"
echo "TAP version 13"
echo "1..4"
t "pip install --no-build-isolation --no-index ./python" \
	$py -m pip install -q --no-build-isolation --no-index --no-deps \
	--target "$tmp/site" "$top/python"
smoke='
import os, sys, tensorio, numpy
assert tensorio.__file__.startswith(sys.argv[1]), tensorio.__file__
maps = open("/proc/self/maps").read()
lib = [l.split()[-1] for l in maps.splitlines() if "libtensorio.so" in l]
assert lib and all(p.startswith(sys.argv[1]) for p in lib), lib
t = tensorio.empty((2, 2), "int32")
tensorio.from_dlpack(numpy.asarray(t))
assert tensorio.get_global_func("tensorio.noop")() is None
print(tensorio.__version__, tensorio.backend())
'
t "the installed package imports its own libtensorio" \
	env -C "$tmp" PYTHONPATH="$tmp/site" $py -c "$smoke" "$tmp/site"
t "the package version is the library version" \
	env -C "$tmp" PYTHONPATH="$tmp/site" $py -c \
	"import tensorio, sys; sys.exit(tensorio.__version__ != '$(sed -n 's/^VERSION := //p' "$top/Makefile")')"
# Built where libtorch-dev is installed (python/setup.py), and then used.
accel=0
[ -e /usr/include/torch/csrc/autograd/python_variable.h ] &&
	[ -e /usr/include/pybind11/pybind11.h ] && accel=1
t "torch tensors take the accelerator exactly when it can be built ($accel)" \
	env -C "$tmp" PYTHONPATH="$tmp/site" $py -c \
	"import sys, torch, tensorio; sys.exit(tensorio._tensorio._torch_accel() != bool($accel))"
exit $bad
