# SPDX-License-Identifier: LGPL-2.1-or-later
"""safetensors load and save, against numpy's view of the same bytes."""

import json
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


def test_bad_input(tmp_path):
    with pytest.raises(OSError):
        tensorio.load_safetensors(tmp_path / "missing")
    with pytest.raises(ValueError):
        tensorio.load_safetensors(tmp_path / "x", device="vulkan")
    with pytest.raises(NotImplementedError):
        tensorio.load_safetensors(tmp_path / "x", progress=True)
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", [np.zeros(1)])
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", {"a": [1]})
    with pytest.raises(ValueError):    # strided
        tensorio.save_safetensors(tmp_path / "y", {"a": np.zeros((4, 4))[:, ::2]})
    with pytest.raises(TypeError):
        tensorio.save_safetensors(tmp_path / "y", {"a": np.zeros(1)}, metadata={"a": 1})


def test_cuda_without_gpu(tmp_path):
    p = tmp_path / "c.safetensors"
    write_by_hand(p, {"x": np.ones(4, dtype=np.float32)})
    try:
        d = tensorio.load_safetensors(p, device="cuda:0")
    except (OSError, RuntimeError, ValueError, NotImplementedError) as e:
        assert "CUDA" in str(e) or "cuda" in str(e)
        return
    assert d["x"].device == "cuda:0"
