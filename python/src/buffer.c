// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Buffer (pinned memory, dma-buf export and import) and
 * tensorio.Stream (fence timelines). Both wrap the library's FFI objects,
 * so their reflected fields (handle, size, ...) are attributes too.
 */
#include "ext.h"

#include <math.h>

#define PT_BUF(o) ((tio_buffer_t *)PT_OBJ(o))
#define PT_STREAM(o) ((tio_stream_t *)PT_OBJ(o))

/* Buffers */

static PyObject *pt_buffer_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "nbytes", NULL };
	long long nbytes;
	tio_buffer_t *buf;
	pt_object *self;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "L", kwlist, &nbytes))
		return NULL;
	if (nbytes <= 0) {
		PyErr_Format(PyExc_ValueError, "a buffer holds at least one byte, not %lld",
			     nbytes);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = tio_buffer_alloc((size_t)nbytes, NULL, &buf);
	Py_END_ALLOW_THREADS
	if (rc)
		return pt_raise();
	self = (pt_object *)tp->tp_alloc(tp, 0);
	if (!self) {
		tio_buffer_decref(buf);
		return NULL;
	}
	self->obj = (tio_object_t *)buf;
	return (PyObject *)self;
}

static PyObject *pt_buffer_tensor_m(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "shape", "dtype", "offset", "strides", NULL };
	PyObject *shape_o, *dtype_o = NULL, *strides_o = Py_None;
	int64_t shape[TIO_MAX_NDIM], strides[TIO_MAX_NDIM];
	unsigned long long offset = 0;
	int ndim, nst;
	DLDataType dt = { kDLFloat, 32, 1 };
	tio_object_t *t;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OKO", kwlist, &shape_o, &dtype_o,
					 &offset, &strides_o) ||
	    pt_shape_parse(shape_o, shape, &ndim, TIO_MAX_NDIM) ||
	    (dtype_o && pt_dtype_parse(dtype_o, &dt)))
		return NULL;
	if (strides_o != Py_None) {
		if (pt_shape_parse(strides_o, strides, &nst, TIO_MAX_NDIM))
			return NULL;
		if (nst != ndim) {
			PyErr_Format(PyExc_ValueError, "%d strides for %d dimensions", nst, ndim);
			return NULL;
		}
	}
	if (pt_buffer_view(PT_BUF(self), ndim, shape, strides_o == Py_None ? NULL : strides,
			   dt, offset, &t))
		return pt_raise();
	return pt_wrap(t);
}

static PyObject *pt_buffer_export_m(PyObject *self, PyObject *unused)
{
	int fd;

	(void)unused;
	if (tio_buffer_export(PT_BUF(self), TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR, &fd))
		return pt_raise();
	return PyLong_FromLong(fd);
}

static PyObject *pt_buffer_nbytes(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromSize_t(tio_buffer_size(PT_BUF(self)));
}

static int pt_buffer_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	void *data = tio_buffer_data(PT_BUF(self));

	if (!data) {
		pt_raise();
		return -1;
	}
	return PyBuffer_FillInfo(view, self, data, (Py_ssize_t)tio_buffer_size(PT_BUF(self)),
				 0, flags);
}

static PyBufferProcs pt_buffer_as_buffer = {
	.bf_getbuffer = pt_buffer_getbuffer,
};

static PyMethodDef pt_buffer_methods[] = {
	{ "tensor", (PyCFunction)(void (*)(void))pt_buffer_tensor_m,
	  METH_VARARGS | METH_KEYWORDS,
	  "tensor(shape, dtype=\"float32\", offset=0, strides=None): a Tensor viewing the buffer" },
	{ "export", pt_buffer_export_m, METH_NOARGS,
	  "export(): a new dma-buf fd for the buffer (the caller closes it)" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pt_buffer_getset[] = {
	{ "nbytes", pt_buffer_nbytes, NULL, "the size in bytes (whole pages)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pt_buffer_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Buffer",
	.tp_doc = "Buffer(nbytes): zeroed pinned memory, shareable as a dma-buf.",
	.tp_basicsize = sizeof(pt_object),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_base = &pt_object_type,
	.tp_new = pt_buffer_new,
	.tp_as_buffer = &pt_buffer_as_buffer,
	.tp_methods = pt_buffer_methods,
	.tp_getset = pt_buffer_getset,
};

static PyObject *pt_import_dmabuf(PyObject *m, PyObject *arg)
{
	tio_buffer_t *buf;
	int fd = PyObject_AsFileDescriptor(arg), rc;

	(void)m;
	if (fd < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = tio_buffer_import(fd, &buf);
	Py_END_ALLOW_THREADS
	if (rc)
		return pt_raise();
	return pt_wrap((tio_object_t *)buf);
}

/* Streams */

static PyObject *pt_stream_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { NULL };
	tio_stream_t *s;
	pt_object *self;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "", kwlist))
		return NULL;
	if (tio_stream_create(&s))
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
	.tp_doc = "Stream(): a fence timeline.",
	.tp_basicsize = sizeof(pt_object),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_base = &pt_object_type,
	.tp_new = pt_stream_new,
	.tp_methods = pt_stream_methods,
	.tp_getset = pt_stream_getset,
};

/* The context */

static PyObject *pt_backend_fn(PyObject *m, PyObject *unused)
{
	const char *name = tio_backend_name();

	(void)m; (void)unused;
	return name ? PyUnicode_FromString(name) : pt_raise();
}

static PyObject *pt_info_fn(PyObject *m, PyObject *unused)
{
	struct pt_info i;
	PyObject *feat, *s;
	int bit;

	(void)m; (void)unused;
	if (pt_dev_info(&i))
		return pt_raise();
	feat = PyList_New(0);
	for (bit = 0; feat && bit < 64; bit++) {
		const char *n = pt_dev_feature_name(bit);

		if (!(i.features & (1ULL << bit)) || !n)
			continue;
		s = PyUnicode_FromString(n);
		if (!s || PyList_Append(feat, s))
			Py_CLEAR(feat);
		Py_XDECREF(s);
	}
	if (!feat)
		return NULL;
	return Py_BuildValue("{s:s,s:k,s:N,s:K,s:K,s:K,s:k}", "backend", i.backend,
			     "version", (unsigned long)i.version, "features", feat,
			     "max_buf_size", (unsigned long long)i.max_buf_size,
			     "max_pinned", (unsigned long long)i.max_pinned,
			     "pinned", (unsigned long long)i.pinned,
			     "max_submit", (unsigned long)i.max_submit);
}

static PyObject *pt_live_handles(PyObject *m, PyObject *unused)
{
	(void)m; (void)unused;
	return PyLong_FromLongLong(tio_debug_live_handles());
}

PyMethodDef pt_buffer_functions[] = {
	{ "import_dmabuf", pt_import_dmabuf, METH_O,
	  "import_dmabuf(fd): a Buffer over a dma-buf (the fd stays the caller's)" },
	{ "backend", pt_backend_fn, METH_NOARGS, "\"kernel\" or \"user\"" },
	{ "info", pt_info_fn, METH_NOARGS, "the backend, its version, features and limits" },
	{ "_live_handles", pt_live_handles, METH_NOARGS,
	  "buffers and streams alive (leak checks)" },
	{ NULL, NULL, 0, NULL },
};

int pt_buffer_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_buffer_type) || PyType_Ready(&pt_stream_type))
		return -1;
	if (PyModule_AddObjectRef(m, "Buffer", (PyObject *)&pt_buffer_type) ||
	    PyModule_AddObjectRef(m, "Stream", (PyObject *)&pt_stream_type))
		return -1;
	return 0;
}
