// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * safetensors: load a file into one pinned buffer and view every entry as
 * a zero-copy Tensor (copied to a GPU when asked); save DLPack tensors.
 */
#include "ext.h"

#include <string.h>

static PyObject *pt_load_safetensors(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "device", NULL };
	PyObject *path, *bytes, *dict = NULL, *t;
	const char *devname = "cpu";
	tio_object_t **views = NULL, **dev = NULL;
	tio_safetensors_t *st;
	DLDevice device;
	int64_t n, i, made = 0;
	int rc;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s", kwlist, &path, &devname))
		return NULL;
	if (tio_device_parse(devname, &device))
		return pt_raise();
	if (device.device_type != kDLCPU && device.device_type != kDLCUDA) {
		PyErr_Format(PyExc_ValueError, "load_safetensors loads to \"cpu\" or "
			     "\"cuda:N\", not \"%s\"", devname);
		return NULL;
	}
	if (!PyUnicode_FSConverter(path, &bytes))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = pt_st_load(PyBytes_AS_STRING(bytes), &st);
	Py_END_ALLOW_THREADS
	Py_DECREF(bytes);
	if (rc)
		return pt_raise();
	n = pt_st_count(st);
	views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*views));
	dev = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*dev));
	if (!views || !dev) {
		PyErr_NoMemory();
		goto out;
	}
	for (; made < n; made++) {
		if (pt_st_tensor(st, pt_st_name(st, made), &views[made])) {
			pt_raise();
			goto out;
		}
	}
	if (device.device_type == kDLCUDA) {
		Py_BEGIN_ALLOW_THREADS
		rc = pt_tensors_to_cuda(device.device_id, views, dev, n);
		Py_END_ALLOW_THREADS
		if (rc) {
			pt_raise();
			goto out;
		}
		for (i = 0; i < n; i++) {	/* the CUDA copies replace the views */
			pt_decref(views[i]);
			views[i] = dev[i];
		}
	}
	dict = PyDict_New();
	for (i = 0; dict && i < n; i++) {
		t = pt_wrap(views[i]);
		views[i] = NULL;
		if (!t || PyDict_SetItemString(dict, pt_st_name(st, i), t))
			Py_CLEAR(dict);
		Py_XDECREF(t);
	}
out:
	for (i = 0; views && i < made; i++)
		pt_decref(views[i]);
	PyMem_Free(views);
	PyMem_Free(dev);
	pt_st_free(st);
	return dict;
}

static PyObject *pt_save_safetensors(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "tensors", NULL };
	PyObject *path, *tensors, *items = NULL, *bytes = NULL, *ret = NULL;
	const char **names = NULL;
	const DLTensor **dls = NULL;
	DLTensor *compact = NULL;
	tio_object_t **objs = NULL;
	Py_ssize_t n, i, made = 0;
	int rc;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!", kwlist, &path, &PyDict_Type,
					 &tensors))
		return NULL;
	items = PyDict_Items(tensors);
	if (!items || !PyUnicode_FSConverter(path, &bytes))
		goto out;
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
	rc = pt_st_save(PyBytes_AS_STRING(bytes), names, dls, n);
	Py_END_ALLOW_THREADS
	if (rc)
		pt_raise();
	else
		ret = Py_NewRef(Py_None);
out:
	for (i = 0; objs && i < made; i++)
		pt_decref(objs[i]);
	PyMem_Free(objs);
	PyMem_Free(compact);
	PyMem_Free(dls);
	PyMem_Free(names);
	Py_XDECREF(bytes);
	Py_XDECREF(items);
	return ret;
}

PyMethodDef pt_io_functions[] = {
	{ "_load_safetensors", (PyCFunction)(void (*)(void))pt_load_safetensors,
	  METH_VARARGS | METH_KEYWORDS, "load_safetensors(path, device=\"cpu\")" },
	{ "_save_safetensors", (PyCFunction)(void (*)(void))pt_save_safetensors,
	  METH_VARARGS | METH_KEYWORDS, "save_safetensors(path, tensors)" },
	{ NULL, NULL, 0, NULL },
};
