// SPDX-License-Identifier: GPL-2.0
/*
 * Asynchronous FENCE_WAIT and BUF_WAIT through IORING_OP_URING_CMD on
 * /dev/tensorio, on several ring setups: they park until their fence
 * signals (carrying its error, in the order of signalling), time out, or
 * are cancelled by close, ASYNC_CANCEL, ring teardown or the exit of the
 * process that issued them.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"
#include "tio_uring_file.h"

static int feature(uint64_t bit)
{
	struct tio_info info = { 0 };
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return 0;
	ret = !ioctl(fd, TIO_IOC_INFO, &info) && (info.features & bit);
	close(fd);
	return ret;
}

/* No CQE now, nor a little later: only a peek, nothing is timed. */
static bool no_cqe(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 20000000 };

	return io_uring_wait_cqe_timeout(ring, &cqe, &ts) == -ETIME;
}

static int reap(struct io_uring *ring, uint64_t *tag)
{
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_wait_cqe(ring, &cqe))
		return TIO_RING_ERR;
	res = cqe->res;
	if (tag)
		*tag = cqe->user_data;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

FIXTURE(async) {
	struct io_uring ring;
	int fd;
};

FIXTURE_VARIANT(async) {
	unsigned int flags;
	bool fixed;
};

FIXTURE_VARIANT_ADD(async, plain) { .flags = 0, .fixed = false };
FIXTURE_VARIANT_ADD(async, defer_taskrun) {
	.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	.fixed = false,
};
FIXTURE_VARIANT_ADD(async, sqpoll) { .flags = IORING_SETUP_SQPOLL, .fixed = false };
FIXTURE_VARIANT_ADD(async, fixed_file) { .flags = 0, .fixed = true };

FIXTURE_SETUP(async)
{
	struct tio_stream_create sc = { 0 };
	int ret;

	if (!feature(TIO_FEAT_ASYNC_WAIT) || !feature(TIO_FEAT_STREAMS))
		SKIP(return, "no async waits or streams");
	ret = io_uring_queue_init(16, &self->ring, variant->flags);
	if (ret == -EINVAL || ret == -EPERM)
		SKIP(return, "ring flags %#x: %s", variant->flags, strerror(-ret));
	ASSERT_EQ(0, ret);
	self->fd = ring_open(_metadata, &self->ring, variant->fixed);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	ASSERT_EQ(1, sc.handle);
}

FIXTURE_TEARDOWN(async)
{
	if (self->fd >= 0)
		ring_close(&self->ring, self->fd, variant->fixed);
	io_uring_queue_exit(&self->ring);
}

static int emit(int fd)
{
	struct tio_fence_emit e = { .stream = 1 };

	return ioctl(fd, TIO_IOC_FENCE_EMIT, &e) ? -errno : (int)e.seqno;
}

static int signal_to(int fd, __u64 seqno, int error)
{
	struct tio_fence_signal s = { .stream = 1, .seqno = seqno, .error = error };

	return tio_ioc(fd, TIO_IOC_FENCE_SIGNAL, &s);
}

#define SUBMIT_WAIT(w, tag) \
	ASSERT_EQ(0, tio_uring_submit(&self->ring, variant->fixed ? 0 : self->fd, \
				      variant->fixed, TIO_IOC_FENCE_WAIT, (w), (tag)))

TEST_F(async, completes_after_signal)
{
	struct tio_fence_wait w = { .stream = 1, .timeout_ns = -1, .status = 77 };
	uint64_t tag = 0;

	ASSERT_EQ(1, emit(self->fd));
	w.seqno = 1;
	SUBMIT_WAIT(&w, 1);
	ASSERT_TRUE(no_cqe(&self->ring));
	EXPECT_EQ(77, w.status);		/* nothing written yet */
	EXPECT_EQ(1, tio_dbg_file_stat("parked_uring"));
	ASSERT_EQ(0, signal_to(self->fd, 1, 0));
	ASSERT_EQ(0, reap(&self->ring, &tag));
	EXPECT_EQ(1, tag);
	EXPECT_EQ(0, w.status);
	EXPECT_EQ(0, tio_dbg_file_stat("parked_uring"));
}

TEST_F(async, carries_fence_error)
{
	struct tio_fence_wait w = { .stream = 1, .seqno = 1, .timeout_ns = -1 };

	ASSERT_EQ(1, emit(self->fd));
	SUBMIT_WAIT(&w, 1);
	ASSERT_TRUE(no_cqe(&self->ring));
	ASSERT_EQ(0, signal_to(self->fd, 1, -EIO));
	ASSERT_EQ(0, reap(&self->ring, NULL));
	EXPECT_EQ(-EIO, w.status);
}

TEST_F(async, in_order_of_signal)
{
	struct tio_fence_wait w[3];
	uint64_t tag;
	int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(i + 1, emit(self->fd));
		w[i] = (struct tio_fence_wait){ .stream = 1, .seqno = i + 1,
						.timeout_ns = -1 };
		SUBMIT_WAIT(&w[i], i + 1);
	}
	ASSERT_TRUE(no_cqe(&self->ring));
	ASSERT_EQ(0, signal_to(self->fd, 2, 0));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, reap(&self->ring, &tag));
		EXPECT_TRUE(tag == 1 || tag == 2);
	}
	ASSERT_TRUE(no_cqe(&self->ring));
	EXPECT_EQ(1, tio_dbg_file_stat("parked_uring"));
	/* The last one is cancelled by the close in the teardown. */
}

TEST_F(async, times_out)
{
	struct tio_fence_wait w = { .stream = 1, .seqno = 1, .timeout_ns = 5000000 };

	ASSERT_EQ(1, emit(self->fd));
	SUBMIT_WAIT(&w, 1);
	EXPECT_EQ(-ETIME, reap(&self->ring, NULL));
	EXPECT_EQ(0, tio_dbg_file_stat("parked_uring"));
}

TEST_F(async, close_cancels)
{
	struct tio_fence_wait w = { .stream = 1, .seqno = 1, .timeout_ns = -1 };
	uint64_t tag = 0;

	ASSERT_EQ(1, emit(self->fd));
	SUBMIT_WAIT(&w, 9);
	ASSERT_TRUE(no_cqe(&self->ring));
	close(self->fd);
	EXPECT_EQ(-ECANCELED, reap(&self->ring, &tag));
	EXPECT_EQ(9, tag);
	if (variant->fixed)
		io_uring_unregister_files(&self->ring);
	self->fd = -1;
}

TEST_F(async, buf_wait)
{
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_buf_attach att = { .flags = TIO_RESV_F_WRITE, .stream = 1, .seqno = 1 };
	struct tio_buf_wait bw = { .timeout_ns = -1, .status = 5 };

	if (!feature(TIO_FEAT_DMA_RESV))
		SKIP(return, "no dma_resv support");
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	ASSERT_EQ(1, emit(self->fd));
	att.handle = a.handle;
	bw.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &att));
	ASSERT_EQ(0, tio_uring_submit(&self->ring, variant->fixed ? 0 : self->fd,
				      variant->fixed, TIO_IOC_BUF_WAIT, &bw, 3));
	ASSERT_TRUE(no_cqe(&self->ring));
	ASSERT_EQ(0, signal_to(self->fd, 1, -EPIPE));
	ASSERT_EQ(0, reap(&self->ring, NULL));
	EXPECT_EQ(-EPIPE, bw.status);
}

/*
 * IORING_OP_ASYNC_CANCEL does not reach uring commands on the kernels we
 * support (6.1, 6.12): whichever way it answers, the wait must stay
 * consistent: cancelled with -ECANCELED, or still parked until signalled.
 */
TEST_F(async, async_cancel)
{
	struct tio_fence_wait w = { .stream = 1, .seqno = 1, .timeout_ns = -1 };
	struct io_uring_sqe *sqe;
	int i, cancel_res = TIO_RING_ERR, wait_res = TIO_RING_ERR;
	uint64_t tag;

	ASSERT_EQ(1, emit(self->fd));
	SUBMIT_WAIT(&w, 1);
	sqe = io_uring_get_sqe(&self->ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_cancel64(sqe, 1, 0);
	sqe->user_data = 2;
	ASSERT_LE(1, io_uring_submit(&self->ring));
	for (i = 0; i < 2; i++) {
		int res;

		if (i == 1 && wait_res == TIO_RING_ERR) {
			if (!no_cqe(&self->ring))
				TH_LOG("cancel %d yet the wait completed", cancel_res);
			ASSERT_EQ(0, signal_to(self->fd, 1, 0));
		}
		res = reap(&self->ring, &tag);
		if (tag == 2)
			cancel_res = res;
		else
			wait_res = res;
	}
	TH_LOG("ASYNC_CANCEL: %d, wait: %d", cancel_res, wait_res);
	if (cancel_res == 0) {
		EXPECT_EQ(-ECANCELED, wait_res);
	} else {
		EXPECT_EQ(0, wait_res);
	}
}

/* Ring torn down with a wait parked: nothing leaks once the fence signals. */
TEST_F(async, ring_exit)
{
	struct tio_fence_wait w = { .stream = 1, .seqno = 1, .timeout_ns = -1 };
	int i;

	ASSERT_EQ(1, emit(self->fd));
	SUBMIT_WAIT(&w, 1);
	ASSERT_TRUE(no_cqe(&self->ring));
	if (variant->fixed)	/* the ring holds the file: signal first */
		ASSERT_EQ(0, signal_to(self->fd, 1, 0));
	io_uring_queue_exit(&self->ring);
	ASSERT_EQ(0, io_uring_queue_init(4, &self->ring, 0));
	if (variant->fixed) {
		close(self->fd);
		self->fd = ring_open(_metadata, &self->ring, true);
		ASSERT_LE(0, self->fd);
	} else {
		ASSERT_EQ(0, signal_to(self->fd, 1, 0));
	}
	for (i = 0; i < 500 && tio_dbg_stat("parked_uring_total") > 0; i++)
		usleep(10000);
	EXPECT_EQ(0, tio_dbg_stat("parked_uring_total"));
}

/*
 * A child parks a wait on a ring it shares with us, then dies: the wait
 * completes with -ECANCELED and the child's file goes away.
 */
static void exit_with_parked(struct __test_metadata *_metadata, bool kill_it)
{
	struct io_uring ring;
	struct tio_fence_wait *w;
	uint64_t tag = 0;
	int status, pfd[2];
	pid_t pid;
	char c;

	if (!feature(TIO_FEAT_ASYNC_WAIT) || !feature(TIO_FEAT_STREAMS))
		SKIP(return, "no async waits or streams");
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	ASSERT_EQ(0, pipe(pfd));
	/* The payload lives in memory both processes see. */
	w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, w);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct tio_stream_create sc = { 0 };
		struct tio_fence_emit e = { .stream = 1 };
		int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

		if (fd < 0 || ioctl(fd, TIO_IOC_STREAM_CREATE, &sc) ||
		    ioctl(fd, TIO_IOC_FENCE_EMIT, &e))
			_exit(1);
		*w = (struct tio_fence_wait){ .stream = 1, .seqno = e.seqno,
					      .timeout_ns = -1 };
		if (tio_uring_submit(&ring, fd, false, TIO_IOC_FENCE_WAIT, w, 42))
			_exit(2);
		if (write(pfd[1], "p", 1) != 1)
			_exit(3);
		if (kill_it)
			pause();
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	if (kill_it)
		kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (!kill_it)
		ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-ECANCELED, reap(&ring, &tag));
	EXPECT_EQ(42, tag);
	io_uring_queue_exit(&ring);
	close(pfd[0]);
	munmap(w, 4096);
	for (status = 0; status < 500 && tio_dbg_stat("parked_uring_total") > 0; status++)
		usleep(10000);
	EXPECT_EQ(0, tio_dbg_stat("parked_uring_total"));
}

TEST(process_exit_cancels)
{
	exit_with_parked(_metadata, false);
}

TEST(process_kill_cancels)
{
	exit_with_parked(_metadata, true);
}


/*
 * Last: every file of the tests above is released once io_uring's
 * asynchronous ring teardown is done (registered files, SQPOLL threads),
 * so nothing leaked and the module can unload.
 */
TEST(zz_all_files_released)
{
	all_files_released(_metadata);
}

TEST_HARNESS_MAIN
