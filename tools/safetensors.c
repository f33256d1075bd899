// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl load-safetensors FILE: load a safetensors file (or the shards a
 * model.safetensors.index.json names) into pinned buffers and list the
 * zero-copy tensors found in it. A progress bar goes to stderr when it is
 * a terminal; nothing otherwise. --hold keeps what was loaded until
 * standard input ends (tioctl stat then shows it and the pinned cache).
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

static void print_tensor(struct json_object *arr, const char *name, const DLTensor *t)
{
	unsigned long long n = 1;
	long long shape[64];
	struct json_object *j;
	int i;

	for (i = 0; i < t->ndim; i++)
		n *= (unsigned long long)t->shape[i];
	n = n * t->dtype.bits * t->dtype.lanes / 8;
	if (arr) {
		for (i = 0; i < t->ndim && i < 64; i++)
			shape[i] = t->shape[i];
		j = json_object_new_object();
		json_object_object_add(j, "name", json_object_new_string(name));
		json_object_object_add(j, "dtype", tioctl_json_dtype(t->dtype.code, t->dtype.bits,
								    t->dtype.lanes));
		json_object_object_add(j, "shape", tioctl_json_shape(i, shape));
		json_object_object_add(j, "offset", json_object_new_uint64(t->byte_offset));
		json_object_object_add(j, "bytes", json_object_new_uint64(n));
		json_object_array_add(arr, j);
		return;
	}
	j = tioctl_json_dtype(t->dtype.code, t->dtype.bits, t->dtype.lanes);
	printf("%-32s %-10s ", name, json_object_get_string(j));
	json_object_put(j);
	for (i = 0; i < t->ndim; i++)
		printf("%s%lld", i ? "x" : "", (long long)t->shape[i]);
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

static const struct option st_opts[] = {
	TIOCTL_COMMON_OPTS,
	{ "hold", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 }
};

/**
 * cmd_safetensors() - tioctl load-safetensors FILE [--hold]
 * @o: global options
 * @argc: argument count, argv[0] being the command
 * @argv: the arguments: the file
 *
 * Return: an exit code (1 for a missing or malformed file, with the reason).
 */
int cmd_safetensors(struct tioctl_opts *o, int argc, char **argv)
{
	struct json_object *j = NULL, *arr = NULL;
	struct tio_io_opts io = { 0 };
	tio_safetensors_t *st;
	int last = -1;
	tio_object_t *t;
	double t0, ms;
	int64_t i, n;
	int a, c, ret, hold = 0;

	while ((c = tioctl_getopt(o, argc, argv, st_opts)) != -1) {
		if (c != 'H')
			return EXIT_UNUSABLE;
		hold = 1;
	}
	ret = tioctl_lib_operand(argc, argv, &a);
	if (ret)
		return ret;
	if (isatty(2)) {
		io.progress = show_progress;
		io.progress_arg = &last;
	}
	t0 = now_ms();
	if (tio_safetensors_load_ex(argv[a], &io, &st)) {
		if (io.progress)
			fputs("\r\033[K", stderr);
		return tioctl_lib_err(argv[a]);
	}
	ms = now_ms() - t0;
	n = tio_safetensors_count(st);
	if (o->json) {
		j = json_object_new_object();
		arr = json_object_new_array();
		json_object_object_add(j, "file", json_object_new_string(argv[a]));
		json_object_object_add(j, "load_ms", json_object_new_double(ms));
		json_object_object_add(j, "tensors", arr);
	}
	for (i = 0; i < n; i++) {
		const char *name = tio_safetensors_name(st, i);

		if (tio_safetensors_tensor(st, name, &t)) {
			json_object_put(j);
			tio_safetensors_free(st);
			return tioctl_lib_err(name);
		}
		print_tensor(arr, name, tio_tensor_dl(t));
		tio_object_decref(t);
	}
	if (o->json)
		ret = tioctl_json_print(j);
	else
		printf("%lld tensors, loaded in %.3f ms\n", (long long)n, ms);
	fflush(stdout);
	if (hold && ret == EXIT_OK)
		tioctl_hold();
	tio_safetensors_free(st);
	return ret;
}
