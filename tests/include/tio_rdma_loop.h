/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two RC queue pairs on one verbs device, connected to each other through
 * the device's IPv4 RoCE v2 GID (soft-RoCE loops a packet for one of its
 * own addresses back), and RDMA WRITE/READ on them: shared by the
 * soft-RoCE test (tests/net/tio_rxe_test.c) and tio-bench's rdma rows
 * (bench/suite_rdma.c). The first device, or $TIO_RDMA_DEV.
 */
#ifndef TIO_RDMA_LOOP_H
#define TIO_RDMA_LOOP_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* Work requests in flight at most. */
#define RDEV_DEPTH 16
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
static inline int pick_gid(struct rdev *r, int tbl_len)
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

static inline int qp_connect(struct rdev *r, struct ibv_qp *qp, uint32_t dest_qpn)
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
static inline int rdev_open(struct rdev *r)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = RDEV_DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_device **list;
	struct ibv_port_attr pa;
	const char *want;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		snprintf(r->why, sizeof(r->why), "no RDMA device (ibv_get_device_list: %s)",
			 list ? "none listed" : strerror(errno));
		if (list)
			ibv_free_device_list(list);
		return -1;
	}
	want = getenv("TIO_RDMA_DEV");
	for (i = 0; want && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (!want || i == n)
		i = 0;
	r->ctx = ibv_open_device(list[i]);
	snprintf(r->why, sizeof(r->why), "ibv_open_device(%s): %s",
		 ibv_get_device_name(list[i]), strerror(errno));
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
	r->cq = r->pd ? ibv_create_cq(r->ctx, 2 * RDEV_DEPTH, NULL, NULL, 0) : NULL;
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

static inline void rdev_close(struct rdev *r)
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
 * @count signalled WRITEs or READs of @len bytes on QP 0, from/into @lmr at
 * @loff, to/from @raddr/@rkey, at most RDEV_DEPTH in flight; waits for
 * every completion. IBV_WC_SUCCESS, another completion status, -1 when
 * the completions took longer than POLL_SECS, -2 when posting failed.
 */
static inline int rdma_ops(struct rdev *r, enum ibv_wr_opcode op, struct ibv_mr *lmr,
			   size_t loff, uint64_t raddr, uint32_t rkey, uint32_t len,
			   uint64_t count)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)lmr->addr + loff, .length = len, .lkey = lmr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	uint64_t posted = 0, done = 0;
	struct ibv_wc wc[RDEV_DEPTH];
	struct timespec t0, t;
	int n, i, status = IBV_WC_SUCCESS;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < count) {
		while (posted < count && posted - done < RDEV_DEPTH) {
			if (ibv_post_send(r->qp[0], &wr, &bad))
				return -2;
			posted++;
		}
		n = ibv_poll_cq(r->cq, RDEV_DEPTH, wc);
		if (n < 0)
			return -2;
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS && status == IBV_WC_SUCCESS)
				status = wc[i].status;
		done += (uint64_t)n;
		if (status != IBV_WC_SUCCESS)
			return status;	/* the QP is in error: nothing more comes */
		if (n)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > POLL_SECS)
			return -1;
	}
	return status;
}

/* One of them. */
static inline int rdma_op(struct rdev *r, enum ibv_wr_opcode op, struct ibv_mr *lmr,
			  size_t loff, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	return rdma_ops(r, op, lmr, loff, raddr, rkey, len, 1);
}

#endif /* TIO_RDMA_LOOP_H */
