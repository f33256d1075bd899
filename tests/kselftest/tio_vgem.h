/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgem, the kernel's virtual GEM driver, as another dma-buf party for the
 * kselftests (through libdrm). Include after kselftest_harness.h.
 */
#ifndef TIO_VGEM_H
#define TIO_VGEM_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

/* An fd of the vgem device, or -1 when there is none. */
static inline int open_vgem(void)
{
	char path[64];
	int i, fd;

	for (i = 0; i < 16; i++) {
		drmVersionPtr v;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		if (v && !strcmp(v->name, "vgem")) {
			drmFreeVersion(v);
			return fd;
		}
		if (v)
			drmFreeVersion(v);
		close(fd);
	}
	return -1;
}

#endif /* TIO_VGEM_H */
