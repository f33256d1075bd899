// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Stream: a fence timeline. It wraps the library's FFI object, so
 * its reflected fields (handle, ...) are attributes too.
 */
#include "ext.h"

#include <math.h>

#define PT_STREAM(o) ((tio_stream_t *)PT_OBJ(o))

static PyObject *pt_stream_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "doorbell", NULL };
	tio_stream_t *s;
	pt_object *self;
	int doorbell = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p", kwlist, &doorbell))
		return NULL;
	if (tio_stream_create_flags(doorbell ? TIO_STREAM_DOORBELL : 0, &s))
		return pt_raise();
	self = (pt_object *)tp->tp_alloc(tp, 0);
	if (!self) {
		tio_stream_decref(s);
		return NULL;
	}
	self->obj = (tio_object_t *)s;
	return (PyObject *)self;
}

static PyObject *pt_stream_emit_m(PyObject *self, PyObject *unused)
{
	uint64_t seqno;

	(void)unused;
	if (tio_fence_emit(PT_STREAM(self), &seqno))
		return pt_raise();
	return PyLong_FromUnsignedLongLong(seqno);
}

static PyObject *pt_stream_signal_m(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "seqno", "error", NULL };
	unsigned long long seqno;
	int error = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "K|i", kwlist, &seqno, &error))
		return NULL;
	if (tio_fence_signal(PT_STREAM(self), seqno, error))
		return pt_raise();
	Py_RETURN_NONE;
}

/* A timeout in seconds (None: forever) as nanoseconds (-1: forever). */
static int pt_timeout_ns(PyObject *o, int64_t *ns)
{
	double s;

	if (!o || o == Py_None) {
		*ns = -1;
		return 0;
	}
	s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (!(s >= 0) || s > 9e9) {
		PyErr_SetString(PyExc_ValueError, "timeout is seconds >= 0, or None");
		return -1;
	}
	*ns = (int64_t)llround(s * 1e9);
	return 0;
}

static PyObject *pt_stream_wait_m(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "seqno", "timeout", NULL };
	unsigned long long seqno;
	PyObject *timeout = Py_None;
	int64_t ns;
	int status, rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "K|O", kwlist, &seqno, &timeout) ||
	    pt_timeout_ns(timeout, &ns))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = tio_fence_wait(PT_STREAM(self), seqno, ns, &status);
	Py_END_ALLOW_THREADS
	if (rc)
		return pt_raise();
	return PyLong_FromLong(status);
}

static PyObject *pt_stream_signalled_g(PyObject *self, void *unused)
{
	uint64_t seqno;

	(void)unused;
	if (pt_stream_signalled(PT_STREAM(self), &seqno))
		return pt_raise();
	return PyLong_FromUnsignedLongLong(seqno);
}

/* As a device would: the points up to @seqno completed. */
static PyObject *pt_stream_ring_m(PyObject *self, PyObject *arg)
{
	unsigned long long seqno = PyLong_AsUnsignedLongLong(arg);
	volatile uint64_t *w;

	if (seqno == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	w = tio_stream_doorbell(PT_STREAM(self));
	if (!w)
		return pt_raise();
	__atomic_store_n(w, (uint64_t)seqno, __ATOMIC_RELEASE);
	Py_RETURN_NONE;
}

static PyObject *pt_stream_export_m(PyObject *self, PyObject *arg)
{
	unsigned long long seqno = PyLong_AsUnsignedLongLong(arg);
	int fd;

	if (seqno == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	if (tio_fence_export(PT_STREAM(self), seqno, TIO_EXPORT_F_CLOEXEC, &fd))
		return pt_raise();
	return PyLong_FromLong(fd);
}

static PyObject *pt_stream_import_m(PyObject *self, PyObject *arg)
{
	int fd = PyObject_AsFileDescriptor(arg);
	uint64_t seqno;

	if (fd < 0)
		return NULL;
	if (tio_fence_import(PT_STREAM(self), fd, &seqno))
		return pt_raise();
	return PyLong_FromUnsignedLongLong(seqno);
}

static PyMethodDef pt_stream_methods[] = {
	{ "emit", pt_stream_emit_m, METH_NOARGS, "emit(): add the next point; its seqno" },
	{ "signal", (PyCFunction)(void (*)(void))pt_stream_signal_m,
	  METH_VARARGS | METH_KEYWORDS,
	  "signal(seqno, error=0): signal every point up to seqno (error: 0 or -errno)" },
	{ "wait", (PyCFunction)(void (*)(void))pt_stream_wait_m,
	  METH_VARARGS | METH_KEYWORDS,
	  "wait(seqno, timeout=None): wait for a point (seconds; TimeoutError); its status" },
	{ "ring", pt_stream_ring_m, METH_O,
	  "ring(seqno): write the doorbell (Stream(doorbell=True)): the points up to seqno completed" },
	{ "export_sync_file", pt_stream_export_m, METH_O,
	  "export_sync_file(seqno): a sync_file fd for the point (the caller closes it)" },
	{ "import_sync_file", pt_stream_import_m, METH_O,
	  "import_sync_file(fd): a new point that signals with the sync_file" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pt_stream_getset[] = {
	{ "signalled", pt_stream_signalled_g, NULL, "the last signalled seqno", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pt_stream_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Stream",
	.tp_doc = "Stream(doorbell=False): a fence timeline; with a doorbell, a word that a device\n"
		  "(or ring()) writes to complete points without a system call.",
	.tp_basicsize = sizeof(pt_object),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_base = &pt_object_type,
	.tp_new = pt_stream_new,
	.tp_methods = pt_stream_methods,
	.tp_getset = pt_stream_getset,
};

int pt_stream_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_stream_type))
		return -1;
	return PyModule_AddObjectRef(m, "Stream", (PyObject *)&pt_stream_type);
}
