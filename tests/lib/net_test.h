/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the net layer's tests (test_net*.c): a peer process over a
 * socketpair (worker addresses and descriptors exchanged, its buffer
 * checked on command), registered buffers, bytes filled and checked, and
 * the net fixture's data with its open and close, which net_dead's holds
 * too. Include after kselftest_harness.h.
 */
#ifndef TIO_NET_TEST_H
#define TIO_NET_TEST_H

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tensorio/net.h>

#include "dev_test.h"

#define NBYTES (1u << 20)
#define TAG_DESC 7

/* Length-prefixed blobs over a socketpair: 0 or -1. */
static inline int send_blob(int fd, const void *p, size_t n)
{
	uint32_t len = (uint32_t)n;

	return write(fd, &len, sizeof(len)) == sizeof(len) &&
	       write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static inline void *recv_blob(int fd, size_t *n)
{
	uint32_t len;
	char *p;
	size_t got = 0;
	ssize_t r;

	if (read(fd, &len, sizeof(len)) != sizeof(len))
		return NULL;
	p = malloc(len ? len : 1);
	while (p && got < len) {
		r = read(fd, p + got, len - got);
		if (r <= 0) {
			free(p);
			return NULL;
		}
		got += (size_t)r;
	}
	*n = len;
	return p;
}

static inline void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed + (i >> 12));
}

/* @p[off, off + n) holds fill(@seed)'s bytes: 0 or -1. */
static inline int check(const unsigned char *p, size_t off, size_t n, unsigned int seed)
{
	for (size_t i = off; i < off + n; i++)
		if (p[i] != (unsigned char)(i * 131 + seed + (i >> 12)))
			return -1;
	return 0;
}

/* Connect @w to the peer on @sock: exchange worker addresses. */
static inline int pair_up(tio_net_worker_t *w, int sock, const char *peer, tio_net_ep_t **ep)
{
	size_t n, pn;
	void *a, *pa;
	int ret;

	if (tio_net_worker_address(w, &a, &n))
		return -1;
	ret = send_blob(sock, a, n);
	free(a);
	if (ret)
		return -1;
	pa = recv_blob(sock, &pn);
	if (!pa)
		return -1;
	ret = tio_net_connect(w, pa, pn, peer, ep);
	free(pa);
	return ret;
}

static inline struct tio_desc desc_2d(void)
{
	struct tio_desc d = {
		.code = kDLFloat, .bits = 32, .lanes = 1, .ndim = 2,
	};

	d.shape[0] = 512;
	d.shape[1] = 512;
	return d;
}

/*
 * A registered buffer of @n bytes: @b tio_buffer_alloc()'d and registered,
 * or, with @alloc, UCX's memory (tio_net_mem_alloc; @b borrowed from @m).
 */
static inline int mem_new(tio_net_worker_t *w, bool alloc, size_t n, tio_buffer_t **b,
			  tio_net_mem_t **m)
{
	if (alloc) {
		if (tio_net_mem_alloc(w, n, m))
			return -1;
		*b = tio_net_mem_buffer(*m);
		return 0;
	}
	if (tio_buffer_alloc(n, NULL, b))
		return -1;
	if (!tio_net_mem_register(w, *b, m))
		return 0;
	tio_buffer_decref(*b);
	*b = NULL;
	return -1;
}

static inline void mem_free(bool alloc, tio_buffer_t *b, tio_net_mem_t *m)
{
	tio_net_mem_deregister(m);
	if (!alloc && b)
		tio_buffer_decref(b);
}

/*
 * The peer: a buffer of NBYTES filled with seed 1, its descriptor sent;
 * then on each command byte: 'c' checks the buffer against the parent's
 * writes (answers 0 or 1), 'q' quits. Never returns.
 */
static inline void peer_main(int sock, bool alloc)
{
	struct tio_desc d = desc_2d();
	tio_net_worker_t *w = NULL;
	tio_net_ep_t *ep = NULL;
	tio_net_mem_t *m = NULL;
	tio_buffer_t *b = NULL;
	unsigned char *p, cmd, ok;
	int rc = 1;

	if (tio_net_worker_create(&w) || pair_up(w, sock, "parent", &ep) ||
	    mem_new(w, alloc, NBYTES, &b, &m))
		goto out;
	p = tio_buffer_data(b);
	fill(p, NBYTES, 1);
	if (tio_net_send_desc(ep, m, &d, TAG_DESC, 10000000000LL))
		goto out;
	while (read(sock, &cmd, 1) == 1 && cmd != 'q') {
		/* The parent put seed 2 into the first half. */
		ok = !check(p, 0, NBYTES / 2, 2) && !check(p, NBYTES / 2, NBYTES / 2, 1);
		if (write(sock, &ok, 1) != 1)
			goto out;
	}
	rc = 0;
out:
	if (rc && tio_error_peek_raised())
		fprintf(stderr, "# peer: %s\n", tio_error_message(tio_error_peek_raised()));
	tio_net_ep_close(ep);
	mem_free(alloc, b, m);
	tio_net_worker_destroy(w);
	_exit(rc);
}

/*
 * Fork peer_main() on transports @tls (its buffer UCX's memory with
 * @alloc): its pid, our end of the socketpair.
 */
static inline pid_t spawn_peer(const char *tls, bool alloc, int *sock)
{
	int sv[2];
	pid_t pid;

	setenv("UCX_TLS", tls, 1);
	/* A dead peer is noticed within seconds, not the default minutes. */
	setenv("UCX_KEEPALIVE_INTERVAL", "1s", 1);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (!pid) {
		close(sv[0]);
		peer_main(sv[1], alloc);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

/* Tell the peer to quit (or kill it) and reap it. */
static inline void stop_peer(pid_t child, int sock)
{
	char q = 'q';

	if (child > 0) {
		if (write(sock, &q, 1) != 1)
			kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	close(sock);
}

FIXTURE_DATA(net) {
	int fds;
	int64_t objs;
	pid_t child;
	int sock;
	tio_net_worker_t *w;
	tio_net_ep_t *ep;
};

/* A worker (close timeout @close_ms, or the default) paired with a peer. */
static inline void net_open(struct __test_metadata *_metadata, FIXTURE_DATA(net) *self,
			    const char *tls, bool alloc, const char *close_ms)
{
	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	self->child = spawn_peer(tls, alloc, &self->sock);
	ASSERT_LE(0, self->child);
	if (close_ms)
		setenv("TIO_NET_CLOSE_TIMEOUT_MS", close_ms, 1);
	ASSERT_OK(tio_net_worker_create(&self->w));
	unsetenv("TIO_NET_CLOSE_TIMEOUT_MS");
	ASSERT_OK(pair_up(self->w, self->sock, "child", &self->ep));
}

static inline void net_close(struct __test_metadata *_metadata, FIXTURE_DATA(net) *self)
{
	if (!self->w)
		return;	/* skipped */
	/*
	 * Close while the peer still progresses: a flush towards a peer that
	 * is gone never ends on shared memory (UCX 1.13 notices no dead peer
	 * there). Its own close then meets a worker that still progresses.
	 */
	tio_net_ep_close(self->ep);
	stop_peer(self->child, self->sock);
	tio_net_worker_destroy(self->w);
	tio_error_clear();
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
}

/* Whether this variant runs here: 0, or SKIP said why. */
static inline bool net_variant_skipped(struct __test_metadata *_metadata, const char *tls)
{
	const char *only = getenv("TIO_TEST_NET_ONLY");
	bool verbs = strstr(tls, "verbs");
	struct dirent *d;
	DIR *dir;

	if (only && strcmp(only, tls)) {
		SKIP(return true, "TIO_TEST_NET_ONLY=%s", only);
	}
	if (!verbs)
		return false;
	dir = opendir("/sys/class/infiniband");
	while (dir && (d = readdir(dir)) && d->d_name[0] == '.')
		;
	if (!dir || !d) {
		if (dir)
			closedir(dir);
		SKIP(return true, "no RDMA device (/sys/class/infiniband is empty)");
	}
	closedir(dir);
	return false;
}

/* The peer's buffer holds seed 2 in the first half, seed 1 after: 0/-1. */
static inline int ask_peer(int sock)
{
	unsigned char c = 'c', ok = 0;

	if (write(sock, &c, 1) != 1 || read(sock, &ok, 1) != 1)
		return -1;
	return ok ? 0 : -1;
}

#ifdef __SANITIZE_THREAD__
/*
 * Under ThreadSanitizer: UCX 1.13's libucm patches mmap/munmap as it
 * loads, which crashes Debian 12's TSan runtime (SIGSEGV); with the hooks
 * off (UCX_MEM_MMAP_HOOK_MODE=none) TSan reports the peer's one-sided
 * writes, made by its progress thread and ordered only through the other
 * process, as races. libtensorio itself runs under TSan (the other tests).
 */
#define NET_HARNESS_MAIN						\
int main(void)								\
{									\
	(void)test_harness_run;						\
	ksft_print_header();						\
	ksft_set_plan(1);						\
	ksft_test_result_skip("net under TSan: UCX 1.13's libucm mmap hooks crash the TSan " \
			      "runtime, and cross-process one-sided writes look like races\n"); \
	ksft_finished();						\
}
#else
#define NET_HARNESS_MAIN TEST_HARNESS_MAIN
#endif

#endif /* TIO_NET_TEST_H */
