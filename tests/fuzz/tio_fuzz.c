// SPDX-License-Identifier: GPL-2.0
/*
 * tio_fuzz: fuzzer for the /dev/tensorio interface, run in the debug VM.
 *
 * Random and mutated command records go in through all three forms:
 * ioctl(), IORING_OP_URING_CMD (cmd_op = the ioctl number, sqe->cmd[0..7]
 * = the payload pointer, or on the SQE128 ring the payload inline as
 * struct tio_uring_inline), TIO_IOC_SUBMIT vectors (by ioctl or uring) and
 * each file's command ring (records written in place, tail and sometimes
 * head set wrongly, TIO_IOC_RING_ENTER by ioctl or uring; RING_SETUP with
 * good and bad sizes).
 * Generation is handle-aware: valid, stale (freed), foreign (another
 * file's), wrong-kind and random handles; valid and garbage fds (our
 * dma-bufs and sync_files, udmabuf, dma-heap and vgem dma-bufs, sw_sync
 * fences, /dev/null, a regular file, a pipe, eventfd, memfd, the device
 * itself, closed and absurd numbers); sizes at the edges; user pointers
 * to unmapped, read-only, straddling and kernel addresses. mmap() of the
 * device and of dma-bufs, dma-buf and sync_file ioctls, and fd closes are
 * mixed in. Several threads in each of two processes, sharing one file
 * (inherited over fork) and each with a file of its own.
 *
 * Every thread's choices come from its own generator seeded from the
 * printed seed, so a run is reproduced by "-s SEED" up to scheduling.
 * Blocking waits are interrupted by a watchdog signal after 20 ms.
 *
 * The fuzzer only fails on its own errors (a crashed process): the kernel
 * side is judged by the VM's init (KASAN, lockdep, WARN, kmemleak, rmmod).
 *
 *   tio_fuzz [-s SEED] [-d SECONDS] [-t THREADS] [-p PROCS] [-n ITERS] [-A]
 *   -A never sets IOSQE_ASYNC (by default some uring commands run in io-wq)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include "tio_peers.h"

#define PAGE		4096UL
#define MAX_THREADS	8
#define MAX_PROCS	4
#define NBUFS		48
#define NSTREAMS	24
#define NSTALE		64
#define NFDS		48
#define NJUNK		24
#define NMAPS		4
/* Per thread: a scratch area for payloads and SUBMIT vectors, a pin area. */
#define SCRATCH		(192 * 1024UL)
#define PINAREA		(96 * 1024UL)
#define PER_THREAD	(SCRATCH + PINAREA)
#define NWAITSLOTS	32
#define MAX_SUBMIT	1024	/* TIO_IOC_INFO max_submit */
/* Scratch layout: payload at 0 (its descriptor at +1024, a nested vector
 * at +2048), the descriptors of SUBMIT records from REC_OFF, the vector
 * from VEC_OFF, parked waits' payloads in 1 KiB slots from WAIT_OFF.
 */
#define REC_OFF		8192
#define VEC_OFF		32768
#define WAIT_OFF	(128 * 1024)

/* ---- the deterministic generator (splitmix64) ---- */

static inline uint64_t rnext(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rnd(uint64_t *s, uint64_t n)
{
	return n ? rnext(s) % n : 0;
}

static inline bool one_in(uint64_t *s, unsigned int n)
{
	return rnd(s, n) == 0;
}

/* ---- process-wide state ---- */

struct pool {
	pthread_mutex_t lock;
	uint32_t bufs[NBUFS];
	int nbufs;
	uint32_t streams[NSTREAMS];
	uint64_t seq[NSTREAMS];
	int nstreams;
	uint32_t stale[NSTALE];
	unsigned int nstale;
};

struct stats {
	_Atomic uint64_t iters, ioctls, urings, submits, records, mmaps, other;
	_Atomic uint64_t enters;
	_Atomic uint64_t ok, fails, signals, parked;
};

struct world {
	int dev[2];		/* [0] shared by the processes, [1] our own */
	struct pool pool[2];
	pthread_mutex_t fdlock;
	int fds[NFDS];		/* dma-bufs and sync_files we may close */
	int nfds;
	int junk[NJUNK];	/* never closed while running */
	int njunk;
	int swtl;		/* sw_sync timeline, or -1 */
	char *rw, *ro;		/* one memfd mapped twice */
	char *guard;		/* first byte after @rw: PROT_NONE */
	char *hole;		/* unmapped */
	char *filemap;		/* a MAP_SHARED regular file page */
	uint64_t max_buf;
	struct tio_ring_hdr *ring[2];	/* each file's ring, once mapped */
	size_t ringlen[2];
	uint64_t deadline, max_iters;
	struct stats *st;
	int verbose;
};

struct worker {
	struct world *w;
	int id;
	uint64_t rng;
	pthread_t tid;
	struct io_uring ring;
	bool ring_ok;
	bool sqe128;		/* @ring has 128-byte SQEs and 32-byte CQEs */
	unsigned int inflight;
	char *scratch, *scratch_ro, *pin;
	unsigned int wslot;
	void *maps[NMAPS];
	size_t maplen[NMAPS];
	_Atomic uint64_t wait_since;
	uint64_t sync_tag;
	/* uring commands without their CQE yet, for the end-of-run report */
	struct { uint64_t tag; uint8_t p[TIO_CMD_PAYLOAD]; bool async; } pend[128];
};

static void pend_add(struct worker *k, uint64_t tag, const void *p, bool async)
{
	for (int i = 0; i < 128; i++) {
		if (k->pend[i].tag)
			continue;
		k->pend[i].tag = tag;
		memcpy(k->pend[i].p, p, TIO_CMD_PAYLOAD);
		k->pend[i].async = async;
		return;
	}
}

static void pend_del(struct worker *k, uint64_t tag)
{
	for (int i = 0; i < 128; i++)
		if (k->pend[i].tag == tag)
			k->pend[i].tag = 0;
}

static void pend_report(struct worker *k)
{
	for (int i = 0; i < 128; i++) {
		const uint32_t *q = (const uint32_t *)k->pend[i].p;

		if (k->pend[i].tag)
			printf("# fuzz: no CQE for cmd %08x%s: %08x %08x %08x %08x %08x %08x %08x %08x\n",
			       (uint32_t)k->pend[i].tag, k->pend[i].async ? " (async)" : "",
			       q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]);
	}
}

static struct world W;
static struct worker workers[MAX_THREADS];
static int nthreads = 3;
static int use_async = 1;	/* -A: no IOSQE_ASYNC (io-wq) submissions */
static volatile int stop;
static _Atomic int running;	/* workers not yet finished */
static __thread sigjmp_buf *fault_jb;

int main(int argc, char **argv);

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *u = uc;
	char msg[160];
	int n;

	if (fault_jb)
		siglongjmp(*fault_jb, 1);
	n = snprintf(msg, sizeof(msg), "# fuzz: signal %d at %p, ip main%+lld (a fuzzer bug)\n",
		     sig, si->si_addr, (long long)(u->uc_mcontext.gregs[REG_RIP] -
						   (uintptr_t)main));
	if (write(1, msg, n) < 0)
		n = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_usr1(int sig)
{
}

/* ---- pools ---- */

static void pool_add(struct pool *p, int stream, uint32_t h)
{
	pthread_mutex_lock(&p->lock);
	if (stream) {
		if (p->nstreams < NSTREAMS) {
			p->seq[p->nstreams] = 0;
			p->streams[p->nstreams++] = h;
		}
	} else if (p->nbufs < NBUFS) {
		p->bufs[p->nbufs++] = h;
	}
	pthread_mutex_unlock(&p->lock);
}

static void pool_del(struct pool *p, int stream, uint32_t h)
{
	uint32_t *a = stream ? p->streams : p->bufs;
	int *n = stream ? &p->nstreams : &p->nbufs;
	int i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < *n; i++) {
		if (a[i] != h)
			continue;
		a[i] = a[--*n];
		if (stream)
			p->seq[i] = p->seq[*n];
		p->stale[p->nstale++ % NSTALE] = h;
		break;
	}
	pthread_mutex_unlock(&p->lock);
}

static void pool_seq(struct pool *p, uint32_t h, uint64_t seq)
{
	int i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->nstreams; i++)
		if (p->streams[i] == h && seq > p->seq[i])
			p->seq[i] = seq;
	pthread_mutex_unlock(&p->lock);
}

static int pool_count(struct pool *p, int stream)
{
	return stream ? p->nstreams : p->nbufs;
}

/* A handle of @stream kind for file @fi: mostly valid, else every kind of bad. */
static uint32_t pick_handle(struct worker *k, int fi, int stream)
{
	static const uint32_t odd[] = {
		0, 1, 2, 0xffffffff, 0x00ffffff, 0x01000000, 0x80000000, 0x7fffffff,
	};
	struct pool *p = &k->w->pool[fi];
	uint32_t h = 0;
	int n;

	pthread_mutex_lock(&p->lock);
	switch (rnd(&k->rng, 12)) {
	default:
		n = stream ? p->nstreams : p->nbufs;
		if (n)
			h = stream ? p->streams[rnd(&k->rng, n)] : p->bufs[rnd(&k->rng, n)];
		break;
	case 8:		/* the other kind */
		n = stream ? p->nbufs : p->nstreams;
		if (n)
			h = stream ? p->bufs[rnd(&k->rng, n)] : p->streams[rnd(&k->rng, n)];
		break;
	case 9:		/* stale */
		if (p->nstale)
			h = p->stale[rnd(&k->rng, p->nstale < NSTALE ? p->nstale : NSTALE)];
		break;
	case 10: {	/* foreign: the other file's */
		struct pool *q = &k->w->pool[!fi];

		n = stream ? q->nstreams : q->nbufs;
		if (n)
			h = stream ? q->streams[rnd(&k->rng, n)] : q->bufs[rnd(&k->rng, n)];
		break;
	}
	case 11:
		h = one_in(&k->rng, 2) ? odd[rnd(&k->rng, 8)] : (uint32_t)rnext(&k->rng);
		break;
	}
	pthread_mutex_unlock(&p->lock);
	return h ? h : (uint32_t)rnd(&k->rng, 64);
}

static uint64_t pick_seqno(struct worker *k, int fi, uint32_t stream)
{
	struct pool *p = &k->w->pool[fi];
	uint64_t last = 0;
	int i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->nstreams; i++)
		if (p->streams[i] == stream)
			last = p->seq[i];
	pthread_mutex_unlock(&p->lock);
	switch (rnd(&k->rng, 10)) {
	case 0: return 0;
	case 1: return last + 1;
	case 2: return last + 1 + rnd(&k->rng, 1000);
	case 3: return ~0ULL - rnd(&k->rng, 2);
	case 4: return rnext(&k->rng);
	default: return last ? 1 + rnd(&k->rng, last) : 1;
	}
}

static void fd_add(struct world *w, int fd)
{
	int victim = -1;

	pthread_mutex_lock(&w->fdlock);
	if (w->nfds < NFDS) {
		w->fds[w->nfds++] = fd;
	} else {
		victim = w->fds[0];
		w->fds[0] = fd;
	}
	pthread_mutex_unlock(&w->fdlock);
	if (victim >= 0)
		close(victim);
}

static void fd_close_one(struct worker *k)
{
	struct world *w = k->w;
	int fd = -1, i;

	pthread_mutex_lock(&w->fdlock);
	if (w->nfds) {
		i = rnd(&k->rng, w->nfds);
		fd = w->fds[i];
		w->fds[i] = w->fds[--w->nfds];
	}
	pthread_mutex_unlock(&w->fdlock);
	if (fd >= 0)
		close(fd);
}

/* An fd: ours (dma-buf or sync_file), a peer's, garbage or absurd. */
static int pick_fd(struct worker *k)
{
	struct world *w = k->w;
	static const int odd[] = { -1, 0, 1, 2, 1023, 65535, 0x7fffffff, -2 };
	int fd = -1;

	switch (rnd(&k->rng, 10)) {
	default:
		pthread_mutex_lock(&w->fdlock);
		if (w->nfds)
			fd = w->fds[rnd(&k->rng, w->nfds)];
		pthread_mutex_unlock(&w->fdlock);
		if (fd >= 0)
			return fd;
		/* fall through */
	case 5: case 6: case 7:
		if (w->njunk)
			return w->junk[rnd(&k->rng, w->njunk)];
		/* fall through */
	case 8:
		return w->dev[rnd(&k->rng, 2)];
	case 9:
		return odd[rnd(&k->rng, 8)];
	}
}

static uint64_t pick_size(struct worker *k)
{
	uint64_t m = k->w->max_buf;

	switch (rnd(&k->rng, 16)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return PAGE - 1;
	case 3: return PAGE + 1;
	case 4: return m;
	case 5: return m + 1;
	case 6: return m - 1;
	case 7: return ~0ULL - rnd(&k->rng, PAGE);
	case 8: return 1ULL << (32 + rnd(&k->rng, 32));
	case 9: return rnext(&k->rng);
	case 10: return rnd(&k->rng, 65536);
	default: return PAGE * (1 + rnd(&k->rng, 8));
	}
}

/*
 * A user pointer for @len bytes whose content, if valid, is @src:
 * mostly valid memory, else read-only, unmapped, straddling into a
 * PROT_NONE page, kernel or tiny addresses.
 */
static uint64_t pick_uptr(struct worker *k, const void *src, size_t len, size_t off)
{
	static const uint64_t kaddr[] = {
		0xffff888000000000ULL, 0xffffffff81000000ULL, 0xfffffffffffff000ULL,
		0xffffffffffffffffULL, 0x0000800000000000ULL, 0x00007ffffffff000ULL,
	};
	char *dst = k->scratch + off;

	if (src)
		memcpy(dst, src, len);
	switch (rnd(&k->rng, 24)) {
	default:
		return (uintptr_t)dst;
	case 0: case 1:		/* the same bytes, read-only */
		return (uintptr_t)(k->scratch_ro + off);
	case 2:			/* PROT_NONE, or never mapped (below any PIE) */
		return one_in(&k->rng, 2) ? (uintptr_t)(k->w->hole + rnd(&k->rng, 8) * 8) :
		       0x10000 + rnd(&k->rng, 64) * 8;
	case 3: {		/* the tail runs into a PROT_NONE page */
		size_t cut = len > 1 ? 1 + rnd(&k->rng, len - 1) : 1;
		char *p = k->w->guard - cut;

		if (src)
			memcpy(p, src, cut);
		return (uintptr_t)p;
	}
	case 4:
		return kaddr[rnd(&k->rng, 6)];
	case 5:
		return rnd(&k->rng, 2) ? 0 : 1 + rnd(&k->rng, 4096);
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
	d->code = one_in(&k->rng, 8) ? rnext(&k->rng) : rnd(&k->rng, 7);
	d->bits = bits[rnd(&k->rng, 10)];
	d->lanes = one_in(&k->rng, 8) ? (uint16_t)rnext(&k->rng) : 1 + one_in(&k->rng, 4);
	nd = one_in(&k->rng, 10) ? rnd(&k->rng, 65536) : rnd(&k->rng, TIO_MAX_NDIM + 1);
	d->ndim = nd;
	if (one_in(&k->rng, 4)) {
		d->flags = TIO_DESC_F_STRIDED;
	} else if (one_in(&k->rng, 16)) {
		d->flags = rnext(&k->rng);
	}
	d->byte_offset = one_in(&k->rng, 4) ? rnext(&k->rng) >> rnd(&k->rng, 64) :
			 rnd(&k->rng, size ? size : 1);
	for (i = 0; i < TIO_MAX_NDIM; i++) {
		if (i >= nd && !one_in(&k->rng, 20))
			continue;
		switch (rnd(&k->rng, 8)) {
		case 0: d->shape[i] = -1 - rnd(&k->rng, 2); break;
		case 1: d->shape[i] = INT64_MAX - rnd(&k->rng, 2); break;
		case 2: d->shape[i] = 1LL << rnd(&k->rng, 63); break;
		default: d->shape[i] = rnd(&k->rng, 17); break;
		}
		if (d->flags & TIO_DESC_F_STRIDED)
			d->strides[i] = one_in(&k->rng, 4) ? (int64_t)rnext(&k->rng) :
					(int64_t)rnd(&k->rng, 64) - 8;
	}
}

/* ---- command generation ---- */

struct op {
	unsigned int cmd;
	const char *name;
	int weight;
};

static const struct op ops[] = {
	{ TIO_IOC_INFO, "INFO", 2 },
	{ TIO_IOC_BUF_ALLOC, "BUF_ALLOC", 10 },
	{ TIO_IOC_BUF_PIN_USER, "BUF_PIN_USER", 6 },
	{ TIO_IOC_BUF_FREE, "BUF_FREE", 7 },
	{ TIO_IOC_BUF_INFO, "BUF_INFO", 5 },
	{ TIO_IOC_BUF_SET_DESC, "BUF_SET_DESC", 5 },
	{ TIO_IOC_BUF_EXPORT, "BUF_EXPORT", 7 },
	{ TIO_IOC_BUF_IMPORT, "BUF_IMPORT", 7 },
	{ TIO_IOC_BUF_ATTACH_FENCE, "BUF_ATTACH_FENCE", 6 },
	{ TIO_IOC_BUF_WAIT, "BUF_WAIT", 5 },
	{ TIO_IOC_STREAM_CREATE, "STREAM_CREATE", 6 },
	{ TIO_IOC_STREAM_DESTROY, "STREAM_DESTROY", 4 },
	{ TIO_IOC_FENCE_EMIT, "FENCE_EMIT", 10 },
	{ TIO_IOC_FENCE_SIGNAL, "FENCE_SIGNAL", 8 },
	{ TIO_IOC_FENCE_WAIT, "FENCE_WAIT", 7 },
	{ TIO_IOC_FENCE_EXPORT, "FENCE_EXPORT", 6 },
	{ TIO_IOC_FENCE_IMPORT, "FENCE_IMPORT", 6 },
	{ TIO_IOC_SUBMIT, "SUBMIT", 1 },
	{ TIO_IOC_RING_SETUP, "RING_SETUP", 1 },
	{ TIO_IOC_RING_ENTER, "RING_ENTER", 1 },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static unsigned int pick_op(struct worker *k)
{
	static int total;
	unsigned int i;
	int r;

	if (!total)
		for (i = 0; i < NOPS; i++)
			total += ops[i].weight;
	r = rnd(&k->rng, total);
	for (i = 0; i < NOPS; i++) {
		r -= ops[i].weight;
		if (r < 0)
			return i;
	}
	return 0;
}

/* A command number: mostly a real one, else a near miss or noise. */
static unsigned int pick_cmd(struct worker *k, unsigned int opi)
{
	unsigned int cmd = ops[opi].cmd;

	switch (rnd(&k->rng, 40)) {
	case 0:		/* right number, wrong size */
		return _IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd), rnd(&k->rng, 65));
	case 1:		/* wrong direction */
		return _IOC(rnd(&k->rng, 4), TIO_IOC_MAGIC, _IOC_NR(cmd), _IOC_SIZE(cmd));
	case 2:		/* an older or newer caller: uapi 1.0 STREAM_CREATE, or
			 * any structure grown by 8 bytes (zero, unless mutated) */
		if (cmd == TIO_IOC_STREAM_CREATE && one_in(&k->rng, 2))
			return _IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd),
				    TIO_STREAM_CREATE_SIZE_VER0);
		return _IOC(_IOC_DIR(cmd), TIO_IOC_MAGIC, _IOC_NR(cmd), _IOC_SIZE(cmd) + 8);
	case 3:		/* unused numbers */
		return _IOC(rnd(&k->rng, 4), TIO_IOC_MAGIC, rnd(&k->rng, 256), rnd(&k->rng, 64));
	case 4:
		return (unsigned int)rnext(&k->rng);
	default:
		return cmd;
	}
}

static int64_t pick_timeout(struct worker *k, uint32_t *flags, bool bounded)
{
	int64_t t;

	switch (rnd(&k->rng, 8)) {
	case 0: t = 0; break;
	case 1: t = -1; break;
	case 2: t = INT64_MIN; break;
	case 3: t = (int64_t)tio_now_ns() + rnd(&k->rng, 2000000);
		*flags |= TIO_WAIT_F_ABSOLUTE; break;
	case 4: t = INT64_MAX; break;
	default: t = rnd(&k->rng, 3000000); break;
	}
	if (bounded && (t < 0 || t > 3000000))
		t = rnd(&k->rng, 3000000);
	if (bounded)
		*flags &= ~TIO_WAIT_F_ABSOLUTE;
	return t;
}

/*
 * Fill @p (TIO_CMD_PAYLOAD bytes) for command @opi on file @fi. @bounded:
 * waits must not block for long (no watchdog can interrupt them).
 */
static void gen_payload(struct worker *k, unsigned int opi, int fi, void *p,
			bool bounded, size_t off)
{
	struct tio_tensor_desc desc;
	__u64 *dptr = NULL;

	memset(p, 0, TIO_CMD_PAYLOAD);
	switch (ops[opi].cmd) {
	case TIO_IOC_INFO:
		break;
	case TIO_IOC_BUF_ALLOC: {
		struct tio_buf_alloc *a = p;

		a->size = pick_size(k);
		dptr = &a->desc_ptr;
		break;
	}
	case TIO_IOC_BUF_PIN_USER: {
		struct tio_buf_pin *a = p;
		uint64_t pages = 1 + rnd(&k->rng, PINAREA / PAGE);
		uint64_t start = rnd(&k->rng, PINAREA / PAGE - pages + 1) * PAGE;

		switch (rnd(&k->rng, 10)) {
		default:
			a->addr = (uintptr_t)(k->pin + start);
			a->size = pages * PAGE;
			break;
		case 0:
			a->addr = (uintptr_t)k->w->ro;
			a->size = PAGE * (1 + rnd(&k->rng, 4));
			break;
		case 1:
			a->addr = (uintptr_t)k->w->filemap;
			a->size = PAGE;
			break;
		case 2:
			a->addr = pick_uptr(k, NULL, 0, 0) & ~(rnd(&k->rng, 2) ? PAGE - 1 : 0);
			/* Never the scratch: writes through a mapping would land there. */
			if (a->addr >= (uintptr_t)k->w->rw && a->addr < (uintptr_t)k->w->guard)
				a->addr = (uintptr_t)k->pin;
			a->size = pick_size(k);
			break;
		case 3:		/* runs off our area into whatever follows */
			a->addr = (uintptr_t)(k->w->guard - PAGE);
			a->size = PAGE * (1 + rnd(&k->rng, 3));
			break;
		}
		if (one_in(&k->rng, 3))
			a->flags = TIO_PIN_F_READONLY;
		dptr = &a->desc_ptr;
		break;
	}
	case TIO_IOC_BUF_FREE:
	case TIO_IOC_STREAM_DESTROY: {
		struct tio_handle_op *a = p;

		a->handle = pick_handle(k, fi, ops[opi].cmd == TIO_IOC_STREAM_DESTROY);
		break;
	}
	case TIO_IOC_BUF_INFO: {
		struct tio_buf_info *a = p;

		a->handle = pick_handle(k, fi, 0);
		if (one_in(&k->rng, 2))
			a->desc_ptr = pick_uptr(k, NULL, sizeof(desc), off + 1024);
		break;
	}
	case TIO_IOC_BUF_SET_DESC: {
		struct tio_buf_desc *a = p;

		a->handle = pick_handle(k, fi, 0);
		if (one_in(&k->rng, 4))
			a->flags = TIO_DESC_CLEAR;
		else
			dptr = &a->desc_ptr;
		break;
	}
	case TIO_IOC_BUF_EXPORT: {
		struct tio_buf_export *a = p;

		a->handle = pick_handle(k, fi, 0);
		a->flags = rnd(&k->rng, 4) | TIO_EXPORT_F_CLOEXEC;
		break;
	}
	case TIO_IOC_BUF_IMPORT: {
		struct tio_buf_import *a = p;

		a->fd = pick_fd(k);
		break;
	}
	case TIO_IOC_BUF_ATTACH_FENCE: {
		struct tio_buf_attach *a = p;

		a->handle = pick_handle(k, fi, 0);
		a->stream = pick_handle(k, fi, 1);
		a->seqno = pick_seqno(k, fi, a->stream);
		a->flags = one_in(&k->rng, 2) ? TIO_RESV_F_WRITE : 0;
		break;
	}
	case TIO_IOC_BUF_WAIT: {
		struct tio_buf_wait *a = p;

		a->handle = pick_handle(k, fi, 0);
		a->flags = one_in(&k->rng, 2) ? TIO_RESV_F_WRITE : 0;
		a->timeout_ns = pick_timeout(k, &a->flags, bounded);
		break;
	}
	case TIO_IOC_STREAM_CREATE: {
		struct tio_stream_create *a = p;

		/* The grown field: default, short bounds (expiries while
		 * fuzzing), the module's bound, just above it, noise.
		 */
		switch (rnd(&k->rng, 6)) {
		case 0: a->fence_timeout_ms = 1 + rnd(&k->rng, 50); break;
		case 1: a->fence_timeout_ms = 1 + rnd(&k->rng, 1000); break;
		case 2: a->fence_timeout_ms = TIO_FENCE_TIMEOUT_MAX_MS + rnd(&k->rng, 2); break;
		case 3: a->fence_timeout_ms = (uint32_t)rnext(&k->rng); break;
		default: break;
		}
		break;
	}
	case TIO_IOC_FENCE_EMIT: {
		struct tio_fence_emit *a = p;

		a->stream = pick_handle(k, fi, 1);
		break;
	}
	case TIO_IOC_FENCE_SIGNAL: {
		struct tio_fence_signal *a = p;

		a->stream = pick_handle(k, fi, 1);
		a->seqno = pick_seqno(k, fi, a->stream);
		if (one_in(&k->rng, 4))
			a->error = one_in(&k->rng, 4) ? (int32_t)rnext(&k->rng) :
				   -(int32_t)(1 + rnd(&k->rng, 133));
		break;
	}
	case TIO_IOC_FENCE_WAIT: {
		struct tio_fence_wait *a = p;

		a->stream = pick_handle(k, fi, 1);
		a->seqno = pick_seqno(k, fi, a->stream);
		a->timeout_ns = pick_timeout(k, &a->flags, bounded);
		break;
	}
	case TIO_IOC_FENCE_EXPORT: {
		struct tio_fence_export *a = p;

		a->stream = pick_handle(k, fi, 1);
		a->seqno = pick_seqno(k, fi, a->stream);
		a->flags = TIO_EXPORT_F_CLOEXEC;
		break;
	}
	case TIO_IOC_FENCE_IMPORT: {
		struct tio_fence_import *a = p;
		int fd = -1;

		a->stream = pick_handle(k, fi, 1);
		if (k->w->swtl >= 0 && one_in(&k->rng, 3)) {
			fd = tio_sw_sync_fence(k->w->swtl, 1 + rnd(&k->rng, 1 << 20));
			if (fd >= 0)
				fd_add(k->w, fd);
		}
		a->fd = fd >= 0 ? fd : pick_fd(k);
		break;
	}
	case TIO_IOC_SUBMIT: {
		struct tio_submit *a = p;

		/* Nested SUBMIT: refused inside vectors; a small valid one here. */
		a->count = rnd(&k->rng, 3);
		a->cmds_ptr = pick_uptr(k, NULL, 64, off + 2048);
		break;
	}
	case TIO_IOC_RING_SETUP: {
		static const uint32_t sizes[] = { 0, 1, 3, 8, 64, 4096, 8192 };
		struct tio_ring_setup *a = p;

		a->entries = one_in(&k->rng, 8) ? (uint32_t)rnext(&k->rng) :
			     sizes[rnd(&k->rng, 7)];
		break;
	}
	case TIO_IOC_RING_ENTER: {
		struct tio_ring_enter *a = p;

		/* Runs whatever the ring holds (refused inside records). */
		a->flags = rnd(&k->rng, 2) ? TIO_SUBMIT_F_CONTINUE : 0;
		break;
	}
	}
	if (dptr && !one_in(&k->rng, 3)) {
		gen_desc(k, &desc, 4 * PAGE);
		*dptr = pick_uptr(k, &desc, sizeof(desc), off + 1024);
	}
	/* Flags and padding: sometimes any bits at all. */
	if (one_in(&k->rng, 24))
		((uint32_t *)p)[1] ^= 1U << rnd(&k->rng, 32);
}

/* Flip, set or clear a few bytes of a payload. */
static void mutate(struct worker *k, void *p, size_t len)
{
	uint8_t *b = p;
	int n = 1 + rnd(&k->rng, 4);

	while (n--) {
		size_t i = rnd(&k->rng, len);

		switch (rnd(&k->rng, 4)) {
		case 0: b[i] ^= 1 << rnd(&k->rng, 8); break;
		case 1: b[i] = rnext(&k->rng); break;
		case 2: b[i] = 0; break;
		case 3: b[i] = 0xff; break;
		}
	}
}

/*
 * The current number of a command sent with another size or direction
 * (the driver goes by type and number), or @cmd.
 */
static unsigned int canon_cmd(unsigned int cmd)
{
	unsigned int i;

	for (i = 0; i < NOPS; i++)
		if (_IOC_TYPE(cmd) == TIO_IOC_MAGIC &&
		    _IOC_NR(cmd) == _IOC_NR(ops[i].cmd))
			return ops[i].cmd;
	return cmd;
}

/* Remember what a successful command created or destroyed. */
static void harvest(struct worker *k, int fi, unsigned int cmd, const void *p)
{
	struct pool *pl = &k->w->pool[fi];

	switch (canon_cmd(cmd)) {
	case TIO_IOC_BUF_ALLOC:
		pool_add(pl, 0, ((const struct tio_buf_alloc *)p)->handle);
		break;
	case TIO_IOC_BUF_PIN_USER:
		pool_add(pl, 0, ((const struct tio_buf_pin *)p)->handle);
		break;
	case TIO_IOC_BUF_IMPORT:
		pool_add(pl, 0, ((const struct tio_buf_import *)p)->handle);
		break;
	case TIO_IOC_STREAM_CREATE:
		pool_add(pl, 1, ((const struct tio_stream_create *)p)->handle);
		break;
	case TIO_IOC_BUF_FREE:
		pool_del(pl, 0, ((const struct tio_handle_op *)p)->handle);
		break;
	case TIO_IOC_STREAM_DESTROY:
		pool_del(pl, 1, ((const struct tio_handle_op *)p)->handle);
		break;
	case TIO_IOC_FENCE_EMIT: {
		const struct tio_fence_emit *e = p;

		pool_seq(pl, e->stream, e->seqno);
		break;
	}
	case TIO_IOC_FENCE_IMPORT: {
		const struct tio_fence_import *e = p;

		pool_seq(pl, e->stream, e->seqno);
		break;
	}
	case TIO_IOC_BUF_EXPORT: {
		int fd = ((const struct tio_buf_export *)p)->fd;

		if (fd > 2)
			fd_add(k->w, fd);
		break;
	}
	case TIO_IOC_FENCE_EXPORT: {
		int fd = ((const struct tio_fence_export *)p)->fd;

		if (fd > 2)
			fd_add(k->w, fd);
		break;
	}
	}
}

/* Keep the pools from filling up: free the oldest objects sometimes. */
static void trim(struct worker *k, int fi)
{
	struct pool *pl = &k->w->pool[fi];
	struct tio_handle_op h = { 0 };

	if (pool_count(pl, 0) > NBUFS - 8) {
		h.handle = pl->bufs[rnd(&k->rng, NBUFS - 8)];
		if (!ioctl(k->w->dev[fi], TIO_IOC_BUF_FREE, &h))
			pool_del(pl, 0, h.handle);
	}
	if (pool_count(pl, 1) > NSTREAMS - 4) {
		h.handle = pl->streams[rnd(&k->rng, NSTREAMS - 4)];
		if (!ioctl(k->w->dev[fi], TIO_IOC_STREAM_DESTROY, &h))
			pool_del(pl, 1, h.handle);
	}
}

static void count(struct worker *k, int ret)
{
	if (ret < 0)
		atomic_fetch_add(&k->w->st->fails, 1);
	else
		atomic_fetch_add(&k->w->st->ok, 1);
}

static bool is_wait(unsigned int cmd)
{
	return cmd == TIO_IOC_FENCE_WAIT || cmd == TIO_IOC_BUF_WAIT ||
	       cmd == TIO_IOC_SUBMIT;
}

/* ---- the three forms ---- */

static void do_ioctl(struct worker *k, unsigned int opi, int fi)
{
	uint8_t p[TIO_CMD_PAYLOAD];
	unsigned int cmd = pick_cmd(k, opi);
	uint64_t uptr;
	int ret;

	gen_payload(k, opi, fi, p, false, 0);
	if (one_in(&k->rng, 6))
		mutate(k, p, _IOC_SIZE(ops[opi].cmd) ?: 1);
	uptr = pick_uptr(k, p, sizeof(p), 0);
	k->wait_since = tio_now_ns();
	ret = ioctl(k->w->dev[fi], cmd, (void *)(uintptr_t)uptr);
	k->wait_since = 0;
	if (ret < 0 && errno == EINTR)
		atomic_fetch_add(&k->w->st->signals, 1);
	count(k, ret);
	if (!ret && canon_cmd(cmd) == ops[opi].cmd && uptr == (uintptr_t)k->scratch)
		harvest(k, fi, cmd, k->scratch);
	atomic_fetch_add(&k->w->st->ioctls, 1);
}

static void reap(struct worker *k, bool wait)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 2000000 };

	if (wait && k->inflight)
		io_uring_wait_cqe_timeout(&k->ring, &cqe, &ts);
	while (io_uring_peek_cqe(&k->ring, &cqe) == 0) {
		count(k, cqe->res);
		pend_del(k, cqe->user_data);
		io_uring_cqe_seen(&k->ring, cqe);
		if (k->inflight)
			k->inflight--;
	}
}

/* Past the deadline by 30 s: stop waiting for a CQE (reported at the end). */
static bool stop_hard(struct worker *k)
{
	return tio_now_ns() > k->w->deadline + 30000000000ULL;
}

/* Records run in io_uring or in a vector cannot be interrupted: bound waits. */
static void bound_wait(struct worker *k, unsigned int cmd, void *p)
{
	if (_IOC_TYPE(cmd) != TIO_IOC_MAGIC)
		return;
	if (_IOC_NR(cmd) == _IOC_NR(TIO_IOC_FENCE_WAIT)) {
		struct tio_fence_wait *a = p;

		a->flags &= ~TIO_WAIT_F_ABSOLUTE;
		if (a->timeout_ns < 0 || a->timeout_ns > 3000000)
			a->timeout_ns = rnd(&k->rng, 3000000);
	} else if (_IOC_NR(cmd) == _IOC_NR(TIO_IOC_BUF_WAIT)) {
		struct tio_buf_wait *a = p;

		a->flags &= ~TIO_WAIT_F_ABSOLUTE;
		if (a->timeout_ns < 0 || a->timeout_ns > 3000000)
			a->timeout_ns = rnd(&k->rng, 3000000);
	}
}

/* One uring command, waited for; other completions are reaped meanwhile. */
static int uring_wait_one(struct worker *k, int fi, unsigned int cmd, uint64_t uptr)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&k->ring);
	struct io_uring_cqe *cqe;
	uint64_t tag;
	int ret;

	if (!sqe) {
		io_uring_submit(&k->ring);
		reap(k, true);
		sqe = io_uring_get_sqe(&k->ring);
		if (!sqe)
			return -EBUSY;
	}
	tio_prep_cmd(sqe, k->w->dev[fi], cmd, (void *)(uintptr_t)uptr);
	tag = ++k->sync_tag << 32 | cmd;
	sqe->user_data = tag;
	if (io_uring_submit(&k->ring) != 1)
		return -EAGAIN;
	k->inflight++;
	pend_add(k, tag, k->scratch, false);
	for (;;) {
		struct __kernel_timespec ts = { .tv_sec = 1 };

		ret = io_uring_wait_cqe_timeout(&k->ring, &cqe, &ts);
		if (ret == -EINTR)
			continue;
		if (ret == -ETIME && !stop_hard(k))
			continue;
		if (ret < 0)
			return ret;
		k->inflight--;
		if (cqe->user_data == tag) {
			pend_del(k, tag);
			ret = cqe->res;
			io_uring_cqe_seen(&k->ring, cqe);
			return ret;
		}
		count(k, cqe->res);
		pend_del(k, cqe->user_data);
		io_uring_cqe_seen(&k->ring, cqe);
	}
}

static void do_uring(struct worker *k, unsigned int opi, int fi)
{
	unsigned int cmd = pick_cmd(k, opi);
	bool async = use_async && one_in(&k->rng, 8);
	bool waitop = is_wait(ops[opi].cmd);
	struct io_uring_sqe *sqe;
	uint8_t p[TIO_CMD_PAYLOAD];
	size_t off = 0;
	uint64_t uptr;

	if (!k->ring_ok)
		return do_ioctl(k, opi, fi);
	/*
	 * Waits may park and write their payload back later: they get a slot
	 * of their own. Unbounded ones only while few are parked, since only
	 * a signal, a timeout or closing the file completes them.
	 */
	if (waitop || async)
		off = WAIT_OFF + (k->wslot++ % NWAITSLOTS) * 1024;
	gen_payload(k, opi, fi, p, async || ops[opi].cmd == TIO_IOC_SUBMIT ||
		    k->inflight > 24, off);
	if (one_in(&k->rng, 8) && !waitop)
		mutate(k, p, _IOC_SIZE(ops[opi].cmd) ?: 1);
	uptr = pick_uptr(k, p, sizeof(p), off);
	sqe = io_uring_get_sqe(&k->ring);
	if (!sqe) {
		io_uring_submit(&k->ring);
		reap(k, true);
		sqe = io_uring_get_sqe(&k->ring);
		if (!sqe)
			return;
	}
	tio_prep_cmd(sqe, k->w->dev[fi], cmd, (void *)(uintptr_t)uptr);
	if (k->sqe128 && one_in(&k->rng, 4)) {
		/* The payload inline; waits bounded (they block io-wq). */
		struct tio_uring_inline *in = (struct tio_uring_inline *)sqe->cmd;

		bound_wait(k, cmd, p);
		memcpy(in->payload, p, sizeof(in->payload));
		in->flags = TIO_URING_F_INLINE;
		if (!one_in(&k->rng, 3)) {
			in->result_ptr = 0;
			uptr = 0;	/* nothing to harvest */
		}
	}
	if (one_in(&k->rng, 32))
		((uint64_t *)sqe->cmd)[1] = rnext(&k->rng);
	if (async)
		sqe->flags |= IOSQE_ASYNC;
	k->sync_tag++;
	sqe->user_data = k->sync_tag << 32 | cmd;
	if (io_uring_submit(&k->ring) == 1) {
		k->inflight++;
		pend_add(k, sqe->user_data, p, async);
	}
	/* Inline completions are posted by now: pick up what was created. */
	if (!waitop && !async && uptr == (uintptr_t)k->scratch) {
		struct io_uring_cqe *cqe;

		if (io_uring_peek_cqe(&k->ring, &cqe) == 0 &&
		    cqe->user_data == (k->sync_tag << 32 | cmd)) {
			count(k, cqe->res);
			if (cqe->res >= 0 && canon_cmd(cmd) == ops[opi].cmd)
				harvest(k, fi, cmd, k->scratch);
			pend_del(k, cqe->user_data);
			io_uring_cqe_seen(&k->ring, cqe);
			k->inflight--;
		}
	}
	reap(k, k->inflight > 48);
	atomic_fetch_add(&k->w->st->urings, 1);
}

static void do_submit(struct worker *k, int fi)
{
	struct tio_cmd *v = (struct tio_cmd *)(k->scratch + VEC_OFF);
	struct tio_submit s = { 0 };
	bool uring = k->ring_ok && one_in(&k->rng, 3);
	unsigned int i, n, opi[64];
	uint64_t uptr;
	int ret;

	switch (rnd(&k->rng, 20)) {
	case 0: n = 0; break;
	case 1: n = MAX_SUBMIT; break;
	case 2: n = MAX_SUBMIT + 1; break;
	case 3: n = (uint32_t)rnext(&k->rng); break;
	default: n = 1 + rnd(&k->rng, 16); break;
	}
	s.count = n;
	for (i = 0; i < n && i < 64; i++) {
		unsigned int o = pick_op(k);

		opi[i] = o;
		memset(&v[i], 0, sizeof(v[i]));
		v[i].op = pick_cmd(k, o);
		v[i].result = rnext(&k->rng);
		gen_payload(k, o, fi, v[i].payload.bytes, true, REC_OFF + i * 256);
		if (one_in(&k->rng, 16))
			mutate(k, &v[i], sizeof(v[i]));
		bound_wait(k, v[i].op, v[i].payload.bytes);
	}
	if (n > 64 && n <= MAX_SUBMIT + 1) {
		/* Long vectors: INFO and emits, cheap and valid. */
		for (i = 64; i < n; i++) {
			memset(&v[i], 0, sizeof(v[i]));
			v[i].op = one_in(&k->rng, 2) ? TIO_IOC_INFO : TIO_IOC_FENCE_EMIT;
			((struct tio_fence_emit *)v[i].payload.bytes)->stream =
				pick_handle(k, fi, 1);
		}
	}
	if (one_in(&k->rng, 2))
		s.flags = TIO_SUBMIT_F_CONTINUE;
	if (one_in(&k->rng, 32))
		s.flags = rnext(&k->rng);
	if (one_in(&k->rng, 32))
		s.pad = 1;
	switch (rnd(&k->rng, 12)) {
	case 0:	s.cmds_ptr = (uintptr_t)(k->scratch_ro + VEC_OFF); break;
	case 1:	s.cmds_ptr = (uintptr_t)(k->w->guard - 64 * (1 + rnd(&k->rng, 3))); break;
	case 2:	s.cmds_ptr = pick_uptr(k, NULL, 0, 0) | 1; break;
	default: s.cmds_ptr = (uintptr_t)v; break;
	}
	uptr = pick_uptr(k, &s, sizeof(s), 0);
	if (uring) {
		ret = uring_wait_one(k, fi, TIO_IOC_SUBMIT, uptr);
	} else {
		k->wait_since = tio_now_ns();
		ret = ioctl(k->w->dev[fi], TIO_IOC_SUBMIT, (void *)(uintptr_t)uptr);
		if (ret < 0)
			ret = -errno;
		k->wait_since = 0;
	}
	count(k, ret);
	atomic_fetch_add(&k->w->st->submits, 1);
	if (ret < 0 || s.cmds_ptr != (uintptr_t)v || uptr != (uintptr_t)k->scratch)
		return;
	i = ((struct tio_submit *)k->scratch)->done;
	if (i > s.count) {
		const uint32_t *q = (const uint32_t *)k->scratch;

		printf("# fuzz: SUBMIT done %u > count %u (%s, ret %d, thread %d) now %08x %08x %08x %08x %08x %08x\n",
		       i, s.count, uring ? "uring" : "ioctl", ret, k->id, q[0], q[1], q[2], q[3], q[4], q[5]);
		return;
	}
	n = i;
	atomic_fetch_add(&k->w->st->records, n);
	for (i = 0; i < n && i < 64; i++)
		if (!v[i].result && v[i].op == ops[opi[i]].cmd)
			harvest(k, fi, v[i].op, v[i].payload.bytes);
}

/* The file's ring, set up (or found set up) and mapped, or NULL. */
static struct tio_ring_hdr *ring_of(struct worker *k, int fi)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static const uint32_t sizes[] = { 1, 8, 64, 256 };
	struct world *w = k->w;
	struct tio_ring_setup rs = { .entries = sizes[rnd(&k->rng, 4)] };
	struct tio_ring_hdr *h;
	uint32_t entries;
	void *m;

	pthread_mutex_lock(&lock);
	h = w->ring[fi];
	if (h)
		goto out;
	if (ioctl(w->dev[fi], TIO_IOC_RING_SETUP, &rs) && errno != EBUSY)
		goto out;
	/* Set up by someone (a sibling, a fuzzed record): read its size. */
	m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, w->dev[fi], TIO_RING_MMAP_OFFSET);
	if (m == MAP_FAILED)
		goto out;
	entries = ((struct tio_ring_hdr *)m)->entries;
	munmap(m, PAGE);
	w->ringlen[fi] = (TIO_RING_CMDS_OFFSET + (size_t)entries * 64 + PAGE - 1) & ~(PAGE - 1);
	m = mmap(NULL, w->ringlen[fi], PROT_READ | PROT_WRITE, MAP_SHARED,
		 w->dev[fi], TIO_RING_MMAP_OFFSET);
	if (m != MAP_FAILED)
		w->ring[fi] = h = m;
out:
	pthread_mutex_unlock(&lock);
	return h;
}

/*
 * Records written into the ring at its tail (racing the other threads
 * and the other process, which share it), published, entered by ioctl or
 * uring; sometimes with a tail beyond the ring or behind head, or a head
 * moved by hand.
 */
static void do_ring(struct worker *k, int fi)
{
	struct tio_ring_hdr *h = ring_of(k, fi);
	struct tio_cmd *cmds;
	struct tio_ring_enter *e = (struct tio_ring_enter *)k->scratch;
	unsigned int i, n, mask, tail;
	int ret;

	if (!h)
		return;
	cmds = (struct tio_cmd *)((char *)h + TIO_RING_CMDS_OFFSET);
	mask = __atomic_load_n(&h->mask, __ATOMIC_RELAXED);
	tail = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	n = 1 + rnd(&k->rng, mask + 1);
	for (i = 0; i < n; i++) {
		struct tio_cmd *c = &cmds[(tail + i) & mask];
		unsigned int o = pick_op(k);
		struct tio_cmd rec = { 0 };

		rec.op = pick_cmd(k, o);
		gen_payload(k, o, fi, rec.payload.bytes, true, REC_OFF + (i & 15) * 256);
		if (one_in(&k->rng, 16))
			mutate(k, &rec, sizeof(rec));
		bound_wait(k, rec.op, rec.payload.bytes);
		memcpy(c, &rec, sizeof(rec));
	}
	tail += n;
	switch (rnd(&k->rng, 24)) {
	case 0: tail += mask + 1 + rnd(&k->rng, 4); break;	/* beyond */
	case 1: tail -= n + 1; break;				/* behind head */
	case 2: __atomic_store_n(&h->head, (uint32_t)rnext(&k->rng), __ATOMIC_RELAXED); break;
	case 3: tail = (uint32_t)rnext(&k->rng); break;
	}
	__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
	memset(e, 0, sizeof(*e));
	e->flags = one_in(&k->rng, 2) ? TIO_SUBMIT_F_CONTINUE : 0;
	if (one_in(&k->rng, 32))
		e->flags = rnext(&k->rng);
	if (k->ring_ok && one_in(&k->rng, 3)) {
		ret = uring_wait_one(k, fi, TIO_IOC_RING_ENTER, (uintptr_t)e);
	} else {
		k->wait_since = tio_now_ns();
		ret = ioctl(k->w->dev[fi], TIO_IOC_RING_ENTER, e);
		if (ret < 0)
			ret = -errno;
		k->wait_since = 0;
	}
	count(k, ret);
	atomic_fetch_add(&k->w->st->enters, 1);
	if (ret >= 0)
		atomic_fetch_add(&k->w->st->records, e->done);
}

/* ---- the rest of the surface: mmap, dma-buf and sync_file fds ---- */

static void touch(struct worker *k, char *m, size_t len, int prot)
{
	sigjmp_buf jb;
	volatile char sink;

	if (sigsetjmp(jb, 1) == 0) {
		fault_jb = &jb;
		if (prot & PROT_READ) {
			sink = m[0];
			sink = m[len - 1];
		}
		if (prot & PROT_WRITE) {
			m[0] = 1;
			m[len - 1] = 2;
		}
		(void)sink;
	}
	fault_jb = NULL;
}

static void do_mmap(struct worker *k, int fi)
{
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_READ | PROT_EXEC, PROT_NONE,
	};
	int prot = prots[rnd(&k->rng, 5)], slot = rnd(&k->rng, NMAPS), fd;
	size_t len = PAGE * (1 + rnd(&k->rng, 4));
	uint64_t off;
	void *m;

	if (k->maps[slot]) {
		munmap(k->maps[slot], k->maplen[slot]);
		k->maps[slot] = NULL;
	}
	if (one_in(&k->rng, 3)) {
		fd = pick_fd(k);		/* dma-bufs, sync_files, junk */
		off = one_in(&k->rng, 4) ? PAGE * rnd(&k->rng, 8) : 0;
	} else {
		fd = k->w->dev[fi];
		off = (uint64_t)pick_handle(k, fi, one_in(&k->rng, 3)) << 40;
		if (one_in(&k->rng, 4))
			off += PAGE * rnd(&k->rng, 8);
		if (one_in(&k->rng, 16))
			off = rnext(&k->rng) & ~(PAGE - 1);
	}
	if (one_in(&k->rng, 16))
		len = pick_size(k) & ~(PAGE - 1);
	if (!len || len > (64 << 20))
		len = PAGE;
	m = mmap(NULL, len, prot, one_in(&k->rng, 6) ? MAP_PRIVATE : MAP_SHARED, fd, off);
	atomic_fetch_add(&k->w->st->mmaps, 1);
	count(k, m == MAP_FAILED ? -1 : 0);
	if (m == MAP_FAILED)
		return;
	touch(k, m, len, prot);
	/* Kept a while: frees and closes meet live mappings. */
	k->maps[slot] = m;
	k->maplen[slot] = len;
}

static void do_other(struct worker *k)
{
	int fd = pick_fd(k), ret = 0;

	atomic_fetch_add(&k->w->st->other, 1);
	/* DMA_BUF_IOCTL_SYNC waits for the buffer's fences: interruptible. */
	k->wait_since = tio_now_ns();
	switch (rnd(&k->rng, 6)) {
	case 0: {
		struct dma_buf_sync s = { .flags = rnd(&k->rng, 8) };

		if (one_in(&k->rng, 8))
			s.flags = rnext(&k->rng);
		ret = ioctl(fd, DMA_BUF_IOCTL_SYNC, &s);
		if (!ret && (s.flags & DMA_BUF_SYNC_END) == 0) {
			s.flags |= DMA_BUF_SYNC_END;
			ioctl(fd, DMA_BUF_IOCTL_SYNC, &s);
		}
		break;
	}
	case 1: {
		struct sync_file_info info = { 0 };
		struct sync_fence_info fi[4];

		if (one_in(&k->rng, 2)) {
			info.num_fences = 4;
			info.sync_fence_info = (uintptr_t)fi;
		}
		ret = ioctl(fd, SYNC_IOC_FILE_INFO, &info);
		break;
	}
	case 2: {
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

		ret = poll(&pfd, 1, 0);
		break;
	}
	case 3:
		fd_close_one(k);
		break;
	case 4:
		if (k->w->swtl >= 0)
			ret = tio_sw_sync_inc(k->w->swtl, rnd(&k->rng, 1 << 16));
		break;
	case 5:
		trim(k, rnd(&k->rng, 2));
		break;
	}
	k->wait_since = 0;
	count(k, ret);
}

/* ---- threads and processes ---- */

static void *worker_main(void *arg)
{
	struct worker *k = arg;
	struct world *w = k->w;
	uint64_t it = 0;

	k->sqe128 = io_uring_queue_init(64, &k->ring, IORING_SETUP_SQE128 |
					IORING_SETUP_CQE32) == 0;
	k->ring_ok = k->sqe128 || io_uring_queue_init(64, &k->ring, 0) == 0;
	while (!stop) {
		int fi = one_in(&k->rng, 3);
		unsigned int r = rnd(&k->rng, 100);

		if (r < 45)
			do_ioctl(k, pick_op(k), fi);
		else if (r < 72)
			do_uring(k, pick_op(k), fi);
		else if (r < 82)
			do_submit(k, fi);
		else if (r < 87)
			do_ring(k, fi);
		else if (r < 93)
			do_mmap(k, fi);
		else
			do_other(k);
		if (one_in(&k->rng, 64))
			trim(k, fi);
		it++;
		atomic_fetch_add(&w->st->iters, 1);
		if ((it & 15) == 0 && (tio_now_ns() > w->deadline ||
				       (w->max_iters && atomic_load(&w->st->iters) >= w->max_iters)))
			stop = 1;
	}
	for (int i = 0; i < NMAPS; i++)
		if (k->maps[i])
			munmap(k->maps[i], k->maplen[i]);
	atomic_fetch_sub(&running, 1);
	return NULL;
}

/* Interrupt blocking waits that take longer than 20 ms, until all are done. */
static void *watchdog_main(void *arg)
{
	while (atomic_load(&running)) {
		uint64_t now = tio_now_ns();

		for (int i = 0; i < nthreads; i++) {
			uint64_t t = workers[i].wait_since;

			if (t && now - t > 20000000)
				pthread_kill(workers[i].tid, SIGUSR1);
		}
		usleep(5000);
	}
	return NULL;
}

static void add_junk(struct world *w, int fd)
{
	if (fd >= 0 && w->njunk < NJUNK)
		w->junk[w->njunk++] = fd;
}

static int setup_memory(struct world *w)
{
	size_t len = PER_THREAD * MAX_THREADS;
	int memfd = memfd_create("tio-fuzz", MFD_CLOEXEC), f;
	char *res;

	if (memfd < 0 || ftruncate(memfd, len))
		return -1;
	/* rw view followed by a PROT_NONE guard page */
	res = mmap(NULL, len + PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return -1;
	w->rw = mmap(res, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, 0);
	w->ro = mmap(NULL, len, PROT_READ, MAP_SHARED, memfd, 0);
	if (w->rw == MAP_FAILED || w->ro == MAP_FAILED)
		return -1;
	w->guard = w->rw + len;
	/*
	 * Inaccessible, but reserved: an unmapped hole would be reused by
	 * later mappings (thread stacks, rings) and the kernel would write
	 * payloads into them.
	 */
	w->hole = mmap(NULL, 16 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->hole == MAP_FAILED)
		return -1;
	f = open("/tmp/tio-fuzz-file", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (f >= 0 && !ftruncate(f, PAGE)) {
		w->filemap = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
		if (w->filemap == MAP_FAILED)
			w->filemap = NULL;
	}
	add_junk(w, f);
	close(memfd);
	return 0;
}

static void setup_junk(struct world *w)
{
	int p[2];

	add_junk(w, open("/dev/null", O_RDWR | O_CLOEXEC));
	if (!pipe2(p, O_CLOEXEC)) {
		add_junk(w, p[0]);
		add_junk(w, p[1]);
	}
	add_junk(w, eventfd(0, EFD_CLOEXEC));
	add_junk(w, memfd_create("tio-junk", MFD_CLOEXEC));
	add_junk(w, tio_udmabuf(4 * PAGE));
	add_junk(w, tio_heap_dmabuf(2 * PAGE));
	add_junk(w, tio_vgem_dmabuf(2));
	w->swtl = tio_sw_sync_timeline();
	if (w->swtl >= 0) {
		add_junk(w, tio_sw_sync_fence(w->swtl, 1));	 /* signals soon */
		add_junk(w, tio_sw_sync_fence(w->swtl, 1u << 30)); /* never */
	}
}

static int run_process(struct world *w, uint64_t seed, int proc)
{
	pthread_t wd;
	int i;

	/* Memory of our own: a MAP_SHARED scratch must not be the sibling's. */
	if (setup_memory(w))
		return 1;
	w->dev[1] = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	if (w->dev[1] < 0) {
		perror("open " TIO_DEV);
		return 1;
	}
	/* The child's copy of the shared file's pool is a snapshot. */
	memset(&w->pool[1], 0, sizeof(w->pool[1]));
	pthread_mutex_init(&w->pool[1].lock, NULL);
	setup_junk(w);
	add_junk(w, w->dev[0]);
	running = nthreads;
	for (i = 0; i < nthreads; i++) {
		struct worker *k = &workers[i];

		k->w = w;
		k->id = i;
		k->rng = seed ^ (0x1000193ULL * (proc * MAX_THREADS + i + 1));
		rnext(&k->rng);
		k->scratch = w->rw + i * PER_THREAD;
		k->scratch_ro = w->ro + i * PER_THREAD;
		k->pin = k->scratch + SCRATCH;
		if (pthread_create(&k->tid, NULL, worker_main, k))
			return 1;
	}
	pthread_create(&wd, NULL, watchdog_main, NULL);
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i].tid, NULL);
	pthread_join(wd, NULL);
	/* Closing the files cancels parked waits; then drain the rings. */
	close(w->dev[0]);
	close(w->dev[1]);
	for (i = 0; i < nthreads; i++) {
		struct worker *k = &workers[i];
		uint64_t until = tio_now_ns() + 5000000000ULL;

		if (!k->ring_ok)
			continue;
		while (k->inflight && tio_now_ns() < until)
			reap(k, true);
		atomic_fetch_add(&w->st->parked, k->inflight);
		pend_report(k);
		io_uring_queue_exit(&k->ring);
	}
	return 0;
}

/* Where a stuck process's threads are, in the kernel and in userspace. */
static void dump_stacks(pid_t pid)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do echo \"$t $(cat $t/wchan) $(cat $t/syscall)\";"
		 " cat $t/stack; done 2>&1 | sed 's/^/# stuck: /'", (int)pid);
	fflush(stdout);
	if (system(cmd) < 0)
		perror("system");
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, t0, el;
	int procs = 2, opt, i, rc = 0;
	double secs = 10;
	struct sigaction sa = { 0 };
	struct world *w = &W;
	struct tio_info info = { 0 };
	pid_t pids[MAX_PROCS];
	struct stats *st;

	while ((opt = getopt(argc, argv, "s:d:t:p:n:vA")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'd': secs = atof(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'p': procs = atoi(optarg); break;
		case 'n': w->max_iters = strtoull(optarg, NULL, 0); break;
		case 'v': w->verbose = 1; break;
		case 'A': use_async = 0; break;
		default:
			fprintf(stderr, "usage: %s [-s seed] [-d secs] [-t threads] [-p procs] [-n iters]\n",
				argv[0]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || procs < 1 || procs > MAX_PROCS)
		return 2;
	if (!seed)
		seed = tio_now_ns() ^ ((uint64_t)getpid() << 32);
	printf("TAP version 13\n1..2\n");
	printf("# fuzz: seed 0x%" PRIx64 " (replay: tio_fuzz -s 0x%" PRIx64 " -d %g -t %d -p %d%s)\n",
	       seed, seed, secs, nthreads, procs, use_async ? "" : " -A");
	fflush(stdout);

	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART: waits return EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	st = mmap(NULL, sizeof(*st) * MAX_PROCS, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		return 1;
	pthread_mutex_init(&w->fdlock, NULL);
	pthread_mutex_init(&w->pool[0].lock, NULL);
	w->dev[0] = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	if (w->dev[0] < 0 || ioctl(w->dev[0], TIO_IOC_INFO, &info)) {
		printf("not ok 1 - fuzz: cannot open %s: %s\n", TIO_DEV, strerror(errno));
		return 1;
	}
	w->max_buf = info.max_buf_size;
	printf("# fuzz: features 0x%llx max_buf_size %llu max_submit %u\n",
	       (unsigned long long)info.features, (unsigned long long)info.max_buf_size,
	       info.max_submit);
	fflush(stdout);

	/* Objects in the shared file before the processes split. */
	for (i = 0; i < 4; i++) {
		struct tio_buf_alloc a = { .size = PAGE * (i + 1) };
		struct tio_stream_create c = { 0 };
		struct tio_buf_export e = { .flags = TIO_EXPORT_F_CLOEXEC };

		if (!ioctl(w->dev[0], TIO_IOC_BUF_ALLOC, &a)) {
			pool_add(&w->pool[0], 0, a.handle);
			e.handle = a.handle;
			if (!ioctl(w->dev[0], TIO_IOC_BUF_EXPORT, &e))
				fd_add(w, e.fd);
		}
		if (!ioctl(w->dev[0], TIO_IOC_STREAM_CREATE, &c))
			pool_add(&w->pool[0], 1, c.handle);
	}

	t0 = tio_now_ns();
	w->deadline = t0 + (uint64_t)(secs * 1e9);
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			w->st = &st[i];
			_exit(run_process(w, seed, i));
		}
	}
	for (i = 0; i < procs; i++) {
		int status = 0;
		pid_t r;

		/* A process stuck past the deadline is killed, and a failure. */
		while ((r = waitpid(pids[i], &status, WNOHANG)) == 0 &&
		       tio_now_ns() < w->deadline + 60000000000ULL)
			usleep(100000);
		if (r == 0) {
			printf("# fuzz: process %d stuck 60 s past the deadline, killed\n", i);
			dump_stacks(pids[i]);
			kill(pids[i], SIGKILL);
			r = waitpid(pids[i], &status, 0);
			status = 0x100;
		}
		if (pids[i] < 0 || r < 0) {
			rc = 1;
			continue;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# fuzz: process %d ended with status 0x%x\n", i, status);
			rc = 1;
		}
	}
	el = tio_now_ns() - t0;
	close(w->dev[0]);
	{
		uint64_t it = 0, io = 0, ur = 0, sb = 0, rec = 0, mm = 0, ot = 0, en = 0,
			 ok = 0, fl = 0, sg = 0, pk = 0;

		for (i = 0; i < procs; i++) {
			it += st[i].iters; io += st[i].ioctls; ur += st[i].urings;
			sb += st[i].submits; rec += st[i].records; mm += st[i].mmaps;
			en += st[i].enters;
			ot += st[i].other; ok += st[i].ok; fl += st[i].fails;
			sg += st[i].signals; pk += st[i].parked;
		}
		printf("# fuzz: %" PRIu64 " iterations in %.1f s, %.0f/s (%d processes x %d threads)\n",
		       it, el / 1e9, it / (el / 1e9), procs, nthreads);
		printf("# fuzz: ioctl %" PRIu64 ", uring_cmd %" PRIu64 ", SUBMIT %" PRIu64
		       ", RING_ENTER %" PRIu64 " (%" PRIu64 " records run), mmap %" PRIu64
		       ", other %" PRIu64 "\n", io, ur, sb, en, rec, mm, ot);
		printf("# fuzz: %" PRIu64 " succeeded, %" PRIu64 " failed, %" PRIu64
		       " waits interrupted, %" PRIu64 " uring waits left parked\n",
		       ok, fl, sg, pk);
		printf("%s 1 - fuzz: every process finished (seed 0x%" PRIx64 ")\n",
		       rc ? "not ok" : "ok", seed);
		printf("%s 2 - fuzz: commands succeeded and failed (%" PRIu64 " iterations)\n",
		       ok && fl ? "ok" : "not ok", it);
		if (!ok || !fl)
			rc = 1;
	}
	return rc;
}
