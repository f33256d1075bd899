// SPDX-License-Identifier: GPL-2.0
/*
 * uring_cmd with the payload inline in a 128-byte SQE (struct
 * tio_uring_inline): results in res, bytes 8..15 of the returned payload
 * in a CQE32's big_cqe[0], the whole of it at result_ptr; refused on
 * 64-byte SQE rings; the record rules for the payload; fds only with a
 * result pointer; waits (which do not park) run; every kind of result
 * of a batch on each completion path, through a registered file too;
 * INFO's whole output at result_ptr on a ring without CQE32; skipped
 * successes post nothing.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

/* Queue one inline command with SQE flags @sqe_flags (fd: its index if fixed). */
static void prep_inline(struct io_uring_sqe *sqe, int fd, unsigned int sqe_flags,
			unsigned int cmd, const void *payload, size_t size,
			void *out, __u64 flags)
{
	struct tio_uring_inline in = { .result_ptr = (uintptr_t)out, .flags = flags };

	if (payload)
		memcpy(in.payload, payload, size);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->flags |= sqe_flags;
	sqe->cmd_op = cmd;
	memcpy(sqe->cmd, &in, sizeof(in));
}

/* Submit one inline command; res and big_cqe[0] (0 without CQE32). */
static int run_inline_f(struct io_uring *ring, int fd, unsigned int sqe_flags,
			unsigned int cmd, const void *payload, size_t size,
			void *out, __u64 flags, __u64 *res2)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int res;

	if (!sqe)
		return TIO_RING_ERR;
	prep_inline(sqe, fd, sqe_flags, cmd, payload, size, out, flags);
	sqe->user_data = 0x1b1e;
	if (io_uring_submit(ring) != 1 || io_uring_wait_cqe(ring, &cqe))
		return TIO_RING_ERR;
	res = cqe->user_data == 0x1b1e ? cqe->res : TIO_RING_ERR;
	if (res2)
		*res2 = (ring->flags & IORING_SETUP_CQE32) ? cqe->big_cqe[0] : 0;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int run_inline(struct io_uring *ring, int fd, unsigned int cmd,
		      const void *payload, size_t size, void *out,
		      __u64 flags, __u64 *res2)
{
	return run_inline_f(ring, fd, 0, cmd, payload, size, out, flags, res2);
}

FIXTURE(inl) {
	int fd;
	struct io_uring ring;
	bool have;
};

FIXTURE_SETUP(inl)
{
	struct tio_info info = { 0 };

	self->have = false;
	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_URING_CMD) || info.version < 0x10002)
		SKIP(return, "no uring_cmd or uapi < 1.2");
	ASSERT_EQ(0, io_uring_queue_init(64, &self->ring,
					 IORING_SETUP_SQE128 | IORING_SETUP_CQE32));
	self->have = true;
}

FIXTURE_TEARDOWN(inl)
{
	if (self->have)
		io_uring_queue_exit(&self->ring);
	close(self->fd);
}

TEST_F(inl, info_and_emit_through_cqe32)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_info out = { 0 };
	__u64 res2;

	ASSERT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_INFO, NULL, 0,
				NULL, TIO_URING_F_INLINE, &res2));
	EXPECT_NE(0, res2 & TIO_FEAT_RING);
	ASSERT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_INFO, NULL, 0,
				&out, TIO_URING_F_INLINE, &res2));
	EXPECT_EQ(TIO_UAPI_VERSION, out.version);
	EXPECT_EQ(out.features, res2);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	for (int i = 1; i <= 3; i++) {
		ASSERT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_FENCE_EMIT,
					&e, sizeof(e), NULL, TIO_URING_F_INLINE, &res2));
		EXPECT_EQ(i, res2);
	}
	/* The payload in the SQE was input only: our copy is untouched. */
	EXPECT_EQ(0, e.seqno);
}

TEST_F(inl, alloc_free_with_result_pointer)
{
	struct tio_buf_alloc a = { .size = 8192 }, got = { 0 };
	struct tio_buf_info bi = { 0 };
	struct tio_handle_op f = { 0 };
	__u64 res2;

	ASSERT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_BUF_ALLOC, &a,
				sizeof(a), &got, TIO_URING_F_INLINE, &res2));
	ASSERT_NE(0, got.handle);
	EXPECT_EQ(8192, got.size);
	EXPECT_EQ(got.handle, res2 >> 32);
	bi.handle = got.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(8192, bi.size);
	f.handle = got.handle;
	EXPECT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_BUF_FREE, &f,
				sizeof(f), NULL, TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(-ENOENT, run_inline(&self->ring, self->fd, TIO_IOC_BUF_FREE, &f,
				      sizeof(f), NULL, TIO_URING_F_INLINE, NULL));
}

TEST_F(inl, payload_rules)
{
	struct tio_info bad = { .pad = 1 }, out = { .version = 7 };
	struct tio_handle_op f = { .handle = 1 };
	struct tio_submit sub = { 0 };
	__u8 tail[TIO_CMD_PAYLOAD] = { 0 };

	EXPECT_EQ(-EINVAL, run_inline(&self->ring, self->fd, TIO_IOC_INFO, &bad,
				      sizeof(bad), &out, TIO_URING_F_INLINE, NULL));
	bad.pad = 0;
	bad.flags = 1;
	EXPECT_EQ(-EINVAL, run_inline(&self->ring, self->fd, TIO_IOC_INFO, &bad,
				      sizeof(bad), &out, TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(7, out.version);	/* a failed INFO writes nothing */
	/* Non-zero past the caller's size. */
	tail[sizeof(f) + 1] = 1;
	memcpy(tail, &f, sizeof(f));
	EXPECT_EQ(-EINVAL, run_inline(&self->ring, self->fd, TIO_IOC_BUF_FREE, tail,
				      sizeof(tail), NULL, TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(-EINVAL, run_inline(&self->ring, self->fd, TIO_IOC_SUBMIT, &sub,
				      sizeof(sub), NULL, TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(-EINVAL, run_inline(&self->ring, self->fd, TIO_IOC_INFO, NULL, 0,
				      NULL, 2, NULL));
	EXPECT_EQ(-ENOTTY, run_inline(&self->ring, self->fd,
				      _IOWR(TIO_IOC_MAGIC, 0x3f, struct tio_info),
				      NULL, 0, NULL, TIO_URING_F_INLINE, NULL));
	/* A result pointer that cannot be written. */
	EXPECT_EQ(-EFAULT, run_inline(&self->ring, self->fd, TIO_IOC_INFO, NULL, 0,
				      (void *)8, TIO_URING_F_INLINE, NULL));
}

/* An export's fd needs a result pointer; without one nothing is left. */
TEST_F(inl, fds_only_with_a_result_pointer)
{
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_buf_export x = { .flags = TIO_EXPORT_F_CLOEXEC }, got = { 0 };
	int probe, next;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	x.handle = a.handle;
	probe = dup(0);
	ASSERT_LE(0, probe);
	close(probe);
	EXPECT_EQ(-EINVAL, run_inline(&self->ring, self->fd, TIO_IOC_BUF_EXPORT, &x,
				      sizeof(x), NULL, TIO_URING_F_INLINE, NULL));
	next = dup(0);
	EXPECT_EQ(probe, next);		/* no fd was left installed */
	close(next);
	ASSERT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_BUF_EXPORT, &x,
				sizeof(x), &got, TIO_URING_F_INLINE, NULL));
	EXPECT_LE(0, got.fd);
	EXPECT_EQ(0, fcntl(got.fd, F_GETFD) < 0);
	close(got.fd);
}

/* A wait with a timeout does not park inline: io-wq runs it. */
TEST_F(inl, wait_runs)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_fence_signal s = { 0 };
	struct tio_fence_wait w = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = s.stream = w.stream = sc.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	s.seqno = w.seqno = e.seqno;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_SIGNAL, &s));
	w.timeout_ns = 1000000000;
	EXPECT_EQ(0, run_inline(&self->ring, self->fd, TIO_IOC_FENCE_WAIT, &w,
				sizeof(w), NULL, TIO_URING_F_INLINE, NULL));
}

/* 64 inline commands in one submit. */
TEST_F(inl, batch_of_64)
{
	struct tio_uring_inline in = { .flags = TIO_URING_F_INLINE };
	struct io_uring_cqe *cqe;
	unsigned int i, seen = 0;

	for (i = 0; i < 64; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&self->ring);

		ASSERT_NE(NULL, sqe);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, self->fd, NULL, 0, 0);
		sqe->cmd_op = TIO_IOC_INFO;
		memcpy(sqe->cmd, &in, sizeof(in));
	}
	ASSERT_EQ(64, io_uring_submit_and_wait(&self->ring, 64));
	while (seen < 64 && !io_uring_peek_cqe(&self->ring, &cqe)) {
		EXPECT_EQ(0, cqe->res);
		EXPECT_NE(0, cqe->big_cqe[0] & TIO_FEAT_RING);
		io_uring_cqe_seen(&self->ring, cqe);
		seen++;
	}
	EXPECT_EQ(64, seen);
}

/* Queue an inline command tagged @tag, without a result pointer. */
static void queue_inline(struct io_uring *ring, __u64 tag, int fd,
			 unsigned int sqe_flags, unsigned int cmd,
			 const void *payload, size_t size)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	prep_inline(sqe, fd, sqe_flags, cmd, payload, size, NULL,
		    TIO_URING_F_INLINE);
	sqe->user_data = tag;
}

/*
 * Every kind of result of one batch, each CQE matched by user_data:
 * successes without an extra word (FENCE_SIGNAL) complete at issue on
 * io_uring's batched path, those with one through io_uring_cmd_done();
 * errors and io-wq issue (IOSQE_ASYNC) take the other completion paths.
 */
static void check_batch(struct __test_metadata *_metadata, struct io_uring *ring,
			int fd, int sqe_flags, int dev)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_fence_signal sg = { 0 };
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_handle_op bad = { .handle = 0x7fffffff };
	struct tio_buf_info bi = { 0 };
	__u64 res2[5] = { 0 };
	int res[5], seen = 0;
	struct io_uring_cqe *cqe;

	ASSERT_EQ(0, ioctl(dev, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sg.stream = sc.handle;
	ASSERT_EQ(0, ioctl(dev, TIO_IOC_FENCE_EMIT, &e));	/* seqno 1 */
	sg.seqno = 1;
	queue_inline(ring, 0, fd, sqe_flags, TIO_IOC_INFO, NULL, 0);
	queue_inline(ring, 1, fd, sqe_flags, TIO_IOC_BUF_ALLOC, &a, sizeof(a));
	queue_inline(ring, 2, fd, sqe_flags, TIO_IOC_FENCE_EMIT, &e, sizeof(e));
	queue_inline(ring, 3, fd, sqe_flags, TIO_IOC_FENCE_SIGNAL, &sg, sizeof(sg));
	queue_inline(ring, 4, fd, sqe_flags, TIO_IOC_BUF_FREE, &bad, sizeof(bad));
	ASSERT_EQ(5, io_uring_submit_and_wait(ring, 5));
	while (seen < 5 && !io_uring_peek_cqe(ring, &cqe)) {
		ASSERT_GT(5, cqe->user_data);
		res[cqe->user_data] = cqe->res;
		res2[cqe->user_data] = cqe->big_cqe[0];
		io_uring_cqe_seen(ring, cqe);
		seen++;
	}
	ASSERT_EQ(5, seen);
	EXPECT_EQ(0, res[0]);
	EXPECT_NE(0, res2[0] & TIO_FEAT_RING);
	EXPECT_EQ(0, res[1]);
	bi.handle = res2[1] >> 32;
	EXPECT_NE(0, bi.handle);
	EXPECT_EQ(0, ioctl(dev, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(4096, bi.size);
	EXPECT_EQ(0, res[2]);
	EXPECT_EQ(2, res2[2]);
	EXPECT_EQ(0, res[3]);
	EXPECT_EQ(0, res2[3]);
	EXPECT_EQ(-ENOENT, res[4]);
	EXPECT_EQ(0, res2[4]);
	e.seqno = 0;
	ASSERT_EQ(0, ioctl(dev, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(3, e.seqno);
	bad.handle = bi.handle;
	EXPECT_EQ(0, ioctl(dev, TIO_IOC_BUF_FREE, &bad));
}

TEST_F(inl, results_of_one_batch)
{
	check_batch(_metadata, &self->ring, self->fd, 0, self->fd);
}

TEST_F(inl, results_of_one_batch_from_io_wq)
{
	check_batch(_metadata, &self->ring, self->fd, IOSQE_ASYNC, self->fd);
}

/* The device as registered file 0, its descriptor closed meanwhile. */
TEST_F(inl, registered_file)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_info info = { 0 };
	int dup_fd = dup(self->fd);
	__u64 res2;

	ASSERT_LE(0, dup_fd);
	ASSERT_EQ(0, io_uring_register_files(&self->ring, &dup_fd, 1));
	ASSERT_EQ(0, close(dup_fd));
	check_batch(_metadata, &self->ring, 0, IOSQE_FIXED_FILE, self->fd);
	check_batch(_metadata, &self->ring, 0, IOSQE_FIXED_FILE | IOSQE_ASYNC,
		    self->fd);
	/* The pointer form through the registered file. */
	EXPECT_EQ(0, tio_uring_run(&self->ring, 0, true, TIO_IOC_INFO, &info));
	EXPECT_EQ(TIO_UAPI_VERSION, info.version);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	EXPECT_EQ(0, run_inline_f(&self->ring, 0, IOSQE_FIXED_FILE,
				  TIO_IOC_FENCE_EMIT, &e, sizeof(e), NULL,
				  TIO_URING_F_INLINE, &res2));
	EXPECT_EQ(1, res2);
	/* An index past the table: io_uring refuses it before the driver. */
	EXPECT_EQ(-EBADF, run_inline_f(&self->ring, 1, IOSQE_FIXED_FILE,
				       TIO_IOC_INFO, NULL, 0, NULL,
				       TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(0, io_uring_unregister_files(&self->ring));
}

/*
 * IOSQE_CQE_SKIP_SUCCESS: a success posts no CQE on either path (INFO,
 * with an extra word, through io_uring_cmd_done(); BUF_FREE, without,
 * at issue) and leaves nothing behind for the next request of the ring
 * (a NOP has no extra word); a failure still posts its CQE.
 */
TEST_F(inl, skipped_cqe_posts_nothing)
{
	int i;

	for (i = 0; i < 8; i++) {
		struct tio_buf_alloc a = { .size = 4096 };
		struct tio_handle_op f = { 0 };
		struct tio_info info = { 0 };
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;
		int seen;

		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
		f.handle = a.handle;
		sqe = io_uring_get_sqe(&self->ring);
		prep_inline(sqe, self->fd, IOSQE_CQE_SKIP_SUCCESS, TIO_IOC_INFO,
			    NULL, 0, &info, TIO_URING_F_INLINE);
		sqe->user_data = 1;
		sqe = io_uring_get_sqe(&self->ring);
		prep_inline(sqe, self->fd, IOSQE_CQE_SKIP_SUCCESS, TIO_IOC_BUF_FREE,
			    &f, sizeof(f), NULL, TIO_URING_F_INLINE);
		sqe->user_data = 2;
		ASSERT_EQ(2, io_uring_submit(&self->ring));
		sqe = io_uring_get_sqe(&self->ring);
		prep_inline(sqe, self->fd, IOSQE_CQE_SKIP_SUCCESS, TIO_IOC_BUF_FREE,
			    &f, sizeof(f), NULL, TIO_URING_F_INLINE);
		sqe->user_data = 3;
		sqe = io_uring_get_sqe(&self->ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 0x909;
		ASSERT_EQ(2, io_uring_submit_and_wait(&self->ring, 2));
		EXPECT_EQ(TIO_UAPI_VERSION, info.version);
		for (seen = 0; seen < 2; seen++) {
			ASSERT_EQ(0, io_uring_peek_cqe(&self->ring, &cqe));
			if (cqe->user_data == 3) {
				/* The freed handle is gone. */
				EXPECT_EQ(-ENOENT, cqe->res);
			} else {
				EXPECT_EQ(0x909, cqe->user_data);
				EXPECT_EQ(0, cqe->res);
				EXPECT_EQ(0, cqe->big_cqe[0]);
			}
			io_uring_cqe_seen(&self->ring, cqe);
		}
		EXPECT_EQ(-EAGAIN, io_uring_peek_cqe(&self->ring, &cqe));
	}
}

/* Without CQE32 only res travels; the commands still run. */
TEST(results_without_cqe32)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_handle_op bad = { .handle = 0x7fffffff };
	struct tio_info info = { 0 }, out;
	struct io_uring ring;
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	__u64 res2 = 1;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_URING_CMD) || info.version < 0x10002) {
		close(fd);
		SKIP(return, "no uring_cmd or uapi < 1.2");
	}
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_SQE128));
	EXPECT_EQ(0, run_inline(&ring, fd, TIO_IOC_INFO, NULL, 0, NULL,
				TIO_URING_F_INLINE, &res2));
	EXPECT_EQ(0, res2);
	/* INFO's whole output at result_ptr, as ioctl() gives it. */
	memset(&out, 0xa5, sizeof(out));
	EXPECT_EQ(0, run_inline(&ring, fd, TIO_IOC_INFO, NULL, 0, &out,
				TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(0, memcmp(&info, &out, sizeof(out)));
	memset(&out, 0, sizeof(out));
	EXPECT_EQ(0, run_inline_f(&ring, fd, IOSQE_ASYNC, TIO_IOC_INFO, NULL, 0,
				  &out, TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(info.version, out.version);
	EXPECT_EQ(-EFAULT, run_inline(&ring, fd, TIO_IOC_INFO, NULL, 0, (void *)8,
				      TIO_URING_F_INLINE, NULL));
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	EXPECT_EQ(0, run_inline(&ring, fd, TIO_IOC_FENCE_EMIT, &e, sizeof(e), NULL,
				TIO_URING_F_INLINE, NULL));
	EXPECT_EQ(-ENOENT, run_inline(&ring, fd, TIO_IOC_BUF_FREE, &bad, sizeof(bad),
				      NULL, TIO_URING_F_INLINE, NULL));
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(2, e.seqno);		/* the inline emit took seqno 1 */
	io_uring_queue_exit(&ring);
	close(fd);
}

/* Only result_ptr and flags fit a 64-byte SQE: the words the pointer form uses. */
static int inline_on_plain_ring(struct io_uring *ring, int fd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	__u64 w[2] = { 0, TIO_URING_F_INLINE };
	int res;

	if (!sqe)
		return TIO_RING_ERR;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = TIO_IOC_INFO;
	memcpy(sqe->cmd, w, sizeof(w));
	if (io_uring_submit_and_wait(ring, 1) != 1 || io_uring_peek_cqe(ring, &cqe))
		return TIO_RING_ERR;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Inline needs the 80-byte command area of an SQE128 ring. */
TEST(refused_without_sqe128)
{
	struct io_uring ring;
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	struct tio_info info = { 0 };

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_INFO, &info));
	if (info.version < 0x10002) {
		close(fd);
		SKIP(return, "uapi < 1.2");
	}
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	EXPECT_EQ(-EINVAL, inline_on_plain_ring(&ring, fd));
	io_uring_queue_exit(&ring);
	/* The pointer form still works on an SQE128 ring. */
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, IORING_SETUP_SQE128));
	memset(&info, 0, sizeof(info));
	EXPECT_EQ(0, tio_uring_run(&ring, fd, false, TIO_IOC_INFO, &info));
	EXPECT_EQ(TIO_UAPI_VERSION, info.version);
	io_uring_queue_exit(&ring);
	close(fd);
}

TEST_HARNESS_MAIN
