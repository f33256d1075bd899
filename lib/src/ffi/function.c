// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Function objects.
 *
 * The TVM FFI cell's safe_call is a trampoline that finds the callback and
 * its self in the object, so other TVM-FFI-compatible code can call our
 * Functions; tio_func_call() skips it and calls the callback directly.
 */
#include "ffi/ffi_internal.h"

static int trampoline(void *handle, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	const tio_func_obj_t *f = handle;

	return f->call(f->self, args, nargs, ret);
}

static void func_deleter(void *self, int flags)
{
	tio_func_obj_t *f = self;

	if (flags & TIO_DELETER_STRONG) {
		if (f->self_deleter)
			f->self_deleter(f->self);
		tio_object_decref(f->owner);
		f->owner = NULL;
	}
	if (flags & TIO_DELETER_WEAK)
		tio__obj_free(f);
}

static void fill(tio_func_obj_t *f, tio_safe_call_t call, void *self,
		 void (*self_deleter)(void *), tio_object_t *owner)
{
	f->safe_call = trampoline;
	f->cpp_call = NULL;
	f->call = call;
	f->self = self;
	f->self_deleter = self_deleter;
	f->owner = owner;
}

int tio_func_new(tio_safe_call_t call, void *self, void (*self_deleter)(void *self),
		 tio_object_t **out)
{
	tio_func_obj_t *f;

	if (!call || !out)
		return tio_error_raise("ValueError", "callback and output must be given");
	f = tio__obj_new(sizeof(*f), TIO_TYPE_FUNCTION, func_deleter);
	if (!f)
		return tio__oom();
	fill(f, call, self, self_deleter, NULL);
	*out = &f->header;
	return 0;
}

int tio__func_new_owned(tio_safe_call_t call, tio_object_t *owner, tio_object_t **out)
{
	tio_func_obj_t *f = tio__obj_new(sizeof(*f), TIO_TYPE_FUNCTION, func_deleter);

	if (!f)
		return tio__oom();
	tio_object_incref(owner);
	fill(f, call, NULL, NULL, owner);
	*out = &f->header;
	return 0;
}

static void permanent_deleter(void *self, int flags)
{
	(void)self;
	(void)flags;
}

int tio__func_new_permanent(tio_safe_call_t call, void *self, tio_object_t **out)
{
	tio_func_obj_t *f = malloc(sizeof(*f));

	if (!f)
		return tio__oom();
	tio_object_init(&f->header, TIO_TYPE_FUNCTION, permanent_deleter);
	f->header.combined_ref_count = UINT64_C(1) << 30;
	fill(f, call, self, NULL, NULL);
	*out = &f->header;
	return 0;
}

int tio_func_call_any(tio_object_t *func, const tio_any_t *args, int32_t nargs,
		      tio_any_t *ret)
{
	const tio_func_obj_t *f = (const tio_func_obj_t *)func;
	tio_any_t a;

	*ret = tio_any_none();
	if (!func || func->type_index != TIO_TYPE_FUNCTION) {
		a = tio_any_object(func);
		return tio_any_type_error(&a, "ffi.Function");
	}
	if (nargs < 0 || (nargs && !args))
		return tio_error_raise("ValueError", "bad arguments (%d)", nargs);
	return f->safe_call(func, args, nargs, ret);
}
