// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Error messages name their cause, with the errno and the kind programs
 * test unchanged: descriptor fields, bytes needed against bytes there,
 * sizes above the limit, seqnos never emitted, missing files. On whichever
 * backend runs (user on the host, TIO_BACKEND=kernel in the VM).
 */
#include <stdint.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "dev_test.h"

#include <tensorio/safetensors.h>

/* The raised error: its errno, kind and a part of its message. */
#define ASSERT_CAUSE(err, kind, part) do {				\
	tio_object_t *e_ = tio_error_move_from_raised();		\
	ASSERT_NE(NULL, e_);						\
	EXPECT_EQ(err, tio_errno());					\
	EXPECT_STREQ(kind, tio_error_kind(e_));				\
	EXPECT_NE(NULL, strstr(tio_error_message(e_), part))		\
		TH_LOG("message: %s", tio_error_message(e_));		\
	tio_object_decref(e_);						\
} while (0)

static struct tio_desc u8_desc(int64_t n)
{
	struct tio_desc d;

	memset(&d, 0, sizeof(d));
	d.code = TIO_DTYPE_UINT;
	d.bits = 8;
	d.lanes = 1;
	d.ndim = 1;
	d.shape[0] = n;
	return d;
}

DEV_FIXTURE(msg);

/* One fault each: the field, the value it gets, what the message says. */
enum { F_NDIM, F_BITS, F_LANES, F_CODE, F_EXTENT, F_FLAGS, F_STRIDE };

static const struct {
	int field;
	int64_t value;
	const char *says;
} faults[] = {
	{ F_NDIM, 9, "ndim 9 above the maximum of 8" },
	{ F_BITS, 33, "bits 33" },
	{ F_LANES, 0, "lanes 0" },
	{ F_CODE, 99, "dtype code 99" },
	{ F_EXTENT, -3, "shape[1] = -3 is a negative extent" },
	{ F_FLAGS, 0x40, "unknown descriptor flags 0x40" },
	{ F_STRIDE, 2, "strides[0] set without TIO_DESC_F_STRIDED" },
};

static struct tio_desc spoiled(int field, int64_t v)
{
	struct tio_desc d = u8_desc(16);

	switch (field) {
	case F_NDIM: d.ndim = (uint16_t)v; break;
	case F_BITS: d.bits = (uint8_t)v; break;
	case F_LANES: d.lanes = (uint16_t)v; break;
	case F_CODE: d.code = (uint8_t)v; break;
	case F_EXTENT: d.ndim = 2; d.shape[1] = v; break;
	case F_FLAGS: d.flags = (uint16_t)v; break;
	case F_STRIDE: d.strides[0] = v; break;
	}
	return d;
}

/* Each descriptor fault names the field; all stay EINVAL ValueErrors. */
TEST_F(msg, set_desc_names_the_field)
{
	struct tio_desc d;
	tio_buffer_t *b;
	size_t i;

	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		d = spoiled(faults[i].field, faults[i].value);
		ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
		ASSERT_CAUSE(EINVAL, "ValueError", faults[i].says);
		/* Every message still says which command failed. */
		ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
		ASSERT_CAUSE(EINVAL, "ValueError", "BUF_SET_DESC");
	}
	tio_buffer_decref(b);
}

/* Bytes needed against bytes there, not "Numerical result out of range". */
TEST_F(msg, desc_too_big_says_how_many_bytes)
{
	struct tio_desc d = u8_desc(5000);
	tio_buffer_t *b;

	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(ERANGE, "ValueError", "needs 5000 bytes");
	d.byte_offset = 100;
	d.shape[0] = 4000;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(ERANGE, "ValueError", "needs 4100 bytes (byte_offset 100 + its extent) but the buffer has 4096");
	d.byte_offset = 8192;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(ERANGE, "ValueError", "byte_offset 8192 is past the buffer's 4096 bytes");
	tio_buffer_decref(b);
	/* The same at allocation, against the size rounded up to pages. */
	d = u8_desc(5000);
	ASSERT_EQ(-1, tio_buffer_alloc(4096, &d, &b));
	ASSERT_CAUSE(ERANGE, "ValueError", "but the buffer has 4096");
	ASSERT_EQ(-1, tio_desc_check(&d, 4096));
	ASSERT_CAUSE(ERANGE, "ValueError", "needs 5000 bytes");
}

TEST_F(msg, huge_size_is_too_large)
{
	const size_t huge = (size_t)INT64_MAX;
	tio_buffer_t *b;
	tio_object_t *e;

	ASSERT_EQ(-1, tio_buffer_alloc(huge, NULL, &b));
	ASSERT_CAUSE(E2BIG, "ValueError", "too large (E2BIG)");
	ASSERT_EQ(-1, tio_buffer_alloc(huge, NULL, &b));
	ASSERT_CAUSE(E2BIG, "ValueError", "is above the limit of");
	ASSERT_EQ(-1, tio_buffer_alloc(huge, NULL, &b));
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_EQ(NULL, strstr(tio_error_message(e), "Argument list"))
		TH_LOG("message: %s", tio_error_message(e));
	tio_object_decref(e);
	/* Sizes that are no int64 or not positive stop at the argument check. */
	ASSERT_EQ(-1, tio_buffer_alloc(SIZE_MAX, NULL, &b));
	ASSERT_CAUSE(EINVAL, "ValueError", "(size) must be positive");
	ASSERT_EQ(-1, tio_buffer_alloc(0, NULL, &b));
	ASSERT_CAUSE(EINVAL, "ValueError", "(size) must be positive, got 0");
}

TEST_F(msg, seqno_never_emitted_says_so)
{
	tio_stream_t *s;
	uint64_t seqno;
	int fd;

	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_fence_emit(s, &seqno));
	ASSERT_EQ(-1, tio_fence_wait(s, seqno + 5, 0, NULL));
	ASSERT_CAUSE(EINVAL, "ValueError", "was never emitted");
	ASSERT_EQ(-1, tio_fence_signal(s, seqno + 5, 0));
	ASSERT_CAUSE(EINVAL, "ValueError", "was never emitted on stream");
	if (dev_is_kernel()) {
		ASSERT_EQ(-1, tio_fence_export(s, seqno + 5, 0, &fd));
		ASSERT_CAUSE(EINVAL, "ValueError", "was never emitted");
	}
	ASSERT_OK(tio_fence_signal(s, seqno, 0));
	tio_stream_decref(s);
}

/* A missing file is an OSError with ENOENT (Python: FileNotFoundError). */
TEST_F(msg, missing_file_is_oserror_enoent)
{
	tio_safetensors_t *st;

	ASSERT_EQ(-1, tio_safetensors_load("/nonexistent/model.safetensors", &st));
	ASSERT_CAUSE(ENOENT, "OSError", "/nonexistent/model.safetensors");
	ASSERT_EQ(-1, tio_safetensors_load("/nonexistent/model.safetensors", &st));
	ASSERT_CAUSE(ENOENT, "OSError", "No such file or directory (ENOENT)");
}

TEST_HARNESS_MAIN
