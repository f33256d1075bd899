// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA verbs on tensorio buffers (issue 20), run in the VM over soft-RoCE
 * (tests/net/vm-rxe.sh makes rxe0 over a veth): the /dev/tensorio mapping
 * of a BUF_ALLOC buffer registers with ibv_reg_mr(), and RDMA WRITE and
 * READ move bytes between two such buffers through two RC queue pairs
 * connected to each other on the one device (rxe loops a packet back when
 * its destination is one of its own addresses). Skips, naming the reason,
 * where no verbs device exists.
 */
#include <time.h>

#include <infiniband/verbs.h>

#include "kselftest_harness.h"
#include "tio_buf_common.h"

#define LEN (1UL << 20)
/* Completions are polled for at most this long (rxe under TCG is slow). */
#define POLL_SECS 60

/* One device, one PD and CQ, two queue pairs connected to each other. */
struct rdev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
	char why[160];
};

/* An IPv4-mapped RoCE v2 GID of port 1 (routable to itself), or -1. */
static int pick_gid(struct rdev *r, int tbl_len)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < tbl_len; i++) {
		if (ibv_query_gid_ex(r->ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2 ||
		    memcmp(e.gid.raw, v4map, sizeof(v4map)))
			continue;
		r->gid = e.gid;
		return i;
	}
	return -1;
}

static int qp_connect(struct rdev *r, struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = r->mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = r->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)r->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			     IBV_QP_MAX_QP_RD_ATOMIC);
}

/* 0, or -1 with r->why saying what is missing or what failed. */
static int rdev_open(struct rdev *r)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		snprintf(r->why, sizeof(r->why), "no RDMA device (%s)",
			 list ? "none listed" : strerror(errno));
		if (list)
			ibv_free_device_list(list);
		return -1;
	}
	r->ctx = ibv_open_device(list[0]);
	snprintf(r->why, sizeof(r->why), "ibv_open_device(%s): %s",
		 ibv_get_device_name(list[0]), strerror(errno));
	ibv_free_device_list(list);
	if (!r->ctx)
		return -1;
	if (ibv_query_port(r->ctx, 1, &pa) || pa.state != IBV_PORT_ACTIVE) {
		snprintf(r->why, sizeof(r->why), "port 1 not active");
		return -1;
	}
	r->mtu = pa.active_mtu;
	r->gid_index = pick_gid(r, pa.gid_tbl_len);
	if (r->gid_index < 0) {
		snprintf(r->why, sizeof(r->why), "no IPv4 RoCE v2 GID on port 1");
		return -1;
	}
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = r->pd ? ibv_create_cq(r->ctx, 16, NULL, NULL, 0) : NULL;
	if (!r->cq) {
		snprintf(r->why, sizeof(r->why), "PD/CQ: %s", strerror(errno));
		return -1;
	}
	qa.send_cq = qa.recv_cq = r->cq;
	for (i = 0; i < 2; i++) {
		r->qp[i] = ibv_create_qp(r->pd, &qa);
		if (!r->qp[i]) {
			snprintf(r->why, sizeof(r->why), "ibv_create_qp: %s",
				 strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < 2; i++) {
		errno = qp_connect(r, r->qp[i], r->qp[1 - i]->qp_num);
		if (errno) {
			snprintf(r->why, sizeof(r->why), "connecting QP %d: %s",
				 i, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void rdev_close(struct rdev *r)
{
	int i;

	for (i = 0; i < 2; i++)
		if (r->qp[i])
			ibv_destroy_qp(r->qp[i]);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ctx)
		ibv_close_device(r->ctx);
}

/*
 * One signalled WRITE or READ on QP 0 from/into @lmr at @loff, to/from
 * @raddr/@rkey; waits for its completion. The status, or -1 on timeout.
 */
static int rdma_op(struct rdev *r, enum ibv_wr_opcode op, struct ibv_mr *lmr,
		   size_t loff, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)lmr->addr + loff, .length = len, .lkey = lmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	if (ibv_post_send(r->qp[0], &wr, &bad))
		return -2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(r->cq, 1, &wc);
		if (n < 0)
			return -2;
		if (n == 1)
			return wc.status;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > POLL_SECS)
			return -1;
		usleep(100);
	}
}

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

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* WRITE a whole buffer into another, READ it back, then a byte range. */
TEST_F(rxe, write_read)
{
	struct ibv_mr *ma, *mb;
	size_t i;

	ma = ibv_reg_mr(self->r.pd, self->a.p, LEN, ACCESS);
	ASSERT_NE(NULL, ma) TH_LOG("ibv_reg_mr(BUF_ALLOC mapping): %s", strerror(errno));
	mb = ibv_reg_mr(self->r.pd, self->b.p, LEN, ACCESS);
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
	mb = ibv_reg_mr(self->r.pd, self->b.p, LEN, ACCESS);
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
	md = ibv_reg_mr(self->r.pd, d, LEN, ACCESS);
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
	md = ibv_reg_dmabuf_mr(self->r.pd, 0, LEN, (uintptr_t)self->b.p, dmafd, ACCESS);
	if (!md) {
		int err = errno;

		close(dmafd);
		ASSERT_TRUE(err == EOPNOTSUPP || err == EPROTONOSUPPORT)
			TH_LOG("ibv_reg_dmabuf_mr: %s", strerror(err));
		SKIP(return, "%s: ibv_reg_dmabuf_mr says %s",
		     ibv_get_device_name(self->r.ctx->device), strerror(err));
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
