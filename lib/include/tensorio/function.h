/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Functions: objects wrapping a C callback with the safe-call convention,
 * calling them, and the process-wide registry of global functions.
 *
 * The calling convention (TVM FFI C ABI):
 *   int fn(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
 * args are views (borrowed for the call); ret is None on entry and owned by
 * the caller afterwards; 0 on success, -1 with an error raised in the
 * calling thread (tensorio/error.h).
 *
 * Layer: ffi (lib/src/ffi/, the FFI core)
 */
#ifndef TENSORIO_FUNCTION_H
#define TENSORIO_FUNCTION_H

#include <stdint.h>

#include <tensorio/any.h>
#include <tensorio/object.h>
#include <tensorio/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The safe-call convention. */
typedef int (*tio_safe_call_t)(void *self, const tio_any_t *args,
			       int32_t nargs, tio_any_t *ret);

/**
 * struct tio_func_obj - a Function object as this library lays it out
 * @header: the object header (type TIO_TYPE_FUNCTION)
 * @safe_call: the TVM FFI cell: called with the Function object itself as
 *	its first argument (what other TVM-FFI-compatible code calls)
 * @cpp_call: the TVM FFI cell: always NULL here
 * @call: the callback, called with @self (what tio_func_call() calls)
 * @self: the callback's context
 * @self_deleter: called with @self when the Function goes, or NULL
 * @owner: an object kept alive as long as the Function (e.g. its module)
 */
typedef struct tio_func_obj {
	tio_object_t header;
	tio_safe_call_t safe_call;
	void *cpp_call;
	tio_safe_call_t call;
	void *self;
	void (*self_deleter)(void *self);
	tio_object_t *owner;
} tio_func_obj_t;

/**
 * tio_func_new() - wrap a C callback in a Function
 * @call: the callback
 * @self: its context, passed as its first argument
 * @self_deleter: called once with @self when the Function is destroyed, or NULL
 * @out: the new Function (owned by the caller)
 *
 * On failure @self_deleter is not called: @self stays the caller's.
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_func_new(tio_safe_call_t call, void *self,
			 void (*self_deleter)(void *self), tio_object_t **out);

/**
 * tio_func_call() - call a Function made by this library
 * @func: the Function (TIO_TYPE_FUNCTION; not checked on this fast path)
 * @args: the arguments (views)
 * @nargs: their number
 * @ret: the result; the caller must set it to None first, owns it after
 *
 * Return: 0, or -1 with an error raised.
 */
static inline int tio_func_call(tio_object_t *func, const tio_any_t *args,
				int32_t nargs, tio_any_t *ret)
{
	const tio_func_obj_t *f = (const tio_func_obj_t *)func;

	return f->call(f->self, args, nargs, ret);
}

/**
 * tio_func_call_any() - call any Function, checked
 * @func: a Function, ours or made by other TVM-FFI-compatible code (called
 *	through its cell)
 * @args: the arguments (views)
 * @nargs: their number
 * @ret: the result; set to None here first; owned by the caller after
 *
 * Return: 0, or -1 with an error raised (TypeError if @func is not a
 * Function).
 */
TIO_API int tio_func_call_any(tio_object_t *func, const tio_any_t *args,
			      int32_t nargs, tio_any_t *ret);

/**
 * tio_func_set_global() - register a global function by name
 * @name: the name (any bytes but NUL; "tio.buffer.alloc" style)
 * @func: the Function; the registry takes its own reference
 * @allow_override: replace an existing registration instead of failing
 *
 * Return: 0, or -1 with a KeyError raised (name taken) or another error.
 */
TIO_API int tio_func_set_global(const char *name, tio_object_t *func,
				int allow_override);

/**
 * tio_func_register_global() - register a C callback as a global function
 * that lives as long as the process
 * @name: the name
 * @call: the callback
 * @self: its context (never decref'd)
 * @allow_override: replace an existing registration instead of failing
 *
 * For code that registers its functions once, at load time (library
 * constructors, drivers): the Function is not counted by
 * tio_debug_live_objects() and is never freed, even when later removed
 * or overridden.
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_func_register_global(const char *name, tio_safe_call_t call, void *self,
				     int allow_override);

/**
 * tio_func_get_global() - look a global function up by name
 * @name: the name
 * @out: the Function (a new reference, owned by the caller), or NULL when
 *	no function has that name
 *
 * Lock-free on the read path. Keep the returned reference to call it again
 * rather than looking it up every time: a held Function is the cached
 * handle, calling it never touches the registry. Repeated lookups of the
 * same name in one thread are served from a per-thread cache that is
 * invalidated by any registry change.
 *
 * Return: 0 (found or not), or -1 with an error raised (NULL name).
 */
TIO_API int tio_func_get_global(const char *name, tio_object_t **out);

/**
 * tio_func_get_global_n() - look a global function up by a counted name
 * @name: the name's bytes (need not be NUL-terminated)
 * @len: their number
 * @out: as tio_func_get_global()
 *
 * tio_func_get_global() without the strlen(), for callers holding a
 * pointer and a length (the TVM FFI byte arrays). A name holding a NUL
 * byte matches nothing.
 *
 * Return: 0 (found or not), or -1 with an error raised.
 */
TIO_API int tio_func_get_global_n(const char *name, size_t len, tio_object_t **out);

/**
 * tio_func_remove_global() - unregister a global function
 * @name: the name
 *
 * Return: 0, or -1 with a KeyError raised when no function has that name.
 */
TIO_API int tio_func_remove_global(const char *name);

/**
 * tio_func_list_globals() - the names of all global functions
 * @out: an Array of Strings, sorted (owned by the caller)
 *
 * Return: 0, or -1 with an error raised.
 */
TIO_API int tio_func_list_globals(tio_any_t *out);

/**
 * tio_func_call_global() - look up and call a global function
 * @name: its name
 * @args: the arguments (views)
 * @nargs: their number
 * @ret: the result (set to None first; owned by the caller after)
 *
 * Return: 0, or -1 with an error raised (KeyError when not registered).
 */
TIO_API int tio_func_call_global(const char *name, const tio_any_t *args,
				 int32_t nargs, tio_any_t *ret);

#ifdef __cplusplus
}
#endif

#endif /* TENSORIO_FUNCTION_H */
