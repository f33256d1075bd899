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

TEST_HARNESS_MAIN
