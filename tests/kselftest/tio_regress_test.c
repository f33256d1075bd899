// SPDX-License-Identifier: GPL-2.0
/*
 * Regression tests for driver bugs found by the reliability tools
 * (tests/fuzz, tests/fault, tests/stress), one test per bug, named after
 * it. Each fails (without crashing the kernel) when its bug comes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <liburing.h>
#include <linux/tensorio.h>

#include "kselftest_harness.h"

#define TIO_DEV "/dev/tensorio"
#define PAGE 4096

FIXTURE(regress) {
	int fd;
	__u32 buf;
	__u64 off;
};

FIXTURE_SETUP(regress)
{
	struct tio_buf_alloc a = { .size = 2 * PAGE };

	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_ALLOC, &a));
	self->buf = a.handle;
	self->off = a.mmap_offset;
}

FIXTURE_TEARDOWN(regress)
{
	close(self->fd);
}

/*
 * fuzz seed 0x1: a MAP_PRIVATE mapping of a buffer was accepted as a
 * copy-on-write VM_PFNMAP vma; its first fault hit the BUG_ON in
 * vmf_insert_pfn_prot() (kernel BUG at mm/memory.c, a crash). Private
 * mappings must be refused; the mapping is never touched here.
 */
TEST_F(regress, mmap_private_refused)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_EXEC };
	struct tio_buf_export e = { .handle = self->buf,
				    .flags = TIO_EXPORT_F_CLOEXEC | TIO_EXPORT_F_RDWR };
	unsigned int i;
	void *p;

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_BUF_EXPORT, &e));
	for (i = 0; i < 3; i++) {
		p = mmap(NULL, PAGE, prots[i], MAP_PRIVATE, self->fd, self->off);
		EXPECT_EQ(MAP_FAILED, p) {
			munmap(p, PAGE);	/* not touched: it would crash */
		}
		EXPECT_EQ(EINVAL, errno);
		p = mmap(NULL, PAGE, prots[i], MAP_PRIVATE, e.fd, 0);
		EXPECT_EQ(MAP_FAILED, p) {
			munmap(p, PAGE);
		}
		EXPECT_EQ(EINVAL, errno);
	}
	/* Shared mappings still work, through both. */
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, self->off);
	ASSERT_NE(MAP_FAILED, p);
	((volatile char *)p)[0] = 1;
	munmap(p, PAGE);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, e.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(1, ((volatile char *)p)[0]);
	munmap(p, PAGE);
	close(e.fd);
}

/*
 * tio_fuzz -a: a uring_cmd SUBMIT issued from io-wq (IOSQE_ASYNC) whose
 * vector had failed records never completed on 6.1: its positive result
 * (the failed count) was handed back by io_uring_cmd(), and io-wq drops
 * positive returns. The request held the file for good (module stuck).
 */
TEST_F(regress, async_submit_with_failures_completes)
{
	struct tio_cmd rec[2] = { { .op = TIO_IOC_INFO }, { .op = 0x1234 } };
	struct tio_submit s = { .cmds_ptr = (uintptr_t)rec, .count = 2,
				.flags = TIO_SUBMIT_F_CONTINUE };
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int i;

	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	for (i = 0; i < 2; i++) {	/* inline, then from io-wq */
		sqe = io_uring_get_sqe(&ring);
		ASSERT_NE(NULL, sqe);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = self->fd;
		sqe->cmd_op = TIO_IOC_SUBMIT;
		*(__u64 *)sqe->cmd = (uintptr_t)&s;
		sqe->flags = i ? IOSQE_ASYNC : 0;
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
		EXPECT_EQ(1, cqe->res);		/* one record failed */
		io_uring_cqe_seen(&ring, cqe);
		EXPECT_EQ(-ENOTTY, rec[1].result);
	}
	io_uring_queue_exit(&ring);
}

TEST_HARNESS_MAIN
