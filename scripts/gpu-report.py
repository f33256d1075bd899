#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make gpu-check's report (the bundle's report.py): OUTDIR/summary.json
and OUTDIR/report.md from what scripts/gpu-check.sh left in OUTDIR: the
parts (parts.tsv), the machine (env.tsv), tio-bench's gpu suite
(gpu.json, its targets in logs/bench.log), fio's disk read (disk.json)
and the GPU saves beside the safetensors library (gpu-save.json).

  report.py OUTDIR EXIT_STATUS
Only the standard library: it runs under whatever Python the GPU machine
has."""
import json
import os
import sys


def tsv(path, keys):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                vals = line.rstrip("\n").split("\t")
                rows.append(dict(zip(keys, vals + [""] * (len(keys) - len(vals)))))
    return rows


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


BENCH = ("gpu", "gpu-load")     # tio-bench's JSON files, by part


def bench_rows(out):
    """tio-bench's gpu rows: case -> (median ns per op, bytes per op)."""
    rows, files = {}, []
    for name in BENCH:
        doc = load(os.path.join(out, name + ".json"))
        if doc:
            files.append(name + ".json")
        for r in (doc or {}).get("results", []):
            if r.get("status") == "ok" and r.get("median"):
                rows[r["case"]] = (r["median"], r.get("bytes_per_op") or 0)
    return files, rows


def targets(out):
    """The targets blocks tio-bench printed (its verdicts, one line each)."""
    lines = []
    for part in ("bench", "load"):
        path = os.path.join(out, "logs", part + ".log")
        if not os.path.exists(path):
            continue
        on = False
        with open(path) as f:
            for line in f:
                if line.startswith("== targets"):
                    on = True
                    continue
                if on:
                    if not line.strip() or line.startswith("1.."):
                        break
                    if not line.startswith("targets:"):
                        lines.append(line.rstrip())
    return lines


def gbps(row):
    ns, nbytes = row
    return nbytes / ns if nbytes and ns else None


def fmt_ns(ns):
    return "%.2f ns" % ns if ns < 1000 else "%.2f µs" % (ns / 1000) if ns < 1e6 \
        else "%.1f ms" % (ns / 1e6)


def figures(rows, disk, save):
    """The figures the issue's targets are about, as (what, value) pairs."""
    fig = []

    def ns(case, what):
        if case in rows:
            fig.append((what, fmt_ns(rows[case][0])))

    def rate(case, what):
        if case in rows and gbps(rows[case]):
            fig.append((what, "%.2f GB/s" % gbps(rows[case])))

    ns("fence/record", "stream -> fence (doorbell write; goal <= 5 µs)")
    ns("fence/record-hostfunc", "stream -> fence (host function)")
    ns("fence/roundtrip", "fence -> stream -> fence (goal: record + 10 µs)")
    if "call/dltensor-cuda" in rows and "call/dltensor-cpu" in rows:
        fig.append(("CUDA DLTensor* call beyond the CPU one (goal <= 1 ns)", "%+.2f ns" %
                    (rows["call/dltensor-cuda"][0] - rows["call/dltensor-cpu"][0])))
    rate("h2d/pinned/64M", "host -> device, 64 MiB registered")
    rate("d2h/pinned/64M", "device -> host, 64 MiB registered")
    if disk:
        fig.append(("disk, fio O_DIRECT read", "%.2f GB/s" % (disk / 1e9)))
    for case, what in (("load/host-cold", "disk -> host (the loader), cold"),
                       ("load/device-cold", "disk -> GPU (tensorio), cold"),
                       ("load/peer/safetensors-cold", "disk -> GPU (safetensors), cold"),
                       ("load/device-warm", "page cache -> GPU (tensorio), warm"),
                       ("load/peer/safetensors-warm", "page cache -> GPU (safetensors), warm"),
                       ("load/mmap-htod-warm", "mmap + per-tensor copies, warm")):
        rate(case, what)
    for a, b, what in (("load/device-warm", "load/peer/safetensors-warm",
                        "warm: tensorio / safetensors (goal >= 2)"),
                       ("load/device-cold", "load/peer/safetensors-cold",
                        "cold: tensorio / safetensors")):
        if a in rows and b in rows and gbps(rows[a]) and gbps(rows[b]):
            fig.append((what, "%.2fx" % (gbps(rows[a]) / gbps(rows[b]))))
    if disk and "load/device-cold" in rows and gbps(rows["load/device-cold"]):
        fig.append(("cold: disk -> GPU / fio's disk read (goal >= 0.95 of min(disk, PCIe))",
                    "%.2fx" % (gbps(rows["load/device-cold"]) / (disk / 1e9))))
    g = (save or {}).get("gpu") or {}
    for key, what in (("gpu_ring", "GPU save, durable (tensorio, staging ring)"),
                      ("gpu_async_durable", "GPU save, asynchronous, until durable"),
                      ("safetensors_save_file_fsync", "GPU save, safetensors save_file + fsync"),
                      ("torch_save_fsync", "GPU save, torch.save + fsync"),
                      ("dd", "disk, dd O_DIRECT write + fsync")):
        if key in g:
            fig.append((what, "%.2f GB/s" % g[key]))
    if "gpu_async_return_ms" in g:
        fig.append(("GPU save, asynchronous, until it returns", "%.1f ms" % g["gpu_async_return_ms"]))
    if "async_exact_before_change" in g:
        fig.append(("asynchronous save exact though the tensors changed after",
                    str(g["async_exact_before_change"])))
    return fig


def main():
    out, status = sys.argv[1], int(sys.argv[2])
    parts = tsv(os.path.join(out, "parts.tsv"),
                ["name", "status", "seconds", "passed", "failed", "skipped", "note"])
    env = {r["key"]: r["value"] for r in tsv(os.path.join(out, "env.tsv"), ["key", "value"])}
    files, rows = bench_rows(out)
    fio = load(os.path.join(out, "disk.json"))
    disk = None
    try:
        disk = fio["jobs"][0]["read"]["bw_bytes"]
    except (TypeError, KeyError, IndexError):
        pass
    save = load(os.path.join(out, "gpu-save.json"))
    fig = figures(rows, disk, save)
    tgt = targets(out)
    summary = {
        "format": "tensorio-gpu-check/1", "exit": status, "env": env,
        "parts": [dict(p, seconds=int(p["seconds"] or 0), passed=int(p["passed"] or 0),
                       failed=int(p["failed"] or 0), skipped=int(p["skipped"] or 0))
                  for p in parts],
        "figures": dict(fig), "targets": tgt,
        "bench": files, "disk_bw_bytes": disk,
        "save": (save or {}).get("gpu"),
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)

    fake = env.get("mode") == "fake"
    asked = env.get("parts")
    md = ["# %smake gpu-check" % ('TIO_GPU_CHECK_PARTS="%s" ' % asked if asked else ""), ""]
    md.append("%s, exit status %d: %s." % (
        env.get("start", "?"), status,
        "every part passed" if status == 0 else "a part failed or no GPU driver was found"))
    md.append("")
    md.append("Machine: %s; %s CPUs (%s); kernel %s; driver %s (%s)." % (
        env.get("gpu", "no GPU named by nvidia-smi"), env.get("cpus", "?"),
        env.get("cpu", "?"), env.get("kernel", "?"), env.get("driver", "?"),
        "the tests' fake driver: host figures, not a GPU's" if fake else env.get("vendor", "?")))
    md.append("Bundle: %s; Python %s; %s s in all." % (
        env.get("bundle", "?"), env.get("python", "?"), env.get("seconds", "?")))
    md += ["", "| part | status | s | passed | failed | skipped | note |",
           "|---|---|---|---|---|---|---|"]
    for p in parts:
        md.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            p["name"], p["status"], p["seconds"], p["passed"], p["failed"], p["skipped"],
            p["note"].replace("|", "/")))
    if fig:
        md += ["", "## Figures", "", "| what | value |", "|---|---|"]
        md += ["| %s | %s |" % f for f in fig]
    if tgt:
        md += ["", "## tio-bench's targets", "", "```"] + tgt + ["```"]
    files = [(n, w) for n, w in (("gpu.md", "tio-bench --md"), ("gpu-load.md", "tio-bench --md"),
                                 ("gpu.json", "tio-bench"), ("gpu-load.json", "tio-bench"),
                                 ("gpu-save.json", "st_save_peer.py"), ("disk.json", "fio"))
             if os.path.exists(os.path.join(out, n))]
    md += ["", "Files: %slogs/ per part." % "".join("%s (%s), " % f for f in files)]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
