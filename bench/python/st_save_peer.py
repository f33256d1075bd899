#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The save engine beside the safetensors library, on a machine whose
Python is not the one the package was built for (the GPU machine):
libtensorio is called through ctypes.

  --compat   the files ours and safetensors' save_file write for the same
             numpy and torch dicts, byte for byte, and safetensors loading
             ours
  --gpu      GIB of bf16 CUDA tensors, ROUNDS rounds interleaved: device-to-
             host copies into pinned memory, dd O_DIRECT + fsync of as many
             bytes, our durable save of them from pinned host memory and
             from the GPU (the bounce ring, torch's stream), each to a
             new file (the old one removed untimed, as dd's), our
             asynchronous save (until it returns, until durable; the
             tensors changed on torch's stream right after it returns must
             not show), and the peers save_file + fsync and torch.save +
             fsync; medians, GB/s, as JSON on stdout
Needs torch, numpy and safetensors; TIO_LIB names libtensorio.so.0
(default: build/lib's); DIR (default /var/tmp) on a disk, not tmpfs.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import time

import numpy as np
import torch

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
lib = ctypes.CDLL(os.environ.get("TIO_LIB") or
                  os.path.join(TOP, "build", "lib", "libtensorio.so.0"))


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class Opts(ctypes.Structure):    # struct tio_save_opts
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("queue_depth", ctypes.c_uint32), ("pad", ctypes.c_uint32),
                ("chunk_size", ctypes.c_uint64), ("max_shard_size", ctypes.c_uint64),
                ("meta", ctypes.c_void_p), ("nmeta", ctypes.c_int64),
                ("progress", ctypes.c_void_p), ("progress_arg", ctypes.c_void_p),
                ("gpu_stream", ctypes.c_void_p), ("used_direct", ctypes.c_int32),
                ("shards", ctypes.c_int32)]


lib.tio_error_peek_raised.restype = ctypes.c_void_p
lib.tio_error_message.restype = ctypes.c_char_p
lib.tio_error_message.argtypes = [ctypes.c_void_p]
lib.tio_safetensors_save_opts.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_int64, ctypes.POINTER(Opts)]
lib.tio_safetensors_save_async.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_int64, ctypes.POINTER(Opts),
                                           ctypes.POINTER(ctypes.c_void_p)]
lib.tio_save_wait.argtypes = [ctypes.c_void_p, ctypes.c_int64]
lib.tio_save_free.argtypes = [ctypes.c_void_p]
lib.tio_gpu_stream_wrap.argtypes = [DLDevice, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.tio_gpu_stream_destroy.argtypes = [ctypes.c_void_p]

# torch dtype -> DLPack (code, bits)
CODES = {"float64": (2, 64), "float32": (2, 32), "float16": (2, 16), "bfloat16": (4, 16),
         "int64": (0, 64), "int32": (0, 32), "int16": (0, 16), "int8": (0, 8),
         "uint64": (1, 64), "uint32": (1, 32), "uint16": (1, 16), "uint8": (1, 8),
         "bool": (6, 8), "float8_e4m3fn": (10, 8), "float8_e5m2": (12, 8)}


def err():
    e = lib.tio_error_peek_raised()
    return lib.tio_error_message(e).decode() if e else "?"


class Tensors:
    """DLTensors over a dict of torch tensors (host or one CUDA device)."""

    def __init__(self, d, meta=None):
        self.keep = list(d.items())
        self.n = len(d)
        self.names = (ctypes.c_char_p * self.n)(*[k.encode() for k in d])
        self.shapes = [(ctypes.c_int64 * max(1, t.dim()))(*t.shape) for t in d.values()]
        ts = []
        for i, t in enumerate(d.values()):
            code, bits = CODES[str(t.dtype).split(".")[1]]
            dev = (2, t.device.index) if t.is_cuda else (1, 0)
            ts.append(DLTensor(t.data_ptr(), dev[0], dev[1], t.dim(), code, bits, 1,
                               self.shapes[i], None, 0))
        self.ts = (DLTensor * self.n)(*ts)
        self.ptrs = (ctypes.c_void_p * self.n)(*[ctypes.addressof(x) for x in self.ts])
        flat = [s.encode() for kv in (meta or {}).items() for s in kv]
        self.meta = (ctypes.c_char_p * max(1, len(flat)))(*flat)
        self.nmeta = len(meta or {})

    def opts(self, gs):
        o = Opts(size=ctypes.sizeof(Opts), gpu_stream=gs, nmeta=self.nmeta)
        o.meta = ctypes.cast(self.meta, ctypes.c_void_p) if self.nmeta else None
        return o

    def save(self, path, gs=None):
        o = self.opts(gs)
        if lib.tio_safetensors_save_opts(path.encode(), self.names, self.ptrs, self.n,
                                         ctypes.byref(o)):
            raise OSError(err())

    def save_async(self, path, gs=None):
        o, h = self.opts(gs), ctypes.c_void_p()
        if lib.tio_safetensors_save_async(path.encode(), self.names, self.ptrs, self.n,
                                          ctypes.byref(o), ctypes.byref(h)):
            raise OSError(err())
        return h


def compat(d):
    import safetensors.numpy
    import safetensors.torch
    out = {}
    rng = np.random.default_rng(3)
    nd = {"%s.%d" % (dt, i): rng.integers(0, 255, size=(3, 8 * (5 + i)), dtype=np.uint8)
          .view(dt).reshape(3, -1) for i, dt in enumerate(
              ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8"])}
    nd["bool"] = rng.integers(0, 2, size=7).astype(bool)
    nd["z/y\"q"] = np.arange(4, dtype=np.uint64)
    a, b = os.path.join(d, "np-lib.safetensors"), os.path.join(d, "np-tio.safetensors")
    safetensors.numpy.save_file(nd, a)
    Tensors({k: torch.from_numpy(v) for k, v in nd.items()}).save(b)
    out["numpy_bytes_equal"] = open(a, "rb").read() == open(b, "rb").read()
    back = safetensors.numpy.load_file(b)
    out["numpy_ours_loads"] = all(np.array_equal(back[k], v) for k, v in nd.items())
    dts = [torch.bfloat16, torch.float16, torch.float32] + [
        getattr(torch, x) for x in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, x)]
    td = {"w%d" % i: torch.randn(17, 33).to(dt) for i, dt in enumerate(dts)}
    td["emb"] = torch.arange(10, dtype=torch.int64)
    a, b = os.path.join(d, "pt-lib.safetensors"), os.path.join(d, "pt-tio.safetensors")
    safetensors.torch.save_file(td, a, metadata={"format": "pt"})
    Tensors(td, {"format": "pt"}).save(b)
    out["torch_bytes_equal"] = open(a, "rb").read() == open(b, "rb").read()
    back = safetensors.torch.load_file(b)
    out["torch_ours_loads"] = all(torch.equal(back[k].view(torch.uint8), v.view(torch.uint8))
                                  for k, v in td.items())
    return out


def seconds(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def gpu(d, gib, rounds):
    import safetensors.torch
    per = 128 << 20
    n = (gib << 30) // per
    total = n * per
    gd = {"layers.%d.w" % i: torch.randn(per // 2, device="cuda", dtype=torch.bfloat16)
          for i in range(n)}
    pinned = torch.empty(total, dtype=torch.uint8, pin_memory=True)
    host = Tensors({"l%d" % i: pinned[i * per:(i + 1) * per] for i in range(n)})
    dev = Tensors(gd)
    gs = ctypes.c_void_p()
    if lib.tio_gpu_stream_wrap(DLDevice(2, 0),
                               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                               ctypes.byref(gs)):
        raise OSError(err())
    p = os.path.join(d, "x.safetensors")
    r = {k: [] for k in ("d2h", "dd", "host", "gpu_ring", "gpu_async_return_ms",
                         "gpu_async_durable")}

    def d2h():
        o = 0
        for v in gd.values():
            b = v.view(torch.uint8)
            pinned[o:o + b.numel()].copy_(b, non_blocking=True)
            o += b.numel()
        torch.cuda.synchronize()

    def dd():
        q = os.path.join(d, "dd")
        subprocess.run(["dd", "if=/dev/zero", "of=" + q, "bs=16M", "count=%d" % (total >> 24),
                        "oflag=direct", "conv=fsync"], capture_output=True, check=True)
        os.unlink(q)

    def fresh():
        # A new file each time, as dd's: freeing the old one is not timed.
        if os.path.exists(p):
            os.unlink(p)

    torch.cuda.synchronize()
    for _ in range(rounds):
        r["d2h"].append(total / seconds(d2h) / 1e9)
        r["dd"].append(total / seconds(dd) / 1e9)
        fresh()
        r["host"].append(total / seconds(lambda: host.save(p)) / 1e9)
        fresh()
        r["gpu_ring"].append(total / seconds(lambda: dev.save(p, gs)) / 1e9)
        fresh()
        t0 = time.perf_counter()
        h = dev.save_async(p, gs)
        r["gpu_async_return_ms"].append((time.perf_counter() - t0) * 1e3)
        if lib.tio_save_wait(h, -1):
            raise OSError(err())
        r["gpu_async_durable"].append(total / (time.perf_counter() - t0) / 1e9)
        lib.tio_save_free(h)
    # The capture: changes enqueued right after the call do not show.
    ref = {k: v.cpu() for k, v in gd.items()}
    h = dev.save_async(p, gs)
    for v in gd.values():
        v.add_(1)
    if lib.tio_save_wait(h, -1):
        raise OSError(err())
    lib.tio_save_free(h)
    lib.tio_gpu_stream_destroy(gs)
    back = safetensors.torch.load_file(p)
    exact = all(torch.equal(back[k], ref[k]) for k in gd)
    del back

    def peer_st():
        safetensors.torch.save_file(gd, p)
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    def peer_torch():
        with open(p, "wb") as f:
            torch.save(gd, f)
            f.flush()
            os.fsync(f.fileno())
    out = {k: round(statistics.median(v), 3) for k, v in r.items()}
    out["async_exact_before_change"] = exact
    out["safetensors_save_file_fsync"] = round(total / seconds(peer_st) / 1e9, 3)
    out["torch_save_fsync"] = round(total / seconds(peer_torch) / 1e9, 3)
    out["bytes"] = total
    out["rounds"] = r
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compat", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--gib", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("dir", nargs="?", default="/var/tmp")
    a = ap.parse_args()
    d = os.path.join(a.dir, "tio-save-peer.%d" % os.getpid())
    os.makedirs(d)
    res = {}
    try:
        if a.compat:
            res["compat"] = compat(d)
        if a.gpu:
            res["gpu"] = gpu(d, a.gib, a.rounds)
    finally:
        subprocess.run(["rm", "-rf", d])
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
