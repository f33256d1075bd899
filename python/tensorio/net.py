# SPDX-License-Identifier: LGPL-2.1-or-later
"""tensorio.net: tensors across processes and machines over UCX
(docs/net.md).

A thin layer over the tio.net.* FFI globals of libtensorio-net, which is
loaded on first import from beside the libtensorio this package uses
(else by its soname): the extension itself does not link it, so that
``import tensorio`` never loads UCX.

    w = Worker()
    ep = w.connect(peer_address_bytes, "node-b")
    m = w.register(tensorio.Buffer(n))   # or w.alloc(n): UCX's memory,
                                        # m.buffer its tensorio.Buffer
    rk = ep.recv_desc(tag=1)            # a RemoteKey with .dtype, .shape
    ep.get(m, rk)                       # waits; or stream=s: returns the point
"""

import ctypes
import os

from . import get_global_func

__all__ = ["Worker", "Endpoint", "Memory", "RemoteKey"]

_SONAME = "libtensorio-net.so.0"


def _libdir():
    """The directory of the libtensorio.so.0 mapped into this process."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split(None, 5)[-1].strip()
            if os.path.basename(path).startswith("libtensorio.so"):
                return os.path.dirname(path)
    return None


def _load():
    d = _libdir()
    path = os.path.join(d, _SONAME) if d else None
    try:
        lib = ctypes.CDLL(path if path and os.path.exists(path) else _SONAME)
    except OSError as e:
        raise ImportError("tensorio.net needs %s (libtensorio-net): %s" % (_SONAME, e)) from e
    lib.tio_net_register_globals.restype = ctypes.c_int
    if lib.tio_net_register_globals() != 0:
        raise RuntimeError("libtensorio-net: registering the tio.net.* globals failed")
    return lib


_lib = _load()


def _call(name, *args):
    return get_global_func("tio.net." + name)(*args)


def _ns(seconds):
    return -1 if seconds is None else int(seconds * 1e9)


class Worker:
    """A UCX context and worker with its progress thread."""

    def __init__(self):
        self._obj = _call("worker")

    def address(self):
        """The bytes a peer passes to connect()."""
        return _call("address", self._obj)

    def connect(self, address, peer=None):
        """An Endpoint to the worker at `address` (`peer` names it in errors)."""
        return Endpoint(_call("connect", self._obj, bytes(address), peer))

    def register(self, buffer):
        """Register a tensorio.Buffer for one-sided transfers."""
        return Memory(_call("register", self._obj, buffer), buffer.nbytes)

    def alloc(self, nbytes):
        """Memory that UCX allocates (whole pages of zeroes), registered:
        shared memory reaches it with one copy, a registered Buffer only
        through messages. Its .buffer may outlive it (and this Worker)."""
        obj = _call("alloc", self._obj, int(nbytes))
        return Memory(obj, _call("buffer", obj).nbytes)


class Endpoint:
    """A connection to a peer worker; put/get, descriptors."""

    def __init__(self, obj):
        self._obj = obj

    @property
    def transports(self):
        """The transports UCX chose, e.g. 'tcp/lo'."""
        return _call("transports", self._obj)

    def unpack(self, blob):
        """A RemoteKey from the bytes of the peer's Memory.rkey_pack()."""
        return RemoteKey(_call("rkey_unpack", self._obj, bytes(blob)))

    def _rma(self, op, local, remote, local_off, remote_off, nbytes, stream):
        if nbytes is None:
            nbytes = min(local.nbytes - local_off, remote.nbytes - remote_off)
        return _call(op, self._obj, local._obj, local_off, remote._obj, remote_off,
                     nbytes, stream)

    def put(self, local, remote, local_off=0, remote_off=0, nbytes=None, stream=None):
        """Write local bytes into the peer's memory. With a Stream: returns
        the point that signals when they are there; else waits (returns 0)."""
        return self._rma("put", local, remote, local_off, remote_off, nbytes, stream)

    def get(self, local, remote, local_off=0, remote_off=0, nbytes=None, stream=None):
        """Read the peer's bytes into local memory (as put())."""
        return self._rma("get", local, remote, local_off, remote_off, nbytes, stream)

    def send_desc(self, memory, dtype, shape, tag, timeout=None):
        """Send a dense tensor's descriptor (dtype name, shape) over
        `memory`, with its remote key, under message tag `tag`."""
        _call("send_desc", self._obj, memory._obj, str(dtype), list(shape), tag,
              _ns(timeout))

    def recv_desc(self, tag, timeout=None):
        """Receive a descriptor sent with `tag`: a RemoteKey with dtype and shape."""
        return RemoteKey(_call("recv_desc", self._obj, tag, _ns(timeout)))


class Memory:
    """A registered buffer (it keeps the buffer alive)."""

    def __init__(self, obj, nbytes):
        self._obj = obj
        self.nbytes = nbytes

    @property
    def buffer(self):
        """Its tensorio.Buffer; it keeps the memory alive as long as it (or
        a tensor of it) lives, even after this Memory is gone."""
        return _call("buffer", self._obj)

    def rkey_pack(self):
        """The bytes of its remote key, for the peer's Endpoint.unpack()."""
        return _call("rkey_pack", self._obj)


class RemoteKey:
    """The peer's memory, usable on one endpoint."""

    def __init__(self, obj):
        self._obj = obj
        self.nbytes = _call("rkey_size", obj)

    @property
    def dtype(self):
        """The dtype of the descriptor it came with (recv_desc)."""
        return _call("rkey_dtype", self._obj)

    @property
    def shape(self):
        """The shape of the descriptor it came with (recv_desc)."""
        return _call("rkey_shape", self._obj)
