// SPDX-License-Identifier: GPL-2.0
/*
 * New fds are installed only after the command's result reached
 * userspace: BUF_EXPORT and FENCE_EXPORT whose payload (or SUBMIT vector)
 * lies in read-only memory fail with EFAULT and leave no fd behind, in
 * every submission form (ioctl, uring_cmd, SUBMIT by ioctl and by
 * uring_cmd). An fd installed before the write-back would be left in the
 * caller's table, unknown to it, by every failing call.
 * A number that would not write the fd back (write-only, or a structure
 * too short to hold it) fails with EINVAL and installs none.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tio_uring_common.h"
#include "kselftest_harness.h"

#define PAGE 4096
#define ROUNDS 50

/* Open fds of this process. */
static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the DIR's own fd */
}

FIXTURE(fdinst) {
	int fd;
	__u32 buf;
	__u32 stream;
	struct io_uring ring;
	void *page;	/* read-only after setup of each test */
};

FIXTURE_VARIANT(fdinst) {
	bool uring;
	bool submit;
};

FIXTURE_VARIANT_ADD(fdinst, ioctl) { .uring = false, .submit = false };
FIXTURE_VARIANT_ADD(fdinst, uring_cmd) { .uring = true, .submit = false };
FIXTURE_VARIANT_ADD(fdinst, submit_ioctl) { .uring = false, .submit = true };
FIXTURE_VARIANT_ADD(fdinst, submit_uring) { .uring = true, .submit = true };

FIXTURE_SETUP(fdinst)
{
	struct tio_buf_alloc a = { .size = PAGE };
	struct tio_stream_create sc = { 0 };
	struct tio_fence_emit em = { 0 };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	self->buf = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_STREAM_CREATE, &sc));
	self->stream = sc.handle;
	em.stream = sc.handle;
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_FENCE_EMIT, &em));
	if (variant->uring)
		ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	self->page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->page);
}

FIXTURE_TEARDOWN(fdinst)
{
	munmap(self->page, PAGE);
	if (variant->uring)
		io_uring_queue_exit(&self->ring);
	close(self->fd);
}

/*
 * Run @cmd with the payload @p (of @size bytes) placed in read-only
 * memory, in the variant's form. Return: the call's result.
 */
static int run_ro(FIXTURE_DATA(fdinst) *self, const FIXTURE_VARIANT(fdinst) *variant,
		  unsigned int cmd, const void *p, size_t size)
{
	struct tio_submit s = { .count = 1 };
	struct tio_cmd *rec = self->page;
	void *payload = self->page;
	int ret;

	if (mprotect(self->page, PAGE, PROT_READ | PROT_WRITE))
		return -1000;
	memset(self->page, 0, PAGE);
	if (variant->submit) {
		rec->op = cmd;
		memcpy(rec->payload.bytes, p, size);
		s.cmds_ptr = (uintptr_t)rec;
		payload = &s;
		cmd = TIO_IOC_SUBMIT;
	} else {
		memcpy(payload, p, size);
	}
	if (mprotect(self->page, PAGE, PROT_READ))
		return -1000;
	if (variant->uring)
		ret = tio_uring_run(&self->ring, self->fd, false, cmd, payload);
	else
		ret = tio_ioc(self->fd, cmd, payload);
	return ret;
}

TEST_F(fdinst, buf_export_readonly_leaves_no_fd)
{
	struct tio_buf_export e = { .handle = self->buf,
				    .flags = TIO_EXPORT_F_CLOEXEC };
	int before = fd_count(), i;

	ASSERT_LT(0, before);
	for (i = 0; i < ROUNDS; i++)
		ASSERT_EQ(-EFAULT, run_ro(self, variant, TIO_IOC_BUF_EXPORT,
					  &e, sizeof(e)));
	EXPECT_EQ(before, fd_count());
}

TEST_F(fdinst, fence_export_readonly_leaves_no_fd)
{
	struct tio_fence_export e = { .stream = self->stream, .seqno = 1,
				      .flags = TIO_EXPORT_F_CLOEXEC };
	int before = fd_count(), i;

	ASSERT_LT(0, before);
	for (i = 0; i < ROUNDS; i++)
		ASSERT_EQ(-EFAULT, run_ro(self, variant, TIO_IOC_FENCE_EXPORT,
					  &e, sizeof(e)));
	EXPECT_EQ(before, fd_count());
}

/* The same calls from writable memory install exactly one fd each. */
TEST_F(fdinst, export_writable_installs_one_fd)
{
	struct tio_buf_export be = { .handle = self->buf,
				     .flags = TIO_EXPORT_F_CLOEXEC };
	struct tio_fence_export fe = { .stream = self->stream, .seqno = 1,
				       .flags = TIO_EXPORT_F_CLOEXEC };
	struct tio_cmd recs[2] = {
		{ .op = TIO_IOC_BUF_EXPORT },
		{ .op = TIO_IOC_FENCE_EXPORT },
	};
	struct tio_submit s = { .cmds_ptr = (uintptr_t)recs, .count = 2 };
	int before = fd_count(), bfd, ffd;

	if (variant->submit) {
		memcpy(recs[0].payload.bytes, &be, sizeof(be));
		memcpy(recs[1].payload.bytes, &fe, sizeof(fe));
		if (variant->uring) {
			ASSERT_EQ(0, tio_uring_run(&self->ring, self->fd, false,
						   TIO_IOC_SUBMIT, &s));
		} else {
			ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_SUBMIT, &s));
		}
		ASSERT_EQ(0, recs[0].result);
		ASSERT_EQ(0, recs[1].result);
		bfd = ((struct tio_buf_export *)recs[0].payload.bytes)->fd;
		ffd = ((struct tio_fence_export *)recs[1].payload.bytes)->fd;
	} else if (variant->uring) {
		ASSERT_EQ(0, tio_uring_run(&self->ring, self->fd, false,
					   TIO_IOC_BUF_EXPORT, &be));
		ASSERT_EQ(0, tio_uring_run(&self->ring, self->fd, false,
					   TIO_IOC_FENCE_EXPORT, &fe));
		bfd = be.fd;
		ffd = fe.fd;
	} else {
		ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_BUF_EXPORT, &be));
		ASSERT_EQ(0, tio_ioc(self->fd, TIO_IOC_FENCE_EXPORT, &fe));
		bfd = be.fd;
		ffd = fe.fd;
	}
	EXPECT_EQ(before + 2, fd_count());
	EXPECT_EQ(FD_CLOEXEC, fcntl(bfd, F_GETFD));
	EXPECT_EQ(FD_CLOEXEC, fcntl(ffd, F_GETFD));
	EXPECT_EQ(0, close(bfd));
	EXPECT_EQ(0, close(ffd));
	EXPECT_EQ(before, fd_count());
}

/* Run @cmd on the payload @p (writable) in the variant's form. */
static int run_rw(FIXTURE_DATA(fdinst) *self, const FIXTURE_VARIANT(fdinst) *variant,
		  unsigned int cmd, const void *p, size_t size)
{
	struct tio_cmd rec = { .op = cmd };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)&rec, .count = 1 };
	char payload[TIO_CMD_PAYLOAD] = { 0 };
	void *arg = payload;
	int ret;

	memcpy(payload, p, size);
	if (variant->submit) {
		memcpy(rec.payload.bytes, p, size);
		arg = &s;
		cmd = TIO_IOC_SUBMIT;
	}
	if (variant->uring)
		ret = tio_uring_run(&self->ring, self->fd, false, cmd, arg);
	else
		ret = tio_ioc(self->fd, cmd, arg);
	/* SUBMIT: one failed record; its result is the command's. */
	return variant->submit && ret == 1 ? rec.result : ret;
}

TEST_F(fdinst, export_number_without_the_fd_installs_none)
{
	struct tio_buf_export be = { .handle = self->buf,
				     .flags = TIO_EXPORT_F_CLOEXEC };
	struct tio_fence_export fe = { .stream = self->stream, .seqno = 1,
				       .flags = TIO_EXPORT_F_CLOEXEC };
	int before = fd_count();

	/* A structure that ends before the fd field. */
	EXPECT_EQ(-EINVAL, run_rw(self, variant, _IOC(_IOC_READ | _IOC_WRITE, TIO_IOC_MAGIC,
						     _IOC_NR(TIO_IOC_BUF_EXPORT), 8), &be, 8));
	EXPECT_EQ(-EINVAL, run_rw(self, variant, _IOC(_IOC_READ | _IOC_WRITE, TIO_IOC_MAGIC,
						     _IOC_NR(TIO_IOC_FENCE_EXPORT), 16), &fe, 16));
	/* A number without _IOC_READ: nothing is written back. */
	EXPECT_EQ(-EINVAL, run_rw(self, variant, _IOC(_IOC_WRITE, TIO_IOC_MAGIC,
						     _IOC_NR(TIO_IOC_BUF_EXPORT), sizeof(be)),
				  &be, sizeof(be)));
	EXPECT_EQ(-EINVAL, run_rw(self, variant, _IOC(_IOC_WRITE, TIO_IOC_MAGIC,
						     _IOC_NR(TIO_IOC_FENCE_EXPORT), sizeof(fe)),
				  &fe, sizeof(fe)));
	EXPECT_EQ(before, fd_count());
}

TEST_HARNESS_MAIN
