// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl: helpers for the subcommands that go through libtensorio.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/buffer.h>
#include <tensorio/context.h>
#include <tensorio/dtype.h>
#include <tensorio/error.h>
#include <tensorio/object.h>

#include "tioctl.h"

/**
 * tioctl_lib_err() - print the library's raised error and clear it
 * @what: the operation that failed
 *
 * Return: EXIT_FAILED, for the caller to return.
 */
int tioctl_lib_err(const char *what)
{
	tio_object_t *err = tio_error_move_from_raised();

	if (err) {
		fprintf(stderr, "tioctl: %s: %s: %s\n", what, tio_error_kind(err),
			tio_error_message(err));
		tio_object_decref(err);
	} else {
		fprintf(stderr, "tioctl: %s failed\n", what);
	}
	return EXIT_FAILED;
}

/**
 * tioctl_lib_ready() - open the library's backend before a subcommand
 *
 * A backend that cannot be used (TIO_BACKEND=kernel without the driver,
 * an unknown TIO_BACKEND) is "no usable device", not a failed command.
 *
 * Return: EXIT_OK, or EXIT_UNUSABLE after printing the cause.
 */
int tioctl_lib_ready(void)
{
	if (!tio_init())
		return EXIT_OK;
	tioctl_lib_err("backend");
	return EXIT_UNUSABLE;
}

/**
 * tioctl_lib_operand() - a library command's one operand, then the library
 * @argc: argument count, argv[0] being the command, options parsed
 * @argv: the arguments
 * @idx: set to the operand's index in @argv
 *
 * Return: EXIT_OK, or the exit code after printing why.
 */
int tioctl_lib_operand(int argc, char **argv, int *idx)
{
	*idx = tioctl_operands(argc, argv, 1, 1);
	if (*idx < 0)
		return EXIT_UNUSABLE;
	return tioctl_lib_ready();
}

/**
 * tioctl_parse_size() - "4096", "64K", "1M", "2G"
 * @s: the text
 * @out: the size in bytes
 *
 * Return: 0, or -1 after printing why.
 */
int tioctl_parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'K': case 'k': mul = 1ULL << 10; end++; break;
	case 'M': case 'm': mul = 1ULL << 20; end++; break;
	case 'G': case 'g': mul = 1ULL << 30; end++; break;
	}
	if (errno || end == s || *end || s[0] == '-' || v > ~0ULL / mul) {
		fprintf(stderr, "tioctl: bad size '%s' (bytes, or with K/M/G)\n", s);
		return -1;
	}
	if (!v) {
		fprintf(stderr, "tioctl: bad size '%s': at least 1 byte\n", s);
		return -1;
	}
	*out = v * mul;
	return 0;
}

/**
 * tioctl_parse_desc() - a tensor descriptor from "--dtype T" "--shape AxB"
 * @dtype: the dtype text (float32, int8x4, ...)
 * @shape: extents separated by 'x' or ',' (may be NULL: a scalar)
 * @desc: filled in, compact row-major
 *
 * Return: 0, or -1 after printing why.
 */
int tioctl_parse_desc(const char *dtype, const char *shape, struct tio_desc *desc)
{
	DLDataType dt;
	const char *p = shape;
	char *end;

	memset(desc, 0, sizeof(*desc));
	if (tio_dtype_parse(dtype, &dt))
		return tioctl_lib_err("--dtype"), -1;
	desc->code = dt.code;
	desc->bits = dt.bits;
	desc->lanes = dt.lanes;
	while (p && *p) {
		long long v;

		errno = 0;
		v = strtoll(p, &end, 10);
		if (errno || end == p || v < 0 || desc->ndim == TIO_MAX_NDIM ||
		    (*end && *end != 'x' && *end != ',')) {
			fprintf(stderr, "tioctl: bad --shape '%s' (up to %d extents, e.g. 2x3)\n",
				shape, TIO_MAX_NDIM);
			return -1;
		}
		desc->shape[desc->ndim++] = v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/**
 * tioctl_get_fd() - an fd from "FD" (ours) or "PID:FD" (another process's)
 * @spec: the text
 *
 * Another process's fd is duplicated with pidfd_getfd(2), which needs
 * ptrace access to it. Return: the fd; -2 for malformed text, -1 when the
 * fd could not be had (both after printing why).
 */
int tioctl_get_fd(const char *spec)
{
	long pid = 0, fd;
	const char *colon = strchr(spec, ':');
	char *end;
	int pidfd, ret;

	if (colon) {
		pid = strtol(spec, &end, 10);
		if (end != colon || pid <= 0)
			goto bad;
		spec = colon + 1;
	}
	fd = strtol(spec, &end, 10);
	if (*end || end == spec || fd < 0 || fd > 1 << 30)
		goto bad;
	if (!colon)
		return (int)fd;
	pidfd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pidfd < 0) {
		tioctl_err("pidfd_open", errno);
		return -1;
	}
	ret = syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
	if (ret < 0)
		tioctl_err("pidfd_getfd", errno);
	close(pidfd);
	return ret;
bad:
	fprintf(stderr, "tioctl: bad fd '%s' (FD or PID:FD)\n", spec);
	return -2;
}

/**
 * tioctl_hold() - keep objects alive until standard input ends
 *
 * Lets another process pick up an exported fd with PID:FD meanwhile.
 */
void tioctl_hold(void)
{
	char buf[256];

	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}
