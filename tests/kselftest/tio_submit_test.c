// SPDX-License-Identifier: GPL-2.0
/*
 * TIO_IOC_SUBMIT: a vector of command records in one ioctl() or one
 * io_uring command. Per-record results, stop-at-first-failure and
 * TIO_SUBMIT_F_CONTINUE, the bounds (0, max, max + 1), bad records and
 * vectors that are not (fully) in user memory.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

#define SENTINEL 0x5a5a

FIXTURE(submit) {
	int fd;
	struct io_uring ring;
	unsigned int max;
	struct tio_cmd *cmds;
};

FIXTURE_VARIANT(submit) {
	bool uring;
};

FIXTURE_VARIANT_ADD(submit, ioctl) { .uring = false };
FIXTURE_VARIANT_ADD(submit, uring_cmd) { .uring = true };

FIXTURE_SETUP(submit)
{
	struct tio_info info = { 0 };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_SUBMIT))
		SKIP(return, "no SUBMIT");
	self->max = info.max_submit;
	ASSERT_EQ(1024, self->max);	/* documented */
	if (variant->uring)
		ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	self->cmds = calloc(self->max + 1, sizeof(*self->cmds));
	ASSERT_NE(NULL, self->cmds);
}

FIXTURE_TEARDOWN(submit)
{
	free(self->cmds);
	if (variant->uring)
		io_uring_queue_exit(&self->ring);
	close(self->fd);
}

/* SUBMIT in the variant's form: the number of failed records or -errno. */
static int do_submit(FIXTURE_DATA(submit) *self, bool uring,
		     struct tio_submit *s)
{
	if (uring)
		return tio_uring_run(&self->ring, self->fd, false,
				     TIO_IOC_SUBMIT, s);
	return tio_ioc(self->fd, TIO_IOC_SUBMIT, s);
}

static void rec(struct tio_cmd *c, unsigned int op, const void *payload,
		size_t size)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->result = SENTINEL;
	if (payload)
		memcpy(c->payload.bytes, payload, size);
}

/* A vector of records that are all valid. */
TEST_F(submit, all_valid)
{
	struct tio_info info = { 0 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds, .count = 3,
				.done = 99 };
	struct tio_info *out;
	int i;

	for (i = 0; i < 3; i++)
		rec(&self->cmds[i], TIO_IOC_INFO, &info, sizeof(info));
	ASSERT_EQ(0, do_submit(self, variant->uring, &s));
	EXPECT_EQ(3, s.done);
	for (i = 0; i < 3; i++) {
		out = (struct tio_info *)self->cmds[i].payload.bytes;
		EXPECT_EQ(0, self->cmds[i].result);
		EXPECT_EQ(TIO_UAPI_VERSION, out->version);	/* written back */
		EXPECT_EQ(self->max, out->max_submit);
	}
}

/* Records run in order: a later record sees an earlier one's effect. */
TEST_F(submit, in_order)
{
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_handle_op h = { .handle = 1 };
	struct tio_buf_info bi = { .handle = 1 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds, .count = 3 };
	struct tio_info info = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_BUFFERS))
		SKIP(return, "no buffers");
	rec(&self->cmds[0], TIO_IOC_BUF_ALLOC, &a, sizeof(a));
	rec(&self->cmds[1], TIO_IOC_BUF_FREE, &h, sizeof(h));
	rec(&self->cmds[2], TIO_IOC_BUF_INFO, &bi, sizeof(bi));
	s.flags = TIO_SUBMIT_F_CONTINUE;
	ASSERT_EQ(1, do_submit(self, variant->uring, &s));
	EXPECT_EQ(3, s.done);
	EXPECT_EQ(0, self->cmds[0].result);
	EXPECT_EQ(1, ((struct tio_buf_alloc *)self->cmds[0].payload.bytes)->handle);
	EXPECT_EQ(0, self->cmds[1].result);
	EXPECT_EQ(-ENOENT, self->cmds[2].result);	/* freed just before */
}

static unsigned int mixed(struct tio_cmd *c)
{
	struct tio_info info = { 0 }, bad = { .flags = 1 };
	unsigned int n = 0;

	rec(&c[n++], TIO_IOC_INFO, &info, sizeof(info));	/* ok */
	rec(&c[n++], TIO_IOC_INFO, &bad, sizeof(bad));		/* -EINVAL */
	rec(&c[n], TIO_IOC_INFO, &info, sizeof(info));
	c[n++].flags = 1;					/* -EINVAL */
	rec(&c[n], TIO_IOC_INFO, &info, sizeof(info));
	c[n++].pad = 1;						/* -EINVAL */
	rec(&c[n++], TIO_IOC_SUBMIT, NULL, 0);			/* -EINVAL */
	rec(&c[n++], _IOWR(TIO_IOC_MAGIC, 0x7f, struct tio_info), NULL, 0); /* -ENOTTY */
	rec(&c[n], TIO_IOC_BUF_FREE, NULL, 0);
	c[n++].payload.bytes[TIO_CMD_PAYLOAD - 1] = 1;		/* -EINVAL: tail */
	rec(&c[n++], TIO_IOC_INFO, &info, sizeof(info));	/* ok */
	return n;
}

static const int mixed_results[] = {
	0, -EINVAL, -EINVAL, -EINVAL, -EINVAL, -ENOTTY, -EINVAL, 0,
};

TEST_F(submit, mixed_stops_at_first_failure)
{
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds };
	struct tio_info bad = { .flags = 1 };
	unsigned int i;

	s.count = mixed(self->cmds);
	ASSERT_EQ(1, do_submit(self, variant->uring, &s));
	EXPECT_EQ(2, s.done);
	EXPECT_EQ(0, self->cmds[0].result);
	EXPECT_EQ(-EINVAL, self->cmds[1].result);
	/* A failed record's payload is left alone, as ioctl() leaves it. */
	EXPECT_EQ(0, memcmp(self->cmds[1].payload.bytes, &bad, sizeof(bad)));
	for (i = 2; i < s.count; i++)
		EXPECT_EQ(SENTINEL, self->cmds[i].result);
}

TEST_F(submit, mixed_continue)
{
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds,
				.flags = TIO_SUBMIT_F_CONTINUE };
	unsigned int i;

	s.count = mixed(self->cmds);
	ASSERT_EQ(sizeof(mixed_results) / sizeof(mixed_results[0]), s.count);
	ASSERT_EQ(6, do_submit(self, variant->uring, &s));
	EXPECT_EQ(s.count, s.done);
	for (i = 0; i < s.count; i++)
		EXPECT_EQ(mixed_results[i], self->cmds[i].result) {
			TH_LOG("record %u", i);
		}
}

TEST_F(submit, bounds)
{
	struct tio_info info = { 0 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds };
	unsigned int i;

	for (i = 0; i <= self->max; i++)
		rec(&self->cmds[i], TIO_IOC_INFO, &info, sizeof(info));
	s.count = 0;
	EXPECT_EQ(-EINVAL, do_submit(self, variant->uring, &s));
	s.count = self->max + 1;
	EXPECT_EQ(-EINVAL, do_submit(self, variant->uring, &s));
	EXPECT_EQ(SENTINEL, self->cmds[0].result);	/* nothing ran */
	s.count = self->max;
	EXPECT_EQ(0, do_submit(self, variant->uring, &s));
	EXPECT_EQ(self->max, s.done);
	EXPECT_EQ(0, self->cmds[self->max - 1].result);
	EXPECT_EQ(SENTINEL, self->cmds[self->max].result);
}

TEST_F(submit, bad_envelope)
{
	struct tio_info info = { 0 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds, .count = 1 };

	rec(&self->cmds[0], TIO_IOC_INFO, &info, sizeof(info));
	s.flags = 0x2;
	EXPECT_EQ(-EINVAL, do_submit(self, variant->uring, &s));
	s.flags = 0;
	s.pad = 1;
	EXPECT_EQ(-EINVAL, do_submit(self, variant->uring, &s));
	EXPECT_EQ(SENTINEL, self->cmds[0].result);
}

/* The vector is copied in whole first: a fault there runs nothing. */
TEST_F(submit, vector_outside_user_memory)
{
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_submit s = { .count = 2 };
	long page = sysconf(_SC_PAGESIZE);
	struct tio_buf_info bi = { .handle = 1 };
	struct tio_cmd *v;
	char *map;

	s.cmds_ptr = 0;
	EXPECT_EQ(-EFAULT, do_submit(self, variant->uring, &s));
	s.cmds_ptr = (uint64_t)-4096;
	EXPECT_EQ(-EFAULT, do_submit(self, variant->uring, &s));
	/* First record mapped, second one across the end of the mapping. */
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));
	v = (struct tio_cmd *)(map + page) - 1;
	rec(v, TIO_IOC_BUF_ALLOC, &a, sizeof(a));
	s.cmds_ptr = (uintptr_t)v;
	EXPECT_EQ(-EFAULT, do_submit(self, variant->uring, &s));
	EXPECT_EQ(SENTINEL, v->result);
	EXPECT_EQ(-ENOENT, tio_ioc(self->fd, TIO_IOC_BUF_INFO, &bi)); /* no buffer */
	munmap(map, page);
}

/*
 * A read-only vector: the records run, but results cannot be written
 * back, so the submit fails with -EFAULT (documented).
 */
TEST_F(submit, vector_read_only)
{
	struct tio_info info = { 0 };
	struct tio_submit s = { .count = 1, .done = 7 };
	char *map;

	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	rec((struct tio_cmd *)map, TIO_IOC_INFO, &info, sizeof(info));
	ASSERT_EQ(0, mprotect(map, 4096, PROT_READ));
	s.cmds_ptr = (uintptr_t)map;
	EXPECT_EQ(-EFAULT, do_submit(self, variant->uring, &s));
	EXPECT_EQ(7, s.done);	/* the envelope is not written back either */
	munmap(map, 4096);
}

/* A record whose own pointer is bad fails alone. */
TEST_F(submit, record_pointer_outside_user_memory)
{
	struct tio_info info = { 0 };
	struct tio_buf_alloc a = { .size = 4096, .desc_ptr = 16 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds, .count = 2,
				.flags = TIO_SUBMIT_F_CONTINUE };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_BUFFERS))
		SKIP(return, "no buffers");
	rec(&self->cmds[0], TIO_IOC_BUF_ALLOC, &a, sizeof(a));
	rec(&self->cmds[1], TIO_IOC_INFO, &info, sizeof(info));
	EXPECT_EQ(1, do_submit(self, variant->uring, &s));
	EXPECT_EQ(-EFAULT, self->cmds[0].result);
	EXPECT_EQ(0, self->cmds[1].result);
}

/* Overlapping user ranges pinned by two records of one vector. */
TEST_F(submit, overlapping_buffers)
{
	long page = sysconf(_SC_PAGESIZE);
	struct tio_info info = { 0 };
	struct tio_buf_pin p1 = { 0 }, p2 = { 0 };
	struct tio_handle_op f1 = { .handle = 1 }, f2 = { .handle = 2 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds, .count = 4 };
	char *map;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_PIN_USER))
		SKIP(return, "no user pinning");
	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	p1.addr = (uintptr_t)map;
	p1.size = 2 * page;
	p2.addr = (uintptr_t)map + page;
	p2.size = 2 * page;
	rec(&self->cmds[0], TIO_IOC_BUF_PIN_USER, &p1, sizeof(p1));
	rec(&self->cmds[1], TIO_IOC_BUF_PIN_USER, &p2, sizeof(p2));
	rec(&self->cmds[2], TIO_IOC_BUF_FREE, &f1, sizeof(f1));
	rec(&self->cmds[3], TIO_IOC_BUF_FREE, &f2, sizeof(f2));
	EXPECT_EQ(0, do_submit(self, variant->uring, &s));
	EXPECT_EQ(4, s.done);
	EXPECT_EQ(0, self->cmds[0].result);
	EXPECT_EQ(0, self->cmds[1].result);
	EXPECT_EQ(0, self->cmds[2].result);
	EXPECT_EQ(0, self->cmds[3].result);
	munmap(map, 3 * page);
}

/* A wait inside a vector polls and blocks like its ioctl(). */
TEST_F(submit, fence_commands)
{
	struct tio_info info = { 0 };
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { .stream = 1 };
	struct tio_fence_wait w = { .stream = 1, .seqno = 1 };
	struct tio_fence_signal sg = { .stream = 1, .seqno = 1, .error = -EIO };
	struct tio_fence_wait w2 = { .stream = 1, .seqno = 1, .timeout_ns = -1 };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)self->cmds, .count = 5,
				.flags = TIO_SUBMIT_F_CONTINUE };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	if (!(info.features & TIO_FEAT_STREAMS))
		SKIP(return, "no streams");
	rec(&self->cmds[0], TIO_IOC_STREAM_CREATE, &sc, sizeof(sc));
	rec(&self->cmds[1], TIO_IOC_FENCE_EMIT, &e, sizeof(e));
	rec(&self->cmds[2], TIO_IOC_FENCE_WAIT, &w, sizeof(w));
	rec(&self->cmds[3], TIO_IOC_FENCE_SIGNAL, &sg, sizeof(sg));
	rec(&self->cmds[4], TIO_IOC_FENCE_WAIT, &w2, sizeof(w2));
	EXPECT_EQ(1, do_submit(self, variant->uring, &s));
	EXPECT_EQ(0, self->cmds[0].result);
	EXPECT_EQ(0, self->cmds[1].result);
	EXPECT_EQ(-ETIME, self->cmds[2].result);
	EXPECT_EQ(0, self->cmds[3].result);
	EXPECT_EQ(0, self->cmds[4].result);
	EXPECT_EQ(-EIO, ((struct tio_fence_wait *)self->cmds[4].payload.bytes)->status);
}

TEST_HARNESS_MAIN
