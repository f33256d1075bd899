// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl load-safetensors FILE: load a safetensors file (or the shards a
 * model.safetensors.index.json names) into pinned buffers and list the
 * zero-copy tensors found in it. A progress bar goes to stderr when it is
 * a terminal; nothing otherwise.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/dtype.h>
#include <tensorio/object.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "tioctl.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void print_tensor(const struct tioctl_opts *o, const char *name,
			 const DLTensor *t, const char *sep)
{
	unsigned long long n = 1;
	char dt[32];
	int i;

	if (tio_dtype_print(t->dtype, dt, sizeof(dt)) < 0)
		snprintf(dt, sizeof(dt), "?");
	if (o->json)
		printf("%s{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", sep, name, dt);
	else
		printf("%-32s %-10s ", name, dt);
	for (i = 0; i < t->ndim; i++) {
		n *= (unsigned long long)t->shape[i];
		printf(o->json ? "%s%lld" : "%s%lld", i ? (o->json ? ", " : "x") : "",
		       (long long)t->shape[i]);
	}
	n = n * t->dtype.bits * t->dtype.lanes / 8;
	if (o->json)
		printf("], \"offset\": %llu, \"bytes\": %llu}",
		       (unsigned long long)t->byte_offset, n);
	else
		printf(" offset %llu bytes %llu\n", (unsigned long long)t->byte_offset, n);
}

static int show_progress(void *arg, uint64_t done, uint64_t total)
{
	int *last = arg, pct = total ? (int)(done * 100 / total) : 100, i;

	if (pct == *last)
		return 0;
	*last = pct;
	fputs("\r[", stderr);
	for (i = 0; i < 40; i++)
		fputc(i < pct * 40 / 100 ? '#' : ' ', stderr);
	fprintf(stderr, "] %3d%% %llu/%llu MiB", pct, (unsigned long long)(done >> 20),
		(unsigned long long)(total >> 20));
	if (done == total)
		fputs("\r\033[K", stderr);
	return 0;
}

/**
 * cmd_safetensors() - tioctl load-safetensors FILE
 * @o: global options
 * @argc: argument count after the command
 * @argv: the file
 *
 * Return: an exit code (1 for a malformed file, with the reason).
 */
int cmd_safetensors(const struct tioctl_opts *o, int argc, char **argv)
{
	struct tio_io_opts io = { 0 };
	tio_safetensors_t *st;
	const char *sep = "";
	int last = -1;
	tio_object_t *t;
	double t0, ms;
	int64_t i, n;

	if (argc != 1) {
		fprintf(stderr, "tioctl: load-safetensors takes one FILE\n");
		return EXIT_UNUSABLE;
	}
	if (isatty(2)) {
		io.progress = show_progress;
		io.progress_arg = &last;
	}
	t0 = now_ms();
	if (tio_safetensors_load_ex(argv[0], &io, &st)) {
		if (io.progress)
			fputs("\r\033[K", stderr);
		return tioctl_lib_err(argv[0]);
	}
	ms = now_ms() - t0;
	n = tio_safetensors_count(st);
	if (o->json)
		printf("{\"file\": \"%s\", \"load_ms\": %.3f, \"tensors\": [", argv[0], ms);
	for (i = 0; i < n; i++) {
		const char *name = tio_safetensors_name(st, i);

		if (tio_safetensors_tensor(st, name, &t)) {
			tio_safetensors_free(st);
			return tioctl_lib_err(name);
		}
		print_tensor(o, name, tio_tensor_dl(t), sep);
		sep = ", ";
		tio_object_decref(t);
	}
	if (o->json)
		printf("]}\n");
	else
		printf("%lld tensors, loaded in %.3f ms\n", (long long)n, ms);
	tio_safetensors_free(st);
	return EXIT_OK;
}
