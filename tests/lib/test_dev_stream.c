// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Streams: emit, signal (with errors), wait, the seqno word, cancellation
 * on destroy, implicit sync through buffers, sync_file, FFI globals.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "dev_test.h"

DEV_FIXTURE(st);

TEST_F(st, emit_signal_wait_and_seqno_word)
{
	const volatile uint64_t *w;
	tio_stream_t *s;
	uint64_t a, b, c;
	int status = 1;

	ASSERT_OK(tio_stream_create(&s));
	EXPECT_NE(0, tio_stream_handle(s));
	w = tio_stream_seqno_word(s);
	ASSERT_NE(NULL, w);
	EXPECT_EQ(0, *w);
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_OK(tio_fence_emit(s, &b));
	ASSERT_OK(tio_fence_emit(s, &c));
	EXPECT_EQ(1, a);
	EXPECT_EQ(2, b);
	EXPECT_EQ(3, c);
	ASSERT_EQ(-1, tio_fence_wait(s, a, 0, &status));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	ASSERT_EQ(-1, tio_fence_wait(s, a, 1000000, &status));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	ASSERT_OK(tio_fence_signal(s, b, 0));
	EXPECT_EQ(2, *w);
	EXPECT_EQ(2, tio_stream_signalled(s));
	ASSERT_OK(tio_fence_wait(s, a, 0, &status));
	EXPECT_EQ(0, status);
	ASSERT_OK(tio_fence_signal(s, c, -EIO));
	EXPECT_EQ(3, *w);
	ASSERT_OK(tio_fence_wait(s, c, -1, &status));
	EXPECT_EQ(-EIO, status);
	ASSERT_OK(tio_fence_wait(s, b, -1, &status));
	EXPECT_EQ(0, status);
	/* Signalling an already signalled point changes nothing. */
	ASSERT_OK(tio_fence_signal(s, b, -EPERM));
	ASSERT_OK(tio_fence_wait(s, b, 0, &status));
	EXPECT_EQ(0, status);
	tio_stream_decref(s);
}

TEST_F(st, bad_points_and_errors)
{
	tio_stream_t *s;
	uint64_t a;

	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_fence_emit(s, &a));
	ASSERT_EQ(-1, tio_fence_wait(s, 0, 0, NULL));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_fence_wait(s, a + 1, 0, NULL));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_fence_signal(s, a + 1, 0));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_fence_signal(s, a, 5));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_fence_signal(s, a, -100000));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	tio_stream_decref(s);
}

struct signaller {
	tio_stream_t *s;
	uint64_t seqno;
};

static void *signal_later(void *arg)
{
	struct signaller *sg = arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	tio_fence_signal(sg->s, sg->seqno, 0);
	return NULL;
}

TEST_F(st, wait_wakes_when_another_thread_signals)
{
	struct signaller sg;
	pthread_t th;
	int status = 1;

	ASSERT_OK(tio_stream_create(&sg.s));
	ASSERT_OK(tio_fence_emit(sg.s, &sg.seqno));
	ASSERT_EQ(0, pthread_create(&th, NULL, signal_later, &sg));
	ASSERT_OK(tio_fence_wait(sg.s, sg.seqno, -1, &status));
	EXPECT_EQ(0, status);
	pthread_join(th, NULL);
	tio_stream_decref(sg.s);
}

TEST_F(st, buffer_fences_and_cancel_on_destroy)
{
	tio_stream_t *s;
	tio_buffer_t *b;
	uint64_t r, w;
	int status = 1;

	ASSERT_OK(tio_buffer_alloc(4096, NULL, &b));
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_fence_emit(s, &r));
	ASSERT_OK(tio_fence_emit(s, &w));
	if (tio_buffer_attach_fence(b, s, r, 0)) {
		ASSERT_DEV_ERR(EOPNOTSUPP, "NotImplementedError");
		tio_stream_decref(s);
		tio_buffer_decref(b);
		SKIP(return, "the driver has no dma_resv support yet");
	}
	ASSERT_OK(tio_buffer_attach_fence(b, s, w, TIO_RESV_F_WRITE));
	ASSERT_EQ(-1, tio_buffer_attach_fence(b, s, w + 1, 0));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_buffer_wait(b, 0, 0, &status));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	ASSERT_OK(tio_fence_signal(s, r, 0));
	ASSERT_EQ(-1, tio_buffer_wait(b, TIO_RESV_F_WRITE, 0, &status));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	/* Destroying the stream cancels the write point. */
	tio_stream_decref(s);
	ASSERT_OK(tio_buffer_wait(b, 0, -1, &status));
	EXPECT_EQ(-ECANCELED, status);
	ASSERT_EQ(-1, tio_buffer_wait(b, 0x100, 0, &status));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	tio_buffer_decref(b);
}

TEST_F(st, sync_file_export_import)
{
	tio_stream_t *s, *t;
	uint64_t a, b;
	int fd = -1, status = 1;

	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_stream_create(&t));
	ASSERT_OK(tio_fence_emit(s, &a));
	if (!dev_is_kernel()) {
		ASSERT_EQ(-1, tio_fence_export(s, a, 0, &fd));
		ASSERT_DEV_ERR(EOPNOTSUPP, "NotImplementedError");
		ASSERT_EQ(-1, tio_fence_import(s, 0, &b));
		ASSERT_DEV_ERR(EOPNOTSUPP, "NotImplementedError");
		tio_stream_decref(s);
		tio_stream_decref(t);
		return;
	}
	ASSERT_OK(tio_fence_export(s, a, TIO_EXPORT_F_CLOEXEC, &fd));
	ASSERT_OK(tio_fence_import(t, fd, &b));
	close(fd);
	ASSERT_EQ(-1, tio_fence_wait(t, b, 0, NULL));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	ASSERT_OK(tio_fence_signal(s, a, -EPIPE));
	ASSERT_OK(tio_fence_wait(t, b, -1, &status));
	EXPECT_EQ(-EPIPE, status);
	tio_stream_decref(s);
	tio_stream_decref(t);
}

TEST_F(st, ffi_globals_drive_streams)
{
	tio_object_t *create, *emit, *sig, *wait, *signalled;
	tio_any_t args[3], s = tio_any_none(), v = tio_any_none();

	ASSERT_OK(tio_func_get_global("tio.stream.create", &create));
	ASSERT_OK(tio_func_get_global("tio.fence.emit", &emit));
	ASSERT_OK(tio_func_get_global("tio.fence.signal", &sig));
	ASSERT_OK(tio_func_get_global("tio.fence.wait", &wait));
	ASSERT_OK(tio_func_get_global("tio.stream.signalled", &signalled));
	ASSERT_OK(tio_func_call_any(create, NULL, 0, &s));
	ASSERT_OK(tio_object_get_field(s.v_obj, "handle", &v));
	EXPECT_LT(0, v.v_int64);
	args[0] = s;
	ASSERT_OK(tio_func_call_any(emit, args, 1, &v));
	EXPECT_EQ(1, v.v_int64);
	args[1] = tio_any_int(1);
	args[2] = tio_any_int(-EIO);
	ASSERT_OK(tio_func_call_any(sig, args, 3, &v));
	ASSERT_OK(tio_func_call_any(signalled, args, 1, &v));
	EXPECT_EQ(1, v.v_int64);
	ASSERT_OK(tio_func_call_any(wait, args, 2, &v));
	EXPECT_EQ(-EIO, v.v_int64);
	args[2] = tio_any_int(7);
	ASSERT_EQ(-1, tio_func_call_any(sig, args, 3, &v));
	ASSERT_DEV_MSG(EINVAL, "negative errno");
	tio_any_decref(&s);
	tio_object_decref(create);
	tio_object_decref(emit);
	tio_object_decref(sig);
	tio_object_decref(wait);
	tio_object_decref(signalled);
}

TEST_HARNESS_MAIN
