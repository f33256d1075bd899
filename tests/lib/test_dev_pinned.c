// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pinned-memory cache: repeated allocations hit, a buffer whose fence
 * is pending is not handed out until it signals, the limit and trim free
 * what is cached, and nothing is left when trimmed; the counters are read
 * from another process (tio_pinned_stats_of(), what tioctl stat shows).
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tensorio/pinned.h>
#include <tensorio/stream.h>

#include "kselftest_harness.h"
#include "dev_test.h"

DEV_FIXTURE(pin)

TEST_F(pin, repeated_allocations_hit)
{
	struct tio_pinned_stats a, b;
	tio_buffer_t *buf;
	void *first;
	int i;

	tio_pinned_trim();
	tio_pinned_stats(&a);
	ASSERT_EQ(1, a.enabled);
	ASSERT_OK(tio_pinned_alloc(1000, &buf));
	EXPECT_EQ(4096, tio_buffer_size(buf));
	first = tio_buffer_data(buf);
	memset(first, 1, 1000);
	tio_buffer_decref(buf);
	for (i = 0; i < 100; i++) {
		ASSERT_OK(tio_pinned_alloc(1 << 10, &buf));
		EXPECT_EQ(first, tio_buffer_data(buf));
		tio_buffer_decref(buf);
	}
	tio_pinned_stats(&b);
	EXPECT_EQ(a.misses + 1, b.misses);
	EXPECT_EQ(a.hits + 100, b.hits);
	EXPECT_EQ(4096, b.bytes_cached - a.bytes_cached);
	EXPECT_EQ(0, b.bytes_in_use);
	/* Size classes: 1 MiB + 1 takes the 1 MiB + 32 KiB class. */
	ASSERT_OK(tio_pinned_alloc((1 << 20) + 1, &buf));
	EXPECT_EQ((1 << 20) + (32 << 10), tio_buffer_size(buf));
	tio_pinned_stats(&b);
	EXPECT_EQ((1 << 20) + (32 << 10), b.bytes_in_use);
	tio_buffer_decref(buf);
	tio_pinned_trim();
	tio_pinned_stats(&b);
	EXPECT_EQ(0, b.bytes_cached);
	EXPECT_EQ(0, b.buffers_cached);
}

TEST_F(pin, reuse_only_after_the_fence_signals)
{
	tio_buffer_t *a, *b, *c;
	tio_stream_t *s;
	uint64_t seq;
	void *pa;

	tio_pinned_trim();
	ASSERT_OK(tio_stream_create(&s));
	ASSERT_OK(tio_pinned_alloc(8192, &a));
	pa = tio_buffer_data(a);
	ASSERT_OK(tio_fence_emit(s, &seq));
	ASSERT_OK(tio_buffer_attach_fence(a, s, seq, TIO_RESV_F_WRITE));
	tio_buffer_decref(a);		/* cached, its fence pending */
	ASSERT_OK(tio_pinned_alloc(8192, &b));
	EXPECT_NE(pa, tio_buffer_data(b));	/* not reused while pending */
	ASSERT_OK(tio_fence_signal(s, seq, 0));
	ASSERT_OK(tio_pinned_alloc(8192, &c));
	EXPECT_EQ(pa, tio_buffer_data(c));	/* reused once signalled */
	tio_buffer_decref(b);
	tio_buffer_decref(c);
	tio_stream_decref(s);
	tio_pinned_trim();
}

TEST_F(pin, limit_and_bad_sizes)
{
	struct tio_pinned_stats st;
	tio_buffer_t *a, *b;

	tio_pinned_trim();
	tio_pinned_stats(&st);
	ASSERT_OK(tio_pinned_alloc(4096, &a));
	ASSERT_OK(tio_pinned_alloc(65536, &b));
	tio_pinned_set_limit(8192);
	tio_buffer_decref(b);		/* over the limit: freed */
	tio_buffer_decref(a);		/* kept */
	tio_pinned_stats(&st);
	EXPECT_EQ(4096, st.bytes_cached);
	tio_pinned_set_limit(0);	/* frees what is cached */
	tio_pinned_stats(&st);
	EXPECT_EQ(0, st.bytes_cached);
	tio_pinned_set_limit(1ULL << 30);
	ASSERT_EQ(-1, tio_pinned_alloc(0, &a));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_pinned_alloc((size_t)1 << 62, &a));
	ASSERT_DEV_MSG(E2BIG, "largest buffer");
}

/* The VmFlags line of the mapping holding @addr, or "" when not found. */
static void vm_flags(const void *addr, char *out, size_t len)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[256];
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a >= lo && a < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(out, len, "%s", line);
			break;
		}
	}
	if (f)
		fclose(f);
}

/*
 * Fresh memory of 2 MiB and more is aligned to 2 MiB and advised for huge
 * pages: populating it is what a first load spends its CPU on.
 */
TEST_F(pin, large_misses_ask_for_huge_pages)
{
	tio_buffer_t *b;
	char flags[256];

	if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK))
		SKIP(return, "no transparent huge pages in this kernel");
	tio_pinned_trim();
	ASSERT_OK(tio_pinned_alloc(4 << 20, &b));
	EXPECT_EQ(0, (uintptr_t)tio_buffer_data(b) % (2 << 20));
	vm_flags(tio_buffer_data(b), flags, sizeof(flags));
	EXPECT_NE(NULL, strstr(flags, " hg")) TH_LOG("%s", flags);
	tio_buffer_decref(b);
	tio_pinned_trim();
}

/* Another process reads a process's counters; a fork publishes its own. */
TEST_F(pin, stats_read_from_another_process)
{
	struct tio_pinned_stats a, mine, theirs;
	int up[2], down[2], i, status;
	tio_buffer_t *buf;
	char c = 0;
	pid_t child;

	tio_pinned_trim();
	tio_pinned_stats(&a);
	if (tio_pinned_stats_of(getpid(), &mine)) {
		if (tio_errno() == EPERM || tio_errno() == EACCES)
			SKIP(return, "reading /proc/PID/map_files needs CAP_SYS_ADMIN");
		ASSERT_OK(-1);
	}
	EXPECT_EQ(a.hits, mine.hits);
	EXPECT_EQ(a.misses, mine.misses);
	EXPECT_EQ(a.limit, mine.limit);
	EXPECT_EQ(1, mine.enabled);
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		/* One miss and two hits, then hold until the parent has read. */
		close(down[1]);
		close(up[0]);
		for (i = 0; i < 3; i++) {
			if (tio_pinned_alloc(1000, &buf))
				_exit(1);
			tio_buffer_decref(buf);
		}
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ(1, read(up[0], &c, 1));
	ASSERT_OK(tio_pinned_stats_of(child, &theirs));
	EXPECT_EQ(a.misses + 1, theirs.misses);
	EXPECT_EQ(a.hits + 2, theirs.hits);
	EXPECT_EQ(4096, theirs.bytes_cached);
	EXPECT_EQ(0, theirs.bytes_in_use);
	/* The child's allocations are not the parent's. */
	ASSERT_OK(tio_pinned_stats_of(getpid(), &mine));
	EXPECT_EQ(a.hits, mine.hits);
	EXPECT_EQ(a.misses, mine.misses);
	close(down[1]);
	close(up[0]);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(pin, stats_of_a_process_without_a_cache)
{
	char *const argv[] = { "sleep", "30", NULL };
	struct tio_pinned_stats st;
	pid_t pid;

	EXPECT_EQ(-1, tio_pinned_stats_of(0, &st));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	EXPECT_EQ(-1, tio_pinned_stats_of(0x7ffffff0, &st));
	ASSERT_DEV_MSG(ESRCH, "no such process");
	/* An exec'd program has never mapped the page. */
	ASSERT_EQ(0, posix_spawnp(&pid, "sleep", NULL, NULL, argv, NULL));
	EXPECT_EQ(-1, tio_pinned_stats_of(pid, &st));
	EXPECT_EQ(0, st.hits);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ASSERT_DEV_MSG(ENOENT, "publishes no pinned-cache statistics");
}

TEST_HARNESS_MAIN
