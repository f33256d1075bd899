// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors: load a file (or a sharded checkpoint) into one pinned buffer
 * and view every entry as a zero-copy Tensor, or straight onto a GPU
 * through the library's bounce-buffer ring; save DLPack tensors.
 */
#include "ext.h"

#include <string.h>

/*
 * The progress callable, called back with the GIL dropped around the
 * load: it runs with the GIL retaken, and an exception it raises (or a
 * pending signal, such as Ctrl-C) cancels the load and is kept for the
 * caller to raise.
 */
struct pt_progress {
	PyObject *func;
	PyObject *exc[3];	/* type, value, traceback */
};

static int pt_on_progress(void *arg, uint64_t done, uint64_t total)
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
		PyErr_Fetch(&p->exc[0], &p->exc[1], &p->exc[2]);
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

static PyObject *pt_save_safetensors(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "tensors", "metadata", NULL };
	PyObject *path, *tensors, *metadata = NULL, *items = NULL, *bytes = NULL;
	PyObject *mitems = NULL, *ret = NULL;
	const char **names = NULL, **meta = NULL;
	const DLTensor **dls = NULL;
	DLTensor *compact = NULL;
	tio_object_t **objs = NULL;
	Py_ssize_t n, i, nmeta = 0, made = 0;
	int rc;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!|O", kwlist, &path, &PyDict_Type,
					 &tensors, &metadata))
		return NULL;
	if (metadata == Py_None)
		metadata = NULL;
	if (metadata && !PyDict_Check(metadata)) {
		PyErr_Format(PyExc_TypeError, "metadata is a dict of str to str, not %.100s",
			     Py_TYPE(metadata)->tp_name);
		return NULL;
	}
	items = PyDict_Items(tensors);
	if (!items || !PyUnicode_FSConverter(path, &bytes))
		goto out;
	if (metadata) {
		mitems = PyDict_Items(metadata);
		if (!mitems)
			goto out;
		nmeta = PyList_GET_SIZE(mitems);
		meta = PyMem_Calloc(nmeta ? 2 * (size_t)nmeta : 1, sizeof(*meta));
		if (!meta) {
			PyErr_NoMemory();
			goto out;
		}
	}
	for (i = 0; i < 2 * nmeta; i++) {
		PyObject *s = PyTuple_GET_ITEM(PyList_GET_ITEM(mitems, i / 2), i % 2);

		if (!PyUnicode_Check(s)) {
			PyErr_Format(PyExc_TypeError, "metadata %s are str, not %.100s",
				     i % 2 ? "values" : "keys", Py_TYPE(s)->tp_name);
			goto out;
		}
		meta[i] = PyUnicode_AsUTF8(s);
		if (!meta[i])
			goto out;
	}
	n = PyList_GET_SIZE(items);
	names = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*names));
	dls = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*dls));
	objs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*objs));
	compact = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*compact));
	if (!names || !dls || !objs || !compact) {
		PyErr_NoMemory();
		goto out;
	}
	for (; made < n; made++) {
		PyObject *kv = PyList_GET_ITEM(items, made);
		PyObject *k = PyTuple_GET_ITEM(kv, 0);

		if (!PyUnicode_Check(k)) {
			PyErr_Format(PyExc_TypeError, "tensor names are str, not %.100s",
				     Py_TYPE(k)->tp_name);
			goto out;
		}
		names[made] = PyUnicode_AsUTF8(k);
		if (!names[made] ||
		    pt_tensor_from_object(PyTuple_GET_ITEM(kv, 1), 1, &objs[made]))
			goto out;
		/* Compact, checked above: the writer wants no strides at all. */
		compact[made] = *tio_tensor_dl(objs[made]);
		compact[made].strides = NULL;
		dls[made] = &compact[made];
	}
	Py_BEGIN_ALLOW_THREADS
	rc = tio_safetensors_save_ex(PyBytes_AS_STRING(bytes), names, dls, n, meta, nmeta);
	Py_END_ALLOW_THREADS
	if (rc)
		pt_raise();
	else
		ret = Py_NewRef(Py_None);
out:
	for (i = 0; objs && i < made; i++)
		tio_object_decref(objs[i]);
	PyMem_Free(objs);
	PyMem_Free(compact);
	PyMem_Free(dls);
	PyMem_Free(names);
	PyMem_Free(meta);
	Py_XDECREF(mitems);
	Py_XDECREF(bytes);
	Py_XDECREF(items);
	return ret;
}

PyMethodDef pt_io_functions[] = {
	{ "_load_safetensors", (PyCFunction)(void (*)(void))pt_load_safetensors,
	  METH_VARARGS | METH_KEYWORDS,
	  "load_safetensors(path, device=\"cpu\", progress=None)" },
	{ "_save_safetensors", (PyCFunction)(void (*)(void))pt_save_safetensors,
	  METH_VARARGS | METH_KEYWORDS, "save_safetensors(path, tensors, metadata=None)" },
	{ NULL, NULL, 0, NULL },
};
