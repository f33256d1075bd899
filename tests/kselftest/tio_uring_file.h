/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the io_uring command kselftests that open files on
 * rings of their own (tio_uring_test.c, tio_uring_wait_test.c): a file
 * for a ring and its close, and the check that ends each program, every
 * file released. Include after kselftest_harness.h.
 */
#ifndef TIO_URING_FILE_H
#define TIO_URING_FILE_H

#include <fcntl.h>
#include <stdbool.h>

#include "tio_uring_common.h"

/* Open a file for the ring: the fd, registered when the variant says so. */
static inline int ring_open(struct __test_metadata *_metadata, struct io_uring *ring,
			    bool fixed)
{
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return fd;
	if (fixed && io_uring_register_files(ring, &fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Close first: that cancels parked waits, which unregistering waits for. */
static inline void ring_close(struct io_uring *ring, int fd, bool fixed)
{
	close(fd);
	if (fixed)
		io_uring_unregister_files(ring);
}

/* tensorio's reference count in /proc/modules, or -1. */
static inline int module_refs(void)
{
	char line[256], name[64];
	int refs = -1, n;
	FILE *f = fopen("/proc/modules", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %*u %d", name, &n) == 2 &&
		    !strcmp(name, "tensorio"))
			refs = n;
	fclose(f);
	return refs;
}

/* What zz_all_files_released checks, after the tests before it. */
static inline void all_files_released(struct __test_metadata *_metadata)
{
	int i;

	/* Files put by io_uring's workers are released by delayed fput. */
	for (i = 0; i < 1000 && (tio_dbg_stat("files") > 0 || module_refs() > 0); i++)
		usleep(10000);
	EXPECT_EQ(0, tio_dbg_stat("files"));
	EXPECT_EQ(0, tio_dbg_stat("parked_uring_total"));
	EXPECT_EQ(0, module_refs());
}

#endif /* TIO_URING_FILE_H */
