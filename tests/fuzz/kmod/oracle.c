// SPDX-License-Identifier: GPL-2.0
/*
 * The oracles: rules of the kernel and of the uapi that a program can
 * break without any splat. Each failure prints "# fuzz: ORACLE name:" and
 * aborts, so that libFuzzer saves the input.
 *
 *  errno   every result (ioctl, CQE, SUBMIT and ring record) is 0, a
 *          count, or a negative errno of the uapi's list (docs/uapi.md;
 *          never -ERESTARTSYS, -EIOCBQUEUED or another kernel-internal one)
 *  submit  io_uring_submit() returns within a bound (500 ms) or does not
 *          sleep: no command waits at a non-blocking issue
 *  fence   every sync_file and every exported dma-buf's dma_resv point
 *          signals by its deadline (the stream's fence bound) plus slack
 *  fd      after the program closed what it was told about, no fd of its
 *          is left: none was installed by a call that failed or whose
 *          number did not reach userspace
 *  counters  after close, the driver's debugfs counters (files, buffers,
 *          streams, waits, parked commands, spare pages, pinned bytes)
 *          are zero and the process's pinned memory (VmPin) is back
 *  log     no WARNING, BUG (KASAN, lockdep, sleep in atomic), Oops or
 *          kmemleak report in the kernel log
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "kfuzz.h"

int g_fd_base;
uint64_t g_submit_bound_ns = 500000000ULL;
uint64_t g_fence_slack_ns = 1000000000ULL;

static int stats_fd = -1, status_fd = -1, kmsg_fd = -1;
static long vmpin_base;

void oracle_fail(const char *oracle, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "# fuzz: ORACLE %s: %s\n", oracle, msg);
	fflush(stderr);
	cover_dump();
	abort();
}

/*
 * The errnos the uapi documents (docs/uapi.md, tensorio(4)), the ones the
 * driver passes on from the kernel's dma-buf, sync_file and mm calls
 * included. Anything else reaching userspace is a bug.
 */
static bool uapi_errno(int e)
{
	switch (e) {
	case EPERM: case ENOENT: case EINTR: case ENXIO: case EBADF: case EAGAIN:
	case ENOMEM: case EACCES: case EFAULT: case EBUSY: case EINVAL: case EMFILE:
	case ENOTTY: case E2BIG: case ERANGE: case EOPNOTSUPP: case EOVERFLOW:
	case ETIME: case ETIMEDOUT: case ECANCELED: case ENODEV:
		return true;
	}
	return false;
}

static const char *op_name(unsigned int cmd)
{
	unsigned int i = op_index(cmd);

	return i < g_nops ? g_ops[i].name : "?";
}

bool g_trace;

void check_result(struct worker *k, const char *form, unsigned int cmd, int res)
{
	if (g_trace)
		fprintf(stderr, "# trace: thread %d %s %s (0x%08x): %d\n", k ? k->id : -1, form,
			op_name(cmd), cmd, res);
	if (res >= 0 || uapi_errno(-res))
		return;
	oracle_fail("errno", "%s %s (0x%08x, thread %d) returned %d, not a uapi errno",
		    form, op_name(cmd), cmd, k ? k->id : -1, res);
}

/*
 * io_uring_submit() took longer than the bound and the thread slept in it
 * (a voluntary context switch): a command waited at the non-blocking
 * issue. Time alone is not enough under TCG on a loaded host, where a
 * vCPU can stand still for a while with the thread running.
 */
void check_submit_time(struct worker *k, uint64_t t0, long slept)
{
	uint64_t t = now_ns() - t0;

	if (t > g_submit_bound_ns && slept > 0)
		oracle_fail("submit", "io_uring_submit() slept %ld times and took %.0f ms (bound %.0f ms, thread %d)",
			    slept, t / 1e6, g_submit_bound_ns / 1e6, k->id);
}

/* ---- fences ---- */

/*
 * Does @fd become ready for @ev by @until (ns)? A poll that a signal ends
 * (libFuzzer's SIGALRM for -timeout, an interrupt timer) is no answer:
 * poll again until the deadline has passed.
 */
static bool wait_fd(int fd, short ev, uint64_t until)
{
	struct pollfd p = { .fd = fd, .events = ev };
	uint64_t now;
	int ms, n;

	do {
		now = now_ns();
		ms = until > now ? (int)((until - now + 999999) / 1000000) : 0;
		n = poll(&p, 1, ms);
		if (n == 1)
			return p.revents & (ev | POLLERR | POLLNVAL);
		if (n < 0 && errno != EINTR)
			oracle_fail("fence", "poll of fd %d: %s", fd, strerror(errno));
	} while (now_ns() < until);
	return false;
}

/*
 * The fence oracle's own check, at start: a wait that signals interrupt
 * every 2 ms neither ends before its deadline nor misses a ready fd.
 */
void oracle_selftest(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGKICK };
	struct itimerspec its = { .it_value.tv_nsec = 2000000, .it_interval.tv_nsec = 2000000 };
	uint64_t t0 = now_ns(), until = t0 + 50000000;
	bool early, ready;
	timer_t tm;
	int p[2];

	ev._sigev_un._tid = syscall(SYS_gettid);
	if (pipe(p) || timer_create(CLOCK_MONOTONIC, &ev, &tm))
		oracle_fail("fence", "self-test: %s", strerror(errno));
	timer_settime(tm, 0, &its, NULL);
	early = wait_fd(p[0], POLLIN, until) || now_ns() < until;
	ready = write(p[1], "", 1) == 1 && wait_fd(p[0], POLLIN, now_ns() + 50000000);
	timer_delete(tm);
	close(p[0]);
	close(p[1]);
	if (early || !ready)
		oracle_fail("fence", "self-test: a wait interrupted by signals %s",
			    early ? "ended before its deadline" : "missed a ready fd");
}

/*
 * Before the files close (which cancels every point): each sync_file the
 * program holds and each exported dma-buf's fences must signal by their
 * deadline. Expiry makes a point signal with -ETIMEDOUT; only a point that
 * never signals fails here.
 */
void oracle_fences(struct world *w)
{
	int i;

	for (i = 0; i < w->nfds; i++) {
		struct tfd *t = &w->fds[i];
		uint64_t until;

		if (t->kind == TFD_SYNC_FILE && t->deadline)
			until = t->deadline + g_fence_slack_ns;
		else if (t->kind == TFD_DMABUF && w->resv_deadline)
			until = w->resv_deadline + g_fence_slack_ns;
		else
			continue;
		if (wait_fd(t->fd, t->kind == TFD_SYNC_FILE ? POLLIN : POLLOUT, until))
			continue;
		oracle_fail("fence", "%s fd %d: a visible point still unsignalled %.0f ms past its deadline",
			    t->kind == TFD_SYNC_FILE ? "sync_file" : "dma-buf", t->fd,
			    ((double)now_ns() - (double)(until - g_fence_slack_ns)) / 1e6);
	}
}

/* ---- after close ---- */

static void check_fds(struct world *w)
{
	struct pollfd p[256];
	char path[64], what[128];
	int i, n, top;

	/*
	 * fds are given lowest first: one installed by a call that failed is
	 * below the next one the program was told about, or just above the
	 * last (a few more for its files and what it opened itself).
	 */
	top = (w->fd_high > g_fd_base ? w->fd_high : g_fd_base) + 8 - g_fd_base;
	if (top > 256)
		top = 256;
	for (i = 0; i < top; i++)
		p[i] = (struct pollfd){ .fd = g_fd_base + i };
	if (poll(p, top, 0) < 0)
		return;
	for (i = 0; i < top; i++) {
		if (p[i].revents & POLLNVAL || p[i].fd == w->f[0].fd || p[i].fd == w->f[1].fd)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", p[i].fd);
		n = readlink(path, what, sizeof(what) - 1);
		what[n > 0 ? n : 0] = 0;
		oracle_fail("fd", "fd %d (%s) is open after the program closed every fd it was given",
			    p[i].fd, what);
	}
	w->fd_high = 0;
}

static long vmpin(void)
{
	char buf[4096], *s;
	ssize_t n = pread(status_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	s = strstr(buf, "VmPin:");
	return s ? strtol(s + 6, NULL, 10) : 0;
}

/* The driver's counters of live things (not fences_expired, a count of
 * events) and VmPin, as one line.
 */
/* The driver's files this process has open (debugfs files/PID.N). */
static long own_files(void)
{
	DIR *d = opendir("/sys/kernel/debug/tensorio/files");
	char prefix[32];
	struct dirent *e;
	long n = 0;

	if (!d)
		return 0;
	snprintf(prefix, sizeof(prefix), "%d.", getpid());
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/*
 * Alone in the VM (the default) the module-wide counters are this
 * process's; with another fuzzer beside it (TIO_FUZZ_SHARED) only its own
 * files and VmPin are, and the module-wide counters are checked when the
 * run ends (tests/fuzz/guest-lib.sh).
 */
bool g_shared;

void counters_snapshot(char *out, size_t len)
{
	char buf[1024], *line, *save;
	ssize_t n = stats_fd >= 0 && !g_shared ? pread(stats_fd, buf, sizeof(buf) - 1, 0) : 0;
	size_t o = 0;

	if (g_shared)
		o = snprintf(out, len, "own_files %ld, ", own_files());
	buf[n > 0 ? n : 0] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64];
		long long v;

		if (sscanf(line, "%63s %lld", name, &v) == 2 && strcmp(name, "fences_expired") &&
		    o < len)
			o += snprintf(out + o, len - o, "%s %lld, ", name, v);
	}
	if (o < len)
		snprintf(out + o, len - o, "VmPin %ld kB", vmpin());
}

/* @snap with every counter zero and VmPin as at the start. */
static void zero_of(const char *snap, char *out, size_t len)
{
	size_t o = 0;
	char name[64];
	int n;

	while (o < len && sscanf(snap, "%63s %*d, %n", name, &n) == 1 && n > 0 &&
	       strcmp(name, "VmPin")) {
		o += snprintf(out + o, len - o, "%s 0, ", name);
		snap += n;
	}
	if (o < len)
		snprintf(out + o, len - o, "VmPin %ld kB", vmpin_base);
}

/*
 * Wait up to 3 s (releases trail a close: io-wq requests, RCU) for the
 * counters to read @want (NULL: every one zero, VmPin as at the start).
 * Return: true when they do not; @out holds what they read.
 */
bool counters_settle(const char *want, char *out, size_t len)
{
	uint64_t until = now_ns() + 3000000000ULL;
	unsigned int us = 100;
	char zero[512];

	for (;;) {
		counters_snapshot(out, len);
		if (!want) {
			zero_of(out, zero, sizeof(zero));
			want = zero;
		}
		if (!strcmp(out, want) || stats_fd < 0)
			return false;
		if (now_ns() > until)
			return true;
		usleep(us);
		if (us < 50000)
			us *= 2;
	}
}

static const char *const log_bad[] = {
	"WARNING:", "BUG:", "Oops", "UBSAN:", "general protection",
	"Call Trace:", "suspected memory leak", "INFO: ", "kernel BUG",
};

/* New kernel log records since the last input: any report fails. */
static void check_log(void)
{
	char rec[1024];
	unsigned int i;
	ssize_t n;

	if (kmsg_fd < 0)
		return;
	while ((n = read(kmsg_fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		for (i = 0; i < sizeof(log_bad) / sizeof(log_bad[0]); i++) {
			if (!strstr(rec, log_bad[i]))
				continue;
			/* The report's next records, then fail. */
			usleep(200000);
			fprintf(stderr, "# fuzz: kmsg: %s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
			while ((n = read(kmsg_fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
				if (n <= 0)
					continue;
				rec[n] = 0;
				fprintf(stderr, "# fuzz: kmsg: %s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
			}
			oracle_fail("log", "the kernel logged a report (above)");
		}
	}
}

void oracle_after(struct world *w)
{
	uint64_t t0 = now_ns();

	check_fds(w);
	prof_add(P_FDS, t0, now_ns());
	check_log();
}

/* The highest fd open now. */
static int fd_top(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int top = 2, fd;

	if (!d)
		return 255;
	while ((e = readdir(d))) {
		fd = atoi(e->d_name);
		if (fd > top && fd != dirfd(d))
			top = fd;
	}
	closedir(d);
	return top;
}

void oracle_init(struct world *w)
{
	stats_fd = open("/sys/kernel/debug/tensorio/stats", O_RDONLY | O_CLOEXEC);
	status_fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	vmpin_base = vmpin();
	if (stats_fd < 0)
		fprintf(stderr, "# fuzz: no debugfs stats: the counters oracle is off\n");
	g_fd_base = fd_top() + 1;	/* every higher fd is a program's */
}

/*
 * Before the first input: libFuzzer's merge keeps its control file open
 * from there on (an fd above the base that no program made).
 */
void oracle_rebase(void)
{
	int top = fd_top();

	if (top >= g_fd_base)
		g_fd_base = top + 1;
}
