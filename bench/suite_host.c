// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "host": what a syscall and an io_uring request cost on this
 * machine, in wall-clock ns, with no module. The VM's instruction counts
 * miss the price of a mode switch (KPTI, speculation mitigations); these
 * rows show it on real hardware beside them:
 *   getppid              the cheapest syscall
 *   ioctl/devnull        an unknown ioctl on /dev/null (VFS ioctl path, ENOTTY)
 *   ioctl/pipe-fionread  FIONREAD on an empty pipe (a handled ioctl)
 *   uring-nop/bN         N IORING_OP_NOPs per io_uring_submit_and_wait, reaped
 *   uring-nop-reg/bN     the same with the ring fd registered
 *   uring-submit/bN      io_uring_submit() alone for N NOPs (reaping untimed)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "bench.h"

enum hkind { H_NOP, H_NOP_REG, H_SUBMIT };

#define HARG(k, b)	((uintptr_t)(k) | (uintptr_t)(b) << 4)
#define HARG_KIND(a)	((enum hkind)((a) & 0xf))
#define HARG_BATCH(a)	((unsigned int)((a) >> 4))

static int getppid_run(struct bench_run *run, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}

struct fds {
	int fd[2];
};

static int devnull_setup(struct bench_run *run)
{
	struct fds *s = malloc(sizeof(*s));

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	s->fd[1] = -1;
	s->fd[0] = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (s->fd[0] < 0) {
		free(s);
		return bench_skip(run, "open /dev/null: %s", strerror(errno));
	}
	run->state = s;
	return 0;
}

static int pipe_setup(struct bench_run *run)
{
	struct fds *s = malloc(sizeof(*s));

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	if (pipe2(s->fd, O_CLOEXEC)) {
		int err = errno;

		free(s);
		return bench_fail(run, err, "pipe2");
	}
	run->state = s;
	return 0;
}

static void fds_teardown(struct bench_run *run)
{
	struct fds *s = run->state;

	if (!s)
		return;
	close(s->fd[0]);
	if (s->fd[1] >= 0)
		close(s->fd[1]);
	free(s);
	run->state = NULL;
}

static int devnull_run(struct bench_run *run, uint64_t n)
{
	struct fds *s = run->state;
	uint64_t i;

	for (i = 0; i < n; i++)
		if (ioctl(s->fd[0], _IO('x', 0x7f)) != -1 || errno != ENOTTY)
			return bench_fail(run, EPROTO, "unknown ioctl on /dev/null "
					  "did not fail with ENOTTY");
	return 0;
}

static int fionread_run(struct bench_run *run, uint64_t n)
{
	struct fds *s = run->state;
	uint64_t i;
	int avail;

	for (i = 0; i < n; i++)
		if (ioctl(s->fd[0], FIONREAD, &avail) || avail)
			return bench_fail(run, errno, "FIONREAD on an empty pipe");
	return 0;
}

struct uring {
	struct io_uring ring;
	unsigned int batch;
};

static int uring_setup(struct bench_run *run)
{
	uintptr_t a = run->c->arg;
	struct uring *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	s->batch = HARG_BATCH(a);
	ret = io_uring_queue_init(s->batch, &s->ring, 0);
	if (ret) {
		free(s);
		return bench_skip(run, "io_uring_queue_init: %s", strerror(-ret));
	}
	if (HARG_KIND(a) == H_NOP_REG) {
		ret = io_uring_register_ring_fd(&s->ring);
		if (ret != 1) {
			io_uring_queue_exit(&s->ring);
			free(s);
			return bench_skip(run, "io_uring_register_ring_fd: %s",
					  ret < 0 ? strerror(-ret) : "not registered");
		}
	}
	run->state = s;
	return 0;
}

static void uring_teardown(struct bench_run *run)
{
	struct uring *s = run->state;

	if (!s)
		return;
	io_uring_queue_exit(&s->ring);
	free(s);
	run->state = NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Reaps @want completions; every NOP must have succeeded. */
static int reap(struct bench_run *run, struct uring *s, unsigned int want)
{
	struct io_uring_cqe *cqe;
	unsigned int got = 0;

	while (got < want) {
		unsigned int head, seen = 0;
		int ret = io_uring_wait_cqe(&s->ring, &cqe);

		if (ret)
			return bench_fail(run, -ret, "io_uring_wait_cqe");
		io_uring_for_each_cqe(&s->ring, head, cqe) {
			if (cqe->res < 0) {
				io_uring_cq_advance(&s->ring, seen + 1);
				return bench_fail(run, -cqe->res, "NOP");
			}
			seen++;
		}
		io_uring_cq_advance(&s->ring, seen);
		got += seen;
	}
	return 0;
}

static int uring_run(struct bench_run *run, uint64_t n)
{
	struct uring *s = run->state;
	int timed_submit = HARG_KIND(run->c->arg) == H_SUBMIT;
	double total = 0;
	unsigned int i;
	uint64_t it;
	int ret;

	for (it = 0; it < n; it++) {
		double t0;

		for (i = 0; i < s->batch; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

			if (!sqe)
				return bench_fail(run, EBUSY, "SQ ring full");
			io_uring_prep_nop(sqe);
		}
		if (timed_submit) {
			t0 = now_ns();
			ret = io_uring_submit(&s->ring);
			total += now_ns() - t0;
		} else {
			ret = io_uring_submit_and_wait(&s->ring, s->batch);
		}
		if (ret != (int)s->batch)
			return bench_fail(run, ret < 0 ? -ret : EPROTO,
					  "io_uring_submit took %d of %u", ret,
					  s->batch);
		ret = reap(run, s, s->batch);
		if (ret)
			return ret;
	}
	if (timed_submit)
		run->manual_ns = total;
	return 0;
}

#define UROW(nm, k, b, what) {						\
	.suite = "host", .name = nm, .ref = "getppid", .ops = b,	\
	.note = what, .setup = uring_setup, .run = uring_run,		\
	.teardown = uring_teardown, .arg = HARG(k, b) }

#define NOP_ROWS(pfx, k, what)						\
	UROW(pfx "/b1", k, 1, what), UROW(pfx "/b4", k, 4, what),	\
	UROW(pfx "/b16", k, 16, what), UROW(pfx "/b64", k, 64, what),	\
	UROW(pfx "/b256", k, 256, what)

static struct bench_case cases[] = {
	{ .suite = "host", .name = "getppid", .ref = "getppid", .run = getppid_run,
	  .note = "the cheapest syscall: the floor of any ioctl" },
	{ .suite = "host", .name = "ioctl/devnull", .ref = "getppid",
	  .setup = devnull_setup, .run = devnull_run, .teardown = fds_teardown,
	  .note = "an unknown ioctl on /dev/null: VFS ioctl path + ENOTTY" },
	{ .suite = "host", .name = "ioctl/pipe-fionread", .ref = "getppid",
	  .setup = pipe_setup, .run = fionread_run, .teardown = fds_teardown,
	  .note = "FIONREAD on an empty pipe: a handled ioctl" },
	NOP_ROWS("uring-nop", H_NOP, "one IORING_OP_NOP, N per submit_and_wait, reaped"),
	NOP_ROWS("uring-nop-reg", H_NOP_REG,
		 "the same NOP with the ring fd registered"),
	UROW("uring-submit/b1", H_SUBMIT, 1,
	     "io_uring_submit() alone, one NOP: the call's own cost"),
	UROW("uring-submit/b64", H_SUBMIT, 64,
	     "io_uring_submit() alone for 64 NOPs, per NOP"),
};

static void __attribute__((constructor)) host_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
