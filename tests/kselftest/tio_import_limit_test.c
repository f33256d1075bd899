// SPDX-License-Identifier: GPL-2.0
/*
 * BUF_IMPORT keeps the exporter's pages mapped (pinned) for as long as the
 * buffer lives, so the importer pays for them: an unprivileged importer
 * (no CAP_IPC_LOCK) is refused with ENOMEM beyond its RLIMIT_MEMLOCK, its
 * VmPin and the module's pinned bytes grow by the dma-buf's size, and
 * freeing the buffer gives the charge back. A tensorio dma-buf is not
 * charged twice.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <xf86drm.h>

#include "kselftest_harness.h"
#include "tio_buf_common.h"
#include "tio_vgem.h"

/* A vgem dma-buf of @size bytes (a multiple of 4 KiB), or -1. */
static int vgem_dmabuf(int vg, unsigned long size)
{
	struct drm_mode_create_dumb cd = { .width = 1024, .bpp = 32,
					   .height = size / 4096 };
	int dfd;

	if (drmIoctl(vg, DRM_IOCTL_MODE_CREATE_DUMB, &cd) ||
	    drmPrimeHandleToFD(vg, cd.handle, DRM_CLOEXEC | DRM_RDWR, &dfd))
		return -1;
	return dfd;
}

static int import(int fd, int dfd, __u32 *handle)
{
	struct tio_buf_import im = { .fd = dfd };
	int ret = tio_ioc(fd, TIO_IOC_BUF_IMPORT, &im);

	*handle = im.handle;
	return ret;
}

FIXTURE(imp) {
	int fd;
	int vg;
	long long pinned0;
};

FIXTURE_SETUP(imp)
{
	struct rlimit rl = { 16 * PAGE, 16 * PAGE };

	self->fd = tio_open();
	ASSERT_LE(0, self->fd);
	self->vg = open_vgem();
	if (self->vg < 0)
		SKIP(return, "no vgem device");
	/* The harness runs each test in its own process. */
	ASSERT_EQ(0, drop_cap_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	self->pinned0 = tio_pinned(self->fd);
}

FIXTURE_TEARDOWN(imp)
{
	if (self->vg >= 0)
		close(self->vg);
	close(self->fd);
}

TEST_F(imp, charged_limited_released)
{
	long vmpin0 = tio_vmpin_kb();
	int big = vgem_dmabuf(self->vg, 64 * PAGE);
	int small = vgem_dmabuf(self->vg, 8 * PAGE);
	__u32 h, h2, h3;

	ASSERT_LE(0, big);
	ASSERT_LE(0, small);
	/* 64 pages over a 16-page limit: refused, nothing pinned. */
	EXPECT_EQ(-ENOMEM, import(self->fd, big, &h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0, tio_vmpin_kb());
	/* 8 pages fit, and are charged to VmPin and the module. */
	ASSERT_EQ(0, import(self->fd, small, &h));
	EXPECT_EQ(self->pinned0 + 8 * PAGE, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0 + 8 * 4, tio_vmpin_kb());
	/* Each import pays: 16 of 16 pages, then a third is refused. */
	ASSERT_EQ(0, import(self->fd, small, &h2));
	EXPECT_EQ(-ENOMEM, import(self->fd, small, &h3));
	EXPECT_EQ(0, tio_free(self->fd, h2));
	/* Freeing gives the charge back: the limit is whole again. */
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	if (vmpin0 >= 0)
		EXPECT_EQ(vmpin0, tio_vmpin_kb());
	ASSERT_EQ(0, import(self->fd, small, &h));
	EXPECT_EQ(0, tio_free(self->fd, h));
	close(big);
	close(small);
}

/* Closing the file gives the charge back too. */
TEST_F(imp, released_on_close)
{
	int small = vgem_dmabuf(self->vg, 8 * PAGE);
	int fd2 = tio_open();
	__u32 h;

	ASSERT_LE(0, small);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, import(fd2, small, &h));
	EXPECT_EQ(self->pinned0 + 8 * PAGE, tio_pinned(self->fd));
	close(fd2);
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
	close(small);
}

/* A tensorio dma-buf is paid for by its exporter only. */
TEST_F(imp, tensorio_dmabuf_not_charged_twice)
{
	struct tio_buf_export e = { .flags = TIO_EXPORT_F_CLOEXEC };
	__u32 h;

	ASSERT_EQ(0, tio_alloc(self->fd, 8 * PAGE, NULL, &e.handle, NULL));
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_EXPORT, &e));
	EXPECT_EQ(self->pinned0 + 8 * PAGE, tio_pinned(self->fd));
	ASSERT_EQ(0, import(self->fd, e.fd, &h));
	EXPECT_EQ(self->pinned0 + 8 * PAGE, tio_pinned(self->fd));
	EXPECT_EQ(0, tio_free(self->fd, h));
	EXPECT_EQ(0, tio_free(self->fd, e.handle));
	close(e.fd);
	EXPECT_EQ(self->pinned0, tio_pinned(self->fd));
}

TEST_HARNESS_MAIN
