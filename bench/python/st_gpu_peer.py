#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The peer of tio-bench's gpu load rows: the safetensors library
(safetensors.torch.load_file with device="cuda:0") loading the same
checkpoint, cold (dropped from the page cache first) and warm, in GB/s of
file bytes. --make writes a Llama-shaped bf16 checkpoint to load.
--serve is tio-bench's side of its load/peer rows: once torch and the GPU
are up it prints "ready", then answers each line "cold" or "warm" on
stdin with the seconds of one load ("skip WHY" instead of "ready" when it
cannot run, "error WHY" for a load that failed)."""
import argparse
import json
import os
import statistics
import sys
import time


def drop(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)    # dirty pages stay cached
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass


def make(path, layers, hidden, inter, vocab):
    """Random bf16 weights made on the GPU (fast), one file."""
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(1)
    shapes = {"model.embed_tokens.weight": (vocab, hidden),
              "model.norm.weight": (hidden,), "lm_head.weight": (vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[p + "self_attn." + n + ".weight"] = (hidden, hidden)
        shapes[p + "mlp.gate_proj.weight"] = (inter, hidden)
        shapes[p + "mlp.up_proj.weight"] = (inter, hidden)
        shapes[p + "mlp.down_proj.weight"] = (hidden, inter)
        shapes[p + "input_layernorm.weight"] = (hidden,)
        shapes[p + "post_attention_layernorm.weight"] = (hidden,)
    tensors = {k: torch.randn(s, device="cuda:0", dtype=torch.bfloat16).cpu()
               for k, s in shapes.items()}
    save_file(tensors, path, metadata={"format": "pt"})
    return len(tensors)


def one_load(path, mode):
    """Seconds of one load_file(device="cuda:0"), the GPU synchronised."""
    import torch
    from safetensors.torch import load_file

    if mode == "cold":
        drop(path)
    else:
        warm(path)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    d = load_file(path, device="cuda:0")
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    del d
    return secs


def serve(path):
    try:
        import safetensors  # noqa: F401
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no GPU")
        torch.zeros(1, device="cuda:0")
    except Exception as e:  # noqa: BLE001 (any reason is a reason to skip)
        print("skip", type(e).__name__, str(e).replace("\n", " ")[:200], flush=True)
        return 0
    print("ready", flush=True)
    for line in sys.stdin:
        mode = line.strip()
        if mode not in ("cold", "warm"):
            break
        try:
            print(repr(one_load(path, mode)), flush=True)
        except Exception as e:  # noqa: BLE001
            print("error", type(e).__name__, str(e).replace("\n", " ")[:200], flush=True)
    return 0


def measure(path, mode, reps):
    size = os.path.getsize(path)
    secs = [one_load(path, mode) for _ in range(reps)]
    med = statistics.median(secs)
    return {"peer": "safetensors.torch.load_file(device=cuda:0)", "mode": mode,
            "bytes": size, "reps": reps, "median_s": med, "min_s": min(secs),
            "gbps_median": size / med / 1e9, "gbps_best": size / min(secs) / 1e9}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--make", action="store_true", help="write the checkpoint")
    ap.add_argument("--serve", action="store_true", help="tio-bench's peer rows")
    ap.add_argument("--layers", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--inter", type=int, default=11008)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if a.serve:
        return serve(a.path)
    if a.make:
        n = make(a.path, a.layers, a.hidden, a.inter, a.vocab)
        print(json.dumps({"made": a.path, "tensors": n,
                          "bytes": os.path.getsize(a.path)}))
        return 0
    import safetensors
    import torch
    print(json.dumps({"torch": torch.__version__, "safetensors": safetensors.__version__,
                      "gpu": torch.cuda.get_device_name(0)}))
    for mode in ("cold", "warm"):
        print(json.dumps(measure(a.path, mode, a.reps)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
