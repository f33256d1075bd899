/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers for the save tests (test_file_save*.c, test_gpu_save.c): a
 * scratch directory checked for stray files, tensors of known bytes, and
 * what a saved file holds.
 */
#ifndef TIO_SAVE_TEST_H
#define TIO_SAVE_TEST_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tensorio/pinned.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "dev_test.h"

/* A save fixture: a scratch directory; no fd, handle or object leaked. */
#define SAVE_FIXTURE(name)						\
	FIXTURE(name) { int fds; int64_t objs; char dir[64]; char path[128]; }; \
	FIXTURE_SETUP(name)						\
	{								\
		ASSERT_OK(tio_init());					\
		dev_warm_up();						\
		self->fds = dev_count_fds();				\
		self->objs = tio_debug_live_objects();			\
		strcpy(self->dir, "/var/tmp/tio-sv-XXXXXX");		\
		ASSERT_NE(NULL, mkdtemp(self->dir));			\
		snprintf(self->path, sizeof(self->path), "%s/model.safetensors", \
			 self->dir);					\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		char cmd_[128];						\
									\
		snprintf(cmd_, sizeof(cmd_), "rm -rf %s", self->dir);	\
		EXPECT_EQ(0, system(cmd_));				\
		tio_pinned_trim();					\
		tio_error_clear();					\
		EXPECT_EQ(0, tio_debug_live_handles());			\
		EXPECT_EQ(self->objs, tio_debug_live_objects());	\
		EXPECT_EQ(self->fds, dev_count_fds());			\
	}

/* Entries of @dir (not . and ..), and how many look like our temporaries. */
static inline int sv_count(const char *dir, int *strays)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (strays)
		*strays = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		if (strays && strstr(de->d_name, ".tio-"))
			(*strays)++;
	}
	closedir(d);
	return n;
}

/*
 * The whole file (malloc'd), its size at *@len; NULL when unreadable. Not
 * inlined: the harness's longjmp would see *@len change in its frame.
 */
static __attribute__((noinline, unused)) unsigned char *sv_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc((size_t)n + 1);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return p;
}

/* A 1-D uint8 tensor of @n bytes, byte k = k * 7 + @seed (data malloc'd). */
static inline void sv_u8(DLTensor *t, int64_t *shape, int64_t n, int seed)
{
	int64_t k;

	memset(t, 0, sizeof(*t));
	*shape = n;
	t->data = malloc(n ? (size_t)n : 1);
	for (k = 0; k < n; k++)
		((unsigned char *)t->data)[k] = (unsigned char)(k * 7 + seed);
	t->ndim = 1;
	t->shape = shape;
	t->dtype.code = kDLUInt;
	t->dtype.bits = 8;
	t->dtype.lanes = 1;
	t->device.device_type = kDLCPU;
}

/* Whether tensor @name of @st holds @len bytes equal to @want. */
static inline int sv_same(const tio_safetensors_t *st, const char *name, const void *want,
			  size_t len)
{
	tio_object_t *t;
	DLTensor *dl;
	int same;

	if (tio_safetensors_tensor(st, name, &t))
		return 0;
	dl = tio_tensor_dl(t);
	same = tio_tensor_nbytes(dl) == len &&
	       (!len || !memcmp((char *)dl->data + dl->byte_offset, want, len));
	tio_object_decref(t);
	return same;
}

#endif /* TIO_SAVE_TEST_H */
