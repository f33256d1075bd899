// SPDX-License-Identifier: GPL-2.0
/*
 * BUF_ALLOC mappings are page-backed: get_user_pages() reaches
 * them, through the device fd and through the dma-buf, so that RDMA
 * registration, O_DIRECT, io_uring fixed buffers and BUF_PIN_USER work on
 * them, and the pages outlive BUF_FREE and munmap while someone pins them.
 * Each test fails on a VM_PFNMAP mapping.
 */
#include <linux/loop.h>
#include <sys/uio.h>
#include <sys/utsname.h>

#include <liburing.h>

#include "kselftest_harness.h"
#include "tio_buf_common.h"

#define NBYTES (16 * PAGE)

/* A shared mapping of @size bytes at @off of @fd, or MAP_FAILED. */
static void *map_shared(int fd, size_t size, uint64_t off)
{
	return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
}

static int pin_user(int fd, void *addr, size_t size, uint32_t *handle,
		    uint64_t *off)
{
	struct tio_buf_pin p = { .addr = (uintptr_t)addr, .size = size };
	int ret = tio_ioc(fd, TIO_IOC_BUF_PIN_USER, &p);

	if (!ret) {
		*handle = p.handle;
		*off = p.mmap_offset;
	}
	return ret;
}

FIXTURE(pagemap) {
	int fd;
	uint32_t h;
	uint64_t off;
	unsigned char *p;
};

FIXTURE_SETUP(pagemap)
{
	self->fd = tio_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tio_alloc(self->fd, NBYTES, NULL, &self->h, &self->off));
	self->p = map_shared(self->fd, NBYTES, self->off);
	ASSERT_NE(MAP_FAILED, self->p);
}

FIXTURE_TEARDOWN(pagemap)
{
	if (self->p != MAP_FAILED)
		munmap(self->p, NBYTES);
	close(self->fd);
}

/* Private mappings stay refused: a copy would not be the buffer. */
TEST_F(pagemap, private_refused)
{
	void *q = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		       self->fd, (off_t)self->off);

	ASSERT_EQ(MAP_FAILED, q);
	ASSERT_EQ(EINVAL, errno);
}

/* /proc/self/mem goes through get_user_pages(FOLL_FORCE). */
TEST_F(pagemap, proc_self_mem)
{
	unsigned char src[PAGE];
	int mfd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, mfd);
	tio_fill(src, sizeof(src), 3);
	ASSERT_EQ((ssize_t)sizeof(src),
		  pwrite(mfd, src, sizeof(src), (off_t)(uintptr_t)(self->p + PAGE)));
	close(mfd);
	ASSERT_EQ(0, tio_check(self->p + PAGE, PAGE, 3));
}

/*
 * BUF_PIN_USER of the mapping: a second buffer over the same pages, which
 * keeps them (and their bytes) after the first is freed and unmapped.
 * Both buffers are charged while both exist.
 */
TEST_F(pagemap, pin_user_outlives_free)
{
	long long before = tio_pinned(self->fd);
	unsigned char *q;
	uint32_t h2;
	uint64_t off2;

	tio_fill(self->p, NBYTES, 7);
	ASSERT_EQ(0, pin_user(self->fd, self->p, NBYTES, &h2, &off2));
	ASSERT_EQ(before + (long long)NBYTES, tio_pinned(self->fd));
	ASSERT_EQ(0, tio_free(self->fd, self->h));
	ASSERT_EQ(0, munmap(self->p, NBYTES));
	self->p = MAP_FAILED;
	ASSERT_EQ(before, tio_pinned(self->fd));
	q = map_shared(self->fd, NBYTES, off2);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, tio_check(q, NBYTES, 7));
	ASSERT_EQ(0, munmap(q, NBYTES));
	ASSERT_EQ(0, tio_free(self->fd, h2));
}

/* The dma-buf's own mapping is page-backed too. */
TEST_F(pagemap, dmabuf_mapping_pins)
{
	unsigned char *q;
	uint32_t h2;
	uint64_t off2;
	int dfd;

	ASSERT_EQ(0, tio_export(self->fd, self->h,
				TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR, &dfd));
	q = map_shared(dfd, NBYTES, 0);
	ASSERT_NE(MAP_FAILED, q);
	tio_fill(q, NBYTES, 9);
	ASSERT_EQ(0, pin_user(self->fd, q, NBYTES, &h2, &off2));
	ASSERT_EQ(0, munmap(q, NBYTES));
	close(dfd);
	ASSERT_EQ(0, tio_free(self->fd, self->h));
	ASSERT_EQ(0, tio_check(self->p, NBYTES, 9));
	ASSERT_EQ(0, tio_free(self->fd, h2));
}

static bool kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
}

/* io_uring fixed buffers pin with FOLL_LONGTERM; READ_FIXED fills them. */
TEST_F(pagemap, uring_fixed_buffer)
{
	struct iovec iov = { .iov_base = self->p, .iov_len = NBYTES };
	unsigned char *src = malloc(NBYTES);
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int mfd, ret;

	ASSERT_NE(NULL, src);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	ret = io_uring_register_buffers(&ring, &iov, 1);
	if (ret == -EOPNOTSUPP && kernel_before(6, 5)) {
		/* Before 6.5 io_uring refused every non-shmem file mapping. */
		io_uring_queue_exit(&ring);
		free(src);
		SKIP(return, "io_uring < 6.5 refuses file-backed fixed buffers");
	}
	ASSERT_EQ(0, ret);
	mfd = memfd_create("tio-src", MFD_CLOEXEC);
	ASSERT_LE(0, mfd);
	tio_fill(src, NBYTES, 11);
	ASSERT_EQ((ssize_t)NBYTES, pwrite(mfd, src, NBYTES, 0));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, mfd, self->p, NBYTES, 0, 0);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	ASSERT_EQ((int)NBYTES, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	/* The registration keeps the pages after BUF_FREE. */
	ASSERT_EQ(0, tio_free(self->fd, self->h));
	ASSERT_EQ(0, tio_check(self->p, NBYTES, 11));
	ASSERT_EQ(0, io_uring_unregister_buffers(&ring));
	io_uring_queue_exit(&ring);
	close(mfd);
	free(src);
}

/* An attached loop device over a file of @n bytes of tio_fill(@seed). */
static int loop_attach(const char *img, size_t n, unsigned int seed,
		       char *dev, size_t devlen)
{
	unsigned char *buf = malloc(n);
	int ctl, nr, bfd, lfd, ret = -1;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0 || !buf)
		goto out_free;
	nr = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (nr < 0)
		goto out_free;
	snprintf(dev, devlen, "/dev/loop%d", nr);
	bfd = open(img, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (bfd < 0)
		goto out_free;
	tio_fill(buf, n, seed);
	if (pwrite(bfd, buf, n, 0) != (ssize_t)n)
		goto out_close;
	lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0)
		goto out_close;
	ret = ioctl(lfd, LOOP_SET_FD, bfd) ? -1 : lfd;
	if (ret < 0)
		close(lfd);
out_close:
	close(bfd);
out_free:
	free(buf);
	return ret;
}

/* O_DIRECT reads DMA (here: copy) into get_user_pages()'d pages. */
TEST_F(pagemap, odirect_read)
{
	const char *img = "/tmp/tio_pagemap.img";
	char dev[32];
	int lfd, dfd;

	if (access("/dev/loop-control", F_OK))
		SKIP(return, "no loop driver for an O_DIRECT block device");
	lfd = loop_attach(img, NBYTES, 13, dev, sizeof(dev));
	ASSERT_LE(0, lfd);
	dfd = open(dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, dfd);
	ASSERT_EQ((ssize_t)NBYTES, pread(dfd, self->p, NBYTES, 0));
	close(dfd);
	ASSERT_EQ(0, ioctl(lfd, LOOP_CLR_FD, 0));
	close(lfd);
	unlink(img);
	ASSERT_EQ(0, tio_check(self->p, NBYTES, 13));
}

TEST_HARNESS_MAIN
