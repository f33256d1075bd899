// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl: opening the device, naming errors, printing debugfs files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <tensorio/dtype.h>
#include <tensorio/error.h>

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
 * tioctl_json_value() - a debugfs value as JSON: an integer when it is one
 * @text: the value's text
 *
 * Return: a new JSON integer or string.
 */
struct json_object *tioctl_json_value(const char *text)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 0);
	if (*text && !*end && !errno)
		return json_object_new_int64(v);
	return json_object_new_string(text);
}

/**
 * tioctl_read_kv() - a debugfs "key value" file, as JSON members or a table
 * @path: the file
 * @obj: add the pairs to this object, or NULL to print a table
 * @indent: prefix of every table line
 *
 * Return: 0 or -errno (not printed).
 */
int tioctl_read_kv(const char *path, struct json_object *obj, const char *indent)
{
	char key[64], val[64], line[256];
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %63s", key, val) != 2)
			continue;
		if (obj)
			json_object_object_add(obj, key, tioctl_json_value(val));
		else
			printf("%s%-20s %s\n", indent, key, val);
	}
	fclose(f);
	return 0;
}

/**
 * tioctl_json_print() - print one JSON document on stdout and free it
 * @j: the document (consumed)
 *
 * Return: EXIT_OK, or EXIT_FAILED when it could not be built or written.
 */
int tioctl_json_print(struct json_object *j)
{
	const char *text;
	int ret = EXIT_FAILED;

	text = j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
	if (text && printf("%s\n", text) >= 0 && !fflush(stdout))
		ret = EXIT_OK;
	else
		fprintf(stderr, "tioctl: writing the JSON output failed\n");
	json_object_put(j);
	return ret;
}

static void dtype_text(unsigned int code, unsigned int bits, unsigned int lanes,
		       char *buf, size_t len)
{
	DLDataType dt = { (uint8_t)code, (uint8_t)bits, (uint16_t)lanes };

	if (code > 255 || bits > 255 || lanes > 65535 || tio_dtype_print(dt, buf, len) < 0) {
		tio_error_clear();
		snprintf(buf, len, "code%u:%u:%u", code, bits, lanes);
	}
}

/**
 * tioctl_json_dtype() - a dtype as its name ("float32", "int8x4")
 * @code: DLPack type code
 * @bits: bits per lane
 * @lanes: lanes
 *
 * Return: a new JSON string.
 */
struct json_object *tioctl_json_dtype(unsigned int code, unsigned int bits,
				      unsigned int lanes)
{
	char buf[32];

	dtype_text(code, bits, lanes, buf, sizeof(buf));
	return json_object_new_string(buf);
}

/**
 * tioctl_print_dtype() - print a dtype's name, as tioctl_json_dtype()
 * @code: DLPack type code
 * @bits: bits per lane
 * @lanes: lanes
 */
void tioctl_print_dtype(unsigned int code, unsigned int bits, unsigned int lanes)
{
	char buf[32];

	dtype_text(code, bits, lanes, buf, sizeof(buf));
	fputs(buf, stdout);
}

/**
 * tioctl_json_shape() - extents as a JSON array
 * @ndim: their number
 * @shape: the extents
 *
 * Return: a new JSON array.
 */
struct json_object *tioctl_json_shape(int ndim, const long long *shape)
{
	struct json_object *a = json_object_new_array();
	int i;

	for (i = 0; a && i < ndim; i++)
		json_object_array_add(a, json_object_new_int64(shape[i]));
	return a;
}
