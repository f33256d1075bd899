/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the FFI unit tests.
 */
#ifndef TIO_FFI_TEST_H
#define TIO_FFI_TEST_H

#include <tensorio/ffi.h>

/* Every test ends with nothing leaked and no error left raised. */
#define ASSERT_NO_LEAKS() do {						\
	tio_error_clear();						\
	ASSERT_EQ(0, tio_debug_live_objects());				\
} while (0)

/* The raised error's kind, message; the error is then cleared. */
#define ASSERT_RAISED(kind, msg_part) do {				\
	tio_object_t *e_ = tio_error_move_from_raised();		\
	ASSERT_NE(NULL, e_);						\
	EXPECT_STREQ(kind, tio_error_kind(e_));				\
	EXPECT_NE(NULL, strstr(tio_error_message(e_), msg_part))	\
		TH_LOG("message: %s", tio_error_message(e_));		\
	tio_object_decref(e_);						\
} while (0)

#endif /* TIO_FFI_TEST_H */
