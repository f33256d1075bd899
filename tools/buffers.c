// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl alloc / export / import: buffers through libtensorio, on whichever
 * backend the library picked (TIO_BACKEND forces one).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>

#include "tioctl.h"

static const char *const kinds[] = { "?", "alloc", "user", "import" };

static void print_buffer(const struct tioctl_opts *o, tio_buffer_t *buf, int fd)
{
	struct tio_tensor_desc d;
	struct tio_buf_info info;
	int has_desc, i;

	if (tio_buffer_info(buf, &info, &d)) {
		tioctl_lib_err("buffer info");
		return;
	}
	has_desc = info.state & TIO_BUF_S_DESC;
	printf(o->json ? "{\"backend\": \"%s\", \"pid\": %d, \"handle\": %u, \"kind\": \"%s\", \"size\": %llu" :
			 "backend %s\npid     %d\nhandle  %u\nkind    %s\nsize    %llu\n",
	       tio_backend_name(), (int)getpid(), tio_buffer_handle(buf),
	       kinds[info.kind < 4 ? info.kind : 0], (unsigned long long)info.size);
	if (fd >= 0)
		printf(o->json ? ", \"fd\": %d" : "fd      %d\n", fd);
	if (has_desc) {
		printf(o->json ? ", \"dtype\": [%u, %u, %u], \"shape\": [" :
				 "dtype   code %u bits %u lanes %u\nshape   ", d.code, d.bits, d.lanes);
		for (i = 0; i < d.ndim; i++)
			printf(o->json ? "%s%lld" : "%s%lld", i ? (o->json ? ", " : "x") : "",
			       (long long)d.shape[i]);
		printf(o->json ? "]" : "\n");
	}
	if (o->json)
		printf("}\n");
}

/* SIZE [--dtype T --shape AxB] [--hold]: shared by alloc and export. */
static int alloc_args(int argc, char **argv, tio_buffer_t **buf, int *hold)
{
	const char *dtype = NULL, *shape = NULL;
	struct tio_tensor_desc desc;
	unsigned long long size;
	int i;

	if (argc < 1) {
		fprintf(stderr, "tioctl: a size is needed\n");
		return EXIT_UNUSABLE;
	}
	if (tioctl_parse_size(argv[0], &size))
		return EXIT_UNUSABLE;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			dtype = argv[++i];
		} else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
			shape = argv[++i];
		} else if (!strcmp(argv[i], "--hold") && hold) {
			*hold = 1;
		} else {
			fprintf(stderr, "tioctl: unexpected '%s'\n", argv[i]);
			return EXIT_UNUSABLE;
		}
	}
	if (shape && !dtype) {
		fprintf(stderr, "tioctl: --shape needs --dtype\n");
		return EXIT_UNUSABLE;
	}
	if (dtype && tioctl_parse_desc(dtype, shape, &desc))
		return EXIT_UNUSABLE;
	if (tio_buffer_alloc(size, dtype ? &desc : NULL, buf))
		return tioctl_lib_err("alloc");
	return EXIT_OK;
}

/**
 * cmd_alloc() - tioctl alloc SIZE [--dtype T [--shape AxB]]
 * @o: global options
 * @argc: argument count after "alloc"
 * @argv: the arguments
 *
 * Allocates, touches every page through the mapping, describes the buffer
 * and frees it: can this machine pin SIZE bytes? Return: an exit code.
 */
int cmd_alloc(const struct tioctl_opts *o, int argc, char **argv)
{
	tio_buffer_t *buf;
	unsigned char *p;
	size_t i, size;
	int ret;

	ret = alloc_args(argc, argv, &buf, NULL);
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
	print_buffer(o, buf, -1);
	tio_buffer_decref(buf);
	return EXIT_OK;
}

/**
 * cmd_export() - tioctl export SIZE [--dtype T [--shape AxB]] [--hold]
 * @o: global options
 * @argc: argument count after "export"
 * @argv: the arguments
 *
 * Prints the dma-buf's fd; with --hold keeps it until standard input ends
 * so that another process can import PID:FD. Return: an exit code.
 */
int cmd_export(const struct tioctl_opts *o, int argc, char **argv)
{
	tio_buffer_t *buf;
	int hold = 0, fd, ret;

	ret = alloc_args(argc, argv, &buf, &hold);
	if (ret)
		return ret;
	if (tio_buffer_export(buf, TIO_EXPORT_F_RDWR, &fd)) {
		tio_buffer_decref(buf);
		return tioctl_lib_err("export");
	}
	print_buffer(o, buf, fd);
	if (hold)
		tioctl_hold();
	close(fd);
	tio_buffer_decref(buf);
	return EXIT_OK;
}

/**
 * cmd_import() - tioctl import FD|PID:FD
 * @o: global options
 * @argc: argument count after "import"
 * @argv: the arguments
 *
 * Imports a dma-buf (ours keep their tensor descriptor) and describes it.
 * Return: an exit code.
 */
int cmd_import(const struct tioctl_opts *o, int argc, char **argv)
{
	tio_buffer_t *buf;
	int fd;

	if (argc != 1) {
		fprintf(stderr, "tioctl: import takes one FD or PID:FD\n");
		return EXIT_UNUSABLE;
	}
	fd = tioctl_get_fd(argv[0]);
	if (fd < 0)
		return EXIT_FAILED;
	if (tio_buffer_import(fd, &buf)) {
		close(fd);
		return tioctl_lib_err("import");
	}
	close(fd);
	print_buffer(o, buf, -1);
	tio_buffer_decref(buf);
	return EXIT_OK;
}
