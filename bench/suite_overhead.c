// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "overhead": what one driver operation costs, and how much of it is
 * the way it enters the kernel. The same operations (INFO, a no-op; a 4 KiB
 * buffer alloc+free; a fence emit+signal) go through
 *   ioctl           one syscall per command,
 *   uring/bN        one IORING_OP_URING_CMD SQE per command, N per submit,
 *   uring-inline/bN the same with the payload in a 128-byte SQE (no user
 *                   copy in), the device as a registered file and each
 *                   command's whole output at its result_ptr (as ioctl()
 *                   delivers it; 16-byte CQEs),
 *   submit/bN       TIO_IOC_SUBMIT carrying N struct tio_cmd records,
 *   submit-uring/bN the same vector in one uring_cmd SQE,
 *   ring/bN         N records written into the file's command ring, one
 *                   TIO_IOC_RING_ENTER ioctl runs them in place,
 *   ring-uring/bN   the same, entered by one uring_cmd SQE,
 * and each row's ratio to the ioctl row shows what batching saves. Run it
 * in the VM under -icount shift=0 (make run) for instructions per op.
 *
 * Rows whose TIO_FEAT_* bit the running driver lacks are skipped.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/tensorio.h>
#include <tensorio/batch.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/stream.h>

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

static int open_dev(struct bench_run *run, int *fd, struct tio_info *info)
{
	*fd = open("/dev/tensorio", O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		return bench_skip(run, "no /dev/tensorio: %s (driver rows "
				  "run in the VM: make run)", strerror(errno));
	memset(info, 0, sizeof(*info));
	if (ioctl(*fd, TIO_IOC_INFO, info)) {
		int err = errno;

		close(*fd);
		return bench_fail(run, err, "TIO_IOC_INFO");
	}
	return 0;
}

static void ovh_teardown(struct bench_run *run)
{
	struct ovh *s = run->state;

	if (!s)
		return;
	if (s->have_ring)
		io_uring_queue_exit(&s->ring);
	if (s->rhdr)
		munmap(s->rhdr, s->rsize);
	if (s->stream) {
		struct tio_handle_op d = { .handle = s->stream };

		ioctl(s->fd, TIO_IOC_STREAM_DESTROY, &d);
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s->pl);
	free(s->cmds);
	free(s);
	run->state = NULL;
}

static int ovh_setup(struct bench_run *run)
{
	uintptr_t a = run->c->arg;
	struct ovh *s = calloc(1, sizeof(*s));
	unsigned int need = 0, slots;
	int err;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	s->fd = -1;
	s->kind = ARG_KIND(a);
	s->path = ARG_PATH(a);
	s->batch = ARG_BATCH(a) ? ARG_BATCH(a) : 1;
	run->state = s;
	err = open_dev(run, &s->fd, &s->info);
	if (err) {
		s->fd = -1;
		goto out;
	}
	if (s->kind == K_BUF && !(s->info.features & TIO_FEAT_BUFFERS))
		need = TIO_FEAT_BUFFERS;
	if (s->kind == K_FENCE && !(s->info.features & TIO_FEAT_STREAMS))
		need = TIO_FEAT_STREAMS;
	if ((s->path == P_RING || s->path == P_RING_URING) &&
	    !(s->info.features & TIO_FEAT_RING))
		need = TIO_FEAT_RING;
	if (s->path == P_URING_INLINE && (s->info.version & 0xffff) < 2)
		need = TIO_FEAT_URING_CMD;
	if ((s->path == P_URING || s->path == P_SUBMIT_URING ||
	     s->path == P_RING_URING || s->path == P_URING_INLINE) &&
	    !(s->info.features & TIO_FEAT_URING_CMD))
		need = TIO_FEAT_URING_CMD;
	if ((s->path == P_SUBMIT || s->path == P_SUBMIT_URING) &&
	    !(s->info.features & TIO_FEAT_SUBMIT))
		need = TIO_FEAT_SUBMIT;
	if (need) {
		err = bench_skip(run, "driver lacks feature 0x%x (%s)", need,
				 need == TIO_FEAT_BUFFERS ? "buffers" :
				 need == TIO_FEAT_STREAMS ? "streams" :
				 need == TIO_FEAT_URING_CMD ? "uring_cmd" :
				 need == TIO_FEAT_RING ? "ring" : "submit");
		goto out;
	}
	slots = 2 * s->batch;
	if ((s->path == P_SUBMIT || s->path == P_SUBMIT_URING) &&
	    slots / (s->kind == K_FENCE ? 1 : 2) > s->info.max_submit) {
		err = bench_skip(run, "batch over max_submit %u", s->info.max_submit);
		goto out;
	}
	s->pl = calloc(slots, sizeof(*s->pl));
	s->cmds = calloc(slots, sizeof(*s->cmds));
	if (!s->pl || !s->cmds) {
		err = bench_fail(run, ENOMEM, "payloads");
		goto out;
	}
	if (s->path == P_RING || s->path == P_RING_URING) {
		struct tio_ring_setup rs = { .entries = 8 };
		void *m;

		while (rs.entries < slots)
			rs.entries *= 2;
		if (ioctl(s->fd, TIO_IOC_RING_SETUP, &rs)) {
			err = bench_fail(run, errno, "RING_SETUP");
			goto out;
		}
		m = mmap(NULL, rs.size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 s->fd, rs.mmap_offset);
		if (m == MAP_FAILED) {
			err = bench_fail(run, errno, "mmap ring");
			goto out;
		}
		s->rhdr = m;
		s->rsize = rs.size;
		s->rcmds = (struct tio_cmd *)((char *)m + TIO_RING_CMDS_OFFSET);
	}
	if (s->path == P_URING || s->path == P_SUBMIT_URING || s->path == P_RING_URING ||
	    s->path == P_URING_INLINE) {
		err = io_uring_queue_init(slots < 8 ? 8 : slots, &s->ring,
					  s->path == P_URING_INLINE ?
					  IORING_SETUP_SQE128 : 0);
		if (err) {
			err = bench_skip(run, "io_uring_queue_init: %s",
					 strerror(-err));
			goto out;
		}
		s->have_ring = 1;
		/* Inline SQEs name the device as registered file 0. */
		if (s->path == P_URING_INLINE &&
		    (err = io_uring_register_files(&s->ring, &s->fd, 1)) < 0) {
			err = bench_fail(run, -err, "io_uring_register_files");
			goto out;
		}
	}
	if (s->kind == K_FENCE) {
		struct tio_stream_create sc = { 0 };
		struct tio_fence_emit e = { 0 };
		struct tio_fence_signal sg = { 0 };

		if (ioctl(s->fd, TIO_IOC_STREAM_CREATE, &sc)) {
			err = bench_fail(run, errno, "STREAM_CREATE");
			goto out;
		}
		s->stream = sc.handle;
		e.stream = s->stream;
		if (ioctl(s->fd, TIO_IOC_FENCE_EMIT, &e)) {
			err = bench_fail(run, errno, "FENCE_EMIT");
			goto out;
		}
		sg.stream = s->stream;
		sg.seqno = e.seqno;
		if (ioctl(s->fd, TIO_IOC_FENCE_SIGNAL, &sg)) {
			err = bench_fail(run, errno, "FENCE_SIGNAL");
			goto out;
		}
		s->next_seq = e.seqno + 1;
	}
	return 0;
out:
	ovh_teardown(run);
	return err;
}

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

static int check_fence(struct bench_run *run, struct ovh *s)
{
	__u64 got = s->pl[2 * (s->batch - 1)].emit.seqno;

	if (got != s->next_seq + s->batch - 1)
		return bench_fail(run, EPROTO, "emit gave seqno %llu, expected %llu",
				  (unsigned long long)got,
				  (unsigned long long)(s->next_seq + s->batch - 1));
	s->next_seq += s->batch;
	return 0;
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
		__u64 got = ((const struct tio_fence_emit *)c->payload.bytes)->seqno;

		if (got != s->next_seq + s->batch - 1)
			return bench_fail(run, EPROTO, "emit gave seqno %llu, expected %llu",
					  (unsigned long long)got,
					  (unsigned long long)(s->next_seq + s->batch - 1));
		s->next_seq += s->batch;
	}
	return 0;
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

static int run_ioctl(struct bench_run *run, struct ovh *s, uint64_t iters)
{
	union payload p;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		switch (s->kind) {
		case K_INFO:
			memset(&p.info, 0, sizeof(p.info));
			if (ioctl(s->fd, TIO_IOC_INFO, &p.info))
				return bench_fail(run, errno, "INFO");
			break;
		case K_BUF:
			p.alloc = (struct tio_buf_alloc){ .size = 4096 };
			if (ioctl(s->fd, TIO_IOC_BUF_ALLOC, &p.alloc))
				return bench_fail(run, errno, "BUF_ALLOC");
			p.free = (struct tio_handle_op){ .handle = p.alloc.handle };
			if (ioctl(s->fd, TIO_IOC_BUF_FREE, &p.free))
				return bench_fail(run, errno, "BUF_FREE");
			break;
		case K_FENCE:
			p.emit = (struct tio_fence_emit){ .stream = s->stream };
			if (ioctl(s->fd, TIO_IOC_FENCE_EMIT, &p.emit))
				return bench_fail(run, errno, "FENCE_EMIT");
			p.signal = (struct tio_fence_signal){
				.stream = s->stream, .seqno = p.emit.seqno };
			if (ioctl(s->fd, TIO_IOC_FENCE_SIGNAL, &p.signal))
				return bench_fail(run, errno, "FENCE_SIGNAL");
			break;
		}
	}
	return 0;
}

static int ovh_run(struct bench_run *run, uint64_t iters)
{
	struct ovh *s = run->state;
	unsigned int ops[2 * 256 + 2], n;
	int round, rounds = s->kind == K_BUF ? 2 : 1, err = 0;
	uint64_t it;

	if (s->path == P_IOCTL)
		return run_ioctl(run, s, iters);
	if (s->path == P_RING || s->path == P_RING_URING || s->path == P_URING_INLINE) {
		for (it = 0; it < iters; it++)
			for (round = 0; round < rounds; round++)
				if ((err = s->path == P_URING_INLINE ?
				     run_inline(run, s, round) : run_ring(run, s, round)))
					return err;
		return 0;
	}
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
				err = run_uring(run, s, ops, n,
						s->path == P_SUBMIT_URING);
			if (err)
				return err;
		}
		if (s->kind == K_FENCE && (err = check_fence(run, s)))
			return err;
	}
	return 0;
}

/* 1 + 2 * 500 instructions: proves the icount clock counts instructions. */
static int calib_run(struct bench_run *run, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		unsigned long c;

		__asm__ __volatile__("mov $500, %0\n"
				     "1: dec %0\n"
				     "jnz 1b\n" : "=&r"(c) : : "cc");
	}
	return 0;
}

static int getppid_run(struct bench_run *run, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}

static int badioctl_setup(struct bench_run *run)
{
	struct tio_info info;
	int fd, err = open_dev(run, &fd, &info);

	if (err)
		return err;
	run->state = (void *)(intptr_t)fd;
	return 0;
}

static int badioctl_run(struct bench_run *run, uint64_t n)
{
	int fd = (int)(intptr_t)run->state;
	uint64_t i;

	for (i = 0; i < n; i++)
		if (!ioctl(fd, _IO(TIO_IOC_MAGIC, 0xff)))
			return bench_fail(run, EPROTO, "unknown ioctl succeeded");
	return 0;
}

static void badioctl_teardown(struct bench_run *run)
{
	close((int)(intptr_t)run->state);
}

/*
 * The same operations through libtensorio, on whichever backend it picked
 * (kernel in the VM; user, memfd + futex emulation, on the host): the
 * rows that show what the library adds, and the user backend's cost.
 */
struct libst {
	tio_stream_t *stream;
	tio_batch_t *b;		/* the batch rows' batch */
};

static int lib_setup(struct bench_run *run)
{
	struct libst *s;

	if (tio_init()) {
		tio_error_clear();
		return bench_skip(run, "tio_init failed: no usable backend");
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	if (ARG_KIND(run->c->arg) == K_FENCE && tio_stream_create(&s->stream)) {
		tio_error_clear();
		free(s);
		return bench_fail(run, EPROTO, "tio_stream_create (%s backend)",
				  tio_backend_name());
	}
	/* A batch row: ARG()'s path is the batch's TIO_BATCH_* mode. */
	if (ARG_BATCH(run->c->arg) > 1 &&
	    (tio_batch_new(0, &s->b) ||
	     tio_batch_set_mode(s->b, (int)ARG_PATH(run->c->arg)))) {
		tio_error_clear();
		tio_batch_free(s->b);
		free(s);
		return bench_fail(run, EPROTO, "tio_batch_new");
	}
	run->state = s;
	return 0;
}

static void lib_teardown(struct bench_run *run)
{
	struct libst *s = run->state;

	if (!s)
		return;
	if (s->stream)
		tio_stream_decref(s->stream);
	tio_batch_free(s->b);
	free(s);
	run->state = NULL;
}

static int lib_run(struct bench_run *run, uint64_t n)
{
	struct libst *s = run->state;
	struct tio_driver_info info;
	uint64_t i, seq;

	for (i = 0; i < n; i++) {
		switch (ARG_KIND(run->c->arg)) {
		case K_INFO:
			if (tio_driver_info(&info))
				goto fail;
			break;
		case K_BUF: {
			tio_buffer_t *b;

			if (tio_buffer_alloc(4096, NULL, &b))
				goto fail;
			tio_buffer_decref(b);
			break;
		}
		case K_FENCE:
			if (tio_fence_emit(s->stream, &seq) ||
			    tio_fence_signal(s->stream, seq, 0))
				goto fail;
			break;
		}
	}
	return 0;
fail:
	tio_error_clear();
	return bench_fail(run, EPROTO, "library call failed (%s backend)",
			  tio_backend_name());
}

/*
 * A batch of 64 INFO records through libtensorio's batch in one mode
 * (TIO_BATCH_CMD_RING or TIO_BATCH_VECTORED): filled, submitted and reset
 * each iteration, as a user of the batch API would.
 */
static int libbatch_run(struct bench_run *run, uint64_t n)
{
	struct libst *s = run->state;
	struct tio_info info = { 0 };
	uint64_t it;
	int i;

	for (it = 0; it < n; it++) {
		for (i = 0; i < 64; i++)
			if (tio_batch_add_record(s->b, TIO_IOC_INFO, &info, sizeof(info)) < 0)
				goto fail;
		if (tio_batch_submit(s->b) || tio_batch_failed(s->b))
			goto fail;
		if (!it && tio_batch_mode(s->b) != (int)ARG_PATH(run->c->arg) &&
		    !strcmp(tio_backend_name(), "kernel"))
			return bench_fail(run, EOPNOTSUPP, "the batch used mode %d",
					  tio_batch_mode(s->b));
		tio_batch_reset(s->b);
	}
	return 0;
fail:
	tio_error_clear();
	return bench_fail(run, EPROTO, "batch of INFO records failed (%s backend)",
			  tio_backend_name());
}

#define LIBBATCHROW(n, mode, what) {					\
	.suite = "overhead", .name = n, .ref = "info/ioctl", .ops = 64,	\
	.note = what, .setup = lib_setup, .run = libbatch_run,		\
	.teardown = lib_teardown, .arg = ARG(K_INFO, mode, 64) }

#define LIBROW(n, k, r, what) {						\
	.suite = "overhead", .name = n, .ref = r, .note = what,		\
	.setup = lib_setup, .run = lib_run, .teardown = lib_teardown,	\
	.arg = ARG(k, P_IOCTL, 1) }

#define ROW(n, k, p, b, sz, r, tr, what) {				\
	.suite = "overhead", .name = n, .size = sz, .ref = r,		\
	.ops = b, .target_ratio = tr, .note = what,			\
	.setup = ovh_setup, .run = ovh_run, .teardown = ovh_teardown,	\
	.arg = ARG(k, p, b) }

#define KIND_ROWS(pfx, k, rt, what)					\
	ROW(pfx "/ioctl", k, P_IOCTL, 1, NULL, pfx "/ioctl", 0, what),	\
	ROW(pfx "/uring/b1", k, P_URING, 1, "small", pfx "/ioctl", 0, what), \
	ROW(pfx "/uring/b4", k, P_URING, 4, "small", pfx "/ioctl", 0, what), \
	ROW(pfx "/uring/b16", k, P_URING, 16, "medium", pfx "/ioctl", 0, what), \
	ROW(pfx "/uring/b64", k, P_URING, 64, "medium", pfx "/ioctl", 0.5, what), \
	ROW(pfx "/uring/b256", k, P_URING, 256, "large", pfx "/ioctl", 0, what), \
	ROW(pfx "/uring-inline/b1", k, P_URING_INLINE, 1, "small", pfx "/ioctl", 0, what), \
	ROW(pfx "/uring-inline/b64", k, P_URING_INLINE, 64, "medium", pfx "/ioctl", 0.8, what), \
	ROW(pfx "/submit/b1", k, P_SUBMIT, 1, "small", pfx "/ioctl", 0, what), \
	ROW(pfx "/submit/b4", k, P_SUBMIT, 4, "small", pfx "/ioctl", 0, what), \
	ROW(pfx "/submit/b16", k, P_SUBMIT, 16, "medium", pfx "/ioctl", 0, what), \
	ROW(pfx "/submit/b64", k, P_SUBMIT, 64, "medium", pfx "/ioctl", 0.1, what), \
	ROW(pfx "/submit/b256", k, P_SUBMIT, 256, "large", pfx "/ioctl", 0, what), \
	ROW(pfx "/submit-uring/b64", k, P_SUBMIT_URING, 64, "medium", pfx "/ioctl", 0.1, what), \
	ROW(pfx "/submit-uring/b256", k, P_SUBMIT_URING, 256, "large", pfx "/ioctl", 0, what), \
	ROW(pfx "/ring/b1", k, P_RING, 1, "small", pfx "/ioctl", 0, what), \
	ROW(pfx "/ring/b16", k, P_RING, 16, "medium", pfx "/ioctl", 0, what), \
	ROW(pfx "/ring/b64", k, P_RING, 64, "medium", pfx "/ioctl", rt, what), \
	ROW(pfx "/ring/b256", k, P_RING, 256, "large", pfx "/ioctl", 0, what), \
	ROW(pfx "/ring-uring/b64", k, P_RING_URING, 64, "medium", pfx "/ioctl", 0, what)

static struct bench_case cases[] = {
	{ .suite = "overhead", .name = "calib/1001-insn", .run = calib_run,
	  .note = "a 1001-instruction loop: reads ~1001 insn/op when the "
		  "clock counts instructions" },
	{ .suite = "overhead", .name = "sys/getppid", .run = getppid_run,
	  .note = "the cheapest syscall: the floor of any ioctl" },
	{ .suite = "overhead", .name = "sys/ioctl-unknown", .setup = badioctl_setup,
	  .run = badioctl_run, .teardown = badioctl_teardown,
	  .note = "an unknown tensorio ioctl: VFS ioctl path + rejection" },
	KIND_ROWS("info", K_INFO, 0.1, "TIO_IOC_INFO, the driver's no-op"),
	KIND_ROWS("buf4k", K_BUF, 0.7, "a 4 KiB buffer BUF_ALLOC + BUF_FREE"),
	KIND_ROWS("fence", K_FENCE, 0.3, "FENCE_EMIT + FENCE_SIGNAL on one stream"),
	LIBROW("info/lib", K_INFO, "info/ioctl", "tio_driver_info (either backend)"),
	LIBROW("buf4k/lib", K_BUF, "buf4k/ioctl",
	       "tio_buffer_alloc(4096) + release (either backend)"),
	LIBROW("fence/lib", K_FENCE, "fence/ioctl",
	       "tio_fence_emit + tio_fence_signal (either backend)"),
	LIBBATCHROW("info/lib/ring/b64", TIO_BATCH_CMD_RING,
		    "64 INFO records in a tio_batch, command ring mode"),
	LIBBATCHROW("info/lib/vectored/b64", TIO_BATCH_VECTORED,
		    "64 INFO records in a tio_batch, vectored SUBMIT mode"),
};

static void __attribute__((constructor)) overhead_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
