// SPDX-License-Identifier: GPL-2.0
/*
 * Running one input's program: its instructions split among three threads
 * (each with its own KCOV trace and io_uring ring), children forked by it
 * waited for, then the input's cleanup and oracles.
 *
 * Opening and releasing a file of the device costs several ms in the
 * debug VM, more than a whole program, so the files stay open from one
 * input to the next: after each input its fds are closed, its mappings
 * unmapped, its parked waits cancelled (a close of a dup of each file:
 * ->flush) and the objects it created freed. Every 256 inputs
 * (TIO_FUZZ_CHECK_EVERY) all files are closed and the counters oracle
 * runs; when it fails, the inputs since the last check run again one by
 * one, each with its own close, to find the one that leaves something
 * behind, which is saved as the crash input.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "kfuzz.h"
#include "tio_peers.h"

#define KCOV_WORDS	(1UL << 17)

struct world W;
struct worker workers[NTHREADS];
struct shared *S;
unsigned int g_check_every = 256;
char g_artifacts[256] = "./";

static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static unsigned int go_gen, go_pending;

/* The inputs since the last full check, for the bisection. */
static uint8_t batch[256][MAX_INSNS * INSN];
static size_t batch_len[256];
static unsigned int nbatch;

unsigned int group_size(const uint8_t *insn);

/* ---- threads ---- */

/* Split the instructions of @data among threads (groups stay whole). */
static void distribute(const uint8_t *data, unsigned int n)
{
	unsigned int i = 0, g;

	for (g = 0; g < NTHREADS; g++)
		workers[g].nitems = 0;
	while (i < n) {
		const uint8_t *insn = data + i * INSN;
		struct worker *k = &workers[(insn[0] & 3) % NTHREADS];
		unsigned int nsub = group_size(insn);

		if (nsub > n - i - 1)
			nsub = n - i - 1;
		k->items[k->nitems] = insn;
		k->nsub[k->nitems++] = nsub;
		i += 1 + nsub;
	}
}

static void run_items(struct worker *k)
{
	unsigned int i;

	for (i = 0; i < k->nitems; i++)
		exec_item(k, k->items[i], k->nsub[i]);
}

static void *helper_main(void *arg)
{
	struct worker *k = arg;
	unsigned int seen = 0;

	worker_init(k);
	pthread_mutex_lock(&go_lock);
	go_pending--;
	pthread_cond_broadcast(&go_cond);
	seen = go_gen;
	for (;;) {
		while (go_gen == seen)
			pthread_cond_wait(&go_cond, &go_lock);
		seen = go_gen;
		pthread_mutex_unlock(&go_lock);
		if (k->nitems)
			run_items(k);
		pthread_mutex_lock(&go_lock);
		if (!--go_pending)
			pthread_cond_broadcast(&go_cond);
	}
	return NULL;
}

static void *watchdog_main(void *arg)
{
	/* A blocking call past 2 s is interrupted (its wait returns -EINTR). */
	for (;;) {
		uint64_t now = now_ns();
		int i;

		for (i = 0; i < NTHREADS; i++) {
			uint64_t t = workers[i].busy_since;

			if (t && now - t > 2000000000ULL)
				pthread_kill(workers[i].tid, SIGKICK);
		}
		usleep(20000);
	}
	return NULL;
}

static void worker_ring_init(struct worker *k)
{
	k->sqe128 = io_uring_queue_init(64, &k->ring, IORING_SETUP_SQE128 |
					IORING_SETUP_CQE32) == 0;
	k->ring_ok = k->sqe128 || io_uring_queue_init(64, &k->ring, 0) == 0;
}

/*
 * A new ring for @k: tearing the old one down cancels what is still in
 * flight on it (the driver's monitor or io_uring's cancel call).
 */
void worker_ring_renew(struct worker *k)
{
	if (k->ring_ok)
		io_uring_queue_exit(&k->ring);
	memset(k->pend, 0, sizeof(k->pend));
	k->inflight = 0;
	worker_ring_init(k);
}

void worker_init(struct worker *k)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGKICK };

	worker_ring_init(k);
	ev._sigev_un._tid = syscall(SYS_gettid);
	k->kick_ok = timer_create(CLOCK_MONOTONIC, &ev, &k->kick) == 0;
	k->probe_tl = tio_sw_sync_timeline();
	k->kcov_fd = g_kcov ? kcov_open(&k->kcov_area, KCOV_WORDS) : -1;
	if (k->kcov_fd < 0)
		k->kcov_area = NULL;
}

/* Workers 1.. as threads, waiting for programs; a watchdog. */
void start_threads(void)
{
	pthread_t wd;
	int i;

	for (i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		workers[i].w = &W;
	}
	workers[0].tid = pthread_self();
	worker_init(&workers[0]);
	go_pending = NTHREADS - 1;
	for (i = 1; i < NTHREADS; i++)
		pthread_create(&workers[i].tid, NULL, helper_main, &workers[i]);
	pthread_mutex_lock(&go_lock);
	while (go_pending)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
	pthread_create(&wd, NULL, watchdog_main, NULL);
}

/* ---- children ---- */

/* The child's own scratch: the parent's threads go on using theirs. */
static void kid_memory(struct worker *k)
{
	int memfd = memfd_create("tio-fuzz-kid", MFD_CLOEXEC);
	char *rw, *ro;

	if (memfd < 0 || ftruncate(memfd, PER_THREAD))
		_exit(1);
	rw = mmap(NULL, PER_THREAD, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	ro = mmap(NULL, PER_THREAD, PROT_READ, MAP_SHARED, memfd, 0);
	close(memfd);
	if (rw == MAP_FAILED || ro == MAP_FAILED)
		_exit(1);
	k->scratch = rw;
	k->scratch_ro = ro;
	k->pin = rw + SCRATCH;
	k->guard = k->pin + PINAREA;
	mprotect(k->guard, PAGE, PROT_NONE);
}

/* A child: its instructions on the inherited files, its trace shared. */
void kid_main(struct worker *k, const uint8_t *insn, unsigned int nsub)
{
	unsigned int slot = W.nkids, i;
	uint64_t *area = NULL;
	struct tape t;

	W.in_child = true;
	kid_memory(k);
	k->ring_ok = false;	/* the parent's ring: its memory is shared */
	k->kick_ok = false;
	if (g_kcov && kcov_open(&area, KID_WORDS) < 0)
		area = NULL;
	t_init(&t, insn + INSN_HDR, INSN - INSN_HDR);
	if (t_one_in(&t, 2))
		k->ring_ok = io_uring_queue_init(8, &k->ring, 0) == 0;
	if (t_one_in(&t, 3)) {
		/* Without CAP_IPC_LOCK, under a small RLIMIT_MEMLOCK. */
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		struct rlimit rl = { t_rnd(&t, 4) * 16 * PAGE, t_rnd(&t, 4) * 16 * PAGE };

		if (!syscall(SYS_capget, &h, d)) {
			d[0].effective &= ~(1U << CAP_IPC_LOCK);
			d[0].permitted &= ~(1U << CAP_IPC_LOCK);
			syscall(SYS_capset, &h, d);
		}
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	for (i = 0; i < nsub; i++)
		exec_item(k, insn + (1 + i) * INSN, 0);
	if (area) {
		uint64_t n = __atomic_load_n(&area[0], __ATOMIC_RELAXED);

		if (n >= KID_WORDS)
			n = KID_WORDS - 1;
		memcpy(&S->kid_pcs[slot][1], &area[1], n * sizeof(uint64_t));
		S->kid_pcs[slot][0] = n;
	}
	_exit(0);	/* its fds, its ring and its waits go with it */
}

/* Where a hung child is: its system call and kernel stack, on stderr. */
static void show_kid(pid_t pid)
{
	static const char *const what[] = { "syscall", "wchan", "stack" };
	char path[64], buf[2048];
	unsigned int i;

	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		fprintf(stderr, "# fuzz: hung child %s:\n%s\n", what[i], buf);
	}
}

static void wait_kids(void)
{
	int i;

	for (i = 0; i < W.nkids; i++) {
		uint64_t until = now_ns() + 10000000000ULL;
		int status = 0;
		pid_t r;

		while ((r = waitpid(W.kids[i], &status, WNOHANG)) == 0 && now_ns() < until)
			usleep(200);
		if (r == 0) {
			show_kid(W.kids[i]);
			kill(W.kids[i], SIGKILL);
			waitpid(W.kids[i], &status, 0);
			oracle_fail("hang", "a child did not finish its instructions in 10 s");
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			oracle_fail("child", "a child ended with status 0x%x (its report above)", status);
		kcov_collect(S->kid_pcs[i]);
		S->kid_pcs[i][0] = 0;
	}
	W.nkids = 0;
}

/* ---- the files ---- */

static void close_file(int i)
{
	struct devfile *f = &W.f[i];

	if (f->ring)
		munmap(f->ring, f->ringlen);
	f->ring = NULL;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	memset(&f->pool, 0, sizeof(f->pool));
	f->have_base = false;
}

static void close_files(void)
{
	int i;

	for (i = 0; i < MAXF; i++)
		close_file(i);
}

/* Two files open for the next program (the others it may open itself). */
static void open_files(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (W.f[i].fd < 0)
			W.f[i].fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
		if (W.f[i].fd > W.fd_high)
			W.fd_high = W.f[i].fd;
	}
}

/*
 * Every program finds a stream with two points and a buffer in each of its
 * two files: the commands that act on them then mostly reach past their
 * handle lookup without the program having to create them first. Made by
 * one SUBMIT when the file opens (the stream's handle guessed: the lowest
 * free, 1 in an empty table) and kept from one program to the next, until
 * a program destroys one of them or the files close.
 */
static void prologue(int fi)
{
	struct tio_cmd v[4] = {
		{ .op = TIO_IOC_STREAM_CREATE }, { .op = TIO_IOC_BUF_ALLOC },
		{ .op = TIO_IOC_FENCE_EMIT }, { .op = TIO_IOC_FENCE_EMIT },
	};
	struct tio_submit s = {
		.cmds_ptr = (uintptr_t)v, .count = 4, .flags = TIO_SUBMIT_F_CONTINUE,
	};

	((struct tio_buf_alloc *)v[1].payload.bytes)->size = PAGE;
	((struct tio_fence_emit *)v[2].payload.bytes)->stream = 1;
	((struct tio_fence_emit *)v[3].payload.bytes)->stream = 1;
	memset(&W.f[fi].pool, 0, sizeof(W.f[fi].pool));
	if (ioctl(W.f[fi].fd, TIO_IOC_SUBMIT, &s) >= 0)
		harvest_records(&workers[0], fi, v, s.done, "prologue record");
	W.f[fi].base = W.f[fi].pool;
	W.f[fi].have_base = true;
}

static bool in_list(const uint32_t *a, int n, uint32_t h)
{
	while (n--)
		if (a[n] == h)
			return true;
	return false;
}

/*
 * Free what the program created and the pools remember, in one SUBMIT;
 * the file's base objects stay (their seqnos as the program left them)
 * unless the program destroyed one.
 */
static void free_objects(struct devfile *f)
{
	static struct tio_cmd v[NBUFS + NSTREAMS];
	struct tio_submit s = { .cmds_ptr = (uintptr_t)v, .flags = TIO_SUBMIT_F_CONTINUE };
	struct pool *b = &f->base;
	int i;

	for (i = 0; i < b->nbufs; i++)
		f->have_base &= in_list(f->pool.bufs, f->pool.nbufs, b->bufs[i]);
	for (i = 0; i < b->nstreams; i++)
		f->have_base &= in_list(f->pool.streams, f->pool.nstreams, b->streams[i]);
	for (i = 0; i < f->pool.nbufs; i++) {
		if (f->have_base && in_list(b->bufs, b->nbufs, f->pool.bufs[i]))
			continue;
		memset(&v[s.count], 0, sizeof(v[0]));
		v[s.count].op = TIO_IOC_BUF_FREE;
		*(uint32_t *)v[s.count++].payload.bytes = f->pool.bufs[i];
	}
	for (i = 0; i < f->pool.nstreams; i++) {
		if (f->have_base && in_list(b->streams, b->nstreams, f->pool.streams[i])) {
			b->seq[0] = f->pool.seq[i];	/* the base has one stream */
			continue;
		}
		memset(&v[s.count], 0, sizeof(v[0]));
		v[s.count].op = TIO_IOC_STREAM_DESTROY;
		*(uint32_t *)v[s.count++].payload.bytes = f->pool.streams[i];
	}
	if (s.count)
		ioctl(f->fd, TIO_IOC_SUBMIT, &s);
	f->pool = *b;
	memset(f->pool.stale, 0, sizeof(f->pool.stale));
	f->pool.nstale = 0;
}

/* After the program: what it left, given back; the per-input oracles. */
static void cleanup(void)
{
	uint64_t until, t0 = now_ns(), t1;
	bool parked = false;
	int i;

	for (i = 0; i < NTHREADS; i++)
		parked |= workers[i].inflight > 0;
	wait_kids();
	prof_add(P_KIDS, t0, t1 = now_ns());
	oracle_fences(&W);
	prof_add(P_FENCES, t1, t0 = now_ns());
	restore_knobs();
	for (i = 0; i < W.nfds; i++)
		close(W.fds[i].fd);
	W.nfds = 0;
	for (i = 0; i < NMAPS; i++)
		if (W.maps[i].addr)
			munmap(W.maps[i].addr, W.maps[i].len);
	memset(W.maps, 0, sizeof(W.maps));
	for (i = 0; i < MAXF; i++) {
		struct devfile *f = &W.f[i];

		if (f->fd < 0)
			continue;
		if (i >= 2) {		/* opened by the program */
			close_file(i);
			continue;
		}
		if (parked)
			close(dup(f->fd));	/* ->flush: parked waits are cancelled */
		free_objects(f);
	}
	prof_add(P_CLOSE, t0, t1 = now_ns());
	until = t1 + 5000000000ULL;
	for (i = 0; i < NTHREADS; i++)
		drain(&workers[i], until);
	prof_add(P_DRAIN, t1, t0 = now_ns());
	W.resv_deadline = 0;
	W.closed_mid = false;
	oracle_after(&W);
	prof_add(P_AFTER, t0, now_ns());
}

/* One program, its cleanup, its coverage. */
static void run_program(const uint8_t *data, size_t size)
{
	unsigned int n = size / INSN, i, helpers = 0;
	uint64_t t0 = now_ns(), t1;

	if (n > MAX_INSNS)
		n = MAX_INSNS;
	distribute(data, n);
	for (i = 0; i < NTHREADS; i++)
		kcov_reset(workers[i].kcov_area);
	open_files();
	for (i = 0; i < 2; i++)
		if (W.f[i].fd >= 0 && !W.f[i].have_base)
			prologue(i);
	prof_add(P_OPEN, t0, now_ns());
	for (i = 1; i < NTHREADS; i++)
		helpers += workers[i].nitems > 0;
	if (helpers) {
		pthread_mutex_lock(&go_lock);
		go_pending = NTHREADS - 1;
		go_gen++;
		pthread_cond_broadcast(&go_cond);
		pthread_mutex_unlock(&go_lock);
	}
	run_items(&workers[0]);
	if (helpers) {
		pthread_mutex_lock(&go_lock);
		while (go_pending)
			pthread_cond_wait(&go_cond, &go_lock);
		pthread_mutex_unlock(&go_lock);
	}
	cleanup();
	t1 = now_ns();
	/* The driver still answers (and a program of nothing has coverage). */
	if (W.f[0].fd >= 0) {
		struct tio_info info = { 0 };

		check_result(&workers[0], "epilogue", TIO_IOC_INFO,
			     ioctl(W.f[0].fd, TIO_IOC_INFO, &info) ? -errno : 0);
	}
	for (i = 0; i < NTHREADS; i++)
		kcov_collect(workers[i].kcov_area);
	prof_add(P_KCOV, t1, now_ns());
}

/* ---- the full check ---- */

static void save_artifact(const uint8_t *data, size_t size)
{
	char path[320];
	int fd;

	snprintf(path, sizeof(path), "%scrash-counters-%d", g_artifacts, getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size)
		perror(path);
	close(fd);
	fprintf(stderr, "# fuzz: the input that leaves it behind: %s\n", path);
}

/*
 * All files closed: the driver's counters must be where they were (zero)
 * and VmPin back. If not, find the input of the batch that leaves
 * something: each again alone, with a close of its own.
 */
static void full_check(void)
{
	char before[512], after[512];
	uint64_t t0 = now_ns();
	unsigned int i;

	close_files();
	if (!counters_settle(NULL, after, sizeof(after)))
		goto ok;
	fprintf(stderr, "# fuzz: after %u inputs and a close: %s; looking for the input\n",
		nbatch, after);
	for (i = 0; i < nbatch; i++) {
		counters_snapshot(before, sizeof(before));
		run_program(batch[i], batch_len[i]);
		close_files();
		if (counters_settle(before, after, sizeof(after))) {
			save_artifact(batch[i], batch_len[i]);
			oracle_fail("counters", "after its files closed: %s (was %s)", after, before);
		}
	}
	oracle_fail("counters", "after a batch of %u inputs and a close: %s (no one input alone)",
		    nbatch, after);
ok:
	nbatch = 0;
	prof_add(P_CHECK, t0, now_ns());
}

void prog_run(const uint8_t *data, size_t size)
{
	if (size > sizeof(batch[0]))
		size = sizeof(batch[0]) / INSN * INSN;
	memcpy(batch[nbatch], data, size);
	batch_len[nbatch++] = size;
	run_program(data, size);
	if (nbatch >= g_check_every || nbatch >= 256)
		full_check();
}

/* At exit: the last batch checked too. */
void prog_finish(void)
{
	if (!W.in_child && nbatch)
		full_check();
}
