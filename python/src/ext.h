/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tensorio CPython extension: shared declarations.
 *
 * The extension calls libtensorio directly; dev.c holds the few steps
 * that take more than one library call.
 */
#ifndef TENSORIO_PY_EXT_H
#define TENSORIO_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include <tensorio/ffi.h>

/*
 * The pending exception as (type, value, traceback), normalized, and
 * cleared. Python 3.12 deprecates PyErr_Fetch() for one exception object.
 */
static inline void pt_err_fetch(PyObject **type, PyObject **value, PyObject **tb)
{
#if PY_VERSION_HEX >= 0x030C0000
	PyObject *e = PyErr_GetRaisedException();

	*value = e;
	*type = e ? Py_NewRef((PyObject *)Py_TYPE(e)) : NULL;
	*tb = e ? PyException_GetTraceback(e) : NULL;
#else
	PyErr_Fetch(type, value, tb);
	PyErr_NormalizeException(type, value, tb);
#endif
}

/* Python types (module.c and the files named). */
extern PyTypeObject pt_object_type;	/* object.c: tensorio.Object */
extern PyTypeObject pt_function_type;	/* object.c: tensorio.Function */
extern PyTypeObject pt_module_type;	/* object.c: tensorio.Module */
extern PyTypeObject pt_tensor_type;	/* tensor.c: tensorio.Tensor */
extern PyTypeObject pt_buffer_type;	/* buffer.c: tensorio.Buffer */
extern PyTypeObject pt_stream_type;	/* stream.c: tensorio.Stream */
extern PyTypeObject pt_batch_type;	/* batch.c: tensorio.Batch */
extern PyTypeObject pt_result_type;	/* batch.c: tensorio.BatchResult */

/*
 * Every wrapper of a library object: tensorio.Object and its subclasses.
 * @obj: one strong reference, owned.
 */
typedef struct {
	PyObject_HEAD
	tio_object_t *obj;
} pt_object;

/* tensorio.Function: a callable with vectorcall. */
typedef struct {
	PyObject_HEAD
	tio_object_t *obj;
	vectorcallfunc vectorcall;
	int release_gil;	/* drop the GIL around the call (driver calls) */
} pt_function;

#define PT_OBJ(o) (((pt_object *)(o))->obj)

/* A tensorio.Tensor's DLTensor. */
static inline DLTensor *pt_dl(PyObject *self)
{
	return tio_tensor_dl(PT_OBJ(self));
}

/* DLPack capsule names (tensor.c exports, dlpack.c imports). */
#define PT_CAP_LEGACY "dltensor"
#define PT_CAP_LEGACY_USED "used_dltensor"
#define PT_CAP_VERSIONED "dltensor_versioned"
#define PT_CAP_VERSIONED_USED "used_dltensor_versioned"

/* Tensors have at most this many dimensions through the Python API. */
#define PT_MAX_NDIM 64

/* error.c: errors both ways. */
PyObject *pt_raise(void);
PyObject *pt_raise_error(tio_object_t *err);
int pt_error_from_python(void);
PyObject *pt_error_to_exception(tio_object_t *err);

/* convert.c: values both ways. */
#define PT_ARGS_STACK 8
struct pt_args {
	tio_any_t *v;			/* the values, views or owned */
	unsigned char *owned;		/* v[i] holds a reference to release */
	tio_byte_array_t *bytes;	/* storage for ByteArrayPtr views */
	Py_ssize_t n;
	tio_any_t v_stack[PT_ARGS_STACK];
	unsigned char owned_stack[PT_ARGS_STACK];
	tio_byte_array_t bytes_stack[PT_ARGS_STACK];
};
int pt_args_init(struct pt_args *a, PyObject *const *objs, Py_ssize_t n);
void pt_args_release(struct pt_args *a);
int pt_to_any(PyObject *o, tio_any_t *out, int *owned, tio_byte_array_t *bytes);
int pt_to_any_owned(PyObject *o, tio_any_t *out);
PyObject *pt_from_any(tio_any_t *a);
PyObject *pt_from_view(const tio_any_t *a);
PyObject *pt_wrap(tio_object_t *obj);
PyObject *pt_int_tuple(const int64_t *v, int n);
int pt_function_from_callable(PyObject *callable, tio_object_t **out);
int pt_type_init(void);
int32_t pt_buffer_type_index(void);
int32_t pt_stream_type_index(void);

/* object.c */
PyObject *pt_function_new(tio_object_t *f, int release_gil);
int pt_object_types_ready(PyObject *m);
extern PyMethodDef pt_object_functions[];

/* tensor.c */
PyObject *pt_tensor_new(tio_object_t *t);
int pt_tensor_types_ready(PyObject *m);
int pt_dtype_parse(PyObject *o, DLDataType *out);
PyObject *pt_dtype_str(DLDataType dt);
int pt_shape_parse(PyObject *o, int64_t *shape, int *ndim, int max);
extern PyMethodDef pt_tensor_functions[];

/* dlpack.c */
int pt_tensor_from_object(PyObject *o, int require_contiguous, tio_object_t **out);
int pt_tensor_arg(PyObject *o, tio_object_t **out);
extern PyMethodDef pt_dlpack_functions[];

/* buffer.c */
int pt_buffer_types_ready(PyObject *m);
extern PyMethodDef pt_buffer_functions[];

/* stream.c */
int pt_stream_types_ready(PyObject *m);

/* context.c: the backend and its limits */
extern PyMethodDef pt_context_functions[];

/* batch.c */
int pt_batch_types_ready(PyObject *m);

/* io.c */
extern PyMethodDef pt_io_functions[];
/* A progress callable of a load or save, and what it raised. */
struct pt_progress {
	PyObject *func;
	PyObject *exc[3];	/* type, value, traceback */
};
int pt_on_progress(void *arg, uint64_t done, uint64_t total);

/* save.c */
extern PyMethodDef pt_save_functions[];
int pt_save_types_ready(PyObject *m);

/* dev.c: the device half of libtensorio, the only file calling it. */
#include "dev.h"

#endif /* TENSORIO_PY_EXT_H */
