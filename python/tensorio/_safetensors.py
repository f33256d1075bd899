# SPDX-License-Identifier: LGPL-2.1-or-later
"""safetensors through libtensorio's loader and writer."""

import atexit
import os
import sys

from . import _tensorio


def _bar(done, total, what="loading"):
    # progress=True: one line on stderr, redrawn in place.
    pct = 100 * done // total if total else 100
    sys.stderr.write("\r%s %d / %d MiB (%d%%)" % (what, done >> 20, total >> 20, pct))
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _bar_saving(done, total):
    _bar(done, total, "saving")


def load_safetensors(path, device="cpu", progress=False):
    """Load a safetensors file, or a sharded checkpoint, into pinned memory.

    `path` is a .safetensors file or a ``model.safetensors.index.json``
    naming the shards. Returns ``{name: tensorio.Tensor}``: zero-copy views
    of one pinned buffer on "cpu" (the buffer lives as long as any of them),
    or device tensors on ``"cuda:N"`` / ``"rocm:N"``, read through a ring of
    pinned bounce buffers without staging the file in host memory. The file
    is checked before anything is trusted; a malformed one raises
    ValueError.

    `progress`: False, True (a progress line on stderr) or a callable
    ``progress(done, total)`` in bytes. An exception raised by it, or a
    signal such as Ctrl-C, cancels the load and is raised here; nothing
    stays allocated.
    """
    if progress is True:
        progress = _bar
    elif progress is False:
        progress = None
    path = os.fspath(path)
    try:
        return _tensorio._load_safetensors(path, device, progress)
    except KeyError:
        os.stat(path)    # ENOENT: FileNotFoundError, as open() raises it
        raise


_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _size(v):
    # max_shard_size: bytes, or "5GB" (10**9) / "5GiB" (2**30) as transformers reads it.
    if v is None:
        return 0
    if isinstance(v, int):
        if v < 0:
            raise ValueError("max_shard_size is not negative: %d" % v)
        return v
    if isinstance(v, str):
        t = v.strip().upper()
        for u in sorted(_UNITS, key=len, reverse=True):
            if t.endswith(u):
                try:
                    return int(float(t[:-len(u)]) * _UNITS[u])
                except ValueError:
                    break
    raise ValueError("max_shard_size is a number of bytes or a size such as "
                     "\"5GB\" or \"2GiB\", not %r" % (v,))


def _detached(tensors):
    # Parameters of a torch model require grad, which DLPack export refuses.
    out = {}
    for k, t in tensors.items():
        if getattr(t, "requires_grad", False) and hasattr(t, "detach"):
            t = t.detach()
        out[k] = t
    return out


def _torch_stream(tensors):
    # The current torch stream of the device of the first CUDA/ROCm torch tensor.
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for t in tensors.values():
        if isinstance(t, torch.Tensor) and t.is_cuda:
            return torch.cuda.current_stream(t.device).cuda_stream
    return None


_pending = set()


def _sweep():
    for s in [s for s in _pending if s.done()]:
        _pending.discard(s)


@atexit.register
def _wait_pending():
    # A save's threads call back into Python (progress): end them first.
    for s in list(_pending):
        try:
            s.wait(None)
        except Exception:    # its handle's owner was told, or dropped it
            pass
    _pending.clear()


class SaveHandle:
    """An asynchronous save (``save_safetensors(..., block=False)``).

    The tensors were captured when it was made (unless ``copy=False``);
    the save goes on in libtensorio's threads.
    """

    def __init__(self, state, path):
        self._state = state
        self.path = path
        _pending.add(state)

    def wait(self, timeout=None):
        """Wait until the files are durable; return the path to load.

        Raises the save's error (OSError with the errno: ENOSPC, EIO ...,
        naming the file), what a progress callable raised, or TimeoutError
        when `timeout` seconds pass first."""
        try:
            self._state.wait(timeout)
        finally:
            if self._state.done():
                _pending.discard(self._state)
        return self.path

    result = wait

    def done(self):
        """Whether the save has ended, durable or failed."""
        return self._state.done()

    def exception(self, timeout=None):
        """The save's error (waiting for it to end), or None."""
        try:
            self.wait(timeout)
        except TimeoutError:
            if not self.done():
                raise
            return self._exception()
        except BaseException as e:    # its error, whatever its kind
            return e
        return None

    def _exception(self):
        try:
            self._state.wait(0)
        except BaseException as e:
            return e
        return None

    def cancel(self):
        """Stop the save: it fails with ECANCELED and the old files stay."""
        self._state.cancel()

    @property
    def point(self):
        """(tensorio.Stream, seqno): the point signalled when the files are
        durable, or with the save's error; stream.export(seqno) gives a
        sync_file on the kernel backend."""
        return self._state.point()


def save_safetensors(path, tensors, metadata=None, *, block=True, copy=True,
                     max_shard_size=None, progress=False, stream=None, _flags=0):
    """Write `tensors` ({name: any DLPack tensor}) to a safetensors file.

    The file is durable and replaced atomically (a crash leaves the old
    file or the new one), laid out as the safetensors library writes it.
    Tensors are compact row-major, in host memory or on one CUDA or ROCm
    device (torch tensors that require grad are saved detached).
    `metadata`, a dict of str to str, goes into "__metadata__".

    `max_shard_size` (bytes, or "5GB" / "2GiB"): above it, shards
    NAME-00001-of-0000N.safetensors and NAME.safetensors.index.json.
    `progress`: False, True (a line on stderr) or progress(done, total);
    an exception it raises cancels the save, and the old files stay.
    `stream`: for GPU tensors, the CUDA/HIP stream producing them (an int
    handle; default: torch's current stream for torch tensors).

    Returns the path to load (the index when sharded); with block=False, a
    SaveHandle at once, the tensors captured (copy=False: not captured,
    they must stay unchanged until the save is done).
    """
    if not isinstance(tensors, dict):
        raise TypeError("tensors is a dict of name to tensor, not %s"
                        % type(tensors).__name__)
    if progress is True:
        progress = _bar_saving
    elif progress is False:
        progress = None
    path = os.fspath(path)
    tensors = _detached(tensors)
    if stream is None:
        stream = _torch_stream(tensors)
    _sweep()
    r = _tensorio._save_safetensors(path, tensors, metadata, block, copy,
                                    _size(max_shard_size), progress, stream, _flags)
    if block:
        return path + ".index.json" if r > 1 else path
    state, files = r
    return SaveHandle(state, path + ".index.json" if files > 1 else path)


def write_safetensors_index(path, shards, metadata=None):
    """Write the index of a checkpoint whose shards were saved apart.

    `path` is NAME.safetensors.index.json; `shards`, the shard files (in
    its directory), written already, by any process. Its "metadata" holds
    "total_size" (the tensors' bytes) and `metadata`'s strings, its
    "weight_map" every tensor's shard, read from the shards' headers. The
    index is written durably and atomically.
    """
    _tensorio._write_safetensors_index(os.fspath(path),
                                       [os.fspath(s) for s in shards], metadata)
