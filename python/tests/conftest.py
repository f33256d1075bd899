# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every test must leave the library's live objects and handles, and the
refcounts it checks, where they were. TIO_TAP=1 prints TAP for make check."""

import gc
import os

import pytest

import tensorio
from tensorio import _tensorio

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def live():
    gc.collect()
    return _tensorio._live_objects(), _tensorio._live_handles()


@pytest.fixture(autouse=True)
def no_leaks():
    before = live()
    yield
    after = live()
    assert after == before, "live (objects, handles) %s -> %s" % (before, after)


@pytest.fixture
def fixture_module_path():
    p = os.path.join(os.environ.get("TIO_PY_FIXTURES") or
                     os.path.join(TOP, "build/tests/lib/fixtures"), "fixture_module.so")
    if not os.path.exists(p):
        pytest.skip("build/tests/lib not built (make)")
    return p


_tap = {"n": 0}


def pytest_runtest_logreport(report):
    if os.environ.get("TIO_TAP") != "1":
        return
    name = report.nodeid
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _tap["n"] += 1
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            print("\nok %d - %s # SKIP %s" % (_tap["n"], name, reason))
        elif report.passed:
            print("\nok %d - %s" % (_tap["n"], name))
        else:
            print("\nnot ok %d - %s" % (_tap["n"], name))
    elif report.when == "teardown" and report.failed:
        _tap["n"] += 1
        print("\nnot ok %d - %s (teardown: leak check)" % (_tap["n"], name))


def pytest_collectreport(report):
    # A whole module skipped (a missing numpy) is one TAP skip.
    if os.environ.get("TIO_TAP") == "1" and report.skipped:
        _tap["n"] += 1
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        print("\nok %d - %s # SKIP %s" % (_tap["n"], report.nodeid, reason))
