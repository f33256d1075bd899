// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/tensorio basics: the node, TIO_IOC_INFO and unknown commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/tensorio.h>

#include "kselftest_harness.h"

#define TIO_DEV "/dev/tensorio"

TEST(device_node)
{
	struct stat st;

	ASSERT_EQ(0, stat(TIO_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	/* Documented mode; udev may widen it on real machines. */
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(10, major(st.st_rdev));	/* a misc device */
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST_F(dev, info)
{
	struct tio_info info = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, TIO_IOC_INFO, &info));
	EXPECT_EQ(TIO_UAPI_VERSION, info.version);
	EXPECT_EQ(TIO_UAPI_VERSION_MAJOR, info.version >> 16);
	EXPECT_LT(0, info.max_buf_size);
	EXPECT_LT(0, info.max_pinned);
	EXPECT_LT(0, info.max_submit);
	EXPECT_EQ(0, info.pad);
	TH_LOG("version %u.%u features %#llx max_buf %llu max_pinned %llu",
	       info.version >> 16, info.version & 0xffff,
	       (unsigned long long)info.features,
	       (unsigned long long)info.max_buf_size,
	       (unsigned long long)info.max_pinned);
}

TEST_F(dev, info_rejects_flags)
{
	struct tio_info info = { .flags = 1 };

	ASSERT_EQ(-1, ioctl(self->fd, TIO_IOC_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, info.version);	/* nothing written back */
}

TEST_F(dev, info_bad_pointer)
{
	ASSERT_EQ(-1, ioctl(self->fd, TIO_IOC_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, TIO_IOC_INFO, (void *)16));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(dev, unknown_commands)
{
	struct tio_info info = { 0 };
	const unsigned long bad[] = {
		_IOWR('x', 0x00, struct tio_info),		/* other magic */
		_IOWR(TIO_IOC_MAGIC, 0x7f, struct tio_info),	/* unused nr */
		_IOWR(TIO_IOC_MAGIC, 0xff, struct tio_info),	/* past table */
		_IOWR(TIO_IOC_MAGIC, 0x19, struct tio_info),	/* hole */
		0,
		/* Other sizes and directions: tio_abi_test.c. */
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, bad[i], &info)) {
			TH_LOG("cmd %#lx accepted", bad[i]);
		}
		EXPECT_EQ(ENOTTY, errno);
	}
}

TEST_F(dev, not_seekable)
{
	EXPECT_EQ(-1, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
}

TEST_HARNESS_MAIN
