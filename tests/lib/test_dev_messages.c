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

static struct tio_tensor_desc u8_desc(int64_t n)
{
	struct tio_tensor_desc d;

	memset(&d, 0, sizeof(d));
	d.code = TIO_DTYPE_UINT;
	d.bits = 8;
	d.lanes = 1;
	d.ndim = 1;
	d.shape[0] = n;
	return d;
}

DEV_FIXTURE(msg);

/* Each descriptor fault names the field; all stay EINVAL ValueErrors. */
TEST_F(msg, set_desc_names_the_field)
{
	struct tio_tensor_desc d;
	tio_buffer_t *b;

	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	d = u8_desc(16);
	d.ndim = 9;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "ndim 9 above the maximum of 8");
	d = u8_desc(16);
	d.bits = 33;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "bits 33");
	d = u8_desc(16);
	d.lanes = 0;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "lanes 0");
	d = u8_desc(16);
	d.code = 99;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "dtype code 99");
	d = u8_desc(16);
	d.ndim = 2;
	d.shape[1] = -3;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "shape[1] = -3 is a negative extent");
	d = u8_desc(16);
	d.flags = 0x40;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "unknown descriptor flags 0x40");
	d = u8_desc(16);
	d.strides[0] = 2;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "strides[0] set without TIO_DESC_F_STRIDED");
	/* Every message still says which command failed. */
	d.strides[0] = 0;
	d.ndim = 9;
	ASSERT_EQ(-1, tio_buffer_set_desc(b, &d));
	ASSERT_CAUSE(EINVAL, "ValueError", "BUF_SET_DESC");
	tio_buffer_release(b);
}

/* Bytes needed against bytes there, not "Numerical result out of range". */
TEST_F(msg, desc_too_big_says_how_many_bytes)
{
	struct tio_tensor_desc d = u8_desc(5000);
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
	tio_buffer_release(b);
	/* The same at allocation, against the size rounded up to pages. */
	d = u8_desc(5000);
	ASSERT_EQ(-1, tio_buffer_alloc(4096, &d, &b));
	ASSERT_CAUSE(ERANGE, "ValueError", "but the buffer has 4096");
	ASSERT_EQ(-1, tio_desc_check(&d, 4096));
	ASSERT_CAUSE(ERANGE, "ValueError", "needs 5000 bytes");
}

TEST_F(msg, huge_size_is_too_large)
{
	tio_buffer_t *b;
	tio_object_t *e;

	ASSERT_EQ(-1, tio_buffer_alloc(SIZE_MAX, NULL, &b));
	ASSERT_CAUSE(E2BIG, "ValueError", "too large (E2BIG)");
	ASSERT_EQ(-1, tio_buffer_alloc(SIZE_MAX, NULL, &b));
	ASSERT_CAUSE(E2BIG, "ValueError", "is above the limit of");
	ASSERT_EQ(-1, tio_buffer_alloc(SIZE_MAX, NULL, &b));
	e = tio_error_move_from_raised();
	ASSERT_NE(NULL, e);
	EXPECT_EQ(NULL, strstr(tio_error_message(e), "Argument list"))
		TH_LOG("message: %s", tio_error_message(e));
	tio_object_decref(e);
	ASSERT_EQ(-1, tio_buffer_alloc(0, NULL, &b));
	ASSERT_CAUSE(EINVAL, "ValueError", "size 0");
}

TEST_F(msg, seqno_never_emitted_says_so)
{
	tio_stream_t *s;
	uint64_t seqno;
	int fd;

	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_stream_emit(s, &seqno));
	ASSERT_EQ(-1, tio_stream_wait(s, seqno + 5, 0, NULL));
	ASSERT_CAUSE(EINVAL, "ValueError", "was never emitted");
	ASSERT_EQ(-1, tio_stream_signal(s, seqno + 5, 0));
	ASSERT_CAUSE(EINVAL, "ValueError", "was never emitted on stream");
	if (dev_is_kernel()) {
		ASSERT_EQ(-1, tio_stream_export_sync_file(s, seqno + 5, 0, &fd));
		ASSERT_CAUSE(EINVAL, "ValueError", "was never emitted");
	}
	ASSERT_OK(tio_stream_signal(s, seqno, 0));
	tio_stream_release(s);
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
