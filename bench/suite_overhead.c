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
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tensorio/batch.h>

#include "overhead.h"

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

/* Each path's loop lives beside the path, so that it inlines its batches. */
static int ovh_run(struct bench_run *run, uint64_t iters)
{
	struct ovh *s = run->state;

	switch (s->path) {
	case P_IOCTL:
		return run_ioctl(run, s, iters);
	case P_RING:
	case P_RING_URING:
		return ovh_ring_run(run, s, iters);
	case P_URING_INLINE:
		return ovh_inline_run(run, s, iters);
	default:
		return ovh_vector_run(run, s, iters);
	}
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

#define LIBBATCHROW(n, mode, what) {					\
	.suite = "overhead", .name = n, .ref = "info/ioctl", .ops = 64,	\
	.note = what, .setup = ovh_lib_setup, .run = ovh_libbatch_run,		\
	.teardown = ovh_lib_teardown, .arg = ARG(K_INFO, mode, 64) }

#define LIBROW(n, k, r, what) {						\
	.suite = "overhead", .name = n, .ref = r, .note = what,		\
	.setup = ovh_lib_setup, .run = ovh_lib_run, .teardown = ovh_lib_teardown,	\
	.arg = ARG(k, P_IOCTL, 1) }

#define ROW(n, k, p, b, sz, r, what) {					\
	.suite = "overhead", .name = n, .size = sz, .ref = r,		\
	.ops = b, .note = what,						\
	.setup = ovh_setup, .run = ovh_run, .teardown = ovh_teardown,	\
	.arg = ARG(k, p, b) }

#define KIND_ROWS(pfx, k, what)					\
	ROW(pfx "/ioctl", k, P_IOCTL, 1, NULL, pfx "/ioctl", what),	\
	ROW(pfx "/uring/b1", k, P_URING, 1, "small", pfx "/ioctl", what), \
	ROW(pfx "/uring/b4", k, P_URING, 4, "small", pfx "/ioctl", what), \
	ROW(pfx "/uring/b16", k, P_URING, 16, "medium", pfx "/ioctl", what), \
	ROW(pfx "/uring/b64", k, P_URING, 64, "medium", pfx "/ioctl", what), \
	ROW(pfx "/uring/b256", k, P_URING, 256, "large", pfx "/ioctl", what), \
	ROW(pfx "/uring-inline/b1", k, P_URING_INLINE, 1, "small", pfx "/ioctl", what), \
	ROW(pfx "/uring-inline/b64", k, P_URING_INLINE, 64, "medium", pfx "/ioctl", what), \
	ROW(pfx "/submit/b1", k, P_SUBMIT, 1, "small", pfx "/ioctl", what), \
	ROW(pfx "/submit/b4", k, P_SUBMIT, 4, "small", pfx "/ioctl", what), \
	ROW(pfx "/submit/b16", k, P_SUBMIT, 16, "medium", pfx "/ioctl", what), \
	ROW(pfx "/submit/b64", k, P_SUBMIT, 64, "medium", pfx "/ioctl", what), \
	ROW(pfx "/submit/b256", k, P_SUBMIT, 256, "large", pfx "/ioctl", what), \
	ROW(pfx "/submit-uring/b64", k, P_SUBMIT_URING, 64, "medium", pfx "/ioctl", what), \
	ROW(pfx "/submit-uring/b256", k, P_SUBMIT_URING, 256, "large", pfx "/ioctl", what), \
	ROW(pfx "/ring/b1", k, P_RING, 1, "small", pfx "/ioctl", what), \
	ROW(pfx "/ring/b16", k, P_RING, 16, "medium", pfx "/ioctl", what), \
	ROW(pfx "/ring/b64", k, P_RING, 64, "medium", pfx "/ioctl", what), \
	ROW(pfx "/ring/b256", k, P_RING, 256, "large", pfx "/ioctl", what), \
	ROW(pfx "/ring-uring/b64", k, P_RING_URING, 64, "medium", pfx "/ioctl", what)

static struct bench_case cases[] = {
	{ .suite = "overhead", .name = "calib/1001-insn", .run = calib_run,
	  .note = "a 1001-instruction loop: reads ~1001 insn/op when the "
		  "clock counts instructions" },
	{ .suite = "overhead", .name = "sys/getppid", .run = getppid_run,
	  .note = "the cheapest syscall: the floor of any ioctl" },
	{ .suite = "overhead", .name = "sys/ioctl-unknown", .setup = badioctl_setup,
	  .run = badioctl_run, .teardown = badioctl_teardown,
	  .note = "an unknown tensorio ioctl: VFS ioctl path + rejection" },
	KIND_ROWS("info", K_INFO, "TIO_IOC_INFO, the driver's no-op"),
	KIND_ROWS("buf4k", K_BUF, "a 4 KiB buffer BUF_ALLOC + BUF_FREE"),
	KIND_ROWS("fence", K_FENCE, "FENCE_EMIT + FENCE_SIGNAL on one stream"),
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
