// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors: load a file (or a sharded checkpoint) into one pinned buffer
 * and view every entry as a zero-copy Tensor, or straight onto a GPU
 * through the library's bounce-buffer ring. Saving is save.c.
 */
#include "ext.h"

#include <string.h>

/*
 * The progress callable (struct pt_progress, ext.h), called back with the
 * GIL dropped around the load or save: it runs with the GIL retaken, and
 * an exception it raises (or a pending signal, such as Ctrl-C) cancels the
 * transfer and is kept for the caller to raise.
 */
int pt_on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct pt_progress *p = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *r = NULL;

	if (!PyErr_CheckSignals() && p->func)
		r = PyObject_CallFunction(p->func, "KK", (unsigned long long)done,
					  (unsigned long long)total);
	if ((!p->func || r) && !PyErr_Occurred()) {
		Py_XDECREF(r);
		PyGILState_Release(g);
		return 0;
	}
	Py_XDECREF(r);
	if (!p->exc[0])
		pt_err_fetch(&p->exc[0], &p->exc[1], &p->exc[2]);
	PyErr_Clear();
	PyGILState_Release(g);
	return 1;
}

/* Load @path into @st: to host memory, or to @device's memory. */
static int pt_st_load(const char *path, DLDevice device, struct pt_progress *p,
		      tio_safetensors_t **st)
{
	struct tio_io_opts o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.progress = pt_on_progress;
	o.progress_arg = p;
	Py_BEGIN_ALLOW_THREADS
	if (device.device_type == kDLCPU)
		rc = tio_safetensors_load_ex(path, &o, st);
	else
		rc = tio_safetensors_load_device(path, device, &o, st);
	Py_END_ALLOW_THREADS
	return rc;
}

static PyObject *pt_load_safetensors(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "device", "progress", NULL };
	struct pt_progress prog = { NULL, { NULL, NULL, NULL } };
	PyObject *path, *bytes, *dict = NULL, *t;
	const char *devname = "cpu";
	tio_safetensors_t *st;
	DLDevice device;
	int64_t n, i;
	int rc;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sO", kwlist, &path, &devname,
					 &prog.func))
		return NULL;
	if (prog.func == Py_None)
		prog.func = NULL;
	if (prog.func && !PyCallable_Check(prog.func)) {
		PyErr_Format(PyExc_TypeError, "progress is a callable(done, total), not "
			     "%.100s", Py_TYPE(prog.func)->tp_name);
		return NULL;
	}
	if (tio_device_parse(devname, &device))
		return pt_raise();
	if (device.device_type != kDLCPU && device.device_type != kDLCUDA &&
	    device.device_type != kDLROCM) {
		PyErr_Format(PyExc_ValueError, "load_safetensors loads to \"cpu\", "
			     "\"cuda:N\" or \"rocm:N\", not \"%s\"", devname);
		return NULL;
	}
	if (!PyUnicode_FSConverter(path, &bytes))
		return NULL;
	rc = pt_st_load(PyBytes_AS_STRING(bytes), device, &prog, &st);
	Py_DECREF(bytes);
	if (prog.exc[0]) {
		if (!rc)
			tio_safetensors_free(st);
		else
			tio_error_clear();
		PyErr_Restore(prog.exc[0], prog.exc[1], prog.exc[2]);
		return NULL;
	}
	if (rc)
		return pt_raise();
	n = tio_safetensors_count(st);
	dict = PyDict_New();
	for (i = 0; dict && i < n; i++) {
		const char *name = tio_safetensors_name(st, i);
		tio_object_t *view;

		if (tio_safetensors_tensor(st, name, &view)) {
			pt_raise();
			Py_CLEAR(dict);
			break;
		}
		t = pt_wrap(view);
		if (!t || PyDict_SetItemString(dict, name, t))
			Py_CLEAR(dict);
		Py_XDECREF(t);
	}
	tio_safetensors_free(st);
	return dict;
}

PyMethodDef pt_io_functions[] = {
	{ "_load_safetensors", (PyCFunction)(void (*)(void))pt_load_safetensors,
	  METH_VARARGS | METH_KEYWORDS,
	  "load_safetensors(path, device=\"cpu\", progress=None)" },
	{ NULL, NULL, 0, NULL },
};
