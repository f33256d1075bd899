# SPDX-License-Identifier: LGPL-2.1-or-later
"""safetensors through libtensorio, and the metadata the C writer lacks."""

import json
import os
import struct

from . import _tensorio


def load_safetensors(path, device="cpu", progress=False):
    """Load a safetensors file into one pinned buffer.

    Returns ``{name: tensorio.Tensor}``: zero-copy views of that buffer on
    "cpu" (the buffer lives as long as any of them), or copies on
    ``device="cuda:N"``. The file is checked before anything is trusted; a
    malformed one raises ValueError. `progress` is not supported yet
    (libtensorio's loader reports none): a true value raises
    NotImplementedError.
    """
    if progress:
        raise NotImplementedError(
            "load_safetensors(progress=...): libtensorio's safetensors loader "
            "has no progress report yet")
    path = os.fspath(path)
    try:
        return _tensorio._load_safetensors(path, device)
    except KeyError:
        os.stat(path)    # ENOENT: FileNotFoundError, as open() raises it
        raise


def save_safetensors(path, tensors, metadata=None):
    """Write `tensors` ({name: any DLPack tensor}) to a safetensors file.

    Tensors must be compact row-major CPU tensors. `metadata`, a dict of
    str to str, goes into the header's "__metadata__".
    """
    if not isinstance(tensors, dict):
        raise TypeError("tensors is a dict of name to tensor, not %s"
                        % type(tensors).__name__)
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str)
                for k, v in metadata.items()):
            raise TypeError("metadata is a dict of str to str")
    path = os.fspath(path)
    _tensorio._save_safetensors(path, tensors)
    if metadata:
        _add_metadata(path, metadata)


def _add_metadata(path, metadata):
    # Rewrite the header with __metadata__; the data follows unchanged.
    with open(path, "rb") as f:
        (hlen,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(hlen))
        header["__metadata__"] = dict(metadata)
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        tmp = path + ".tmp"
        try:
            with open(tmp, "wb") as out:
                out.write(struct.pack("<Q", len(text)))
                out.write(text)
                while True:
                    chunk = f.read(1 << 24)
                    if not chunk:
                        break
                    out.write(chunk)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
