// SPDX-License-Identifier: GPL-2.0
/*
 * Streams: STREAM_CREATE/DESTROY, FENCE_EMIT/SIGNAL/WAIT and the seqno
 * page, with their bad inputs, ordering rules, cancellation and threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/tensorio.h>

#include "kselftest_harness.h"

#define TIO_DEV "/dev/tensorio"

static int tio_open(void)
{
	return open(TIO_DEV, O_RDWR | O_CLOEXEC);
}

static int stream_create(int fd, __u32 *handle, __u64 *offset)
{
	struct tio_stream_create c = { 0 };

	if (ioctl(fd, TIO_IOC_STREAM_CREATE, &c))
		return -errno;
	*handle = c.handle;
	if (offset)
		*offset = c.seqno_offset;
	return 0;
}

/* Returns the new stream's handle, or 0. */
static __u32 stream_new(int fd)
{
	__u32 h = 0;

	return stream_create(fd, &h, NULL) ? 0 : h;
}

static int stream_destroy(int fd, __u32 handle)
{
	struct tio_handle_op d = { .handle = handle };

	return ioctl(fd, TIO_IOC_STREAM_DESTROY, &d) ? -errno : 0;
}

/* Returns the new seqno, or 0 with errno set. */
static __u64 emit(int fd, __u32 stream)
{
	struct tio_fence_emit e = { .stream = stream };

	if (ioctl(fd, TIO_IOC_FENCE_EMIT, &e))
		return 0;
	return e.seqno;
}

static int fsignal(int fd, __u32 stream, __u64 seqno, int error)
{
	struct tio_fence_signal s = {
		.stream = stream, .seqno = seqno, .error = error,
	};

	return ioctl(fd, TIO_IOC_FENCE_SIGNAL, &s) ? -errno : 0;
}

/* Returns 0 and the fence's status, or -errno. */
static int fwait(int fd, __u32 stream, __u64 seqno, __s64 timeout, __u32 flags,
		 int *status)
{
	struct tio_fence_wait w = {
		.stream = stream, .seqno = seqno, .timeout_ns = timeout,
		.flags = flags, .status = 12345,
	};

	if (ioctl(fd, TIO_IOC_FENCE_WAIT, &w))
		return -errno;
	if (status)
		*status = w.status;
	return 0;
}

static __s64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

FIXTURE(stream) {
	int fd;
	__u32 s;
	__u64 off;
};

FIXTURE_SETUP(stream)
{
	struct tio_info info = { 0 };

	self->fd = tio_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_STREAMS))
		/* Skips the body too (plain SKIP in a setup does not). */
		SKIP({ _metadata->passed = 0; return; }, "no TIO_FEAT_STREAMS");
	ASSERT_EQ(0, stream_create(self->fd, &self->s, &self->off));
}

FIXTURE_TEARDOWN(stream)
{
	close(self->fd);
}

TEST_F(stream, create_two)
{
	struct tio_stream_create a = { 0 }, b = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &a));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &b));
	EXPECT_NE(0, a.handle);
	EXPECT_NE(a.handle, b.handle);
	EXPECT_NE(a.context, b.context);
	EXPECT_EQ((__u64)a.handle << 40, a.seqno_offset);
	EXPECT_EQ((__u64)b.handle << 40, b.seqno_offset);
	EXPECT_EQ(0, stream_destroy(self->fd, a.handle));
	EXPECT_EQ(0, stream_destroy(self->fd, b.handle));
}

TEST_F(stream, create_rejects_flags)
{
	struct tio_stream_create c = { .flags = 2 };	/* 1: a doorbell */

	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 0x80000000;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(stream, destroy_twice)
{
	struct tio_handle_op d = { .handle = self->s, .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_STREAM_DESTROY, &d));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, stream_destroy(self->fd, 0));
	EXPECT_EQ(-ENOENT, stream_destroy(self->fd, self->s + 1000));
	EXPECT_EQ(0, stream_destroy(self->fd, self->s));
	EXPECT_EQ(-ENOENT, stream_destroy(self->fd, self->s));
	/* Emitting after destroy: the handle is gone. */
	EXPECT_EQ(0, emit(self->fd, self->s));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(stream, emit_seqnos)
{
	struct tio_fence_emit e = { .stream = self->s, .flags = 1 };

	EXPECT_EQ(1, emit(self->fd, self->s));
	EXPECT_EQ(2, emit(self->fd, self->s));
	EXPECT_EQ(3, emit(self->fd, self->s));
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, emit(self->fd, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, emit(self->fd, self->s + 1));
	EXPECT_EQ(ENOENT, errno);
	/* Seqnos are per stream. */
	EXPECT_EQ(1, emit(self->fd, stream_new(self->fd)));
}

TEST_F(stream, other_files_handles)
{
	int fd2 = tio_open();
	__u32 s2;

	ASSERT_LE(0, fd2);
	/* A handle of fd2 that fd does not have. */
	ASSERT_NE(0, stream_new(fd2));
	s2 = stream_new(fd2);
	ASSERT_NE(0, s2);
	ASSERT_NE(self->s, s2);
	ASSERT_EQ(1, emit(fd2, s2));
	EXPECT_EQ(0, emit(self->fd, s2));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-ENOENT, fsignal(self->fd, s2, 1, 0));
	EXPECT_EQ(-ENOENT, fwait(self->fd, s2, 1, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, stream_destroy(self->fd, s2));
	EXPECT_EQ(0, fsignal(fd2, s2, 1, 0));
	close(fd2);
}

TEST_F(stream, signal_bad_inputs)
{
	struct tio_fence_signal s = { .stream = self->s, .seqno = 1 };

	ASSERT_EQ(1, emit(self->fd, self->s));
	s.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_SIGNAL, &s));
	EXPECT_EQ(EINVAL, errno);
	s.flags = 0;
	s.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_SIGNAL, &s));
	EXPECT_EQ(EINVAL, errno);
	s.pad = 0;
	EXPECT_EQ(-EINVAL, fsignal(self->fd, self->s, 1, 5));	/* > 0 */
	EXPECT_EQ(-EINVAL, fsignal(self->fd, self->s, 1, -4096));
	EXPECT_EQ(-EINVAL, fsignal(self->fd, self->s, 2, 0));	/* not emitted */
	EXPECT_EQ(-EINVAL, fsignal(self->fd, self->s, ~0ULL, 0));
	EXPECT_EQ(-ENOENT, fsignal(self->fd, 0, 1, 0));
	/* None of that signalled anything. */
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, 0, 0, NULL));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 1, -4095));
}

TEST_F(stream, signal_in_order_and_idempotent)
{
	int st = 1;

	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, emit(self->fd, self->s));
	ASSERT_EQ(3, emit(self->fd, self->s));
	ASSERT_EQ(4, emit(self->fd, self->s));
	/* Signalling 3 signals 1..3, not 4. */
	EXPECT_EQ(0, fsignal(self->fd, self->s, 3, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, 0, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 2, 0, 0, &st));
	EXPECT_EQ(0, fwait(self->fd, self->s, 3, 0, 0, &st));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 4, 0, 0, &st));
	/* Signalling an earlier or the same point again: no-op, 0. */
	EXPECT_EQ(0, fsignal(self->fd, self->s, 2, -EIO));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 3, 0));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 0, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 2, 0, 0, &st));
	EXPECT_EQ(0, st);	/* the late error did not stick */
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 4, 0, 0, &st));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 4, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 4, 0, 0, &st));
}

TEST_F(stream, signal_error_reaches_waits)
{
	int st = 0;

	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, emit(self->fd, self->s));
	ASSERT_EQ(3, emit(self->fd, self->s));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 2, -EIO));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 3, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, 0, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 2, -1, 0, &st));
	EXPECT_EQ(-EIO, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 3, 0, 0, &st));
	EXPECT_EQ(0, st);
	/* A range signalled with an error: every point carries it. */
	ASSERT_EQ(4, emit(self->fd, self->s));
	ASSERT_EQ(5, emit(self->fd, self->s));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 5, -ENODATA));
	EXPECT_EQ(0, fwait(self->fd, self->s, 4, 0, 0, &st));
	EXPECT_EQ(-ENODATA, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 5, 0, 0, &st));
	EXPECT_EQ(-ENODATA, st);
	/* Still so after many later points retired. */
	for (int i = 0; i < 100; i++) {
		ASSERT_NE(0, emit(self->fd, self->s));
	}
	EXPECT_EQ(0, fsignal(self->fd, self->s, 105, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 2, 0, 0, &st));
	EXPECT_EQ(-EIO, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 50, 0, 0, &st));
	EXPECT_EQ(0, st);
}

TEST_F(stream, wait_bad_inputs)
{
	struct tio_fence_wait w = { .stream = self->s, .seqno = 1 };

	ASSERT_EQ(1, emit(self->fd, self->s));
	w.flags = 2;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	w.flags = 0;
	w.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, fwait(self->fd, self->s, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, fwait(self->fd, self->s, 2, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, fwait(self->fd, self->s, ~0ULL, -1, 0, NULL));
	EXPECT_EQ(-ENOENT, fwait(self->fd, 0, 1, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, fwait(self->fd, self->s + 7, 1, 0, 0, NULL));
}

TEST_F(stream, wait_timeouts)
{
	int st = 1;

	ASSERT_EQ(1, emit(self->fd, self->s));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, 0, 0, &st));	/* poll */
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, 1000000, 0, &st));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, 0,
				TIO_WAIT_F_ABSOLUTE, &st));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, now_ns() + 1000000,
				TIO_WAIT_F_ABSOLUTE, &st));
	EXPECT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, 0, &st));
	EXPECT_EQ(0, st);
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 1000000, 0, &st));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, -1, 0, &st));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, 0, TIO_WAIT_F_ABSOLUTE, &st));
	EXPECT_EQ(0, fwait(self->fd, self->s, 1, now_ns() + 1000000000LL,
			   TIO_WAIT_F_ABSOLUTE, &st));
	EXPECT_EQ(0, st);
}

struct waiter {
	int fd;
	__u32 s;
	__u64 seqno;
	__s64 timeout;
	int ret;
	int status;
	pthread_t th;
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	w->ret = fwait(w->fd, w->s, w->seqno, w->timeout, 0, &w->status);
	return NULL;
}

#define NWAIT 8

TEST_F(stream, threads_one_signals_n_wait)
{
	struct waiter w[NWAIT];
	int i;

	for (i = 0; i < NWAIT; i++) {
		ASSERT_EQ(i + 1, emit(self->fd, self->s));
	}
	for (i = 0; i < NWAIT; i++) {
		w[i] = (struct waiter){ .fd = self->fd, .s = self->s,
			.seqno = i + 1, .timeout = -1, .ret = 1, .status = 1 };
		ASSERT_EQ(0, pthread_create(&w[i].th, NULL, waiter_fn, &w[i]));
	}
	for (i = 0; i < NWAIT; i++) {
		ASSERT_EQ(0, fsignal(self->fd, self->s, i + 1,
				     i == NWAIT - 1 ? -EPROTO : 0));
	}
	for (i = 0; i < NWAIT; i++) {
		pthread_join(w[i].th, NULL);
		EXPECT_EQ(0, w[i].ret);
		EXPECT_EQ(i == NWAIT - 1 ? -EPROTO : 0, w[i].status);
	}
}

TEST_F(stream, error_reaches_every_waiter)
{
	struct waiter w[NWAIT];
	int i;

	ASSERT_EQ(1, emit(self->fd, self->s));
	for (i = 0; i < NWAIT; i++) {
		w[i] = (struct waiter){ .fd = self->fd, .s = self->s,
			.seqno = 1, .timeout = -1, .ret = 1, .status = 1 };
		ASSERT_EQ(0, pthread_create(&w[i].th, NULL, waiter_fn, &w[i]));
	}
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, -EHOSTDOWN));
	for (i = 0; i < NWAIT; i++) {
		pthread_join(w[i].th, NULL);
		EXPECT_EQ(0, w[i].ret);
		EXPECT_EQ(-EHOSTDOWN, w[i].status);
	}
}

TEST_F(stream, destroy_wakes_waiters)
{
	struct waiter w[NWAIT];
	int i;

	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, emit(self->fd, self->s));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 1, 0));
	for (i = 0; i < NWAIT; i++) {
		w[i] = (struct waiter){ .fd = self->fd, .s = self->s,
			.seqno = 2, .timeout = -1, .ret = 1, .status = 1 };
		ASSERT_EQ(0, pthread_create(&w[i].th, NULL, waiter_fn, &w[i]));
	}
	/* Waiters that have not started yet see -ENOENT; both are fine. */
	ASSERT_EQ(0, stream_destroy(self->fd, self->s));
	for (i = 0; i < NWAIT; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].ret == -ENOENT)
			continue;
		EXPECT_EQ(0, w[i].ret);
		EXPECT_EQ(-ECANCELED, w[i].status);
	}
}

static void on_alarm(int sig)
{
}

TEST_F(stream, wait_interrupted)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	/* Repeating, so that a tick before the wait cannot make it hang. */
	struct itimerval it = {
		.it_value = { .tv_usec = 20000 },
		.it_interval = { .tv_usec = 20000 },
	};
	struct itimerval off = { 0 };
	int st = 0;

	ASSERT_EQ(1, emit(self->fd, self->s));
	/* Without SA_RESTART the wait ends with EINTR. */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-EINTR, fwait(self->fd, self->s, 1, -1, 0, &st));
	setitimer(ITIMER_REAL, &off, NULL);
	/* With SA_RESTART it is restarted and goes on waiting. */
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 1, now_ns() + 200000000LL,
				TIO_WAIT_F_ABSOLUTE, &st));
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
}

TEST_F(stream, seqno_page)
{
	volatile __u64 *word;
	void *p;

	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, self->off);
	ASSERT_NE(MAP_FAILED, word);
	EXPECT_EQ(0, *word);
	ASSERT_EQ(1, emit(self->fd, self->s));
	ASSERT_EQ(2, emit(self->fd, self->s));
	ASSERT_EQ(3, emit(self->fd, self->s));
	EXPECT_EQ(0, *word);
	ASSERT_EQ(0, fsignal(self->fd, self->s, 2, 0));
	EXPECT_EQ(2, *word);
	ASSERT_EQ(0, fsignal(self->fd, self->s, 3, -EIO));
	EXPECT_EQ(3, *word);	/* signalled, even with an error */
	/* Read-only for good. */
	EXPECT_EQ(-1, mprotect((void *)word, 4096, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 self->off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
		 self->off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* One page at offset 0 of the window. */
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->fd, self->off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, self->off + 4096);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* Unknown handle's window. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		 self->off + (1ULL << 40));
	EXPECT_EQ(MAP_FAILED, p);
	/* The mapping outlives the stream and shows the cancelled points. */
	ASSERT_EQ(4, emit(self->fd, self->s));
	ASSERT_EQ(5, emit(self->fd, self->s));
	ASSERT_EQ(0, stream_destroy(self->fd, self->s));
	EXPECT_EQ(5, *word);
	EXPECT_EQ(0, munmap((void *)word, 4096));
}

struct page_reader {
	volatile __u64 *word;
	__u64 last;
	int backwards;
	volatile int stop;
};

static void *page_reader_fn(void *arg)
{
	struct page_reader *r = arg;

	while (!r->stop || r->last < 1000) {
		__u64 v = __atomic_load_n(r->word, __ATOMIC_ACQUIRE);

		if (v < r->last)
			r->backwards++;
		r->last = v;
	}
	return NULL;
}

TEST_F(stream, seqno_page_monotonic)
{
	struct page_reader r = { 0 };
	pthread_t th;
	int i;

	r.word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, self->off);
	ASSERT_NE(MAP_FAILED, r.word);
	ASSERT_EQ(0, pthread_create(&th, NULL, page_reader_fn, &r));
	for (i = 1; i <= 1000; i++) {
		ASSERT_EQ(i, emit(self->fd, self->s));
		ASSERT_EQ(0, fsignal(self->fd, self->s, i, 0));
		/* The page is updated before FENCE_SIGNAL returns. */
		ASSERT_LE(i, *r.word);
	}
	r.stop = 1;
	pthread_join(th, NULL);
	EXPECT_EQ(0, r.backwards);
	EXPECT_EQ(1000, r.last);
	munmap((void *)r.word, 4096);
}

TEST_F(stream, close_with_pending_points)
{
	int fd2 = tio_open();
	__u32 s2;
	int i;

	ASSERT_LE(0, fd2);
	s2 = stream_new(fd2);
	ASSERT_NE(0, s2);
	for (i = 0; i < 1000; i++) {
		ASSERT_NE(0, emit(fd2, s2));
	}
	ASSERT_EQ(0, fsignal(fd2, s2, 10, -EIO));
	/* Release cancels 11..1000 and frees everything; unload checks it. */
	EXPECT_EQ(0, close(fd2));
}

/*
 * Points get a fence only when one is asked for: many points without one
 * signal at once, the seqno word stays exact, and a fence asked for
 * before or after its point signalled reports the point's own outcome.
 */
TEST_F(stream, many_points_signalled_at_once)
{
	volatile __u64 *word;
	int i, st = 1;

	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, self->off);
	ASSERT_NE(MAP_FAILED, word);
	for (i = 1; i <= 10000; i++)
		ASSERT_EQ(i, emit(self->fd, self->s));
	EXPECT_EQ(0, *word);
	/* A fence for a point in the middle, before anything signalled. */
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 5000, 0, 0, &st));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 4999, 0));
	EXPECT_EQ(4999, *word);
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 5000, 0, 0, &st));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 10000, 0));
	EXPECT_EQ(10000, *word);
	for (i = 1; i <= 10000; i += 1111) {
		st = 1;
		EXPECT_EQ(0, fwait(self->fd, self->s, i, 0, 0, &st));
		EXPECT_EQ(0, st);
	}
	EXPECT_EQ(0, fwait(self->fd, self->s, 5000, 0, 0, &st));
	EXPECT_EQ(0, st);
	/* Nothing past the last point. */
	EXPECT_EQ(-EINVAL, fwait(self->fd, self->s, 10001, 0, 0, &st));
	EXPECT_EQ(-EINVAL, fsignal(self->fd, self->s, 10001, 0));
	munmap((void *)word, 4096);
}

/* Each point keeps the outcome of the first signal that reached it. */
TEST_F(stream, runs_of_errors)
{
	static const int want[] = { -EIO, -EIO, 0, 0, -EIO, -EINTR, -EINTR, 0 };
	volatile __u64 *word;
	int i, st;

	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, self->off);
	ASSERT_NE(MAP_FAILED, word);
	for (i = 1; i <= 8; i++)
		ASSERT_EQ(i, emit(self->fd, self->s));
	/* Point 7 has a fence before it signals; the others do not. */
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, 7, 0, 0, &st));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 2, -EIO));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 4, 0));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 5, -EIO));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 7, -EINTR));
	/* Signalling again changes nothing. */
	ASSERT_EQ(0, fsignal(self->fd, self->s, 7, -EPERM));
	ASSERT_EQ(0, fsignal(self->fd, self->s, 3, -EPERM));
	EXPECT_EQ(7, *word);
	ASSERT_EQ(0, fsignal(self->fd, self->s, 8, 0));
	EXPECT_EQ(8, *word);
	for (i = 1; i <= 8; i++) {
		st = 1;
		EXPECT_EQ(0, fwait(self->fd, self->s, i, 0, 0, &st));
		EXPECT_EQ(want[i - 1], st) TH_LOG("point %d", i);
	}
	munmap((void *)word, 4096);
}

TEST_HARNESS_MAIN
