// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Errors both ways. A libtensorio Error becomes the Python exception of
 * its kind (a builtin of that name; OSError and its subclasses with the
 * errno of the failed device call), its message the exception's, its C
 * backtrace a note. A Python exception raised in a registered function
 * becomes an Error of the nearest builtin kind, with the Python traceback
 * as its backtrace.
 */
#include "ext.h"

#include <errno.h>
#include <string.h>

/* The builtin exception class named @kind, or NULL (borrowed). */
static PyObject *pt_kind_class(const char *kind)
{
	PyObject *builtins = PyEval_GetBuiltins();	/* borrowed */
	PyObject *cls;

	if (!builtins || !kind || !*kind)
		return NULL;
	cls = PyDict_GetItemString(builtins, kind);
	if (!cls || !PyType_Check(cls) ||
	    !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)PyExc_Exception))
		return NULL;
	return cls;
}

static PyObject *pt_new_exception(const char *kind, const char *msg, int err)
{
	PyObject *cls = pt_kind_class(kind);

	/* CancelledError and other kinds Python lacks: OSError with the errno. */
	if (!cls && err)
		cls = PyExc_OSError;
	if (cls && err && PyType_IsSubtype((PyTypeObject *)cls,
					   (PyTypeObject *)PyExc_OSError))
		return PyObject_CallFunction(cls, "is", err, msg);
	if (cls)
		return PyObject_CallFunction(cls, "s", msg);
	return PyObject_CallFunction(PyExc_RuntimeError, "N",
				     PyUnicode_FromFormat("%s: %s", kind ? kind : "Error", msg));
}

static int pt_add_note(PyObject *exc, const char *what, const char *text)
{
	PyObject *r;

	if (!text || !*text)
		return 0;
	r = PyObject_CallMethod(exc, "add_note", "N",
				PyUnicode_FromFormat("%s\n%s", what, text));
	Py_XDECREF(r);
	return r ? 0 : -1;
}

/* One Error as an exception instance (a new reference), with its causes. */
static PyObject *pt_exception_of(tio_object_t *err, int e, int depth)
{
	PyObject *exc, *cause;
	tio_object_t *c;

	exc = pt_new_exception(tio_error_kind(err), tio_error_message(err), e);
	if (!exc)
		return NULL;
	if (pt_add_note(exc, "libtensorio backtrace:", tio_error_backtrace(err))) {
		Py_DECREF(exc);
		return NULL;
	}
	c = tio_error_cause(err);
	if (c && depth < 16) {
		cause = pt_exception_of(c, 0, depth + 1);
		if (!cause) {
			Py_DECREF(exc);
			return NULL;
		}
		PyException_SetCause(exc, cause);	/* steals */
	}
	return exc;
}

/**
 * pt_error_to_exception() - an Error as a Python exception instance
 * @err: the Error (borrowed)
 *
 * Return: a new reference, or NULL with a Python error set.
 */
PyObject *pt_error_to_exception(tio_object_t *err)
{
	return pt_exception_of(err, 0, 0);
}

/**
 * pt_raise_error() - raise @err (borrowed) as a Python exception
 *
 * Return: NULL, always.
 */
PyObject *pt_raise_error(tio_object_t *err)
{
	const char *kind = tio_error_kind(err);
	PyObject *exc;
	int e = 0;

	/* Device calls set the errno; OSError kinds carry it. */
	if (!pt_kind_class(kind) || !strcmp(kind, "OSError") ||
	    !strcmp(kind, "TimeoutError") || !strcmp(kind, "PermissionError"))
		e = tio_errno();
	exc = pt_exception_of(err, e, 0);
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/**
 * pt_raise() - raise the error libtensorio left raised in this thread
 *
 * Return: NULL, always.
 */
PyObject *pt_raise(void)
{
	tio_object_t *err = tio_error_move_from_raised();

	if (!err) {
		PyErr_SetString(PyExc_RuntimeError,
				"libtensorio failed without raising an error");
		return NULL;
	}
	pt_raise_error(err);
	tio_object_decref(err);
	return NULL;
}

/* The name of the nearest builtin class of @tp ("Exception" at worst). */
static const char *pt_builtin_kind(PyTypeObject *tp)
{
	PyObject *mro = tp->tp_mro;
	Py_ssize_t i;

	for (i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
		PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);

		/* builtins: static types without a module prefix */
		if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) && !strchr(t->tp_name, '.'))
			return t->tp_name;
	}
	return "Exception";
}

/* The traceback of @exc as text (a new str), or NULL. */
static PyObject *pt_format_traceback(PyObject *exc)
{
	PyObject *tb_mod, *lines, *empty, *text = NULL;

	tb_mod = PyImport_ImportModule("traceback");
	if (!tb_mod)
		return NULL;
	lines = PyObject_CallMethod(tb_mod, "format_exception", "O", exc);
	Py_DECREF(tb_mod);
	if (!lines)
		return NULL;
	empty = PyUnicode_FromString("");
	if (empty)
		text = PyUnicode_Join(empty, lines);
	Py_XDECREF(empty);
	Py_DECREF(lines);
	return text;
}

/**
 * pt_error_from_python() - turn the pending Python exception into an Error
 * raised in libtensorio (the Python one is cleared)
 *
 * Called with the GIL held. Return: -1, always.
 */
int pt_error_from_python(void)
{
	PyObject *type, *value, *tb, *msg = NULL, *text = NULL, *args;
	const char *kind, *m = "", *t = "";
	tio_object_t *err;

	pt_err_fetch(&type, &value, &tb);
	if (!value)
		return tio_error_raise("RuntimeError", "Python error without a value");
	if (tb)
		PyException_SetTraceback(value, tb);
	kind = pt_builtin_kind(Py_TYPE(value));
	/* KeyError('k') reads "'k'": take a lone str argument as it is. */
	args = PyObject_GetAttrString(value, "args");
	if (args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 &&
	    PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
		msg = Py_NewRef(PyTuple_GET_ITEM(args, 0));
	else
		msg = PyObject_Str(value);
	Py_XDECREF(args);
	if (msg)
		m = PyUnicode_AsUTF8(msg);
	text = pt_format_traceback(value);
	if (text)
		t = PyUnicode_AsUTF8(text);
	PyErr_Clear();
	if (!m)
		m = "";
	if (!t)
		t = "";
	if (tio_error_new(kind, m, t, NULL, &err) == 0) {
		tio_error_set_raised(err);
		tio_object_decref(err);
	} else {
		tio_error_raise("MemoryError", "out of memory converting a Python %s", kind);
	}
	Py_XDECREF(text);
	Py_XDECREF(msg);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	return -1;
}
