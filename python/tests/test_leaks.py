# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python-side leaks: each operation, good or failing, repeated, must not
grow the interpreter's allocated blocks (sys.getallocatedblocks counts
every live pymalloc block: a reference leaked per call grows it by n or
more; caches filling up, by a bounded few) nor the library's
live objects (the autouse fixture)."""

import gc
import os
import sys

import pytest

import tensorio

np = pytest.importorskip("numpy")


def _raises(f, *a, **k):
    try:
        f(*a, **k)
    except Exception:
        return
    raise AssertionError("did not raise")


def _ops(tmp):
    noop = tensorio.get_global_func("tensorio.noop")
    st = os.path.join(tmp, "x.safetensors")
    tensorio.save_safetensors(st, {"a": np.arange(4, dtype=np.float32)})
    bad = os.path.join(tmp, "bad.safetensors")
    with open(bad, "wb") as f:
        f.write(b"\x05\0\0\0\0\0\0\0{nope")
    arr = np.zeros((3, 4), dtype=np.float32)
    return {
        "call": lambda: noop(1, 2.5, "s" * 20, b"b" * 20, None, [1, "x"], {"k": 1}),
        "call-bad-arg": lambda: _raises(noop, object()),
        "call-overflow": lambda: _raises(noop, 2**64),
        "empty": lambda: tensorio.empty((4, 4), "int8"),
        "empty-bad-dtype": lambda: _raises(tensorio.empty, (4,), "float33"),
        "empty-bad-shape": lambda: _raises(tensorio.empty, (-1,)),
        "dlpack-numpy": lambda: np.from_dlpack(tensorio.from_dlpack(arr)),
        "dlpack-capsules": lambda: (tensorio.empty(2).__dlpack__(),
                                    tensorio.empty(2).__dlpack__(max_version=(1, 0))),
        "buffer-view": lambda: memoryview(tensorio.Buffer(64).tensor((4,), "int32")),
        "buffer-bad-view": lambda: _raises(tensorio.Buffer(64).tensor, (5000,)),
        "stream": lambda: tensorio.Stream().emit(),
        "stream-timeout": lambda: _raises(tensorio.Stream().wait, 1, timeout=0),
        "batch": lambda: _batch(),
        "load": lambda: tensorio.load_safetensors(st),
        "load-malformed": lambda: _raises(tensorio.load_safetensors, bad),
        "load-progress": lambda: tensorio.load_safetensors(st, progress=lambda d, t: None),
        "load-cancelled": lambda: _raises(tensorio.load_safetensors, st,
                                          progress=lambda d, t: 1 / 0),
        "save-metadata": lambda: tensorio.save_safetensors(
            os.path.join(tmp, "m"), {"a": arr}, metadata={"k": "v" * 40}),
        "save-strided": lambda: _raises(tensorio.save_safetensors, os.path.join(tmp, "s"),
                                        {"a": arr[:, ::2]}),
        "python-error-through-c": lambda: _raises(_raiser()),
    }


def _batch():
    with tensorio.Batch() as b:
        r = b.call(lambda: 1 / 0)
        s = b.call("tensorio.noop", 1)
    _raises(lambda: r.value)
    return s.value


def _raiser():
    def f():
        raise ValueError("x" * 100)
    tensorio.register_func("test.leak.raise", f, override=True)
    g = tensorio.get_global_func("test.leak.raise")
    tensorio.remove_global_func("test.leak.raise")
    return g


NAMES = ["call", "call-bad-arg", "call-overflow", "empty", "empty-bad-dtype",
         "empty-bad-shape", "dlpack-numpy", "dlpack-capsules", "buffer-view",
         "buffer-bad-view", "stream", "stream-timeout", "batch", "load",
         "load-malformed", "save-strided", "python-error-through-c"]


@pytest.mark.parametrize("name", NAMES)
def test_no_growth(tmp_path, name):
    op = _ops(str(tmp_path))[name]
    for _ in range(300):    # warm caches and free lists first
        op()
    # Caches that fill slowly (the traceback module's, for the error
    # paths) settle within a round or two; a leak grows every round.
    n, grown = 1000, []
    for _ in range(3):
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(n):
            op()
        gc.collect()
        grown.append(sys.getallocatedblocks() - before)
        if grown[-1] < n // 10:
            return
    raise AssertionError("blocks grown per %d runs: %s" % (n, grown))
