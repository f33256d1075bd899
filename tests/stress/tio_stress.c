// SPDX-License-Identifier: GPL-2.0
/*
 * tio_stress: N threads x mixed operations on /dev/tensorio for a bounded
 * time (alloc, export, import, emit, signal, blocking and io_uring waits,
 * close), while child processes are SIGKILLed at random points holding
 * parked io_uring waits, unsignalled fences and exported dma-bufs they
 * have passed to us. The survivors must keep working: dma-bufs and
 * sync_files from dead children stay importable and waitable (the dead
 * child's points complete, cancelled), our own objects stay intact.
 *
 *   tio_stress [-d SECONDS] [-t THREADS] [-s SEED]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tio_fdpass.h"
#include "tio_peers.h"

#define PAGE 4096

static uint64_t deadline;
static _Atomic uint64_t nops, nerr, nkilled, nimported, nwaits;
static _Atomic int bad;
static int sock[2];	/* children send dma-buf and sync_file fds here */

static uint64_t rnext(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int xioctl(int fd, unsigned long cmd, void *p)
{
	return ioctl(fd, cmd, p) ? -errno : 0;
}

static void fail(const char *what, int err)
{
	printf("# stress: %s: %s\n", what, strerror(-err));
	atomic_store(&bad, 1);
}

/*
 * A child: objects, exports passed to the parent, parked waits that never
 * complete on their own; then it spins doing work until it is killed.
 */
static void child(uint64_t seed)
{
	struct tio_buf_alloc a = { .size = PAGE * (1 + seed % 4) };
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_buf_export x = { .flags = TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR };
	struct tio_fence_export fx = { .flags = TIO_EXPORT_F_CLOEXEC };
	static struct tio_fence_wait w[4];
	struct io_uring ring;
	int dev = open(TIO_DEV, O_RDWR | O_CLOEXEC), i;

	if (dev < 0 || io_uring_queue_init(8, &ring, 0))
		_exit(1);
	if (xioctl(dev, TIO_IOC_BUF_ALLOC, &a) || xioctl(dev, TIO_IOC_STREAM_CREATE, &sc))
		_exit(1);
	x.handle = a.handle;
	if (!xioctl(dev, TIO_IOC_BUF_EXPORT, &x)) {
		tio_send_fd(sock[1], x.fd, MSG_DONTWAIT);
		close(x.fd);
	}
	e.stream = sc.handle;
	for (i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		if (!sqe)
			break;
		xioctl(dev, TIO_IOC_FENCE_EMIT, &e);
		w[i] = (struct tio_fence_wait){ .stream = sc.handle, .seqno = e.seqno,
						.timeout_ns = -1 };
		tio_prep_cmd(sqe, dev, TIO_IOC_FENCE_WAIT, &w[i]);
	}
	io_uring_submit(&ring);
	fx.stream = sc.handle;
	fx.seqno = e.seqno;
	if (!xioctl(dev, TIO_IOC_FENCE_EXPORT, &fx)) {
		tio_send_fd(sock[1], fx.fd, MSG_DONTWAIT);
		close(fx.fd);
	}
	for (;;) {		/* busy until killed */
		struct tio_buf_alloc b = { .size = PAGE };
		struct tio_handle_op f = { 0 };

		if (!xioctl(dev, TIO_IOC_BUF_ALLOC, &b)) {
			f.handle = b.handle;
			xioctl(dev, TIO_IOC_BUF_FREE, &f);
		}
	}
}

static void *killer(void *arg)
{
	uint64_t rng = (uintptr_t)arg;

	while (tio_now_ns() < deadline) {
		pid_t pid = fork();

		if (pid == 0)
			child(rnext(&rng));
		if (pid < 0)
			continue;
		usleep(rnext(&rng) % 40000);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		nkilled++;
	}
	return NULL;
}

struct worker {
	pthread_t tid;
	uint64_t rng;
	int dev;
};

/* Imports and waits on what the children passed us, dead or alive. */
static void use_foreign(struct worker *k, __u32 stream)
{
	int fd = tio_recv_fd(sock[0], MSG_DONTWAIT), ret;
	struct tio_buf_import im = { 0 };
	struct tio_fence_import fi = { .stream = stream };

	if (fd < 0)
		return;
	im.fd = fd;
	ret = xioctl(k->dev, TIO_IOC_BUF_IMPORT, &im);
	if (!ret) {
		struct tio_buf_info info = { .handle = im.handle };
		struct tio_handle_op f = { .handle = im.handle };

		if ((ret = xioctl(k->dev, TIO_IOC_BUF_INFO, &info)))
			fail("BUF_INFO of a dead child's dma-buf", ret);
		xioctl(k->dev, TIO_IOC_BUF_FREE, &f);
		nimported++;
	} else if (ret == -EINVAL) {
		/* a sync_file: its point completes when the child dies */
		fi.fd = fd;
		ret = xioctl(k->dev, TIO_IOC_FENCE_IMPORT, &fi);
		if (!ret) {
			struct tio_fence_wait w = { .stream = stream, .seqno = fi.seqno,
						    .timeout_ns = 10000000000LL };

			ret = xioctl(k->dev, TIO_IOC_FENCE_WAIT, &w);
			if (ret == -ETIME)
				fail("a dead child's sync_file never signalled", ret);
			nimported++;
		}
	}
	close(fd);
}

static void *work(void *arg)
{
	struct worker *k = arg;
	struct io_uring ring;
	struct tio_stream_create sc = { 0 }, fsc = { 0 };
	static _Thread_local struct tio_fence_wait uw[8];
	unsigned int parked = 0;
	__u64 last = 0;
	int ret;

	/* Foreign sync_files get a stream of their own: a point also waits
	 * for every earlier point of its stream, and ours may be unsignalled.
	 */
	if (io_uring_queue_init(16, &ring, 0) || xioctl(k->dev, TIO_IOC_STREAM_CREATE, &sc) ||
	    xioctl(k->dev, TIO_IOC_STREAM_CREATE, &fsc)) {
		fail("setup", -EIO);
		return NULL;
	}
	while (tio_now_ns() < deadline) {
		uint64_t r = rnext(&k->rng);
		struct tio_buf_alloc a = { .size = PAGE * (1 + r % 8) };
		struct tio_buf_export x = { .flags = TIO_EXPORT_F_CLOEXEC };
		struct tio_buf_import im = { 0 };
		struct tio_handle_op f = { 0 };
		struct tio_fence_emit e = { .stream = sc.handle };
		struct tio_fence_signal s = { .stream = sc.handle };
		struct io_uring_cqe *cqe;

		nops++;
		switch (r >> 60) {
		case 0: case 1: case 2: case 3:	/* alloc, export, import, close, free */
			ret = xioctl(k->dev, TIO_IOC_BUF_ALLOC, &a);
			if (ret) {
				nerr++;
				break;
			}
			x.handle = f.handle = a.handle;
			if (!xioctl(k->dev, TIO_IOC_BUF_EXPORT, &x)) {
				im.fd = x.fd;
				if (!xioctl(k->dev, TIO_IOC_BUF_IMPORT, &im)) {
					struct tio_handle_op g = { .handle = im.handle };

					xioctl(k->dev, TIO_IOC_BUF_FREE, &g);
				}
				close(x.fd);
			}
			if ((ret = xioctl(k->dev, TIO_IOC_BUF_FREE, &f)))
				fail("BUF_FREE of our own buffer", ret);
			break;
		case 4: case 5: case 6:		/* emit, then a parked uring wait */
			if (xioctl(k->dev, TIO_IOC_FENCE_EMIT, &e)) {
				nerr++;
				break;
			}
			last = e.seqno;
			if (parked < 8) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
				struct tio_fence_wait *w = &uw[parked % 8];

				if (!sqe)
					break;
				*w = (struct tio_fence_wait){ .stream = sc.handle,
							      .seqno = e.seqno,
							      .timeout_ns = -1 };
				tio_prep_cmd(sqe, k->dev, TIO_IOC_FENCE_WAIT, w);
				if (io_uring_submit(&ring) == 1)
					parked++;
			}
			break;
		case 7: case 8:			/* signal: parked waits complete */
			s.seqno = last;
			if (last && (ret = xioctl(k->dev, TIO_IOC_FENCE_SIGNAL, &s)))
				fail("FENCE_SIGNAL", ret);
			while (parked && io_uring_peek_cqe(&ring, &cqe) == 0) {
				if (cqe->res < 0 && cqe->res != -ECANCELED)
					fail("parked wait", cqe->res);
				io_uring_cqe_seen(&ring, cqe);
				parked--;
				nwaits++;
			}
			break;
		case 9: {			/* a blocking wait on a signalled point */
			struct tio_fence_wait w = { .stream = sc.handle, .seqno = last,
						    .timeout_ns = 0 };

			if (last)
				xioctl(k->dev, TIO_IOC_FENCE_WAIT, &w);
			break;
		}
		default:
			use_foreign(k, fsc.handle);
			break;
		}
	}
	/* Signal everything: every parked wait must complete. */
	{
		struct tio_fence_signal s = { .stream = sc.handle, .seqno = last };
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = 10 };

		if (last)
			xioctl(k->dev, TIO_IOC_FENCE_SIGNAL, &s);
		while (parked) {
			if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) {
				fail("a parked wait never completed after its signal", -ETIME);
				break;
			}
			if (cqe->res < 0)
				fail("parked wait result", cqe->res);
			io_uring_cqe_seen(&ring, cqe);
			parked--;
			nwaits++;
		}
	}
	io_uring_queue_exit(&ring);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 4, opt, i, dev;
	uint64_t seed = 0;
	double secs = 20;
	struct worker w[16];
	pthread_t kt;
	struct tio_info info = { 0 };

	while ((opt = getopt(argc, argv, "d:t:s:")) != -1) {
		switch (opt) {
		case 'd': secs = atof(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (threads < 1 || threads > 16)
		return 2;
	if (!seed)
		seed = tio_now_ns();
	printf("TAP version 13\n1..2\n# stress: seed 0x%" PRIx64 ", %d threads, %g s\n",
	       seed, threads, secs);
	fflush(stdout);
	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sock))
		return 1;
	dev = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		printf("not ok 1 - stress: open %s: %s\n", TIO_DEV, strerror(errno));
		return 1;
	}
	deadline = tio_now_ns() + (uint64_t)(secs * 1e9);
	pthread_create(&kt, NULL, killer, (void *)(uintptr_t)(seed ^ 0xabcdef));
	for (i = 0; i < threads; i++) {
		w[i].rng = seed + i * 0x1000193ULL;
		w[i].dev = dev;
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	pthread_join(kt, NULL);
	while ((i = tio_recv_fd(sock[0], MSG_DONTWAIT)) >= 0)
		close(i);
	/* The survivor's file still works after all that. */
	if (xioctl(dev, TIO_IOC_INFO, &info))
		fail("INFO after the run", -errno);
	close(dev);
	printf("# stress: %" PRIu64 " operations (%" PRIu64 " refused), %" PRIu64
	       " children killed, %" PRIu64 " foreign fds used, %" PRIu64 " uring waits completed\n",
	       nops, nerr, nkilled, nimported, nwaits);
	printf("%s 1 - stress: survivors kept working\n", bad ? "not ok" : "ok");
	printf("%s 2 - stress: children were killed mid-work (%" PRIu64 ")\n",
	       nkilled ? "ok" : "not ok", nkilled);
	return bad || !nkilled;
}
