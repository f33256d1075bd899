// SPDX-License-Identifier: GPL-2.0
/*
 * The forms that carry several records (SUBMIT vectors, the file's command
 * ring) and the rest of the surface: mmap of the device and of dma-bufs,
 * dma-buf and sync_file ioctls, closes, the device's files, debugfs and
 * module parameters.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include "kfuzz.h"
#include "tio_peers.h"

#define R(n)	t_rnd(&k->t, (n))
#define ONE(n)	t_one_in(&k->t, (n))

unsigned int out_len(unsigned int cmd);

/* Generate record @rec from instruction @insn (its own tape). */
static void gen_record(struct worker *k, const uint8_t *insn, int fi,
		       struct tio_cmd *rec, bool bounded, size_t off)
{
	struct tape saved = k->t;
	unsigned int opi = insn[2] % g_nops;

	t_init(&k->t, insn + INSN_HDR, INSN - INSN_HDR);
	memset(rec, 0, sizeof(*rec));
	rec->op = pick_cmd(k, opi);
	gen_payload(k, opi, fi, rec->payload.bytes, bounded, off);
	if (ONE(16))
		mutate(k, rec, sizeof(*rec));
	if (bounded)
		bound_wait(k, rec->op, rec->payload.bytes);
	k->t = saved;
}

/* The results of records the driver ran: checked, and what they made kept. */
void harvest_records(struct worker *k, int fi, const struct tio_cmd *v,
			    unsigned int n, const char *form)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		check_result(k, form, v[i].op, v[i].result);
		if (!v[i].result)
			harvest(k, fi, v[i].op, v[i].payload.bytes, out_len(v[i].op));
	}
}

/* A SUBMIT vector of the @n instructions at @recs, by ioctl or uring. */
void do_submit(struct worker *k, int fi, const uint8_t *recs, unsigned int n)
{
	struct tio_cmd *v = (struct tio_cmd *)(k->scratch + VEC_OFF);
	bool uring = k->ring_ok && ONE(3);
	struct tio_submit s = { 0 };
	unsigned int i, count, done;
	char *out, *rv;
	uint64_t uptr;
	int ret;

	switch (R(20)) {
	case 0: count = 0; break;
	case 1: count = MAX_SUBMIT; break;
	case 2: count = MAX_SUBMIT + 1; break;
	case 3: count = (uint32_t)t_next(&k->t); break;
	default: count = n; break;
	}
	for (i = 0; i < n && i < count; i++)
		/* Waits in records unbounded only where the interrupt reaches them. */
		gen_record(k, recs + i * INSN, fi, &v[i], uring || !k->kicked,
			   REC_OFF + i * 256);
	/* Long vectors: INFO and emits, cheap and valid. */
	for (; i < count && i <= MAX_SUBMIT; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].op = ONE(2) ? TIO_IOC_INFO : TIO_IOC_FENCE_EMIT;
		((struct tio_fence_emit *)v[i].payload.bytes)->stream = pick_handle(k, fi, 1);
	}
	s.count = count;
	if (ONE(2))
		s.flags = TIO_SUBMIT_F_CONTINUE;
	if (ONE(32))
		s.flags = t_next(&k->t);
	if (ONE(32))
		s.pad = 1;
	switch (R(12)) {
	case 0:	s.cmds_ptr = (uintptr_t)(k->scratch_ro + VEC_OFF); break;
	case 1:	s.cmds_ptr = (uintptr_t)(k->scratch + VEC_OFF - 64 * (1 + R(3))); break;
	case 2:	s.cmds_ptr = pick_uptr(k, NULL, 0, 0) | 1; break;
	default: s.cmds_ptr = (uintptr_t)v; break;
	}
	uptr = pick_uptr(k, &s, sizeof(s), 0);
	if (uring) {
		ret = uring_wait_one(k, fi, TIO_IOC_SUBMIT, uptr);
	} else {
		ret = dev_ioctl(k, fi, TIO_IOC_SUBMIT, uptr);
	}
	/* Written back wherever the vector and the envelope were. */
	out = scratch_ptr(k, uptr, sizeof(struct tio_submit));
	rv = scratch_ptr(k, s.cmds_ptr, sizeof(struct tio_cmd));
	if (ret < 0 || !out || !rv)
		return;
	memcpy(&done, (char *)out + offsetof(struct tio_submit, done), sizeof(done));
	if (done > count || (unsigned int)ret > done)
		oracle_fail("errno", "SUBMIT returned %d with done %u of count %u", ret,
			    done, count);
	for (i = 0; i < done; i++) {
		struct tio_cmd rec;

		memcpy(&rec, rv + i * sizeof(rec), sizeof(rec));
		harvest_records(k, fi, &rec, 1, "SUBMIT record");
	}
}

/* The file's ring, set up (or found set up) and mapped, or NULL. Locked. */
static struct tio_ring_hdr *ring_of(struct worker *k, int fi)
{
	static const uint32_t sizes[] = { 1, 8, 64, 256 };
	struct devfile *f = &k->w->f[fi];
	struct tio_ring_setup rs = { .entries = sizes[R(4)] };
	uint32_t entries;
	void *m;

	if (f->ring)
		return f->ring;
	if (ioctl(f->fd, TIO_IOC_RING_SETUP, &rs) && errno != EBUSY)
		return NULL;
	/* Set up by someone (a fuzzed record, an ioctl): read its size. */
	m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, f->fd, TIO_RING_MMAP_OFFSET);
	if (m == MAP_FAILED)
		return NULL;
	entries = ((struct tio_ring_hdr *)m)->entries;
	munmap(m, PAGE);
	f->ringlen = (TIO_RING_CMDS_OFFSET + (size_t)entries * 64 + PAGE - 1) & ~(PAGE - 1);
	m = mmap(NULL, f->ringlen, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
		 TIO_RING_MMAP_OFFSET);
	if (m != MAP_FAILED)
		f->ring = m;
	return f->ring;
}

static void ring_lock(pthread_mutex_t *m)
{
	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m);
}

/*
 * The @n instructions at @recs written into the ring at its tail and
 * published; sometimes with a tail beyond the ring or behind head, or a
 * head moved by hand; entered by ioctl or uring. Under the file's ring
 * lock (threads and children share the ring), so that the records the
 * enter consumed are read back before anyone writes the ring again.
 */
void do_ring(struct worker *k, int fi, const uint8_t *recs, unsigned int n)
{
	struct devfile *f = &k->w->f[fi];
	struct tio_ring_enter *e = (struct tio_ring_enter *)k->scratch;
	struct tio_ring_hdr *h;
	struct tio_cmd *cmds;
	uint32_t mask, head, tail, i, used, moved;
	int ret;

	ring_lock(f->ringlock);
	h = ring_of(k, fi);
	if (!h)
		goto out;
	cmds = (struct tio_cmd *)((char *)h + TIO_RING_CMDS_OFFSET);
	mask = h->mask;
	head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	moved = head;
	tail = h->tail;
	used = tail - head;
	if (used > mask + 1)	/* a bad tail left by an earlier instruction */
		tail = head, used = 0;
	for (i = 0; i < n && used < mask + 1; i++, used++) {
		struct tio_cmd rec;

		gen_record(k, recs + i * INSN, fi, &rec, true, REC_OFF + (i & 15) * 256);
		memcpy(&cmds[tail++ & mask], &rec, sizeof(rec));
	}
	switch (R(24)) {
	case 0: tail += mask + 1 + R(4); break;			/* beyond */
	case 1: tail -= used + 1; break;			/* behind head */
	case 2:
		moved = (uint32_t)t_next(&k->t);
		__atomic_store_n(&h->head, moved, __ATOMIC_RELAXED);
		break;
	case 3: tail = (uint32_t)t_next(&k->t); break;
	}
	__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
	memset(e, 0, sizeof(*e));
	e->flags = ONE(2) ? TIO_SUBMIT_F_CONTINUE : 0;
	if (ONE(32))
		e->flags = t_next(&k->t);
	if (k->ring_ok && ONE(3))
		ret = uring_wait_one(k, fi, TIO_IOC_RING_ENTER, (uintptr_t)e);
	else
		ret = dev_ioctl(k, fi, TIO_IOC_RING_ENTER, (uintptr_t)e);
	if (ret < 0) {
		/*
		 * Refused, nothing ran: a head we moved by hand is put back
		 * unless the enter put the kernel's back already (one refused
		 * before it looked at head did not), and what we published is
		 * withdrawn.
		 */
		if (moved != head)
			__atomic_compare_exchange_n(&h->head, &moved, head, false,
						    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		__atomic_store_n(&h->tail, __atomic_load_n(&h->head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
		goto out;
	}
	/*
	 * What the enter says it ran, not how far the head word moved: an
	 * enter of another thread by ioctl or uring_cmd (not under the ring
	 * lock) may run records or put back a head word in between.
	 */
	if (e->done > mask + 1 || (uint32_t)ret > e->done)
		oracle_fail("errno", "RING_ENTER returned %d and ran %u records (%u entries)",
			    ret, e->done, mask + 1);
	/*
	 * Harvest from where this enter found head: records another enter
	 * ran in between (their fds, their objects) are known then too.
	 */
	tail = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	if (tail - head > mask + 1)
		head = tail - e->done;
	for (i = head; i != tail; i++)
		harvest_records(k, fi, &cmds[i & mask], 1, "ring record");
out:
	pthread_mutex_unlock(f->ringlock);
}

/* ---- mappings ---- */

/* volatile: the compiler must not move the stores around the accesses */
static __thread sigjmp_buf *volatile fault_jb;

/* A fault in touch() ends it; any other returns (the caller aborts). */
void on_fault(int sig)
{
	if (fault_jb)
		siglongjmp(*fault_jb, 1);
}

static void touch(volatile char *m, size_t len, int prot)
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

/*
 * Set doorbell @m of stream @bell to a point: the last emitted or one
 * before it mostly, else beyond it, zero (backwards) or anything; then
 * sometimes ask for a point at once (a FENCE_WAIT of zero timeout reads it).
 */
static void ring(struct worker *k, int fi, uint32_t bell, volatile char *m, int prot)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1) == 0) {
		fault_jb = &jb;
		*(volatile uint64_t *)m = pick_seqno(k, fi, bell);
		if (prot & PROT_READ)
			(void)*(volatile uint64_t *)m;
	}
	fault_jb = NULL;
	if (ONE(2)) {
		struct tio_fence_wait *a = (void *)k->scratch;

		memset(a, 0, sizeof(*a));
		a->stream = bell;
		a->seqno = pick_seqno(k, fi, bell);
		dev_ioctl(k, fi, TIO_IOC_FENCE_WAIT, (uintptr_t)a);
	}
}

void do_mmap(struct worker *k, int fi)
{
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_READ | PROT_EXEC, PROT_NONE,
	};
	struct world *w = k->w;
	int prot = prots[R(5)], slot = R(NMAPS), fd;
	size_t len = PAGE * (1 + R(4));
	uint32_t bell = 0;
	uint64_t off;
	void *m;

	if (ONE(4)) {
		/* A stream's doorbell page (after its seqno page), rung. */
		fd = file_fd(k, fi);
		bell = pick_handle(k, fi, 1);
		off = ((uint64_t)bell << 40) + PAGE;
		len = ONE(8) ? 2 * PAGE : PAGE;
		prot = ONE(8) ? prots[R(5)] : PROT_READ | PROT_WRITE;
	} else if (ONE(3)) {
		fd = pick_fd(k);		/* dma-bufs, sync_files, junk */
		off = ONE(4) ? PAGE * R(8) : 0;
	} else {
		fd = file_fd(k, fi);
		off = (uint64_t)pick_handle(k, fi, ONE(3)) << 40;
		if (ONE(4))
			off += PAGE * R(8);
		if (ONE(16))
			off = t_next(&k->t) & ~(PAGE - 1);
	}
	if (ONE(16))
		len = (t_next(&k->t) >> R(64)) & ~(PAGE - 1);
	if (!len || len > (64 << 20))
		len = PAGE;
	m = mmap(NULL, len, prot, ONE(6) ? MAP_PRIVATE : MAP_SHARED, fd, off);
	if (m == MAP_FAILED) {
		if (fd == file_fd(k, fi))
			check_result(k, "mmap", 0, -errno);
		return;
	}
	if (bell && (prot & PROT_WRITE))
		ring(k, fi, bell, m, prot);
	else
		touch(m, len, prot);
	/* Kept a while: frees and closes meet live mappings. */
	pthread_mutex_lock(&w->lock);
	if (w->maps[slot].addr)
		munmap(w->maps[slot].addr, w->maps[slot].len);
	w->maps[slot].addr = m;
	w->maps[slot].len = len;
	pthread_mutex_unlock(&w->lock);
}

/* ---- other fds: dma-bufs, sync_files, sw_sync ---- */

static int pick_tracked(struct worker *k, int kind)
{
	struct world *w = k->w;
	int fd = -1, i, n = 0, r = R(NFDS);

	pthread_mutex_lock(&w->lock);
	for (i = 0; i < w->nfds; i++)
		n += !kind || w->fds[i].kind == kind;
	for (i = 0; i < w->nfds && n; i++) {
		if (kind && w->fds[i].kind != kind)
			continue;
		if (r-- % n == 0) {
			fd = w->fds[i].fd;
			break;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return fd;
}

static int dmabuf_op(struct worker *k, int fd)
{
	switch (R(4)) {
	case 0: {
		struct dma_buf_sync s = { .flags = R(8) };
		int ret;

		if (ONE(8))
			s.flags = t_next(&k->t);
		ret = ioctl(fd, DMA_BUF_IOCTL_SYNC, &s);
		if (!ret && (s.flags & DMA_BUF_SYNC_END) == 0) {
			s.flags |= DMA_BUF_SYNC_END;
			ioctl(fd, DMA_BUF_IOCTL_SYNC, &s);
		}
		return ret;
	}
	case 1: {
		struct dma_buf_export_sync_file x = {
			.flags = ONE(4) ? (uint32_t)t_next(&k->t) : 1 + R(3),
		};
		int ret = ioctl(fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &x);

		if (!ret)
			track_fd(k->w, x.fd, TFD_SYNC_FILE, k->w->resv_deadline);
		return ret;
	}
	case 2: {
		/* Only our own sync_files: every fence in a resv is bounded. */
		struct dma_buf_import_sync_file x = {
			.flags = ONE(4) ? (uint32_t)t_next(&k->t) : 1 + R(3),
			.fd = pick_tracked(k, TFD_SYNC_FILE),
		};

		return ioctl(fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &x);
	}
	default:
		return ioctl(fd, DMA_BUF_SET_NAME_B, "tio-fuzz");
	}
}

void do_fdop(struct worker *k, int fi)
{
	int fd = pick_fd(k);

	k->busy_since = now_ns();
	switch (R(7)) {
	case 0:
		fd = pick_tracked(k, TFD_DMABUF);
		if (fd >= 0)
			dmabuf_op(k, fd);
		break;
	case 1: {
		struct sync_file_info info = { 0 };
		struct sync_fence_info sfi[4];

		if (ONE(2)) {
			info.num_fences = 4;
			info.sync_fence_info = (uintptr_t)sfi;
		}
		ioctl(fd, SYNC_IOC_FILE_INFO, &info);
		break;
	}
	case 2: {
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

		poll(&pfd, 1, 0);
		break;
	}
	case 3:
		fd = pick_tracked(k, 0);
		if (fd >= 0)
			close_tracked(k->w, fd);
		break;
	case 4:
		if (k->w->swtl >= 0)
			tio_sw_sync_inc(k->w->swtl, R(1 << 16));
		break;
	case 5: {
		int d = dup(pick_tracked(k, 0));

		if (d >= 0)
			track_fd(k->w, d, TFD_OTHER, 0);
		break;
	}
	default:
		if (fd >= 0)
			dmabuf_op(k, fd);
		break;
	}
	k->busy_since = 0;
}

/* ---- the device's files, debugfs, module parameters ---- */

void restore_knobs(void);
void set_knob(struct worker *k);

static void read_file(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* The debugfs files the driver shows: module-wide and per open file. */
static void read_debugfs(struct worker *k)
{
	static const char *const top[] = { "stats", "commands", "timing" };
	struct dirent **ents;
	char path[128];
	int n, i;

	if (ONE(2)) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/tensorio/%s", top[R(3)]);
	} else {
		/* files/PID.N of the files open now */
		n = scandir("/sys/kernel/debug/tensorio/files", &ents, NULL, alphasort);

		if (n <= 2) {
			for (i = 0; i < n; i++)
				free(ents[i]);
			free(n >= 0 ? ents : NULL);
			return;
		}
		i = 2 + R(n - 2);
		snprintf(path, sizeof(path), "/sys/kernel/debug/tensorio/files/%s/%s",
			 ents[i]->d_name, ONE(2) ? "objects" : "stats");
		for (i = 0; i < n; i++)
			free(ents[i]);
		free(ents);
	}
	read_file(path);
}

void do_fileop(struct worker *k, int fi)
{
	struct world *w = k->w;
	struct devfile *f = &w->f[fi];
	int fd;

	switch (R(8)) {
	case 0: case 1:		/* (re)open */
		fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			break;
		pthread_mutex_lock(&w->lock);
		if (fd > w->fd_high)
			w->fd_high = fd;
		if (f->fd < 0) {
			f->fd = fd;
			fd = -1;
		}
		pthread_mutex_unlock(&w->lock);
		if (fd >= 0)
			close(fd);
		break;
	case 2:			/* close: its waits are cancelled */
		if (w->in_child || f->fd < 0)
			break;
		ring_lock(f->ringlock);
		if (f->ring)
			munmap(f->ring, f->ringlen);
		f->ring = NULL;
		pthread_mutex_lock(&w->lock);
		fd = f->fd;
		f->fd = -1;
		w->closed_mid = true;
		memset(&f->pool, 0, sizeof(f->pool));
		f->have_base = false;
		pthread_mutex_unlock(&w->lock);
		close(fd);
		pthread_mutex_unlock(f->ringlock);
		break;
	case 3:
		if (f->fd >= 0) {
			ring_lock(f->ringlock);
			ring_of(k, fi);
			pthread_mutex_unlock(f->ringlock);
		}
		break;
	case 4: case 5:
		read_debugfs(k);
		break;
	default:
		set_knob(k);
		break;
	}
}
