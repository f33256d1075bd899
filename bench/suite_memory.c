// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "memory": allocate + free latency by size.
 *   user/memfd-mlock/SIZE  the user backend's pinned buffer: memfd_create,
 *                          ftruncate, mmap(MAP_POPULATE), mlock, and back
 *   malloc-touch/SIZE      pageable memory for comparison: malloc, touch
 *                          every page, free
 *   kernel/alloc/SIZE      BUF_ALLOC + BUF_FREE (zeroed pinned pages)
 *   kernel/pin-user/SIZE   BUF_PIN_USER + BUF_FREE of a touched range
 *   kernel/export-import   BUF_EXPORT, BUF_IMPORT of the fd, FREE, close
 *   peer/dma-heap/SIZE     /dev/dma_heap/system allocation + close
 *   peer/udmabuf/SIZE      /dev/udmabuf dma-buf from a sealed memfd + close
 * The kernel and peer rows need the VM (make bench runs them there).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-heap.h>
#include <linux/tensorio.h>
#include <linux/udmabuf.h>

#include <tensorio/error.h>
#include <tensorio/pinned.h>

#include "bench.h"

enum mkind { M_MEMFD, M_MALLOC, M_KALLOC, M_KPIN, M_EXPORT, M_HEAP, M_UDMABUF, M_PINNED };

#define MARG(k, sz)	((uintptr_t)(k) | (uintptr_t)(sz) << 8)
#define MKIND(a)	((enum mkind)((a) & 0xff))
#define MSIZE(a)	((size_t)((a) >> 8))

struct mstate {
	int fd;		/* /dev/tensorio, the heap or /dev/udmabuf */
	int memfd;
	void *mem;
	size_t size;
	__u32 handle;
	struct tio_pinned_stats pc;	/* the cache's, after setup */
};

#define KiB	1024UL
#define MiB	(1024UL * 1024)

/* The cache's hit rate over the row's repeats, in its note. */
static char pinned_note[3][128];

static void mem_teardown(struct bench_run *run)
{
	struct mstate *s = run->state;

	if (!s)
		return;
	if (MKIND(run->c->arg) == M_PINNED) {
		struct tio_pinned_stats st;
		uint64_t h, m;
		int i = s->size == KiB ? 0 : s->size == 64 * KiB ? 1 : 2;

		tio_pinned_stats(&st);
		h = st.hits - s->pc.hits;
		m = st.misses - s->pc.misses;
		if (h + m)
			snprintf(pinned_note[i], sizeof(pinned_note[i]),
				 "tio_pinned_alloc + release, cache warm: hit rate %.1f %% "
				 "(%llu of %llu)", 100.0 * (double)h / (double)(h + m),
				 (unsigned long long)h, (unsigned long long)(h + m));
		tio_pinned_trim();
	}
	if (s->handle) {
		struct tio_handle_op f = { .handle = s->handle };

		ioctl(s->fd, TIO_IOC_BUF_FREE, &f);
	}
	if (s->mem)
		munmap(s->mem, s->size);
	if (s->memfd >= 0)
		close(s->memfd);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	run->state = NULL;
}

static int mem_setup(struct bench_run *run)
{
	enum mkind k = MKIND(run->c->arg);
	struct mstate *s = calloc(1, sizeof(*s));
	struct tio_info info = { 0 };
	__u64 need = 0;
	int err;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	s->fd = s->memfd = -1;
	s->size = MSIZE(run->c->arg);
	run->state = s;
	switch (k) {
	case M_MEMFD:
	case M_MALLOC:
		return 0;
	case M_PINNED: {
		/* Warm the cache: the rows time the repeated allocation. */
		tio_buffer_t *b;

		if (tio_pinned_alloc(s->size, &b)) {
			err = bench_skip(run, "tio_pinned_alloc: %s", tio_error_peek_raised() ?
					 tio_error_message(tio_error_peek_raised()) : "?");
			tio_error_clear();
			goto out;
		}
		tio_buffer_decref(b);
		tio_pinned_stats(&s->pc);
		return 0;
	}
	case M_HEAP:
		s->fd = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
		if (s->fd < 0) {
			err = bench_skip(run, "no /dev/dma_heap/system: %s",
					 strerror(errno));
			goto out;
		}
		return 0;
	case M_UDMABUF:
		s->fd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
		if (s->fd < 0) {
			err = bench_skip(run, "no /dev/udmabuf: %s", strerror(errno));
			goto out;
		}
		return 0;
	default:
		break;
	}
	s->fd = open("/dev/tensorio", O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		err = bench_skip(run, "no /dev/tensorio: %s (driver rows run in "
				 "the VM)", strerror(errno));
		goto out;
	}
	if (ioctl(s->fd, TIO_IOC_INFO, &info)) {
		err = bench_fail(run, errno, "INFO");
		goto out;
	}
	need = k == M_KPIN ? TIO_FEAT_PIN_USER | TIO_FEAT_BUFFERS :
	       k == M_EXPORT ? TIO_FEAT_DMABUF | TIO_FEAT_BUFFERS :
	       TIO_FEAT_BUFFERS;
	if ((info.features & need) != need) {
		err = bench_skip(run, "driver lacks feature 0x%llx",
				 (unsigned long long)(need & ~info.features));
		goto out;
	}
	if (k == M_KPIN) {
		s->mem = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (s->mem == MAP_FAILED) {
			s->mem = NULL;
			err = bench_fail(run, errno, "mmap");
			goto out;
		}
	}
	if (k == M_EXPORT) {
		struct tio_buf_alloc a = { .size = s->size };

		if (ioctl(s->fd, TIO_IOC_BUF_ALLOC, &a)) {
			err = bench_fail(run, errno, "BUF_ALLOC");
			goto out;
		}
		s->handle = a.handle;
	}
	return 0;
out:
	mem_teardown(run);
	return err;
}

static int one_memfd(struct bench_run *run, size_t size)
{
	int fd = memfd_create("tio-bench", MFD_CLOEXEC);
	void *p;

	if (fd < 0)
		return bench_fail(run, errno, "memfd_create");
	if (ftruncate(fd, (off_t)size)) {
		close(fd);
		return bench_fail(run, errno, "ftruncate");
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		 fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return bench_fail(run, errno, "mmap");
	}
	if (mlock(p, size)) {
		munmap(p, size);
		close(fd);
		return bench_fail(run, errno, "mlock");
	}
	munlock(p, size);
	munmap(p, size);
	close(fd);
	return 0;
}

static int one_udmabuf(struct bench_run *run, struct mstate *s)
{
	int memfd = memfd_create("tio-bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct udmabuf_create c = { .size = s->size };
	int fd, err = 0;

	if (memfd < 0)
		return bench_fail(run, errno, "memfd_create");
	if (ftruncate(memfd, (off_t)s->size) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		err = bench_fail(run, errno, "memfd");
		goto out;
	}
	c.memfd = (__u32)memfd;
	fd = ioctl(s->fd, UDMABUF_CREATE, &c);
	if (fd < 0)
		err = bench_fail(run, errno, "UDMABUF_CREATE");
	else
		close(fd);
out:
	close(memfd);
	return err;
}

static int mem_run(struct bench_run *run, uint64_t n)
{
	struct mstate *s = run->state;
	enum mkind k = MKIND(run->c->arg);
	uint64_t i;
	size_t off;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		switch (k) {
		case M_MEMFD:
			err = one_memfd(run, s->size);
			break;
		case M_MALLOC: {
			char *p = malloc(s->size);

			if (!p)
				return bench_fail(run, ENOMEM, "malloc");
			for (off = 0; off < s->size; off += 4096)
				p[off] = 1;
			bench_keep(p);
			free(p);
			break;
		}
		case M_KALLOC: {
			struct tio_buf_alloc a = { .size = s->size };
			struct tio_handle_op f = { 0 };

			if (ioctl(s->fd, TIO_IOC_BUF_ALLOC, &a))
				return bench_fail(run, errno, "BUF_ALLOC");
			f.handle = a.handle;
			if (ioctl(s->fd, TIO_IOC_BUF_FREE, &f))
				return bench_fail(run, errno, "BUF_FREE");
			break;
		}
		case M_KPIN: {
			struct tio_buf_pin p = { .addr = (uintptr_t)s->mem,
						 .size = s->size };
			struct tio_handle_op f = { 0 };

			if (ioctl(s->fd, TIO_IOC_BUF_PIN_USER, &p))
				return bench_fail(run, errno, "BUF_PIN_USER");
			f.handle = p.handle;
			if (ioctl(s->fd, TIO_IOC_BUF_FREE, &f))
				return bench_fail(run, errno, "BUF_FREE");
			break;
		}
		case M_EXPORT: {
			struct tio_buf_export e = { .handle = s->handle,
						    .flags = TIO_EXPORT_F_CLOEXEC };
			struct tio_buf_import im = { 0 };
			struct tio_handle_op f = { 0 };

			if (ioctl(s->fd, TIO_IOC_BUF_EXPORT, &e))
				return bench_fail(run, errno, "BUF_EXPORT");
			im.fd = e.fd;
			if (ioctl(s->fd, TIO_IOC_BUF_IMPORT, &im)) {
				close(e.fd);
				return bench_fail(run, errno, "BUF_IMPORT");
			}
			f.handle = im.handle;
			if (ioctl(s->fd, TIO_IOC_BUF_FREE, &f))
				err = bench_fail(run, errno, "BUF_FREE");
			close(e.fd);
			break;
		}
		case M_HEAP: {
			struct dma_heap_allocation_data d = {
				.len = s->size, .fd_flags = O_RDWR | O_CLOEXEC };

			if (ioctl(s->fd, DMA_HEAP_IOCTL_ALLOC, &d))
				return bench_fail(run, errno, "DMA_HEAP_IOCTL_ALLOC");
			close((int)d.fd);
			break;
		}
		case M_UDMABUF:
			err = one_udmabuf(run, s);
			break;
		case M_PINNED: {
			tio_buffer_t *b;

			if (tio_pinned_alloc(s->size, &b))
				return bench_fail(run, ENOMEM, "tio_pinned_alloc");
			bench_keep(tio_buffer_data(b));
			tio_buffer_decref(b);
			break;
		}
		}
	}
	return err;
}

#define MEM(n, k, sz, cls, what) {					\
	.suite = "memory", .name = n, .size = cls,			\
	.note = what, .setup = mem_setup, .run = mem_run,		\
	.teardown = mem_teardown, .arg = MARG(k, sz) }
#define SIZES(pfx, k, what)						\
	MEM(pfx "/4k", k, 4 * KiB, "small", what),			\
	MEM(pfx "/64k", k, 64 * KiB, "small", what),			\
	MEM(pfx "/1m", k, MiB, "medium", what),				\
	MEM(pfx "/16m", k, 16 * MiB, "large", what),			\
	MEM(pfx "/64m", k, 64 * MiB, "large", what)

static struct bench_case cases[] = {
	SIZES("user/memfd-mlock", M_MEMFD, "user backend pinned buffer alloc+free"),
	SIZES("malloc-touch", M_MALLOC, "pageable: malloc, touch pages, free"),
	SIZES("kernel/alloc", M_KALLOC, "BUF_ALLOC + BUF_FREE"),
	SIZES("kernel/pin-user", M_KPIN, "BUF_PIN_USER + BUF_FREE"),
	MEM("kernel/export-import/1m", M_EXPORT, MiB, "medium",
	    "BUF_EXPORT + BUF_IMPORT + BUF_FREE + close"),
	SIZES("peer/dma-heap", M_HEAP, "/dev/dma_heap/system alloc + close"),
	SIZES("peer/udmabuf", M_UDMABUF, "udmabuf from a sealed memfd + close"),
	MEM("pinned-cache/1k", M_PINNED, KiB, "small", pinned_note[0]),
	MEM("pinned-cache/64k", M_PINNED, 64 * KiB, "small", pinned_note[1]),
	MEM("pinned-cache/1m", M_PINNED, MiB, "medium", pinned_note[2]),
};

static void __attribute__((constructor)) memory_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
