// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pinned-memory cache (tensorio/pinned.h). A cached buffer is an
 * anonymous mapping pinned as user memory (BUF_PIN_USER, both backends),
 * kept with its backend handle when its tio.Buffer object dies.
 *
 * Locking: pc.lock guards the free lists and the counters. A fence poll
 * (BUF_WAIT, timeout 0) runs under it; the backend never calls back into
 * the cache, so the order is always pc.lock -> backend.
 *
 * The counters are also published, on every unlock, in one shared page of
 * a memfd named "tio-pinned-stats", so that another process (tioctl stat)
 * can read them through /proc/PID/map_files: tio_pinned_stats_of(). No fd
 * stays open; a forked child neither inherits the page nor writes to it
 * (MADV_DONTFORK, or, on kernels without madvise, an atfork unmap).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tensorio/pinned.h>

#include "dev/pin_internal.h"

#define PC_SUB 32			/* classes per doubling above 1 MiB */
#define PC_NCLASS (65 * PC_SUB)

#define PC_PUB_NAME "tio-pinned-stats"
#define PC_PUB_MAGIC 0x3173747370636f74ULL	/* "tocpsts1" */

/* The published page: every field a naturally aligned u64. */
struct pc_pub {
	uint64_t magic;
	uint64_t size;		/* sizeof(struct pc_pub): the layout */
	uint64_t hits, misses, bytes_cached, bytes_in_use, buffers_cached;
	uint64_t limit, enabled;
};

struct pc_entry {
	struct pc_entry *next;
	struct tio_ctx *ctx;
	uint32_t handle;
	uint64_t mmap_offset;
	void *addr;
	size_t size;
};

static struct {
	pthread_mutex_t lock;
	pthread_once_t once;
	int enabled;
	uint64_t limit;
	struct tio_pinned_stats st;
	struct pc_pub *pub;
	bool pub_forks;			/* a fork inherits pub (no MADV_DONTFORK) */
	struct pc_entry *free[PC_NCLASS];
} pc = { .lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

/* A page of its own, not inherited by a fork: NULL where that fails. */
static struct pc_pub *pc_publish_map(void)
{
	int fd = memfd_create(PC_PUB_NAME, MFD_CLOEXEC);
	struct pc_pub *p;

	if (fd < 0)
		return NULL;
	p = ftruncate(fd, sizeof(*p)) ? MAP_FAILED :
	    mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	/* Kernels without madvise (tinyconfig-like): pc_forked() unmaps it. */
	pc.pub_forks = madvise(p, sizeof(*p), MADV_DONTFORK) != 0;
	p->size = sizeof(*p);
	__atomic_store_n(&p->magic, PC_PUB_MAGIC, __ATOMIC_RELEASE);
	return p;
}

/*
 * The child of a fork (one thread) publishes in a page of its own; the
 * parent's, where the fork inherited it, is unmapped first so that neither
 * the child nor a reader of its maps mistakes it for the child's.
 */
static void pc_forked(void)
{
	if (pc.pub && pc.pub_forks)
		munmap(pc.pub, sizeof(*pc.pub));
	pc.pub = pc_publish_map();
}

static void pc_publish_setup(void)
{
	if (pthread_atfork(NULL, NULL, pc_forked))
		return;
	pc.pub = pc_publish_map();
}

/* Publish the counters, then drop pc.lock. */
static void pc_unlock(void)
{
	struct pc_pub *p = pc.pub;

	if (p) {
		__atomic_store_n(&p->hits, pc.st.hits, __ATOMIC_RELAXED);
		__atomic_store_n(&p->misses, pc.st.misses, __ATOMIC_RELAXED);
		__atomic_store_n(&p->bytes_cached, pc.st.bytes_cached, __ATOMIC_RELAXED);
		__atomic_store_n(&p->bytes_in_use, pc.st.bytes_in_use, __ATOMIC_RELAXED);
		__atomic_store_n(&p->buffers_cached, pc.st.buffers_cached, __ATOMIC_RELAXED);
		__atomic_store_n(&p->limit, pc.limit, __ATOMIC_RELAXED);
		__atomic_store_n(&p->enabled, (uint64_t)pc.enabled, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&pc.lock);
}

static void pc_setup(void)
{
	const char *e = getenv("TIO_PINNED_CACHE");
	const char *l = getenv("TIO_PINNED_CACHE_LIMIT");
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	pc.enabled = !(e && !strcmp(e, "0"));
	pc.limit = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4 : 1ULL << 30;
	if (l && *l)
		pc.limit = strtoull(l, NULL, 0);
	pc_publish_setup();
	pthread_mutex_lock(&pc.lock);
	pc_unlock();
}

/* The size class of @size and its free-list index. */
static size_t pc_class(size_t size, size_t page, unsigned int *idx)
{
	unsigned int lg;
	size_t step, c;

	if (size <= page)
		size = page;
	lg = 64 - (unsigned int)__builtin_clzll((unsigned long long)size - 1);
	if (lg <= 20) {
		*idx = lg * PC_SUB;
		return (size_t)1 << lg;
	}
	step = ((size_t)1 << lg) / (2 * PC_SUB);
	c = (size + step - 1) / step * step;
	*idx = lg * PC_SUB + (unsigned int)(c / step - PC_SUB - 1);
	return c;
}

/*
 * Fresh memory for a miss. From 2 MiB up it is aligned to 2 MiB and asks
 * for transparent huge pages: faulting in (populating) fresh memory is what
 * a first load spends its CPU on, and a huge page is one fault instead of
 * 512. Where THP is off the advice is ignored.
 */
static void *pc_map(size_t size)
{
	const size_t huge = (size_t)2 << 20;
	uintptr_t a, start;
	void *p;

	if (size < huge || size % huge) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	p = mmap(NULL, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (uintptr_t)p;
	a = (start + huge - 1) & ~(uintptr_t)(huge - 1);
	if (a > start)
		munmap(p, a - start);
	if (start + huge > a)
		munmap((void *)(a + size), start + huge - a);
	madvise((void *)a, size, MADV_HUGEPAGE);
	return (void *)a;
}

static void pc_free_entry(struct tio_ctx *ctx, uint32_t handle, void *addr, size_t size)
{
	struct tio_handle_op op = { .handle = handle };

	ctx->ops->exec(ctx, tio_cmds[TIO_CMD_BUF_FREE].op, &op);
	munmap(addr, size);
}

/* Free cached entries (all of @ctx's, or everything above the limit). */
static void pc_trim_locked(struct tio_ctx *only, uint64_t keep)
{
	struct pc_entry **pp, *e;
	unsigned int i;

	for (i = 0; i < PC_NCLASS && pc.st.bytes_cached > keep; i++) {
		pp = &pc.free[PC_NCLASS - 1 - i];	/* largest first */
		while ((e = *pp) && pc.st.bytes_cached > keep) {
			if (only && e->ctx != only) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			pc.st.bytes_cached -= e->size;
			pc.st.buffers_cached--;
			pc_free_entry(e->ctx, e->handle, e->addr, e->size);
			free(e);
		}
	}
}

/* The last reference of a cache buffer is gone: keep it or free it. */
static void pc_recycle(void *obj)
{
	struct tio_buffer *buf = obj;
	struct tio_buf_desc d = { .handle = (uint32_t)buf->handle, .flags = TIO_DESC_CLEAR };
	struct pc_entry *e = NULL;
	size_t size = (size_t)buf->size;
	unsigned int idx;

	pthread_mutex_lock(&pc.lock);
	pc.st.bytes_in_use -= size;
	if (pc.enabled && pc.st.bytes_cached + size <= pc.limit &&
	    !buf->ctx->ops->exec(buf->ctx, tio_cmds[TIO_CMD_BUF_SET_DESC].op, &d))
		e = malloc(sizeof(*e));
	if (e) {
		/* The context empties us before it closes (tio_shutdown()). */
		__atomic_store_n(&buf->ctx->on_shutdown, tio_pinned_trim_ctx, __ATOMIC_RELEASE);
		e->ctx = buf->ctx;
		e->handle = (uint32_t)buf->handle;
		e->mmap_offset = buf->mmap_offset;
		e->addr = buf->data;
		e->size = size;
		pc_class(size, buf->ctx->page_size, &idx);
		e->next = pc.free[idx];
		pc.free[idx] = e;
		pc.st.bytes_cached += size;
		pc.st.buffers_cached++;
	}
	pc_unlock();
	if (!e)
		pc_free_entry(buf->ctx, (uint32_t)buf->handle, buf->data, size);
}

static int pc_wrap(struct tio_ctx *ctx, uint32_t handle, uint64_t mmap_offset,
		   void *addr, size_t size, tio_buffer_t **out)
{
	if (tio_buffer_wrap(ctx, handle, TIO_BUF_KIND_USER, size, mmap_offset, addr, out)) {
		munmap(addr, size);	/* the wrap freed the handle */
		return -1;
	}
	(*out)->recycle = pc_recycle;
	pthread_mutex_lock(&pc.lock);
	pc.st.bytes_in_use += size;
	pc_unlock();
	return 0;
}

/* A cached buffer of class @idx whose fences have all signalled, or NULL. */
static struct pc_entry *pc_take(struct tio_ctx *ctx, unsigned int idx)
{
	struct pc_entry **pp = &pc.free[idx], *e;

	for (; (e = *pp); pp = &e->next) {
		struct tio_buf_wait w = { .handle = e->handle, .timeout_ns = 0 };

		if (e->ctx != ctx || ctx->ops->exec(ctx, tio_cmds[TIO_CMD_BUF_WAIT].op, &w))
			continue;	/* another context's, or a fence pending */
		*pp = e->next;
		pc.st.bytes_cached -= e->size;
		pc.st.buffers_cached--;
		pc.st.hits++;
		return e;
	}
	pc.st.misses++;
	return NULL;
}

int tio_pinned_get(size_t size, struct tio_pinned_mem *m)
{
	struct tio_ctx *ctx = tio_ctx_get();
	struct pc_entry *e = NULL;
	unsigned int idx;
	size_t csize;
	char why[200];
	void *p;

	memset(m, 0, sizeof(*m));
	if (!ctx)
		return -1;
	if (!size)
		return tio_raise_errno(EINVAL, "pinned allocation of 0 bytes");
	if (size > ctx->info.max_buf_size)
		return tio_raise_errno(E2BIG, "pinned allocation of %zu bytes: above the "
				       "backend's largest buffer (%llu)", size,
				       (unsigned long long)ctx->info.max_buf_size);
	pthread_once(&pc.once, pc_setup);
	csize = pc_class(size, ctx->page_size, &idx);
	pthread_mutex_lock(&pc.lock);
	if (pc.enabled)
		e = pc_take(ctx, idx);
	else
		pc.st.misses++;
	pc_unlock();
	if (e) {
		m->addr = e->addr;
		m->size = e->size;
		p = e->addr;
		idx = e->handle;
		csize = e->size;
		size = (size_t)e->mmap_offset;
		free(e);
		if (pc_wrap(ctx, idx, size, p, csize, &m->buf))
			return -1;
		return 0;
	}
	/* A miss: refuse what could never be locked before mapping it. */
	if (tio_mem_check(csize, 0, why, sizeof(why)))
		return tio_raise_errno(ENOMEM, "pinned allocation of %zu bytes: %s", csize, why);
	p = pc_map(csize);
	if (!p)
		return tio_raise_errno(ENOMEM, "pinned allocation of %zu bytes: mapping", csize);
	m->addr = p;
	m->size = csize;
	m->lazy = 1;
	return 0;
}

static int pc_pin(struct tio_ctx *ctx, struct tio_pinned_mem *m)
{
	struct tio_buf_pin a;
	char why[200];
	int ret, retried = 0;

again:
	memset(&a, 0, sizeof(a));
	a.addr = (uintptr_t)m->addr;
	a.size = m->size;
	ret = ctx->ops->exec(ctx, tio_cmds[TIO_CMD_BUF_PIN_USER].op, &a);
	if (ret == -ENOMEM && !retried) {
		/* Cached memory counts against RLIMIT_MEMLOCK: give it back. */
		retried = 1;
		tio_pinned_trim();
		goto again;
	}
	if (ret == -ENOMEM && tio_mem_check(m->size, tio_mem_locked(), why, sizeof(why)))
		return tio_raise_errno(ENOMEM, "pinning %zu bytes: %s", m->size, why);
	if (ret)
		return tio_raise_errno(-ret, "pinning %zu bytes%s", m->size,
				       ret == -ENOMEM ? " (the driver's pinned-memory cap)" : "");
	return pc_wrap(ctx, a.handle, a.mmap_offset, m->addr, m->size, &m->buf);
}

int tio_pinned_finish(struct tio_pinned_mem *m)
{
	struct tio_ctx *ctx = tio_ctx_get();

	if (!ctx)
		return -1;
	if (m->buf)
		return 0;
	if (pc_pin(ctx, m)) {
		munmap(m->addr, m->size);
		m->addr = NULL;
		return -1;
	}
	m->lazy = 0;
	return 0;
}

void tio_pinned_abort(struct tio_pinned_mem *m)
{
	if (m->buf)
		tio_buffer_decref(m->buf);
	else if (m->addr)
		munmap(m->addr, m->size);
	memset(m, 0, sizeof(*m));
}

int tio_pinned_alloc(size_t size, tio_buffer_t **out)
{
	struct tio_pinned_mem m;

	if (!out)
		return tio_raise_errno(EINVAL, "tio_pinned_alloc: NULL out");
	if (tio_pinned_get(size, &m))
		return -1;
	if (m.lazy && madvise(m.addr, m.size, MADV_POPULATE_WRITE) && errno != EINVAL) {
		tio_pinned_abort(&m);
		return tio_raise_errno(ENOMEM, "pinned allocation of %zu bytes: populating",
				       size);
	}
	if (tio_pinned_finish(&m))
		return -1;
	*out = m.buf;
	tio_set_errno(0);
	return 0;
}

void tio_pinned_stats(struct tio_pinned_stats *st)
{
	pthread_once(&pc.once, pc_setup);
	pthread_mutex_lock(&pc.lock);
	*st = pc.st;
	st->limit = pc.limit;
	st->enabled = pc.enabled;
	pc_unlock();
}

void tio_pinned_set_limit(uint64_t bytes)
{
	pthread_once(&pc.once, pc_setup);
	pthread_mutex_lock(&pc.lock);
	pc.limit = bytes;
	pc_trim_locked(NULL, bytes);
	pc_unlock();
}

void tio_pinned_trim(void)
{
	pthread_mutex_lock(&pc.lock);
	pc_trim_locked(NULL, 0);
	pc_unlock();
}

void tio_pinned_trim_ctx(struct tio_ctx *ctx)
{
	pthread_mutex_lock(&pc.lock);
	pc_trim_locked(ctx, 0);
	pc_unlock();
}

/* Where @pid maps its published page (@lo-@hi): 0, 1 when it maps none, or -1. */
static int pc_find_pub(int pid, unsigned long *lo, unsigned long *hi)
{
	char path[64], line[512];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " /memfd:" PC_PUB_NAME " ") &&
			sscanf(line, "%lx-%lx", lo, hi) == 2;
	fclose(f);
	return !found;
}

int tio_pinned_stats_of(int pid, struct tio_pinned_stats *st)
{
	struct pc_pub pub;
	unsigned long lo, hi;
	char path[96];
	ssize_t n;
	int fd;

	memset(st, 0, sizeof(*st));
	if (pid <= 0)
		return tio_raise_errno(EINVAL, "pinned-cache statistics of pid %d: not a process id",
				       pid);
	switch (pc_find_pub(pid, &lo, &hi)) {
	case 0:
		break;
	case 1:
		return tio_raise_file_errno(ENOENT, "process %d publishes no pinned-cache "
					    "statistics (it has not used the cache)", pid);
	default:
		if (errno == ENOENT)
			return tio_raise_file_errno(ESRCH, "pinned-cache statistics of "
						    "pid %d: no such process", pid);
		return tio_raise_file_errno(errno, "pinned-cache statistics of pid %d: "
					    "/proc/%d/maps", pid, pid);
	}
	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", pid, lo, hi);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tio_raise_file_errno(errno, "pinned-cache statistics of pid %d: "
					    "%s%s", pid, path, errno == EPERM || errno == EACCES ?
					    " (reading another process's mapping needs "
					    "CAP_SYS_ADMIN)" : "");
	n = pread(fd, &pub, sizeof(pub), 0);
	close(fd);
	if (n != (ssize_t)sizeof(pub) || pub.magic != PC_PUB_MAGIC || pub.size != sizeof(pub))
		return tio_raise_errno(EPROTO, "pinned-cache statistics of pid %d: %s "
				       "is not in this library's layout (another "
				       "libtensorio version?)", pid, path);
	st->hits = pub.hits;
	st->misses = pub.misses;
	st->bytes_cached = pub.bytes_cached;
	st->bytes_in_use = pub.bytes_in_use;
	st->buffers_cached = pub.buffers_cached;
	st->limit = pub.limit;
	st->enabled = (int)pub.enabled;
	tio_set_errno(0);
	return 0;
}
