// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tvmffi-peer: the FFI's hot paths side by side with other TVM FFI
 * runtimes, in one process. Each LIB argument is a libtvm_ffi.so (TVM FFI's
 * own, built from source outside this tree, or libtensorio-tvmffi); it is
 * opened RTLD_LOCAL and driven through the same TVMFFI* entry points, got
 * with dlsym, by the same loops. The libtensorio rows call the tio_ API
 * directly. Repeats are interleaved across runtimes; the table gives ns per
 * operation, median and min of the repeats.
 *
 *   tvmffi-peer [-n CALLS] [-r REPEATS] [-o OP] LABEL=LIB...
 *
 * -o runs operation OP (its row number, from 0) alone: under valgrind
 * --tool=callgrind, two runs with different CALLS give the instructions
 * per operation, which the machine's load does not change.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/ffi.h>

#include "tvmffi_ops.h"

#define keep(v)	__asm__ __volatile__("" : : "g"(v) : "memory")

struct rt {
	const char *label;
	void *h;
	struct tvmffi_api api;
};

static int64_t shape[1] = { 16 };
static float data[16];
static DLTensor dlt = { .data = data, .device = { kDLCPU, 0 }, .ndim = 1,
			.dtype = { kDLFloat, 32, 1 }, .shape = shape };

static const char *const op_name[OP_COUNT] = {
	"call, no-op, 0 args", "call, 1 int", "call, 1 DLTensor*", "lookup by name + DecRef",
	"IncRef + DecRef", "40-byte string + DecRef", "DLPack import + DecRef",
};

static int rt_open(struct rt *r, char *arg)
{
	char *eq = strchr(arg, '=');

	if (!eq) {
		fprintf(stderr, "expected LABEL=LIB, got '%s'\n", arg);
		return -1;
	}
	*eq = '\0';
	r->label = arg;
	r->h = dlopen(eq + 1, RTLD_NOW | RTLD_LOCAL);
	if (!r->h) {
		fprintf(stderr, "%s\n", dlerror());
		return -1;
	}
	if (tvmffi_ops_open(&r->api, r->h)) {
		fprintf(stderr, "%s: an entry point is missing or setup failed\n", r->label);
		return -1;
	}
	return 0;
}

/* The thread's CPU time: time this thread was descheduled does not count. */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * The timing loops are functions of their own, never inlined into main():
 * GCC lays main() out as code run once, and put the tio_ loops, inlined
 * there, in its cold part (main.cold): unaligned, away from the loops of
 * the other runtimes, with their counter in a register the call clobbers
 * (a store and a reload each iteration).
 */
#define LOOP_FN __attribute__((noinline, hot))

/* n operations through a TVM FFI runtime; returns ns per op. */
LOOP_FN static double run_rt(const struct rt *r, enum tvmffi_op op, long n)
{
	double t0 = now_ns();

	if (tvmffi_ops_run(&r->api, op, &dlt, (uint64_t)n)) {
		fprintf(stderr, "%s: %s failed\n", r->label, op_name[op]);
		exit(1);
	}
	return (now_ns() - t0) / (double)n;
}

/*
 * The callees do what tvmffi_ops.h's do, no more: the rows differ only in
 * the call path (tio_func_call against each runtime's TVMFFIFunctionCall).
 */
static int tio_cb_noop(void *self, const tio_any_t *args, int32_t n, tio_any_t *ret)
{
	return 0;
}

static int tio_cb_int(void *self, const tio_any_t *args, int32_t n, tio_any_t *ret)
{
	if (args[0].type_index != TIO_TYPE_INT)
		return tio_any_type_error(&args[0], "int");
	*ret = tio_any_int(args[0].v_int64 + 1);
	return 0;
}

static int tio_cb_dlt(void *self, const tio_any_t *args, int32_t n, tio_any_t *ret)
{
	if (args[0].type_index != TIO_TYPE_DLTENSOR_PTR)
		return tio_any_type_error(&args[0], "DLTensor*");
	*ret = tio_any_int(((DLTensor *)args[0].v_ptr)->ndim);
	return 0;
}

static tio_object_t *tnoop, *tint, *tdlt;

/*
 * The call rows through the tio_ API, one function each as
 * tvmffi_ops.h's: the result is made None by its type index alone, as
 * there.
 */
#define TIO_CALL_ROW(name, set_arg, nargs)				\
static __attribute__((noinline)) int name(tio_object_t *f, long n)	\
{									\
	tio_any_t arg, ret;						\
	long i;								\
	int err = 0;							\
									\
	for (i = 0; i < n; i++) {					\
		set_arg;						\
		ret.type_index = TIO_TYPE_NONE;				\
		err |= tio_func_call(f, &arg, nargs, &ret);		\
		keep(ret.v_int64);					\
	}								\
	return err;							\
}

TIO_CALL_ROW(tio_call0, (void)0, 0)
TIO_CALL_ROW(tio_call_int, arg = tio_any_int(i), 1)
TIO_CALL_ROW(tio_call_dlt, arg = tio_any_dltensor(&dlt), 1)

/* The same operations through the tio_ API, in the same loops. */
LOOP_FN static double run_tio(enum tvmffi_op op, long n)
{
	tio_object_t *g, *h = tnoop;	/* h is never addressed: it stays in a register */
	double t0 = now_ns();
	long i;
	int err = 0;

	switch (op) {
	case OP_CALL0:
		err = tio_call0(tnoop, n);
		break;
	case OP_CALL_INT:
		err = tio_call_int(tint, n);
		break;
	case OP_CALL_DLT:
		err = tio_call_dlt(tdlt, n);
		break;
	case OP_LOOKUP:
		for (i = 0; i < n; i++) {
			err |= tio_func_get_global("peer.bench.tio-noop", &g);
			tio_object_decref(g);
		}
		break;
	case OP_REFS:
		for (i = 0; i < n; i++) {
			tio_object_incref(h);
			keep(h);
			tio_object_decref(h);
		}
		break;
	case OP_STR40:
		for (i = 0; i < n; i++) {
			tio_any_t s;

			err |= tio_str_new("a string of exactly forty bytes, no more", 40, &s);
			tio_any_decref(&s);
		}
		break;
	case OP_DLPACK: {
		DLManagedTensor mt = { .dl_tensor = dlt, .deleter = tvmffi_ops_keep_mt };

		for (i = 0; i < n; i++) {
			err |= tio_tensor_from_dlpack(&mt, 0, 0, &g);
			tio_object_decref(g);
		}
		break;
	}
	default:
		break;
	}
	if (err) {
		fprintf(stderr, "tio: %s failed\n", op_name[op]);
		exit(1);
	}
	return (now_ns() - t0) / (double)n;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long n = 10000000;
	int reps = 5, only = -1, nrt, c, i, k, op;
	struct rt rts[4];
	double *t;

	while ((c = getopt(argc, argv, "n:r:o:")) != -1) {
		if (c == 'n')
			n = atol(optarg);
		else if (c == 'r')
			reps = atoi(optarg);
		else if (c == 'o')
			only = atoi(optarg);
		else
			return 2;
	}
	nrt = argc - optind;
	if (nrt > 4 || n <= 0 || reps <= 0 || only < -1 || only >= OP_COUNT) {
		fprintf(stderr, "usage: %s [-n CALLS] [-r REPEATS] [-o OP] LABEL=LIB... (up to 4)\n",
			argv[0]);
		return 2;
	}
	for (i = 0; i < nrt; i++)
		if (rt_open(&rts[i], argv[optind + i]))
			return 1;
	if (tio_func_new(tio_cb_noop, NULL, NULL, &tnoop) ||
	    tio_func_new(tio_cb_int, NULL, NULL, &tint) ||
	    tio_func_new(tio_cb_dlt, NULL, NULL, &tdlt) ||
	    tio_func_set_global("peer.bench.tio-noop", tnoop, 1))
		return 1;
	t = calloc((size_t)(nrt + 1) * (size_t)reps, sizeof(*t));
	if (!t)
		return 1;
	printf("# ns of thread CPU time per operation, median (min) of %d repeats of %ld, interleaved\n",
	       reps, n);
	printf("%-26s %16s", "operation", "tio_ API");
	for (i = 0; i < nrt; i++)
		printf(" %16s", rts[i].label);
	printf("\n");
	for (op = 0; op < OP_COUNT; op++) {
		if (only >= 0 && op != only)
			continue;
		for (k = 0; k < reps; k++) {
			t[k] = run_tio((enum tvmffi_op)op, n);
			for (i = 0; i < nrt; i++)
				t[(size_t)(i + 1) * (size_t)reps + (size_t)k] =
					run_rt(&rts[i], (enum tvmffi_op)op, n);
		}
		printf("%-26s", op_name[op]);
		for (i = 0; i <= nrt; i++) {
			qsort(t + (size_t)i * (size_t)reps, (size_t)reps, sizeof(*t), cmp_d);
			printf("   %6.2f (%6.2f)", t[(size_t)i * (size_t)reps + (size_t)reps / 2],
			       t[(size_t)i * (size_t)reps]);
		}
		printf("\n");
		fflush(stdout);
	}
	free(t);
	return 0;
}
