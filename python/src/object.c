// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tensorio.Object (any library object, its reflected fields as
 * attributes), tensorio.Function (vectorcall into the FFI), Python
 * callables as FFI Functions, tensorio.Module and the global registry.
 */
#include "ext.h"

#include <stddef.h>
#include <string.h>

/* Objects */

static void pt_object_dealloc(PyObject *self)
{
	tio_object_t *o = PT_OBJ(self);

	PT_OBJ(self) = NULL;
	tio_object_decref(o);
	Py_TYPE(self)->tp_free(self);
}

static const char *pt_type_key(const tio_object_t *o)
{
	const tio_type_info_t *ti = tio_type_info(o->type_index);

	return ti && ti->type_key ? ti->type_key : "?";
}

static PyObject *pt_object_repr(PyObject *self)
{
	return PyUnicode_FromFormat("<%s %s at %p>", Py_TYPE(self)->tp_name,
				    pt_type_key(PT_OBJ(self)), (void *)PT_OBJ(self));
}

/* A reflected method bound to @self: a Function taking self first. */
static PyObject *pt_bound_method(PyObject *self, const tio_method_info_t *m)
{
	PyObject *f, *partial, *functools;

	tio_object_incref(m->func);
	f = pt_function_new(m->func, 0);
	if (!f || (m->flags & TIO_METHOD_STATIC))
		return f;
	functools = PyImport_ImportModule("functools");
	partial = functools ? PyObject_CallMethod(functools, "partial", "OO", f, self) : NULL;
	Py_XDECREF(functools);
	Py_DECREF(f);
	return partial;
}

/* Attributes: Python's first, then the object's reflected fields and methods. */
static PyObject *pt_object_getattro(PyObject *self, PyObject *name)
{
	PyObject *r = PyObject_GenericGetAttr(self, name);
	const tio_field_info_t *fi;
	const tio_method_info_t *mi;
	const char *n;
	tio_any_t v;

	if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
		return r;
	n = PyUnicode_AsUTF8(name);
	/* dunder lookups (copy, pickle probes) never reach reflection */
	if (!n || (n[0] == '_' && n[1] == '_'))
		return NULL;
	fi = tio_type_find_field(PT_OBJ(self)->type_index, n);
	if (fi) {
		PyErr_Clear();
		if (tio_object_get_field(PT_OBJ(self), n, &v))
			return pt_raise();
		return pt_from_any(&v);
	}
	mi = tio_type_find_method(PT_OBJ(self)->type_index, n);
	if (mi && mi->func) {
		PyErr_Clear();
		return pt_bound_method(self, mi);
	}
	return NULL;
}

static int pt_object_setattro(PyObject *self, PyObject *name, PyObject *value)
{
	const char *n = PyUnicode_AsUTF8(name);
	tio_byte_array_t bytes;
	tio_any_t v;
	int owned, rc;

	if (!n)
		return -1;
	if (!tio_type_find_field(PT_OBJ(self)->type_index, n))
		return PyObject_GenericSetAttr(self, name, value);
	if (!value) {
		PyErr_Format(PyExc_AttributeError, "cannot delete field %s", n);
		return -1;
	}
	if (pt_to_any(value, &v, &owned, &bytes))
		return -1;
	rc = tio_object_set_field(PT_OBJ(self), n, &v);
	if (owned)
		tio_any_decref(&v);
	if (rc) {
		pt_raise();
		return -1;
	}
	return 0;
}

static PyObject *pt_object_dir_fields(PyObject *self, PyObject *unused)
{
	const tio_type_info_t *ti = tio_type_info(PT_OBJ(self)->type_index);
	PyObject *l = PyList_New(0), *s;
	int32_t i, d;

	(void)unused;
	/* This type's and its ancestors' fields and methods. */
	for (d = ti ? ti->type_depth : -1; l && ti && d >= 0; d--) {
		const tio_type_info_t *t = d == ti->type_depth ? ti :
					   tio_type_info(ti->ancestors[d]);

		for (i = 0; t && i < t->num_fields; i++) {
			s = PyUnicode_FromString(t->fields[i].name);
			if (!s || PyList_Append(l, s))
				Py_CLEAR(l);
			Py_XDECREF(s);
			if (!l)
				return NULL;
		}
		for (i = 0; t && i < t->num_methods; i++) {
			s = PyUnicode_FromString(t->methods[i].name);
			if (!s || PyList_Append(l, s))
				Py_CLEAR(l);
			Py_XDECREF(s);
			if (!l)
				return NULL;
		}
	}
	return l;
}

static PyObject *pt_object_type_key(PyObject *self, void *unused)
{
	(void)unused;
	return PyUnicode_FromString(pt_type_key(PT_OBJ(self)));
}

static PyObject *pt_object_address(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromVoidPtr(PT_OBJ(self));
}

static PyObject *pt_object_use_count(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(tio_object_strong_count(PT_OBJ(self)));
}

/* Two wrappers of the same library object are equal. */
static PyObject *pt_object_richcompare(PyObject *a, PyObject *b, int op)
{
	int eq;

	if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &pt_object_type))
		Py_RETURN_NOTIMPLEMENTED;
	eq = PT_OBJ(a) == PT_OBJ(b);
	return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t pt_object_hash(PyObject *self)
{
	return _Py_HashPointer(PT_OBJ(self));
}

static PyObject *pt_object_new_refuse(PyTypeObject *tp, PyObject *a, PyObject *k)
{
	(void)a; (void)k;
	PyErr_Format(PyExc_TypeError, "%s objects come from tensorio functions, "
		     "not from the constructor", tp->tp_name);
	return NULL;
}

static PyMethodDef pt_object_methods[] = {
	{ "_fields", pt_object_dir_fields, METH_NOARGS,
	  "names of the reflected fields and methods" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pt_object_getset[] = {
	{ "type_key", pt_object_type_key, NULL, "the FFI type key", NULL },
	{ "_address", pt_object_address, NULL, "the object's address", NULL },
	{ "_use_count", pt_object_use_count, NULL, "strong references to the object", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pt_object_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Object",
	.tp_doc = "A libtensorio FFI object; reflected fields are attributes.",
	.tp_basicsize = sizeof(pt_object),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_new = pt_object_new_refuse,
	.tp_dealloc = pt_object_dealloc,
	.tp_repr = pt_object_repr,
	.tp_getattro = pt_object_getattro,
	.tp_setattro = pt_object_setattro,
	.tp_richcompare = pt_object_richcompare,
	.tp_hash = pt_object_hash,
	.tp_methods = pt_object_methods,
	.tp_getset = pt_object_getset,
};

/* Functions */

static PyObject *pt_function_vectorcall(PyObject *self, PyObject *const *args,
					size_t nargsf, PyObject *kwnames)
{
	pt_function *f = (pt_function *)self;
	Py_ssize_t n = PyVectorcall_NARGS(nargsf);
	tio_any_t ret = tio_any_none(), one;
	struct pt_args a;
	int rc, owned;

	if (kwnames && PyTuple_GET_SIZE(kwnames)) {
		PyErr_SetString(PyExc_TypeError, "FFI functions take no keyword arguments");
		return NULL;
	}
	/* The common small cases without the argument vector. */
	if (n == 0 && !f->release_gil) {
		rc = tio_func_call_any(f->obj, NULL, 0, &ret);
		return rc ? pt_raise() : pt_from_any(&ret);
	}
	if (n == 1 && !f->release_gil) {
		tio_byte_array_t b;

		if (pt_to_any(args[0], &one, &owned, &b))
			return NULL;
		rc = tio_func_call_any(f->obj, &one, 1, &ret);
		if (owned)
			tio_any_decref(&one);
		return rc ? pt_raise() : pt_from_any(&ret);
	}
	if (pt_args_init(&a, args, n)) {
		pt_args_release(&a);
		return NULL;
	}
	if (f->release_gil) {
		Py_BEGIN_ALLOW_THREADS
		rc = tio_func_call_any(f->obj, a.v, (int32_t)n, &ret);
		Py_END_ALLOW_THREADS
	} else {
		rc = tio_func_call_any(f->obj, a.v, (int32_t)n, &ret);
	}
	pt_args_release(&a);
	return rc ? pt_raise() : pt_from_any(&ret);
}

/**
 * pt_function_new() - wrap a Function
 * @fobj: the Function; its reference is handed over (released on failure)
 * @release_gil: drop the GIL around calls (functions that may block)
 *
 * Return: a new reference, or NULL with a Python error set.
 */
PyObject *pt_function_new(tio_object_t *fobj, int release_gil)
{
	pt_function *f = PyObject_New(pt_function, &pt_function_type);

	if (!f) {
		tio_object_decref(fobj);
		return NULL;
	}
	f->obj = fobj;
	f->vectorcall = pt_function_vectorcall;
	f->release_gil = release_gil;
	return (PyObject *)f;
}

static PyObject *pt_function_get_release_gil(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(((pt_function *)self)->release_gil);
}

static int pt_function_set_release_gil(PyObject *self, PyObject *v, void *unused)
{
	int b = v ? PyObject_IsTrue(v) : -1;

	(void)unused;
	if (b < 0) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "release_gil cannot be deleted");
		return -1;
	}
	((pt_function *)self)->release_gil = b;
	return 0;
}

static PyGetSetDef pt_function_getset[] = {
	{ "release_gil", pt_function_get_release_gil, pt_function_set_release_gil,
	  "whether calls drop the GIL (set for functions that block)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pt_function_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Function",
	.tp_doc = "An FFI function; call it like any Python function.",
	.tp_basicsize = sizeof(pt_function),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
	.tp_base = &pt_object_type,
	.tp_vectorcall_offset = offsetof(pt_function, vectorcall),
	.tp_call = PyVectorcall_Call,
	.tp_new = pt_object_new_refuse,
	.tp_getset = pt_function_getset,
};

/* Python callables as FFI Functions. */

static int pt_py_call(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	PyObject *stack[PT_ARGS_STACK], **argv = stack, *r = NULL;
	PyGILState_STATE g;
	int32_t i, made = 0;
	int rc = -1;

	if (!Py_IsInitialized())
		return tio_error_raise("RuntimeError", "the Python interpreter has exited");
	g = PyGILState_Ensure();
	if (nargs > PT_ARGS_STACK) {
		argv = PyMem_Malloc((size_t)nargs * sizeof(*argv));
		if (!argv) {
			PyErr_NoMemory();
			goto out;
		}
	}
	for (; made < nargs; made++) {
		argv[made] = pt_from_view(&args[made]);
		if (!argv[made])
			goto out;
	}
	r = PyObject_Vectorcall((PyObject *)self, argv, (size_t)nargs, NULL);
	if (r && !pt_to_any_owned(r, ret))
		rc = 0;
out:
	for (i = 0; i < made; i++)
		Py_DECREF(argv[i]);
	if (argv != stack)
		PyMem_Free(argv);
	Py_XDECREF(r);
	if (rc)
		pt_error_from_python();
	PyGILState_Release(g);
	return rc;
}

static void pt_py_release(void *self)
{
	PyGILState_STATE g;

	if (!Py_IsInitialized())
		return;		/* at exit: the interpreter already freed it */
	g = PyGILState_Ensure();
	Py_DECREF((PyObject *)self);
	PyGILState_Release(g);
}

/**
 * pt_function_from_callable() - a Python callable as an FFI Function
 * @callable: the callable (a new reference is taken)
 * @out: the Function (owned)
 *
 * Return: 0, or -1 with a Python error set.
 */
int pt_function_from_callable(PyObject *callable, tio_object_t **out)
{
	if (PyObject_TypeCheck(callable, &pt_function_type)) {
		*out = PT_OBJ(callable);
		tio_object_incref(*out);
		return 0;
	}
	if (!PyCallable_Check(callable)) {
		PyErr_Format(PyExc_TypeError, "expected a callable, got %.100s",
			     Py_TYPE(callable)->tp_name);
		return -1;
	}
	Py_INCREF(callable);
	if (tio_func_new(pt_py_call, callable, pt_py_release, out)) {
		Py_DECREF(callable);
		pt_raise();
		return -1;
	}
	return 0;
}

/* The registry */

/* Driver operations block (waits) or enter the kernel: drop the GIL. */
static int pt_name_blocks(const char *name)
{
	return !strncmp(name, "tio.buffer.", 11) || !strncmp(name, "tio.stream.", 11) ||
	       !strncmp(name, "tio.fence.", 10) ||
	       !strncmp(name, "tio.driver.", 11);
}

static PyObject *pt_get_global_func(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "allow_missing", NULL };
	const char *name;
	int allow_missing = 0;
	tio_object_t *f;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p", kwlist, &name, &allow_missing))
		return NULL;
	if (tio_func_get_global(name, &f))
		return pt_raise();
	if (!f) {
		if (allow_missing)
			Py_RETURN_NONE;
		PyErr_Format(PyExc_KeyError, "no global function named '%s'", name);
		return NULL;
	}
	return pt_function_new(f, pt_name_blocks(name));
}

static PyObject *pt_register_func(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "func", "override", NULL };
	PyObject *callable;
	const char *name;
	int override = 0, rc;
	tio_object_t *f;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|p", kwlist, &name, &callable,
					 &override))
		return NULL;
	if (pt_function_from_callable(callable, &f))
		return NULL;
	rc = tio_func_set_global(name, f, override);
	tio_object_decref(f);
	if (rc)
		return pt_raise();
	Py_INCREF(callable);
	return callable;
}

static PyObject *pt_remove_global_func(PyObject *m, PyObject *arg)
{
	const char *name = PyUnicode_AsUTF8(arg);

	(void)m;
	if (!name)
		return NULL;
	if (tio_func_remove_global(name))
		return pt_raise();
	Py_RETURN_NONE;
}

static PyObject *pt_list_global_funcs(PyObject *m, PyObject *unused)
{
	tio_any_t names;

	(void)m; (void)unused;
	if (tio_func_list_globals(&names))
		return pt_raise();
	return pt_from_any(&names);
}

/* Modules */

static PyObject *pt_load_module(PyObject *m, PyObject *arg)
{
	PyObject *bytes;
	tio_object_t *mod;
	int rc;

	(void)m;
	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = tio_module_load(PyBytes_AS_STRING(bytes), &mod);
	Py_END_ALLOW_THREADS
	Py_DECREF(bytes);
	if (rc)
		return pt_raise();
	return pt_wrap(mod);
}

/* As TVM FFI's system_lib(symbol_prefix=""): one Module per prefix. */
static PyObject *pt_system_lib(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "symbol_prefix", NULL };
	const char *prefix = "";
	tio_object_t *mod;

	(void)m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|s:system_lib", kwlist, &prefix))
		return NULL;
	if (tio_module_system_lib_prefixed(prefix, &mod))
		return pt_raise();
	return pt_wrap(mod);
}

/* module[name]: the Function, or NULL with nothing set when absent. */
static PyObject *pt_module_lookup(PyObject *self, PyObject *key)
{
	const char *name;
	tio_object_t *f;

	if (!PyUnicode_Check(key)) {
		PyErr_Format(PyExc_TypeError, "function names are str, not %.100s",
			     Py_TYPE(key)->tp_name);
		return NULL;
	}
	name = PyUnicode_AsUTF8(key);
	if (!name)
		return NULL;
	if (tio_module_get_function(PT_OBJ(self), name, &f))
		return pt_raise();
	return f ? pt_function_new(f, 0) : NULL;
}

static PyObject *pt_module_getitem(PyObject *self, PyObject *key)
{
	PyObject *r = pt_module_lookup(self, key);

	if (!r && !PyErr_Occurred())
		PyErr_Format(PyExc_KeyError, "module has no function %R", key);
	return r;
}

static PyObject *pt_module_getattro(PyObject *self, PyObject *name)
{
	PyObject *r = pt_object_getattro(self, name);

	if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
		return r;
	PyErr_Clear();
	r = pt_module_lookup(self, name);
	if (!r && !PyErr_Occurred())
		PyErr_Format(PyExc_AttributeError, "module has no function %R", name);
	return r;
}

static int pt_module_contains(PyObject *self, PyObject *key)
{
	const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;

	if (!name)
		return PyErr_Occurred() ? -1 : 0;
	return tio_module_implements_function(PT_OBJ(self), name);
}

static PyObject *pt_module_functions(PyObject *self, PyObject *unused)
{
	tio_any_t names;

	(void)unused;
	if (tio_module_list_functions(PT_OBJ(self), &names))
		return pt_raise();
	return pt_from_any(&names);
}

static PyMappingMethods pt_module_mapping = {
	.mp_subscript = pt_module_getitem,
};

static PySequenceMethods pt_module_sequence = {
	.sq_contains = pt_module_contains,
};

static PyMethodDef pt_module_methods[] = {
	{ "functions", pt_module_functions, METH_NOARGS,
	  "the names of the module's functions, sorted" },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pt_module_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tensorio.Module",
	.tp_doc = "A loaded module: module['name'] or module.name is a Function.",
	.tp_basicsize = sizeof(pt_object),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_base = &pt_object_type,
	.tp_new = pt_object_new_refuse,
	.tp_getattro = pt_module_getattro,
	.tp_as_mapping = &pt_module_mapping,
	.tp_as_sequence = &pt_module_sequence,
	.tp_methods = pt_module_methods,
};

static PyObject *pt_live_objects(PyObject *m, PyObject *unused)
{
	(void)m; (void)unused;
	return PyLong_FromLongLong(tio_debug_live_objects());
}

PyMethodDef pt_object_functions[] = {
	{ "get_global_func", (PyCFunction)(void (*)(void))pt_get_global_func,
	  METH_VARARGS | METH_KEYWORDS,
	  "get_global_func(name, allow_missing=False): the global FFI function" },
	{ "_register_func", (PyCFunction)(void (*)(void))pt_register_func,
	  METH_VARARGS | METH_KEYWORDS,
	  "_register_func(name, func, override=False): register a global function" },
	{ "remove_global_func", pt_remove_global_func, METH_O,
	  "remove_global_func(name): unregister a global function" },
	{ "list_global_funcs", pt_list_global_funcs, METH_NOARGS,
	  "the names of every global function, sorted" },
	{ "load_module", pt_load_module, METH_O,
	  "load_module(path): load a shared object exporting FFI functions" },
	{ "system_lib", (PyCFunction)(void (*)(void))pt_system_lib,
	  METH_VARARGS | METH_KEYWORDS,
	  "system_lib(symbol_prefix=''): the process' system library of that prefix;\n"
	  "its function NAME is __tvm_ffi_<prefix>NAME, else __tvm_ffi_NAME" },
	{ "_live_objects", pt_live_objects, METH_NOARGS,
	  "libtensorio objects allocated and not freed (leak checks)" },
	{ NULL, NULL, 0, NULL },
};

int pt_object_types_ready(PyObject *m)
{
	if (PyType_Ready(&pt_object_type) || PyType_Ready(&pt_function_type) ||
	    PyType_Ready(&pt_module_type))
		return -1;
	if (PyModule_AddObjectRef(m, "Object", (PyObject *)&pt_object_type) ||
	    PyModule_AddObjectRef(m, "Function", (PyObject *)&pt_function_type) ||
	    PyModule_AddObjectRef(m, "Module", (PyObject *)&pt_module_type))
		return -1;
	return 0;
}
