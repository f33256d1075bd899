// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring's non-blocking issue: a SUBMIT whose vector holds a FENCE_WAIT
 * or BUF_WAIT must not keep io_uring_submit() (or an SQPOLL thread) in the
 * kernel for the length of the wait; the driver answers -EAGAIN and
 * io_uring runs it from io-wq. The waits here never end on their own
 * (infinite timeouts): a driver that blocked the submitting thread would
 * hang the test until the harness's timeout failed it. And a record
 * interrupted by a signal reports -EINTR, never the kernel-internal
 * -ERESTARTSYS (-512).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

/* The uapi 1.0 size: these tests also run against a 1.0 driver. */
#define STREAM_CREATE_V0 _IOC(_IOC_READ | _IOC_WRITE, TIO_IOC_MAGIC, \
			      _IOC_NR(TIO_IOC_STREAM_CREATE), TIO_STREAM_CREATE_SIZE_VER0)

FIXTURE(nb) {
	int fd;
	__u32 stream;
	__u32 buf;
	struct io_uring ring;
	struct tio_cmd recs[2];
	struct tio_submit s;
};

FIXTURE_VARIANT(nb) {
	unsigned int ring_flags;
	bool buf_wait;
};

FIXTURE_VARIANT_ADD(nb, fence_wait) { .ring_flags = 0 };
FIXTURE_VARIANT_ADD(nb, buf_wait) { .ring_flags = 0, .buf_wait = true };
FIXTURE_VARIANT_ADD(nb, sqpoll) { .ring_flags = IORING_SETUP_SQPOLL };

FIXTURE_SETUP(nb)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit em = { 0 };
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_buf_attach at = { .flags = TIO_RESV_F_WRITE };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tio_ioc(self->fd, STREAM_CREATE_V0, &sc));
	self->stream = em.stream = at.stream = sc.handle;
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_EMIT, &em));
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_ALLOC, &a));
	self->buf = at.handle = a.handle;
	at.seqno = em.seqno;
	if (variant->buf_wait)
		ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &at));
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, variant->ring_flags));

	/* Record 0 waits forever for point 1; record 1 reads INFO after it. */
	if (variant->buf_wait) {
		struct tio_buf_wait w = { .handle = self->buf, .timeout_ns = -1 };

		self->recs[0].op = TIO_IOC_BUF_WAIT;
		memcpy(self->recs[0].payload.bytes, &w, sizeof(w));
	} else {
		struct tio_fence_wait w = { .stream = self->stream, .seqno = 1,
					    .timeout_ns = -1 };

		self->recs[0].op = TIO_IOC_FENCE_WAIT;
		memcpy(self->recs[0].payload.bytes, &w, sizeof(w));
	}
	self->recs[1].op = TIO_IOC_INFO;
	self->s = (struct tio_submit){ .cmds_ptr = (uintptr_t)self->recs,
				       .count = 2 };
}

FIXTURE_TEARDOWN(nb)
{
	io_uring_queue_exit(&self->ring);
	close(self->fd);
}

static int signal_point(int fd, __u32 stream)
{
	struct tio_fence_signal sg = { .stream = stream, .seqno = 1 };

	return tio_ioc(fd, TIO_IOC_FENCE_SIGNAL, &sg);
}

/*
 * io_uring_submit() returns while the wait is pending (were it to wait,
 * the harness's timeout would fail the test); the SUBMIT completes
 * through its CQE once the point signals. On an SQPOLL ring a NOP queued
 * behind it completes first: the SQ thread is not held either.
 */
TEST_F_TIMEOUT(nb, submit_wait_does_not_block_issue, 60)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct tio_info *info = (void *)self->recs[1].payload.bytes;
	struct timespec t0, t1;

	/* How long the submission of a parked wait took: logged, not asserted. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, tio_uring_submit(&self->ring, self->fd, false,
				      TIO_IOC_SUBMIT, &self->s, 1));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("submitting the waiting SUBMIT took %ld us",
	       (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
	sqe = io_uring_get_sqe(&self->ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_nop(sqe);
	sqe->user_data = 2;
	ASSERT_LE(1, io_uring_submit(&self->ring));
	/* The NOP completes; the SUBMIT is still waiting. */
	ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
	EXPECT_EQ(2, cqe->user_data);
	io_uring_cqe_seen(&self->ring, cqe);
	EXPECT_EQ(0, self->s.done);

	ASSERT_EQ(0, signal_point(self->fd, self->stream));
	ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
	EXPECT_EQ(1, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&self->ring, cqe);
	EXPECT_EQ(2, self->s.done);
	EXPECT_EQ(0, self->recs[0].result);
	EXPECT_EQ(0, self->recs[1].result);
	EXPECT_EQ(TIO_UAPI_VERSION, info->version);
}

/* Polls (timeout 0) and other inline records still run at issue. */
TEST_F(nb, submit_poll_runs_inline)
{
	struct tio_fence_wait *w = (void *)self->recs[0].payload.bytes;
	struct tio_buf_wait *bw = (void *)self->recs[0].payload.bytes;

	if (variant->buf_wait)
		bw->timeout_ns = 0;
	else
		w->timeout_ns = 0;
	self->s.flags = TIO_SUBMIT_F_CONTINUE;
	EXPECT_EQ(1, tio_uring_run(&self->ring, self->fd, false, TIO_IOC_SUBMIT,
				   &self->s));
	EXPECT_EQ(-ETIME, self->recs[0].result);
	EXPECT_EQ(0, self->recs[1].result);
	ASSERT_EQ(0, signal_point(self->fd, self->stream));
}

static void on_usr1(int sig)
{
}

struct killer {
	pthread_t target;
	int fd;
};

/* Signal the target once its wait is under way (debugfs pending_waits). */
static void *killer_fn(void *arg)
{
	struct killer *k = arg;

	while (tio_dbg_file_stat("pending_waits") < 1)
		usleep(1000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

/*
 * A SUBMIT record interrupted by a signal: -EINTR in the record, not the
 * kernel-internal -512. Only the ioctl form: a uring SUBMIT that waits
 * runs in io-wq, where the submitter's signals do not reach.
 */
TEST_F_TIMEOUT(nb, interrupted_record_is_eintr, 60)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct killer k = { .target = pthread_self(), .fd = self->fd };
	pthread_t t;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&t, NULL, killer_fn, &k));
	EXPECT_EQ(1, tio_ioc(self->fd, TIO_IOC_SUBMIT, &self->s));
	pthread_join(t, NULL);
	EXPECT_EQ(1, self->s.done);
	EXPECT_EQ(-EINTR, self->recs[0].result);
	ASSERT_EQ(0, signal_point(self->fd, self->stream));
}

TEST_HARNESS_MAIN
