// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The project's current performance goals, one table for every suite:
 * each is defined here and nowhere else. A goal is met when the row's
 * median is at most factor x the median of the row it is against (in
 * the same run) plus an offset; an absolute goal is against nothing.
 * Goals are printed and counted, never asserted: a missed goal is a
 * verdict, not a failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define ABS(s, n, v, u, why)		{ s, n, NULL, 0, v, u, why }
#define RATIO(s, n, a, f, why)		{ s, n, a, f, 0, BENCH_NS, why }
#define PLUS(s, n, a, v, u, why)	{ s, n, a, 1, v, u, why }
/* "at least x the GB/s of": at most 1/x its time per operation. */
#define GBPS(s, n, a, x, why)		RATIO(s, n, a, 1.0 / (x), why)

static const struct bench_target targets[] = {
	/* The driver's command paths (guest instructions in the icount VM). */
	RATIO("overhead", "info/ring/b64", "info/ioctl", 0.10,
	      "a no-op record through the command ring at a tenth of an ioctl"),
	RATIO("overhead", "buf4k/ring/b64", "buf4k/ioctl", 0.70,
	      "4 KiB alloc+free through the ring, handler included"),
	RATIO("overhead", "fence/ring/b64", "fence/ioctl", 0.30,
	      "fence emit+signal through the ring"),
	RATIO("overhead", "info/uring-inline/b64", "info/ioctl", 0.80,
	      "one uring_cmd per command, payload in the SQE"),
	ABS("overhead", "fence/ioctl", 2000, BENCH_INSN,
	    "fence emit+signal by ioctl, the handler's cost"),
	/* The FFI against TVM FFI's own runtime, in one process. */
	RATIO("ffi", "call/noop-0", "peer/tvm-ffi/call-noop-0", 1.0,
	      "calls at TVM FFI's speed or better"),
	RATIO("ffi", "call/int-1", "peer/tvm-ffi/call-int-1", 1.0,
	      "calls at TVM FFI's speed or better"),
	RATIO("ffi", "call/dltensor", "peer/tvm-ffi/call-dltensor", 1.0,
	      "calls at TVM FFI's speed or better"),
	ABS("ffi", "lookup/global", 10, BENCH_NS, "a global looked up by name"),
	PLUS("ffi", "object/incref-decref", "breakdown/atomic-inc-dec", 2, BENCH_NS,
	     "IncRef+DecRef: two atomics and 2 ns"),
	RATIO("ffi", "str/create-destroy", "peer/tvm-ffi/str-40", 0.5,
	      "a 40-byte string at half TVM FFI's cost"),
	ABS("ffi", "dlpack/import-destroy", 12, BENCH_NS, "DLPack import + release"),
	ABS("ffi", "error/raise-move-release", 1000, BENCH_NS,
	    "an error raised and caught, backtrace not read"),
	/* Pinned memory: a repeated allocation costs microseconds. */
	ABS("memory", "pinned-cache/1k", 5000, BENCH_NS, "pinned cache hit"),
	ABS("memory", "pinned-cache/64k", 5000, BENCH_NS, "pinned cache hit"),
	ABS("memory", "pinned-cache/1m", 5000, BENCH_NS, "pinned cache hit"),
	/* Loading at the disk's limit. */
	GBPS("io", "read-pinned", "fio-io_uring", 0.9, ">= 0.9x fio's GB/s"),
	GBPS("io", "safetensors-cold/medium", "fio-best/medium", 0.95,
	     ">= 0.95x fio's best O_DIRECT read"),
	GBPS("io", "safetensors-first/medium", "fio-best/medium", 0.95,
	     ">= 0.95x fio's best, into fresh memory"),
	GBPS("io", "safetensors-sharded/medium", "fio-best/medium", 0.95,
	     ">= 0.95x fio's best, four shards"),
	GBPS("io", "safetensors-warm/medium", "mmap-memcpy/medium", 1.0,
	     ">= mmap + memcpy from the page cache"),
	/* Saving at the disk's limit. */
	GBPS("io", "save/large", "fio-write-best/large", 0.9,
	     ">= 0.9x fio's best O_DIRECT write with end_fsync, durable"),
	RATIO("io", "save-async/medium", "memcpy/medium", 1.0,
	      "an asynchronous save returns within one memcpy of the data"),
	/* Python calls. */
	ABS("python", "call/noop-0", 50, BENCH_NS, "a Function call from Python"),
	ABS("python", "call/torch-tensor", 300, BENCH_NS,
	    "a call with a torch tensor, conversion included"),
	RATIO("python", "save/safetensors", "save/c-ctypes", 1.05,
	      "a save from Python within 5% of the C call"),
	/* Transfers at the peer tools' speed. */
	GBPS("net", "put/shm", "put/shm/ucx_perftest", 0.9, ">= 0.9x ucx_perftest's GB/s"),
	GBPS("net", "get/shm", "get/shm/ucx_perftest", 0.9, ">= 0.9x ucx_perftest's GB/s"),
	GBPS("net", "put/tcp", "put/tcp/ucx_perftest", 0.9, ">= 0.9x ucx_perftest's GB/s"),
	GBPS("net", "get/tcp", "get/tcp/ucx_perftest", 0.9, ">= 0.9x ucx_perftest's GB/s"),
	GBPS("net", "put/verbs", "put/verbs/ucx_perftest", 0.9, ">= 0.9x ucx_perftest's GB/s"),
	GBPS("net", "get/verbs", "get/verbs/ucx_perftest", 0.9, ">= 0.9x ucx_perftest's GB/s"),
	GBPS("net", "write/rdma", "write/rdma/ib_write_bw", 0.9, ">= 0.9x ib_write_bw's GB/s"),
	GBPS("net", "read/rdma", "read/rdma/ib_read_bw", 0.9, ">= 0.9x ib_read_bw's GB/s"),
	/* GPUs. */
	ABS("gpu", "fence/record", 5000, BENCH_NS, "stream -> fence"),
	PLUS("gpu", "fence/roundtrip", "fence/record", 10000, BENCH_NS,
	     "fence -> stream, beyond stream -> fence"),
	PLUS("gpu", "call/dltensor-cuda", "call/dltensor-cpu", 1, BENCH_NS,
	     "a CUDA DLTensor* costs the host call + 1 ns"),
	GBPS("gpu", "load/device-cold", "load/host-cold", 0.95,
	     ">= 0.95x the disk (the loader into host memory)"),
	GBPS("gpu", "load/device-warm", "load/mmap-htod-warm", 2,
	     ">= 2x mmap + per-tensor copies (the safetensors library's way)"),
};

/**
 * bench_targets() - the table
 * @t: set to its first entry
 *
 * Return: how many entries.
 */
size_t bench_targets(const struct bench_target **t)
{
	*t = targets;
	return sizeof(targets) / sizeof(targets[0]);
}

/**
 * bench_target_of() - a case's goal
 * @suite: its suite
 * @name: its name
 *
 * Return: the entry, or NULL when the project has no goal for it.
 */
const struct bench_target *bench_target_of(const char *suite, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (!strcmp(targets[i].suite, suite) && !strcmp(targets[i].name, name))
			return &targets[i];
	return NULL;
}

/**
 * bench_goal_set() - a result's goal from the table
 * @g: zeroed or freed
 * @t: the entry, NULL for none
 * @unit: the run's unit: a goal with an offset in another unit is none
 *
 * Return: 0, or -ENOMEM.
 */
int bench_goal_set(struct bench_goal *g, const struct bench_target *t, enum bench_unit unit)
{
	memset(g, 0, sizeof(*g));
	if (!t || (t->plus != 0 && t->unit != unit))
		return 0;
	g->against = t->against ? strdup(t->against) : NULL;
	g->why = strdup(t->why);
	if ((t->against && !g->against) || !g->why) {
		bench_goal_free(g);
		return -ENOMEM;
	}
	g->factor = t->factor;
	g->plus = t->plus;
	g->set = 1;
	return 0;
}

void bench_goal_free(struct bench_goal *g)
{
	free(g->against);
	free(g->why);
	memset(g, 0, sizeof(*g));
}

/**
 * bench_goal_text() - how a goal reads: "<= 10 ns", "<= 0.10x info/ioctl",
 * "<= breakdown/atomic-inc-dec + 2 ns"
 * @buf: where
 * @len: its size
 * @g: the goal
 * @unit: the unit of its offset
 */
void bench_goal_text(char *buf, size_t len, const struct bench_goal *g, enum bench_unit unit)
{
	const char *u = bench_unit_name(unit);

	if (!g->set)
		snprintf(buf, len, "%s", "");
	else if (!g->against)
		snprintf(buf, len, "<= %g %s", g->plus, u);
	else if (g->plus == 0)
		snprintf(buf, len, "<= %.2fx %s", g->factor, g->against);
	else if (g->factor == 1)
		snprintf(buf, len, "<= %s + %g %s", g->against, g->plus, u);
	else
		snprintf(buf, len, "<= %.2fx %s + %g %s", g->factor, g->against, g->plus, u);
}

/**
 * bench_targets_judge() - each result's verdict against its goal
 * @r: one run's results (a goal is relative to a row of the same run)
 * @n: how many
 *
 * Rows judged before their reference row ran are judged again.
 */
void bench_targets_judge(struct bench_result *r, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		struct bench_goal *g = &r[i].goal;
		double base = 0;

		g->verdict = BENCH_T_NONE;
		if (!g->set || r[i].status != BENCH_OK)
			continue;
		if (g->against) {
			for (j = 0; j < n; j++)
				if (r[j].status == BENCH_OK && r[j].st.median > 0 &&
				    !strcmp(r[j].suite, r[i].suite) &&
				    !strcmp(r[j].name, g->against))
					base = r[j].st.median;
			if (!(base > 0)) {
				g->verdict = BENCH_T_UNJUDGED;
				continue;
			}
		}
		g->limit = g->factor * base + g->plus;
		g->verdict = r[i].st.median <= g->limit ? BENCH_T_MET : BENCH_T_MISSED;
	}
}

/**
 * bench_targets_tally() - a run's verdicts counted
 * @r: its results, judged
 * @n: how many
 * @t: added to
 */
void bench_targets_tally(const struct bench_result *r, size_t n, struct bench_tally *t)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (r[i].goal.verdict == BENCH_T_MET)
			t->met++;
		else if (r[i].goal.verdict == BENCH_T_MISSED)
			t->missed++;
		else if (r[i].goal.verdict == BENCH_T_UNJUDGED)
			t->unjudged++;
	}
}
