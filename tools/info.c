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
	"uring-cmd", "submit", "async-wait",
};

static void print_features(unsigned long long f, int json)
{
	const char *sep = "";
	unsigned int i;

	for (i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++) {
		if (!(f & (1ULL << i)))
			continue;
		printf(json ? "%s\"%s\"" : "%s%s", sep, feature_names[i]);
		sep = json ? ", " : " ";
	}
}

/* Module parameters from sysfs; absent when the module is built in. */
static void print_params(int json)
{
	char path[512], val[64];
	const char *sep = "";
	struct dirent *de;
	DIR *d = opendir(TIO_PARAMS);
	FILE *f;

	if (json)
		printf(", \"parameters\": {");
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", TIO_PARAMS, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(val, sizeof(val), f)) {
			val[strcspn(val, "\n")] = 0;
			if (json)
				printf("%s\"%s\": \"%s\"", sep, de->d_name, val);
			else
				printf("param %-8s %s\n", de->d_name, val);
			sep = ", ";
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	if (json)
		printf("}");
}

/**
 * cmd_info() - tioctl info
 * @o: global options
 * @argc: arguments after "info"
 * @argv: (none accepted)
 *
 * Return: an exit code.
 */
int cmd_info(const struct tioctl_opts *o, int argc, char **argv)
{
	struct tio_info info = { 0 };
	int fd;

	(void)argv;
	if (argc) {
		fprintf(stderr, "tioctl: info takes no arguments\n");
		return EXIT_UNUSABLE;
	}
	fd = tioctl_open_dev();
	if (fd < 0)
		return EXIT_UNUSABLE;
	if (ioctl(fd, TIO_IOC_INFO, &info)) {
		tioctl_err("TIO_IOC_INFO", errno);
		close(fd);
		return EXIT_FAILED;
	}
	close(fd);
	if (o->json) {
		printf("{\"backend\": \"kernel\", \"library\": \"%u.%u.%u\", \"uapi_version\": \"%u.%u\", \"features\": [",
		       TIO_VERSION_MAJOR, TIO_VERSION_MINOR, TIO_VERSION_PATCH,
		       info.version >> 16, info.version & 0xffff);
		print_features(info.features, 1);
		printf("], \"max_buf_size\": %llu, \"max_pinned\": %llu, \"pinned\": %llu, \"max_submit\": %u",
		       (unsigned long long)info.max_buf_size,
		       (unsigned long long)info.max_pinned,
		       (unsigned long long)info.pinned, info.max_submit);
		print_params(1);
		printf("}\n");
		return EXIT_OK;
	}
	printf("%-14s kernel (%s)\n", "backend", TIO_DEV);
	printf("%-14s %u.%u.%u\n", "tioctl", TIO_VERSION_MAJOR, TIO_VERSION_MINOR,
	       TIO_VERSION_PATCH);
	printf("%-14s %u.%u\n", "uapi version", info.version >> 16, info.version & 0xffff);
	printf("%-14s %#llx (", "features", (unsigned long long)info.features);
	print_features(info.features, 0);
	printf(")\n");
	printf("%-14s %llu\n", "max_buf_size", (unsigned long long)info.max_buf_size);
	printf("%-14s %llu\n", "max_pinned", (unsigned long long)info.max_pinned);
	printf("%-14s %llu\n", "pinned", (unsigned long long)info.pinned);
	printf("%-14s %u\n", "max_submit", info.max_submit);
	print_params(0);
	return EXIT_OK;
}
