// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Locked memory that cannot be had is refused with an ENOMEM naming the
 * limit, before anything grows: RLIMIT_MEMLOCK (CAP_IPC_LOCK dropped, so
 * that root is held to it too) on both backends, and on the user backend
 * a buffer larger than the memory available, which mlock() would turn
 * into an OOM kill instead of an error.
 */
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <tensorio/pinned.h>

#include "kselftest_harness.h"
#include "dev_test.h"

static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &h, d);
}

DEV_FIXTURE(ml)

TEST_F(ml, rlimit_memlock_is_named)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	struct tio_driver_info before, after;
	tio_buffer_t *b;

	ASSERT_EQ(0, drop_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	ASSERT_EQ(-1, tio_buffer_alloc(8 << 20, NULL, &b));
	ASSERT_DEV_MSG(ENOMEM, "RLIMIT_MEMLOCK");
	tio_pinned_trim();
	ASSERT_EQ(-1, tio_pinned_alloc(8 << 20, &b));
	ASSERT_DEV_MSG(ENOMEM, "RLIMIT_MEMLOCK");
	/* Under the limit it works, and shows as pinned. */
	ASSERT_OK(tio_driver_info(&before));
	ASSERT_OK(tio_buffer_alloc(64 << 10, NULL, &b));
	ASSERT_OK(tio_driver_info(&after));
	EXPECT_EQ(64 << 10, after.pinned - before.pinned);
	tio_buffer_decref(b);
	ASSERT_OK(tio_driver_info(&after));
	EXPECT_EQ(before.pinned, after.pinned);
}

/* The user backend's largest buffer is the machine's memory by default. */
TEST_F(ml, user_cap_is_the_memory)
{
	struct tio_driver_info i;
	long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);
	tio_buffer_t *b;

	if (dev_is_kernel())
		SKIP(return, "the driver's max_buf_size is its module parameter");
	ASSERT_OK(tio_driver_info(&i));
	EXPECT_EQ((uint64_t)pages * pg, i.max_buf_size);
	ASSERT_EQ(-1, tio_buffer_alloc((size_t)1 << 40, NULL, &b));
	ASSERT_DEV_MSG(E2BIG, "max_buf_size");
}

/* Raised past it, 1 TiB is still refused before the memfd grows. */
TEST(one_tib_past_the_memory_available)
{
	struct tio_driver_info i;
	tio_buffer_t *b;

	ASSERT_EQ(0, setenv("TIO_MAX_BUF_SIZE", "0x10000000000", 1));
	ASSERT_OK(tio_init());
	if (dev_is_kernel())
		SKIP(return, "the driver refuses it by its max_buf_size");
	ASSERT_OK(tio_driver_info(&i));
	ASSERT_EQ((uint64_t)1 << 40, i.max_buf_size);
	ASSERT_EQ(-1, tio_buffer_alloc((size_t)1 << 40, NULL, &b));
	ASSERT_DEV_MSG(ENOMEM, "memory available");
	ASSERT_EQ(-1, tio_pinned_alloc((size_t)1 << 40, &b));
	ASSERT_DEV_MSG(ENOMEM, "memory available");
	EXPECT_EQ(0, tio_debug_live_handles());
}

TEST_HARNESS_MAIN
