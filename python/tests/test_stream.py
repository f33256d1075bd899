# SPDX-License-Identifier: LGPL-2.1-or-later
"""Streams and fences; the GIL is released while waiting."""

import os
import threading
import time

import pytest

import tensorio


def test_emit_signal_wait():
    s = tensorio.Stream()
    a, b = s.emit(), s.emit()
    assert b == a + 1 and s.signalled == 0
    s.signal(a)
    assert s.signalled == a and s.wait(a) == 0 and s.wait(a, timeout=0) == 0
    s.signal(b, error=-5)
    assert s.wait(b) == -5


def test_wait_timeout():
    s = tensorio.Stream()
    n = s.emit()
    with pytest.raises(TimeoutError):
        s.wait(n, timeout=0.01)
    s.signal(n)


def test_wait_releases_gil():
    s = tensorio.Stream()
    n = s.emit()
    t = threading.Thread(target=lambda: (time.sleep(0.05), s.signal(n)))
    t.start()
    assert s.wait(n, timeout=30) == 0    # would deadlock holding the GIL
    t.join()


def test_doorbell():
    # ring() writes the doorbell as a device would; a waiting thread sees it.
    s = tensorio.Stream(doorbell=True)
    a, b = s.emit(), s.emit()
    s.ring(a)
    assert s.signalled == a and s.wait(a, timeout=0) == 0
    t = threading.Thread(target=lambda: (time.sleep(0.05), s.ring(b)))
    t.start()
    assert s.wait(b, timeout=30) == 0
    t.join()
    with pytest.raises(ValueError, match="no doorbell"):
        tensorio.Stream().ring(1)


@pytest.mark.parametrize("call,exc", [
    (lambda s: s.wait(99), ValueError),
    (lambda s: s.signal(99), ValueError),
    (lambda s: s.signal(s.emit(), error=5), ValueError),
    (lambda s: s.wait(1, timeout=-1), ValueError),
    (lambda s: s.wait("x"), TypeError),
])
def test_bad_input(call, exc):
    s = tensorio.Stream()
    with pytest.raises(exc):
        call(s)


def test_sync_file():
    s = tensorio.Stream()
    n = s.emit()
    try:
        fd = s.export_sync_file(n)
    except (OSError, NotImplementedError) as e:
        assert tensorio.backend() == "user"
        pytest.skip("no sync_file on the user backend: %s" % e)
    finally:
        s.signal(n)
    os.close(fd)
