// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Suite "sync": signal -> wake latency, as a two-thread ping-pong. Thread
 * A signals point i of stream 0; thread B waits for it, then signals point
 * i of stream 1; A waits for that. One iteration is a round trip, i.e. two
 * handoffs (ops = 2), so the per-op figure is the one-way latency = round
 * trip / 2. The waiter side is the mechanism under test:
 *   poll-word       spin on the stream's seqno word (libtensorio,
 *                   tio_stream_seqno_word: the driver's mmapped page on
 *                   the kernel backend, the memfd page on the user one)
 *   wait-futex      tio_fence_wait on the user backend (a futex wait)
 *   wait-ioctl      a blocking TIO_IOC_FENCE_WAIT on /dev/tensorio
 *   wait-uring      an asynchronous uring_cmd FENCE_WAIT whose CQE the
 *                   waiter reaps with io_uring_wait_cqe
 *   poll-sync-file  poll() on a sync_file exported for the point
 *   ref/spin        the floor: the same ping-pong on two plain words
 *                   (an atomic store, a spin), no tensorio at all
 * Signals go through the same API as the wait (library or raw ioctl).
 *
 * Points are emitted (and sync_files exported) ahead, in chunks of
 * SYNC_CHUNK, outside the timed part; the run measures its own time
 * (manual_ns) over the ping-pong alone. Every wait has a timeout
 * (SYNC_TIMEOUT_NS): a lost signal fails the case, it never hangs, and the
 * partner thread is always joined (teardown signals every emitted point
 * first so it wakes at once).
 *
 * On the host the user-backend rows run in wall ns. In the VM the kernel
 * rows run; under -icount shift=0 (one vCPU) a ping-pong is a chain of
 * context switches that never leaves the CPU idle, so the figure reads as
 * guest instructions of CPU work per handoff, not latency (see
 * docs/benchmarks.md, sync suite).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/tensorio.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/stream.h>

#include "bench.h"

#define SYNC_CHUNK	128
#define SPIN_RELAX()	__builtin_ia32_pause()
#define SYNC_WARM	4	/* untimed round trips opening each chunk */
#define SYNC_TIMEOUT_NS	2000000000LL	/* a lost signal fails after 2 s */

enum mech { S_REF, S_POLL, S_FUTEX, S_IOCTL, S_URING, S_SYNCFILE };

/* One side of the ping-pong: what its waits need. */
struct side {
	int have_ring;
	struct io_uring ring;
	struct tio_fence_wait wait;	/* a parked uring wait writes here */
	int fds[SYNC_CHUNK + SYNC_WARM]; /* sync_files of the points it waits on */
};

struct sstate {
	enum mech m;
	int fd;			/* /dev/tensorio for the raw rows */
	int lib;		/* streams through libtensorio */
	uint64_t refw[2];	/* ref/spin's words */
	int yield;		/* one CPU: pollers yield between checks */
	tio_stream_t *ls[2];
	const volatile uint64_t *word[2];
	__u32 ks[2];
	uint64_t emitted[2];	/* last emitted seqno */
	uint64_t base[2];	/* the chunk's first seqno - 1 */
	struct side side[2];	/* [0]: B waits on stream 0; [1]: A on 1 */

	pthread_t thr;
	int have_thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t gen, ack, done; /* chunks started / begun / finished by B */
	unsigned int chunk;
	int stop;
	int err;
	char why[160];
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void deadline(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static int lib_err(char *why, size_t len, const char *what)
{
	int e = tio_errno();

	snprintf(why, len, "%s: %s", what, strerror(e ? e : EPROTO));
	tio_error_clear();
	return -(e ? e : EPROTO);
}

static int sys_err(char *why, size_t len, int e, const char *what)
{
	snprintf(why, len, "%s: %s", what, strerror(e));
	return -e;
}

static int do_emit(struct sstate *s, int st, char *why, size_t len)
{
	uint64_t seq;

	if (s->m == S_REF) {
		seq = s->emitted[st] + 1;
	} else if (s->lib) {
		if (tio_fence_emit(s->ls[st], &seq))
			return lib_err(why, len, "tio_fence_emit");
	} else {
		struct tio_fence_emit e = { .stream = s->ks[st] };

		if (ioctl(s->fd, TIO_IOC_FENCE_EMIT, &e))
			return sys_err(why, len, errno, "FENCE_EMIT");
		seq = e.seqno;
	}
	if (seq != s->emitted[st] + 1)
		return sys_err(why, len, EPROTO, "emit: seqno out of order");
	s->emitted[st] = seq;
	return 0;
}

static int do_signal(struct sstate *s, int st, uint64_t seq, char *why, size_t len)
{
	if (s->m == S_REF) {
		__atomic_store_n(&s->refw[st], seq, __ATOMIC_RELEASE);
	} else if (s->lib) {
		if (tio_fence_signal(s->ls[st], seq, 0))
			return lib_err(why, len, "tio_fence_signal");
	} else {
		struct tio_fence_signal g = { .stream = s->ks[st], .seqno = seq };

		if (ioctl(s->fd, TIO_IOC_FENCE_SIGNAL, &g))
			return sys_err(why, len, errno, "FENCE_SIGNAL");
	}
	return 0;
}

/*
 * Spin on a seqno word. With one CPU every check yields (the signaller
 * must run); otherwise the spin yields only after SPIN_YIELD_NS, so that
 * two threads sharing a CPU still progress: a yield on every few thousand
 * spins cost tens of microseconds per handoff on a 2-vCPU host.
 */
#define SPIN_YIELD_NS	50000.0

static int spin_wait(struct sstate *s, int st, uint64_t seq, char *why, size_t len)
{
	const volatile uint64_t *w = s->word[st];
	double start = 0, t;
	unsigned int spins = 0;

	while (__atomic_load_n(w, __ATOMIC_ACQUIRE) < seq) {
		if (s->yield)
			sched_yield();
		else
			SPIN_RELAX();
		if (++spins & 255)
			continue;
		t = now_ns();
		if (!start)
			start = t;
		else if (t - start > SYNC_TIMEOUT_NS)
			return sys_err(why, len, ETIME,
				       "seqno word never reached the point");
		else if (t - start > SPIN_YIELD_NS)
			sched_yield();
	}
	return 0;
}

static int uring_wait(struct sstate *s, struct side *sd, int st, uint64_t seq,
		      char *why, size_t len)
{
	struct __kernel_timespec ts = { .tv_sec = SYNC_TIMEOUT_NS / 1000000000LL + 1 };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sd->ring);
	struct io_uring_cqe *cqe;
	__u64 ptr = (uintptr_t)&sd->wait;
	int ret, res;

	if (!sqe)
		return sys_err(why, len, EBUSY, "SQ ring full");
	sd->wait = (struct tio_fence_wait){ .stream = s->ks[st], .seqno = seq,
					    .timeout_ns = SYNC_TIMEOUT_NS };
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, s->fd, NULL, 0, 0);
	sqe->cmd_op = TIO_IOC_FENCE_WAIT;
	memcpy(sqe->cmd, &ptr, sizeof(ptr));
	ret = io_uring_submit(&sd->ring);
	if (ret != 1)
		return sys_err(why, len, ret < 0 ? -ret : EIO, "io_uring_submit");
	ret = io_uring_wait_cqe_timeout(&sd->ring, &cqe, &ts);
	if (ret)
		return sys_err(why, len, -ret, "io_uring_wait_cqe (FENCE_WAIT)");
	res = cqe->res;
	io_uring_cqe_seen(&sd->ring, cqe);
	if (res)
		return sys_err(why, len, -res, "uring FENCE_WAIT");
	return 0;
}

/* Side @sd waits for point @seq (the @i-th of the chunk) of stream @st. */
static int do_wait(struct sstate *s, struct side *sd, int st, uint64_t seq,
		   unsigned int i, char *why, size_t len)
{
	switch (s->m) {
	case S_REF:
	case S_POLL:
		return spin_wait(s, st, seq, why, len);
	case S_FUTEX:
		if (tio_fence_wait(s->ls[st], seq, SYNC_TIMEOUT_NS, NULL))
			return lib_err(why, len, "tio_fence_wait");
		return 0;
	case S_IOCTL: {
		struct tio_fence_wait w = { .stream = s->ks[st], .seqno = seq,
					    .timeout_ns = SYNC_TIMEOUT_NS };

		if (ioctl(s->fd, TIO_IOC_FENCE_WAIT, &w))
			return sys_err(why, len, errno, "FENCE_WAIT");
		return 0;
	}
	case S_URING:
		return uring_wait(s, sd, st, seq, why, len);
	case S_SYNCFILE: {
		struct pollfd p = { .fd = sd->fds[i], .events = POLLIN };
		int r = poll(&p, 1, (int)(SYNC_TIMEOUT_NS / 1000000));

		if (r < 0)
			return sys_err(why, len, errno, "poll(sync_file)");
		if (!r)
			return sys_err(why, len, ETIME, "poll(sync_file) timed out");
		return 0;
	}
	}
	return -EINVAL;
}

/* Thread B: for each chunk, wait on stream 0 and answer on stream 1. */
static void *partner(void *arg)
{
	struct sstate *s = arg;
	uint64_t seen = 0;
	char why[160];

	for (;;) {
		uint64_t b0, b1;
		unsigned int k, i;
		int err = 0;

		pthread_mutex_lock(&s->mu);
		while (!s->stop && s->gen == seen)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		seen = s->gen;
		k = s->chunk;
		b0 = s->base[0];
		b1 = s->base[1];
		s->ack = seen;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);

		why[0] = 0;
		for (i = 0; i < k && !err; i++) {
			err = do_wait(s, &s->side[0], 0, b0 + i + 1, i, why, sizeof(why));
			if (!err)
				err = do_signal(s, 1, b1 + i + 1, why, sizeof(why));
		}

		pthread_mutex_lock(&s->mu);
		if (err && !s->err) {
			s->err = err;
			snprintf(s->why, sizeof(s->why), "thread B: %s", why);
		}
		s->done = seen;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

static void close_fds(struct sstate *s)
{
	int i, j;

	for (j = 0; j < 2; j++)
		for (i = 0; i < SYNC_CHUNK + SYNC_WARM; i++)
			if (s->side[j].fds[i] >= 0) {
				close(s->side[j].fds[i]);
				s->side[j].fds[i] = -1;
			}
}

static int export_point(struct sstate *s, int st, uint64_t seq, int *fd,
			char *why, size_t len)
{
	struct tio_fence_export x = { .stream = s->ks[st], .seqno = seq,
				      .flags = TIO_EXPORT_F_CLOEXEC };

	if (ioctl(s->fd, TIO_IOC_FENCE_EXPORT, &x))
		return sys_err(why, len, errno, "FENCE_EXPORT");
	*fd = x.fd;
	return 0;
}

static void sync_teardown(struct bench_run *run)
{
	struct sstate *s = run->state;
	char why[160];
	int i;

	if (!s)
		return;
	/* Wake B wherever it waits: every emitted point signals. */
	for (i = 0; i < 2; i++)
		if (s->m == S_REF || (s->lib && s->ls[i]) || (!s->lib && s->ks[i]))
			do_signal(s, i, s->emitted[i], why, sizeof(why));
	if (s->have_thr) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thr, NULL);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	close_fds(s);
	for (i = 0; i < 2; i++) {
		if (s->side[i].have_ring)
			io_uring_queue_exit(&s->side[i].ring);
		if (s->ls[i])
			tio_stream_decref(s->ls[i]);
		if (s->ks[i]) {
			struct tio_handle_op d = { .handle = s->ks[i] };

			ioctl(s->fd, TIO_IOC_STREAM_DESTROY, &d);
		}
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	run->state = NULL;
}

static int setup_lib(struct bench_run *run, struct sstate *s)
{
	int i;

	if (tio_init()) {
		tio_error_clear();
		return bench_skip(run, "tio_init failed: no usable backend");
	}
	if (s->m == S_FUTEX && tio_backend() != TIO_BACKEND_USER)
		return bench_skip(run, "the library chose the %s backend "
				  "(TIO_BACKEND=user forces the futex one)",
				  tio_backend_name());
	s->lib = 1;
	for (i = 0; i < 2; i++) {
		if (tio_stream_create(&s->ls[i])) {
			tio_error_clear();
			return bench_fail(run, EPROTO, "tio_stream_create (%s backend)",
					  tio_backend_name());
		}
		s->word[i] = tio_stream_seqno_word(s->ls[i]);
		if (!s->word[i]) {
			tio_error_clear();
			return bench_fail(run, EPROTO, "tio_stream_seqno_word");
		}
		s->emitted[i] = *s->word[i];
	}
	return 0;
}

static int setup_kernel(struct bench_run *run, struct sstate *s)
{
	struct tio_info info = { 0 };
	__u64 need = TIO_FEAT_STREAMS;
	int i, err;

	s->fd = open("/dev/tensorio", O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return bench_skip(run, "no /dev/tensorio: %s (kernel rows run "
				  "in the VM)", strerror(errno));
	if (ioctl(s->fd, TIO_IOC_INFO, &info))
		return bench_fail(run, errno, "TIO_IOC_INFO");
	if (s->m == S_URING)
		need |= TIO_FEAT_URING_CMD | TIO_FEAT_ASYNC_WAIT;
	if (s->m == S_SYNCFILE)
		need |= TIO_FEAT_SYNC_FILE;
	if ((info.features & need) != need)
		return bench_skip(run, "driver lacks feature 0x%llx",
				  (unsigned long long)(need & ~info.features));
	for (i = 0; i < 2; i++) {
		struct tio_stream_create sc = { 0 };

		if (ioctl(s->fd, TIO_IOC_STREAM_CREATE, &sc))
			return bench_fail(run, errno, "STREAM_CREATE");
		s->ks[i] = sc.handle;
		if (s->m == S_URING) {
			err = io_uring_queue_init(4, &s->side[i].ring, 0);
			if (err)
				return bench_skip(run, "io_uring_queue_init: %s",
						  strerror(-err));
			s->side[i].have_ring = 1;
		}
	}
	return 0;
}

static int sync_setup(struct bench_run *run)
{
	struct sstate *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int err, i;

	if (!s)
		return bench_fail(run, ENOMEM, "state");
	s->fd = -1;
	s->m = (enum mech)run->c->arg;
	s->yield = sysconf(_SC_NPROCESSORS_ONLN) < 2;
	memset(s->side[0].fds, 0xff, sizeof(s->side[0].fds));
	memset(s->side[1].fds, 0xff, sizeof(s->side[1].fds));
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	run->state = s;
	if (s->m == S_REF) {
		s->word[0] = &s->refw[0];
		s->word[1] = &s->refw[1];
		err = 0;
	} else if (s->m == S_POLL || s->m == S_FUTEX)
		err = setup_lib(run, s);
	else
		err = setup_kernel(run, s);
	if (err)
		goto out;
	for (i = 0; i < 2; i++)
		s->base[i] = s->emitted[i];
	err = pthread_create(&s->thr, NULL, partner, s);
	if (err) {
		err = bench_fail(run, err, "pthread_create");
		goto out;
	}
	s->have_thr = 1;
	return 0;
out:
	sync_teardown(run);
	return err;
}

/*
 * One chunk of @timed round trips; their ping-pong time goes to *t. The
 * chunk opens with SYNC_WARM untimed round trips: both threads have just
 * come back from the condvar handshake, and on a (virtual) machine whose
 * CPUs went idle the first handoffs pay the CPUs' wake-up.
 */
static int one_chunk(struct bench_run *run, struct sstate *s,
		     unsigned int timed, double *t)
{
	unsigned int i, k = timed + SYNC_WARM;
	struct timespec ts;
	char why[160] = "";
	double t0 = 0, t1;
	int err = 0, st;

	/* Ahead of time: the points, and their sync_files. */
	for (st = 0; st < 2 && !err; st++) {
		s->base[st] = s->emitted[st];
		for (i = 0; i < k && !err; i++) {
			err = do_emit(s, st, why, sizeof(why));
			if (!err && s->m == S_SYNCFILE)
				err = export_point(s, st, s->emitted[st],
						   &s->side[st].fds[i], why,
						   sizeof(why));
		}
	}
	if (err)
		return bench_fail(run, -err, "%s", why);

	/* Time from the moment B runs: not its wake-up from the condvar. */
	pthread_mutex_lock(&s->mu);
	s->chunk = k;
	s->gen++;
	pthread_cond_broadcast(&s->cv);
	deadline(&ts, SYNC_TIMEOUT_NS / 1000000);
	while (s->ack != s->gen)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
			break;
	if (s->ack != s->gen) {
		pthread_mutex_unlock(&s->mu);
		return bench_fail(run, ETIME, "thread B did not start its chunk");
	}
	pthread_mutex_unlock(&s->mu);

	for (i = 0; i < k && !err; i++) {
		if (i == SYNC_WARM)
			t0 = now_ns();
		err = do_signal(s, 0, s->base[0] + i + 1, why, sizeof(why));
		if (!err)
			err = do_wait(s, &s->side[1], 1, s->base[1] + i + 1, i,
				      why, sizeof(why));
	}
	t1 = now_ns();
	*t += t1 - t0;
	/* On our failure, wake B now rather than after its timeout. */
	if (err) {
		char ignored[160];

		do_signal(s, 0, s->emitted[0], ignored, sizeof(ignored));
	}

	/* B finishes its chunk within its own wait timeout. */
	pthread_mutex_lock(&s->mu);
	deadline(&ts, 2 * SYNC_TIMEOUT_NS / 1000000 + 1000);
	while (s->done != s->gen)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
			break;
	if (s->done != s->gen && !err) {
		err = -ETIME;
		snprintf(why, sizeof(why), "thread B did not finish its chunk");
	}
	if (s->err && !err) {
		err = s->err;
		snprintf(why, sizeof(why), "%s", s->why);
	}
	pthread_mutex_unlock(&s->mu);
	close_fds(s);
	if (err)
		return bench_fail(run, 0, "%s", why);
	return 0;
}

static int sync_run(struct bench_run *run, uint64_t n)
{
	struct sstate *s = run->state;
	double t = 0;
	int err;

	while (n) {
		unsigned int k = n > SYNC_CHUNK ? SYNC_CHUNK : (unsigned int)n;

		err = one_chunk(run, s, k, &t);
		if (err)
			return err;
		n -= k;
	}
	run->manual_ns = t;
	return 0;
}

#define SYNC(n, k, what) {						\
	.suite = "sync", .name = n, .ref = "poll-word", .ops = 2,	\
	.note = what " (one-way: round trip / 2)",			\
	.setup = sync_setup, .run = sync_run,				\
	.teardown = sync_teardown, .arg = k }

static struct bench_case cases[] = {
	SYNC("ref/spin", S_REF,
	     "the floor: an atomic store, a spin on a plain word"),
	SYNC("poll-word", S_POLL,
	     "spin on the seqno word, libtensorio's backend"),
	SYNC("wait-futex", S_FUTEX,
	     "tio_fence_wait, user backend (futex)"),
	SYNC("wait-ioctl", S_IOCTL, "blocking FENCE_WAIT ioctl"),
	SYNC("wait-uring", S_URING,
	     "uring_cmd FENCE_WAIT parked, CQE reaped by io_uring_wait_cqe"),
	SYNC("poll-sync-file", S_SYNCFILE,
	     "poll() on an exported sync_file (export outside the timing)"),
};

static void __attribute__((constructor)) sync_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
