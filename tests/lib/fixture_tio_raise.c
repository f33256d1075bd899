// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A module built with tensorio (its headers, linked with -ltensorio) that
 * raises with tio_error_raise(): what a TVM FFI runtime loads and calls
 * when a program on TVM FFI uses a tensorio-built module.
 */
#include <tensorio/ffi.h>

/* fail(x): a ValueError naming x. */
__attribute__((noinline)) static int fixture_fail(void *self, const tio_any_t *args,
						  int32_t nargs, tio_any_t *ret)
{
	int64_t x = 0;

	(void)self, (void)ret;
	if (nargs != 1 || tio_any_to_int(&args[0], &x))
		return -1;
	return tio_error_raise("ValueError", "tio module says no to %lld", (long long)x);
}

/* chain(): a KeyError caused by an IndexError. */
static int fixture_chain(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	(void)self, (void)args, (void)nargs, (void)ret;
	tio_error_raise("IndexError", "deep down");
	return tio_error_raise_chained("KeyError", "no 'k'");
}

/* twice(x) -> 2x */
static int fixture_twice(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	int64_t x;

	(void)self;
	if (nargs != 1 || tio_any_to_int(&args[0], &x))
		return -1;
	*ret = tio_any_int(2 * x);
	return 0;
}

/* call(f, ...) -> f(...): a failure of f passes through unchanged. */
static int fixture_call(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	tio_object_t *f;

	(void)self;
	if (nargs < 1)
		return tio_error_raise("TypeError", "call(f, ...) takes a Function");
	if (tio_any_to_object(&args[0], TIO_TYPE_FUNCTION, &f))
		return -1;
	return tio_func_call_any(f, args + 1, nargs - 1, ret);
}

TIO_EXPORT_ABI_VERSION();
TIO_EXPORT_FUNC(fail, fixture_fail)
TIO_EXPORT_FUNC(chain, fixture_chain)
TIO_EXPORT_FUNC(twice, fixture_twice)
TIO_EXPORT_FUNC(call, fixture_call)
