// SPDX-License-Identifier: GPL-2.0
/*
 * Bounded fences (Documentation/driver-api/dma-buf.rst, "Indefinite DMA
 * Fences"): a point seen outside the file — exported as a sync_file or
 * attached to a dma_resv — that its owner never signals expires with
 * -ETIMEDOUT after the stream's fence_timeout_ms, waking every waiter
 * (sync_file poll, dma-buf poll, DMA_BUF_IOCTL_SYNC, a sync_file exported
 * from the dma-buf, vgem's buffer); earlier points go with it, a late
 * FENCE_SIGNAL gets -ETIMEDOUT, the expiry is counted in debugfs. A point
 * that never leaves the file does not expire. Without the bound all of
 * these would wait forever.
 *
 * Streams here use a short bound (BOUND_MS); waits allow far longer
 * (WAIT_MS), so that nothing depends on the emulator's speed.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <xf86drm.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"
#include "tio_vgem.h"

#define BOUND_MS	100
#define WAIT_MS		60000
#define PARAM		"/sys/module/tensorio/parameters/fence_timeout_ms"

FIXTURE(deadline) {
	int fd;
	__u32 stream;
};

FIXTURE_SETUP(deadline)
{
	struct tio_stream_create sc = { .fence_timeout_ms = BOUND_MS };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	ASSERT_EQ(BOUND_MS, sc.fence_timeout_ms);
	self->stream = sc.handle;
}

FIXTURE_TEARDOWN(deadline)
{
	close(self->fd);
}

static __u64 emit(int fd, __u32 stream)
{
	struct tio_fence_emit e = { .stream = stream };

	return tio_ioc(fd, TIO_IOC_FENCE_EMIT, &e) ? 0 : e.seqno;
}

/* FENCE_WAIT result; the status goes to *status. */
static int fence_wait(int fd, __u32 stream, __u64 seqno, __s64 ns, int *status)
{
	struct tio_fence_wait w = { .stream = stream, .seqno = seqno,
				    .timeout_ns = ns };
	int ret = tio_ioc(fd, TIO_IOC_FENCE_WAIT, &w);

	*status = w.status;
	return ret;
}

TEST_F(deadline, exported_point_expires)
{
	long long before = tio_dbg_stat("fences_expired");
	struct tio_fence_signal sg = { .stream = self->stream };
	struct pollfd p = { .events = POLLIN };
	__u64 s1 = emit(self->fd, self->stream);
	__u64 s2 = emit(self->fd, self->stream);
	int status;

	ASSERT_EQ(2, s2);
	p.fd = tio_export_point(self->fd, self->stream, s2);
	ASSERT_LE(0, p.fd);
	EXPECT_EQ(0, tio_sync_status(p.fd));
	ASSERT_EQ(1, poll(&p, 1, WAIT_MS));
	EXPECT_EQ(-ETIMEDOUT, tio_sync_status(p.fd));
	/* The earlier point went first, with the same error. */
	EXPECT_EQ(0, fence_wait(self->fd, self->stream, s1, 0, &status));
	EXPECT_EQ(-ETIMEDOUT, status);
	/* Too late to signal either. */
	sg.seqno = s1;
	EXPECT_EQ(-ETIMEDOUT, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	sg.seqno = s2;
	EXPECT_EQ(-ETIMEDOUT, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	/* A later point is not affected and signals as usual. */
	sg.seqno = emit(self->fd, self->stream);
	ASSERT_EQ(3, sg.seqno);
	EXPECT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	EXPECT_EQ(0, fence_wait(self->fd, self->stream, 3, 0, &status));
	EXPECT_EQ(0, status);
	EXPECT_LE(before + 2, tio_dbg_stat("fences_expired"));
	close(p.fd);
}

/*
 * Points without a fence of their own expire with the exported one after
 * them; those that had completed keep their outcome, later ones are not
 * touched, and the count covers exactly the points that expired.
 */
TEST_F(deadline, points_without_fences_expire)
{
	long long before = tio_dbg_stat("fences_expired");
	struct tio_fence_signal sg = { .stream = self->stream, .seqno = 1,
				       .error = -EIO };
	int i, sfd, status;

	for (i = 1; i <= 6; i++)
		ASSERT_EQ(i, emit(self->fd, self->stream));
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	sfd = tio_export_point(self->fd, self->stream, 4);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, fence_wait(self->fd, self->stream, 4, WAIT_MS * 1000000LL,
				&status));
	EXPECT_EQ(-ETIMEDOUT, status);
	EXPECT_EQ(-ETIMEDOUT, tio_sync_status(sfd));
	EXPECT_EQ(0, fence_wait(self->fd, self->stream, 1, 0, &status));
	EXPECT_EQ(-EIO, status);
	for (i = 2; i <= 3; i++) {
		EXPECT_EQ(0, fence_wait(self->fd, self->stream, i, 0, &status));
		EXPECT_EQ(-ETIMEDOUT, status);
	}
	EXPECT_EQ(-ETIME, fence_wait(self->fd, self->stream, 5, 0, &status));
	EXPECT_EQ(before + 3, tio_dbg_stat("fences_expired"));
	sg.seqno = 6;
	sg.error = 0;
	EXPECT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	for (i = 5; i <= 6; i++) {
		EXPECT_EQ(0, fence_wait(self->fd, self->stream, i, 0, &status));
		EXPECT_EQ(0, status);
	}
	close(sfd);
}

/* Signalled in time: no error, nothing expires later. */
TEST_F(deadline, signalled_in_time_stays_clean)
{
	struct tio_fence_signal sg = { .stream = self->stream, .seqno = 1 };
	int sfd, status;

	ASSERT_EQ(1, emit(self->fd, self->stream));
	sfd = tio_export_point(self->fd, self->stream, 1);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_SIGNAL, &sg));
	EXPECT_EQ(1, tio_sync_status(sfd));
	/* Past the bound, the point and the stream are unchanged. */
	ASSERT_EQ(2, emit(self->fd, self->stream));
	EXPECT_EQ(-ETIME, fence_wait(self->fd, self->stream, 2,
				     4LL * BOUND_MS * 1000000, &status));
	EXPECT_EQ(1, tio_sync_status(sfd));
	close(sfd);
}

/* A point that never left the file may wait as long as its owner likes. */
TEST_F(deadline, private_point_does_not_expire)
{
	int status;

	ASSERT_EQ(1, emit(self->fd, self->stream));
	EXPECT_EQ(-ETIME, fence_wait(self->fd, self->stream, 1,
				     10LL * BOUND_MS * 1000000, &status));
}

/*
 * A point attached to a buffer's dma_resv: every dma-buf waiter wakes, a
 * sync_file exported from the dma-buf reports -ETIMEDOUT.
 */
TEST_F(deadline, attached_point_expires)
{
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_buf_export e = { .flags = TIO_EXPORT_F_CLOEXEC };
	struct tio_buf_attach at = { .stream = self->stream,
				     .flags = TIO_RESV_F_WRITE };
	struct dma_buf_export_sync_file es = { .flags = DMA_BUF_SYNC_RW };
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW };
	struct pollfd p = { .events = POLLIN | POLLOUT };

	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_ALLOC, &a));
	e.handle = at.handle = a.handle;
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_EXPORT, &e));
	at.seqno = emit(self->fd, self->stream);
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &at));
	ASSERT_EQ(0, ioctl(e.fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &es));
	EXPECT_EQ(0, tio_sync_status(es.fd));
	/* Blocks until the write fence is done: then it is (expired). */
	ASSERT_EQ(0, ioctl(e.fd, DMA_BUF_IOCTL_SYNC, &sync));
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
	ASSERT_EQ(0, ioctl(e.fd, DMA_BUF_IOCTL_SYNC, &sync));
	p.fd = e.fd;
	ASSERT_EQ(1, poll(&p, 1, WAIT_MS));
	EXPECT_EQ(-ETIMEDOUT, tio_sync_status(es.fd));
	close(es.fd);
	close(e.fd);
}

/* vgem's buffer, imported and fenced by us: vgem's own waiters wake. */
TEST_F(deadline, vgem_buffer_waiter_wakes)
{
	struct drm_mode_create_dumb cd = { .width = 1024, .height = 1, .bpp = 32 };
	struct tio_buf_import im = { 0 };
	struct tio_buf_attach at = { .stream = self->stream,
				     .flags = TIO_RESV_F_WRITE };
	struct dma_buf_export_sync_file es = { .flags = DMA_BUF_SYNC_READ };
	struct pollfd p = { .events = POLLIN };
	int vg, dfd;

	vg = open_vgem();
	if (vg < 0)
		SKIP(return, "no vgem device");
	ASSERT_EQ(0, drmIoctl(vg, DRM_IOCTL_MODE_CREATE_DUMB, &cd));
	ASSERT_EQ(0, drmPrimeHandleToFD(vg, cd.handle, DRM_CLOEXEC | DRM_RDWR, &dfd));
	im.fd = dfd;
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_IMPORT, &im));
	at.handle = im.handle;
	at.seqno = emit(self->fd, self->stream);
	ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_ATTACH_FENCE, &at));
	ASSERT_EQ(0, ioctl(dfd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &es));
	p.fd = es.fd;
	ASSERT_EQ(1, poll(&p, 1, WAIT_MS));
	EXPECT_EQ(-ETIMEDOUT, tio_sync_status(es.fd));
	close(es.fd);
	close(dfd);
	close(vg);
}

/* The module parameter: 1..60000 ms, never 0 (unbounded). */
TEST(param_bounds)
{
	char old[32] = "";
	FILE *f = fopen(PARAM, "r");
	int fd;

	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(old, sizeof(old), f));
	fclose(f);
	fd = open(PARAM, O_WRONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, write(fd, "0", 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(fd, "60001", 5));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(5, write(fd, "60000", 5));
	EXPECT_EQ((ssize_t)strlen(old), write(fd, old, strlen(old)));
	close(fd);
}

TEST_HARNESS_MAIN
