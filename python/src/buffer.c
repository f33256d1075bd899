// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Buffer: pinned memory, dma-buf export and import. It wraps the
 * library's FFI object, so its reflected fields (handle, size, ...) are
 * attributes too.
 */
#include "ext.h"

#define PT_BUF(o) ((tio_buffer_t *)PT_OBJ(o))

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

PyMethodDef pt_buffer_functions[] = {
	{ "import_dmabuf", pt_import_dmabuf, METH_O,
	  "import_dmabuf(fd): a Buffer over a dma-buf (the fd stays the caller's)" },
	{ NULL, NULL, 0, NULL },
};

int pt_buffer_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_buffer_type))
		return -1;
	return PyModule_AddObjectRef(m, "Buffer", (PyObject *)&pt_buffer_type);
}
