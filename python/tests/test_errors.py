# SPDX-License-Identifier: LGPL-2.1-or-later
"""Errors both ways: libtensorio kinds as Python exceptions, Python
exceptions as libtensorio Errors of the same kind."""

import errno

import pytest

import tensorio


def test_value_error_with_backtrace_note():
    with pytest.raises(ValueError, match="dtype") as e:
        tensorio.empty((2,), "float33")
    notes = getattr(e.value, "__notes__", [])
    assert notes and notes[0].startswith("libtensorio backtrace:")


def test_timeout_error_has_errno():
    s = tensorio.Stream()
    n = s.emit()
    with pytest.raises(TimeoutError) as e:
        s.wait(n, timeout=0.001)
    assert e.value.errno == errno.ETIME
    s.signal(n)


def test_os_error_family():
    with pytest.raises(OSError) as e:
        tensorio.import_dmabuf(10**6)    # not an open fd
    assert e.value.errno in (errno.EBADF, errno.EINVAL, errno.EOPNOTSUPP)


@pytest.mark.parametrize("exc", [ValueError, TypeError, KeyError, IndexError,
                                 MemoryError, PermissionError, NotImplementedError,
                                 TimeoutError, RuntimeError, ZeroDivisionError])
def test_python_error_through_c(exc):
    def f():
        raise exc("raised in python")
    tensorio.register_func("test.raise", f)
    try:
        g = tensorio.get_global_func("test.raise")
        with pytest.raises(exc) as e:
            g()
        assert "raised in python" in str(e.value)
        assert any("in f" in n for n in e.value.__notes__)
    finally:
        tensorio.remove_global_func("test.raise")


def test_subclass_maps_to_builtin_kind():
    class MyError(LookupError):
        pass

    def f():
        raise MyError("mine")
    tensorio.register_func("test.raise", f)
    try:
        with pytest.raises(LookupError, match="mine"):
            tensorio.get_global_func("test.raise")()
    finally:
        tensorio.remove_global_func("test.raise")


def test_unconvertible_return():
    tensorio.register_func("test.ret", lambda: object())
    try:
        with pytest.raises(TypeError, match="cannot pass"):
            tensorio.get_global_func("test.ret")()
    finally:
        tensorio.remove_global_func("test.ret")
