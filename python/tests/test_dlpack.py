# SPDX-License-Identifier: LGPL-2.1-or-later
"""DLPack both ways with numpy and torch: zero copy, writes seen on both
sides, lifetimes, capsule kinds, bad input."""

import gc
import sys

import pytest

import tensorio

np = pytest.importorskip("numpy")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")    # not in the test VM


def test_numpy_sees_tensorio_memory():
    t = tensorio.empty((2, 3), "float32")
    a = np.from_dlpack(t)    # numpy 1.24 makes it read-only
    assert a.shape == (2, 3) and a.dtype == np.float32
    assert a.ctypes.data == t.data_ptr
    w = t.numpy()    # writable, through the buffer protocol
    w[1, 2] = 5
    assert a[1, 2] == 5 and memoryview(t)[1, 2] == 5
    memoryview(t)[0, 0] = 3
    assert a[0, 0] == 3 and np.asarray(t)[0, 0] == 3


def test_torch_sees_tensorio_memory(torch):
    t = tensorio.empty((4,), "int64")
    x = torch.from_dlpack(t)
    x[3] = 11
    assert memoryview(t)[3] == 11
    assert x.data_ptr() == t.data_ptr


def test_view_outlives_tensor_and_buffer(torch):
    t = tensorio.empty((1024,), "uint8")
    x = torch.from_dlpack(t)
    a = np.from_dlpack(t)
    del t
    gc.collect()
    x[0] = 1
    assert a[0] == 1    # still the same live memory
    del x, a


def test_from_numpy_and_torch(torch):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = tensorio.from_dlpack(a)
    assert t.shape == (2, 3) and t.dtype == "int32" and t.data_ptr == a.ctypes.data
    memoryview(t)[0, 0] = 42
    assert a[0, 0] == 42
    x = torch.zeros(3, dtype=torch.float64)
    u = tensorio.from_dlpack(x)
    memoryview(u)[1] = 2.5
    assert x[1] == 2.5
    assert tensorio.from_dlpack(u) is u


def test_from_dlpack_keeps_producer_alive():
    a = np.ones(10, dtype=np.float32)
    before = sys.getrefcount(a)
    t = tensorio.from_dlpack(a)
    assert sys.getrefcount(a) == before + 1    # the capsule's owner reference
    del t
    gc.collect()
    assert sys.getrefcount(a) == before


def test_torch_round_trip_through_tensorio(torch):
    x = torch.arange(8, dtype=torch.float32)
    y = torch.from_dlpack(tensorio.from_dlpack(x))
    y[0] = -1
    assert x[0] == -1


def test_strided_and_require_contiguous():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]
    t = tensorio.from_dlpack(a)
    assert not t.is_contiguous and t.strides == (4, 2)
    with pytest.raises(ValueError):
        tensorio.from_dlpack(a, require_contiguous=True)


def test_readonly_numpy_refused_by_producer():
    a = np.zeros(4)
    a.flags.writeable = False
    with pytest.raises(BufferError):
        tensorio.from_dlpack(a)


def test_capsules():
    t = tensorio.empty((3,), "float32")
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    u = tensorio.from_dlpack(versioned)    # a capsule is accepted as is
    assert u.data_ptr == t.data_ptr
    with pytest.raises(ValueError, match="unconsumed"):
        tensorio.from_dlpack(versioned)    # consumed already
    del legacy, u    # an unconsumed capsule frees its tensor
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError):
        t.__dlpack__(max_version=1)


def test_call_with_torch_and_numpy_arguments(torch):
    tensorio.register_func("test.shape", lambda t: list(t.shape))
    try:
        f = tensorio.get_global_func("test.shape")
        assert f(torch.zeros(2, 5)) == [2, 5]
        assert f(np.zeros((7,))) == [7]
        assert f(tensorio.empty((1, 2, 3))) == [1, 2, 3]
    finally:
        tensorio.remove_global_func("test.shape")


def test_from_dlpack_bad_input():
    with pytest.raises(TypeError, match="__dlpack__"):
        tensorio.from_dlpack([1, 2])

    class Liar:
        def __dlpack__(self, stream=None):
            return 5
    with pytest.raises(TypeError, match="not a capsule"):
        tensorio.from_dlpack(Liar())


def test_requires_grad_refused(torch):
    x = torch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        tensorio.from_dlpack(x)
