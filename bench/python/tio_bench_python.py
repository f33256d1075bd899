# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cases of tio-bench's "python" suite (bench/suite_python.c): each is
a callable and its arguments, called in a C loop; this module only builds
them. case(name, fast) -> (callable, args, bytes per op), or (reason,)."""

import atexit
import ctypes
import os
import shutil
import tempfile

import tensorio
from tensorio import _tensorio

_keep = []
_tmp = []


def _ctypes_peer():
    """The no-op FFI call made with ctypes: the safe-call cell of the
    Function, called with a ctypes Any array (what a ctypes FFI does)."""
    f = tensorio.get_global_func("tensorio.noop")
    _keep.append(f)
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_int32, ctypes.c_void_p)
    # struct tio_func_obj: 24-byte header, then the safe_call cell.
    cell = ctypes.c_void_p.from_address(f._address + 24).value
    call = proto(cell)
    addr = f._address
    ret = (ctypes.c_int64 * 2)()
    args = (ctypes.c_int64 * 2)()
    ret_p, args_p = ctypes.addressof(ret), ctypes.addressof(args)

    def call0():
        if call(addr, None, 0, ret_p):
            raise RuntimeError("call failed")

    def call1(x):
        args[0] = 1          # type index Int, no padding
        args[1] = x
        if call(addr, args_p, 1, ret_p):
            raise RuntimeError("call failed")
    _keep.extend((call, ret, args))
    return call0, call1


def _weights(fast):
    import numpy as np
    d = tempfile.mkdtemp(prefix="tio-bench-py.")
    _tmp.append(d)
    n = (1 if fast else 8) << 20    # floats in all
    rng = np.random.default_rng(0)
    ws = {"w%02d" % i: rng.standard_normal(n // 16, dtype=np.float32)
          for i in range(16)}
    st = os.path.join(d, "w.safetensors")
    tensorio.save_safetensors(st, ws)
    raw = os.path.join(d, "w.raw")
    np.concatenate(list(ws.values())).tofile(raw)
    return d, st, raw, ws, 4 * n


def case(name, fast):
    noop = tensorio.get_global_func("tensorio.noop")
    if name == "call/cfunc-0":
        return _tensorio._noop, (), 0
    if name == "call/cfunc-1":
        return _tensorio._noop, (1,), 0
    if name == "call/noop-0":
        return noop, (), 0
    if name == "call/noop-1":
        return noop, (1,), 0
    if name in ("call/ctypes-0", "call/ctypes-1"):
        c0, c1 = _ctypes_peer()
        return (c0, (), 0) if name.endswith("0") else (c1, (1,), 0)
    if name == "call/tensorio-tensor":
        return noop, (tensorio.empty((16,)),), 0
    try:
        import numpy as np
        import torch
    except ImportError as e:
        return (str(e),)
    if name == "call/torch-tensor":
        _tensorio._torch_accel(True)    # where it is built
        return noop, (torch.zeros(16),), 0
    if name == "call/torch-tensor-dlpack":
        _tensorio._torch_accel(False)   # the rows after it do not use it
        return noop, (torch.zeros(16),), 0
    if name == "call/torch-export":
        return torch._C._to_dlpack, (torch.zeros(16),), 0
    if name == "call/torch-requires-grad":
        import operator
        return operator.attrgetter("requires_grad"), (torch.zeros(16),), 0
    if name == "call/numpy-array":
        return noop, (np.zeros(16, dtype=np.float32),), 0
    if name == "dlpack/torch-from-tensor":
        return torch.from_dlpack, (tensorio.empty((256,)),), 0
    if name == "dlpack/torch-from-empty":
        return (lambda: torch.from_dlpack(tensorio.empty((256,)))), (), 0
    if name == "dlpack/from-torch":
        _tensorio._torch_accel(True)    # where it is built
        return tensorio.from_dlpack, (torch.zeros(256),), 0
    if name == "dlpack/from-torch-dlpack":
        _tensorio._torch_accel(False)
        return tensorio.from_dlpack, (torch.zeros(256),), 0
    if name == "dlpack/torch-from-numpy":
        return torch.from_dlpack, (np.zeros(256, dtype=np.float32),), 0
    d, st, raw, ws, nbytes = _weights(fast)
    if name == "load/safetensors":
        return tensorio.load_safetensors, (st,), nbytes
    if name == "load/torch-load":
        pt = os.path.join(d, "w.pt")
        torch.save({k: torch.from_numpy(v) for k, v in ws.items()}, pt)
        return torch.load, (pt,), nbytes
    if name == "load/numpy-fromfile":
        return np.fromfile, (raw, np.float32), nbytes
    if name.startswith("save/"):
        return _save_case(name, ws, nbytes)
    raise KeyError(name)


def _save_dir():
    d = tempfile.mkdtemp(prefix="tio-bench-py-save.",
                         dir=os.environ.get("TIO_BENCH_DIR") or "/var/tmp")
    _tmp.append(d)
    return d


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


def _c_save(path, ws):
    """tio_safetensors_save_opts called through ctypes on the same arrays:
    the C path, without the package's conversion of the dict."""
    lib = ctypes.CDLL("libtensorio.so.0")    # the extension's, already loaded
    f = lib.tio_safetensors_save_opts
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                  ctypes.c_void_p]
    n = len(ws)
    names = (ctypes.c_char_p * n)(*[k.encode() for k in ws])
    shapes = [(ctypes.c_int64 * 1)(a.size) for a in ws.values()]
    ts = (_DLTensor * n)(*[_DLTensor(a.ctypes.data, 1, 0, 1, 2, 32, 1, shapes[i], None, 0)
                           for i, a in enumerate(ws.values())])
    ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(t) for t in ts])
    _keep.extend((names, shapes, ts, ptrs, f))
    p = path.encode()

    def save():
        if f(p, names, ptrs, n, None):
            raise OSError("tio_safetensors_save_opts failed")
    return save


def _save_case(name, ws, nbytes):
    import numpy as np
    d = _save_dir()
    st = os.path.join(d, "w.safetensors")
    if name == "save/safetensors":
        return tensorio.save_safetensors, (st, ws), nbytes
    if name == "save/c-ctypes":
        return _c_save(st, ws), (), nbytes
    if name == "save/numpy-tofile":
        raw = os.path.join(d, "w.raw")
        one = np.concatenate(list(ws.values()))

        def tofile():
            with open(raw, "wb") as f:
                one.tofile(f)
                f.flush()
                os.fsync(f.fileno())
        return tofile, (), nbytes
    if name == "save/torch-save":
        import torch
        pt = os.path.join(d, "w.pt")
        tws = {k: torch.from_numpy(v) for k, v in ws.items()}

        def save():
            with open(pt, "wb") as f:
                torch.save(tws, f)
                f.flush()
                os.fsync(f.fileno())
        return save, (), nbytes
    raise KeyError(name)


@atexit.register
def _cleanup():
    for d in _tmp:
        shutil.rmtree(d, ignore_errors=True)
