// SPDX-License-Identifier: GPL-2.0
/*
 * The per-file object table: lookups racing frees, wrong-type handles and
 * the debugfs listing of a file's objects. The race is a stress, not a
 * proof: the window it probes (between xa_load() and the kref check,
 * closed by freeing objects after an RCU grace period) is a few
 * instructions wide, so a regression there shows only now and then, under
 * the debug kernel's KASAN.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/tensorio.h>

#include "kselftest_harness.h"

#define ROUNDS 3000

struct race {
	int fd;
	volatile int stop;
	unsigned long hits;
};

/* Look up every low handle, as fast as possible, while they come and go. */
static void *lookup_thread(void *arg)
{
	struct race *r = arg;
	struct tio_buf_info info;
	__u32 h;

	while (!r->stop) {
		for (h = 1; h <= 4; h++) {
			memset(&info, 0, sizeof(info));
			info.handle = h;
			if (!ioctl(r->fd, TIO_IOC_BUF_INFO, &info))
				r->hits++;
		}
	}
	return NULL;
}

FIXTURE(table) {
	int fd;
};

FIXTURE_SETUP(table)
{
	self->fd = open("/dev/tensorio", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(table)
{
	close(self->fd);
}

TEST_F(table, lookups_race_frees)
{
	struct race r = { .fd = self->fd };
	struct timespec t0, t;
	pthread_t th[2];
	int i, n;

	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, lookup_thread, &r));
	/*
	 * ROUNDS, or 15 s of them: a KASAN kernel under TCG on a busy host
	 * must not run into the harness's 30 s timeout.
	 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; n < ROUNDS; n++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 15)
			break;
		struct tio_buf_alloc a = { .size = 4096 };
		struct tio_handle_op f = { 0 };
		struct tio_stream_create s = { 0 };
		struct tio_handle_op d = { 0 };

		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s));
		f.handle = a.handle;
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_FREE, &f));
		d.handle = s.handle;
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_DESTROY, &d));
	}
	r.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu successful lookups raced %d alloc/free rounds", r.hits, n);
}

TEST_F(table, wrong_type_is_enoent)
{
	struct tio_stream_create s = { 0 };
	struct tio_buf_info info = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s));
	info.handle = s.handle;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_INFO, &info));
	EXPECT_EQ(ENOENT, errno);
}

static int read_objects(char *buf, size_t len)
{
	FILE *f;
	size_t n;

	f = popen("cat /sys/kernel/debug/tensorio/files/*/objects 2>/dev/null", "r");
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	pclose(f);
	return 0;
}

TEST_F(table, debugfs_lists_objects)
{
	struct tio_tensor_desc desc = { .code = TIO_DTYPE_FLOAT, .bits = 32,
					.lanes = 1, .ndim = 2,
					.shape = { 4, 256 } };
	struct tio_buf_alloc a = { .size = 4096, .desc_ptr = (unsigned long)&desc };
	struct tio_stream_create s = { 0 };
	struct tio_fence_emit e = { 0 };
	char buf[4096], line[256];

	if (access("/sys/kernel/debug/tensorio/stats", R_OK))
		SKIP(return, "no debugfs");
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s));
	e.stream = s.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	ASSERT_EQ(0, read_objects(buf, sizeof(buf)));
	snprintf(line, sizeof(line),
		 "%u buffer alloc size=4096 dtype=2:32:1 offset=0 shape=4x256\n", a.handle);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("objects:\n%s", buf);
	snprintf(line, sizeof(line), "%u stream context=", s.handle);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("objects:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "emitted=1 signalled=0 pending=1")) TH_LOG("objects:\n%s", buf);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) ? -1 : ret;
}

/* calls and total_ns of INFO in debugfs tensorio/commands. */
static int info_stats(unsigned long long *calls, unsigned long long *ns)
{
	char line[256], name[32];
	unsigned long long c, e, t, m;
	FILE *f = fopen("/sys/kernel/debug/tensorio/commands", "r");
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %llu %llu %llu %llu", name, &c, &e, &t, &m) == 5 &&
		    !strcmp(name, "INFO")) {
			*calls = c;
			*ns = t;
			found = 0;
		}
	fclose(f);
	return found;
}

TEST_F(table, debugfs_timing_switch)
{
	const char *cmds = "/sys/kernel/debug/tensorio/commands";
	const char *timing = "/sys/kernel/debug/tensorio/timing";
	unsigned long long calls, ns;
	struct timespec t0, t;
	struct tio_info info;
	unsigned long n;
	int i;

	if (access(timing, W_OK))
		SKIP(return, "no debugfs");
	/* Off by default: calls counted, no time. */
	ASSERT_EQ(0, write_file(cmds, "0"));
	for (i = 0; i < 10; i++) {
		memset(&info, 0, sizeof(info));
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	}
	ASSERT_EQ(0, info_stats(&calls, &ns));
	EXPECT_EQ(10, calls);
	EXPECT_EQ(0, ns);
	/*
	 * On: time is summed. Where the guest's clocksource is jiffies (the
	 * debug kernel under TCG) ten calls may all fall in one tick and sum
	 * to 0 ns, so call on until one straddles a tick, for at most 10 s.
	 */
	ASSERT_EQ(0, write_file(timing, "1"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = 0;
	do {
		for (i = 0; i < 10; i++, n++) {
			memset(&info, 0, sizeof(info));
			ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
		}
		ASSERT_EQ(0, info_stats(&calls, &ns));
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!ns && t.tv_sec - t0.tv_sec < 10);
	ASSERT_EQ(0, write_file(timing, "0"));
	TH_LOG("%lu timed calls summed to %llu ns", n, ns);
	ASSERT_EQ(0, info_stats(&calls, &ns));
	EXPECT_EQ(10 + n, calls);
	EXPECT_LT(0, ns);
	EXPECT_EQ(-1, write_file(timing, "2"));
}

/* A destroyed stream's handle, reused by a new stream: the new one. */
TEST_F(table, cached_stream_not_reused)
{
	struct tio_stream_create s = { 0 }, s2 = { 0 };
	struct tio_buf_alloc a = { .size = 4096 };
	struct tio_fence_emit e = { 0 };
	struct tio_buf_info bi = { 0 };
	struct tio_handle_op d = { 0 };
	int i;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s));
	e.stream = s.handle;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(3, e.seqno);
	d.handle = s.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_DESTROY, &d));
	/* Gone at once, though it was the cached stream. */
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s2));
	ASSERT_EQ(s.handle, s2.handle);	/* the lowest free handle again */
	e.seqno = 0;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(1, e.seqno);		/* the new stream's first point */
	/* A buffer's handle is never a stream, cached or not. */
	EXPECT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	e.stream = a.handle;
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(ENOENT, errno);
	bi.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(4096, bi.size);
}

/* The same for buffers: freed, the handle reused, the new size. */
TEST_F(table, cached_buffer_not_reused)
{
	struct tio_buf_alloc a = { .size = 4096 }, b = { .size = 8192 };
	struct tio_buf_info bi = { 0 };
	struct tio_handle_op f = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	bi.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	f.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_FREE, &f));
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_BUF_FREE, &f));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &b));
	ASSERT_EQ(a.handle, b.handle);
	memset(&bi, 0, sizeof(bi));
	bi.handle = b.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_INFO, &bi));
	EXPECT_EQ(8192, bi.size);
}

struct emitter {
	int fd;
	volatile __u32 stream;	/* 0: stop */
	volatile int stop;
	unsigned long ok, gone, other;
};

/* Emit and signal on whichever stream is current, through the cache. */
static void *emit_thread(void *arg)
{
	struct emitter *m = arg;

	while (!m->stop) {
		struct tio_fence_emit e = { .stream = m->stream };
		struct tio_fence_signal sg = { .stream = e.stream };

		if (ioctl(m->fd, TIO_IOC_FENCE_EMIT, &e)) {
			if (errno == ENOENT)
				m->gone++;
			else
				m->other++;
			continue;
		}
		sg.seqno = e.seqno;
		/*
		 * EINVAL: the handle now names the next stream, which has
		 * not emitted that point.
		 */
		if (!ioctl(m->fd, TIO_IOC_FENCE_SIGNAL, &sg))
			m->ok++;
		else if (errno == ENOENT || errno == EINVAL)
			m->gone++;
		else
			m->other++;
	}
	return NULL;
}

/*
 * One thread emits and signals on a stream while this one destroys it
 * and creates the next (often at the same handle): every command either
 * ran on a live stream or failed with ENOENT. Under KASAN a cached
 * pointer that outlived its stream shows as a use after free.
 */
TEST_F(table, destroy_races_cached_emit)
{
	struct emitter m = { .fd = self->fd };
	struct tio_stream_create s0 = { 0 };
	struct timespec t0, t;
	pthread_t th;
	int n;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s0));
	m.stream = s0.handle;
	ASSERT_EQ(0, pthread_create(&th, NULL, emit_thread, &m));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; n < ROUNDS; n++) {
		struct tio_stream_create s = { 0 };
		struct tio_handle_op d = { .handle = m.stream };
		int i;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 15)
			break;
		/* Let the emitter use the stream (bounded, no timing). */
		for (i = 0; i < 100 && m.ok + m.gone < (unsigned long)n; i++)
			sched_yield();
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_DESTROY, &d));
		ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s));
		m.stream = s.handle;
	}
	m.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%d destroys raced %lu emit+signal, %lu ENOENT", n, m.ok, m.gone);
	EXPECT_EQ(0, m.other);
	EXPECT_LT(0, n);
}

/*
 * The hot commands move their payloads as words (tio_ioctl.c): a bad
 * pointer, a payload running into an unmapped page and a read-only
 * payload that must be written back all give EFAULT.
 */
TEST_F(table, hot_commands_fault)
{
	static const unsigned long cmds[] = {
		TIO_IOC_INFO, TIO_IOC_BUF_ALLOC, TIO_IOC_BUF_FREE,
		TIO_IOC_FENCE_EMIT, TIO_IOC_FENCE_SIGNAL,
	};
	long page = sysconf(_SC_PAGESIZE);
	struct tio_stream_create s = { 0 };
	struct tio_fence_emit e = { 0 };
	struct tio_fence_emit *ro;
	unsigned int i;
	char *m;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], NULL));
		EXPECT_EQ(EFAULT, errno);
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], (void *)0xffff888000000000ULL));
		EXPECT_EQ(EFAULT, errno);
	}
	/* The payload's last word on a page that is not mapped. */
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, munmap(m + page, page));
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &s));
	ro = (struct tio_fence_emit *)(m + page - 8);
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EMIT, ro));
	EXPECT_EQ(EFAULT, errno);
	/* Read-only: read, run, the write-back fails. */
	ro = (struct tio_fence_emit *)m;
	ro->stream = s.handle;
	ASSERT_EQ(0, mprotect(m, page, PROT_READ));
	EXPECT_EQ(-1, ioctl(self->fd, TIO_IOC_FENCE_EMIT, ro));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, ro->seqno);
	/* The point was emitted: the next one is 2. */
	e.stream = s.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &e));
	EXPECT_EQ(2, e.seqno);
	munmap(m, page);
}

TEST_HARNESS_MAIN
