# SPDX-License-Identifier: LGPL-2.1-or-later
"""torch.Tensor call arguments: the torch accelerator (python/accel, built
where libtorch-dev is installed) and the DLPack path give the callee the
same tensor, keep the storage alive for a callee that keeps it, and refuse
the same tensors."""

import contextlib
import gc
import glob
import os
import subprocess
import sys

import pytest

import tensorio
from tensorio import _tensorio

torch = pytest.importorskip("torch")    # not in the test VM


@pytest.fixture
def paths():
    """Both paths, the accelerator's only where it is built."""
    was = _tensorio._torch_accel()
    built = _tensorio._torch_accel(True)
    try:
        yield [False, True] if built else [False]
    finally:
        _tensorio._torch_accel(was)


def describe(t):
    """What the callee sees of a tensor argument."""
    f = tensorio.get_global_func("test.describe", allow_missing=True)
    if f is None:
        tensorio.register_func("test.describe", lambda t: (
            t.shape, t.strides, t.dtype, t.device, t.data_ptr, t.readonly))
        f = tensorio.get_global_func("test.describe")
    try:
        return f(t)
    finally:
        tensorio.remove_global_func("test.describe")


def test_accel_used_when_built():
    pkg = os.path.dirname(tensorio.__file__)
    built = bool(glob.glob(os.path.join(pkg, "_torch_accel*.so")))
    assert _tensorio._torch_accel() == built
    if built:
        assert _tensorio._torch_accel(False) is False
        assert _tensorio._torch_accel(True) is True


def tensors():
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    return [
        base, base.transpose(0, 2), base[1:, ::2, 3], base[2, 1],
        torch.tensor(7.0), torch.zeros(0, 3), torch.ones(4, 1).expand(4, 6),
        torch.arange(6, dtype=torch.int64), torch.zeros(3, dtype=torch.uint8),
        torch.zeros(2, 2, dtype=torch.float16), torch.zeros(2, dtype=torch.bfloat16),
        torch.zeros(5, dtype=torch.int8), torch.zeros(2, dtype=torch.complex64),
        torch.zeros(2, 3).t().contiguous(), torch.zeros(1, 8)[:, 3:],
        torch.zeros((1,) * 17),    # more than the accelerator takes
    ]


def test_both_paths_identical(paths):
    for t in tensors():
        seen = []
        for on in paths:
            _tensorio._torch_accel(on)
            seen.append(describe(t))
        assert all(s == seen[0] for s in seen), (t.shape, t.stride(), seen)
        assert seen[0][0] == list(t.shape)
        # torch 1.13 exports size-0/1 dimensions with stride 1
        assert seen[0][1] == [1 if n < 2 else s for n, s in zip(t.shape, t.stride())]
        assert seen[0][4] == t.data_ptr()


@contextlib.contextmanager
def keeper():
    """A global FFI function keeping its argument (a callee that keeps it)."""
    kept = []
    tensorio.register_func("test.keep", lambda t: kept.append(t))
    try:
        yield tensorio.get_global_func("test.keep"), kept
    finally:
        tensorio.remove_global_func("test.keep")


def check_storage_kept(paths, hold):
    """hold(x) -> a Tensor for torch tensor x: it keeps x's storage (and
    nothing more) after x is gone or has been given other storage."""
    np = pytest.importorskip("numpy")
    for on in paths:
        _tensorio._torch_accel(on)
        # The storage of a tensor from numpy holds the array: the
        # array's refcount tells whether the storage is still alive.
        a = np.arange(1000, dtype=np.int32)
        x = torch.from_numpy(a)[10:]
        with_storage = sys.getrefcount(a)
        t = hold(x)
        ptr = x.data_ptr()
        x.set_(torch.zeros(5, dtype=torch.int32))    # other storage
        del x
        gc.collect()
        assert sys.getrefcount(a) == with_storage
        assert t.data_ptr == ptr and t.shape == (990,)
        y = torch.from_dlpack(t)    # the memory is still the array's
        assert y[0] == 10 and y[-1] == 999
        del t, y
        gc.collect()
        assert sys.getrefcount(a) == with_storage - 1    # gone with it


def test_kept_argument_keeps_the_storage(paths):
    with keeper() as (keep, kept):
        check_storage_kept(paths, lambda x: (keep(x), kept.pop())[1])


def test_kept_argument_has_its_own_shape(paths):
    with keeper() as (keep, kept):
        for on in paths:
            _tensorio._torch_accel(on)
            x = torch.zeros(2, 3)
            keep(x)
            x.t_()    # changes x's shape and strides in place
            x.resize_(2, 2, 2, 2, 2, 2, 2, 2)
            t = kept.pop()
            assert t.shape == (2, 3) and t.strides == (3, 1)
            del t


def refused_tensors():
    """Tensors the accelerator declines (the DLPack path refuses them too)."""
    return [torch.zeros(2, requires_grad=True), torch.zeros(2).to_sparse(),
            torch.quantize_per_tensor(torch.zeros(2), 0.1, 0, torch.qint8),
            torch.tensor([True, False])]    # torch 1.13 exports no bool


def test_refusals_are_the_same(paths):
    for t in refused_tensors():
        errors = []
        for on in paths:
            _tensorio._torch_accel(on)
            with pytest.raises(Exception) as e:
                describe(t)
            errors.append((type(e.value), str(e.value)))
        assert all(x == errors[0] for x in errors), errors


def test_subclass_takes_the_dlpack_path(paths):
    p = torch.nn.Parameter(torch.ones(3), requires_grad=False)
    for on in paths:
        _tensorio._torch_accel(on)
        assert describe(p)[0] == [3]


def test_accel_refuses_another_torch():
    """Built for one torch, the accelerator will not load under another
    (its C++ ABI): torch tensors then take the DLPack path."""
    pkg = os.path.dirname(tensorio.__file__)
    if not glob.glob(os.path.join(pkg, "_torch_accel*.so")):
        pytest.skip("the torch accelerator is not built")
    code = """
import torch
torch.__version__ = "0.1.0"
import tensorio
from tensorio import _tensorio
try:
    import tensorio._torch_accel
except ImportError as e:
    print(e)
f = tensorio.get_global_func("tensorio.noop")
f(torch.zeros(2))
print(_tensorio._torch_accel())
"""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(pkg))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert "built for torch 1.13." in out and "this is torch 0.1.0" in out
    assert out.splitlines()[-1] == "False"


# tensorio.from_dlpack(torch.Tensor) takes the accelerator too.

def fields(t):
    """What a tensorio.Tensor shows of itself."""
    return (list(t.shape), list(t.strides), t.dtype, t.device, t.data_ptr, t.readonly)


def test_from_dlpack_both_paths_identical(paths):
    for t in tensors():
        seen = []
        for on in paths:
            _tensorio._torch_accel(on)
            u = tensorio.from_dlpack(t)
            seen.append(fields(u))
            assert list(describe(t)) == [list(x) if isinstance(x, (list, tuple)) else x
                                         for x in fields(u)]
            del u
        assert all(s == seen[0] for s in seen), (t.shape, t.stride(), seen)
        assert seen[0][0] == list(t.shape) and seen[0][4] == t.data_ptr()


def test_from_dlpack_keeps_the_storage(paths):
    check_storage_kept(paths, tensorio.from_dlpack)


def test_from_dlpack_writes_seen_both_ways(paths):
    for on in paths:
        _tensorio._torch_accel(on)
        x = torch.zeros(2, 3, dtype=torch.float64)
        u = tensorio.from_dlpack(x.t())
        y = torch.from_dlpack(u)
        assert y.shape == (3, 2) and y.stride() == (1, 3)
        x[1, 2] = 5.0
        assert y[2, 1] == 5.0
        y[0, 1] = 7.0    # through the tensorio.Tensor's view
        assert x[1, 0] == 7.0
        refs = sys.getrefcount(x)
        del u, y
        gc.collect()
        assert sys.getrefcount(x) == refs


def test_from_dlpack_refusals_are_the_same(paths):
    for t in refused_tensors():
        errors = []
        for on in paths:
            _tensorio._torch_accel(on)
            refs = sys.getrefcount(t)
            with pytest.raises(Exception) as e:
                tensorio.from_dlpack(t)
            errors.append((type(e.value), str(e.value)))
            del e
            assert sys.getrefcount(t) == refs
        assert all(x == errors[0] for x in errors), errors


def test_from_dlpack_require_contiguous_same(paths):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for t, ok in [(base, True), (base.t(), False), (base[:, 1:], False),
                  (torch.zeros(4, 1), True), (torch.zeros(1, 8)[:, 3:], True)]:
        seen = []
        for on in paths:
            _tensorio._torch_accel(on)
            try:
                seen.append(fields(tensorio.from_dlpack(t, require_contiguous=True)))
            except ValueError as e:
                seen.append(str(e))
        assert all(s == seen[0] for s in seen), seen
        assert isinstance(seen[0], tuple) == ok, (t.shape, t.stride(), seen)


def test_from_dlpack_subclass_takes_the_dlpack_path(paths):
    p = torch.nn.Parameter(torch.ones(3), requires_grad=False)
    for on in paths:
        _tensorio._torch_accel(on)
        assert tensorio.from_dlpack(p).shape == (3,)


def test_from_dlpack_conj_neg_bits_take_the_dlpack_path(paths):
    """The accelerator declines them; torch 1.13's export takes them as
    they are (the bit is not applied): both paths give that same Tensor."""
    for t in [torch.tensor([1 + 2j]).conj(), torch.tensor([1.0, 2.0])._neg_view()]:
        assert t.is_conj() or t.is_neg()
        seen = []
        for on in paths:
            _tensorio._torch_accel(on)
            seen.append(fields(tensorio.from_dlpack(t)))
        assert all(s == seen[0] for s in seen), seen
        assert seen[0][4] == t.data_ptr()


def test_which_path_is_taken(paths):
    """The accelerator reads the tensor from C++; the DLPack path asks
    torch.Tensor.requires_grad from Python first: a counting property tells
    which path a call argument and from_dlpack() took."""
    reads = []
    getter = torch._C._TensorBase.requires_grad.__get__

    def requires_grad(self):
        reads.append(1)
        return getter(self)
    torch.Tensor.requires_grad = property(requires_grad)
    try:
        x = torch.zeros(3)
        for on in paths:
            _tensorio._torch_accel(on)
            for take in (describe, tensorio.from_dlpack):
                del reads[:]
                take(x)
                assert bool(reads) != on, (take, on)
    finally:
        del torch.Tensor.requires_grad
    assert "requires_grad" not in torch.Tensor.__dict__
