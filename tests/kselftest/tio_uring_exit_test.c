// SPDX-License-Identifier: GPL-2.0
/*
 * Parked io_uring waits end when they should, on every kernel (6.1 has no
 * cancelable uring commands; the driver watches the requests itself):
 *
 *  - a wait issued from an io-wq worker (IOSQE_ASYNC) outlives that
 *    worker, which exits after 5 s idle: the request's task issued it,
 *    not the worker, so the worker's exit must not cancel it
 *    (-ECANCELED);
 *  - a ring torn down while the process and the device fd live cancels
 *    its parked waits: io_uring's exit work would otherwise wait for them
 *    (a WARNING after five minutes).
 *
 * Streams are created with the uapi 1.0 STREAM_CREATE, so that the tests
 * run against a driver of any uapi version.
 */
#include <fcntl.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

#define STREAM_CREATE_V0 _IOC(_IOC_READ | _IOC_WRITE, TIO_IOC_MAGIC, \
			      _IOC_NR(TIO_IOC_STREAM_CREATE), TIO_STREAM_CREATE_SIZE_VER0)

FIXTURE(uexit) {
	int fd;
	__u32 stream;
	struct io_uring ring;
	bool ring_up;
};

FIXTURE_SETUP(uexit)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit em = { 0 };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tio_ioc(self->fd, STREAM_CREATE_V0, &sc));
	self->stream = em.stream = sc.handle;
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_EMIT, &em));
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_EMIT, &em));
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	self->ring_up = true;
}

FIXTURE_TEARDOWN(uexit)
{
	if (self->ring_up)
		io_uring_queue_exit(&self->ring);
	close(self->fd);
}

static int signal_point(int fd, __u32 stream, __u64 seqno)
{
	struct tio_fence_signal sg = { .stream = stream, .seqno = seqno };

	return tio_ioc(fd, TIO_IOC_FENCE_SIGNAL, &sg);
}

/* Poll a debugfs count of this file until it reads @want. */
static void wait_stat(const char *key, long long want)
{
	while (tio_dbg_file_stat(key) != want)
		usleep(10000);
}

TEST_F_TIMEOUT(uexit, async_wait_outlives_its_worker, 90)
{
	struct tio_cmd rec = { .op = TIO_IOC_FENCE_WAIT };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)&rec, .count = 1 };
	struct tio_fence_wait wa = { .stream = self->stream, .seqno = 2,
				     .timeout_ns = -1 };
	struct tio_fence_wait wb = { .stream = self->stream, .seqno = 1,
				     .timeout_ns = -1 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;

	/* Worker 1 blocks in a SUBMIT waiting for point 2. */
	memcpy(rec.payload.bytes, &wa, sizeof(wa));
	sqe = io_uring_get_sqe(&self->ring);
	ASSERT_NE(NULL, sqe);
	tio_prep_cmd(sqe, self->fd, false, TIO_IOC_SUBMIT, &s);
	sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = 1;
	/* Worker 2 issues a wait for point 1, which parks. */
	sqe = io_uring_get_sqe(&self->ring);
	ASSERT_NE(NULL, sqe);
	tio_prep_cmd(sqe, self->fd, false, TIO_IOC_FENCE_WAIT, &wb);
	sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = 2;
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	wait_stat("pending_waits", 1);
	wait_stat("parked_uring", 1);
	/* Worker 2, idle, exits after 5 s; the wait must stay parked. */
	sleep(8);
	EXPECT_EQ(-EAGAIN, io_uring_peek_cqe(&self->ring, &cqe)) {
		TH_LOG("CQE %llu res %d before any point signalled",
		       (unsigned long long)cqe->user_data, cqe->res);
	}
	/* Point 1 alone (signalling 2 would signal 1 too). */
	ASSERT_EQ(0, signal_point(self->fd, self->stream, 1));
	ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
	EXPECT_EQ(2, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&self->ring, cqe);
	ASSERT_EQ(0, signal_point(self->fd, self->stream, 2));
	ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
	EXPECT_EQ(1, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	EXPECT_EQ(0, rec.result);
	io_uring_cqe_seen(&self->ring, cqe);
}

TEST_F_TIMEOUT(uexit, ring_exit_cancels_parked_wait, 60)
{
	struct tio_fence_wait w = { .stream = self->stream, .seqno = 1,
				    .timeout_ns = -1 };

	ASSERT_EQ(0, tio_uring_submit(&self->ring, self->fd, false,
				      TIO_IOC_FENCE_WAIT, &w, 1));
	wait_stat("parked_uring", 1);
	/* The ring goes, the process and the device fd stay. */
	io_uring_queue_exit(&self->ring);
	self->ring_up = false;
	wait_stat("parked_uring", 0);
	/* The stream is untouched. */
	EXPECT_EQ(0, signal_point(self->fd, self->stream, 1));
}

TEST_HARNESS_MAIN
