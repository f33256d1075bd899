// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Batches: userspace calls, driver commands and asynchronous waits in one
 * submission with results in order, per-call errors, stop-on-error, the
 * four submission modes (command ring, vectored, uring, ioctl) and which
 * one a batch used, 10 000 calls, bad inputs.
 */
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "dev_test.h"

struct call_log {
	int64_t seen[16];
	int n;
};

/* A userspace function: logs its int argument, returns it doubled. */
static int log_call(void *self, const tio_any_t *args, int32_t nargs, tio_any_t *ret)
{
	struct call_log *log = self;
	int64_t v;

	if (nargs != 1 || tio_any_to_int(&args[0], &v))
		return -1;
	if (v < 0)
		return tio_error_raise("ValueError", "negative: %lld", (long long)v);
	if (log->n < 16)
		log->seen[log->n++] = v;
	*ret = tio_any_int(2 * v);
	return 0;
}

static int64_t result_int(struct __test_metadata *_metadata, tio_batch_t *b, int64_t i)
{
	tio_any_t v;

	if (tio_batch_result(b, i, &v)) {
		TH_LOG("entry %lld: %s", (long long)i,
		       tio_error_message(tio_error_peek_raised()));
		tio_error_clear();
		return INT64_MIN;
	}
	return v.v_int64;
}

DEV_FIXTURE(ba);

TEST_F(ba, mixed_batch_results_in_order)
{
	tio_object_t *logf, *signalled, *emit;
	struct call_log log = { .n = 0 };
	struct tio_buf_alloc alloc;
	tio_any_t a[2], v;
	tio_stream_t *s;
	tio_batch_t *b;
	int64_t i_log1, i_alloc, i_e1, i_wait, i_sig, i_read, i_log2, i_e2, i_ffi;

	ASSERT_OK(tio_func_new(log_call, &log, NULL, &logf));
	ASSERT_OK(tio_func_get_global("tio.stream.signalled", &signalled));
	ASSERT_OK(tio_func_get_global("tio.fence.emit", &emit));
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_batch_new(0, &b));

	a[0] = tio_any_int(1);
	i_log1 = tio_batch_add(b, logf, a, 1);
	memset(&alloc, 0, sizeof(alloc));
	alloc.size = 4096;
	i_alloc = tio_batch_add_record(b, TIO_IOC_BUF_ALLOC, &alloc, sizeof(alloc));
	i_e1 = tio_batch_fence_emit(b, s);
	i_wait = tio_batch_fence_wait(b, s, 1, -1);	/* emitted by i_e1 */
	i_sig = tio_batch_fence_signal(b, s, 1, -ENODATA);
	a[0] = tio_any_object((tio_object_t *)s);
	i_read = tio_batch_add(b, signalled, a, 1);	/* sees i_sig's effect */
	a[0] = tio_any_int(2);
	i_log2 = tio_batch_add(b, logf, a, 1);
	i_e2 = tio_batch_fence_emit(b, s);
	a[0] = tio_any_object((tio_object_t *)s);
	i_ffi = tio_batch_add(b, emit, a, 1);		/* an FFI call encoded as a record */
	ASSERT_EQ(9, tio_batch_count(b));
	ASSERT_EQ(8, i_ffi);

	ASSERT_OK(tio_batch_submit(b));
	ASSERT_LE(0, tio_batch_wait(b, -1, -1));
	EXPECT_EQ(0, tio_batch_failed(b));
	EXPECT_EQ(2, result_int(_metadata, b, i_log1));
	ASSERT_OK(tio_batch_result(b, i_alloc, &v));
	ASSERT_LE(TIO_TYPE_DYN_OBJECT_BEGIN, v.type_index);
	EXPECT_EQ(1, tio_debug_live_handles() - 1);	/* the stream + this buffer */
	tio_any_decref(&v);
	EXPECT_EQ(1, result_int(_metadata, b, i_e1));
	EXPECT_EQ(-ENODATA, result_int(_metadata, b, i_wait));
	ASSERT_OK(tio_batch_result(b, i_sig, &v));
	EXPECT_EQ(TIO_TYPE_NONE, v.type_index);
	EXPECT_EQ(1, result_int(_metadata, b, i_read));
	EXPECT_EQ(4, result_int(_metadata, b, i_log2));
	EXPECT_EQ(2, result_int(_metadata, b, i_e2));
	EXPECT_EQ(3, result_int(_metadata, b, i_ffi));
	EXPECT_EQ(2, log.n);
	EXPECT_EQ(1, log.seen[0]);
	EXPECT_EQ(2, log.seen[1]);
	ASSERT_NE(NULL, tio_batch_record(b, i_e2));
	EXPECT_EQ(TIO_IOC_FENCE_EMIT, tio_batch_record(b, i_e2)->op);
	EXPECT_EQ(NULL, tio_batch_record(b, i_log1));

	tio_batch_free(b);
	tio_stream_decref(s);
	tio_object_decref(logf);
	tio_object_decref(signalled);
	tio_object_decref(emit);
}

TEST_F(ba, errors_stay_in_their_slot)
{
	struct call_log log = { .n = 0 };
	tio_object_t *logf;
	tio_stream_t *s;
	tio_batch_t *b;
	tio_any_t a;

	ASSERT_OK(tio_func_new(log_call, &log, NULL, &logf));
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_batch_new(0, &b));
	tio_batch_fence_emit(b, s);
	tio_batch_fence_signal(b, s, 5, 0);	/* never emitted */
	a = tio_any_int(-1);
	tio_batch_add(b, logf, &a, 1);		/* fails in userspace */
	tio_batch_fence_emit(b, s);
	a = tio_any_int(3);
	tio_batch_add(b, logf, &a, 1);
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(2, tio_batch_failed(b));
	EXPECT_EQ(0, tio_batch_status(b, 0));
	EXPECT_EQ(-EINVAL, tio_batch_status(b, 1));
	EXPECT_EQ(-EIO, tio_batch_status(b, 2));
	EXPECT_EQ(2, result_int(_metadata, b, 3));
	EXPECT_EQ(6, result_int(_metadata, b, 4));
	ASSERT_EQ(-1, tio_batch_result(b, 1, &a));
	ASSERT_DEV_MSG(EINVAL, "FENCE_SIGNAL (batch entry 1)");
	ASSERT_EQ(-1, tio_batch_result(b, 2, &a));
	ASSERT_DEV_MSG(EIO, "negative: -1");
	ASSERT_NE(NULL, tio_batch_error(b, 1));
	EXPECT_EQ(NULL, tio_batch_error(b, 0));
	tio_batch_free(b);
	tio_stream_decref(s);
	tio_object_decref(logf);
}

TEST_F(ba, stop_on_error_cancels_the_rest)
{
	struct call_log log = { .n = 0 };
	tio_object_t *logf;
	tio_stream_t *s;
	tio_batch_t *b;
	tio_any_t a;
	int mode;

	ASSERT_OK(tio_func_new(log_call, &log, NULL, &logf));
	ASSERT_OK(tio_stream_create(&s));
	for (mode = TIO_BATCH_VECTORED; mode <= TIO_BATCH_CMD_RING; mode++) {
		ASSERT_OK(tio_batch_new(TIO_BATCH_STOP_ON_ERROR, &b));
		ASSERT_OK(tio_batch_set_mode(b, mode));
		tio_batch_fence_emit(b, s);
		tio_batch_fence_signal(b, s, 1000, 0);	/* fails */
		tio_batch_fence_emit(b, s);
		a = tio_any_int(9);
		tio_batch_add(b, logf, &a, 1);
		tio_batch_fence_emit(b, s);
		ASSERT_OK(tio_batch_submit(b));
		EXPECT_EQ(0, tio_batch_status(b, 0));
		EXPECT_EQ(-EINVAL, tio_batch_status(b, 1));
		EXPECT_EQ(-ECANCELED, tio_batch_status(b, 2));
		EXPECT_EQ(-ECANCELED, tio_batch_status(b, 3));
		EXPECT_EQ(-ECANCELED, tio_batch_status(b, 4));
		EXPECT_EQ(4, tio_batch_failed(b));
		tio_batch_free(b);
	}
	EXPECT_EQ(0, log.n);
	tio_stream_decref(s);
	tio_object_decref(logf);
}

TEST_F(ba, ten_thousand_calls_in_every_mode)
{
	tio_stream_t *s;
	tio_batch_t *b;
	int64_t i, base = 0;
	int mode;

	ASSERT_OK(tio_stream_create(&s));
	for (mode = TIO_BATCH_VECTORED; mode <= TIO_BATCH_CMD_RING; mode++) {
		ASSERT_OK(tio_batch_new(0, &b));
		ASSERT_OK(tio_batch_set_mode(b, mode));
		for (i = 0; i < 10000; i++)
			ASSERT_EQ(i, tio_batch_fence_emit(b, s));
		ASSERT_OK(tio_batch_submit(b));
		EXPECT_EQ(0, tio_batch_failed(b));
		for (i = 0; i < 10000; i++)
			ASSERT_EQ(base + i + 1, result_int(_metadata, b, i));
		if (dev_is_kernel() && mode == TIO_BATCH_VECTORED)
			/* 10 SUBMITs of 1024 at most, few enters. */
			EXPECT_GE(2, tio_batch_enters(b));
		if (dev_is_kernel() && mode == TIO_BATCH_CMD_RING)
			/* 256 records per enter: the ring wraps 39 times. */
			EXPECT_EQ(40, tio_batch_enters(b));
		base += 10000;
		/* Reuse after reset. */
		tio_batch_reset(b);
		ASSERT_EQ(0, tio_batch_count(b));
		ASSERT_EQ(0, tio_batch_fence_signal(b, s, base, 0));
		ASSERT_OK(tio_batch_submit(b));
		EXPECT_EQ(0, tio_batch_status(b, 0));
		EXPECT_EQ((uint64_t)base, tio_stream_signalled(s));
		tio_batch_free(b);
	}
	tio_stream_decref(s);
}

TEST_F(ba, async_waits_time_out_and_complete_later)
{
	tio_stream_t *s;
	tio_batch_t *b;
	tio_any_t v;
	uint64_t seq;

	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_fence_emit(s, &seq));
	ASSERT_OK(tio_batch_new(0, &b));
	ASSERT_EQ(0, tio_batch_fence_wait(b, s, seq, 1000000));	/* 1 ms */
	ASSERT_EQ(1, tio_batch_fence_wait(b, s, seq, -1));
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(TIO_BATCH_PENDING, tio_batch_status(b, 1));
	ASSERT_EQ(-1, tio_batch_result(b, 1, &v));
	ASSERT_DEV_MSG(EAGAIN, "has not completed");
	/* Entry 0 times out on its own; entry 1 holds the batch wait up. */
	ASSERT_EQ(-1, tio_batch_wait(b, 2, 20000000));
	ASSERT_DEV_ERR(ETIME, "TimeoutError");
	EXPECT_EQ(-ETIME, tio_batch_status(b, 0));
	EXPECT_EQ(TIO_BATCH_PENDING, tio_batch_status(b, 1));
	ASSERT_OK(tio_fence_signal(s, seq, 0));
	ASSERT_EQ(2, tio_batch_wait(b, 2, -1));
	EXPECT_EQ(0, tio_batch_status(b, 1));
	EXPECT_EQ(0, result_int(_metadata, b, 1));
	tio_batch_free(b);
	tio_stream_decref(s);
}

/* BUF_WAIT parks in a batch like FENCE_WAIT: submit never blocks on it. */
TEST_F(ba, buffer_waits_park)
{
	tio_object_t *wait;
	tio_buffer_t *buf;
	tio_stream_t *s;
	tio_batch_t *b;
	tio_any_t args[3];
	uint64_t seq;

	ASSERT_OK(tio_func_get_global("tio.buffer.wait", &wait));
	ASSERT_OK(tio_buffer_alloc(4096, NULL, &buf));
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_fence_emit(s, &seq));
	ASSERT_OK(tio_buffer_attach_fence(buf, s, seq, TIO_RESV_F_WRITE));
	ASSERT_OK(tio_batch_new(0, &b));
	args[0] = tio_any_object((tio_object_t *)buf);
	args[1] = tio_any_int(-1);	/* no timeout: it must park, not block */
	ASSERT_EQ(0, tio_batch_add(b, wait, args, 2));
	ASSERT_EQ(1, tio_batch_fence_emit(b, s));
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(TIO_BATCH_PENDING, tio_batch_status(b, 0));
	EXPECT_EQ(0, tio_batch_status(b, 1));
	ASSERT_OK(tio_fence_signal(s, seq, 0));
	ASSERT_EQ(2, tio_batch_wait(b, 2, -1));
	EXPECT_EQ(0, tio_batch_status(b, 0));
	EXPECT_EQ(0, result_int(_metadata, b, 0));	/* signalled cleanly */
	tio_batch_free(b);
	tio_stream_decref(s);
	tio_buffer_decref(buf);
	tio_object_decref(wait);
}

/* A batch holds the context: after tio_shutdown() it still runs, safely. */
TEST_F(ba, batch_outlives_shutdown)
{
	tio_object_t *alloc;
	tio_batch_t *b;
	tio_any_t arg = tio_any_int(4096), v;

	ASSERT_OK(tio_func_get_global("tio.buffer.alloc", &alloc));
	ASSERT_OK(tio_batch_new(0, &b));
	ASSERT_EQ(0, tio_batch_add(b, alloc, &arg, 1));
	ASSERT_OK(tio_shutdown());
	ASSERT_OK(tio_batch_submit(b));
	ASSERT_EQ(1, tio_batch_wait(b, 1, -1));
	EXPECT_EQ(0, tio_batch_status(b, 0));
	ASSERT_OK(tio_batch_result(b, 0, &v));
	EXPECT_EQ(4096, tio_buffer_size((tio_buffer_t *)v.v_obj));
	tio_any_decref(&v);
	tio_batch_free(b);	/* drops the last reference: the backend closes */
	tio_object_decref(alloc);
	EXPECT_EQ(0, tio_debug_live_handles());
	/* A fresh context: the fixture then finds the fds it started with. */
	ASSERT_OK(tio_init());
}

TEST_F(ba, bad_inputs)
{
	tio_stream_t *s;
	tio_batch_t *b;
	tio_any_t v = tio_any_int(1);
	char payload[64] = { 0 };

	ASSERT_EQ(-1, tio_batch_new(0x10, &b));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_batch_new(0, &b));
	ASSERT_EQ(-1, tio_batch_set_mode(b, 7));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_batch_set_mode(b, -2));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_batch_add(b, (tio_object_t *)s, &v, 1));
	ASSERT_DEV_MSG(EINVAL, "not a Function");
	ASSERT_EQ(-1, tio_batch_add_record(b, TIO_IOC_SUBMIT, payload, 24));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_batch_add_record(b, TIO_IOC_FENCE_EMIT, payload, 64));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_batch_fence_emit(b, NULL));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-ERANGE, tio_batch_status(b, 0));
	ASSERT_EQ(-1, tio_batch_result(b, 0, &v));
	ASSERT_DEV_ERR(ERANGE, "ValueError");
	/* A raw record with a bad handle fails in its slot. */
	ASSERT_EQ(0, tio_batch_add_record(b, TIO_IOC_FENCE_EMIT, payload, 8));
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(-ENOENT, tio_batch_status(b, 0));
	ASSERT_EQ(-1, tio_batch_submit(b));
	ASSERT_DEV_ERR(EBUSY, "OSError");
	ASSERT_EQ(-1, tio_batch_fence_emit(b, s));
	ASSERT_DEV_ERR(EBUSY, "OSError");
	tio_batch_free(b);
	tio_batch_free(NULL);
	tio_stream_decref(s);
}

TEST_F(ba, kernel_ring_and_one_enter)
{
	tio_stream_t *s;
	tio_batch_t *b;
	int i;

	if (!dev_is_kernel())
		SKIP(return, "the user backend has no ring");
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_batch_new(0, &b));
	for (i = 0; i < 100; i++)
		tio_batch_fence_emit(b, s);
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(0, tio_batch_failed(b));
	EXPECT_EQ(1, tio_batch_enters(b));
	EXPECT_TRUE(tio_batch_ring_flags(b) & TIO_BATCH_RING_FIXED_FILE);
	TH_LOG("ring flags 0x%x", tio_batch_ring_flags(b));
	tio_batch_free(b);
	tio_stream_decref(s);
}

/*
 * BUF_PIN_USER punts to io-wq under uring issue; a BUF_ALLOC queued after
 * it must still run after it. Handles are the lowest free ones, so the
 * order shows in them.
 */
TEST_F(ba, punted_records_keep_their_order)
{
	static const int modes[] = { TIO_BATCH_URING, TIO_BATCH_VECTORED, TIO_BATCH_CMD_RING };
	static char mem[4096] __attribute__((aligned(4096)));
	const size_t page = sizeof(mem);
	unsigned int i;

	if (!dev_is_kernel())
		SKIP(return, "only the driver punts");
	for (i = 0; i < 3; i++) {
		struct tio_buf_pin pin = { .addr = (uintptr_t)mem, .size = page };
		struct tio_buf_alloc alloc = { .size = page };
		tio_any_t vp, va;
		tio_batch_t *b;
		int64_t ip, ia;

		ASSERT_OK(tio_batch_new(0, &b));
		ASSERT_OK(tio_batch_set_mode(b, modes[i]));
		ip = tio_batch_add_record(b, TIO_IOC_BUF_PIN_USER, &pin, sizeof(pin));
		ia = tio_batch_add_record(b, TIO_IOC_BUF_ALLOC, &alloc, sizeof(alloc));
		ASSERT_GE(ia, 0);
		ASSERT_OK(tio_batch_submit(b));
		ASSERT_OK(tio_batch_result(b, ip, &vp));
		ASSERT_OK(tio_batch_result(b, ia, &va));
		EXPECT_LT(tio_buffer_handle((tio_buffer_t *)vp.v_obj),
			  tio_buffer_handle((tio_buffer_t *)va.v_obj)) {
			TH_LOG("mode %d: BUF_ALLOC ran before BUF_PIN_USER", modes[i]);
		}
		tio_any_decref(&vp);
		tio_any_decref(&va);
		tio_batch_free(b);
	}
}

/* Does this context's driver offer the command ring? */
static int dev_has_cmd_ring(void)
{
	struct tio_driver_info info;

	return dev_is_kernel() && !tio_driver_info(&info) &&
	       (info.features & TIO_FEAT_RING);
}

/*
 * One batch of records: INFO, BUF_ALLOC, emits, a failing signal, BUF_INFO
 * of a bad handle; with TIO_SUBMIT_F_CONTINUE every record runs.
 */
static tio_batch_t *mixed_records(struct __test_metadata *_metadata, int mode,
				  tio_stream_t *s)
{
	struct tio_buf_alloc alloc = { .size = 8192 };
	struct tio_handle_op bad = { .handle = 999999 };
	struct tio_info info = { 0 };
	tio_batch_t *b;
	int i;

	if (tio_batch_new(0, &b) || tio_batch_set_mode(b, mode)) {
		TH_LOG("batch: %s", tio_error_message(tio_error_peek_raised()));
		return NULL;
	}
	tio_batch_add_record(b, TIO_IOC_INFO, &info, sizeof(info));
	tio_batch_add_record(b, TIO_IOC_BUF_ALLOC, &alloc, sizeof(alloc));
	for (i = 0; i < 5; i++)
		tio_batch_fence_emit(b, s);
	tio_batch_fence_signal(b, s, UINT64_C(1) << 40, 0);	/* fails */
	tio_batch_add_record(b, TIO_IOC_BUF_FREE, &bad, sizeof(bad));	/* fails */
	tio_batch_fence_emit(b, s);
	return b;
}

/*
 * Every mode gives the same statuses and payloads (seqnos relative to the
 * stream's start), and the batch says which mode it used: the command ring
 * by default where the driver offers it.
 */
TEST_F(ba, modes_agree_and_report_themselves)
{
	static const int modes[] = { TIO_BATCH_AUTO, TIO_BATCH_CMD_RING, TIO_BATCH_VECTORED,
				     TIO_BATCH_URING, TIO_BATCH_IOCTL };
	int64_t first[10], status[10];
	unsigned int m;
	int64_t i, n = 0;

	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		int want = modes[m];
		tio_stream_t *s;
		tio_batch_t *b;

		ASSERT_OK(tio_stream_create(&s));
		b = mixed_records(_metadata, modes[m], s);
		ASSERT_NE(NULL, b);
		EXPECT_EQ(modes[m], tio_batch_mode(b));
		ASSERT_OK(tio_batch_submit(b));
		if (!dev_is_kernel())
			want = TIO_BATCH_VECTORED;
		else if (want == TIO_BATCH_AUTO)
			want = dev_has_cmd_ring() ? TIO_BATCH_CMD_RING : TIO_BATCH_VECTORED;
		EXPECT_EQ(want, tio_batch_mode(b));
		n = tio_batch_count(b);
		ASSERT_EQ(10, n);
		EXPECT_EQ(2, tio_batch_failed(b));
		for (i = 0; i < n; i++) {
			const struct tio_cmd *c = tio_batch_record(b, i);
			int64_t v = 0;

			ASSERT_NE(NULL, c);
			if (c->op == TIO_IOC_FENCE_EMIT)
				v = (int64_t)((const struct tio_fence_emit *)c->payload.bytes)->seqno;
			else if (c->op == TIO_IOC_INFO)
				v = ((const struct tio_info *)c->payload.bytes)->version;
			else if (c->op == TIO_IOC_BUF_ALLOC)
				v = (int64_t)((const struct tio_buf_alloc *)c->payload.bytes)->size;
			if (!m) {
				first[i] = v;
				status[i] = tio_batch_status(b, i);
				continue;
			}
			EXPECT_EQ(status[i], tio_batch_status(b, i)) {
				TH_LOG("mode %d entry %lld", modes[m], (long long)i);
			}
			EXPECT_EQ(first[i], v) {
				TH_LOG("mode %d entry %lld", modes[m], (long long)i);
			}
		}
		tio_batch_free(b);
		tio_stream_decref(s);
	}
	EXPECT_EQ(-EINVAL, status[7]);
	EXPECT_NE(0, status[8]);
	EXPECT_EQ(6, first[9]);
}

/*
 * Stop-on-error in the command ring: records published behind the failure
 * are withdrawn, never run by a later enter (the seqnos show it), and a
 * run longer than the ring wraps around it.
 */
TEST_F(ba, cmd_ring_stop_withdraws_the_rest)
{
	tio_stream_t *s;
	tio_batch_t *b;
	int64_t i;

	if (!dev_has_cmd_ring())
		SKIP(return, "no command ring on this backend");
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_batch_new(TIO_BATCH_STOP_ON_ERROR, &b));
	ASSERT_OK(tio_batch_set_mode(b, TIO_BATCH_CMD_RING));
	for (i = 0; i < 100; i++)
		tio_batch_fence_emit(b, s);
	tio_batch_fence_signal(b, s, 1000, 0);	/* fails: stops the enter */
	for (i = 0; i < 50; i++)
		tio_batch_fence_emit(b, s);
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(TIO_BATCH_CMD_RING, tio_batch_mode(b));
	EXPECT_EQ(100, result_int(_metadata, b, 99));
	EXPECT_EQ(-EINVAL, tio_batch_status(b, 100));
	for (i = 101; i < 151; i++)
		ASSERT_EQ(-ECANCELED, tio_batch_status(b, i));
	tio_batch_free(b);

	/* 300 more: the next seqno is 101, so the 50 never ran. */
	ASSERT_OK(tio_batch_new(0, &b));
	ASSERT_OK(tio_batch_set_mode(b, TIO_BATCH_CMD_RING));
	for (i = 0; i < 300; i++)
		tio_batch_fence_emit(b, s);
	ASSERT_OK(tio_batch_submit(b));
	EXPECT_EQ(0, tio_batch_failed(b));
	for (i = 0; i < 300; i++)
		ASSERT_EQ(101 + i, result_int(_metadata, b, i));
	EXPECT_EQ(2, tio_batch_enters(b));
	tio_batch_free(b);
	tio_stream_decref(s);
}

/* TIO_BATCH_MODE picks the default mode; a bad value is refused by name. */
TEST_F(ba, mode_from_the_environment)
{
	tio_batch_t *b;

	ASSERT_OK(setenv("TIO_BATCH_MODE", "uring", 1));
	ASSERT_OK(tio_batch_new(0, &b));
	EXPECT_EQ(TIO_BATCH_URING, tio_batch_mode(b));
	tio_batch_free(b);
	ASSERT_OK(setenv("TIO_BATCH_MODE", "ring", 1));
	ASSERT_OK(tio_batch_new(0, &b));
	EXPECT_EQ(TIO_BATCH_CMD_RING, tio_batch_mode(b));
	tio_batch_free(b);
	ASSERT_OK(setenv("TIO_BATCH_MODE", "bogus", 1));
	ASSERT_EQ(-1, tio_batch_new(0, &b));
	ASSERT_DEV_MSG(EINVAL, "TIO_BATCH_MODE=bogus");
	ASSERT_OK(unsetenv("TIO_BATCH_MODE"));
	ASSERT_OK(tio_batch_new(0, &b));
	EXPECT_EQ(TIO_BATCH_AUTO, tio_batch_mode(b));
	tio_batch_free(b);
}

TEST_HARNESS_MAIN
