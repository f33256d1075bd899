// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A fake CUDA driver for tests without a GPU (TIO_CUDA_LIBRARY points at
 * it): the cu* entry points lib/src/gpu/cuda.c resolves, under the names
 * the CUDA header maps them to (cuMemAlloc_v2, ...), with plain C types of
 * the driver API's ABI (CUresult and CUdevice are int, handles pointers,
 * CUdeviceptr 64 bits). Device memory is host memory.
 *
 * Each stream has a thread, its "GPU", that runs the stream's work in
 * order, but only when something needs it done: a host function or a
 * memory write is queued (they are seen from the host), or the stream is
 * synchronised, queried or destroyed. Until then copies stay queued, so a
 * caller that reuses a registered source buffer, or reads a registered
 * destination, before the copy ran gets wrong data, which tests see. As
 * on a GPU, a copy from pageable memory reads it when enqueued and a copy
 * into pageable memory is done when the call returns. cuStreamWaitValue64
 * holds the stream until the word satisfies it; cuStreamWriteValue64
 * stores the value (release) once the work before it is done.
 *
 * The driver checks what a GPU would fault on or refuse: calls without a
 * current context, streams used in another context, copies outside device
 * allocations, memory operations on host memory not registered
 * device-mapped, writes into memory registered read-only, and any CUDA
 * call from a host function (CUDA_ERROR_NOT_PERMITTED).
 *
 * Environment (read at each call, so a test sets it when it wants):
 *   FAKE_CUDA_DEVICES=N       devices (default 1, at most 8; read by cuInit)
 *   FAKE_CUDA_FAIL_HTOD=N     the Nth host-to-device copy enqueued since the
 *   FAKE_CUDA_FAIL_DTOH=N     variable was set fails (CUDA_ERROR_INVALID_VALUE)
 *   FAKE_CUDA_FAIL_ALLOC=N    the Nth cuMemAlloc fails (out of memory)
 *   FAKE_CUDA_MEM_LIMIT=BYTES cuMemAlloc beyond BYTES live fails (out of memory)
 *   FAKE_CUDA_NO_MEMOPS=1     no stream memory operations: the attributes
 *                             say 0 and the calls fail CUDA_ERROR_NOT_SUPPORTED
 *   FAKE_CUDA_NO_RO_REGISTER=1  no read-only host registration
 *   FAKE_CUDA_TIMEOUT_MS=N    a synchronisation or a stream wait gives up
 *                             after N ms (default 30000) with
 *                             CUDA_ERROR_LAUNCH_TIMEOUT, so that a test
 *                             bug fails instead of hanging
 * fakeCudaLive() counts what is alive (allocations, registrations,
 * streams), for tests that check nothing is left behind.
 *
 * This file: errors, devices, contexts, memory; the streams are in
 * fixture_fake_cuda_stream.c.
 */
#include "fixture_fake_cuda.h"

/* Device attributes the driver answers (cuda.h's numbers). */
enum {
	ATTR_MEMOPS_V1 = 92,
	ATTR_MEMOPS64_V1 = 93,
	ATTR_RO_REGISTER = 113,
	ATTR_MEMOPS64 = 122,
	ATTR_DMA_BUF = 124,
};

#define MAX_DEV		8
#define MAX_ALLOC	(1ULL << 40)	/* bytes of device memory at most */

static const struct { int code; const char *name, *text; } errors[] = {
	{ SUCCESS, "CUDA_SUCCESS", "no error" },
	{ INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated" },
	{ HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	  "part or all of the requested memory range is already mapped" },
	{ HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	  "pointer does not correspond to a registered memory region" },
	{ NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted" },
	{ NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
};

/* Device allocations and host registrations: ranges in one list each. */
struct range {
	struct range *next;
	uintptr_t start;
	size_t size;
	unsigned int flags;
};

struct ctx {
	int dev;
};

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *allocs, *regs;
long live_streams;
static uint64_t alloc_bytes;
static long alloc_calls;
static int initialised, ndev = 1;
static struct ctx ctxs[MAX_DEV];

static __thread struct ctx *stack[16];
static __thread int depth;
__thread int in_host_func;

long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? atol(v) : dflt;
}

/* Whether the Nth call since @name was set is now; @count under fake_lock. */
int nth_call(const char *name, long *count)
{
	long n = env_long(name, 0);
	int hit;

	pthread_mutex_lock(&fake_lock);
	if (!n)
		*count = 0;
	hit = n && ++*count == n;
	pthread_mutex_unlock(&fake_lock);
	return hit;
}

/* Every call but the error and version ones starts here. */
CUresult ready(int need_ctx)
{
	if (in_host_func)
		return NOT_PERMITTED;
	if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE))
		return NOT_INITIALIZED;
	if (need_ctx && !depth)
		return INVALID_CONTEXT;
	return SUCCESS;
}

static struct range *range_find(struct range *list, uintptr_t p, size_t n)
{
	for (; list; list = list->next)
		if (p >= list->start && p - list->start <= list->size &&
		    n <= list->size - (p - list->start))
			return list;
	return NULL;
}

static int range_overlaps(struct range *list, uintptr_t p, size_t n)
{
	for (; list; list = list->next)
		if (p < list->start + list->size && list->start < p + n)
			return 1;
	return 0;
}

static int range_add(struct range **list, uintptr_t p, size_t n, unsigned int flags)
{
	struct range *r = malloc(sizeof(*r));

	if (!r)
		return -1;
	r->start = p;
	r->size = n;
	r->flags = flags;
	r->next = *list;
	*list = r;
	return 0;
}

/* Unlink the range starting at @p; NULL when there is none. */
static struct range *range_take(struct range **list, uintptr_t p)
{
	struct range *r;

	for (; (r = *list); list = &r->next) {
		if (r->start == p) {
			*list = r->next;
			return r;
		}
	}
	return NULL;
}

/* The registration flags of host range [p, p + n), or -1 if unregistered. */
int reg_flags(const void *p, size_t n)
{
	struct range *r;
	int f;

	pthread_mutex_lock(&fake_lock);
	r = range_find(regs, (uintptr_t)p, n);
	f = r ? (int)r->flags : -1;
	pthread_mutex_unlock(&fake_lock);
	return f;
}

int is_device(CUdeviceptr p, size_t n)
{
	int ok;

	pthread_mutex_lock(&fake_lock);
	ok = range_find(allocs, (uintptr_t)p, n) != NULL;
	pthread_mutex_unlock(&fake_lock);
	return ok;
}

int memops(void)
{
	return !env_long("FAKE_CUDA_NO_MEMOPS", 0);
}

/* The calling thread's current context (ready(1) said there is one). */
struct ctx *current_ctx(void)
{
	return stack[depth - 1];
}

/* Errors, versions, devices. */

/* The name (@text 0) or text of error @e, or NULL. */
static const char *err_str(CUresult e, int text)
{
	size_t i;

	for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == e)
			return text ? errors[i].text : errors[i].name;
	return NULL;
}

API CUresult cuGetErrorName(CUresult e, const char **s)
{
	*s = err_str(e, 0);
	return *s ? SUCCESS : INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult e, const char **s)
{
	*s = err_str(e, 1);
	return *s ? SUCCESS : INVALID_VALUE;
}

API CUresult cuInit(unsigned int flags)
{
	int i;

	if (flags)
		return INVALID_VALUE;
	pthread_mutex_lock(&fake_lock);
	if (!initialised) {
		ndev = (int)env_long("FAKE_CUDA_DEVICES", 1);
		if (ndev < 0 || ndev > MAX_DEV)
			ndev = 1;
		for (i = 0; i < MAX_DEV; i++)
			ctxs[i].dev = i;
		__atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fake_lock);
	return ndev ? SUCCESS : NO_DEVICE;
}

API CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return INVALID_VALUE;
	*v = 13000;
	return SUCCESS;
}

API CUresult cuDeviceGetCount(int *n)
{
	CUresult r = ready(0);

	if (r)
		return r;
	*n = ndev;
	return SUCCESS;
}

API CUresult cuDeviceGet(int *d, int ordinal)
{
	CUresult r = ready(0);

	if (r)
		return r;
	if (ordinal < 0 || ordinal >= ndev)
		return INVALID_DEVICE;
	*d = ordinal;
	return SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	CUresult r = ready(0);

	if (r)
		return r;
	if (dev < 0 || dev >= ndev)
		return INVALID_DEVICE;
	switch (attr) {
	case ATTR_MEMOPS_V1:
	case ATTR_MEMOPS64_V1:
	case ATTR_MEMOPS64:
		*v = memops();
		break;
	case ATTR_RO_REGISTER:
		*v = !env_long("FAKE_CUDA_NO_RO_REGISTER", 0);
		break;
	case ATTR_DMA_BUF:	/* no dma-buf exporter behind this memory */
	default:
		*v = 0;
	}
	return SUCCESS;
}

API CUresult cuDeviceGetName(char *name, int len, int dev)
{
	CUresult r = ready(0);

	if (r)
		return r;
	if (dev < 0 || dev >= ndev)
		return INVALID_DEVICE;
	if (!name || len <= 0)
		return INVALID_VALUE;
	snprintf(name, (size_t)len, "fake CUDA device %d", dev);
	return SUCCESS;
}

/* Contexts: one primary context per device, a stack per thread. */

API CUresult cuDevicePrimaryCtxRetain(struct ctx **c, int dev)
{
	CUresult r = ready(0);

	if (r)
		return r;
	if (dev < 0 || dev >= ndev)
		return INVALID_DEVICE;
	*c = &ctxs[dev];
	return SUCCESS;
}

API CUresult cuCtxPushCurrent_v2(struct ctx *c)
{
	CUresult r = ready(0);

	if (r)
		return r;
	if (!c || c < ctxs || c >= ctxs + ndev)
		return INVALID_CONTEXT;
	if (depth == (int)(sizeof(stack) / sizeof(stack[0])))
		return OUT_OF_MEMORY;
	stack[depth++] = c;
	return SUCCESS;
}

API CUresult cuCtxPopCurrent_v2(struct ctx **c)
{
	CUresult r = ready(1);

	if (r)
		return r;
	depth--;
	if (c)
		*c = stack[depth];
	return SUCCESS;
}

/* Memory. */

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	uint64_t limit = (uint64_t)env_long("FAKE_CUDA_MEM_LIMIT", 0);
	CUresult r = ready(1);
	void *m;

	if (r)
		return r;
	if (!p || !n)
		return INVALID_VALUE;
	if (nth_call("FAKE_CUDA_FAIL_ALLOC", &alloc_calls))
		return OUT_OF_MEMORY;
	pthread_mutex_lock(&fake_lock);
	if (limit && (n > limit || alloc_bytes > limit - n)) {
		pthread_mutex_unlock(&fake_lock);
		return OUT_OF_MEMORY;
	}
	/* More than a GPU has: refused before malloc (sanitizers abort on it). */
	m = n <= MAX_ALLOC ? aligned_alloc(4096, (n + 4095) & ~(size_t)4095) : NULL;
	if (!m || range_add(&allocs, (uintptr_t)m, n, 0)) {
		pthread_mutex_unlock(&fake_lock);
		free(m);
		return OUT_OF_MEMORY;
	}
	alloc_bytes += n;
	pthread_mutex_unlock(&fake_lock);
	*p = (uintptr_t)m;
	return SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUresult r = ready(1);
	struct range *a;

	if (r)
		return r;
	pthread_mutex_lock(&fake_lock);
	a = range_take(&allocs, (uintptr_t)p);
	if (a)
		alloc_bytes -= a->size;
	pthread_mutex_unlock(&fake_lock);
	if (!a)
		return INVALID_VALUE;
	free((void *)a->start);
	free(a);
	return SUCCESS;
}

API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
	CUresult r = ready(1);

	if (r)
		return r;
	if (!p || !n || (flags & ~(REG_PORTABLE | REG_DEVICEMAP | REG_IOMEMORY | REG_READ_ONLY)))
		return INVALID_VALUE;
	if ((flags & REG_READ_ONLY) && env_long("FAKE_CUDA_NO_RO_REGISTER", 0))
		return NOT_SUPPORTED;
	pthread_mutex_lock(&fake_lock);
	if (range_overlaps(regs, (uintptr_t)p, n))
		r = HOST_MEMORY_ALREADY_REGISTERED;
	else if (range_add(&regs, (uintptr_t)p, n, flags))
		r = OUT_OF_MEMORY;
	pthread_mutex_unlock(&fake_lock);
	return r;
}

API CUresult cuMemHostUnregister(void *p)
{
	CUresult r = ready(1);
	struct range *g;

	if (r)
		return r;
	pthread_mutex_lock(&fake_lock);
	g = range_take(&regs, (uintptr_t)p);
	pthread_mutex_unlock(&fake_lock);
	free(g);
	return g ? SUCCESS : HOST_MEMORY_NOT_REGISTERED;
}

API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
	CUresult r = ready(1);
	int f;

	if (r)
		return r;
	if (!d || flags)
		return INVALID_VALUE;
	f = reg_flags(p, 1);
	if (f < 0 || !(f & REG_DEVICEMAP))
		return INVALID_VALUE;
	*d = (uintptr_t)p;
	return SUCCESS;
}

API CUresult cuMemGetHandleForAddressRange(int *fd, CUdeviceptr p, size_t n, int type,
					   unsigned long long flags)
{
	CUresult r = ready(1);

	(void)fd; (void)p; (void)n; (void)type; (void)flags;
	return r ? r : NOT_SUPPORTED;
}

/* For tests: what is alive in the driver. */
API void fakeCudaLive(long *allocations, long *registrations, long *streams)
{
	struct range *r;

	pthread_mutex_lock(&fake_lock);
	*allocations = 0;
	for (r = allocs; r; r = r->next)
		++*allocations;
	*registrations = 0;
	for (r = regs; r; r = r->next)
		++*registrations;
	*streams = live_streams;
	pthread_mutex_unlock(&fake_lock);
}
