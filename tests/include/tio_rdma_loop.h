/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two RC queue pairs, A and B, connected to each other through IPv4 RoCE
 * v2 GIDs, and RDMA WRITE/READ from A: shared by the soft-RoCE test
 * (tests/net/tio_rxe_test.c) and tio-bench's rdma rows
 * (bench/suite_rdma.c). A is on the first device or $TIO_RDMA_DEV; B is on
 * $TIO_RDMA_DEV2 where that is set (two devices, e.g. rxe0 and rxe1 on
 * the two ends of a veth pair), else on A's device too (soft-RoCE loops a
 * packet for one of its own addresses back).
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

/* One side: a device with its PD and CQ, and its IPv4 RoCE v2 GID. */
struct rside {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
};

/*
 * Two queue pairs connected to each other: qp[0] on side A (ctx, pd, cq),
 * qp[1] on side B (b; a copy of A's pointers when there is one device).
 */
struct rdev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct rside a, b;
	int two;	/* B is a device of its own */
	struct ibv_qp *qp[2];
	int gid_index;	/* A's */
	char why[160];
};

/* An IPv4-mapped RoCE v2 GID of port 1, or -1. */
static inline int pick_gid(struct rside *r, int tbl_len)
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

/* @qp (on side @me) to RTS, its peer QP @dest_qpn on side @to. */
static inline int qp_connect(const struct rside *me, const struct rside *to,
			     struct ibv_qp *qp, uint32_t dest_qpn)
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
	a.path_mtu = me->mtu < to->mtu ? me->mtu : to->mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = to->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)me->gid_index;
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

/*
 * Side @s on the device named @want (the first one when NULL or not
 * found): 0, or -1 with @why saying what is missing or what failed.
 */
static inline int rside_open(struct rside *s, const char *want, char *why, size_t wlen)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		snprintf(why, wlen, "no RDMA device (ibv_get_device_list: %s)",
			 list ? "none listed" : strerror(errno));
		if (list)
			ibv_free_device_list(list);
		return -1;
	}
	for (i = 0; want && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (!want || i == n)
		i = 0;
	s->ctx = ibv_open_device(list[i]);
	snprintf(why, wlen, "ibv_open_device(%s): %s",
		 ibv_get_device_name(list[i]), strerror(errno));
	ibv_free_device_list(list);
	if (!s->ctx)
		return -1;
	if (ibv_query_port(s->ctx, 1, &pa) || pa.state != IBV_PORT_ACTIVE) {
		snprintf(why, wlen, "%s: port 1 not active",
			 ibv_get_device_name(s->ctx->device));
		return -1;
	}
	s->mtu = pa.active_mtu;
	s->gid_index = pick_gid(s, pa.gid_tbl_len);
	if (s->gid_index < 0) {
		snprintf(why, wlen, "%s: no IPv4 RoCE v2 GID on port 1",
			 ibv_get_device_name(s->ctx->device));
		return -1;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 2 * RDEV_DEPTH, NULL, NULL, 0) : NULL;
	if (!s->cq) {
		snprintf(why, wlen, "%s: PD/CQ: %s",
			 ibv_get_device_name(s->ctx->device), strerror(errno));
		return -1;
	}
	return 0;
}

static inline void rside_close(struct rside *s)
{
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
}

/* 0, or -1 with r->why saying what is missing or what failed. */
static inline int rdev_open(struct rdev *r)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = RDEV_DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const char *want_b = getenv("TIO_RDMA_DEV2");
	struct rside *s[2] = { &r->a, &r->b };
	int i;

	if (rside_open(&r->a, getenv("TIO_RDMA_DEV"), r->why, sizeof(r->why)))
		return -1;
	r->ctx = r->a.ctx;
	r->pd = r->a.pd;
	r->cq = r->a.cq;
	r->gid_index = r->a.gid_index;
	if (want_b && *want_b) {
		r->two = 1;	/* B's device is closed however far it got */
		if (rside_open(&r->b, want_b, r->why, sizeof(r->why)))
			return -1;
		if (r->b.ctx->device == r->a.ctx->device ||
		    !strcmp(ibv_get_device_name(r->b.ctx->device),
			    ibv_get_device_name(r->a.ctx->device))) {
			snprintf(r->why, sizeof(r->why), "no device %s (B would be A's %s)",
				 want_b, ibv_get_device_name(r->a.ctx->device));
			return -1;
		}
	} else {
		r->b = r->a;
	}
	for (i = 0; i < 2; i++) {
		qa.send_cq = qa.recv_cq = s[i]->cq;
		r->qp[i] = ibv_create_qp(s[i]->pd, &qa);
		if (!r->qp[i]) {
			snprintf(r->why, sizeof(r->why), "ibv_create_qp: %s",
				 strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < 2; i++) {
		errno = qp_connect(s[i], s[1 - i], r->qp[i], r->qp[1 - i]->qp_num);
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
	if (r->two)
		rside_close(&r->b);
	rside_close(&r->a);
}

/*
 * @count signalled WRITEs or READs of @len bytes on QP A (qp[0]), from/into @lmr at
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
