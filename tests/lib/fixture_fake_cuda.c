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
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	OUT_OF_MEMORY = 2,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201,
	INVALID_HANDLE = 400,
	NOT_READY = 600,
	LAUNCH_TIMEOUT = 702,
	HOST_MEMORY_ALREADY_REGISTERED = 712,
	HOST_MEMORY_NOT_REGISTERED = 713,
	NOT_PERMITTED = 800,
	NOT_SUPPORTED = 801,
};

/* Device attributes the driver answers (cuda.h's numbers). */
enum {
	ATTR_MEMOPS_V1 = 92,
	ATTR_MEMOPS64_V1 = 93,
	ATTR_RO_REGISTER = 113,
	ATTR_MEMOPS64 = 122,
	ATTR_DMA_BUF = 124,
};

#define REG_PORTABLE	0x1
#define REG_DEVICEMAP	0x2
#define REG_IOMEMORY	0x4
#define REG_READ_ONLY	0x8
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

enum op_kind { OP_COPY, OP_HOST_FUNC, OP_WRITE, OP_WAIT };

struct op {
	struct op *next;
	enum op_kind kind;
	uint64_t seq;
	void *dst;
	const void *src;
	size_t n;
	void *staged;			/* a pageable source, read at enqueue */
	void (*fn)(void *);
	void *arg;
	volatile uint64_t *word;
	uint64_t value;
	unsigned int flags;
};

struct stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* work to run, or run work */
	struct op *head, **tail;
	uint64_t queued;		/* ops enqueued */
	uint64_t target;		/* run ops up to this one */
	uint64_t done;			/* ops run */
	int blocked;			/* waiting for a word */
	int quit;
	int err;			/* a stream wait that gave up */
	struct ctx *ctx;
	pthread_t thread;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *allocs, *regs;
static long live_streams;
static uint64_t alloc_bytes;
static long htod_calls, dtoh_calls, alloc_calls;
static int initialised, ndev = 1;
static struct ctx ctxs[MAX_DEV];

static __thread struct ctx *stack[16];
static __thread int depth;
static __thread int in_host_func;

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? atol(v) : dflt;
}

/* Whether the Nth call since @name was set is now; @count under lock. */
static int nth_call(const char *name, long *count)
{
	long n = env_long(name, 0);
	int hit;

	pthread_mutex_lock(&lock);
	if (!n)
		*count = 0;
	hit = n && ++*count == n;
	pthread_mutex_unlock(&lock);
	return hit;
}

/* Every call but the error and version ones starts here. */
static CUresult ready(int need_ctx)
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
static int reg_flags(const void *p, size_t n)
{
	struct range *r;
	int f;

	pthread_mutex_lock(&lock);
	r = range_find(regs, (uintptr_t)p, n);
	f = r ? (int)r->flags : -1;
	pthread_mutex_unlock(&lock);
	return f;
}

static int is_device(CUdeviceptr p, size_t n)
{
	int ok;

	pthread_mutex_lock(&lock);
	ok = range_find(allocs, (uintptr_t)p, n) != NULL;
	pthread_mutex_unlock(&lock);
	return ok;
}

static int memops(void)
{
	return !env_long("FAKE_CUDA_NO_MEMOPS", 0);
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
	pthread_mutex_lock(&lock);
	if (!initialised) {
		ndev = (int)env_long("FAKE_CUDA_DEVICES", 1);
		if (ndev < 0 || ndev > MAX_DEV)
			ndev = 1;
		for (i = 0; i < MAX_DEV; i++)
			ctxs[i].dev = i;
		__atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
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
	pthread_mutex_lock(&lock);
	if (limit && (n > limit || alloc_bytes > limit - n)) {
		pthread_mutex_unlock(&lock);
		return OUT_OF_MEMORY;
	}
	/* More than a GPU has: refused before malloc (sanitizers abort on it). */
	m = n <= MAX_ALLOC ? aligned_alloc(4096, (n + 4095) & ~(size_t)4095) : NULL;
	if (!m || range_add(&allocs, (uintptr_t)m, n, 0)) {
		pthread_mutex_unlock(&lock);
		free(m);
		return OUT_OF_MEMORY;
	}
	alloc_bytes += n;
	pthread_mutex_unlock(&lock);
	*p = (uintptr_t)m;
	return SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUresult r = ready(1);
	struct range *a;

	if (r)
		return r;
	pthread_mutex_lock(&lock);
	a = range_take(&allocs, (uintptr_t)p);
	if (a)
		alloc_bytes -= a->size;
	pthread_mutex_unlock(&lock);
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
	pthread_mutex_lock(&lock);
	if (range_overlaps(regs, (uintptr_t)p, n))
		r = HOST_MEMORY_ALREADY_REGISTERED;
	else if (range_add(&regs, (uintptr_t)p, n, flags))
		r = OUT_OF_MEMORY;
	pthread_mutex_unlock(&lock);
	return r;
}

API CUresult cuMemHostUnregister(void *p)
{
	CUresult r = ready(1);
	struct range *g;

	if (r)
		return r;
	pthread_mutex_lock(&lock);
	g = range_take(&regs, (uintptr_t)p);
	pthread_mutex_unlock(&lock);
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

/* Streams: the "GPU" thread of each. */

static long timeout_ms(void)
{
	return env_long("FAKE_CUDA_TIMEOUT_MS", 30000);
}

static void deadline(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static int wait_met(const struct op *o)
{
	uint64_t v = __atomic_load_n(o->word, __ATOMIC_ACQUIRE);

	switch (o->flags & 0x3) {
	case 0:	return (int64_t)(v - o->value) >= 0;	/* GEQ */
	case 1:	return v == o->value;			/* EQ */
	case 2:	return (v & o->value) != 0;		/* AND */
	default: return ~(v | o->value) != 0;		/* NOR */
	}
}

/* Hold the stream until the word satisfies @o; 0, or -1 on timeout. */
static int op_wait(struct stream *s, const struct op *o)
{
	struct timespec give_up, now;
	long ns = 1000;

	deadline(&give_up, timeout_ms());
	s->blocked = 1;
	pthread_cond_broadcast(&s->cv);
	while (!wait_met(o) && !s->quit) {
		struct timespec nap = { 0, ns };

		pthread_mutex_unlock(&s->mu);
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&s->mu);
		ns = ns < 200000 ? ns * 2 : ns;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > give_up.tv_sec ||
		    (now.tv_sec == give_up.tv_sec && now.tv_nsec > give_up.tv_nsec))
			break;
	}
	s->blocked = 0;
	return wait_met(o) ? 0 : -1;
}

/* Run @o; under s->mu, which is dropped around copies and host functions. */
static void op_run(struct stream *s, struct op *o)
{
	switch (o->kind) {
	case OP_COPY:
		pthread_mutex_unlock(&s->mu);
		memcpy(o->dst, o->staged ? o->staged : o->src, o->n);
		pthread_mutex_lock(&s->mu);
		break;
	case OP_HOST_FUNC:
		pthread_mutex_unlock(&s->mu);
		in_host_func = 1;
		o->fn(o->arg);
		in_host_func = 0;
		pthread_mutex_lock(&s->mu);
		break;
	case OP_WRITE:
		__atomic_store_n(o->word, o->value, __ATOMIC_RELEASE);
		break;
	case OP_WAIT:
		if (op_wait(s, o) && !s->err)
			s->err = LAUNCH_TIMEOUT;
		break;
	}
}

static void *gpu_thread(void *arg)
{
	struct stream *s = arg;
	struct op *o;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->quit && s->done == s->target)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->done == s->target)
			break;
		o = s->head;
		op_run(s, o);
		s->head = o->next;
		if (!s->head)
			s->tail = &s->head;
		s->done++;
		free(o->staged);
		free(o);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Ask the stream's GPU to run everything queued (under s->mu). */
static void kick(struct stream *s)
{
	s->target = s->queued;
	pthread_cond_broadcast(&s->cv);
}

/*
 * Run the stream up to op @upto and wait for it, or give up after the
 * timeout; under s->mu. Returns the stream's status.
 */
static CUresult drain(struct stream *s, uint64_t upto)
{
	struct timespec give_up;
	CUresult r;

	deadline(&give_up, timeout_ms());
	if (s->target < upto) {
		s->target = upto;
		pthread_cond_broadcast(&s->cv);
	}
	while (s->done < upto)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &give_up) == ETIMEDOUT)
			return LAUNCH_TIMEOUT;
	r = s->err;
	s->err = 0;
	return r;
}

static CUresult stream_of(void *h, struct stream **out)
{
	struct stream *s = h;
	CUresult r = ready(1);

	if (r)
		return r;
	if (!s)
		return INVALID_HANDLE;	/* the legacy NULL stream is not modelled */
	if (s->ctx != stack[depth - 1])
		return INVALID_CONTEXT;
	*out = s;
	return SUCCESS;
}

/* Queue @o on @s (taking it); @now asks for it to run without a sync. */
static CUresult enqueue(struct stream *s, struct op *o, int now)
{
	pthread_mutex_lock(&s->mu);
	o->seq = ++s->queued;
	o->next = NULL;
	*s->tail = o;
	s->tail = &o->next;
	if (now)
		kick(s);
	pthread_mutex_unlock(&s->mu);
	return SUCCESS;
}

static void stream_init(struct stream *s)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* deadline()'s clock */
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
}

API CUresult cuStreamCreate(void **out, unsigned int flags)
{
	CUresult r = ready(1);
	struct stream *s;

	if (r)
		return r;
	if (!out || flags > 1)
		return INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return OUT_OF_MEMORY;
	stream_init(s);
	s->tail = &s->head;
	s->ctx = stack[depth - 1];
	if (pthread_create(&s->thread, NULL, gpu_thread, s)) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&lock);
	live_streams++;
	pthread_mutex_unlock(&lock);
	*out = s;
	return SUCCESS;
}

API CUresult cuStreamDestroy_v2(void *h)
{
	struct stream *s;
	struct op *o;
	CUresult r = stream_of(h, &s);

	if (r)
		return r;
	pthread_mutex_lock(&s->mu);
	/* As on a GPU, queued work still runs; a stuck wait gives up. */
	drain(s, s->queued);
	s->quit = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	while ((o = s->head)) {
		s->head = o->next;
		free(o->staged);
		free(o);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	pthread_mutex_lock(&lock);
	live_streams--;
	pthread_mutex_unlock(&lock);
	return SUCCESS;
}

API CUresult cuStreamSynchronize(void *h)
{
	struct stream *s;
	CUresult r = stream_of(h, &s);

	if (r)
		return r;
	pthread_mutex_lock(&s->mu);
	r = drain(s, s->queued);
	pthread_mutex_unlock(&s->mu);
	return r;
}

/*
 * Done, or not ready: the stream runs what it can first, and the answer
 * comes once it is idle or held by a wait.
 */
API CUresult cuStreamQuery(void *h)
{
	struct timespec give_up;
	struct stream *s;
	CUresult r = stream_of(h, &s);

	if (r)
		return r;
	deadline(&give_up, timeout_ms());
	pthread_mutex_lock(&s->mu);
	kick(s);
	while (s->done < s->queued && !s->blocked)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &give_up) == ETIMEDOUT)
			break;
	r = s->done < s->queued ? NOT_READY : s->err;
	if (r != NOT_READY)
		s->err = 0;
	pthread_mutex_unlock(&s->mu);
	return r;
}

static CUresult copy(void *h, void *dst, const void *src, size_t n, int to_device)
{
	struct stream *s;
	struct op *o;
	CUresult r = stream_of(h, &s);
	int pageable;

	if (r)
		return r;
	if (!dst || !src)
		return INVALID_VALUE;
	if (!is_device((uintptr_t)(to_device ? dst : src), n))
		return INVALID_VALUE;
	if (!to_device && reg_flags(dst, n) >= 0 && (reg_flags(dst, n) & REG_READ_ONLY))
		return INVALID_VALUE;
	if (nth_call(to_device ? "FAKE_CUDA_FAIL_HTOD" : "FAKE_CUDA_FAIL_DTOH",
		     to_device ? &htod_calls : &dtoh_calls))
		return INVALID_VALUE;
	pageable = reg_flags(to_device ? src : dst, n) < 0;
	o = calloc(1, sizeof(*o));
	if (!o)
		return OUT_OF_MEMORY;
	o->kind = OP_COPY;
	o->dst = dst;
	o->src = src;
	o->n = n;
	if (to_device && pageable && n) {
		o->staged = malloc(n);
		if (!o->staged) {
			free(o);
			return OUT_OF_MEMORY;
		}
		memcpy(o->staged, src, n);
	}
	enqueue(s, o, 0);
	if (to_device || !pageable)
		return SUCCESS;
	/* Into pageable memory: done when the call returns. */
	pthread_mutex_lock(&s->mu);
	r = drain(s, s->queued);
	pthread_mutex_unlock(&s->mu);
	return r;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *h)
{
	return copy(h, (void *)(uintptr_t)dst, src, n, 1);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *h)
{
	return copy(h, dst, (const void *)(uintptr_t)src, n, 0);
}

API CUresult cuLaunchHostFunc(void *h, void (*fn)(void *), void *arg)
{
	struct stream *s;
	struct op *o;
	CUresult r = stream_of(h, &s);

	if (r)
		return r;
	if (!fn)
		return INVALID_VALUE;
	o = calloc(1, sizeof(*o));
	if (!o)
		return OUT_OF_MEMORY;
	o->kind = OP_HOST_FUNC;
	o->fn = fn;
	o->arg = arg;
	return enqueue(s, o, 1);
}

/* A memory operation on device-mapped host memory (writes: not read-only). */
static CUresult memop(void *h, CUdeviceptr addr, uint64_t value, unsigned int flags,
		      enum op_kind kind)
{
	struct stream *s;
	struct op *o;
	CUresult r = stream_of(h, &s);
	int f;

	if (r)
		return r;
	if (!memops())
		return NOT_SUPPORTED;
	f = reg_flags((void *)(uintptr_t)addr, sizeof(uint64_t));
	if ((addr & 7) || f < 0 || !(f & REG_DEVICEMAP) ||
	    (kind == OP_WRITE && ((f & REG_READ_ONLY) || flags > 1)) ||
	    (kind == OP_WAIT && (flags & ~(3u | 1u << 30))))
		return INVALID_VALUE;
	o = calloc(1, sizeof(*o));
	if (!o)
		return OUT_OF_MEMORY;
	o->kind = kind;
	o->word = (volatile uint64_t *)(uintptr_t)addr;
	o->value = value;
	o->flags = flags;
	return enqueue(s, o, kind == OP_WRITE);
}

API CUresult cuStreamWriteValue64_v2(void *h, CUdeviceptr addr, uint64_t value,
				     unsigned int flags)
{
	return memop(h, addr, value, flags, OP_WRITE);
}

API CUresult cuStreamWaitValue64_v2(void *h, CUdeviceptr addr, uint64_t value,
				    unsigned int flags)
{
	return memop(h, addr, value, flags, OP_WAIT);
}

/* For tests: what is alive in the driver. */
API void fakeCudaLive(long *allocations, long *registrations, long *streams)
{
	struct range *r;

	pthread_mutex_lock(&lock);
	*allocations = 0;
	for (r = allocs; r; r = r->next)
		++*allocations;
	*registrations = 0;
	for (r = regs; r; r = r->next)
		++*registrations;
	*streams = live_streams;
	pthread_mutex_unlock(&lock);
}
