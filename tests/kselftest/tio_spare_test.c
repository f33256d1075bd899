// SPDX-License-Identifier: GPL-2.0
/*
 * Spare pages (kmod/tio_spare.c): BUF_FREE of a buffer nobody saw keeps
 * its zeroed pages for the file's next BUF_ALLOC. A new buffer must still
 * read zeros through every way its pages leave the driver, whatever the
 * buffers before it held; only unseen buffers give pages; memlock stays
 * exact.
 */
#include "kselftest_harness.h"
#include "tio_buf_common.h"

#define STATS "/sys/kernel/debug/tensorio/stats"
#define NBUF 80		/* more than a file keeps (TIO_SPARE_PAGES) */

/* spare_pages of every open file together, or -1 without debugfs. */
static long spare_pages(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen(STATS, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "spare_pages %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

static size_t nonzero(const unsigned char *p, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		bad += p[i] != 0;
	return bad;
}

FIXTURE(spare) {
	int fd;
};

FIXTURE_SETUP(spare)
{
	self->fd = tio_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(spare)
{
	close(self->fd);
}

/* Fill a buffer's @pages through the device fd or its dma-buf. */
static int dirty(int fd, uint32_t h, uint64_t off, size_t pages, int how)
{
	size_t len = pages * PAGE;
	int dmafd = -1, ret;
	void *p;

	if (how) {
		ret = tio_export(fd, h, TIO_EXPORT_F_CLOEXEC, &dmafd);
		if (ret)
			return ret;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dmafd, 0);
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	}
	if (p == MAP_FAILED) {
		ret = -errno;
	} else {
		memset(p, 0xa5, len);
		ret = munmap(p, len) ? -errno : 0;
	}
	if (dmafd >= 0)
		close(dmafd);
	return ret;
}

/*
 * Bytes that are not zero in a new buffer, read the way @how picks:
 * 0 device-fd mmap, 1 dma-buf mmap, 2 through an import into @other,
 * 3 through BUF_PIN_USER of a device-fd mapping; -errno on failure.
 */
static long read_fresh(int fd, int other, uint32_t h, uint64_t off,
		       size_t pages, int how)
{
	size_t len = pages * PAGE;
	uint32_t h2 = 0;
	uint64_t off2 = 0;
	int dmafd = -1;
	long bad;
	void *p, *map = NULL;

	switch (how) {
	case 0:
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
		break;
	case 1:
	case 2:
		bad = tio_export(fd, h, TIO_EXPORT_F_CLOEXEC, &dmafd);
		if (bad)
			return bad;
		if (how == 1) {
			p = mmap(NULL, len, PROT_READ, MAP_SHARED, dmafd, 0);
			break;
		}
		bad = tio_import(other, dmafd, &h2, &off2, NULL);
		close(dmafd);
		dmafd = -1;
		if (bad)
			return bad;
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, other, off2);
		break;
	default: {
		struct tio_buf_pin pin = { .size = len };

		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
		if (map == MAP_FAILED)
			return -errno;
		pin.addr = (uintptr_t)map;
		bad = tio_ioc(other, TIO_IOC_BUF_PIN_USER, &pin);
		if (bad) {
			munmap(map, len);
			return bad;
		}
		h2 = pin.handle;
		/* Read through the pinned buffer's own mapping. */
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, other, pin.mmap_offset);
		break;
	}
	}
	if (p == MAP_FAILED) {
		bad = -errno;
	} else {
		bad = (long)nonzero(p, len);
		munmap(p, len);
	}
	if (map)
		munmap(map, len);
	if (dmafd >= 0)
		close(dmafd);
	if (h2)
		tio_free(other, h2);
	return bad;
}

/*
 * Rounds of buffers written through either fd and freed (some while still
 * exported), mixed with buffers freed unseen; every buffer allocated next
 * reads zero through each way out of the driver.
 */
TEST_F(spare, fresh_buffers_read_zero_everywhere)
{
	uint32_t h[NBUF];
	uint64_t off[NBUF];
	int other = tio_open(), round, i, keep = -1;

	ASSERT_LE(0, other);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < NBUF; i++) {
			size_t pages = i % 7 == 6 ? 3 : 1;

			ASSERT_EQ(0, tio_alloc(self->fd, pages * PAGE, NULL,
					       &h[i], &off[i]));
			if (i % 3 != 2)
				ASSERT_EQ(0, dirty(self->fd, h[i], off[i], pages,
						   i % 3));
		}
		/* One stays exported past its BUF_FREE. */
		ASSERT_EQ(0, tio_export(self->fd, h[1], TIO_EXPORT_F_CLOEXEC,
					&keep));
		for (i = 0; i < NBUF; i++)
			ASSERT_EQ(0, tio_free(self->fd, h[i]));
		close(keep);
		for (i = 0; i < NBUF; i++) {
			size_t pages = i % 5 == 4 ? 3 : 1;

			ASSERT_EQ(0, tio_alloc(self->fd, pages * PAGE, NULL,
					       &h[i], &off[i]));
			EXPECT_EQ(0, read_fresh(self->fd, other, h[i], off[i],
						pages, (i + round) % 4))
				TH_LOG("round %d buffer %d", round, i);
		}
		for (i = 0; i < NBUF; i++)
			ASSERT_EQ(0, tio_free(self->fd, h[i]));
	}
	close(other);
}

/* Only buffers freed unseen give their pages, up to the file's cap. */
TEST_F(spare, only_unseen_buffers_give_pages)
{
	long s0 = spare_pages(), base;
	long long pinned0 = tio_pinned(self->fd);
	uint32_t h;
	uint64_t off;
	int dmafd, fd2;
	void *p;

	if (s0 < 0)
		SKIP(return, "no debugfs");
	/* Unseen: kept, and taken again by the next BUF_ALLOC. */
	ASSERT_EQ(0, tio_alloc(self->fd, 2 * PAGE, NULL, &h, &off));
	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(s0 + 2, spare_pages());
	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, &off));
	EXPECT_EQ(s0 + 1, spare_pages());
	EXPECT_EQ(pinned0 + (long long)PAGE, tio_pinned(self->fd));
	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(s0 + 2, spare_pages());
	EXPECT_EQ(pinned0, tio_pinned(self->fd));
	/*
	 * Mapped and unmapped, exported and closed, or still mapped at
	 * BUF_FREE: none is kept (base: the count after its BUF_ALLOC).
	 */
	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, &off));
	base = spare_pages();
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p, PAGE));
	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(base, spare_pages());

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, &off));
	base = spare_pages();
	ASSERT_EQ(0, tio_export(self->fd, h, TIO_EXPORT_F_CLOEXEC, &dmafd));
	close(dmafd);
	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(base, spare_pages());

	ASSERT_EQ(0, tio_alloc(self->fd, PAGE, NULL, &h, &off));
	base = spare_pages();
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(base, spare_pages());
	ASSERT_EQ(0, munmap(p, PAGE));
	EXPECT_EQ(base, spare_pages());
	EXPECT_EQ(s0, spare_pages());

	/* A file keeps at most 64; another file has its own. */
	ASSERT_EQ(0, tio_alloc(self->fd, 100 * PAGE, NULL, &h, &off));
	ASSERT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(s0 + 64, spare_pages());
	fd2 = tio_open();
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, tio_alloc(fd2, PAGE, NULL, &h, &off));
	ASSERT_EQ(0, tio_free(fd2, h));
	EXPECT_EQ(s0 + 65, spare_pages());
	close(fd2);
	EXPECT_EQ(s0 + 64, spare_pages());
	EXPECT_EQ(pinned0, tio_pinned(self->fd));
}

/* Closing a file frees its spare pages. */
TEST(close_frees_spares)
{
	long s0 = spare_pages();
	uint32_t h;
	int fd = tio_open();

	if (s0 < 0)
		SKIP(return, "no debugfs");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tio_alloc(fd, 8 * PAGE, NULL, &h, NULL));
	ASSERT_EQ(0, tio_free(fd, h));
	EXPECT_EQ(s0 + 8, spare_pages());
	close(fd);
	EXPECT_EQ(s0, spare_pages());
}

TEST_HARNESS_MAIN
