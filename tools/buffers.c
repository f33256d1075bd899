// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl alloc / export / import: buffers through libtensorio, on whichever
 * backend the library picked (TIO_BACKEND forces one).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/error.h>

#include "tioctl.h"

static const char *const kinds[] = { "?", "alloc", "user", "import" };

static int print_buffer(const struct tioctl_opts *o, tio_buffer_t *buf, int fd)
{
	struct tio_desc d;
	struct tio_buffer_info info;
	struct json_object *j;
	long long shape[TIO_MAX_NDIM];
	const char *kind;
	int i;

	if (tio_buffer_info(buf, &info, &d))
		return tioctl_lib_err("buffer info");
	kind = kinds[info.kind < 4 ? info.kind : 0];
	if (!o->json) {
		printf("backend %s\npid     %d\nhandle  %u\nkind    %s\nsize    %llu\n",
		       tio_backend_name(), (int)getpid(), tio_buffer_handle(buf), kind,
		       (unsigned long long)info.size);
		if (fd >= 0)
			printf("fd      %d\n", fd);
		if (info.state & TIO_BUF_S_DESC) {
			printf("dtype   ");
			tioctl_print_dtype(d.code, d.bits, d.lanes);
			printf("\nshape   ");
			for (i = 0; i < d.ndim; i++)
				printf("%s%lld", i ? "x" : "", (long long)d.shape[i]);
			printf("\n");
		}
		return EXIT_OK;
	}
	j = json_object_new_object();
	json_object_object_add(j, "backend", json_object_new_string(tio_backend_name()));
	json_object_object_add(j, "pid", json_object_new_int(getpid()));
	json_object_object_add(j, "handle", json_object_new_int64(tio_buffer_handle(buf)));
	json_object_object_add(j, "kind", json_object_new_string(kind));
	json_object_object_add(j, "size", json_object_new_uint64(info.size));
	if (fd >= 0)
		json_object_object_add(j, "fd", json_object_new_int(fd));
	if (info.state & TIO_BUF_S_DESC) {
		for (i = 0; i < d.ndim && i < TIO_MAX_NDIM; i++)
			shape[i] = d.shape[i];
		json_object_object_add(j, "dtype", tioctl_json_dtype(d.code, d.bits, d.lanes));
		json_object_object_add(j, "shape", tioctl_json_shape(i, shape));
	}
	return tioctl_json_print(j);
}

static const struct option alloc_opts[] = {
	TIOCTL_COMMON_OPTS,
	{ "dtype", required_argument, NULL, 'd' },
	{ "shape", required_argument, NULL, 's' },
	{ "hold", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 }
};

/* SIZE [--dtype T --shape AxB] [--hold]: shared by alloc and export. */
static int alloc_args(struct tioctl_opts *o, int argc, char **argv,
		      tio_buffer_t **buf, int *hold)
{
	const char *dtype = NULL, *shape = NULL;
	struct tio_desc desc;
	unsigned long long size;
	int c, i;

	/* A negative size would reach getopt as an unknown option "-5". */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (argv[i][0] == '-' && isdigit((unsigned char)argv[i][1]) &&
		    strcmp(argv[i - 1], "--dtype") && strcmp(argv[i - 1], "--shape"))
			return tioctl_bad_usage(argv[0], "bad size '%s': a size is a "
						"positive number of bytes", argv[i]);
	while ((c = tioctl_getopt(o, argc, argv, alloc_opts)) != -1) {
		if (c == 'd')
			dtype = optarg;
		else if (c == 's')
			shape = optarg;
		else if (c == 'H' && hold)
			*hold = 1;
		else if (c == 'H')
			return tioctl_bad_usage(argv[0], "--hold is for export");
		else
			return EXIT_UNUSABLE;
	}
	i = tioctl_operands(argc, argv, 1, 1);
	if (i < 0 || tioctl_parse_size(argv[i], &size))
		return EXIT_UNUSABLE;
	if (shape && !dtype)
		return tioctl_bad_usage(argv[0], "--shape needs --dtype");
	if (dtype && tioctl_parse_desc(dtype, shape, &desc))
		return EXIT_UNUSABLE;
	c = tioctl_lib_ready();
	if (c)
		return c;
	if (tio_buffer_alloc(size, dtype ? &desc : NULL, buf))
		return tioctl_lib_err(argv[0]);
	return EXIT_OK;
}

/**
 * cmd_alloc() - tioctl alloc SIZE [--dtype T [--shape AxB]]
 * @o: global options
 * @argc: argument count, argv[0] being "alloc"
 * @argv: the arguments
 *
 * Allocates, touches every page through the mapping, describes the buffer
 * and frees it: can this machine pin SIZE bytes? Return: an exit code.
 */
int cmd_alloc(struct tioctl_opts *o, int argc, char **argv)
{
	tio_buffer_t *buf;
	unsigned char *p;
	size_t i, size;
	int ret;

	ret = alloc_args(o, argc, argv, &buf, NULL);
	if (ret)
		return ret;
	p = tio_buffer_data(buf);
	if (!p) {
		tio_buffer_decref(buf);
		return tioctl_lib_err("map");
	}
	size = tio_buffer_size(buf);
	for (i = 0; i < size; i += 4096)
		p[i] = (unsigned char)i;
	ret = print_buffer(o, buf, -1);
	tio_buffer_decref(buf);
	return ret;
}

/**
 * cmd_export() - tioctl export SIZE [--dtype T [--shape AxB]] [--hold]
 * @o: global options
 * @argc: argument count, argv[0] being "export"
 * @argv: the arguments
 *
 * Prints the dma-buf's fd; with --hold keeps it until standard input ends
 * so that another process can import PID:FD. Return: an exit code.
 */
int cmd_export(struct tioctl_opts *o, int argc, char **argv)
{
	tio_buffer_t *buf;
	int hold = 0, fd, ret;

	ret = alloc_args(o, argc, argv, &buf, &hold);
	if (ret)
		return ret;
	if (tio_buffer_export(buf, TIO_EXPORT_F_RDWR, &fd)) {
		tio_buffer_decref(buf);
		if (tio_errno() == EOPNOTSUPP && tio_backend() == TIO_BACKEND_USER) {
			tio_error_clear();
			fprintf(stderr, "tioctl: export: the user backend exports dma-bufs through "
				"/dev/udmabuf, which is missing or not writable here "
				"(modprobe udmabuf), or load tensorio\n");
			return EXIT_UNUSABLE;
		}
		return tioctl_lib_err("export");
	}
	ret = print_buffer(o, buf, fd);
	if (hold && !ret)
		tioctl_hold();
	close(fd);
	tio_buffer_decref(buf);
	return ret;
}

static const struct option import_opts[] = { TIOCTL_COMMON_OPTS, { NULL, 0, NULL, 0 } };

/**
 * cmd_import() - tioctl import FD|PID:FD
 * @o: global options
 * @argc: argument count, argv[0] being "import"
 * @argv: the arguments
 *
 * Imports a dma-buf (ours keep their tensor descriptor) and describes it.
 * Return: an exit code.
 */
int cmd_import(struct tioctl_opts *o, int argc, char **argv)
{
	tio_buffer_t *buf;
	int fd, i, ret;

	if (tioctl_getopt(o, argc, argv, import_opts) != -1)
		return EXIT_UNUSABLE;
	ret = tioctl_lib_operand(argc, argv, &i);
	if (ret)
		return ret;
	fd = tioctl_get_fd(argv[i]);
	if (fd < 0)
		return fd == -2 ? EXIT_UNUSABLE : EXIT_FAILED;
	if (tio_buffer_import(fd, &buf)) {
		close(fd);
		return tioctl_lib_err("import");
	}
	close(fd);
	ret = print_buffer(o, buf, -1);
	tio_buffer_decref(buf);
	return ret;
}
