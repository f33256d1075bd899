// SPDX-License-Identifier: LGPL-2.1-or-later
/* The context: which backend the library opened, and its limits. */
#include "ext.h"

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

PyMethodDef pt_context_functions[] = {
	{ "backend", pt_backend_fn, METH_NOARGS, "\"kernel\" or \"user\"" },
	{ "info", pt_info_fn, METH_NOARGS, "the backend, its version, features and limits" },
	{ "_live_handles", pt_live_handles, METH_NOARGS,
	  "buffers and streams alive (leak checks)" },
	{ NULL, NULL, 0, NULL },
};
