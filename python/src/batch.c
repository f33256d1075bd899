// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Batch: queue FFI calls, run them together (driver commands in
 * one io_uring submission on the kernel backend), read each result from
 * its tensorio.BatchResult afterwards; an entry's error is raised when its
 * result is read.
 */
#include "ext.h"

#include <errno.h>

typedef struct {
	PyObject_HEAD
	tio_batch_t *b;
	int submitted;
} pt_batch;

typedef struct {
	PyObject_HEAD
	pt_batch *batch;	/* a reference: the batch holds the value */
	int64_t index;
} pt_result;

static PyObject *pt_batch_new_t(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { NULL };
	pt_batch *self;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "", kwlist))
		return NULL;
	self = (pt_batch *)tp->tp_alloc(tp, 0);
	if (!self)
		return NULL;
	if (tio_batch_new(0, &self->b)) {
		Py_DECREF(self);
		return pt_raise();
	}
	return (PyObject *)self;
}

static void pt_batch_dealloc(PyObject *self)
{
	pt_batch *b = (pt_batch *)self;

	if (b->b) {
		/* Parked waits end at their timeout: don't hold the GIL meanwhile. */
		Py_BEGIN_ALLOW_THREADS
		tio_batch_free(b->b);
		Py_END_ALLOW_THREADS
	}
	Py_TYPE(self)->tp_free(self);
}

/* The Function to call: a Function, a global function's name, a callable. */
static int pt_batch_func(PyObject *f, tio_object_t **out)
{
	const char *name;

	if (PyUnicode_Check(f)) {
		name = PyUnicode_AsUTF8(f);
		if (!name)
			return -1;
		if (tio_func_get_global(name, out)) {
			pt_raise();
			return -1;
		}
		if (!*out) {
			PyErr_Format(PyExc_KeyError, "no global function named '%s'", name);
			return -1;
		}
		return 0;
	}
	return pt_function_from_callable(f, out);
}

static PyObject *pt_batch_call(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	pt_batch *b = (pt_batch *)self;
	struct pt_args a;
	tio_object_t *f;
	pt_result *r;
	int64_t i;

	if (n < 1) {
		PyErr_SetString(PyExc_TypeError, "call(func, *args) needs the function");
		return NULL;
	}
	if (b->submitted) {
		PyErr_SetString(PyExc_RuntimeError, "the batch has already run");
		return NULL;
	}
	if (pt_batch_func(args[0], &f))
		return NULL;
	if (pt_args_init(&a, args + 1, n - 1)) {
		pt_args_release(&a);
		tio_object_decref(f);
		return NULL;
	}
	i = tio_batch_add(b->b, f, a.v, (int32_t)(n - 1));
	pt_args_release(&a);
	tio_object_decref(f);
	if (i < 0)
		return pt_raise();
	r = PyObject_New(pt_result, &pt_result_type);
	if (!r)
		return NULL;
	r->batch = (pt_batch *)Py_NewRef(self);
	r->index = i;
	return (PyObject *)r;
}

static int pt_batch_run(pt_batch *b)
{
	int rc;

	if (b->submitted)
		return 0;
	b->submitted = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = tio_batch_submit(b->b);
	if (!rc)
		rc = pt_batch_wait_all(b->b, -1);
	Py_END_ALLOW_THREADS
	if (rc) {
		pt_raise();
		return -1;
	}
	return 0;
}

static PyObject *pt_batch_submit_m(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (pt_batch_run((pt_batch *)self))
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *pt_batch_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	return Py_NewRef(self);
}

/* Leaving the block runs the batch, unless the block raised. */
static PyObject *pt_batch_exit(PyObject *self, PyObject *args)
{
	PyObject *type = Py_None;

	if (PyTuple_GET_SIZE(args) > 0)
		type = PyTuple_GET_ITEM(args, 0);
	if (type == Py_None && pt_batch_run((pt_batch *)self))
		return NULL;
	Py_RETURN_FALSE;
}

static Py_ssize_t pt_batch_len(PyObject *self)
{
	return (Py_ssize_t)tio_batch_count(((pt_batch *)self)->b);
}

static PyObject *pt_batch_enters_g(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromLongLong(tio_batch_enters(((pt_batch *)self)->b));
}

static PyMethodDef pt_batch_methods[] = {
	{ "call", (PyCFunction)(void (*)(void))pt_batch_call, METH_FASTCALL,
	  "call(func, *args): queue a call (func: a Function, a global name or a "
	  "callable); its BatchResult" },
	{ "submit", pt_batch_submit_m, METH_NOARGS,
	  "run every queued call and wait for all (what leaving the with block does)" },
	{ "__enter__", pt_batch_enter, METH_NOARGS, NULL },
	{ "__exit__", pt_batch_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pt_batch_getset[] = {
	{ "kernel_entries", pt_batch_enters_g, NULL,
	  "io_uring_enter calls and ioctls made so far", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PySequenceMethods pt_batch_as_sequence = {
	.sq_length = pt_batch_len,
};

PyTypeObject pt_batch_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Batch",
	.tp_doc = "Batch(): with tensorio.Batch() as b: r = b.call(f, *args); r.value after.",
	.tp_basicsize = sizeof(pt_batch),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_new = pt_batch_new_t,
	.tp_dealloc = pt_batch_dealloc,
	.tp_methods = pt_batch_methods,
	.tp_getset = pt_batch_getset,
	.tp_as_sequence = &pt_batch_as_sequence,
};

/* Results */

static void pt_result_dealloc(PyObject *self)
{
	Py_DECREF(((pt_result *)self)->batch);
	PyObject_Free(self);
}

static PyObject *pt_result_value(PyObject *self, void *unused)
{
	pt_result *r = (pt_result *)self;
	tio_any_t v;

	(void)unused;
	if (!r->batch->submitted) {
		PyErr_SetString(PyExc_RuntimeError, "the batch has not run yet "
				"(results are there after the with block or submit())");
		return NULL;
	}
	if (tio_batch_result(r->batch->b, r->index, &v))
		return pt_raise();
	return pt_from_any(&v);
}

static PyObject *pt_result_status(PyObject *self, void *unused)
{
	pt_result *r = (pt_result *)self;

	(void)unused;
	return PyLong_FromLong(r->batch->submitted ?
			       tio_batch_status(r->batch->b, r->index) : 1);
}

static PyObject *pt_result_index(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromLongLong(((pt_result *)self)->index);
}

static PyGetSetDef pt_result_getset[] = {
	{ "value", pt_result_value, NULL,
	  "the call's result; raises the call's error if it failed", NULL },
	{ "status", pt_result_status, NULL,
	  "0 done, 1 pending, or a negative errno", NULL },
	{ "index", pt_result_index, NULL, "the entry's position in the batch", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyObject *pt_result_call(PyObject *self, PyObject *unused)
{
	(void)unused;
	return pt_result_value(self, NULL);
}

static PyMethodDef pt_result_methods[] = {
	{ "result", pt_result_call, METH_NOARGS, "the value (as .value)" },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pt_result_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.BatchResult",
	.tp_doc = "The slot of one batched call.",
	.tp_basicsize = sizeof(pt_result),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = pt_result_dealloc,
	.tp_methods = pt_result_methods,
	.tp_getset = pt_result_getset,
};

int pt_batch_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_batch_type) || PyType_Ready(&pt_result_type))
		return -1;
	if (PyModule_AddObjectRef(m, "Batch", (PyObject *)&pt_batch_type) ||
	    PyModule_AddObjectRef(m, "BatchResult", (PyObject *)&pt_result_type))
		return -1;
	return 0;
}
