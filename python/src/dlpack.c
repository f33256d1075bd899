// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DLPack import: from_dlpack() and Tensor arguments, zero copy.
 *
 * from_dlpack() calls the producer's __dlpack__ (asking for a versioned
 * capsule where the producer takes max_version), and the Tensor keeps the
 * producer's managed tensor until it goes. An exact torch.Tensor takes
 * the torch accelerator instead where it is built (pt_accel_tensor).
 */
#include "ext.h"
#include "torch_accel.h"

#include <stdlib.h>
#include <string.h>

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

PyMethodDef pt_dlpack_functions[] = {
	{ "_torch_accel", (PyCFunction)(void (*)(void))pt_torch_accel_fn,
	  METH_VARARGS | METH_KEYWORDS,
	  "_torch_accel(on=None): whether torch.Tensor arguments and from_dlpack() "
	  "take the torch accelerator" },
	{ "from_dlpack", (PyCFunction)(void (*)(void))pt_from_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "from_dlpack(obj, *, require_contiguous=False): a Tensor sharing obj's memory" },
	{ NULL, NULL, 0, NULL },
};
