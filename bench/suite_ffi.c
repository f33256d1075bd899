// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "ffi": what the FFI costs per call, in ns on the host. Calls go to
 * C functions wrapped as Function objects, through the unchecked fast path
 * (tio_func_call, what a caller holding a Function uses) unless the name
 * says otherwise. The breakdown rows split a call into its parts: a plain
 * indirect C call (the floor), packing arguments into Anys, unpacking them
 * in the callee, and handing back a result.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/ffi.h>

#include "bench.h"

#define NOOP_NAME	"tio.bench.noop"

struct ffi_state {
	tio_object_t *noop, *cb, *tensors[3];
	int global;	/* NOOP_NAME registered by this run */
	DLTensor dl;
	float data[16];
	int64_t shape[1];
};

static int sink_i;

static int f_noop(void *self, const tio_any_t *args, int32_t nargs,
		  tio_any_t *ret)
{
	return 0;
}

static int f_int(void *self, const tio_any_t *args, int32_t nargs,
		 tio_any_t *ret)
{
	int64_t a, b = 0;

	if (tio_any_to_int(&args[0], &a) ||
	    (nargs > 1 && tio_any_to_int(&args[1], &b)))
		return -1;
	*ret = tio_any_int(a + b);
	return 0;
}

static int f_float(void *self, const tio_any_t *args, int32_t nargs,
		   tio_any_t *ret)
{
	double a;

	if (tio_any_to_float(&args[0], &a))
		return -1;
	*ret = tio_any_float(a * 2);
	return 0;
}

static int f_str(void *self, const tio_any_t *args, int32_t nargs,
		 tio_any_t *ret)
{
	const char *s;
	size_t len;

	if (tio_any_to_str(&args[0], &s, &len))
		return -1;
	*ret = tio_any_int((int64_t)len);
	return 0;
}

static int f_dltensor(void *self, const tio_any_t *args, int32_t nargs,
		      tio_any_t *ret)
{
	DLTensor *t;

	if (tio_any_to_dltensor(&args[0], &t))
		return -1;
	*ret = tio_any_int(t->ndim);
	return 0;
}

static int f_tensors(void *self, const tio_any_t *args, int32_t nargs,
		     tio_any_t *ret)
{
	int64_t n = 0;
	int32_t i;

	for (i = 0; i < nargs; i++) {
		tio_object_t *t;

		if (tio_any_to_object(&args[i], TIO_TYPE_TENSOR, &t))
			return -1;
		n += tio_tensor_dl(t)->ndim;
	}
	*ret = tio_any_int(n);
	return 0;
}

static int f_strres(void *self, const tio_any_t *args, int32_t nargs,
		    tio_any_t *ret)
{
	return tio_str_new("result", 6, ret);
}

/* Calls the Function it is given, as a C library calling back would. */
static int f_callback(void *self, const tio_any_t *args, int32_t nargs,
		      tio_any_t *ret)
{
	tio_object_t *cb;

	if (tio_any_to_object(&args[0], TIO_TYPE_FUNCTION, &cb))
		return -1;
	return tio_func_call(cb, args + 1, nargs - 1, ret);
}

static tio_safe_call_t const callee[] = {
	f_noop, f_int, f_float, f_int, f_str, f_dltensor, f_tensors,
	f_callback,
};

enum { C_NOOP, C_INT1, C_FLOAT1, C_INT2, C_STR, C_DLT, C_TENSORS, C_CB,
       C_CHECKED, C_GLOBAL, LOOKUP, INCREF, DLPACK, STR_NEW, STR_SMALL,
       B_CCALL, B_ATOMIC, B_PACK, B_UNPACK, B_RESULT, ERR_RAISE, ERR_READ };

static void ffi_teardown(struct bench_run *run)
{
	struct ffi_state *s = run->state;
	int i;

	if (!s)
		return;
	if (s->global)
		tio_func_remove_global(NOOP_NAME);
	if (s->noop)
		tio_object_decref(s->noop);
	if (s->cb)
		tio_object_decref(s->cb);
	for (i = 0; i < 3; i++)
		if (s->tensors[i])
			tio_object_decref(s->tensors[i]);
	free(s);
	run->state = NULL;
}

static int ffi_setup(struct bench_run *run)
{
	struct ffi_state *s = calloc(1, sizeof(*s));
	unsigned int k = (unsigned int)run->c->arg;
	DLDataType f32 = { kDLFloat, 32, 1 };
	int i;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	if (tio_func_new(k < sizeof(callee) / sizeof(callee[0]) ? callee[k] :
			 f_noop, NULL, NULL, &s->noop) ||
	    tio_func_new(f_noop, NULL, NULL, &s->cb))
		goto fail;
	/*
	 * A counted Function, not tio_func_register_global(): that one is
	 * never freed, so every case's setup would leak one.
	 */
	if (tio_func_set_global(NOOP_NAME, s->cb, 1))
		goto fail;
	s->global = 1;
	s->shape[0] = 16;
	s->dl = (DLTensor){ .data = s->data, .device = { kDLCPU, 0 },
			    .ndim = 1, .dtype = f32, .shape = s->shape };
	for (i = 0; i < 3; i++)
		if (tio_tensor_empty(1, s->shape, f32, 0, &s->tensors[i]))
			goto fail;
	return 0;
fail:
	ffi_teardown(run);
	return bench_fail(run, EPROTO, "FFI setup failed");
}

static void noop_deleter(struct DLManagedTensor *self)
{
	bench_keep(self);
}

/*
 * One function per call row, never inlined, the Function in a local: what
 * a caller holding a Function runs. With few values live across the call
 * the counter and the Function stay in registers; inside ffi_run()'s
 * switch GCC kept them on the stack, a store and a reload on the loop's
 * own dependency chain, differently from row to row.
 */
#define CALL_ROW(name, set_args, nargs)					\
static __attribute__((noinline)) int name(struct ffi_state *s, tio_object_t *f, uint64_t n) \
{									\
	tio_any_t args[4], ret;						\
	uint64_t i;							\
	int err = 0;							\
									\
	(void)s;							\
	for (i = 0; i < n; i++) {					\
		set_args;						\
		ret = tio_any_none();					\
		err |= tio_func_call(f, args, nargs, &ret);		\
		bench_keep(ret.v_int64);				\
	}								\
	return err;							\
}

CALL_ROW(row_noop, (void)0, 0)
CALL_ROW(row_int1, args[0] = tio_any_int((int64_t)i), 1)
CALL_ROW(row_float1, args[0] = tio_any_float((double)i), 1)
CALL_ROW(row_int2, (args[0] = tio_any_int((int64_t)i), args[1] = tio_any_int(2)), 2)
CALL_ROW(row_str, args[0] = tio_any_raw_str("tensor"), 1)
CALL_ROW(row_dlt, args[0] = tio_any_dltensor(&s->dl), 1)
CALL_ROW(row_tensors, (args[0] = tio_any_object(s->tensors[0]),
		       args[1] = tio_any_object(s->tensors[1]),
		       args[2] = tio_any_object(s->tensors[2])), 3)
CALL_ROW(row_cb, args[0] = tio_any_object(s->cb), 1)

static int (*const call_rows[])(struct ffi_state *, tio_object_t *, uint64_t) = {
	[C_NOOP] = row_noop, [C_INT1] = row_int1, [C_FLOAT1] = row_float1,
	[C_INT2] = row_int2, [C_STR] = row_str, [C_DLT] = row_dlt,
	[C_TENSORS] = row_tensors, [C_CB] = row_cb,
};

static int ffi_run(struct bench_run *run, uint64_t n)
{
	struct ffi_state *s = run->state;
	unsigned int k = (unsigned int)run->c->arg;
	tio_object_t *f = s->noop;
	tio_any_t args[4], ret;
	uint64_t i;
	int err = 0;

	if (k <= C_CB)
		err = call_rows[k](s, f, n);
	switch (k) {	/* the other rows */
	case C_CHECKED:
		for (i = 0; i < n && !err; i++) {
			ret = tio_any_none();
			err = tio_func_call_any(s->noop, NULL, 0, &ret);
		}
		break;
	case C_GLOBAL:
		for (i = 0; i < n && !err; i++) {
			ret = tio_any_none();
			err = tio_func_call_global(NOOP_NAME, NULL, 0, &ret);
		}
		break;
	case LOOKUP:
		for (i = 0; i < n && !err; i++) {
			tio_object_t *g = NULL;

			err = tio_func_get_global(NOOP_NAME, &g);
			if (!g)
				err = -1;
			else
				tio_object_decref(g);
		}
		break;
	case INCREF:
		for (i = 0; i < n; i++) {
			tio_object_incref(s->noop);
			bench_clobber();
			tio_object_decref(s->noop);
		}
		break;
	case DLPACK: {
		/* Imports leave the managed tensor as it is: one serves all. */
		DLManagedTensor mt = { .dl_tensor = s->dl, .deleter = noop_deleter };

		for (i = 0; i < n && !err; i++) {
			tio_object_t *t;

			err = tio_tensor_from_dlpack(&mt, 0, 0, &t);
			if (!err)
				tio_object_decref(t);
		}
		break;
	}
	case ERR_RAISE:
	case ERR_READ:
		/*
		 * What a caller that handles an error pays: raise (message,
		 * raw backtrace), take it, release it; ERR_READ also reads the
		 * backtrace, which symbolises it.
		 */
		for (i = 0; i < n && !err; i++) {
			tio_object_t *e;

			tio_error_raise("ValueError", "bench error %d", (int)i);
			e = tio_error_move_from_raised();
			if (!e)
				err = 1;
			else if (k == ERR_READ && !*tio_error_backtrace(e))
				err = 1;
			tio_object_decref(e);
		}
		break;
	case STR_NEW:
	case STR_SMALL:
		for (i = 0; i < n && !err; i++) {
			static const char text[] = "a string of exactly forty bytes, no more";
			size_t len = k == STR_SMALL ? 5 : sizeof(text) - 1;

			err = tio_str_new(text, len, &ret);
			if (!err)
				tio_any_decref(&ret);
		}
		break;
	case B_CCALL: {
		/* The floor: an indirect call the compiler cannot inline. */
		tio_safe_call_t fn = f_noop;

		for (i = 0; i < n; i++) {
			bench_launder(fn);
			err |= fn(NULL, args, 0, &ret);
		}
		break;
	}
	case B_ATOMIC: {
		/*
		 * The hardware floor of IncRef+DecRef: one atomic add and one
		 * atomic subtract on a shared counter, nothing else.
		 */
		static uint64_t word = 1;

		for (i = 0; i < n; i++) {
			__atomic_fetch_add(&word, 1, __ATOMIC_RELAXED);
			err |= __atomic_fetch_sub(&word, 1, __ATOMIC_ACQ_REL) == 1;
		}
		break;
	}
	case B_PACK:
		for (i = 0; i < n; i++) {
			args[0] = tio_any_int((int64_t)i);
			args[1] = tio_any_float(1.5);
			args[2] = tio_any_raw_str("x");
			bench_keep(args);
		}
		break;
	case B_UNPACK:
		args[0] = tio_any_int(7);
		args[1] = tio_any_float(1.5);
		for (i = 0; i < n && !err; i++) {
			int64_t a = 0;
			double b = 0;

			bench_keep(args);
			err = tio_any_to_int(&args[0], &a) ||
			      tio_any_to_float(&args[1], &b);
			sink_i += (int)a + (int)b;
		}
		break;
	case B_RESULT: {
		/* The callee returns a Str object; the caller releases it. */
		tio_safe_call_t fn = f_strres;

		for (i = 0; i < n && !err; i++) {
			bench_launder(fn);
			ret = tio_any_none();
			err = fn(NULL, NULL, 0, &ret);
			tio_any_decref(&ret);
		}
		break;
	}
	}
	if (err) {
		tio_error_clear();
		return bench_fail(run, EPROTO, "FFI call failed");
	}
	return 0;
}

#define FFI(n, k, what) {						\
	.suite = "ffi", .name = n, .ref = "call/noop-0",		\
	.note = what, .setup = ffi_setup, .run = ffi_run,		\
	.teardown = ffi_teardown, .arg = k }

static struct bench_case cases[] = {
	FFI("call/noop-0", C_NOOP, "no-op Function, 0 args, tio_func_call"),
	FFI("call/int-1", C_INT1, "1 int arg, int result"),
	FFI("call/float-1", C_FLOAT1, "1 float arg, float result"),
	FFI("call/int-2", C_INT2, "2 int args, int result"),
	FFI("call/str-small", C_STR, "a 6-byte C string arg"),
	FFI("call/dltensor", C_DLT, "a DLTensor* arg"),
	FFI("call/tensor-3", C_TENSORS, "3 Tensor objects, type-checked"),
	FFI("call/callback", C_CB, "callee calls a C callback Function"),
	FFI("call/noop-checked", C_CHECKED, "no-op via tio_func_call_any"),
	FFI("call/global-by-name", C_GLOBAL, "tio_func_call_global: lookup + call"),
	FFI("lookup/global", LOOKUP, "tio_func_get_global + DecRef"),
	FFI("object/incref-decref", INCREF, "IncRef + DecRef of a Function"),
	FFI("dlpack/import-destroy", DLPACK, "tio_tensor_from_dlpack + DecRef"),
	FFI("str/create-destroy", STR_NEW, "a 40-byte Str object, new + release"),
	FFI("str/small-create", STR_SMALL, "a 5-byte SmallStr (inline, no alloc)"),
	FFI("breakdown/c-indirect-call", B_CCALL, "dispatch floor: plain indirect C call"),
	FFI("breakdown/atomic-inc-dec", B_ATOMIC, "refcount floor: atomic add + atomic sub"),
	FFI("breakdown/pack-3", B_PACK, "value conversion: int, float, str into Anys"),
	FFI("breakdown/unpack-2", B_UNPACK, "value conversion: Any -> int, float"),
	FFI("breakdown/result-str", B_RESULT, "result handling: callee returns a SmallStr, caller releases"),
	FFI("error/raise-move-release", ERR_RAISE, "tio_error_raise + move_from_raised + DecRef (backtrace not read)"),
	FFI("error/raise-read-backtrace", ERR_READ, "the same, reading the backtrace (symbolised with libdw)"),
};

static void __attribute__((constructor)) ffi_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
