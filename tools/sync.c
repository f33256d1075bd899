// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl signal / wait: a fence that another process can wait for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/context.h>
#include <tensorio/error.h>
#include <tensorio/stream.h>

#include "tioctl.h"

/* The user backend has streams but no sync_file: say so, as no device. */
static int sync_file_err(const char *what)
{
	if (tio_errno() == EOPNOTSUPP && tio_backend() == TIO_BACKEND_USER) {
		tio_error_clear();
		fprintf(stderr, "tioctl: %s: sync_file support needs the kernel backend: "
			"the user backend has no sync_file (load tensorio: 'modprobe tensorio', "
			"then %s is used)\n", what, TIO_DEV);
		return EXIT_UNUSABLE;
	}
	return tioctl_lib_err(what);
}

static const struct option signal_opts[] = {
	TIOCTL_COMMON_OPTS,
	{ "error", required_argument, NULL, 'e' },
	{ "hold", no_argument, NULL, 'H' },
	{ NULL, 0, NULL, 0 }
};

/**
 * cmd_signal() - tioctl signal [--error E] [--hold]
 * @o: global options
 * @argc: argument count, argv[0] being "signal"
 * @argv: the arguments
 *
 * Emits a point, exports it as a sync_file and prints PID and fd; with
 * --hold signals it (with error -E if given) only once standard input
 * ends, so another process can "tioctl wait PID:FD" meanwhile.
 * Return: an exit code.
 */
int cmd_signal(struct tioctl_opts *o, int argc, char **argv)
{
	tio_stream_t *s;
	uint64_t seqno;
	int c, hold = 0, error = 0, fd = -1, ret = EXIT_OK;
	struct json_object *j;
	char *end;
	long v;

	while ((c = tioctl_getopt(o, argc, argv, signal_opts)) != -1) {
		if (c == 'H') {
			hold = 1;
		} else if (c == 'e') {
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 1 || v > 4095)
				return tioctl_bad_usage("signal", "--error takes an errno, 1..4095, not '%s'",
							optarg);
			error = -(int)v;
		} else {
			return EXIT_UNUSABLE;
		}
	}
	if (tioctl_operands(argc, argv, 0, 0) < 0)
		return EXIT_UNUSABLE;
	ret = tioctl_lib_ready();
	if (ret)
		return ret;
	if (tio_stream_create(&s))
		return tioctl_lib_err("stream");
	if (tio_fence_emit(s, &seqno)) {
		ret = tioctl_lib_err("emit");
		goto out;
	}
	if (tio_fence_export(s, seqno, TIO_EXPORT_F_CLOEXEC, &fd)) {
		ret = sync_file_err("export sync_file");
		goto out;
	}
	if (o->json) {
		j = json_object_new_object();
		json_object_object_add(j, "pid", json_object_new_int(getpid()));
		json_object_object_add(j, "fd", json_object_new_int(fd));
		json_object_object_add(j, "seqno", json_object_new_uint64(seqno));
		ret = tioctl_json_print(j);
	} else {
		printf("pid %d fd %d seqno %llu\n", (int)getpid(), fd,
		       (unsigned long long)seqno);
	}
	if (hold && !ret)
		tioctl_hold();
	if (tio_fence_signal(s, seqno, error))
		ret = tioctl_lib_err("signal");
	close(fd);
out:
	tio_stream_decref(s);
	return ret;
}

static const struct option wait_opts[] = {
	TIOCTL_COMMON_OPTS,
	{ "timeout", required_argument, NULL, 't' },
	{ NULL, 0, NULL, 0 }
};

/**
 * cmd_wait() - tioctl wait FD|PID:FD [--timeout MS]
 * @o: global options
 * @argc: argument count, argv[0] being "wait"
 * @argv: the arguments
 *
 * Waits for a sync_file (ours or any driver's) by importing it into a
 * stream. Return: 0 when it signalled cleanly, 1 on a fence error or a
 * timeout, 2 for bad usage or a backend without sync_file.
 */
int cmd_wait(struct tioctl_opts *o, int argc, char **argv)
{
	long long timeout_ms = -1;
	struct json_object *j;
	tio_stream_t *s;
	uint64_t seqno;
	int c, i, fd, status = 0, ret = EXIT_OK;
	char *end;

	while ((c = tioctl_getopt(o, argc, argv, wait_opts)) != -1) {
		if (c != 't')
			return EXIT_UNUSABLE;
		errno = 0;
		timeout_ms = strtoll(optarg, &end, 10);
		if (!*optarg || *end || errno || timeout_ms < 0 ||
		    timeout_ms > INT64_MAX / 1000000)
			return tioctl_bad_usage("wait", "--timeout takes milliseconds, not '%s'",
						optarg);
	}
	ret = tioctl_lib_operand(argc, argv, &i);
	if (ret)
		return ret;
	fd = tioctl_get_fd(argv[i]);
	if (fd < 0)
		return fd == -2 ? EXIT_UNUSABLE : EXIT_FAILED;
	if (tio_stream_create(&s)) {
		close(fd);
		return tioctl_lib_err("stream");
	}
	if (tio_fence_import(s, fd, &seqno)) {
		ret = sync_file_err("import sync_file");
		goto out;
	}
	if (tio_fence_wait(s, seqno, timeout_ms < 0 ? -1 : timeout_ms * 1000000, &status)) {
		ret = tioctl_lib_err("wait");
		goto out;
	}
	if (o->json) {
		j = json_object_new_object();
		json_object_object_add(j, "status", json_object_new_int(status));
		json_object_object_add(j, "error",
				       json_object_new_string(status ? strerror(-status) : "ok"));
		ret = tioctl_json_print(j);
	} else {
		printf("signalled, status %d (%s)\n", status, status ? strerror(-status) : "ok");
	}
	if (status)
		ret = EXIT_FAILED;
out:
	tio_stream_decref(s);
	close(fd);
	return ret;
}
