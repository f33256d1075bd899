# SPDX-License-Identifier: LGPL-2.1-or-later
"""safetensors load and save, against numpy's view of the same bytes."""

import errno
import json
import pathlib
import re
import struct

import pytest

import tensorio

np = pytest.importorskip("numpy")


def write_by_hand(path, tensors, metadata=None):
    header, off, blobs = {}, 0, []
    for name, a in tensors.items():
        raw = a.tobytes()
        header[name] = {"dtype": {"float32": "F32", "int64": "I64", "uint8": "U8"}[str(a.dtype)],
                        "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_load(tmp_path):
    p = tmp_path / "a.safetensors"
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.array([1, 2, 3], dtype=np.int64)
    write_by_hand(p, {"w": w, "b": b})
    d = tensorio.load_safetensors(p)
    assert sorted(d) == ["b", "w"]
    assert d["w"].shape == (3, 4) and d["w"].dtype == "float32"
    assert np.array_equal(np.from_dlpack(d["w"]), w)
    assert np.array_equal(np.from_dlpack(d["b"]), b)


def test_save_and_load(tmp_path):
    p = tmp_path / "s.safetensors"
    a = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    t = tensorio.empty((4,), "uint8")
    memoryview(t)[2] = 200
    tensorio.save_safetensors(str(p), {"a": a, "t": t}, metadata={"format": "pt"})
    d = tensorio.load_safetensors(str(p))
    assert np.array_equal(np.from_dlpack(d["a"]), a)
    assert list(memoryview(d["t"])) == [0, 0, 200, 0]
    (n,) = struct.unpack("<Q", p.read_bytes()[:8])
    assert json.loads(p.read_bytes()[8:8 + n])["__metadata__"] == {"format": "pt"}


def test_views_keep_file_buffer(tmp_path):
    p = tmp_path / "k.safetensors"
    write_by_hand(p, {"x": np.ones(1000, dtype=np.float32)})
    x = tensorio.load_safetensors(p)["x"]
    assert np.from_dlpack(x).sum() == 1000


def test_torch_load_compare(tmp_path):
    torch = pytest.importorskip("torch")
    p = tmp_path / "t.safetensors"
    x = torch.arange(10, dtype=torch.float32)
    tensorio.save_safetensors(p, {"x": x, "z": torch.ones(3)})
    # The views lie past the header (byte_offset): torch sees the data.
    y = torch.from_dlpack(tensorio.load_safetensors(p)["x"])
    assert torch.equal(x, y)


@pytest.mark.parametrize("content", [
    b"", b"\x01", struct.pack("<Q", 2**40) + b"{}",
    struct.pack("<Q", 5) + b"{nope",
    struct.pack("<Q", 60) + b'{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}    ',
    struct.pack("<Q", 56) + b'{"x":{"dtype":"Q99","shape":[1],"data_offsets":[0,4]}}' + b"\0" * 4,
])
def test_malformed(tmp_path, content):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(content)
    with pytest.raises((ValueError, OSError)):
        tensorio.load_safetensors(p)


# Malformed files, each breaking one rule; EXPECTED names the message.
CORPUS = (pathlib.Path(__file__).resolve().parents[2] / "tests" / "fuzz" / "corpus"
          / "safetensors-bad")


def corpus():
    if not (CORPUS / "EXPECTED").exists():
        return []
    lines = (CORPUS / "EXPECTED").read_text().splitlines()
    return [tuple(x.split("\t", 1)) for x in lines if x and not x.startswith("#")]


@pytest.mark.parametrize("name,part", corpus())
def test_corpus_refused(name, part):
    with pytest.raises(ValueError, match=re.escape(part)):
        tensorio.load_safetensors(CORPUS / name)


def test_corpus_all_listed():
    if not CORPUS.exists():
        pytest.skip("no source tree beside the package")
    listed = sorted(name for name, _ in corpus())
    assert listed == sorted(p.name for p in CORPUS.glob("*.safetensors"))
    assert len(listed) > 20


def test_edge_cases_load(tmp_path):
    # An empty name, zero-element tensors, BOOL, unknown fields in an entry,
    # names beyond ASCII (one escaped), metadata, space padding.
    header = ('{"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
              '"zero":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},'
              '"zero2":{"dtype":"I64","shape":[3,0],"data_offsets":[4,4]},'
              '"flags":{"dtype":"BOOL","shape":[3],"data_offsets":[4,7],'
              '"quant":{"scale":[1,2]},"note":"kept out"},'
              '"caf\\u00e9":{"dtype":"U8","shape":[1],"data_offsets":[7,8]},'
              '"\u540d\u524d":{"dtype":"U8","shape":[],"data_offsets":[8,9]},'
              '"__metadata__":{"format":"pt"}}').encode() + b" " * 200
    data = struct.pack("<f", 1.5) + bytes([1, 0, 1]) + b"\x07\x08"
    p = tmp_path / "edge.safetensors"
    p.write_bytes(struct.pack("<Q", len(header)) + header + data)
    d = tensorio.load_safetensors(p)
    assert sorted(d) == sorted(["", "zero", "zero2", "flags", "caf\u00e9", "\u540d\u524d"])
    assert np.from_dlpack(d[""]).tolist() == [1.5]
    assert d["zero"].shape == (0,) and d["zero2"].shape == (3, 0)
    assert d["flags"].dtype == "bool"
    assert list(memoryview(d["flags"]).cast("B")) == [1, 0, 1]    # numpy: no DLPack bool
    assert np.from_dlpack(d["caf\u00e9"]).tolist() == [7]
    assert d["\u540d\u524d"].shape == ()


def test_bad_input(tmp_path):
    # A missing file is FileNotFoundError (OSError, ENOENT) naming the path.
    with pytest.raises(FileNotFoundError) as e:
        tensorio.load_safetensors(tmp_path / "missing")
    assert e.value.errno == errno.ENOENT and str(tmp_path / "missing") in str(e.value)
    with pytest.raises(ValueError):
        tensorio.load_safetensors(tmp_path / "x", device="vulkan")
    with pytest.raises(TypeError):
        tensorio.load_safetensors(tmp_path / "x", progress=3)
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", [np.zeros(1)])
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", {"a": [1]})
    with pytest.raises(TypeError, match="tensor 'a' is not contiguous"):
        tensorio.save_safetensors(tmp_path / "y", {"a": np.zeros((4, 4))[:, ::2]})
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", {"a": np.zeros(1)}, metadata={"a": 1})
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", {"a": np.zeros(1)}, metadata={1: "a"})
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", {"a": np.zeros(1)}, metadata=["a"])
    with pytest.raises(ValueError, match="__metadata__"):
        tensorio.save_safetensors(tmp_path / "y", {"__metadata__": np.zeros(1)})
    assert not (tmp_path / "y").exists()


def test_failed_save_keeps_old_file(tmp_path):
    p = tmp_path / "keep.safetensors"
    tensorio.save_safetensors(p, {"a": np.arange(4, dtype=np.float32)})
    old = p.read_bytes()
    with pytest.raises(TypeError):    # strided: refused before writing
        tensorio.save_safetensors(p, {"a": np.zeros((4, 4))[:, ::2]})
    assert p.read_bytes() == old
    assert sorted(x.name for x in tmp_path.iterdir()) == ["keep.safetensors"]


def test_progress(tmp_path, capsys):
    p = tmp_path / "p.safetensors"
    write_by_hand(p, {"a": np.arange(1 << 18, dtype=np.float32),
                      "b": np.ones(1000, dtype=np.int64)})
    seen = []
    d = tensorio.load_safetensors(p, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] == p.stat().st_size
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    assert np.array_equal(np.from_dlpack(d["b"]), np.ones(1000, dtype=np.int64))
    del d
    tensorio.load_safetensors(p, progress=True)
    assert "loading" in capsys.readouterr().err


def test_progress_exception_cancels(tmp_path):
    p = tmp_path / "c.safetensors"
    write_by_hand(p, {"a": np.arange(1 << 18, dtype=np.float32)})

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop("enough at %d" % done)

    with pytest.raises(Stop, match="enough"):
        tensorio.load_safetensors(p, progress=stop)
    # The library's error state is clean: the next load works.
    assert tensorio.load_safetensors(p)["a"].shape == (1 << 18,)


def test_sharded(tmp_path):
    write_by_hand(tmp_path / "s1.safetensors", {"a": np.arange(6, dtype=np.float32)})
    write_by_hand(tmp_path / "s2.safetensors", {"b": np.array([7, 8], dtype=np.int64)})
    idx = tmp_path / "model.safetensors.index.json"
    idx.write_text(json.dumps({"metadata": {}, "weight_map": {
        "a": "s1.safetensors", "b": "s2.safetensors"}}))
    d = tensorio.load_safetensors(idx)
    assert np.array_equal(np.from_dlpack(d["a"]), np.arange(6, dtype=np.float32))
    assert np.array_equal(np.from_dlpack(d["b"]), np.array([7, 8]))
    (tmp_path / "s2.safetensors").unlink()
    with pytest.raises(OSError):
        tensorio.load_safetensors(idx)


# The GPU runtimes are found once per process (TIO_CUDA_LIBRARY /
# TIO_HIP_LIBRARY), so each case runs in a fresh interpreter.
_GPU_SCRIPT = """
import ctypes, json, struct, sys
import numpy as np
import tensorio
from tensorio import _tensorio
path, dev, read = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
before = (_tensorio._live_objects(), _tensorio._live_handles())
try:
    d = tensorio.load_safetensors(path, device=dev)
except OSError as e:
    print(json.dumps({"error": type(e).__name__, "errno": e.errno, "msg": str(e)}))
else:
    # Device memory is host memory only on a fake runtime.
    out = {k: [t.device, list(t.shape), t.dtype,
               list(ctypes.string_at(t.data_ptr, t.nbytes)) if read else None]
           for k, t in d.items()}
    del d
    print(json.dumps({"tensors": out}))
after = (_tensorio._live_objects(), _tensorio._live_handles())
assert before == after, (before, after)
"""


def _gpu_load(tmp_path, device, env, read=False):
    import os
    import subprocess
    import sys
    p = tmp_path / "g.safetensors"
    write_by_hand(p, {"x": np.arange(5, dtype=np.uint8),
                      "y": np.arange(300, dtype=np.float32)})
    r = subprocess.run([sys.executable, "-c", _GPU_SCRIPT, str(p), device,
                        "1" if read else "0"],
                       env=dict(os.environ, **env), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_cuda_without_runtime(tmp_path):
    # No CUDA driver here (forced): a clear ENODEV that names CUDA, no leak.
    r = _gpu_load(tmp_path, "cuda:0",
                  {"TIO_CUDA_LIBRARY": "libcuda-tensorio-test-absent.so.1"})
    assert r["error"] == "OSError" and r["errno"] == 19, r
    assert "no CUDA driver" in r["msg"]


def _gpu_runtime(kind, fixture_module_path):
    """The CUDA driver or HIP runtime to load with: the variable's when set,
    else CUDA's libcuda.so.1 where it loads (a GPU machine), else the
    tests' fake one beside the fixtures."""
    import ctypes
    import os
    var, fake = {"cuda": ("TIO_CUDA_LIBRARY", "fake_cuda.so"),
                 "rocm": ("TIO_HIP_LIBRARY", "fake_hip.so")}[kind]
    if os.environ.get(var):
        return var, os.environ[var]
    if kind == "cuda":
        try:
            ctypes.CDLL("libcuda.so.1")
            return var, "libcuda.so.1"
        except OSError:
            pass
    path = os.path.join(os.path.dirname(fixture_module_path), fake)
    if not os.path.exists(path):
        pytest.skip("no %s beside the fixtures" % fake)
    return var, path


@pytest.mark.parametrize("kind", ["cuda", "rocm"])
def test_gpu_load(tmp_path, fixture_module_path, kind):
    # A GPU, else the fake runtime: device memory is host memory there.
    import os
    var, lib = _gpu_runtime(kind, fixture_module_path)
    fake = "fake" in os.path.basename(lib)
    r = _gpu_load(tmp_path, kind + ":0", {var: lib}, read=fake)
    x, y = r["tensors"]["x"], r["tensors"]["y"]
    assert x[:3] == [kind + ":0", [5], "uint8"]
    assert y[:3] == [kind + ":0", [300], "float32"]
    if not fake:
        return  # device memory: not readable from the host
    assert x[:3] == [kind + ":0", [5], "uint8"] and x[3] == [0, 1, 2, 3, 4]
    assert y[:3] == [kind + ":0", [300], "float32"]
    assert bytes(y[3]) == np.arange(300, dtype=np.float32).tobytes()
