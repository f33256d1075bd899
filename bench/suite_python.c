// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "python": what the tensorio Python package costs, in ns on the
 * host. The interpreter (libpython3.11, loaded with dlopen: tio-bench does
 * not link it) is embedded; bench/python/tio_bench_python.py builds each
 * case as a callable and its arguments, and the loop here calls it with
 * PyObject_Vectorcall, which is what the interpreter's CALL does, without
 * a Python loop's own cost. Floors and peers sit beside each row: a plain
 * CPython C function, the same FFI call through ctypes, torch.load and
 * numpy.fromfile. Needs `make python` (the extension) first.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifndef TIO_BENCH_PYTHONPATH
#define TIO_BENCH_PYTHONPATH ""
#endif

typedef struct py_object py_object;

/* The part of the CPython API used here, resolved from libpython. */
static struct {
	void (*initialize)(int);
	py_object *(*import)(const char *);
	py_object *(*call_method)(py_object *, const char *, const char *, ...);
	py_object *(*vectorcall)(py_object *, py_object *const *, size_t, py_object *);
	void (*decref)(py_object *);
	long (*tuple_size)(py_object *);
	py_object *(*tuple_item)(py_object *, long);
	long long (*as_long_long)(py_object *);
	py_object *(*err_occurred)(void);
	void (*err_print)(void);
	py_object *helper;
	int state;		/* 0 not tried, 1 ready, -1 unusable */
	char why[160];
} py;

/*
 * Python is never finalised here, so the helper's atexit handler (which
 * removes the weights it wrote to a temporary directory) would not run:
 * call it when this process exits.
 */
static void py_cleanup(void)
{
	py_object *r = py.call_method(py.helper, "_cleanup", NULL);

	if (r)
		py.decref(r);
	else
		py.err_print();
}

static int py_load(void)
{
	const char *lib = getenv("TIO_BENCH_LIBPYTHON");
	void *h;

	if (py.state)
		return py.state;
	py.state = -1;
	h = dlopen(lib ? lib : "libpython3.11.so.1.0", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		snprintf(py.why, sizeof(py.why), "no libpython3.11 (python3-dev): %s", dlerror());
		return -1;
	}
#define SYM(f, n) (*(void **)&py.f = dlsym(h, n))
	if (!SYM(initialize, "Py_InitializeEx") || !SYM(import, "PyImport_ImportModule") ||
	    !SYM(call_method, "PyObject_CallMethod") ||
	    !SYM(vectorcall, "PyObject_Vectorcall") || !SYM(decref, "Py_DecRef") ||
	    !SYM(tuple_size, "PyTuple_Size") || !SYM(tuple_item, "PyTuple_GetItem") ||
	    !SYM(as_long_long, "PyLong_AsLongLong") ||
	    !SYM(err_occurred, "PyErr_Occurred") || !SYM(err_print, "PyErr_Print")) {
		snprintf(py.why, sizeof(py.why), "libpython lacks a symbol");
		return -1;
	}
#undef SYM
	if (!getenv("PYTHONPATH") && *TIO_BENCH_PYTHONPATH)
		setenv("PYTHONPATH", TIO_BENCH_PYTHONPATH, 1);
	py.initialize(0);
	py.helper = py.import("tio_bench_python");
	if (!py.helper) {
		py.err_print();
		snprintf(py.why, sizeof(py.why),
			 "cannot import the helper or tensorio (make python)");
		return -1;
	}
	py.state = 1;
	atexit(py_cleanup);
	return 1;
}

/* A case: call @fn with @args (a tuple's items) n times. */
struct py_case {
	py_object *spec;	/* (callable, args tuple, bytes) from the helper */
	py_object *fn;
	py_object *args[8];
	long nargs;
};

static int py_setup(struct bench_run *run)
{
	struct py_case *c;
	py_object *args;
	long i;

	if (py_load() < 0)
		return bench_skip(run, "%s", py.why);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->spec = py.call_method(py.helper, "case", "si", run->c->name, run->fast);
	if (!c->spec) {
		py.err_print();
		free(c);
		return bench_skip(run, "case %s could not be set up (see above)", run->c->name);
	}
	if (py.tuple_size(c->spec) == 1) {	/* (reason,): skipped */
		free(c);
		return bench_skip(run, "%s", "a module it needs is missing");
	}
	c->fn = py.tuple_item(c->spec, 0);
	args = py.tuple_item(c->spec, 1);
	c->nargs = py.tuple_size(args);
	for (i = 0; i < c->nargs && i < 8; i++)
		c->args[i] = py.tuple_item(args, i);
	run->bytes = (uint64_t)py.as_long_long(py.tuple_item(c->spec, 2));
	run->state = c;
	return 0;
}

static int py_run(struct bench_run *run, uint64_t n)
{
	struct py_case *c = run->state;
	py_object *r;
	uint64_t i;

	for (i = 0; i < n; i++) {
		r = py.vectorcall(c->fn, c->args, (size_t)c->nargs, NULL);
		if (!r) {
			py.err_print();
			return bench_fail(run, EPROTO, "the Python call raised");
		}
		py.decref(r);
	}
	return 0;
}

static void py_teardown(struct bench_run *run)
{
	struct py_case *c = run->state;

	if (!c)
		return;
	py.decref(c->spec);
	free(c);
	run->state = NULL;
}

#define PY(n, r, what) {						\
	.suite = "python", .name = n, .ref = r,				\
	.note = what, .setup = py_setup, .run = py_run,			\
	.teardown = py_teardown }

static struct bench_case cases[] = {
	PY("call/cfunc-0", NULL, "floor: a CPython C function (METH_FASTCALL), no args"),
	PY("call/noop-0", "call/cfunc-0", "tensorio.Function no-op, 0 args"),
	PY("call/ctypes-0", "call/cfunc-0", "peer: the same FFI call through ctypes"),
	PY("call/cfunc-1", "call/cfunc-0", "floor: the C function with 1 int"),
	PY("call/noop-1", "call/cfunc-0", "tensorio.Function no-op, 1 int"),
	PY("call/ctypes-1", "call/cfunc-0", "peer: ctypes, 1 int packed into an Any"),
	PY("call/torch-tensor", "call/cfunc-0",
	   "no-op with a torch tensor (DLPack conversion included; the torch accelerator where built)"),
	PY("call/torch-tensor-dlpack", "call/cfunc-0",
	   "the same through torch's DLPack export (the accelerator off: the path without libtorch-dev)"),
	PY("call/torch-export", "call/cfunc-0",
	   "floor: torch._C._to_dlpack alone, the producer's share of the row above"),
	PY("call/torch-requires-grad", "call/cfunc-0",
	   "floor: reading requires_grad (the autograd check before _to_dlpack)"),
	PY("call/numpy-array", "call/cfunc-0", "no-op with a numpy array (DLPack)"),
	PY("call/tensorio-tensor", "call/cfunc-0", "no-op with a tensorio.Tensor"),
	PY("dlpack/torch-from-tensor", NULL, "torch.from_dlpack(a tensorio.Tensor)"),
	PY("dlpack/torch-from-empty", NULL,
	   "torch.from_dlpack(tensorio.empty((256,))): pinned buffer + export"),
	PY("dlpack/from-torch", NULL,
	   "tensorio.from_dlpack(a torch tensor) (the torch accelerator where built)"),
	PY("dlpack/from-torch-dlpack", "dlpack/from-torch",
	   "the same through torch's DLPack export (the accelerator off)"),
	PY("dlpack/torch-from-numpy", NULL, "peer: torch.from_dlpack(a numpy array)"),
	PY("load/safetensors", NULL, "tensorio.load_safetensors (16 tensors)"),
	PY("load/torch-load", "load/safetensors", "peer: torch.load of the same weights"),
	PY("load/numpy-fromfile", "load/safetensors",
	   "peer: numpy.fromfile of the raw bytes (one array)"),
	PY("save/safetensors", "save/c-ctypes",
	   "tensorio.save_safetensors (16 tensors), durable: O_DIRECT, fdatasync, link, dir fsync"),
	PY("save/c-ctypes", "save/c-ctypes",
	   "floor: tio_safetensors_save_opts through ctypes on the same arrays"),
	PY("save/torch-save", "save/c-ctypes", "peer: torch.save of the same weights + fsync"),
	PY("save/numpy-tofile", "save/c-ctypes",
	   "peer: numpy tofile of the raw bytes (one array) + fsync"),
};

static void __attribute__((constructor)) py_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
