# SPDX-License-Identifier: LGPL-2.1-or-later
"""safetensors through libtensorio's loader and writer."""

import os
import sys

from . import _tensorio


def _bar(done, total):
    # progress=True: one line on stderr, redrawn in place.
    pct = 100 * done // total if total else 100
    sys.stderr.write("\rloading %d / %d MiB (%d%%)" % (done >> 20, total >> 20, pct))
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


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


def save_safetensors(path, tensors, metadata=None):
    """Write `tensors` ({name: any DLPack tensor}) to a safetensors file.

    Tensors must be compact row-major CPU tensors. `metadata`, a dict of
    str to str, goes into the header's "__metadata__". The file is replaced
    atomically: a failed save leaves the old one as it was.
    """
    if not isinstance(tensors, dict):
        raise TypeError("tensors is a dict of name to tensor, not %s"
                        % type(tensors).__name__)
    _tensorio._save_safetensors(os.fspath(path), tensors, metadata)
