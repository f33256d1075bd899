# SPDX-License-Identifier: LGPL-2.1-or-later
"""tensorio: pinned tensor buffers, fences, batching, safetensors and the
libtensorio FFI for numpy and PyTorch users. See docs/python.md."""

from . import _tensorio
from ._tensorio import (Batch, BatchResult, Buffer, Function, Module, Object,
                        Stream, Tensor, backend, empty, from_dlpack,
                        get_global_func, import_dmabuf, info,
                        list_global_funcs, load_module, remove_global_func,
                        system_lib)
from ._safetensors import (SaveHandle, load_safetensors, save_safetensors,
                           write_safetensors_index)

__version__ = _tensorio._lib_version()

__all__ = [
    "Batch", "BatchResult", "Buffer", "Function", "Module", "Object",
    "SaveHandle", "Stream", "Tensor", "backend", "empty", "from_dlpack",
    "get_global_func", "import_dmabuf", "info", "list_global_funcs",
    "load_module", "load_safetensors", "register_func", "remove_global_func",
    "save_safetensors", "system_lib", "write_safetensors_index",
    "__version__",
]


def register_func(name, func=None, override=False):
    """Make a Python callable the global FFI function `name`.

    C code and loaded modules can then call it; its arguments arrive as
    Python objects, its result goes back as an FFI value, and an exception
    it raises reaches the caller as an Error of the same kind. Usable as a
    decorator: ``@tensorio.register_func("my.add")``. Returns `func`.
    """
    if func is None:
        return lambda f: _tensorio._register_func(name, f, override)
    return _tensorio._register_func(name, func, override)
