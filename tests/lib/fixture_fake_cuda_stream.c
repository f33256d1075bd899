// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fake CUDA driver's streams (fixture_fake_cuda.c says what the
 * driver is): each has a thread, its "GPU", that runs the stream's work
 * in order when something needs it done; copies, host functions and
 * stream memory operations are queued on it.
 */
#include "fixture_fake_cuda.h"

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

static long htod_calls, dtoh_calls;

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
	if (s->ctx != current_ctx())
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
	s->ctx = current_ctx();
	if (pthread_create(&s->thread, NULL, gpu_thread, s)) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&fake_lock);
	live_streams++;
	pthread_mutex_unlock(&fake_lock);
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
	pthread_mutex_lock(&fake_lock);
	live_streams--;
	pthread_mutex_unlock(&fake_lock);
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
