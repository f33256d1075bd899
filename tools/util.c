// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl: opening the device, naming errors, printing debugfs files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tioctl.h"

#define DEBUGFS_MAGIC 0x64626720

static int debugfs_mounted(void)
{
	struct statfs sf;

	return !statfs("/sys/kernel/debug", &sf) && sf.f_type == DEBUGFS_MAGIC;
}

/**
 * tioctl_err() - explain a failure by its likely cause
 * @what: what failed (a path or a command name)
 * @err: the errno
 */
void tioctl_err(const char *what, int err)
{
	const char *hint = "";

	if (err == ENOENT && !strncmp(what, "/dev/", 5))
		hint = " (is tensorio loaded? try 'modprobe tensorio')";
	else if (err == ENOENT && strstr(what, "/sys/kernel/debug"))
		hint = debugfs_mounted() ? " (is tensorio loaded?)" :
			" (is debugfs mounted? 'mount -t debugfs none /sys/kernel/debug')";
	else if (err == EACCES || err == EPERM)
		hint = strstr(what, "debug") ? " (debugfs needs root)" :
			" (join the device's group, see tensorio(4))";
	else if (err == EOPNOTSUPP)
		hint = " (the running driver lacks this feature, see 'tioctl info')";
	fprintf(stderr, "tioctl: %s: %s%s\n", what, strerror(err), hint);
}

/**
 * tioctl_open_dev() - open /dev/tensorio, explaining a failure
 *
 * Return: the fd, or -1 after printing the cause.
 */
int tioctl_open_dev(void)
{
	int fd = open(TIO_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		tioctl_err(TIO_DEV, errno);
	return fd;
}

/**
 * tioctl_print_kv() - print a debugfs "key value" file
 * @path: the file
 * @json: print `"key": value` members (comma-separated) instead of a table
 * @indent: prefix of every line
 *
 * Return: 0 or -errno (not printed).
 */
int tioctl_print_kv(const char *path, int json, const char *indent)
{
	char key[64], val[64], line[256];
	const char *sep = "";
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %63s", key, val) != 2)
			continue;
		if (json)
			printf("%s\n%s\"%s\": %s", sep, indent, key, val);
		else
			printf("%s%-20s %s\n", indent, key, val);
		sep = ",";
	}
	fclose(f);
	return 0;
}
