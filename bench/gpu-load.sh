#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Disk -> GPU loading side by side on a CUDA machine: a Llama-shaped bf16
# checkpoint (bench/python/st_gpu_peer.py --make, needs torch and
# safetensors), loaded by tio-bench's gpu load rows (the tensorio loader's
# staging ring against mmap + per-tensor copies, and the disk through the
# loader) and by the safetensors library itself, in one run.
#   usage: bench/gpu-load.sh [DIR]   DIR on a disk, not tmpfs (/var/tmp)
#   env:   TIO_BENCH (build/bench/tio-bench), PYTHON (python3), LAYERS (10),
#          CASES (the gpu rows to run, a glob: load/*), TIO_GPU_LOAD_JSON (a file)
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/var/tmp}
bench=${TIO_BENCH:-$top/build/bench/tio-bench}
py=${PYTHON:-python3}
case $(stat -f -c %T "$dir") in
tmpfs|ramfs) echo "gpu-load: $dir is in memory; name a directory on a disk" >&2
	exit 2 ;;
esac
f=$dir/tio-gpu-load.safetensors
trap 'rm -f "$f"' EXIT
$py "$top/bench/python/st_gpu_peer.py" --make --layers "${LAYERS:-10}" "$f"
TIO_BENCH_ST_FILE=$f "$bench" --suite gpu --case "${CASES:-load/*}" --procs 1 --repeat 5 \
	${TIO_GPU_LOAD_JSON:+--json "$TIO_GPU_LOAD_JSON"} || echo "gpu-load: tio-bench failed" >&2
$py "$top/bench/python/st_gpu_peer.py" --reps 5 "$f" || echo "gpu-load: the peer failed" >&2
echo "disk, O_DIRECT 16 MiB reads (dd):"
dd if="$f" of=/dev/null bs=16M iflag=direct 2>&1 | tail -1
