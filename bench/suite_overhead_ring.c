// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "overhead": the command ring (ring/bN, ring-uring/bN). Records are
 * written in the file's mapped slots and run in place by one RING_ENTER,
 * an ioctl or one uring_cmd.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "overhead.h"

/* Enter the ring by ioctl or one uring_cmd; the enter must consume @n. */
static int ring_enter(struct bench_run *run, struct ovh *s, unsigned int n)
{
	struct tio_ring_enter e = { 0 };
	int ret;

	if (s->path == P_RING_URING) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		struct io_uring_cqe *cqe;
		__u64 ptr = (uintptr_t)&e;

		if (!sqe)
			return bench_fail(run, EBUSY, "SQ ring full");
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, s->fd, NULL, 0, 0);
		sqe->cmd_op = TIO_IOC_RING_ENTER;
		memcpy(sqe->cmd, &ptr, sizeof(ptr));
		ret = io_uring_submit_and_wait(&s->ring, 1);
		if (ret < 0)
			return bench_fail(run, -ret, "io_uring_submit_and_wait");
		ret = io_uring_peek_cqe(&s->ring, &cqe);
		if (ret)
			return bench_fail(run, -ret, "io_uring_peek_cqe");
		ret = cqe->res;
		io_uring_cqe_seen(&s->ring, cqe);
		if (ret)
			return bench_fail(run, ret < 0 ? -ret : EPROTO,
					  "RING_ENTER (uring_cmd): %d", ret);
	} else if ((ret = ioctl(s->fd, TIO_IOC_RING_ENTER, &e))) {
		return bench_fail(run, ret < 0 ? errno : EPROTO,
				  "TIO_IOC_RING_ENTER: %d", ret);
	}
	if (e.done != n || __atomic_load_n(&s->rhdr->head, __ATOMIC_ACQUIRE) != s->rtail)
		return bench_fail(run, EPROTO, "RING_ENTER did %u of %u", e.done, n);
	return 0;
}

/*
 * A record's header straight into its slot: op and zero flags in one
 * 64-bit store, zero result and pad in another.
 */
static inline void ring_hdr(struct tio_cmd *c, __u32 op)
{
	const struct { __u32 op, flags; __s32 result; __u32 pad; } h = { op, 0, 0, 0 };

	memcpy(c, &h, sizeof(h));
}

/* A payload's six words, as one record carries them. */
static inline void ring_words(struct tio_cmd *c, __u64 w0, __u64 w1)
{
	__u64 *w = (__u64 *)c->payload.bytes;

	w[0] = w0;
	w[1] = w1;
	w[2] = w[3] = w[4] = w[5] = 0;
}

/*
 * Records first .. first + @len - 1 of a batch, in contiguous slots from
 * @c. Each is written as its command's rules ask: the header, and the
 * whole payload with zero past the structure, except INFO's, all of
 * which is output but flags and pad (they must be zero).
 */
static void ring_fill(struct ovh *s, int round, struct tio_cmd *c,
		      unsigned int first, unsigned int len)
{
	struct tio_cmd *end = c + len;
	unsigned int j = first, mask = s->rhdr->mask;
	__u64 stream = s->stream, seq = s->next_seq + first / 2;

	switch (s->kind) {
	case K_INFO:
		for (; c < end; c++) {
			struct tio_info *in = (struct tio_info *)c->payload.bytes;

			ring_hdr(c, TIO_IOC_INFO);
			in->flags = 0;
			in->pad = 0;
		}
		break;
	case K_BUF:
		for (; c < end; c++, j++) {
			if (!round) {
				ring_hdr(c, TIO_IOC_BUF_ALLOC);
				ring_words(c, 4096, 0);
			} else {
				/* The handle where the alloc round's record left it. */
				const struct tio_cmd *a =
					&s->rcmds[(s->rtail + j - s->batch) & mask];

				ring_hdr(c, TIO_IOC_BUF_FREE);
				ring_words(c, ((const struct tio_buf_alloc *)
					       a->payload.bytes)->handle, 0);
			}
		}
		break;
	case K_FENCE:
		/* Pairs never straddle the wrap: tails and entries are even. */
		for (; c < end; c += 2, seq++) {
			ring_hdr(c, TIO_IOC_FENCE_EMIT);
			ring_words(c, stream, 0);
			ring_hdr(c + 1, TIO_IOC_FENCE_SIGNAL);
			ring_words(c + 1, stream, seq);
		}
		break;
	}
}

/*
 * One batch through the ring: the records are built in the shared slots
 * (no staging copy, as a ring's user would), one enter runs them; its
 * return value says none failed (ring_enter()), and what a command
 * returns is read where it is: the free round takes the handles the
 * alloc round left in their slots.
 */
static int run_ring(struct bench_run *run, struct ovh *s, int round)
{
	unsigned int mask = s->rhdr->mask, t0 = s->rtail;
	unsigned int n = s->kind == K_FENCE ? 2 * s->batch : s->batch;
	unsigned int at = t0 & mask, len1 = n < mask + 1 - at ? n : mask + 1 - at;
	int err;

	ring_fill(s, round, &s->rcmds[at], 0, len1);
	if (n > len1)
		ring_fill(s, round, s->rcmds, len1, n - len1);
	s->rtail = t0 + n;
	__atomic_store_n(&s->rhdr->tail, s->rtail, __ATOMIC_RELEASE);
	err = ring_enter(run, s, n);
	if (err)
		return err;
	if (s->kind == K_FENCE) {
		const struct tio_cmd *c = &s->rcmds[(t0 + n - 2) & mask];

		return ovh_check_seqno(run, s,
				       ((const struct tio_fence_emit *)c->payload.bytes)->seqno);
	}
	return 0;
}

/* The command ring (ring/bN, ring-uring/bN). */
int ovh_ring_run(struct bench_run *run, struct ovh *s, uint64_t iters)
{
	return ovh_batches(run, s, iters, run_ring);
}
