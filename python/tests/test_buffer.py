# SPDX-License-Identifier: LGPL-2.1-or-later
"""Buffers, empty(), tensors over buffers, dma-bufs, backend and info."""

import os
import sys

import pytest

import tensorio


def test_backend_and_info():
    assert tensorio.backend() in ("kernel", "user")
    i = tensorio.info()
    assert i["backend"] == tensorio.backend()
    assert "buffers" in i["features"]
    assert i["max_buf_size"] > 0


def test_empty():
    t = tensorio.empty((2, 3), "int16")
    assert isinstance(t, tensorio.Tensor)
    assert t.shape == (2, 3) and t.dtype == "int16" and t.ndim == 2
    assert t.strides == (3, 1) and t.nbytes == 12 and t.device == "cpu:0"
    assert t.is_contiguous and not t.readonly and len(t) == 2
    assert memoryview(t).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert tensorio.empty(5).shape == (5,)
    assert tensorio.empty((), "float64").shape == ()
    assert tensorio.empty((0, 4)).nbytes == 0
    assert tensorio.empty((1,), float).dtype == "float64"


@pytest.mark.parametrize("shape,dtype,exc", [
    ((2,), "float33", ValueError),
    ((2,), "", ValueError),
    ((2,), 5, TypeError),
    ((-1,), "float32", ValueError),
    (("a",), "float32", TypeError),
    ("23", "float32", TypeError),
    ((1,) * 9, "float32", ValueError),
    ((2**40, 2**40), "float32", ValueError),
])
def test_empty_bad_input(shape, dtype, exc):
    with pytest.raises(exc):
        tensorio.empty(shape, dtype)


def test_buffer_views_share_memory():
    b = tensorio.Buffer(4096)
    assert b.nbytes == 4096
    x = b.tensor((4,), "int32")
    y = b.tensor((2,), "int32", offset=8)
    mx, my = memoryview(x), memoryview(y)
    mx[2] = 7
    assert my[0] == 7
    s = b.tensor((2, 2), "int32", strides=(1, 2))
    assert s.strides == (1, 2) and not s.is_contiguous
    memoryview(b)[0] = 1
    assert mx[0] == 1
    del mx, my


def test_buffer_outlives_python_buffer():
    b = tensorio.Buffer(100)
    t = b.tensor((25,), "float32")
    before = sys.getrefcount(b)
    del b
    # The Tensor keeps the library buffer alive: still writable.
    memoryview(t)[24] = 1.5
    assert memoryview(t)[24] == 1.5
    assert before >= 2


@pytest.mark.parametrize("args,exc", [
    (((1025,), "float32"), ValueError),              # does not fit
    (((2,), "int32", 4094), ValueError),             # offset past the end
    (((2,), "float32", 0, (1, 1)), ValueError),     # strides count
])
def test_buffer_tensor_bad_input(args, exc):
    b = tensorio.Buffer(4096)
    with pytest.raises(exc):
        b.tensor(*args)


def test_buffer_bad_size():
    with pytest.raises(ValueError):
        tensorio.Buffer(0)
    with pytest.raises(TypeError):
        tensorio.Buffer("x")


def test_export_import():
    b = tensorio.Buffer(4096)
    try:
        fd = b.export()
    except (OSError, NotImplementedError) as e:    # the user backend without /dev/udmabuf
        assert tensorio.backend() == "user"
        pytest.skip("no dma-buf export here: %s" % e)
    try:
        c = tensorio.import_dmabuf(fd)
        memoryview(b)[5] = 9
        assert memoryview(c)[5] == 9
    finally:
        os.close(fd)


def test_import_closed_fd():
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(OSError):
        tensorio.import_dmabuf(r)
    with pytest.raises(ValueError):
        tensorio.import_dmabuf(-1)
