// SPDX-License-Identifier: GPL-2.0
/*
 * The command ring (TIO_IOC_RING_SETUP, TIO_IOC_RING_ENTER by ioctl and
 * by uring_cmd): results in place, wrap-around, a full ring, head and tail
 * moved wrongly by userspace (refused, nothing run twice), records
 * rewritten by another thread while the kernel runs them, INFO run in its
 * slot (junk outputs overwritten, bad inputs refused), both entry forms
 * in turn, close and exit with records outstanding, fork, and the pinned
 * charge of its pages.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

#define SENTINEL 0x5a5a

struct ring {
	struct tio_ring_hdr *hdr;
	struct tio_cmd *cmds;
	size_t size;
	unsigned int entries;
	unsigned int tail;	/* userspace's copy */
};

static int ring_map(int fd, unsigned int entries, struct ring *r)
{
	struct tio_ring_setup rs = { .entries = entries };
	void *p;
	int ret = tio_ioc(fd, TIO_IOC_RING_SETUP, &rs);

	if (ret)
		return ret;
	p = mmap(NULL, rs.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 rs.mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	r->hdr = p;
	r->cmds = (struct tio_cmd *)((char *)p + TIO_RING_CMDS_OFFSET);
	r->size = rs.size;
	r->entries = entries;
	r->tail = r->hdr->tail;
	return 0;
}

/* Write one record at the tail (not yet published). */
static struct tio_cmd *ring_put(struct ring *r, unsigned int op,
				const void *payload, size_t size)
{
	struct tio_cmd *c = &r->cmds[r->tail++ & (r->entries - 1)];

	memset(c, 0, sizeof(*c));
	c->op = op;
	c->result = SENTINEL;
	if (payload)
		memcpy(c->payload.bytes, payload, size);
	return c;
}

static void ring_publish(struct ring *r)
{
	__atomic_store_n(&r->hdr->tail, r->tail, __ATOMIC_RELEASE);
}

static unsigned int ring_head(struct ring *r)
{
	return __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
}

/* Enter by ioctl or uring_cmd: failed records or -errno; @done out. */
static int enter(int fd, struct io_uring *u, unsigned int flags,
		 unsigned int *done)
{
	struct tio_ring_enter e = { .flags = flags };
	int ret;

	if (u)
		ret = tio_uring_run(u, fd, false, TIO_IOC_RING_ENTER, &e);
	else
		ret = tio_ioc(fd, TIO_IOC_RING_ENTER, &e);
	if (done)
		*done = e.done;
	return ret;
}

FIXTURE(ring) {
	int fd;
	struct io_uring uring;
	struct io_uring *u;
	struct ring r;
};

FIXTURE_VARIANT(ring) {
	bool uring;
};

FIXTURE_VARIANT_ADD(ring, ioctl) { .uring = false };
FIXTURE_VARIANT_ADD(ring, uring_cmd) { .uring = true };

FIXTURE_SETUP(ring)
{
	struct tio_info info = { 0 };

	memset(&self->r, 0, sizeof(self->r));
	self->u = NULL;
	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_RING))
		SKIP(return, "no command ring");
	if (variant->uring) {
		if (!(info.features & TIO_FEAT_URING_CMD))
			SKIP(return, "no uring_cmd");
		ASSERT_EQ(0, io_uring_queue_init(8, &self->uring, 0));
		self->u = &self->uring;
	}
}

FIXTURE_TEARDOWN(ring)
{
	if (self->r.hdr)
		munmap(self->r.hdr, self->r.size);
	if (self->u)
		io_uring_queue_exit(self->u);
	close(self->fd);
}

TEST_F(ring, setup_rules)
{
	struct tio_ring_setup rs = { 0 };
	unsigned int bad[] = { 0, 3, 6, TIO_RING_MAX_ENTRIES * 2 };
	unsigned int i;
	void *p;

	EXPECT_EQ(-ENXIO, enter(self->fd, self->u, 0, NULL));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rs = (struct tio_ring_setup){ .entries = bad[i] };
		EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_RING_SETUP, &rs));
	}
	rs = (struct tio_ring_setup){ .entries = 8, .flags = 1 };
	EXPECT_EQ(-EINVAL, tio_ioc(self->fd, TIO_IOC_RING_SETUP, &rs));
	/* No ring yet: nothing to map at its offset. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, TIO_RING_MMAP_OFFSET);
	EXPECT_EQ(MAP_FAILED, p);
	ASSERT_EQ(0, ring_map(self->fd, 8, &self->r));
	EXPECT_EQ(4096, self->r.size);
	EXPECT_EQ(8, self->r.hdr->entries);
	EXPECT_EQ(7, self->r.hdr->mask);
	EXPECT_EQ(0, self->r.hdr->head);
	rs = (struct tio_ring_setup){ .entries = 8 };
	EXPECT_EQ(-EBUSY, tio_ioc(self->fd, TIO_IOC_RING_SETUP, &rs));
	/* Private (copy-on-write) or oversized mappings are refused. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	/* Nothing published: an enter runs nothing. */
	EXPECT_EQ(0, enter(self->fd, self->u, 0, &i));
	EXPECT_EQ(0, i);
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 2, NULL));
}

/* 64 INFO records: each result and payload written back in place. */
TEST_F(ring, results_in_place)
{
	struct tio_cmd *c[64];
	unsigned int i, done;

	ASSERT_EQ(0, ring_map(self->fd, 64, &self->r));
	for (i = 0; i < 64; i++)
		c[i] = ring_put(&self->r, TIO_IOC_INFO, NULL, 0);
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(64, done);
	EXPECT_EQ(64, ring_head(&self->r));
	for (i = 0; i < 64; i++) {
		struct tio_info *info = (struct tio_info *)c[i]->payload.bytes;

		EXPECT_EQ(0, c[i]->result);
		EXPECT_EQ(TIO_UAPI_VERSION, info->version);
		EXPECT_NE(0, info->features & TIO_FEAT_RING);
	}
}

/* A ring of 8 used 25 times round: records land in slot i & 7. */
TEST_F(ring, wrap_around)
{
	struct tio_stream_create sc = { 0 };
	__u64 expect;
	unsigned int round, i, done;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	ASSERT_EQ(0, ring_map(self->fd, 8, &self->r));
	expect = 1;
	for (round = 0; round < 40; round++) {
		struct tio_cmd *c[5];
		struct tio_fence_emit e = { .stream = sc.handle };

		for (i = 0; i < 5; i++)
			c[i] = ring_put(&self->r, TIO_IOC_FENCE_EMIT, &e, sizeof(e));
		ring_publish(&self->r);
		ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
		ASSERT_EQ(5, done);
		for (i = 0; i < 5; i++) {
			struct tio_fence_emit *o = (void *)c[i]->payload.bytes;

			ASSERT_EQ(0, c[i]->result);
			ASSERT_EQ(expect++, o->seqno);
		}
	}
	EXPECT_EQ(200, ring_head(&self->r));
}

/* Exactly entries records run; one more is refused and runs nothing. */
TEST_F(ring, full_ring)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	unsigned int i, done;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	ASSERT_EQ(0, ring_map(self->fd, 16, &self->r));
	for (i = 0; i < 16; i++)
		ring_put(&self->r, TIO_IOC_FENCE_EMIT, &e, sizeof(e));
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(16, done);
	for (i = 0; i < 17; i++)
		ring_put(&self->r, TIO_IOC_FENCE_EMIT, &e, sizeof(e));
	ring_publish(&self->r);
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 0, NULL));
	EXPECT_EQ(16, ring_head(&self->r));
	for (i = 0; i < 16; i++)
		EXPECT_EQ(SENTINEL, self->r.cmds[i].result);
	/* Back to a full ring: it runs, seqnos go on from 17. */
	self->r.tail--;
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(16, done);
	EXPECT_EQ(17, ((struct tio_fence_emit *)self->r.cmds[0].payload.bytes)->seqno);
	EXPECT_EQ(32, ((struct tio_fence_emit *)self->r.cmds[15].payload.bytes)->seqno);
}

/* Head or tail moved wrongly: refused, nothing runs twice or is skipped. */
TEST_F(ring, bad_head_tail)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	unsigned int i, done;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	ASSERT_EQ(0, ring_map(self->fd, 8, &self->r));
	for (i = 0; i < 4; i++)
		ring_put(&self->r, TIO_IOC_FENCE_EMIT, &e, sizeof(e));
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	ASSERT_EQ(4, done);
	/* Head rewound: refused, the head word restored, nothing re-run. */
	self->r.hdr->head = 0;
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 0, NULL));
	EXPECT_EQ(4, ring_head(&self->r));
	EXPECT_EQ(0, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(0, done);
	/* Head skipped ahead: the same. */
	self->r.hdr->head = 6;
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 0, NULL));
	EXPECT_EQ(4, ring_head(&self->r));
	/* Tail behind head, tail far beyond the ring. */
	self->r.hdr->tail = 3;
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 0, NULL));
	self->r.hdr->tail = 4 + 9;
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 0, NULL));
	self->r.hdr->tail = 0x80000004u;
	EXPECT_EQ(-EINVAL, enter(self->fd, self->u, 0, NULL));
	EXPECT_EQ(4, ring_head(&self->r));
	/* Sane again: the next record gets seqno 5, nothing ran meanwhile. */
	self->r.tail = 4;
	ring_put(&self->r, TIO_IOC_FENCE_EMIT, &e, sizeof(e));
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(1, done);
	EXPECT_EQ(5, ((struct tio_fence_emit *)self->r.cmds[4].payload.bytes)->seqno);
}

/* Stop at the first failure, or go on with TIO_SUBMIT_F_CONTINUE. */
TEST_F(ring, failures)
{
	struct tio_handle_op bad = { .handle = 0xffffff };
	struct tio_ring_enter nested = { 0 };
	struct tio_submit sub = { 0 };
	unsigned int done;

	ASSERT_EQ(0, ring_map(self->fd, 8, &self->r));
	ring_put(&self->r, TIO_IOC_INFO, NULL, 0);
	ring_put(&self->r, TIO_IOC_BUF_FREE, &bad, sizeof(bad));
	ring_put(&self->r, TIO_IOC_INFO, NULL, 0);
	ring_publish(&self->r);
	EXPECT_EQ(1, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(2, done);
	EXPECT_EQ(0, self->r.cmds[0].result);
	EXPECT_EQ(-ENOENT, self->r.cmds[1].result);
	EXPECT_EQ(SENTINEL, self->r.cmds[2].result);
	EXPECT_EQ(0, enter(self->fd, self->u, 0, &done));
	EXPECT_EQ(1, done);
	EXPECT_EQ(0, self->r.cmds[2].result);
	/* Records that would nest an entry, unknown ops, bad fields. */
	ring_put(&self->r, TIO_IOC_RING_ENTER, &nested, sizeof(nested));
	ring_put(&self->r, TIO_IOC_SUBMIT, &sub, sizeof(sub));
	ring_put(&self->r, _IOWR(TIO_IOC_MAGIC, 0x3f, struct tio_info), NULL, 0);
	ring_put(&self->r, TIO_IOC_INFO, NULL, 0)->pad = 1;
	ring_put(&self->r, TIO_IOC_INFO, NULL, 0);
	ring_publish(&self->r);
	EXPECT_EQ(4, enter(self->fd, self->u, TIO_SUBMIT_F_CONTINUE, &done));
	EXPECT_EQ(5, done);
	EXPECT_EQ(-EINVAL, self->r.cmds[3].result);
	EXPECT_EQ(-EINVAL, self->r.cmds[4].result);
	EXPECT_EQ(-ENOTTY, self->r.cmds[5].result);
	EXPECT_EQ(-EINVAL, self->r.cmds[6].result);
	EXPECT_EQ(0, self->r.cmds[7].result);
}

#define TIO_DBG "/sys/kernel/debug/tensorio/"

/* INFO's calls and errors in debugfs tensorio/commands (-1: none). */
static void info_counts(long long *calls, long long *errors)
{
	*calls = tio_dbg_read_col(TIO_DBG "commands", "INFO", 0);
	*errors = tio_dbg_read_col(TIO_DBG "commands", "INFO", 1);
}

/* Handler timing on or off (debugfs tensorio/timing): 0 or -1. */
static int set_timing(bool on)
{
	int fd = open(TIO_DBG "timing", O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, on ? "1" : "0", 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/*
 * Four INFO records: one whose output fields hold junk (they are output
 * only: overwritten), then flags, the payload's pad and the record's
 * flags non-zero (-EINVAL, payload left as written). INFO runs in its
 * slot; with handler timing on it runs from a copy: the same results.
 */
static void info_records(struct __test_metadata *_metadata, int fd,
			 struct io_uring *u, struct ring *r)
{
	struct tio_info want = { 0 }, junk, got;
	unsigned int i, done;

	ASSERT_EQ(0, ioctl(fd, TIO_IOC_INFO, &want));
	memset(&junk, 0xa5, sizeof(junk));
	junk.flags = 0;
	junk.pad = 0;
	ring_put(r, TIO_IOC_INFO, &junk, sizeof(junk));
	junk.flags = 1;
	ring_put(r, TIO_IOC_INFO, &junk, sizeof(junk));
	junk.flags = 0;
	junk.pad = 1;
	ring_put(r, TIO_IOC_INFO, &junk, sizeof(junk));
	junk.pad = 0;
	ring_put(r, TIO_IOC_INFO, &junk, sizeof(junk))->flags = 1;
	ring_publish(r);
	EXPECT_EQ(3, enter(fd, u, TIO_SUBMIT_F_CONTINUE, &done));
	EXPECT_EQ(4, done);
	for (i = 0; i < 4; i++) {
		struct tio_cmd *c = &r->cmds[(r->tail - 4 + i) & (r->entries - 1)];

		memcpy(&got, c->payload.bytes, sizeof(got));
		EXPECT_EQ(i ? -EINVAL : 0, c->result);
		if (!i) {
			EXPECT_EQ(want.version, got.version);
			EXPECT_EQ(want.features, got.features);
			EXPECT_EQ(want.max_buf_size, got.max_buf_size);
			EXPECT_EQ(want.max_pinned, got.max_pinned);
			EXPECT_EQ(want.max_submit, got.max_submit);
			EXPECT_EQ(0, got.flags);
			EXPECT_EQ(0, got.pad);
		} else {
			EXPECT_EQ(0xa5a5a5a5u, got.version);
			EXPECT_EQ(0xa5a5a5a5a5a5a5a5ull, got.features);
			EXPECT_EQ(0xa5a5a5a5u, got.max_submit);
		}
	}
}

/*
 * INFO records: outputs written in place over junk, bad inputs refused
 * with the payload untouched, and counted in the statistics as by ioctl
 * (the record's own bad flags fail before the command: not counted).
 */
TEST_F(ring, info_in_place)
{
	long long calls0, errors0, calls, errors;
	bool dbg = !access(TIO_DBG "timing", W_OK);

	ASSERT_EQ(0, ring_map(self->fd, 8, &self->r));
	info_counts(&calls0, &errors0);
	info_records(_metadata, self->fd, self->u, &self->r);
	info_counts(&calls, &errors);
	if (calls0 >= 0) {
		EXPECT_EQ(calls0 + 4, calls);	/* one by ioctl */
		EXPECT_EQ(errors0 + 2, errors);
	}
	if (!dbg)
		return;
	/* Timed, from the copy: the same results and counts. */
	ASSERT_EQ(0, set_timing(true));
	info_records(_metadata, self->fd, self->u, &self->r);
	ASSERT_EQ(0, set_timing(false));
	info_counts(&calls0, &errors0);
	EXPECT_EQ(calls + 4, calls0);
	EXPECT_EQ(errors + 2, errors0);
}

/* Buffers made through the ring: alloc, info, free, all in place. */
TEST_F(ring, buffers)
{
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_handle_op f = { 0 };
	unsigned int i, done;

	ASSERT_EQ(0, ring_map(self->fd, 32, &self->r));
	for (i = 0; i < 16; i++)
		ring_put(&self->r, TIO_IOC_BUF_ALLOC, &a, sizeof(a));
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	ASSERT_EQ(16, done);
	for (i = 0; i < 16; i++) {
		f.handle = ((struct tio_buf_alloc *)self->r.cmds[i].payload.bytes)->handle;
		ASSERT_NE(0, f.handle);
		ring_put(&self->r, TIO_IOC_BUF_FREE, &f, sizeof(f));
	}
	ring_publish(&self->r);
	ASSERT_EQ(0, enter(self->fd, self->u, 0, &done));
	ASSERT_EQ(16, done);
	EXPECT_EQ(0, tio_dbg_file_stat("buffers"));
}

/* ioctl and uring_cmd enters in turn share one head. */
TEST(ioctl_and_uring_in_turn)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct io_uring u;
	struct ring r = { 0 };
	unsigned int i, done;
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_uring_queue_init(4, &u, 0));
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	ASSERT_EQ(0, ring_map(fd, 4, &r));
	for (i = 0; i < 30; i++) {
		struct tio_cmd *c = ring_put(&r, TIO_IOC_FENCE_EMIT, &e, sizeof(e));

		ring_publish(&r);
		ASSERT_EQ(0, enter(fd, i & 1 ? &u : NULL, 0, &done));
		ASSERT_EQ(1, done);
		ASSERT_EQ(i + 1, ((struct tio_fence_emit *)c->payload.bytes)->seqno);
	}
	EXPECT_EQ(30, ring_head(&r));
	munmap(r.hdr, r.size);
	io_uring_queue_exit(&u);
	close(fd);
}

/*
 * A FENCE_WAIT record that would sleep: uring_cmd's non-blocking issue
 * leaves the whole enter to io-wq (nothing ran inline), which runs it.
 */
TEST(uring_enter_with_wait_record)
{
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_fence_signal s = { 0 };
	struct tio_fence_wait w = { 0 };
	struct io_uring u;
	struct ring r = { 0 };
	unsigned int done;
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_uring_queue_init(4, &u, 0));
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_STREAM_CREATE, &sc));
	e.stream = sc.handle;
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_FENCE_EMIT, &e));
	s.stream = sc.handle;
	s.seqno = e.seqno;
	ASSERT_EQ(0, ioctl(fd, TIO_IOC_FENCE_SIGNAL, &s));
	ASSERT_EQ(0, ring_map(fd, 4, &r));
	w = (struct tio_fence_wait){ .stream = sc.handle, .seqno = 1,
				     .timeout_ns = 1000000000 };
	ring_put(&r, TIO_IOC_INFO, NULL, 0);
	ring_put(&r, TIO_IOC_FENCE_WAIT, &w, sizeof(w));
	ring_publish(&r);
	ASSERT_EQ(0, enter(fd, &u, 0, &done));
	EXPECT_EQ(2, done);
	EXPECT_EQ(0, r.cmds[1].result);
	munmap(r.hdr, r.size);
	io_uring_queue_exit(&u);
	close(fd);
}

struct fuzz_arg {
	struct ring *r;
	atomic_bool stop;
	unsigned int seed;
};

/*
 * Rewrite random records with random ops and bytes until told to stop.
 * No waits (they could sleep) and no exports (fds outlive the file); the
 * words stay small so that an allocation stays small.
 */
static void *rewriter(void *p)
{
	static const unsigned int ops[] = {
		TIO_IOC_INFO, TIO_IOC_BUF_ALLOC, TIO_IOC_BUF_FREE,
		TIO_IOC_BUF_INFO, TIO_IOC_STREAM_CREATE, TIO_IOC_FENCE_EMIT,
		TIO_IOC_FENCE_SIGNAL, TIO_IOC_STREAM_DESTROY, TIO_IOC_SUBMIT,
		TIO_IOC_RING_ENTER, TIO_IOC_RING_SETUP, TIO_IOC_BUF_SET_DESC,
	};
	struct fuzz_arg *a = p;
	unsigned int x = a->seed;

	while (!atomic_load(&a->stop)) {
		struct tio_cmd *c;
		unsigned int i;

		x = x * 1103515245u + 12345u;
		c = &a->r->cmds[(x >> 8) & (a->r->entries - 1)];
		x = x * 1103515245u + 12345u;
		switch ((x >> 16) % 5) {
		case 0:
			__atomic_store_n(&c->op, ops[(x >> 4) % 12], __ATOMIC_RELAXED);
			break;
		case 1:
			for (i = 0; i < TIO_CMD_PAYLOAD / 8; i++)
				__atomic_store_n((__u64 *)c->payload.bytes + i,
						 (x & 1) ? 0 : (__u64)(x >> (i * 3)) & 0xffff,
						 __ATOMIC_RELAXED);
			break;
		case 2:
			/* Small sizes and handles: likely to be valid. */
			__atomic_store_n((__u64 *)c->payload.bytes,
					 (x >> 20) & 0x3fff, __ATOMIC_RELAXED);
			break;
		case 3:
			/* Any one field 0 or 1: INFO's flags and pad too. */
			__atomic_store_n((__u32 *)c + ((x >> 4) & 15),
					 (x >> 9) & 1, __ATOMIC_RELAXED);
			break;
		default:
			__atomic_store_n(&c->flags, x & 1, __ATOMIC_RELAXED);
			break;
		}
	}
	return NULL;
}

/*
 * Records rewritten by another thread while the kernel runs them: every
 * enter consumes what it reports, head never goes back, and closing the
 * file leaves nothing behind (no object made from a half-checked record
 * leaks). Bounded by count and a time cap.
 */
TEST(concurrent_rewrite_fuzz)
{
	long long bufs0 = tio_dbg_stat("buffers"), streams0 = tio_dbg_stat("streams");
	long long pinned0 = tio_dbg_stat("pinned_bytes_total");
	struct fuzz_arg a = { 0 };
	struct ring r = { 0 };
	unsigned int iter, head = 0;
	pthread_t th[2];
	time_t t0 = time(NULL);
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ring_map(fd, 16, &r));
	a.r = &r;
	a.seed = (unsigned int)getpid();
	ASSERT_EQ(0, pthread_create(&th[0], NULL, rewriter, &a));
	a.seed++;
	ASSERT_EQ(0, pthread_create(&th[1], NULL, rewriter, &a));
	for (iter = 0; iter < 20000 && time(NULL) - t0 < 20; iter++) {
		unsigned int done, n = 1 + iter % 16;
		int ret;

		r.tail += n;
		ring_publish(&r);
		ret = enter(fd, NULL, TIO_SUBMIT_F_CONTINUE, &done);
		ASSERT_LE(0, ret);
		ASSERT_EQ(n, done);
		head += done;
		ASSERT_EQ(head, ring_head(&r));
	}
	atomic_store(&a.stop, true);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	munmap(r.hdr, r.size);
	close(fd);
	/* Release is synchronous for a file no one else holds. */
	if (bufs0 >= 0) {
		EXPECT_EQ(bufs0, tio_dbg_stat("buffers"));
		EXPECT_EQ(streams0, tio_dbg_stat("streams"));
		EXPECT_EQ(pinned0, tio_dbg_stat("pinned_bytes_total"));
	}
}

/* The ring's pages are charged as pinned memory until the file goes. */
TEST(pinned_charge)
{
	long long pinned0 = tio_dbg_stat("pinned_bytes_total");
	struct ring r = { 0 };
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	if (pinned0 < 0)
		SKIP(close(fd); return, "no debugfs");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ring_map(fd, TIO_RING_MAX_ENTRIES, &r));
	EXPECT_EQ(pinned0 + (long long)r.size, tio_dbg_stat("pinned_bytes_total"));
	EXPECT_EQ(TIO_RING_CMDS_OFFSET + TIO_RING_MAX_ENTRIES * 64 + 4096 - 128, r.size);
	close(fd);
	/* The mapping holds the file: still charged. */
	EXPECT_EQ(pinned0 + (long long)r.size, tio_dbg_stat("pinned_bytes_total"));
	munmap(r.hdr, r.size);
	EXPECT_EQ(pinned0, tio_dbg_stat("pinned_bytes_total"));
}

/*
 * Records outstanding (published, never entered; or half the ring entered)
 * at close and at process exit: nothing runs, nothing leaks.
 */
TEST(close_and_exit_with_records_outstanding)
{
	long long bufs0 = tio_dbg_stat("buffers");
	long long pinned0 = tio_dbg_stat("pinned_bytes_total");
	struct tio_buf_alloc a = { .size = 4096 };
	unsigned int i;
	int status;
	pid_t pid;

	for (int form = 0; form < 2; form++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct ring r = { 0 };
			int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

			if (fd < 0 || ring_map(fd, 8, &r))
				_exit(1);
			for (i = 0; i < 8; i++)
				ring_put(&r, TIO_IOC_BUF_ALLOC, &a, sizeof(a));
			ring_publish(&r);
			if (form == 0) {
				/* Close both references: nothing ran. */
				munmap(r.hdr, r.size);
				close(fd);
			}
			_exit(0);	/* form 1: exit with all mapped */
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		if (bufs0 >= 0) {
			EXPECT_EQ(bufs0, tio_dbg_stat("buffers"));
			EXPECT_EQ(pinned0, tio_dbg_stat("pinned_bytes_total"));
		}
	}
}

/*
 * fork: the child shares the file and the MAP_SHARED ring; its enter runs
 * the parent's records and the parent sees head and results.
 */
TEST(fork_shares_the_ring)
{
	struct ring r = { 0 };
	unsigned int i, done;
	int status, fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ring_map(fd, 8, &r));
	for (i = 0; i < 3; i++)
		ring_put(&r, TIO_IOC_INFO, NULL, 0);
	ring_publish(&r);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned int d;

		_exit(enter(fd, NULL, 0, &d) == 0 && d == 3 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(3, ring_head(&r));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, r.cmds[i].result);
	/* And the parent goes on from there. */
	r.tail = 3;
	ring_put(&r, TIO_IOC_INFO, NULL, 0);
	ring_publish(&r);
	EXPECT_EQ(0, enter(fd, NULL, 0, &done));
	EXPECT_EQ(1, done);
	munmap(r.hdr, r.size);
	close(fd);
}

TEST_HARNESS_MAIN
