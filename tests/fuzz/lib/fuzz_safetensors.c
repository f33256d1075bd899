// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: safetensors files (8-byte header length, JSON header,
 * data). Load any bytes; what loads must enumerate and yield its tensors.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/object.h>
#include <tensorio/safetensors.h>

static int memfd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setenv("TIO_BACKEND", "user", 1);
	memfd = memfd_create("tio-st", 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tio_safetensors_t *st;
	int64_t i, n;

	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		return 0;
	if (tio_safetensors_load(path, &st)) {
		tio_error_clear();
		return 0;
	}
	n = tio_safetensors_count(st);
	for (i = 0; i < n; i++) {
		const char *name = tio_safetensors_name(st, i);
		tio_object_t *t;

		if (!name)
			abort();
		if (!tio_safetensors_tensor(st, name, &t))
			tio_object_decref(t);
		tio_error_clear();
	}
	tio_safetensors_free(st);
	return 0;
}
