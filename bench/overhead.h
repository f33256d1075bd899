/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Suite "overhead": what its files share (suite_overhead.c says what the
 * suite measures). A case's arg packs the operation (kind), the way into
 * the kernel (path) and the batch size.
 */
#ifndef TIO_BENCH_OVERHEAD_H
#define TIO_BENCH_OVERHEAD_H

#include <errno.h>
#include <stdint.h>

#include <liburing.h>
#include <linux/tensorio.h>

#include "bench.h"

enum kind { K_INFO, K_BUF, K_FENCE };
enum path { P_IOCTL, P_URING, P_SUBMIT, P_SUBMIT_URING, P_RING, P_RING_URING,
	     P_URING_INLINE };

#define ARG(k, p, b)	((uintptr_t)(k) | (uintptr_t)(p) << 4 | (uintptr_t)(b) << 8)
#define ARG_KIND(a)	((enum kind)((a) & 0xf))
#define ARG_PATH(a)	((enum path)(((a) >> 4) & 0xf))
#define ARG_BATCH(a)	((unsigned int)((a) >> 8))

/* Any command's payload, so one array serves every kind. */
union payload {
	struct tio_info info;
	struct tio_buf_alloc alloc;
	struct tio_handle_op free;
	struct tio_fence_emit emit;
	struct tio_fence_signal signal;
	__u8 bytes[TIO_CMD_PAYLOAD];
};

struct ovh {
	int fd;
	struct tio_info info;
	enum kind kind;
	enum path path;
	unsigned int batch;
	int have_ring;
	struct io_uring ring;
	__u32 stream;
	__u64 next_seq;
	union payload *pl;	/* 2 * batch */
	struct tio_cmd *cmds;	/* 2 * batch */
	struct tio_ring_hdr *rhdr;	/* the command ring, P_RING* */
	struct tio_cmd *rcmds;
	size_t rsize;
	unsigned int rtail;
};

/* A fence batch's last emit gave seqno @got: the next ones follow it. */
static inline int ovh_check_seqno(struct bench_run *run, struct ovh *s, __u64 got)
{
	if (got != s->next_seq + s->batch - 1)
		return bench_fail(run, EPROTO, "emit gave seqno %llu, expected %llu",
				  (unsigned long long)got,
				  (unsigned long long)(s->next_seq + s->batch - 1));
	s->next_seq += s->batch;
	return 0;
}

/*
 * @iters iterations of @batch, twice each for buf4k (its alloc round,
 * then its free round). Inline, with the path's own static @batch: the
 * batch code inlines into the loop.
 */
static inline int ovh_batches(struct bench_run *run, struct ovh *s, uint64_t iters,
			      int (*batch)(struct bench_run *run, struct ovh *s, int round))
{
	int round, rounds = s->kind == K_BUF ? 2 : 1, err;
	uint64_t it;

	for (it = 0; it < iters; it++)
		for (round = 0; round < rounds; round++)
			if ((err = batch(run, s, round)))
				return err;
	return 0;
}

/*
 * @iters batches through each way into the kernel: one uring_cmd per
 * command or a SUBMIT vector (suite_overhead_uring.c), inline SQEs (the
 * same), the command ring (suite_overhead_ring.c).
 */
int ovh_vector_run(struct bench_run *run, struct ovh *s, uint64_t iters);
int ovh_inline_run(struct bench_run *run, struct ovh *s, uint64_t iters);
int ovh_ring_run(struct bench_run *run, struct ovh *s, uint64_t iters);

/* The same operations through libtensorio (suite_overhead_lib.c). */
int ovh_lib_setup(struct bench_run *run);
void ovh_lib_teardown(struct bench_run *run);
int ovh_lib_run(struct bench_run *run, uint64_t n);
int ovh_libbatch_run(struct bench_run *run, uint64_t n);

#endif /* TIO_BENCH_OVERHEAD_H */
