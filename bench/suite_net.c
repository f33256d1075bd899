// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The net suite: GB/s of 1 MiB tensor puts and gets through libtensorio-net
 * between two processes, beside UCX's own ucx_perftest (ucp_put_bw,
 * ucp_get) on the same transport in the same run:
 *   put/shm, get/shm        UCX_TLS=sm,self
 *   put/tcp, get/tcp        UCX_TLS=tcp,self (loopback)
 *   put/verbs, get/verbs    UCX_TLS=rc_verbs,ud_verbs,self on one RDMA
 *                           device's port 1 ($TIO_RDMA_DEV, else the
 *                           first), its IPv4 GID (RoCE), and for UCX 1.13
 *                           over soft-RoCE no UD destination-GID check
 *                           (docs/net.md); skipped without a device or
 *                           UCX's uct_ib module
 *   .../ucx_perftest        the peer tool's own time per 1 MiB operation
 *   .../registered          the buffers tio_buffer_alloc'd and registered
 * The other rows' buffers are UCX's memory (tio_net_mem_alloc), as
 * ucx_perftest's are (ucp_mem_map with UCP_MEM_MAP_ALLOCATE): over shared
 * memory only that is one copy by the initiator (docs/net.md).
 * Ours issue every transfer of a sample with a stream point and wait for
 * the last one, as ucx_perftest keeps its operations in flight.
 * libtensorio-net is loaded with dlopen() when the suite runs, so that
 * tio-bench itself does not load UCX for the other suites.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/net.h>
#include <tensorio/stream.h>

#include "bench.h"

#define NET_SIZE	(1u << 20)
#define NET_PERFTEST	"/usr/bin/ucx_perftest"
#define NET_PUT		0x1
#define NET_TCP		0x2
#define NET_PEER	0x4	/* the ucx_perftest row */
#define NET_REG		0x8	/* tio_buffer_alloc + tio_net_mem_register */
#define NET_VERBS	0x10	/* rc_verbs,ud_verbs on an RDMA device */

static struct {
	__typeof__(tio_net_worker_create) *worker_create;
	__typeof__(tio_net_worker_destroy) *worker_destroy;
	__typeof__(tio_net_worker_address) *worker_address;
	__typeof__(tio_net_connect) *connect;
	__typeof__(tio_net_ep_close) *ep_close;
	__typeof__(tio_net_mem_register) *mem_register;
	__typeof__(tio_net_mem_alloc) *mem_alloc;
	__typeof__(tio_net_mem_deregister) *mem_deregister;
	__typeof__(tio_net_rkey_pack) *rkey_pack;
	__typeof__(tio_net_rkey_unpack) *rkey_unpack;
	__typeof__(tio_net_rkey_destroy) *rkey_destroy;
	__typeof__(tio_net_put) *put;
	__typeof__(tio_net_get) *get;
} net;

static int net_load(struct bench_run *run)
{
	void *h = dlopen("libtensorio-net.so.0", RTLD_NOW);

	if (!h)
		return bench_skip(run, "no libtensorio-net: %s", dlerror());
#define SYM(f) (*(void **)&net.f = dlsym(h, "tio_net_" #f))
	if (!SYM(worker_create) || !SYM(worker_destroy) || !SYM(worker_address) ||
	    !SYM(connect) || !SYM(ep_close) || !SYM(mem_register) || !SYM(mem_alloc) || !SYM(mem_deregister) ||
	    !SYM(rkey_pack) || !SYM(rkey_unpack) || !SYM(rkey_destroy) || !SYM(put) ||
	    !SYM(get))
		return bench_fail(run, ENOENT, "libtensorio-net lacks a symbol: %s", dlerror());
#undef SYM
	return 0;
}

/* Addresses and keys as one SOCK_SEQPACKET message each. */
#define NET_MSG_MAX	65536

static int send_blob(int fd, const void *p, uint32_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static void *recv_blob(int fd, size_t *n)
{
	char *p = malloc(NET_MSG_MAX);
	ssize_t r;

	if (!p)
		return NULL;
	r = read(fd, p, NET_MSG_MAX);
	if (r <= 0) {
		free(p);
		return NULL;
	}
	*n = (size_t)r;
	return p;
}

struct nstate {
	pid_t child;
	int sock;
	tio_net_worker_t *w;
	tio_net_ep_t *ep;
	tio_net_mem_t *m;
	tio_net_rkey_t *rk;
	tio_buffer_t *b;
	tio_stream_t *s;
	int reg;	/* the buffer registered, not UCX's (NET_REG) */
};

/* Worker, buffer and registration; the address and, with @key, the key sent. */
static int net_side(struct nstate *s, int key)
{
	size_t n;
	void *p;
	int r;

	if (net.worker_create(&s->w))
		return -1;
	if (s->reg ? tio_buffer_alloc(NET_SIZE, NULL, &s->b) ||
		     net.mem_register(s->w, s->b, &s->m) :
		     net.mem_alloc(s->w, NET_SIZE, &s->m))
		return -1;
	if (net.worker_address(s->w, &p, &n))
		return -1;
	r = send_blob(s->sock, p, (uint32_t)n);
	free(p);
	if (r || !key)
		return r;
	if (net.rkey_pack(s->m, &p, &n))
		return -1;
	r = send_blob(s->sock, p, (uint32_t)n);
	free(p);
	return r;
}

static int net_connect(struct nstate *s, const char *peer)
{
	size_t n;
	void *p = recv_blob(s->sock, &n);
	int r;

	if (!p)
		return -1;
	r = net.connect(s->w, p, n, peer, &s->ep);
	free(p);
	return r;
}

static void net_release(struct nstate *s)
{
	net.rkey_destroy(s->rk);
	net.ep_close(s->ep);
	net.mem_deregister(s->m);
	if (s->b)
		tio_buffer_decref(s->b);
	if (s->s)
		tio_stream_decref(s->s);
	net.worker_destroy(s->w);
	s->rk = NULL, s->ep = NULL, s->m = NULL, s->b = NULL, s->s = NULL, s->w = NULL;
}

/* The target: its memory, key and address; it progresses until told to go. */
static void net_peer(int sock, int reg)
{
	struct nstate s = { .sock = sock, .reg = reg };
	char c;
	int rc = 1;

	if (!net_side(&s, 1) && !net_connect(&s, "bench") && read(sock, &c, 1) == 1)
		rc = 0;
	net.ep_close(s.ep);	/* the initiator closed its endpoint first */
	s.ep = NULL;
	if (write(sock, &c, 1) != 1)
		rc = 1;
	net_release(&s);
	_exit(rc);
}

static int net_setup_ours(struct bench_run *run, struct nstate *s)
{
	int sv[2];
	size_t n;
	void *p;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return bench_fail(run, errno, "socketpair: %s", strerror(errno));
	s->child = fork();
	if (s->child < 0)
		return bench_fail(run, errno, "fork: %s", strerror(errno));
	if (!s->child) {
		close(sv[0]);
		net_peer(sv[1], s->reg);
	}
	close(sv[1]);
	s->sock = sv[0];
	if (net_side(s, 0) || net_connect(s, "peer") || !(p = recv_blob(s->sock, &n)))
		goto fail;
	if (net.rkey_unpack(s->ep, p, n, &s->rk)) {
		free(p);
		goto fail;
	}
	free(p);
	if (tio_stream_create(&s->s))
		goto fail;
	return 0;
fail:
	return bench_fail(run, EIO, "net setup: %s", tio_error_peek_raised() ?
			  tio_error_message(tio_error_peek_raised()) : "the peer went away");
}

/* Where the loaded libucp.so lives: UCX's modules are in its ucx/. */
static int net_ucp_dir(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *slash = strrchr(info->dlpi_name, '/');

	(void)size;
	if (!slash || strncmp(slash, "/libucp.so", 10))
		return 0;
	snprintf(data, PATH_MAX, "%.*s/ucx/libuct_ib.so.0", (int)(slash - info->dlpi_name),
		 info->dlpi_name);
	return 1;
}

/* The index of port 1's first IPv4-mapped (RoCE v2) GID of device @dev. */
static int net_gid_index(const char *dev)
{
	char path[PATH_MAX], gid[64];
	FILE *f;
	int i;

	for (i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
		f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(gid, sizeof(gid), f))
			gid[0] = 0;
		fclose(f);
		if (!strncmp(gid, "0000:0000:0000:0000:0000:ffff:", 30))
			return i;
	}
	return -1;
}

/*
 * UCX over verbs on one device: $TIO_RDMA_DEV, else the first one; the
 * same settings as test_net's verbs variant in the VM (tests/net/vm-rxe.sh).
 */
static int net_verbs_env(struct bench_run *run)
{
	const char *dev = getenv("TIO_RDMA_DEV");
	char buf[PATH_MAX] = "";
	struct dirent *d = NULL;
	DIR *dir = NULL;
	int gid;

	if (!dev || !*dev) {
		dir = opendir("/sys/class/infiniband");
		while (dir && (d = readdir(dir)) && d->d_name[0] == '.')
			;
		if (!d) {
			if (dir)
				closedir(dir);
			return bench_skip(run, "no RDMA device (/sys/class/infiniband is empty)");
		}
		dev = d->d_name;
	}
	gid = net_gid_index(dev);
	snprintf(buf, sizeof(buf), "%s:1", dev);
	setenv("UCX_NET_DEVICES", buf, 1);
	if (dir)
		closedir(dir);
	if (gid < 0)
		return bench_skip(run, "RDMA device %s has no IPv4 GID on port 1", buf);
	snprintf(buf, sizeof(buf), "%d", gid);
	setenv("UCX_IB_GID_INDEX", buf, 1);
	setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 1);
	buf[0] = 0;
	dl_iterate_phdr(net_ucp_dir, buf);
	if (!buf[0] || access(buf, R_OK))
		return bench_skip(run, "no UCX verbs transport (%s)",
				  buf[0] ? buf : "libucp not loaded");
	return 0;
}

static void net_verbs_unset(void)
{
	unsetenv("UCX_NET_DEVICES");
	unsetenv("UCX_IB_GID_INDEX");
	unsetenv("UCX_UD_VERBS_ETH_DGID_CHECK");
}

static int net_setup(struct bench_run *run)
{
	uintptr_t a = run->c->arg;
	struct nstate *s;
	int err;

	net_verbs_unset();
	if (a & NET_PEER && access(NET_PERFTEST, X_OK))
		return bench_skip(run, "ucx_perftest is not installed (ucx-utils)");
	/* The verbs rows look for UCX's modules beside the loaded libucp. */
	if ((!(a & NET_PEER) || a & NET_VERBS) && (err = net_load(run)))
		return err;
	if (a & NET_VERBS && (err = net_verbs_env(run)))
		return err;
	setenv("UCX_TLS", a & NET_VERBS ? "rc_verbs,ud_verbs,self" :
		a & NET_TCP ? "tcp,self" : "sm,self", 1);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->sock = -1;
	s->reg = !!(a & NET_REG);
	run->state = s;
	return a & NET_PEER ? 0 : net_setup_ours(run, s);
}

static int net_run_ours(struct bench_run *run, struct nstate *s, uint64_t n)
{
	int put = run->c->arg & NET_PUT, status = 0;
	uint64_t i, seq = 0;

	for (i = 0; i < n; i++)
		if ((put ? net.put : net.get)(s->ep, s->m, 0, s->rk, 0, NET_SIZE, s->s, &seq))
			return bench_fail(run, EIO, "%s", tio_error_message(tio_error_peek_raised()));
	if (tio_fence_wait(s->s, seq, -1, &status) || status)
		return bench_fail(run, EIO, "net %s failed (%d)", put ? "put" : "get", status);
	return 0;
}

/* ucx_perftest's "Final:" line: its overall overhead, usec per operation. */
static int net_perftest_final(const char *line, double *usec)
{
	return strncmp(line, "Final:", 6) ||
	       sscanf(line + 6, "%*s %*s %*s %lf", usec) != 1 ? -1 : 0;
}

/*
 * ucx_perftest, server and client, on a port of our own; its "Final:"
 * line's overall overhead is the time of one operation. The server takes
 * the first connection as its client, so it is not probed: the client
 * retries until the server listens (bench_tool_pair()).
 */
static double net_perftest(const char *test, char *iters, int port, char *why,
			   size_t whylen)
{
	char p[16], size[16];
	char *srv[] = { NET_PERFTEST, "-p", p, NULL };
	char *cli[] = { NET_PERFTEST, "127.0.0.1", "-p", p, "-t", (char *)test,
			"-s", size, "-n", iters, "-w", "10", NULL };

	snprintf(p, sizeof(p), "%d", port);
	snprintf(size, sizeof(size), "%u", NET_SIZE);
	return bench_tool_pair(srv, cli, net_perftest_final, why, whylen);
}

static int net_run_peer(struct bench_run *run, uint64_t n)
{
	const char *test = run->c->arg & NET_PUT ? "ucp_put_bw" : "ucp_get";
	int port = 20000 + (int)(getpid() % 20000), k;
	double usec = -1;
	char iters[32], why[256];

	/* A server that exits at once (its port taken): another port, 5 at most. */
	snprintf(iters, sizeof(iters), "%llu", (unsigned long long)(n < 20 ? 20 : n));
	for (k = 0; k < 5 && usec <= 0; k++)
		usec = net_perftest(test, iters, 20000 + (port + k * 3571) % 20000, why,
				    sizeof(why));
	if (usec <= 0)
		return bench_fail(run, EIO, "no Final: line from ucx_perftest -t %s: %s", test,
				  why);
	run->manual_ns = usec * 1000.0 * (double)n;
	return 0;
}

static int net_run(struct bench_run *run, uint64_t n)
{
	if (run->c->arg & NET_PEER)
		return net_run_peer(run, n);
	return net_run_ours(run, run->state, n);
}

static void net_teardown(struct bench_run *run)
{
	struct nstate *s = run->state;
	char c = 'q';

	if (!s)
		return;
	if (s->child > 0) {
		/* Our endpoint first, while the peer progresses (docs/net.md). */
		net.rkey_destroy(s->rk);
		net.ep_close(s->ep);
		s->rk = NULL, s->ep = NULL;
		if (write(s->sock, &c, 1) != 1 || read(s->sock, &c, 1) != 1)
			kill(s->child, SIGKILL);
		waitpid(s->child, NULL, 0);
	}
	if (s->w)
		net_release(s);
	if (s->sock >= 0)
		close(s->sock);
	tio_error_clear();
	free(s);
	run->state = NULL;
	net_verbs_unset();
}

#define NET(n, a, r, what) {						\
	.suite = "net", .name = n, .ref = r, .bytes = NET_SIZE,		\
	.note = what,							\
	.setup = net_setup, .run = net_run, .teardown = net_teardown, .arg = (a) }

static struct bench_case cases[] = {
	NET("put/shm/ucx_perftest", NET_PEER | NET_PUT, "put/shm/ucx_perftest",
	    "ucx_perftest -t ucp_put_bw -s 1MiB, UCX_TLS=sm,self (its own time per put)"),
	NET("put/shm", NET_PUT, "put/shm/ucx_perftest",
	    "tio_net_put of 1 MiB + flush on a stream point, sm, tio_net_mem_alloc buffers"),
	NET("get/shm/ucx_perftest", NET_PEER, "get/shm/ucx_perftest",
	    "ucx_perftest -t ucp_get -s 1MiB, UCX_TLS=sm,self"),
	NET("get/shm", 0, "get/shm/ucx_perftest", "tio_net_get of 1 MiB on a stream point, sm, tio_net_mem_alloc buffers"),
	NET("put/shm/registered", NET_PUT | NET_REG, "put/shm/ucx_perftest",
	    "the same, both buffers tio_buffer_alloc + tio_net_mem_register (AM-emulated in UCX 1.13)"),
	NET("get/shm/registered", NET_REG, "get/shm/ucx_perftest",
	    "the same, both buffers tio_buffer_alloc + tio_net_mem_register (AM-emulated in UCX 1.13)"),
	NET("put/tcp/ucx_perftest", NET_PEER | NET_PUT | NET_TCP, "put/tcp/ucx_perftest",
	    "ucx_perftest -t ucp_put_bw -s 1MiB, UCX_TLS=tcp,self (loopback)"),
	NET("put/tcp", NET_PUT | NET_TCP, "put/tcp/ucx_perftest",
	    "tio_net_put of 1 MiB + flush on a stream point, tcp loopback"),
	NET("get/tcp/ucx_perftest", NET_PEER | NET_TCP, "get/tcp/ucx_perftest",
	    "ucx_perftest -t ucp_get -s 1MiB, UCX_TLS=tcp,self (loopback)"),
	NET("get/tcp", NET_TCP, "get/tcp/ucx_perftest",
	    "tio_net_get of 1 MiB on a stream point, tcp loopback"),
	NET("put/verbs/ucx_perftest", NET_PEER | NET_PUT | NET_VERBS, "put/verbs/ucx_perftest",
	    "ucx_perftest -t ucp_put_bw -s 1MiB, UCX_TLS=rc_verbs,ud_verbs,self on one RDMA device"),
	NET("put/verbs", NET_PUT | NET_VERBS, "put/verbs/ucx_perftest",
	    "tio_net_put of 1 MiB + flush on a stream point, rc_verbs, tio_net_mem_alloc buffers"),
	NET("get/verbs/ucx_perftest", NET_PEER | NET_VERBS, "get/verbs/ucx_perftest",
	    "ucx_perftest -t ucp_get -s 1MiB, UCX_TLS=rc_verbs,ud_verbs,self on one RDMA device"),
	NET("get/verbs", NET_VERBS, "get/verbs/ucx_perftest",
	    "tio_net_get of 1 MiB on a stream point, rc_verbs, tio_net_mem_alloc buffers"),
};

static void __attribute__((constructor)) net_register(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_register(&cases[i]);
}
