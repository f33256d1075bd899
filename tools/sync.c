// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl signal / wait: a fence that another process can wait for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/context.h>
#include <tensorio/stream.h>

#include "tioctl.h"

/**
 * cmd_signal() - tioctl signal [--error E] [--hold]
 * @o: global options
 * @argc: argument count after "signal"
 * @argv: the arguments
 *
 * Emits a point, exports it as a sync_file and prints PID and fd; with
 * --hold signals it (with error -E if given) only once standard input
 * ends, so another process can "tioctl wait PID:FD" meanwhile.
 * Return: an exit code.
 */
int cmd_signal(const struct tioctl_opts *o, int argc, char **argv)
{
	tio_stream_t *s;
	uint64_t seqno;
	int i, hold = 0, error = 0, fd = -1, ret = EXIT_OK;
	char *end;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--hold")) {
			hold = 1;
		} else if (!strcmp(argv[i], "--error") && i + 1 < argc) {
			error = -(int)strtol(argv[++i], &end, 10);
			if (*end || error > 0 || error < -4095) {
				fprintf(stderr, "tioctl: --error takes an errno, 1..4095\n");
				return EXIT_UNUSABLE;
			}
		} else {
			fprintf(stderr, "tioctl: unexpected '%s'\n", argv[i]);
			return EXIT_UNUSABLE;
		}
	}
	if (tio_stream_create(&s))
		return tioctl_lib_err("stream");
	if (tio_fence_emit(s, &seqno)) {
		ret = tioctl_lib_err("emit");
		goto out;
	}
	if (tio_fence_export(s, seqno, TIO_EXPORT_F_CLOEXEC, &fd)) {
		ret = tioctl_lib_err("export sync_file");
		goto out;
	}
	printf(o->json ? "{\"pid\": %d, \"fd\": %d, \"seqno\": %llu}\n" :
			 "pid %d fd %d seqno %llu\n",
	       (int)getpid(), fd, (unsigned long long)seqno);
	if (hold)
		tioctl_hold();
	if (tio_fence_signal(s, seqno, error))
		ret = tioctl_lib_err("signal");
	close(fd);
out:
	tio_stream_decref(s);
	return ret;
}

/**
 * cmd_wait() - tioctl wait FD|PID:FD [--timeout MS]
 * @o: global options
 * @argc: argument count after "wait"
 * @argv: the arguments
 *
 * Waits for a sync_file (ours or any driver's) by importing it into a
 * stream. Return: 0 when it signalled cleanly, 1 on a fence error or a
 * timeout, 2 for bad usage.
 */
int cmd_wait(const struct tioctl_opts *o, int argc, char **argv)
{
	long long timeout_ms = -1;
	tio_stream_t *s;
	uint64_t seqno;
	int i, fd, status = 0, ret = EXIT_OK;
	char *end;

	if (argc < 1) {
		fprintf(stderr, "tioctl: wait takes FD or PID:FD\n");
		return EXIT_UNUSABLE;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			timeout_ms = strtoll(argv[++i], &end, 10);
			if (*end || timeout_ms < 0) {
				fprintf(stderr, "tioctl: --timeout takes milliseconds\n");
				return EXIT_UNUSABLE;
			}
		} else {
			fprintf(stderr, "tioctl: unexpected '%s'\n", argv[i]);
			return EXIT_UNUSABLE;
		}
	}
	fd = tioctl_get_fd(argv[0]);
	if (fd < 0)
		return EXIT_FAILED;
	if (tio_stream_create(&s)) {
		close(fd);
		return tioctl_lib_err("stream");
	}
	if (tio_fence_import(s, fd, &seqno)) {
		ret = tioctl_lib_err("import sync_file");
		goto out;
	}
	if (tio_fence_wait(s, seqno, timeout_ms < 0 ? -1 : timeout_ms * 1000000, &status)) {
		ret = tioctl_lib_err("wait");
		goto out;
	}
	printf(o->json ? "{\"status\": %d, \"error\": \"%s\"}\n" : "signalled, status %d (%s)\n",
	       status, status ? strerror(-status) : "ok");
	if (status)
		ret = EXIT_FAILED;
out:
	tio_stream_decref(s);
	close(fd);
	return ret;
}
