/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the FFI unit tests.
 */
#ifndef TIO_FFI_TEST_H
#define TIO_FFI_TEST_H

#include <tensorio/ffi.h>

/*
 * Objects alive when the test program started (registered by library
 * constructors); 0 when everything registered at load time is permanent.
 */
static int64_t ffi_test_baseline;

__attribute__((constructor)) static void ffi_test_baseline_init(void)
{
	ffi_test_baseline = tio_debug_live_objects();
}

/* Every test ends with nothing leaked and no error left raised. */
#define ASSERT_NO_LEAKS() do {						\
	tio_error_clear();						\
	ASSERT_EQ(ffi_test_baseline, tio_debug_live_objects());		\
} while (0)

/* Objects alive now, beyond the baseline. */
#define LIVE() (tio_debug_live_objects() - ffi_test_baseline)

/* The raised error's kind, message; the error is then cleared. */
#define ASSERT_RAISED(kind, msg_part) do {				\
	tio_object_t *e_ = tio_error_move_from_raised();		\
	ASSERT_NE(NULL, e_);						\
	EXPECT_STREQ(kind, tio_error_kind(e_));				\
	EXPECT_NE(NULL, strstr(tio_error_message(e_), msg_part))	\
		TH_LOG("message: %s", tio_error_message(e_));		\
	tio_object_decref(e_);						\
} while (0)

/* Call the module's function @name; -2 when it has none. */
static inline int call_named(tio_object_t *m, const char *name, const tio_any_t *args,
			     int32_t n, tio_any_t *ret)
{
	tio_object_t *f;
	int r;

	*ret = tio_any_none();
	if (tio_module_get_function(m, name, &f) || !f)
		return -2;
	r = tio_func_call(f, args, n, ret);
	tio_object_decref(f);
	return r;
}

#endif /* TIO_FFI_TEST_H */
