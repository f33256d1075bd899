# SPDX-License-Identifier: LGPL-2.1-or-later
"""The FFI from Python: global functions, values both ways, callbacks,
modules, reflection."""

import ctypes
import struct
import sys

import pytest

import tensorio


@pytest.fixture
def echo():
    tensorio.register_func("test.echo", lambda *a: a[0] if len(a) == 1 else list(a))
    # pytest holds fixture values past the leak check: hold no Function.
    yield lambda *a: tensorio.get_global_func("test.echo")(*a)
    tensorio.remove_global_func("test.echo")


def test_version():
    assert tensorio.__version__.count(".") == 2


def test_noop_returns_none():
    f = tensorio.get_global_func("tensorio.noop")
    assert isinstance(f, tensorio.Function)
    assert f() is None
    assert f(1) is None
    assert f(1, 2.0, "x", None) is None


def test_missing_function():
    with pytest.raises(KeyError, match="no global function named 'no.such'"):
        tensorio.get_global_func("no.such")
    assert tensorio.get_global_func("no.such", allow_missing=True) is None


@pytest.mark.parametrize("value", [
    0, 1, -1, 2**63 - 1, -2**63, 1.5, -0.0, True, False, None, "", "short",
    "a longer string than seven", "ünïcödé", "nul\0inside", b"", b"\x00\x01",
    b"longer bytes than seven", [1, "a", [2.5, None]], (1, 2), {"a": 1, "b": [1]},
])
def test_round_trip(echo, value):
    out = echo(value)
    if isinstance(value, tuple):
        value = list(value)
    assert out == value and type(out) is type(value)


def test_int_overflow(echo):
    with pytest.raises(OverflowError, match="int64"):
        echo(2**63)


def test_wrong_argument_type(echo):
    with pytest.raises(TypeError, match="cannot pass a object"):
        echo(object())
    with pytest.raises(TypeError, match="keyword"):
        echo(x=1)


def test_many_arguments(echo):
    args = list(range(20)) + ["s" * 10]
    assert echo(*args) == args


def test_python_function_gets_ffi_function(echo):
    # A callable argument becomes a Function; calling it goes back to Python.
    seen = []
    g = echo(lambda x: seen.append(x) or x * 2)
    assert isinstance(g, tensorio.Function)
    assert g(21) == 42 and seen == [21]


def test_refcounts_of_arguments(echo):
    s = "refcounted string value"
    lst = ["a", "b"]
    before = (sys.getrefcount(s), sys.getrefcount(lst))
    for _ in range(100):
        echo(s)
        echo(lst)
    assert (sys.getrefcount(s), sys.getrefcount(lst)) == before


def test_register_override():
    tensorio.register_func("test.o", lambda: 1)
    try:
        with pytest.raises(KeyError):
            tensorio.register_func("test.o", lambda: 2)
        tensorio.register_func("test.o", lambda: 3, override=True)
        assert tensorio.get_global_func("test.o")() == 3
        assert "test.o" in tensorio.list_global_funcs()
    finally:
        tensorio.remove_global_func("test.o")
    assert "test.o" not in tensorio.list_global_funcs()


def test_register_decorator():
    @tensorio.register_func("test.deco")
    def add(a, b):
        return a + b
    try:
        assert add(1, 2) == 3
        assert tensorio.get_global_func("test.deco")(2, 3) == 5
    finally:
        tensorio.remove_global_func("test.deco")


def test_register_keeps_callable_alive():
    def f():
        return "alive"
    before = sys.getrefcount(f)
    tensorio.register_func("test.alive", f)
    assert sys.getrefcount(f) == before + 1
    tensorio.remove_global_func("test.alive")
    assert sys.getrefcount(f) == before


def test_register_bad_input():
    with pytest.raises(TypeError, match="callable"):
        tensorio.register_func("test.bad", 42)
    with pytest.raises(KeyError):
        tensorio.remove_global_func("test.never")


def test_driver_globals_release_gil():
    assert tensorio.get_global_func("tio.fence.wait").release_gil
    assert not tensorio.get_global_func("tensorio.noop").release_gil


def test_module(fixture_module_path):
    m = tensorio.load_module(fixture_module_path)
    assert isinstance(m, tensorio.Module)
    assert m["add_one"](41) == 42
    assert m.sum(1, 2.5) == 3.5
    assert m.greet() == "hi"
    assert "greet" in m and "nothing" not in m
    assert m.functions() == sorted(m.functions())
    with pytest.raises(KeyError):
        m["nothing"]
    with pytest.raises(AttributeError):
        m.nothing
    with pytest.raises(TypeError):
        m[1]


def test_module_calls_python(fixture_module_path):
    m = tensorio.load_module(fixture_module_path)
    assert m.apply(lambda x: x + 1, 1) == 2

    def boom(x):
        raise ValueError("from python %d" % x)
    with pytest.raises(ValueError, match="from python 7") as e:
        m.apply(boom, 7)
    # The Python traceback travelled through C as the Error's backtrace.
    assert any("boom" in n for n in e.value.__notes__)


def test_load_module_errors(tmp_path):
    with pytest.raises(OSError):
        tensorio.load_module(str(tmp_path / "missing.so"))
    with pytest.raises(TypeError):
        tensorio.load_module(42)


# Safe-call functions put into the system libraries through the C API
# (as a system-library module's constructor would); kept for the process,
# as the registry keeps their addresses.
_SAFE_CALL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_int32, ctypes.c_void_p)


def _returns(v):
    def call(self, args, nargs, ret):
        ctypes.memmove(ret, struct.pack("<iIq", 1, 0, v), 16)   # Int
        return 0
    return _SAFE_CALL(call)


_SYSLIB_CALLS = {"__tvm_ffi_pytsl_which": _returns(1),
                 "__tvm_ffi_pytslx_fallback": _returns(2)}


def test_system_lib_symbol_prefix():
    lib = ctypes.CDLL("libtensorio.so.0")   # the one the extension loaded
    lib.tio_system_lib_register_symbol.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    for sym, f in _SYSLIB_CALLS.items():
        assert lib.tio_system_lib_register_symbol(sym.encode(),
                                                  ctypes.cast(f, ctypes.c_void_p)) == 0
    p = tensorio.system_lib("pytsl_")
    assert isinstance(p, tensorio.Module)
    assert p == tensorio.system_lib(symbol_prefix="pytsl_")    # one per prefix
    assert p != tensorio.system_lib()
    assert tensorio.system_lib() == tensorio.system_lib("")
    assert p["which"]() == 1                  # __tvm_ffi_pytsl_which
    assert p.pytslx_fallback() == 2           # no prefixed one: __tvm_ffi_NAME
    assert "which" not in tensorio.system_lib()
    assert tensorio.system_lib()["pytsl_which"]() == 1   # the whole name, as TVM FFI
    assert "which" not in tensorio.system_lib("other_pytsl_")
    with pytest.raises(TypeError):
        tensorio.system_lib(3)
    with pytest.raises(TypeError):
        tensorio.system_lib(b"pytsl_")
    with pytest.raises(TypeError):
        tensorio.system_lib("a", "b")
    with pytest.raises(TypeError):
        tensorio.system_lib(prefix="pytsl_")
    with pytest.raises(ValueError):
        tensorio.system_lib("a\0b")


def test_reflection():
    b = tensorio.Buffer(4096)
    assert b.type_key == "tio.Buffer"
    assert b.size == 4096 == b.nbytes
    assert b.handle > 0
    assert set(b._fields()) >= {"handle", "kind", "size"}
    with pytest.raises(AttributeError):
        b.no_such_field
    with pytest.raises(AttributeError):
        b.size = 5    # read-only field
    with pytest.raises(AttributeError):
        b.python_attr = 1    # no __dict__: only reflected fields


def test_objects_compare_by_identity():
    f = tensorio.get_global_func("tensorio.noop")
    g = tensorio.get_global_func("tensorio.noop")
    assert f == g and hash(f) == hash(g)
    assert f != tensorio.get_global_func("tio.backend")


def test_constructors_refused():
    with pytest.raises(TypeError):
        tensorio.Function()
    with pytest.raises(TypeError):
        tensorio.Object()
