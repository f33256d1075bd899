// SPDX-License-Identifier: GPL-2.0
/*
 * tio_fault: fail every allocation point of every allocating driver path,
 * one at a time, in the debug VM.
 *
 * For each path and n = 1, 2, ...: set up the path's preconditions, write
 * n to /proc/thread-self/fail-nth (the n-th failslab or fail_page_alloc
 * check of this task fails; the debugfs knobs are set so that sleeping
 * allocations and order-0 pages count too, probability 0 so nothing else
 * fails), make the one call, read fail-nth back. A fault was injected when
 * it reached 0; the call must then return a clean error (or succeed, if
 * the allocation had a fallback) and leave the driver's counters (debugfs
 * tensorio/stats: buffers, streams, pinned bytes, parked waits) as they
 * were. When the call succeeds with fail-nth unconsumed, every point of
 * the path has been failed once. The VM's init then checks kmemleak, the
 * kernel log and that the module unloads.
 *
 * Prints TAP: one line per path, and the totals (paths, faults injected).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tio_peers.h"

#define PAGE 4096
#define MAX_N 2000

static int nth_fd = -1;
static int tap_n;
static int failed_paths;
static unsigned long total_faults;
static unsigned int errs[160];

/* Global driver counters from debugfs, summed into comparable form. */
struct counters {
	long files, buffers, streams, pinned, parked, waits;
	bool ok;
};

static struct counters counters(void)
{
	struct counters c = { 0 };
	char name[64];
	long v;
	FILE *f = fopen("/sys/kernel/debug/tensorio/stats", "r");

	if (!f)
		return c;
	c.ok = true;
	while (fscanf(f, "%63s %ld", name, &v) == 2) {
		if (!strcmp(name, "files"))
			c.files = v;
		else if (!strcmp(name, "buffers"))
			c.buffers = v;
		else if (!strcmp(name, "streams"))
			c.streams = v;
		else if (!strcmp(name, "pinned_bytes_total"))
			c.pinned = v;
		else if (!strcmp(name, "parked_uring_total"))
			c.parked = v;
		else if (!strcmp(name, "pending_waits"))
			c.waits = v;
	}
	fclose(f);
	return c;
}

static bool same(struct counters a, struct counters b)
{
	return a.files == b.files && a.buffers == b.buffers && a.streams == b.streams &&
	       a.pinned == b.pinned && a.parked == b.parked && a.waits == b.waits;
}

/* Counters settle (deferred fput, task work): wait up to 2 s for @want. */
static bool settle(struct counters want, struct counters *got)
{
	for (int i = 0; i < 200; i++) {
		*got = counters();
		if (!got->ok || same(*got, want))
			return true;
		usleep(10000);
	}
	return false;
}

static void nth_set(unsigned int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%u", n);

	if (pwrite(nth_fd, b, len, 0) != len) {
		perror("fail-nth");
		exit(1);
	}
}

static unsigned int nth_get(void)
{
	char b[16] = { 0 };

	if (pread(nth_fd, b, sizeof(b) - 1, 0) <= 0)
		return 0;
	return strtoul(b, NULL, 10);
}

static bool knob(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

/*
 * A path: setup() makes the preconditions (no faults), call() is the one
 * call under test (returns 0 or -errno), cleanup() undoes both.
 */
struct ctx {
	int dev, dev2, fd, fd2, tl;
	__u32 buf, stream;
	__u64 seqno;
	struct io_uring ring;
	bool ring_ok;
	char *mem;
	void *map;
	struct tio_cmd cmds[4];
	union {
		struct tio_buf_alloc alloc;
		struct tio_buf_pin pin;
		struct tio_buf_export exp;
		struct tio_buf_import imp;
		struct tio_stream_create sc;
		struct tio_fence_emit emit;
		struct tio_fence_export fexp;
		struct tio_fence_import fimp;
		struct tio_buf_attach att;
		struct tio_fence_wait wait;
		struct tio_buf_desc desc;
		struct tio_submit sub;
		struct tio_ring_setup rs;
	} a;
	struct tio_tensor_desc d;
};

struct path {
	const char *name;
	int (*setup)(struct ctx *c);
	int (*call)(struct ctx *c);
};

static int xioctl(int fd, unsigned long cmd, void *p)
{
	return ioctl(fd, cmd, p) ? -errno : 0;
}

static int new_buf(struct ctx *c, __u64 size)
{
	struct tio_buf_alloc a = { .size = size };
	int ret = xioctl(c->dev, TIO_IOC_BUF_ALLOC, &a);

	c->buf = a.handle;
	return ret;
}

static int new_stream(struct ctx *c)
{
	struct tio_stream_create s = { 0 };
	struct tio_fence_emit e = { 0 };
	int ret = xioctl(c->dev, TIO_IOC_STREAM_CREATE, &s);

	if (ret)
		return ret;
	c->stream = e.stream = s.handle;
	ret = xioctl(c->dev, TIO_IOC_FENCE_EMIT, &e);
	c->seqno = e.seqno;
	return ret;
}

static int s_none(struct ctx *c) { return 0; }
static int s_buf(struct ctx *c) { return new_buf(c, 2 * PAGE); }
static int s_stream(struct ctx *c) { return new_stream(c); }
static int s_buf_stream(struct ctx *c)
{
	return new_buf(c, PAGE) ?: new_stream(c);
}

static int s_export(struct ctx *c)
{
	struct tio_buf_export e = { .flags = TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR };
	struct tio_buf_alloc a = { .size = 3 * PAGE };
	int ret = xioctl(c->dev2, TIO_IOC_BUF_ALLOC, &a);

	e.handle = a.handle;
	ret = ret ?: xioctl(c->dev2, TIO_IOC_BUF_EXPORT, &e);
	c->fd2 = ret ? -1 : e.fd;
	return ret;
}

static int s_udmabuf(struct ctx *c)
{
	c->fd2 = tio_udmabuf(2 * PAGE);
	return c->fd2 < 0 ? c->fd2 : 0;
}

static int s_heap(struct ctx *c)
{
	c->fd2 = tio_heap_dmabuf(2 * PAGE);
	return c->fd2 < 0 ? c->fd2 : 0;
}

static int s_swsync(struct ctx *c)
{
	int ret = new_stream(c);

	if (ret)
		return ret;
	c->fd2 = tio_sw_sync_fence(c->tl, 1);
	return c->fd2 < 0 ? c->fd2 : 0;
}

static int c_alloc(struct ctx *c)
{
	memset(&c->d, 0, sizeof(c->d));
	c->d.code = TIO_DTYPE_FLOAT;
	c->d.bits = 32;
	c->d.lanes = 1;
	c->d.ndim = 2;
	c->d.shape[0] = 16;
	c->d.shape[1] = 64;
	c->a.alloc = (struct tio_buf_alloc){ .size = 4 * PAGE,
					     .desc_ptr = (uintptr_t)&c->d };
	return xioctl(c->dev, TIO_IOC_BUF_ALLOC, &c->a.alloc);
}

static int c_pin(struct ctx *c)
{
	c->a.pin = (struct tio_buf_pin){ .addr = (uintptr_t)c->mem, .size = 4 * PAGE };
	return xioctl(c->dev, TIO_IOC_BUF_PIN_USER, &c->a.pin);
}

static int c_export(struct ctx *c)
{
	c->a.exp = (struct tio_buf_export){ .handle = c->buf,
					    .flags = TIO_EXPORT_F_CLOEXEC };
	return xioctl(c->dev, TIO_IOC_BUF_EXPORT, &c->a.exp);
}

static int c_import(struct ctx *c)
{
	c->a.imp = (struct tio_buf_import){ .fd = c->fd2 };
	return xioctl(c->dev, TIO_IOC_BUF_IMPORT, &c->a.imp);
}

static int c_set_desc(struct ctx *c)
{
	memset(&c->d, 0, sizeof(c->d));
	c->d.code = TIO_DTYPE_UINT;
	c->d.bits = 8;
	c->d.lanes = 1;
	c->d.ndim = 1;
	c->d.shape[0] = PAGE;
	c->a.desc = (struct tio_buf_desc){ .handle = c->buf, .desc_ptr = (uintptr_t)&c->d };
	return xioctl(c->dev, TIO_IOC_BUF_SET_DESC, &c->a.desc);
}

static int c_stream(struct ctx *c)
{
	memset(&c->a.sc, 0, sizeof(c->a.sc));
	return xioctl(c->dev, TIO_IOC_STREAM_CREATE, &c->a.sc);
}

static int c_emit(struct ctx *c)
{
	c->a.emit = (struct tio_fence_emit){ .stream = c->stream };
	return xioctl(c->dev, TIO_IOC_FENCE_EMIT, &c->a.emit);
}

/* With an error: the run of points needs a span (tio_timeline.c). */
static int c_fsignal_err(struct ctx *c)
{
	struct tio_fence_signal s = { .stream = c->stream, .seqno = c->seqno,
				      .error = -EIO };

	return xioctl(c->dev, TIO_IOC_FENCE_SIGNAL, &s);
}

static int c_fexport(struct ctx *c)
{
	c->a.fexp = (struct tio_fence_export){ .stream = c->stream, .seqno = c->seqno,
					       .flags = TIO_EXPORT_F_CLOEXEC };
	return xioctl(c->dev, TIO_IOC_FENCE_EXPORT, &c->a.fexp);
}

static int c_fimport(struct ctx *c)
{
	c->a.fimp = (struct tio_fence_import){ .stream = c->stream, .fd = c->fd2 };
	return xioctl(c->dev, TIO_IOC_FENCE_IMPORT, &c->a.fimp);
}

static int c_attach(struct ctx *c)
{
	c->a.att = (struct tio_buf_attach){ .handle = c->buf, .stream = c->stream,
					    .seqno = c->seqno, .flags = TIO_RESV_F_WRITE };
	return xioctl(c->dev, TIO_IOC_BUF_ATTACH_FENCE, &c->a.att);
}

static int c_submit(struct ctx *c)
{
	memset(c->cmds, 0, sizeof(c->cmds));
	for (int i = 0; i < 4; i++) {
		c->cmds[i].op = TIO_IOC_FENCE_EMIT;
		((struct tio_fence_emit *)c->cmds[i].payload.bytes)->stream = c->stream;
	}
	c->cmds[3].op = TIO_IOC_INFO;
	c->a.sub = (struct tio_submit){ .cmds_ptr = (uintptr_t)c->cmds, .count = 4 };
	return xioctl(c->dev, TIO_IOC_SUBMIT, &c->a.sub);
}

/* The command ring: its setup (allocation, pinned charge) and mmap. */
static int c_ring_setup(struct ctx *c)
{
	c->a.rs = (struct tio_ring_setup){ .entries = 256 };
	return xioctl(c->dev, TIO_IOC_RING_SETUP, &c->a.rs);
}

/* Ring records that allocate: results in place, nothing left on failure. */
static int s_ring(struct ctx *c)
{
	struct tio_ring_setup rs = { .entries = 64 };	/* two pages, as ctx_close() unmaps */
	int ret = xioctl(c->dev, TIO_IOC_RING_SETUP, &rs);

	if (ret)
		return ret;
	c->map = mmap(NULL, rs.size, PROT_READ | PROT_WRITE, MAP_SHARED, c->dev,
		      rs.mmap_offset);
	if (c->map == MAP_FAILED) {
		c->map = NULL;
		return -errno;
	}
	return new_stream(c);
}

static int c_ring_enter(struct ctx *c)
{
	struct tio_ring_hdr *h = c->map;
	struct tio_cmd *cmds = (struct tio_cmd *)((char *)c->map + TIO_RING_CMDS_OFFSET);
	struct tio_ring_enter e = { 0 };
	unsigned int i;

	memset(cmds, 0, 4 * sizeof(*cmds));
	for (i = 0; i < 3; i++) {
		cmds[i].op = TIO_IOC_FENCE_EMIT;
		((struct tio_fence_emit *)cmds[i].payload.bytes)->stream = c->stream;
	}
	cmds[3].op = TIO_IOC_BUF_ALLOC;
	((struct tio_buf_alloc *)cmds[3].payload.bytes)->size = PAGE;
	__atomic_store_n(&h->tail, h->head + 4, __ATOMIC_RELEASE);
	if (ioctl(c->dev, TIO_IOC_RING_ENTER, &e) < 0)
		return -errno;
	/* A record's failure is its result; the enter itself succeeded. */
	for (i = 0; i < 4; i++)
		if (cmds[i].result)
			return cmds[i].result;
	return 0;
}

/* An io_uring FENCE_WAIT that parks (the point is unsignalled). */
static int c_uring_park(struct ctx *c)
{
	struct io_uring_sqe *sqe;

	c->a.wait = (struct tio_fence_wait){ .stream = c->stream, .seqno = c->seqno,
					     .timeout_ns = -1 };
	sqe = io_uring_get_sqe(&c->ring);
	if (!sqe)
		return -EBUSY;
	tio_prep_cmd(sqe, c->dev, TIO_IOC_FENCE_WAIT, &c->a.wait);
	sqe->user_data = 7;
	return io_uring_submit(&c->ring) == 1 ? 0 : -EAGAIN;
}

/* io_uring INFO (inline completion): the ring's own allocations too. */
static int c_uring_info(struct ctx *c)
{
	static struct tio_info info;

	memset(&info, 0, sizeof(info));
	return tio_uring_sync(&c->ring, c->dev, TIO_IOC_INFO, &info, 9);
}

static int c_open(struct ctx *c)
{
	c->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	return c->fd < 0 ? -errno : 0;
}

static int c_mmap(struct ctx *c)
{
	struct tio_buf_info i = { .handle = c->buf };
	int ret = xioctl(c->dev, TIO_IOC_BUF_INFO, &i);

	if (ret)
		return ret;
	c->map = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, c->dev,
		      i.mmap_offset);
	if (c->map == MAP_FAILED) {
		c->map = NULL;
		return -errno;
	}
	((volatile char *)c->map)[PAGE] = 1;	/* fault a page in */
	return 0;
}

/* After a successful call: the result is usable. */
static int check_result(const struct path *p, struct ctx *c)
{
	struct tio_buf_info i = { 0 };

	if (p->call == c_alloc || p->call == c_pin || p->call == c_import) {
		i.handle = p->call == c_alloc ? c->a.alloc.handle :
			   p->call == c_pin ? c->a.pin.handle : c->a.imp.handle;
		return xioctl(c->dev, TIO_IOC_BUF_INFO, &i);
	}
	if (p->call == c_export || p->call == c_fexport) {
		int fd = p->call == c_export ? c->a.exp.fd : c->a.fexp.fd;

		if (fd < 0 || fcntl(fd, F_GETFD) < 0)
			return -EBADF;
		close(fd);
	}
	if (p->call == c_open)
		close(c->fd);
	if (p->call == c_uring_park) {
		struct tio_fence_signal s = { .stream = c->stream, .seqno = c->seqno };
		struct io_uring_cqe *cqe;
		int ret = xioctl(c->dev, TIO_IOC_FENCE_SIGNAL, &s);

		if (ret)
			return ret;
		ret = io_uring_wait_cqe(&c->ring, &cqe);
		if (ret)
			return ret;
		ret = cqe->res;
		io_uring_cqe_seen(&c->ring, cqe);
		/* A wait that could not park completes with its error. */
		if (ret == -ENOMEM) {
			errs[ENOMEM]++;
			ret = 0;
		}
		return ret;
	}
	return 0;
}

static const struct path paths[] = {
	{ "open", s_none, c_open },
	{ "BUF_ALLOC with descriptor", s_none, c_alloc },
	{ "BUF_PIN_USER", s_none, c_pin },
	{ "BUF_SET_DESC", s_buf, c_set_desc },
	{ "BUF_EXPORT", s_buf, c_export },
	{ "BUF_IMPORT tensorio dma-buf", s_export, c_import },
	{ "BUF_IMPORT udmabuf", s_udmabuf, c_import },
	{ "BUF_IMPORT dma-heap", s_heap, c_import },
	{ "mmap buffer", s_buf, c_mmap },
	{ "STREAM_CREATE", s_none, c_stream },
	{ "FENCE_EMIT", s_stream, c_emit },
	{ "FENCE_SIGNAL with error", s_stream, c_fsignal_err },
	{ "FENCE_EXPORT", s_stream, c_fexport },
	{ "FENCE_IMPORT sw_sync", s_swsync, c_fimport },
	{ "BUF_ATTACH_FENCE", s_buf_stream, c_attach },
	{ "SUBMIT vector", s_stream, c_submit },
	{ "RING_SETUP", s_none, c_ring_setup },
	{ "RING_ENTER records", s_ring, c_ring_enter },
	{ "uring_cmd INFO", s_none, c_uring_info },
	{ "uring_cmd parked FENCE_WAIT", s_stream, c_uring_park },
};

static void ctx_close(struct ctx *c)
{
	if (c->map)
		munmap(c->map, 2 * PAGE);
	if (c->ring_ok)
		io_uring_queue_exit(&c->ring);
	if (c->fd2 >= 0)
		close(c->fd2);
	close(c->dev);
	close(c->dev2);
}

static int ctx_open(struct ctx *c, char *mem, int tl)
{
	memset(c, 0, sizeof(*c));
	c->fd = c->fd2 = -1;
	c->tl = tl;
	c->mem = mem;
	c->dev = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	c->dev2 = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	c->ring_ok = io_uring_queue_init(8, &c->ring, 0) == 0;
	return c->dev < 0 || c->dev2 < 0 || !c->ring_ok ? -1 : 0;
}

static void run_path(const struct path *p, char *mem, int tl)
{
	unsigned int n, faults = 0, fallbacks = 0;
	struct counters base, before, after;
	const char *why = NULL;
	struct ctx c;
	int ret = 0;

	base = counters();
	for (n = 1; n <= MAX_N; n++) {
		unsigned int left;

		if (ctx_open(&c, mem, tl)) {
			why = "setup: cannot open the device or a ring";
			break;
		}
		ret = p->setup(&c);
		if (ret) {
			ctx_close(&c);
			if (ret == -ENOENT || ret == -ENODEV) {
				why = "SKIP";
				break;
			}
			why = "setup failed";
			break;
		}
		before = counters();
		nth_set(n);
		ret = p->call(&c);
		left = nth_get();
		nth_set(0);
		if (left) {		/* no n-th point: every point done */
			if (ret)
				why = "fails without a fault";
			else if ((ret = check_result(p, &c)))
				why = "result unusable";
			ctx_close(&c);
			break;
		}
		faults++;
		if (ret < 0) {
			errs[-ret < 160 ? -ret : 0]++;
			/* A failed call leaves nothing behind. */
			if (p->call != c_uring_park && p->call != c_open &&
			    !settle(before, &after)) {
				printf("# %s, fault %u: counters moved: buffers %ld->%ld streams %ld->%ld pinned %ld->%ld parked %ld->%ld\n",
				       p->name, n, before.buffers, after.buffers,
				       before.streams, after.streams, before.pinned,
				       after.pinned, before.parked, after.parked);
				why = "a failed call left objects behind";
			}
		} else {
			fallbacks++;
			ret = check_result(p, &c);
			if (ret)
				why = "succeeded despite the fault, result unusable";
		}
		ctx_close(&c);
		if (why)
			break;
	}
	if (n > MAX_N)
		why = "more fault points than MAX_N";
	if (!why && !settle(base, &after)) {
		printf("# %s: counters after the path: files %ld buffers %ld streams %ld pinned %ld parked %ld\n",
		       p->name, after.files, after.buffers, after.streams, after.pinned,
		       after.parked);
		why = "objects left after closing everything";
	}
	total_faults += faults;
	tap_n++;
	if (why && !strcmp(why, "SKIP")) {
		printf("ok %d - fault: %s # SKIP peer missing\n", tap_n, p->name);
	} else if (why) {
		failed_paths++;
		printf("not ok %d - fault: %s: %s (fault %u, ret %d)\n", tap_n, p->name,
		       why, n, ret);
	} else {
		printf("ok %d - fault: %s: %u allocation points failed, each cleanly%s\n",
		       tap_n, p->name, faults,
		       fallbacks ? " (some with a working fallback)" : "");
	}
	fflush(stdout);
}

int main(void)
{
	static const char *const knobs[][2] = {
		{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/failslab/verbose", "0" },
		{ "/sys/kernel/debug/failslab/probability", "0" },
		{ "/sys/kernel/debug/failslab/task-filter", "Y" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/probability", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/task-filter", "Y" },
	};
	unsigned int npaths = sizeof(paths) / sizeof(paths[0]), i;
	char *mem;
	int tl;

	printf("TAP version 13\n1..%u\n", npaths + 1);
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		if (!knob(knobs[i][0], knobs[i][1])) {
			printf("1..0 # SKIP no fault injection (%s)\n", knobs[i][0]);
			return 0;
		}
	}
	/* Only this task may fail (with probability 0 nothing random does). */
	knob("/proc/self/make-it-fail", "1");
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		printf("1..0 # SKIP no /proc/thread-self/fail-nth\n");
		return 0;
	}
	mem = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	tl = tio_sw_sync_timeline();
	for (i = 0; i < npaths; i++)
		run_path(&paths[i], mem, tl);
	printf("%s %d - fault: %u paths, %lu faults injected, %d paths failed\n",
	       failed_paths ? "not ok" : "ok", ++tap_n, npaths, total_faults, failed_paths);
	printf("# fault: errors returned:");
	for (i = 0; i < 160; i++)
		if (errs[i])
			printf(" %s x%u", i ? strerror(i) : "other", errs[i]);
	printf("\n");
	if (tl >= 0)
		close(tl);
	return failed_paths ? 1 : 0;
}
