// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio._tensorio: the extension module. See docs/python.md.
 */
#include "ext.h"

static PyObject *pt_version(PyObject *m, PyObject *unused)
{
	uint32_t v = tio_version();

	(void)m; (void)unused;
	return PyUnicode_FromFormat("%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
}

/* A C function doing nothing: the floor of a Python -> C call (bench). */
static PyObject *pt_noop(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m; (void)args; (void)n;
	Py_RETURN_NONE;
}

/* The FFI function the Python benchmarks call: returns nothing. */
static int pt_ffi_noop(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	(void)self; (void)args; (void)nargs; (void)ret;
	return 0;
}

static PyMethodDef pt_module_functions[] = {
	{ "_lib_version", pt_version, METH_NOARGS, "libtensorio's version (loaded)" },
	{ "_noop", (PyCFunction)(void (*)(void))pt_noop, METH_FASTCALL,
	  "a C function that does nothing (benchmark floor)" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef pt_moddef = {
	PyModuleDef_HEAD_INIT,
	.m_name = "tensorio._tensorio",
	.m_doc = "The C half of the tensorio package (over libtensorio).",
	.m_size = -1,
	.m_methods = pt_module_functions,
};

static int pt_add_functions(PyObject *m, PyMethodDef *defs)
{
	return PyModule_AddFunctions(m, defs);
}

PyMODINIT_FUNC PyInit__tensorio(void);

PyMODINIT_FUNC PyInit__tensorio(void)
{
	PyObject *m;

	if (tio_abi_version() != TIO_ABI_VERSION) {
		PyErr_Format(PyExc_ImportError, "libtensorio ABI %u, the extension was "
			     "built for %u", tio_abi_version(), TIO_ABI_VERSION);
		return NULL;
	}
	m = PyModule_Create(&pt_moddef);
	if (!m)
		return NULL;
	if (pt_add_functions(m, pt_object_functions) ||
	    pt_add_functions(m, pt_tensor_functions) ||
	    pt_add_functions(m, pt_dlpack_functions) ||
	    pt_add_functions(m, pt_buffer_functions) ||
	    pt_add_functions(m, pt_context_functions) ||
	    pt_add_functions(m, pt_io_functions) ||
	    pt_add_functions(m, pt_save_functions) ||
	    pt_object_types_ready(m) || pt_tensor_types_ready(m) ||
	    pt_buffer_types_ready(m) || pt_stream_types_ready(m) ||
	    pt_batch_types_ready(m) || pt_save_types_ready(m))
		goto fail;
	/* The tio.* globals; the backend itself opens on first use. */
	tio_device_register_globals();
	if (tio_func_register_global("tensorio.noop", pt_ffi_noop, NULL, 1))
		tio_error_clear();
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
