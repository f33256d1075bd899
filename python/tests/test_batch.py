# SPDX-License-Identifier: LGPL-2.1-or-later
"""Batches: calls queued, run on leaving the block, per-entry results."""

import pytest

import tensorio


def test_batch_driver_and_python_calls():
    s = tensorio.Stream()
    emit = tensorio.get_global_func("tio.fence.emit")
    with tensorio.Batch() as b:
        r1 = b.call(emit, s)
        r2 = b.call("tio.fence.emit", s)
        r3 = b.call(lambda x: x * 2, 21)
        assert len(b) == 3
        with pytest.raises(RuntimeError, match="not run yet"):
            r1.value
    assert (r1.value, r2.value, r3.result()) == (1, 2, 42)
    assert r1.status == 0 and r3.index == 2
    s.signal(2)


def test_batch_errors_per_entry():
    def bad():
        raise KeyError("entry")
    with tensorio.Batch() as b:
        ok = b.call(lambda: 1)
        err = b.call(bad)
        sig = b.call("tio.fence.signal", tensorio.Stream(), 5)
        after = b.call(lambda: 2)
    assert ok.value == 1 and after.value == 2
    with pytest.raises(KeyError, match="entry"):
        err.value
    with pytest.raises(ValueError):
        sig.value
    assert sig.status < 0


def test_batch_not_run_when_block_raises():
    ran = []
    with pytest.raises(ZeroDivisionError):
        with tensorio.Batch() as b:
            r = b.call(lambda: ran.append(1))
            1 / 0
    assert ran == []
    with pytest.raises(RuntimeError):
        r.value


def test_batch_bad_input():
    b = tensorio.Batch()
    with pytest.raises(KeyError):
        b.call("no.such.function")
    with pytest.raises(TypeError):
        b.call()
    with pytest.raises(TypeError):
        b.call(42)
    with pytest.raises(TypeError):
        b.call(lambda x: x, object())
    b.submit()
    with pytest.raises(RuntimeError, match="already run"):
        b.call(lambda: 1)


def test_driver_commands_in_one_kernel_entry():
    s = tensorio.Stream()
    with tensorio.Batch() as b:
        rs = [b.call("tio.fence.emit", s) for _ in range(8)]
        b.call("tio.fence.signal", s, 8)
    assert [r.value for r in rs] == list(range(1, 9)) and s.signalled == 8
    # The kernel backend: one kernel entry for all nine (the command
    # ring's RING_ENTER, or one io_uring_enter where there is no ring).
    assert b.kernel_entries == (1 if tensorio.backend() == "kernel" else 0)
