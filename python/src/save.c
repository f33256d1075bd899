// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Saving safetensors: DLPack tensors (host or one GPU's) to a file or to
 * shards and their index, through libtensorio's save engine, the GIL
 * dropped; in the background (SaveState, wrapped by tensorio's
 * SaveHandle); the index of shards saved by several processes.
 *
 * A SaveState keeps what the save's threads use: the progress callable
 * and, for a save without a copy, the tensors. Freeing it waits for the
 * save (the Python package keeps pending ones until they are done).
 */
#include "ext.h"

#include <string.h>

#include <tensorio/gpu.h>

static PyTypeObject pt_save_state_type;

/* tensorio._tensorio.SaveState */
typedef struct {
	PyObject_HEAD
	tio_save_t *h;
	struct pt_progress *prog;	/* called from the save's threads */
	tio_object_t **objs;		/* the tensors, while the save reads them */
	Py_ssize_t nobjs;
} pt_save_state;

/* The arguments of a save, converted. */
struct pt_save_args {
	PyObject *items, *mitems, *bytes;
	const char **names, **meta;
	const DLTensor **dls;
	DLTensor *compact;
	tio_object_t **objs;
	Py_ssize_t n, nmeta, made;
	DLDevice gpu;
};

static void pt_save_args_free(struct pt_save_args *a)
{
	Py_ssize_t i;

	for (i = 0; a->objs && i < a->made; i++)
		tio_object_decref(a->objs[i]);
	PyMem_Free(a->objs);
	PyMem_Free(a->compact);
	PyMem_Free(a->dls);
	PyMem_Free(a->names);
	PyMem_Free(a->meta);
	Py_XDECREF(a->mitems);
	Py_XDECREF(a->bytes);
	Py_XDECREF(a->items);
	memset(a, 0, sizeof(*a));
}

static int pt_save_meta(struct pt_save_args *a, PyObject *metadata)
{
	Py_ssize_t i;

	if (!metadata)
		return 0;
	if (!PyDict_Check(metadata)) {
		PyErr_Format(PyExc_TypeError, "metadata is a dict of str to str, not %.100s",
			     Py_TYPE(metadata)->tp_name);
		return -1;
	}
	a->mitems = PyDict_Items(metadata);
	if (!a->mitems)
		return -1;
	a->nmeta = PyList_GET_SIZE(a->mitems);
	a->meta = PyMem_Calloc(a->nmeta ? 2 * (size_t)a->nmeta : 1, sizeof(*a->meta));
	if (!a->meta) {
		PyErr_NoMemory();
		return -1;
	}
	for (i = 0; i < 2 * a->nmeta; i++) {
		PyObject *s = PyTuple_GET_ITEM(PyList_GET_ITEM(a->mitems, i / 2), i % 2);

		if (!PyUnicode_Check(s)) {
			PyErr_Format(PyExc_TypeError, "metadata %s are str, not %.100s",
				     i % 2 ? "values" : "keys", Py_TYPE(s)->tp_name);
			return -1;
		}
		a->meta[i] = PyUnicode_AsUTF8(s);
		if (!a->meta[i])
			return -1;
	}
	return 0;
}

/* One tensor: contiguous, in host memory or on the one GPU of the save. */
static int pt_save_tensor(struct pt_save_args *a, PyObject *name, PyObject *value)
{
	DLTensor *dl;
	int dt;

	if (!PyUnicode_Check(name)) {
		PyErr_Format(PyExc_TypeError, "tensor names are str, not %.100s",
			     Py_TYPE(name)->tp_name);
		return -1;
	}
	a->names[a->made] = PyUnicode_AsUTF8(name);
	if (!a->names[a->made] || pt_tensor_from_object(value, 0, &a->objs[a->made]))
		return -1;
	dl = tio_tensor_dl(a->objs[a->made++]);
	dt = dl->device.device_type;
	if (!tio_tensor_is_contiguous(dl)) {
		PyErr_Format(PyExc_TypeError, "tensor %R is not contiguous (save a "
			     ".contiguous() copy)", name);
		return -1;
	}
	if (dt != kDLCPU && dt != kDLCUDAHost && dt != kDLCUDAManaged && dt != kDLROCMHost &&
	    dt != kDLCUDA && dt != kDLROCM) {
		PyErr_Format(PyExc_TypeError, "tensor %R is on DLPack device type %d: a save "
			     "takes host memory and CUDA or ROCm devices", name, dt);
		return -1;
	}
	if ((dt == kDLCUDA || dt == kDLROCM) && !a->gpu.device_type)
		a->gpu = dl->device;
	a->compact[a->made - 1] = *dl;
	a->compact[a->made - 1].strides = NULL;	/* compact, checked above */
	a->dls[a->made - 1] = &a->compact[a->made - 1];
	return 0;
}

static int pt_save_args_init(struct pt_save_args *a, PyObject *path, PyObject *tensors,
			     PyObject *metadata)
{
	size_t n;

	memset(a, 0, sizeof(*a));
	if (!PyDict_Check(tensors)) {
		PyErr_Format(PyExc_TypeError, "tensors is a dict of name to tensor, not %.100s",
			     Py_TYPE(tensors)->tp_name);
		return -1;
	}
	a->items = PyDict_Items(tensors);
	if (!a->items || !PyUnicode_FSConverter(path, &a->bytes) || pt_save_meta(a, metadata))
		return -1;
	a->n = PyList_GET_SIZE(a->items);
	n = a->n ? (size_t)a->n : 1;
	a->names = PyMem_Calloc(n, sizeof(*a->names));
	a->dls = PyMem_Calloc(n, sizeof(*a->dls));
	a->objs = PyMem_Calloc(n, sizeof(*a->objs));
	a->compact = PyMem_Calloc(n, sizeof(*a->compact));
	if (!a->names || !a->dls || !a->objs || !a->compact) {
		PyErr_NoMemory();
		return -1;
	}
	while (a->made < a->n) {
		PyObject *kv = PyList_GET_ITEM(a->items, a->made);

		if (pt_save_tensor(a, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1)))
			return -1;
	}
	return 0;
}

static void pt_progress_free(struct pt_progress *p)
{
	if (!p)
		return;
	Py_XDECREF(p->func);
	Py_XDECREF(p->exc[0]);
	Py_XDECREF(p->exc[1]);
	Py_XDECREF(p->exc[2]);
	PyMem_Free(p);
}

/* Raise what the progress callable raised (kept for another call), or the save's error. */
static PyObject *pt_save_raise(struct pt_progress *p)
{
	if (p && p->exc[0]) {
		tio_error_clear();
		Py_INCREF(p->exc[0]);
		Py_XINCREF(p->exc[1]);
		Py_XINCREF(p->exc[2]);
		PyErr_Restore(p->exc[0], p->exc[1], p->exc[2]);
		return NULL;
	}
	return pt_raise();
}

static PyObject *pt_save_state_new(tio_save_t *h, struct pt_progress *prog,
				   struct pt_save_args *a, int copy)
{
	pt_save_state *s = PyObject_GC_New(pt_save_state, &pt_save_state_type);

	if (!s) {
		Py_BEGIN_ALLOW_THREADS
		tio_save_free(h);
		Py_END_ALLOW_THREADS
		pt_progress_free(prog);
		return NULL;
	}
	s->h = h;
	s->prog = prog;
	s->objs = NULL;
	s->nobjs = 0;
	if (!copy) {	/* the save reads them until it is done */
		s->objs = a->objs;
		s->nobjs = a->made;
		a->objs = NULL;
	}
	PyObject_GC_Track(s);
	return (PyObject *)s;
}

static int pt_save_run(struct pt_save_args *a, struct tio_save_opts *o, int block,
		       PyObject *stream, tio_save_t **h)
{
	tio_gpu_stream_t *gs = NULL;
	void *handle = NULL;
	int rc = 0;

	if (stream && stream != Py_None && a->gpu.device_type) {
		handle = PyLong_AsVoidPtr(stream);
		if (!handle && PyErr_Occurred())
			return -1;
	}
	Py_BEGIN_ALLOW_THREADS
	if (stream && stream != Py_None && a->gpu.device_type)
		rc = tio_gpu_stream_wrap(a->gpu, handle, &gs);
	o->gpu_stream = gs;
	if (!rc && block)
		rc = tio_safetensors_save_opts(PyBytes_AS_STRING(a->bytes), a->names, a->dls,
					       a->n, o);
	else if (!rc)
		rc = tio_safetensors_save_async(PyBytes_AS_STRING(a->bytes), a->names, a->dls,
						a->n, o, h);
	tio_gpu_stream_destroy(gs);	/* used by the call only */
	Py_END_ALLOW_THREADS
	return rc;
}

/*
 * _save_safetensors(path, tensors, metadata=None, block=True, copy=True,
 * max_shard_size=0, progress=None, stream=None, flags=0): the number of
 * files written (block), or (SaveState, the number of files).
 */
static PyObject *pt_save_safetensors(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "tensors", "metadata", "block", "copy",
				  "max_shard_size", "progress", "stream", "flags", NULL };
	PyObject *path, *tensors, *metadata = NULL, *func = NULL, *stream = NULL, *ret = NULL;
	unsigned long long max_shard = 0;
	struct pt_progress *prog = NULL;
	int block = 1, copy = 1, rc;
	unsigned int flags = 0;
	struct pt_save_args a;
	struct tio_save_opts o;
	tio_save_t *h = NULL;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OppKOOI", kwlist, &path, &tensors,
					 &metadata, &block, &copy, &max_shard, &func, &stream,
					 &flags))
		return NULL;
	if (metadata == Py_None)
		metadata = NULL;
	if (pt_save_args_init(&a, path, tensors, metadata))
		goto out;
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.flags = flags | (copy ? 0 : TIO_SAVE_NO_COPY);
	o.max_shard_size = max_shard;
	o.meta = a.meta;
	o.nmeta = a.nmeta;
	if (func && func != Py_None) {
		prog = PyMem_Calloc(1, sizeof(*prog));
		if (!prog) {
			PyErr_NoMemory();
			goto out;
		}
		prog->func = Py_NewRef(func);
		o.progress = pt_on_progress;
		o.progress_arg = prog;
	}
	rc = pt_save_run(&a, &o, block, stream, &h);
	if (rc) {
		pt_save_raise(prog);
	} else if (block) {
		ret = PyLong_FromLong(o.shards);
	} else {
		ret = pt_save_state_new(h, prog, &a, copy);
		prog = NULL;
		ret = ret ? Py_BuildValue("(Ni)", ret, o.shards) : NULL;
	}
out:
	pt_progress_free(prog);
	pt_save_args_free(&a);
	return ret;
}

static PyObject *pt_state_wait(pt_save_state *s, PyObject *arg)
{
	double secs = arg == Py_None ? -1 : PyFloat_AsDouble(arg);
	int64_t ns = secs < 0 ? -1 : (int64_t)(secs * 1e9);
	int rc;

	if (secs == -1 && PyErr_Occurred())
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = tio_save_wait(s->h, ns);
	Py_END_ALLOW_THREADS
	if (rc)
		return tio_errno() == ETIME ? pt_raise() : pt_save_raise(s->prog);
	Py_RETURN_NONE;
}

static PyObject *pt_state_done(pt_save_state *s, PyObject *unused)
{
	int rc = tio_save_wait(s->h, 0), err = tio_errno();

	(void)unused;
	tio_error_clear();
	return PyBool_FromLong(!rc || err != ETIME);
}

static PyObject *pt_state_cancel(pt_save_state *s, PyObject *unused)
{
	(void)unused;
	tio_save_cancel(s->h);
	Py_RETURN_NONE;
}

/* (Stream, seqno): the point that signals when the save is durable. */
static PyObject *pt_state_point(pt_save_state *s, PyObject *unused)
{
	tio_stream_t *st;
	uint64_t seq;
	PyObject *w;

	(void)unused;
	if (tio_save_point(s->h, &st, &seq))
		return pt_raise();
	tio_object_incref((tio_object_t *)st);
	w = pt_wrap((tio_object_t *)st);
	return w ? Py_BuildValue("(NK)", w, (unsigned long long)seq) : NULL;
}

/*
 * A raised exception's traceback holds the frame of the handle that
 * re-raised it: the state is in cycles through what its callable raised.
 */
static int pt_state_traverse(pt_save_state *s, visitproc visit, void *arg)
{
	int i;

	if (!s->prog)
		return 0;
	Py_VISIT(s->prog->func);
	for (i = 0; i < 3; i++)
		Py_VISIT(s->prog->exc[i]);
	return 0;
}

static int pt_state_clear(pt_save_state *s)
{
	int i, running;

	if (!s->prog)
		return 0;
	for (i = 0; i < 3; i++)
		Py_CLEAR(s->prog->exc[i]);
	running = tio_save_wait(s->h, 0) && tio_errno() == ETIME;
	tio_error_clear();
	if (!running)	/* no thread of the save calls it any more */
		Py_CLEAR(s->prog->func);
	return 0;
}

static void pt_state_dealloc(pt_save_state *s)
{
	Py_ssize_t i;

	PyObject_GC_UnTrack(s);
	Py_BEGIN_ALLOW_THREADS
	tio_save_free(s->h);	/* waits: its threads may call the progress callable */
	Py_END_ALLOW_THREADS
	for (i = 0; i < s->nobjs; i++)
		tio_object_decref(s->objs[i]);
	PyMem_Free(s->objs);
	pt_progress_free(s->prog);
	PyObject_GC_Del(s);
}

static PyMethodDef pt_state_methods[] = {
	{ "wait", (PyCFunction)pt_state_wait, METH_O,
	  "wait(seconds or None): until the save is durable; raises its error" },
	{ "done", (PyCFunction)pt_state_done, METH_NOARGS, "whether the save has ended" },
	{ "cancel", (PyCFunction)pt_state_cancel, METH_NOARGS, "stop the save (ECANCELED)" },
	{ "point", (PyCFunction)pt_state_point, METH_NOARGS,
	  "(Stream, seqno): the point signalled when the save is durable" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject pt_save_state_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio._tensorio.SaveState",
	.tp_doc = "An asynchronous save (tensorio.SaveHandle wraps it).",
	.tp_basicsize = sizeof(pt_save_state),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_dealloc = (destructor)pt_state_dealloc,
	.tp_traverse = (traverseproc)pt_state_traverse,
	.tp_clear = (inquiry)pt_state_clear,
	.tp_methods = pt_state_methods,
};

/* _write_safetensors_index(path, shards, metadata=None) */
static PyObject *pt_write_index(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "shards", "metadata", NULL };
	PyObject *path, *shards, *metadata = NULL, *bytes = NULL, *seq = NULL, *ret = NULL;
	PyObject **paths = NULL;
	const char **sv = NULL;
	struct pt_save_args a;
	Py_ssize_t n, i, made = 0;
	int rc;

	(void)m;
	memset(&a, 0, sizeof(a));
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", kwlist, &path, &shards, &metadata))
		return NULL;
	if (metadata == Py_None)
		metadata = NULL;
	seq = PySequence_Fast(shards, "shards is a list of paths");
	if (!seq || !PyUnicode_FSConverter(path, &bytes) || pt_save_meta(&a, metadata))
		goto out;
	n = PySequence_Fast_GET_SIZE(seq);
	paths = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*paths));
	sv = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*sv));
	if (!paths || !sv) {
		PyErr_NoMemory();
		goto out;
	}
	for (; made < n; made++) {
		if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, made), &paths[made]))
			goto out;
		sv[made] = PyBytes_AS_STRING(paths[made]);
	}
	Py_BEGIN_ALLOW_THREADS
	rc = tio_safetensors_write_index(PyBytes_AS_STRING(bytes), sv, n, a.meta, a.nmeta);
	Py_END_ALLOW_THREADS
	ret = rc ? pt_raise() : Py_NewRef(Py_None);
out:
	for (i = 0; i < made; i++)
		Py_DECREF(paths[i]);
	PyMem_Free(paths);
	PyMem_Free(sv);
	pt_save_args_free(&a);
	Py_XDECREF(bytes);
	Py_XDECREF(seq);
	return ret;
}

PyMethodDef pt_save_functions[] = {
	{ "_save_safetensors", (PyCFunction)(void (*)(void))pt_save_safetensors,
	  METH_VARARGS | METH_KEYWORDS,
	  "_save_safetensors(path, tensors, metadata=None, block=True, copy=True, "
	  "max_shard_size=0, progress=None, stream=None, flags=0)" },
	{ "_write_safetensors_index", (PyCFunction)(void (*)(void))pt_write_index,
	  METH_VARARGS | METH_KEYWORDS, "_write_safetensors_index(path, shards, metadata=None)" },
	{ NULL, NULL, 0, NULL },
};

int pt_save_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_save_state_type))
		return -1;
	return PyModule_AddObjectRef(m, "SaveState", (PyObject *)&pt_save_state_type);
}
