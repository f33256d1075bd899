// SPDX-License-Identifier: GPL-2.0
/*
 * Stream doorbells (TIO_STREAM_F_DOORBELL, uapi 1.4): the page is mapped
 * shared and read-write at doorbell_offset, and a value written into it
 * from userspace, as a GPU's stream write would, completes the points up
 * to it: at the next request for a fence, and for a waiter that sleeps
 * (FENCE_WAIT, a parked uring wait, poll() on an exported sync_file)
 * from the driver's poll. Never past the last point emitted, never
 * backwards, an expired point stays expired; bad flags and mappings are
 * refused; closing the file with a poll running cancels cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

#define WAIT_NS	(30LL * 1000000000)

FIXTURE(bell) {
	int fd;
	__u32 s;
	__u64 seqno_off;
	volatile __u64 *bell;
	const volatile __u64 *word;
	long page;
};

static int create(int fd, __u32 flags, __u32 timeout_ms, struct tio_stream_create *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->flags = flags;
	sc->fence_timeout_ms = timeout_ms;
	return tio_ioc(fd, TIO_IOC_STREAM_CREATE, sc);
}

static void *map_bell(int fd, const struct tio_stream_create *sc, long page)
{
	return mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)sc->doorbell_offset);
}

FIXTURE_SETUP(bell)
{
	struct tio_info info = { 0 };
	struct tio_stream_create sc;

	self->page = sysconf(_SC_PAGESIZE);
	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_INFO, &info));
	ASSERT_LE(0x10004, info.version);
	ASSERT_NE(0, info.features & TIO_FEAT_DOORBELL);
	ASSERT_EQ(0, create(self->fd, TIO_STREAM_F_DOORBELL, 0, &sc));
	self->s = sc.handle;
	self->seqno_off = sc.seqno_offset;
	EXPECT_EQ(sc.seqno_offset + self->page, sc.doorbell_offset);
	self->bell = map_bell(self->fd, &sc, self->page);
	ASSERT_NE(MAP_FAILED, self->bell);
	self->word = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd,
			  (off_t)sc.seqno_offset);
	ASSERT_NE(MAP_FAILED, self->word);
	EXPECT_EQ(0, *self->bell);
}

FIXTURE_TEARDOWN(bell)
{
	if (self->bell)
		munmap((void *)self->bell, self->page);
	if (self->word)
		munmap((void *)self->word, self->page);
	if (self->fd >= 0)
		close(self->fd);
}

static __u64 emit(int fd, __u32 stream)
{
	struct tio_fence_emit e = { .stream = stream };

	return tio_ioc(fd, TIO_IOC_FENCE_EMIT, &e) ? 0 : e.seqno;
}

/* FENCE_WAIT's result; the point's status into *status. */
static int fwait(int fd, __u32 stream, __u64 seqno, __s64 ns, int *status)
{
	struct tio_fence_wait w = { .stream = stream, .seqno = seqno, .timeout_ns = ns,
				    .status = 12345 };
	int ret = tio_ioc(fd, TIO_IOC_FENCE_WAIT, &w);

	if (status)
		*status = w.status;
	return ret;
}

static void ring(FIXTURE_DATA(bell) *self, __u64 v)
{
	__atomic_store_n(self->bell, v, __ATOMIC_RELEASE);
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Bad flags, and a stream without a doorbell has no page 1. */
TEST_F(bell, bad_flags_and_mappings)
{
	struct tio_stream_create sc;
	void *p;

	EXPECT_EQ(-EINVAL, create(self->fd, 0x2, 0, &sc));
	EXPECT_EQ(-EINVAL, create(self->fd, 0x80000000u | TIO_STREAM_F_DOORBELL, 0, &sc));
	ASSERT_EQ(0, create(self->fd, 0, 0, &sc));
	EXPECT_EQ(0, sc.doorbell_offset);
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)(sc.seqno_offset + self->page));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* The doorbell: shared only, one page; page 2 is nothing. */
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
		 (off_t)(self->seqno_off + self->page));
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)(self->seqno_off + self->page));
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd,
		 (off_t)(self->seqno_off + 2 * self->page));
	EXPECT_EQ(MAP_FAILED, p);
	/* The seqno page stays read-only. */
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)self->seqno_off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
}

/* A rung point signals at the next request for its fence. */
TEST_F(bell, ring_then_wait)
{
	__u64 a = emit(self->fd, self->s), b = emit(self->fd, self->s);
	__u64 c = emit(self->fd, self->s);
	int status;

	ASSERT_EQ(3, c);
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, a, 0, NULL));
	ring(self, b);
	EXPECT_EQ(0, fwait(self->fd, self->s, a, 0, &status));
	EXPECT_EQ(0, status);
	EXPECT_EQ(b, *self->word);
	EXPECT_EQ(-ETIME, fwait(self->fd, self->s, c, 0, NULL));
	/* Past the last emitted: only what was emitted; lower: nothing. */
	ring(self, 100);
	EXPECT_EQ(0, fwait(self->fd, self->s, c, 0, &status));
	EXPECT_EQ(c, *self->word);
	ring(self, 1);
	EXPECT_EQ(0, fwait(self->fd, self->s, c, 0, &status));
	EXPECT_EQ(c, *self->word);
}

struct waiter {
	int fd;
	__u32 s;
	__u64 seqno;
	int ret, status;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->ret = fwait(w->fd, w->s, w->seqno, WAIT_NS, &w->status);
	return NULL;
}

/* A blocking FENCE_WAIT sleeping in the kernel wakes from the poll. */
TEST_F(bell, sleeping_waiter_wakes)
{
	struct waiter w = { .fd = self->fd, .s = self->s };
	pthread_t t;
	int i;

	for (i = 0; i < 2; i++) {
		w.seqno = emit(self->fd, self->s);
		w.ret = -1;
		ASSERT_EQ(0, pthread_create(&t, NULL, wait_thread, &w));
		pause_ms(i ? 200 : 20);	/* the second: after the poll backed off */
		ring(self, w.seqno);
		ASSERT_EQ(0, pthread_join(t, NULL));
		EXPECT_EQ(0, w.ret);
		EXPECT_EQ(0, w.status);
	}
	EXPECT_EQ(w.seqno, *self->word);
}

/* An exported point another driver would wait on signals from the poll. */
TEST_F(bell, sync_file_signals)
{
	struct pollfd p = { .events = POLLIN };
	__u64 a = emit(self->fd, self->s);

	p.fd = tio_export_point(self->fd, self->s, a);
	ASSERT_LE(0, p.fd);
	EXPECT_EQ(0, poll(&p, 1, 20));
	EXPECT_EQ(0, tio_sync_status(p.fd));
	ring(self, a);
	ASSERT_EQ(1, poll(&p, 1, 30000));
	EXPECT_EQ(1, tio_sync_status(p.fd));
	close(p.fd);
}

/* A parked io_uring wait completes from the poll too. */
TEST_F(bell, uring_wait_completes)
{
	struct tio_fence_wait w = { .stream = self->s, .timeout_ns = -1, .status = 77 };
	struct io_uring_cqe *cqe;
	struct io_uring ring_;

	ASSERT_EQ(0, io_uring_queue_init(4, &ring_, 0));
	w.seqno = emit(self->fd, self->s);
	ASSERT_EQ(0, tio_uring_submit(&ring_, self->fd, false, TIO_IOC_FENCE_WAIT, &w, 9));
	pause_ms(20);
	ring(self, w.seqno);
	ASSERT_EQ(0, io_uring_wait_cqe(&ring_, &cqe));
	EXPECT_EQ(9, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&ring_, cqe);
	EXPECT_EQ(0, w.status);
	io_uring_queue_exit(&ring_);
}

/* The deadline holds whatever the doorbell says: expired stays expired. */
TEST_F(bell, expiry_unchanged)
{
	struct tio_stream_create sc;
	struct pollfd p = { .events = POLLIN };
	struct tio_fence_signal sg = { 0 };
	volatile __u64 *bell;
	__u64 a, b;
	int status;

	ASSERT_EQ(0, create(self->fd, TIO_STREAM_F_DOORBELL, 50, &sc));
	bell = map_bell(self->fd, &sc, self->page);
	ASSERT_NE(MAP_FAILED, bell);
	a = emit(self->fd, sc.handle);
	b = emit(self->fd, sc.handle);
	p.fd = tio_export_point(self->fd, sc.handle, a);
	ASSERT_LE(0, p.fd);
	ASSERT_EQ(1, poll(&p, 1, 30000));
	EXPECT_EQ(-ETIMEDOUT, tio_sync_status(p.fd));
	__atomic_store_n(bell, b, __ATOMIC_RELEASE);
	EXPECT_EQ(0, fwait(self->fd, sc.handle, a, 0, &status));
	EXPECT_EQ(-ETIMEDOUT, status);
	/* The point after it was not exported: the doorbell completes it. */
	EXPECT_EQ(0, fwait(self->fd, sc.handle, b, 0, &status));
	EXPECT_EQ(0, status);
	sg.stream = sc.handle;
	sg.seqno = a;
	EXPECT_EQ(-ETIMEDOUT, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	close(p.fd);
	munmap((void *)bell, self->page);
}

/*
 * The file goes while the poll runs for an exported point: the point is
 * cancelled and the poll stopped (the mappings hold the file: they go
 * first).
 */
TEST_F(bell, close_while_polling)
{
	struct pollfd p = { .events = POLLIN };
	__u64 a = emit(self->fd, self->s);

	p.fd = tio_export_point(self->fd, self->s, a);
	ASSERT_LE(0, p.fd);
	EXPECT_EQ(0, poll(&p, 1, 20));	/* a waiter: the poll runs */
	munmap((void *)self->bell, self->page);
	munmap((void *)self->word, self->page);
	self->bell = NULL;
	self->word = NULL;
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(1, poll(&p, 1, 5000));
	EXPECT_EQ(-ECANCELED, tio_sync_status(p.fd));
	close(p.fd);
}

TEST_HARNESS_MAIN
