// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The net suite's RDMA rows: GB/s of 1 MiB RDMA WRITEs and READs between
 * two tensorio buffers (tio_buffer_alloc(): on the kernel backend the
 * /dev/tensorio mapping of a BUF_ALLOC buffer) registered with
 * ibv_reg_mr(), beside perftest's ib_write_bw / ib_read_bw on the same
 * device in the same run:
 *   write/rdma, read/rdma           two RC QPs on one device, connected
 *                                   to each other (tests/include/tio_rdma_loop.h)
 *   .../ib_write_bw, .../ib_read_bw perftest, server and client on that
 *                                   device (its BW average, MB = 2^20 B)
 * Ours keep RDEV_DEPTH operations in flight, as perftest keeps its tx
 * depth. Skipped, naming the reason, where no verbs device is up (this
 * machine: none; the VM: soft-RoCE, tests/net/vm-rxe.sh) or tio-bench
 * was built without libibverbs-dev. The device: the first, or
 * $TIO_RDMA_DEV.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define RDMA_SIZE	(1u << 20)
#define RDMA_READ	0x1
#define RDMA_PEER	0x2	/* the perftest row */

#ifdef BENCH_VERBS
#include <tensorio/buffer.h>
#include <tensorio/error.h>

#include "tio_rdma_loop.h"

struct rstate {
	struct rdev r;
	tio_buffer_t *a, *b;
	struct ibv_mr *ma, *mb;
};

static int rdma_setup(struct bench_run *run)
{
	struct rstate *s = calloc(1, sizeof(*s));
	const char *tool = run->c->arg & RDMA_READ ? "ib_read_bw" : "ib_write_bw";
	char path[64];

	if (!s)
		return -ENOMEM;
	run->state = s;
	if (rdev_open(&s->r))
		return bench_skip(run, "%s", s->r.why);
	if (run->c->arg & RDMA_PEER) {
		snprintf(path, sizeof(path), "/usr/bin/%s", tool);
		if (access(path, X_OK))
			return bench_skip(run, "%s is not installed (perftest)", tool);
		return 0;
	}
	if (tio_buffer_alloc(RDMA_SIZE, NULL, &s->a) || tio_buffer_alloc(RDMA_SIZE, NULL, &s->b) ||
	    !tio_buffer_data(s->a) || !tio_buffer_data(s->b))
		return bench_fail(run, EIO, "tensorio buffers: %s",
				  tio_error_message(tio_error_peek_raised()));
	s->ma = ibv_reg_mr(s->r.pd, tio_buffer_data(s->a), RDMA_SIZE, IBV_ACCESS_LOCAL_WRITE);
	s->mb = ibv_reg_mr(s->r.b.pd, tio_buffer_data(s->b), RDMA_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->ma || !s->mb)
		return bench_fail(run, errno, "ibv_reg_mr of a tensorio buffer: %s",
				  strerror(errno));
	memset(tio_buffer_data(s->a), 0x5a, RDMA_SIZE);
	return 0;
}

/* perftest's result line: " 1048576  100  36.50  36.49  0.000036", BW average. */
static int rdma_perftest_bw(const char *line, double *mbs)
{
	unsigned long long b;

	return sscanf(line, " %llu %*u %*f %lf", &b, mbs) == 2 && b == RDMA_SIZE ? 0 : -1;
}

/* perftest server and client on the device, on a port of our own. */
static int rdma_run_peer(struct bench_run *run, struct rstate *s, uint64_t n)
{
	const char *tool = run->c->arg & RDMA_READ ? "ib_read_bw" : "ib_write_bw";
	char *dev = (char *)ibv_get_device_name(s->r.ctx->device);
	char path[64], p[16], gid[16], size[16], iters[32], why[256];
	int port = 20000 + (int)(getpid() % 20000), k;
	char *srv[] = { path, "-d", dev, "-x", gid, "-F", "-p", p, "-s", size,
			"-n", iters, NULL };
	char *cli[] = { path, "-d", dev, "-x", gid, "-F", "-p", p, "-s", size,
			"-n", iters, "127.0.0.1", NULL };
	double mbs = -1;

	snprintf(path, sizeof(path), "/usr/bin/%s", tool);
	snprintf(gid, sizeof(gid), "%d", s->r.gid_index);
	snprintf(size, sizeof(size), "%u", RDMA_SIZE);
	/* perftest wants at least 5 iterations. */
	snprintf(iters, sizeof(iters), "%llu", (unsigned long long)(n < 5 ? 5 : n));
	/* A server that exits first (its port taken, ...): another port, 3 at most. */
	for (k = 0; k < 3 && mbs <= 0; k++) {
		snprintf(p, sizeof(p), "%d", 20000 + (port + k * 3571) % 20000);
		mbs = bench_tool_pair(srv, cli, rdma_perftest_bw, why, sizeof(why));
	}
	if (mbs <= 0)
		return bench_fail(run, EIO, "no result line from %s on %s: %s", tool, dev, why);
	run->manual_ns = (double)n * RDMA_SIZE / (mbs * 1048576.0) * 1e9;
	return 0;
}

static int rdma_run(struct bench_run *run, uint64_t n)
{
	struct rstate *s = run->state;
	int rd = run->c->arg & RDMA_READ, st;

	if (run->c->arg & RDMA_PEER)
		return rdma_run_peer(run, s, n);
	st = rdma_ops(&s->r, rd ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE, s->ma, 0,
		      (uintptr_t)s->mb->addr, s->mb->rkey, RDMA_SIZE, n);
	if (st != IBV_WC_SUCCESS)
		return bench_fail(run, EIO, "RDMA %s: %s", rd ? "READ" : "WRITE",
				  st == -1 ? "no completion" : st == -2 ? "post failed" :
				  ibv_wc_status_str((enum ibv_wc_status)st));
	return 0;
}

static void rdma_teardown(struct bench_run *run)
{
	struct rstate *s = run->state;

	if (!s)
		return;
	if (s->ma)
		ibv_dereg_mr(s->ma);
	if (s->mb)
		ibv_dereg_mr(s->mb);
	tio_buffer_decref(s->a);
	tio_buffer_decref(s->b);
	rdev_close(&s->r);
	tio_error_clear();
	free(s);
	run->state = NULL;
}
#else
static int rdma_setup(struct bench_run *run)
{
	return bench_skip(run, "tio-bench was built without libibverbs-dev");
}

static int rdma_run(struct bench_run *run, uint64_t n)
{
	return -EOPNOTSUPP;
}

static void rdma_teardown(struct bench_run *run)
{
}
#endif

#define RDMA(n, a, r, what) {						\
	.suite = "net", .name = n, .ref = r, .bytes = RDMA_SIZE,	\
	.note = what,							\
	.setup = rdma_setup, .run = rdma_run, .teardown = rdma_teardown, .arg = (a) }

static struct bench_case cases[] = {
	RDMA("write/rdma/ib_write_bw", RDMA_PEER, "write/rdma/ib_write_bw",
	     "perftest ib_write_bw -s 1MiB on the verbs device, loopback (its BW average)"),
	RDMA("write/rdma", 0, "write/rdma/ib_write_bw",
	     "RDMA WRITE of 1 MiB between two tensorio buffers (ibv_reg_mr of their mappings), "
	     "16 in flight"),
	RDMA("read/rdma/ib_read_bw", RDMA_PEER | RDMA_READ, "read/rdma/ib_read_bw",
	     "perftest ib_read_bw -s 1MiB on the verbs device, loopback"),
	RDMA("read/rdma", RDMA_READ, "read/rdma/ib_read_bw",
	     "RDMA READ of 1 MiB between two tensorio buffers, 16 in flight"),
};

static void __attribute__((constructor)) rdma_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
