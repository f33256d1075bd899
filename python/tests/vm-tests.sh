#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Guest script (tests/vm/run.sh -s): the Python suites against the driver
# (TIO_BACKEND=kernel: a missing driver fails loudly), staged by
# python/tests/vm-stage.sh into /tio/bin.
b=/tio/bin
export TIO_BACKEND=kernel TIO_TAP=1 PYTHONHOME=$b/py PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=$b/py/site LD_LIBRARY_PATH=$b/libs
export TIO_PY_FIXTURES=$b/fixtures TIO_ST_CORPUS=$b/safetensors-bad
cd /tmp || exit 1
# test_leaks repeats every operation 1300 times: minutes under TCG, and it
# checks the interpreter side, which the host run covers.
$b/python3 -m pytest -q -p no:cacheprovider --ignore=$b/tests/test_leaks.py $b/tests
