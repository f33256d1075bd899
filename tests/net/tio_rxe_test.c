// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA verbs on tensorio buffers, run in the VM over soft-RoCE
 * (tests/net/vm-rxe.sh makes rxe0 and rxe1 on the two ends of a veth pair
 * and names them in $TIO_RDMA_DEV and $TIO_RDMA_DEV2): the /dev/tensorio
 * mapping of a BUF_ALLOC buffer registers with ibv_reg_mr(), and RDMA
 * WRITE and READ move bytes between two such buffers, buffer A registered
 * on QP A's device and buffer B on QP B's, across the veth pair. Without
 * $TIO_RDMA_DEV2 both QPs are on one device (rxe loops a packet back when
 * its destination is one of its own addresses), which two_devices reports
 * as a skip. Skips, naming the reason, where no verbs device exists.
 */
#include "kselftest_harness.h"
#include "tio_buf_common.h"
#include "tio_rdma_loop.h"

#include <arpa/inet.h>

#define LEN (1UL << 20)

/* A mapped BUF_ALLOC buffer of LEN bytes. */
struct tbuf {
	uint32_t handle;
	unsigned char *p;
};

static int tbuf_new(int fd, struct tbuf *b)
{
	uint64_t off;
	int ret = tio_alloc(fd, LEN, NULL, &b->handle, &off);

	if (ret)
		return ret;
	b->p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	return b->p == MAP_FAILED ? -errno : 0;
}

FIXTURE(rxe) {
	int fd;
	struct rdev r;
	struct tbuf a, b;
};

FIXTURE_SETUP(rxe)
{
	memset(&self->r, 0, sizeof(self->r));
	self->a.p = self->b.p = MAP_FAILED;
	self->fd = tio_open();
	ASSERT_GE(self->fd, 0);
	if (rdev_open(&self->r))
		SKIP(return, "%s", self->r.why);
	ASSERT_EQ(0, tbuf_new(self->fd, &self->a));
	ASSERT_EQ(0, tbuf_new(self->fd, &self->b));
}

FIXTURE_TEARDOWN(rxe)
{
	if (self->a.p != MAP_FAILED)
		munmap(self->a.p, LEN);
	if (self->b.p != MAP_FAILED)
		munmap(self->b.p, LEN);
	rdev_close(&self->r);
	close(self->fd);
}

/* QP A and QP B are on two devices, each with its own GID. */
TEST_F(rxe, two_devices)
{
	const char *na = ibv_get_device_name(self->r.a.ctx->device);
	const char *nb = ibv_get_device_name(self->r.b.ctx->device);
	char ga[INET6_ADDRSTRLEN], gb[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, self->r.a.gid.raw, ga, sizeof(ga));
	inet_ntop(AF_INET6, self->r.b.gid.raw, gb, sizeof(gb));
	if (!self->r.two)
		SKIP(return, "one device: QP A and QP B both on %s (GID %s)", na, ga);
	TH_LOG("QP A on %s (GID %s), QP B on %s (GID %s)", na, ga, nb, gb);
	ASSERT_STRNE(na, nb);
	ASSERT_NE(0, memcmp(self->r.a.gid.raw, self->r.b.gid.raw, sizeof(self->r.a.gid.raw)));
}

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* WRITE a whole buffer into another, READ it back, then a byte range. */
TEST_F(rxe, write_read)
{
	struct ibv_mr *ma, *mb;
	size_t i;

	ma = ibv_reg_mr(self->r.pd, self->a.p, LEN, ACCESS);
	ASSERT_NE(NULL, ma) TH_LOG("ibv_reg_mr(BUF_ALLOC mapping): %s", strerror(errno));
	mb = ibv_reg_mr(self->r.b.pd, self->b.p, LEN, ACCESS);
	ASSERT_NE(NULL, mb) TH_LOG("ibv_reg_mr(BUF_ALLOC mapping): %s", strerror(errno));

	tio_fill(self->a.p, LEN, 1);
	memset(self->b.p, 0, LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_WRITE, ma, 0,
					  (uintptr_t)self->b.p, mb->rkey, LEN));
	ASSERT_EQ(0, tio_check(self->b.p, LEN, 1));

	tio_fill(self->b.p, LEN, 2);
	memset(self->a.p, 0, LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_READ, ma, 0,
					  (uintptr_t)self->b.p, mb->rkey, LEN));
	ASSERT_EQ(0, tio_check(self->a.p, LEN, 2));

	/* A range across page boundaries: its bytes land, nothing beside it. */
	memset(self->b.p, 0xee, LEN);
	tio_fill(self->a.p, LEN, 3);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_WRITE, ma, 100,
					  (uintptr_t)self->b.p + 4000, mb->rkey, 3 * 4096));
	for (i = 0; i < 4000; i++)
		ASSERT_EQ(0xee, self->b.p[i]);
	for (i = 0; i < 3 * 4096; i++)
		ASSERT_EQ(self->a.p[100 + i], self->b.p[4000 + i]);
	for (i = 4000 + 3 * 4096; i < LEN; i++)
		ASSERT_EQ(0xee, self->b.p[i]);

	ASSERT_EQ(0, ibv_dereg_mr(mb));
	ASSERT_EQ(0, ibv_dereg_mr(ma));
}

/*
 * A registration outlives BUF_FREE and munmap (the pages are reference
 * counted): RDMA still reaches them, and deregistering returns every
 * pinned byte.
 */
TEST_F(rxe, registration_outlives_free)
{
	long long pinned0 = tio_pinned(self->fd);
	struct ibv_mr *ma, *mb;
	uint64_t baddr = (uintptr_t)self->b.p;

	ma = ibv_reg_mr(self->r.pd, self->a.p, LEN, ACCESS);
	ASSERT_NE(NULL, ma);
	mb = ibv_reg_mr(self->r.b.pd, self->b.p, LEN, ACCESS);
	ASSERT_NE(NULL, mb);
	tio_fill(self->b.p, LEN, 4);
	ASSERT_EQ(0, munmap(self->b.p, LEN));
	self->b.p = MAP_FAILED;
	ASSERT_EQ(0, tio_free(self->fd, self->b.handle));

	memset(self->a.p, 0, LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_READ, ma, 0,
					  baddr, mb->rkey, LEN));
	ASSERT_EQ(0, tio_check(self->a.p, LEN, 4));
	tio_fill(self->a.p, LEN, 5);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_WRITE, ma, 0,
					  baddr, mb->rkey, LEN));
	ASSERT_EQ(0, ibv_dereg_mr(mb));
	ASSERT_EQ(0, ibv_dereg_mr(ma));
	ASSERT_EQ(pinned0 - (long long)LEN, tio_pinned(self->fd));
}

/* The exported dma-buf's own mmap registers too, and RDMA lands in it. */
TEST_F(rxe, dmabuf_mapping_mr)
{
	struct ibv_mr *ma, *md;
	unsigned char *d;
	int dmafd;

	ASSERT_EQ(0, tio_export(self->fd, self->b.handle,
				TIO_EXPORT_F_RDWR | TIO_EXPORT_F_CLOEXEC, &dmafd));
	d = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, dmafd, 0);
	ASSERT_NE(MAP_FAILED, d);
	md = ibv_reg_mr(self->r.b.pd, d, LEN, ACCESS);
	ASSERT_NE(NULL, md) TH_LOG("ibv_reg_mr(dma-buf mapping): %s", strerror(errno));
	ma = ibv_reg_mr(self->r.pd, self->a.p, LEN, ACCESS);
	ASSERT_NE(NULL, ma);
	tio_fill(self->a.p, LEN, 7);
	memset(self->b.p, 0, LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_WRITE, ma, 0,
					  (uintptr_t)d, md->rkey, LEN));
	ASSERT_EQ(0, tio_check(self->b.p, LEN, 7));
	ASSERT_EQ(0, ibv_dereg_mr(ma));
	ASSERT_EQ(0, ibv_dereg_mr(md));
	ASSERT_EQ(0, munmap(d, LEN));
	close(dmafd);
}

/*
 * dma-buf registration (ibv_reg_dmabuf_mr) of an exported buffer: rxe has
 * none (it needs a NIC that DMAs through the attachment), which is said as
 * a skip; where a device has it, the same WRITE lands in the buffer.
 */
TEST_F(rxe, dmabuf_mr)
{
	struct ibv_mr *ma, *md;
	int dmafd;

	ASSERT_EQ(0, tio_export(self->fd, self->b.handle,
				 TIO_EXPORT_F_RDWR | TIO_EXPORT_F_CLOEXEC, &dmafd));
	md = ibv_reg_dmabuf_mr(self->r.b.pd, 0, LEN, (uintptr_t)self->b.p, dmafd, ACCESS);
	if (!md) {
		int err = errno;

		close(dmafd);
		ASSERT_TRUE(err == EOPNOTSUPP || err == EPROTONOSUPPORT)
			TH_LOG("ibv_reg_dmabuf_mr: %s", strerror(err));
		SKIP(return, "%s: ibv_reg_dmabuf_mr says %s",
		     ibv_get_device_name(self->r.b.ctx->device), strerror(err));
	}
	ma = ibv_reg_mr(self->r.pd, self->a.p, LEN, ACCESS);
	ASSERT_NE(NULL, ma);
	tio_fill(self->a.p, LEN, 6);
	memset(self->b.p, 0, LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&self->r, IBV_WR_RDMA_WRITE, ma, 0,
					  (uintptr_t)self->b.p, md->rkey, LEN));
	ASSERT_EQ(0, tio_check(self->b.p, LEN, 6));
	ASSERT_EQ(0, ibv_dereg_mr(ma));
	ASSERT_EQ(0, ibv_dereg_mr(md));
	close(dmafd);
}

TEST_HARNESS_MAIN
