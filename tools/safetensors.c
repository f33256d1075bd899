// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl load-safetensors FILE: load a safetensors file into one pinned
 * buffer and list the zero-copy tensors found in it.
 */
#include <stdio.h>
#include <time.h>

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

static const struct option st_opts[] = { TIOCTL_COMMON_OPTS, { NULL, 0, NULL, 0 } };

/**
 * cmd_safetensors() - tioctl load-safetensors FILE
 * @o: global options
 * @argc: argument count, argv[0] being the command
 * @argv: the arguments: the file
 *
 * Return: an exit code (1 for a missing or malformed file, with the reason).
 */
int cmd_safetensors(struct tioctl_opts *o, int argc, char **argv)
{
	struct json_object *j = NULL, *arr = NULL;
	tio_safetensors_t *st;
	tio_object_t *t;
	double t0, ms;
	int64_t i, n;
	int a, ret;

	if (tioctl_getopt(o, argc, argv, st_opts) != -1)
		return EXIT_UNUSABLE;
	ret = tioctl_lib_operand(argc, argv, &a);
	if (ret)
		return ret;
	t0 = now_ms();
	if (tio_safetensors_load(argv[a], &st))
		return tioctl_lib_err(argv[a]);
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
	tio_safetensors_free(st);
	if (o->json)
		return tioctl_json_print(j);
	printf("%lld tensors, loaded in %.3f ms\n", (long long)n, ms);
	return EXIT_OK;
}
