// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tensor file I/O through io_uring: round trips with odd sizes, chunking
 * and queue depths, progress and cancellation, short files, bad ranges.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tensorio/io.h>

#include "kselftest_harness.h"
#include "dev_test.h"

struct progress {
	int calls;
	uint64_t last;
	int cancel_at;
};

static int on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct progress *p = arg;

	p->calls++;
	if (done < p->last || done > total)
		p->calls = -1000;
	p->last = done;
	return p->cancel_at && p->calls >= p->cancel_at;
}

FIXTURE(fio) { int fds; int64_t objs; char path[64]; tio_buffer_t *a, *b; };
FIXTURE_SETUP(fio)
{
	int fd;

	ASSERT_OK(tio_init());
	dev_warm_up();
	self->fds = dev_count_fds();
	self->objs = tio_debug_live_objects();
	strcpy(self->path, "/tmp/tio-fio-XXXXXX");
	fd = mkstemp(self->path);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_OK(tio_buffer_alloc(4 << 20, NULL, &self->a));
	ASSERT_OK(tio_buffer_alloc(4 << 20, NULL, &self->b));
}
FIXTURE_TEARDOWN(fio)
{
	unlink(self->path);
	tio_buffer_decref(self->a);
	tio_buffer_decref(self->b);
	tio_error_clear();
	EXPECT_EQ(0, tio_debug_live_handles());
	EXPECT_EQ(self->objs, tio_debug_live_objects());
	EXPECT_EQ(self->fds, dev_count_fds());
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 2654435761u >> 13) ^ seed;
}

TEST_F(fio, round_trip_chunked_with_progress)
{
	const uint64_t len = (3 << 20) + 123;
	struct progress pr = { 0, 0, 0 };
	struct tio_io_opts o;
	unsigned char *a = tio_buffer_data(self->a), *b = tio_buffer_data(self->b);

	fill(a, len, 1);
	memset(&o, 0, sizeof(o));
	o.chunk_size = 64 << 10;
	o.queue_depth = 4;
	o.progress = on_progress;
	o.progress_arg = &pr;
	o.flags = TIO_IO_TRUNCATE;
	ASSERT_OK(tio_file_write(self->path, 0, len, self->a, 0, &o));
	EXPECT_LE(49, pr.calls);	/* 3 MiB / 64 KiB + 1, plus retries */
	EXPECT_EQ(len, pr.last);
	pr.calls = 0;
	pr.last = 0;
	ASSERT_OK(tio_file_read(self->path, 0, len, self->b, 0, &o));
	EXPECT_LE(49, pr.calls);
	EXPECT_EQ(0, memcmp(a, b, len));
	TH_LOG("O_DIRECT %d, registered buffer %d", o.used_direct, o.used_fixed);
	/* An inner range, to an offset of the buffer, without the ring's fixed buffer. */
	memset(b, 0, len);
	o.flags = TIO_IO_NO_FIXED | TIO_IO_NO_DIRECT;
	o.progress = NULL;
	ASSERT_OK(tio_file_read(self->path, 4096 + 7, 100000, self->b, 3, &o));
	EXPECT_EQ(0, o.used_fixed);
	EXPECT_EQ(0, memcmp(a + 4096 + 7, b + 3, 100000));
}

TEST_F(fio, defaults_and_aligned_direct_path)
{
	unsigned char *a = tio_buffer_data(self->a), *b = tio_buffer_data(self->b);
	struct tio_io_opts o;

	fill(a, 4 << 20, 2);
	ASSERT_OK(tio_file_write(self->path, 0, 4 << 20, self->a, 0, NULL));
	memset(&o, 0, sizeof(o));
	ASSERT_OK(tio_file_read(self->path, 0, 4 << 20, self->b, 0, &o));
	EXPECT_EQ(0, memcmp(a, b, 4 << 20));
	TH_LOG("O_DIRECT %d, registered buffer %d", o.used_direct, o.used_fixed);
}

TEST_F(fio, cancel_short_file_and_bad_ranges)
{
	struct progress pr = { 0, 0, 2 };
	struct tio_io_opts o;

	fill(tio_buffer_data(self->a), 1 << 20, 3);
	ASSERT_OK(tio_file_write(self->path, 0, 1 << 20, self->a, 0, NULL));
	memset(&o, 0, sizeof(o));
	o.chunk_size = 4096;
	o.queue_depth = 1;
	o.progress = on_progress;
	o.progress_arg = &pr;
	ASSERT_EQ(-1, tio_file_read(self->path, 0, 1 << 20, self->b, 0, &o));
	ASSERT_DEV_ERR(ECANCELED, "CancelledError");
	EXPECT_EQ(2, pr.calls);
	ASSERT_EQ(-1, tio_file_read(self->path, 4096, 1 << 20, self->b, 0, NULL));
	ASSERT_DEV_MSG(ENODATA, "the file ends before offset");
	ASSERT_EQ(-1, tio_file_read(self->path, 0, 4096, self->b, (4 << 20) - 100, NULL));
	ASSERT_DEV_ERR(ERANGE, "ValueError");
	ASSERT_EQ(-1, tio_file_read("/nonexistent/tio", 0, 4096, self->b, 0, NULL));
	ASSERT_DEV_ERR(ENOENT, "OSError");
	o.queue_depth = 1000;
	ASSERT_EQ(-1, tio_file_read(self->path, 0, 4096, self->b, 0, &o));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
	ASSERT_EQ(-1, tio_file_write(NULL, 0, 4096, self->b, 0, NULL));
	ASSERT_DEV_ERR(EINVAL, "ValueError");
}

TEST_HARNESS_MAIN
