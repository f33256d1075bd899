// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The user backend's handle table (user_internal.h): buffers and streams
 * share one handle space, as the driver's per-file xarray does, and the
 * memfds both are made of.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev/backend/user_internal.h"

/* Give @o the lowest free handle; under ub->lock. */
int tio_ub_insert(struct ub_state *ub, struct ub_obj *o)
{
	size_t i;

	for (i = ub->hint; i < ub->cap; i++)
		if (!ub->objs[i])
			goto found;
	if (ub->cap >= UINT32_MAX / 2)
		return -ENOSPC;
	{
		size_t ncap = ub->cap ? ub->cap * 2 : 64;
		struct ub_obj **n = realloc(ub->objs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		memset(n + ub->cap, 0, (ncap - ub->cap) * sizeof(*n));
		ub->objs = n;
		i = ub->cap;
		ub->cap = ncap;
	}
found:
	ub->objs[i] = o;
	ub->hint = i + 1;
	o->handle = (uint32_t)i + 1;
	return 0;
}

/* Free @o's handle; under ub->lock. */
void tio_ub_remove(struct ub_state *ub, struct ub_obj *o)
{
	ub->objs[o->handle - 1] = NULL;
	if (o->handle - 1 < ub->hint)
		ub->hint = o->handle - 1;
}

/* Enter @o in the table; its handle (and mmap offset) in *@handle (*@off). */
int tio_ub_publish(struct ub_state *ub, struct ub_obj *o, __u32 *handle, __u64 *off)
{
	int ret;

	pthread_mutex_lock(&ub->lock);
	ret = tio_ub_insert(ub, o);
	pthread_mutex_unlock(&ub->lock);
	if (ret)
		return ret;
	*handle = o->handle;
	if (off)
		*off = (uint64_t)o->handle << UB_HANDLE_SHIFT;
	return 0;
}

/* A sealed memfd of @size bytes in *@fd; 0 or a negative errno. */
int tio_ub_memfd(const char *name, uint64_t size, int *fd)
{
	*fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, (off_t)size) < 0 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		int err = errno;

		close(*fd);
		return -err;
	}
	return 0;
}
