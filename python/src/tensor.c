// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Tensor and DLPack both ways, zero copy.
 *
 * Export: __dlpack__() hands out a legacy "dltensor" capsule (what numpy
 * 1.24 and torch 1.13 consume) or, when the consumer asks for
 * max_version >= (1, 0), a "dltensor_versioned" one. The capsule's managed
 * tensor holds a reference to the Tensor (and so to its buffer) until the
 * consumer's deleter runs; an unconsumed capsule frees it itself.
 * Import: from_dlpack() calls the producer's __dlpack__ (asking for a
 * versioned capsule where the producer takes max_version), and the Tensor
 * keeps the producer's managed tensor until it goes. An exact torch.Tensor
 * takes the torch accelerator instead where it is built (pt_accel_tensor).
 */
#include "ext.h"
#include "torch_accel.h"

#include <stdlib.h>
#include <string.h>

#define PT_CAP_LEGACY "dltensor"
#define PT_CAP_LEGACY_USED "used_dltensor"
#define PT_CAP_VERSIONED "dltensor_versioned"
#define PT_CAP_VERSIONED_USED "used_dltensor_versioned"

/* Tensors have at most this many dimensions through the Python API. */
#define PT_MAX_NDIM 64

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

static DLTensor *pt_dl(PyObject *self)
{
	return tio_tensor_dl(PT_OBJ(self));
}

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

/* DLPack import */

/* Take a producer's capsule: a Tensor that owns its managed tensor. */
static int pt_tensor_from_capsule(PyObject *cap, int contig, tio_object_t **out)
{
	if (PyCapsule_IsValid(cap, PT_CAP_VERSIONED)) {
		DLManagedTensorVersioned *v = PyCapsule_GetPointer(cap, PT_CAP_VERSIONED);

		if (tio_tensor_from_dlpack_versioned(v, 0, contig, out)) {
			pt_raise();
			return -1;
		}
		return PyCapsule_SetName(cap, PT_CAP_VERSIONED_USED);
	}
	if (PyCapsule_IsValid(cap, PT_CAP_LEGACY)) {
		DLManagedTensor *m = PyCapsule_GetPointer(cap, PT_CAP_LEGACY);

		if (tio_tensor_from_dlpack(m, 0, contig, out)) {
			pt_raise();
			return -1;
		}
		return PyCapsule_SetName(cap, PT_CAP_LEGACY_USED);
	}
	PyErr_SetString(PyExc_ValueError, "not an unconsumed DLPack capsule "
			"(\"dltensor\" or \"dltensor_versioned\")");
	return -1;
}

/*
 * Producers that take max_version get asked for a versioned capsule; the
 * answer is remembered per type (numpy 1.24 and torch 1.13 do not take it).
 */
static PyTypeObject *pt_legacy_only[8];

static int pt_is_legacy_only(PyTypeObject *tp)
{
	unsigned i;

	for (i = 0; i < sizeof(pt_legacy_only) / sizeof(pt_legacy_only[0]); i++)
		if (pt_legacy_only[i] == tp)
			return 1;
	return 0;
}

static void pt_set_legacy_only(PyTypeObject *tp)
{
	static unsigned next;

	/* Types are kept alive by their instances' references here: take one. */
	Py_INCREF(tp);
	Py_XDECREF(pt_legacy_only[next]);
	pt_legacy_only[next] = tp;
	next = (next + 1) % (sizeof(pt_legacy_only) / sizeof(pt_legacy_only[0]));
}

static PyObject *pt_call_dlpack(PyObject *o)
{
	PyObject *meth, *kw, *cap, *args;
	PyTypeObject *tp = Py_TYPE(o);

	meth = PyObject_GetAttrString(o, "__dlpack__");
	if (!meth)
		return NULL;
	if (pt_is_legacy_only(tp)) {
		cap = PyObject_CallNoArgs(meth);
		Py_DECREF(meth);
		return cap;
	}
	kw = Py_BuildValue("{s(ii)}", "max_version", TIO_DLPACK_MAJOR, TIO_DLPACK_MINOR);
	args = PyTuple_New(0);
	cap = kw && args ? PyObject_Call(meth, args, kw) : NULL;
	Py_XDECREF(kw);
	Py_XDECREF(args);
	if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
		/* A pre-1.0 producer: no max_version keyword. */
		PyErr_Clear();
		cap = PyObject_CallNoArgs(meth);
		if (cap)
			pt_set_legacy_only(tp);
	}
	Py_DECREF(meth);
	return cap;
}

/*
 * torch 1.13's Tensor.__dlpack__ is Python code around torch._C._to_dlpack:
 * a torch.Tensor that needs none of its checks (no autograd) goes to
 * _to_dlpack directly, 5x faster. Found on the first torch.Tensor seen.
 */
static PyTypeObject *pt_torch_tensor;
static PyObject *pt_torch_to_dlpack, *pt_str_requires_grad;

/*
 * The torch accelerator (python/accel), when built and loadable: a
 * torch.Tensor argument or from_dlpack() becomes a Tensor filled from
 * its at::Tensor.
 * pt_accel_api stays once found (its release() is what imported Tensors'
 * deleters call); pt_accel_use switches the fast path (tests compare).
 */
static const struct pt_torch_accel *pt_accel_api;
static int pt_accel_use;

static void pt_accel_find(void)
{
	PyObject *m = PyImport_ImportModule("tensorio._torch_accel"), *cap;
	const struct pt_torch_accel *api = NULL;

	cap = m ? PyObject_GetAttrString(m, "api") : NULL;
	if (cap)
		api = PyCapsule_GetPointer(cap, PT_TORCH_ACCEL_CAPSULE);
	Py_XDECREF(cap);
	Py_XDECREF(m);
	PyErr_Clear();	/* not built, or for another torch: the DLPack path */
	if (api && api->abi == PT_TORCH_ACCEL_ABI) {
		pt_accel_api = api;
		pt_accel_use = 1;
	}
}

/*
 * The producer side of an accelerated argument: the storage reference,
 * and its own shape and strides (the torch.Tensor's may change).
 */
#define PT_ACCEL_NDIM 16	/* more dimensions: the DLPack path */
struct pt_accel_mt {
	DLManagedTensor mt;
	int64_t shape[PT_ACCEL_NDIM], strides[PT_ACCEL_NDIM];
};

static void pt_accel_deleter(DLManagedTensor *mt)
{
	pt_accel_api->release(mt->manager_ctx);
	free(mt);
}

/*
 * A torch.Tensor (argument or from_dlpack()) through the accelerator: 1
 * with a Tensor that owns a storage reference (so a callee keeping it
 * keeps the memory, as with torch's DLPack export), 0 when the DLPack
 * path must take it, -1 with a Python error set (@contig refused, as the
 * DLPack path would).
 */
static int pt_accel_tensor(PyObject *o, int contig, tio_object_t **out)
{
	struct pt_accel_mt *a = malloc(sizeof(*a));

	if (!a) {
		PyErr_NoMemory();
		return -1;
	}
	if (!pt_accel_api->fill(o, &a->mt.dl_tensor, &a->mt.manager_ctx,
				a->shape, a->strides, PT_ACCEL_NDIM)) {
		free(a);
		return 0;
	}
	a->mt.deleter = pt_accel_deleter;
	if (tio_tensor_from_dlpack(&a->mt, 0, contig, out)) {
		pt_accel_deleter(&a->mt);
		pt_raise();
		return -1;
	}
	return 1;
}

static int pt_torch_find(PyTypeObject *tp)
{
	PyObject *torch, *cls, *c, *f = NULL;

	if (strcmp(tp->tp_name, "Tensor"))
		return 0;
	torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");	/* borrowed */
	if (!torch)
		return 0;
	cls = PyObject_GetAttrString(torch, "Tensor");
	c = PyObject_GetAttrString(torch, "_C");
	if (c)
		f = PyObject_GetAttrString(c, "_to_dlpack");
	Py_XDECREF(c);
	if (cls == (PyObject *)tp && f) {
		pt_str_requires_grad = PyUnicode_InternFromString("requires_grad");
		if (pt_str_requires_grad) {
			pt_torch_tensor = tp;	/* the reference from cls stays */
			pt_torch_to_dlpack = f;
			PyErr_Clear();
			pt_accel_find();
			return 1;
		}
	}
	Py_XDECREF(cls);
	Py_XDECREF(f);
	PyErr_Clear();
	return 0;
}

/* _to_dlpack(o) for a torch.Tensor without autograd, else NULL (no error). */
static PyObject *pt_torch_capsule(PyObject *o)
{
	PyObject *rg;
	int needs_grad;

	if (Py_TYPE(o) != pt_torch_tensor && (pt_torch_tensor || !pt_torch_find(Py_TYPE(o))))
		return NULL;
	if (Py_TYPE(o) != pt_torch_tensor)
		return NULL;
	rg = PyObject_GetAttr(o, pt_str_requires_grad);
	needs_grad = rg ? PyObject_IsTrue(rg) : -1;
	Py_XDECREF(rg);
	if (needs_grad) {	/* __dlpack__ says why it refuses */
		PyErr_Clear();
		return NULL;
	}
	return PyObject_CallOneArg(pt_torch_to_dlpack, o);
}

/* Whether @o's type has __dlpack__ (looked up on the type: no bound method). */
static int pt_has_dlpack(PyObject *o)
{
	static PyObject *name;

	if (!name) {
		name = PyUnicode_InternFromString("__dlpack__");
		if (!name) {
			PyErr_Clear();
			return 0;
		}
	}
	return PyObject_HasAttr((PyObject *)Py_TYPE(o), name);
}

/**
 * pt_tensor_arg() - a call argument as a Tensor, if it is a tensor
 * @o: the argument (not a tensorio object: those pass as themselves)
 * @out: the Tensor (owned) when 1 is returned
 *
 * Return: 1 converted, 0 not a tensor (nothing set), -1 with a Python
 * error set.
 */
int pt_tensor_arg(PyObject *o, tio_object_t **out)
{
	PyObject *cap;
	int rc;

	if (Py_TYPE(o) == pt_torch_tensor && pt_accel_use) {
		rc = pt_accel_tensor(o, 0, out);
		if (rc)
			return rc;
	}
	cap = pt_torch_capsule(o);

	if (cap) {
		rc = pt_tensor_from_capsule(cap, 0, out);
		Py_DECREF(cap);
		return rc ? -1 : 1;
	}
	if (PyErr_Occurred())
		return -1;
	if (!pt_has_dlpack(o))
		return 0;
	return pt_tensor_from_object(o, 0, out) ? -1 : 1;
}

/**
 * pt_tensor_from_object() - a Tensor for a DLPack producer, zero-copy
 * @o: a tensorio.Tensor, an object with __dlpack__, or a DLPack capsule
 * @require_contiguous: refuse a strided tensor (ValueError)
 * @out: the Tensor (owned)
 *
 * Return: 0, or -1 with a Python error set.
 */
int pt_tensor_from_object(PyObject *o, int require_contiguous, tio_object_t **out)
{
	PyObject *cap;
	int rc;

	if (PyObject_TypeCheck(o, &pt_tensor_type)) {
		if (require_contiguous && !tio_tensor_is_contiguous(pt_dl(o))) {
			PyErr_SetString(PyExc_ValueError, "the tensor is not contiguous");
			return -1;
		}
		*out = PT_OBJ(o);
		tio_object_incref(*out);
		return 0;
	}
	if (PyCapsule_CheckExact(o))
		return pt_tensor_from_capsule(o, require_contiguous, out);
	if (Py_TYPE(o) == pt_torch_tensor && pt_accel_use) {
		rc = pt_accel_tensor(o, require_contiguous, out);
		if (rc)
			return rc < 0 ? -1 : 0;
	}
	cap = pt_torch_capsule(o);
	if (cap) {
		rc = pt_tensor_from_capsule(cap, require_contiguous, out);
		Py_DECREF(cap);
		return rc;
	}
	if (PyErr_Occurred())
		return -1;
	if (!pt_has_dlpack(o)) {
		PyErr_Format(PyExc_TypeError, "expected a tensor (an object with "
			     "__dlpack__), got %.100s", Py_TYPE(o)->tp_name);
		return -1;
	}
	cap = pt_call_dlpack(o);
	if (!cap)
		return -1;
	if (!PyCapsule_CheckExact(cap)) {
		PyErr_Format(PyExc_TypeError, "%.100s.__dlpack__() returned a %.100s, "
			     "not a capsule", Py_TYPE(o)->tp_name, Py_TYPE(cap)->tp_name);
		Py_DECREF(cap);
		return -1;
	}
	rc = pt_tensor_from_capsule(cap, require_contiguous, out);
	Py_DECREF(cap);
	return rc;
}

static PyObject *pt_from_dlpack(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "obj", "require_contiguous", NULL };
	int contig = 0;
	PyObject *o;
	tio_object_t *t;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p", kwlist, &o, &contig))
		return NULL;
	if (PyObject_TypeCheck(o, &pt_tensor_type) && !contig)
		return Py_NewRef(o);
	if (pt_tensor_from_object(o, contig, &t))
		return NULL;
	return pt_wrap(t);
}

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

/*
 * _torch_accel(on=None): whether torch.Tensor arguments and from_dlpack()
 * take the torch accelerator (looked for now if torch is imported); on switches it, for
 * tests comparing both paths. Never true when it is not built or loadable.
 */
static PyObject *pt_torch_accel_fn(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "on", NULL };
	PyObject *on = Py_None, *torch, *cls;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &on))
		return NULL;
	if (!pt_torch_tensor) {
		torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");	/* borrowed */
		cls = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
		if (cls && PyType_Check(cls))
			pt_torch_find((PyTypeObject *)cls);
		Py_XDECREF(cls);
		PyErr_Clear();
	}
	if (on != Py_None) {
		int v = PyObject_IsTrue(on);

		if (v < 0)
			return NULL;
		pt_accel_use = v && pt_accel_api;
	}
	return PyBool_FromLong(pt_accel_use);
}

PyMethodDef pt_tensor_functions[] = {
	{ "_torch_accel", (PyCFunction)(void (*)(void))pt_torch_accel_fn,
	  METH_VARARGS | METH_KEYWORDS,
	  "_torch_accel(on=None): whether torch.Tensor arguments and from_dlpack() "
	  "take the torch accelerator" },
	{ "from_dlpack", (PyCFunction)(void (*)(void))pt_from_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "from_dlpack(obj, *, require_contiguous=False): a Tensor sharing obj's memory" },
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
