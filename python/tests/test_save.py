# SPDX-License-Identifier: LGPL-2.1-or-later
"""Saving checkpoints: every dtype round trips, the layout is the
safetensors library's, asynchronous saves and their handle, progress and
cancellation, bad input named, sharded saves, the index of shards saved
by two processes coordinating through torch.distributed (gloo), and GPU
tensors through the fake HIP runtime."""

import json
import os
import socket
import struct
import subprocess
import sys
import threading

import pytest

import tensorio

np = pytest.importorskip("numpy")

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8",
          "uint64", "uint32", "uint16", "uint8", "complex64"]
ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16",
         "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]


def header(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return n, raw[8:8 + n], raw


def arrays():
    rng = np.random.default_rng(7)
    out = {}
    for i, dt in enumerate(DTYPES):
        for j, shape in enumerate([(), (0,), (7,), (3, 5, 2)]):
            raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dt).itemsize,
                               dtype=np.uint8)
            a = raw.view(dt).reshape(shape) if dt != "bool" else (raw & 1).astype(bool)
            out["%s.%d" % (dt, j)] = a.reshape(shape)
    return out


@pytest.mark.parametrize("block", [True, False])
def test_every_dtype_round_trips(tmp_path, block):
    p = tmp_path / "all.safetensors"
    src = arrays()
    r = tensorio.save_safetensors(p, src, block=block)
    assert (r if block else r.wait()) == str(p)
    got = tensorio.load_safetensors(p)
    assert sorted(got) == sorted(src)
    for k, a in src.items():
        b = np.from_dlpack(got[k])
        assert b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes(), k


def test_layout_is_the_library_s(tmp_path):
    p = tmp_path / "l.safetensors"
    src = {"z": np.zeros(3, np.uint8), "a/b": np.ones(2, np.float32),
           "b": np.ones(1, np.int64), "a": np.ones(1, np.float32)}
    tensorio.save_safetensors(p, src, metadata={"k": "v"})
    n, text, raw = header(p)
    assert n % 8 == 0 and text.rstrip(b" ").endswith(b"}") and len(text) - len(text.rstrip(b" ")) < 8
    assert b": " not in text and b"\\/" not in text    # compact, "/" unescaped
    h = json.loads(text)
    assert list(h) == ["__metadata__", "b", "a", "a/b", "z"]
    at = 0
    for k in list(h)[1:]:
        assert list(h[k]) == ["dtype", "shape", "data_offsets"]
        assert h[k]["data_offsets"][0] == at
        at = h[k]["data_offsets"][1]
    assert len(raw) == 8 + n + at


def test_bytes_equal_the_safetensors_library_s(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    src = {k: v for k, v in arrays().items() if v.size}
    tensorio.save_safetensors(tmp_path / "ours.safetensors", src, metadata={"format": "np"})
    st.save_file(src, str(tmp_path / "theirs.safetensors"), metadata={"format": "np"})
    assert (tmp_path / "ours.safetensors").read_bytes() == \
        (tmp_path / "theirs.safetensors").read_bytes()
    back = st.load_file(str(tmp_path / "ours.safetensors"))
    assert all(back[k].tobytes() == v.tobytes() for k, v in src.items())


def test_async_save_and_its_handle(tmp_path):
    p = tmp_path / "a.safetensors"
    a = np.arange(1 << 20, dtype=np.float32)
    keep = a.copy()
    h = tensorio.save_safetensors(p, {"a": a}, block=False)
    a[:] = -1                      # captured: the caller's again
    stream, seqno = h.point
    assert isinstance(stream, tensorio.Stream) and seqno >= 1
    assert h.wait(timeout=60) == str(p) and h.done() and h.exception() is None
    assert np.array_equal(np.from_dlpack(tensorio.load_safetensors(p)["a"]), keep)
    h = tensorio.save_safetensors(p, {"a": a}, block=False, copy=False)
    del a                          # the handle keeps the tensor alive
    assert h.wait() == str(p)
    assert np.from_dlpack(tensorio.load_safetensors(p)["a"])[5] == -1


def test_async_failure_raises_from_wait(tmp_path):
    p = tmp_path / "f.safetensors"
    tensorio.save_safetensors(p, {"old": np.ones(4, np.uint8)})
    old = p.read_bytes()

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop("at %d of %d" % (done, total))

    h = tensorio.save_safetensors(p, {"a": np.ones(1 << 22, np.uint8)}, block=False,
                                  progress=stop)
    with pytest.raises(Stop):
        h.wait()
    assert isinstance(h.exception(), Stop) and h.done()
    with pytest.raises(Stop):      # the blocking form raises it too
        tensorio.save_safetensors(p, {"a": np.ones(1 << 22, np.uint8)}, progress=stop)
    assert p.read_bytes() == old
    assert [x.name for x in tmp_path.iterdir()] == ["f.safetensors"]


def test_cancel_keeps_the_old_file(tmp_path):
    p = tmp_path / "c.safetensors"
    tensorio.save_safetensors(p, {"old": np.ones(4, np.uint8)})
    old = p.read_bytes()
    go = threading.Event()
    h = tensorio.save_safetensors(p, {"a": np.ones(1 << 22, np.uint8)}, block=False,
                                  progress=lambda done, total: go.wait(30))
    h.cancel()
    go.set()
    e = h.exception()
    assert isinstance(e, OSError) and e.errno == 125 and "cancelled" in str(e)
    assert p.read_bytes() == old


def test_progress(tmp_path, capsys):
    p = tmp_path / "p.safetensors"
    seen = []
    tensorio.save_safetensors(p, {"a": np.ones(1 << 22, np.uint8)},
                              progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] == p.stat().st_size
    tensorio.save_safetensors(p, {"a": np.ones(10, np.uint8)}, progress=True)
    assert "saving" in capsys.readouterr().err


def test_bad_input_is_named(tmp_path):
    p = tmp_path / "b.safetensors"
    with pytest.raises(TypeError, match="tensor 'w' is not contiguous"):
        tensorio.save_safetensors(p, {"w": np.zeros((4, 4)).T})
    with pytest.raises(ValueError, match="reserved for the metadata"):
        tensorio.save_safetensors(p, {"__metadata__": np.zeros(1)})
    with pytest.raises(ValueError, match="max_shard_size"):
        tensorio.save_safetensors(p, {"a": np.zeros(1)}, max_shard_size="lots")
    with pytest.raises(PermissionError if os.geteuid() else OSError):
        tensorio.save_safetensors("/proc/b.safetensors", {"a": np.zeros(1)})
    assert not p.exists()


@pytest.mark.parametrize("limit", [600, "0.6KB", "1KiB"])
def test_sharded(tmp_path, limit):
    p = tmp_path / "model.safetensors"
    src = {"t%d" % i: np.full(100 + 50 * i, i, np.uint8) for i in range(6)}
    idx = tensorio.save_safetensors(p, src, max_shard_size=limit, metadata={"format": "np"})
    assert idx == str(p) + ".index.json"
    index = json.load(open(idx))
    assert index["metadata"]["total_size"] == sum(a.nbytes for a in src.values())
    assert index["metadata"]["format"] == "np"
    assert sorted(index["weight_map"]) == sorted(src)
    got = tensorio.load_safetensors(idx)
    assert all(np.array_equal(np.from_dlpack(got[k]), v) for k, v in src.items())
    h = tensorio.save_safetensors(p, src, max_shard_size=limit, block=False)
    assert h.wait() == idx


def test_torch_parameters(tmp_path):
    torch = pytest.importorskip("torch")
    m = torch.nn.Linear(8, 3)
    p = tmp_path / "m.safetensors"
    tensorio.save_safetensors(p, dict(m.state_dict(keep_vars=True)))    # requires grad
    got = tensorio.load_safetensors(p)
    assert torch.equal(torch.from_dlpack(got["weight"]), m.weight.detach())
    tensorio.save_safetensors(p, {"bf": torch.arange(6, dtype=torch.bfloat16)})
    assert torch.equal(torch.from_dlpack(tensorio.load_safetensors(p)["bf"]),
                       torch.arange(6, dtype=torch.bfloat16))


_RANK = """
import os, sys
import numpy as np
import torch.distributed as dist
import tensorio
rank, world, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
dist.init_process_group("gloo", rank=rank, world_size=world)
mine = {"layer%d.w" % i: np.full(1000 + i, i, np.float32) for i in range(8) if i % world == rank}
shard = os.path.join(d, "model-%05d-of-%05d.safetensors" % (rank + 1, world))
tensorio.save_safetensors(shard, mine, block=False).wait()
dist.barrier()
if rank == 0:
    tensorio.write_safetensors_index(
        os.path.join(d, "model.safetensors.index.json"),
        [os.path.join(d, "model-%05d-of-%05d.safetensors" % (r + 1, world)) for r in range(world)],
        metadata={"format": "np"})
dist.barrier()
got = tensorio.load_safetensors(os.path.join(d, "model.safetensors.index.json"))
assert sorted(got) == ["layer%d.w" % i for i in range(8)], sorted(got)
for i in range(8):
    assert np.array_equal(np.from_dlpack(got["layer%d.w" % i]), np.full(1000 + i, i, np.float32))
dist.destroy_process_group()
print("ok", rank)
"""


def test_two_processes_save_one_model(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch without gloo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    procs = [subprocess.Popen([sys.executable, "-c", _RANK, str(r), "2", str(tmp_path)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.startswith("ok")
    idx = json.load(open(tmp_path / "model.safetensors.index.json"))
    assert idx["metadata"]["total_size"] == sum(4 * (1000 + i) for i in range(8))
    assert idx["weight_map"]["layer1.w"] == "model-00002-of-00002.safetensors"


_GPU = """
import sys
import numpy as np
import tensorio
from tensorio import _tensorio
src, dst = sys.argv[1], sys.argv[2]
before = (_tensorio._live_objects(), _tensorio._live_handles())
d = tensorio.load_safetensors(src, device="rocm:0")
tensorio.save_safetensors(dst, d)
tensorio.save_safetensors(dst + ".2", d, block=False).wait()
del d
assert before == (_tensorio._live_objects(), _tensorio._live_handles())
print("ok")
"""


def test_gpu_tensors_through_the_fake_runtime(tmp_path, fixture_module_path):
    fake = os.path.join(os.path.dirname(fixture_module_path), "fake_hip.so")
    if not os.path.exists(fake):
        pytest.skip("no fake_hip.so beside the fixtures")
    src = tmp_path / "src.safetensors"
    tensorio.save_safetensors(src, {"x": np.arange(5, dtype=np.uint8),
                                    "y": np.arange(300000, dtype=np.float32)})
    dst = tmp_path / "dst.safetensors"
    r = subprocess.run([sys.executable, "-c", _GPU, str(src), str(dst)],
                       env=dict(os.environ, TIO_HIP_LIBRARY=fake), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
    assert dst.read_bytes() == src.read_bytes()
    assert (tmp_path / "dst.safetensors.2").read_bytes() == src.read_bytes()
