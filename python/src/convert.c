// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Values both ways between Python objects and FFI Anys.
 *
 * Python to Any (call arguments): ints, floats, bools, None, str and bytes
 * become views of the Python object (valid while it is); tensorio objects
 * are passed as themselves; lists/tuples and dicts become new Arrays and
 * Maps, DLPack-capable objects new Tensors, callables new Functions (those
 * are owned and released after the call).
 * Any to Python: PODs and strings by value, Arrays as lists, Maps as dicts,
 * Shapes as tuples, Errors as exception instances, other objects wrapped.
 */
#include "ext.h"

#include <string.h>

static int32_t pt_type_buffer = -1, pt_type_stream = -1;

/* The indices of tio.Buffer and tio.Stream (registered by tio_init()). */
int pt_type_init(void)
{
	if (pt_type_buffer >= 0)
		return 0;
	if (tio_type_key_to_index("tio.Buffer", &pt_type_buffer) ||
	    tio_type_key_to_index("tio.Stream", &pt_type_stream)) {
		pt_type_buffer = pt_type_stream = -1;
		return -1;
	}
	return 0;
}

int32_t pt_buffer_type_index(void)
{
	return pt_type_buffer;
}

int32_t pt_stream_type_index(void)
{
	return pt_type_stream;
}

static int pt_int_to_any(PyObject *o, tio_any_t *out)
{
	int overflow;
	long long v = PyLong_AsLongLongAndOverflow(o, &overflow);

	if (overflow) {
		PyErr_SetString(PyExc_OverflowError,
				"int too large for an FFI int (int64)");
		return -1;
	}
	if (v == -1 && PyErr_Occurred())
		return -1;
	*out = tio_any_int(v);
	return 0;
}

static int pt_str_to_any(PyObject *o, tio_any_t *out, int *owned)
{
	Py_ssize_t len;
	const char *s = PyUnicode_AsUTF8AndSize(o, &len);

	if (!s)
		return -1;
	if ((Py_ssize_t)strlen(s) == len) {
		*out = tio_any_raw_str(s);	/* the str keeps its UTF-8 */
		return 0;
	}
	if (tio_str_new(s, (size_t)len, out)) {	/* a NUL inside: a copy */
		pt_raise();
		return -1;
	}
	*owned = 1;
	return 0;
}

static int pt_seq_to_array(PyObject *o, tio_any_t *out)
{
	PyObject *fast = PySequence_Fast(o, "expected a sequence");
	Py_ssize_t n, i, done = 0;
	tio_any_t *items;
	tio_object_t *arr = NULL;
	int rc = -1;

	if (!fast)
		return -1;
	n = PySequence_Fast_GET_SIZE(fast);
	items = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*items));
	if (!items) {
		Py_DECREF(fast);
		PyErr_NoMemory();
		return -1;
	}
	for (; done < n; done++)
		if (pt_to_any_owned(PySequence_Fast_GET_ITEM(fast, done), &items[done]))
			goto out;
	if (tio_array_new(items, n, &arr)) {
		pt_raise();
		goto out;
	}
	*out = tio_any_object(arr);
	rc = 0;
out:
	for (i = 0; i < done; i++)
		tio_any_decref(&items[i]);
	PyMem_Free(items);
	Py_DECREF(fast);
	return rc;
}

static int pt_dict_to_map(PyObject *o, tio_any_t *out)
{
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	tio_object_t *map;
	tio_any_t ka, va;
	int rc;

	if (tio_map_new(&map)) {
		pt_raise();
		return -1;
	}
	while (PyDict_Next(o, &pos, &k, &v)) {
		if (pt_to_any_owned(k, &ka))
			goto fail;
		if (pt_to_any_owned(v, &va)) {
			tio_any_decref(&ka);
			goto fail;
		}
		rc = tio_map_set(map, &ka, &va);
		tio_any_decref(&ka);
		tio_any_decref(&va);
		if (rc) {
			pt_raise();
			goto fail;
		}
	}
	*out = tio_any_object(map);
	return 0;
fail:
	tio_object_decref(map);
	return -1;
}

/**
 * pt_to_any() - a Python object as a call argument
 * @o: the object
 * @out: the value: a view of @o, or owned when *@owned is set
 * @owned: set to 1 when @out holds a reference to release
 * @bytes: storage for a ByteArrayPtr view (kept as long as @out)
 *
 * Return: 0, or -1 with a Python error set.
 */
int pt_to_any(PyObject *o, tio_any_t *out, int *owned, tio_byte_array_t *bytes)
{
	tio_object_t *obj;

	*owned = 0;
	if (PyLong_CheckExact(o))
		return pt_int_to_any(o, out);
	if (PyFloat_CheckExact(o)) {
		*out = tio_any_float(PyFloat_AS_DOUBLE(o));
		return 0;
	}
	if (o == Py_None) {
		*out = tio_any_none();
		return 0;
	}
	if (PyBool_Check(o)) {
		*out = tio_any_bool(o == Py_True);
		return 0;
	}
	if (PyObject_TypeCheck(o, &pt_object_type)) {
		*out = tio_any_object(PT_OBJ(o));
		return 0;
	}
	if (PyUnicode_Check(o))
		return pt_str_to_any(o, out, owned);
	if (PyLong_Check(o))
		return pt_int_to_any(o, out);
	if (PyFloat_Check(o)) {
		*out = tio_any_float(PyFloat_AsDouble(o));
		return 0;
	}
	if (PyBytes_Check(o)) {
		bytes->data = PyBytes_AS_STRING(o);
		bytes->size = (size_t)PyBytes_GET_SIZE(o);
		*out = tio_any_none();
		out->type_index = TIO_TYPE_BYTE_ARRAY_PTR;
		out->v_ptr = bytes;
		return 0;
	}
	if (PyList_Check(o) || PyTuple_Check(o)) {
		*owned = 1;
		return pt_seq_to_array(o, out);
	}
	if (PyDict_Check(o)) {
		*owned = 1;
		return pt_dict_to_map(o, out);
	}
	switch (pt_tensor_arg(o, &obj)) {
	case -1:
		return -1;
	case 1:
		*out = tio_any_object(obj);
		*owned = 1;
		return 0;
	}
	if (PyCallable_Check(o)) {
		if (pt_function_from_callable(o, &obj))
			return -1;
		*out = tio_any_object(obj);
		*owned = 1;
		return 0;
	}
	PyErr_Format(PyExc_TypeError,
		     "cannot pass a %.100s to an FFI function (int, float, bool, "
		     "str, bytes, None, tensors, tensorio objects, list, tuple, "
		     "dict and callables can be passed)", Py_TYPE(o)->tp_name);
	return -1;
}

/**
 * pt_to_any_owned() - a Python object as an owned value
 * @o: the object
 * @out: the value, owned (release it with tio_any_decref())
 *
 * Return: 0, or -1 with a Python error set.
 */
int pt_to_any_owned(PyObject *o, tio_any_t *out)
{
	tio_byte_array_t bytes;
	tio_any_t view;
	int owned;

	if (pt_to_any(o, &view, &owned, &bytes))
		return -1;
	if (owned) {
		*out = view;
		return 0;
	}
	if (tio_any_copy(out, &view)) {
		pt_raise();
		return -1;
	}
	return 0;
}

/**
 * pt_args_init() - convert call arguments
 * @a: the arguments, released with pt_args_release() (also on failure)
 * @objs: the Python arguments
 * @n: their number
 *
 * Return: 0, or -1 with a Python error set.
 */
int pt_args_init(struct pt_args *a, PyObject *const *objs, Py_ssize_t n)
{
	Py_ssize_t i;
	int owned;

	a->n = 0;
	a->v = a->v_stack;
	a->owned = a->owned_stack;
	a->bytes = a->bytes_stack;
	if (n > PT_ARGS_STACK) {
		if (n > INT32_MAX) {
			PyErr_SetString(PyExc_ValueError, "too many arguments");
			return -1;
		}
		a->v = PyMem_Malloc((size_t)n * sizeof(*a->v));
		a->owned = PyMem_Malloc((size_t)n);
		a->bytes = PyMem_Malloc((size_t)n * sizeof(*a->bytes));
		if (!a->v || !a->owned || !a->bytes) {
			PyErr_NoMemory();
			return -1;
		}
	}
	for (i = 0; i < n; i++) {
		if (pt_to_any(objs[i], &a->v[i], &owned, &a->bytes[i]))
			return -1;
		a->owned[i] = (unsigned char)owned;
		a->n = i + 1;
	}
	return 0;
}

void pt_args_release(struct pt_args *a)
{
	Py_ssize_t i;

	for (i = 0; i < a->n; i++)
		if (a->owned[i])
			tio_any_decref(&a->v[i]);
	if (a->v != a->v_stack) {
		PyMem_Free(a->v);
		PyMem_Free(a->owned);
		PyMem_Free(a->bytes);
	}
	a->n = 0;
}

static PyObject *pt_array_to_list(tio_object_t *arr)
{
	int64_t n = tio_array_size(arr), i;
	PyObject *l = PyList_New((Py_ssize_t)n), *x;

	for (i = 0; l && i < n; i++) {
		x = pt_from_view(tio_array_at(arr, i));
		if (!x) {
			Py_CLEAR(l);
			break;
		}
		PyList_SET_ITEM(l, (Py_ssize_t)i, x);
	}
	return l;
}

static PyObject *pt_map_to_dict(tio_object_t *map)
{
	const tio_any_t *k, *v;
	PyObject *d = PyDict_New(), *pk, *pv;
	int64_t pos = 0;
	int rc;

	while (d && tio_map_next(map, &pos, &k, &v)) {
		pk = pt_from_view(k);
		pv = pk ? pt_from_view(v) : NULL;
		rc = pv ? PyDict_SetItem(d, pk, pv) : -1;
		Py_XDECREF(pk);
		Py_XDECREF(pv);
		if (rc)
			Py_CLEAR(d);
	}
	return d;
}

/** pt_int_tuple() - @n int64s as a tuple of ints (a new reference, or NULL) */
PyObject *pt_int_tuple(const int64_t *v, int n)
{
	PyObject *t = PyTuple_New(n), *x;
	int i;

	for (i = 0; t && i < n; i++) {
		x = PyLong_FromLongLong(v[i]);
		if (!x) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, x);
	}
	return t;
}

/**
 * pt_wrap() - the Python object for a library object
 * @obj: the object; the reference is handed over (released on failure)
 *
 * Return: a new reference, or NULL with a Python error set.
 */
PyObject *pt_wrap(tio_object_t *obj)
{
	PyTypeObject *tp = &pt_object_type;
	PyObject *r;
	pt_object *w;

	switch (obj->type_index) {
	case TIO_TYPE_FUNCTION:
		return pt_function_new(obj, 0);
	case TIO_TYPE_TENSOR:
		tp = &pt_tensor_type;
		break;
	case TIO_TYPE_MODULE:
		tp = &pt_module_type;
		break;
	case TIO_TYPE_STR:
	case TIO_TYPE_BYTES:
	case TIO_TYPE_ERROR:
	case TIO_TYPE_ARRAY:
	case TIO_TYPE_MAP:
	case TIO_TYPE_SHAPE: {
		tio_any_t a = tio_any_object(obj);

		r = pt_from_view(&a);
		tio_object_decref(obj);
		return r;
	}
	default:
		/* tio.Buffer/tio.Stream exist once such an object does. */
		if (pt_type_buffer < 0 && obj->type_index >= TIO_TYPE_DYN_OBJECT_BEGIN &&
		    pt_type_init())
			tio_error_clear();
		if (obj->type_index == pt_type_buffer && pt_type_buffer >= 0)
			tp = &pt_buffer_type;
		else if (obj->type_index == pt_type_stream && pt_type_stream >= 0)
			tp = &pt_stream_type;
	}
	w = PyObject_New(pt_object, tp);
	if (!w) {
		tio_object_decref(obj);
		return NULL;
	}
	w->obj = obj;
	return (PyObject *)w;
}

/**
 * pt_from_view() - a Python object for a value that stays its owner's
 * @a: the value (borrowed)
 *
 * Return: a new reference, or NULL with a Python error set.
 */
PyObject *pt_from_view(const tio_any_t *a)
{
	const void *data;
	size_t len;
	char text[TIO_DTYPE_STR_MAX];

	switch (a->type_index) {
	case TIO_TYPE_NONE:
		Py_RETURN_NONE;
	case TIO_TYPE_INT:
		return PyLong_FromLongLong(a->v_int64);
	case TIO_TYPE_BOOL:
		return PyBool_FromLong(a->v_int64 != 0);
	case TIO_TYPE_FLOAT:
		return PyFloat_FromDouble(a->v_float64);
	case TIO_TYPE_OPAQUE_PTR:
		return PyLong_FromVoidPtr(a->v_ptr);
	case TIO_TYPE_DATA_TYPE:
		return pt_dtype_str(a->v_dtype);
	case TIO_TYPE_DEVICE:
		if (tio_device_print(a->v_device, text, sizeof(text)) < 0)
			return pt_raise();
		return PyUnicode_FromString(text);
	case TIO_TYPE_RAW_STR:
	case TIO_TYPE_SMALL_STR:
	case TIO_TYPE_STR:
		if (tio_any_to_str(a, (const char **)&data, &len))
			return pt_raise();
		return PyUnicode_FromStringAndSize(data, (Py_ssize_t)len);
	case TIO_TYPE_BYTE_ARRAY_PTR:
	case TIO_TYPE_SMALL_BYTES:
	case TIO_TYPE_BYTES:
		if (tio_any_to_bytes(a, &data, &len))
			return pt_raise();
		return PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
	case TIO_TYPE_ERROR:
		return pt_error_to_exception(a->v_obj);
	case TIO_TYPE_ARRAY:
		return pt_array_to_list(a->v_obj);
	case TIO_TYPE_MAP:
		return pt_map_to_dict(a->v_obj);
	case TIO_TYPE_SHAPE:
		return pt_int_tuple(tio_shape_data(a->v_obj), (int)tio_shape_ndim(a->v_obj));
	case TIO_TYPE_DLTENSOR_PTR:
		PyErr_SetString(PyExc_TypeError,
				"a DLTensor pointer (a view valid only during a C call) "
				"cannot become a Python object; pass a Tensor object");
		return NULL;
	}
	if (tio_any_is_object(a)) {
		tio_object_incref(a->v_obj);
		return pt_wrap(a->v_obj);
	}
	PyErr_Format(PyExc_TypeError, "cannot convert an FFI %s to Python",
		     tio_any_type_name(a));
	return NULL;
}

/**
 * pt_from_any() - a Python object for an owned value, which is consumed
 * @a: the value; None afterwards
 *
 * Return: a new reference, or NULL with a Python error set.
 */
PyObject *pt_from_any(tio_any_t *a)
{
	PyObject *r;

	switch (a->type_index) {
	case TIO_TYPE_NONE:
		Py_RETURN_NONE;
	case TIO_TYPE_INT:
		return PyLong_FromLongLong(a->v_int64);
	case TIO_TYPE_FUNCTION:
	case TIO_TYPE_TENSOR:
	case TIO_TYPE_MODULE:
		r = pt_wrap(a->v_obj);	/* the reference moves */
		*a = tio_any_none();
		return r;
	}
	if (a->type_index >= TIO_TYPE_DYN_OBJECT_BEGIN) {
		r = pt_wrap(a->v_obj);
		*a = tio_any_none();
		return r;
	}
	r = pt_from_view(a);
	tio_any_decref(a);
	return r;
}
