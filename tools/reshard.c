// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl reshard SRC DST [--max-shard-size SIZE]: load a safetensors file
 * or sharded checkpoint and save it again through the save engine, as one
 * file or as shards of at most SIZE tensor bytes and their index; a load
 * plus a durable save, each at the disk's speed. The metadata goes along
 * (an index's total_size is the new index's own). Progress bars on stderr
 * when it is a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tensorio/object.h>
#include <tensorio/safetensors.h>
#include <tensorio/tensor.h>

#include "tioctl.h"

static double rs_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int rs_progress(void *arg, uint64_t done, uint64_t total)
{
	const char *what = arg;

	fprintf(stderr, "\r%s %llu/%llu MiB", what, (unsigned long long)(done >> 20),
		(unsigned long long)(total >> 20));
	if (done == total)
		fputs("\r\033[K", stderr);
	return 0;
}

/* The tensors (views, owned at @obj) and metadata of @st for saving. */
struct rs_set {
	int64_t n, nmeta;
	const char **names;
	const DLTensor **dl;
	tio_object_t **obj;
	const char **meta;
	uint64_t bytes;
};

static void rs_free(struct rs_set *s)
{
	int64_t i;

	for (i = 0; s->obj && i < s->n; i++)
		tio_object_decref(s->obj[i]);
	free(s->obj);
	free(s->dl);
	free(s->names);
	free(s->meta);
}

static int rs_collect(tio_safetensors_t *st, struct rs_set *s)
{
	const char *k;
	int64_t i;

	memset(s, 0, sizeof(*s));
	s->n = tio_safetensors_count(st);
	s->names = calloc((size_t)s->n + 1, sizeof(*s->names));
	s->dl = calloc((size_t)s->n + 1, sizeof(*s->dl));
	s->obj = calloc((size_t)s->n + 1, sizeof(*s->obj));
	for (i = 0; tio_safetensors_metadata_key(st, i); i++)
		;
	s->meta = calloc(2 * (size_t)i + 1, sizeof(*s->meta));
	if (!s->names || !s->dl || !s->obj || !s->meta) {
		fputs("tioctl: reshard: out of memory\n", stderr);
		return -1;
	}
	for (i = 0; (k = tio_safetensors_metadata_key(st, i)); i++) {
		if (!strcmp(k, "total_size"))
			continue;	/* the new index counts its own */
		s->meta[2 * s->nmeta] = k;
		s->meta[2 * s->nmeta++ + 1] = tio_safetensors_metadata(st, k);
	}
	for (i = 0; i < s->n; i++) {
		s->names[i] = tio_safetensors_name(st, i);
		if (tio_safetensors_tensor(st, s->names[i], &s->obj[i])) {
			tioctl_lib_err(s->names[i]);
			return -1;
		}
		s->dl[i] = tio_tensor_dl(s->obj[i]);
		s->bytes += tio_tensor_nbytes(s->dl[i]);
	}
	return 0;
}

static void rs_report(struct tioctl_opts *o, const char *src, const char *dst,
		      const struct rs_set *s, const struct tio_save_opts *so,
		      double load_ms, double save_ms)
{
	struct json_object *j;
	char out[4096];

	snprintf(out, sizeof(out), so->shards > 1 ? "%s.index.json" : "%s", dst);
	if (!o->json) {
		printf("%lld tensors, %.1f MiB: loaded in %.1f ms (%.2f GB/s), saved in %.1f ms "
		       "(%.2f GB/s%s) to %d file%s: %s\n", (long long)s->n, s->bytes / 1048576.0,
		       load_ms, s->bytes / load_ms / 1e6, save_ms, s->bytes / save_ms / 1e6,
		       so->used_direct ? ", O_DIRECT" : ", buffered", so->shards,
		       so->shards > 1 ? "s" : "", out);
		return;
	}
	j = json_object_new_object();
	json_object_object_add(j, "src", json_object_new_string(src));
	json_object_object_add(j, "dst", json_object_new_string(out));
	json_object_object_add(j, "tensors", json_object_new_int64(s->n));
	json_object_object_add(j, "bytes", json_object_new_uint64(s->bytes));
	json_object_object_add(j, "files", json_object_new_int(so->shards));
	json_object_object_add(j, "load_ms", json_object_new_double(load_ms));
	json_object_object_add(j, "save_ms", json_object_new_double(save_ms));
	json_object_object_add(j, "direct", json_object_new_boolean(so->used_direct));
	tioctl_json_print(j);
}

static const struct option rs_opts[] = {
	TIOCTL_COMMON_OPTS,
	{ "max-shard-size", required_argument, NULL, 'm' },
	{ NULL, 0, NULL, 0 }
};

/**
 * cmd_reshard() - tioctl reshard SRC DST [--max-shard-size SIZE]
 * @o: global options
 * @argc: argument count, argv[0] being the command
 * @argv: the arguments: the checkpoint to read, the one to write
 *
 * Return: an exit code (1 when the load or the save fails, with the
 * reason; the old DST files are then as they were).
 */
int cmd_reshard(struct tioctl_opts *o, int argc, char **argv)
{
	struct tio_io_opts lo = { 0 };
	struct tio_save_opts so;
	unsigned long long max = 0;
	tio_safetensors_t *st;
	struct rs_set s;
	double t0, load_ms;
	int c, a, ret = EXIT_FAILED;

	memset(&so, 0, sizeof(so));
	while ((c = tioctl_getopt(o, argc, argv, rs_opts)) != -1) {
		if (c != 'm' || tioctl_parse_size(optarg, &max))
			return EXIT_UNUSABLE;
	}
	a = tioctl_operands(argc, argv, 2, 2);
	if (a < 0)
		return EXIT_UNUSABLE;
	if (tioctl_lib_ready())
		return EXIT_UNUSABLE;
	if (isatty(2)) {
		lo.progress = so.progress = rs_progress;
		lo.progress_arg = "loading";
		so.progress_arg = "saving";
	}
	so.size = sizeof(so);
	so.max_shard_size = max;
	t0 = rs_ms();
	if (tio_safetensors_load_ex(argv[a], &lo, &st))
		return tioctl_lib_err(argv[a]);
	load_ms = rs_ms() - t0;
	if (!rs_collect(st, &s)) {
		so.meta = s.meta;
		so.nmeta = s.nmeta;
		t0 = rs_ms();
		if (tio_safetensors_save_opts(argv[a + 1], s.names, s.dl, s.n, &so)) {
			ret = tioctl_lib_err(argv[a + 1]);
		} else {
			rs_report(o, argv[a], argv[a + 1], &s, &so, load_ms, rs_ms() - t0);
			ret = EXIT_OK;
		}
	}
	rs_free(&s);
	tio_safetensors_free(st);
	return ret;
}
