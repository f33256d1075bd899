// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "ffi", rows "tvmffi/...": the FFI rows' operations made through
 * the TVM FFI C entry points of libtensorio-tvmffi (TVMFFIFunctionCall,
 * TVMFFIFunctionGetGlobal, ...) on this library's runtime: the C ABI's own
 * call path, beside the tio_func_call rows. The library is opened with
 * dlopen (found beside libtensorio through this program's RUNPATH); the
 * rows are skipped where it is not installed. bench/tvmffi_peer.c runs the
 * same loops against other TVM FFI runtimes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

#include <tensorio/ffi.h>

#include "bench.h"
#include "../lib/tvmffi/tvmffi_abi.h"

#define NOOP_NAME "tio.bench.tvmffi.noop"

enum { T_NOOP, T_INT1, T_DLT, T_LOOKUP, T_REFS, T_STR40, T_DLPACK };

struct tvmffi_state {
	void *h;
	int (*create)(void *, TVMFFISafeCallType, void (*)(void *), TVMFFIObjectHandle *);
	int (*call)(TVMFFIObjectHandle, TVMFFIAny *, int32_t, TVMFFIAny *);
	int (*get_global)(const TVMFFIByteArray *, TVMFFIObjectHandle *);
	int (*set_global)(const TVMFFIByteArray *, TVMFFIObjectHandle, int);
	int (*incref)(TVMFFIObjectHandle);
	int (*decref)(TVMFFIObjectHandle);
	int (*str)(const TVMFFIByteArray *, TVMFFIAny *);
	int (*from_dlpack)(DLManagedTensor *, int32_t, int32_t, TVMFFIObjectHandle *);
	TVMFFIObjectHandle f;
	DLTensor dl;
	float data[16];
	int64_t shape[1];
};

static const TVMFFIByteArray noop_name = { NOOP_NAME, sizeof(NOOP_NAME) - 1 };

static int cb_noop(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	return 0;
}

/* The callees do what the tio_ rows' callees do, through the same ABI. */
static int cb_int(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	int64_t a;

	if (tio_any_to_int((const tio_any_t *)&args[0], &a))
		return -1;
	*(tio_any_t *)ret = tio_any_int(a);
	return 0;
}

static int cb_dlt(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *ret)
{
	DLTensor *t;

	if (tio_any_to_dltensor((const tio_any_t *)&args[0], &t))
		return -1;
	*(tio_any_t *)ret = tio_any_int(t->ndim);
	return 0;
}

static void tvmffi_teardown(struct bench_run *run)
{
	struct tvmffi_state *s = run->state;

	if (!s)
		return;
	if (s->f)
		s->decref(s->f);
	if (s->h)
		dlclose(s->h);
	free(s);
	run->state = NULL;
}

#define SYM(s, f, name) (*(void **)&(s)->f = dlsym((s)->h, name))

static int tvmffi_setup(struct bench_run *run)
{
	static TVMFFISafeCallType const cb[] = { cb_noop, cb_int, cb_dlt };
	struct tvmffi_state *s = calloc(1, sizeof(*s));
	unsigned int k = (unsigned int)run->c->arg;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	s->h = dlopen("libtensorio-tvmffi.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!s->h) {
		tvmffi_teardown(run);
		return bench_skip(run, "libtensorio-tvmffi.so.0 not found");
	}
	if (!SYM(s, create, "TVMFFIFunctionCreate") || !SYM(s, call, "TVMFFIFunctionCall") ||
	    !SYM(s, get_global, "TVMFFIFunctionGetGlobal") ||
	    !SYM(s, set_global, "TVMFFIFunctionSetGlobal") ||
	    !SYM(s, incref, "TVMFFIObjectIncRef") || !SYM(s, decref, "TVMFFIObjectDecRef") ||
	    !SYM(s, str, "TVMFFIStringFromByteArray") ||
	    !SYM(s, from_dlpack, "TVMFFITensorFromDLPack") ||
	    s->create(NULL, cb[k < 3 ? k : 0], NULL, &s->f) ||
	    s->set_global(&noop_name, s->f, 1)) {
		tvmffi_teardown(run);
		tio_error_clear();
		return bench_fail(run, EPROTO, "libtensorio-tvmffi setup failed");
	}
	s->shape[0] = 16;
	s->dl = (DLTensor){ .data = s->data, .device = { kDLCPU, 0 }, .ndim = 1,
			    .dtype = { kDLFloat, 32, 1 }, .shape = s->shape };
	return 0;
}

static void noop_deleter(DLManagedTensor *self)
{
	bench_keep(self);
}

#define CALL_LOOP(set_arg, nargs) do {					\
	for (i = 0; i < n; i++) {					\
		set_arg;						\
		ret.type_index = kTVMFFINone;				\
		err |= call(f, &arg, nargs, &ret);			\
		bench_keep(ret.v_int64);				\
	}								\
} while (0)

static int tvmffi_run(struct bench_run *run, uint64_t n)
{
	struct tvmffi_state *s = run->state;
	int (*call)(TVMFFIObjectHandle, TVMFFIAny *, int32_t, TVMFFIAny *) = s->call;
	TVMFFIObjectHandle f = s->f, g;
	TVMFFIAny arg = { 0 }, ret;
	uint64_t i;
	int err = 0;

	switch (run->c->arg) {
	case T_NOOP:
		CALL_LOOP((void)0, 0);
		break;
	case T_INT1:
		CALL_LOOP((arg.type_index = kTVMFFIInt, arg.v_int64 = (int64_t)i), 1);
		break;
	case T_DLT:
		CALL_LOOP((arg.type_index = kTVMFFIDLTensorPtr, arg.v_ptr = &s->dl), 1);
		break;
	case T_LOOKUP:
		for (i = 0; i < n; i++) {
			err |= s->get_global(&noop_name, &g);
			err |= s->decref(g);
		}
		break;
	case T_REFS:
		for (i = 0; i < n; i++) {
			err |= s->incref(f);
			bench_clobber();
			err |= s->decref(f);
		}
		break;
	case T_STR40: {
		static const char text[] = "a string of exactly forty bytes, no more";
		TVMFFIByteArray b = { text, sizeof(text) - 1 };

		for (i = 0; i < n; i++) {
			err |= s->str(&b, &ret);
			err |= s->decref(ret.v_obj);
		}
		break;
	}
	case T_DLPACK:
		for (i = 0; i < n; i++) {
			DLManagedTensor mt = { .dl_tensor = s->dl, .deleter = noop_deleter };

			err |= s->from_dlpack(&mt, 0, 0, &g);
			err |= s->decref(g);
		}
		break;
	}
	if (err) {
		tio_error_clear();
		return bench_fail(run, EPROTO, "TVM FFI call failed");
	}
	return 0;
}

#define TVMFFI(n, k, r, what) {						\
	.suite = "ffi", .name = n, .ref = r, .note = what,		\
	.setup = tvmffi_setup, .run = tvmffi_run,			\
	.teardown = tvmffi_teardown, .arg = k }

static struct bench_case cases[] = {
	TVMFFI("tvmffi/call-noop-0", T_NOOP, "call/noop-0", "TVMFFIFunctionCall, no-op, 0 args"),
	TVMFFI("tvmffi/call-int-1", T_INT1, "call/int-1", "TVMFFIFunctionCall, 1 int arg"),
	TVMFFI("tvmffi/call-dltensor", T_DLT, "call/dltensor", "TVMFFIFunctionCall, a DLTensor* arg"),
	TVMFFI("tvmffi/lookup-global", T_LOOKUP, "lookup/global",
	       "TVMFFIFunctionGetGlobal + TVMFFIObjectDecRef"),
	TVMFFI("tvmffi/incref-decref", T_REFS, "object/incref-decref",
	       "TVMFFIObjectIncRef + TVMFFIObjectDecRef"),
	TVMFFI("tvmffi/str-40", T_STR40, "str/create-destroy",
	       "TVMFFIStringFromByteArray, 40 bytes, + DecRef"),
	TVMFFI("tvmffi/dlpack-import", T_DLPACK, "dlpack/import-destroy",
	       "TVMFFITensorFromDLPack + DecRef"),
};

static void __attribute__((constructor)) tvmffi_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
