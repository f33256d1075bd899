// SPDX-License-Identifier: GPL-2.0
/*
 * Payload generation: handle-aware (valid, stale, foreign, wrong-kind and
 * random handles), fds (ours, the other drivers', garbage), sizes at the
 * edges, user pointers to unmapped, read-only, straddling and kernel
 * addresses, tensor descriptors and command numbers of other sizes and
 * directions. Every choice is drawn from the instruction's tape.
 */
#include <string.h>
#include <sys/ioctl.h>

#include "kfuzz.h"
#include "tio_peers.h"

/* ---- the tape ---- */

void t_init(struct tape *t, const uint8_t *p, unsigned int n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	unsigned int i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	t->p = p;
	t->n = n;
	t->i = 0;
	t->prng = h;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t t_bytes(struct tape *t, unsigned int nb)
{
	uint64_t v = 0;
	unsigned int i;

	if (t->i + nb > t->n)
		return splitmix(&t->prng);
	for (i = 0; i < nb; i++)
		v |= (uint64_t)t->p[t->i++] << (8 * i);
	return v;
}

uint64_t t_next(struct tape *t)
{
	return t_bytes(t, 8);
}

/* 0..n-1, from as few bytes as @n needs. */
uint64_t t_rnd(struct tape *t, uint64_t n)
{
	if (n <= 1)
		return 0;
	if (n <= 256)
		return t_bytes(t, 1) % n;
	if (n <= 65536)
		return t_bytes(t, 2) % n;
	return t_bytes(t, 8) % n;
}

#define R(n)	t_rnd(&k->t, (n))
#define ONE(n)	t_one_in(&k->t, (n))
#define NEXT()	t_next(&k->t)

/* ---- handles, seqnos, fds ---- */

/* A handle of @stream kind for file @fi: mostly valid, else every kind of bad. */
uint32_t pick_handle(struct worker *k, int fi, int stream)
{
	static const uint32_t odd[] = {
		0, 1, 2, 0xffffffff, 0x00ffffff, 0x01000000, 0x80000000, 0x7fffffff,
	};
	struct world *w = k->w;
	struct pool *p = &w->f[fi].pool, *q = &w->f[(fi + 1) % MAXF].pool;
	unsigned int c = R(12), r = R(256);
	uint32_t h = 0;
	int n;

	pthread_mutex_lock(&w->lock);
	switch (c) {
	default:
		n = stream ? p->nstreams : p->nbufs;
		if (n)
			h = stream ? p->streams[r % n] : p->bufs[r % n];
		break;
	case 8:		/* the other kind */
		n = stream ? p->nbufs : p->nstreams;
		if (n)
			h = stream ? p->bufs[r % n] : p->streams[r % n];
		break;
	case 9:		/* stale */
		if (p->nstale)
			h = p->stale[r % (p->nstale < NSTALE ? p->nstale : NSTALE)];
		break;
	case 10:	/* foreign: another file's */
		n = stream ? q->nstreams : q->nbufs;
		if (n)
			h = stream ? q->streams[r % n] : q->bufs[r % n];
		break;
	case 11:
		h = r & 1 ? odd[(r >> 1) % 8] : (uint32_t)NEXT();
		break;
	}
	pthread_mutex_unlock(&w->lock);
	return h ? h : 1 + r % 8;
}

uint64_t pick_seqno(struct worker *k, int fi, uint32_t stream)
{
	struct pool *p = &k->w->f[fi].pool;
	uint64_t last = 0;
	int i;

	pthread_mutex_lock(&k->w->lock);
	for (i = 0; i < p->nstreams; i++)
		if (p->streams[i] == stream)
			last = p->seq[i];
	pthread_mutex_unlock(&k->w->lock);
	switch (R(10)) {
	case 0: return 0;
	case 1: return last + 1;
	case 2: return last + 1 + R(1000);
	case 3: return ~0ULL - R(2);
	case 4: return NEXT();
	default: return last ? 1 + R(last) : 1;
	}
}

/* An fd: ours (dma-buf or sync_file), a peer's, a device file, garbage. */
int pick_fd(struct worker *k)
{
	static const int odd[] = { -1, 0, 1, 2, 1023, 65535, 0x7fffffff, -2 };
	struct world *w = k->w;
	unsigned int c = R(10), r = R(256);
	int fd = -1;

	switch (c) {
	default:
		pthread_mutex_lock(&w->lock);
		if (w->nfds)
			fd = w->fds[r % w->nfds].fd;
		pthread_mutex_unlock(&w->lock);
		if (fd >= 0)
			return fd;
		/* fall through */
	case 5: case 6: case 7:
		if (w->njunk)
			return w->junk[r % w->njunk];
		/* fall through */
	case 8:
		fd = file_fd(k, r % MAXF);
		return fd >= 0 ? fd : odd[r % 8];
	case 9:
		return odd[r % 8];
	}
}

static uint64_t pick_size(struct worker *k)
{
	uint64_t m = k->w->max_buf;

	switch (R(16)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return PAGE - 1;
	case 3: return PAGE + 1;
	case 4: return m;
	case 5: return m + 1;
	case 6: return m - 1;
	case 7: return ~0ULL - R(PAGE);
	case 8: return 1ULL << (32 + R(32));
	case 9: return NEXT();
	case 10: return R(65536);
	default: return PAGE * (1 + R(8));
	}
}

/*
 * A user pointer for @len bytes whose content, if valid, is @src (copied
 * to the scratch at @off): mostly valid memory, else read-only, unmapped,
 * straddling into a PROT_NONE page, kernel or tiny addresses.
 */
uint64_t pick_uptr(struct worker *k, const void *src, size_t len, size_t off)
{
	static const uint64_t kaddr[] = {
		0xffff888000000000ULL, 0xffffffff81000000ULL, 0xfffffffffffff000ULL,
		0xffffffffffffffffULL, 0x0000800000000000ULL, 0x00007ffffffff000ULL,
	};
	char *dst = k->scratch + off;

	if (src)
		memcpy(dst, src, len);
	switch (R(24)) {
	default:
		return (uintptr_t)dst;
	case 0: case 1:		/* the same bytes, read-only */
		return (uintptr_t)(k->scratch_ro + off);
	case 2:			/* PROT_NONE, or never mapped (below any PIE) */
		return ONE(2) ? (uintptr_t)(k->w->hole + R(8) * 8) : 0x10000 + R(64) * 8;
	case 3: {		/* the tail runs into a PROT_NONE page */
		size_t cut = len > 1 ? 1 + R(len - 1) : 1;
		char *p = k->guard - cut;

		if (src)
			memcpy(p, src, cut);
		return (uintptr_t)p;
	}
	case 4:
		return kaddr[R(6)];
	case 5:
		return ONE(2) ? 0 : 1 + R(4096);
	case 6:			/* misaligned, valid */
		if (src)
			memcpy(dst + 1, src, len);
		return (uintptr_t)(dst + 1);
	}
}

/* A tensor descriptor, mostly plausible for a buffer of @size. */
static void gen_desc(struct worker *k, struct tio_tensor_desc *d, uint64_t size)
{
	static const uint8_t bits[] = { 8, 16, 32, 64, 1, 4, 0, 3, 128, 255 };
	int i, nd;

	memset(d, 0, sizeof(*d));
	d->code = ONE(8) ? NEXT() : R(7);
	d->bits = bits[R(10)];
	d->lanes = ONE(8) ? (uint16_t)NEXT() : 1 + ONE(4);
	nd = ONE(10) ? R(65536) : R(TIO_MAX_NDIM + 1);
	d->ndim = nd;
	if (ONE(4))
		d->flags = TIO_DESC_F_STRIDED;
	else if (ONE(16))
		d->flags = NEXT();
	d->byte_offset = ONE(4) ? NEXT() >> R(64) : R(size ? size : 1);
	for (i = 0; i < TIO_MAX_NDIM; i++) {
		if (i >= nd && !ONE(20))
			continue;
		switch (R(8)) {
		case 0: d->shape[i] = -1 - (int64_t)R(2); break;
		case 1: d->shape[i] = INT64_MAX - (int64_t)R(2); break;
		case 2: d->shape[i] = 1LL << R(63); break;
		default: d->shape[i] = R(17); break;
		}
		if (d->flags & TIO_DESC_F_STRIDED)
			d->strides[i] = ONE(4) ? (int64_t)NEXT() : (int64_t)R(64) - 8;
	}
}

/* ---- commands ---- */

/* The table row of a command number (any size or direction), or g_nops. */
unsigned int op_index(unsigned int cmd)
{
	unsigned int i;

	for (i = 0; i < g_nops; i++)
		if (_IOC_TYPE(cmd) == TIO_IOC_MAGIC && _IOC_NR(cmd) == _IOC_NR(g_ops[i].cmd))
			return i;
	return g_nops;
}

/* The kernel's number for a command sent with another size or direction. */
unsigned int canon_cmd(unsigned int cmd)
{
	unsigned int i = op_index(cmd);

	return i < g_nops ? g_ops[i].cmd : cmd;
}

/* A command number: mostly a real one, else a near miss or noise. */
unsigned int pick_cmd(struct worker *k, unsigned int opi)
{
	unsigned int cmd = g_ops[opi].cmd;

	switch (R(40)) {
	case 0:		/* right number, wrong size */
		return _IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd), R(65));
	case 1:		/* wrong direction */
		return _IOC(R(4), TIO_IOC_MAGIC, _IOC_NR(cmd), _IOC_SIZE(cmd));
	case 2:		/* an older or newer caller: uapi 1.0 or 1.1
			 * STREAM_CREATE, or any structure grown by 8 bytes
			 * (zero, unless mutated) */
		if (cmd == TIO_IOC_STREAM_CREATE && !ONE(3))
			return _IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd),
				    ONE(2) ? TIO_STREAM_CREATE_SIZE_VER0 :
				    TIO_STREAM_CREATE_SIZE_VER1);
		return _IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd), _IOC_SIZE(cmd) + 8);
	case 3:		/* unused numbers */
		return _IOC(R(4), TIO_IOC_MAGIC, R(256), R(64));
	case 4:
		return (unsigned int)NEXT();
	default:
		return cmd;
	}
}

/* Waits bounded to a few ms, unless an interrupt is armed (@bounded false). */
static int64_t pick_timeout(struct worker *k, uint32_t *flags, bool bounded)
{
	int64_t t;

	switch (R(8)) {
	case 0: t = 0; break;
	case 1: t = -1; break;
	case 2: t = INT64_MIN; break;
	case 3: t = (int64_t)now_ns() + R(1000000);
		*flags |= TIO_WAIT_F_ABSOLUTE; break;
	case 4: t = INT64_MAX; break;
	case 5: t = 1000000000; break;
	case 6: t = R(1000000); break;
	default: t = R(200000); break;
	}
	if (bounded && (t < 0 || t > 3000000))
		t = R(200000);
	if (bounded)
		*flags &= ~TIO_WAIT_F_ABSOLUTE;
	return t;
}

/* Records run in io-wq or in a vector cannot all be interrupted: bound waits. */
void bound_wait(struct worker *k, unsigned int cmd, void *p)
{
	__s64 *t = NULL;
	uint32_t *flags = p;

	if (_IOC_TYPE(cmd) != TIO_IOC_MAGIC)
		return;
	if (_IOC_NR(cmd) == _IOC_NR(TIO_IOC_FENCE_WAIT))
		t = &((struct tio_fence_wait *)p)->timeout_ns;
	else if (_IOC_NR(cmd) == _IOC_NR(TIO_IOC_BUF_WAIT))
		t = &((struct tio_buf_wait *)p)->timeout_ns;
	if (!t)
		return;
	flags[1] &= ~TIO_WAIT_F_ABSOLUTE;
	if (*t < 0 || *t > 3000000)
		*t = R(200000);
}

static void gen_buffer(struct worker *k, unsigned int cmd, void *p, size_t off,
		       __u64 **dptr)
{
	switch (cmd) {
	case TIO_IOC_BUF_ALLOC: {
		struct tio_buf_alloc *a = p;

		a->size = pick_size(k);
		*dptr = &a->desc_ptr;
		break;
	}
	case TIO_IOC_BUF_PIN_USER: {
		struct tio_buf_pin *a = p;
		uint64_t pages = 1 + R(PINAREA / PAGE);
		uint64_t start = R(PINAREA / PAGE - pages + 1) * PAGE;

		switch (R(10)) {
		default:
			a->addr = (uintptr_t)(k->pin + start);
			a->size = pages * PAGE;
			break;
		case 0:
			a->addr = (uintptr_t)k->w->ro;
			a->size = PAGE * (1 + R(4));
			break;
		case 1:
			a->addr = (uintptr_t)k->w->filemap;
			a->size = PAGE;
			break;
		case 2:
			a->addr = pick_uptr(k, NULL, 0, 0) & ~(ONE(2) ? PAGE - 1 : 0);
			/* Never the scratch: writes through a mapping would land there. */
			if (a->addr >= (uintptr_t)k->w->rw && a->addr < (uintptr_t)k->w->rw_end)
				a->addr = (uintptr_t)k->pin;
			a->size = pick_size(k);
			break;
		case 3:		/* runs off our area into whatever follows */
			a->addr = (uintptr_t)(k->guard - PAGE);
			a->size = PAGE * (1 + R(3));
			break;
		}
		if (ONE(3))
			a->flags = TIO_PIN_F_READONLY;
		*dptr = &a->desc_ptr;
		break;
	}
	case TIO_IOC_BUF_INFO: {
		struct tio_buf_info *a = p;

		if (ONE(2))
			a->desc_ptr = pick_uptr(k, NULL, sizeof(struct tio_tensor_desc),
						off + 1024);
		break;
	}
	case TIO_IOC_BUF_SET_DESC: {
		struct tio_buf_desc *a = p;

		if (ONE(4))
			a->flags = TIO_DESC_CLEAR;
		else
			*dptr = &a->desc_ptr;
		break;
	}
	case TIO_IOC_BUF_EXPORT: {
		struct tio_buf_export *a = p;

		a->flags = R(4) | TIO_EXPORT_F_CLOEXEC;
		break;
	}
	case TIO_IOC_BUF_IMPORT:
		((struct tio_buf_import *)p)->fd = pick_fd(k);
		break;
	}
}

static void gen_fence(struct worker *k, unsigned int cmd, int fi, void *p,
		      bool bounded)
{
	switch (cmd) {
	case TIO_IOC_STREAM_CREATE: {
		struct tio_stream_create *a = p;

		/* A doorbell page (uapi 1.4) half the time, or any flag. */
		a->flags = ONE(2) ? TIO_STREAM_F_DOORBELL : 0;
		if (ONE(16))
			a->flags = NEXT();
		/* The grown field: default, short bounds, the module's, above. */
		switch (R(6)) {
		case 0: a->fence_timeout_ms = 1 + R(5); break;
		case 1: a->fence_timeout_ms = 1 + R(k->w->module_bound_ms + 1); break;
		case 2: a->fence_timeout_ms = TIO_FENCE_TIMEOUT_MAX_MS + R(2); break;
		case 3: a->fence_timeout_ms = (uint32_t)NEXT(); break;
		default: break;
		}
		break;
	}
	case TIO_IOC_FENCE_SIGNAL: {
		struct tio_fence_signal *a = p;

		a->seqno = pick_seqno(k, fi, a->stream);
		if (ONE(4))
			a->error = ONE(4) ? (int32_t)NEXT() : -(int32_t)(1 + R(133));
		break;
	}
	case TIO_IOC_FENCE_WAIT: {
		struct tio_fence_wait *a = p;

		a->seqno = pick_seqno(k, fi, a->stream);
		a->timeout_ns = pick_timeout(k, &a->flags, bounded);
		break;
	}
	case TIO_IOC_FENCE_EXPORT: {
		struct tio_fence_export *a = p;

		a->seqno = pick_seqno(k, fi, a->stream);
		a->flags = TIO_EXPORT_F_CLOEXEC;
		break;
	}
	case TIO_IOC_FENCE_IMPORT: {
		struct tio_fence_import *a = p;
		int fd = -1;

		if (k->w->swtl >= 0 && ONE(3)) {
			fd = tio_sw_sync_fence(k->w->swtl, 1 + R(1 << 20));
			if (fd >= 0)
				track_fd(k->w, fd, TFD_OTHER, 0);
		}
		a->fd = fd >= 0 ? fd : pick_fd(k);
		break;
	}
	case TIO_IOC_BUF_ATTACH_FENCE: {
		struct tio_buf_attach *a = p;

		a->stream = pick_handle(k, fi, 1);
		a->seqno = pick_seqno(k, fi, a->stream);
		a->flags = ONE(2) ? TIO_RESV_F_WRITE : 0;
		break;
	}
	case TIO_IOC_BUF_WAIT: {
		struct tio_buf_wait *a = p;

		a->flags = ONE(2) ? TIO_RESV_F_WRITE : 0;
		a->timeout_ns = pick_timeout(k, &a->flags, bounded);
		break;
	}
	}
}

/*
 * Does gen_payload() know @cmd's payload? A command added to the driver
 * needs its generator here (else only its handle and noise are fuzzed).
 */
bool gen_knows(unsigned int cmd)
{
	switch (cmd) {
	case TIO_IOC_INFO:
	case TIO_IOC_BUF_ALLOC: case TIO_IOC_BUF_PIN_USER: case TIO_IOC_BUF_FREE:
	case TIO_IOC_BUF_INFO: case TIO_IOC_BUF_SET_DESC: case TIO_IOC_BUF_EXPORT:
	case TIO_IOC_BUF_IMPORT: case TIO_IOC_BUF_ATTACH_FENCE: case TIO_IOC_BUF_WAIT:
	case TIO_IOC_STREAM_CREATE: case TIO_IOC_STREAM_DESTROY:
	case TIO_IOC_FENCE_EMIT: case TIO_IOC_FENCE_SIGNAL: case TIO_IOC_FENCE_WAIT:
	case TIO_IOC_FENCE_EXPORT: case TIO_IOC_FENCE_IMPORT:
	case TIO_IOC_SUBMIT: case TIO_IOC_RING_SETUP: case TIO_IOC_RING_ENTER:
		return true;
	default:
		return false;
	}
}

/*
 * Fill @p (TIO_CMD_PAYLOAD bytes) for command @opi on file @fi, its
 * pointed-to parts in the scratch at @off. @bounded: waits must not block
 * for long (nothing will interrupt them).
 */
void gen_payload(struct worker *k, unsigned int opi, int fi, void *p,
		 bool bounded, size_t off)
{
	unsigned int cmd = opi < g_nops ? g_ops[opi].cmd : 0;
	struct tio_tensor_desc desc;
	__u64 *dptr = NULL;

	memset(p, 0, TIO_CMD_PAYLOAD);
	/* Most payloads start with the handle (or stream) they act on. */
	switch (cmd) {
	case TIO_IOC_BUF_FREE: case TIO_IOC_BUF_INFO: case TIO_IOC_BUF_SET_DESC:
	case TIO_IOC_BUF_EXPORT: case TIO_IOC_BUF_ATTACH_FENCE: case TIO_IOC_BUF_WAIT:
		*(uint32_t *)p = pick_handle(k, fi, 0);
		break;
	case TIO_IOC_STREAM_DESTROY: case TIO_IOC_FENCE_EMIT: case TIO_IOC_FENCE_SIGNAL:
	case TIO_IOC_FENCE_WAIT: case TIO_IOC_FENCE_EXPORT: case TIO_IOC_FENCE_IMPORT:
		*(uint32_t *)p = pick_handle(k, fi, 1);
		break;
	}
	switch (cmd) {
	case TIO_IOC_SUBMIT: {
		struct tio_submit *a = p;

		/*
		 * Nested SUBMIT: refused inside vectors; a small one here, of
		 * zeroed records (refused), so that none creates an fd the
		 * program would not learn about.
		 */
		memset(k->scratch + off + 2048, 0, 3 * sizeof(struct tio_cmd));
		a->count = R(3);
		a->cmds_ptr = pick_uptr(k, NULL, 64, off + 2048);
		break;
	}
	case TIO_IOC_RING_SETUP: {
		static const uint32_t sizes[] = { 0, 1, 3, 8, 64, 4096, 8192 };

		((struct tio_ring_setup *)p)->entries = ONE(8) ? (uint32_t)NEXT() : sizes[R(7)];
		break;
	}
	case TIO_IOC_RING_ENTER:
		((struct tio_ring_enter *)p)->flags = ONE(2) ? TIO_SUBMIT_F_CONTINUE : 0;
		break;
	case 0:		/* a command the generator does not know: noise */
		break;
	default:
		gen_buffer(k, cmd, p, off, &dptr);
		gen_fence(k, cmd, fi, p, bounded);
		break;
	}
	if (dptr && !ONE(3)) {
		gen_desc(k, &desc, 4 * PAGE);
		*dptr = pick_uptr(k, &desc, sizeof(desc), off + 1024);
	}
	/* Flags and padding: sometimes any bits at all. */
	if (ONE(24))
		((uint32_t *)p)[1] ^= 1U << R(32);
}

/* Flip, set or clear a few bytes of a payload. */
void mutate(struct worker *k, void *p, size_t len)
{
	uint8_t *b = p;
	int n = 1 + R(4);

	while (n--) {
		size_t i = R(len);

		switch (R(4)) {
		case 0: b[i] ^= 1 << R(8); break;
		case 1: b[i] = NEXT(); break;
		case 2: b[i] = 0; break;
		case 3: b[i] = 0xff; break;
		}
	}
}
