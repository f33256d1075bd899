// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio._torch_accel: a torch.Tensor call argument as a DLTensor
 * straight from its at::Tensor, without torch's DLPack export (which
 * allocates a view, a managed tensor and a capsule: ~400 ns, torch 1.13).
 * Built only where libtorch-dev is installed; see torch_accel.h.
 */
#include <Python.h>

#include <ATen/DLConvertor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/autograd/python_variable.h>

extern "C" {
#include "torch_accel.h"
}

#ifdef USE_ROCM
#define TORCH_HIP_BUILD 1
#else
#define TORCH_HIP_BUILD 0
#endif

namespace {

int fill(PyObject *o, void *out, void **owner, int64_t *shape, int64_t *strides,
	 int room) noexcept
{
	if (!THPVariable_CheckExact(o))
		return 0;
	try {
		const at::Tensor &t = THPVariable_Unpack(o);
		DLTensor *dl = static_cast<DLTensor *>(out);

		/* What Tensor.__dlpack__ refuses, and what it would lose. */
		if (t.requires_grad() || t.is_conj() || t.is_neg() ||
		    t.layout() != at::kStrided || !t.has_storage())
			return 0;
		/* As at::toDLPack() fills it (torch 1.13). */
		dl->dtype = at::getDLDataType(t);
		if (t.is_cpu()) {
			dl->device = DLDevice{ kDLCPU, 0 };
		} else if (t.is_cuda()) {
			/* ROCm torch reports kCUDA too: the DLPack path tells them apart. */
			if (TORCH_HIP_BUILD)
				return 0;
			dl->device = DLDevice{ kDLCUDA, static_cast<int32_t>(t.get_device()) };
		} else {
			return 0;
		}
		dl->data = t.data_ptr();
		dl->ndim = static_cast<int>(t.dim());
		if (dl->ndim > room)
			return 0;
		/* torch >= 1.13 exports size-0/1 dimensions with stride 1 (gh-83069). */
		for (int i = 0; i < dl->ndim; i++) {
			shape[i] = t.sizes()[i];
			strides[i] = shape[i] < 2 ? 1 : t.strides()[i];
		}
		dl->shape = shape;
		dl->strides = strides;
		dl->byte_offset = 0;
		c10::StorageImpl *impl = t.storage().unsafeGetStorageImpl();
		c10::raw::intrusive_ptr::incref(impl);
		*owner = impl;
		return 1;
	} catch (...) {
		return 0;	/* the DLPack path reports it */
	}
}

void release(void *owner) noexcept
{
	c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl *>(owner));
}

const struct pt_torch_accel api = { PT_TORCH_ACCEL_ABI, fill, release };

/* Built against one torch: refuse to load under another (its ABI). */
int torch_matches(void)
{
	PyObject *torch = PyImport_ImportModule("torch");
	PyObject *v = torch ? PyObject_GetAttrString(torch, "__version__") : nullptr;
	PyObject *want = PyUnicode_FromFormat("%d.%d.", TORCH_VERSION_MAJOR,
					      TORCH_VERSION_MINOR);
	int ok = -1;

	Py_XDECREF(torch);
	if (v && want) {
		PyObject *s = PyObject_Str(v);

		if (s) {
			ok = PyUnicode_Tailmatch(s, want, 0, PyUnicode_GET_LENGTH(want), -1);
			Py_DECREF(s);
		}
	}
	if (ok == 0)
		PyErr_Format(PyExc_ImportError, "tensorio._torch_accel was built "
			     "for torch %U, this is torch %S", want, v);
	Py_XDECREF(v);
	Py_XDECREF(want);
	return ok == 1 ? 0 : -1;
}

struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT,
	"tensorio._torch_accel",
	"torch.Tensor call arguments without a DLPack export (optional).",
	-1, nullptr, nullptr, nullptr, nullptr, nullptr,
};

} // namespace

extern "C" __attribute__((visibility("default"))) PyObject *PyInit__torch_accel(void)
{
	PyObject *m, *cap;

	if (torch_matches())
		return nullptr;
	m = PyModule_Create(&moddef);
	if (!m)
		return nullptr;
	cap = PyCapsule_New(const_cast<struct pt_torch_accel *>(&api),
			    PT_TORCH_ACCEL_CAPSULE, nullptr);
	if (!cap || PyModule_AddObject(m, "api", cap)) {
		Py_XDECREF(cap);
		Py_DECREF(m);
		return nullptr;
	}
	return m;
}
