// SPDX-License-Identifier: GPL-2.0
/*
 * tioctl info: versions, features, limits, module parameters, backend.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/tensorio.h>
#include <tensorio/version.h>

#include "tioctl.h"

static const char *const feature_names[] = {
	"buffers", "pin-user", "dmabuf", "streams", "sync-file", "dma-resv",
	"uring-cmd", "submit", "async-wait", "ring", "doorbell",
};

static void print_features(unsigned long long f, struct json_object *arr)
{
	const char *sep = "";
	unsigned int i;

	for (i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++) {
		if (!(f & (1ULL << i)))
			continue;
		if (arr)
			json_object_array_add(arr, json_object_new_string(feature_names[i]));
		else
			printf("%s%s", sep, feature_names[i]);
		sep = " ";
	}
}

/* Module parameters from sysfs; absent when the module is built in. */
static void print_params(struct json_object *obj)
{
	char path[512], val[64];
	struct dirent *de;
	DIR *d = opendir(TIO_PARAMS);
	FILE *f;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", TIO_PARAMS, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(val, sizeof(val), f)) {
			val[strcspn(val, "\n")] = 0;
			if (obj)
				json_object_object_add(obj, de->d_name, tioctl_json_value(val));
			else
				printf("param %-8s %s\n", de->d_name, val);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
}

static int info_json(const struct tio_info *info)
{
	struct json_object *j = json_object_new_object(), *a, *p;
	char text[32];

	if (!j)
		return tioctl_json_print(NULL);
	json_object_object_add(j, "backend", json_object_new_string("kernel"));
	snprintf(text, sizeof(text), "%u.%u.%u", TIO_VERSION_MAJOR, TIO_VERSION_MINOR,
		 TIO_VERSION_PATCH);
	json_object_object_add(j, "library", json_object_new_string(text));
	snprintf(text, sizeof(text), "%u.%u", info->version >> 16, info->version & 0xffff);
	json_object_object_add(j, "uapi_version", json_object_new_string(text));
	a = json_object_new_array();
	print_features(info->features, a);
	json_object_object_add(j, "features", a);
	json_object_object_add(j, "max_buf_size", json_object_new_uint64(info->max_buf_size));
	json_object_object_add(j, "max_pinned", json_object_new_uint64(info->max_pinned));
	json_object_object_add(j, "pinned", json_object_new_uint64(info->pinned));
	json_object_object_add(j, "max_submit", json_object_new_uint64(info->max_submit));
	p = json_object_new_object();
	print_params(p);
	json_object_object_add(j, "parameters", p);
	return tioctl_json_print(j);
}

static const struct option info_opts[] = { TIOCTL_COMMON_OPTS, { NULL, 0, NULL, 0 } };

/**
 * cmd_info() - tioctl info
 * @o: global options
 * @argc: argument count, argv[0] being "info"
 * @argv: (no operands accepted)
 *
 * Return: an exit code.
 */
int cmd_info(struct tioctl_opts *o, int argc, char **argv)
{
	struct tio_info info = { 0 };
	int fd;

	if (tioctl_getopt(o, argc, argv, info_opts) != -1 ||
	    tioctl_operands(argc, argv, 0, 0) < 0)
		return EXIT_UNUSABLE;
	fd = tioctl_open_dev();
	if (fd < 0)
		return EXIT_UNUSABLE;
	if (ioctl(fd, TIO_IOC_INFO, &info)) {
		tioctl_err("TIO_IOC_INFO", errno);
		close(fd);
		return EXIT_FAILED;
	}
	close(fd);
	if (o->json)
		return info_json(&info);
	printf("%-14s kernel (%s)\n", "backend", TIO_DEV);
	printf("%-14s %u.%u.%u\n", "tioctl", TIO_VERSION_MAJOR, TIO_VERSION_MINOR,
	       TIO_VERSION_PATCH);
	printf("%-14s %u.%u\n", "uapi version", info.version >> 16, info.version & 0xffff);
	printf("%-14s %#llx (", "features", (unsigned long long)info.features);
	print_features(info.features, NULL);
	printf(")\n");
	printf("%-14s %llu\n", "max_buf_size", (unsigned long long)info.max_buf_size);
	printf("%-14s %llu\n", "max_pinned", (unsigned long long)info.max_pinned);
	printf("%-14s %llu\n", "pinned", (unsigned long long)info.pinned);
	printf("%-14s %u\n", "max_submit", info.max_submit);
	print_params(NULL);
	return EXIT_OK;
}
