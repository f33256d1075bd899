// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Tensor: its attributes, the buffer protocol, DLPack export and
 * empty().
 *
 * Export: __dlpack__() hands out a legacy "dltensor" capsule (what numpy
 * 1.24 and torch 1.13 consume) or, when the consumer asks for
 * max_version >= (1, 0), a "dltensor_versioned" one. The capsule's managed
 * tensor holds a reference to the Tensor (and so to its buffer) until the
 * consumer's deleter runs; an unconsumed capsule frees it itself.
 * Import (from_dlpack(), Tensor arguments) is in dlpack.c.
 */
#include "ext.h"

#include <stdlib.h>
#include <string.h>

/* dtypes */

int pt_dtype_parse(PyObject *o, DLDataType *out)
{
	PyObject *s = NULL;
	const char *text;
	int rc;

	if (o == (PyObject *)&PyFloat_Type)
		text = "float64";
	else if (o == (PyObject *)&PyLong_Type)
		text = "int64";
	else if (o == (PyObject *)&PyBool_Type)
		text = "bool";
	else if (PyUnicode_Check(o))
		text = PyUnicode_AsUTF8(o);
	else if (PyObject_HasAttrString(o, "itemsize") ||
		 PyObject_HasAttrString(o, "is_floating_point")) {
		/* numpy.dtype and torch.dtype: their names */
		s = PyObject_Str(o);
		text = s ? PyUnicode_AsUTF8(s) : NULL;
		if (text && !strncmp(text, "torch.", 6))
			text += 6;
	} else {
		PyErr_Format(PyExc_TypeError, "a dtype is a str such as \"float32\", "
			     "not %.100s", Py_TYPE(o)->tp_name);
		return -1;
	}
	if (!text) {
		Py_XDECREF(s);
		return -1;
	}
	rc = tio_dtype_parse(text, out);
	Py_XDECREF(s);
	if (rc) {
		pt_raise();
		return -1;
	}
	return 0;
}

PyObject *pt_dtype_str(DLDataType dt)
{
	char text[TIO_DTYPE_STR_MAX];

	if (tio_dtype_print(dt, text, sizeof(text)) < 0)
		return pt_raise();
	return PyUnicode_FromString(text);
}

/**
 * pt_shape_parse() - a shape: an int or a sequence of ints, none negative
 * @o: the object
 * @shape: the dimensions
 * @ndim: their number
 * @max: room in @shape
 *
 * Return: 0, or -1 with a Python error set.
 */
int pt_shape_parse(PyObject *o, int64_t *shape, int *ndim, int max)
{
	PyObject *fast;
	Py_ssize_t n, i;

	if (PyLong_Check(o)) {
		fast = PyTuple_Pack(1, o);
	} else if (PyUnicode_Check(o) || PyBytes_Check(o)) {
		fast = NULL;
		PyErr_SetString(PyExc_TypeError, "a shape is an int or a sequence of ints");
	} else {
		fast = PySequence_Fast(o, "a shape is an int or a sequence of ints");
	}
	if (!fast)
		return -1;
	n = PySequence_Fast_GET_SIZE(fast);
	if (n > max) {
		PyErr_Format(PyExc_ValueError, "%zd dimensions: at most %d", n, max);
		goto fail;
	}
	for (i = 0; i < n; i++) {
		PyObject *d = PySequence_Fast_GET_ITEM(fast, i);
		long long v;

		if (!PyLong_Check(d) || PyBool_Check(d)) {
			PyErr_Format(PyExc_TypeError, "dimension %zd is a %.100s, not an int",
				     i, Py_TYPE(d)->tp_name);
			goto fail;
		}
		v = PyLong_AsLongLong(d);
		if (v == -1 && PyErr_Occurred())
			goto fail;
		if (v < 0) {
			PyErr_Format(PyExc_ValueError, "dimension %zd is negative (%lld)", i, v);
			goto fail;
		}
		shape[i] = v;
	}
	*ndim = (int)n;
	Py_DECREF(fast);
	return 0;
fail:
	Py_DECREF(fast);
	return -1;
}

/* The Tensor type */

/**
 * pt_tensor_new() - wrap a Tensor object
 * @t: the Tensor; its reference is handed over
 */
PyObject *pt_tensor_new(tio_object_t *t)
{
	return pt_wrap(t);
}

static PyObject *pt_tensor_shape(PyObject *self, void *unused)
{
	DLTensor *dl = pt_dl(self);

	(void)unused;
	return pt_int_tuple(dl->shape, dl->ndim);
}

/* Strides in elements (compact row-major ones when the tensor has none). */
static PyObject *pt_tensor_strides(PyObject *self, void *unused)
{
	DLTensor *dl = pt_dl(self);
	int64_t st[PT_MAX_NDIM], acc = 1;
	int i;

	(void)unused;
	if (dl->strides)
		return pt_int_tuple(dl->strides, dl->ndim);
	for (i = dl->ndim - 1; i >= 0 && i < PT_MAX_NDIM; i--) {
		st[i] = acc;
		acc *= dl->shape[i];
	}
	return pt_int_tuple(st, dl->ndim);
}

static PyObject *pt_tensor_dtype(PyObject *self, void *unused)
{
	(void)unused;
	return pt_dtype_str(pt_dl(self)->dtype);
}

static PyObject *pt_tensor_ndim(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromLong(pt_dl(self)->ndim);
}

static PyObject *pt_tensor_device(PyObject *self, void *unused)
{
	tio_any_t d = tio_any_device(pt_dl(self)->device);

	(void)unused;
	return pt_from_view(&d);
}

static PyObject *pt_tensor_nbytes(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromSize_t(tio_tensor_nbytes(pt_dl(self)));
}

static PyObject *pt_tensor_data_ptr(PyObject *self, void *unused)
{
	DLTensor *dl = pt_dl(self);

	(void)unused;
	return PyLong_FromVoidPtr((char *)dl->data + dl->byte_offset);
}

static PyObject *pt_tensor_readonly(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(tio_tensor_is_readonly(PT_OBJ(self)));
}

static PyObject *pt_tensor_contiguous(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(tio_tensor_is_contiguous(pt_dl(self)));
}

static Py_ssize_t pt_tensor_len(PyObject *self)
{
	DLTensor *dl = pt_dl(self);

	if (!dl->ndim) {
		PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
		return -1;
	}
	return (Py_ssize_t)dl->shape[0];
}

static PyObject *pt_tensor_repr(PyObject *self)
{
	PyObject *shape = pt_tensor_shape(self, NULL), *dtype, *dev, *r = NULL;

	dtype = shape ? pt_tensor_dtype(self, NULL) : NULL;
	dev = dtype ? pt_tensor_device(self, NULL) : NULL;
	if (dev)
		r = PyUnicode_FromFormat("tensorio.Tensor(shape=%R, dtype=%U, device=%U)",
					 shape, dtype, dev);
	Py_XDECREF(shape);
	Py_XDECREF(dtype);
	Py_XDECREF(dev);
	return r;
}

/* DLPack export */

static void pt_capsule_legacy_free(PyObject *cap)
{
	DLManagedTensor *mt;

	if (!PyCapsule_IsValid(cap, PT_CAP_LEGACY))
		return;		/* consumed: the consumer owns it */
	mt = PyCapsule_GetPointer(cap, PT_CAP_LEGACY);
	if (mt && mt->deleter)
		mt->deleter(mt);
}

static void pt_capsule_versioned_free(PyObject *cap)
{
	DLManagedTensorVersioned *mt;

	if (!PyCapsule_IsValid(cap, PT_CAP_VERSIONED))
		return;
	mt = PyCapsule_GetPointer(cap, PT_CAP_VERSIONED);
	if (mt && mt->deleter)
		mt->deleter(mt);
}

/* max_version: None, or a (major, minor) tuple; the major wanted. */
static int pt_max_major(PyObject *mv, long *major)
{
	*major = 0;
	if (!mv || mv == Py_None)
		return 0;
	if (!PyTuple_Check(mv) || PyTuple_GET_SIZE(mv) != 2) {
		PyErr_SetString(PyExc_TypeError, "max_version is a (major, minor) tuple");
		return -1;
	}
	*major = PyLong_AsLong(PyTuple_GET_ITEM(mv, 0));
	return *major == -1 && PyErr_Occurred() ? -1 : 0;
}

/*
 * torch 1.13's from_dlpack ignores byte_offset: a CPU tensor's exported
 * data points at element 0 itself (the managed tensor is a copy).
 */
static void pt_fold_offset(DLTensor *dl)
{
	if (dl->device.device_type == kDLCPU && dl->byte_offset) {
		dl->data = (char *)dl->data + dl->byte_offset;
		dl->byte_offset = 0;
	}
}

static PyObject *pt_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "stream", "max_version", "dl_device", "copy", NULL };
	PyObject *stream = Py_None, *mv = Py_None, *dl_device = Py_None, *copy = Py_None;
	DLManagedTensorVersioned *vmt;
	DLManagedTensor *mt;
	PyObject *cap;
	long major;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO", kwlist, &stream, &mv,
					 &dl_device, &copy) ||
	    pt_max_major(mv, &major))
		return NULL;
	if (copy == Py_True) {
		PyErr_SetString(PyExc_BufferError, "tensorio tensors are shared, never copied "
				"(copy=True is not supported)");
		return NULL;
	}
	if (pt_dl(self)->device.device_type == kDLCPU && stream != Py_None &&
	    !(PyLong_Check(stream) && PyLong_AsLong(stream) == -1)) {
		PyErr_SetString(PyExc_ValueError, "a CPU tensor takes no stream (stream=None)");
		return NULL;
	}
	if (major >= 1) {
		if (tio_tensor_to_dlpack_versioned(PT_OBJ(self), &vmt))
			return pt_raise();
		pt_fold_offset(&vmt->dl_tensor);
		cap = PyCapsule_New(vmt, PT_CAP_VERSIONED, pt_capsule_versioned_free);
		if (!cap)
			vmt->deleter(vmt);
		return cap;
	}
	if (tio_tensor_is_readonly(PT_OBJ(self))) {
		PyErr_SetString(PyExc_BufferError, "a read-only tensor cannot be exported "
				"as a legacy DLPack capsule (ask for max_version=(1, 0))");
		return NULL;
	}
	if (tio_tensor_to_dlpack(PT_OBJ(self), &mt))
		return pt_raise();
	pt_fold_offset(&mt->dl_tensor);
	cap = PyCapsule_New(mt, PT_CAP_LEGACY, pt_capsule_legacy_free);
	if (!cap)
		mt->deleter(mt);
	return cap;
}

static PyObject *pt_tensor_dlpack_device(PyObject *self, PyObject *unused)
{
	DLDevice d = pt_dl(self)->device;

	(void)unused;
	return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

static PyObject *pt_tensor_numpy(PyObject *self, PyObject *unused)
{
	PyObject *np = PyImport_ImportModule("numpy"), *r;

	(void)unused;
	if (!np)
		return NULL;
	/* The buffer protocol: numpy 1.24's from_dlpack gives read-only arrays. */
	r = PyObject_CallMethod(np, "asarray", "O", self);
	Py_DECREF(np);
	return r;
}

/* The buffer protocol for CPU tensors: memoryview(t), numpy.asarray(t). */
static const char *pt_format(DLDataType dt)
{
	if (dt.lanes != 1)
		return NULL;
	switch (dt.code) {
	case kDLInt:
		return dt.bits == 8 ? "b" : dt.bits == 16 ? "h" : dt.bits == 32 ? "i" :
		       dt.bits == 64 ? "q" : NULL;
	case kDLUInt:
		return dt.bits == 8 ? "B" : dt.bits == 16 ? "H" : dt.bits == 32 ? "I" :
		       dt.bits == 64 ? "Q" : NULL;
	case kDLFloat:
		return dt.bits == 16 ? "e" : dt.bits == 32 ? "f" : dt.bits == 64 ? "d" : NULL;
	case TIO_DL_BOOL:
		return dt.bits == 8 ? "?" : NULL;
	case kDLComplex:
		return dt.bits == 64 ? "Zf" : dt.bits == 128 ? "Zd" : NULL;
	}
	return NULL;
}

/* Shape and strides (in bytes) for a Py_buffer, kept until it is released. */
struct pt_bufinfo {
	Py_ssize_t shape[PT_MAX_NDIM];
	Py_ssize_t strides[PT_MAX_NDIM];
};

static int pt_tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	DLTensor *dl = pt_dl(self);
	Py_ssize_t item = (Py_ssize_t)(dl->dtype.bits / 8), acc;
	const char *fmt = pt_format(dl->dtype);
	struct pt_bufinfo *bi;
	int i;

	if (dl->device.device_type != kDLCPU && dl->device.device_type != kDLCUDAHost) {
		PyErr_SetString(PyExc_BufferError, "only CPU tensors export a buffer");
		return -1;
	}
	if (!fmt) {
		PyErr_SetString(PyExc_BufferError, "no buffer format for this dtype");
		return -1;
	}
	if ((flags & PyBUF_WRITABLE) && tio_tensor_is_readonly(PT_OBJ(self))) {
		PyErr_SetString(PyExc_BufferError, "the tensor is read-only");
		return -1;
	}
	if (dl->ndim > PT_MAX_NDIM) {
		PyErr_SetString(PyExc_BufferError, "too many dimensions");
		return -1;
	}
	bi = PyMem_Malloc(sizeof(*bi));
	if (!bi) {
		PyErr_NoMemory();
		return -1;
	}
	acc = item;
	for (i = dl->ndim - 1; i >= 0; i--) {
		bi->shape[i] = (Py_ssize_t)dl->shape[i];
		bi->strides[i] = dl->strides ? (Py_ssize_t)dl->strides[i] * item : acc;
		acc *= bi->shape[i];
	}
	/* A consumer that takes no strides (or wants C order) gets compact only. */
	if ((flags & 0x40) && dl->ndim > 1) {	/* PyBUF_F_CONTIGUOUS's own bit */
		PyMem_Free(bi);
		PyErr_SetString(PyExc_BufferError, "tensors are row-major, not Fortran order");
		return -1;
	}
	if ((flags & 0xe0) || (flags & PyBUF_STRIDES) != PyBUF_STRIDES) {
		if (!tio_tensor_is_contiguous(dl)) {
			PyMem_Free(bi);
			PyErr_SetString(PyExc_BufferError, "the tensor is not contiguous");
			return -1;
		}
	}
	view->buf = (char *)dl->data + dl->byte_offset;
	view->obj = Py_NewRef(self);
	view->len = (Py_ssize_t)tio_tensor_numel(dl) * item;
	view->readonly = tio_tensor_is_readonly(PT_OBJ(self));
	view->itemsize = item;
	view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
	view->ndim = dl->ndim;
	view->shape = (flags & PyBUF_ND) ? bi->shape : NULL;
	view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? bi->strides : NULL;
	view->suboffsets = NULL;
	view->internal = bi;
	return 0;
}

static void pt_tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
	(void)self;
	PyMem_Free(view->internal);
}

static PyBufferProcs pt_tensor_as_buffer = {
	.bf_getbuffer = pt_tensor_getbuffer,
	.bf_releasebuffer = pt_tensor_releasebuffer,
};

static PySequenceMethods pt_tensor_as_sequence = {
	.sq_length = pt_tensor_len,
};

static PyMethodDef pt_tensor_methods[] = {
	{ "__dlpack__", (PyCFunction)(void (*)(void))pt_tensor_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "__dlpack__(stream=None, max_version=None): a DLPack capsule sharing the memory" },
	{ "__dlpack_device__", pt_tensor_dlpack_device, METH_NOARGS,
	  "(device type, device id) as DLPack codes them" },
	{ "numpy", pt_tensor_numpy, METH_NOARGS,
	  "a writable numpy array sharing the memory" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pt_tensor_getset[] = {
	{ "shape", pt_tensor_shape, NULL, "the dimensions", NULL },
	{ "strides", pt_tensor_strides, NULL, "the strides, in elements", NULL },
	{ "dtype", pt_tensor_dtype, NULL, "the element type, e.g. \"float32\"", NULL },
	{ "ndim", pt_tensor_ndim, NULL, "the number of dimensions", NULL },
	{ "device", pt_tensor_device, NULL, "the device, e.g. \"cpu:0\"", NULL },
	{ "nbytes", pt_tensor_nbytes, NULL, "elements times element size", NULL },
	{ "data_ptr", pt_tensor_data_ptr, NULL, "the address of element 0", NULL },
	{ "readonly", pt_tensor_readonly, NULL, "whether the producer marked it read-only", NULL },
	{ "is_contiguous", pt_tensor_contiguous, NULL, "whether it is compact row-major", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pt_tensor_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Tensor",
	.tp_doc = "A tensor (DLPack) in tensorio or producer memory, shared zero-copy.",
	.tp_basicsize = sizeof(pt_object),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_base = &pt_object_type,
	.tp_repr = pt_tensor_repr,
	.tp_as_buffer = &pt_tensor_as_buffer,
	.tp_as_sequence = &pt_tensor_as_sequence,
	.tp_methods = pt_tensor_methods,
	.tp_getset = pt_tensor_getset,
};

static PyObject *pt_empty_fn(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "shape", "dtype", NULL };
	PyObject *shape_o, *dtype_o = NULL;
	int64_t shape[PT_MAX_NDIM];
	DLDataType dt;
	tio_object_t *t;
	int ndim, rc;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &shape_o, &dtype_o) ||
	    pt_shape_parse(shape_o, shape, &ndim, PT_MAX_NDIM))
		return NULL;
	if (dtype_o) {
		if (pt_dtype_parse(dtype_o, &dt))
			return NULL;
	} else {
		dt.code = kDLFloat;
		dt.bits = 32;
		dt.lanes = 1;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = pt_empty(ndim, shape, dt, &t);
	Py_END_ALLOW_THREADS
	if (rc)
		return pt_raise();
	return pt_wrap(t);
}

PyMethodDef pt_tensor_functions[] = {
	{ "empty", (PyCFunction)(void (*)(void))pt_empty_fn, METH_VARARGS | METH_KEYWORDS,
	  "empty(shape, dtype=\"float32\"): a zeroed Tensor in a pinned tensorio buffer" },
	{ NULL, NULL, 0, NULL },
};

int pt_tensor_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_tensor_type))
		return -1;
	return PyModule_AddObjectRef(m, "Tensor", (PyObject *)&pt_tensor_type);
}
