// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "ffi", rows "tvmffi/...": the FFI rows' operations made through
 * the TVM FFI C entry points of libtensorio-tvmffi (TVMFFIFunctionCall,
 * TVMFFIFunctionGetGlobal, ...) on this library's runtime: the C ABI's own
 * call path, beside the tio_ rows (the ratio column divides by them). The
 * library is opened with dlopen (found beside libtensorio through this
 * program's RUNPATH); the rows are skipped where it is not. tvmffi-peer
 * (tvmffi_peer.c) runs the same loops against other TVM FFI runtimes.
 *
 * Rows "peer/tvm-ffi/...": the same loops on TVM FFI's own runtime in
 * this process, the libtvm_ffi.so that $TIO_BENCH_TVM_FFI names (built
 * as docs/benchmarks.md says; not packaged for Debian): the FFI's goals
 * are relative to them. Skipped without it.
 */
#include <errno.h>
#include <stdlib.h>

#include <tensorio/ffi.h>

#include "bench.h"
#include "tvmffi_ops.h"

struct tvmffi_state {
	void *h;
	struct tvmffi_api api;
	DLTensor dl;
	float data[16];
	int64_t shape[1];
};

static void tvmffi_teardown(struct bench_run *run)
{
	struct tvmffi_state *s = run->state;

	if (!s)
		return;
	if (s->h) {
		if (s->api.decref)
			tvmffi_ops_close(&s->api);
		dlclose(s->h);
	}
	free(s);
	run->state = NULL;
}

/* @lib: a TVM FFI runtime's shared object, NULL: $TIO_BENCH_TVM_FFI's. */
static int open_runtime(struct bench_run *run, const char *lib)
{
	struct tvmffi_state *s = calloc(1, sizeof(*s));
	const char *path = lib ? lib : getenv("TIO_BENCH_TVM_FFI");

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	if (!path || !*path) {
		tvmffi_teardown(run);
		return bench_skip(run, "TIO_BENCH_TVM_FFI does not name a libtvm_ffi.so");
	}
	s->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!s->h) {
		tvmffi_teardown(run);
		return bench_skip(run, "%s not found", path);
	}
	if (tvmffi_ops_open(&s->api, s->h)) {
		tvmffi_teardown(run);
		tio_error_clear();
		return bench_fail(run, EPROTO, "%s: setup failed", path);
	}
	s->shape[0] = 16;
	s->dl = (DLTensor){ .data = s->data, .device = { kDLCPU, 0 }, .ndim = 1,
			    .dtype = { kDLFloat, 32, 1 }, .shape = s->shape };
	return 0;
}

static int tvmffi_setup(struct bench_run *run)
{
	return open_runtime(run, "libtensorio-tvmffi.so.0");
}

static int peer_setup(struct bench_run *run)
{
	return open_runtime(run, NULL);
}

static int tvmffi_run(struct bench_run *run, uint64_t n)
{
	struct tvmffi_state *s = run->state;

	if (tvmffi_ops_run(&s->api, (enum tvmffi_op)run->c->arg, &s->dl, n)) {
		tio_error_clear();
		return bench_fail(run, EPROTO, "TVM FFI call failed");
	}
	return 0;
}

#define TVMFFI(n, k, r, what) {						\
	.suite = "ffi", .name = n, .ref = r, .note = what,		\
	.setup = tvmffi_setup, .run = tvmffi_run,			\
	.teardown = tvmffi_teardown, .arg = k }

#define PEER(n, k, r, what) {						\
	.suite = "ffi", .name = "peer/tvm-ffi/" n, .ref = r, .note = what, \
	.setup = peer_setup, .run = tvmffi_run,				\
	.teardown = tvmffi_teardown, .arg = k }

static struct bench_case cases[] = {
	TVMFFI("tvmffi/call-noop-0", OP_CALL0, "call/noop-0", "TVMFFIFunctionCall, no-op, 0 args"),
	TVMFFI("tvmffi/call-int-1", OP_CALL_INT, "call/int-1", "TVMFFIFunctionCall, 1 int arg"),
	TVMFFI("tvmffi/call-dltensor", OP_CALL_DLT, "call/dltensor",
	       "TVMFFIFunctionCall, a DLTensor* arg"),
	TVMFFI("tvmffi/lookup-global", OP_LOOKUP, "lookup/global",
	       "TVMFFIFunctionGetGlobal + TVMFFIObjectDecRef"),
	TVMFFI("tvmffi/incref-decref", OP_REFS, "object/incref-decref",
	       "TVMFFIObjectIncRef + TVMFFIObjectDecRef"),
	TVMFFI("tvmffi/str-40", OP_STR40, "str/create-destroy",
	       "TVMFFIStringFromByteArray, 40 bytes, + DecRef"),
	TVMFFI("tvmffi/dlpack-import", OP_DLPACK, "dlpack/import-destroy",
	       "TVMFFITensorFromDLPack + DecRef"),
	PEER("call-noop-0", OP_CALL0, "call/noop-0", "TVM FFI's own TVMFFIFunctionCall, no-op"),
	PEER("call-int-1", OP_CALL_INT, "call/int-1", "TVM FFI's own call, 1 int arg"),
	PEER("call-dltensor", OP_CALL_DLT, "call/dltensor", "TVM FFI's own call, a DLTensor* arg"),
	PEER("lookup-global", OP_LOOKUP, "lookup/global", "TVM FFI's own lookup + DecRef"),
	PEER("incref-decref", OP_REFS, "object/incref-decref", "TVM FFI's own IncRef + DecRef"),
	PEER("str-40", OP_STR40, "str/create-destroy", "TVM FFI's own 40-byte string + DecRef"),
	PEER("dlpack-import", OP_DLPACK, "dlpack/import-destroy",
	     "TVM FFI's own TVMFFITensorFromDLPack + DecRef"),
};

static void __attribute__((constructor)) tvmffi_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
