// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A fake HIP runtime for tests without a GPU (TIO_HIP_LIBRARY points at
 * it): one device whose memory is host memory. Copies are queued on their
 * stream and run only when the stream is synchronised, queried or
 * destroyed, as a real GPU runs them later: a caller that reuses a source
 * buffer before its copies are done gets wrong data, which tests see.
 * Plain C types with the HIP ABI (enums are int, handles pointers).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

struct copy {
	struct copy *next;
	void *dst;
	const void *src;
	size_t n;
};

struct stream {
	struct copy *head, **tail;
};

static void run(struct stream *s)
{
	struct copy *c;

	while ((c = s->head)) {
		s->head = c->next;
		memcpy(c->dst, c->src, c->n);
		free(c);
	}
	s->tail = &s->head;
}

static int queue(struct stream *s, void *dst, const void *src, size_t n)
{
	struct copy *c = malloc(sizeof(*c));

	if (!c)
		return 2;	/* hipErrorOutOfMemory */
	c->next = NULL;
	c->dst = dst;
	c->src = src;
	c->n = n;
	*s->tail = c;
	s->tail = &c->next;
	return 0;
}

API const char *hipGetErrorName(int e) { return e ? "hipErrorFake" : "hipSuccess"; }
API const char *hipGetErrorString(int e) { return e ? "fake error" : "no error"; }
API int hipDriverGetVersion(int *v) { *v = 50200000; return 0; }
API int hipGetDeviceCount(int *n) { *n = 1; return 0; }
API int hipDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal ? 101 : 0; }
API int hipDeviceGetAttribute(int *v, int attr, int dev) { (void)attr; (void)dev; *v = 0; return 0; }
API int hipDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	strncpy(name, "fake HIP device", (size_t)len);
	name[len - 1] = 0;
	return 0;
}
API int hipGetDevice(int *d) { *d = 0; return 0; }
API int hipSetDevice(int d) { return d ? 101 : 0; }
/* Page-aligned, as the runtime's. */
API int hipMalloc(void **p, size_t n)
{
	/* More than a GPU has is refused before malloc (sanitizers abort on it). */
	*p = n <= (1ULL << 40) ? aligned_alloc(4096, (n + 4096) & ~(size_t)4095) : NULL;
	return *p ? 0 : 2;
}
API int hipFree(void *p) { free(p); return 0; }
API int hipHostRegister(void *p, size_t n, unsigned int f) { (void)p; (void)n; (void)f; return 0; }
API int hipHostUnregister(void *p) { (void)p; return 0; }
API int hipHostGetDevicePointer(void **d, void *h, unsigned int f) { (void)f; *d = h; return 0; }
/*
 * FAKE_HIP_FAIL_HTOD=N, FAKE_HIP_FAIL_DTOH=N: the Nth copy that way since
 * the variable was set fails (copies made while it is unset reset the
 * count).
 */
static atomic_long htod_calls, dtoh_calls;

static int fail_now(const char *var, atomic_long *calls)
{
	const char *fail = getenv(var);

	if (!fail)
		atomic_store(calls, 0);
	else if (atomic_fetch_add(calls, 1) + 1 == atol(fail))
		return 1;	/* hipErrorInvalidValue */
	return 0;
}

API int hipMemcpyHtoDAsync(void *dst, void *src, size_t n, void *st)
{
	return fail_now("FAKE_HIP_FAIL_HTOD", &htod_calls) ? 1 : queue(st, dst, src, n);
}
API int hipMemcpyDtoHAsync(void *dst, void *src, size_t n, void *st)
{
	return fail_now("FAKE_HIP_FAIL_DTOH", &dtoh_calls) ? 1 : queue(st, dst, src, n);
}
API int hipStreamCreateWithFlags(void **st, unsigned int f)
{
	struct stream *s = calloc(1, sizeof(*s));

	(void)f;
	if (!s)
		return 2;
	s->tail = &s->head;
	*st = s;
	return 0;
}
API int hipStreamDestroy(void *st) { run(st); free(st); return 0; }
API int hipStreamQuery(void *st) { run(st); return 0; }
API int hipStreamSynchronize(void *st) { run(st); return 0; }
API int hipStreamAddCallback(void *st, void (*cb)(void *, int, void *), void *arg, unsigned int f)
{
	(void)f;
	run(st);
	cb(st, 0, arg);
	return 0;
}
/* A stream write: the work before it runs first, as for a callback. */
API int hipStreamWriteValue64(void *st, void *ptr, uint64_t value, unsigned int f)
{
	(void)f;
	run(st);
	__atomic_store_n((uint64_t *)ptr, value, __ATOMIC_RELEASE);
	return 0;
}
