// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "gpu": CUDA through libtensorio (tensorio/gpu.h), on device 0 of
 * the driver TIO_CUDA_LIBRARY names (else libcuda.so.1); TIO_BENCH_GPU=rocm
 * runs every row on ROCm device 0 instead (TIO_HIP_LIBRARY: the runtime),
 * names unchanged. Every case skips with the reason when the GPU is
 * unusable here (no driver, no GPU, or a library built without the
 * vendor's headers). On the tests' fake drivers the rows run too: a check
 * that they work, not figures of a GPU.
 *   call/dltensor-cpu      FFI call of a no-op taking a DLTensor*, on the CPU
 *   call/dltensor-cuda     the same with a device tensor's DLTensor*
 *   call/tensor-cuda       the same with the device Tensor object
 *   stream/query           tio_gpu_stream_query() on an idle stream
 *   h2d|d2h/pinned/SIZE    tio_gpu_copy_htod/dtoh + stream sync, host side
 *                          a tensorio buffer registered with CUDA
 *   h2d|d2h/pageable/SIZE  the same from/to malloc memory (ratio: / pinned)
 *   fence/record           tio_gpu_stream_record_fence + tio_fence_wait on
 *                          a stream with a doorbell: stream -> fence, the
 *                          GPU writes the point (cuStreamWriteValue64)
 *                          where the device can, and the waiter sees it
 *   fence/record-hostfunc  the same on a stream without a doorbell: a host
 *                          function signals (cuLaunchHostFunc), the waiter
 *                          wakes from the futex (or the driver's wait)
 *   fence/roundtrip        fence -> stream -> fence: the CUDA stream waits
 *                          on point A (cuStreamWaitValue64 on the seqno
 *                          word), then writes point B; the CPU signals A
 *                          and waits for B
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/ffi.h>
#include <tensorio/gpu.h>
#include <tensorio/stream.h>
#include <tensorio/tensor.h>

#include "bench.h"

enum gkind {
	G_CALL_CPU, G_CALL_CUDA, G_CALL_TENSOR, G_QUERY, G_H2D_PIN, G_H2D_PAGE,
	G_D2H_PIN, G_D2H_PAGE, G_RECORD, G_RECORD_FN, G_ROUNDTRIP,
};

/* The GPU of the gpu suite's rows (both files): CUDA 0, or ROCm 0. */
DLDevice bench_gpu(void)
{
	const char *vendor = getenv("TIO_BENCH_GPU");

	if (vendor && !strcmp(vendor, "rocm"))
		return (DLDevice){ kDLROCM, 0 };
	return (DLDevice){ kDLCUDA, 0 };
}

#define GARG(k, sz)	((uintptr_t)(k) | (uintptr_t)(sz) << 8)
#define GKIND(a)	((enum gkind)((a) & 0xff))
#define GSIZE(a)	((size_t)((a) >> 8))

struct gstate {
	tio_gpu_stream_t *cs;
	tio_object_t *dev;	/* device tensor */
	tio_object_t *fn;	/* no-op Function */
	tio_buffer_t *buf;	/* pinned host side */
	void *mem;		/* pageable host side */
	tio_stream_t *in, *out;
	int64_t shape[1];
	float cpu_data[16];
	DLTensor cpu_dl;
	size_t size;
};

static int f_dltensor(void *self, const tio_any_t *args, int32_t nargs,
		      tio_any_t *ret)
{
	DLTensor *t;

	if (tio_any_to_dltensor(&args[0], &t))
		return -1;
	*ret = tio_any_int(t->device.device_type);
	return 0;
}

static void gpu_teardown(struct bench_run *run)
{
	struct gstate *s = run->state;

	if (!s)
		return;
	tio_gpu_stream_destroy(s->cs);
	if (s->dev)
		tio_object_decref(s->dev);
	if (s->fn)
		tio_object_decref(s->fn);
	tio_buffer_decref(s->buf);
	tio_stream_decref(s->in);
	tio_stream_decref(s->out);
	free(s->mem);
	free(s);
	run->state = NULL;
}

/* Fail @run with the raised error's errno and message (both gpu files). */
int gpu_error(struct bench_run *run, const char *what)
{
	tio_object_t *e = tio_error_move_from_raised();
	int err = tio_errno() ? tio_errno() : EPROTO;

	bench_fail(run, err, "%s: %s", what, e ? tio_error_message(e) : "?");
	if (e)
		tio_object_decref(e);
	return -err;
}

static int gpu_setup(struct bench_run *run)
{
	enum gkind k = GKIND(run->c->arg);
	DLDataType u8 = { kDLUInt, 8, 1 };
	DLDevice gpu = bench_gpu();
	struct gstate *s;
	tio_object_t *e;

	if (tio_gpu_init(gpu.device_type)) {
		e = tio_error_move_from_raised();
		bench_skip(run, "%s", e ? tio_error_message(e) : "no GPU");
		if (e)
			tio_object_decref(e);
		return BENCH_SKIP;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(run, ENOMEM, "state");
	run->state = s;
	s->size = GSIZE(run->c->arg);
	s->shape[0] = s->size ? (int64_t)s->size : 16;
	if (tio_gpu_stream_create(gpu, &s->cs))
		return gpu_error(run, "GPU stream");
	if (tio_gpu_tensor_empty(gpu, 1, s->shape, u8, &s->dev))
		return gpu_error(run, "device tensor");
	switch (k) {
	case G_CALL_CPU:
	case G_CALL_CUDA:
	case G_CALL_TENSOR:
		s->shape[0] = 16;
		s->cpu_dl = (DLTensor){ .data = s->cpu_data, .device = { kDLCPU, 0 },
					.ndim = 1, .dtype = { kDLFloat, 32, 1 },
					.shape = s->shape };
		if (tio_func_new(f_dltensor, NULL, NULL, &s->fn))
			return gpu_error(run, "Function");
		break;
	case G_H2D_PIN:
	case G_D2H_PIN:
		if (tio_buffer_alloc(s->size, NULL, &s->buf) ||
		    tio_gpu_buffer_register(gpu.device_type, s->buf))
			return gpu_error(run, "registered buffer");
		memset(tio_buffer_data(s->buf), 1, s->size);
		break;
	case G_H2D_PAGE:
	case G_D2H_PAGE:
		s->mem = malloc(s->size);
		if (!s->mem)
			return bench_fail(run, ENOMEM, "pageable memory");
		memset(s->mem, 1, s->size);
		break;
	case G_ROUNDTRIP:
		if (tio_gpu_device_supports(gpu, TIO_GPU_CAP_WAIT_VALUE64) != 1 ||
		    tio_gpu_device_supports(gpu, TIO_GPU_CAP_READONLY_REGISTER) != 1) {
			tio_error_clear();
			return bench_skip(run, "GPU 0 cannot wait on a host seqno word");
		}
		/* fall through */
	case G_RECORD:
	case G_RECORD_FN:
		/* Points the GPU signals go by its write where it can. */
		if (tio_stream_create(&s->in) ||
		    tio_stream_create_flags(k == G_RECORD_FN ? 0 : TIO_STREAM_DOORBELL,
					    &s->out))
			return gpu_error(run, "tensorio streams");
		break;
	case G_QUERY:
		break;
	}
	return 0;
}

static int gpu_run(struct bench_run *run, uint64_t n)
{
	struct gstate *s = run->state;
	enum gkind k = GKIND(run->c->arg);
	uint64_t dptr = (uintptr_t)tio_tensor_dl(s->dev)->data;
	void *host = s->buf ? tio_buffer_data(s->buf) : s->mem;
	tio_any_t arg, ret;
	uint64_t i, a, b;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		switch (k) {
		case G_CALL_CPU:
		case G_CALL_CUDA:
		case G_CALL_TENSOR:
			if (k == G_CALL_CPU)
				arg = tio_any_dltensor(&s->cpu_dl);
			else if (k == G_CALL_CUDA)
				arg = tio_any_dltensor(tio_tensor_dl(s->dev));
			else
				arg = tio_any_object(s->dev);
			ret = tio_any_none();
			err = tio_func_call(s->fn, &arg, 1, &ret);
			bench_keep(ret.v_int64);
			break;
		case G_QUERY:
			err = tio_gpu_stream_query(s->cs) == 1 ? 0 : -1;
			break;
		case G_H2D_PIN:
		case G_H2D_PAGE:
			err = tio_gpu_copy_htod(s->cs, dptr, host, s->size) ||
			      tio_gpu_stream_sync(s->cs);
			break;
		case G_D2H_PIN:
		case G_D2H_PAGE:
			err = tio_gpu_copy_dtoh(s->cs, host, dptr, s->size) ||
			      tio_gpu_stream_sync(s->cs);
			break;
		case G_RECORD:
		case G_RECORD_FN:
			err = tio_gpu_stream_record_fence(s->cs, s->out, &b) ||
			      tio_fence_wait(s->out, b, -1, NULL);
			break;
		case G_ROUNDTRIP:
			err = tio_fence_emit(s->in, &a) ||
			      tio_gpu_stream_wait_fence(s->cs, s->in, a) ||
			      tio_gpu_stream_record_fence(s->cs, s->out, &b) ||
			      tio_fence_signal(s->in, a, 0) ||
			      tio_fence_wait(s->out, b, -1, NULL);
			break;
		}
	}
	if (err)
		return gpu_error(run, run->c->name);
	return 0;
}

#define GPU(n, k, sz, r, what) {					\
	.suite = "gpu", .name = n, .ref = r, .note = what,		\
	.bytes = sz, .setup = gpu_setup, .run = gpu_run,		\
	.teardown = gpu_teardown, .arg = GARG(k, sz) }

#define GPU_COPY(dir, sz, szname, size_class, kpin, kpage) {		\
	.suite = "gpu", .name = dir "/pinned/" szname, .size = size_class, \
	.bytes = sz, .note = dir " copy + stream sync, registered tensorio buffer", \
	.setup = gpu_setup, .run = gpu_run, .teardown = gpu_teardown,	\
	.arg = GARG(kpin, sz) }, {					\
	.suite = "gpu", .name = dir "/pageable/" szname, .size = size_class, \
	.ref = dir "/pinned/" szname, .bytes = sz,			\
	.note = dir " copy + stream sync, malloc memory",		\
	.setup = gpu_setup, .run = gpu_run, .teardown = gpu_teardown,	\
	.arg = GARG(kpage, sz) }

static struct bench_case cases[] = {
	GPU("call/dltensor-cpu", G_CALL_CPU, 0, NULL,
	    "FFI call, a CPU DLTensor* arg (reference)"),
	GPU("call/dltensor-cuda", G_CALL_CUDA, 0, "call/dltensor-cpu",
	    "FFI call, a kDLCUDA DLTensor* arg"),
	GPU("call/tensor-cuda", G_CALL_TENSOR, 0, "call/dltensor-cpu",
	    "FFI call, a device Tensor object arg"),
	GPU("stream/query", G_QUERY, 0, NULL, "tio_gpu_stream_query, idle stream"),
	GPU_COPY("h2d", 4096, "4K", "small", G_H2D_PIN, G_H2D_PAGE),
	GPU_COPY("h2d", 1 << 20, "1M", "medium", G_H2D_PIN, G_H2D_PAGE),
	GPU_COPY("h2d", 64 << 20, "64M", "large", G_H2D_PIN, G_H2D_PAGE),
	GPU_COPY("d2h", 4096, "4K", "small", G_D2H_PIN, G_D2H_PAGE),
	GPU_COPY("d2h", 1 << 20, "1M", "medium", G_D2H_PIN, G_D2H_PAGE),
	GPU_COPY("d2h", 64 << 20, "64M", "large", G_D2H_PIN, G_D2H_PAGE),
	GPU("fence/record", G_RECORD, 0, NULL,
	    "stream -> fence: record (the GPU writes the doorbell) + CPU wait"),
	GPU("fence/record-hostfunc", G_RECORD_FN, 0, "fence/record",
	    "stream -> fence: record (a host function signals) + CPU wait"),
	GPU("fence/roundtrip", G_ROUNDTRIP, 0, "fence/record",
	    "fence -> stream -> fence: GPU waits on the seqno word, writes back"),
};

static void __attribute__((constructor)) gpu_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
