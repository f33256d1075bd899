// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "overhead": the io_uring and SUBMIT paths. One uring_cmd SQE per
 * command (uring/bN), the payload inline in a 128-byte SQE
 * (uring-inline/bN), and a vector of records in one TIO_IOC_SUBMIT, by
 * ioctl (submit/bN) or in one SQE (submit-uring/bN).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>

#include "overhead.h"

/* The commands of one batch, as (op, payload) pairs in s->pl order. */
static unsigned int fill_round(struct ovh *s, int round, unsigned int *ops)
{
	unsigned int i, n = 0;

	/* Records must be zero past their payload's size. */
	memset(s->pl, 0, (s->kind == K_FENCE ? 2 : 1) * s->batch * sizeof(*s->pl));
	for (i = 0; i < s->batch; i++) {
		union payload *p = &s->pl[n];

		switch (s->kind) {
		case K_INFO:
			memset(&p->info, 0, sizeof(p->info));
			ops[n++] = TIO_IOC_INFO;
			break;
		case K_BUF:
			if (!round) {
				p->alloc = (struct tio_buf_alloc){ .size = 4096 };
				ops[n++] = TIO_IOC_BUF_ALLOC;
			} else {
				__u32 h = s->pl[s->batch + i].alloc.handle;

				p->free = (struct tio_handle_op){ .handle = h };
				ops[n++] = TIO_IOC_BUF_FREE;
			}
			break;
		case K_FENCE:
			p->emit = (struct tio_fence_emit){ .stream = s->stream };
			ops[n++] = TIO_IOC_FENCE_EMIT;
			p = &s->pl[n];
			p->signal = (struct tio_fence_signal){
				.stream = s->stream, .seqno = s->next_seq + i };
			ops[n++] = TIO_IOC_FENCE_SIGNAL;
			break;
		}
	}
	return n;
}

/* Every record ran and succeeded; their payloads go back to s->pl. */
static int check_records(struct bench_run *run, struct ovh *s,
			 const struct tio_submit *sub, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < sub->done && i < n; i++) {
		if (s->cmds[i].result)
			return bench_fail(run, -s->cmds[i].result,
					  "SUBMIT record %u (op 0x%x)", i,
					  s->cmds[i].op);
		memcpy(&s->pl[i], s->cmds[i].payload.bytes, TIO_CMD_PAYLOAD);
	}
	if (sub->done != n)
		return bench_fail(run, EPROTO, "SUBMIT did %u of %u", sub->done, n);
	return 0;
}

/* A CQE's check: 0, or bench_fail()'s error. */
typedef int (*cqe_check)(struct bench_run *run, struct ovh *s,
			 const struct io_uring_cqe *cqe);

static int plain_cqe(struct bench_run *run, struct ovh *s,
		     const struct io_uring_cqe *cqe)
{
	return cqe->res < 0 ? bench_fail(run, -cqe->res, "uring_cmd") : 0;
}

/* Reap @want CQEs, each passing @check. */
static int reap_cqes(struct bench_run *run, struct ovh *s, unsigned int want,
		     cqe_check check)
{
	struct io_uring_cqe *cqe;
	unsigned int got = 0;
	int ret;

	while (got < want) {
		unsigned int head, seen = 0;

		io_uring_for_each_cqe(&s->ring, head, cqe) {
			ret = check(run, s, cqe);
			if (ret) {
				io_uring_cq_advance(&s->ring, seen + 1);
				return ret;
			}
			seen++;
		}
		io_uring_cq_advance(&s->ring, seen);
		got += seen;
		if (got < want && (ret = io_uring_wait_cqe(&s->ring, &cqe)))
			return bench_fail(run, -ret, "io_uring_wait_cqe");
	}
	return 0;
}

/*
 * One inline command: every byte the kernel reads from a 128-byte SQE
 * written once, the device as registered file 0 (no fget/fput per SQE).
 * Whole-word stores instead of io_uring_prep_rw() plus a memset() of the
 * command area; the last 16 bytes of the area are never read. The
 * header and result_ptr here, the payload by the caller.
 */
static inline struct tio_uring_inline *
put_inline_hdr(struct io_uring_sqe *sqe, __u32 op, __u64 ud, void *out)
{
	struct tio_uring_inline *in = (struct tio_uring_inline *)sqe->cmd;

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->ioprio = 0;
	sqe->fd = 0;
	sqe->cmd_op = op;
	sqe->__pad1 = 0;
	sqe->addr = 0;
	sqe->len = 0;
	sqe->uring_cmd_flags = 0;
	sqe->user_data = ud;
	sqe->buf_index = 0;
	sqe->personality = 0;
	sqe->file_index = 0;
	in->result_ptr = (uintptr_t)out;
	in->flags = TIO_URING_F_INLINE;
	return in;
}

/* A command whose payload is words @p0 and @p1, zeros after. */
static inline void put_inline(struct io_uring_sqe *sqe, __u32 op, __u64 ud,
			      void *out, __u64 p0, __u64 p1)
{
	__u64 *pw = (__u64 *)put_inline_hdr(sqe, op, ud, out)->payload;

	pw[0] = p0;
	pw[1] = p1;
	pw[2] = 0;
	pw[3] = 0;
	pw[4] = 0;
	pw[5] = 0;
}

/*
 * One SQE128 uring_cmd per command with the payload in the SQE and its
 * whole output at result_ptr, slot i of s->pl for SQE i: INFO's struct
 * tio_info (its two inputs, flags and pad, are all the kernel reads of
 * its payload; checked by version, cleared for the next round),
 * BUF_ALLOC's handle, FENCE_EMIT's seqno; res checked for every command.
 * Payload words are little-endian images of the structures: word 0 holds
 * BUF_ALLOC's size, BUF_FREE's handle and the fence commands' stream,
 * word 1 FENCE_SIGNAL's seqno.
 */
static int run_inline(struct bench_run *run, struct ovh *s, int round)
{
	struct io_uring_sq *sq = &s->ring.sq;
	struct io_uring_cq *cq = &s->ring.cq;
	unsigned int i, n = s->batch * (s->kind == K_FENCE ? 2 : 1);
	unsigned int head, tail = sq->sqe_tail;
	int ret;

	static_assert(offsetof(struct tio_buf_alloc, size) == 0, "word 0");
	static_assert(offsetof(struct tio_handle_op, handle) == 0, "word 0");
	static_assert(offsetof(struct tio_fence_emit, stream) == 0, "word 0");
	static_assert(offsetof(struct tio_fence_signal, stream) == 0, "word 0");
	static_assert(offsetof(struct tio_fence_signal, seqno) == 8, "word 1");
	if (io_uring_sq_space_left(&s->ring) < n)
		return bench_fail(run, EBUSY, "SQ ring full");
	/* SQE i of this batch; SQE128: two 64-byte slots each. */
#define SQE(i)	(&sq->sqes[((tail + (i)) & sq->ring_mask) << 1])
	switch (s->kind) {
	case K_INFO:
		for (i = 0; i < n; i++) {
			struct tio_uring_inline *in =
				put_inline_hdr(SQE(i), TIO_IOC_INFO, i, &s->pl[i].info);
			struct tio_info *info = (struct tio_info *)in->payload;

			info->flags = 0;
			info->pad = 0;
		}
		break;
	case K_BUF:
		for (i = 0; i < n; i++)
			if (!round)
				put_inline(SQE(i), TIO_IOC_BUF_ALLOC, i, &s->pl[i],
					   4096, 0);
			else
				put_inline(SQE(i), TIO_IOC_BUF_FREE, i, NULL,
					   s->pl[i].alloc.handle, 0);
		break;
	case K_FENCE:
		for (i = 0; i < s->batch; i++) {
			put_inline(SQE(2 * i), TIO_IOC_FENCE_EMIT, 2 * i, &s->pl[i],
				   s->stream, 0);
			put_inline(SQE(2 * i + 1), TIO_IOC_FENCE_SIGNAL, 2 * i + 1,
				   NULL, s->stream, s->next_seq + i);
		}
		break;
	}
#undef SQE
	sq->sqe_tail = tail + n;
	ret = io_uring_submit_and_wait(&s->ring, n);
	if (ret < 0)
		return bench_fail(run, -ret, "io_uring_submit_and_wait");
	ret = 0;
	/* Inline commands complete at submission: all n CQEs are there. */
	head = *cq->khead;
	tail = io_uring_smp_load_acquire(cq->ktail);
	if (tail - head < n)
		return bench_fail(run, EPROTO, "%u of %u CQEs", tail - head, n);
#define CQE(i)	(&cq->cqes[(head + (i)) & cq->ring_mask])
	for (i = 0; i < n; i++)
		if (CQE(i)->res)
			break;
	if (i < n) {
		ret = bench_fail(run, CQE(i)->res < 0 ? -CQE(i)->res : EPROTO,
				 "inline uring_cmd %llu gave %d",
				 (unsigned long long)CQE(i)->user_data, CQE(i)->res);
	} else if (s->kind == K_INFO) {
		for (i = 0; i < n && !ret; i++) {
			struct tio_info *info = &s->pl[CQE(i)->user_data].info;

			if (info->version != TIO_UAPI_VERSION)
				ret = bench_fail(run, EPROTO, "INFO gave version %#x",
						 info->version);
			info->version = 0;
		}
	} else if (s->kind == K_FENCE) {
		for (i = 0; i < s->batch && !ret; i++)
			if (s->pl[i].emit.seqno != s->next_seq + i)
				ret = bench_fail(run, EPROTO, "emit gave seqno %llu",
						 (unsigned long long)s->pl[i].emit.seqno);
		s->next_seq += s->batch;
	}
#undef CQE
	io_uring_cq_advance(&s->ring, n);
	return ret;
}

static int run_uring(struct bench_run *run, struct ovh *s, unsigned int *ops,
		     unsigned int n, int vector)
{
	struct tio_submit sub = { 0 };
	unsigned int i, want = vector ? 1 : n;
	int ret;

	if (vector) {
		for (i = 0; i < n; i++) {
			s->cmds[i] = (struct tio_cmd){ .op = ops[i] };
			memcpy(s->cmds[i].payload.bytes, &s->pl[i], TIO_CMD_PAYLOAD);
		}
		sub.cmds_ptr = (uintptr_t)s->cmds;
		sub.count = n;
	}
	for (i = 0; i < want; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		__u64 ptr = vector ? (uintptr_t)&sub : (uintptr_t)&s->pl[i];

		if (!sqe)
			return bench_fail(run, EBUSY, "SQ ring full");
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, s->fd, NULL, 0, 0);
		sqe->cmd_op = vector ? TIO_IOC_SUBMIT : ops[i];
		memcpy(sqe->cmd, &ptr, sizeof(ptr));
	}
	ret = io_uring_submit_and_wait(&s->ring, want);
	if (ret < 0)
		return bench_fail(run, -ret, "io_uring_submit_and_wait");
	ret = reap_cqes(run, s, want, plain_cqe);
	if (ret)
		return ret;
	return vector ? check_records(run, s, &sub, n) : 0;
}

static int run_submit(struct bench_run *run, struct ovh *s, unsigned int *ops,
		      unsigned int n)
{
	struct tio_submit sub = { .cmds_ptr = (uintptr_t)s->cmds, .count = n };
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		s->cmds[i] = (struct tio_cmd){ .op = ops[i] };
		memcpy(s->cmds[i].payload.bytes, &s->pl[i], TIO_CMD_PAYLOAD);
	}
	ret = ioctl(s->fd, TIO_IOC_SUBMIT, &sub);
	if (ret < 0)
		return bench_fail(run, errno, "TIO_IOC_SUBMIT");
	return check_records(run, s, &sub, n);
}

/* One uring_cmd per command (uring/bN), or a SUBMIT vector (submit*). */
int ovh_vector_run(struct bench_run *run, struct ovh *s, uint64_t iters)
{
	int round, rounds = s->kind == K_BUF ? 2 : 1, err;
	unsigned int ops[2 * 256 + 2], n;
	uint64_t it;

	for (it = 0; it < iters; it++) {
		for (round = 0; round < rounds; round++) {
			/* Free round reads the handles the alloc round got. */
			if (round)
				memcpy(&s->pl[s->batch], s->pl,
				       s->batch * sizeof(*s->pl));
			n = fill_round(s, round, ops);
			if (s->path == P_SUBMIT)
				err = run_submit(run, s, ops, n);
			else
				err = run_uring(run, s, ops, n, s->path == P_SUBMIT_URING);
			if (err)
				return err;
		}
		if (s->kind == K_FENCE &&
		    (err = ovh_check_seqno(run, s, s->pl[2 * (s->batch - 1)].emit.seqno)))
			return err;
	}
	return 0;
}

/* Inline SQEs (uring-inline/bN). */
int ovh_inline_run(struct bench_run *run, struct ovh *s, uint64_t iters)
{
	return ovh_batches(run, s, iters, run_inline);
}
